//! The pass manager: runs a pipeline over a module, with verification, IR dumps, statistics and
//! timing.
//!
//! Guarantees:
//! - [`run_pipeline`] takes a [`Checked`] module and hands back a [`Checked`] one: the result is
//!   checked again where passes changed it ([`kir_ir::verify::BodyEdits::finish`]: the verifier
//!   on the changed bodies and the whole-module checks, then barrier and collective verification),
//!   so no pass can hand the emitter a module that did not pass every check. [`run_pipeline_in_place`], the
//!   engine under it for a plain `Module`, verifies its input first (unless
//!   [`RunConfig::verify_input`] is off), with the module when it has functions (calls typed
//!   against their callees, recursion rejected); either way passes only ever see verified IR.
//! - Steps run in order, dispatched on the pass's kind ([`PassKind`]): a kernel pass runs on every
//!   body, the kernels then the device functions (in module order), a module pass once on the
//!   module, before the next step starts. At the end every kernel and function is compacted
//!   ([`kir_ir::Kernel::compact`]), so what is returned is canonical; dumps print the block
//!   layout, which is the same text either way. A module pass that changed the module has every
//!   body compacted right after it; it counts as changing each kernel it added, each existing body
//!   that this compaction renumbered and each body it rewrote (at least one).
//! - With [`RunConfig::verify_each`], the verifier runs after every pass on every body (calls
//!   checked against the module's functions). A pass that leaves an invalid body, or that reports
//!   "unchanged" while it changed the body, stops the pipeline with [`PassError::Broken`] naming
//!   the pass and body with the verifier's errors; the body is restored to its IR from before that
//!   pass. After a module pass the whole module (kernels, functions and graphs) is verified, and a
//!   module pass that changed or removed a kernel or function that was in the module before it
//!   (which [`crate::ModulePass`] forbids, except rewriting for a pass that `changes_bodies`) is
//!   `Broken` too; the whole module is restored. A pass that reports error diagnostics stops the
//!   pipeline the same way with [`PassError::Rejected`].
//! - What is copied to make those restores possible, and when: for a kernel pass, each kernel
//!   just before the pass runs on it, only with `verify_each`. For a module pass, the whole module
//!   just before the pass, only with `verify_each` or when the pass may reject
//!   ([`crate::ModulePass::may_reject`]; `fuse` may not); without `verify_each` nothing is copied
//!   for `fuse`. Hence a kernel pass's IR is restored after error diagnostics only with
//!   `verify_each`, a module pass's always when it may reject (and with `verify_each`).
//! - Dumps go to the given writer, each headed `*** IR Dump After fold (kernel @name) ***` (or
//!   `Before`; `(function @name)` for a device function), followed by the body's text, which is
//!   valid `.kir` on its own unless it calls functions (a dump after `inline` has no call). A
//!   module pass dumps every kernel and function after it runs (with `print_after_change`, those
//!   it added or changed), and before it when asked, like a kernel pass; a module pass that is
//!   not needed ([`crate::ModulePass::needed`]) is skipped, and its "after" dumps show the
//!   unchanged bodies. `dump_dir` gets one file per step, `00-input.kir`, `01-inline.kir`, ...,
//!   each the whole module (functions included) as valid `.kir`.
//! - Timings measure the passes only (not verification, copies, compaction or dumps).

use crate::pass::{ModulePass, Pass, PassContext, PassKind, PassStats};
use crate::pipeline::Pipeline;
use kir_ir::analysis::cfg::Cfg;
use kir_ir::verify::Checked;
use kir_ir::{diag, print_kernel, print_module, Diagnostic, Kernel, Module};
use std::collections::HashSet;
use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What to check and print while running a pipeline.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Verify the module before the first pass (default true).
    pub verify_input: bool,
    /// Verify every kernel after every pass.
    pub verify_each: bool,
    /// Print a kernel before every step whose pass has one of these names.
    pub print_before: Vec<String>,
    /// Print a kernel after every step whose pass has one of these names.
    pub print_after: Vec<String>,
    pub print_before_all: bool,
    pub print_after_all: bool,
    /// Print a kernel after a step only when the pass changed it.
    pub print_after_change: bool,
    /// Write `00-input.kir`, `01-<pass>.kir`, ... here.
    pub dump_dir: Option<PathBuf>,
}

