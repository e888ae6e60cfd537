//! The emulator's behaviour on hand-written PTX: results of divergent and reconverging code,
//! warp collectives, atomics, the checks a user relies on (barrier divergence, member masks,
//! bounds, alignment, fuel) and the errors they read (with PTX lines).

use kir_ptx_emu::{launch, Arg, ErrorKind, FaultKind, LaunchConfig, Memory, Module, Options};

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

fn module(body: &str) -> Module {
    let text = format!("{HEADER}{body}");
    Module::parse(&text).unwrap_or_else(|e| panic!("parse error {e}\n{text}"))
}

fn u32s(mem: &Memory, id: kir_ptx_emu::BufferId) -> Vec<u32> {
    mem.bytes(id).unwrap().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn buf(mem: &mut Memory, name: &str, v: &[u32]) -> kir_ptx_emu::BufferId {
    let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    mem.alloc(name, &b).unwrap()
}

/// out[tid] = tid < 5 ? tid * 10 : (tid odd ? 1 : 2), then + 100 after reconvergence.
const DIVERGE: &str = r#"
.visible .entry diverge(.param .u64 out)
{
    .reg .pred %p<3>; .reg .b32 %r<6>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 5;
    @!%p1 bra ELSE;
    mul.lo.u32 %r2, %r1, 10;
    bra.uni JOIN;
ELSE:
    and.b32 %r3, %r1, 1;
    setp.eq.u32 %p2, %r3, 1;
    selp.u32 %r2, 1, 2, %p2;
JOIN:
    add.u32 %r2, %r2, 100;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
}
"#;

#[test]
fn divergent_branches_compute_both_sides_and_reconverge() {
    let m = module(DIVERGE);
    let mut mem = Memory::new();
    let out = buf(&mut mem, "out", &[0; 40]);
    let stats = launch(&m, "diverge", &LaunchConfig::linear(1, 40), &[Arg::Buffer(out)], &mut mem, &Options::default())
        .unwrap();
    let want: Vec<u32> = (0..40).map(|t| if t < 5 { t * 10 } else if t % 2 == 1 { 1 } else { 2 } + 100).collect();
    assert_eq!(u32s(&mem, out), want);
    assert_eq!(stats.threads, 40);
    assert_eq!(stats.global_bytes_written, 160);
}

/// A loop whose trip count depends on the lane, then a warp-wide shuffle after it: legal only
/// because the lanes reconverge at the loop exit.
const LOOP_SHFL: &str = r#"
.visible .entry loop_shfl(.param .u64 out)
{
    .reg .pred %p<3>; .reg .b32 %r<8>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 0;
    mov.u32 %r3, 0;
LOOP:
    setp.ge.u32 %p1, %r3, %r1;
    @%p1 bra DONE;
    add.u32 %r2, %r2, %r3;
    add.u32 %r3, %r3, 1;
    bra.uni LOOP;
DONE:
    shfl.sync.bfly.b32 %r4, %r2, 1, 31, -1;
    add.u32 %r5, %r4, %r2;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r5;
    ret;
}
"#;

#[test]
fn loops_with_lane_dependent_trip_counts_reconverge_before_a_shuffle() {
    let m = module(LOOP_SHFL);
    let mut mem = Memory::new();
    let out = buf(&mut mem, "out", &[0; 32]);
    launch(&m, "loop_shfl", &LaunchConfig::linear(1, 32), &[Arg::Buffer(out)], &mut mem, &Options::default()).unwrap();
    let tri = |t: u32| t * t.saturating_sub(1) / 2;
    let want: Vec<u32> = (0..32).map(|t| tri(t) + tri(t ^ 1)).collect();
    assert_eq!(u32s(&mem, out), want);
}

const REDUCE: &str = r#"
.visible .entry reduce(.param .u64 x, .param .u64 out)
{
    .reg .pred %p<3>; .reg .b32 %r<10>; .reg .f32 %f<4>; .reg .b64 %rd<8>;
    .shared .align 4 .b8 buf[256];
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f1, [%rd4];
    mov.u64 %rd5, buf;
    add.s64 %rd6, %rd5, %rd3;
    st.shared.f32 [%rd6], %f1;
    bar.sync 0;
    mov.u32 %r2, 32;
STEP:
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra SKIP;
    add.u32 %r3, %r1, %r2;
    shl.b32 %r4, %r3, 2;
    cvt.u64.u32 %rd7, %r4;
    add.s64 %rd7, %rd5, %rd7;
    ld.shared.f32 %f2, [%rd7];
    ld.shared.f32 %f3, [%rd6];
    add.rn.f32 %f3, %f3, %f2;
    st.shared.f32 [%rd6], %f3;
SKIP:
    bar.sync 0;
    shr.u32 %r2, %r2, 1;
    setp.ne.u32 %p2, %r2, 0;
    @%p2 bra STEP;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra END;
    ld.shared.f32 %f1, [buf];
    st.global.f32 [%rd2], %f1;
END:
    ret;
}
"#;

#[test]
fn shared_memory_reduction_with_barriers() {
    let m = module(REDUCE);
    let mut mem = Memory::new();
    let x: Vec<u32> = (0..64).map(|i| (i as f32).to_bits()).collect();
    let xb = buf(&mut mem, "x", &x);
    let out = buf(&mut mem, "out", &[0]);
    let s = launch(
        &m,
        "reduce",
        &LaunchConfig::linear(1, 64),
        &[Arg::Buffer(xb), Arg::Buffer(out)],
        &mut mem,
        &Options::default(),
    )
    .unwrap();
    assert_eq!(f32::from_bits(u32s(&mem, out)[0]), (0..64).sum::<i32>() as f32);
    assert_eq!(s.barriers, 7);
}

#[test]
fn a_barrier_under_a_thread_dependent_branch_is_a_fault_with_line_and_threads() {
    let src = r#"
.visible .entry bad(.param .u64 out)
{
    .reg .pred %p1; .reg .b32 %r<3>;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra SKIP;
    bar.sync 0;
SKIP:
    ret;
}
"#;
    let m = module(src);
    let mut mem = Memory::new();
    let out = buf(&mut mem, "out", &[0]);
    let e = launch(&m, "bad", &LaunchConfig::linear(1, 32), &[Arg::Buffer(out)], &mut mem, &Options::default())
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::BarrierDivergence));
    assert_eq!(e.line, Some(11), "{e}");
    assert_eq!(e.instruction.as_deref(), Some("bar.sync 0;"));
    assert!(e.message.contains("lane 0"), "{e}");
    let text = e.to_string();
    assert!(text.starts_with("kernel fault (barrier divergence): `bar.sync` reached by lanes 0x"), "{text}");
    assert!(text.contains("at PTX line 11 `bar.sync 0;` in block (0, 0, 0) thread (16, 0, 0)"), "{text}");
}

