//! `kir bench` as users run it, on kir's emulated CUDA driver (`KIR_CUDA_DRIVER=emu`): the label
//! that says the times are CPU times, the launches (command line or `; run:` directives), the bytes
//! counted, the flop count of `--flops` and its TFLOP/s column, `--cuda` with a CUDA C twin
//! compiled by NVRTC (skipped, saying why, without NVRTC), the fallback without a CUDA driver, and
//! the errors (exit status and message, never a panic).
//! Launches are small and `--reps 3`, so that the file runs in seconds on 2 cores.

use std::process::Command;

/// Runs `kir ARGS` in the repository with `env` set (a `None` value removes the variable);
/// returns (exit status, stdout, stderr).
fn kir_with(args: &[&str], env: &[(&str, Option<&str>)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kir"));
    cmd.args(args).current_dir(env!("CARGO_MANIFEST_DIR")).env_remove("KIR_REQUIRE_GPU");
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().unwrap();
    let r = (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(!r.2.contains("panicked"), "kir panicked:\n{}", r.2);
    r
}

/// `kir bench ARGS` on the emulated driver.
fn bench(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    kir_with(&all, &[("KIR_CUDA_DRIVER", Some("emu"))])
}

/// A small launch of `@relu_backward`: 64 elements, one block.
const RELU: &[&str] = &[
    "kernels/relu_backward.kir",
    "@relu_backward",
    "--grid",
    "1",
    "--block",
    "64",
    "x=rand:f32:64:1",
    "dy=rand:f32:64:2",
    "dx=zeros:f32:64",
    "n=64",
    "--warmup",
    "1",
    "--reps",
    "3",
];

const CPU_LABEL: &str = "[CPU time of the PTX emulator, not GPU time]";

#[test]
fn bench_on_the_emulated_driver_labels_every_time_as_cpu_time() {
    let (code, out, err) = bench(RELU);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.starts_with("device 0: kir-ptx-emu"), "{out}");
    assert!(out.contains("emulated: every time below is CPU wall time of kir's PTX emulator, not GPU time"), "{out}");
    assert!(out.contains(&format!("passes {}, sm_90 PTX", kir_passes::DEFAULT_PIPELINE)), "{out}");
    assert!(out.contains("per launch 1 untimed (warm-up) and 3 timed runs"), "{out}");
    // Bytes: each buffer once per direction it is used in (x, dy read; dx written).
    assert!(
        out.contains("@relu_backward grid(1) block(64): 768 bytes (x 256 read, dy 256 read, dx 256 written)"),
        "{out}"
    );
    let times: Vec<&str> = out.lines().filter(|l| l.contains(" ms [")).collect();
    assert_eq!(times.len(), 1, "{out}");
    for l in times {
        assert!(l.trim_start().starts_with("kir   median "), "{l}");
        assert!(l.ends_with(CPU_LABEL), "{l}");
        assert!(l.contains("GB/s n/a  % of copy rate n/a"), "{l}");
    }
    // No copy-rate reference on the emulator; no TFLOP/s without --flops.
    assert!(!out.contains("  copy  "), "{out}");
    assert!(!out.contains("TFLOP/s") && !out.contains(" flop"), "{out}");
}

#[test]
fn bench_flops_gives_each_launch_its_count_and_each_time_line_tflops() {
    // A product of the launch's arguments: each `; run:` directive of @gemm_tiled gets its own
    // count (2 m n k), and every time line ends its rates with TFLOP/s (n/a on the emulator).
    let (code, out, err) =
        bench(&["kernels/gemm_tiled.kir", "@gemm_tiled", "--flops", "2*m*n*k", "--warmup", "0", "--reps", "1"]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("not GPU time (GB/s and % of copy rate: n/a; TFLOP/s: n/a)"), "{out}");
    for (line, flop) in [(18, 2 * 25 * 37 * 37), (20, 2 * 64 * 64 * 64), (22, 2 * 3 * 5)] {
        let want = format!("(line {line}): ");
        let head = out.lines().find(|l| l.contains(&want)).expect(&out);
        assert!(head.ends_with(&format!(" written); {flop} flop (--flops 2*m*n*k)")), "{head}");
    }
    let times: Vec<&str> = out.lines().filter(|l| l.contains(" ms [")).collect();
    assert_eq!(times.len(), 3, "{out}");
    for l in times {
        assert!(l.contains("GB/s n/a  % of copy rate n/a  TFLOP/s n/a  [CPU time"), "{l}");
    }

    // A plain integer (names written `%m` work too), for a launch given on the command line.
    let mut args = RELU.to_vec();
    args.extend(["--flops", "64"]);
    let (code, out, err) = bench(&args);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("dx 256 written); 64 flop (--flops)"), "{out}");
    assert!(out.contains("TFLOP/s n/a  [CPU time"), "{out}");
    let mut args = RELU.to_vec();
    args.extend(["--flops", "2 * %n"]);
    let (code, out, err) = bench(&args);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("; 128 flop (--flops 2 * %n)"), "{out}");

    // The twin's line gets TFLOP/s too.
    if nvrtc().is_none() {
        return;
    }
    let (code, out, err) = bench(&[
        "kernels/gemm_tiled.kir",
        "@gemm_tiled",
        "--flops",
        "2*m*n*k",
        "--warmup",
        "0",
        "--reps",
        "1",
        "--cuda",
        "bench/gemm_tiled.cu",
    ]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let cuda: Vec<&str> = out.lines().filter(|l| l.starts_with("  cuda  median ")).collect();
    assert_eq!(cuda.len(), 3, "{out}");
    for l in cuda {
        assert!(l.contains("TFLOP/s n/a  [CPU time"), "{l}");
    }
}

