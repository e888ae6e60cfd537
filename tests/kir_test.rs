//! `kir test`, the README's main job, run as a user runs it: the binary on the kernel library and
//! on files that must fail, with the rows and exit codes they rely on.

mod cli;
use cli::kir_with_env;
use kir::harness::{self, Outcome, Row};
use std::path::{Path, PathBuf};
use std::process::Command;

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
    // One row per file; per directive an interpreter row, a ptx-emu row and a GPU row.
    assert!(directives >= files, "expected at least one run directive per file:\n{stdout}");
    assert_eq!(passed + skipped, files + 3 * directives, "{stdout}");
    // The emulator row never skips: every directive has a passing one, right after its interp row.
    let lines: Vec<&str> = stdout.lines().collect();
    for (i, l) in lines.iter().enumerate().filter(|(_, l)| l.ends_with(" interp")) {
        let emu = lines.get(i + 1).copied().unwrap_or_default();
        assert!(emu.contains(" ok    ") && emu.ends_with(" ptx-emu"), "after `{l}` comes `{emu}`");
        assert_eq!(
            l.replace(" ok    ", "").trim_end_matches(" interp"),
            emu.replace(" ok    ", "").trim_end_matches(" ptx-emu")
        );
    }
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

/// A directory of its own under the system temp dir, for files a test writes.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kir-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `kir test FILE` in `dir` (so the rows name FILE as given): (exit code, stdout).
fn kir_test_in(dir: &Path, file: &str) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kir"))
        .args(["test", file])
        .current_dir(dir)
        .env_remove("KIR_REQUIRE_GPU")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A kernel that reads shared memory no thread wrote: the interpreter's shared memory starts at
/// zero, the emulator's at 0xff bytes (as documented), so the emulator row must catch it even
/// though the interpreter row passes.
#[test]
fn the_ptx_emu_row_fails_on_a_mismatch_naming_file_and_directive_line() {
    let dir = scratch("uninit");
    let src = "; Reads slots 32..64 of the tile, which nothing writes.\n\
               ; run: @k grid(1) block(32) out=zeros:u32:32\n\
               kernel @k(%out: ptr<global, u32>) {\n  shared @tile: u32[64]\nentry:\n  %t = tid.x : u32\n  \
               %sh = addr @tile\n  %r = add.u32 %t, 32\n  %v = load %sh[%r]\n  store %out[%t], %v\n  ret\n}\n";
    std::fs::write(dir.join("uninit.kir"), src).unwrap();
    let (code, stdout) = kir_test_in(&dir, "uninit.kir");
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(summary(&stdout).1, 1, "{stdout}");
    let stable: Vec<&str> = stdout.lines().filter(|l| !l.contains(" gpu")).collect();
    insta::assert_snapshot!(stable.join("\n"));
}

/// Runs `kir test`'s checks on `path` with the emulator's PTX passed through `hook`; the rows.
fn rows_with_corrupted_ptx(path: &str, hook: impl Fn(&str) -> String + 'static) -> Vec<Row> {
    let mut ctx = harness::Context::detect(false);
    ctx.ptxas = None;
    ctx.emu_ptx_hook = Some(Box::new(hook));
    let mut rows = Vec::new();
    harness::test_file(Path::new(path), &mut ctx, &mut |r| rows.push(r));
    rows
}

fn emu_rows(rows: &[Row]) -> Vec<(&str, &Outcome)> {
    rows.iter().filter(|r| r.label.ends_with(" ptx-emu")).map(|r| (r.label.as_str(), &r.outcome)).collect()
}

