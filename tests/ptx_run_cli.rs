//! `kir run FILE.ptx`: any PTX file run in the PTX emulator with `kir run`'s argument forms,
//! bound by PTX parameter names — kir's own PTX (same results as the interpreter), hand-written
//! PTX in the style of other generators, and every error exit.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory of its own for the files a test writes.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kir-ptx-run-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `kir ARGS...` in `dir`: (exit code, stdout, stderr).
fn kir_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kir"))
        .args(args)
        .current_dir(dir)
        .env_remove("KIR_REQUIRE_GPU")
        .env("NO_COLOR", "1")
        .output()
        .expect("run the kir binary");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Hand-written PTX as other generators write it: named parameters, `ld.global` straight on a
/// parameter's address (no `cvta`), an `@!%p` guard, and a second entry.
const SCALE: &str = r#".version 8.0
.target sm_80
.address_size 64

.visible .entry scale(
    .param .u64 src,
    .param .u64 dst,
    .param .f32 factor,
    .param .u32 n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<6>;

    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    ld.param.f32 %f1, [factor];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.lt.u32 %p1, %r5, %r1;
    @!%p1 bra DONE;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f2, [%rd4];
    mul.rn.f32 %f3, %f2, %f1;
    add.s64 %rd5, %rd2, %rd3;
    st.global.f32 [%rd5], %f3;
DONE:
    ret;
}

.visible .entry nothing()
{
    ret;
}
"#;

fn write_scale(dir: &Path) {
    std::fs::write(dir.join("scale.ptx"), SCALE).unwrap();
}

const SCALE_ARGS: [&str; 14] = [
    "run",
    "scale.ptx",
    "--kernel",
    "scale",
    "--grid",
    "2",
    "--block",
    "64",
    "--arg",
    "src=range:f32:100",
    "--arg",
    "dst=zeros:f32:100",
    "--arg",
    "n=100",
];

