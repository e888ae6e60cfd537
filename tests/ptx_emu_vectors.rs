//! kir's PTX for vectors, vector memory, `ldmatrix`, `cp.async` and `mma`, run in the PTX
//! emulator (`kir-ptx-emu`), against results computed here, independently of kir's interpreter
//! and of the emulator.
//!
//! What it guarantees (each kernel is checked by `kir_ir::verify::check`, emitted by
//! `kir_backend_ptx::emit_module` for sm_80 and sm_90, and launched in the emulator with one
//! warp or more):
//! - `load.vN`/`store.vN` of f32, f16, f64, u8, s8, u16, u64 vectors in global and shared memory,
//!   with `vec`, `extract` and `insert`, move every element to the right place (copies, a scale,
//!   swaps and reversals of elements, `s8` elements sign-extended), and vector block parameters
//!   swapped on every iteration of a loop come out in the order the trip count's parity says.
//!   Device functions returning `vec<4, f32>`, `vec<4, s8>` and `vec<2, f16>`, called (not
//!   inlined), return every element (8-bit ones sign-extended).
//! - `cp.async` 16, 8 and 4 with full, partial (a per-lane register) and zero source sizes writes
//!   the source bytes and zeros after them (the emulator's shared memory starts as 0xff, so a
//!   missing zero shows); `ldmatrix.x1/.x2/.x4`, with and without `.trans`, on rows whose
//!   addresses the lanes give in a permuted order, gives each lane the elements the PTX ISA's
//!   fragment layout (docs/language.md, "Fragment layouts") assigns it.
//! - `mma.m16n8k16.f16` on fragments loaded with `cp.async` + `ldmatrix` (the GEMM idiom), and
//!   `mma.m16n8k16.bf16` / `mma.m16n8k8.tf32` accumulating over a K loop (the accumulator a vector
//!   block parameter) on fragments laid out here from row-major matrices, give exactly
//!   `kir_ir::eval::tensor_core::dot` of each row and column with the rule of the target (sm_80:
//!   the A100's, sm_90: the H100's). The inputs are chosen so that the two rules differ on some
//!   elements, and running the sm_90 PTX with the A100's rule forced must then fail the
//!   comparison: the check can fail.

use kir_backend_ptx::{emit_module, PtxOptions, SmVersion};
use kir_ir::eval::{TensorCoreInput, TensorCoreRule};
use kir_ptx_emu::{Arg, LaunchConfig, Memory, Options, TensorCores};

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    /// A finite float in about [-4, 4], with a varied exponent.
    fn small(&mut self) -> f64 {
        let m = (self.next() % 2001) as f64 / 1000.0 - 1.0;
        m * [0.25, 1.0, 3.0, 0.01][(self.next() % 4) as usize]
    }
}

/// One kernel argument.
enum KArg {
    Buf(Vec<u8>),
    U32(u32),
}

fn ptx(src: &str, sm: SmVersion) -> String {
    let m = kir_ir::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
    let m = kir_ir::verify::check(m).unwrap_or_else(|d| panic!("check: {d}\n{src}"));
    emit_module(&m, &PtxOptions::new(sm)).unwrap_or_else(|d| panic!("emission failed: {d:?}"))
}

/// Runs `kernel` of PTX `text` with `threads` threads in blocks of `block`; returns every buffer
/// argument's final bytes, in order.
fn run_ptx(text: &str, kernel: &str, threads: u32, block: u32, args: &[KArg], tc: Option<TensorCores>) -> Vec<Vec<u8>> {
    let module =
        kir_ptx_emu::Module::parse(text).unwrap_or_else(|e| panic!("the emulator cannot load it: {e}\n{text}"));
    let mut mem = Memory::new();
    let mut bufs = Vec::new();
    let mut eargs = Vec::new();
    for (n, a) in args.iter().enumerate() {
        match a {
            KArg::Buf(b) => {
                let id = mem.alloc(format!("b{n}"), b).expect("alloc");
                bufs.push(id);
                eargs.push(Arg::Buffer(id));
            }
            KArg::U32(v) => eargs.push(Arg::Scalar(*v as u64)),
        }
    }
    let cfg = LaunchConfig { grid: [threads / block, 1, 1], block: [block, 1, 1], dynamic_shared_bytes: 0 };
    let opts = Options { tensor_cores: tc, ..Options::default() };
    kir_ptx_emu::launch(&module, kernel, &cfg, &eargs, &mut mem, &opts)
        .unwrap_or_else(|e| panic!("launch of `{kernel}` failed: {e}\n{text}"));
    bufs.iter().map(|&b| mem.bytes(b).expect("buffer").to_vec()).collect()
}

