//! The interpreter executes kernels as the GPU would: ops through the shared evaluator, SIMT
//! divergence and reconvergence, barriers, shared memory, warp collectives, atomics, and
//! deterministic results whatever the number of host threads.

use kir_interp::{Arg, Buffer, ErrorKind, LaunchConfig, Options, Stats};
use kir_ir::types::{Constant, ScalarType};
mod verified_launch;
use verified_launch::launch;

fn kernel(src: &str) -> kir_ir::Kernel {
    let m = kir_ir::parse(src).unwrap_or_else(|d| panic!("parse error: {d:?}"));
    let diags = kir_ir::verify::verify_module(&m);
    assert!(!kir_ir::diag::has_errors(&diags), "verify: {diags:?}");
    m.kernels.into_iter().next().unwrap()
}

fn run(src: &str, cfg: LaunchConfig, args: &[Arg], bufs: &mut [Buffer]) -> Stats {
    launch(&kernel(src), &cfg, args, bufs, &Options::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn f32s(b: &Buffer) -> Vec<f32> {
    b.to_f32()
}

const RELU: &str = include_str!("../kernels/relu_backward.kir");

#[test]
fn relu_backward_matches_reference_and_counts() {
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 - 500.0) / 7.0).collect();
    let dy: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let mut bufs = vec![Buffer::from_f32(&x), Buffer::from_f32(&dy), Buffer::zeros(ScalarType::F32, n)];
    let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::Scalar(Constant::u32(n as u32))];
    let stats = run(RELU, LaunchConfig::linear(4, 256), &args, &mut bufs);
    let want: Vec<f32> = x.iter().zip(&dy).map(|(x, g)| if *x > 0.0 { *g } else { 0.0 }).collect();
    assert_eq!(f32s(&bufs[2]), want);
    // 1024 threads: global_id, lt, br for all; 1000 in bounds run 5 instructions + jmp; all ret.
    assert_eq!(stats.thread_instructions, 1024 * 3 + 1000 * 6 + 1024);
    assert_eq!(stats.global_bytes_read, 1000 * 8);
    assert_eq!(stats.global_bytes_written, 1000 * 4);
    assert_eq!((stats.blocks, stats.threads, stats.barriers), (4, 1024, 0));
    // Warps: 32 per launch; the last block's warps 7 (lanes 0..7 in bounds) diverge.
    assert!(stats.warp_instructions >= 32 * 4);
}

#[test]
fn ops_run_through_the_evaluator_incl_half_types() {
    // One thread per element: f16 and bf16 loads, arithmetic in f32 and in the half type, stores.
    let src = r#"
kernel @k(%a: ptr<global, f16>, %b: ptr<global, bf16>, %o16: ptr<global, f16>, %ob: ptr<global, bf16>, %o32: ptr<global, f32>, %oi: ptr<global, s32>) {
entry:
  %i = tid.x : u32
  %x = load %a[%i]
  %y = load %b[%i]
  %s = add.f16 %x, %x
  store %o16[%i], %s
  %yw = cvt.f32.bf16 %y
  %xw = cvt.f32.f16 %x
  %m = fma.f32 %xw, %yw, -0.0
  %mb = cvt.bf16.f32 %m
  store %ob[%i], %mb
  %mn = min.f32 %xw, %yw
  store %o32[%i], %mn
  %t = cvt.rzi.s32.f32 %m
  %d = div.s32 %t, -2
  store %oi[%i], %d
  ret
}
"#;
    let h = |v: f32| half::f16::from_f32(v).to_bits();
    let bf = |v: f32| half::bf16::from_f32(v).to_bits();
    // x: 1.5, -0.0, 65504 (f16 max: doubling overflows to inf), NaN; y: 2, -0.0, 3, 1.
    let xs = [h(1.5), h(-0.0), h(65504.0), 0x7e00];
    let ys = [bf(2.0), bf(-0.0), bf(3.0), bf(1.0)];
    let mut bufs = vec![
        Buffer::from_u16_bits(ScalarType::F16, &xs),
        Buffer::from_u16_bits(ScalarType::BF16, &ys),
        Buffer::zeros(ScalarType::F16, 4),
        Buffer::zeros(ScalarType::BF16, 4),
        Buffer::zeros(ScalarType::F32, 4),
        Buffer::zeros(ScalarType::S32, 4),
    ];
    let args: Vec<Arg> = (0..6).map(Arg::Buffer).collect();
    run(src, LaunchConfig::linear(1, 4), &args, &mut bufs);
    // f16 add: 3.0, -0.0 + -0.0 = -0.0, 65504 + 65504 overflows to +inf, NaN stays NaN.
    assert_eq!(bufs[2].get_bits(0), h(3.0) as u64);
    assert_eq!(bufs[2].get_bits(1), 0x8000);
    assert_eq!(bufs[2].get_bits(2), 0x7c00);
    assert_eq!(bufs[2].get_bits(3) & 0x7c00, 0x7c00);
    assert_ne!(bufs[2].get_bits(3) & 0x03ff, 0);
    // fma(x, y, -0.0): 3.0; (-0)(-0) + -0 = +0; 65504 * 3 = 196512 -> bf16 196608 (nearest even).
    assert_eq!(bufs[3].get_bits(0), bf(3.0) as u64);
    assert_eq!(bufs[3].get_bits(1), 0);
    assert_eq!(bufs[3].to_f32()[2], 196608.0);
    // min: 1.5, min(-0, -0) = -0, 3, and min(NaN, 1) = 1 (the non-NaN operand).
    let mn = bufs[4].to_f32();
    assert_eq!(mn[..3], [1.5, -0.0, 3.0]);
    assert!(mn[1].is_sign_negative());
    assert_eq!(mn[3], 1.0);
    // cvt.rzi.s32 then div by -2: 3 / -2 = -1 (truncating); 0; 196512 / -2 = -98256; NaN -> 0.
    assert_eq!(bufs[5].to_u32().iter().map(|&v| v as i32).collect::<Vec<_>>(), vec![-1, 0, -98256, 0]);
}