impl Default for RunConfig {
    fn default() -> RunConfig {
        RunConfig {
            verify_input: true,
            verify_each: false,
            print_before: vec![],
            print_after: vec![],
            print_before_all: false,
            print_after_all: false,
            print_after_change: false,
            dump_dir: None,
        }
    }
}

impl RunConfig {
    fn wants_before(&self, name: &str) -> bool {
        self.print_before_all || self.print_before.iter().any(|p| p == name)
    }
    fn wants_after(&self, name: &str, changed: bool) -> bool {
        if self.print_after_all || self.print_after.iter().any(|p| p == name) {
            return !self.print_after_change || changed;
        }
        self.print_after_change && changed
    }
}

/// What one step did, summed over the kernels of the module.
#[derive(Clone, Debug)]
pub struct StepReport {
    /// The step as written in the pipeline (`fold{approx}`).
    pub spec: String,
    /// The pass's registered name.
    pub name: &'static str,
    pub stats: PassStats,
    /// How many kernels the pass changed.
    pub changed_kernels: usize,
    /// Time spent in the pass.
    pub time: Duration,
}

/// What a whole pipeline did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub steps: Vec<StepReport>,
    /// Warnings reported by passes.
    pub warnings: Vec<Diagnostic>,
}

impl Report {
    /// Whether any step changed any kernel.
    pub fn changed(&self) -> bool {
        self.steps.iter().any(|s| s.changed_kernels > 0)
    }

    /// The `--stats` text: per step, every counter of the pass.
    pub fn stats_text(&self) -> String {
        let mut out = String::from("*** Pass statistics ***\n");
        for (i, s) in self.steps.iter().enumerate() {
            out.push_str(&format!(
                "{:>2}. {} (changed {} kernel{})\n",
                i + 1,
                s.spec,
                s.changed_kernels,
                if s.changed_kernels == 1 { "" } else { "s" }
            ));
            for (k, v) in s.stats.iter() {
                out.push_str(&format!("      {v:>8}  {k}\n"));
            }
        }
        out
    }

    /// The `--time-passes` text: wall time per step and in total.
    pub fn timing_text(&self) -> String {
        let total: Duration = self.steps.iter().map(|s| s.time).sum();
        let secs = total.as_secs_f64();
        let mut out = String::from("*** Pass execution timing ***\n");
        out.push_str(&format!("  Total: {secs:.6} s\n"));
        for s in &self.steps {
            let t = s.time.as_secs_f64();
            let pct = if secs > 0.0 { 100.0 * t / secs } else { 0.0 };
            out.push_str(&format!("  {t:>10.6} s ({pct:>5.1}%)  {}\n", s.spec));
        }
        out
    }
}

/// Why a pipeline stopped.
#[derive(Debug)]
pub enum PassError {
    /// The input does not verify; no pass ran on it.
    /// The input does not verify: `kernel` names the first body with an error, `what` says
    /// whether it is a "kernel" or a "function".
    InvalidInput { kernel: String, what: &'static str, diagnostics: Vec<Diagnostic> },
    /// A pass left the kernel invalid (or changed it while reporting no change); the kernel holds
    /// its IR from before the pass. `ir_after` is the broken kernel's text.
    Broken { pass: String, kernel: String, diagnostics: Vec<Diagnostic>, ir_after: String },
    /// A pass rejected the kernel with error diagnostics (an analysis that found a problem).
    Rejected { pass: String, kernel: String, diagnostics: Vec<Diagnostic> },
    /// Writing a dump failed.
    Io { what: String, error: std::io::Error },
    /// The pipeline's result does not verify (a pass broke an invariant that only the
    /// module-wide verification sees; run with `verify_each` to find which).
    InvalidOutput { diagnostics: Vec<Diagnostic> },
    /// The input verifies body by body but fails the rest of [`kir_ir::verify::check`] (barrier or
    /// collective verification, the module-wide checks); no pass ran on it ([`check_input`]).
    Unchecked { diagnostics: Vec<Diagnostic> },
}

impl PassError {
    /// The diagnostics that explain the error (located in the source the module was parsed from).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            PassError::InvalidInput { diagnostics, .. }
            | PassError::Broken { diagnostics, .. }
            | PassError::Rejected { diagnostics, .. }
            | PassError::InvalidOutput { diagnostics }
            | PassError::Unchecked { diagnostics } => diagnostics,
            PassError::Io { .. } => &[],
        }
    }
}