fn run(src: &str, kernel: &str, sm: SmVersion, threads: u32, block: u32, args: &[KArg]) -> Vec<Vec<u8>> {
    run_ptx(&ptx(src, sm), kernel, threads, block, args, None)
}

const TARGETS: [SmVersion; 2] = [SmVersion::Sm80, SmVersion::Sm90];

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn f32s_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

const VECTORS: &str = "
kernel @vectors(%x: ptr<global, f32>, %y: ptr<global, f32>, %h: ptr<global, f16>, %hy: ptr<global, f16>,
                %d: ptr<global, f64>, %dy: ptr<global, f64>, %b: ptr<global, u8>, %by: ptr<global, u8>,
                %sb: ptr<global, s8>, %sy: ptr<global, s32>, %w: ptr<global, u16>, %wy: ptr<global, u16>,
                %q: ptr<global, u64>, %qy: ptr<global, u64>) {
  shared @t: u64[128] align 16
entry:
  %i = global_id.x
  %i4 = shl.u32 %i, 2
  %i2 = shl.u32 %i, 1
  ; f32 x4: every element times 2, element 3 replaced by element 0 + 1
  %v = load.v4 %x[%i4]
  %v0 = extract.v4.f32 %v, 0
  %v1 = extract.v4.f32 %v, 1
  %v2 = extract.v4.f32 %v, 2
  %s0 = mul.f32 %v0, 2.0
  %s1 = mul.f32 %v1, 2.0
  %s2 = mul.f32 %v2, 2.0
  %s3 = add.f32 %v0, 1.0
  %sv = vec.v4.f32 %s0, %s1, %s2, %s3
  store.v4 %y[%i4], %sv
  ; f16 x2: the two elements swapped
  %hv = load.v2 %h[%i2]
  %h0 = extract.v2.f16 %hv, 0
  %h1 = extract.v2.f16 %hv, 1
  %hs = vec.v2.f16 %h1, %h0
  store.v2 %hy[%i2], %hs
  ; f64 x2: element 1 replaced by the constant -2.5
  %dv = load.v2 %d[%i2]
  %dw = insert.v2.f64 %dv, 1, -2.5
  store.v2 %dy[%i2], %dw
  ; u8 x4: reversed
  %bv = load.v4 %b[%i4]
  %b0 = extract.v4.u8 %bv, 0
  %b1 = extract.v4.u8 %bv, 1
  %b2 = extract.v4.u8 %bv, 2
  %b3 = extract.v4.u8 %bv, 3
  %br = vec.v4.u8 %b3, %b2, %b1, %b0
  store.v4 %by[%i4], %br
  ; s8 x4: element 1 and 2 widened to s32 (sign extension), their sum
  %sv8 = load.v4 %sb[%i4]
  %e1 = extract.v4.s8 %sv8, 1
  %e2 = extract.v4.s8 %sv8, 2
  %w1 = cvt.s32.s8 %e1
  %w2 = cvt.s32.s8 %e2
  %ws = add.s32 %w1, %w2
  store %sy[%i], %ws
  ; u16 x4: element 2 replaced by element 3 + 1, element 3 by 7
  %uv = load.v4 %w[%i4]
  %u3 = extract.v4.u16 %uv, 3
  %u3p = add.u16 %u3, 1
  %uv1 = insert.v4.u16 %uv, 2, %u3p
  %uv2 = insert.v4.u16 %uv1, 3, 7
  store.v4 %wy[%i4], %uv2
  ; u64 x2 through shared memory: each thread writes its pair, reads its neighbour's
  %qv = load.v2 %q[%i2]
  %tp = addr @t
  %tid = tid.x
  %t2 = shl.u32 %tid, 1
  store.v2 %tp[%t2], %qv
  barrier
  %nb = add.u32 %tid, 1
  %nbm = and.u32 %nb, 63
  %n2 = shl.u32 %nbm, 1
  %qn = load.v2 %tp[%n2]
  store.v2 %qy[%i2], %qn
  ret
}
";

