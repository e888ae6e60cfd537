//! Launch graphs: a named, ordered list of kernel launches over typed buffer and scalar parameters
//! and graph-owned temporary buffers (see `docs/language.md`, "Launch graphs").
//!
//! Guarantees:
//! - [`verify_graph`] accepts a graph only when every launch names a kernel of the module, passes
//!   exactly as many arguments as the kernel has parameters, each of the kernel parameter's type,
//!   every named buffer or scalar is a graph parameter or temporary, every size expression (temporary
//!   lengths, grid, block, dynamic shared bytes) reads only integer scalar parameters, and dynamic
//!   shared memory is sized exactly for kernels that declare it. Every problem found is reported,
//!   with the span of the offending text when the graph was parsed.
//! - [`Expr::eval`] never panics and never wraps: overflow, underflow and division by zero are
//!   errors.
//! - [`dependency_graph`] is a DAG over launch indices with an edge `i -> j` (`i < j`) exactly when
//!   launch `j` reads a buffer `i` writes, writes a buffer `i` reads, or writes a buffer `i` writes.
//!   Buffer accesses come from [`param_access`], over [`crate::provenance`]'s flow-insensitive
//!   analysis that over-approximates (a parameter is "read" if any load may use a pointer derived
//!   from it). Distinct buffer names are
//!   assumed not to alias: a graph's buffer parameters must be distinct allocations.
//! - [`print_graph`] output re-parses to a structurally equal graph.

use crate::diag::Diagnostic;
use crate::ir::{Kernel, Module, Operand};
use crate::op::Op;
use crate::printer::print_constant;
use crate::span::Span;
use crate::types::{AddrSpace, Constant, ScalarType, Type};
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::BTreeSet;
use std::fmt::{self, Write};

/// A launch graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// The name without `@`.
    pub name: String,
    pub params: Vec<GraphParam>,
    /// Buffers the graph allocates (in global memory) for its own launches.
    pub temps: Vec<Temp>,
    /// Launches in execution order; each launch completes before the next starts.
    pub launches: Vec<Launch>,
    pub span: Span,
}

/// A graph parameter: a global buffer (`ptr<global, T>`) or a scalar.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphParam {
    /// The name without `%`.
    pub name: String,
    pub ty: Type,
    pub span: Span,
}

/// `temp %name: T[len]`: a global buffer of `len` elements of `T`, zero-initialized when the graph
/// starts and freed when it ends.
#[derive(Clone, Debug, PartialEq)]
pub struct Temp {
    pub name: String,
    pub elem: ScalarType,
    pub len: Expr,
    pub span: Span,
}

/// `launch @kernel grid(x, y, z) block(x, y, z) [shared(bytes)] (args)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// The kernel name without `@`.
    pub kernel: String,
    /// Grid size in blocks per dimension (omitted dimensions are 1).
    pub grid: [Expr; 3],
    /// Block size in threads per dimension (omitted dimensions are 1).
    pub block: [Expr; 3],
    /// Dynamic shared memory in bytes, for kernels that declare `shared @x: T[]`.
    pub shared_bytes: Option<Expr>,
    pub args: Vec<LaunchArg>,
    pub span: Span,
    /// The span of each argument (empty for launches made by passes).
    pub arg_spans: Vec<Span>,
}

/// A launch argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LaunchArg {
    /// A graph parameter or temporary, by name (without `%`).
    Value(String),
    /// A literal, typed by the kernel parameter it is passed to.
    Const(Constant),
    /// A computed integer (a function call such as `mul(%m, %n)`).
    Expr(Expr),
}

/// An integer size expression over the graph's integer scalar parameters, evaluated in unsigned
/// 64-bit arithmetic without wrapping.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    Int(u64),
    /// A scalar parameter of the graph, by name (without `%`).
    Param(String),
    Call(ExprFn, Vec<Expr>),
}

/// The functions of size expressions; all take two arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExprFn {
    Add,
    Sub,
    Mul,
    /// Division rounding down.
    Div,
    /// Division rounding up: `ceil_div(n, 256)` blocks of 256 cover `n`.
    CeilDiv,
    Min,
    Max,
}