const DIVERGENT_LOOP: &str = r#"
; Each lane loops tid % 5 times, summing i * 10; the loop result is used after reconvergence,
; and odd lanes add 1000 on a branch of their own.
kernel @k(%out: ptr<global, u32>) {
entry:
  %t = tid.x : u32
  %n = rem.u32 %t, 5
  jmp head(0, 0)
head(%i: u32, %acc: u32):
  %c = lt.u32 %i, %n
  br %c, body, after
body:
  %v = mul.u32 %i, 10
  %acc2 = add.u32 %acc, %v
  %i2 = add.u32 %i, 1
  jmp head(%i2, %acc2)
after:
  %odd = and.u32 %t, 1
  %isodd = ne.u32 %odd, 0
  br %isodd, odd, join(%acc)
odd:
  %b = add.u32 %acc, 1000
  jmp join(%b)
join(%r: u32):
  store %out[%t], %r
  ret
}
"#;

#[test]
fn divergent_loops_and_branches_reconverge() {
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 70)];
    let stats = run(DIVERGENT_LOOP, LaunchConfig::linear(1, 70), &[Arg::Buffer(0)], &mut bufs);
    let want: Vec<u32> = (0..70u32)
        .map(|t| {
            let n = t % 5;
            let s: u32 = (0..n).map(|i| i * 10).sum();
            s + if t % 2 == 1 { 1000 } else { 0 }
        })
        .collect();
    assert_eq!(bufs[0].to_u32(), want);
    assert_eq!(stats.threads, 70);
}

#[test]
fn warp_shuffles_and_votes() {
    let src = r#"
kernel @k(%out: ptr<global, u32>, %bal: ptr<global, u32>) {
entry:
  %t = tid.x : u32
  %l = laneid : u32
  %s16 = shfl.down.u32 %t, 16, 0xffffffff
  %a = add.u32 %t, %s16
  %s8 = shfl.bfly.u32 %a, 8, 0xffffffff
  %b = add.u32 %a, %s8
  %up = shfl.up.u32 %t, 1, 0xffffffff
  %ix = shfl.idx.u32 %t, 3, 0xffffffff
  %p = lt.u32 %l, 5
  %bl = vote.ballot %p, 0xffffffff
  %all = vote.all %p, 0xffffffff
  %any = vote.any %p, 0xffffffff
  %w = warpid : u32
  %o = mul.u32 %t, 4
  store %out[%o], %b
  %o1 = add.u32 %o, 1
  store %out[%o1], %up
  %o2 = add.u32 %o, 2
  store %out[%o2], %ix
  %o3 = add.u32 %o, 3
  store %out[%o3], %w
  %ai = select.u32 %all, 1, 0
  %ni = select.u32 %any, 2, 0
  %f = or.u32 %ai, %ni
  %fx = shl.u32 %f, 28
  %m = or.u32 %bl, %fx
  store %bal[%t], %m
  ret
}
"#;
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 64 * 4), Buffer::zeros(ScalarType::U32, 64)];
    run(src, LaunchConfig::linear(1, 64), &[Arg::Buffer(0), Arg::Buffer(1)], &mut bufs);
    let out = bufs[0].to_u32();
    for t in 0..64u32 {
        let (w, l) = (t / 32, t % 32);
        let tid = |lane: u32| w * 32 + lane;
        let a = |lane: u32| tid(lane) + if lane + 16 <= 31 { tid(lane + 16) } else { tid(lane) };
        let b = a(l) + a(l ^ 8);
        let up = if l >= 1 { tid(l - 1) } else { t };
        assert_eq!(out[4 * t as usize..4 * t as usize + 4], [b, up, tid(3), w], "thread {t}");
    }
    // ballot of lanes 0..4 = 0x1f; not all, but any: flags = 2.
    assert!(bufs[1].to_u32().iter().all(|&v| v == 0x1f | 2 << 28));
}