impl fmt::Display for PassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PassError::InvalidInput { kernel, what, .. } => {
                write!(f, "{what} @{kernel} does not verify; no pass was run")
            }
            PassError::Broken { pass, kernel, .. } => {
                write!(f, "pass `{pass}` broke kernel @{kernel}; keeping the IR from before the pass")
            }
            PassError::Rejected { pass, kernel, .. } => write!(f, "pass `{pass}` rejected kernel @{kernel}"),
            PassError::Io { what, error } => write!(f, "{what}: {error}"),
            PassError::InvalidOutput { .. } => write!(f, "the optimized module does not verify"),
            PassError::Unchecked { .. } => write!(f, "the module fails `kir check`; no pass was run"),
        }
    }
}

impl std::error::Error for PassError {}

fn dump(out: &mut dyn Write, when: &str, pass: &str, k: &Kernel) -> Result<(), PassError> {
    write!(out, "*** IR Dump {when} {pass} ({} @{}) ***\n{}\n", kind(k), k.name, print_kernel(k))
        .map_err(|error| PassError::Io { what: "writing an IR dump".into(), error })
}

fn write_dump_file(dir: &std::path::Path, index: usize, name: &str, m: &Module) -> Result<(), PassError> {
    let path = dir.join(format!("{index:02}-{name}.kir"));
    std::fs::write(&path, print_module(m))
        .map_err(|error| PassError::Io { what: format!("writing {}", path.display()), error })
}

/// The verifier's errors for a kernel or function (warnings are dropped); with the module, calls
/// are checked against their callees.
fn verify_errors(k: &Kernel, m: Option<&Module>) -> Vec<Diagnostic> {
    errors_only(kir_ir::verify::verify_body(k, m, None).0)
}

fn errors_only(d: Vec<Diagnostic>) -> Vec<Diagnostic> {
    if diag::has_errors(&d) {
        d.into_iter().filter(Diagnostic::is_error).collect()
    } else {
        vec![]
    }
}

/// [`verify_errors`] with the body's cached CFG when there is one; otherwise the CFG the
/// verifier builds is handed back for the cache.
fn verify_errors_cached(k: &Kernel, m: Option<&Module>, cached: Option<&Cfg>) -> (Vec<Diagnostic>, Option<Cfg>) {
    let (d, fresh) = kir_ir::verify::verify_body(k, m, cached);
    (errors_only(d), fresh)
}

/// The input's verifier errors, with the name of the (first) body they are about.
fn input_errors(m: &Module) -> Option<(String, &'static str, Vec<Diagnostic>)> {
    if m.funcs.is_empty() {
        return m.kernels.iter().find_map(|k| {
            let errs = verify_errors(k, None);
            (!errs.is_empty()).then(|| (k.name.clone(), "kernel", errs))
        });
    }
    // With functions: calls are typed against their callees, and recursion is an error.
    let errs: Vec<Diagnostic> = kir_ir::verify::verify_module(m).into_iter().filter(Diagnostic::is_error).collect();
    if errs.is_empty() {
        return None;
    }
    let body = m.bodies().find(|k| !verify_errors(k, Some(m)).is_empty()).or_else(|| m.bodies().next());
    let name = body.map(|k| k.name.clone()).unwrap_or_default();
    let what = if body.is_some_and(|k| k.is_func()) { "function" } else { "kernel" };
    Some((name, what, errs))
}

/// `kernel` or `function`, for dump headers.
fn kind(k: &Kernel) -> &'static str {
    if k.is_func() {
        "function"
    } else {
        "kernel"
    }
}

/// The `idx`-th body of `m`: kernels first, then functions (the order of [`Module::bodies`]).
fn body_mut(m: &mut Module, idx: usize) -> &mut Kernel {
    let nk = m.kernels.len();
    if idx < nk {
        &mut m.kernels[idx]
    } else {
        &mut m.funcs[idx - nk]
    }
}

