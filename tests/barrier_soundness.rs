//! Soundness of barrier verification against the interpreter, on random kernels.
//!
//! The kernel generator (`kir_ir::generate`) is asked for kernels with shared memory, barriers, warp
//! collectives, loops and thread-dependent branches, and for half of them also for barriers in
//! thread-dependent control flow. For each of [`KERNELS`] kernels, [`LAUNCHES`] launches with
//! random block sizes (multiples of 32, as the generator's contract asks), grid sizes, `%n` and
//! buffer contents are interpreted: [`KERNELS`] × [`LAUNCHES`] = 8000 launches in all.
//!
//! A second test builds [`STRUCTURED_KERNELS`] = 3000 kernels as `.kir` text around exactly what
//! decides barrier uniformity (thread-dependent or uniform branches and loop trip counts, early
//! `ret`, branches on values live out of loops with a thread-dependent early exit, leader
//! broadcasts through shared memory with and without the barrier before the load, shared
//! exchanges, full-mask shuffles and votes) and launches each [`STRUCTURED_LAUNCHES`] = 3 times
//! (9000 launches). Disabling temporal divergence or the barrier-interval rule for loads in the
//! analysis makes this test fail.
//!
//! A third test builds [`STORE_LOOP_KERNELS`] = 2000 structured kernels (3 launches each, 6000)
//! that also contain loops storing to shared memory: each trip's stores followed by a barrier (the
//! shape of a reported false rejection), the barrier before the stores or none, nested store
//! loops, uniform and thread-dependent early exits, loads of a uniform slot before a trip's store,
//! and after each loop a branch on one loaded slot around a barrier. Half of them are built
//! well-formed (only correct shapes): every one of those must be accepted (precision), and no
//! accepted kernel may diverge (soundness). Disabling the load-then-store part of the rule makes
//! it fail. Races that only the "threads split at a non-uniform branch" part catches do not show
//! in the interpreter's fixed warp order, so that part is covered by unit tests
//! (`ir/src/analysis/uniformity.rs`).
//!
//! A fourth test does the first one's checks on [`MODULES`] generated modules with device
//! functions (`generate_module`): barriers (shared exchanges through a `%sm` pointer parameter,
//! plain barriers), full-mask shuffles and votes inside functions, functions calling functions,
//! early returns from functions under thread-dependent branches, and, for half of them, calls of
//! such functions under thread-dependent branches and loops. Each module is verified across calls
//! ([`kir_ir::verify::check_barriers`]) and launched [`LAUNCHES`] times with the calls executed as written
//! (`kir_interp::launch_verified`, a call stack, not inlined): 3200 launches.
//!
//! The whole file runs in a few seconds in the test profile.
//!
//! Checked:
//! - Soundness: whenever `verify_barriers` accepts a kernel, no launch reports barrier divergence
//!   or a divergent warp collective.
//! - Some rejected kernels do fault in the interpreter (so the launches exercise the property
//!   rather than pass vacuously). The generator's own count of barriers it placed in
//!   "thread-dependent" control flow is conservative (seed 339 puts one under
//!   `vote.any true, 0xffffffff`, which every lane agrees on; seed 319 under a loop parameter fed
//!   only by uniform values), so the verifier accepting such a kernel is not an error by itself:
//!   the interpreter is the judge, and the test prints how often it happens.
//! - Precision on the generator's well-synchronized kernels: a kernel generated without divergent
//!   barriers is accepted, or rejected only through the documented conservative rule for global
//!   memory (a load from global memory is varying in a kernel that also writes global memory,
//!   since pointer parameters may alias: the generator knows `%in` is never written, the verifier
//!   cannot), which its explanation must then name. The same for modules with functions.
//! - For modules, also: some rejected modules with calls of synchronizing functions under
//!   thread-dependent control flow do fault in the interpreter.

use kir_interp::{Arg, Buffer, ErrorKind, FaultKind, LaunchConfig, Options};
use kir_ir::generate::{generate, generate_module, GenConfig, Rng, SHARED_LEN};
use kir_ir::{Constant, Kernel, ScalarType};
mod verified_launch;
use verified_launch::{launch, launch_in};

/// Random kernels checked.
const KERNELS: u64 = 2000;
/// Launches (shape and inputs) per kernel.
const LAUNCHES: u64 = 4;

fn config(seed: u64) -> GenConfig {
    GenConfig {
        insts: 40 + (seed % 5) as usize * 20,
        allow_loops: true,
        divergent_loops: true,
        divergent_branches: true,
        allow_shared_barriers: true,
        allow_shuffles: true,
        allow_atomics: seed % 3 == 0,
        allow_divergent_barriers: seed % 2 == 1,
        ..GenConfig::default()
    }
}