#[test]
fn vector_copies_scales_and_element_moves() {
    const N: usize = 128;
    let mut rng = Rng(1);
    let x: Vec<f32> = (0..4 * N).map(|_| rng.small() as f32).collect();
    let h: Vec<u16> = (0..2 * N).map(|_| half::f16::from_f64(rng.small()).to_bits()).collect();
    let d: Vec<f64> = (0..2 * N).map(|_| rng.small()).collect();
    let b = rng.bytes(4 * N);
    let sb = rng.bytes(4 * N);
    let w: Vec<u16> = (0..4 * N).map(|_| rng.next() as u16).collect();
    let q: Vec<u64> = (0..2 * N).map(|_| rng.next()).collect();
    let bytes16 = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let bytes64 = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let d_bytes: Vec<u8> = d.iter().flat_map(|x| x.to_le_bytes()).collect();

    // Expected, element by element.
    let mut ey = Vec::new();
    for c in x.chunks(4) {
        ey.extend([c[0] * 2.0, c[1] * 2.0, c[2] * 2.0, c[0] + 1.0]);
    }
    let ehy: Vec<u16> = h.chunks(2).flat_map(|c| [c[1], c[0]]).collect();
    let edy: Vec<f64> = d.chunks(2).flat_map(|c| [c[0], -2.5]).collect();
    let eby: Vec<u8> = b.chunks(4).flat_map(|c| [c[3], c[2], c[1], c[0]]).collect();
    let esy: Vec<i32> = sb.chunks(4).map(|c| c[1] as i8 as i32 + c[2] as i8 as i32).collect();
    let ewy: Vec<u16> = w.chunks(4).flat_map(|c| [c[0], c[1], c[3].wrapping_add(1), 7]).collect();
    // Blocks of 64 threads: thread t of a block reads the pair of thread (t + 1) % 64.
    let eqy: Vec<u64> = (0..N)
        .flat_map(|i| {
            let j = i / 64 * 64 + (i % 64 + 1) % 64;
            [q[2 * j], q[2 * j + 1]]
        })
        .collect();

    for sm in TARGETS {
        let out = run(
            VECTORS,
            "vectors",
            sm,
            N as u32,
            64,
            &[
                KArg::Buf(f32s_bytes(&x)),
                KArg::Buf(vec![0; 16 * N]),
                KArg::Buf(bytes16(&h)),
                KArg::Buf(vec![0; 4 * N]),
                KArg::Buf(d_bytes.clone()),
                KArg::Buf(vec![0; 16 * N]),
                KArg::Buf(b.clone()),
                KArg::Buf(vec![0; 4 * N]),
                KArg::Buf(sb.clone()),
                KArg::Buf(vec![0; 4 * N]),
                KArg::Buf(bytes16(&w)),
                KArg::Buf(vec![0; 8 * N]),
                KArg::Buf(bytes64(&q)),
                KArg::Buf(vec![0; 16 * N]),
            ],
        );
        let s = sm.name();
        assert_eq!(out[1], f32s_bytes(&ey), "{s}: f32 x4 scale");
        assert_eq!(out[3], bytes16(&ehy), "{s}: f16 x2 swap");
        assert_eq!(out[5], edy.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>(), "{s}: f64 x2 insert");
        assert_eq!(out[7], eby, "{s}: u8 x4 reverse");
        assert_eq!(words(&out[9]), esy.iter().map(|&v| v as u32).collect::<Vec<u32>>(), "{s}: s8 x4 sign extension");
        assert_eq!(out[11], bytes16(&ewy), "{s}: u16 x4 inserts");
        assert_eq!(out[13], bytes64(&eqy), "{s}: u64 x2 through shared memory");
    }
}

const SWAP_LOOP: &str = "
kernel @swap(%x: ptr<global, u32>, %y: ptr<global, f32>, %n: u32) {
entry:
  %i = global_id.x
  %i2 = shl.u32 %i, 1
  %a = load.v2 %x[%i2]
  %b = load.v2 %y[%i2]
  %bu0 = extract.v2.f32 %b, 0
  %bu1 = extract.v2.f32 %b, 1
  %ub0 = bitcast.u32.f32 %bu0
  %ub1 = bitcast.u32.f32 %bu1
  %bu = vec.v2.u32 %ub0, %ub1
  jmp head(0, %a, %bu)
head(%k: u32, %p: vec<2, u32>, %q: vec<2, u32>):
  %more = lt.u32 %k, %n
  br %more, body, done
body:
  %k1 = add.u32 %k, 1
  %p0 = extract.v2.u32 %p, 0
  %p1 = add.u32 %p0, 1
  %pi = insert.v2.u32 %p, 0, %p1
  jmp head(%k1, %q, %pi)
done:
  store.v2 %x[%i2], %p
  %q0 = extract.v2.u32 %q, 0
  %q1 = extract.v2.u32 %q, 1
  %f0 = bitcast.f32.u32 %q0
  %f1 = bitcast.f32.u32 %q1
  %qf = vec.v2.f32 %f0, %f1
  store.v2 %y[%i2], %qf
  ret
}
";