/// Runs `p` over every kernel and function of the checked module `m`, writing the requested dumps
/// to `dumps`, and hands back the result checked again (with its CFGs): the typed entry point.
/// The input needs no verification ([`RunConfig::verify_input`] is ignored: it is in the type).
pub fn run_pipeline(
    m: Checked,
    p: &Pipeline,
    cfg: &RunConfig,
    dumps: &mut dyn Write,
) -> Result<(Checked, Report), PassError> {
    let (mut m, mut edits) = m.into_edits();
    let cfg = RunConfig { verify_input: false, ..cfg.clone() };
    // The analysis cache starts with the CFGs the verifier built.
    let mut cache = AnalysisCache::new(edits.cfg_slots().iter_mut().map(Option::take).collect());
    let report = run_with_cache(&mut m, p, &cfg, dumps, &mut cache)?;
    // Checked again only where a pass may have broken it: the bodies passes changed (all of them
    // after a module pass changed the module), with the cached CFGs; `finish` redoes the
    // whole-module checks and, after any change, barrier verification, and everything when a
    // body was added, removed or re-signed.
    for (i, slot) in edits.cfg_slots().iter_mut().enumerate() {
        *slot = cache.cfgs.get_mut(i).and_then(Option::take);
    }
    for (i, changed) in cache.changed.iter().enumerate() {
        if *changed {
            edits.mark_changed(i);
        }
    }
    let m = edits.finish(m).map_err(|d| PassError::InvalidOutput { diagnostics: d.into_vec() })?;
    Ok((m, report))
}

/// The input of [`run_pipeline`]: `m` checked ([`kir_ir::verify::check`]), with the pass manager's
/// report of a refusal: a body the verifier rejects is [`PassError::InvalidInput`] naming the
/// first such body (as [`run_pipeline_in_place`] reports it); any other error of the checks
/// (barriers, collectives, the module-wide checks) is [`PassError::Unchecked`].
pub fn check_input(m: Module) -> Result<Checked, PassError> {
    if let Some((kernel, what, diagnostics)) = input_errors(&m) {
        return Err(PassError::InvalidInput { kernel, what, diagnostics });
    }
    kir_ir::verify::check(m).map_err(|d| PassError::Unchecked { diagnostics: errors_only(d.into_vec()) })
}

/// Runs `p` over every kernel and function of `m` in place, writing the requested dumps to
/// `dumps`: the engine under [`run_pipeline`], for callers that hold a plain `Module` (the input
/// is verified first unless [`RunConfig::verify_input`] is off; the output is not verified again
/// unless [`RunConfig::verify_each`]). On an error, `m` holds the IR described by the error.
pub fn run_pipeline_in_place(
    m: &mut Module,
    p: &Pipeline,
    cfg: &RunConfig,
    dumps: &mut dyn Write,
) -> Result<Report, PassError> {
    let mut cache = AnalysisCache::new(vec![]);
    run_with_cache(m, p, cfg, dumps, &mut cache)
}

/// The analyses kept between steps, per body ([`Module::bodies`] order): the CFG, while no pass
/// that changes control flow has changed the body; and which bodies passes changed (what
/// [`run_pipeline`] verifies again).
struct AnalysisCache {
    cfgs: Vec<Option<Cfg>>,
    /// Per body: some pass reported a change (every body, after a module pass changed the module).
    changed: Vec<bool>,
}

impl AnalysisCache {
    fn new(cfgs: Vec<Option<Cfg>>) -> AnalysisCache {
        let changed = vec![false; cfgs.len()];
        AnalysisCache { cfgs, changed }
    }

    /// Forgets everything (after a module pass changed the module: bodies may be added).
    fn clear(&mut self, bodies: usize) {
        self.cfgs.clear();
        self.cfgs.resize_with(bodies, || None);
        self.changed.clear();
        self.changed.resize(bodies, true);
    }
}

fn run_with_cache(
    m: &mut Module,
    p: &Pipeline,
    cfg: &RunConfig,
    dumps: &mut dyn Write,
    cache: &mut AnalysisCache,
) -> Result<Report, PassError> {
    let bodies = m.kernels.len() + m.funcs.len();
    if cache.cfgs.len() != bodies {
        cache.clear(bodies);
    }
    if cfg.verify_input {
        if let Some((kernel, what, diagnostics)) = input_errors(m) {
            return Err(PassError::InvalidInput { kernel, what, diagnostics });
        }
    }
    if let Some(dir) = &cfg.dump_dir {
        std::fs::create_dir_all(dir)
            .map_err(|error| PassError::Io { what: format!("creating {}", dir.display()), error })?;
        write_dump_file(dir, 0, "input", m)?;
    }
    let mut report = Report::default();
    for (si, step) in p.steps.iter().enumerate() {
        let name = step.name();
        let mut sr = StepReport {
            spec: step.spec.clone(),
            name,
            stats: PassStats::default(),
            changed_kernels: 0,
            time: Duration::ZERO,
        };
        match &step.pass {
            PassKind::Kernel(pass) => run_kernel_step(&**pass, &step.spec, m, cfg, dumps, &mut sr, &mut report, cache)?,
            PassKind::Module(pass) => {
                let changed_before = sr.changed_kernels;
                run_module_step(&**pass, &step.spec, m, cfg, dumps, &mut sr, &mut report, cache)?;
                if sr.changed_kernels != changed_before {
                    cache.clear(m.kernels.len() + m.funcs.len());
                }
            }
        }
        if let Some(dir) = &cfg.dump_dir {
            write_dump_file(dir, si + 1, name, m)?;
        }
        report.steps.push(sr);
    }
    // Passes leave removed entities in the arenas; compact once at the end so the result is
    // canonical (what printing and re-parsing it gives).
    m.bodies_mut().for_each(Kernel::compact);
    Ok(report)
}

