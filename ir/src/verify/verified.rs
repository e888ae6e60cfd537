//! Validity as a type: [`Verified`] is a module the verifier accepted, and [`Diagnostics`] is why
//! one was refused. ([`super::Checked`], a `Verified` module that also passed barrier
//! verification, is built on it.)
//!
//! Guarantees:
//! - The only ways to get a [`Verified`] are [`verify`] (which runs [`super::verify_module`]:
//!   every kernel and function, calls, recursion and launch graphs), `check_keeping` (the same),
//!   [`Verified::edit`], whose closure's result is verified again before it is handed back, and a
//!   [`super::Checked`] module (from [`super::check`] or [`BodyEdits::finish`], which verifies
//!   again every body its driver marked changed and every whole-module check, and the whole
//!   module when a body was added, removed, renamed or had its signature changed). So every
//!   holder of a `Verified` may rely on every invariant the verifier lists, and interpretation
//!   takes this type (emission and the pass pipeline take `Checked`) instead of re-checking (or
//!   trusting) a plain `Module`.
//! - [`BodyEdits`] trusts its driver on one point only: a body it did not mark changed is the body
//!   that was verified (the pass manager marks every body a pass reports changed). What was
//!   computed for such a body (its CFG, loops, uniformity, warnings) is kept; everything else is
//!   recomputed, and the result is what [`super::check`] of the edited module gives (tests
//!   compare the two).
//! - It carries the analyses computed once: the [`Cfg`] of every body (with dominators; the
//!   verifier builds it for its dominance check and keeps it), post-dominators (inside the `Cfg`),
//!   natural loops ([`Verified::loops`]) and uniformity ([`Verified::uniformity`], on those
//!   loops) on first use, and the warnings of the verification.
//! - [`Diagnostics`] implements `Display` and `std::error::Error`; with the source attached
//!   ([`Diagnostics::with_sources`]) it renders exactly as `kir check` prints, carets and all.

use crate::analysis::cfg::Cfg;
use crate::analysis::loops::LoopForest;
use crate::analysis::uniformity::Uniformity;
use crate::diag::{has_errors, render_map, Diagnostic, SourceMap};
use crate::ir::{Kernel, Module};
use std::fmt;
use std::sync::OnceLock;

/// A module the verifier accepted, with the analyses the verification computed.
pub struct Verified {
    module: Module,
    /// The warnings per body ([`Module::bodies`] order), kept for [`Verified::into_edits`].
    body_warnings: Vec<Vec<Diagnostic>>,
    /// Every warning, in [`super::verify_module`]'s order: the bodies', then the whole-module
    /// checks'.
    warnings: Vec<Diagnostic>,
    /// One per body, in [`Module::bodies`] order (kernels, then functions).
    cfgs: Vec<Cfg>,
    /// Computed on first use, once, per body.
    loops: Vec<OnceLock<LoopForest>>,
    uniformity: Vec<OnceLock<Uniformity>>,
}

fn lazy<T>(n: usize) -> Vec<OnceLock<T>> {
    (0..n).map(|_| OnceLock::new()).collect()
}

/// Verifies `m`; on success the module is handed back as [`Verified`], otherwise every error and
/// warning found.
///
/// ```
/// use kir_ir::verify::verify;
/// let ok = kir_ir::parse("kernel @k() {\nentry:\n  ret\n}\n").unwrap();
/// let v = verify(ok).expect("a valid module");
/// assert_eq!(v.verified_kernel("k").unwrap().cfg().len(), 1);
///
/// let src = "kernel @k(%n: u32) {\nentry:\n  br %n, a, a\na:\n  ret\n}\n";
/// let err = verify(kir_ir::parse(src).unwrap()).unwrap_err();
/// let shown = err.with_sources(kir_ir::diag::SourceMap::single("k.kir", src)).to_string();
/// assert!(shown.contains("k.kir:3:3"), "{shown}");
/// ```
pub fn verify(m: Module) -> Result<Verified, Diagnostics> {
    try_verify(m).map_err(|(_, d)| d)
}

