//! Named barriers (issue 30, item 3): `bar.sync N, count`, `bar.arrive N, count` and their
//! `barrier.` spellings, in the style of trueno-gpu's persistent decoder: two warp groups of a
//! block synchronising on barriers 1 and 2 (a producer group arrives, a consumer group waits), and
//! the misuses that must fault loudly: a named barrier only part of the block reaches (deadlock),
//! two thread counts for one barrier, a count that is not whole warps, an id past 15.

use kir_ptx_emu::{launch, Arg, ErrorKind, FaultKind, LaunchConfig, Memory, Module, Options};

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

fn module(body: &str) -> Module {
    let text = format!("{HEADER}{body}");
    Module::parse(&text).unwrap_or_else(|e| panic!("parse error {e}\n{text}"))
}

fn u32s(mem: &Memory, id: kir_ptx_emu::BufferId) -> Vec<u32> {
    mem.bytes(id).unwrap().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn out_buf(mem: &mut Memory, n: usize) -> kir_ptx_emu::BufferId {
    mem.alloc("out", &vec![0u8; 4 * n]).unwrap()
}

/// 128 threads. Warps 0-1 (producers) write `s[t] = 3t + 1` and arrive at barrier 1 (128 threads)
/// without waiting; warps 2-3 (consumers) wait at barrier 1, copy `s[t - 64]` to `out[t]`, then
/// synchronise among themselves on barrier 2 (64 threads) and read their neighbour consumer's
/// value into `out[t - 64]`.
const PRODUCER_CONSUMER: &str = r#"
.visible .entry k(.param .u64 out)
{
    .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<8>;
    .shared .align 4 .b32 s[128];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, s;
    setp.lt.u32 %p1, %r1, 64;
    @!%p1 bra CONSUMER;
    mad.lo.u32 %r3, %r1, 3, 1;
    shl.b32 %r4, %r1, 2;
    add.u32 %r5, %r2, %r4;
    st.shared.u32 [%r5], %r3;
    bar.arrive 1, 128;
    bra DONE;
CONSUMER:
    barrier.sync 1, 128;
    sub.u32 %r6, %r1, 64;
    shl.b32 %r7, %r6, 2;
    add.u32 %r8, %r2, %r7;
    ld.shared.u32 %r9, [%r8];
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r9;
    add.u32 %r10, %r2, 256;
    add.u32 %r11, %r10, %r7;
    st.shared.u32 [%r11], %r1;
    bar.sync 2, 64;
    xor.b32 %r12, %r6, 1;
    shl.b32 %r13, %r12, 2;
    add.u32 %r14, %r10, %r13;
    ld.shared.u32 %r15, [%r14];
    mul.wide.u32 %rd4, %r6, 4;
    add.u64 %rd5, %rd1, %rd4;
    st.global.u32 [%rd5], %r15;
DONE:
    ret;
}
"#;

#[test]
fn two_warp_groups_synchronise_on_named_barriers() {
    let m = module(PRODUCER_CONSUMER);
    let mut mem = Memory::new();
    let out = out_buf(&mut mem, 128);
    launch(&m, "k", &LaunchConfig::linear(2, 128), &[Arg::Buffer(out)], &mut mem, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let got = u32s(&mem, out);
    for t in 64..128u32 {
        assert_eq!(got[t as usize], 3 * (t - 64) + 1, "consumer {t} reads its producer's value");
    }
    for c in 0..64u32 {
        assert_eq!(got[c as usize], 64 + (c ^ 1), "consumer {} wrote its neighbour's tid", 64 + c);
    }
}

fn fault_of(body: &str, threads: u32) -> kir_ptx_emu::EmuError {
    let m = module(body);
    let mut mem = Memory::new();
    let out = out_buf(&mut mem, threads as usize);
    launch(&m, "k", &LaunchConfig::linear(1, threads), &[Arg::Buffer(out)], &mut mem, &Options::default())
        .expect_err("the launch must fault")
}

/// Only warp 0 reaches `bar.sync 1, 64`: nobody else ever arrives.
const DIVERGENT_NAMED: &str = r#"
.visible .entry k(.param .u64 out)
{
    .reg .pred %p<2>; .reg .b32 %r<4>;
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, 32;
    @%p1 bra DONE;
    bar.sync 1, 64;
DONE:
    ret;
}
"#;

#[test]
fn a_named_barrier_that_cannot_fill_is_a_deadlock() {
    let e = fault_of(DIVERGENT_NAMED, 96);
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::BarrierDivergence), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("deadlock: warp 0 waits at named barrier 1, which has 32 of its 64 threads and can get no more"),
        "{text}"
    );
    assert!(text.contains("bar.sync 1, 64"), "the instruction is named: {text}");
}

#[test]
fn a_named_barrier_and_the_block_barrier_do_not_mix() {
    let body = DIVERGENT_NAMED.replace(
        "    @%p1 bra DONE;\n    bar.sync 1, 64;\nDONE:",
        "    @%p1 bra OTHER;\n    bar.sync 1, 64;\n    bra DONE;\nOTHER:\n    bar.sync 0;\nDONE:",
    );
    let e = fault_of(&body, 64);
    let text = e.to_string();
    assert!(text.contains("waits at the block-wide `bar.sync 0`"), "{text}");
}

#[test]
fn misused_named_barriers_fault() {
    // Two thread counts for barrier 1.
    let two_counts = DIVERGENT_NAMED.replace(
        "    @%p1 bra DONE;\n    bar.sync 1, 64;",
        "    @%p1 bra HI;\n    bar.sync 1, 64;\n    bra DONE;\nHI:\n    bar.sync 1, 96;",
    );
    let e = fault_of(&two_counts, 128);
    assert!(e.to_string().contains("with thread count 96 while barrier 1 is filling for 64 threads"), "{e}");
    // A count that is not whole warps, and an id past 15.
    let e = fault_of(&DIVERGENT_NAMED.replace("bar.sync 1, 64", "bar.sync 1, 48"), 64);
    assert!(e.to_string().contains("thread count 48: the count must be a positive multiple of 32"), "{e}");
    let e = fault_of(&DIVERGENT_NAMED.replace("bar.sync 1, 64", "bar.sync 16, 64"), 64);
    assert!(e.to_string().contains("names barrier 16; a block has barriers 0..15"), "{e}");
}

#[test]
fn bar_sync_with_a_register_id_and_the_whole_block() {
    // `bar.sync %r` with no count: every thread of the block (96 = 3 warps).
    let body = r#"
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<8>; .reg .b64 %rd<4>;
    .shared .align 4 .b32 s[96];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, s;
    shl.b32 %r3, %r1, 2;
    add.u32 %r4, %r2, %r3;
    st.shared.u32 [%r4], %r1;
    mov.u32 %r5, 3;
    bar.sync %r5;
    mov.u32 %r6, 95;
    sub.u32 %r6, %r6, %r1;
    shl.b32 %r6, %r6, 2;
    add.u32 %r6, %r2, %r6;
    ld.shared.u32 %r7, [%r6];
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r7;
    ret;
}
"#;
    let m = module(body);
    let mut mem = Memory::new();
    let out = out_buf(&mut mem, 96);
    launch(&m, "k", &LaunchConfig::linear(1, 96), &[Arg::Buffer(out)], &mut mem, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let got = u32s(&mem, out);
    assert!((0..96u32).all(|t| got[t as usize] == 95 - t), "{got:?}");
}
