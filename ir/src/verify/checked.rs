//! One way to get a checked module: [`check`] runs every static check kir has — the verifier
//! ([`super::verify`]: well-formedness), then barrier and collective verification
//! ([`super::barrier`], [`super::collective_masks`]) — and returns a [`Checked`] module or why it
//! was refused.
//!
//! Guarantees:
//! - The only ways to get a [`Checked`] are [`check`], [`Checked::edit`] (which checks the edited
//!   module again) and [`BodyEdits::finish`] (which checks again what may have changed; the pass
//!   manager's way). So a holder of a `Checked` may rely on every invariant the verifier lists and
//!   on barrier soundness: no launch makes the threads of a block wait at different barriers, and
//!   no full-mask collective runs with lanes missing. The PTX emitter and the pass pipeline take
//!   this type.
//! - A `Checked` is a [`Verified`] (it derefs to one) and carries its analyses: the CFG of every
//!   body, loops and uniformity computed once, on first use; barrier verification ran on that
//!   uniformity (a kernel with calls is analysed as an inlined copy, which gets its own).
//! - Diagnostics: [`check`] refuses with every diagnostic `kir check` prints, in its order (the
//!   verifier's alone when it reports an error; else its warnings, then the barrier checks'); an
//!   accepted module keeps its warnings ([`Checked::warnings`]). [`check_keeping`] gives the same
//!   diagnostics and keeps the module whatever they say (for an editor).
//! - Barrier verification never sees IR the verifier refused.

use super::verified::{try_verify, BodyEdits, Diagnostics, Reverified, Verified};
use crate::diag::{has_errors, Diagnostic};
use crate::ir::Module;
use std::fmt;

/// A module that passed every static check: the verifier, then barrier and collective
/// verification. Derefs to the [`Verified`] module, with its analyses.
pub struct Checked {
    verified: Verified,
    /// The diagnostics of the checks after the verifier (no errors among them).
    barrier_diags: Vec<Diagnostic>,
    /// Every warning: the verifier's, then the later checks'.
    warnings: Vec<Diagnostic>,
}

/// Checks `m`: the verifier, then (when it accepts) barrier and collective verification. On
/// success the module comes back [`Checked`], with its warnings; otherwise every diagnostic, as
/// `kir check` prints them.
///
/// ```
/// use kir_ir::verify::check;
/// let ok = kir_ir::parse("kernel @k() {\nentry:\n  barrier\n  ret\n}\n").unwrap();
/// let c = check(ok).expect("a valid module");
/// assert!(c.warnings().is_empty());
///
/// let src = "kernel @k(%n: u32) {\nentry:\n  %t = tid.x\n  %c = lt.u32 %t, %n\n  br %c, a, b\na:\n  barrier\n  jmp b\nb:\n  ret\n}\n";
/// let err = check(kir_ir::parse(src).unwrap()).unwrap_err();
/// assert_eq!(err.error_count(), 1);
/// assert!(err.to_string().contains("barrier"), "{err}");
/// ```
pub fn check(m: Module) -> Result<Checked, Diagnostics> {
    after_verifier(super::verify(m)?)
}

/// [`check`] for a caller that keeps using the module whatever the checks say (the editor, a test
/// that runs IR the barrier checks refuse): every diagnostic [`check`] gives, and the module —
/// [`Verified`] when the verifier accepts it (barrier errors or not), else as it was.
pub fn check_keeping(m: Module) -> (Vec<Diagnostic>, Result<Verified, Module>) {
    match try_verify(m) {
        Ok(v) => {
            let mut diags = v.warnings().to_vec();
            diags.extend(barrier_diags(&v));
            (diags, Ok(v))
        }
        Err((m, d)) => (d.into_vec(), Err(m)),
    }
}

/// Barrier and collective verification of a verified module, on the uniformity it carries.
fn barrier_diags(v: &Verified) -> Vec<Diagnostic> {
    super::barrier::check_barriers(v.module(), |i| Some(v.uniformity(i)))
}

/// The checks after the verifier, on a module the verifier accepted: [`check`] from there.
fn after_verifier(v: Verified) -> Result<Checked, Diagnostics> {
    let diags = barrier_diags(&v);
    if has_errors(&diags) {
        let mut all = v.warnings().to_vec();
        all.extend(diags);
        return Err(Diagnostics::new(all));
    }
    Ok(Checked::from_parts(v, diags))
}

impl Checked {
    /// A checked module from a verified one and the diagnostics its later checks gave (no errors).
    fn from_parts(verified: Verified, barrier_diags: Vec<Diagnostic>) -> Checked {
        let warnings = verified.warnings().iter().chain(&barrier_diags).cloned().collect();
        Checked { verified, barrier_diags, warnings }
    }

    /// The verified module (what the interpreter runs: [`Verified::verified_kernel`]).
    pub fn verified(&self) -> &Verified {
        &self.verified
    }

    /// The verified module, giving up the proof of the later checks.
    pub fn into_verified(self) -> Verified {
        self.verified
    }

