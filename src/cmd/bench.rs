//! `kir bench FILE.kir [@KERNEL] [NAME=VALUE]... [--grid X[,Y[,Z]] --block X[,Y[,Z]]] [--passes P]
//! [--warmup N] [--reps N] [--flops EXPR] [--cuda FILE.cu [--cuda-kernel NAME] [--nvrtc-opt OPT]...]`:
//! time a kernel on the GPU by CUDA events and, optionally, its CUDA C twin compiled by NVRTC on
//! the same launches, side by side.
//!
//! Guarantees:
//! - What is timed is the PTX of the module after `--passes` (the default pipeline unless given;
//!   `--passes ''` times the kernel as written), for the device's own `sm_XX`
//!   ([`kir_harness::gpu_exec::sm_for`]). Each launch: `--warmup` untimed launches and a synchronization
//!   (a fault there is an error before any time is taken), then `--reps` launches, each between two
//!   CUDA events; the median, min and max are printed ([`GpuRunner::time_launches`]).
//! - The launches: the one given on the command line (`--grid`, `--block`, the arguments), or,
//!   without one, every kernel `; run:` directive of the file (of `@KERNEL` only, when given), in
//!   file order, each with its line. Arguments use `kir run`'s syntax and checks; a bad one is a
//!   usage error (exit 2) before the device is opened.
//! - Bytes moved (for GB/s) are counted from the arguments, not measured: each buffer argument's
//!   whole size, once if the kernel may read it and once more if it may write it
//!   ([`kir::ir::analysis::effects::param_access`] on the timed kernel). The device's copy rate is
//!   measured on the same device for each launch: `cuMemcpyDtoDAsync` of half the kernel's bytes
//!   (at least 4 KiB, at most 256 MiB), counted as read plus written, timed like the kernel
//!   ([`GpuRunner::time_device_copy`]); "% of copy rate" is the kernel's GB/s over it.
//! - Floating-point operations (for TFLOP/s) are what `--flops EXPR` says, not counted: `EXPR` is
//!   a product (`*`) of decimal integers and names of the kernel's integer scalar parameters
//!   (`2*4096*4096*4096`, `2*m*n*k`; a name may be written `%m`), evaluated for each launch from
//!   its own arguments (so each `; run:` directive gets its own count) in exact integer
//!   arithmetic. Each timed line (kir's and the twin's) then ends with TFLOP/s = flops / median
//!   time (`n/a` on the emulated driver, like GB/s), and the launch's header line gives the count.
//!   An expression that does not parse, a name that is no integer scalar parameter of the launched
//!   kernel (its integer parameters are listed), a negative argument, a count of 0 or one above
//!   `u128` are usage errors (exit 2), found before the device is opened. Without `--flops` no
//!   TFLOP/s is printed.
//! - `--cuda FILE.cu` compiles the file with NVRTC ([`kir::ptx::nvrtc`]) for
//!   `compute_XY` of the device (plus `--nvrtc-opt`s), launches its `extern "C"` kernel of the same
//!   name (or `--cuda-kernel`) with the same launch shape, parameters and initial buffer contents,
//!   times it the same way, prints both medians and the ratio kir/CUDA (above 1: kir is slower),
//!   and says whether the two kernels' output buffers agree (one run each from the same inputs,
//!   under the tolerance `kir diff` would derive); a disagreement is a warning, not a failure.
//! - On kir's emulated driver (`KIR_CUDA_DRIVER=emu`) every time line says that its times are CPU
//!   wall time of the PTX emulator, not GPU time, and GB/s and % of copy rate are `n/a`. With no
//!   CUDA driver at all (and `KIR_CUDA_DRIVER` unset), kir bench says so on stderr and runs again
//!   on the emulated driver, unless a GPU is required (`--require-gpu`, `KIR_REQUIRE_GPU=1`):
//!   then it is an error.
//! - Nothing panics. No driver (when required), no device, NVRTC missing, a `.cu` file NVRTC
//!   rejects (its log is printed), a kernel not found (the names there are listed), bad arguments,
//!   a kernel fault: a message on stderr and a non-zero exit (2 for usage errors, 1 otherwise).
//! - The driver calls are made in this process (as `kir diff --time` makes them): the PTX is kir's
//!   own or compiled by NVRTC from the user's file, not a stream of generated modules, so the
//!   worker process of `kir_harness::isolate` (which has no timing request) is not used.
//! - Why this command calls the GPU runner directly rather than through
//!   [`kir_harness::engine::Engine`]: an engine runs a launch of a checked module and returns its
//!   buffers; kir bench needs what no engine offers — CUDA-event timing of warm-up and timed
//!   launches ([`GpuRunner::time_launches`]), the device's copy rate
//!   ([`GpuRunner::time_device_copy`]) and launches of NVRTC's PTX, which is no kir module. It
//!   takes kir's side from the harness as the engines do (the target from
//!   [`kir_harness::gpu_exec::sm_for`], the kernel's PTX from
//!   [`kir_harness::gpu_exec::ptx_in_module`], the pipeline from [`kir::api::run_pipeline`]).

