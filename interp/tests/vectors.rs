//! Vectors, tensor cores and async copies in the interpreter, each checked against something
//! computed here independently of it:
//! - vector loads and stores (`load.v2/v4`, `store.v2/v4`) of f32, u32, f16 and f64, in global and
//!   shared memory, and the element ops (`vec`, `extract`, `insert`), against the host's copy of
//!   the buffers; 128-bit values carried through divergent loops (block parameters, swapped in a
//!   parallel copy) and returned from functions;
//! - `mma` (f16, bf16, tf32) on random tiles against `kir_ir::eval::tensor_core::dot` per output,
//!   with each lane's fragments packed by a helper written here from the PTX ISA's layout tables;
//! - `ldmatrix` `.x1/.x2/.x4`, with and without `.trans`, on a shared tile of distinct values;
//! - faults: a misaligned `load.v4` (message asserted), an access to a `cp.async` destination in
//!   flight, a thread that exits with a copy in flight, a race between a copy's completion and
//!   another thread's read without a barrier; and `cp.async`'s zero-fill and wait-group
//!   accounting (`cp.async.wait 1` with two groups);
//! - error enclosures, kept per vector element: through `vec`/`extract`/`insert`, vector loads
//!   and stores (global and shared), loop-carried block parameters, function returns and
//!   `cp.async`; integer elements exact or unknown; `mma` results exact or unknown as a whole.

use half::{bf16, f16};
use kir_interp::enclose::{Enc, Why};
use kir_interp::{launch_verified, Arg, Buffer, FaultKind, InterpError, LaunchConfig, Options, TensorCoreRule};
use kir_ir::eval::tensor_core::{dot, TensorCoreInput};
use kir_ir::verify::Verified;
use kir_ir::ScalarType;

fn module(src: &str) -> Verified {
    let m = kir_ir::parse(src).unwrap_or_else(|d| panic!("parse errors: {d:?}\n{src}"));
    kir_ir::verify::verify(m).unwrap_or_else(|d| panic!("verifier errors: {d}\n{src}"))
}

/// Runs the module's first kernel on `bufs` (argument `i` is buffer `i`).
fn run(src: &str, grid: u32, block: u32, bufs: &mut [Buffer], opts: &Options) -> Result<(), InterpError> {
    let m = module(src);
    let args: Vec<Arg> = (0..bufs.len()).map(Arg::Buffer).collect();
    let cfg = LaunchConfig::linear(grid, block);
    let r = launch_verified(m.verified_kernels().next().expect("a kernel"), &cfg, &args, bufs, opts);
    r.map(|_| ())
}

fn checked() -> Options {
    Options { races: true, uninit: true, ..Options::default() }
}

/// A deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn bits_buffer(elem: ScalarType, n: usize, rng: &mut Rng) -> Buffer {
    Buffer::from_bits(elem, (0..n).map(|_| rng.next() & elem.mask()))
}

// ---------------------------------------------------------------------------------------------
// Vector loads, stores and element ops.

/// Each thread loads a vector of `n` elements at `n·tid`, reverses its elements (extract, then
/// `vec`), and stores it at the same place of `y`. With `shared`, the vectors go through two
/// shared tiles first, thread `t` taking thread `threads - 1 - t`'s.
fn reverse_kernel(ty: &str, n: usize, shared: bool, threads: usize) -> String {
    let extracts: String = (0..n).map(|i| format!("  %e{i} = extract.v{n}.{ty} %v, {i}\n")).collect();
    let rev: Vec<String> = (0..n).rev().map(|i| format!("%e{i}")).collect();
    let body = if shared {
        format!(
            "  %s = addr @tile\n  %s2 = addr @tile2\n  %g = load.v{n} %x[%i]\n  store.v{n} %s[%i], %g\n  barrier\n  \
             %j = sub.u32 {last}, %t\n  %k = mul.u32 %j, {n}\n  %w = load.v{n} %s[%k]\n  store.v{n} %s2[%i], %w\n  barrier\n  \
             %v = load.v{n} %s2[%i]\n",
            last = threads - 1
        )
    } else {
        format!("  %v = load.v{n} %x[%i]\n")
    };
    format!(
        "kernel @rev(%x: ptr<global, {ty}>, %y: ptr<global, {ty}>) {{
  shared @tile: {ty}[{len}] align 16
  shared @tile2: {ty}[{len}] align 16
entry:
  %t = tid.x : u32
  %i = mul.u32 %t, {n}
{body}{extracts}  %r = vec.v{n}.{ty} {rev}
  store.v{n} %y[%i], %r
  ret
}}",
        len = n * threads,
        rev = rev.join(", ")
    )
}

#[test]
fn vector_loads_and_stores_move_every_element() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for (ty, elem, widths) in [
        ("f32", ScalarType::F32, &[2usize, 4][..]),
        ("u32", ScalarType::U32, &[2, 4]),
        ("f16", ScalarType::F16, &[2, 4]),
        ("f64", ScalarType::F64, &[2]),
        ("u64", ScalarType::U64, &[2]),
    ] {
        for &n in widths {
            for shared in [false, true] {
                let threads = 64;
                let src = reverse_kernel(ty, n, shared, threads);
                let x = bits_buffer(elem, n * threads, &mut rng);
                let mut bufs = vec![x.clone(), Buffer::zeros(elem, n * threads)];
                run(&src, 1, threads as u32, &mut bufs, &checked()).unwrap_or_else(|e| panic!("{ty} v{n}: {e}\n{src}"));
                for t in 0..threads {
                    for i in 0..n {
                        let from = if shared { threads - 1 - t } else { t };
                        let want = x.get_bits(from * n + (n - 1 - i));
                        assert_eq!(
                            bufs[1].get_bits(t * n + i),
                            want,
                            "{ty} v{n} shared={shared}: thread {t} element {i}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn insert_replaces_one_element_of_a_128_bit_vector() {
    let src = "kernel @k(%x: ptr<global, u32>, %y: ptr<global, u32>) {
entry:
  %t = tid.x : u32
  %i = mul.u32 %t, 4
  %v = load.v4 %x[%i]
  %a = insert.v4.u32 %v, 3, %t
  %b = insert.v4.u32 %a, 0, 7
  store.v4 %y[%i], %b
  ret
}";
    let x = Buffer::from_u32(&(0..128).map(|i| 1000 + i).collect::<Vec<_>>());
    let mut bufs = vec![x, Buffer::zeros(ScalarType::U32, 128)];
    run(src, 1, 32, &mut bufs, &checked()).unwrap();
    let y = bufs[1].to_u32();
    for t in 0..32u32 {
        let i = (t * 4) as usize;
        assert_eq!(&y[i..i + 4], &[7, 1000 + t * 4 + 1, 1000 + t * 4 + 2, t], "thread {t}");
    }
}

/// 128-bit block parameters: each thread runs `tid % 5` iterations (the warp diverges), and two
/// vector parameters swap places at every back edge (a parallel copy of both halves).
#[test]
fn wide_block_parameters_survive_divergent_loops_and_swaps() {
    let src = "kernel @k(%y: ptr<global, u32>) {
entry:
  %t = tid.x : u32
  %n = rem.u32 %t, 5
  %a = vec.v4.u32 1, 2, 3, %t
  %b = vec.v4.u32 10, 20, 30, 40
  jmp head(0, %a, %b)
head(%k: u32, %p: vec<4, u32>, %q: vec<4, u32>):
  %more = lt.u32 %k, %n
  br %more, body, done
body:
  %e = extract.v4.u32 %p, 3
  %e2 = add.u32 %e, 100
  %p2 = insert.v4.u32 %p, 3, %e2
  %k2 = add.u32 %k, 1
  jmp head(%k2, %q, %p2)
done:
  %i = mul.u32 %t, 8
  store.v4 %y[%i], %p
  %j = add.u32 %i, 4
  store.v4 %y[%j], %q
  ret
}";
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 8 * 64)];
    run(src, 1, 64, &mut bufs, &checked()).unwrap();
    let y = bufs[0].to_u32();
    for t in 0..64u32 {
        let (mut p, mut q) = ([1, 2, 3, t], [10, 20, 30, 40]);
        for _ in 0..t % 5 {
            p[3] += 100;
            std::mem::swap(&mut p, &mut q);
        }
        let i = (t * 8) as usize;
        assert_eq!(&y[i..i + 4], &p, "thread {t}: p");
        assert_eq!(&y[i + 4..i + 8], &q, "thread {t}: q");
    }
}

#[test]
fn a_function_returns_a_128_bit_vector() {
    let src = "func @pair(%x: f64) -> vec<2, f64> {
entry:
  %y = neg.f64 %x
  %v = vec.v2.f64 %x, %y
  ret %v
}
kernel @k(%y: ptr<global, f64>) {
entry:
  %t = tid.x : u32
  %c = cvt.rn.f64.u32 %t
  %v = call @pair(%c)
  %i = mul.u32 %t, 2
  store.v2 %y[%i], %v
  ret
}";
    let mut bufs = vec![Buffer::zeros(ScalarType::F64, 64)];
    run(src, 1, 32, &mut bufs, &checked()).unwrap();
    let y = bufs[0].to_f64();
    for t in 0..32 {
        assert_eq!((y[2 * t], y[2 * t + 1]), (t as f64, -(t as f64)), "thread {t}");
    }
}

