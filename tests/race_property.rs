//! Property: with `Options { races: true, .. }` the interpreter stops a launch with a
//! `FaultKind::DataRace` fault exactly when the launch has a data race under the PTX memory model,
//! as an independent happens-before model written here (no interpreter, no kir analysis) decides
//! it, over 3,000 random kernels (about half a second in the `test` profile); and the thread the
//! fault names takes part in a racing pair at the element the message names. A disagreement fails
//! the test with a count per kind and the first kernel of each kind, as `.kir` text.
//!
//! The rule the model implements: two accesses to one element by two different threads race when
//! no barrier orders them (same block: the same barrier interval; different blocks, global
//! memory: always) and they are not both loads and not both atomics. So a store races with any
//! access, a load with a store or an atomic, an atomic with a load or a store; same-value stores
//! race too, and one thread's own accesses never do.
//!
//! The kernels: 64 threads per block (two warps), 1 to 3 blocks, a shared `u32[64]` and a global
//! `u32` buffer that block `b` indexes from `b * stride` (stride 0, 16, 32 or 64, so blocks
//! overlap sometimes). A body of 1 to 3 barrier intervals, each of 1 to 3 accesses (load, store,
//! `atom.add/min/max/exch/cas`) guarded by a thread predicate (one thread, `tid < k`, `tid >= k`,
//! `tid % m == r`, all) at an index computed from `tid`; sometimes the body is a loop of 2 or 3
//! uniform trips, with or without a barrier at its end. Barriers are only ever at block-uniform
//! points, every access is in bounds, and shared memory is never checked for initialization, so a
//! data race is the only fault a launch can have. The run uses one host thread, so that the
//! block order (and which racing access is reported) is reproducible.
//!
//! The test also requires the generator to be healthy: many racy and many race-free kernels, and
//! each kind of race (write–write, read–write, read–atomic, atomic–read, write–atomic,
//! atomic–write, the first named the earlier in the interpreter's documented schedule), each
//! memory space and each scope (one warp, two warps, two blocks) the only one in many kernels.
//! `the_model_on_plain_cases` checks the model itself on kernels whose verdict is plain.

use kir_interp::{Arg, Buffer, FaultKind, InterpError, LaunchConfig, Options};
use kir_ir::types::ScalarType;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;

const CASES: usize = 3000;
/// Threads per block: two warps, so cross-warp orders matter.
const THREADS: u32 = 64;
/// Elements of `@s`; every index expression is below it.
const SHARED_LEN: u32 = 64;
const MAX_BLOCKS: u32 = 3;
const MAX_STRIDE: u32 = 64;
const GLOBAL_LEN: u32 = SHARED_LEN + (MAX_BLOCKS - 1) * MAX_STRIDE;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Space {
    Shared,
    Global,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Load,
    Store,
    /// `atom.OP` with OP one of add, min, max, exch, cas.
    Atom(&'static str),
}

/// Which threads of a block execute a statement.
#[derive(Clone, Copy, Debug)]
enum Who {
    All,
    Eq(u32),
    Lt(u32),
    Ge(u32),
    /// `tid % m == r`, `m` a power of two.
    ModEq(u32, u32),
}

/// The element index (before the block's global offset) as a function of `tid`; always below 64.
#[derive(Clone, Copy, Debug)]
enum Index {
    Const(u32),
    Tid,
    Xor(u32),
    /// `(tid + c) % 64`.
    AddMod(u32),
    Shr(u32),
    And(u32),
}

#[derive(Clone, Copy, Debug)]
struct Stmt {
    who: Who,
    kind: Kind,
    space: Space,
    index: Index,
}

#[derive(Debug)]
struct Case {
    blocks: u32,
    /// Global elements between two blocks' windows.
    stride: u32,
    intervals: Vec<Vec<Stmt>>,
    /// Trips of the loop around the body (1: no loop).
    trips: u32,
    /// A barrier at the end of the loop body (else its last interval runs on into the next trip's first).
    loop_barrier: bool,
}

impl Who {
    fn holds(self, t: u32) -> bool {
        match self {
            Who::All => true,
            Who::Eq(k) => t == k,
            Who::Lt(k) => t < k,
            Who::Ge(k) => t >= k,
            Who::ModEq(m, r) => t % m == r,
        }
    }
}

impl Index {
    fn eval(self, t: u32) -> u32 {
        match self {
            Index::Const(c) => c,
            Index::Tid => t,
            Index::Xor(c) => t ^ c,
            Index::AddMod(c) => (t + c) % 64,
            Index::Shr(s) => t >> s,
            Index::And(m) => t & m,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Generating

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u32) -> u32 {
        (kir_ir::rng::splitmix64(&mut self.0) % n as u64) as u32
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u32) as usize]
    }
    /// An index into `weights`, drawn in proportion to them.
    fn weighted(&mut self, weights: &[u32]) -> usize {
        let mut x = self.below(weights.iter().sum());
        for (i, &w) in weights.iter().enumerate() {
            if x < w {
                return i;
            }
            x -= w;
        }
        unreachable!()
    }
}