impl ExprFn {
    pub const ALL: [ExprFn; 7] =
        [ExprFn::Add, ExprFn::Sub, ExprFn::Mul, ExprFn::Div, ExprFn::CeilDiv, ExprFn::Min, ExprFn::Max];
    pub fn name(self) -> &'static str {
        match self {
            ExprFn::Add => "add",
            ExprFn::Sub => "sub",
            ExprFn::Mul => "mul",
            ExprFn::Div => "div",
            ExprFn::CeilDiv => "ceil_div",
            ExprFn::Min => "min",
            ExprFn::Max => "max",
        }
    }
    pub fn from_name(s: &str) -> Option<ExprFn> {
        ExprFn::ALL.iter().copied().find(|f| f.name() == s)
    }
    pub fn arity(self) -> usize {
        2
    }
}

impl Expr {
    pub fn one() -> Expr {
        Expr::Int(1)
    }
    /// Every parameter name the expression reads.
    pub fn params(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_params(&mut out);
        out
    }
    fn collect_params<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Int(_) => {}
            Expr::Param(p) => out.push(p),
            Expr::Call(_, args) => args.iter().for_each(|a| a.collect_params(out)),
        }
    }
    /// Evaluates the expression; `param` gives the value of a scalar parameter (None: unknown).
    pub fn eval(&self, param: &dyn Fn(&str) -> Option<u64>) -> Result<u64, String> {
        match self {
            Expr::Int(v) => Ok(*v),
            Expr::Param(p) => param(p).ok_or_else(|| format!("`%{p}` has no integer value")),
            Expr::Call(f, args) => {
                if args.len() != f.arity() {
                    return Err(format!("`{}` takes {} arguments, not {}", f.name(), f.arity(), args.len()));
                }
                let a = args[0].eval(param)?;
                let b = args[1].eval(param)?;
                let overflow = || format!("`{self}` overflows 64 bits ({a}, {b})");
                match f {
                    ExprFn::Add => a.checked_add(b).ok_or_else(overflow),
                    ExprFn::Sub => a.checked_sub(b).ok_or_else(|| format!("`{self}` is negative ({a} - {b})")),
                    ExprFn::Mul => a.checked_mul(b).ok_or_else(overflow),
                    ExprFn::Div | ExprFn::CeilDiv if b == 0 => Err(format!("`{self}` divides by zero")),
                    ExprFn::Div => Ok(a / b),
                    ExprFn::CeilDiv => Ok(a / b + u64::from(a % b != 0)),
                    ExprFn::Min => Ok(a.min(b)),
                    ExprFn::Max => Ok(a.max(b)),
                }
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Int(v) => write!(f, "{v}"),
            Expr::Param(p) => write!(f, "%{p}"),
            Expr::Call(func, args) => {
                write!(f, "{}(", func.name())?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl Launch {
    /// The span of argument `i`, or of the launch when unknown.
    pub fn arg_span(&self, i: usize) -> Span {
        self.arg_spans.get(i).copied().filter(|s| !s.is_dummy()).unwrap_or(self.span)
    }
    /// The buffer names passed as arguments, with their argument positions.
    pub fn value_args(&self) -> impl Iterator<Item = (usize, &str)> {
        self.args.iter().enumerate().filter_map(|(i, a)| match a {
            LaunchArg::Value(v) => Some((i, v.as_str())),
            _ => None,
        })
    }
}

impl Graph {
    pub fn param(&self, name: &str) -> Option<(usize, &GraphParam)> {
        self.params.iter().enumerate().find(|(_, p)| p.name == name)
    }
    pub fn temp(&self, name: &str) -> Option<(usize, &Temp)> {
        self.temps.iter().enumerate().find(|(_, t)| t.name == name)
    }
    /// The type of a name: a parameter's type, or `ptr<global, T>` for a temporary.
    pub fn value_type(&self, name: &str) -> Option<Type> {
        if let Some((_, p)) = self.param(name) {
            return Some(p.ty);
        }
        self.temp(name).map(|(_, t)| Type::Ptr(AddrSpace::Global, t.elem))
    }
    /// Whether `name` is a buffer (a pointer parameter or a temporary).
    pub fn is_buffer(&self, name: &str) -> bool {
        self.value_type(name).is_some_and(|t| t.is_ptr())
    }
    /// A name not used by any parameter or temporary, derived from `base`.
    pub fn fresh_name(&self, base: &str) -> String {
        let taken = |n: &str| self.value_type(n).is_some();
        if !taken(base) {
            return base.to_string();
        }
        (1..).map(|i| format!("{base}.{i}")).find(|n| !taken(n)).unwrap_or_else(|| base.to_string())
    }
    /// Replaces every span by [`Span::DUMMY`].
    pub fn clear_spans(&mut self) {
        self.span = Span::DUMMY;
        self.params.iter_mut().for_each(|p| p.span = Span::DUMMY);
        self.temps.iter_mut().for_each(|t| t.span = Span::DUMMY);
        for l in &mut self.launches {
            l.span = Span::DUMMY;
            l.arg_spans.clear();
        }
    }
}

/// How a kernel uses one of its pointer parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParamAccess {
    /// Some load or atomic may read through a pointer derived from the parameter.
    pub read: bool,
    /// Some store or atomic may write through a pointer derived from the parameter.
    pub write: bool,
    /// Some atomic may access it.
    pub atomic: bool,
}

pub use crate::provenance::pointer_origins;

/// How `k` accesses each of its parameters (all-false for scalars). A pointer passed to a call
/// counts as read, written and accessed atomically (the callee is not looked into).
pub fn param_access(k: &Kernel) -> Vec<ParamAccess> {
    let origin = pointer_origins(k);
    let mut acc = vec![ParamAccess::default(); k.params.len()];
    for i in k.blocks.iter().flat_map(|b| &b.insts) {
        let Some(d) = k.insts.get(i.index()) else { continue };
        let (read, write, atomic) = match d.op {
            Op::Load => (true, false, false),
            Op::Store => (false, true, false),
            Op::Atomic(_) | Op::AtomicCas => (true, true, true),
            // A function may do anything through the pointers it is passed.
            Op::Call(_) => (true, true, true),
            _ => continue,
        };
        let pointers: &[Operand] = if matches!(d.op, Op::Call(_)) { &d.args } else { &d.args[..d.args.len().min(1)] };
        for p in pointers.iter().filter_map(|a| a.as_value()) {
            for &o in origin.get(p.index()).into_iter().flatten() {
                if let Some(a) = acc.get_mut(o as usize) {
                    a.read |= read;
                    a.write |= write;
                    a.atomic |= atomic;
                }
            }
        }
    }
    acc
}

/// The buffers a launch reads and writes (by graph name). An unknown kernel is taken to read and
/// write every buffer it is passed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchEffects {
    pub reads: BTreeSet<String>,
    pub writes: BTreeSet<String>,
}

pub fn launch_effects(m: &Module, l: &Launch) -> LaunchEffects {
    let mut e = LaunchEffects::default();
    let kernel = m.kernel(&l.kernel);
    let access = kernel.map(param_access);
    for (i, name) in l.value_args() {
        let a = match &access {
            Some(acc) => acc.get(i).copied().unwrap_or_default(),
            None => ParamAccess { read: true, write: true, atomic: true },
        };
        if a.read {
            e.reads.insert(name.to_string());
        }
        if a.write {
            e.writes.insert(name.to_string());
        }
    }
    e
}

/// Why one launch must run after another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hazard {
    /// The later launch reads what the earlier one wrote.
    ReadAfterWrite,
    /// The later launch overwrites what the earlier one read.
    WriteAfterRead,
    /// Both write the buffer; the later write must win.
    WriteAfterWrite,
}

impl Hazard {
    pub fn name(self) -> &'static str {
        match self {
            Hazard::ReadAfterWrite => "reads what it wrote",
            Hazard::WriteAfterRead => "overwrites what it read",
            Hazard::WriteAfterWrite => "overwrites what it wrote",
        }
    }
}