#[test]
fn bench_times_every_run_directive_without_a_launch() {
    // gemm_tiled.kir has three `; run:` directives of @gemm_tiled (lines 18, 20, 22) and one of
    // @gemm_naive (line 24); `@gemm_naive` picks its one.
    let (code, out, err) = bench(&["kernels/gemm_tiled.kir", "@gemm_naive", "--warmup", "0", "--reps", "3"]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("@gemm_naive grid(1) block(16,16) (line 24): 272 bytes (a 160 read, b 80 read, c 32 written)"));
    assert_eq!(out.matches(CPU_LABEL).count(), 1, "{out}");
    assert!(!out.contains("@gemm_tiled"), "{out}");
    // The passes can be chosen; '' times the kernel as written.
    let (code, out, err) = bench(&["kernels/gemm_tiled.kir", "@gemm_naive", "--reps", "1", "--passes", ""]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("passes none, sm_90 PTX"), "{out}");
}

#[test]
fn bench_without_a_driver_runs_on_the_emulated_driver_or_fails_when_a_gpu_is_required() {
    if kir_backend_ptx::gpu::driver_present() {
        eprintln!("skip: a CUDA driver is present; the fallback without one cannot be seen here");
        return;
    }
    let mut args = vec!["bench"];
    args.extend_from_slice(RELU);
    let (code, out, err) = kir_with(&args, &[("KIR_CUDA_DRIVER", None)]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(err.contains("note: no CUDA driver found"), "{err}");
    assert!(err.contains("KIR_CUDA_DRIVER=emu"), "{err}");
    assert!(err.contains("CPU times of the PTX emulator, not GPU times"), "{err}");
    assert!(out.contains(CPU_LABEL), "{out}");
    args.push("--require-gpu");
    let (code, out, err) = kir_with(&args, &[("KIR_CUDA_DRIVER", None)]);
    assert_eq!(code, 1, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("a GPU is required"), "{err}");
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kir-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// NVRTC's library, or `None` after printing why the test is skipped (with `CI=true`, a panic).
fn nvrtc() -> Option<std::path::PathBuf> {
    kir_backend_ptx::tools::require_tool_or_skip("nvrtc")
}

#[test]
fn bench_with_a_cuda_twin_prints_both_medians_the_ratio_and_whether_they_agree() {
    if nvrtc().is_none() {
        return;
    }
    let mut args = RELU.to_vec();
    args.extend(["--cuda", "bench/activations.cu"]);
    let (code, out, err) = bench(&args);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("cuda: bench/activations.cu, NVRTC "), "{out}");
    assert!(out.contains("--gpu-architecture=compute_90"), "{out}");
    let kir = out.lines().find(|l| l.starts_with("  kir   median ")).expect(&out);
    let cuda = out.lines().find(|l| l.starts_with("  cuda  median ")).expect(&out);
    assert!(kir.ends_with(CPU_LABEL) && cuda.ends_with(CPU_LABEL), "{out}");
    assert!(out.lines().any(|l| l.starts_with("  kir/cuda ") && l.contains("emulator CPU times")), "{out}");
    assert!(out.contains("  outputs: kir and CUDA agree"), "{out}");

    // The file's directives, several kernels: a kernel without a twin is a `cuda  n/a` line.
    let (code, out, err) =
        bench(&["kernels/gemm_tiled.kir", "--reps", "1", "--warmup", "0", "--cuda", "bench/gemm_tiled.cu"]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(out.matches("  cuda  median ").count(), 3, "{out}");
    assert!(
        out.contains(
            "  cuda  n/a: no kernel `gemm_naive` in NVRTC's PTX of bench/gemm_tiled.cu (kernels there: gemm_tiled)"
        ),
        "{out}"
    );
}

#[test]
fn bench_cuda_errors_are_clear() {
    if nvrtc().is_none() {
        return;
    }
    let dir = scratch("cuda-errors");
    // NVRTC rejects the file: its log is printed.
    let bad = dir.join("bad.cu");
    std::fs::write(&bad, "extern \"C\" __global__ void relu_backward(float* x) { x[0] = undefined_name; }\n").unwrap();
    let mut args = RELU.to_vec();
    args.extend(["--cuda", bad.to_str().unwrap()]);
    let (code, out, err) = bench(&args);
    assert_eq!(code, 1, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("NVRTC could not compile it"), "{err}");
    assert!(err.contains("undefined_name"), "{err}");

    // No kernel of that name: the kernels there are listed.
    let mut args = RELU.to_vec();
    args.extend(["--cuda", "bench/activations.cu", "--cuda-kernel", "no_such_kernel"]);
    let (code, _, err) = bench(&args);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(
            "no kernel `no_such_kernel` in NVRTC's PTX of bench/activations.cu (kernels there: relu_backward, "
        ),
        "{err}"
    );
    assert!(err.contains("extern \"C\""), "{err}");

    // A missing .cu file.
    let mut args = RELU.to_vec();
    args.extend(["--cuda", "no/such/file.cu"]);
    let (code, _, err) = bench(&args);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no/such/file.cu"), "{err}");
}

#[test]
fn bench_usage_errors_exit_2_with_a_message() {
    let cases: &[(&[&str], &str)] = &[
        (&["kernels/relu_backward.kir", "--grid", "1", "x=rand:f32:64:1"], "needs --grid and --block"),
        (&["kernels/relu_backward.kir", "--grid", "1", "--block", "64", "x=rand:f32:64:1"], "dy"),
        (&["kernels/relu_backward.kir", "--grid", "1", "--block", "64", "x=oops"], "argument `x`"),
        (&["kernels/relu_backward.kir", "--grid", "0", "--block", "64"], "at least 1"),
        (&["kernels/relu_backward.kir", "--reps", "0"], "--reps must be at least 1"),
        (&["kernels/relu_backward.kir", "stray"], "expected @KERNEL or a kernel argument NAME=VALUE"),
        (&["kernels/relu_backward.kir", "--passes", "no-such-pass"], "--passes"),
        // --flops: the syntax (before the file is read), then the names against each launch.
        (&["kernels/relu_backward.kir", "--flops", ""], "--flops: empty expression"),
        (&["kernels/relu_backward.kir", "--flops", "2*n+1"], "`n+1` is neither an integer nor an argument name"),
        (&["kernels/relu_backward.kir", "--flops", "2**n"], "a factor is missing around `*`"),
        (&["kernels/relu_backward.kir", "--flops", "1.5e12"], "`1.5e12` is neither"),
        (
            &["kernels/gemm_tiled.kir", "--flops", "2*m*n*q"],
            "@gemm_tiled (line 18): --flops `2*m*n*q`: the kernel has no parameter `q` (its integer scalar parameters: m, n, k)",
        ),
        (
            &["kernels/gemm_tiled.kir", "--flops", "2*a*m"],
            "--flops `2*a*m`: `a` is a ptr<global, f32> parameter; only integer scalar arguments can be named",
        ),
        (&["kernels/relu_backward.kir", "--flops", "0*n"], "--flops `0*n` is 0"),
        (
            &["kernels/relu_backward.kir", "--flops", "18446744073709551615*18446744073709551615*n"],
            "overflows 128 bits",
        ),
    ];
    for (args, want) in cases {
        let (code, out, err) = bench(args);
        assert_eq!(code, 2, "{args:?}\nstdout:\n{out}\nstderr:\n{err}");
        assert!(err.contains(want), "{args:?}: want `{want}` in:\n{err}");
    }
    // A file without directives and no launch given.
    let dir = scratch("no-directive");
    let f = dir.join("k.kir");
    std::fs::write(&f, "kernel @k(%p: ptr<global, u32>) {\nentry:\n  store %p[0], 1\n  ret\n}\n").unwrap();
    let (code, _, err) = bench(&[f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no launch to time: no `; run:` directive of a kernel"), "{err}");
}

#[test]
fn bench_other_errors_exit_1_with_a_message() {
    // A kernel that is not in the file: the kernels there are named.
    let (code, _, err) = bench(&["kernels/gemm_tiled.kir", "@nope"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no kernel `@nope` (kernels here: @gemm_tiled, @gemm_naive)"), "{err}");
    // A kernel fault (n larger than the buffers): the driver's error, no time.
    let args = [
        "kernels/relu_backward.kir",
        "--grid",
        "1",
        "--block",
        "64",
        "x=rand:f32:4:1",
        "dy=rand:f32:4:2",
        "dx=zeros:f32:4",
        "n=64",
        "--reps",
        "1",
    ];
    let (code, out, err) = bench(&args);
    assert_eq!(code, 1, "stdout:\n{out}\nstderr:\n{err}");
    assert!(!out.contains(" ms ["), "{out}");
    assert!(err.contains("error: @relu_backward grid(1) block(64): CUDA driver error"), "{err}");
    // A device that does not exist.
    let (code, _, err) = bench(&[RELU, &["--device", "7"]].concat());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("device 7"), "{err}");
}

#[test]
fn bench_help_says_how_bytes_and_the_copy_rate_are_counted() {
    let (code, out, err) = kir_with(&["bench", "--help"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Bytes: counted from the arguments, not measured"), "{out}");
    assert!(out.contains("% of copy rate: the kernel's GB/s over the device's copy rate"), "{out}");
    assert!(out.contains("CPU wall time of the\nPTX emulator, not GPU times"), "{out}");
    assert!(out.contains("--flops <EXPR>"), "{out}");
    assert!(out.contains("(e.g. --flops 2*m*n*k for a GEMM"), "{out}");
    assert!(!out.contains("[default: \"\"]"), "{out}");
}
