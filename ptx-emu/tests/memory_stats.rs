//! `Stats::global_load_instructions` and `global_store_instructions`: every global (or generic)
//! `ld`/`st` of any vector width and every `cp.async` counts once per executing lane (guarded-off
//! lanes not), shared and parameter accesses not at all; with the byte counts they give the bytes
//! one memory instruction moved (the vector width achieved: 4 for `f32`, 16 for `.v4.f32`). The
//! counts add up over blocks and host threads.

use kir_ptx_emu::{launch, Arg, LaunchConfig, Memory, Module, Options, Stats};

/// 64 threads; threads 0..40 (`%p1`) also do the guarded accesses.
const PTX: &str = r#".version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 in, .param .u64 out)
{
    .reg .pred %p<2>; .reg .b32 %r<8>; .reg .f32 %f<12>; .reg .b64 %rd<8>;
    .shared .align 16 .b32 s[256];
    .shared .align 16 .b32 s2[64];
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 40;
    shl.b32 %r2, %r1, 4;
    cvt.u64.u32 %rd3, %r2;
    add.u64 %rd4, %rd1, %rd3;
    add.u64 %rd5, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    ld.global.v4.f32 {%f2, %f3, %f4, %f5}, [%rd4];
    @%p1 ld.global.v2.f32 {%f6, %f7}, [%rd4+8];
    cvta.global.u64 %rd6, %rd4;
    ld.f32 %f8, [%rd6];
    st.global.v4.f32 [%rd5], {%f2, %f3, %f4, %f5};
    @%p1 st.global.f32 [%rd5], %f8;
    mov.u32 %r3, s;
    add.u32 %r4, %r3, %r2;
    st.shared.f32 [%r4], %f1;
    ld.shared.f32 %f9, [%r4];
    bar.sync 0;
    cp.async.cg.shared.global [%r4], [%rd4], 16;
    mov.u32 %r5, s2;
    shl.b32 %r6, %r1, 2;
    add.u32 %r7, %r5, %r6;
    cp.async.ca.shared.global [%r7], [%rd4], 4, 0;
    cp.async.commit_group;
    cp.async.wait_all;
    ret;
}
"#;

fn run(grid: u32, threads: Option<usize>) -> Stats {
    let m = Module::parse(PTX).unwrap_or_else(|e| panic!("{e}"));
    let mut mem = Memory::new();
    let input: Vec<u8> = (0..256u32).flat_map(|x| (x as f32).to_le_bytes()).collect();
    let i = mem.alloc("in", &input).unwrap();
    let o = mem.alloc("out", &[0u8; 1024]).unwrap();
    let opts = Options { threads, ..Options::default() };
    launch(&m, "k", &LaunchConfig::linear(grid, 64), &[Arg::Buffer(i), Arg::Buffer(o)], &mut mem, &opts)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn global_memory_instructions_count_once_per_executing_lane_whatever_their_width() {
    let s = run(1, None);
    // Loads: ld.f32 (64 lanes, 4 B), ld.v4.f32 (64, 16 B), @p ld.v2.f32 (40, 8 B), generic ld.f32
    // (64, 4 B), cp.async 16 (64, 16 B), cp.async 4 with src-size 0 (64, no byte read).
    assert_eq!(s.global_load_instructions, 64 + 64 + 40 + 64 + 64 + 64);
    assert_eq!(s.global_bytes_read, 64 * 4 + 64 * 16 + 40 * 8 + 64 * 4 + 64 * 16);
    // Stores: st.v4.f32 (64, 16 B), @p st.f32 (40, 4 B); the shared store is not counted.
    assert_eq!(s.global_store_instructions, 64 + 40);
    assert_eq!(s.global_bytes_written, 64 * 16 + 40 * 4);
}

#[test]
fn the_width_achieved_is_bytes_over_instructions() {
    // One v4 store per lane and nothing else stored: 16 bytes per store instruction.
    let ptx = PTX.replace("    @%p1 st.global.f32 [%rd5], %f8;\n", "");
    let m = Module::parse(&ptx).unwrap();
    let mut mem = Memory::new();
    let i = mem.alloc("in", &[0u8; 1024]).unwrap();
    let o = mem.alloc("out", &[0u8; 1024]).unwrap();
    let s =
        launch(&m, "k", &LaunchConfig::linear(1, 64), &[Arg::Buffer(i), Arg::Buffer(o)], &mut mem, &Options::default())
            .unwrap();
    assert_eq!(s.global_bytes_written / s.global_store_instructions, 16);
}

#[test]
fn the_counts_add_up_over_blocks_and_host_threads() {
    let one = run(1, None);
    for threads in [Some(1), Some(2)] {
        let s = run(3, threads);
        assert_eq!(s.global_load_instructions, 3 * one.global_load_instructions, "{threads:?}");
        assert_eq!(s.global_store_instructions, 3 * one.global_store_instructions, "{threads:?}");
        assert_eq!(s.global_bytes_read, 3 * one.global_bytes_read, "{threads:?}");
    }
}