#[test]
fn warps_waiting_at_different_barriers_is_a_fault() {
    let src = r#"
.visible .entry two(.param .u64 out)
{
    .reg .pred %p1; .reg .b32 %r<3>;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 32;
    @%p1 bra A;
    bar.sync 0;
    ret;
A:
    bar.sync 0;
    ret;
}
"#;
    let m = module(src);
    let mut mem = Memory::new();
    let out = buf(&mut mem, "out", &[0]);
    let e = launch(&m, "two", &LaunchConfig::linear(1, 64), &[Arg::Buffer(out)], &mut mem, &Options::default())
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::BarrierDivergence), "{e}");
    assert!(e.message.contains("different barriers"), "{e}");
}

#[test]
fn exited_threads_do_not_block_a_barrier() {
    // Warp 1 exits; warp 0 waits at the barrier alone and is released.
    let src = r#"
.visible .entry early(.param .u64 out)
{
    .reg .pred %p1; .reg .b32 %r<3>; .reg .b64 %rd<2>;
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, 32;
    @%p1 bra END;
    bar.sync 0;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r1;
END:
    ret;
}
"#;
    let m = module(src);
    let mut mem = Memory::new();
    let out = buf(&mut mem, "out", &[7]);
    launch(&m, "early", &LaunchConfig::linear(1, 64), &[Arg::Buffer(out)], &mut mem, &Options::default()).unwrap();
}

#[test]
fn a_shuffle_whose_mask_names_a_diverged_lane_is_a_fault() {
    let src = r#"
.visible .entry shfl(.param .u64 out)
{
    .reg .pred %p1; .reg .b32 %r<3>;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 8;
    @%p1 bra END;
    shfl.sync.down.b32 %r2, %r1, 1, 31, -1;
END:
    ret;
}
"#;
    let m = module(src);
    let mut mem = Memory::new();
    let out = buf(&mut mem, "out", &[0]);
    let e = launch(&m, "shfl", &LaunchConfig::linear(1, 32), &[Arg::Buffer(out)], &mut mem, &Options::default())
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::CollectiveMask), "{e}");
    assert!(e.message.contains("names lane 0, which does not execute it"), "{e}");
    assert_eq!(e.line, Some(11));
}