/// [`verify`], handing the module back with the diagnostics when it is refused (for a caller that
/// goes on using an invalid module, such as an editor showing types while errors remain:
/// [`super::check_keeping`]).
pub(crate) fn try_verify(m: Module) -> Result<Verified, (Module, Diagnostics)> {
    let parts = super::verify_module_parts(&m);
    if parts.bodies.iter().any(|d| has_errors(d)) || has_errors(&parts.whole) {
        return Err((m, Diagnostics::new(parts.flatten())));
    }
    // A body without errors always gets its CFG built by the dominance check.
    let cfgs: Option<Vec<Cfg>> = parts.cfgs.into_iter().collect();
    match cfgs {
        Some(cfgs) => Ok(Verified::assemble(m, cfgs, parts.bodies, parts.whole)),
        None => Err((
            m,
            Diagnostics::new(vec![Diagnostic::error(
                "internal error: a body passed verification without its control-flow graph",
            )]),
        )),
    }
}

impl Verified {
    /// A verified module from its checked parts (no errors among them).
    fn assemble(
        module: Module,
        cfgs: Vec<Cfg>,
        body_warnings: Vec<Vec<Diagnostic>>,
        whole_warnings: Vec<Diagnostic>,
    ) -> Verified {
        let n = cfgs.len();
        let warnings = body_warnings.iter().flatten().cloned().chain(whole_warnings).collect();
        Verified { module, body_warnings, warnings, cfgs, loops: lazy(n), uniformity: lazy(n) }
    }

    /// The verified module.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The module, giving up the proof of validity (to edit it; verify it again afterwards).
    pub fn into_module(self) -> Module {
        self.module
    }

    /// The module, to be edited in place body by body, and the [`BodyEdits`] that verify it again
    /// where it was changed ([`BodyEdits::finish`]); `barrier_diags` are the checks after the
    /// verifier as they stand ([`super::Checked::into_edits`] is the public way in).
    pub(crate) fn into_edits(self, barrier_diags: Vec<Diagnostic>) -> (Module, BodyEdits) {
        let signatures = self.module.bodies().map(Signature::of).collect();
        let n = self.cfgs.len();
        let edits = BodyEdits {
            signatures,
            body_warnings: self.body_warnings,
            cfgs: self.cfgs.into_iter().map(Some).collect(),
            loops: self.loops,
            uniformity: self.uniformity,
            changed: vec![false; n],
            barrier_diags,
        };
        (self.module, edits)
    }

    /// The warnings of the verification (valid but suspicious IR, e.g. unreachable blocks).
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// The kernel named `name`, with the module it belongs to.
    pub fn verified_kernel(&self, name: &str) -> Option<VerifiedKernel<'_>> {
        let index = self.module.kernels.iter().position(|k| k.name == name)?;
        Some(VerifiedKernel { module: self, index })
    }

    /// Every kernel, in module order.
    pub fn verified_kernels(&self) -> impl Iterator<Item = VerifiedKernel<'_>> + '_ {
        (0..self.module.kernels.len()).map(move |index| VerifiedKernel { module: self, index })
    }

    /// The CFG of body `i` ([`Module::bodies`] order: kernels, then functions), built once by the
    /// verifier.
    pub fn cfg(&self, body: usize) -> &Cfg {
        &self.cfgs[body]
    }

    /// The CFGs of every body, in [`Module::bodies`] order.
    pub fn cfgs(&self) -> &[Cfg] {
        &self.cfgs
    }

    /// The natural loops of body `i` (and whether its CFG is irreducible), computed on first use.
    pub fn loops(&self, body: usize) -> &LoopForest {
        self.loops[body].get_or_init(|| LoopForest::new(&self.cfgs[body]))
    }

    /// The uniformity (divergence) analysis of body `i`, computed on first use on the verifier's
    /// CFG and [`Verified::loops`]. A device function is analysed on its own (its parameters count as varying).
    pub fn uniformity(&self, body: usize) -> &Uniformity {
        self.uniformity[body].get_or_init(|| {
            let k = self.module.bodies().nth(body).expect("a body index of this module");
            Uniformity::compute_with_loops(k, &self.cfgs[body], self.loops(body))
        })
    }

    /// Edits the module and verifies the result: the way to change a verified module and keep
    /// the type's promise. On failure the diagnostics are returned (the edited module is dropped).
    pub fn edit(self, f: impl FnOnce(&mut Module)) -> Result<Verified, Diagnostics> {
        let mut m = self.module;
        f(&mut m);
        verify(m)
    }
}

