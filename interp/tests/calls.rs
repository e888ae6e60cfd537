//! Device functions run as written (`kir_interp::launch_verified`, the calls resolved in the
//! kernel's verified module): a call frame per warp with its own
//! registers and reconvergence stack, divergence and early `ret` inside functions, nested calls,
//! barriers inside functions (identified by their call path), warp collectives on the frame's
//! mask, and runtime errors located inside the function with the chain of call sites. Every
//! successful run is also compared, buffer for buffer, with the interpreter on the same module
//! after `kir_ir::inline::inline_module` (a real differential test: calls as written vs inlined).

use kir_interp::{launch_verified, Arg, Buffer, ErrorKind, FaultKind, InterpError, LaunchConfig, Options, Stats};
use kir_ir::verify::Verified;
use kir_ir::{ScalarType, Span};

fn module(src: &str) -> Verified {
    let m = kir_ir::parse(src).unwrap_or_else(|d| panic!("parse errors: {d:?}"));
    kir_ir::verify::verify(m).unwrap_or_else(|d| panic!("verifier errors: {d}"))
}

/// Runs the module's first kernel.
fn run(
    m: &Verified,
    cfg: LaunchConfig,
    args: &[Arg],
    bufs: &mut [Buffer],
    opts: &Options,
) -> Result<Stats, InterpError> {
    launch_verified(m.verified_kernels().next().expect("a kernel"), &cfg, args, bufs, opts)
}

/// Runs the kernel as written and after inlining; both must succeed with the same buffers.
/// Returns the buffers and the as-written statistics.
fn run_both(src: &str, cfg: LaunchConfig, args: &[Arg], bufs: &[Buffer], opts: &Options) -> (Vec<Buffer>, Stats) {
    let m = module(src);
    assert!(m.has_calls(), "test kernel should call functions");
    let mut written = bufs.to_vec();
    let stats = run(&m, cfg, args, &mut written, opts).unwrap_or_else(|e| panic!("as written: {e}\n{e:?}"));
    let mut inlined_m = m.module().clone();
    kir_ir::inline::inline_module(&mut inlined_m).unwrap_or_else(|d| panic!("inlining: {d:?}"));
    let k = &inlined_m.kernels[0];
    assert!(k.placed_insts().all(|(_, i)| !matches!(k.inst(i).op, kir_ir::Op::Call(_))), "inlined");
    let inlined_m = kir_ir::verify::verify(inlined_m).unwrap_or_else(|d| panic!("inlined: {d}"));
    let mut inlined = bufs.to_vec();
    run(&inlined_m, cfg, args, &mut inlined, opts).unwrap_or_else(|e| panic!("inlined: {e}"));
    for (i, (a, b)) in written.iter().zip(&inlined).enumerate() {
        assert_eq!(a.bytes, b.bytes, "buffer {i} differs between the calls as written and after inlining");
    }
    (written, stats)
}

fn text(src: &str, s: Span) -> &str {
    &src[s.range()]
}

fn has_note(e: &InterpError, needle: &str) -> bool {
    e.notes.iter().any(|n| n.contains(needle))
}

fn label_at<'a>(src: &str, e: &'a InterpError, starts_with: &str) -> Vec<&'a str> {
    e.labels.iter().filter(|(s, _)| text(src, *s).starts_with(starts_with)).map(|(_, l)| l.as_str()).collect()
}

const RESULT_CALL: &str = "
func @sq_plus(%a: u32, %b: u32) -> u32 {
entry:
  %m = mul.u32 %a, %a
  %s = add.u32 %m, %b
  ret %s
}
kernel @k(%out: ptr<global, u32>) {
entry:
  %g = global_id.x
  %v = call @sq_plus(%g, 7)
  %w = call @sq_plus(%v, %g)
  store %out[%g], %w
  ret
}";

#[test]
fn a_call_with_a_result() {
    let n = 128;
    let (bufs, stats) = run_both(
        RESULT_CALL,
        LaunchConfig::linear(2, 64),
        &[Arg::Buffer(0)],
        &[Buffer::zeros(ScalarType::U32, n)],
        &Options::default(),
    );
    let want: Vec<u32> = (0..n as u32)
        .map(|g| {
            let v = g.wrapping_mul(g).wrapping_add(7);
            v.wrapping_mul(v).wrapping_add(g)
        })
        .collect();
    assert_eq!(bufs[0].to_u32(), want);
    // Per thread: global_id, 2 calls, store, ret in the kernel; 3 instructions (mul, add, ret)
    // per call: functions are charged like kernels.
    assert_eq!(stats.thread_instructions, n as u64 * (5 + 2 * 3));
}

