//! `kir test [PATH...]`: the main job. Runs every check on every `.kir` file under the paths.
//!
//! Guarantees: one row per file and, per directive, an `interp`, a `ptx-emu` and a `gpu` row (`ok`,
//! `unverified` — an interpreter row whose directive expects nothing of the outputs —, `FAIL`,
//! `skip: ...`; see [`kir_harness::kir_test`]), each printed as soon as it is decided (with `[i/N]` file
//! progress), then a `tools: ...` line (the ptxas and the GPU used, or `ptxas: not found`,
//! `GPU: none (WHY)`) and a final `N passed (M without expectation), N failed, N skipped` line (the
//! parenthesis only when M > 0; `unverified` rows count as passed, or as failed with `--strict`).
//! `--passes P` replaces the default pipeline (a malformed pipeline is a usage error, exit 2).
//! The interpreter runs with race and uninitialized-read detection unless `--no-checks`; `--bless`
//! writes `.npy` expectations and lists each file it wrote, except in files marked
//! `; source: hardware` (recorded on a GPU: the specification), whose missing expectations only
//! `--record-gpu` writes, from a real GPU.
//! `--partition K/N` tests only the files of partition K of N ([`kir_harness::shard`]): a file's
//! partition is the FNV-1a hash of its key — its path relative to the directory argument it was
//! found under, or the name of a file given explicitly ([`kir_harness::walk`]) — modulo N, so the
//! N partitions of one run together test every file exactly once, and a file stays in its
//! partition when files are added or removed. The summary line then ends with
//! `(partition K/N: F of T files)`; a partition may be empty (exit 0 when nothing failed). A
//! malformed `K/N` is a usage error (exit 2).
//! Exit 0 only when nothing failed and at least one file was found; a path that does not exist is
//! an error. The walk ([`kir_harness::walk`]) follows no link into a cycle, tests each file once, and
//! reports a dangling link or a non-regular `*.kir` (a FIFO would block) as a FAIL row by its own
//! name, then goes on. `--require-gpu` (or `KIR_REQUIRE_GPU=1`) turns a missing GPU into failures.
//! The GPU rows run in a worker process ([`kir_harness::isolate`]): a driver crash fails a row, not the run.
//! A file is strict with `--strict` or when the nearest `kir-test.toml` at or above its directory
//! says `strict = true` ([`kir_harness::directives::find_test_config`]; `kernels/` has one); every such
//! file is read before any test runs, and a malformed one is an error (`FILE:LINE:COL: why`,
//! exit 2).

use kir_harness::directives::{find_test_config, parse_test_config};
use kir_harness::kir_test::{self, Context, Outcome, Row};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Files or directories (searched recursively for *.kir); default `kernels/`.
    pub paths: Vec<String>,
    /// Fail (instead of skip) when no GPU is present.
    #[arg(long)]
    pub require_gpu: bool,
    /// Also print what each passing row checked.
    #[arg(long, short)]
    pub verbose: bool,
    /// Instructions each launch may execute, in the interpreter and in the PTX emulator: N
    /// thread-instructions in all and N per warp (default 2^32 in all, 2^26 per warp in the
    /// interpreter, so a spinning thread fails within about a second); a directive's `fuel=N`
    /// overrides it for its launches.
    #[arg(long, value_name = "N")]
    pub fuel: Option<u64>,
    /// Turn off the interpreter's race and uninitialized-read detection everywhere (faster; by
    /// default every interpreter run has them, unless its directive says `checks=none(REASON)`).
    #[arg(long)]
    pub no_checks: bool,
    /// A directive with no `; expect:` line fails (instead of passing as `unverified`).
    #[arg(long)]
    pub strict: bool,
    /// Write missing or differing `.npy` expectations (`expect: NAME == @file.npy`) from the
    /// interpreter's output, and list what was written.
    #[arg(long)]
    pub bless: bool,
    /// In files marked `; source: hardware`, write each missing `.npy` expectation from the GPU's
    /// output (a real GPU only, never kir's emulated driver; never over an existing file). How the
    /// next machine with a GPU extends the recorded truth: docs/testing.md, "Hardware truth".
    #[arg(long)]
    pub record_gpu: bool,
    /// The pass pipeline whose output the second interpreter run, the PTX emulator, ptxas and the
    /// GPU get (default: the default pipeline, as `kir opt`; '' runs the files as written), e.g. to
    /// try a pass on the whole kernel library before it joins the default.
    #[arg(long, value_name = "PIPELINE")]
    pub passes: Option<String>,
    /// Memory budget of the run: all buffers of the arguments together, and a launch's buffers
    /// with its race-detection shadow (default 8G; accepts 4096, 512M, 8G).
    #[arg(long, value_name = "BYTES")]
    pub max_memory: Option<String>,
    /// Test only partition K of N (1 <= K <= N): a file's partition is a hash of its path
    /// relative to the directory argument, so N runs with K = 1..N test every file once, and a
    /// file keeps its partition when others are added (docs/testing.md, "Running on several
    /// machines").
    #[arg(long, value_name = "K/N", value_parser = kir_harness::shard::Shard::parse)]
    pub partition: Option<kir_harness::shard::Shard>,
}