/// Outcome of interpreting one kernel on one random launch.
enum Outcome {
    Clean,
    /// Barrier divergence or a divergent full-mask collective.
    Divergence(String),
    /// Any other failure (fuel, a fault the generator should not produce): not this test's subject.
    Other(String),
}

fn run_once(k: &kir_ir::Kernel, rng: &mut Rng) -> Outcome {
    run_once_in(&[], k, rng)
}

/// [`run_once`] for a kernel calling the functions `funcs` (executed as written, with a call stack).
fn run_once_in(funcs: &[Kernel], k: &kir_ir::Kernel, rng: &mut Rng) -> Outcome {
    let block = 32 * (1 + rng.below(4) as u32); // 32..=128, within SHARED_LEN
    assert!(block as u64 <= SHARED_LEN);
    let grid = 1 + rng.below(3) as u32;
    let threads = block * grid;
    // %n: usually one slot per thread (the generator's determinism contract), sometimes fewer or
    // more; it only moves indices around, all accesses stay in bounds (`x rem %n`).
    let n = match rng.below(4) {
        0 => 1 + rng.below(threads as u64) as u32,
        1 => threads + rng.below(64) as u32,
        _ => threads,
    };
    let ins: Vec<u64> = (0..n).map(|_| rng.next_u64() & 0xffff_ffff).collect();
    let fins: Vec<u64> =
        (0..n).map(|_| rng.next_u64() % 2000).map(|x| ((x as f32 - 1000.0) / 8.0).to_bits() as u64).collect();
    let mut buffers = vec![
        Buffer::from_bits(ScalarType::U32, ins),
        Buffer::from_bits(ScalarType::F32, fins),
        Buffer::zeros(ScalarType::U32, n as usize),
        Buffer::zeros(ScalarType::F32, n as usize),
    ];
    let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::Buffer(3), Arg::Scalar(Constant::u32(n))];
    let opts = Options { fuel: 1 << 24, threads: Some(1), ..Options::default() };
    match launch_in(funcs, k, &LaunchConfig::linear(grid, block), &args, &mut buffers, &opts) {
        Ok(_) => Outcome::Clean,
        Err(e) => match e.kind {
            ErrorKind::KernelFault(FaultKind::BarrierDivergence | FaultKind::DivergentCollective) => {
                Outcome::Divergence(format!("grid({grid}) block({block}) n={n}: {}", e.message))
            }
            _ => Outcome::Other(format!("grid({grid}) block({block}) n={n}: {:?}: {}", e.kind, e.message)),
        },
    }
}

#[test]
fn accepted_kernels_never_diverge_at_barriers() {
    let mut accepted = 0;
    let mut rejected = 0;
    let mut rejected_that_fault = 0;
    let mut with_barriers = 0;
    let mut other_failures = vec![];
    let mut unsound = vec![];
    let mut labelled_divergent = 0;
    let mut labelled_divergent_accepted = vec![];
    let mut false_positives = vec![];
    let mut rejected_by_global_rule = 0;
    for seed in 0..KERNELS {
        let cfg = config(seed);
        let g = generate(seed, &cfg);
        let k = &g.kernel;
        if g.barriers > 0 {
            with_barriers += 1;
        }
        let diags = verify_barriers(k);
        let ok = diags.is_empty();
        if ok {
            accepted += 1;
        } else {
            rejected += 1;
        }
        if g.divergent_barriers > 0 {
            labelled_divergent += 1;
            if ok {
                labelled_divergent_accepted.push(seed);
            }
        }
        if !cfg.allow_divergent_barriers && !ok {
            // Generated kernels have no source spans: the explanation's steps are then notes.
            let rule = "is loaded from global memory, which this kernel also writes";
            let by_global_rule = diags.iter().all(|d| {
                d.secondary.iter().any(|l| l.message.contains(rule)) || d.notes.iter().any(|n| n.contains(rule))
            });
            if by_global_rule {
                rejected_by_global_rule += 1;
            } else {
                false_positives.push((seed, diags[0].message.clone()));
            }
        }
        let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9) ^ 0xBA44_1E4);
        let mut faulted = false;
        for _ in 0..LAUNCHES {
            match run_once(k, &mut rng) {
                Outcome::Clean => {}
                Outcome::Divergence(msg) => {
                    faulted = true;
                    if ok {
                        unsound.push(format!("seed {seed}: {msg}\n{}", kir_ir::print_kernel(k)));
                    }
                }
                Outcome::Other(msg) => other_failures.push(format!("seed {seed}: {msg}")),
            }
        }
        if faulted && !ok {
            rejected_that_fault += 1;
        }
    }
    eprintln!(
        "{KERNELS} kernels ({with_barriers} with barriers), {} launches: {accepted} accepted, {rejected} rejected \
         ({rejected_that_fault} of them fault in the interpreter), {} other launch failures",
        KERNELS * LAUNCHES,
        other_failures.len()
    );
    eprintln!(
        "{labelled_divergent} kernels where the generator placed a barrier in control flow it calls thread-dependent; \
         accepted as uniform after all: seeds {labelled_divergent_accepted:?}"
    );
    eprintln!("{rejected_by_global_rule} well-synchronized kernels rejected through the global-memory load rule");
    for f in other_failures.iter().take(5) {
        eprintln!("  other failure: {f}");
    }
    assert!(unsound.is_empty(), "verifier accepted kernels that diverge at a barrier:\n{}", unsound.join("\n"));
    assert!(false_positives.is_empty(), "well-synchronized generated kernels were rejected for another reason than the global-memory load rule: {false_positives:?}");
    assert!(accepted > KERNELS / 3, "too few kernels accepted ({accepted}) for the property to say much");
    assert!(with_barriers > KERNELS / 3, "too few kernels with barriers ({with_barriers})");
    assert!(rejected_that_fault > 0, "no rejected kernel faulted: the launches do not exercise barrier divergence");
}

