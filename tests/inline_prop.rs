//! Properties of device functions and inlining on generated modules
//! ([`kir_ir::generate::generate_module`]: a kernel and 0 to N functions, with results and
//! without, pointer parameters, barriers, full-mask shuffles and votes, early returns, calls in
//! loops and under uniform and thread-dependent branches).
//!
//! For each of [`MODULES`] modules (several generator settings in turn, including one that calls
//! functions with barriers from thread-dependent branches, so that some launches fault):
//! - Round trip: `parse(print(m))` is structurally equal to `m` with every body compacted; the
//!   same for the inlined module.
//! - `inline_module` succeeds, leaves no call, and its output passes `verify_module`.
//! - Barrier verification across calls (`kir_ir::verify::check_barriers`) accepts the module exactly when
//!   barrier verification accepts the inlined kernel.
//! - Interpreter: the kernel run as written, calls executed with a call stack
//!   (`kir_interp::launch_verified` on the verified module), and the inlined kernel give
//!   bit-identical buffers on every one of [`LAUNCHES`] launches (the launch contract with race
//!   and uninitialized-read detection, then random block and grid sizes and `%n`, some with fewer
//!   slots than threads), or both fail with the same error kind (a barrier divergence, a divergent
//!   collective...); the test requires that some launches do fault that way.
//!
//! Bounded for CI: [`MODULES`] × [`LAUNCHES`] = 1,200 launches of each form, a few seconds in the
//! test profile on 2 cores. `PROPTEST_CASES=N` sets the number of modules instead (for a longer
//! local run).

use kir_interp::{Arg, Buffer, ErrorKind, LaunchConfig, Options};
use kir_ir::diag::has_errors;
use kir_ir::generate::{generate_module, GenConfig, Rng};
use kir_ir::{Constant, Kernel, Module, ScalarType};
mod verified_launch;
use verified_launch::{launch, launch_in};

/// Modules generated (unless `PROPTEST_CASES` says otherwise).
const MODULES: u64 = 400;
/// Launches per module, each run as written and inlined.
const LAUNCHES: u64 = 3;

fn modules() -> u64 {
    std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(MODULES)
}

/// The generator settings for `seed`: five in turn.
fn config(seed: u64) -> GenConfig {
    let d = GenConfig::with_funcs();
    match seed % 5 {
        0 => d,
        // Calls of functions with barriers and collectives under thread-dependent branches.
        1 => GenConfig { allow_divergent_barriers: true, insts: 100, ..d },
        // Many small functions, called often.
        2 => GenConfig { max_funcs: 6, func_insts: 12, call_percent: 25, insts: 60, ..d },
        // Larger functions, no loops in the kernel's own code paths, narrow and wide types.
        3 => GenConfig {
            func_insts: 40,
            allow_loops: seed % 2 == 0,
            types: vec![ScalarType::U8, ScalarType::S16, ScalarType::F16, ScalarType::F64, ScalarType::S64],
            ..d
        },
        // Uniform control flow only, lots of constants (constant arguments).
        _ => GenConfig { divergent_branches: false, divergent_loops: false, const_percent: 60, ..d },
    }
}

fn compacted(m: &Module) -> Module {
    let mut c = m.clone();
    c.bodies_mut().for_each(Kernel::compact);
    c
}

fn round_trips(m: &Module, what: &str, seed: u64) {
    let text = kir_ir::print_module(m);
    let back = kir_ir::parse(&text).unwrap_or_else(|d| panic!("seed {seed}: {what} does not parse: {d:?}\n{text}"));
    assert!(back.structurally_eq(&compacted(m)), "seed {seed}: {what} does not round-trip:\n{text}");
}

/// One launch's shape, `%n` and buffers.
struct Case {
    cfg: LaunchConfig,
    n: u32,
    buffers: Vec<Buffer>,
    opts: Options,
}

fn case(rng: &mut Rng, i: u64) -> Case {
    let checks = i == 0;
    let (grid, block) = if checks { (2, 64) } else { (1 + rng.below(3) as u32, 32 * (1 + rng.below(4) as u32)) };
    let threads = grid * block;
    // %n: the contract's one slot per thread, or (in a third of the later launches) fewer slots
    // than threads, so that threads share slots: still deterministic in the interpreter.
    let n = if !checks && rng.chance(33) { 1 + rng.below(threads as u64) as u32 } else { threads };
    let ins: Vec<u64> = (0..n).map(|_| rng.next_u64() & 0xffff_ffff).collect();
    let fins: Vec<u64> = (0..n).map(|_| kir_ir::generate::random_constant(rng, ScalarType::F32).bits).collect();
    let buffers = vec![
        Buffer::from_bits(ScalarType::U32, ins),
        Buffer::from_bits(ScalarType::F32, fins),
        Buffer::zeros(ScalarType::U32, n as usize),
        Buffer::zeros(ScalarType::F32, n as usize),
    ];
    let opts = Options { races: checks, uninit: checks, threads: Some(1), ..Options::default() }.with_fuel(1 << 24);
    Case { cfg: LaunchConfig::linear(grid, block), n, buffers, opts }
}