#[test]
fn a_misaligned_vector_load_faults_naming_the_offset_and_alignment() {
    // Thread 1 loads at element 2: byte 8, not a multiple of 16.
    let src = "kernel @k(%x: ptr<global, f32>, %y: ptr<global, f32>) {
entry:
  %t = tid.x : u32
  %i = mul.u32 %t, 2
  %v = load.v4 %x[%i]
  store.v4 %y[0], %v
  ret
}";
    let mut bufs = vec![Buffer::zeros(ScalarType::F32, 64), Buffer::zeros(ScalarType::F32, 4)];
    let e = run(src, 1, 2, &mut bufs, &Options::default()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::Misaligned), "{e}");
    assert_eq!(e.thread, Some([1, 0, 0]));
    assert_eq!(
        e.message,
        "misaligned 16-byte `load.v4` from global buffer `%x`: byte offset 8 is not a multiple of 16"
    );
    // In shared memory the message names the address as well (`@tile` starts at byte 16, after
    // `@pad`).
    let src = "kernel @k(%y: ptr<global, f32>) {
  shared @pad: f32[1]
  shared @tile: f32[64] align 16
entry:
  %t = tid.x : u32
  %s = addr @tile
  %p = addr @pad
  %f = cvt.rn.f32.u32 %t
  store %p[0], %f
  %i = mul.u32 %t, 2
  %w = vec.v4.f32 %f, %f, %f, %f
  store.v4 %s[%i], %w
  ret
}";
    let mut bufs = vec![Buffer::zeros(ScalarType::F32, 4)];
    let e = run(src, 1, 2, &mut bufs, &Options::default()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::Misaligned), "{e}");
    assert_eq!(
        e.message,
        "misaligned 16-byte `store.v4` to shared `@tile`: address 0x18 (byte offset 8 into `@tile`) is not a multiple of 16"
    );
    // Out of bounds: the whole 16 bytes must be inside the buffer.
    let src = "kernel @k(%x: ptr<global, u32>, %y: ptr<global, u32>) {
entry:
  %v = load.v4 %x[4]
  store.v4 %y[0], %v
  ret
}";
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 6), Buffer::zeros(ScalarType::U32, 4)];
    let e = run(src, 1, 1, &mut bufs, &Options::default()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::OutOfBounds), "{e}");
    assert_eq!(e.message, "out-of-bounds 16-byte `load.v4` from global buffer `%x` at byte offset 16");
}

/// A shared declaration aligned to less than a vector access is misaligned whatever the offset.
#[test]
fn a_vector_access_needs_its_declarations_alignment() {
    let src = "kernel @k(%y: ptr<global, u32>) {
  shared @tile: u32[64]
entry:
  %t = tid.x : u32
  %s = addr @tile
  %p = offset %s, 0
  %v = vec.v4.u32 %t, %t, %t, %t
  %i = mul.u32 %t, 4
  store.v4 %p[%i], %v
  ret
}";
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 4)];
    let e = run(src, 1, 1, &mut bufs, &Options::default()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::Misaligned), "{e}");
    assert!(e.message.contains("`@tile` is aligned to only 4 bytes"), "{}", e.message);
    assert!(e.notes.iter().any(|n| n.contains("align 16")), "{e:?}");
}

/// Race detection and uninitialized reads see every element of a vector access.
#[test]
fn vector_accesses_are_checked_element_by_element() {
    // Thread 0 writes elements 0..4 of the tile with one store.v4; thread 32 (another warp) reads
    // element 3 with a scalar load, no barrier: a race on element 3.
    let src = "kernel @k(%y: ptr<global, u32>) {
  shared @tile: u32[4] align 16
entry:
  %t = tid.x : u32
  %s = addr @tile
  %z = eq.u32 %t, 0
  br %z, write, other
write:
  %v = vec.v4.u32 1, 2, 3, 4
  store.v4 %s[0], %v
  jmp done
other:
  %o = eq.u32 %t, 32
  br %o, read, done
read:
  %e = load %s[3]
  store %y[0], %e
  jmp done
done:
  ret
}";
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 1)];
    let e = run(src, 1, 64, &mut bufs, &checked()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::DataRace), "{e}");
    assert!(e.message.contains("element 3 (byte 12)"), "{}", e.message);
    // A vector load of a tile whose last element nobody wrote.
    let src = "kernel @k(%y: ptr<global, u32>) {
  shared @tile: u32[4] align 16
entry:
  %s = addr @tile
  store %s[0], 1
  store %s[1], 1
  store %s[2], 1
  %v = load.v4 %s[0]
  store.v4 %y[0], %v
  ret
}";
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 4)];
    let e = run(src, 1, 1, &mut bufs, &checked()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::UninitializedRead), "{e}");
    assert!(e.message.contains("`@tile[3]` (byte 12)"), "{}", e.message);
}

// ---------------------------------------------------------------------------------------------
// mma.

