//! The comparison tolerance a graph's GPU results are held to when none is given (a kernel launch
//! without `tol=` is judged by per-element error enclosures instead: [`crate::enclosure`]; this
//! rule also decides whether a kernel has approximate ops at all): derived from the
//! approximate ops (`Op::is_approx`) the kernel contains and their GPU error bounds as measured on
//! an H100 over all 2^32 inputs (`kir_ir::eval::error_bound`, `kir_ir::eval::max_ulp_error`;
//! hardware-truth `approx/mufu.json`, table in docs/language.md "Approximate ops").
//!
//! Guarantees:
//! - A kernel with no approximate op gets [`Tolerance::Exact`]: every other op is exactly rounded
//!   and both engines evaluate it the same way, so results must agree bit for bit (NaN payloads
//!   aside).
//! - Otherwise the rule, applied to the approximate instructions placed in the kernel (each
//!   static instruction counted once, a called function's once per call site):
//!   1. if any of them has no bound (approximate ops on types other than f32: nothing measured,
//!      and the PTX ISA documents none) or the kernel mixes ops bounded in ulp with `sin`/`cos`
//!      (bounded absolutely), the result is `Ulp(u32::MAX)`: only NaN-ness and infinities are
//!      compared;
//!   2. if all of them are `sin`/`cos` (measured absolute bound 2^-14.7 on [-100π, 100π]), the
//!      result is `Abs(n × 2^-14.7)` for n such instructions;
//!   3. otherwise (all bounded in ulp: ex2 2, lg2 2, rsqrt 2, tanh 134, rcp.approx 1,
//!      sqrt.approx 1, div.approx 2, div.full 2) it is `Ulp(Σ max_ulp_error)`, saturating.
//! - The rule is deterministic and depends only on the op set, never on data.
//!
//! Limits (also in docs/testing.md, "Derived tolerances"): the bound is exact for an output that
//! is the result of one approximate op stored directly, and additive for a chain of approximate
//! ops whose errors add up. It does not account for error amplified by later exact arithmetic
//! (cancellation in a subtraction, multiplication by a large factor, an approximate op inside a
//! loop whose error compounds per iteration, a comparison that flips a branch), nor for inputs
//! outside an op's measured domain (`sin`/`cos` beyond 100π, `div.approx` by |b| > 2^126, `lg2`
//! near 1, where its bound is absolute: 2^-22 on [0.5, 2], not 2 ulp), nor for `.ftz` results the
//! GPU flushes although they round to the smallest normal (`div.approx.ftz`, 2 inputs per
//! divisor: 2^23 ulp apart). Kernels with such structure need an explicit tolerance
//! (`kir diff --tol`, `tol=` in a `; run:` directive).

use crate::directives::Tolerance;
use kir_ir::eval::{error_bound, max_ulp_error};
use kir_ir::graph::Graph;
use kir_ir::op::Op;
use kir_ir::{Kernel, Module};

/// Why a tolerance was chosen: the approximate ops counted, by mnemonic.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Derivation {
    /// `(mnemonic, static count)` of every approximate op, in first-seen order.
    pub ops: Vec<(String, usize)>,
}

impl std::fmt::Display for Derivation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.ops.is_empty() {
            return write!(f, "no approximate op");
        }
        let parts: Vec<String> =
            self.ops.iter().map(|(m, n)| if *n == 1 { m.clone() } else { format!("{n}x {m}") }).collect();
        write!(f, "approximate ops: {}", parts.join(", "))
    }
}

/// The derived tolerance of one kernel (see the module docs), which may call device functions of
/// `funcs` (its module's): the approximate ops of every function a call reaches count too, once
/// per call site (a callee called twice adds its errors twice).
pub fn derived_tolerance(funcs: &[Kernel], k: &Kernel) -> Tolerance {
    derived_tolerance_explained(funcs, k).0
}

/// [`derived_tolerance`] and the ops it was derived from.
pub fn derived_tolerance_explained(funcs: &[Kernel], k: &Kernel) -> (Tolerance, Derivation) {
    let mut ops = Vec::new();
    ops_through_calls(funcs, k, &mut ops, 0);
    derive(ops.into_iter())
}

/// The derived tolerance of a graph: the rule applied to the approximate instructions of every
/// kernel the graph launches, its calls included (each kernel counted once per launch, since
/// errors of successive launches add up along the graph).
pub fn derived_tolerance_graph(m: &Module, g: &Graph) -> (Tolerance, Derivation) {
    let mut ops = Vec::new();
    for k in g.launches.iter().filter_map(|l| m.kernel(&l.kernel)) {
        ops_through_calls(&m.funcs, k, &mut ops, 0);
    }
    derive(ops.into_iter())
}

/// The instructions of `k` and, for each `call`, of its callee (recursively; the verifier
/// refuses recursion, and the depth is bounded anyway).
fn ops_through_calls<'a>(funcs: &'a [Kernel], k: &'a Kernel, out: &mut Vec<&'a Op>, depth: usize) {
    for op in kernel_ops(k) {
        out.push(op);
        if let (Op::Call(c), true) = (op, depth < 64) {
            let callee = k.callees.get(*c as usize).and_then(|c| funcs.iter().find(|f| f.name == c.name));
            if let Some(f) = callee {
                ops_through_calls(funcs, f, out, depth + 1);
            }
        }
    }
}

fn kernel_ops(k: &Kernel) -> impl Iterator<Item = &Op> + '_ {
    k.placed_insts().map(move |(_, i)| &k.inst(i).op)
}