/// Structured kernels built as `.kir` text around what decides barrier uniformity: branches and
/// loops on uniform or thread-dependent values, early `ret`, values live out of loops (temporal
/// divergence), leader broadcasts through shared memory with and without a barrier before the
/// load, shared-memory exchanges, and full-mask collectives.
struct Structured {
    rng: Rng,
    lines: Vec<String>,
    next: u32,
    /// Also generate loops that store to shared memory (see [`Structured::store_loop`]).
    store_loops: bool,
    /// Store-loop kernels built to be correct (every barrier uniform, every broadcast ordered):
    /// only store loops with uniform trip counts and exits and a barrier after the stores, shared
    /// exchanges, arithmetic, collectives and global stores. The verifier must accept them all.
    well_formed: bool,
}

/// Structured kernels checked by [`structured_kernels_never_diverge_when_accepted`].
const STRUCTURED_KERNELS: u64 = 3000;
/// Launches per structured kernel.
const STRUCTURED_LAUNCHES: u64 = 3;

const UNIFORM_SOURCES: [&str; 7] = ["%n", "%ntid", "%cta", "0", "1", "3", "%ld0"];

impl Structured {
    fn fresh(&mut self, base: &str) -> String {
        self.next += 1;
        format!("{base}{}", self.next)
    }
    fn emit(&mut self, s: String) {
        self.lines.push(format!("  {s}"));
    }
    fn label(&mut self, s: String) {
        self.lines.push(s);
    }
    fn operand(&mut self, pool: &[String]) -> String {
        if self.rng.chance(40) {
            match self.rng.pick(&UNIFORM_SOURCES) {
                // Varying in a kernel that writes global memory: not for well-formed kernels.
                "%ld0" if self.well_formed => "%n".to_string(),
                s => s.to_string(),
            }
        } else {
            pool[self.rng.below(pool.len() as u64) as usize].clone()
        }
    }
    fn cond(&mut self, pool: &[String]) -> String {
        let a = self.operand(pool);
        let b = self.operand(pool);
        let c = self.fresh("%c");
        match self.rng.below(3) {
            0 => self.emit(format!("{c} = lt.u32 {a}, {b}")),
            1 => {
                let m = self.fresh("%m");
                self.emit(format!("{m} = and.u32 {a}, 1"));
                self.emit(format!("{c} = eq.u32 {m}, 0"));
            }
            _ => self.emit(format!("{c} = ne.u32 {a}, {b}")),
        }
        c
    }

    /// A sequence of statements; returns a value defined by it (for joins).
    fn body(&mut self, pool: &mut Vec<String>, depth: u32) -> String {
        let n = 1 + self.rng.below(4);
        for _ in 0..n {
            self.stmt(pool, depth);
        }
        pool[self.rng.below(pool.len() as u64) as usize].clone()
    }