/// One reason for an edge of the dependency graph.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dependency {
    pub buffer: String,
    pub hazard: Hazard,
}

/// The dependency DAG of a graph: node `n` has weight `n` (the launch index, nodes are added in
/// launch order) and an edge `i -> j` lists every hazard between launches `i < j`.
pub fn dependency_graph(m: &Module, g: &Graph) -> DiGraph<usize, Vec<Dependency>> {
    let effects: Vec<LaunchEffects> = g.launches.iter().map(|l| launch_effects(m, l)).collect();
    let mut dag = DiGraph::new();
    let nodes: Vec<NodeIndex> = (0..g.launches.len()).map(|i| dag.add_node(i)).collect();
    for j in 0..effects.len() {
        for i in 0..j {
            let (a, b) = (&effects[i], &effects[j]);
            let mut deps = BTreeSet::new();
            for buf in a.writes.intersection(&b.reads) {
                deps.insert(Dependency { buffer: buf.clone(), hazard: Hazard::ReadAfterWrite });
            }
            for buf in a.reads.intersection(&b.writes) {
                deps.insert(Dependency { buffer: buf.clone(), hazard: Hazard::WriteAfterRead });
            }
            for buf in a.writes.intersection(&b.writes) {
                deps.insert(Dependency { buffer: buf.clone(), hazard: Hazard::WriteAfterWrite });
            }
            if !deps.is_empty() {
                dag.add_edge(nodes[i], nodes[j], deps.into_iter().collect());
            }
        }
    }
    dag
}