/// Runs kernel pass `pass` (written `spec` in the pipeline) on every kernel and then every
/// function of `m`, in order, with the cached CFG of each body in its context.
#[allow(clippy::too_many_arguments)]
fn run_kernel_step(
    pass: &dyn Pass,
    spec: &str,
    m: &mut Module,
    cfg: &RunConfig,
    dumps: &mut dyn Write,
    sr: &mut StepReport,
    report: &mut Report,
    cache: &mut AnalysisCache,
) -> Result<(), PassError> {
    let name = pass.name();
    // Calls are checked against their callees only when there are functions.
    let with_module = !m.funcs.is_empty();
    for idx in 0..m.kernels.len() + m.funcs.len() {
        let k = body_mut(m, idx);
        if cfg.wants_before(name) {
            dump(dumps, "Before", name, k)?;
        }
        let before = cfg.verify_each.then(|| k.clone());
        let mut cx = PassContext::default();
        cx.cached_cfg.0 = cache.cfgs[idx].take();
        let start = Instant::now();
        let changed = pass.run(k, &mut cx);
        sr.time += start.elapsed();
        if changed {
            sr.changed_kernels += 1;
            cache.changed[idx] = true;
            if !pass.preserves_cfg() {
                cx.cached_cfg.0 = None;
            }
        }
        cache.cfgs[idx] = cx.cached_cfg.0.take();
        sr.stats.merge(&cx.stats);
        let (errors, warnings): (Vec<Diagnostic>, Vec<Diagnostic>) =
            cx.diagnostics.into_iter().partition(Diagnostic::is_error);
        report.warnings.extend(warnings);
        if !errors.is_empty() {
            if let Some(b) = before {
                *k = b;
            }
            return Err(PassError::Rejected { pass: spec.to_string(), kernel: k.name.clone(), diagnostics: errors });
        }
        if let Some(b) = before {
            let k = m.bodies().nth(idx).unwrap_or(&b);
            let (mut errs, fresh) = verify_errors_cached(k, with_module.then_some(&*m), cache.cfgs[idx].as_ref());
            if fresh.is_some() {
                cache.cfgs[idx] = fresh;
            }
            if !changed && *k != b {
                errs.push(Diagnostic::error(format!(
                    "pass `{spec}` reported no change but changed {} @{}",
                    kind(k),
                    k.name
                )));
            }
            if !errs.is_empty() {
                let k = body_mut(m, idx);
                let ir_after = print_kernel(k);
                let kernel = k.name.clone();
                *k = b;
                return Err(PassError::Broken { pass: spec.to_string(), kernel, diagnostics: errs, ir_after });
            }
        }
        if cfg.wants_after(name, changed) {
            dump(dumps, "After", name, body_mut(m, idx))?;
        }
    }
    Ok(())
}