/// What a body shows the other bodies and the graphs: its kind, name, parameter types and result
/// type. While every body keeps its signature, a change inside one body cannot make another one
/// invalid (calls are checked against these; whole-module checks are redone anyway).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Signature {
    name: String,
    ret: Option<Option<crate::types::Type>>,
    params: Vec<Option<crate::types::Type>>,
}

impl Signature {
    fn of(k: &Kernel) -> Signature {
        Signature {
            name: k.name.clone(),
            ret: k.func.map(|f| f.ret),
            params: k.params.iter().map(|p| k.values.get(p.index()).map(|v| v.ty)).collect(),
        }
    }
}

/// A [`Verified`] module taken apart ([`super::Checked::into_edits`]) so that a driver can edit its
/// bodies in place, keep their CFGs current where it can ([`BodyEdits::cfg_slots`]: an analysis
/// cache), mark the bodies it changed, and get a `Verified` module back by verifying only what
/// may have become invalid ([`BodyEdits::finish`]).
pub struct BodyEdits {
    signatures: Vec<Signature>,
    body_warnings: Vec<Vec<Diagnostic>>,
    cfgs: Vec<Option<Cfg>>,
    /// The lazy analyses of each body as verified: kept for the bodies not marked changed.
    loops: Vec<OnceLock<LoopForest>>,
    uniformity: Vec<OnceLock<Uniformity>>,
    pub(crate) changed: Vec<bool>,
    /// The diagnostics of the checks after the verifier (barriers, collective masks) on the
    /// module taken apart: still true when nothing changed.
    pub(crate) barrier_diags: Vec<Diagnostic>,
}

impl fmt::Debug for BodyEdits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BodyEdits")
            .field("signatures", &self.signatures)
            .field("changed", &self.changed)
            .finish_non_exhaustive()
    }
}

impl BodyEdits {
    /// Per body ([`Module::bodies`] order), its CFG as it was verified, for the driver to use
    /// and keep: a slot must hold the CFG of its body as the body is now, or `None`.
    pub fn cfg_slots(&mut self) -> &mut [Option<Cfg>] {
        &mut self.cfgs
    }

    /// Marks body `i` changed: [`BodyEdits::finish`] verifies it again. Out-of-range indices (a
    /// body the driver added) are allowed; adding bodies makes `finish` verify everything anyway.
    pub fn mark_changed(&mut self, body: usize) {
        if let Some(c) = self.changed.get_mut(body) {
            *c = true;
        }
    }