use super::common::{self, parse_dims, usage};
use super::run_options::{GpuArgs, KernelArgs};
use kir::interp::args::{self, ArgSpec};
use kir::interp::{Arg, Buffer};
use kir::ir::verify::Checked;
use kir::ptx::gpu::{GpuError, GpuRunner, Launch, Param};
use kir::ptx::nvrtc::Nvrtc;
use kir_harness::compare::{compare_buffers, Strictness};
use kir_harness::directives::parse_directives;
use kir_harness::gpu_exec;
use std::collections::HashMap;
use std::process::ExitCode;

/// What `kir bench --help` adds after the options.
pub const BENCH_HELP: &str = "\
Launches: the one given (--grid, --block and NAME=VALUE arguments, positional or with --arg), or
every `; run:` directive of the file (of @KERNEL only, when given), each a \"size\".
Timing: CUDA events; --warmup untimed launches, then --reps timed ones; median [min .. max] in ms.
Bytes: counted from the arguments, not measured: each buffer argument's whole size, once if the
kernel may read it and once more if it may write it. GB/s = bytes / median time.
% of copy rate: the kernel's GB/s over the device's copy rate, measured for each launch with a
device-to-device memcpy of half the kernel's bytes (at least 4 KiB, at most 256 MiB; a copy
reads and writes each byte, so both count), timed the same way.
--flops EXPR: floating-point operations per launch, for TFLOP/s on every timed line: a product of
integers and the kernel's integer scalar arguments by name, evaluated for each launch from its own
arguments (e.g. --flops 2*m*n*k for a GEMM, or --flops 2*4096*4096*4096). Given, not counted.
--cuda FILE.cu: NVRTC compiles it for the device (compute_XY), its extern \"C\" kernel of the same
name (or --cuda-kernel) runs with the same launches and inputs; kir/cuda is the ratio of the
medians (above 1: kir is slower), and the outputs of the two are compared once.
Without a GPU: with KIR_CUDA_DRIVER=emu (or automatically when no CUDA driver is found, unless
--require-gpu) the launches run on kir's emulated CUDA driver: the times are CPU wall time of the
PTX emulator, not GPU times, and GB/s, % of copy rate and TFLOP/s are n/a. NVRTC is found as KIR_NVRTC or
in .tools/ (bash scripts/setup-tools.sh).";

#[derive(clap::Args)]
#[command(
    after_help = BENCH_HELP,
    mut_arg("kernel", |a| a.help("The kernel to time (optional when the file has one kernel, or when timing its directives)")),
    mut_arg("grid", |a| a.help("Grid size in blocks: X[,Y[,Z]] (with --block and the arguments; else the file's `; run:` directives are timed)")),
    mut_arg("shared", |a| a.help("Dynamic shared memory per block, in bytes (for the launch given on the command line)")),
    mut_arg("require_gpu", |a| a.help("Fail (exit 1) instead of running on the emulated driver when there is no CUDA driver (also: KIR_REQUIRE_GPU=1)"))
)]
pub struct Args {
    /// The .kir file.
    pub file: String,
    /// `@KERNEL` (same as --kernel) and `NAME=VALUE` kernel arguments (same as --arg).
    #[arg(value_name = "@KERNEL|NAME=VALUE")]
    pub rest: Vec<String>,
    #[command(flatten)]
    pub target: KernelArgs,
    /// The pass pipeline run before emitting PTX (default: the default pipeline, as `kir opt`;
    /// '' times the kernel as written).
    #[arg(long, value_name = "PIPELINE")]
    pub passes: Option<String>,
    /// Untimed launches before the timed ones.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub warmup: usize,
    /// Timed launches (the median is reported).
    #[arg(long, default_value_t = 30, value_name = "N")]
    pub reps: usize,
    /// Floating-point operations of one launch, for TFLOP/s: an integer or a product of integers
    /// and the kernel's integer scalar arguments by name (e.g. 2*m*n*k), per launch.
    #[arg(long, value_name = "EXPR")]
    pub flops: Option<String>,
    /// A CUDA C file to compile with NVRTC and time on the same launches (its twin kernel).
    #[arg(long, value_name = "FILE.cu")]
    pub cuda: Option<String>,
    /// The CUDA C kernel's name (default: the kir kernel's name); it must be `extern "C"`.
    #[arg(long, value_name = "NAME", requires = "cuda")]
    pub cuda_kernel: Option<String>,
    /// An extra NVRTC option (repeatable), e.g. --nvrtc-opt=--fmad=false.
    #[arg(long = "nvrtc-opt", value_name = "OPT", requires = "cuda", allow_hyphen_values = true)]
    pub nvrtc_opts: Vec<String>,
    #[command(flatten)]
    pub gpu: GpuArgs,
}

/// One launch to time: a kernel, its shape and its arguments (still text).
struct Case {
    kernel: String,
    launch: Launch,
    named: Vec<(String, ArgSpec)>,
    /// The `; run:` directive's line, when the launch comes from one.
    line: Option<usize>,
}

/// A [`Case`] with its arguments bound to the kernel.
struct Bound {
    case: Case,
    args: Vec<Arg>,
    buffers: Vec<Buffer>,
    /// Bytes moved as counted for GB/s, and how (`a 16384 read, ...`).
    bytes: u64,
    bytes_how: String,
    /// Buffer parameter names, indexed like `buffers` (for the output comparison).
    buffer_names: Vec<String>,
    /// Floating-point operations of the launch (`--flops`), when given.
    flops: Option<u128>,
}

