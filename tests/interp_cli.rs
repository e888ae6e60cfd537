//! `kir run`: argument binding, summaries, --stats, --out, and its error exits.

mod cli;
use cli::kir;

const RELU: [&str; 6] = ["run", "kernels/relu_backward.kir", "--grid", "4", "--block", "256"];

#[test]
fn runs_and_summarizes_written_buffers() {
    let mut a = RELU.to_vec();
    a.extend([
        "--arg",
        "x=range:f32:1000",
        "--arg",
        "dy=ones:f32:1000",
        "--arg",
        "dx=zeros:f32:1000",
        "--arg",
        "n=1000",
        "--stats",
    ]);
    let (code, out, err) = kir(&a);
    assert_eq!(code, 0, "{err}");
    // x = 0, 1, 2, ...: dx = 0 at x = 0, then 1. Only the written buffer is summarized.
    assert!(out.contains("%dx: f32[1000] [0, 1, 1, 1, 1, 1, 1, 1, ...] min 0 max 1 mean 0.999000 NaN 0"), "{out}");
    assert!(!out.contains("%x:"), "{out}");
    assert!(out.contains("stats: 10096 thread-instructions"), "{out}");
    assert!(out.contains("8000 bytes read, 4000 bytes written, 0 barriers, 4 blocks of 256 threads"), "{out}");
}

#[test]
fn writes_npy_outputs() {
    let path = std::env::temp_dir().join(format!("kir_interp_cli_{}.npy", std::process::id()));
    let p = path.to_str().unwrap();
    let out_arg = format!("dx={p}");
    let mut a = RELU.to_vec();
    a.extend([
        "--arg",
        "x=range:f32:1000",
        "--arg",
        "dy=range:f32:1000",
        "--arg",
        "dx=zeros:f32:1000",
        "--arg",
        "n=1000",
        "--out",
        &out_arg,
    ]);
    let (code, out, err) = kir(&a);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty(), "{out}");
    let b = kir_interp::npy::read(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(b.to_f32()[..4], [0.0, 1.0, 2.0, 3.0]);
}

#[test]
fn argument_errors_exit_2() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["--arg", "x=rand:f16:4", "--arg", "dy=ones:f32:4", "--arg", "dx=zeros:f32:4", "--arg", "n=4"],
            "argument `x`: the buffer holds f16 elements, but the parameter is a ptr<global, f32>",
        ),
        (&["--arg", "x=rand:f32:4", "--arg", "n=4"], "missing argument for parameter `dy: ptr<global, f32>`"),
        (
            &["--arg", "x=rand:f32:4", "--arg", "dy=ones:f32:4", "--arg", "dx=zeros:f32:4", "--arg", "n=-4"],
            "argument `n`",
        ),
        (&["--arg", "q=1"], "has no parameter `q`"),
    ];
    for (extra, msg) in cases {
        let mut a = RELU.to_vec();
        a.extend_from_slice(extra);
        let (code, _, err) = kir(&a);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(msg), "{err} does not contain {msg}");
    }
}

#[test]
fn kernel_faults_exit_1_with_a_located_message() {
    let (code, _, err) = kir(&[
        "run",
        "tests/filetests/fault/oob_by_one.kir",
        "--grid",
        "1",
        "--block",
        "1",
        "--arg",
        "x=zeros:f32:10",
        "--arg",
        "out=zeros:f32:1",
        "--arg",
        "n=10",
    ]);
    assert_eq!(code, 1, "{err}");
    insta::assert_snapshot!("cli_oob", err);
}