const REDUCE: &str = r#"
; Block sum of 256 f32 through shared memory: 8 halving steps, a barrier each.
kernel @reduce(%x: ptr<global, f32>, %out: ptr<global, f32>, %n: u32) {
  shared @buf: f32[256]
entry:
  %t = tid.x : u32
  %g = global_id.x : u32
  %inb = lt.u32 %g, %n
  br %inb, ld, zero
ld:
  %v = load %x[%g]
  jmp put(%v)
zero:
  jmp put(0.0)
put(%val: f32):
  %sh = addr @buf
  store %sh[%t], %val
  barrier
  jmp step(128)
step(%s: u32):
  %more = gt.u32 %s, 0
  br %more, act, done
act:
  %low = lt.u32 %t, %s
  br %low, add, sync
add:
  %j = add.u32 %t, %s
  %a = load %sh[%t]
  %b = load %sh[%j]
  %c = add.f32 %a, %b
  store %sh[%t], %c
  jmp sync
sync:
  barrier
  %s2 = shr.u32 %s, 1
  jmp step(%s2)
done:
  %first = eq.u32 %t, 0
  br %first, write, exit
write:
  %r = load %sh[0]
  %b2 = ctaid.x : u32
  store %out[%b2], %r
  jmp exit
exit:
  ret
}
"#;

#[test]
fn shared_memory_tree_reduction_with_barriers() {
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
    let mut bufs = vec![Buffer::from_f32(&x), Buffer::zeros(ScalarType::F32, 4)];
    let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Scalar(Constant::u32(n as u32))];
    let opts = Options { races: true, uninit: true, ..Options::default() };
    let stats = launch(&kernel(REDUCE), &LaunchConfig::linear(4, 256), &args, &mut bufs, &opts).unwrap();
    let want: Vec<f32> = x.chunks(256).map(|c| c.iter().sum()).collect();
    assert_eq!(f32s(&bufs[1]), want);
    assert_eq!(stats.barriers, 4 * 9);
}

#[test]
fn results_do_not_depend_on_host_threads() {
    let n = 50_000usize;
    let mut state = 1u64;
    let x: Vec<f32> = (0..n).map(|_| kir_interp::args::splitmix64(&mut state) as u32 as f32 * 1e-9).collect();
    let k = kernel(REDUCE);
    let mut results = vec![];
    for threads in [Some(1), Some(2), Some(3), None] {
        let mut bufs = vec![Buffer::from_f32(&x), Buffer::zeros(ScalarType::F32, 196)];
        let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Scalar(Constant::u32(n as u32))];
        let opts = Options { threads, ..Options::default() };
        let stats = launch(&k, &LaunchConfig::linear(196, 256), &args, &mut bufs, &opts).unwrap();
        results.push((bufs, stats));
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn global_atomics_are_sequential_in_block_order() {
    // Every thread takes a ticket; the ticket order is block order, then warp order, then lanes.
    let src = r#"
kernel @k(%ctr: ptr<global, u32>, %out: ptr<global, u32>, %sum: ptr<global, f32>) {
entry:
  %g = global_id.x : u32
  %tk = atom.add %ctr[0], 1
  store %out[%g], %tk
  %f = cvt.rn.f32.u32 %g
  atom.add %sum[0], %f
  ret
}
"#;
    let mut bufs =
        vec![Buffer::zeros(ScalarType::U32, 1), Buffer::zeros(ScalarType::U32, 300), Buffer::zeros(ScalarType::F32, 1)];
    run(src, LaunchConfig::linear(3, 100), &[Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2)], &mut bufs);
    assert_eq!(bufs[0].to_u32(), vec![300]);
    assert_eq!(bufs[1].to_u32(), (0..300).collect::<Vec<u32>>());
    assert_eq!(f32s(&bufs[2]), vec![(0..300).sum::<u32>() as f32]);
}