/// Runs module pass `pass` (written `spec` in the pipeline) once on `m`. The module is copied
/// first only when the copy may be needed: with `verify_each` (the module is verified after the
/// pass and restored if that fails) or when the pass may reject (error diagnostics restore it).
#[allow(clippy::too_many_arguments)]
fn run_module_step(
    pass: &dyn ModulePass,
    spec: &str,
    m: &mut Module,
    cfg: &RunConfig,
    dumps: &mut dyn Write,
    sr: &mut StepReport,
    report: &mut Report,
    cache: &mut AnalysisCache,
) -> Result<(), PassError> {
    let name = pass.name();
    if cfg.wants_before(name) {
        for k in m.bodies() {
            dump(dumps, "Before", name, k)?;
        }
    }
    if !pass.needed(m) {
        // Nothing to do: an unchanged step, without a copy or a run.
        if cfg.wants_after(name, false) {
            for k in m.bodies() {
                dump(dumps, "After", name, k)?;
            }
        }
        return Ok(());
    }
    let before = (cfg.verify_each || pass.may_reject()).then(|| m.clone());
    // The bodies the pass is given. Unless it `changes_bodies`, it must leave them as they are
    // (checked below with `verify_each`), so after it they can still tell which kernels it added
    // and which ones the compaction below renumbers: the bodies it changed, as counted without a
    // copy. A pass that changes bodies may reject, so the copy exists to compare with.
    let existing: HashSet<(bool, String)> = m.bodies().map(|k| (k.is_func(), k.name.clone())).collect();
    let mut cx = PassContext::default();
    cx.cached_body_cfgs.0 = std::mem::take(&mut cache.cfgs);
    let start = Instant::now();
    let changed = pass.run(m, &mut cx);
    sr.time += start.elapsed();
    // The CFGs stay cached when the module is unchanged (else the caller clears the cache).
    cache.cfgs = std::mem::take(&mut cx.cached_body_cfgs.0);
    cache.cfgs.resize_with(m.kernels.len() + m.funcs.len(), || None);
    let mut changed_bodies: HashSet<(bool, String)> = HashSet::new();
    if changed {
        let old_body = |k: &Kernel| {
            let b = before.as_ref()?;
            if k.is_func() {
                b.func(&k.name)
            } else {
                b.kernel(&k.name)
            }
        };
        for k in m.bodies_mut() {
            let key = (k.is_func(), k.name.clone());
            let rewritten = pass.changes_bodies() && old_body(k).map_or(before.is_none(), |o| o != k);
            if !(existing.contains(&key) && k.is_compact()) || rewritten {
                changed_bodies.insert(key);
            }
            k.compact();
        }
        sr.changed_kernels += changed_bodies.len().max(1);
    }
    sr.stats.merge(&cx.stats);
    let (errors, warnings): (Vec<Diagnostic>, Vec<Diagnostic>) =
        cx.diagnostics.into_iter().partition(Diagnostic::is_error);
    report.warnings.extend(warnings);
    let module_name = |m: &Module| m.bodies().next().map(|k| k.name.clone()).unwrap_or_default();
    if !errors.is_empty() {
        let kernel = module_name(m);
        if let Some(b) = before {
            *m = b;
        }
        return Err(PassError::Rejected { pass: spec.to_string(), kernel, diagnostics: errors });
    }
    if let (true, Some(b)) = (cfg.verify_each, &before) {
        // Kernels, functions and graphs.
        let mut errs: Vec<Diagnostic> =
            kir_ir::verify::verify_module(m).into_iter().filter(Diagnostic::is_error).collect();
        for old in b.bodies() {
            let mut expected = old.clone();
            expected.compact();
            let now = if old.is_func() { m.func(&old.name) } else { m.kernel(&old.name) };
            let what = match now {
                None => "removed",
                Some(_) if pass.changes_bodies() => continue,
                Some(k) if changed && *k != expected => "changed",
                Some(k) if !changed && k != old => "changed",
                Some(_) => continue,
            };
            let rule = if pass.changes_bodies() {
                "a module pass may rewrite kernels and functions, never remove them"
            } else {
                "a module pass may only add kernels and rewrite graphs"
            };
            errs.push(Diagnostic::error(format!(
                "module pass `{spec}` {what} {} @{}, which was in the module before it ({rule})",
                kind(old),
                old.name
            )));
        }
        if !errs.is_empty() {
            let (kernel, ir_after) = (module_name(m), print_module(m));
            if let Some(b) = before {
                *m = b;
            }
            return Err(PassError::Broken { pass: spec.to_string(), kernel, diagnostics: errs, ir_after });
        }
    }
    if cfg.wants_after(name, true) || cfg.wants_after(name, false) {
        for k in m.bodies() {
            let key = (k.is_func(), k.name.clone());
            if cfg.wants_after(name, changed_bodies.contains(&key)) {
                dump(dumps, "After", name, k)?;
            }
        }
    }
    Ok(())
}

/// Runs a pipeline on one kernel with the verifier after every pass and no dumps: what tests use.
pub fn run_on_kernel(k: &mut Kernel, p: &Pipeline) -> Result<Report, PassError> {
    let mut m = Module { kernels: vec![std::mem::replace(k, Kernel::new(""))], ..Module::default() };
    let cfg = RunConfig { verify_each: true, ..RunConfig::default() };
    let r = run_pipeline_in_place(&mut m, p, &cfg, &mut std::io::sink());
    *k = m.kernels.pop().unwrap_or_else(|| Kernel::new(""));
    r
}

