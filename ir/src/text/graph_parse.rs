//! Lowering of `graph` items from the syntax tree to [`crate::graph::Graph`], called by
//! [`crate::text::parse`] after every kernel of the module is lowered.
//!
//! Guarantees:
//! - Every error is a located [`Diagnostic`]: duplicate graph names, unknown types, launch clauses
//!   other than one `grid(...)`, one `block(...)` and at most one `shared(...)`, more than three
//!   dimensions, unknown expression functions or wrong argument counts, names that are not
//!   parameters or temporaries, literals that do not fit the kernel parameter they are passed to.
//! - A graph with lowering errors is not added to the module. Whether a graph that lowers fits the
//!   kernels it launches (argument counts and types, size expressions) is the verifier's question
//!   ([`crate::verify::verify_graph`], run by [`crate::verify::verify_module`]).
//! - A graph that launches a kernel that failed to lower is dropped silently (the kernel's own
//!   errors are already reported), so one mistake is not reported twice.
//! - Expression lowering recurses, but the grammar accepts no expression nested deeper than
//!   [`crate::text::ast::MAX_NESTING`], so the depth of that recursion (and of the resulting
//!   [`crate::graph::Expr`] trees' `Display`, `eval`, `Clone` and `Drop`) is bounded.

use crate::diag::Diagnostic;
use crate::graph::*;
use crate::ir::Module;
use crate::span::Span;
use crate::text::ast::*;
use crate::text::literal::{literal_constant, lower_type_in, TypeContext};
use crate::types::{AddrSpace, ScalarType, Type};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Lowers every graph of `ast` into `module` (whose kernels are already lowered).
pub(crate) fn lower_graphs(ast: &AstModule, module: &mut Module, errs: &mut Vec<Diagnostic>) {
    let declared_kernels: HashSet<&str> = ast
        .items
        .iter()
        .filter_map(|i| match i {
            AstItem::Kernel(k) => Some(k.name.node.as_str()),
            _ => None,
        })
        .collect();
    let mut seen: HashMap<&str, Span> = HashMap::default();
    for item in &ast.items {
        let AstItem::Graph(g) = item else { continue };
        if let Some(prev) = seen.get(g.name.node.as_str()) {
            errs.push(
                Diagnostic::error(format!("duplicate graph name `@{}`", g.name.node))
                    .at(g.name.span, "defined again here")
                    .with_label(*prev, "first defined here"),
            );
            continue;
        }
        seen.insert(&g.name.node, g.name.span);
        if g.launches
            .iter()
            .any(|l| declared_kernels.contains(l.kernel.node.as_str()) && module.kernel(&l.kernel.node).is_none())
        {
            continue;
        }
        let mut local = Vec::new();
        if let Some(graph) = lower_graph(g, module, &mut local) {
            if local.is_empty() {
                module.graphs.push(graph);
            }
        }
        errs.extend(local);
    }
}

/// Graph parameters: global buffers and scalars.
const GRAPH_TYPES: TypeContext = TypeContext { spaces: "expected `global`", list_types: false };

fn lower_type(t: &AstType, errs: &mut Vec<Diagnostic>) -> Option<Type> {
    lower_type_in(t, errs, &GRAPH_TYPES)
}

/// The span of a `name(` token without the parenthesis.
fn call_name_span(s: &Spanned<AstStr>) -> Span {
    Span { start: s.span.start, end: s.span.start + s.node.len() as u32 }
}

struct Scope<'g> {
    graph: &'g AstGraph,
    /// Every name with its type (parameters and temporaries).
    names: HashMap<AstStr, Option<Type>>,
}