#[test]
fn shared_atomics_and_cas() {
    let src = r#"
kernel @k(%out: ptr<global, s32>) {
  shared @m: s32[2]
entry:
  %t = tid.x : u32
  %sh = addr @m
  %z = eq.u32 %t, 0
  br %z, init, wait
init:
  store %sh[0], 100
  store %sh[1], 0
  jmp wait
wait:
  barrier
  %ts = cvt.s32.u32 %t
  %neg = neg.s32 %ts
  %old = atom.min %sh[0], %neg
  %c = atom.cas %sh[1], %ts, 7
  barrier
  br %z, fin, exit
fin:
  %a = load %sh[0]
  %b = load %sh[1]
  store %out[0], %a
  store %out[1], %b
  jmp exit
exit:
  ret
}
"#;
    let mut bufs = vec![Buffer::zeros(ScalarType::S32, 2)];
    run(src, LaunchConfig::linear(1, 40), &[Arg::Buffer(0)], &mut bufs);
    // min(100, 0, -1, ..., -39) = -39; cas: thread 0 swaps 0 -> 7, no other thread matches 7
    // except thread 7, which swaps 7 -> 7.
    assert_eq!(bufs[0].to_u32().iter().map(|&v| v as i32).collect::<Vec<_>>(), vec![-39, 7]);
}

#[test]
fn block_uniform_early_exit_is_not_divergence() {
    // Blocks loop over work items with a stride; the exit test depends only on block-uniform
    // values, and every iteration has barriers.
    let src = r#"
kernel @k(%out: ptr<global, u32>, %items: u32) {
  shared @s: u32[1]
entry:
  %b = ctaid.x : u32
  %t = tid.x : u32
  jmp loop(%b)
loop(%it: u32):
  %more = lt.u32 %it, %items
  br %more, body, exit
body:
  %z = eq.u32 %t, 0
  %sh = addr @s
  br %z, lead, sync
lead:
  store %sh[0], %it
  jmp sync
sync:
  barrier
  %v = load %sh[0]
  %i2 = mul.u32 %v, 64
  %o = add.u32 %i2, %t
  %w = add.u32 %v, 1
  store %out[%o], %w
  barrier
  %g = nctaid.x : u32
  %nx = add.u32 %it, %g
  jmp loop(%nx)
exit:
  ret
}
"#;
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 7 * 64)];
    let opts = Options { races: true, uninit: true, ..Options::default() };
    let stats = launch(
        &kernel(src),
        &LaunchConfig::linear(3, 64),
        &[Arg::Buffer(0), Arg::Scalar(Constant::u32(7))],
        &mut bufs,
        &opts,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bufs[0].to_u32(), (0..7 * 64).map(|i| i / 64 + 1).collect::<Vec<u32>>());
    assert_eq!(stats.barriers, 2 * 7);
}

#[test]
fn persistent_rmsnorm_from_the_kernel_library_runs_clean() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/rmsnorm.kir");
    let m = kir_ir::text::load::load_file(&path).unwrap_or_else(|e| panic!("{}", e.render(false))).module;
    let k = m.kernel("persistent_decoder").expect("kernels/rmsnorm.kir has @persistent_decoder");
    let (tokens, hidden) = (7u32, 100u32);
    let x = kir_interp::args::generate(&kir_interp::args::ArgSpec::Rand {
        elem: ScalarType::F16,
        len: (tokens * hidden) as u64,
        seed: 5,
    })
    .unwrap();
    let mut bufs = vec![x, Buffer::zeros(ScalarType::F16, (tokens * hidden) as usize)];
    let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Scalar(Constant::u32(tokens)), Arg::Scalar(Constant::u32(hidden))];
    let opts = Options { races: true, uninit: true, ..Options::default() };
    verified_launch::launch_in(&m.funcs, k, &LaunchConfig::linear(3, 64), &args, &mut bufs, &opts)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(bufs[1].to_f32().iter().all(|v| v.is_finite()) && bufs[1].to_f32().iter().any(|v| *v != 0.0));
}