/// Thread numbers and element indices that often meet: both ends of both warps.
const SPECIAL: [u32; 6] = [0, 1, 31, 32, 33, 63];

fn gen_stmt(r: &mut Rng) -> Stmt {
    let who = match r.weighted(&[2, 5, 1, 1, 1]) {
        0 => Who::All,
        1 => Who::Eq(if r.below(2) == 0 { r.pick(&SPECIAL) } else { r.below(THREADS) }),
        2 => Who::Lt(1 + r.below(THREADS - 1)),
        3 => Who::Ge(1 + r.below(THREADS - 1)),
        _ => {
            let m = r.pick(&[2, 4, 8, 32]);
            Who::ModEq(m, r.below(m))
        }
    };
    let kind = match r.weighted(&[3, 3, 4]) {
        0 => Kind::Load,
        1 => Kind::Store,
        _ => Kind::Atom(r.pick(&["add", "min", "max", "exch", "cas"])),
    };
    // Stores of several threads mostly at distinct elements, or write-write races crowd out the rest.
    let index_weights =
        if kind == Kind::Store && !matches!(who, Who::Eq(_)) { [1, 2, 1, 1, 0, 0] } else { [3, 2, 1, 1, 1, 1] };
    let index = match r.weighted(&index_weights) {
        0 => Index::Const(r.pick(&[0, 1, 5, 32, 63])),
        1 => Index::Tid,
        2 => Index::Xor(r.pick(&[1, 32, 33, 63])),
        3 => Index::AddMod(r.pick(&[1, 32, 63])),
        4 => Index::Shr(1 + r.below(6)),
        _ => Index::And(r.pick(&[1, 3, 31])),
    };
    let space = if r.below(2) == 0 { Space::Shared } else { Space::Global };
    Stmt { who, kind, space, index }
}

fn gen_case(r: &mut Rng) -> Case {
    let blocks = r.pick(&[1, 1, 2, 3]);
    let stride = r.pick(&[0, 16, 32, MAX_STRIDE]);
    let intervals =
        (0..1 + r.below(3)).map(|_| (0..1 + r.weighted(&[3, 2, 1])).map(|_| gen_stmt(r)).collect()).collect();
    let trips = r.pick(&[1, 1, 1, 2, 3]);
    Case { blocks, stride, intervals, trips, loop_barrier: r.below(2) == 0 }
}

// ---------------------------------------------------------------------------------------------
// Rendering to .kir