/// Corrupted PTX must fail the ptx-emu rows (and only them): a flipped bounds check makes the
/// threads past the end fault (the row names the PTX line, the instruction, the block and thread
/// and the .kir line) and the threads inside write nothing (a mismatch).
#[test]
fn corrupted_ptx_fails_the_ptx_emu_rows() {
    let rows = rows_with_corrupted_ptx("kernels/relu_backward.kir", |ptx| {
        assert!(ptx.contains("setp.lt.u32 %p0, %r1, %r0;"), "the bounds check moved:\n{ptx}");
        ptx.replace("setp.lt.u32 %p0, %r1, %r0;", "setp.ge.u32 %p0, %r1, %r0;")
    });
    for r in rows.iter().filter(|r| !r.label.ends_with(" ptx-emu") && !r.label.ends_with(" gpu")) {
        assert_eq!(r.outcome, Outcome::Ok, "{}: the other rows are unaffected", r.label);
    }
    let emu = emu_rows(&rows);
    assert_eq!(emu.len(), 2, "{rows:?}");
    // Directive 1: n = every thread, so all threads skip the body: dx stays zero.
    assert_eq!(emu[0].0, "kernels/relu_backward.kir:8 @relu_backward grid(4096) block(256) ptx-emu");
    let Outcome::Fail(msg) = emu[0].1 else { panic!("{:?}", emu[0]) };
    assert!(msg.starts_with("buffer `dx` differs from the interpreter (tol exact, derived): "), "{msg}");
    // Directive 2: 1024 threads for 1000 elements; thread 1000 loads x[1000].
    assert_eq!(emu[1].0, "kernels/relu_backward.kir:9 @relu_backward grid(4) block(256) ptx-emu");
    let Outcome::Fail(msg) = emu[1].1 else { panic!("{:?}", emu[1]) };
    assert!(msg.starts_with("ptx-emu: kernel fault (out-of-bounds access): "), "{msg}");
    assert!(msg.contains("buffer `x`"), "{msg}");
    assert!(msg.contains(" `ld.global.f32 %f0, [%rd7];` in block (3, 0, 0) thread (232, 0, 0)"), "{msg}");
    assert!(msg.contains("(emitted for .kir line 16: `%xv = load %x[%i]`)"), "{msg}");
    assert!(msg.contains("at PTX line "), "{msg}");
}

/// PTX the emulator cannot load fails every ptx-emu row of the file, with the PTX line.
#[test]
fn unloadable_ptx_fails_the_ptx_emu_rows() {
    let rows = rows_with_corrupted_ptx("kernels/relu_backward.kir", |ptx| ptx.replace("ld.global.f32", "ld.globl.f32"));
    let emu = emu_rows(&rows);
    assert_eq!(emu.len(), 2);
    for (label, outcome) in emu {
        let Outcome::Fail(msg) = outcome else { panic!("{label}: {outcome:?}") };
        assert!(msg.starts_with("the emulator cannot load the PTX: PTX line "), "{msg}");
        assert!(msg.contains("`ld.globl.f32 %f0, [%rd7];`"), "{msg}");
    }
}

/// `--fuel N` bounds every launch of `kir test` (interpreter and PTX emulator), so a kernel that
/// spins fails quickly with the fuel fault instead of running for a minute.
#[test]
fn fuel_bounds_the_launches_of_kir_test() {
    let dir = scratch("fuel");
    let src = "; run: @spin grid(1) block(32) out=zeros:u32:1 n=10\n\
               kernel @spin(%out: ptr<global, u32>, %n: u32) {\nentry:\n  jmp loop(0)\nloop(%i: u32):\n  \
               %c = lt.u32 %i, %n\n  br %c, body, done\nbody:\n  %i2 = add.u32 %i, 0\n  jmp loop(%i2)\ndone:\n  \
               store %out[0], %i\n  ret\n}\n";
    std::fs::write(dir.join("spin.kir"), src).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kir"))
        .args(["test", "--fuel", "100000", "spin.kir"])
        .current_dir(&dir)
        .env_remove("KIR_REQUIRE_GPU")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL  spin.kir:1 @spin grid(1) block(32) interp"), "{stdout}");
    assert!(stdout.contains("fuel"), "{stdout}");
}