/// Vector block parameters swapped on each iteration (a parallel copy with a cycle, element by
/// element), one of them changed on the way.
#[test]
fn vector_block_parameters_rotate_across_a_loop() {
    const N: usize = 64;
    let mut rng = Rng(2);
    let x: Vec<u32> = (0..2 * N).map(|_| rng.next() as u32).collect();
    let y: Vec<u32> = (0..2 * N).map(|_| rng.next() as u32).collect();
    let xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let yb: Vec<u8> = y.iter().flat_map(|v| v.to_le_bytes()).collect();
    for n in [0u32, 1, 2, 5] {
        // The loop body: (p, q) <- (q, p with element 0 plus one).
        let (mut ex, mut ey) = (x.clone(), y.clone());
        for i in 0..N {
            let (mut p, mut q) = ([x[2 * i], x[2 * i + 1]], [y[2 * i], y[2 * i + 1]]);
            for _ in 0..n {
                let pi = [p[0].wrapping_add(1), p[1]];
                (p, q) = (q, pi);
            }
            ex[2 * i..2 * i + 2].copy_from_slice(&p);
            ey[2 * i..2 * i + 2].copy_from_slice(&q);
        }
        for sm in TARGETS {
            let out =
                run(SWAP_LOOP, "swap", sm, N as u32, 32, &[KArg::Buf(xb.clone()), KArg::Buf(yb.clone()), KArg::U32(n)]);
            assert_eq!(words(&out[0]), ex, "{}: n = {n}, first vector", sm.name());
            assert_eq!(words(&out[1]), ey, "{}: n = {n}, second vector", sm.name());
        }
    }
}

const LDMATRIX: &str = "
kernel @ldm(%src: ptr<global, u16>, %z: ptr<global, u32>, %out: ptr<global, u32>, %zout: ptr<global, u32>) {
  shared @t: u16[256] align 16
  shared @zs: u32[128] align 16
entry:
  %l = laneid
  %tp = addr @t
  %zp = addr @zs
  %e = shl.u32 %l, 3
  cp.async.16 %tp[%e], %src[%e], 16
  ; zero fill: 8 bytes of which the first l % 9 from global; 4 bytes of which 2; 16 bytes of none
  %n = rem.u32 %l, 9
  %z2 = shl.u32 %l, 1
  cp.async.8 %zp[%z2], %z[%z2], %n
  %z1 = add.u32 %l, 64
  cp.async.4 %zp[%z1], %z[%z1], 2
  cp.async.commit
  %z4 = shl.u32 %l, 2
  %lo = lt.u32 %l, 8
  br %lo, zero16, joined
zero16:
  %z4o = add.u32 %z4, 96
  cp.async.16 %zp[%z4o], %z[%z4o], 0
  jmp joined
joined:
  cp.async.commit
  cp.async.wait 1
  cp.async.wait 0
  barrier
  ; lane l gives the address of row (5l + 3) % 32 of the tile
  %r5 = mul.u32 %l, 5
  %r53 = add.u32 %r5, 3
  %row = and.u32 %r53, 31
  %ri = shl.u32 %row, 3
  %m4 = ldmatrix.x4 %tp[%ri]
  %m4t = ldmatrix.x4.trans %tp[%ri]
  %m2 = ldmatrix.x2 %tp[%ri]
  %m2t = ldmatrix.x2.trans %tp[%ri]
  %m1 = ldmatrix.x1 %tp[%ri]
  %m1t = ldmatrix.x1.trans %tp[%ri]
  %o = mul.u32 %l, 16
  store.v4 %out[%o], %m4
  %o4 = add.u32 %o, 4
  store.v4 %out[%o4], %m4t
  %o8 = add.u32 %o, 8
  store.v2 %out[%o8], %m2
  %o10 = add.u32 %o, 10
  store.v2 %out[%o10], %m2t
  %o12 = add.u32 %o, 12
  store %out[%o12], %m1
  %o13 = add.u32 %o, 13
  store %out[%o13], %m1t
  %zv = load.v4 %zp[%z4]
  store.v4 %zout[%z4], %zv
  ret
}
";