/// Checks a graph against the module's kernels; returns every error found.
pub fn verify_graph(m: &Module, g: &Graph) -> Vec<Diagnostic> {
    let mut errs = Vec::new();
    let at = |s: Span| if s.is_dummy() { g.span } else { s };
    // Names.
    for (i, p) in g.params.iter().enumerate() {
        if let Some(prev) = g.params[..i].iter().find(|q| q.name == p.name) {
            errs.push(
                Diagnostic::error(format!("duplicate parameter `%{}` in graph `@{}`", p.name, g.name))
                    .at(at(p.span), "declared again here")
                    .with_label(at(prev.span), "first declared here"),
            );
        }
        if let Type::Ptr(AddrSpace::Shared, _) = p.ty {
            errs.push(
                Diagnostic::error(format!("graph parameter `%{}` is a shared-memory pointer", p.name))
                    .at(at(p.span), "only `ptr<global, T>` buffers and scalars can be passed to a graph"),
            );
        }
    }
    for (i, t) in g.temps.iter().enumerate() {
        let dup = g
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.span))
            .chain(g.temps[..i].iter().map(|t| (t.name.as_str(), t.span)))
            .find(|(n, _)| *n == t.name);
        if let Some((_, prev)) = dup {
            errs.push(
                Diagnostic::error(format!("`%{}` is already defined in graph `@{}`", t.name, g.name))
                    .at(at(t.span), "defined again here")
                    .with_label(at(prev), "first defined here"),
            );
        }
        if t.elem == ScalarType::Pred {
            errs.push(
                Diagnostic::error(format!("temporary `%{}` has element type `pred`", t.name))
                    .at(at(t.span), "use u8 or u32 storage"),
            );
        }
        check_expr(g, &t.len, at(t.span), "the length of a temporary", &mut errs);
    }
    // Launches.
    for l in &g.launches {
        let span = at(l.span);
        for (what, dims) in [("grid", &l.grid), ("block", &l.block)] {
            for d in dims.iter() {
                check_expr(g, d, span, what, &mut errs);
                if *d == Expr::Int(0) {
                    errs.push(
                        Diagnostic::error(format!("a {what} dimension of `@{}` is 0", l.kernel))
                            .at(span, "launch dimensions must be at least 1"),
                    );
                }
            }
        }
        if let Some(s) = &l.shared_bytes {
            check_expr(g, s, span, "dynamic shared memory size", &mut errs);
        }
        let Some(k) = m.kernel(&l.kernel) else {
            let names: Vec<String> = m.kernels.iter().map(|k| format!("@{}", k.name)).collect();
            errs.push(
                Diagnostic::error(format!("unknown kernel `@{}`", l.kernel)).at(span, "launched here").with_note(
                    format!(
                        "kernels in this module: {}",
                        if names.is_empty() { "none".into() } else { names.join(", ") }
                    ),
                ),
            );
            continue;
        };
        let dynamic = k.shared.iter().find(|s| s.len.is_none());
        match (dynamic, &l.shared_bytes) {
            (Some(d), None) => errs.push(
                Diagnostic::error(format!(
                    "kernel `@{}` declares dynamic shared memory `@{}` but the launch does not size it",
                    k.name, d.name
                ))
                .at(span, "add `shared(BYTES)` before the arguments"),
            ),
            (None, Some(_)) => errs.push(
                Diagnostic::error(format!("kernel `@{}` has no dynamic shared memory", k.name))
                    .at(span, "remove the `shared(...)` clause"),
            ),
            _ => {}
        }
        if l.args.len() != k.params.len() {
            let sig: Vec<String> =
                k.params.iter().map(|p| format!("%{}: {}", k.value(*p).name, k.value(*p).ty)).collect();
            errs.push(
                Diagnostic::error(format!(
                    "kernel `@{}` takes {} argument{}, but {} {} given",
                    k.name,
                    k.params.len(),
                    plural(k.params.len()),
                    l.args.len(),
                    if l.args.len() == 1 { "is" } else { "are" }
                ))
                .at(span, "wrong number of arguments")
                .with_note(format!("@{}({})", k.name, sig.join(", "))),
            );
            continue;
        }
        for (i, (arg, &p)) in l.args.iter().zip(&k.params).enumerate() {
            let pname = &k.value(p).name;
            let pty = k.value(p).ty;
            let aspan = at(l.arg_span(i));
            let mismatch = |found: String| {
                Diagnostic::error(format!(
                    "argument {} of `@{}` has type `{found}`, but parameter `%{pname}` is `{pty}`",
                    i + 1,
                    k.name
                ))
                .at(aspan, format!("expected `{pty}`"))
            };
            match arg {
                LaunchArg::Value(v) => match g.value_type(v) {
                    None => errs.push(
                        Diagnostic::error(format!("`%{v}` is not defined in graph `@{}`", g.name))
                            .at(aspan, "not a graph parameter or temporary"),
                    ),
                    Some(t) if t != pty => errs.push(mismatch(t.to_string())),
                    Some(_) => {}
                },
                LaunchArg::Const(c) => {
                    if Type::Scalar(c.ty) != pty {
                        errs.push(mismatch(c.ty.to_string()));
                    }
                }
                LaunchArg::Expr(e) => {
                    check_expr(g, e, aspan, "a computed argument", &mut errs);
                    if !pty.scalar().is_some_and(|s| s.is_int()) {
                        errs.push(mismatch("integer expression".into()));
                    }
                }
            }
        }
    }
    errs
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Checks that an expression only reads integer scalar parameters of the graph.
fn check_expr(g: &Graph, e: &Expr, span: Span, what: &str, errs: &mut Vec<Diagnostic>) {
    check_expr_arity(e, span, errs);
    for p in e.params() {
        match g.value_type(p) {
            None => errs.push(
                Diagnostic::error(format!("`%{p}` is not defined in graph `@{}`", g.name))
                    .at(span, format!("used in {what}")),
            ),
            Some(Type::Scalar(s)) if s.is_int() => {}
            Some(t) => errs.push(
                Diagnostic::error(format!("`%{p}` (of type `{t}`) cannot be used in {what}"))
                    .at(span, "used here")
                    .with_note("size expressions read integer scalar parameters of the graph only"),
            ),
        }
    }
}