/// The PTX ISA's fragment layouts (9.7.15.5.7 "Matrix Fragments for mma.m16n8k8", .tf32, and
/// 9.7.15.5.8 "... mma.m16n8k16 with floating point type", .f16/.bf16), written out here apart
/// from the interpreter's: `(row, col)` of each element a lane holds, in register order.
mod isa {
    pub fn a(tf32: bool, lane: usize) -> Vec<(usize, usize)> {
        let (g, q) = (lane / 4, lane % 4);
        if tf32 {
            vec![(g, q), (g + 8, q), (g, q + 4), (g + 8, q + 4)]
        } else {
            (0..8)
                .map(|i| {
                    let row = if i < 2 || (4..6).contains(&i) { g } else { g + 8 };
                    let col = if i < 4 { q * 2 + (i & 1) } else { q * 2 + (i & 1) + 8 };
                    (row, col)
                })
                .collect()
        }
    }
    /// (k, col)
    pub fn b(tf32: bool, lane: usize) -> Vec<(usize, usize)> {
        let (g, q) = (lane / 4, lane % 4);
        if tf32 {
            vec![(q, g), (q + 4, g)]
        } else {
            (0..4).map(|i| (if i < 2 { q * 2 + (i & 1) } else { q * 2 + (i & 1) + 8 }, g)).collect()
        }
    }
    pub fn c(lane: usize) -> Vec<(usize, usize)> {
        let (g, q) = (lane / 4, lane % 4);
        (0..4).map(|i| (if i < 2 { g } else { g + 8 }, q * 2 + (i & 1))).collect()
    }
}

/// Packs element values (16-bit patterns or 32-bit words) into `u32` registers, the lower-numbered
/// element of a pair in the low half.
fn pack(elems: &[u32], halves: bool) -> Vec<u32> {
    if halves {
        elems.chunks(2).map(|p| p[0] | p[1] << 16).collect()
    } else {
        elems.to_vec()
    }
}

/// An `mma` kernel: every lane loads its A (4 u32), B (2 u32) and C (4 f32) fragments from
/// `a`, `b`, `c` at lane·4, lane·2, lane·4, and stores D at lane·4.
fn mma_kernel(op: &str) -> String {
    format!(
        "kernel @mma(%a: ptr<global, u32>, %b: ptr<global, u32>, %c: ptr<global, f32>, %d: ptr<global, f32>) {{
entry:
  %l = laneid : u32
  %w = warpid : u32
  %wl = mul.u32 %w, 32
  %t = add.u32 %wl, %l
  %i4 = mul.u32 %t, 4
  %i2 = mul.u32 %t, 2
  %fa = load.v4 %a[%i4]
  %fb = load.v2 %b[%i2]
  %fc = load.v4 %c[%i4]
  %fd = {op} %fa, %fb, %fc
  store.v4 %d[%i4], %fd
  ret
}}"
    )
}

/// Random input bits of a format: mostly ordinary values near 1 (so products and sums stay normal
/// and cancellations are real), some random bit patterns.
fn random_input(rng: &mut Rng, fmt: TensorCoreInput) -> u32 {
    let r = rng.next();
    let x = ((r >> 8) % 2001) as f32 / 1000.0 - 1.0;
    match (fmt, r % 8) {
        (TensorCoreInput::F16, 0) => (r >> 16) as u32 & 0xffff,
        (TensorCoreInput::F16, _) => f16::from_f32(x).to_bits() as u32,
        (TensorCoreInput::Bf16, 0) => (r >> 16) as u32 & 0xffff,
        (TensorCoreInput::Bf16, _) => bf16::from_f32(x).to_bits() as u32,
        (TensorCoreInput::Tf32, _) => x.to_bits(),
    }
}