#[test]
fn kirs_ptx_runs_like_the_interpreter() {
    let dir = scratch("relu");
    let ptx = dir.join("relu.ptx");
    let (code, _, err) = kir_in(root(), &["ptx", "kernels/relu_backward.kir", "-o", ptx.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, emu, err) = kir_in(
        &dir,
        &[
            "run",
            "relu.ptx",
            "--grid",
            "4",
            "--block",
            "256",
            "--arg",
            "relu_backward_param_0=rand:f32:1000:1",
            "--arg",
            "relu_backward_param_1=ones:f32:1000",
            "--arg",
            "relu_backward_param_2=zeros:f32:1000",
            "--arg",
            "relu_backward_param_3=1000",
            "--stats",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (code, interp, err) = kir_in(
        root(),
        &[
            "run",
            "kernels/relu_backward.kir",
            "--grid",
            "4",
            "--block",
            "256",
            "--arg",
            "x=rand:f32:1000:1",
            "--arg",
            "dy=ones:f32:1000",
            "--arg",
            "dx=zeros:f32:1000",
            "--arg",
            "n=1000",
            "--stats",
        ],
    );
    assert_eq!(code, 0, "{err}");
    std::fs::remove_dir_all(&dir).ok();
    // The same summary of the written buffer; the emulator counts PTX instructions, but the same
    // global-memory traffic, barriers and shape.
    let dx = interp.lines().next().unwrap().trim_start_matches("%dx: ");
    assert!(emu.starts_with(&format!("%relu_backward_param_2: {dx}\n")), "{emu}\nvs\n{interp}");
    assert!(emu.contains("unchanged: %relu_backward_param_0, %relu_backward_param_1\n"), "{emu}");
    let tail = "global memory 8000 bytes read, 4000 bytes written, 0 barriers, 4 blocks of 256 threads";
    assert!(interp.contains(tail) && emu.contains(tail), "{emu}");
    assert!(emu.contains("stats: ") && emu.contains(" thread-instructions ("), "{emu}");
}

#[test]
fn hand_written_ptx_runs_with_literals_at_the_param_types_and_writes_npy() {
    let dir = scratch("scale");
    write_scale(&dir);
    let mut args = SCALE_ARGS.to_vec();
    args.extend(["--arg", "factor=0.5", "--out", "dst=dst.npy", "--time"]);
    let (code, out, err) = kir_in(&dir, &args);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("time: ") && out.ends_with(" ms\n"), "--out replaces the summaries: {out}");
    let b = kir_interp::npy::read(&dir.join("dst.npy")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let want: Vec<f32> = (0..100).map(|i| i as f32 * 0.5).collect();
    assert_eq!(b.to_f32(), want);
}

#[test]
fn argument_errors_exit_2() {
    let dir = scratch("args");
    write_scale(&dir);
    let cases: [(&[&str], &str); 6] = [
        (
            &["--arg", "bogus=1"],
            "error: entry `scale` has no parameter `bogus` (parameters: src: .u64, dst: .u64, factor: .f32, n: .u32)\n",
        ),
        (&[], "error: missing argument for parameter `factor: .f32`\n"),
        (&["--arg", "factor=zeros:f32:4"], "error: argument `factor`: a buffer's address needs a 64-bit integer parameter (.u64, .b64, .s64), but `factor: .f32` is given one\n"),
        (&["--arg", "factor=1", "--arg", "n=2"], "error: parameter `n` is given twice\n"),
        (&["--arg", "factor=1", "--races"], "error: --races and --uninit are interpreter checks; they are not available for PTX files\n"),
        (&["--arg", "factor=1", "--shared", "1000000"], "error: invalid launch: 1000000 bytes of shared memory"),
    ];
    for (extra, msg) in cases {
        let mut a = SCALE_ARGS.to_vec();
        a.extend_from_slice(extra);
        let (code, out, err) = kir_in(&dir, &a);
        assert_eq!(code, 2, "{a:?}: {out}{err}");
        assert!(err.starts_with(msg), "{a:?}: `{err}` does not start with `{msg}`");
    }
    // Literals are parsed at the parameter's type: a negative or fractional .u32 is refused.
    for n in ["n=-1", "n=1.5", "n=4294967296"] {
        let mut a = SCALE_ARGS.to_vec();
        a[13] = n;
        a.extend(["--arg", "factor=1"]);
        let (code, _, err) = kir_in(&dir, &a);
        assert_eq!(code, 2, "{n}: {err}");
        assert!(err.starts_with("error: argument `n`: "), "{n}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn entries_are_chosen_by_name_or_when_alone() {
    let dir = scratch("entries");
    write_scale(&dir);
    let (code, _, err) = kir_in(&dir, &["run", "scale.ptx", "--grid", "1", "--block", "1"]);
    assert_eq!(code, 1);
    assert_eq!(err, "error: scale.ptx: this file has 2 entries; choose one with --kernel (scale, nothing)\n");
    let (code, _, err) = kir_in(&dir, &["run", "scale.ptx", "--kernel", "nope", "--grid", "1", "--block", "1"]);
    assert_eq!(code, 1);
    assert_eq!(err, "error: scale.ptx: no entry `nope` (entries here: scale, nothing)\n");
    let (code, out, err) = kir_in(&dir, &["run", "scale.ptx", "--kernel", "nothing", "--grid", "1", "--block", "1"]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let one = SCALE.split(".visible .entry nothing").next().unwrap();
    std::fs::write(dir.join("one.ptx"), one).unwrap();
    let mut a = SCALE_ARGS.to_vec();
    a[1] = "one.ptx";
    a.drain(2..4);
    a.extend(["--arg", "factor=2"]);
    let (code, out, err) = kir_in(&dir, &a);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("%dst: f32[100] [0, 2, 4, 6, 8, 10, 12, 14, ...] min 0 max 198"), "{out}");
    assert!(out.ends_with("unchanged: %src\n"), "{out}");
}

#[test]
fn unloadable_ptx_is_a_located_error() {
    let dir = scratch("parse");
    std::fs::write(dir.join("bad.ptx"), SCALE.replace("mul.rn.f32", "mul.frobnicate.f32")).unwrap();
    let mut a = SCALE_ARGS.to_vec();
    a[1] = "bad.ptx";
    a.extend(["--arg", "factor=1"]);
    let (code, _, err) = kir_in(&dir, &a);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 1, "{err}");
    insta::assert_snapshot!("ptx_run_parse_error", err);
}

#[test]
fn faults_are_located_at_the_ptx_instruction() {
    let dir = scratch("fault");
    write_scale(&dir);
    let mut a = SCALE_ARGS.to_vec();
    // n is larger than the buffers: thread 100 reads past the end of `src`.
    a[13] = "n=128";
    a.extend(["--arg", "factor=1"]);
    let (code, _, err) = kir_in(&dir, &a);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 1, "{err}");
    insta::assert_snapshot!("ptx_run_fault", err);
}

#[test]
fn missing_files_are_errors() {
    let (code, _, err) = kir_in(root(), &["run", "no/such.ptx", "--grid", "1", "--block", "1"]);
    assert_eq!(code, 1);
    assert!(err.starts_with("error: no/such.ptx: "), "{err}");
}
