//! `cp.async` (PTX ISA, "Data Movement: cp.async"): copies from global to shared memory, zero-
//! filling past `src-size`, committed in groups (`cp.async.commit_group`) and waited for per thread
//! (`cp.async.wait_group N`: all but the N most recent groups done; `cp.async.wait_all`). The
//! emulator copies when the instruction is issued and keeps the bytes *in flight* until the
//! thread waits for the copy's group: any read (or write) of them before is a located fault.

use kir_ptx_emu::{launch, Arg, ErrorKind, FaultKind, LaunchConfig, Memory, Module, Options};

const HEADER: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

/// Each of 32 threads copies 16 bytes (4 words) of `in` at 16 t into `s` at 16 t, with
/// `src-size` = `%n` bytes, then waits as `WAIT` says and writes its 4 words of `s` to `out`.
/// A second group copies words 128.. of `in` into `s2` the same way.
fn kernel(wait: &str) -> String {
    format!(
        r#"{HEADER}
.visible .entry k(.param .u64 in, .param .u64 out, .param .u32 n)
{{
    .reg .b32 %r<16>; .reg .b64 %rd<8>;
    .shared .align 16 .b32 s[128];
    .shared .align 16 .b32 s2[128];
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r9, [n];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 4;
    mov.u32 %r3, s;
    add.u32 %r4, %r3, %r2;
    cvt.u64.u32 %rd3, %r2;
    add.u64 %rd4, %rd1, %rd3;
    cp.async.cg.shared.global [%r4], [%rd4], 16, %r9;
    cp.async.commit_group;
    mov.u32 %r5, s2;
    add.u32 %r6, %r5, %r2;
    cp.async.ca.shared.global [%r6], [%rd4+512], 16;
    cp.async.commit_group;
{wait}
    ld.shared.u32 %r7, [%r4];
    ld.shared.u32 %r8, [%r4+12];
    add.u64 %rd5, %rd2, %rd3;
    st.global.u32 [%rd5], %r7;
    st.global.u32 [%rd5+12], %r8;
    ld.shared.u32 %r10, [%r6];
    st.global.u32 [%rd5+4], %r10;
    ret;
}}
"#
    )
}

fn run(wait: &str, n: u32) -> Result<Vec<u32>, kir_ptx_emu::EmuError> {
    let m = Module::parse(&kernel(wait)).unwrap_or_else(|e| panic!("{e}\n{}", kernel(wait)));
    let mut mem = Memory::new();
    let input: Vec<u8> = (0..256u32).flat_map(|x| (1000 + x).to_le_bytes()).collect();
    let i = mem.alloc("in", &input).unwrap();
    let o = mem.alloc("out", &[0u8; 512]).unwrap();
    launch(
        &m,
        "k",
        &LaunchConfig::linear(1, 32),
        &[Arg::Buffer(i), Arg::Buffer(o), Arg::Scalar(n as u64)],
        &mut mem,
        &Options::default(),
    )?;
    Ok(mem.bytes(o).unwrap().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect())
}

#[test]
fn copies_land_after_the_wait_with_zero_fill() {
    for wait in ["    cp.async.wait_group 0;\n    bar.sync 0;", "    cp.async.wait_all;\n    bar.sync 0;"] {
        let out = run(wait, 16).unwrap_or_else(|e| panic!("{e}"));
        for t in 0..32 {
            assert_eq!(out[4 * t], 1000 + 4 * t as u32, "{wait}: thread {t} word 0");
            assert_eq!(out[4 * t + 3], 1003 + 4 * t as u32, "thread {t} word 3");
            assert_eq!(out[4 * t + 1], 1128 + 4 * t as u32, "thread {t}: second group");
        }
    }
    // src-size 8: the last 8 of the 16 bytes are zero.
    let out = run("    cp.async.wait_group 0;\n    bar.sync 0;", 8).unwrap();
    assert_eq!(out[0], 1000);
    assert_eq!(out[3], 0, "zero-filled past src-size");
}

#[test]
fn reading_before_the_wait_faults() {
    let e = run("    bar.sync 0;", 16).expect_err("no wait: the bytes are in flight");
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::AsyncCopyInFlight), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("load of shared bytes 0..4 while the `cp.async` of thread [0, 0, 0] (PTX line 21)"),
        "{text}"
    );
    assert!(text.contains("cp.async.wait_group"), "{text}");
}

#[test]
fn wait_group_1_leaves_the_newest_group_in_flight() {
    // The first group is done after `wait_group 1`, the second (read at `s2`) is not.
    let e = run("    cp.async.wait_group 1;\n    bar.sync 0;", 16).expect_err("the second group is in flight");
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::AsyncCopyInFlight), "{e}");
    assert!(e.to_string().contains("(PTX line 25)"), "the second cp.async: {e}");
}
