//! `kir test`, the README's main job, run as a user runs it: the binary on the kernel library and
//! on files that must fail, with the rows and exit codes they rely on.

mod cli;
use cli::kir_with_env;

/// Parses the final `N passed, N failed, N skipped` line.
fn summary(stdout: &str) -> (usize, usize, usize) {
    let last = stdout.lines().last().unwrap_or_default();
    let nums: Vec<usize> =
        last.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    assert_eq!(nums.len(), 3, "no summary line in:\n{stdout}");
    assert!(last.contains("passed") && last.contains("failed") && last.contains("skipped"), "{last}");
    (nums[0], nums[1], nums[2])
}

#[test]
fn the_kernel_library_passes() {
    let (code, stdout, stderr) = kir_with_env(&["test", "kernels/"], &[]);
    let (passed, failed, skipped) = summary(&stdout);
    assert_eq!(code, 0, "kir test kernels/ failed:\n{stdout}\n{stderr}");
    assert_eq!(failed, 0);
    let files = std::fs::read_dir("kernels")
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "kir"))
        .count();
    let directives = stdout.lines().filter(|l| l.ends_with(" interp")).count();
    // One row per file, one interpreter row per directive, one GPU row per directive.
    assert!(directives >= files, "expected at least one run directive per file:\n{stdout}");
    assert_eq!(passed + skipped, files + 2 * directives, "{stdout}");
    if !kir_backend_ptx::gpu::driver_present() {
        assert_eq!(skipped, directives, "every GPU row is skipped without a GPU:\n{stdout}");
        assert!(stdout.contains("skip: no GPU"));
    }
}

#[test]
fn failures_are_reported_with_locations_and_exit_1() {
    let (code, stdout, _) = kir_with_env(
        &[
            "test",
            "tests/kir_test_cases/bad_expect.kir",
            "tests/kir_test_cases/oob.kir",
            "tests/kir_test_cases/syntax.kir",
        ],
        &[],
    );
    assert_eq!(code, 1);
    let (_, failed, _) = summary(&stdout);
    assert_eq!(failed, 3);
    // GPU rows depend on the machine; the rest is what a user reads.
    let stable: Vec<&str> = stdout.lines().filter(|l| !l.contains(" gpu")).collect();
    insta::assert_snapshot!(stable.join("\n"));
}

#[test]
fn passes_must_preserve_outputs_and_expects_hold() {
    let (code, stdout, stderr) = kir_with_env(&["test", "-v", "tests/kir_test_cases/passes_preserve.kir"], &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("interp  (bit-identical after passes)"), "{stdout}");
}

#[test]
fn require_gpu_turns_a_missing_gpu_into_failures() {
    if kir_backend_ptx::gpu::driver_present() {
        eprintln!("skip: a CUDA driver is present; this test checks the no-GPU path");
        return;
    }
    let (code, stdout, _) = kir_with_env(&["test", "kernels/relu_backward.kir"], &[("KIR_REQUIRE_GPU", "1")]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("FAIL") && stdout.contains("--require-gpu"), "{stdout}");
    let (code, _, _) = kir_with_env(&["test", "--require-gpu", "kernels/relu_backward.kir"], &[]);
    assert_eq!(code, 1);
}

#[test]
fn missing_paths_are_usage_errors() {
    let (code, _, stderr) = kir_with_env(&["test", "no/such/dir"], &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no/such/dir: no such file or directory"), "{stderr}");
}