#[test]
fn out_of_bounds_and_misaligned_accesses_name_the_buffer() {
    let src = r#"
.visible .entry oob(.param .u64 out, .param .u32 k)
{
    .reg .b32 %r<3>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [k];
    cvt.u64.u32 %rd2, %r1;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
}
"#;
    let m = module(src);
    let mut mem = Memory::new();
    let out = buf(&mut mem, "dx", &[0; 4]);
    let cfg = LaunchConfig::linear(1, 1);
    let e = launch(&m, "oob", &cfg, &[Arg::Buffer(out), Arg::Scalar(16)], &mut mem, &Options::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::OutOfBounds));
    assert!(e.message.contains("0 bytes past the end of buffer `dx` (16 bytes)"), "{e}");
    assert_eq!(e.line, Some(12));
    let e = launch(&m, "oob", &cfg, &[Arg::Buffer(out), Arg::Scalar(2)], &mut mem, &Options::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::Misaligned), "{e}");
    launch(&m, "oob", &cfg, &[Arg::Buffer(out), Arg::Scalar(12)], &mut mem, &Options::default()).unwrap();
    assert_eq!(u32s(&mem, out), [0, 0, 0, 12]);
}

#[test]
fn an_endless_loop_runs_out_of_fuel() {
    let src = ".visible .entry spin()\n{\nL:\n    bra.uni L;\n}\n";
    let m = module(src);
    let mut mem = Memory::new();
    let opts = Options { fuel: 100_000, ..Options::default() };
    let e = launch(&m, "spin", &LaunchConfig::linear(2, 32), &[], &mut mem, &opts).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::FuelExhausted), "{e}");
}

/// One spinning warp stops at the per-warp limit, long before the launch's fuel: the defaults
/// (2^26 per warp) report a spinning thread within seconds instead of after 2^32 instructions.
#[test]
fn a_spinning_warp_stops_at_the_per_warp_limit() {
    let src = ".visible .entry spin()\n{\n    .reg .pred %p<2>; .reg .b32 %r<2>;\n    mov.u32 %r1, %tid.x;\n    setp.ne.u32 %p1, %r1, 0;\n    @%p1 bra DONE;\nL:\n    bra.uni L;\nDONE:\n    ret;\n}\n";
    let m = module(src);
    let mut mem = Memory::new();
    let opts = Options { warp_fuel: 5_000, ..Options::default() };
    let e = launch(&m, "spin", &LaunchConfig::linear(1, 64), &[], &mut mem, &opts).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::FuelExhausted), "{e}");
    assert!(e.message.contains("warp 0 of the block executed more than 5000 instructions"), "{e}");
    assert_eq!(e.line, Some(11), "{e}"); // `bra.uni L;` (the test module adds a 3-line header)
    assert_eq!(kir_ptx_emu::DEFAULT_WARP_FUEL, 1 << 26);
    let o = Options::default().with_fuel(7);
    assert_eq!((o.fuel, o.warp_fuel), (7, 7));
}

#[test]
fn seed_style_ptx_named_params_no_cvta_negated_guards() {
    // The style of Rust PTX builders: named parameters, ld.global straight on the parameter's
    // address, `@!%p` guards, a decimal float immediate.
    let src = r#"
.visible .entry relu_backward(.param .u64 grad_out, .param .u64 input, .param .u64 grad_in, .param .u32 n)
{
    .reg .pred %p<3>; .reg .b32 %r<6>; .reg .f32 %f<4>; .reg .b64 %rd<8>;
    mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x;
    mad.lo.u32 %r4, %r1, %r2, %r3;
    ld.param.u32 %r5, [n];
    setp.lt.u32 %p1, %r4, %r5;
    @!%p1 bra EXIT;
    ld.param.u64 %rd1, [grad_out]; ld.param.u64 %rd2, [input]; ld.param.u64 %rd3, [grad_in];
    mul.wide.u32 %rd4, %r4, 4;
    add.u64 %rd5, %rd2, %rd4;
    ld.global.f32 %f1, [%rd5];
    add.u64 %rd6, %rd1, %rd4;
    ld.global.f32 %f2, [%rd6];
    setp.gt.f32 %p2, %f1, 0.0;
    selp.f32 %f3, %f2, 0f00000000, %p2;
    add.u64 %rd7, %rd3, %rd4;
    st.global.f32 [%rd7], %f3;
EXIT:
    ret;
}
"#;
    let m = module(src);
    assert_eq!(
        m.entries()[0].params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["grad_out", "input", "grad_in", "n"]
    );
    let mut mem = Memory::new();
    let n = 100u32;
    let g: Vec<u32> = (0..n).map(|i| (i as f32 + 0.5).to_bits()).collect();
    let x: Vec<u32> = (0..n).map(|i| (i as f32 - 50.0).to_bits()).collect();
    let (gb, xb, ob) =
        (buf(&mut mem, "grad_out", &g), buf(&mut mem, "input", &x), buf(&mut mem, "grad_in", &vec![0; n as usize]));
    launch(
        &m,
        "relu_backward",
        &LaunchConfig::linear(4, 32),
        &[Arg::Buffer(gb), Arg::Buffer(xb), Arg::Buffer(ob), Arg::Scalar(n as u64)],
        &mut mem,
        &Options::default(),
    )
    .unwrap();
    let want: Vec<u32> = (0..n).map(|i| if i > 50 { (i as f32 + 0.5).to_bits() } else { 0 }).collect();
    assert_eq!(u32s(&mem, ob), want);
}