pub fn run(args: &Args) -> ExitCode {
    if let Err(code) = super::common::apply_max_memory(args.max_memory.as_deref()) {
        return code;
    }
    let paths = if args.paths.is_empty() { vec!["kernels".to_string()] } else { args.paths.clone() };
    let roots: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    let mut walk = match kir_harness::walk::kir_files(&roots) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if walk.files.is_empty() && walk.problems.is_empty() {
        eprintln!("error: no .kir files under {}", paths.join(", "));
        return ExitCode::from(2);
    }
    let found = walk.files.len();
    if let Some(part) = args.partition {
        walk.retain_keys(|key| part.has_key(key));
    }
    let files = walk.files;
    // Per-file strictness from the nearest kir-test.toml, all read (and checked) before any test.
    let strict_by_config = match strict_by_config(&files) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(p) = &args.passes {
        if let Err(e) = kir::passes::parse_pipeline(p) {
            eprintln!("error: --passes: {e}");
            return ExitCode::from(2);
        }
    }
    let require_gpu = args.require_gpu || std::env::var("KIR_REQUIRE_GPU").is_ok_and(|v| v == "1");
    // The GPU rows load kir's PTX file after file: in a worker process, so that a driver crash
    // fails a row instead of ending the run.
    let mut ctx = match std::env::current_exe() {
        Ok(exe) => Context::detect_isolated(require_gpu, &exe),
        Err(_) => Context::detect(require_gpu),
    };
    ctx.checks = !args.no_checks;
    if let Some(p) = &args.passes {
        ctx.pipeline = p.clone();
    }
    ctx.bless = args.bless;
    ctx.record_gpu = args.record_gpu;
    if let Some(fuel) = args.fuel {
        ctx.interp = ctx.interp.clone().with_fuel(fuel);
        ctx.emu = ctx.emu.clone().with_fuel(fuel);
    }
    if ctx.ptxas.is_none() {
        eprintln!("note: ptxas not found: {}; PTX is emitted but not assembled", kir::ptx::tools::INSTALL_HINT);
    }
    match &ctx.gpu {
        kir_test::GpuState::Unavailable(why) => eprintln!(
            "note: {why}; GPU rows are skipped{}",
            if require_gpu { " — and fail, as --require-gpu asks" } else { "" }
        ),
        kir_test::GpuState::Misconfigured(why) => eprintln!("error: {why}; every GPU row fails"),
        kir_test::GpuState::Available(r) if r.is_emulated() => eprintln!(
            "note: the GPU rows run on `{}`, kir's emulated CUDA driver (KIR_CUDA_DRIVER), not on hardware",
            r.device_name().unwrap_or_default()
        ),
        kir_test::GpuState::Available(_) => {}
    }
    let (mut passed, mut failed, mut skipped, mut unverified) = (0usize, 0usize, 0usize, 0usize);
    for p in &walk.problems {
        failed += 1;
        println!("[walk] FAIL  {}\n    {}", p.path.display(), p.why);
    }
    let n = files.len();
    let verbose = args.verbose;
    for (i, f) in files.iter().enumerate() {
        let config = strict_by_config[i].as_deref();
        let strict = args.strict || config.is_some();
        let mut emit = |row: Row| {
            let progress = format!("[{}/{n}]", i + 1);
            match &row.outcome {
                Outcome::Ok => {
                    passed += 1;
                    match (&row.note, verbose) {
                        (Some(note), true) => println!("{progress} ok    {}  ({note})", row.label),
                        _ => println!("{progress} ok    {}", row.label),
                    }
                }
                Outcome::Unverified if strict => {
                    failed += 1;
                    println!(
                        "{progress} FAIL  {}\n    no `; expect:` line: the outputs were not checked (--strict)",
                        row.label
                    );
                    if let (false, Some(at)) = (args.strict, config) {
                        println!("    (strict by `strict = true` at {at})");
                    }
                }
                Outcome::Unverified => {
                    passed += 1;
                    unverified += 1;
                    match (&row.note, verbose) {
                        (Some(note), true) => println!("{progress} unverified {}  ({note})", row.label),
                        _ => println!("{progress} unverified {}", row.label),
                    }
                }
                Outcome::Fail(msg) => {
                    failed += 1;
                    println!("{progress} FAIL  {}\n    {}", row.label, msg.trim_start());
                }
                Outcome::Skip(why) => {
                    skipped += 1;
                    println!("{progress} skip: {why}  {}", row.label);
                }
            }
        };
        kir_test::test_file(f, &mut ctx, &mut emit);
    }
    for b in &ctx.blessed {
        let verb = if b.contains("(recorded from the GPU") { "recorded" } else { "blessed" };
        println!("{verb}: wrote {b}");
    }
    println!("{}", ctx.tools_summary());
    let partition = match args.partition {
        Some(part) => format!(" (partition {part}: {n} of {found} files)"),
        None => String::new(),
    };
    if unverified > 0 {
        println!("{passed} passed ({unverified} without expectation), {failed} failed, {skipped} skipped{partition}");
    } else {
        println!("{passed} passed, {failed} failed, {skipped} skipped{partition}");
    }
    if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// For each file, where its strictness comes from when the nearest `kir-test.toml` at or above its
/// directory says `strict = true` (`PATH:LINE`), else `None`. Each config file is read once; a
/// malformed or unreadable one is an error, `PATH:LINE:COL: why`.
fn strict_by_config(files: &[PathBuf]) -> Result<Vec<Option<String>>, String> {
    let cwd = std::env::current_dir().ok();
    // Shown relative to the working directory when below it, as the files are.
    let shown = |p: &Path| match cwd.as_deref().and_then(|c| p.strip_prefix(c).ok()) {
        Some(rel) => rel.display().to_string(),
        None => p.display().to_string(),
    };
    let mut read: HashMap<PathBuf, Option<String>> = HashMap::new();
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let Some(path) = find_test_config(f) else {
            out.push(None);
            continue;
        };
        if !read.contains_key(&path) {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: cannot read: {e}", shown(&path)))?;
            let cfg = parse_test_config(&text)
                .map_err(|e| format!("{}:{}:{}: {}", shown(&path), e.line, e.col, e.message))?;
            let at = cfg.strict_line.filter(|_| cfg.strict).map(|line| format!("{}:{line}", shown(&path)));
            read.insert(path.clone(), at);
        }
        out.push(read[&path].clone());
    }
    Ok(out)
}