/// `cp.async` into shared memory (with zero fill), then `ldmatrix` in every form.
#[test]
fn ldmatrix_of_a_tile_copied_with_cp_async() {
    let mut rng = Rng(3);
    let tile: Vec<u16> = (0..256).map(|_| rng.next() as u16).collect();
    let zsrc: Vec<u32> = (0..128).map(|_| rng.next() as u32).collect();
    // Matrix m's row r is the row lane 8m + r points at: tile row (5(8m + r) + 3) % 32.
    let elem = |m: usize, r: usize, c: usize| tile[((5 * (8 * m + r) + 3) % 32) * 8 + c] as u32;
    let pack = |lo: u32, hi: u32| lo | hi << 16;
    let mut expect = vec![0u32; 32 * 16];
    for l in 0..32 {
        let (g, q) = (l / 4, l % 4);
        let plain = |m: usize| pack(elem(m, g, 2 * q), elem(m, g, 2 * q + 1));
        let trans = |m: usize| pack(elem(m, 2 * q, g), elem(m, 2 * q + 1, g));
        let o = &mut expect[16 * l..16 * l + 16];
        for m in 0..4 {
            o[m] = plain(m);
            o[4 + m] = trans(m);
        }
        o[8] = plain(0);
        o[9] = plain(1);
        o[10] = trans(0);
        o[11] = trans(1);
        o[12] = plain(0);
        o[13] = trans(0);
    }
    // The zero-filled words: 64 words of 8-byte copies with l % 9 source bytes, 32 words of
    // 4-byte copies with 2, 32 words of 16-byte copies with none (lanes 0..7).
    let zbytes: Vec<u8> = zsrc.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut zexp = vec![0u8; 512];
    for l in 0..32 {
        let n = l % 9;
        zexp[8 * l..8 * l + n].copy_from_slice(&zbytes[8 * l..8 * l + n]);
        zexp[4 * (64 + l)..4 * (64 + l) + 2].copy_from_slice(&zbytes[4 * (64 + l)..4 * (64 + l) + 2]);
    }
    for sm in TARGETS {
        let out = run(
            LDMATRIX,
            "ldm",
            sm,
            32,
            32,
            &[
                KArg::Buf(tile.iter().flat_map(|v| v.to_le_bytes()).collect()),
                KArg::Buf(zbytes.clone()),
                KArg::Buf(vec![0; 4 * 32 * 16]),
                KArg::Buf(vec![0; 512]),
            ],
        );
        let got = words(&out[2]);
        for l in 0..32 {
            for (j, what) in [(0, "x4"), (4, "x4.trans"), (8, "x2"), (10, "x2.trans"), (12, "x1"), (13, "x1.trans")] {
                let n = match what {
                    "x4" | "x4.trans" => 4,
                    "x2" | "x2.trans" => 2,
                    _ => 1,
                };
                assert_eq!(
                    got[16 * l + j..16 * l + j + n],
                    expect[16 * l + j..16 * l + j + n],
                    "{}: ldmatrix.{what}, lane {l}",
                    sm.name()
                );
            }
        }
        assert_eq!(out[3], zexp, "{}: cp.async zero fill", sm.name());
    }
}

/// `f32` bits of `x` rounded to f16 / bf16 bits.
fn f16_bits(x: f64) -> u64 {
    half::f16::from_f64(x).to_bits() as u64
}
fn bf16_bits(x: f64) -> u64 {
    half::bf16::from_f64(x).to_bits() as u64
}

/// Row-major `m × n` matrix of raw bits.
struct Mat {
    n: usize,
    v: Vec<u64>,
}

impl Mat {
    fn at(&self, r: usize, c: usize) -> u64 {
        self.v[r * self.n + c]
    }
}

/// `D = A·B + C` per element by `kir_ir::eval::tensor_core::dot`: A is m×k, B k×n, C m×n (f32).
fn expected_mma(rule: TensorCoreRule, fmt: TensorCoreInput, a: &Mat, b: &Mat, c: &[f32], k: usize) -> Vec<u32> {
    let n = b.n;
    let m = c.len() / n;
    let mut d = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let row: Vec<u64> = (0..k).map(|kk| a.at(i, kk)).collect();
            let col: Vec<u64> = (0..k).map(|kk| b.at(kk, j)).collect();
            d.push(kir_ir::eval::dot(rule, fmt, &row, &col, c[i * n + j].to_bits()));
        }
    }
    d
}

fn rule_of(sm: SmVersion) -> TensorCoreRule {
    let (ma, mi) = sm.compute_capability();
    TensorCoreRule::from_compute_capability(ma * 10 + mi)
}