#[test]
fn mma_matches_dot_on_random_tiles() {
    let mut rng = Rng(0x5eed_0000_0000_0001);
    for (op, fmt, k) in [
        ("mma.m16n8k16.f16", TensorCoreInput::F16, 16),
        ("mma.m16n8k16.bf16", TensorCoreInput::Bf16, 16),
        ("mma.m16n8k8.tf32", TensorCoreInput::Tf32, 8),
    ] {
        let tf32 = fmt == TensorCoreInput::Tf32;
        for rule in [TensorCoreRule::Sm80, TensorCoreRule::Sm90] {
            for trial in 0..4 {
                // Two warps, each its own tiles.
                let warps = 2;
                let mut tiles = Vec::new();
                let (mut av, mut bv, mut cv) = (vec![], vec![], vec![]);
                for _ in 0..warps {
                    let a: Vec<Vec<u32>> =
                        (0..16).map(|_| (0..k).map(|_| random_input(&mut rng, fmt)).collect()).collect();
                    let b: Vec<Vec<u32>> =
                        (0..k).map(|_| (0..8).map(|_| random_input(&mut rng, fmt)).collect()).collect();
                    let c: Vec<Vec<u32>> = (0..16)
                        .map(|_| (0..8).map(|_| (((rng.next() % 2001) as f32 / 100.0) - 10.0).to_bits()).collect())
                        .collect();
                    for lane in 0..32 {
                        let ae: Vec<u32> = isa::a(tf32, lane).iter().map(|&(r, c)| a[r][c]).collect();
                        let be: Vec<u32> = isa::b(tf32, lane).iter().map(|&(r, c)| b[r][c]).collect();
                        av.extend(pack(&ae, !tf32));
                        bv.extend(pack(&be, !tf32));
                        cv.extend(isa::c(lane).iter().map(|&(r, col)| c[r][col]));
                    }
                    tiles.push((a, b, c));
                }
                let mut bufs = vec![
                    Buffer::from_u32(&av),
                    Buffer::from_u32(&bv),
                    Buffer::from_bits(ScalarType::F32, cv.iter().map(|&x| x as u64)),
                    Buffer::zeros(ScalarType::F32, 128 * warps),
                ];
                let opts = Options { tensor_cores: rule, ..checked() };
                run(&mma_kernel(op), 1, 32 * warps as u32, &mut bufs, &opts).unwrap_or_else(|e| panic!("{op}: {e}"));
                for (w, (a, b, c)) in tiles.iter().enumerate() {
                    for lane in 0..32 {
                        for (i, &(r, col)) in isa::c(lane).iter().enumerate() {
                            let arow: Vec<u64> = a[r].iter().map(|&x| x as u64).collect();
                            let bcol: Vec<u64> = (0..k).map(|kk| b[kk][col] as u64).collect();
                            let want = dot(rule, fmt, &arow, &bcol, c[r][col]);
                            let got = bufs[3].get_bits(w * 128 + lane * 4 + i) as u32;
                            assert_eq!(
                                got, want,
                                "{op} {rule:?} trial {trial} warp {w}: D[{r}][{col}] (lane {lane}, c{i}) is {got:#010x}, dot gives {want:#010x}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// The rule matters: some product sums differ between sm_80 and sm_90 (so the option is used).
#[test]
fn mma_follows_the_tensor_core_rule_option() {
    let mut rng = Rng(0xabcdef);
    let fmt = TensorCoreInput::F16;
    let mut differ = false;
    for _ in 0..20 {
        let a: Vec<u32> = (0..16 * 16).map(|_| random_input(&mut rng, fmt)).collect();
        let b: Vec<u32> = (0..16 * 8).map(|_| random_input(&mut rng, fmt)).collect();
        let (mut av, mut bv) = (vec![], vec![]);
        for lane in 0..32 {
            av.extend(pack(&isa::a(false, lane).iter().map(|&(r, c)| a[r * 16 + c]).collect::<Vec<_>>(), true));
            bv.extend(pack(&isa::b(false, lane).iter().map(|&(r, c)| b[r * 8 + c]).collect::<Vec<_>>(), true));
        }
        let mut outs = vec![];
        for rule in [TensorCoreRule::Sm80, TensorCoreRule::Sm90] {
            let mut bufs = vec![
                Buffer::from_u32(&av),
                Buffer::from_u32(&bv),
                Buffer::from_f32(&[0.5; 128]),
                Buffer::zeros(ScalarType::F32, 128),
            ];
            run(
                &mma_kernel("mma.m16n8k16.f16"),
                1,
                32,
                &mut bufs,
                &Options { tensor_cores: rule, ..Options::default() },
            )
            .unwrap();
            outs.push(bufs.pop().unwrap());
        }
        differ |= outs[0] != outs[1];
    }
    assert!(differ, "sm_80 and sm_90 gave the same results on every tile");
}

#[test]
fn mma_under_divergence_faults_like_a_full_mask_shuffle() {
    let src = "kernel @k(%a: ptr<global, u32>, %d: ptr<global, f32>) {
entry:
  %l = laneid : u32
  %fa = vec.v4.u32 0, 0, 0, 0
  %fb = vec.v2.u32 0, 0
  %fc = vec.v4.f32 0.0, 0.0, 0.0, 0.0
  %c = lt.u32 %l, 16
  br %c, half, done
half:
  %fd = mma.m16n8k16.f16 %fa, %fb, %fc
  %e = extract.v4.f32 %fd, 0
  store %d[%l], %e
  jmp done
done:
  ret
}";
    let m = kir_ir::parse(src).unwrap();
    // The verifier proper accepts it (barrier verification, which `kir check` adds, would not):
    // the interpreter is the oracle that catches it at run time.
    let m = kir_ir::verify::verify(m).unwrap();
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 1), Buffer::zeros(ScalarType::F32, 32)];
    let args = [Arg::Buffer(0), Arg::Buffer(1)];
    let e = launch_verified(
        m.verified_kernels().next().unwrap(),
        &LaunchConfig::linear(1, 32),
        &args,
        &mut bufs,
        &Options::default(),
    )
    .unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::DivergentCollective), "{e}");
    assert_eq!(e.message, "`mma.m16n8k16.f16` needs all 32 lanes of warp 0, but 16 lanes are not executing it");
    assert!(e.notes.iter().any(|n| n == "executing lanes: 0..15"), "{e:?}");
}

// ---------------------------------------------------------------------------------------------
// ldmatrix.

/// A warp loads matrices from a shared tile of distinct values `tile[r][c] = 1000 + 16·r + c`
/// (rows of 16 elements: matrix j is columns 8·(j % 2).. and rows 8·(j / 2).. of the tile), each
/// lane giving the row address the ISA assigns it (lane 8j + r: row r of matrix j).
#[test]
fn ldmatrix_distributes_rows_and_transposes() {
    for (num, count) in [("x1", 1usize), ("x2", 2), ("x4", 4)] {
        for trans in [false, true] {
            let store = match count {
                1 => "  store %out[%o], %r\n".to_string(),
                n => format!("  store.v{n} %out[%o], %r\n"),
            };
            let src = format!(
                "kernel @k(%x: ptr<global, u16>, %out: ptr<global, u32>) {{
  shared @tile: u16[256] align 16
entry:
  %l = laneid : u32
  %s = addr @tile
  %i = mul.u32 %l, 8
  %v = load.v4 %x[%i]
  store.v4 %s[%i], %v
  %i4 = add.u32 %i, 4
  %v4 = load.v4 %x[%i4]
  store.v4 %s[%i4], %v4
  barrier
  %j = shr.u32 %l, 3
  %row = and.u32 %l, 7
  %jr = shr.u32 %j, 1
  %jc = and.u32 %j, 1
  %r8 = mul.u32 %jr, 8
  %tr = add.u32 %r8, %row
  %e0 = mul.u32 %tr, 16
  %c8 = mul.u32 %jc, 8
  %e = add.u32 %e0, %c8
  %r = ldmatrix.{num}{t} %s[%e]
  %o = mul.u32 %l, {count}
{store}  ret
}}",
                t = if trans { ".trans" } else { "" },
            );
            let tile: Vec<u16> = (0..256).map(|i| 1000 + i as u16).collect();
            let mut bufs =
                vec![Buffer::from_u16_bits(ScalarType::U16, &tile), Buffer::zeros(ScalarType::U32, 32 * count)];
            run(&src, 1, 32, &mut bufs, &checked()).unwrap_or_else(|e| panic!("{num} trans={trans}: {e}\n{src}"));
            let out = bufs[1].to_u32();
            for l in 0..32 {
                for j in 0..count {
                    // Matrix j of the tile, element (r, c).
                    let m = |r: usize, c: usize| tile[(8 * (j / 2) + r) * 16 + 8 * (j % 2) + c] as u32;
                    let (r, c) = (l / 4, 2 * (l % 4));
                    let want = if trans { m(c, r) | m(c + 1, r) << 16 } else { m(r, c) | m(r, c + 1) << 16 };
                    assert_eq!(out[l * count + j], want, "{num} trans={trans}: lane {l} register {j}");
                }
            }
        }
    }
}

#[test]
fn a_misaligned_ldmatrix_row_faults() {
    let src = "kernel @k(%out: ptr<global, u32>) {
  shared @tile: f16[256] align 16
entry:
  %l = laneid : u32
  %s = addr @tile
  %z = cvt.rn.f16.u32 0
  %i = mul.u32 %l, 8
  %zv = vec.v4.f16 %z, %z, %z, %z
  store.v4 %s[%i], %zv
  %i4 = add.u32 %i, 4
  store.v4 %s[%i4], %zv
  barrier
  %a = mul.u32 %l, 12
  %r = ldmatrix.x1 %s[%a]
  store %out[%l], %r
  ret
}";
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 32)];
    let e = run(src, 1, 32, &mut bufs, &checked()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::Misaligned), "{e}");
    // Lane 1's row starts at element 12: byte 24.
    assert_eq!(e.thread, Some([1, 0, 0]));
    assert_eq!(
        e.message,
        "misaligned 16-byte `ldmatrix.x1` row from shared `@tile`: address 0x18 (byte offset 24 into `@tile`) is not a multiple of 16"
    );
}

// ---------------------------------------------------------------------------------------------
// cp.async.

/// Each thread copies 16 bytes (4 f32) of `x` into the tile, waits, and (after a barrier) copies
/// its neighbour's 16 bytes to `y`. `n` is the source size (bytes from global; zeros after).
fn copy_kernel(n: &str, wait: &str, barrier: bool) -> String {
    format!(
        "kernel @k(%x: ptr<global, f32>, %y: ptr<global, f32>) {{
  shared @tile: f32[256] align 16
entry:
  %t = tid.x : u32
  %s = addr @tile
  %i = mul.u32 %t, 4
  cp.async.16 %s[%i], %x[%i], {n}
  cp.async.commit
{wait}{bar}  %nt = ntid.x : u32
  %t1 = add.u32 %t, 1
  %u = rem.u32 %t1, %nt
  %j = mul.u32 %u, 4
  %v = load.v4 %s[%j]
  store.v4 %y[%i], %v
  ret
}}",
        bar = if barrier { "  barrier\n" } else { "" }
    )
}

#[test]
fn cp_async_copies_and_zero_fills() {
    for n in [16u32, 12, 5, 0] {
        let src = copy_kernel(&n.to_string(), "  cp.async.wait 0\n", true);
        let x: Vec<f32> = (0..256).map(|i| i as f32 + 0.5).collect();
        let mut bufs = vec![Buffer::from_f32(&x), Buffer::from_f32(&[-1.0; 256])];
        run(&src, 1, 64, &mut bufs, &checked()).unwrap_or_else(|e| panic!("n={n}: {e}"));
        for t in 0..64usize {
            let u = (t + 1) % 64;
            for b in 0..16usize {
                let got = bufs[1].bytes[t * 16 + b];
                let want = if (b as u32) < n { bufs[0].bytes[u * 16 + b] } else { 0 };
                assert_eq!(got, want, "n={n}: thread {t} byte {b}");
            }
        }
    }
}