fn derive<'a>(ops: impl Iterator<Item = &'a Op>) -> (Tolerance, Derivation) {
    let mut why = Derivation::default();
    let (mut ulps, mut abs_ops, mut abs_sum, mut unbounded) = (0u32, 0usize, 0.0f64, false);
    for op in ops.filter(|op| op.is_approx()) {
        let name = op.mnemonic();
        match why.ops.iter_mut().find(|(m, _)| *m == name) {
            Some((_, n)) => *n += 1,
            None => why.ops.push((name, 1)),
        }
        let ulp = max_ulp_error(op).unwrap_or(u32::MAX);
        match error_bound(op) {
            // Bounded in ulp (the f32 ops other than sin/cos).
            Some(_) if ulp != u32::MAX => ulps = ulps.saturating_add(ulp),
            // sin/cos: an absolute bound only.
            Some(b) if b.abs > 0.0 && b.abs_domain.is_some() => {
                abs_ops += 1;
                abs_sum += b.abs;
            }
            // No documented bound.
            _ => unbounded = true,
        }
    }
    let tol = if why.ops.is_empty() {
        Tolerance::Exact
    } else if unbounded || (abs_ops > 0 && ulps > 0) {
        Tolerance::Ulp(u32::MAX)
    } else if abs_ops > 0 {
        Tolerance::Abs(abs_sum)
    } else {
        Tolerance::Ulp(ulps)
    };
    (tol, why)
}

#[cfg(test)]
mod tests {
    #[test]
    fn approximate_ops_in_called_functions_count_per_call() {
        let m = kir_ir::parse(
            "func @e(%x: f32) -> f32 {\nentry:\n  %y = ex2.approx.f32 %x\n  ret %y\n}\n\
             kernel @k(%p: ptr<global, f32>) {\nentry:\n  %v = load %p[0]\n  %a = call @e(%v)\n  %b = call @e(%a)\n  store %p[0], %b\n  ret\n}\n",
        )
        .unwrap();
        let k = &m.kernels[0];
        // The kernel alone holds no approximate op; its two calls hold one each.
        assert_eq!(derived_tolerance(&[], k), Tolerance::Exact);
        let (t, why) = derived_tolerance_explained(&m.funcs, k);
        assert_eq!(t, Tolerance::Ulp(4));
        assert_eq!(why.to_string(), "approximate ops: 2x ex2.approx.f32");
    }

    use super::*;

    fn kernel(body: &str) -> Kernel {
        let src = format!("kernel @k(%x: f32, %y: f64, %o: ptr<global, f32>) {{\nentry:\n{body}  ret\n}}\n");
        let m = kir_ir::parse(&src).unwrap_or_else(|d| panic!("{d:?}\n{src}"));
        m.kernels[0].clone()
    }

    #[test]
    fn exact_without_approximate_ops() {
        let k = kernel("  %a = add.f32 %x, %x\n  %b = div.f32 %a, %x\n  store %o[0], %b\n");
        assert_eq!(derived_tolerance(&[], &k), Tolerance::Exact);
    }

    #[test]
    fn ulp_bounds_add_up() {
        let k = kernel(
            "  %a = ex2.approx.f32 %x\n  %b = rsqrt.approx.f32 %a\n  %c = ex2.approx.f32 %b\n  store %o[0], %c\n",
        );
        let (t, why) = derived_tolerance_explained(&[], &k);
        assert_eq!(t, Tolerance::Ulp(2 + 2 + 2));
        assert_eq!(why.to_string(), "approximate ops: 2x ex2.approx.f32, rsqrt.approx.f32");
    }

    #[test]
    fn sin_cos_are_absolute_and_mixing_gives_up() {
        let k =
            kernel("  %a = sin.approx.f32 %x\n  %b = cos.approx.f32 %x\n  %c = add.f32 %a, %b\n  store %o[0], %c\n");
        assert_eq!(derived_tolerance(&[], &k), Tolerance::Abs(2.0 * 3.757e-5));
        let k = kernel("  %a = sin.approx.f32 %x\n  %b = ex2.approx.f32 %a\n  store %o[0], %b\n");
        assert_eq!(derived_tolerance(&[], &k), Tolerance::Ulp(u32::MAX));
    }

    #[test]
    fn measured_bounds_per_op() {
        // The H100's measured maxima (hardware-truth approx/mufu.json), one instruction each.
        for (op, want) in [
            ("ex2.approx.f32", 2),
            ("ex2.approx.ftz.f32", 2),
            ("lg2.approx.f32", 2),
            ("rsqrt.approx.f32", 2),
            ("rcp.approx.f32", 1),
            ("rcp.approx.ftz.f32", 1),
            ("sqrt.approx.f32", 1),
            ("tanh.approx.f32", 134),
        ] {
            let k = kernel(&format!("  %a = {op} %x\n  store %o[0], %a\n"));
            assert_eq!(derived_tolerance(&[], &k), Tolerance::Ulp(want), "{op}");
        }
        for op in ["div.approx.f32", "div.full.f32", "div.approx.ftz.f32"] {
            let k = kernel(&format!("  %a = {op} %x, %x\n  store %o[0], %a\n"));
            assert_eq!(derived_tolerance(&[], &k), Tolerance::Ulp(2), "{op}");
        }
        let k = kernel("  %a = cos.approx.f32 %x\n  store %o[0], %a\n");
        assert_eq!(derived_tolerance(&[], &k), Tolerance::Abs(3.757e-5));
        assert!((3.757e-5 - 2f64.powf(-14.7)).abs() < 1e-8);
    }

    #[test]
    fn undocumented_bounds_compare_only_special_values() {
        let k = kernel("  %a = rcp.approx.ftz.f64 %y\n  %b = cvt.f32.f64 %a\n  store %o[0], %b\n");
        assert_eq!(derived_tolerance(&[], &k), Tolerance::Ulp(u32::MAX));
    }
}