const MMA_F16: &str = "
kernel @mma_f16(%a: ptr<global, f16>, %b: ptr<global, f16>, %c: ptr<global, f32>, %d: ptr<global, f32>) {
  shared @sa: f16[256] align 16
  shared @sb: f16[256] align 16
entry:
  %l = laneid
  %pa = addr @sa
  %pb = addr @sb
  %e = shl.u32 %l, 3
  cp.async.16 %pa[%e], %a[%e], 16
  %eb = and.u32 %e, 127
  cp.async.16 %pb[%e], %b[%eb], 16
  cp.async.commit
  cp.async.wait 0
  barrier
  ; A (16x16, row-major): lane l points at row l % 16, column 8 (l / 16)
  %r = and.u32 %l, 15
  %h = shr.u32 %l, 4
  %r16 = shl.u32 %r, 4
  %h8 = shl.u32 %h, 3
  %ia = add.u32 %r16, %h8
  %fa = ldmatrix.x4 %pa[%ia]
  ; B (16x8, k-major rows): lane l < 16 points at row k = l, transposed into the col fragment
  %ib = shl.u32 %r, 3
  %fb = ldmatrix.x2.trans %pb[%ib]
  ; C and D: c0, c1 at row g, columns 2q, 2q + 1; c2, c3 at row g + 8
  %g = shr.u32 %l, 2
  %q = and.u32 %l, 3
  %g8 = shl.u32 %g, 3
  %q2 = shl.u32 %q, 1
  %ic = add.u32 %g8, %q2
  %ic8 = add.u32 %ic, 64
  %c01 = load.v2 %c[%ic]
  %c23 = load.v2 %c[%ic8]
  %c0 = extract.v2.f32 %c01, 0
  %c1 = extract.v2.f32 %c01, 1
  %c2 = extract.v2.f32 %c23, 0
  %c3 = extract.v2.f32 %c23, 1
  %cv = vec.v4.f32 %c0, %c1, %c2, %c3
  %dv = mma.m16n8k16.f16 %fa, %fb, %cv
  %d0 = extract.v4.f32 %dv, 0
  %d1 = extract.v4.f32 %dv, 1
  %d2 = extract.v4.f32 %dv, 2
  %d3 = extract.v4.f32 %dv, 3
  %d01 = vec.v2.f32 %d0, %d1
  %d23 = vec.v2.f32 %d2, %d3
  store.v2 %d[%ic], %d01
  store.v2 %d[%ic8], %d23
  ret
}
";

/// Inputs for which the A100's and the H100's tensor cores differ somewhere (checked).
fn mma_inputs(rng: &mut Rng, m: usize, k: usize, n: usize, round: fn(f64) -> u64) -> (Mat, Mat, Vec<f32>) {
    let a = Mat { n: k, v: (0..m * k).map(|_| round(rng.small())).collect() };
    let b = Mat { n, v: (0..k * n).map(|_| round(rng.small())).collect() };
    let c: Vec<f32> = (0..m * n).map(|_| rng.small() as f32).collect();
    (a, b, c)
}

fn mat_bytes16(m: &Mat) -> Vec<u8> {
    m.v.iter().flat_map(|&x| (x as u16).to_le_bytes()).collect()
}

/// `mma.m16n8k16.f16` of a 16×16 by 16×8 tile loaded with `cp.async` and `ldmatrix`.
#[test]
fn mma_f16_of_tiles_loaded_with_ldmatrix() {
    let mut rng = Rng(4);
    let (a, b, c) = mma_inputs(&mut rng, 16, 16, 8, f16_bits);
    let e80 = expected_mma(TensorCoreRule::Sm80, TensorCoreInput::F16, &a, &b, &c, 16);
    let e90 = expected_mma(TensorCoreRule::Sm90, TensorCoreInput::F16, &a, &b, &c, 16);
    assert_ne!(e80, e90, "the inputs must tell the two rules apart");
    let args = || {
        [KArg::Buf(mat_bytes16(&a)), KArg::Buf(mat_bytes16(&b)), KArg::Buf(f32s_bytes(&c)), KArg::Buf(vec![0; 4 * 128])]
    };
    for sm in TARGETS {
        let out = run(MMA_F16, "mma_f16", sm, 32, 32, &args());
        let want = expected_mma(rule_of(sm), TensorCoreInput::F16, &a, &b, &c, 16);
        assert_eq!(words(&out[3]), want, "{}: D = A·B + C", sm.name());
    }
    // The comparison can fail: the sm_90 PTX run on the A100's tensor cores gives the A100's
    // results, which differ from the H100's.
    let text = ptx(MMA_F16, SmVersion::Sm90);
    let out = run_ptx(&text, "mma_f16", 32, 32, &args(), Some(TensorCores::Sm80));
    assert_eq!(words(&out[3]), e80);
    assert_ne!(words(&out[3]), e90);
}

