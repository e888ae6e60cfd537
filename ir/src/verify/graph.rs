//! Verification of launch graphs against the module's kernels.
//!
//! [`verify_graph`] accepts a graph only when every launch names a kernel of the module, passes
//! exactly as many arguments as the kernel has parameters, each of the kernel parameter's type,
//! every named buffer or scalar is a graph parameter or temporary, every size expression (temporary
//! lengths, grid, block, dynamic shared bytes) reads only integer scalar parameters, and dynamic
//! shared memory is sized exactly for kernels that declare it. Every problem found is reported,
//! with the span of the offending text when the graph was parsed.

use crate::diag::Diagnostic;
use crate::graph::*;
use crate::ir::Module;
use crate::span::Span;
use crate::types::{AddrSpace, ScalarType, Type};

/// Checks a graph against the module's kernels; returns every error found.
pub(crate) fn verify_graph(m: &Module, g: &Graph) -> Vec<Diagnostic> {
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