#[test]
fn print_shows_a_buffers_values_exactly_in_rows() {
    let args = [
        "run",
        "kernels/quantize.kir",
        "--kernel",
        "dequant_u8",
        "--grid",
        "1",
        "--block",
        "64",
        "--arg",
        "q=range:u8:40",
        "--arg",
        "out=zeros:f16:40",
        "--arg",
        "scale=0.5",
        "--arg",
        "zero=3",
        "--arg",
        "n=40",
        "--print",
        "out:8",
        "--print",
        "%q",
    ];
    let (code, out, err) = kir(&args);
    assert_eq!(code, 0, "{err}");
    // out[i] = (i - 3) * 0.5 in f16, as decimals; q in rows that start with their index.
    assert!(
        out.starts_with("%out: f16[40], first 8:\n  [0]  -1.5  -1.0  -0.5   0.0   0.5   1.0   1.5   2.0\n"),
        "{out}"
    );
    assert!(out.contains("%q: u8[40], all 40:\n   [0]   0   1   2"), "{out}");
    assert!(out.lines().all(|l| l.len() <= 100), "{out}");
    assert!(!out.contains("min"), "--print replaces the summaries: {out}");
    for (bad, want) in [
        ("n", "--print n: parameter `n` is a scalar, not a buffer"),
        ("nope", "--print nope: kernel @dequant_u8 has no parameter `nope`"),
        ("out:x", "--print out:x: `x` is not a count (NAME or NAME:N)"),
    ] {
        let mut a = args[..args.len() - 4].to_vec();
        a.extend(["--print", bad]);
        let (code, _, err) = kir(&a);
        assert_eq!(code, 2, "{bad}");
        assert!(err.contains(want), "{bad}: {err}");
    }
}