/// The K loop: A and B fragments for `steps` k-slices, laid out per lane (`frag_a`, `frag_b`),
/// the accumulator a loop-carried `vec<4, f32>` (its `mma` result bound by a `jmp`, so the result
/// shares the parameter's registers).
fn mma_loop_src(kind: &str) -> String {
    format!(
        "
kernel @mma_loop(%fa: ptr<global, u32>, %fb: ptr<global, u32>, %c: ptr<global, f32>, %d: ptr<global, f32>, %steps: u32) {{
entry:
  %l = laneid
  %ic = shl.u32 %l, 2
  %c0 = load.v4 %c[%ic]
  jmp head(0, %c0)
head(%s: u32, %acc: vec<4, f32>):
  %more = lt.u32 %s, %steps
  br %more, body, done
body:
  %s32 = shl.u32 %s, 5
  %sl = add.u32 %s32, %l
  %ia = shl.u32 %sl, 2
  %ib = shl.u32 %sl, 1
  %a = load.v4 %fa[%ia]
  %b = load.v2 %fb[%ib]
  %acc1 = {kind} %a, %b, %acc
  %s1 = add.u32 %s, 1
  jmp head(%s1, %acc1)
done:
  store.v4 %d[%ic], %acc
  ret
}}
"
    )
}

/// Per lane and k-slice, the A fragment (4 words) of the m16n8k16 (`tf32`: m16n8k8) layout.
fn frag_a(a: &Mat, steps: usize, tf32: bool) -> Vec<u32> {
    let mut out = Vec::new();
    for s in 0..steps {
        for l in 0..32 {
            let (g, q) = (l / 4, l % 4);
            if tf32 {
                let kk = 8 * s;
                for i in 0..4 {
                    out.push(a.at(g + 8 * (i & 1), kk + q + 4 * (i >> 1)) as u32);
                }
            } else {
                let kk = 16 * s;
                let half = |i: usize| {
                    let row = g + if matches!(i, 2 | 3 | 6 | 7) { 8 } else { 0 };
                    let col = 2 * q + (i & 1) + if i >= 4 { 8 } else { 0 };
                    a.at(row, kk + col) as u32
                };
                for j in 0..4 {
                    out.push(half(2 * j) | half(2 * j + 1) << 16);
                }
            }
        }
    }
    out
}

/// Per lane and k-slice, the B fragment (2 words).
fn frag_b(b: &Mat, steps: usize, tf32: bool) -> Vec<u32> {
    let mut out = Vec::new();
    for s in 0..steps {
        for l in 0..32 {
            let (g, q) = (l / 4, l % 4);
            if tf32 {
                for i in 0..2 {
                    out.push(b.at(8 * s + q + 4 * i, g) as u32);
                }
            } else {
                let half = |i: usize| b.at(16 * s + 2 * q + (i & 1) + if i >= 2 { 8 } else { 0 }, g) as u32;
                out.push(half(0) | half(1) << 16);
                out.push(half(2) | half(3) << 16);
            }
        }
    }
    out
}

/// C and D (16×8) per lane: c_i at row g + 8 [i >= 2], column 2q + (i & 1).
fn frag_c(c: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    for l in 0..32 {
        let (g, q) = (l / 4, l % 4);
        for i in 0..4 {
            out.push(c[(g + if i >= 2 { 8 } else { 0 }) * 8 + 2 * q + (i & 1)]);
        }
    }
    out
}

fn words_bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// `bf16` and `tf32` `mma` accumulating over a K loop of 0 to 4 slices.
#[test]
fn mma_bf16_and_tf32_accumulate_over_a_k_loop() {
    let mut rng = Rng(5);
    for (kind, fmt, kslice, tf32) in
        [("mma.m16n8k16.bf16", TensorCoreInput::Bf16, 16, false), ("mma.m16n8k8.tf32", TensorCoreInput::Tf32, 8, true)]
    {
        let src = mma_loop_src(kind);
        const STEPS: usize = 4;
        let k = kslice * STEPS;
        // tf32 inputs: f32 bit patterns whose 13 low bits are noise the tensor cores ignore.
        let round: fn(f64) -> u64 =
            if tf32 { |x| ((x as f32).to_bits() & !0x1fff) as u64 | (x.to_bits() & 0x1fff) } else { bf16_bits };
        let (a, b, c) = mma_inputs(&mut rng, 16, k, 8, round);
        let cw: Vec<u32> = c.iter().map(|x| x.to_bits()).collect();
        let fa = words_bytes(&frag_a(&a, STEPS, tf32));
        let fb = words_bytes(&frag_b(&b, STEPS, tf32));
        let fc = words_bytes(&frag_c(&cw));
        let mut told_apart = false;
        for steps in [0, 1, STEPS] {
            for sm in TARGETS {
                let out = run(
                    &src,
                    "mma_loop",
                    sm,
                    32,
                    32,
                    &[
                        KArg::Buf(fa.clone()),
                        KArg::Buf(fb.clone()),
                        KArg::Buf(fc.clone()),
                        KArg::Buf(vec![0; 4 * 128]),
                        KArg::U32(steps as u32),
                    ],
                );
                let want = expected_mma(rule_of(sm), fmt, &a, &b, &c, kslice * steps);
                assert_eq!(words(&out[3]), frag_c(&want), "{kind}, {} slices, {}", steps, sm.name());
                let other = expected_mma(TensorCoreRule::Sm80, fmt, &a, &b, &c, kslice * steps);
                told_apart |= other != want;
            }
        }
        assert!(told_apart, "{kind}: the inputs must tell the two rules apart");
    }
}