/// With a source size of 0 nothing is read: the source may lie beyond the buffer (the usual
/// out-of-bounds tile idiom), as long as it is aligned.
#[test]
fn cp_async_with_source_size_zero_reads_nothing() {
    let src = "kernel @k(%x: ptr<global, f32>, %y: ptr<global, f32>) {
  shared @tile: f32[4] align 16
entry:
  %s = addr @tile
  cp.async.16 %s[0], %x[1024], 0
  cp.async.commit
  cp.async.wait 0
  %v = load.v4 %s[0]
  store.v4 %y[0], %v
  ret
}";
    let mut bufs = vec![Buffer::from_f32(&[1.0; 4]), Buffer::from_f32(&[7.0; 4])];
    run(src, 1, 1, &mut bufs, &checked()).unwrap();
    assert_eq!(bufs[1].to_f32(), vec![0.0; 4]);
    // A source size that reads beyond the buffer is out of bounds.
    let src = src.replace("%x[1024], 0", "%x[4], 4");
    let e = run(&src, 1, 1, &mut bufs, &checked()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::OutOfBounds), "{e}");
    assert_eq!(e.message, "out-of-bounds 4-byte `cp.async.16` source from global buffer `%x` at byte offset 16");
}

/// `cp.async.wait 1` with two committed groups completes the first group only: the second
/// group's destination is still in flight, and reading it faults; after `cp.async.wait 0` it is
/// readable.
#[test]
fn wait_one_completes_all_but_the_newest_group() {
    let prologue = "kernel @k(%x: ptr<global, u32>, %y: ptr<global, u32>) {
  shared @a: u32[4] align 16
  shared @b: u32[4] align 16
entry:
  %sa = addr @a
  %sb = addr @b
  cp.async.16 %sa[0], %x[0], 16
  cp.async.commit
  cp.async.16 %sb[0], %x[4], 16
  cp.async.commit
  cp.async.wait 1
  %va = load.v4 %sa[0]
  store.v4 %y[0], %va
";
    let ok = format!("{prologue}  cp.async.wait 0\n  %vb = load.v4 %sb[0]\n  store.v4 %y[4], %vb\n  ret\n}}");
    let x: Vec<u32> = (1..=8).collect();
    let mut bufs = vec![Buffer::from_u32(&x), Buffer::zeros(ScalarType::U32, 8)];
    run(&ok, 1, 1, &mut bufs, &checked()).unwrap();
    assert_eq!(bufs[1].to_u32(), x);

    let early = format!("{prologue}  %vb = load.v4 %sb[0]\n  store.v4 %y[4], %vb\n  cp.async.wait 0\n  ret\n}}");
    let e = run(&early, 1, 1, &mut bufs, &checked()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::AsyncCopyInFlight), "{e}");
    assert_eq!(
        e.message,
        "read of shared `@b` bytes 0..4 while `cp.async.16` of this thread still has them in flight: wait for it with `cp.async.wait` (and a barrier for other threads)"
    );
    // Copies not committed yet are not waited for, whatever the wait.
    let uncommitted = "kernel @k(%x: ptr<global, u32>, %y: ptr<global, u32>) {
  shared @a: u32[4] align 16
entry:
  %sa = addr @a
  cp.async.16 %sa[0], %x[0], 16
  cp.async.wait 0
  %va = load %sa[2]
  store %y[0], %va
  cp.async.commit
  cp.async.wait 0
  ret
}";
    let e = run(uncommitted, 1, 1, &mut bufs, &checked()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::AsyncCopyInFlight), "{e}");
    assert!(e.message.starts_with("read of shared `@a` bytes 8..12 while `cp.async.16`"), "{}", e.message);
}

/// Another thread reads the destination before the copy's thread waited: the fault names the copy
/// and the thread that issued it.
#[test]
fn reading_another_threads_copy_in_flight_faults() {
    // Without the wait and barrier, thread 0 reads thread 1's destination, still in flight.
    let src = copy_kernel("16", "", false).replace("  ret\n}", "  cp.async.wait 0\n  ret\n}");
    let mut bufs = vec![Buffer::from_f32(&[1.0; 256]), Buffer::zeros(ScalarType::F32, 256)];
    let e = run(&src, 1, 64, &mut bufs, &Options::default()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::AsyncCopyInFlight), "{e}");
    assert_eq!(e.thread, Some([0, 0, 0]));
    assert_eq!(
        e.message,
        "read of shared `@tile` bytes 16..20 while `cp.async.16` of thread (1, 0, 0) still has them in flight: wait for it with `cp.async.wait` (and a barrier for other threads)"
    );
    assert!(e.labels.iter().any(|(_, l)| l == "thread (1, 0, 0) started the copy here"), "{e:?}");
}

#[test]
fn a_thread_that_exits_with_a_copy_in_flight_faults() {
    let src = "kernel @k(%x: ptr<global, u32>) {
  shared @a: u32[128] align 16
entry:
  %t = tid.x : u32
  %sa = addr @a
  %i = mul.u32 %t, 4
  cp.async.16 %sa[%i], %x[%i], 16
  cp.async.commit
  %odd = and.u32 %t, 1
  %w = eq.u32 %odd, 0
  br %w, wait, done
wait:
  cp.async.wait 0
  jmp done
done:
  ret
}";
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 128)];
    let e = run(src, 1, 32, &mut bufs, &Options::default()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::AsyncCopyInFlight), "{e}");
    assert_eq!(e.thread, Some([1, 0, 0]));
    assert_eq!(
        e.message,
        "thread (1, 0, 0) exits with `cp.async.16` never waited for: its copy into shared `@a` bytes 16..32 is still in flight"
    );
}

/// The copy completes at its thread's wait, as a plain write of that thread: another thread that
/// reads it after that wait but without a barrier races with it.
#[test]
fn a_copys_completion_races_with_a_read_without_barrier() {
    // Thread 0 (warp 0) copies, waits; thread 32 (warp 1, run after warp 0) reads the destination
    // with no barrier in between.
    let src = "kernel @k(%x: ptr<global, u32>, %y: ptr<global, u32>) {
  shared @a: u32[4] align 16
entry:
  %t = tid.x : u32
  %sa = addr @a
  %z = eq.u32 %t, 0
  br %z, copy, other
copy:
  cp.async.16 %sa[0], %x[0], 16
  cp.async.commit
  cp.async.wait 0
  jmp done
other:
  %r = eq.u32 %t, 32
  br %r, read, done
read:
  %v = load %sa[1]
  store %y[0], %v
  jmp done
done:
  ret
}";
    let mut bufs = vec![Buffer::from_u32(&[5, 6, 7, 8]), Buffer::zeros(ScalarType::U32, 1)];
    let e = run(src, 1, 64, &mut bufs, &checked()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::DataRace), "{e}");
    assert_eq!(e.thread, Some([32, 0, 0]));
    assert!(
        e.message.starts_with("data race on shared `@a` element 1 (byte 4): this thread reads it, and thread (0, 0, 0) of this block wrote it"),
        "{}",
        e.message
    );
    // With a barrier between the wait and the read (every thread passes it), it is race-free and
    // reads the copy.
    let fixed = "kernel @k(%x: ptr<global, u32>, %y: ptr<global, u32>) {
  shared @a: u32[4] align 16
