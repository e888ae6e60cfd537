//! The checks `kir check` runs on a parsed module, in order: the IR verifier and, when the module
//! verifies, the static analyses that must hold before code generation.
//!
//! Guarantees: every diagnostic of every check is returned (errors and warnings), in source order per
//! check. Analyses after the verifier only ever see well-formed IR: when the verifier reports an
//! error, its diagnostics are returned alone.

use kir_ir::diag::{has_errors, Diagnostic};
use kir_ir::Module;

/// Runs every static check on a module.
pub fn check_module(m: &Module) -> Vec<Diagnostic> {
    let diags = kir_ir::verify::verify_module(m);
    if has_errors(&diags) {
        // Later analyses assume the invariants the verifier establishes.
        return diags;
    }
    // Analyses that need well-formed IR (e.g. barrier verification) append their diagnostics here.
    let mut diags = diags;
    // Per kernel, following calls: a function's barriers are checked at each call site.
    diags.extend(kir_passes::barrier::verify_module_barriers(m));
    diags
}