    /// The statements without nested bodies: 0 barrier, 1-2 arithmetic, 3 shared exchange, 4 leader
    /// broadcast, 5 collective, 6 global store.
    fn simple_stmt(&mut self, pool: &mut Vec<String>, pick: u64) {
        match pick {
            0 => self.emit("barrier".into()),
            1 | 2 => {
                let a = self.operand(pool);
                let b = self.operand(pool);
                let v = self.fresh("%v");
                let op = self.rng.pick(&["add", "xor", "max", "mul"]);
                self.emit(format!("{v} = {op}.u32 {a}, {b}"));
                pool.push(v);
            }
            3 => {
                // Shared exchange: each thread writes its slot, reads a neighbour's.
                let a = self.operand(pool);
                let (r, r2, v) = (self.fresh("%r"), self.fresh("%r"), self.fresh("%x"));
                let k = self.rng.below(64);
                self.emit(format!("store %smp[%tid], {a}"));
                self.emit("barrier".into());
                self.emit(format!("{r} = add.u32 %tid, {k}"));
                self.emit(format!("{r2} = rem.u32 {r}, %ntid"));
                self.emit(format!("{v} = load %smp[{r2}]"));
                self.emit("barrier".into());
                pool.push(v);
            }
            4 => {
                // Leader broadcast, with or without the barrier that makes it uniform.
                let a = self.operand(pool);
                let (s, j, v) = (self.fresh("bst"), self.fresh("bj"), self.fresh("%b"));
                self.emit(format!("br %leader, {s}, {j}"));
                self.label(format!("{s}:"));
                self.emit(format!("store %bp[0], {a}"));
                self.emit(format!("jmp {j}"));
                self.label(format!("{j}:"));
                if self.rng.chance(80) {
                    self.emit("barrier".into());
                }
                self.emit(format!("{v} = load %bp[0]"));
                pool.push(v);
            }
            5 => {
                let a = self.operand(pool);
                let v = self.fresh("%s");
                match self.rng.below(3) {
                    0 => self.emit(format!("{v} = shfl.bfly.u32 {a}, 1, 0xffffffff")),
                    1 => self.emit(format!("{v} = shfl.idx.u32 {a}, 0, 0xffffffff")),
                    _ => {
                        let p = self.fresh("%q");
                        self.emit(format!("{p} = ne.u32 {a}, 0"));
                        self.emit(format!("{v} = vote.ballot {p}, 0xffffffff"));
                    }
                }
                pool.push(v);
            }
            _ => {
                let a = self.operand(pool);
                self.emit(format!("store %out[%gidn], {a}"));
            }
        }
    }

    fn stmt(&mut self, pool: &mut Vec<String>, depth: u32) {
        if self.store_loops && self.rng.chance(if self.well_formed { 60 } else { 45 }) {
            return self.store_loop(pool, depth);
        }
        if self.well_formed {
            let pick = self.rng.pick(&[1, 2, 3, 5, 6]);
            return self.simple_stmt(pool, pick);
        }
        // Store-loop kernels leave out early `ret` (9): after a thread-dependent one every later
        // barrier is (rightly) rejected, which would hide the shapes under test.
        let pick = self.rng.below(if depth == 0 {
            7
        } else if self.store_loops {
            9
        } else {
            10
        });
        if pick < 7 {
            return self.simple_stmt(pool, pick);
        }
        match pick {
            7 => {
                // if/else with a join parameter.
                let c = self.cond(pool);
                let (t, e, j, p) = (self.fresh("then"), self.fresh("else"), self.fresh("join"), self.fresh("%p"));
                self.emit(format!("br {c}, {t}, {e}"));
                self.label(format!("{t}:"));
                let mut tp = pool.clone();
                let vt = self.body(&mut tp, depth - 1);
                self.emit(format!("jmp {j}({vt})"));
                self.label(format!("{e}:"));
                let mut ep = pool.clone();
                let ve = self.body(&mut ep, depth - 1);
                self.emit(format!("jmp {j}({ve})"));
                self.label(format!("{j}({p}: u32):"));
                pool.push(p);
            }
            8 => {
                // Counted loop (at most 3 trips), maybe with an early exit; %i and %acc are
                // used after it.
                let a = self.operand(pool);
                let init = self.operand(pool);
                let (bound, h, b, x) =
                    (self.fresh("%bound"), self.fresh("head"), self.fresh("body"), self.fresh("exit"));
                let (i, acc, more) = (self.fresh("%i"), self.fresh("%acc"), self.fresh("%more"));
                self.emit(format!("{bound} = and.u32 {a}, 3"));
                self.emit(format!("jmp {h}(0, {init})"));
                self.label(format!("{h}({i}: u32, {acc}: u32):"));
                self.emit(format!("{more} = lt.u32 {i}, {bound}"));
                self.emit(format!("br {more}, {b}, {x}"));
                self.label(format!("{b}:"));
                let mut bp = pool.clone();
                bp.push(i.clone());
                bp.push(acc.clone());
                let v = self.body(&mut bp, depth - 1);
                let (acc2, i2) = (self.fresh("%acc"), self.fresh("%i"));
                self.emit(format!("{acc2} = add.u32 {acc}, {v}"));
                self.emit(format!("{i2} = add.u32 {i}, 1"));
                let early_exit = self.rng.chance(40);
                if early_exit {
                    let c = self.cond(&bp);
                    self.emit(format!("br {c}, {x}, {h}({i2}, {acc2})"));
                } else {
                    self.emit(format!("jmp {h}({i2}, {acc2})"));
                }
                self.label(format!("{x}:"));
                if early_exit && self.rng.chance(50) {
                    // A barrier only for threads that left before the last trip: uniform exactly
                    // when the early exit is.
                    let (f, a, j) = (self.fresh("%f"), self.fresh("early"), self.fresh("ej"));
                    self.emit(format!("{f} = lt.u32 {i}, {bound}"));
                    self.emit(format!("br {f}, {a}, {j}"));
                    self.label(format!("{a}:"));
                    self.emit("barrier".into());
                    self.emit(format!("jmp {j}"));
                    self.label(format!("{j}:"));
                }
                pool.push(i);
                pool.push(acc);
            }
            _ => {
                // Early exit of the threads where the condition holds.
                let c = self.cond(pool);
                let (r, k) = (self.fresh("ret"), self.fresh("cont"));
                self.emit(format!("br {c}, {r}, {k}"));
                self.label(format!("{r}:"));
                self.emit("ret".into());
                self.label(format!("{k}:"));
            }
        }
    }