entry:
  %t = tid.x : u32
  %sa = addr @a
  %z = eq.u32 %t, 0
  br %z, copy, mid
copy:
  cp.async.16 %sa[0], %x[0], 16
  cp.async.commit
  cp.async.wait 0
  jmp mid
mid:
  barrier
  %r = eq.u32 %t, 32
  br %r, read, done
read:
  %v = load %sa[1]
  store %y[0], %v
  jmp done
done:
  ret
}";
    let mut bufs = vec![Buffer::from_u32(&[5, 6, 7, 8]), Buffer::zeros(ScalarType::U32, 1)];
    run(fixed, 1, 64, &mut bufs, &checked()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bufs[1].to_u32(), vec![6]);
}

#[test]
fn cp_async_alignment_and_source_size_are_checked() {
    let src = "kernel @k(%x: ptr<global, u32>, %y: ptr<global, u32>) {
  shared @a: u32[8] align 16
entry:
  %t = tid.x : u32
  %sa = addr @a
  %i = mul.u32 %t, 2
  cp.async.16 %sa[0], %x[%i], 16
  cp.async.commit
  cp.async.wait 0
  ret
}";
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 16), Buffer::zeros(ScalarType::U32, 1)];
    let e = run(src, 1, 2, &mut bufs, &Options::default()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::Misaligned), "{e}");
    assert_eq!(
        e.message,
        "misaligned 16-byte `cp.async.16` source from global buffer `%x`: byte offset 8 is not a multiple of 16"
    );
    let src = "kernel @k(%x: ptr<global, u32>, %n: u32) {
  shared @a: u32[8] align 16
entry:
  %sa = addr @a
  cp.async.8 %sa[0], %x[0], %n
  cp.async.commit
  cp.async.wait 0
  ret
}";
    let m = module(src);
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 16)];
    let args = [Arg::Buffer(0), Arg::Scalar(kir_ir::types::Constant::from_bits(ScalarType::U32, 9))];
    let e = launch_verified(
        m.verified_kernels().next().unwrap(),
        &LaunchConfig::linear(1, 1),
        &args,
        &mut bufs,
        &Options::default(),
    )
    .unwrap_err();
    assert_eq!(e.fault_kind(), Some(FaultKind::OutOfBounds), "{e}");
    assert_eq!(e.message, "`cp.async.8` copies 8 bytes, but its source size is 9");
}

// ---------------------------------------------------------------------------------------------
// Enclosures.

fn run_enclosed(src: &str, grid: u32, block: u32, bufs: &mut [Buffer]) -> kir_interp::enclose::Enclosures {
    let m = module(src);
    let args: Vec<Arg> = (0..bufs.len()).map(Arg::Buffer).collect();
    let cfg = LaunchConfig::linear(grid, block);
    let k = m.verified_kernels().next().expect("a kernel");
    let (_, enc) = kir_interp::launch_enclosed(k, &cfg, &args, bufs, &checked()).unwrap_or_else(|e| panic!("{e}"));
    enc
}

/// Byte offsets of a buffer's non-exact enclosures.
fn inexact_bytes(entries: &[(usize, u32, Enc)]) -> Vec<usize> {
    entries.iter().map(|e| e.0).collect()
}

/// `e` is a range of f32 values that holds `v` and spans at most `ulps` ulp of `v`.
#[track_caller]
fn assert_f32_range(e: &Enc, v: f32, ulps: f32) {
    let Enc::Range { lo, hi, .. } = *e else { panic!("not a range around {v}: {e:?}") };
    let (l, h) = (f32::from_bits(lo as u32), f32::from_bits(hi as u32));
    let ulp = f32::from_bits((v.abs().to_bits() & 0x7f80_0000).max(0x0080_0000)) * f32::EPSILON;
    assert!(l < h && l <= v && v <= h, "{v} outside [{l}, {h}]");
    assert!(h - l <= ulps * ulp, "[{l}, {h}] around {v} is wider than {ulps} ulp");
}

/// The entry at byte `byte` of a buffer's non-exact enclosures.
#[track_caller]
fn enc_at(entries: &[(usize, u32, Enc)], byte: usize) -> Enc {
    entries.iter().find(|e| e.0 == byte).unwrap_or_else(|| panic!("no enclosure at byte {byte}: {entries:?}")).2
}

/// Vectors of exact values stay exact through registers, loops, memory and `mma`; an `mma` with
/// one inexact input element anywhere in the warp gives an unknown result everywhere (fragments
/// are exact or unknown); a vector keeps an enclosure per element, through shared memory too.
#[test]
fn enclosures_flow_through_vectors() {
    let mut rng = Rng(99);
    let a: Vec<u32> = (0..128).map(|_| random_input(&mut rng, TensorCoreInput::F16)).collect();
    let b: Vec<u32> = (0..64).map(|_| random_input(&mut rng, TensorCoreInput::F16)).collect();
    let mut bufs = vec![
        Buffer::from_u32(&a),
        Buffer::from_u32(&b),
        Buffer::from_f32(&[1.0; 128]),
        Buffer::zeros(ScalarType::F32, 128),
    ];
    let exact = run_enclosed(&mma_kernel("mma.m16n8k16.f16"), 1, 32, &mut bufs);
    assert!(exact.unusable.is_none() && exact.buffers.iter().all(Vec::is_empty), "{exact:?}");
    // Element 3 of lane 5's C fragment inexact: every element of every lane's D is unknown.
    let inexact = mma_kernel("mma.m16n8k16.f16").replace(
        "  %fd = mma.m16n8k16.f16 %fa, %fb, %fc\n",
        "  %c3 = extract.v4.f32 %fc, 3
  %x3 = ex2.approx.f32 %c3
  %five = eq.u32 %t, 5
  %y3 = select.f32 %five, %x3, %c3
  %fc2 = insert.v4.f32 %fc, 3, %y3
  %fd = mma.m16n8k16.f16 %fa, %fb, %fc2\n",
    );
    assert_ne!(inexact, mma_kernel("mma.m16n8k16.f16"));
    let enc = run_enclosed(&inexact, 1, 32, &mut bufs);
    assert!(enc.unusable.is_none(), "{enc:?}");
    assert_eq!(inexact_bytes(&enc.buffers[3]), (0..128).map(|i| 4 * i).collect::<Vec<_>>());
    assert!(enc.buffers[3].iter().all(|e| matches!(e.2, Enc::Unknown { .. })), "{:?}", enc.buffers[3]);

    let src = "kernel @k(%x: ptr<global, f32>, %y: ptr<global, f32>) {
  shared @tile: f32[128] align 16
entry:
  %t = tid.x : u32
  %i = mul.u32 %t, 4
  %v = load.v4 %x[%i]
  %e = extract.v4.f32 %v, 1
  %a = ex2.approx.f32 %e
  %w = insert.v4.f32 %v, 2, %a
  %s = addr @tile
  store.v4 %s[%i], %w
  barrier
  %u = load.v4 %s[%i]
  store.v4 %y[%i], %u
  %z = extract.v4.f32 %v, 0
  store %y[%i], %z
  ret
}";
    let mut bufs = vec![Buffer::from_f32(&[0.5; 128]), Buffer::zeros(ScalarType::F32, 128)];
    let enc = run_enclosed(src, 1, 32, &mut bufs);
    assert!(enc.unusable.is_none(), "{enc:?}");
    // Only element 2 (the approximate op's result) of every thread's vector is inexact, with
    // ex2's range, through shared memory and back.
    let y = &enc.buffers[1];
    assert_eq!(inexact_bytes(y), (0..32).map(|t| 16 * t + 8).collect::<Vec<_>>(), "{y:?}");
    let out = bufs[1].to_f32();
    for (t, e) in y.iter().enumerate() {
        assert_eq!(e.1, 4);
        assert_f32_range(&e.2, out[4 * t + 2], 8.0);
        assert_eq!(out[4 * t + 1], 0.5, "element 1 is the exact input");
    }
}