const VOID_CALL: &str = "
func @put(%p: ptr<global, u32>, %i: u32, %v: u32) {
entry:
  store %p[%i], %v
  ret
}
kernel @k(%out: ptr<global, u32>, %n: u32) {
entry:
  %g = global_id.x
  %v = mul.u32 %g, 3
  call @put(%out, %g, %v)
  %j = add.u32 %g, %n
  call @put(%out, %j, 5)
  ret
}";

#[test]
fn a_void_call_stores_through_a_pointer() {
    let n = 96u32;
    let (bufs, _) = run_both(
        VOID_CALL,
        LaunchConfig::linear(3, 32),
        &[Arg::Buffer(0), Arg::Scalar(kir_ir::Constant::u32(n))],
        &[Buffer::zeros(ScalarType::U32, 2 * n as usize)],
        &Options { races: true, ..Options::default() },
    );
    let want: Vec<u32> = (0..n).map(|g| 3 * g).chain((0..n).map(|_| 5)).collect();
    assert_eq!(bufs[0].to_u32(), want);
}

/// Only odd lanes call `@f`; inside, lanes with `x % 4 == 1` return early, the others diverge on
/// `x > 40` and reconverge at `join`, where a ballot checks that exactly the lanes with
/// `x % 4 == 3` run together (the frame's mask), before returning.
const DIVERGENT: &str = "
func @f(%x: u32, %bal: ptr<global, u32>) -> u32 {
entry:
  %r = and.u32 %x, 3
  %e = eq.u32 %r, 1
  br %e, early, other
early:
  %a = add.u32 %x, 1000
  ret %a
other:
  %big = gt.u32 %x, 40
  br %big, hi, lo
hi:
  %h = mul.u32 %x, 2
  jmp join(%h)
lo:
  %l = mul.u32 %x, 3
  jmp join(%l)
join(%j: u32):
  %p = eq.u32 %r, 3
  %b = vote.ballot %p, 0x88888888
  store %bal[%x], %b
  %k = add.u32 %j, 1
  ret %k
}
kernel @k(%out: ptr<global, u32>, %bal: ptr<global, u32>) {
entry:
  %t = tid.x
  %odd = and.u32 %t, 1
  %c = eq.u32 %odd, 1
  br %c, callit, skip
callit:
  %v = call @f(%t, %bal)
  jmp done(%v)
skip:
  jmp done(%t)
done(%res: u32):
  store %out[%t], %res
  ret
}";

#[test]
fn divergent_calls_diverge_reconverge_and_return_early_inside_the_function() {
    let (bufs, _) = run_both(
        DIVERGENT,
        LaunchConfig::linear(1, 64),
        &[Arg::Buffer(0), Arg::Buffer(1)],
        &[Buffer::zeros(ScalarType::U32, 64), Buffer::zeros(ScalarType::U32, 64)],
        &Options { races: true, ..Options::default() },
    );
    let want: Vec<u32> = (0..64u32)
        .map(|t| match (t % 2, t % 4) {
            (0, _) => t,
            (_, 1) => t + 1000,
            _ if t > 40 => 2 * t + 1,
            _ => 3 * t + 1,
        })
        .collect();
    assert_eq!(bufs[0].to_u32(), want);
    let ballots: Vec<u32> = (0..64u32).map(|t| if t % 4 == 3 { 0x8888_8888 } else { 0 }).collect();
    assert_eq!(bufs[1].to_u32(), ballots);
}

const NESTED: &str = "
func @g(%x: u32) -> u32 {
entry:
  %y = mul.u32 %x, 10
  ret %y
}
func @f(%x: u32) -> u32 {
entry:
  %a = call @g(%x)
  %b = add.u32 %a, 1
  %odd = and.u32 %x, 1
  %c = eq.u32 %odd, 1
  br %c, again, out(%b)
again:
  %d = call @g(%b)
  jmp out(%d)
out(%r: u32):
  ret %r
}
kernel @k(%out: ptr<global, u32>) {
entry:
  %t = tid.x
  %v = call @f(%t)
  store %out[%t], %v
  ret
}";

#[test]
fn nested_calls_stack_frames() {
    let (bufs, _) = run_both(
        NESTED,
        LaunchConfig::linear(1, 48),
        &[Arg::Buffer(0)],
        &[Buffer::zeros(ScalarType::U32, 48)],
        &Options::default(),
    );
    let want: Vec<u32> = (0..48u32).map(|t| if t % 2 == 1 { (10 * t + 1) * 10 } else { 10 * t + 1 }).collect();
    assert_eq!(bufs[0].to_u32(), want);
}