    /// A loop (at most 3 trips, bound uniform or not) whose body stores to `@sm` (each thread its
    /// own slot, or thread 0 a uniform slot), maybe around a nested statement or loop, maybe
    /// loads a uniform slot before the store (a write-after-read race without a barrier), and has
    /// a barrier after the store, before it, or none, and maybe an early exit; after the loop,
    /// a load of one uniform slot decides a branch around a barrier. The shape of the kernel
    /// reported as falsely rejected, and every way to get it wrong.
    fn store_loop(&mut self, pool: &mut Vec<String>, depth: u32) {
        // Mostly uniform trip counts: a thread-dependent one makes any barrier inside divergent.
        // (`%ld0` is uniform only in a kernel that never writes global memory.)
        let uniform: Vec<String> =
            UNIFORM_SOURCES.iter().filter(|s| !self.well_formed || **s != "%ld0").map(|s| s.to_string()).collect();
        let a = if self.well_formed || self.rng.chance(75) {
            uniform[self.rng.below(uniform.len() as u64) as usize].clone()
        } else {
            self.operand(pool)
        };
        let (bound, h, b, x) = (self.fresh("%lb"), self.fresh("lhead"), self.fresh("lbody"), self.fresh("lexit"));
        let (i, i2, more) = (self.fresh("%li"), self.fresh("%li"), self.fresh("%lmore"));
        self.emit(format!("{bound} = and.u32 {a}, 3"));
        self.emit(format!("jmp {h}(0)"));
        self.label(format!("{h}({i}: u32):"));
        self.emit(format!("{more} = lt.u32 {i}, {bound}"));
        self.emit(format!("br {more}, {b}, {x}"));
        self.label(format!("{b}:"));
        let mut bp = pool.clone();
        bp.push(i.clone());
        // 0: barrier after the store (the correct shape), 1: before it, 2: none.
        let barrier = if self.well_formed { 0 } else { self.rng.pick(&[0, 0, 0, 1, 2]) };
        if barrier == 1 {
            self.emit("barrier".into());
        }
        if self.well_formed && depth > 0 && self.rng.chance(40) {
            // A nested statement (often another store loop) where the previous trip's barrier
            // orders it, before this trip's store.
            self.stmt(&mut bp, depth - 1);
        }
        if !self.well_formed && self.rng.chance(25) {
            // Read a uniform slot before this trip's stores, and branch on it around a barrier.
            let (r, c, t, j) = (self.fresh("%lr"), self.fresh("%lc"), self.fresh("lrt"), self.fresh("lrj"));
            let slot = self.rng.below(128);
            self.emit(format!("{r} = load %smp[{slot}]"));
            self.emit(format!("{c} = ne.u32 {r}, 0"));
            self.emit(format!("br {c}, {t}, {j}"));
            self.label(format!("{t}:"));
            self.emit("barrier".into());
            self.emit(format!("jmp {j}"));
            self.label(format!("{j}:"));
        }
        let v = self.operand(&bp);
        let (sv, leader) = (self.fresh("%lv"), self.rng.chance(30));
        self.emit(format!("{sv} = add.u32 {v}, {i}"));
        if leader {
            let (s, j) = (self.fresh("lst"), self.fresh("lsj"));
            let slot = self.rng.below(128);
            self.emit(format!("br %leader, {s}, {j}"));
            self.label(format!("{s}:"));
            self.emit(format!("store %smp[{slot}], {sv}"));
            self.emit(format!("jmp {j}"));
            self.label(format!("{j}:"));
        } else {
            self.emit(format!("store %smp[%tid], {sv}"));
        }
        if !self.well_formed && depth > 0 && self.rng.chance(40) {
            // A nested statement: often another store loop (nested loops), or anything else.
            self.stmt(&mut bp, depth - 1);
        }
        if barrier == 0 {
            self.emit("barrier".into());
        }
        self.emit(format!("{i2} = add.u32 {i}, 1"));
        if self.rng.chance(30) {
            // Early exit: uniform or thread-dependent.
            let uniform: Vec<String> = uniform.iter().cloned().chain([i.clone()]).collect();
            let c = if self.well_formed || self.rng.chance(50) { self.cond(&uniform) } else { self.cond(&bp) };
            self.emit(format!("br {c}, {x}, {h}({i2})"));
        } else {
            self.emit(format!("jmp {h}({i2})"));
        }
        self.label(format!("{x}:"));
        let (r, c, t, j) = (self.fresh("%la"), self.fresh("%lc"), self.fresh("lat"), self.fresh("laj"));
        let slot = self.rng.pick(&["0", "1", "31", "32", "64", "%cta"]);
        self.emit(format!("{r} = load %smp[{slot}]"));
        self.emit(format!("{c} = lt.u32 {r}, 2"));
        self.emit(format!("br {c}, {t}, {j}"));
        self.label(format!("{t}:"));
        self.emit("barrier".into());
        self.emit(format!("jmp {j}"));
        self.label(format!("{j}:"));
        if self.well_formed {
            // Other threads may still load the slot: a later store to it must wait.
            self.emit("barrier".into());
        }
        pool.push(r);
    }