/// An approximate value in element 2 of a `vec<4, f32>` stored with `store.v4` gets its own
/// range and the other three elements stay exact; the same in a `vec<4, f16>` (four elements in
/// one 64-bit register) whose element 2 is a cancelled, then converted, approximate value.
#[test]
fn a_vector_keeps_an_enclosure_per_element() {
    let src = "kernel @k(%x: ptr<global, f32>, %y: ptr<global, f32>, %h: ptr<global, f16>) {
entry:
  %t = tid.x : u32
  %i = mul.u32 %t, 4
  %v = load.v4 %x[%i]
  %e0 = extract.v4.f32 %v, 0
  %e1 = extract.v4.f32 %v, 1
  %e2 = extract.v4.f32 %v, 2
  %e3 = extract.v4.f32 %v, 3
  %a = ex2.approx.f32 %e2
  %w = vec.v4.f32 %e0, %e1, %a, %e3
  store.v4 %y[%i], %w
  %c = sub.f32 %a, 1.0
  %h0 = cvt.rn.f16.f32 %e0
  %h1 = cvt.rn.f16.f32 %e1
  %h2 = cvt.rn.f16.f32 %c
  %h3 = cvt.rn.f16.f32 %e3
  %hv = vec.v4.f16 %h0, %h1, %h2, %h3
  store.v4 %h[%i], %hv
  ret
}";
    // ex2(1.44e-4) - 1 is about 1e-4: ex2's error (about 2^-22 absolute) is several f16 ulp there.
    let x: Vec<f32> = (0..128).map(|i| 1.44e-4 + i as f32 * 1e-7).collect();
    let mut bufs = vec![Buffer::from_f32(&x), Buffer::zeros(ScalarType::F32, 128), Buffer::zeros(ScalarType::F16, 128)];
    let enc = run_enclosed(src, 1, 32, &mut bufs);
    assert!(enc.unusable.is_none(), "{enc:?}");
    let (y, h) = (&enc.buffers[1], &enc.buffers[2]);
    assert_eq!(inexact_bytes(y), (0..32).map(|t| 16 * t + 8).collect::<Vec<_>>(), "{y:?}");
    assert_eq!(inexact_bytes(h), (0..32).map(|t| 8 * t + 4).collect::<Vec<_>>(), "{h:?}");
    let out = bufs[1].to_f32();
    let hs: Vec<u64> = (0..128).map(|i| bufs[2].get_bits(i)).collect();
    for t in 0..32 {
        assert_f32_range(&y[t].2, out[4 * t + 2], 8.0);
        for k in [0, 1, 3] {
            assert_eq!(out[4 * t + k], x[4 * t + k], "thread {t} element {k}");
        }
        let Enc::Range { lo, hi, .. } = h[t].2 else { panic!("not a range: {:?}", h[t]) };
        let (l, m, u) = (f16::from_bits(lo as u16), f16::from_bits(hs[4 * t + 2] as u16), f16::from_bits(hi as u16));
        assert!(h[t].1 == 2 && l < u && l <= m && m <= u, "thread {t}: {m} in [{l}, {u}]");
    }
}

/// `extract` gives an element's own enclosure and `insert` replaces one: an inexact element
/// overwritten by an exact value is exact again, an exact one overwritten by a range gets it.
#[test]
fn extract_and_insert_move_element_enclosures() {
    let src = "kernel @k(%x: ptr<global, f32>, %y: ptr<global, f32>, %z: ptr<global, f32>) {
entry:
  %t = tid.x : u32
  %i = mul.u32 %t, 4
  %v = load.v4 %x[%i]
  %e = extract.v4.f32 %v, 1
  %a = ex2.approx.f32 %e
  %w = insert.v4.f32 %v, 1, %a
  %w2 = insert.v4.f32 %w, 3, %a
  %b = extract.v4.f32 %w2, 3
  %c = extract.v4.f32 %w2, 0
  %d = add.f32 %b, %c
  %w3 = insert.v4.f32 %w2, 1, %c
  %w4 = insert.v4.f32 %w3, 0, %d
  store.v4 %y[%i], %w4
  store %z[%i], %c
  %j = add.u32 %i, 1
  store %z[%j], %b
  ret
}";
    let x: Vec<f32> = (0..128).map(|i| 0.25 + i as f32 / 256.0).collect();
    let mut bufs = vec![Buffer::from_f32(&x), Buffer::zeros(ScalarType::F32, 128), Buffer::zeros(ScalarType::F32, 128)];
    let enc = run_enclosed(src, 1, 32, &mut bufs);
    assert!(enc.unusable.is_none(), "{enc:?}");
    // y = [d (range), c (exact), x2 (exact), a (range)]; z[4t] = c exact, z[4t + 1] = b a range.
    let (y, z) = (&enc.buffers[1], &enc.buffers[2]);
    assert_eq!(inexact_bytes(y), (0..32).flat_map(|t| [16 * t, 16 * t + 12]).collect::<Vec<_>>(), "{y:?}");
    assert_eq!(inexact_bytes(z), (0..32).map(|t| 16 * t + 4).collect::<Vec<_>>(), "{z:?}");
    let (out, zs) = (bufs[1].to_f32(), bufs[2].to_f32());
    for t in 0..32 {
        assert_f32_range(&enc_at(y, 16 * t), out[4 * t], 8.0);
        assert_f32_range(&enc_at(y, 16 * t + 12), out[4 * t + 3], 8.0);
        assert_f32_range(&enc_at(z, 16 * t + 4), zs[4 * t + 1], 8.0);
        assert_eq!((out[4 * t + 1], out[4 * t + 2]), (x[4 * t], x[4 * t + 2]), "thread {t}");
    }
}