type Outcome = Result<Vec<Buffer>, (ErrorKind, String)>;

fn run(funcs: Option<&[Kernel]>, k: &Kernel, c: &Case) -> Outcome {
    let mut buffers = c.buffers.clone();
    let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::Buffer(3), Arg::Scalar(Constant::u32(c.n))];
    let r = match funcs {
        Some(f) => launch_in(f, k, &c.cfg, &args, &mut buffers, &c.opts),
        None => launch(k, &c.cfg, &args, &mut buffers, &c.opts),
    };
    r.map(|_| buffers).map_err(|e| (e.kind, e.message))
}

#[test]
fn inlining_preserves_what_the_interpreter_computes() {
    let (mut with_calls, mut launches, mut faults, mut accepted) = (0u64, 0u64, 0u64, 0u64);
    let mut failures = vec![];
    for seed in 0..modules() {
        let g = generate_module(seed, &config(seed));
        let m = &g.module;
        let diags = kir_ir::verify::verify_module(m);
        assert!(!has_errors(&diags), "seed {seed}: {diags:?}\n{}", kir_ir::print_module(m));
        round_trips(m, "the module", seed);
        let mut flat = m.clone();
        kir_ir::inline::inline_module(&mut flat).unwrap_or_else(|d| panic!("seed {seed}: inlining fails: {d:?}"));
        let diags = kir_ir::verify::verify_module(&flat);
        assert!(!has_errors(&diags), "seed {seed}: the inlined module: {diags:?}\n{}", kir_ir::print_module(&flat));
        assert!(!flat.has_calls(), "seed {seed}");
        round_trips(&flat, "the inlined module", seed);
        let k = &m.kernels[0];
        let fk = &flat.kernels[0];
        // Barrier verification across calls is verification of the inlined kernel.
        let across = verify_module_barriers(m).is_empty();
        let of_inlined = verify_barriers(fk).is_empty();
        assert_eq!(
            across,
            of_inlined,
            "seed {seed}: across calls {across}, inlined {of_inlined}\n{}",
            kir_ir::print_module(m)
        );
        accepted += across as u64;
        if m.has_calls() {
            with_calls += 1;
        }
        let mut rng = Rng::new(seed ^ 0x1a11_7e57);
        for i in 0..LAUNCHES {
            let c = case(&mut rng, i);
            launches += 1;
            let written = run(Some(&m.funcs), k, &c);
            let inlined = run(None, fk, &c);
            let shape = format!("grid({}) block({}) n={}", c.cfg.grid[0], c.cfg.block[0], c.n);
            match (&written, &inlined) {
                (Ok(a), Ok(b)) => {
                    if a != b {
                        let which: Vec<usize> = (0..a.len()).filter(|&j| a[j] != b[j]).collect();
                        failures.push(format!("seed {seed} {shape}: buffers {which:?} differ"));
                    }
                }
                (Err((ka, ma)), Err((kb, mb))) => {
                    faults += 1;
                    if ka != kb {
                        failures.push(format!("seed {seed} {shape}: as written {ka:?} ({ma}), inlined {kb:?} ({mb})"));
                    }
                }
                _ => failures.push(format!(
                    "seed {seed} {shape}: as written {:?}, inlined {:?}",
                    written.as_ref().err(),
                    inlined.as_ref().err()
                )),
            }
        }
        if failures.len() >= 5 {
            break;
        }
    }
    eprintln!(
        "{} modules ({with_calls} with calls, {accepted} accepted by barrier verification), {launches} launches each way, \
         {faults} of them faulting the same way in both",
        modules()
    );
    assert!(failures.is_empty(), "as written vs inlined:\n{}", failures.join("\n"));
    assert!(with_calls > modules() / 2, "too few modules with calls: {with_calls}");
    assert!(faults > 0, "no launch faulted: divergent calls are not exercised");
}

/// Barrier verification of a module (`kir_ir::verify::check_barriers`), following calls.
fn verify_module_barriers(m: &kir_ir::Module) -> Vec<kir_ir::Diagnostic> {
    kir_ir::verify::check_barriers(m, |_| None)
}

/// Barrier verification of a module holding only `k`.
fn verify_barriers(k: &kir_ir::Kernel) -> Vec<kir_ir::Diagnostic> {
    verify_module_barriers(&kir_ir::Module { kernels: vec![k.clone()], ..kir_ir::Module::default() })
}