    /// The kernel's text, and whether it was built well-formed (see [`Structured::well_formed`]).
    fn kernel(seed: u64, store_loops: bool) -> (String, bool) {
        let mut g =
            Structured { rng: Rng::new(seed ^ 0x57C0_FFEE), lines: vec![], next: 0, store_loops, well_formed: false };
        g.well_formed = store_loops && g.rng.chance(50);
        g.lines.push("kernel @s(%in: ptr<global, u32>, %out: ptr<global, u32>, %n: u32) {".into());
        g.lines.push("  shared @sm: u32[1024]".into());
        g.lines.push("  shared @bc: u32[1]".into());
        g.label("entry:".into());
        for l in [
            "%tid = tid.x",
            "%lane = laneid",
            "%warp = warpid",
            "%cta = ctaid.x",
            "%ntid = ntid.x",
            "%gid = global_id.x",
            "%gidn = rem.u32 %gid, %n",
            "%smp = addr @sm",
            "%bp = addr @bc",
            "%leader = eq.u32 %tid, 0",
            "%ld = load %in[%gidn]",
            "%ld0 = load %in[0]",
        ] {
            g.emit(l.into());
        }
        let mut pool: Vec<String> =
            ["%tid", "%lane", "%warp", "%gid", "%ld", "%cta", "%n"].iter().map(|s| s.to_string()).collect();
        let depth = 1 + g.rng.below(3) as u32;
        g.body(&mut pool, depth);
        g.body(&mut pool, depth);
        g.emit("ret".into());
        g.lines.push("}".into());
        (g.lines.join("\n") + "\n", g.well_formed)
    }
}

/// Counts from [`check_structured`].
struct Verdicts {
    accepted: u64,
    well_formed: u64,
    /// Seeds of well-formed kernels the verifier rejected (precision failures).
    well_formed_rejected: Vec<u64>,
    accepted_with_barriers: u64,
    rejected_faulting: u64,
}

