//! The pass interface: the two kinds of pass, what a pass is given, what it reports, and how its
//! options are read.
//!
//! Guarantees:
//! - A pass is one of two kinds, stated once, by the [`PassKind`] its registry factory returns: a
//!   kernel pass ([`Pass`]) runs on one body at a time, every kernel and every device function
//!   (a function is a [`Kernel`] with `func` set, so a kernel pass must not assume that `ret`
//!   ends the thread or that parameters are launch arguments); a module pass ([`ModulePass`]:
//!   `inline`, launch fusion, barrier verification) runs once on the whole module. The pass
//!   manager dispatches on the kind.
//! - A pass says whether it changed its input; a pass that returns `false` has left it
//!   structurally unchanged (the pass manager's tests check this for kernel passes).
//! - A module pass may add kernels (and remove kernels it added) and rewrite graphs, but never
//!   changes or removes a kernel or function that was in the module when it started (the pass
//!   manager counts changed kernels on that basis, and checks it under `verify_each`) — unless it
//!   declares [`ModulePass::changes_bodies`] (`inline`), which allows rewriting them, not removing
//!   them.
//! - A pass that must reject its input (an analysis such as barrier verification) reports error
//!   diagnostics in [`PassContext::diagnostics`]; the pass manager then stops the pipeline and
//!   (as its header says) keeps the IR from before the pass. A module pass that can never report
//!   errors says so ([`ModulePass::may_reject`]), which spares the manager a copy of the module.
//!   Warnings are passed on to the caller.
//! - [`PassContext::cfg`] is the analysis cache: the CFG of the body a kernel pass runs on, the
//!   verifier's own when the pipeline started from a verified module, kept across passes that
//!   declare [`Pass::preserves_cfg`] and dropped after any other pass that changed the body.
//! - Statistics are named counters, kept in the order they were first bumped, so reports are
//!   deterministic.

use kir_ir::analysis::cfg::Cfg;
use kir_ir::{Diagnostic, Kernel, Module};

/// A kernel pass: a transformation or analysis over one kernel.
pub trait Pass {
    /// The registered name (`fold`, `dce`, ...).
    fn name(&self) -> &'static str;
    /// Runs on `k`; returns whether `k` changed.
    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool;
    /// Whether the pass never changes the control-flow graph (blocks and edges; it may rewrite
    /// instructions, terminator operands and block parameters): the analysis cache then keeps
    /// the body's CFG across it ([`PassContext::cfg`]). `fold`, `dce` and `fma-contract` do.
    fn preserves_cfg(&self) -> bool {
        false
    }
}

/// A module pass: a transformation over the whole module (inlining; launch fusion, which rewrites
/// graphs and adds kernels; barrier verification, which follows calls). Unless it says so with
/// [`ModulePass::changes_bodies`], it may add kernels and rewrite graphs but must not change or
/// remove a kernel or function that was in the module when it started (see the module header).
pub trait ModulePass {
    /// The registered name (`fuse`).
    fn name(&self) -> &'static str;
    /// Runs once on `m`; returns whether `m` (a kernel, a function or a graph) changed.
    fn run(&self, m: &mut Module, cx: &mut PassContext) -> bool;
    /// Whether the pass may rewrite the kernels and functions already in the module (`inline`
    /// does). It must still remove none of them.
    fn changes_bodies(&self) -> bool {
        false
    }
    /// Whether the pass can do anything on `m`; when it cannot, the pass manager skips it (no copy
    /// of the module, no run) and records an unchanged step. `inline` needs a call.
    fn needed(&self, _m: &Module) -> bool {
        true
    }
    /// Whether the pass may report error diagnostics (reject the module). When it may, the pass
    /// manager copies the module before the pass so that it can restore it; a pass that only ever
    /// reports warnings returns `false` and is run without the copy (unless `verify_each` needs
    /// one). Errors from a pass that returned `false` still stop the pipeline, without the restore.
    fn may_reject(&self) -> bool {
        true
    }
}

/// A pass of either kind, as the registry makes it and a pipeline step holds it.
pub enum PassKind {
    /// Run on each kernel, in module order ([`Pass::run`]).
    Kernel(Box<dyn Pass>),
    /// Run once on the module ([`ModulePass::run`]).
    Module(Box<dyn ModulePass>),
}

impl PassKind {
    /// The pass's registered name.
    pub fn name(&self) -> &'static str {
        match self {
            PassKind::Kernel(p) => p.name(),
            PassKind::Module(p) => p.name(),
        }
    }
    /// Whether this is a module pass.
    pub fn is_module(&self) -> bool {
        matches!(self, PassKind::Module(_))
    }
}

/// Named counters a pass reports (`instructions folded: 12`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassStats {
    counters: Vec<(&'static str, u64)>,
}