impl Scope<'_> {
    fn lower_expr(&self, e: &Spanned<AstExpr>, errs: &mut Vec<Diagnostic>) -> Option<Expr> {
        match &e.node {
            AstExpr::Int(text) => match parse_u64(text) {
                Some(v) => Some(Expr::Int(v)),
                None => {
                    errs.push(
                        Diagnostic::error(format!("`{text}` is not a size"))
                            .at(e.span, "sizes are integers from 0 to 2^64-1"),
                    );
                    None
                }
            },
            AstExpr::Value(v) => match self.names.get(v) {
                None => {
                    errs.push(
                        Diagnostic::error(format!("`%{v}` is not defined in graph `@{}`", self.graph.name.node))
                            .at(e.span, "not a parameter of the graph"),
                    );
                    None
                }
                Some(Some(Type::Scalar(s))) if s.is_int() => Some(Expr::Param(v.to_string())),
                Some(Some(t)) => {
                    errs.push(
                        Diagnostic::error(format!("`%{v}` (of type `{t}`) cannot be used in a size expression"))
                            .at(e.span, "not an integer scalar")
                            .with_note("size expressions read integer scalar parameters of the graph only"),
                    );
                    None
                }
                // The parameter's type failed to lower (reported already).
                Some(None) => None,
            },
            AstExpr::Call(f, args, _) => {
                let lowered: Vec<Option<Expr>> = args.iter().map(|a| self.lower_expr(a, errs)).collect();
                let Some(func) = ExprFn::from_name(&f.node) else {
                    let names: Vec<String> = ExprFn::ALL.iter().map(|f| format!("{}(a, b)", f.name())).collect();
                    errs.push(
                        Diagnostic::error(format!("unknown function `{}` in a size expression", f.node))
                            .at(call_name_span(f), "not a function")
                            .with_note(format!("functions: {}", names.join(", "))),
                    );
                    return None;
                };
                if args.len() != func.arity() {
                    errs.push(
                        Diagnostic::error(format!(
                            "`{}` takes {} arguments, not {}",
                            func.name(),
                            func.arity(),
                            args.len()
                        ))
                        .at(e.span, "wrong number of arguments"),
                    );
                    return None;
                }
                let lowered: Option<Vec<Expr>> = lowered.into_iter().collect();
                Some(Expr::Call(func, lowered?))
            }
        }
    }
}

fn parse_u64(text: &str) -> Option<u64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn lower_graph(g: &AstGraph, module: &Module, errs: &mut Vec<Diagnostic>) -> Option<Graph> {
    let mut scope = Scope { graph: g, names: HashMap::default() };
    let mut first: HashMap<&str, Span> = HashMap::default();
    let mut params = Vec::new();
    let mut ok = true;
    for p in &g.params {
        let ty = lower_type(&p.ty, errs);
        if let Some(prev) = first.get(p.name.node.as_str()) {
            errs.push(
                Diagnostic::error(format!("duplicate parameter `%{}` in graph `@{}`", p.name.node, g.name.node))
                    .at(p.name.span, "declared again here")
                    .with_label(*prev, "first declared here"),
            );
            ok = false;
        }
        first.insert(&p.name.node, p.name.span);
        scope.names.insert(p.name.node.clone(), ty);
        match ty {
            Some(ty) => {
                params.push(GraphParam { name: p.name.node.to_string(), ty, span: p.name.span.to(p.ty.span()) })
            }
            None => ok = false,
        }
    }
    let mut temps = Vec::new();
    for t in &g.temps {
        let len = scope.lower_expr(&t.len, errs);
        let elem = ScalarType::from_name(&t.elem.node);
        if elem.is_none() {
            errs.push(Diagnostic::error(format!("unknown type `{}`", t.elem.node)).at(t.elem.span, "not a type"));
        }
        if let Some(prev) = first.get(t.name.node.as_str()) {
            errs.push(
                Diagnostic::error(format!("`%{}` is already defined in graph `@{}`", t.name.node, g.name.node))
                    .at(t.name.span, "defined again here")
                    .with_label(*prev, "first defined here"),
            );
            ok = false;
        }
        first.insert(&t.name.node, t.name.span);
        scope.names.insert(t.name.node.clone(), elem.map(|e| Type::Ptr(AddrSpace::Global, e)));
        match (elem, len) {
            (Some(elem), Some(len)) => temps.push(Temp { name: t.name.node.to_string(), elem, len, span: t.span }),
            _ => ok = false,
        }
    }
    let mut launches = Vec::new();
    for l in &g.launches {
        match lower_launch(&scope, l, module, errs) {
            Some(launch) => launches.push(launch),
            None => ok = false,
        }
    }
    ok.then(|| Graph { name: g.name.node.to_string(), params, temps, launches, span: g.span })
}

