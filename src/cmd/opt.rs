//! `kir opt FILE [--passes P]`: run a pass pipeline over a module and print the result.
//!
//! Guarantees:
//! - The output (stdout, or `-o FILE`) is the optimized module as valid `.kir`; it is written only
//!   when every pass succeeded.
//! - The input is checked first, as `kir check` checks it ([`kir::api::check_for_passes`]: the
//!   verifier, then barrier and collective verification), and the pipeline runs on the checked
//!   module and hands back one checked again ([`kir::api::run_pipeline`]). A file that does not
//!   parse or pass those checks, an unknown pass or option, a pass that breaks the IR, or a result
//!   that fails the checks is reported with located diagnostics and exit code 1 (2 for a bad
//!   pipeline or pass name); nothing panics.
//! - IR dumps (`--print-ir-*`), `--stats` and `--time-passes` go to stderr, as in mlir-opt;
//!   `--dump-dir DIR` writes `00-input.kir`, `01-<pass>.kir`, ... (valid `.kir`, diffable).
//! - `--list-passes` prints one line per registered pass (and one per option) and exits 0.
//! - `--print-divergence` prints the uniformity verdict of every value and block of the input
//!   (see `kir::passes::uniformity::annotate`) to stderr before the pipeline runs.
//! - `--cfg-svg DIR` writes `DIR/<kernel>.svg` for every kernel of the result (after the pipeline):
//!   the picture `kir cfg --format svg` draws, divergent branches, barriers and loops marked
//!   (`kir_cli::cfg_svg`). One file per kernel (a module often has several, and each picture is one
//!   graph); DIR is created; the files are written only when every pass succeeded.

use super::common;
use kir::api::{check_for_passes, parse_pipeline, registry, run_pipeline, PassError, RunConfig, DEFAULT_PIPELINE};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The .kir file to optimize.
    #[arg(required_unless_present = "list_passes")]
    pub file: Option<String>,
    /// The pipeline: comma-separated pass names, options in braces (`fold{approx},dce`).
    /// Without it, the default pipeline runs (see --list-passes).
    #[arg(long, value_name = "PIPELINE")]
    pub passes: Option<String>,
    /// List the registered passes and the default pipeline, then exit.
    #[arg(long)]
    pub list_passes: bool,
    /// Write the result here instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<String>,
    /// Run the verifier after every pass; a pass that breaks the IR is reported by name.
    #[arg(long)]
    pub verify_each: bool,
    /// Print each kernel before every run of these passes (comma-separated names).
    #[arg(long = "print-ir-before", value_name = "PASS", value_delimiter = ',')]
    pub print_ir_before: Vec<String>,
    /// Print each kernel after every run of these passes (comma-separated names).
    #[arg(long = "print-ir-after", value_name = "PASS", value_delimiter = ',')]
    pub print_ir_after: Vec<String>,
    /// Print each kernel before every pass.
    #[arg(long)]
    pub print_ir_before_all: bool,
    /// Print each kernel after every pass.
    #[arg(long)]
    pub print_ir_after_all: bool,
    /// Print a kernel after a pass only when the pass changed it (alone: after every pass that did;
    /// with --print-ir-after or --print-ir-after-all: restricts those).
    #[arg(long)]
    pub print_ir_after_change: bool,
    /// Write the module before the first pass and after every pass to DIR/NN-<pass>.kir.
    #[arg(long, value_name = "DIR")]
    pub dump_dir: Option<PathBuf>,
    /// Print per-pass statistics (instructions folded/removed, blocks removed, ...) to stderr.
    #[arg(long)]
    pub stats: bool,
    /// Print the time spent in each pass to stderr.
    #[arg(long)]
    pub time_passes: bool,
    /// Print each kernel of the input, every block, block parameter, result and branch marked
    /// U (block-uniform), W (warp-uniform) or V (varying) with the reason, to stderr (for debugging
    /// a `verify-barriers` / `kir check` verdict). Needs an input that verifies.
    #[arg(long)]
    pub print_divergence: bool,
    /// Write DIR/<kernel>.svg for every kernel after the pipeline: its CFG with the uniformity
    /// verdicts drawn (divergent branches, barriers, loops), as `kir cfg --format svg` does.
    #[arg(long, value_name = "DIR")]
    pub cfg_svg: Option<PathBuf>,
    /// Report every decision of the `fuse` pass (what was fused, and why each other candidate pair
    /// of launches was not) as notes on stderr; same as `fuse{explain}`.
    #[arg(long)]
    pub print_fusion: bool,
    /// Report every loop the `unroll` pass looks at (fully unrolled, unrolled by 4, or why not) as
    /// notes on stderr; same as `unroll{explain}`.
    #[arg(long)]
    pub print_unroll: bool,
}