    /// Verifies `m`, the edited module, again where it may have become invalid: every body marked
    /// changed (with its CFG reused when its slot holds one) and the whole-module checks
    /// (recursion, graphs); the verifier's half of [`BodyEdits::finish`] (in `checked.rs`, which
    /// adds barrier verification). Bodies not marked changed keep their CFG, loops, uniformity
    /// and warnings.
    pub(crate) fn reverify(self, m: Module) -> Reverified {
        let same_bodies = m.bodies().count() == self.signatures.len()
            && m.bodies().zip(&self.signatures).all(|(k, s)| Signature::of(k) == *s);
        if !same_bodies {
            return Reverified::Whole(m);
        }
        let mut cfgs = Vec::with_capacity(self.cfgs.len());
        let mut body_warnings = Vec::with_capacity(self.cfgs.len());
        let mut loops = Vec::with_capacity(self.cfgs.len());
        let mut uniformity = Vec::with_capacity(self.cfgs.len());
        let mut errors = Vec::new();
        let bodies = m.bodies().zip(self.cfgs).zip(self.body_warnings).zip(self.changed);
        let analyses = self.loops.into_iter().zip(self.uniformity);
        for ((((k, cached), old_warnings), changed), (old_loops, old_uniformity)) in bodies.zip(analyses) {
            if !changed {
                // The CFG slot, if the driver emptied it, is rebuilt: exact, a CFG is a pure
                // function of its body; the lazy analyses were computed on the same CFG.
                cfgs.push(cached.unwrap_or_else(|| Cfg::new(k)));
                body_warnings.push(old_warnings);
                loops.push(old_loops);
                uniformity.push(old_uniformity);
                continue;
            }
            // The verifier uses the cached CFG when it fits the body, and builds its own otherwise.
            let (diags, built) = super::verify_body_impl(k, Some(&m), cached.as_ref());
            let cfg = built.or(cached);
            if has_errors(&diags) {
                errors.extend(diags.iter().filter(|d| d.is_error()).cloned());
            }
            cfgs.push(cfg.unwrap_or_else(|| Cfg::new(k)));
            body_warnings.push(diags);
            loops.push(OnceLock::new());
            uniformity.push(OnceLock::new());
        }
        let whole = super::verify_whole_module(&m);
        if !errors.is_empty() || has_errors(&whole) {
            return Reverified::Refused(m, errors);
        }
        let mut v = Verified::assemble(m, cfgs, body_warnings, whole);
        v.loops = loops;
        v.uniformity = uniformity;
        Reverified::Verified(v)
    }
}

/// What [`BodyEdits::reverify`] found.
pub(crate) enum Reverified {
    /// The bodies are not the ones taken apart: the module is to be checked whole.
    Whole(Module),
    /// Refused, with the errors found (a full check reports them in its order).
    Refused(Module, Vec<Diagnostic>),
    Verified(Verified),
}

impl std::ops::Deref for Verified {
    type Target = Module;
    fn deref(&self) -> &Module {
        &self.module
    }
}

impl std::borrow::Borrow<Module> for Verified {
    fn borrow(&self) -> &Module {
        &self.module
    }
}

impl fmt::Debug for Verified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verified").field("module", &self.module).field("warnings", &self.warnings).finish()
    }
}

impl Clone for Verified {
    fn clone(&self) -> Verified {
        // A CFG is a pure function of its body: rebuilding it is exact.
        let cfgs: Vec<Cfg> = self.module.bodies().map(Cfg::new).collect();
        let n = cfgs.len();
        Verified {
            module: self.module.clone(),
            body_warnings: self.body_warnings.clone(),
            warnings: self.warnings.clone(),
            cfgs,
            loops: lazy(n),
            uniformity: lazy(n),
        }
    }
}

/// One kernel of a [`Verified`] module: what the interpreter and the emitter run.
#[derive(Clone, Copy)]
pub struct VerifiedKernel<'a> {
    module: &'a Verified,
    index: usize,
}

impl<'a> VerifiedKernel<'a> {
    /// The kernel.
    pub fn kernel(&self) -> &'a Kernel {
        &self.module.module.kernels[self.index]
    }

    /// The module's device functions (what the kernel's calls resolve against).
    pub fn funcs(&self) -> &'a [Kernel] {
        &self.module.module.funcs
    }

    /// The verified module the kernel belongs to.
    pub fn module(&self) -> &'a Verified {
        self.module
    }

    /// The kernel's CFG.
    pub fn cfg(&self) -> &'a Cfg {
        &self.module.cfgs[self.index]
    }
}

impl std::ops::Deref for VerifiedKernel<'_> {
    type Target = Kernel;
    fn deref(&self) -> &Kernel {
        self.kernel()
    }
}

/// Why a module was refused: every diagnostic the verifier found (errors and warnings), with the
/// source text when it is known, so that `Display` renders exactly what `kir check` prints.
#[derive(Clone, Debug)]
pub struct Diagnostics {
    list: Vec<Diagnostic>,
    sources: Option<SourceMap>,
}