/// A block reduction in a function with barriers, over shared memory passed in, called twice
/// (two call sites, each reached by every thread: two distinct but matched barrier sequences).
const BLOCK_SUM: &str = "
func @block_sum(%buf: ptr<shared, u32>, %t: u32, %v: u32) -> u32 {
entry:
  store %buf[%t], %v
  barrier
  jmp step(32)
step(%s: u32):
  %more = gt.u32 %s, 0
  br %more, act, done
act:
  %low = lt.u32 %t, %s
  br %low, add, sync
add:
  %j = add.u32 %t, %s
  %a = load %buf[%t]
  %b = load %buf[%j]
  %c = add.u32 %a, %b
  store %buf[%t], %c
  jmp sync
sync:
  barrier
  %s2 = shr.u32 %s, 1
  jmp step(%s2)
done:
  %r = load %buf[0]
  barrier
  ret %r
}
kernel @k(%x: ptr<global, u32>, %sums: ptr<global, u32>, %sqs: ptr<global, u32>) {
  shared @buf: u32[64]
entry:
  %t = tid.x
  %g = global_id.x
  %v = load %x[%g]
  %sh = addr @buf
  %s = call @block_sum(%sh, %t, %v)
  %sq = mul.u32 %v, %v
  %s2 = call @block_sum(%sh, %t, %sq)
  store %sums[%g], %s
  store %sqs[%g], %s2
  ret
}";

#[test]
fn a_function_with_barriers_reduces_a_block_through_shared_memory() {
    let n = 128usize;
    let x: Vec<u32> = (0..n as u32).map(|i| i * 7 % 13 + 1).collect();
    let opts = Options { races: true, uninit: true, ..Options::default() };
    let (bufs, stats) = run_both(
        BLOCK_SUM,
        LaunchConfig::linear(2, 64),
        &[Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2)],
        &[Buffer::from_u32(&x), Buffer::zeros(ScalarType::U32, n), Buffer::zeros(ScalarType::U32, n)],
        &opts,
    );
    for b in 0..2 {
        let blk = &x[b * 64..(b + 1) * 64];
        let sum: u32 = blk.iter().sum();
        let sq: u32 = blk.iter().map(|v| v * v).sum();
        assert!(bufs[1].to_u32()[b * 64..(b + 1) * 64].iter().all(|&s| s == sum), "block {b} sums");
        assert!(bufs[2].to_u32()[b * 64..(b + 1) * 64].iter().all(|&s| s == sq), "block {b} squares");
    }
    // Per call: 1 + 6 steps + 1 barriers; two calls; two blocks.
    assert_eq!(stats.barriers, 2 * 2 * 8);
}

/// The same function with a barrier, reached from two call sites by the two warps of a block:
/// two different barriers.
const TWO_CALL_SITES: &str = "
func @sync(%buf: ptr<shared, u32>, %t: u32) {
entry:
  store %buf[%t], %t
  barrier
  ret
}
kernel @k(%out: ptr<global, u32>) {
  shared @buf: u32[64]
entry:
  %t = tid.x
  %sh = addr @buf
  %lo = lt.u32 %t, 32
  br %lo, a, b
a:
  call @sync(%sh, %t)
  jmp end
b:
  call @sync(%sh, %t)
  jmp end
end:
  ret
}";

#[test]
fn a_barrier_reached_through_different_call_sites_is_a_divergence() {
    let m = module(TWO_CALL_SITES);
    let mut bufs = [Buffer::zeros(ScalarType::U32, 1)];
    let e = run(&m, LaunchConfig::linear(1, 64), &[Arg::Buffer(0)], &mut bufs, &Options::default())
        .expect_err("two call sites are two barriers");
    assert_eq!(e.kind, ErrorKind::KernelFault(FaultKind::BarrierDivergence), "{e:?}");
    let src = TWO_CALL_SITES;
    // The primary span is the barrier inside the function.
    let span = e.span.expect("located");
    assert_eq!(text(src, span), "barrier", "{e:?}");
    assert!((span.start as usize) < src.find("kernel @k").unwrap(), "the barrier of @sync");
    assert!(e.message.contains("only 32 of the block's 64 threads"), "{}", e.message);
    // The note names the call chain of the waiting warp; the labels point at both call sites.
    assert!(has_note(&e, "in `@sync`, called from `@k` (block `a`)"), "{:?}", e.notes);
    let calls: Vec<(usize, &str)> = e
        .labels
        .iter()
        .filter(|(s, _)| text(src, *s).starts_with("call @sync"))
        .map(|(s, l)| (s.start as usize, l.as_str()))
        .collect();
    let site_a = src.find("a:\n  call @sync").unwrap() + 5;
    let site_b = src.find("b:\n  call @sync").unwrap() + 5;
    assert!(calls.iter().any(|(at, l)| *at == site_a && l.contains("`@sync` called here")), "{calls:?}");
    assert!(
        calls.iter().any(|(at, l)| *at == site_b && l.contains("32 threads wait at the same barrier of `@sync`")),
        "{calls:?}"
    );
    // Rendered as a diagnostic, everything is kept.
    let d = e.to_diagnostic();
    assert_eq!(d.span(), Some(span));
    assert!(d.secondary.len() >= 2);
}