/// The times of one engine's launches, in ms.
struct Times {
    median: f64,
    min: f64,
    max: f64,
}

impl Times {
    fn of(xs: &[f32]) -> Option<Times> {
        let median = gpu_exec::median(xs)?;
        let fin = xs.iter().map(|&x| x as f64).filter(|x| !x.is_nan());
        let min = fin.clone().fold(f64::INFINITY, f64::min);
        let max = fin.fold(f64::NEG_INFINITY, f64::max);
        Some(Times { median, min, max })
    }

    fn describe(&self) -> String {
        format!("median {} ms [{} .. {}]", ms(self.median), ms(self.min), ms(self.max))
    }
}

/// A time in ms with four significant digits (at least three decimals).
fn ms(x: f64) -> String {
    let decimals = if x <= 0.0 || !x.is_finite() { 3 } else { (3 - x.log10().floor() as i32).clamp(3, 9) as usize };
    format!("{x:.decimals$}")
}

fn gb_per_s(bytes: u64, median_ms: f64) -> Option<f64> {
    (bytes > 0 && median_ms > 0.0).then(|| bytes as f64 / (median_ms * 1e-3) / 1e9)
}

/// A `--flops` expression: a product of integers and names of integer scalar parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flops {
    /// The expression as written.
    text: String,
    factors: Vec<Factor>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Factor {
    Int(u128),
    /// A parameter's name, without `%`.
    Name(String),
}

impl Flops {
    /// Parses `2*m*n*k`, `2*4096*4096*4096`, `%m * 2` (blanks around `*` allowed).
    pub fn parse(text: &str) -> Result<Flops, String> {
        let shape = "the expression is a product (`*`) of decimal integers and names of the kernel's \
                     integer scalar arguments, e.g. 2*m*n*k or 2*4096*4096*4096";
        if text.trim().is_empty() {
            return Err(format!("--flops: empty expression; {shape}"));
        }
        let mut factors = Vec::new();
        for part in text.split('*') {
            let f = part.trim();
            if f.is_empty() {
                return Err(format!("--flops `{text}`: a factor is missing around `*`; {shape}"));
            }
            if f.bytes().all(|c| c.is_ascii_digit()) {
                let v = f.parse::<u128>().map_err(|_| format!("--flops `{text}`: `{f}` is too large"))?;
                factors.push(Factor::Int(v));
                continue;
            }
            let name = f.strip_prefix('%').unwrap_or(f);
            let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            if !ok {
                return Err(format!("--flops `{text}`: `{f}` is neither an integer nor an argument name; {shape}"));
            }
            factors.push(Factor::Name(name.to_string()));
        }
        Ok(Flops { text: text.trim().to_string(), factors })
    }

    /// The count for one launch of `k` with `args` (bound to `k`'s parameters, in order).
    fn eval(&self, k: &kir::ir::Kernel, args: &[Arg]) -> Result<u128, String> {
        let text = &self.text;
        let mut total: u128 = 1;
        for f in &self.factors {
            let v = match f {
                Factor::Int(v) => *v,
                Factor::Name(name) => {
                    let Some(i) = k.params.iter().position(|p| k.value(*p).name == name.as_str()) else {
                        return Err(format!(
                            "--flops `{text}`: the kernel has no parameter `{name}` ({})",
                            int_params(k)
                        ));
                    };
                    let ty = k.value(k.params[i]).ty;
                    let c = match (&args[i], ty) {
                        (Arg::Scalar(c), kir::ir::Type::Scalar(t)) if t.is_int() => *c,
                        _ => {
                            return Err(format!(
                                "--flops `{text}`: `{name}` is a {ty} parameter; only integer scalar arguments can be named ({})",
                                int_params(k)
                            ))
                        }
                    };
                    let bits = c.bits & c.ty.mask();
                    let width = c.ty.bits();
                    if c.ty.is_signed_int() && (bits >> (width - 1)) & 1 == 1 {
                        return Err(format!("--flops `{text}`: argument `{name}` is negative"));
                    }
                    bits as u128
                }
            };
            total = total.checked_mul(v).ok_or_else(|| format!("--flops `{text}` overflows 128 bits"))?;
        }
        if total == 0 {
            return Err(format!("--flops `{text}` is 0: no TFLOP/s to give"));
        }
        Ok(total)
    }

    /// Whether the expression is one integer as written (its value needs no explanation).
    fn is_literal(&self) -> bool {
        matches!(self.factors.as_slice(), [Factor::Int(_)])
    }
}

/// `its integer scalar parameters: m, n, k` (or that it has none).
fn int_params(k: &kir::ir::Kernel) -> String {
    let names: Vec<String> = k
        .params
        .iter()
        .filter(|p| matches!(k.value(**p).ty, kir::ir::Type::Scalar(t) if t.is_int()))
        .map(|p| k.value(*p).name.to_string())
        .collect();
    if names.is_empty() {
        "it has no integer scalar parameter".into()
    } else {
        format!("its integer scalar parameters: {}", names.join(", "))
    }
}