/// Statement `n`: its guard (a branch around it, none for every thread), its index, its access.
/// Stores write `7` (even `n`) or `tid`, so that same-value stores are covered.
fn render_stmt(s: &mut String, n: usize, st: &Stmt) {
    let cond = match st.who {
        Who::All => None,
        Who::Eq(k) => Some(format!("eq.u32 %t, {k}")),
        Who::Lt(k) => Some(format!("lt.u32 %t, {k}")),
        Who::Ge(k) => Some(format!("ge.u32 %t, {k}")),
        Who::ModEq(m, rem) => {
            writeln!(s, "  %m{n} = and.u32 %t, {}", m - 1).unwrap();
            Some(format!("eq.u32 %m{n}, {rem}"))
        }
    };
    if let Some(cond) = &cond {
        writeln!(s, "  %c{n} = {cond}\n  br %c{n}, s{n}, j{n}\ns{n}:").unwrap();
    }
    match st.index {
        Index::Const(c) => writeln!(s, "  %x{n} = mov.u32 {c}"),
        Index::Tid => writeln!(s, "  %x{n} = mov.u32 %t"),
        Index::Xor(c) => writeln!(s, "  %x{n} = xor.u32 %t, {c}"),
        Index::AddMod(c) => writeln!(s, "  %a{n} = add.u32 %t, {c}\n  %x{n} = and.u32 %a{n}, 63"),
        Index::Shr(k) => writeln!(s, "  %x{n} = shr.u32 %t, {k}"),
        Index::And(m) => writeln!(s, "  %x{n} = and.u32 %t, {m}"),
    }
    .unwrap();
    let p = match st.space {
        Space::Shared => "%sh",
        Space::Global => {
            writeln!(s, "  %y{n} = add.u32 %x{n}, %boff").unwrap();
            "%g"
        }
    };
    let i = if st.space == Space::Global { format!("%y{n}") } else { format!("%x{n}") };
    match st.kind {
        Kind::Load => writeln!(s, "  %v{n} = load {p}[{i}]"),
        Kind::Store => writeln!(s, "  store {p}[{i}], {}", if n & 1 == 0 { "7" } else { "%t" }),
        Kind::Atom("add") => writeln!(s, "  %o{n} = atom.add {p}[{i}], 1"),
        Kind::Atom("cas") => writeln!(s, "  %o{n} = atom.cas {p}[{i}], 0, %t"),
        Kind::Atom(op) => writeln!(s, "  %o{n} = atom.{op} {p}[{i}], %t"),
    }
    .unwrap();
    if cond.is_some() {
        writeln!(s, "  jmp j{n}\nj{n}:").unwrap();
    }
}

fn render(c: &Case) -> String {
    let mut s = format!(
        "kernel @k(%g: ptr<global, u32>) {{\n  shared @s: u32[{SHARED_LEN}]\nentry:\n  %t = tid.x\n  %b = ctaid.x\n  \
         %sh = addr @s\n  %boff = mul.u32 %b, {}\n",
        c.stride
    );
    if c.trips > 1 {
        s += "  jmp loop(0)\nloop(%it: u32):\n";
    }
    let mut n = 0;
    for (k, interval) in c.intervals.iter().enumerate() {
        if k > 0 {
            s += "  barrier\n";
        }
        for st in interval {
            render_stmt(&mut s, n, st);
            n += 1;
        }
    }
    if c.trips > 1 {
        if c.loop_barrier {
            s += "  barrier\n";
        }
        writeln!(
            s,
            "  %it.n = add.u32 %it, 1\n  %more = lt.u32 %it.n, {}\n  br %more, loop(%it.n), done\ndone:",
            c.trips
        )
        .unwrap();
    }
    s + "  ret\n}\n"
}

// ---------------------------------------------------------------------------------------------
// The model

/// The lanes of one warp of one block that execute one dynamic statement at one element.
#[derive(Debug)]
struct Unit {
    block: u32,
    /// Dynamic barrier interval (counted through the loop's trips).
    interval: usize,
    warp: u32,
    /// Position in the dynamic statement sequence: the order within a warp.
    seq: usize,
    kind: Kind,
    /// Bit `tid` for each thread.
    threads: u64,
}

/// A race's kind: the kinds of its two accesses, the earlier first (read–write for either order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    WriteWrite,
    ReadWrite,
    ReadAtomic,
    AtomicRead,
    WriteAtomic,
    AtomicWrite,
}

/// Where a race's two threads are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Scope {
    SameWarp,
    CrossWarp,
    CrossBlock,
}

#[derive(Default)]
struct Verdict {
    /// For each element with a race: every (block, thread) of a racing pair there.
    racers: BTreeMap<(Space, u32), BTreeSet<(u32, u32)>>,
    classes: BTreeSet<Class>,
    spaces: BTreeSet<Space>,
    scopes: BTreeSet<Scope>,
}

fn class(first: Kind, second: Kind) -> Class {
    use Kind::*;
    match (first, second) {
        (Store, Store) => Class::WriteWrite,
        (Load, Store) | (Store, Load) => Class::ReadWrite,
        (Load, Atom(_)) => Class::ReadAtomic,
        (Atom(_), Load) => Class::AtomicRead,
        (Store, Atom(_)) => Class::WriteAtomic,
        (Atom(_), Store) => Class::AtomicWrite,
        (Load, Load) | (Atom(_), Atom(_)) => unreachable!("never a race"),
    }
}