#[test]
fn a_function_barrier_reached_by_only_some_lanes_is_a_divergence() {
    // Odd lanes call a function with a barrier: the even lanes wait in the kernel.
    let src = "
func @sync() {
entry:
  barrier
  ret
}
kernel @k() {
entry:
  %t = tid.x
  %odd = and.u32 %t, 1
  %c = eq.u32 %odd, 1
  br %c, callit, end
callit:
  call @sync()
  jmp end
end:
  ret
}";
    let m = module(src);
    let e = run(&m, LaunchConfig::linear(1, 32), &[], &mut [], &Options::default()).expect_err("divergent barrier");
    assert_eq!(e.kind, ErrorKind::KernelFault(FaultKind::BarrierDivergence), "{e:?}");
    assert_eq!(text(src, e.span.unwrap()), "barrier");
    assert!(has_note(&e, "in `@sync`, called from `@k` (block `callit`)"), "{:?}", e.notes);
    assert!(!label_at(src, &e, "call @sync").is_empty(), "{:?}", e.labels);
    // The even lanes finished the kernel.
    assert!(e.message.contains("only 16 of the block's 32 threads"), "{}", e.message);
}

const WARP_SUM: &str = "
func @warp_sum(%v: u32) -> u32 {
entry:
  %a1 = shfl.bfly.u32 %v, 16, 0xffffffff
  %s1 = add.u32 %v, %a1
  %a2 = shfl.bfly.u32 %s1, 8, 0xffffffff
  %s2 = add.u32 %s1, %a2
  %a3 = shfl.bfly.u32 %s2, 4, 0xffffffff
  %s3 = add.u32 %s2, %a3
  %a4 = shfl.bfly.u32 %s3, 2, 0xffffffff
  %s4 = add.u32 %s3, %a4
  %a5 = shfl.bfly.u32 %s4, 1, 0xffffffff
  %s5 = add.u32 %s4, %a5
  ret %s5
}
kernel @k(%out: ptr<global, u32>) {
entry:
  %g = global_id.x
  %sq = mul.u32 %g, %g
  %s = call @warp_sum(%sq)
  store %out[%g], %s
  ret
}";

#[test]
fn a_full_mask_warp_reduction_in_a_function() {
    let n = 128usize;
    let (bufs, _) = run_both(
        WARP_SUM,
        LaunchConfig::linear(2, 64),
        &[Arg::Buffer(0)],
        &[Buffer::zeros(ScalarType::U32, n)],
        &Options::default(),
    );
    let out = bufs[0].to_u32();
    for w in 0..n / 32 {
        let want: u32 = (w * 32..(w + 1) * 32).map(|g| (g * g) as u32).sum();
        assert!(out[w * 32..(w + 1) * 32].iter().all(|&s| s == want), "warp {w}: {:?}", &out[w * 32..(w + 1) * 32]);
    }
}

#[test]
fn a_full_mask_shuffle_in_a_function_called_by_half_a_warp_is_a_divergent_collective() {
    let src = WARP_SUM.replace(
        "entry:\n  %g = global_id.x\n  %sq = mul.u32 %g, %g\n  %s = call @warp_sum(%sq)\n  store %out[%g], %s\n  ret",
        "entry:\n  %g = global_id.x\n  %sq = mul.u32 %g, %g\n  %lo = lt.u32 %g, 16\n  br %lo, c, end\nc:\n  %s = call @warp_sum(%sq)\n  store %out[%g], %s\n  jmp end\nend:\n  ret",
    );
    let m = module(&src);
    let mut bufs = [Buffer::zeros(ScalarType::U32, 32)];
    let e = run(&m, LaunchConfig::linear(1, 32), &[Arg::Buffer(0)], &mut bufs, &Options::default())
        .expect_err("half a warp");
    assert_eq!(e.kind, ErrorKind::KernelFault(FaultKind::DivergentCollective), "{e:?}");
    assert!(text(&src, e.span.unwrap()).contains("shfl.bfly.u32 %v, 16"), "{:?}", text(&src, e.span.unwrap()));
    assert!(has_note(&e, "in `@warp_sum`, called from `@k` (block `c`)"), "{:?}", e.notes);
}

