//! `wgmma` (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"): the layouts of
//! swizzled shared operands are checked end to end against the H100 by Triton's sm_90a matmul
//! (tests/triton_corpus.rs); here, the instruction's own rules: D = D + A B over a warpgroup of
//! 128 threads, `scale-d` false ignores D, and the misuses that must fault (no `wgmma.fence`
//! since the last wait, part of a warp).

use kir_ptx_emu::{launch, Arg, ErrorKind, FaultKind, LaunchConfig, Memory, Module, Options};

const HEADER: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n";

/// Shared memory (4 KiB) is filled with f16 `VAL`; A at 0 and B at 2048, K-major without
/// swizzling (LBO and SBO 256; with every element equal the layout does not matter); D starts at 1.0; `wgmma ... m64n8k16` with `scale-d` = `SD`;
/// each thread writes its 4 accumulators to out.
fn kernel(val: &str, sd: &str, fence: bool, guard: bool) -> String {
    let fence = if fence { "    wgmma.fence.sync.aligned;\n" } else { "" };
    let guard = if guard { "    setp.ge.u32 %p2, %r1, 16;\n    @%p2 bra DONE;\n" } else { "" };
    format!(
        r#"{HEADER}
.visible .entry k(.param .u64 out)
{{
    .reg .pred %p<4>; .reg .b16 %h<2>; .reg .b32 %r<16>; .reg .f32 %d<4>; .reg .b64 %rd<8>;
    .shared .align 128 .b8 s[4096];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, s;
    mov.b16 %h1, {val};
    mov.u32 %r3, 0;
FILL:
    shl.b32 %r4, %r1, 5;
    add.u32 %r4, %r4, %r3;
    add.u32 %r5, %r2, %r4;
    st.shared.b16 [%r5], %h1;
    add.u32 %r3, %r3, 2;
    setp.lt.u32 %p1, %r3, 32;
    @%p1 bra FILL;
    bar.sync 0;
    mov.f32 %d0, 0f3F800000;
    mov.f32 %d1, 0f3F800000;
    mov.f32 %d2, 0f3F800000;
    mov.f32 %d3, 0f3F800000;
    // Descriptors: start >> 4, LBO and SBO 256 (>> 4, at bits 16 and 32), no swizzle.
    mov.b64 %rd2, 68720525312;
    mov.b64 %rd3, 68720525440;
    setp.ne.u32 %p3, {sd}, 0;
{fence}{guard}    wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%d0, %d1, %d2, %d3}}, %rd2, %rd3, %p3, 1, 1, 0, 0;
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    mul.wide.u32 %rd4, %r1, 16;
    add.u64 %rd5, %rd1, %rd4;
    st.global.f32 [%rd5], %d0;
    st.global.f32 [%rd5+4], %d1;
    st.global.f32 [%rd5+8], %d2;
    st.global.f32 [%rd5+12], %d3;
DONE:
    ret;
}}
"#
    )
}

fn run(text: &str) -> Result<Vec<f32>, kir_ptx_emu::EmuError> {
    let m = Module::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut mem = Memory::new();
    let out = mem.alloc("out", &[0u8; 128 * 16]).unwrap();
    launch(&m, "k", &LaunchConfig::linear(1, 128), &[Arg::Buffer(out)], &mut mem, &Options::default())?;
    Ok(mem.bytes(out).unwrap().chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect())
}

#[test]
fn d_plus_a_times_b_over_a_warpgroup() {
    // 0x3C00 = 1.0, 0x4000 = 2.0: D = 1 + 16 * (2 * 2) = 65 with scale-d, 64 without.
    let d = run(&kernel("0x4000", "1", true, false)).unwrap_or_else(|e| panic!("{e}"));
    assert!(d.iter().all(|&x| x == 65.0), "{:?}", &d[..8]);
    let d = run(&kernel("0x4000", "0", true, false)).unwrap_or_else(|e| panic!("{e}"));
    assert!(d.iter().all(|&x| x == 64.0), "{:?}", &d[..8]);
}

#[test]
fn misuse_faults() {
    let e = run(&kernel("0x3C00", "1", false, false)).expect_err("no fence");
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::CollectiveMask), "{e}");
    assert!(e.to_string().contains("without a `wgmma.fence`"), "{e}");
    let e = run(&kernel("0x3C00", "1", true, true)).expect_err("part of a warp");
    assert!(e.to_string().contains("every lane of the warpgroup must execute it"), "{e}");
}