fn model(c: &Case) -> Verdict {
    // The dynamic barrier intervals, through the loop's trips.
    let mut dynamic: Vec<Vec<&Stmt>> = vec![vec![]];
    for trip in 0..c.trips {
        if trip > 0 && c.loop_barrier {
            dynamic.push(vec![]);
        }
        for (k, interval) in c.intervals.iter().enumerate() {
            if k > 0 {
                dynamic.push(vec![]);
            }
            dynamic.last_mut().expect("one interval at least").extend(interval);
        }
    }
    let sequence = dynamic.iter().enumerate().flat_map(|(interval, stmts)| stmts.iter().map(move |st| (interval, *st)));
    // Every access, grouped by element into units.
    let mut units: BTreeMap<(Space, u32), Vec<Unit>> = BTreeMap::new();
    let mut unit_of: HashMap<(Space, u32, u32, usize, u32), usize> = HashMap::new();
    for (seq, (interval, st)) in sequence.enumerate() {
        for block in 0..c.blocks {
            for t in (0..THREADS).filter(|&t| st.who.holds(t)) {
                let elem = st.index.eval(t) + if st.space == Space::Global { block * c.stride } else { 0 };
                let list = units.entry((st.space, elem)).or_default();
                let u = *unit_of.entry((st.space, elem, block, seq, t / 32)).or_insert_with(|| {
                    list.push(Unit { block, interval, warp: t / 32, seq, kind: st.kind, threads: 0 });
                    list.len() - 1
                });
                list[u].threads |= 1 << t;
            }
        }
    }
    let mut v = Verdict::default();
    for (&(space, elem), list) in &units {
        for (i, a) in list.iter().enumerate() {
            for b in &list[i..] {
                let both = |k: fn(&Kind) -> bool| k(&a.kind) && k(&b.kind);
                if both(|k| *k == Kind::Load) || both(|k| matches!(k, Kind::Atom(_))) {
                    continue;
                }
                let unordered = if a.block == b.block { a.interval == b.interval } else { space == Space::Global };
                // Two different threads: always across blocks; within one, unless both are one thread.
                let two_threads = a.block != b.block || (a.threads | b.threads).count_ones() >= 2;
                if !unordered || !two_threads {
                    continue;
                }
                // Warps of a block run in index order, each to the next barrier; blocks (one host
                // thread) in index order.
                let a_first = (a.block, a.warp, a.seq) <= (b.block, b.warp, b.seq);
                let (first, second) = if a_first { (a, b) } else { (b, a) };
                v.classes.insert(class(first.kind, second.kind));
                v.spaces.insert(space);
                v.scopes.insert(if a.block != b.block {
                    Scope::CrossBlock
                } else if a.warp != b.warp {
                    Scope::CrossWarp
                } else {
                    Scope::SameWarp
                });
                let racers = v.racers.entry((space, elem)).or_default();
                for u in [a, b] {
                    racers.extend((0..THREADS).filter(|t| u.threads >> t & 1 == 1).map(|t| (u.block, t)));
                }
            }
        }
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Running

/// The launch's error, if it fails.
fn run(src: &str, blocks: u32) -> Option<InterpError> {
    let module = kir_ir::parse(src).unwrap_or_else(|d| panic!("{src}\ndoes not parse: {d:?}"));
    let checked = kir_ir::verify::check(module).unwrap_or_else(|d| panic!("{src}\ndoes not check: {d}"));
    let kernel = checked.verified_kernel("k").expect("the kernel is @k");
    let mut buffers = vec![Buffer::zeros(ScalarType::U32, GLOBAL_LEN as usize)];
    let opts = Options { races: true, threads: Some(1), ..Options::default() };
    kir_interp::launch_verified(kernel, &LaunchConfig::linear(blocks, THREADS), &[Arg::Buffer(0)], &mut buffers, &opts)
        .err()
}

/// The element a race report names: `... shared `@s` element N ...` or `... global buffer `%g` element N ...`.
fn reported_element(message: &str) -> Option<(Space, u32)> {
    let space = if message.contains("shared `@s`") {
        Space::Shared
    } else if message.contains("`%g`") {
        Space::Global
    } else {
        return None;
    };
    let rest = &message[message.find("element ")? + "element ".len()..];
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((space, digits.parse().ok()?))
}

/// What is wrong with the interpreter's answer, if anything.
fn judge(v: &Verdict, error: Option<&InterpError>) -> Option<String> {
    let racy = !v.racers.is_empty();
    match error {
        None if racy => Some("missed race".into()),
        None => None,
        Some(e) if e.fault_kind() != Some(FaultKind::DataRace) => Some(format!("unexpected error: {e}")),
        Some(e) if !racy => Some(format!("spurious race: {e}")),
        Some(e) => {
            let (Some(elem), Some([b, 0, 0]), Some([t, 0, 0])) = (reported_element(&e.message), e.block, e.thread)
            else {
                return Some(format!("race report without element or coordinates: {e:?}"));
            };
            match v.racers.get(&elem) {
                Some(r) if r.contains(&(b, t)) => None,
                Some(_) => Some(format!("thread {t} of block {b} races at no element {elem:?} access: {e}")),
                None => Some(format!("no race at {elem:?} in the model: {e}")),
            }
        }
    }
}

#[test]
fn the_race_detector_agrees_with_a_happens_before_model() {
    let mut rng = Rng(0x7ace_5eed);
    let (mut racy, mut clean) = (0, 0);
    let mut only_class: BTreeMap<Class, usize> = BTreeMap::new();
    let mut only_space: BTreeMap<Space, usize> = BTreeMap::new();
    let mut only_scope: BTreeMap<Scope, usize> = BTreeMap::new();
    // Each kind of disagreement: how many kernels, and the first one.
    let mut failures: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for case in 0..CASES {
        let c = gen_case(&mut rng);
        let src = render(&c);
        let v = model(&c);
        if v.racers.is_empty() {
            clean += 1;
        } else {
            racy += 1;
        }
        if let [only] = v.classes.iter().collect::<Vec<_>>()[..] {
            *only_class.entry(*only).or_default() += 1;
        }
        if let [only] = v.spaces.iter().collect::<Vec<_>>()[..] {
            *only_space.entry(*only).or_default() += 1;
        }
        if let [only] = v.scopes.iter().collect::<Vec<_>>()[..] {
            *only_scope.entry(*only).or_default() += 1;
        }
        if let Some(why) = judge(&v, run(&src, c.blocks).as_ref()) {
            let what = why.split(':').next().unwrap_or_default();
            let key = format!("{what}, model races {:?} in {:?}", v.classes, v.spaces);
            let first = || {
                format!(
                    "case {case}: {why}\nmodel: {} ({:?} in {:?}, {:?}), racing elements {:?}\nlaunch grid({}) block({THREADS}):\n{src}",
                    if v.racers.is_empty() { "no race" } else { "race" },
                    v.classes,
                    v.spaces,
                    v.scopes,
                    v.racers.keys().collect::<Vec<_>>(),
                    c.blocks,
                )
            };
            failures.entry(key).or_insert_with(|| (0, first())).0 += 1;
        }
    }
    eprintln!(
        "{racy} racy and {clean} race-free kernels; the only race kind: {only_class:?}; the only space: {only_space:?}; \
         the only scope: {only_scope:?}"
    );
    if !failures.is_empty() {
        let total: usize = failures.values().map(|f| f.0).sum();
        let summary: Vec<String> = failures.iter().map(|(k, f)| format!("  {} × {k}", f.0)).collect();
        let firsts: Vec<&str> = failures.values().map(|f| f.1.as_str()).collect();
        panic!(
            "{total} of {CASES} kernels disagree with the model:\n{}\n\nthe first of each kind:\n{}",
            summary.join("\n"),
            firsts.join("\n")
        );
    }
    assert!(racy >= CASES / 5 && clean >= CASES / 5, "{racy} racy, {clean} race-free");
    let classes = [
        Class::WriteWrite,
        Class::ReadWrite,
        Class::ReadAtomic,
        Class::AtomicRead,
        Class::WriteAtomic,
        Class::AtomicWrite,
    ];
    for k in classes {
        assert!(
            only_class.get(&k).copied().unwrap_or(0) >= 25,
            "{k:?} is the only race in too few kernels: {only_class:?}"
        );
    }
    for s in [Space::Shared, Space::Global] {
        assert!(
            only_space.get(&s).copied().unwrap_or(0) >= 200,
            "{s:?} is the only space in too few kernels: {only_space:?}"
        );
    }
    for s in [Scope::SameWarp, Scope::CrossWarp, Scope::CrossBlock] {
        assert!(
            only_scope.get(&s).copied().unwrap_or(0) >= 50,
            "{s:?} is the only scope in too few kernels: {only_scope:?}"
        );
    }
}

/// The model itself on kernels whose verdict is plain: a barrier orders, a loop's back edge
/// without one does not, blocks share global memory only, atomics and loads race only with the
/// other kinds, and one thread never races with itself.
#[test]
fn the_model_on_plain_cases() {
    let at = |who, kind, space, index| Stmt { who, kind, space, index };
    let store0 = |space| at(Who::Eq(0), Kind::Store, space, Index::Const(0));
    let load1 = at(Who::Eq(1), Kind::Load, Space::Shared, Index::Const(0));
    let case = |blocks, intervals: Vec<Vec<Stmt>>, trips, loop_barrier| Case {
        blocks,
        stride: 0,
        intervals,
        trips,
        loop_barrier,
    };
    let classes = |c: &Case| model(c).classes.into_iter().collect::<Vec<_>>();
    let shared = Space::Shared;
    assert_eq!(classes(&case(1, vec![vec![store0(shared), load1]], 1, false)), [Class::ReadWrite]);
    assert_eq!(classes(&case(1, vec![vec![store0(shared)], vec![load1]], 1, false)), []);
    // The load of trip 0 and the store of trip 1 share an interval unless the loop ends in a barrier.
    assert_eq!(classes(&case(1, vec![vec![store0(shared)], vec![load1]], 2, false)), [Class::ReadWrite]);
    assert_eq!(classes(&case(1, vec![vec![store0(shared)], vec![load1]], 2, true)), []);
    // One thread per block: a race across blocks in global memory only.
    assert_eq!(classes(&case(2, vec![vec![store0(Space::Global)]], 1, false)), [Class::WriteWrite]);
    assert_eq!(classes(&case(2, vec![vec![store0(shared)]], 1, false)), []);
    assert_eq!(model(&case(2, vec![vec![store0(Space::Global)]], 1, false)).scopes, [Scope::CrossBlock].into());
    // Every thread at one element: atomics and loads alone never race, a store by all does. Warp
    // 0's loads run before warp 1's atomics: a read-atomic race besides the atomic-read ones.
    let all = |kind| at(Who::All, kind, shared, Index::Const(5));
    assert_eq!(
        classes(&case(1, vec![vec![all(Kind::Atom("add")), all(Kind::Atom("cas")), all(Kind::Load)]], 1, false)),
        [Class::ReadAtomic, Class::AtomicRead]
    );
    assert_eq!(classes(&case(1, vec![vec![all(Kind::Atom("add")), all(Kind::Atom("exch"))]], 1, false)), []);
    assert_eq!(classes(&case(1, vec![vec![all(Kind::Load), all(Kind::Load)]], 1, false)), []);
    assert_eq!(classes(&case(1, vec![vec![all(Kind::Store)]], 1, false)), [Class::WriteWrite]);
    // One thread's store, load and atomic at its own element: no race.
    let own = |kind| at(Who::Eq(7), kind, shared, Index::Tid);
    assert_eq!(classes(&case(1, vec![vec![own(Kind::Store), own(Kind::Load), own(Kind::Atom("max"))]], 1, false)), []);
    // Thread 33 (warp 1) stores after thread 0's atomic at the same element: atomic, then write.
    let v = model(&case(
        1,
        vec![vec![
            at(Who::Eq(33), Kind::Store, shared, Index::Const(9)),
            at(Who::Eq(0), Kind::Atom("min"), shared, Index::Const(9)),
        ]],
        1,
        false,
    ));
    assert_eq!((v.classes, v.scopes), ([Class::AtomicWrite].into(), [Scope::CrossWarp].into()));
    assert_eq!(v.racers[&(shared, 9)], [(0, 0), (0, 33)].into());
}