/// TFLOP/s with three significant digits (at least one decimal).
fn tflops(flops: u128, median_ms: f64) -> Option<String> {
    if median_ms <= 0.0 || !median_ms.is_finite() {
        return None;
    }
    let x = flops as f64 / (median_ms * 1e-3) / 1e12;
    let decimals = if x <= 0.0 || !x.is_finite() { 1 } else { (2 - x.log10().floor() as i32).clamp(1, 9) as usize };
    Some(format!("{x:.decimals$}"))
}

/// `grid(4,4) block(16,16)` (trailing 1s dropped), with `shared=N` when there is some.
fn shape(l: &Launch) -> String {
    let dims = |d: (u32, u32, u32)| match d {
        (x, 1, 1) => format!("{x}"),
        (x, y, 1) => format!("{x},{y}"),
        (x, y, z) => format!("{x},{y},{z}"),
    };
    let shared = if l.dynamic_shared_bytes > 0 { format!(" shared={}", l.dynamic_shared_bytes) } else { String::new() };
    format!("grid({}) block({}){shared}", dims(l.grid), dims(l.block))
}

fn launch_of(grid: [u32; 3], block: [u32; 3], shared: u32) -> Launch {
    Launch { grid: (grid[0], grid[1], grid[2]), block: (block[0], block[1], block[2]), dynamic_shared_bytes: shared }
}

/// Whether a GPU must be used (no fallback to the emulated driver).
fn gpu_required(a: &Args) -> bool {
    a.gpu.required()
}

/// Without any CUDA driver and with `KIR_CUDA_DRIVER` unset, runs this command again on kir's
/// emulated driver and returns its exit status; `None` when a driver is there (or one was chosen).
fn rerun_on_emulated_driver(a: &Args) -> Option<ExitCode> {
    let var = kir::ptx::driver_lib::ENV_VAR;
    if std::env::var_os(var).is_some_and(|v| !v.is_empty()) {
        return None;
    }
    match kir::ptx::gpu::driver() {
        Err(GpuError::NoDriver) => {}
        _ => return None,
    }
    if gpu_required(a) {
        eprintln!(
            "error: no CUDA driver found (libcuda could not be loaded); a GPU is required (--require-gpu or KIR_REQUIRE_GPU=1)"
        );
        return Some(ExitCode::from(1));
    }
    eprintln!(
        "note: no CUDA driver found (libcuda could not be loaded): timing on kir's emulated CUDA driver \
         ({var}=emu) instead; its times are CPU times of the PTX emulator, not GPU times (--require-gpu to fail instead)"
    );
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find the kir executable to run on the emulated driver: {e}; run with {var}=emu");
            return Some(ExitCode::from(1));
        }
    };
    match std::process::Command::new(exe).args(std::env::args_os().skip(1)).env(var, "emu").status() {
        Ok(s) => Some(ExitCode::from(s.code().map_or(1, |c| c.clamp(0, 255) as u8))),
        Err(e) => {
            eprintln!("error: cannot run kir on the emulated driver: {e}; run with {var}=emu");
            Some(ExitCode::from(1))
        }
    }
}

