//! The pass manager: runs a pipeline over a module, with verification, IR dumps, statistics and
//! timing.
//!
//! Guarantees:
//! - The input is verified first (unless [`RunConfig::verify_input`] is off); passes only ever see
//!   verified IR.
//! - Steps run in order, dispatched on the pass's kind ([`PassKind`]): a kernel pass runs on every
//!   kernel (in module order), a module pass once on the module, before the next step starts. At
//!   the end every kernel is compacted ([`kir_ir::Kernel::compact`]), so what is returned is
//!   canonical; dumps print the block layout, which is the same text either way. A module pass
//!   that changed the module has every kernel compacted right after it; it counts as changing
//!   each kernel it added and each existing kernel that this compaction renumbered (at least one).
//! - With [`RunConfig::verify_each`], the verifier runs after every pass on every kernel. A pass
//!   that leaves an invalid kernel, or that reports "unchanged" while it changed the kernel, stops
//!   the pipeline with [`PassError::Broken`] naming the pass and kernel with the verifier's errors;
//!   the kernel is restored to its IR from before that pass. After a module pass the whole module
//!   (kernels and graphs) is verified, and a module pass that changed or removed a kernel that was
//!   in the module before it (which [`crate::ModulePass`] forbids) is `Broken` too; the whole
//!   module is restored. A pass that reports error diagnostics stops the pipeline the same way
//!   with [`PassError::Rejected`].
//! - What is copied to make those restores possible, and when: for a kernel pass, each kernel
//!   just before the pass runs on it, only with `verify_each`. For a module pass, the whole module
//!   just before the pass, only with `verify_each` or when the pass may reject
//!   ([`crate::ModulePass::may_reject`]; `fuse` may not); without `verify_each` nothing is copied
//!   for `fuse`. Hence a kernel pass's IR is restored after error diagnostics only with
//!   `verify_each`, a module pass's always when it may reject (and with `verify_each`).
//! - Dumps go to the given writer, each headed `*** IR Dump After fold (kernel @name) ***` (or
//!   `Before`), followed by the kernel's text, which is valid `.kir`; module passes print none.
//!   `dump_dir` gets one file per step, `00-input.kir`, `01-fold.kir`, ..., each the whole module
//!   as valid `.kir`.
//! - Timings measure the passes only (not verification, copies, compaction or dumps).

use crate::pass::{ModulePass, Pass, PassContext, PassKind, PassStats};
use crate::pipeline::Pipeline;
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
    InvalidInput { kernel: String, diagnostics: Vec<Diagnostic> },
    /// A pass left the kernel invalid (or changed it while reporting no change); the kernel holds
    /// its IR from before the pass. `ir_after` is the broken kernel's text.
    Broken { pass: String, kernel: String, diagnostics: Vec<Diagnostic>, ir_after: String },
    /// A pass rejected the kernel with error diagnostics (an analysis that found a problem).
    Rejected { pass: String, kernel: String, diagnostics: Vec<Diagnostic> },
    /// Writing a dump failed.
    Io { what: String, error: std::io::Error },
}

impl PassError {
    /// The diagnostics that explain the error (located in the source the module was parsed from).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            PassError::InvalidInput { diagnostics, .. }
            | PassError::Broken { diagnostics, .. }
            | PassError::Rejected { diagnostics, .. } => diagnostics,
            PassError::Io { .. } => &[],
        }
    }
}

impl fmt::Display for PassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PassError::InvalidInput { kernel, .. } => write!(f, "kernel @{kernel} does not verify; no pass was run"),
            PassError::Broken { pass, kernel, .. } => {
                write!(f, "pass `{pass}` broke kernel @{kernel}; keeping the IR from before the pass")
            }
            PassError::Rejected { pass, kernel, .. } => write!(f, "pass `{pass}` rejected kernel @{kernel}"),
            PassError::Io { what, error } => write!(f, "{what}: {error}"),
        }
    }
}

impl std::error::Error for PassError {}

fn dump(out: &mut dyn Write, when: &str, pass: &str, k: &Kernel) -> Result<(), PassError> {
    write!(out, "*** IR Dump {when} {pass} (kernel @{}) ***\n{}\n", k.name, print_kernel(k))
        .map_err(|error| PassError::Io { what: "writing an IR dump".into(), error })
}

fn write_dump_file(dir: &std::path::Path, index: usize, name: &str, m: &Module) -> Result<(), PassError> {
    let path = dir.join(format!("{index:02}-{name}.kir"));
    std::fs::write(&path, print_module(m))
        .map_err(|error| PassError::Io { what: format!("writing {}", path.display()), error })
}

/// The verifier's errors for a kernel (warnings are dropped).
fn verify_errors(k: &Kernel) -> Vec<Diagnostic> {
    let d = kir_ir::verify::verify_kernel(k);
    if diag::has_errors(&d) {
        d.into_iter().filter(Diagnostic::is_error).collect()
    } else {
        vec![]
    }
}