impl Diagnostics {
    pub fn new(list: Vec<Diagnostic>) -> Diagnostics {
        Diagnostics { list, sources: None }
    }

    /// Attaches the files the diagnostics point into (what [`crate::text::load`] returns).
    pub fn with_sources(mut self, sources: SourceMap) -> Diagnostics {
        self.sources = Some(sources);
        self
    }

    /// Every diagnostic, in the verifier's order.
    pub fn list(&self) -> &[Diagnostic] {
        &self.list
    }

    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.list
    }

    pub fn sources(&self) -> Option<&SourceMap> {
        self.sources.as_ref()
    }

    /// The number of errors (warnings excluded).
    pub fn error_count(&self) -> usize {
        self.list.iter().filter(|d| d.is_error()).count()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.sources {
            Some(map) => f.write_str(render_map(&self.list, map, false).trim_end()),
            None => {
                for (i, d) in self.list.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    let what = if d.is_error() { "error" } else { "warning" };
                    write!(f, "{what}: {}", d.message)?;
                    for n in &d.notes {
                        write!(f, "\n  = note: {n}")?;
                    }
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Diagnostics {}

impl From<Diagnostics> for Vec<Diagnostic> {
    fn from(d: Diagnostics) -> Vec<Diagnostic> {
        d.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    const OK: &str =
        "kernel @k(%p: ptr<global, u32>) {\nentry:\n  %t = tid.x\n  store %p[%t], %t\n  ret\nlost:\n  ret\n}\n";

    #[test]
    fn a_valid_module_is_verified_with_its_cfgs_and_warnings() {
        let v = verify(parse(OK).unwrap()).unwrap();
        assert_eq!(v.verified_kernels().count(), 1);
        assert_eq!(v.cfgs().len(), 1);
        let k = v.verified_kernel("k").unwrap();
        assert_eq!(k.name, "k");
        assert_eq!(k.cfg().len(), 2);
        assert!(!k.cfg().is_reachable(crate::BlockId(1)));
        assert_eq!(v.warnings().len(), 1, "the unreachable block is a warning: {:?}", v.warnings());
        assert!(v.verified_kernel("nope").is_none());
        // The lazy analyses: asked twice, computed once (the same object comes back).
        assert!(std::ptr::eq(v.uniformity(0), v.uniformity(0)));
        assert!(!v.loops(0).is_irreducible());
        let t = v.kernel("k").unwrap().values.iter().position(|x| x.name == "t").unwrap();
        assert_eq!(v.uniformity(0).value_level(crate::ValueId(t as u32)), crate::analysis::uniformity::Level::Varying);
    }

    #[test]
    fn an_invalid_module_is_refused_with_displayable_diagnostics() {
        let src = "kernel @k(%y: f32) {\nentry:\n  %x = add.u32 %y, 1\n  ret\n}\n";
        let e = verify(parse(src).unwrap()).unwrap_err();
        assert_eq!(e.error_count(), 1);
        let bare = e.to_string();
        assert!(bare.contains("`%y`"), "{bare}");
        let shown = e.with_sources(SourceMap::single("k.kir", src)).to_string();
        assert!(shown.contains("k.kir:3:"), "{shown}");
        let boxed: Box<dyn std::error::Error> = Box::new(verify(parse(src).unwrap()).unwrap_err());
        assert!(boxed.to_string().contains("%y"));
        // `try_verify` hands the refused module back, untouched.
        let m = parse(src).unwrap();
        let (back, d) = try_verify(m.clone()).unwrap_err();
        assert!(back == m && d.error_count() == 1);
    }

    #[test]
    fn editing_verifies_again() {
        let v = verify(parse(OK).unwrap()).unwrap();
        let again = v.clone().edit(|m| m.kernels[0].name = "renamed".into()).unwrap();
        assert!(again.verified_kernel("renamed").is_some());
        let broken = v.edit(|m| m.kernels[0].blocks.clear());
        assert!(broken.is_err());
    }

    /// A kernel calling a function, and a second kernel; the function's result is used.
    const CALLS: &str = "func @sq(%v: u32) -> u32 {\nentry:\n  %s = mul.u32 %v, %v\n  ret %s\n}\n\
        kernel @a(%p: ptr<global, u32>) {\nentry:\n  %t = tid.x\n  %q = call @sq(%t)\n  store %p[%t], %q\n  ret\n}\n\
        kernel @b(%p: ptr<global, u32>) {\nentry:\n  %t = tid.x\n  store %p[%t], %t\n  ret\nlost:\n  ret\n}\n";

    /// `finish` and a fresh `check` of the same module agree: accepted or not, the same
    /// diagnostics, the same CFG shapes.
    fn agree(m: Module, changed: &[usize]) -> Result<super::super::Checked, Diagnostics> {
        let (_, mut edits) = super::super::check(parse(CALLS).unwrap()).unwrap().into_edits();
        for &i in changed {
            edits.mark_changed(i);
        }
        let fresh = super::super::check(m.clone());
        let finished = edits.finish(m);
        match (&finished, &fresh) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.warnings(), b.warnings());
                assert_eq!(a.module(), b.module());
                let shape = |v: &Verified| v.cfgs().iter().map(|c| (c.len(), c.rpo().to_vec())).collect::<Vec<_>>();
                assert_eq!(shape(a), shape(b));
            }
            (Err(a), Err(b)) => assert_eq!(a.list(), b.list()),
            _ => panic!("finish and check disagree: {finished:?} vs {fresh:?}"),
        }
        finished
    }

    #[test]
    fn finishing_body_edits_verifies_what_changed_as_verify_would() {
        let base = || parse(CALLS).unwrap();
        // Nothing changed: everything kept, warnings (the unreachable block of @b) included.
        let v = agree(base(), &[]).unwrap();
        assert_eq!(v.warnings().len(), 1);
        // A changed body that stays valid.
        let mut m = base();
        m.kernels[1].blocks.pop();
        assert!(agree(m, &[1]).unwrap().warnings().is_empty());
        // A changed body that is now invalid: refused with verify's diagnostics.
        let mut m = base();
        m.kernels[0].blocks[0].insts.remove(0); // `%t = tid.x`: its uses lose their definition
        assert!(agree(m, &[0]).is_err());
        // A function whose result type changed, the caller not marked: the caller's call no
        // longer types, and the whole module is verified again.
        let mut m = base();
        m.funcs[0].func.as_mut().unwrap().ret = Some(crate::types::Type::Scalar(crate::types::ScalarType::F32));
        let e = agree(m, &[2]).unwrap_err();
        assert!(e.list().iter().any(|d| d.message.contains("@sq")), "{e}");
        // A renamed kernel: verified as a whole.
        let mut m = base();
        m.kernels[1].name = "a".into();
        let e = agree(m, &[]).unwrap_err();
        assert!(e.to_string().contains("duplicate kernel name"), "{e}");
        // A call that makes recursion, in a changed function (same signature): the whole-module
        // checks find it.
        let recursive = CALLS.replace("%s = mul.u32 %v, %v", "%r = call @sq(%v)\n  %s = mul.u32 %r, %v");
        let e = agree(parse(&recursive).unwrap(), &[2]).unwrap_err();
        assert!(e.to_string().contains("calls itself"), "{e}");
        // A changed body that still verifies but now has a divergent barrier: the barrier checks
        // run again and refuse it, as `check` does.
        let mut m = base();
        let divergent = "kernel @b(%p: ptr<global, u32>) {\nentry:\n  %t = tid.x\n  %c = lt.u32 %t, 5\n  br %c, x, y\nx:\n  barrier\n  jmp y\ny:\n  store %p[%t], %t\n  ret\nlost:\n  ret\n}\n";
        m.kernels[1] = parse(divergent).unwrap().kernels.remove(0);
        let e = agree(m, &[1]).unwrap_err();
        assert!(e.to_string().contains("barrier"), "{e}");
    }
}