/// The `--list-passes` text.
pub fn list_passes_text() -> String {
    let mut out = String::from("Passes:\n");
    for p in registry() {
        out.push_str(&format!("  {:<14} {}\n", p.name, p.description));
        for (o, d) in p.options {
            out.push_str(&format!("  {:<14}   {{{o}}}: {d}\n", ""));
        }
    }
    out.push_str(&format!("Default pipeline: {DEFAULT_PIPELINE}\n"));
    out
}

pub fn run(args: &Args) -> ExitCode {
    if args.list_passes {
        print!("{}", list_passes_text());
        return ExitCode::SUCCESS;
    }
    let Some(path) = args.file.as_deref() else {
        eprintln!("error: kir opt needs a FILE (or --list-passes)");
        return ExitCode::from(2);
    };
    let pipeline = match parse_pipeline(args.passes.as_deref().unwrap_or(DEFAULT_PIPELINE)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: --passes: {e}");
            return ExitCode::from(2);
        }
    };
    let mut pipeline = pipeline;
    if args.print_fusion {
        for step in pipeline.steps.iter_mut().filter(|s| s.name() == "fuse") {
            step.pass = kir::passes::PassKind::Module(Box::new(kir::passes::fuse::Fuse { explain: true }));
        }
    }
    if args.print_unroll {
        for step in pipeline.steps.iter_mut().filter(|s| s.name() == "unroll") {
            let with_explain = if step.spec == "unroll" {
                "unroll{explain}".to_string()
            } else {
                step.spec.replacen('}', " explain}", 1)
            };
            match parse_pipeline(&with_explain) {
                Ok(mut p) if p.steps.len() == 1 => *step = p.steps.remove(0),
                _ => {}
            }
        }
    }
    let known: Vec<&str> = registry().iter().map(|p| p.name).collect();
    for (flag, names) in [("--print-ir-before", &args.print_ir_before), ("--print-ir-after", &args.print_ir_after)] {
        if let Some(bad) = names.iter().find(|n| !known.contains(&n.as_str())) {
            eprintln!("error: {flag}: unknown pass `{bad}` (available: {})", known.join(", "));
            return ExitCode::from(2);
        }
    }
    let loaded = match common::load(path) {
        Ok(l) => l,
        Err(code) => return code,
    };
    if args.print_divergence {
        // The analysis a verified module carries (computed on the verifier's CFGs); nothing to
        // annotate on a module that does not verify (the pipeline reports why).
        if let Ok(v) = kir::ir::verify::verify(loaded.module.clone()) {
            for (i, k) in v.kernels.iter().enumerate() {
                eprint!("{}", kir::passes::uniformity::annotate(k, v.uniformity(i)));
            }
        }
    }
    let cfg = RunConfig {
        verify_input: true,
        verify_each: args.verify_each,
        print_before: args.print_ir_before.clone(),
        print_after: args.print_ir_after.clone(),
        print_before_all: args.print_ir_before_all,
        print_after_all: args.print_ir_after_all,
        print_after_change: args.print_ir_after_change,
        dump_dir: args.dump_dir.clone(),
    };
    let stderr = std::io::stderr();
    let result = check_for_passes(loaded.module.clone())
        .and_then(|checked| run_pipeline(checked, &pipeline, &cfg, &mut stderr.lock()));
    let (optimized, report) = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            loaded.emit(e.diagnostics());
            if let PassError::Broken { ir_after, .. } = &e {
                eprintln!("note: the kernel as the pass left it:\n{ir_after}");
            }
            return ExitCode::from(1);
        }
    };
    loaded.emit(&report.warnings);
    if args.stats {
        eprint!("{}", report.stats_text());
    }
    if args.time_passes {
        eprint!("{}", report.timing_text());
    }
    if let Some(dir) = &args.cfg_svg {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return common::file_error(&dir.display().to_string(), e);
        }
        for k in &optimized.kernels {
            let file = dir.join(format!("{}.svg", k.name));
            if let Err(e) = std::fs::write(&file, kir_cli::cfg_svg::render_kernel(k)) {
                return common::file_error(&file.display().to_string(), e);
            }
        }
    }
    let text = kir::ir::print_module(&optimized);
    match &args.output {
        Some(out) => {
            if let Err(e) = std::fs::write(out, text) {
                return common::file_error(out, e);
            }
        }
        None => {
            let mut so = std::io::stdout().lock();
            if so.write_all(text.as_bytes()).and_then(|_| so.flush()).is_err() {
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