pub fn run(a: &Args) -> ExitCode {
    if a.reps == 0 {
        return usage("--reps must be at least 1");
    }
    let flops = match a.flops.as_deref().map(Flops::parse).transpose() {
        Ok(f) => f,
        Err(e) => return usage(e),
    };
    // `@KERNEL` and `NAME=VALUE` given as positional arguments.
    let mut kernel = a.target.kernel.clone();
    let mut arg_texts = a.target.args.clone();
    for r in &a.rest {
        if let Some(k) = r.strip_prefix('@') {
            match &kernel {
                Some(other) if other.trim_start_matches('@') != k => {
                    return usage(format!("two kernels named: `@{}` and `{r}`", other.trim_start_matches('@')))
                }
                _ => kernel = Some(k.to_string()),
            }
        } else if r.contains('=') {
            arg_texts.push(r.clone());
        } else {
            return usage(format!("`{r}`: expected @KERNEL or a kernel argument NAME=VALUE"));
        }
    }
    let loaded = match common::load_checked(&a.file) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let cases = match cases(a, &loaded, kernel.as_deref(), &arg_texts) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // The pipeline, then the arguments bound to the kernels it produced.
    let passes = a.passes.as_deref().unwrap_or(kir::passes::DEFAULT_PIPELINE);
    let pipeline = match kir::passes::parse_pipeline(passes) {
        Ok(p) => p,
        Err(e) => return usage(format!("--passes: {e}")),
    };
    let run_cfg = kir::passes::RunConfig::default();
    let optimized = match kir::passes::run_pipeline(loaded.module.clone(), &pipeline, &run_cfg, &mut std::io::sink()) {
        Ok((m, _)) => m,
        Err(e) => {
            eprintln!("error: --passes `{passes}`: {e}");
            loaded.emit(e.diagnostics());
            return ExitCode::from(1);
        }
    };
    let base_dir = std::path::Path::new(&a.file).parent().map(std::path::Path::to_path_buf);
    let mut bound = Vec::new();
    for case in cases {
        match bind(&optimized, case, base_dir.as_deref(), flops.as_ref()) {
            Ok(b) => bound.push(b),
            Err(code) => return code,
        }
    }
    if let Some(code) = rerun_on_emulated_driver(a) {
        return code;
    }
    let mut runner = match GpuRunner::new(a.gpu.device) {
        Ok(r) => r,
        Err(e @ GpuError::NoDevice) => {
            eprintln!("error: {e} (device {} asked for; `kir devices` lists them)", a.gpu.device);
            return ExitCode::from(1);
        }
        Err(e) => {
            eprintln!("error: GPU: {e}");
            return ExitCode::from(1);
        }
    };
    let device = runner.device_name().unwrap_or_else(|_| "?".into());
    let emulated = kir::ptx::gpu::is_emulated_device(&device);
    let cc = match runner.compute_capability() {
        Ok(cc) => cc,
        Err(e) => {
            eprintln!("error: GPU: {e}");
            return ExitCode::from(1);
        }
    };
    let sm = match gpu_exec::sm_for(cc) {
        Ok(sm) => sm,
        Err(e) => {
            eprintln!("error: GPU: {e}");
            return ExitCode::from(1);
        }
    };
    let cuda = match &a.cuda {
        Some(path) => match compile_cuda(path, cc, &a.nvrtc_opts) {
            Ok(mut c) => match load_cuda(&mut runner, &mut c, emulated) {
                Ok(()) => Some(c),
                Err(e) => {
                    eprintln!("error: {path}: {e}");
                    return ExitCode::from(1);
                }
            },
            Err(code) => return code,
        },
        None => None,
    };

    if emulated {
        println!(
            "device {}: {device}, emulated: every time below is CPU wall time of kir's PTX emulator, not GPU time (GB/s and % of copy rate: n/a{})",
            a.gpu.device,
            if flops.is_some() { "; TFLOP/s: n/a" } else { "" }
        );
    } else {
        println!("device {}: {device} (sm_{}{})", a.gpu.device, cc.0, cc.1);
    }
    let shown_passes = if passes.trim().is_empty() { "none" } else { passes };
    println!("kir: {}, passes {shown_passes}, {} PTX", a.file, sm.name());
    if let Some(c) = &cuda {
        println!("cuda: {}, NVRTC {}, {}", c.path, c.version, c.options.join(" "));
        if let Some(note) = &c.note {
            println!("  note: {note}");
        }
    }
    println!(
        "timing: CUDA events; per launch {} untimed (warm-up) and {} timed runs; median [min .. max]",
        a.warmup, a.reps
    );
    let mut ptx_cache: HashMap<String, String> = HashMap::new();
    let mut twinned = 0;
    for b in &bound {
        let k = &b.case.kernel;
        let Some(kernel) = optimized.kernel(k) else {
            return common::file_error(&loaded.path, format!("no kernel `@{k}`"));
        };
        if !ptx_cache.contains_key(k) {
            match gpu_exec::ptx_in_module(&optimized, kernel, sm) {
                Ok(p) => ptx_cache.insert(k.clone(), p),
                Err(e) => {
                    eprintln!("error: @{k}: PTX emission failed: {e}");
                    return ExitCode::from(1);
                }
            };
        }
        let ptx = &ptx_cache[k];
        let at = b.case.line.map(|l| format!(" (line {l})")).unwrap_or_default();
        println!();
        let flop_note = match (b.flops, &flops) {
            (Some(n), Some(f)) if f.is_literal() => format!("; {n} flop (--flops)"),
            (Some(n), Some(f)) => format!("; {n} flop (--flops {})", f.text),
            _ => String::new(),
        };
        println!("@{k} {}{at}: {} bytes ({}){flop_note}", shape(&b.case.launch), b.bytes, b.bytes_how);
        let label = if emulated { "  [CPU time of the PTX emulator, not GPU time]" } else { "" };
        let kir_times = match time(&mut runner, ptx, &kir::api::ptx_entry_name(k), b, a) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: @{k} {}{at}: {e}", shape(&b.case.launch));
                return ExitCode::from(1);
            }
        };
        let copy = if emulated || b.bytes == 0 {
            None
        } else {
            let n = (b.bytes / 2).clamp(4096, 256 << 20) as usize;
            match runner.time_device_copy(n, a.warmup, a.reps).map(|t| Times::of(&t)) {
                Ok(Some(t)) => gb_per_s(2 * n as u64, t.median).map(|rate| (n, t, rate)),
                Ok(None) => None,
                Err(e) => {
                    eprintln!("error: timing the device-to-device copy: {e}");
                    return ExitCode::from(1);
                }
            }
        };
        let rates = |t: &Times| -> String {
            let tf = match b.flops {
                None => String::new(),
                Some(_) if emulated => "  TFLOP/s n/a".into(),
                Some(n) => match tflops(n, t.median) {
                    Some(x) => format!("  {x} TFLOP/s"),
                    None => "  TFLOP/s n/a (no time)".into(),
                },
            };
            if emulated {
                return format!("  GB/s n/a  % of copy rate n/a{tf}");
            }
            let mem = match (gb_per_s(b.bytes, t.median), &copy) {
                (Some(g), Some((_, _, rate))) => format!("  {g:.1} GB/s  {:.1}% of copy rate", 100.0 * g / rate),
                (Some(g), None) => format!("  {g:.1} GB/s  % of copy rate n/a"),
                (None, _) => "  GB/s n/a (no buffer)  % of copy rate n/a".into(),
            };
            format!("{mem}{tf}")
        };
        println!("  kir   {}{}{label}", kir_times.describe(), rates(&kir_times));
        if let Some((n, t, rate)) = &copy {
            println!(
                "  copy  {}  {rate:.1} GB/s  (device-to-device memcpy of {n} bytes, {} read + written)",
                t.describe(),
                2 * n
            );
        }
        let Some(c) = &cuda else { continue };
        let entry = a.cuda_kernel.clone().unwrap_or_else(|| k.clone());
        if !c.entries.contains(&entry) {
            let have = if c.entries.is_empty() { "none".to_string() } else { c.entries.join(", ") };
            let why = format!(
                "no kernel `{entry}` in NVRTC's PTX of {} (kernels there: {have}); declare it `extern \"C\"` or name it with --cuda-kernel",
                c.path
            );
            // Directives of several kernels: a kernel without a twin is reported and skipped.
            if b.case.line.is_some() && a.cuda_kernel.is_none() {
                println!("  cuda  n/a: {why}");
                continue;
            }
            eprintln!("error: {why}");
            return ExitCode::from(1);
        }
        twinned += 1;
        let cuda_times = match time(&mut runner, &c.ptx, &entry, b, a) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: {} `{entry}` {}{at}: {e}", c.path, shape(&b.case.launch));
                return ExitCode::from(1);
            }
        };
        println!("  cuda  {}{}{label}", cuda_times.describe(), rates(&cuda_times));
        let ratio = kir_times.median / cuda_times.median;
        let verdict = if ratio > 1.0 {
            "kir slower"
        } else if ratio < 1.0 {
            "kir faster"
        } else {
            "the same"
        };
        println!("  kir/cuda {ratio:.2} ({verdict}{})", if emulated { "; emulator CPU times" } else { "" });
        match agreement(&mut runner, &optimized.funcs, kernel, ptx, &c.ptx, &entry, b) {
            Ok(line) => println!("  outputs: {line}"),
            Err(e) => {
                eprintln!("error: comparing the outputs of kir and CUDA: {e}");
                return ExitCode::from(1);
            }
        }
    }
    if let (Some(c), 0) = (&cuda, twinned) {
        eprintln!("error: {}: none of the timed kernels has a twin there (see the `cuda  n/a` lines)", c.path);
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// The launches to time: the one given on the command line, or the file's `; run:` directives.
fn cases(
    a: &Args,
    loaded: &common::Loaded<Checked>,
    kernel: Option<&str>,
    arg_texts: &[String],
) -> Result<Vec<Case>, ExitCode> {
    let explicit = a.target.grid.is_some() || a.target.block.is_some() || !arg_texts.is_empty() || a.target.shared != 0;
    if explicit {
        let k = common::select_kernel(loaded, kernel)?;
        let (Some(grid), Some(block)) = (&a.target.grid, &a.target.block) else {
            return Err(usage("a launch given on the command line needs --grid and --block (without a launch, the file's `; run:` directives are timed)"));
        };
        let (grid, block) = match (parse_dims(grid, "grid"), parse_dims(block, "block")) {
            (Ok(g), Ok(b)) => (g, b),
            (Err(e), _) | (_, Err(e)) => return Err(usage(e)),
        };
        let named = common::named_args(arg_texts).map_err(usage)?;
        return Ok(vec![Case {
            kernel: k.name.to_string(),
            launch: launch_of(grid, block, a.target.shared),
            named,
            line: None,
        }]);
    }
    if let Some(k) = kernel {
        common::select_kernel(loaded, Some(k))?;
    }
    let directives = parse_directives(&loaded.source).map_err(|errs| {
        for e in errs {
            eprintln!("error: {}:{}: {}", loaded.path, e.line, e.message);
        }
        ExitCode::from(1)
    })?;
    let wanted = kernel.map(|k| k.trim_start_matches('@'));
    let mut out = Vec::new();
    let mut graphs = 0;
    for d in &directives.runs {
        if loaded.module.kernel(&d.target).is_none() {
            graphs += 1;
            continue;
        }
        if wanted.is_some_and(|w| w != d.target) {
            continue;
        }
        let (Some(grid), Some(block)) = (d.grid, d.block) else { continue };
        let named = d
            .args
            .iter()
            .map(|(n, v)| args::parse_arg_spec(v).map(|s| (n.clone(), s)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| common::file_error(&format!("{}:{}", loaded.path, d.line), e))?;
        out.push(Case {
            kernel: d.target.clone(),
            launch: launch_of(grid, block, d.shared_bytes),
            named,
            line: Some(d.line),
        });
    }
    if graphs > 0 && out.is_empty() {
        eprintln!("note: {graphs} `; run:` directive(s) of launch graphs skipped: kir bench times kernels");
    }
    if out.is_empty() {
        let of = wanted.map(|w| format!(" for @{w}")).unwrap_or_default();
        return Err(usage(format!(
            "{}: no launch to time: no `; run:` directive of a kernel{of}; give one with --grid, --block and the arguments (NAME=VALUE)",
            loaded.path
        )));
    }
    Ok(out)
}

/// Binds a case's arguments to its kernel in `m` and counts the bytes it moves.
fn bind(m: &Checked, case: Case, base_dir: Option<&std::path::Path>, flops: Option<&Flops>) -> Result<Bound, ExitCode> {
    let Some(k) = m.kernel(&case.kernel) else {
        return Err(usage(format!("no kernel `@{}`", case.kernel)));
    };
    let at = case.line.map(|l| format!(" (line {l})")).unwrap_or_default();
    let b = args::bind(k, &case.named, base_dir).map_err(|e| usage(format!("@{}{at}: {e}", case.kernel)))?;
    let access = kir::ir::analysis::effects::param_access(k);
    let mut bytes = 0u64;
    let mut how = Vec::new();
    let mut buffer_names = vec![String::new(); b.buffers.len()];
    for (i, p) in k.params.iter().enumerate() {
        let Some(bi) = b.param_buffer[i] else { continue };
        let name = k.value(*p).name.to_string();
        let size = b.buffers[bi].bytes.len() as u64;
        let acc = access.get(i).copied().unwrap_or_default();
        let verb = match (acc.read, acc.write) {
            (true, true) => "read + written",
            (true, false) => "read",
            (false, true) => "written",
            (false, false) => "unused",
        };
        bytes += size * (acc.read as u64 + acc.write as u64);
        how.push(format!("{name} {size} {verb}"));
        buffer_names[bi] = name;
    }
    let bytes_how = if how.is_empty() { "no buffer arguments".into() } else { how.join(", ") };
    let flops = match flops {
        Some(f) => Some(f.eval(k, &b.args).map_err(|e| usage(format!("@{}{at}: {e}", case.kernel)))?),
        None => None,
    };
    Ok(Bound { case, args: b.args, buffers: b.buffers, bytes, bytes_how, buffer_names, flops })
}

/// The device parameters of a bound launch.
fn params(b: &Bound) -> Vec<Param> {
    b.args
        .iter()
        .map(|a| match *a {
            Arg::Scalar(c) => {
                let n = if c.ty.is_pred() { 1 } else { (c.ty.bytes() as usize).min(8) };
                Param::Scalar(c.bits.to_le_bytes()[..n].to_vec())
            }
            Arg::Buffer(i) => Param::Buffer(i),
        })
        .collect()
}

/// Times `entry` of `ptx` on a bound launch (its initial buffers).
fn time(runner: &mut GpuRunner, ptx: &str, entry: &str, b: &Bound, a: &Args) -> Result<Times, GpuError> {
    let contents: Vec<Vec<u8>> = b.buffers.iter().map(|x| x.bytes.clone()).collect();
    let t = runner.time_launches(ptx, entry, b.case.launch, &contents, &params(b), a.warmup, a.reps)?;
    Times::of(&t).ok_or_else(|| GpuError::Invalid("no timing came back (every event time was NaN)".into()))
}

/// Runs kir's and CUDA's kernels once each from the same initial buffers and says whether every
/// buffer agrees under the tolerance `kir diff` derives for the kir kernel.
fn agreement(
    runner: &mut GpuRunner,
    funcs: &[kir::ir::Kernel],
    k: &kir::ir::Kernel,
    kir_ptx: &str,
    cuda_ptx: &str,
    entry: &str,
    b: &Bound,
) -> Result<String, String> {
    let contents: Vec<Vec<u8>> = b.buffers.iter().map(|x| x.bytes.clone()).collect();
    let p = params(b);
    let kir_out = runner
        .run(kir_ptx, &kir::api::ptx_entry_name(&k.name), b.case.launch, &contents, &p)
        .map_err(|e| e.to_string())?;
    let cuda_out = runner.run(cuda_ptx, entry, b.case.launch, &contents, &p).map_err(|e| e.to_string())?;
    let (tol, _) = kir_harness::tolerance::derived_tolerance_explained(funcs, k);
    let mut differing = Vec::new();
    for (i, (x, y)) in kir_out.into_iter().zip(cuda_out).enumerate() {
        let (mut bx, mut by) = (b.buffers[i].clone(), b.buffers[i].clone());
        bx.bytes = x;
        by.bytes = y;
        let c = compare_buffers(&bx, &by, Strictness::Within(tol), 1);
        if let Some(s) = c.structural {
            differing.push(format!("%{} ({s})", b.buffer_names[i]));
        } else if !c.is_match() {
            differing.push(format!("%{} ({} of {} elements)", b.buffer_names[i], c.count, bx.len()));
        }
    }
    Ok(if differing.is_empty() {
        format!("kir and CUDA agree (every buffer, tolerance {tol})")
    } else {
        format!(
            "WARNING: kir and CUDA differ (tolerance {tol}): {}; the two may not compute the same thing",
            differing.join(", ")
        )
    })
}

/// A CUDA C file compiled by NVRTC.
struct Cuda {
    path: String,
    version: String,
    options: Vec<String>,
    ptx: String,
    /// The `.entry` names of the PTX.
    entries: Vec<String>,
    /// What was done to the PTX for the driver to load it.
    note: Option<String>,
}

/// The `.version` operand of PTX text (`8.8`).
fn ptx_version(ptx: &str) -> Option<&str> {
    ptx.lines().find_map(|l| l.trim().strip_prefix(".version")).map(str::trim)
}

/// Loads NVRTC's PTX into the runner. A PTX ISA version newer than the driver accepts (NVRTC newer
/// than the driver) is an error that says so on a GPU; on the emulated driver, whose newest PTX
/// ISA is that of the CUDA release it imitates, the `.version` line is lowered to the version the
/// driver names (the emulator parses the instructions themselves and rejects what it does not
/// know), and the header says so.
fn load_cuda(runner: &mut GpuRunner, c: &mut Cuda, emulated: bool) -> Result<(), String> {
    let (error, log) = match runner.load(&c.ptx) {
        Ok(_) => return Ok(()),
        Err(GpuError::ModuleRejected { error, log }) => (error, log),
        Err(e) => return Err(e.to_string()),
    };
    let old = ptx_version(&c.ptx).unwrap_or("?").to_string();
    let newest = log.split("current version is '").nth(1).and_then(|r| r.split('\'').next()).map(str::to_string);
    match newest {
        Some(v) if error.contains("UNSUPPORTED_PTX_VERSION") && emulated => {
            c.ptx = c.ptx.replacen(&format!(".version {old}"), &format!(".version {v}"), 1);
            c.note = Some(format!(
                "NVRTC {}'s `.version {old}` lowered to {v}, the newest the emulated driver loads",
                c.version
            ));
            runner.load(&c.ptx).map(|_| ()).map_err(|e| e.to_string())
        }
        Some(v) if error.contains("UNSUPPORTED_PTX_VERSION") => Err(format!(
            "the CUDA driver cannot load NVRTC {}'s PTX (.version {old}; the driver takes at most {v}): \
             update the driver, or use an NVRTC no newer than it (KIR_NVRTC=PATH)",
            c.version
        )),
        _ => Err(GpuError::ModuleRejected { error, log }.to_string()),
    }
}

fn compile_cuda(path: &str, cc: (i32, i32), extra: &[String]) -> Result<Cuda, ExitCode> {
    let src = common::read_source(path)?;
    let (nv, _) = Nvrtc::find_and_load().map_err(|e| {
        eprintln!("error: --cuda {path}: {e}");
        ExitCode::from(1)
    })?;
    let mut options = vec![format!("--gpu-architecture=compute_{}{}", cc.0, cc.1)];
    options.extend(extra.iter().cloned());
    let opts: Vec<&str> = options.iter().map(String::as_str).collect();
    let name = std::path::Path::new(path).file_name().map_or(path.to_string(), |n| n.to_string_lossy().into_owned());
    let ptx = nv.compile(&src, &name, &opts).map_err(|log| {
        eprintln!("error: {path}: NVRTC could not compile it ({}):\n{}", options.join(" "), log.trim_end());
        ExitCode::from(1)
    })?;
    let entries = ptx
        .lines()
        .filter_map(|l| l.split(".entry ").nth(1))
        .map(|rest| rest.split(['(', ' ']).next().unwrap_or("").trim().to_string())
        .filter(|e| !e.is_empty())
        .collect();
    Ok(Cuda { path: path.to_string(), version: nv.version(), options, ptx, entries, note: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flops_expressions_parse_to_integers_and_names() {
        let f = Flops::parse("2*4096*4096*4096").unwrap();
        assert!(!f.is_literal());
        assert_eq!(f.factors, vec![Factor::Int(2), Factor::Int(4096), Factor::Int(4096), Factor::Int(4096)]);
        assert!(Flops::parse(" 68719476736 ").unwrap().is_literal());
        let f = Flops::parse("2 * %m * n.rows *k").unwrap();
        assert_eq!(
            f.factors,
            vec![Factor::Int(2), Factor::Name("m".into()), Factor::Name("n.rows".into()), Factor::Name("k".into())]
        );
        for (bad, want) in [
            ("", "empty expression"),
            ("  ", "empty expression"),
            ("2**m", "a factor is missing"),
            ("*m", "a factor is missing"),
            ("m*", "a factor is missing"),
            ("m+1", "`m+1` is neither an integer nor an argument name"),
            ("2.5*m", "`2.5` is neither"),
            ("-2*m", "`-2` is neither"),
            ("1e9", "`1e9` is neither"),
            ("%", "`%` is neither"),
            ("9999999999999999999999999999999999999999", "too large"),
        ] {
            let e = Flops::parse(bad).unwrap_err();
            assert!(e.contains(want), "{bad:?}: {e}");
        }
    }

    #[test]
    fn tflops_is_flops_over_the_median_with_three_significant_digits() {
        // 2 * 4096^3 flop in 2.660 ms (cuBLAS f32 on the H100, BENCHMARKS.md): 51.7 TFLOP/s.
        assert_eq!(tflops(2 * 4096u128.pow(3), 2.660).as_deref(), Some("51.7"));
        assert_eq!(tflops(2 * 4096u128.pow(3), 16.866).as_deref(), Some("8.15"));
        assert_eq!(tflops(2 * 4096u128.pow(3), 0.5).as_deref(), Some("274.9"));
        assert_eq!(tflops(30, 0.001).as_deref(), Some("0.0000300"));
        assert_eq!(tflops(1, 0.0), None);
        assert_eq!(tflops(1, f64::NAN), None);
    }
}