const FUNCS: &str = "
func @scaled(%p: ptr<global, f32>, %i: u32, %k: f32) -> vec<4, f32> {
entry:
  %v = load.v4 %p[%i]
  %a = extract.v4.f32 %v, 0
  %b = extract.v4.f32 %v, 3
  %a2 = mul.f32 %a, %k
  %b2 = mul.f32 %b, %k
  %w = insert.v4.f32 %v, 0, %a2
  %w2 = insert.v4.f32 %w, 3, %b2
  ret %w2
}
func @bytes(%p: ptr<global, s8>, %i: u32) -> vec<4, s8> {
entry:
  %v = load.v4 %p[%i]
  ret %v
}
func @halves(%x: f16, %y: f16) -> vec<2, f16> {
entry:
  %v = vec.v2.f16 %y, %x
  ret %v
}
kernel @calls(%x: ptr<global, f32>, %y: ptr<global, f32>, %b: ptr<global, s8>, %s: ptr<global, s32>,
              %h: ptr<global, f16>) {
entry:
  %i = global_id.x
  %i4 = shl.u32 %i, 2
  %v = call @scaled(%x, %i4, 3.0)
  store.v4 %y[%i4], %v
  %bv = call @bytes(%b, %i4)
  %b0 = extract.v4.s8 %bv, 0
  %b3 = extract.v4.s8 %bv, 3
  %w0 = cvt.s32.s8 %b0
  %w3 = cvt.s32.s8 %b3
  %ws = sub.s32 %w0, %w3
  store %s[%i], %ws
  %i2 = shl.u32 %i, 1
  %h0 = load %h[%i2]
  %i21 = add.u32 %i2, 1
  %h1 = load %h[%i21]
  %hv = call @halves(%h0, %h1)
  store.v2 %h[%i2], %hv
  ret
}
";

/// Device functions returning vectors (emitted as written, not inlined): the result travels in
/// a `.param` byte array, 8-bit elements sign-extended on the way back.
#[test]
fn vector_results_of_device_functions() {
    const N: usize = 64;
    let mut rng = Rng(6);
    let x: Vec<f32> = (0..4 * N).map(|_| rng.small() as f32).collect();
    let b = rng.bytes(4 * N);
    let h: Vec<u16> = (0..2 * N).map(|_| rng.next() as u16).collect();
    let ey: Vec<f32> = x.chunks(4).flat_map(|c| [c[0] * 3.0, c[1], c[2], c[3] * 3.0]).collect();
    let es: Vec<u32> = b.chunks(4).map(|c| (c[0] as i8 as i32 - c[3] as i8 as i32) as u32).collect();
    let eh: Vec<u16> = h.chunks(2).flat_map(|c| [c[1], c[0]]).collect();
    let hb = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    for sm in TARGETS {
        let text = ptx(FUNCS, sm);
        assert!(text.contains("call.uni (retval0), scaled"), "the call is emitted as a call:\n{text}");
        let out = run_ptx(
            &text,
            "calls",
            N as u32,
            32,
            &[
                KArg::Buf(f32s_bytes(&x)),
                KArg::Buf(vec![0; 16 * N]),
                KArg::Buf(b.clone()),
                KArg::Buf(vec![0; 4 * N]),
                KArg::Buf(hb(&h)),
            ],
            None,
        );
        assert_eq!(out[1], f32s_bytes(&ey), "{}: vec<4, f32> result", sm.name());
        assert_eq!(words(&out[3]), es, "{}: vec<4, s8> result", sm.name());
        assert_eq!(out[4], hb(&eh), "{}: vec<2, f16> result", sm.name());
    }
}