/// Loop-carried vector block parameters carry every element's enclosure: each thread runs
/// `tid % 5` iterations (the warp diverges), each makes element 2 of one vector approximate, and
/// the two vectors swap places at every back edge.
#[test]
fn element_enclosures_survive_divergent_loops_and_swaps() {
    let src = "kernel @k(%x: ptr<global, f32>, %y: ptr<global, f32>) {
entry:
  %t = tid.x : u32
  %n = rem.u32 %t, 5
  %i = mul.u32 %t, 4
  %a = load.v4 %x[%i]
  %b = vec.v4.f32 10.0, 20.0, 30.0, 40.0
  jmp head(0, %a, %b)
head(%k: u32, %p: vec<4, f32>, %q: vec<4, f32>):
  %more = lt.u32 %k, %n
  br %more, body, done
body:
  %e = extract.v4.f32 %p, 2
  %s = mul.f32 %e, 0.001
  %e2 = ex2.approx.f32 %s
  %p2 = insert.v4.f32 %p, 2, %e2
  %k2 = add.u32 %k, 1
  jmp head(%k2, %q, %p2)
done:
  %j = mul.u32 %t, 8
  store.v4 %y[%j], %p
  %j2 = add.u32 %j, 4
  store.v4 %y[%j2], %q
  ret
}";
    let x: Vec<f32> = (0..256).map(|i| i as f32 / 64.0).collect();
    let mut bufs = vec![Buffer::from_f32(&x), Buffer::zeros(ScalarType::F32, 512)];
    let enc = run_enclosed(src, 1, 64, &mut bufs);
    assert!(enc.unusable.is_none(), "{enc:?}");
    let (y, out) = (&enc.buffers[1], bufs[1].to_f32());
    let mut expected = Vec::new();
    for t in 0..64usize {
        // Whether element 2 of p and q is an approximate op's result.
        let (mut p, mut q) = (false, false);
        for _ in 0..t % 5 {
            p = true;
            std::mem::swap(&mut p, &mut q);
        }
        for (inexact, at) in [(p, 8 * t + 2), (q, 8 * t + 6)] {
            if inexact {
                expected.push(4 * at);
                assert_f32_range(&enc_at(y, 4 * at), out[at], 8.0);
            }
        }
    }
    assert!(expected.len() > 40, "{expected:?}");
    assert_eq!(inexact_bytes(y), expected, "{y:?}");
}

/// A function returning a vector returns every element's enclosure, from whichever of its
/// `ret`s each lane took.
#[test]
fn a_returned_vector_keeps_its_element_enclosures() {
    let src = "func @f(%x: f32, %odd: pred) -> vec<4, f32> {
entry:
  %a = ex2.approx.f32 %x
  br %odd, one, two
one:
  %v = vec.v4.f32 %x, %a, %x, 1.0
  ret %v
two:
  %w = vec.v4.f32 %x, %x, %a, 1.0
  ret %w
}
kernel @k(%x: ptr<global, f32>, %y: ptr<global, f32>) {
entry:
  %t = tid.x : u32
  %v = load %x[%t]
  %b = and.u32 %t, 1
  %odd = eq.u32 %b, 1
  %w = call @f(%v, %odd)
  %i = mul.u32 %t, 4
  store.v4 %y[%i], %w
  ret
}";
    let x: Vec<f32> = (0..32).map(|i| i as f32 / 8.0 - 2.0).collect();
    let mut bufs = vec![Buffer::from_f32(&x), Buffer::zeros(ScalarType::F32, 128)];
    let enc = run_enclosed(src, 1, 32, &mut bufs);
    assert!(enc.unusable.is_none(), "{enc:?}");
    let (y, out) = (&enc.buffers[1], bufs[1].to_f32());
    let at = |t: usize| 4 * t + if t % 2 == 1 { 1 } else { 2 };
    assert_eq!(inexact_bytes(y), (0..32).map(|t| 4 * at(t)).collect::<Vec<_>>(), "{y:?}");
    for t in 0..32 {
        assert_f32_range(&y[t].2, out[at(t)], 8.0);
        assert_eq!(out[4 * t + 3], 1.0);
    }
}

/// Elements of integer vectors are exact or unknown: a `u32` view of a vector whose element 2 is
/// an approximate f32 value loads that element unknown and the others exact.
#[test]
fn integer_vector_elements_are_exact_or_unknown() {
    let src = "kernel @k(%x: ptr<global, f32>, %g: ptr<global, f32>, %y: ptr<global, u32>) {
entry:
  %t = tid.x : u32
  %i = mul.u32 %t, 4
  %v = load.v4 %x[%i]
  %e = extract.v4.f32 %v, 2
  %a = ex2.approx.f32 %e
  %w = insert.v4.f32 %v, 2, %a
  store.v4 %g[%i], %w
  %gu = ptrcast %g : ptr<global, u32>
  %u = load.v4 %gu[%i]
  store.v4 %y[%i], %u
  ret
}";
    let mut bufs =
        vec![Buffer::from_f32(&[0.75; 128]), Buffer::zeros(ScalarType::F32, 128), Buffer::zeros(ScalarType::U32, 128)];
    let enc = run_enclosed(src, 1, 32, &mut bufs);
    assert!(enc.unusable.is_none(), "{enc:?}");
    let (g, y) = (&enc.buffers[1], &enc.buffers[2]);
    let elem2: Vec<usize> = (0..32).map(|t| 16 * t + 8).collect();
    assert_eq!((inexact_bytes(g), inexact_bytes(y)), (elem2.clone(), elem2));
    assert!(g.iter().all(|e| matches!(e.2, Enc::Range { .. })), "{g:?}");
    assert!(y.iter().all(|e| matches!(e.2, Enc::Unknown { why: Why::Bits, .. })), "{y:?}");
}

/// A copy carries each source element's enclosure to its destination element: exact bytes stay
/// exact, an approximate op's result keeps its range; an element only partly read (the rest
/// zero-filled) is unknown.
#[test]
fn enclosures_flow_through_async_copies() {
    let src = "kernel @k(%x: ptr<global, f32>, %g: ptr<global, f32>, %y: ptr<global, f32>) {
  shared @tile: f32[128] align 16
  shared @part: f32[128] align 16
entry:
  %t = tid.x : u32
  %i = mul.u32 %t, 4
  %v = load %x[%i]
  %a = ex2.approx.f32 %v
  store %g[%i], %a
  %s = addr @tile
  cp.async.16 %s[%i], %g[%i], 16
  %s2 = addr @part
  cp.async.16 %s2[%i], %g[%i], 2
  cp.async.commit
  cp.async.wait 0
  %w = load.v4 %s[%i]
  %e = extract.v4.f32 %w, 1
  store %y[%i], %e
  %f = load %s[%i]
  %j = add.u32 %i, 1
  store %y[%j], %f
  %p = load %s2[%i]
  %k = add.u32 %i, 2
  store %y[%k], %p
  %q = load %s2[%j]
  %m = add.u32 %i, 3
  store %y[%m], %q
  ret
}";
    let mut bufs =
        vec![Buffer::from_f32(&[0.25; 128]), Buffer::zeros(ScalarType::F32, 128), Buffer::zeros(ScalarType::F32, 128)];
    let enc = run_enclosed(src, 1, 32, &mut bufs);
    assert!(enc.unusable.is_none(), "{enc:?}");
    // y[4t] (element 1 of the copied vector) is exact, y[4t + 1] (element 0, the approximate
    // value) has its range, y[4t + 2] (the half-copied element 0) is unknown and y[4t + 3] (a
    // zero-filled element) exact.
    let (y, out) = (&enc.buffers[2], bufs[2].to_f32());
    assert_eq!(inexact_bytes(y), (0..32).flat_map(|t| [16 * t + 4, 16 * t + 8]).collect::<Vec<_>>(), "{y:?}");
    for t in 0..32 {
        assert_f32_range(&enc_at(y, 16 * t + 4), out[4 * t + 1], 8.0);
        assert!(matches!(enc_at(y, 16 * t + 8), Enc::Unknown { why: Why::Bits, .. }), "{y:?}");
    }
    // With an exact source nothing is inexact.
    let exact = src.replace("%a = ex2.approx.f32 %v", "%a = add.f32 %v, 1.0");
    let enc = run_enclosed(&exact, 1, 32, &mut bufs);
    assert!(enc.unusable.is_none() && enc.buffers.iter().all(Vec::is_empty), "{enc:?}");
}