/// Verifies and launches `kernels` structured kernels (seeds `first..first + kernels`), each
/// `launches` times; panics on an unsound verdict or an unexpected launch failure.
fn check_structured(name: &str, first: u64, kernels: u64, launches: u64, store_loops: bool) -> Verdicts {
    let (mut accepted, mut rejected, mut rejected_faulting, mut accepted_with_barriers) = (0, 0, 0, 0);
    let (mut well_formed_count, mut well_formed_rejected) = (0, vec![]);
    let mut unsound = vec![];
    let mut other = vec![];
    for seed in first..first + kernels {
        let (src, well_formed) = Structured::kernel(seed, store_loops);
        let m =
            kir_ir::parse(&src).unwrap_or_else(|d| panic!("seed {seed}: generated text does not parse: {d:?}\n{src}"));
        let v = kir_ir::verify::verify_module(&m);
        assert!(
            !kir_ir::diag::has_errors(&v),
            "seed {seed}: generated kernel does not verify: {}\n{src}",
            kir_ir::diag::render(&v, "s.kir", &src, false)
        );
        let k = &m.kernels[0];
        let ok = verify_barriers(k).is_empty();
        if well_formed {
            well_formed_count += 1;
            if !ok {
                well_formed_rejected.push(seed);
            }
        }
        if ok {
            accepted += 1;
            if src.contains("barrier") {
                accepted_with_barriers += 1;
            }
        } else {
            rejected += 1;
        }
        let mut rng = Rng::new(seed.wrapping_mul(0x2545_F491) ^ 0x51);
        let mut faulted = false;
        for _ in 0..launches {
            let block = 32 * (1 + rng.below(4) as u32);
            let grid = 1 + rng.below(3) as u32;
            let n = 1 + rng.below((block * grid) as u64 + 16) as u32;
            let ins: Vec<u64> = (0..n).map(|_| rng.below(8)).collect();
            let mut buffers = vec![Buffer::from_bits(ScalarType::U32, ins), Buffer::zeros(ScalarType::U32, n as usize)];
            let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Scalar(Constant::u32(n))];
            let opts = Options { fuel: 1 << 24, threads: Some(1), ..Options::default() };
            match launch(k, &LaunchConfig::linear(grid, block), &args, &mut buffers, &opts) {
                Ok(_) => {}
                Err(e) => match e.kind {
                    ErrorKind::KernelFault(FaultKind::BarrierDivergence | FaultKind::DivergentCollective) => {
                        faulted = true;
                        if ok {
                            unsound
                                .push(format!("seed {seed} grid({grid}) block({block}) n={n}: {}\n{src}", e.message));
                        }
                    }
                    _ => other.push(format!("seed {seed}: {:?}: {}", e.kind, e.message)),
                },
            }
        }
        if faulted && !ok {
            rejected_faulting += 1;
        }
    }
    eprintln!(
        "{kernels} {name}, {} launches: {accepted} accepted ({accepted_with_barriers} with barriers), \
         {rejected} rejected ({rejected_faulting} of them fault in the interpreter), {} other launch failures; \
         {well_formed_count} built well-formed, of which rejected: {well_formed_rejected:?}",
        kernels * launches,
        other.len()
    );
    assert!(unsound.is_empty(), "verifier accepted kernels that diverge:\n{}", unsound.join("\n"));
    assert!(other.is_empty(), "launches failed for other reasons: {other:?}");
    Verdicts {
        accepted,
        well_formed: well_formed_count,
        well_formed_rejected,
        accepted_with_barriers,
        rejected_faulting,
    }
}

#[test]
fn structured_kernels_never_diverge_when_accepted() {
    let v = check_structured("structured kernels", 0, STRUCTURED_KERNELS, STRUCTURED_LAUNCHES, false);
    assert!(
        v.accepted_with_barriers > STRUCTURED_KERNELS / 10,
        "too few accepted kernels with barriers: {}",
        v.accepted_with_barriers
    );
    assert!(v.rejected_faulting > STRUCTURED_KERNELS / 10, "too few rejected kernels fault: {}", v.rejected_faulting);
}

/// Kernels checked by [`store_loop_kernels_never_diverge_when_accepted`].
const STORE_LOOP_KERNELS: u64 = 2000;

/// The shapes the barrier-epoch rule for shared loads must get right: loops storing to shared
/// memory with a trailing barrier (accepted when nothing else is wrong), with the barrier before
/// the store or none, nested store loops, uniform and thread-dependent early exits, loads of a
/// uniform slot before a trip's store, and after each loop a branch on one loaded slot around a
/// barrier.
#[test]
fn store_loop_kernels_never_diverge_when_accepted() {
    let v = check_structured("store-loop kernels", 1 << 20, STORE_LOOP_KERNELS, STRUCTURED_LAUNCHES, true);
    // Precision: every kernel built correct is accepted (loops whose stores end with a barrier
    // included), and they are a good part of the whole.
    assert!(
        v.well_formed_rejected.is_empty(),
        "well-formed store-loop kernels rejected: seeds {:?}",
        v.well_formed_rejected
    );
    assert!(v.well_formed > STORE_LOOP_KERNELS / 3, "too few well-formed kernels: {}", v.well_formed);
    assert!(v.accepted >= v.well_formed, "accepted {} < well-formed {}", v.accepted, v.well_formed);
    assert!(v.rejected_faulting > STORE_LOOP_KERNELS / 10, "too few rejected kernels fault: {}", v.rejected_faulting);
}