#[test]
fn global_atomics_and_vote() {
    let src = r#"
.visible .entry count(.param .u64 out)
{
    .reg .pred %p<3>; .reg .b32 %r<6>; .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 1;
    vote.sync.ballot.b32 %r3, %p1, -1;
    atom.global.add.u32 %r4, [%rd1], 1;
    setp.ne.u32 %p2, %r1, 0;
    @%p2 bra END;
    st.global.u32 [%rd1+4], %r3;
END:
    ret;
}
"#;
    let m = module(src);
    let mut mem = Memory::new();
    let out = buf(&mut mem, "out", &[0, 0]);
    launch(&m, "count", &LaunchConfig::linear(3, 32), &[Arg::Buffer(out)], &mut mem, &Options::default()).unwrap();
    assert_eq!(u32s(&mem, out), [96, 0xaaaa_aaaa]);
}

#[test]
fn load_errors_are_located() {
    let cases: &[(&str, (u32, u32), &str)] = &[
        (".visible .entry k()\n{\n    foo.u32 %r1, 1;\n}\n", (6, 5), "unsupported instruction `foo`"),
        (
            ".visible .entry k()\n{\n    .reg .b32 %r<2>;\n    mov.u32 %r9, 1;\n}\n",
            (7, 13),
            "undeclared register `%r9`",
        ),
        (".visible .entry k()\n{\n    bra.uni NOWHERE;\n}\n", (6, 5), "undefined label `NOWHERE`"),
        (".visible .entry k()\n{\n    .reg .b32 %r<2>;\n    add.cc.u32 %r1, %r1, 1;\n}\n", (7, 5), "carry forms"),
        (".visible .entry k()\n{\n    .reg .b32 %r<2>;\n    mov.u32 %r1, 1\n}\n", (8, 1), "expected `,` or `;`"),
        (".visible .func f()\n{\n    .shared .b32 s;\n}\n", (6, 5), "`.shared` variables inside a function"),
    ];
    for (body, (line, col), msg) in cases {
        let e = Module::parse(&format!("{HEADER}{body}")).err().unwrap_or_else(|| panic!("accepted:\n{body}"));
        assert_eq!((e.line, e.col), (*line, *col), "{e} for\n{body}");
        assert!(e.message.contains(msg), "{e}");
    }
}

#[test]
fn launch_errors() {
    let m = module(DIVERGE);
    let mut mem = Memory::new();
    let e = launch(&m, "nope", &LaunchConfig::linear(1, 1), &[], &mut mem, &Options::default()).unwrap_err();
    assert_eq!(e.to_string(), "invalid launch: no entry `nope` in the module (entries: diverge)");
    let e = launch(&m, "diverge", &LaunchConfig::linear(1, 1), &[], &mut mem, &Options::default()).unwrap_err();
    assert!(e.message.contains("takes 1 arguments, given 0"), "{e}");
    let e = launch(&m, "diverge", &LaunchConfig::linear(1, 2048), &[Arg::Scalar(0)], &mut mem, &Options::default())
        .unwrap_err();
    assert!(e.message.contains("too large"), "{e}");
}