fn lower_launch(scope: &Scope<'_>, l: &AstLaunch, module: &Module, errs: &mut Vec<Diagnostic>) -> Option<Launch> {
    let before = errs.len();
    let mut grid: Option<[Expr; 3]> = None;
    let mut block: Option<[Expr; 3]> = None;
    let mut shared: Option<Expr> = None;
    for c in &l.clauses {
        let name_span = call_name_span(&c.name);
        let slot_taken = match c.name.node.as_str() {
            "grid" => grid.is_some(),
            "block" => block.is_some(),
            "shared" => shared.is_some(),
            other => {
                errs.push(
                    Diagnostic::error(format!("unknown launch clause `{other}(...)`"))
                        .at(name_span, "not a launch clause")
                        .with_note(
                            "a launch is `launch @kernel grid(x[, y[, z]]) block(x[, y[, z]]) [shared(bytes)] (args)`",
                        ),
                );
                continue;
            }
        };
        if slot_taken {
            errs.push(
                Diagnostic::error(format!("`{}(...)` is given twice", c.name.node)).at(name_span, "given again here"),
            );
            continue;
        }
        let exprs: Vec<Option<Expr>> = c.args.iter().map(|a| scope.lower_expr(a, errs)).collect();
        let Some(exprs) = exprs.into_iter().collect::<Option<Vec<Expr>>>() else { continue };
        if c.name.node == "shared" {
            if exprs.len() != 1 {
                errs.push(Diagnostic::error("`shared(...)` takes one size in bytes").at(c.span, "here"));
                continue;
            }
            shared = exprs.into_iter().next();
            continue;
        }
        if exprs.is_empty() || exprs.len() > 3 {
            errs.push(
                Diagnostic::error(format!("`{}(...)` takes 1 to 3 dimensions, not {}", c.name.node, exprs.len()))
                    .at(c.span, "here"),
            );
            continue;
        }
        let mut dims = [Expr::one(), Expr::one(), Expr::one()];
        for (d, e) in dims.iter_mut().zip(exprs) {
            *d = e;
        }
        if c.name.node == "grid" {
            grid = Some(dims);
        } else {
            block = Some(dims);
        }
    }
    for what in ["grid", "block"] {
        if !l.clauses.iter().any(|c| c.name.node == what) {
            errs.push(
                Diagnostic::error(format!("the launch of `@{}` has no `{what}(...)`", l.kernel.node))
                    .at(l.kernel.span, format!("add `{what}(...)` after the kernel name")),
            );
        }
    }
    let kernel = module.kernel(&l.kernel.node);
    let param_ty = |i: usize| kernel.and_then(|k| k.params.get(i).map(|p| k.value(*p).ty));
    let mut args = Vec::new();
    for (i, a) in l.args.iter().enumerate() {
        let lowered = match &a.node {
            AstGraphArg::Expr(AstExpr::Value(v)) => match scope.names.get(v) {
                Some(_) => Some(LaunchArg::Value(v.to_string())),
                None => {
                    errs.push(
                        Diagnostic::error(format!("`%{v}` is not defined in graph `@{}`", scope.graph.name.node))
                            .at(a.span, "not a graph parameter or temporary"),
                    );
                    None
                }
            },
            AstGraphArg::Expr(AstExpr::Int(text)) => {
                literal_arg(&AstOperand::Int(text.clone()), a.span, param_ty(i), errs)
            }
            AstGraphArg::Literal(lit) => literal_arg(lit, a.span, param_ty(i), errs),
            AstGraphArg::Expr(e @ AstExpr::Call(..)) => {
                scope.lower_expr(&Spanned { node: e.clone(), span: a.span }, errs).map(LaunchArg::Expr)
            }
        };
        args.extend(lowered);
    }
    if errs.len() != before {
        return None;
    }
    Some(Launch {
        kernel: l.kernel.node.to_string(),
        grid: grid?,
        block: block?,
        shared_bytes: shared,
        args,
        span: l.span,
        arg_spans: l.args.iter().map(|a| a.span).collect(),
    })
}

/// A literal argument, typed by the kernel parameter it is passed to. With no such parameter (an
/// unknown kernel, too many arguments) the literal gets its natural type so that the verifier can
/// report the real problem.
fn literal_arg(lit: &AstOperand, span: Span, ty: Option<Type>, errs: &mut Vec<Diagnostic>) -> Option<LaunchArg> {
    let natural = match lit {
        AstOperand::Int(_) => ScalarType::U64,
        AstOperand::Bool(_) => ScalarType::Pred,
        _ => ScalarType::F32,
    };
    let ty = match ty {
        Some(Type::Scalar(s)) => s,
        Some(t @ Type::Vec(..)) => {
            errs.push(
                Diagnostic::error(format!("a literal cannot be passed as a vector (`{t}`)"))
                    .at(span, "kernel parameters are scalars or pointers"),
            );
            return None;
        }
        Some(t @ Type::Ptr(..)) => {
            errs.push(
                Diagnostic::error(format!("a literal cannot be passed as a buffer (`{t}`)"))
                    .at(span, "expected a buffer name"),
            );
            return None;
        }
        None => natural,
    };
    match literal_constant(lit, ty) {
        Ok(c) => Some(LaunchArg::Const(c)),
        Err(msg) => {
            errs.push(Diagnostic::error(msg).at(span, format!("passed as `{ty}`")));
            None
        }
    }
}