impl PassStats {
    /// Adds `n` to counter `name` (creating it, even when `n` is 0, so reports list it).
    pub fn add(&mut self, name: &'static str, n: u64) {
        match self.counters.iter_mut().find(|(k, _)| *k == name) {
            Some((_, v)) => *v += n,
            None => self.counters.push((name, n)),
        }
    }
    /// The value of a counter (0 when never bumped).
    pub fn get(&self, name: &str) -> u64 {
        self.counters.iter().find(|(k, _)| *k == name).map(|(_, v)| *v).unwrap_or(0)
    }
    /// Every counter in first-bumped order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.counters.iter().copied()
    }
    /// Adds every counter of `other` to this one.
    pub fn merge(&mut self, other: &PassStats) {
        for (k, v) in other.iter() {
            self.add(k, v);
        }
    }
}

/// What a pass may report besides changing the kernel, and the analyses cached for the body it
/// runs on.
#[derive(Debug, Default)]
pub struct PassContext {
    pub stats: PassStats,
    /// Errors stop the pipeline; warnings are kept in the report.
    pub diagnostics: Vec<Diagnostic>,
    /// The body's CFG, when the analysis cache holds it (see [`PassContext::cfg`]).
    pub(crate) cached_cfg: CachedCfg,
    /// For a module pass: every body's CFG the analysis cache holds (see [`PassContext::body_cfg`]).
    pub(crate) cached_body_cfgs: CachedCfgs,
}

impl PassContext {
    /// The CFG of `k`, the body this context was made for: the cached one when the pass manager
    /// holds it (the verifier's, kept across passes that [`Pass::preserves_cfg`]), else built
    /// now and kept for the passes after this one. Ask before changing blocks or edges; a pass
    /// that changes them is not given a stale one afterwards (the manager invalidates it).
    pub fn cfg(&mut self, k: &Kernel) -> &Cfg {
        let slot = &mut self.cached_cfg.0;
        if slot.as_ref().is_some_and(|c| c.len() != k.blocks.len()) {
            *slot = None;
        }
        slot.get_or_insert_with(|| Cfg::new(k))
    }

    /// For a module pass: the CFG of body `body` ([`Module::bodies`](kir_ir::Module::bodies)
    /// order; `k` is that body), the cached one when the pass manager holds it, else built now
    /// (and kept for the passes after this one if the pass changes nothing).
    pub fn body_cfg(&mut self, body: usize, k: &Kernel) -> &Cfg {
        let slots = &mut self.cached_body_cfgs.0;
        if slots.len() <= body {
            slots.resize_with(body + 1, || None);
        }
        let slot = &mut slots[body];
        if slot.as_ref().is_some_and(|c| c.len() != k.blocks.len()) {
            *slot = None;
        }
        slot.get_or_insert_with(|| Cfg::new(k))
    }
}

/// The cached CFGs of a module's bodies (its own type so that [`PassContext`] stays `Debug`).
#[derive(Default)]
pub(crate) struct CachedCfgs(pub(crate) Vec<Option<Cfg>>);

impl std::fmt::Debug for CachedCfgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CachedCfgs({} of {})", self.0.iter().filter(|c| c.is_some()).count(), self.0.len())
    }
}

/// A cached CFG (its own type so that [`PassContext`] stays `Debug` and `Default`).
#[derive(Default)]
pub(crate) struct CachedCfg(pub(crate) Option<Cfg>);

impl std::fmt::Debug for CachedCfg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "CachedCfg(Some(..))" } else { "CachedCfg(None)" })
    }
}

/// The options given to a pass in braces: `fold{approx}`, `name{key=value other}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassOptions {
    /// `(key, value)`; `value` is `None` for a bare flag.
    pub items: Vec<(String, Option<String>)>,
}

impl PassOptions {
    /// Fails on any option not in `known`, naming the ones accepted.
    pub fn expect_only(&self, pass: &str, known: &[&str]) -> Result<(), String> {
        for (k, _) in &self.items {
            if !known.contains(&k.as_str()) {
                let accepted = if known.is_empty() {
                    "it takes no options".to_string()
                } else {
                    format!("options: {}", known.join(", "))
                };
                return Err(format!("unknown option `{k}` for pass `{pass}` ({accepted})"));
            }
        }
        Ok(())
    }

    /// A whole-number option `key=N` (at most `max`): absent → `default`.
    pub fn number(&self, pass: &str, key: &str, default: u64, max: u64) -> Result<u64, String> {
        match self.items.iter().rev().find(|(k, _)| k == key) {
            None => Ok(default),
            Some((_, None)) => Err(format!("option `{key}` of pass `{pass}` needs a value: `{key}=N`")),
            Some((_, Some(v))) => match v.parse::<u64>() {
                Ok(n) if n <= max => Ok(n),
                _ => Err(format!("option `{key}` of pass `{pass}` takes a whole number from 0 to {max}, not `{v}`")),
            },
        }
    }

    /// A boolean option: absent → `default`; `key` or `key=true` → true; `key=false` → false.
    pub fn flag(&self, pass: &str, key: &str, default: bool) -> Result<bool, String> {
        match self.items.iter().rev().find(|(k, _)| k == key) {
            None => Ok(default),
            Some((_, None)) => Ok(true),
            Some((_, Some(v))) => match v.as_str() {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                other => Err(format!("option `{key}` of pass `{pass}` takes true or false, not `{other}`")),
            },
        }
    }
}