    /// The module, giving up both proofs (to edit it; check it again afterwards).
    pub fn into_module(self) -> Module {
        self.verified.into_module()
    }

    /// Every warning of the checks: the verifier's, then the later checks'.
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// The module, to be edited in place body by body, and the [`BodyEdits`] that check it again
    /// where it was changed ([`BodyEdits::finish`]): what the pass manager does.
    pub fn into_edits(self) -> (Module, BodyEdits) {
        self.verified.into_edits(self.barrier_diags)
    }

    /// Edits the module and checks the result: the way to change a checked module and keep the
    /// type's promise. On failure the diagnostics are returned (the edited module is dropped).
    pub fn edit(self, f: impl FnOnce(&mut Module)) -> Result<Checked, Diagnostics> {
        let mut m = self.into_module();
        f(&mut m);
        check(m)
    }
}

impl BodyEdits {
    /// Checks `m`, the edited module, again where it may have become invalid: the verifier on
    /// every body marked changed (with its CFG reused when its slot holds one) and the
    /// whole-module checks (recursion, graphs), then the checks after the verifier (barriers,
    /// collective masks; on the kept analyses of the bodies not changed), unless nothing changed.
    /// When the bodies are not the ones taken apart (one added, removed, renamed, or with other
    /// parameter or result types), the whole module is checked. Bodies not marked changed keep
    /// their CFG, loops, uniformity and warnings. The result, accepted or refused, is what
    /// [`check`] of `m` gives.
    pub fn finish(mut self, m: Module) -> Result<Checked, Diagnostics> {
        let any_changed = self.changed.iter().any(|&c| c);
        let barrier_diags = std::mem::take(&mut self.barrier_diags);
        match self.reverify(m) {
            Reverified::Whole(m) => check(m),
            // Report as `check` would: every diagnostic of the module, in its order.
            Reverified::Refused(m, errors) => Err(check(m).err().unwrap_or_else(|| Diagnostics::new(errors))),
            Reverified::Verified(v) if any_changed => after_verifier(v),
            Reverified::Verified(v) => Ok(Checked::from_parts(v, barrier_diags)),
        }
    }
}

impl std::ops::Deref for Checked {
    type Target = Verified;
    fn deref(&self) -> &Verified {
        &self.verified
    }
}

impl std::borrow::Borrow<Module> for Checked {
    fn borrow(&self) -> &Module {
        self.verified.module()
    }
}

impl Clone for Checked {
    fn clone(&self) -> Checked {
        Checked {
            verified: self.verified.clone(),
            barrier_diags: self.barrier_diags.clone(),
            warnings: self.warnings.clone(),
        }
    }
}

impl fmt::Debug for Checked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checked").field("verified", &self.verified).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    const DIVERGENT: &str = "kernel @k(%n: u32) {\nentry:\n  %t = tid.x\n  %c = lt.u32 %t, %n\n  br %c, a, b\na:\n  barrier\n  jmp b\nb:\n  ret\nlost:\n  ret\n}\n";

    #[test]
    fn a_divergent_barrier_is_refused_after_the_verifier_warnings() {
        let e = check(parse(DIVERGENT).unwrap()).unwrap_err();
        let list = e.list();
        assert_eq!(list.len(), 2, "{e}");
        assert!(!list[0].is_error() && list[0].message.contains("unreachable"), "{e}");
        assert!(list[1].is_error() && list[1].message.contains("barrier"), "{e}");
        // `check_keeping`: the same diagnostics, and the verified module.
        let (d, kept) = check_keeping(parse(DIVERGENT).unwrap());
        assert_eq!(&d, list);
        assert!(kept.is_ok());
    }

    #[test]
    fn an_ill_formed_module_gets_the_verifier_errors_alone() {
        let src = "kernel @k(%y: f32) {\nentry:\n  %x = add.u32 %y, 1\n  barrier\n  ret\n}\n";
        let e = check(parse(src).unwrap()).unwrap_err();
        assert_eq!(e.list(), super::super::verify(parse(src).unwrap()).unwrap_err().list());
        let (d, kept) = check_keeping(parse(src).unwrap());
        assert_eq!(&d, e.list());
        assert!(kept.is_err());
    }

    #[test]
    fn a_checked_module_keeps_warnings_and_analyses() {
        let src = DIVERGENT.replace("lt.u32 %t, %n", "lt.u32 %n, 4");
        let c = check(parse(&src).unwrap()).unwrap();
        assert_eq!(c.warnings().len(), 1);
        assert!(std::ptr::eq(c.uniformity(0), c.verified().uniformity(0)));
        let again = c.clone().edit(|m| m.kernels[0].name = "renamed".into()).unwrap();
        assert!(again.verified_kernel("renamed").is_some());
        let refused = c.edit(|m| m.kernels[0] = parse(DIVERGENT).unwrap().kernels.remove(0));
        assert!(refused.is_err());
    }
}