/// `--out` never clobbers an input of the run, never writes one file twice, names an empty path,
/// and leaves nothing half-written.
#[test]
fn out_refuses_to_overwrite_inputs_and_duplicates() {
    let dir = std::env::temp_dir().join(format!("kir-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("relu.kir");
    std::fs::copy("kernels/relu_backward.kir", &src).unwrap();
    let x = dir.join("x.npy");
    let (code, _, err) = kir(&[
        "run",
        "kernels/relu_backward.kir",
        "--grid",
        "1",
        "--block",
        "4",
        "--arg",
        "x=range:f32:4",
        "--arg",
        "dy=ones:f32:4",
        "--arg",
        "dx=zeros:f32:4",
        "--arg",
        "n=4",
        "--out",
        &format!("x={}", x.display()),
    ]);
    assert_eq!(code, 0, "{err}");
    let before = std::fs::read(&x).unwrap();
    let (s, xs) = (src.display().to_string(), x.display().to_string());
    let base = |extra: &[&str]| {
        let mut a = vec!["run", &s, "--grid", "1", "--block", "4"];
        a.extend(["--arg", "dy=ones:f32:4", "--arg", "dx=zeros:f32:4", "--arg", "n=4"]);
        a.extend_from_slice(extra);
        kir(&a)
    };
    let from_npy = format!("x=@{xs}");
    let over_input = format!("dx={xs}");
    let (code, _, err) = base(&["--arg", &from_npy, "--out", &over_input]);
    assert_eq!(code, 2);
    assert!(err.contains(&format!("--out dx={xs} would overwrite the input of --arg x")), "{err}");
    let over_source = format!("dx={s}");
    let (code, _, err) = base(&["--arg", "x=range:f32:4", "--out", &over_source]);
    assert_eq!(code, 2);
    assert!(err.contains("would overwrite the file being run"), "{err}");
    let twice_a = format!("dx={}/o.npy", dir.display());
    let twice_b = format!("x={}/sub/../o.npy", dir.display());
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let (code, _, err) = base(&["--arg", "x=range:f32:4", "--out", &twice_a, "--out", &twice_b]);
    assert_eq!(code, 2);
    assert!(err.contains("write the same file"), "{err}");
    let (code, _, err) = base(&["--arg", "x=range:f32:4", "--out", "dx="]);
    assert_eq!(code, 2);
    assert!(err.contains("error: --out dx=: expected a file name after `=`"), "{err}");
    assert_eq!(std::fs::read(&x).unwrap(), before, "the input is untouched");
    assert_eq!(std::fs::read_to_string(&src).unwrap(), std::fs::read_to_string("kernels/relu_backward.kir").unwrap());
    std::fs::remove_dir_all(&dir).ok();
}

/// One memory budget for the run's buffers together, checked before anything is allocated: four
/// 4 GiB buffers used to end in an allocation failure and an abort.
#[test]
fn the_buffers_of_a_run_share_one_memory_budget() {
    let dir = std::env::temp_dir().join(format!("kir-budget-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("four.kir");
    std::fs::write(
        &f,
        "kernel @k(%a: ptr<global, u8>, %b: ptr<global, u8>, %c: ptr<global, u8>, %d: ptr<global, u8>) {\nentry:\n  ret\n}\n",
    )
    .unwrap();
    let path = f.to_str().unwrap();
    let big = ["a", "b", "c", "d"].map(|n| format!("{n}=zeros:u8:4294967296"));
    let mut args = vec!["run", path, "--grid", "1", "--block", "1"];
    for b in &big {
        args.extend(["--arg", b.as_str()]);
    }
    let (code, _, err) = kir(&args);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err,
        "error: the arguments' buffers need 17179869184 bytes, more than the memory budget of 8589934592 bytes (raise it with --max-memory BYTES)\n"
    );
    let small = ["a", "b", "c", "d"].map(|n| format!("{n}=zeros:u8:4096"));
    let mut args = vec!["run", path, "--grid", "1", "--block", "1", "--max-memory", "12K"];
    for b in &small {
        args.extend(["--arg", b.as_str()]);
    }
    let (code, _, err) = kir(&args);
    assert_eq!(code, 2);
    assert!(err.contains("need 16384 bytes, more than the memory budget of 12288 bytes"), "{err}");
    args[7] = "16K";
    let (code, _, err) = kir(&args);
    assert_eq!(code, 0, "{err}");
    args[7] = "lots";
    let (code, _, err) = kir(&args);
    assert_eq!(code, 2);
    assert!(err.contains("--max-memory `lots`: expected a byte count"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Only checked IR runs: a kernel that does not verify, or whose barriers diverge, is refused with
/// `kir check`'s diagnostics (located, with the file's text), exit 1, and nothing runs. This is
/// where a user sees what the interpreter library enforces by type (`launch_verified`).
#[test]
fn a_kernel_that_does_not_check_is_refused_with_the_checks_diagnostics() {
    let dir = std::env::temp_dir().join(format!("kir-run-unchecked-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ill_typed = dir.join("ill_typed.kir");
    std::fs::write(
        &ill_typed,
        "kernel @k(%out: ptr<global, u32>) {\nentry:\n  %t = tid.x\n  %f = cvt.f32.u32 %t\n  store %out[%t], %f\n  ret\n}\n",
    )
    .unwrap();
    let divergent = dir.join("divergent.kir");
    std::fs::write(
        &divergent,
        "kernel @k(%out: ptr<global, u32>) {\nentry:\n  %t = tid.x\n  %c = lt.u32 %t, 5\n  br %c, a, b\na:\n  barrier\n  jmp b\nb:\n  store %out[%t], %t\n  ret\n}\n",
    )
    .unwrap();
    for (file, needle, line) in [(&ill_typed, "store", "ill_typed.kir:5:"), (&divergent, "barrier", "divergent.kir:7:")]
    {
        let path = file.to_str().unwrap();
        let (code, out, err) = kir(&["run", path, "--grid", "1", "--block", "32", "--arg", "out=zeros:u32:32"]);
        assert_eq!(code, 1, "{err}");
        assert!(out.is_empty(), "nothing ran: {out}");
        assert!(err.starts_with("error: "), "{err}");
        assert!(err.contains(needle) && err.contains(line), "{err}");
        // Exactly what `kir check` prints for the file.
        let (check_code, _, check_err) = kir(&["check", path]);
        assert_eq!(check_code, 1);
        assert!(check_err.starts_with(&err), "kir run:\n{err}\nkir check:\n{check_err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
