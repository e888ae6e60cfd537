//! The checks `kir check` runs on a parsed module, in order: the IR verifier and, when the module
//! verifies, the static analyses that must hold before code generation.
//!
//! Guarantees: every diagnostic of every check is returned (errors and warnings), in source order per
//! check. Analyses after the verifier only ever see well-formed IR: when the verifier reports an
//! error, its diagnostics are returned alone.

use kir_ir::diag::{has_errors, Diagnostic};
use kir_ir::verify::Verified;
use kir_ir::Module;

/// Runs every static check on a module, taking it: when no check reports an error, the module
/// comes back [`Verified`] (what the pipeline, the emitter and the interpreter take), together
/// with the warnings. The diagnostics are those of [`check_module`], in the same order.
pub fn check(m: Module) -> (Vec<Diagnostic>, Option<Verified>) {
    match kir_ir::verify::verify(m) {
        Ok(v) => check_verified(v),
        Err(d) => (d.into_vec(), None),
    }
}

/// [`check`] for a caller that keeps using the module whatever the checks say (the editor): the
/// diagnostics, and the module — [`Verified`] when the verifier accepts it (barrier errors or
/// not), else as it was.
pub fn check_keeping(m: Module) -> (Vec<Diagnostic>, Result<Verified, Module>) {
    match kir_ir::verify::try_verify(m) {
        Ok(v) => (after_verifier(&v), Ok(v)),
        Err((m, d)) => (d.into_vec(), Err(m)),
    }
}

/// The checks after the verifier (barrier verification), on a module verified already: what
/// [`check`] does once the verifier accepts.
pub fn check_verified(v: Verified) -> (Vec<Diagnostic>, Option<Verified>) {
    let diags = after_verifier(&v);
    let ok = !has_errors(&diags);
    (diags, ok.then_some(v))
}

/// The verifier's warnings, then barrier verification (following calls: a function's barriers
/// are checked at each call site), on the uniformity the verified module carries.
fn after_verifier(v: &Verified) -> Vec<Diagnostic> {
    let mut diags = v.warnings().to_vec();
    diags.extend(kir_passes::barrier::verify_verified_barriers(v));
    diags
}

/// Runs every static check on a module (borrowed: the diagnostics only, see [`check`]).
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