/// Modules with functions checked by [`accepted_modules_never_diverge_at_barriers`].
const MODULES: u64 = 800;

fn module_config(seed: u64) -> GenConfig {
    GenConfig { max_funcs: 3, call_percent: 12, ..config(seed) }
}

/// The first test's property on modules with device functions: barriers and collectives inside
/// functions, called (for odd seeds) also from thread-dependent control flow, verified across
/// calls and launched with the calls executed as written.
#[test]
fn accepted_modules_never_diverge_at_barriers() {
    let (mut accepted, mut rejected, mut rejected_that_fault) = (0, 0, 0);
    let (mut with_sync_calls, mut with_divergent_calls, mut divergent_calls_that_fault) = (0, 0, 0);
    let mut unsound = vec![];
    let mut other_failures = vec![];
    let mut false_positives = vec![];
    let mut rejected_by_global_rule = 0;
    for seed in 0..MODULES {
        let cfg = module_config(seed);
        let g = generate_module(seed, &cfg);
        let m = &g.module;
        let k = &m.kernels[0];
        if g.sync_calls > 0 {
            with_sync_calls += 1;
        }
        if g.divergent_calls > 0 {
            with_divergent_calls += 1;
        }
        let diags = verify_module_barriers(m);
        let ok = diags.is_empty();
        if ok {
            accepted += 1;
        } else {
            rejected += 1;
        }
        if !cfg.allow_divergent_barriers && !ok {
            let rule = "is loaded from global memory, which this kernel also writes";
            let by_global_rule = diags.iter().all(|d| {
                d.secondary.iter().any(|l| l.message.contains(rule)) || d.notes.iter().any(|n| n.contains(rule))
            });
            if by_global_rule {
                rejected_by_global_rule += 1;
            } else {
                false_positives.push((seed, diags[0].message.clone()));
            }
        }
        let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9) ^ 0xF0CC_A11);
        let mut faulted = false;
        for _ in 0..LAUNCHES {
            match run_once_in(&m.funcs, k, &mut rng) {
                Outcome::Clean => {}
                Outcome::Divergence(msg) => {
                    faulted = true;
                    if ok {
                        unsound.push(format!("seed {seed}: {msg}\n{}", kir_ir::print_module(m)));
                    }
                }
                Outcome::Other(msg) => other_failures.push(format!("seed {seed}: {msg}")),
            }
        }
        if faulted && !ok {
            rejected_that_fault += 1;
            if g.divergent_calls > 0 {
                divergent_calls_that_fault += 1;
            }
        }
    }
    eprintln!(
        "{MODULES} modules ({with_sync_calls} calling functions with barriers or collectives, {with_divergent_calls} \
         of them from thread-dependent control flow), {} launches: {accepted} accepted, {rejected} rejected \
         ({rejected_that_fault} of them fault in the interpreter, {divergent_calls_that_fault} with divergent calls), \
         {} other launch failures; {rejected_by_global_rule} well-synchronized modules rejected through the \
         global-memory load rule",
        MODULES * LAUNCHES,
        other_failures.len()
    );
    for f in other_failures.iter().take(5) {
        eprintln!("  other failure: {f}");
    }
    assert!(unsound.is_empty(), "verifier accepted modules that diverge at a barrier:\n{}", unsound.join("\n"));
    assert!(
        false_positives.is_empty(),
        "well-synchronized generated modules were rejected for another reason than the global-memory load rule: {false_positives:?}"
    );
    assert!(accepted > MODULES / 3, "too few modules accepted ({accepted}) for the property to say much");
    assert!(with_sync_calls > MODULES / 4, "too few modules call functions with barriers ({with_sync_calls})");
    assert!(
        divergent_calls_that_fault > 0,
        "no module with divergent calls faulted: the launches do not exercise them"
    );
}

/// Barrier verification of a module (`kir_ir::verify::check_barriers`), following calls.
fn verify_module_barriers(m: &kir_ir::Module) -> Vec<kir_ir::Diagnostic> {
    kir_ir::verify::check_barriers(m, |_| None)
}

/// Barrier verification of a module holding only `k`.
fn verify_barriers(k: &kir_ir::Kernel) -> Vec<kir_ir::Diagnostic> {
    verify_module_barriers(&kir_ir::Module { kernels: vec![k.clone()], ..kir_ir::Module::default() })
}
