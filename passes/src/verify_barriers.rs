//! The `verify-barriers` pass: barrier and collective verification
//! ([`kir_ir::verify::check_barriers`], what [`kir_ir::verify::check`] runs after the verifier) as
//! a step of a pipeline, for `kir opt --passes` (it is not in the default pipeline).
//!
//! Guarantees:
//! - A module pass (a function's barriers are checked at its call sites); it never changes the
//!   module, and reports exactly `check_barriers`' diagnostics, so an error stops the pipeline
//!   ([`crate::PassError::Rejected`]).
//! - Kernels without calls are analysed on the pass manager's cached CFGs; those with calls as
//!   inlined copies, which get their own.

use crate::pass::{ModulePass, PassContext};
use kir_ir::analysis::uniformity::Uniformity;
use kir_ir::{Kernel, Module, Op};

/// The `verify-barriers` pass: reports [`kir_ir::verify::check_barriers`]'s errors and never
/// changes the module.
pub struct VerifyBarriers;

impl ModulePass for VerifyBarriers {
    fn name(&self) -> &'static str {
        "verify-barriers"
    }
    fn run(&self, m: &mut Module, cx: &mut PassContext) -> bool {
        // Kernels without calls are analysed on the pass manager's cached CFGs (those with calls
        // are analysed as inlined copies, which get their own).
        let own: Vec<Option<Uniformity>> = m
            .kernels
            .iter()
            .enumerate()
            .map(|(i, k)| k.callees.is_empty().then(|| Uniformity::compute_with(k, Some(cx.body_cfg(i, k)))))
            .collect();
        let diags = kir_ir::verify::check_barriers(m, |i| own.get(i).and_then(Option::as_ref));
        cx.stats.add("barriers checked", m.kernels.iter().map(count_barriers).sum::<usize>() as u64);
        cx.stats.add("divergent barriers or collectives", diags.len() as u64);
        cx.diagnostics.extend(diags);
        false
    }
}

fn count_barriers(k: &Kernel) -> usize {
    k.placed_insts().filter(|(_, i)| k.insts.get(i.index()).is_some_and(|d| d.op == Op::Barrier)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS_EXIT: &str = "kernel @k(%x: ptr<global, f32>, %n: u32) {
entry:
  %i = global_id.x
  %inb = lt.u32 %i, %n
  br %inb, body, out
out:
  ret
body:
  barrier
  ret
}";

    #[test]
    fn the_pass_reports_and_leaves_the_kernel_unchanged() {
        let m = kir_ir::parse(BOUNDS_EXIT).unwrap();
        let mut copy = m.clone();
        let pass = crate::registry::lookup("verify-barriers").unwrap();
        let crate::pass::PassKind::Module(p) = (pass.create)(&Default::default()).unwrap() else {
            panic!("verify-barriers is a module pass (it follows calls)")
        };
        let mut cx = PassContext::default();
        assert!(!p.run(&mut copy, &mut cx));
        assert_eq!(copy, m);
        assert_eq!(cx.diagnostics.len(), 1);
        assert!(cx.diagnostics[0].is_error());
        assert_eq!(cx.stats.get("barriers checked"), 1);
    }
}