const OOB: &str = "
func @put(%p: ptr<global, u32>, %i: u32, %v: u32) {
entry:
  store %p[%i], %v
  ret
}
func @shifted(%p: ptr<global, u32>, %t: u32) {
entry:
  %i = add.u32 %t, 30
  call @put(%p, %i, %t)
  ret
}
kernel @k(%out: ptr<global, u32>) {
entry:
  %t = tid.x
  call @shifted(%out, %t)
  ret
}";

#[test]
fn an_out_of_bounds_store_in_a_function_points_inside_it_and_names_the_call_chain() {
    let m = module(OOB);
    let mut bufs = [Buffer::zeros(ScalarType::U32, 32)];
    let e = run(&m, LaunchConfig::linear(1, 32), &[Arg::Buffer(0)], &mut bufs, &Options::default())
        .expect_err("index 32 is out of bounds");
    assert_eq!(e.kind, ErrorKind::KernelFault(FaultKind::OutOfBounds), "{e:?}");
    assert_eq!(text(OOB, e.span.unwrap()), "store %p[%i], %v", "{e:?}");
    assert_eq!(e.thread, Some([2, 0, 0]));
    assert!(
        has_note(&e, "in `@put`, called from `@shifted` (block `entry`), called from `@k` (block `entry`)"),
        "{:?}",
        e.notes
    );
    assert_eq!(label_at(OOB, &e, "call @put"), vec!["`@put` called here"]);
    assert_eq!(label_at(OOB, &e, "call @shifted"), vec!["`@shifted` called here"]);
    let d = e.to_diagnostic();
    assert!(d.notes.iter().any(|n| n.contains("called from `@shifted`")));
}

#[test]
fn fuel_counts_instructions_in_functions_and_a_spin_there_is_located() {
    let src = "
func @spin(%x: u32) -> u32 {
entry:
  jmp l(%x)
l(%i: u32):
  %j = add.u32 %i, 1
  jmp l(%j)
}
kernel @k(%out: ptr<global, u32>) {
entry:
  %t = tid.x
  %v = call @spin(%t)
  store %out[%t], %v
  ret
}";
    let m = module(src);
    let mut bufs = [Buffer::zeros(ScalarType::U32, 32)];
    let e = run(&m, LaunchConfig::linear(1, 32), &[Arg::Buffer(0)], &mut bufs, &Options::default().with_fuel(10_000))
        .expect_err("spins");
    assert_eq!(e.kind, ErrorKind::KernelFault(FaultKind::FuelExhausted), "{e:?}");
    let at = text(src, e.span.unwrap());
    assert!(at.starts_with("%j = add") || at.starts_with("jmp l"), "{at:?}");
    assert!(has_note(&e, "in `@spin`, called from `@k` (block `entry`)"), "{:?}", e.notes);
}

#[test]
fn graphs_run_kernels_that_call_functions() {
    let src = format!(
        "{VOID_CALL}
graph @g(%out: ptr<global, u32>, %n: u32) {{
  launch @k grid(ceil_div(%n, 32)) block(32) (%out, %n)
}}"
    );
    let m = module(&src);
    let n = 64u32;
    let mut bufs = vec![Buffer::zeros(ScalarType::U32, 2 * n as usize)];
    let args = [Arg::Buffer(0), Arg::Scalar(kir_ir::Constant::u32(n))];
    let stats = kir_interp::graph::run_graph(&m, &m.graphs[0], &args, &mut bufs, &Options::default()).expect("runs");
    assert_eq!(stats.launches, 1);
    let want: Vec<u32> = (0..n).map(|g| 3 * g).chain((0..n).map(|_| 5)).collect();
    assert_eq!(bufs[0].to_u32(), want);
}

#[test]
fn parameters_passed_to_functions_count_as_written() {
    // `%out` is written only inside `@put`; `%n` is a scalar; `%x` is only read.
    let m = module(
        "
func @put(%p: ptr<global, u32>, %i: u32, %v: u32) {
entry:
  store %p[%i], %v
  ret
}
kernel @k(%x: ptr<global, u32>, %out: ptr<global, u32>, %n: u32) {
entry:
  %t = tid.x
  %v = load %x[%t]
  %q = offset %out, %n
  call @put(%q, %t, %v)
  ret
}",
    );
    assert_eq!(kir_interp::outputs::written_params(&m.kernels[0]), vec![false, true, false]);
}