#[test]
fn the_lowest_failing_block_is_reported_whatever_the_host_threads() {
    // Blocks 3 and up store out of bounds: block 3 is always the one reported.
    let src = r#"
.visible .entry grid(.param .u64 out)
{
    .reg .b32 %r<4>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %tid.x;
    mad.lo.s32 %r3, %r1, 32, %r2;
    mul.wide.u32 %rd2, %r3, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
}
"#;
    let m = module(src);
    for threads in [Some(1), Some(2), Some(4), None] {
        let mut mem = Memory::new();
        let out = buf(&mut mem, "out", &[0; 96]);
        let opts = Options { threads, ..Options::default() };
        let e = launch(&m, "grid", &LaunchConfig::linear(64, 32), &[Arg::Buffer(out)], &mut mem, &opts).unwrap_err();
        assert_eq!(e.block, Some([3, 0, 0]), "{threads:?}: {e}");
        assert_eq!(e.thread, Some([0, 0, 0]), "{threads:?}: {e}");
        let mut mem = Memory::new();
        let out = buf(&mut mem, "out", &[0; 64 * 32]);
        let s = launch(&m, "grid", &LaunchConfig::linear(64, 32), &[Arg::Buffer(out)], &mut mem, &opts).unwrap();
        assert_eq!(u32s(&mem, out), (0..64 * 32).collect::<Vec<u32>>());
        assert_eq!((s.blocks, s.threads), (64, 64 * 32));
    }
}

#[test]
fn float_immediates_keep_their_bits_and_signed_narrowing_sign_extends() {
    let src = r#"
.visible .entry k(.param .u64 out)
{
    .reg .pred %p1; .reg .b32 %r<6>; .reg .f32 %f<3>; .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    mov.f32 %f1, 0f7FC00001;
    setp.eq.u32 %p1, %r1, 0;
    selp.f32 %f2, 0f7FA00000, 0f00000000, %p1;
    mov.b32 %r2, %f1;
    mov.b32 %r3, %f2;
    mov.u32 %r4, -447303253;
    cvt.s8.s32 %r5, %r4;
    st.global.u32 [%rd1], %r2;
    st.global.u32 [%rd1+4], %r3;
    st.global.u32 [%rd1+8], %r5;
    cvt.u8.s32 %r5, %r4;
    st.global.u32 [%rd1+12], %r5;
    ret;
}
"#;
    let m = module(src);
    let mut mem = Memory::new();
    let out = buf(&mut mem, "out", &[0; 4]);
    launch(&m, "k", &LaunchConfig::linear(1, 1), &[Arg::Buffer(out)], &mut mem, &Options::default()).unwrap();
    assert_eq!(u32s(&mem, out), [0x7fc0_0001, 0x7fa0_0000, 0xffff_ffab, 0xab]);
}

#[test]
fn unrounded_mul_and_add_are_contracted_like_ptxas_does_but_rn_ones_are_not() {
    // x*x + c with x = 1 + 2^-12, c = -(1 + 2^-11): the product's low bit 2^-24 is lost when
    // rounded separately (result 0), kept by the fused operation (result 2^-24).
    let body = |m: &str, a: &str| {
        format!(
            ".visible .entry k(.param .u64 out)\n{{\n.reg .f32 %f<5>; .reg .b64 %rd<2>;\nld.param.u64 %rd1, [out];\n\
             mov.f32 %f1, 0f3F800800;\nmov.f32 %f2, 0fBF801000;\n{m} %f3, %f1, %f1;\n{a} %f4, %f3, %f2;\n\
             st.global.f32 [%rd1], %f4;\nret;\n}}\n"
        )
    };
    for (m, a, want) in
        [("mul.f32", "add.f32", 2f32.powi(-24)), ("mul.rn.f32", "add.rn.f32", 0.0), ("mul.rn.f32", "add.f32", 0.0)]
    {
        let md = module(&body(m, a));
        let mut mem = Memory::new();
        let out = buf(&mut mem, "out", &[7]);
        launch(&md, "k", &LaunchConfig::linear(1, 1), &[Arg::Buffer(out)], &mut mem, &Options::default()).unwrap();
        assert_eq!(f32::from_bits(u32s(&mem, out)[0]), want, "{m} + {a}");
    }
}