/// Runs `p` over every kernel of `m`, writing the requested dumps to `dumps`.
pub fn run_pipeline(m: &mut Module, p: &Pipeline, cfg: &RunConfig, dumps: &mut dyn Write) -> Result<Report, PassError> {
    if cfg.verify_input {
        for k in &m.kernels {
            let errs = verify_errors(k);
            if !errs.is_empty() {
                return Err(PassError::InvalidInput { kernel: k.name.clone(), diagnostics: errs });
            }
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
            PassKind::Kernel(pass) => run_kernel_step(&**pass, &step.spec, m, cfg, dumps, &mut sr, &mut report)?,
            PassKind::Module(pass) => run_module_step(&**pass, &step.spec, m, cfg, &mut sr, &mut report)?,
        }
        if let Some(dir) = &cfg.dump_dir {
            write_dump_file(dir, si + 1, name, m)?;
        }
        report.steps.push(sr);
    }
    // Passes leave removed entities in the arenas; compact once at the end so the result is
    // canonical (what printing and re-parsing it gives).
    m.kernels.iter_mut().for_each(Kernel::compact);
    Ok(report)
}

/// Runs kernel pass `pass` (written `spec` in the pipeline) on every kernel of `m`, in order.
fn run_kernel_step(
    pass: &dyn Pass,
    spec: &str,
    m: &mut Module,
    cfg: &RunConfig,
    dumps: &mut dyn Write,
    sr: &mut StepReport,
    report: &mut Report,
) -> Result<(), PassError> {
    let name = pass.name();
    for k in m.kernels.iter_mut() {
        if cfg.wants_before(name) {
            dump(dumps, "Before", name, k)?;
        }
        let before = cfg.verify_each.then(|| k.clone());
        let mut cx = PassContext::default();
        let start = Instant::now();
        let changed = pass.run(k, &mut cx);
        sr.time += start.elapsed();
        if changed {
            sr.changed_kernels += 1;
        }
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
            let mut errs = verify_errors(k);
            if !changed && *k != b {
                errs.push(Diagnostic::error(format!(
                    "pass `{spec}` reported no change but changed kernel @{}",
                    k.name
                )));
            }
            if !errs.is_empty() {
                let ir_after = print_kernel(k);
                let kernel = k.name.clone();
                *k = b;
                return Err(PassError::Broken { pass: spec.to_string(), kernel, diagnostics: errs, ir_after });
            }
        }
        if cfg.wants_after(name, changed) {
            dump(dumps, "After", name, k)?;
        }
    }
    Ok(())
}

/// Runs module pass `pass` (written `spec` in the pipeline) once on `m`. The module is copied
/// first only when the copy may be needed: with `verify_each` (the module is verified after the
/// pass and restored if that fails) or when the pass may reject (error diagnostics restore it).
fn run_module_step(
    pass: &dyn ModulePass,
    spec: &str,
    m: &mut Module,
    cfg: &RunConfig,
    sr: &mut StepReport,
    report: &mut Report,
) -> Result<(), PassError> {
    let before = (cfg.verify_each || pass.may_reject()).then(|| m.clone());
    // The kernels the pass is given. It must leave them as they are (checked below with
    // `verify_each`), so after it they can still tell which kernels it added and which ones the
    // compaction below renumbers: the kernels it changed, as counted without a copy.
    let existing: HashSet<String> = m.kernels.iter().map(|k| k.name.clone()).collect();
    let mut cx = PassContext::default();
    let start = Instant::now();
    let changed = pass.run(m, &mut cx);
    sr.time += start.elapsed();
    if changed {
        let mut n = 0;
        for k in m.kernels.iter_mut() {
            if !(existing.contains(&k.name) && k.is_compact()) {
                n += 1;
            }
            k.compact();
        }
        sr.changed_kernels += n.max(1);
    }
    sr.stats.merge(&cx.stats);
    let (errors, warnings): (Vec<Diagnostic>, Vec<Diagnostic>) =
        cx.diagnostics.into_iter().partition(Diagnostic::is_error);
    report.warnings.extend(warnings);
    let module_name = |m: &Module| m.kernels.first().map(|k| k.name.clone()).unwrap_or_default();
    if !errors.is_empty() {
        let kernel = module_name(m);
        if let Some(b) = before {
            *m = b;
        }
        return Err(PassError::Rejected { pass: spec.to_string(), kernel, diagnostics: errors });
    }
    if let (true, Some(b)) = (cfg.verify_each, before) {
        let mut errs: Vec<Diagnostic> = kir_ir::verify::verify_module(m)
            .into_iter()
            .chain(m.graphs.iter().flat_map(|g| kir_ir::graph::verify_graph(m, g)))
            .filter(Diagnostic::is_error)
            .collect();
        for old in &b.kernels {
            let mut expected = old.clone();
            expected.compact();
            let what = match m.kernel(&old.name) {
                None => "removed",
                Some(k) if changed && *k != expected => "changed",
                Some(k) if !changed && k != old => "changed",
                Some(_) => continue,
            };
            errs.push(Diagnostic::error(format!(
                "module pass `{spec}` {what} kernel @{}, which was in the module before it (a module pass may only add kernels and rewrite graphs)",
                old.name
            )));
        }
        if !errs.is_empty() {
            let (kernel, ir_after) = (module_name(m), print_module(m));
            *m = b;
            return Err(PassError::Broken { pass: spec.to_string(), kernel, diagnostics: errs, ir_after });
        }
    }
    Ok(())
}

/// Runs a pipeline on one kernel with the verifier after every pass and no dumps: what tests use.
pub fn run_on_kernel(k: &mut Kernel, p: &Pipeline) -> Result<Report, PassError> {
    let mut m = Module { kernels: vec![std::mem::replace(k, Kernel::new(""))], ..Module::default() };
    let cfg = RunConfig { verify_each: true, ..RunConfig::default() };
    let r = run_pipeline(&mut m, p, &cfg, &mut std::io::sink());
    *k = m.kernels.pop().unwrap_or_else(|| Kernel::new(""));
    r
}