#[cfg(test)]
mod cache_tests {
    //! The analysis cache: a pass sees the verifier's CFG, keeps it across passes that preserve
    //! control flow, and never sees a stale one after a pass that changed it.
    use super::*;
    use crate::pipeline::Step;
    use kir_ir::Terminator;
    use std::cell::RefCell;
    use std::rc::Rc;

    const SRC: &str = "kernel @k(%p: ptr<global, u32>, %c: pred) {\nentry:\n  %t = tid.x\n  \
                       br %c, a, b\na:\n  store %p[%t], 1\n  ret\nb:\n  store %p[%t], 2\n  ret\n}\n";

    /// Records, per run, whether a CFG was cached on entry, and checks that the CFG it is given
    /// matches the body's terminators.
    struct Probe(Rc<RefCell<Vec<bool>>>);
    impl Pass for Probe {
        fn name(&self) -> &'static str {
            "probe"
        }
        fn preserves_cfg(&self) -> bool {
            true
        }
        fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool {
            self.0.borrow_mut().push(cx.cached_cfg.0.is_some());
            let cfg = cx.cfg(k);
            for b in k.block_ids() {
                let want: Vec<_> = k.block(b).term.successors().map(|c| c.block).collect();
                assert_eq!(cfg.succs(b), &want[..], "stale CFG at {b:?}");
            }
            false
        }
    }

    /// Swaps the targets of the entry's branch: the same blocks, other edges.
    struct Flip;
    impl Pass for Flip {
        fn name(&self) -> &'static str {
            "flip"
        }
        fn run(&self, k: &mut Kernel, _cx: &mut PassContext) -> bool {
            if let Terminator::Br { then_, else_, .. } = &mut k.blocks[0].term {
                std::mem::swap(then_, else_);
                return true;
            }
            false
        }
    }

    fn pipeline(steps: Vec<(&str, Box<dyn Pass>)>) -> Pipeline {
        let mut p = crate::pipeline::parse_pipeline("dce").unwrap();
        p.steps.clear();
        for (spec, pass) in steps {
            p.steps.push(Step { spec: spec.into(), pass: PassKind::Kernel(pass) });
        }
        p
    }

    fn run(steps: Vec<(&str, Box<dyn Pass>)>, verify_each: bool) {
        let v = kir_ir::verify::check(kir_ir::parse(SRC).unwrap()).unwrap();
        let cfg = RunConfig { verify_each, ..RunConfig::default() };
        run_pipeline(v, &pipeline(steps), &cfg, &mut std::io::sink()).unwrap();
    }

    #[test]
    fn the_verifiers_cfg_is_kept_across_passes_that_preserve_control_flow() {
        let seen = Rc::new(RefCell::new(vec![]));
        let probe = || Box::new(Probe(seen.clone())) as Box<dyn Pass>;
        let dce = crate::registry::registry().into_iter().find(|p| p.name == "dce").unwrap();
        let dce = match (dce.create)(&Default::default()).unwrap() {
            PassKind::Kernel(p) => p,
            PassKind::Module(_) => unreachable!(),
        };
        run(vec![("probe", probe()), ("dce", dce), ("probe", probe())], false);
        assert_eq!(*seen.borrow(), vec![true, true]);
    }

    /// Removes the entry block's first instruction (`%t = tid.x` in [`SRC`]): its uses lose their
    /// definition.
    struct Break;
    impl Pass for Break {
        fn name(&self) -> &'static str {
            "break"
        }
        fn run(&self, k: &mut Kernel, _cx: &mut PassContext) -> bool {
            k.blocks[0].insts.remove(0);
            true
        }
    }

    #[test]
    fn the_output_is_verified_again_where_passes_changed_it() {
        // A pass that breaks a body it reports changed: the output is refused.
        let v = kir_ir::verify::check(kir_ir::parse(SRC).unwrap()).unwrap();
        let e =
            run_pipeline(v, &pipeline(vec![("break", Box::new(Break))]), &RunConfig::default(), &mut std::io::sink())
                .unwrap_err();
        assert!(matches!(e, PassError::InvalidOutput { .. }), "{e}");
        // The default pipeline over bodies with warnings, some changed and some not: the output
        // is what verifying it from scratch gives (warnings, CFGs).
        let src = format!(
            "{SRC}kernel @idle(%p: ptr<global, u32>) {{\nentry:\n  store %p[0], 7\n  ret\nlost:\n  ret\n}}\n\
             kernel @folds(%p: ptr<global, u32>) {{\nentry:\n  %x = add.u32 2, 3\n  store %p[0], %x\n  ret\n}}\n"
        );
        let v = kir_ir::verify::check(kir_ir::parse(&src).unwrap()).unwrap();
        for spec in ["fold", crate::pipeline::DEFAULT_PIPELINE] {
            let p = crate::pipeline::parse_pipeline(spec).unwrap();
            let (out, _) = run_pipeline(v.clone(), &p, &RunConfig::default(), &mut std::io::sink()).unwrap();
            let fresh = kir_ir::verify::check(out.module().clone()).unwrap();
            assert_eq!(out.warnings(), fresh.warnings(), "{spec}");
            let shape = |v: &Checked| v.cfgs().iter().map(|c| c.rpo().to_vec()).collect::<Vec<_>>();
            assert_eq!(shape(&out), shape(&fresh), "{spec}");
        }
    }

    /// A module pass that records whether each body's CFG was cached on entry, and checks the one
    /// it gets.
    struct ModuleProbe(Rc<RefCell<Vec<bool>>>);
    impl ModulePass for ModuleProbe {
        fn name(&self) -> &'static str {
            "module-probe"
        }
        fn run(&self, m: &mut Module, cx: &mut PassContext) -> bool {
            for (i, k) in m.bodies().enumerate() {
                self.0.borrow_mut().push(cx.cached_body_cfgs.0.get(i).is_some_and(Option::is_some));
                let cfg = cx.body_cfg(i, k);
                for b in k.block_ids() {
                    let want: Vec<_> = k.block(b).term.successors().map(|c| c.block).collect();
                    assert_eq!(cfg.succs(b), &want[..], "stale CFG at {b:?}");
                }
            }
            false
        }
    }

    #[test]
    fn module_passes_see_the_cached_cfgs_too() {
        let seen = Rc::new(RefCell::new(vec![]));
        let mut p = pipeline(vec![("flip", Box::new(Flip))]);
        p.steps.insert(
            0,
            Step { spec: "module-probe".into(), pass: PassKind::Module(Box::new(ModuleProbe(seen.clone()))) },
        );
        p.steps.push(Step { spec: "module-probe".into(), pass: PassKind::Module(Box::new(ModuleProbe(seen.clone()))) });
        let v = kir_ir::verify::check(kir_ir::parse(SRC).unwrap()).unwrap();
        run_pipeline(v, &p, &RunConfig::default(), &mut std::io::sink()).unwrap();
        assert_eq!(*seen.borrow(), vec![true, false], "the verifier's CFG first; none after `flip`");
        // The real module pass gives the same answer on the cached CFGs as without them.
        let barrier_src = "kernel @k(%p: ptr<global, u32>) {\nentry:\n  %t = tid.x\n  %c = lt.u32 %t, 3\n  br %c, a, b\na:\n  barrier\n  jmp b\nb:\n  ret\n}\n";
        let mut m = kir_ir::parse(barrier_src).unwrap();
        let want = kir_ir::verify::check_barriers(&m, |_| None);
        assert_eq!(want.len(), 1);
        let p = crate::pipeline::parse_pipeline("verify-barriers").unwrap();
        let e = run_pipeline_in_place(&mut m, &p, &RunConfig::default(), &mut std::io::sink()).unwrap_err();
        let PassError::Rejected { diagnostics, .. } = e else { panic!("{e}") };
        assert_eq!(diagnostics, want);
    }

    #[test]
    fn a_pass_that_changes_edges_drops_the_cached_cfg() {
        let seen = Rc::new(RefCell::new(vec![]));
        let probe = || Box::new(Probe(seen.clone())) as Box<dyn Pass>;
        run(vec![("probe", probe()), ("flip", Box::new(Flip)), ("probe", probe())], false);
        assert_eq!(*seen.borrow(), vec![true, false], "after `flip` the CFG is built again");
        // With verify-each the verifier's fresh CFG of the flipped body is cached instead; the
        // probe checks it matches the flipped edges.
        seen.borrow_mut().clear();
        run(vec![("flip", Box::new(Flip)), ("probe", probe())], true);
        assert_eq!(*seen.borrow(), vec![true]);
    }
}