fn check_expr_arity(e: &Expr, span: Span, errs: &mut Vec<Diagnostic>) {
    if let Expr::Call(f, args) = e {
        if args.len() != f.arity() {
            errs.push(
                Diagnostic::error(format!("`{}` takes {} arguments, not {}", f.name(), f.arity(), args.len()))
                    .at(span, "here"),
            );
        }
        args.iter().for_each(|a| check_expr_arity(a, span, errs));
    }
}

/// Prints a launch argument.
pub fn print_launch_arg(a: &LaunchArg) -> String {
    match a {
        LaunchArg::Value(v) => format!("%{v}"),
        LaunchArg::Const(c) => print_constant(*c),
        LaunchArg::Expr(e) => e.to_string(),
    }
}

/// Prints launch dimensions as written in a launch, without trailing `1`s.
pub fn print_dims(dims: &[Expr; 3]) -> String {
    let used = dims.iter().rposition(|d| *d != Expr::Int(1)).map(|i| i + 1).unwrap_or(1);
    dims[..used].iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
}

/// Prints one launch (without indentation or newline).
pub fn print_launch(l: &Launch) -> String {
    let mut s = format!("launch @{} grid({}) block({})", l.kernel, print_dims(&l.grid), print_dims(&l.block));
    if let Some(b) = &l.shared_bytes {
        let _ = write!(s, " shared({b})");
    }
    let args: Vec<String> = l.args.iter().map(print_launch_arg).collect();
    let _ = write!(s, " ({})", args.join(", "));
    s
}

/// Prints a graph in the text format.
pub fn print_graph(g: &Graph) -> String {
    let mut out = String::new();
    let params: Vec<String> = g.params.iter().map(|p| format!("%{}: {}", p.name, p.ty)).collect();
    let _ = writeln!(out, "graph @{}({}) {{", g.name, params.join(", "));
    for t in &g.temps {
        let _ = writeln!(out, "  temp %{}: {}[{}]", t.name, t.elem, t.len);
    }
    for l in &g.launches {
        let _ = writeln!(out, "  {}", print_launch(l));
    }
    out.push_str("}\n");
    out
}