#[test]
fn unrounded_mul_and_sub_are_contracted_too() {
    // x*x - c and c - x*x with the values of the mul+add test: fused, the product's low bit shows.
    for (sub, want) in [("sub.f32 %f4, %f3, %f2;", 2f32.powi(-24)), ("sub.f32 %f4, %f2, %f3;", -(2f32.powi(-24)))] {
        let src = format!(
            ".visible .entry k(.param .u64 out)\n{{\n.reg .f32 %f<5>; .reg .b64 %rd<2>;\nld.param.u64 %rd1, [out];\n\
             mov.f32 %f1, 0f3F800800;\nmov.f32 %f2, 0f3F801000;\nmul.f32 %f3, %f1, %f1;\n{sub}\n\
             st.global.f32 [%rd1], %f4;\nret;\n}}\n"
        );
        let md = module(&src);
        let mut mem = Memory::new();
        let out = buf(&mut mem, "out", &[7]);
        launch(&md, "k", &LaunchConfig::linear(1, 1), &[Arg::Buffer(out)], &mut mem, &Options::default()).unwrap();
        assert_eq!(f32::from_bits(u32s(&mem, out)[0]), want, "{sub}");
    }
}

#[test]
fn conversions_that_can_round_need_a_rounding_modifier() {
    for (cvt, ok) in [
        ("cvt.f32.u32 %f1, %r1;", false),
        ("cvt.rn.f32.u32 %f1, %r1;", true),
        ("cvt.u32.f32 %r1, %f1;", false),
        ("cvt.rzi.u32.f32 %r1, %f1;", true),
        ("cvt.f16.f32 %h1, %f1;", false),
        ("cvt.rn.f16.f32 %h1, %f1;", true),
        ("cvt.f32.f16 %f1, %h1;", true),
        ("cvt.ftz.f32.f32 %f1, %f1;", true),
    ] {
        let src = format!(
            "{HEADER}.visible .entry k()\n{{\n.reg .b32 %r<2>; .reg .f32 %f<2>; .reg .b16 %h<2>;\n{cvt}\nret;\n}}\n"
        );
        match Module::parse(&src) {
            Ok(_) => assert!(ok, "{cvt} was accepted"),
            Err(e) => {
                assert!(!ok, "{cvt}: {e}");
                assert_eq!(e.line, 7, "{e}");
                assert!(e.message.contains("needs"), "{e}");
            }
        }
    }
}

#[test]
fn hostile_nesting_and_register_counts_are_errors_not_crashes() {
    let deep = format!(".visible .entry k()\n{{\n.reg .pred %p<2>;\nnot.pred %p1, {}%p0;\n}}\n", "!".repeat(200_000));
    let e = Module::parse(&format!("{HEADER}{deep}")).err().expect("rejected");
    assert!(e.message.contains("nest too deeply"), "{e}");
    let vecs = format!(
        ".visible .entry k()\n{{\n.reg .b32 %r<2>;\nmov.b64 {}%r0{}, %r1;\n}}\n",
        "{".repeat(100_000),
        "}".repeat(100_000)
    );
    assert!(Module::parse(&format!("{HEADER}{vecs}")).is_err());
    let regs = ".visible .entry k()\n{\n.reg .b32 %r<1000000>;\n.reg .b32 %s<1000000>;\n}\n";
    let e = Module::parse(&format!("{HEADER}{regs}")).err().expect("rejected");
    assert!(e.message.contains("too many registers"), "{e}");
    assert_eq!(e.line, 7);
}

#[test]
fn a_short_module_cannot_declare_unbounded_registers() {
    let entry = |i: usize| format!(".visible .entry k{i}()\n{{\n.reg .b32 %r<1000000>;\nret;\n}}\n");
    let text: String = (0..64).map(entry).collect();
    let e = Module::parse(&format!("{HEADER}{text}")).err().expect("rejected");
    assert!(e.message.contains("too many registers"), "{e}");
}

/// `.maxntid x, y, z` bounds the threads of a block by `x * y * z` (the PTX ISA: exceeding it is a
/// launch failure); it used to be skipped.
#[test]
fn maxntid_bounds_the_threads_per_block() {
    let src = ".visible .entry k() .maxntid 8, 8\n{\n    ret;\n}\n";
    let m = module(src);
    let mut mem = Memory::new();
    let run = |block: [u32; 3], mem: &mut Memory| {
        let cfg = LaunchConfig { grid: [1, 1, 1], block, dynamic_shared_bytes: 0 };
        launch(&m, "k", &cfg, &[], mem, &Options::default())
    };
    run([64, 1, 1], &mut mem).unwrap();
    run([16, 4, 1], &mut mem).unwrap();
    let e = run([16, 8, 1], &mut mem).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidLaunch, "{e}");
    assert!(e.message.contains("declares `.maxntid 8, 8, 1` (at most 64 threads per block) but is launched with block (16, 8, 1) = 128 threads"), "{e}");
    assert!(Module::parse(
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() .maxntid 0\n{\n    ret;\n}\n"
    )
    .is_err());
}