#[test]
fn multidimensional_ids() {
    let src = r#"
kernel @k(%out: ptr<global, u32>) {
entry:
  %tx = tid.x : u32
  %ty = tid.y : u32
  %tz = tid.z : u32
  %bx = ctaid.x : u32
  %by = ctaid.y : u32
  %gz = nctaid.z : u32
  %ny = ntid.y : u32
  %gy = global_id.y : u32
  ; linear = ((by * 2 + bx) * 2 + tz) * 12 + ty * 4 + tx
  %b = mad.u32 %by, 2, %bx
  %bz = mad.u32 %b, 2, %tz
  %t = mad.u32 %ty, 4, %tx
  %lin = mad.u32 %bz, 12, %t
  %v1 = mul.u32 %gy, 1000
  %v2 = mad.u32 %gz, 100, %v1
  %v = mad.u32 %ny, 10000000, %v2
  store %out[%lin], %v
  ret
}
"#;
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 4 * 24)];
    let cfg = LaunchConfig { grid: [2, 2, 1], block: [4, 3, 2], dynamic_shared_bytes: 0 };
    run(src, cfg, &[Arg::Buffer(0)], &mut bufs);
    let out = bufs[0].to_u32();
    for by in 0..2u32 {
        for bx in 0..2u32 {
            for tz in 0..2u32 {
                for ty in 0..3u32 {
                    for tx in 0..4u32 {
                        let lin = (((by * 2 + bx) * 2 + tz) * 12 + ty * 4 + tx) as usize;
                        assert_eq!(out[lin], 3 * 10_000_000 + 100 + (by * 3 + ty) * 1000);
                    }
                }
            }
        }
    }
}

#[test]
fn dynamic_shared_memory_is_sized_at_launch() {
    let src = r#"
kernel @k(%out: ptr<global, f32>) {
  shared @fixed: u32[3]
  shared @dyn: f32[]
entry:
  %t = tid.x : u32
  %d = addr @dyn
  %f = cvt.rn.f32.u32 %t
  store %d[%t], %f
  barrier
  %n = ntid.x : u32
  %r0 = sub.u32 %n, 1
  %r = sub.u32 %r0, %t
  %v = load %d[%r]
  store %out[%t], %v
  ret
}
"#;
    let k = kernel(src);
    let mut bufs = vec![Buffer::zeros(ScalarType::F32, 48)];
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [48, 1, 1], dynamic_shared_bytes: 48 * 4 };
    launch(&k, &cfg, &[Arg::Buffer(0)], &mut bufs, &Options::default()).unwrap();
    assert_eq!(f32s(&bufs[0]), (0..48).rev().map(|i| i as f32).collect::<Vec<_>>());
    // One element short: the last thread's store is out of bounds.
    let cfg = LaunchConfig { dynamic_shared_bytes: 47 * 4, ..cfg };
    let e = launch(&k, &cfg, &[Arg::Buffer(0)], &mut bufs, &Options::default()).unwrap_err();
    assert_eq!(e.fault_kind(), Some(kir_interp::FaultKind::OutOfBounds));
    assert_eq!(e.thread, Some([47, 0, 0]));
}

#[test]
fn invalid_launches_are_their_own_error_kind() {
    let k = kernel(RELU);
    let mut bufs =
        vec![Buffer::zeros(ScalarType::F32, 4), Buffer::zeros(ScalarType::F32, 4), Buffer::zeros(ScalarType::S32, 4)];
    let good = [Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(0), Arg::Scalar(Constant::u32(4))];
    let cases: Vec<(LaunchConfig, Vec<Arg>, &str)> = vec![
        (LaunchConfig::linear(1, 2048), good.to_vec(), "too large"),
        (LaunchConfig::linear(0, 32), good.to_vec(), "at least 1"),
        (LaunchConfig::linear(1, 32), good[..3].to_vec(), "takes 4 arguments, given 3"),
        (
            LaunchConfig::linear(1, 32),
            vec![good[0], good[1], Arg::Buffer(2), good[3]],
            "must be a buffer of f32, given a buffer of s32",
        ),
        (
            LaunchConfig::linear(1, 32),
            vec![good[0], good[1], good[2], Arg::Scalar(Constant::s32(4))],
            "must be a u32, given a s32",
        ),
        (
            LaunchConfig::linear(1, 32),
            vec![good[0], good[1], good[2], Arg::Buffer(0)],
            "must be a u32 scalar, given a buffer",
        ),
        (LaunchConfig::linear(1, 32), vec![good[0], Arg::Buffer(9), good[2], good[3]], "names buffer 9"),
    ];
    for (cfg, args, msg) in cases {
        let e = launch(&k, &cfg, &args, &mut bufs, &Options::default()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidLaunch, "{e}");
        assert!(e.message.contains(msg), "{e} does not say {msg:?}");
    }
}
