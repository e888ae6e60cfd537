//! `kir test`, the README's main job, run as a user runs it: the binary on the kernel library and
//! on files that must fail, with the rows and exit codes they rely on.

mod cli;
use cli::kir_with_env;
use kir_harness::kir_test::{self, Outcome, Row};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Parses the final `N passed[ (M without expectation)], N failed, N skipped` line into
/// (passed, failed, skipped); the `without expectation` count is [`unverified`]'s.
fn summary(stdout: &str) -> (usize, usize, usize) {
    let (p, _, f, s) = summary4(stdout);
    (p, f, s)
}

/// (passed, of them without expectation, failed, skipped).
fn summary4(stdout: &str) -> (usize, usize, usize, usize) {
    let last = stdout.lines().last().unwrap_or_default();
    let nums: Vec<usize> =
        last.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    assert!(last.contains("passed") && last.contains("failed") && last.contains("skipped"), "{last}");
    match nums[..] {
        [p, f, s] => (p, 0, f, s),
        [p, u, f, s] if last.contains(&format!("passed ({u} without expectation)")) => (p, u, f, s),
        _ => panic!("no summary line in:\n{stdout}"),
    }
}

#[test]
fn the_kernel_library_passes() {
    let (code, stdout, stderr) = kir_with_env(&["test", "kernels/"], &[]);
    let (passed, failed, skipped) = summary(&stdout);
    assert_eq!(code, 0, "kir test kernels/ failed:\n{stdout}\n{stderr}");
    assert_eq!(failed, 0);
    // The kernels and the shared library in kernels/lib/ (kir test walks subdirectories).
    let files: usize = ["kernels", "kernels/lib"]
        .iter()
        .map(|d| {
            std::fs::read_dir(d)
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "kir"))
                .count()
        })
        .sum();
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
            l.replace(" ok    ", "").replace(" unverified ", "").trim_end_matches(" interp"),
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
    // GPU rows and the `tools:` line depend on the machine; the rest is what a user reads.
    let stable: Vec<&str> = stdout.lines().filter(|l| !l.contains(" gpu") && !l.starts_with("tools: ")).collect();
    insta::assert_snapshot!(stable.join("\n"));
}

#[test]
fn passes_must_preserve_outputs_and_expects_hold() {
    let (code, stdout, stderr) = kir_with_env(&["test", "-v", "tests/kir_test_cases/passes_preserve.kir"], &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "interp  (bit-identical after passes; checks: races, uninitialized reads; expected: fout[0..2] == [..] (line 3))"
        ),
        "{stdout}"
    );
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
    let (code, stdout, _) = cli::kir_in_dir(dir, &["test", file], &[]);
    (code, stdout)
}

/// A kernel that reads shared memory no thread wrote: the interpreter's shared memory starts at
/// zero, the emulator's at 0xff bytes (as documented), so the emulator row must catch it even
/// though the interpreter row passes.
#[test]
fn the_ptx_emu_row_fails_on_a_mismatch_naming_file_and_directive_line() {
    let dir = scratch("uninit");
    let src = "; Reads slots 32..64 of the tile, which nothing writes.\n\
               ; run: @k grid(1) block(32) out=zeros:u32:32 checks=no-uninit(reads what no thread wrote, on purpose)\n\
               kernel @k(%out: ptr<global, u32>) {\n  shared @tile: u32[64]\nentry:\n  %t = tid.x : u32\n  \
               %sh = addr @tile\n  %r = add.u32 %t, 32\n  %v = load %sh[%r]\n  store %out[%t], %v\n  ret\n}\n";
    std::fs::write(dir.join("uninit.kir"), src).unwrap();
    let (code, stdout) = kir_test_in(&dir, "uninit.kir");
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(summary(&stdout).1, 1, "{stdout}");
    // Without the GPU rows and the `tools:` line (ptxas path, GPU), which depend on the machine.
    let stable: Vec<&str> = stdout.lines().filter(|l| !l.contains(" gpu") && !l.starts_with("tools: ")).collect();
    insta::assert_snapshot!(stable.join("\n"));
}

/// Runs `kir test`'s checks on `path` with the emulator's PTX passed through `hook`; the rows.
fn rows_with_corrupted_ptx(path: &str, hook: impl Fn(&str) -> String + 'static) -> Vec<Row> {
    let mut ctx = kir_test::Context::detect(false);
    ctx.ptxas = None;
    ctx.emu_ptx_hook = Some(Box::new(hook));
    let mut rows = Vec::new();
    kir_test::test_file(Path::new(path), &mut ctx, &mut |r| rows.push(r));
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
        assert!(matches!(r.outcome, Outcome::Ok | Outcome::Unverified), "{}: the other rows are unaffected", r.label);
    }
    let emu = emu_rows(&rows);
    assert_eq!(emu.len(), 2, "{rows:?}");
    // Directive 1: n = every thread, so all threads skip the body: dx stays zero.
    assert_eq!(emu[0].0, "kernels/relu_backward.kir:7 @relu_backward grid(4096) block(256) ptx-emu");
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

/// A directive's own `fuel=N` bounds its launches without a flag; a bad value is a located error.
#[test]
fn a_directive_sets_its_own_fuel() {
    let dir = scratch("dirfuel");
    let src = "; run: @spin grid(1) block(32) out=zeros:u32:1 n=10 fuel=50000\n\
               kernel @spin(%out: ptr<global, u32>, %n: u32) {\nentry:\n  jmp loop(0)\nloop(%i: u32):\n  \
               %c = lt.u32 %i, %n\n  br %c, body, done\nbody:\n  %i2 = add.u32 %i, 0\n  jmp loop(%i2)\ndone:\n  \
               store %out[0], %i\n  ret\n}\n";
    std::fs::write(dir.join("spin.kir"), src).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "spin.kir"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("error: kernel fault (fuel exhausted): ") && out.contains(" 50000 "), "{out}");
    std::fs::write(dir.join("spin.kir"), src.replace("fuel=50000", "fuel=lots")).unwrap();
    let (_, out, _) = kir_in(&dir, &["test", "spin.kir"]);
    assert!(out.contains("spin.kir:1: bad fuel `lots` (a positive number of instructions)"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs `kir ARGS` in `dir` with the system's CUDA driver lookup: (exit code, stdout, stderr).
fn kir_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    cli::kir_in_dir(dir, args, &[("KIR_CUDA_DRIVER", "")])
}

/// The user's report: a tiled transpose with its barrier removed passed `kir test`. With the
/// interpreter's checks on by default it fails, naming the race; a directive can turn the checks
/// off only with a reason, and `--no-checks` turns them off everywhere.
#[test]
fn a_transpose_without_its_barrier_fails_with_the_race_named() {
    let dir = scratch("race");
    let good = std::fs::read_to_string("tests/kir_test_cases/transpose.kir").unwrap();
    let racy = good.replacen("  barrier\n", "", 1).replace("; expect: @transpose y == @transpose_naive\n", "");
    std::fs::write(dir.join("transpose.kir"), &racy).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "transpose.kir"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  transpose.kir:3 @transpose grid(2,3) block(16,16) interp"), "{out}");
    assert!(out.contains("error: kernel fault (data race): data race on shared `@tile` element "), "{out}");
    assert!(out.contains("racing read") && out.contains("= separate the accesses with a barrier"), "{out}");

    // --no-checks: the interpreter misses the race again, and its row says it verified nothing
    // (the PTX emulator, whose warps run in another order, happens to catch it here).
    let (_, out, _) = kir_in(&dir, &["test", "--no-checks", "-v", "transpose.kir"]);
    assert!(
        out.contains("unverified transpose.kir:3 @transpose grid(2,3) block(16,16) interp  (bit-identical after passes; checks off (--no-checks); no `; expect:` line"),
        "{out}"
    );

    // A directive opts out only with a reason, and the reason is shown.
    // (With only races off, the uninitialized-read check still catches it, as the race it is: a
    // read of a slot that another thread writes later with no barrier between (issue 27).)
    let only_races = racy.replace("m=40 n=30\n", "m=40 n=30 checks=no-races(a demonstration)\n");
    std::fs::write(dir.join("transpose.kir"), &only_races).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "transpose.kir"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("error: kernel fault (data race): data race on shared `@tile` element 32 (byte 128): thread (2, 0, 0) read it before thread (0, 2, 0) of this block wrote it, with no barrier between them"),
        "{out}"
    );
    assert!(
        out.contains("thread (0, 2, 0) writes it here")
            && out.contains("thread (2, 0, 0) read it here first, uninitialized"),
        "{out}"
    );
    assert!(out.contains("= add a barrier between the write and the read"), "{out}");
    assert!(!out.contains("uninitialized read)"), "{out}");
    let opted = racy.replace("m=40 n=30\n", "m=40 n=30 checks=none(a demonstration)\n");
    std::fs::write(dir.join("transpose.kir"), &opted).unwrap();
    let (_, out, _) = kir_in(&dir, &["test", "-v", "transpose.kir"]);
    assert!(
        out.contains("interp  (bit-identical after passes; checks off: races, uninitialized reads (a demonstration); no `; expect:`"),
        "{out}"
    );
    std::fs::write(dir.join("transpose.kir"), racy.replace("m=40 n=30\n", "m=40 n=30 checks=none\n")).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "transpose.kir"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("transpose.kir:3: `checks=none` needs the reason the checks are off"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The same racy transpose with a reference expectation: the outputs differ from the naive
/// kernel's, which `--no-checks` cannot hide.
#[test]
fn reference_kernel_expectations_catch_a_wrong_kernel() {
    let (code, out, _) = kir_with_env(&["test", "-v", "tests/kir_test_cases/transpose.kir"], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("expected: y == @transpose_naive (line 4))"), "{out}");
    let dir = scratch("reference");
    let good = std::fs::read_to_string("tests/kir_test_cases/transpose.kir").unwrap();
    // Transposes the tile the wrong way round (reads its own slot back).
    let wrong = good.replace("%from = mad.u32 %tx, 16, %ty", "%from = mad.u32 %ty, 16, %tx");
    std::fs::write(dir.join("t.kir"), &wrong).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "--no-checks", "t.kir"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("t.kir:4: `y` differs from reference @transpose_naive's (tol exact): "), "{out}");
    // A reference that does not exist, or lacks the buffer.
    std::fs::write(dir.join("t.kir"), good.replace("== @transpose_naive", "== @nope")).unwrap();
    let (_, out, _) = kir_in(&dir, &["test", "t.kir"]);
    assert!(out.contains("t.kir:4: no kernel or graph `@nope` in this file to compare with"), "{out}");
    std::fs::write(dir.join("t.kir"), good.replace("expect: @transpose y ==", "expect: @transpose x ==")).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "t.kir"]);
    assert_eq!(code, 0, "x is unchanged by both: {out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A directive without `; expect:` is `unverified`, counted apart in the summary, and a failure
/// with `--strict`. (On a copy of relu_backward.kir without its expectations, outside `kernels/`,
/// whose kir-test.toml makes the library strict: tests/kir_test_config.rs.)
#[test]
fn directives_without_expectation_are_unverified_and_strict_fails_them() {
    let dir = std::env::temp_dir().join(format!("kir-test-unverified-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let relu = std::fs::read_to_string("kernels/relu_backward.kir").unwrap();
    let unchecked: String = relu.lines().filter(|l| !l.starts_with("; expect:")).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("relu_backward.kir"), unchecked).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "relu_backward.kir"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("] unverified relu_backward.kir:7 @relu_backward grid(4096) block(256) interp\n"), "{out}");
    let (passed, unverified, failed, _) = summary4(&out);
    assert_eq!((unverified, failed), (2, 0), "{out}");
    assert!(passed >= 5, "{out}");
    let (code, out, _) = kir_in(&dir, &["test", "--strict", "relu_backward.kir"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  relu_backward.kir:7 @relu_backward grid(4096) block(256) interp\n    no `; expect:` line: the outputs were not checked (--strict)"), "{out}");
    assert_eq!(summary4(&out).2, 2, "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `expect: NAME == @file.npy`: a missing file fails with the way out; `--bless` writes it and
/// says so; a changed output fails until blessed again; no bless over a non-.npy file or an input.
#[test]
fn npy_expectations_and_bless() {
    let dir = scratch("bless");
    let kernel =
        "kernel @sq(%x: ptr<global, f32>, %y: ptr<global, f32>) {\nentry:\n  %i = tid.x\n  %v = load %x[%i]\n  \
                  %w = mul.f32 %v, %v\n  store %y[%i], %w\n  ret\n}\n";
    let file = |expect: &str| {
        format!("; run: @sq grid(1) block(8) x=range:f32:8 y=zeros:f32:8\n; expect: @sq {expect}\n{kernel}")
    };
    std::fs::write(dir.join("sq.kir"), file("y == @out/sq_y.npy")).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "sq.kir"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("sq.kir:2: expected output out/sq_y.npy does not exist; `kir test --bless` writes it from the interpreter's output"), "{out}");
    assert!(!dir.join("out/sq_y.npy").exists());

    let (code, out, _) = kir_in(&dir, &["test", "--bless", "sq.kir"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("blessed: wrote out/sq_y.npy (new, f32[8]; sq.kir:2)"), "{out}");
    let written = kir_interp::npy::read(&dir.join("out/sq_y.npy")).unwrap();
    assert_eq!(written.to_f64(), vec![0.0, 1.0, 4.0, 9.0, 16.0, 25.0, 36.0, 49.0]);
    let (code, out, _) = kir_in(&dir, &["test", "-v", "sq.kir"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("expected: y == @out/sq_y.npy (line 2)"), "{out}");
    assert!(!out.contains("blessed"), "{out}");

    // The kernel changes: a failure naming the first differences, until blessed again.
    std::fs::write(dir.join("sq.kir"), file("y == @out/sq_y.npy").replace("mul.f32 %v, %v", "add.f32 %v, %v")).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "sq.kir"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("sq.kir:2: `y` differs from out/sq_y.npy (tol exact): "), "{out}");
    assert!(out.contains("`kir test --bless` rewrites the file"), "{out}");
    let (code, out, _) = kir_in(&dir, &["test", "--bless", "sq.kir"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("blessed: wrote out/sq_y.npy (changed: "), "{out}");
    assert_eq!(kir_interp::npy::read(&dir.join("out/sq_y.npy")).unwrap().to_f64()[3], 6.0);
    // The expectation's own tolerance.
    let shifted = file("y == @out/sq_y.npy tol=abs:0.5")
        .replace("%w = mul.f32 %v, %v", "%w0 = add.f32 %v, %v\n  %w = add.f32 %w0, 0.25");
    std::fs::write(dir.join("sq.kir"), &shifted).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "sq.kir"]);
    assert_eq!(code, 0, "within abs:0.5 of the blessed values: {out}");
    std::fs::write(dir.join("sq.kir"), shifted.replace("tol=abs:0.5", "tol=abs:0.1")).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "sq.kir"]);
    assert_eq!(code, 1, "not within abs:0.1: {out}");

    // Never over a file that is not .npy, nor over an input of the run.
    std::fs::write(dir.join("notes.npy"), "my notes").unwrap();
    std::fs::write(dir.join("sq.kir"), file("y == @notes.npy")).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "--bless", "sq.kir"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not overwritten, even with --bless"), "{out}");
    assert_eq!(std::fs::read_to_string(dir.join("notes.npy")).unwrap(), "my notes");
    let as_input = file("y == @out/sq_y.npy").replace("x=range:f32:8", "x=@out/sq_y.npy");
    std::fs::write(dir.join("sq.kir"), as_input).unwrap();
    let (code, out, _) = kir_in(&dir, &["test", "--bless", "sq.kir"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("out/sq_y.npy is also an input of this run"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `kir test | head`: when the reader goes away, kir ends as Unix tools do (SIGPIPE), without a
/// panic and a backtrace on stderr.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_kir_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_kir"))
        .args(["test", "kernels/"])
        .env_remove("KIR_CUDA_DRIVER")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(13), "{:?} {stderr}", out.status);
}

/// The hostile-input report: two links to `..`, a dangling `x.kir` link and a FIFO named `*.kir`
/// in the tree. `kir test DIR` ends, tests the real file once, and names each odd entry.
#[cfg(unix)]
#[test]
fn odd_directory_trees_end_and_name_what_they_skip() {
    use std::os::unix::fs::symlink;
    let dir = scratch("walk");
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::copy("tests/kir_test_cases/passes_preserve.kir", sub.join("k.kir")).unwrap();
    symlink("..", sub.join("up1")).unwrap();
    symlink("..", sub.join("up2")).unwrap();
    symlink("gone.kir", sub.join("x.kir")).unwrap();
    let fifo_made = Command::new("mkfifo").arg(sub.join("p.kir")).status().is_ok_and(|s| s.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_kir"))
        .args(["test", "."])
        .current_dir(&dir)
        .env_remove("KIR_REQUIRE_GPU")
        .env_remove("KIR_CUDA_DRIVER")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().ok();
            panic!("kir test did not end on a tree with link cycles and a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(stdout.matches("ok    ./sub/k.kir\n").count(), 1, "tested once: {stdout}");
    assert!(stdout.contains("[walk] FAIL  ./sub/x.kir\n    dangling symbolic link (to gone.kir)"), "{stdout}");
    if fifo_made {
        assert!(stdout.contains("[walk] FAIL  ./sub/p.kir\n    not a regular file"), "{stdout}");
    }
}

/// `; fault:` after a `; run:` line: the run must stop with that fault (kind, and the coordinates
/// stated); it passes only so, and gets no emulator or GPU row (a faulting run has no outputs).
#[test]
fn runs_that_must_fault_pass_only_by_faulting_as_stated() {
    let (code, stdout, _) = kir_with_env(&["test", "-v", "tests/kir_test_cases/must_fault.kir"], &[]);
    assert_eq!(code, 1, "{stdout}");
    let (passed, failed, skipped) = summary(&stdout);
    assert_eq!((passed, failed, skipped), (2, 3, 0), "the file row and one fault row pass:\n{stdout}");
    assert!(stdout.contains(
        "ok    tests/kir_test_cases/must_fault.kir:9 @k grid(1) block(8) interp  (faulted as expected: out-of-bounds access in block (0, 0, 0) thread (4, 0, 0))"
    ), "{stdout}");
    assert!(stdout.contains(
        "    tests/kir_test_cases/must_fault.kir:13: wrong fault: expected out-of-bounds access in thread (5, 0, 0), got out-of-bounds access in block (0, 0, 0) thread (4, 0, 0)\n    interpreter:\n    error: kernel fault (out-of-bounds access)"
    ), "{stdout}");
    assert!(
        stdout.contains("    tests/kir_test_cases/must_fault.kir:16: expected data race, the run passed\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "    tests/kir_test_cases/must_fault.kir:20: a run that must fault (`; fault:`) has no outputs to expect\n"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("ptx-emu") && !stdout.contains(" gpu"), "no other rows for fault runs:\n{stdout}");
}

/// Issue 27, item 5: an expectation pasted from an older `--print` fails by one ulp. The failure
/// says how far apart the values are (per element shown, and the largest) and the exact `tol=`
/// that accepts them on the `expect:` line; with it, the file passes. Comparisons with a
/// reference kernel say the same; integers and far-apart floats get no tolerance suggestion.
#[test]
fn a_float_expectation_off_by_ulps_names_the_distance_and_the_tol_to_write() {
    let dir = scratch("ulp-hint");
    let src = |expect: &str| {
        format!(
            "; run: @k grid(1) block(4) y=zeros:f32:4\n; expect: {expect}\n\
             kernel @k(%y: ptr<global, f32>) {{\nentry:\n  %t = tid.x : u32\n  %v = add.f32 0.74548554, 0.0\n  store %y[%t], %v\n  ret\n}}\n\
             kernel @r(%y: ptr<global, f32>) {{\nentry:\n  %t = tid.x : u32\n  %v = add.f32 0.745485485, 0.0\n  store %y[%t], %v\n  ret\n}}\n"
        )
    };
    let pasted = "@k y[0..4] == [0.745485485, 0.74548554, 0.745485485, 0.74548554]";
    std::fs::write(dir.join("ulp.kir"), src(pasted)).unwrap();
    let (code, out) = kir_test_in(&dir, "ulp.kir");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("ulp.kir:2: y[0] is 0.74548554, expected 0.745485485 (tol exact, 1 ulp apart)\n"), "{out}");
    assert!(out.contains("\n    y[2] is 0.74548554, expected 0.745485485 (1 ulp)\n"), "{out}");
    assert!(
        out.contains("\n    2 elements differ, by at most 1 ulp; if that is within the kernel's accuracy, state it on the `expect:` line: `tol=ulp:1`"),
        "{out}"
    );
    // The suggestion, written as suggested, passes.
    std::fs::write(dir.join("ulp.kir"), src(&format!("{pasted} tol=ulp:1"))).unwrap();
    let (code, out) = kir_test_in(&dir, "ulp.kir");
    assert_eq!(code, 0, "{out}");

    // Against a reference kernel: the buffer comparison lists ulps per element, plus the hint.
    std::fs::write(dir.join("ulp.kir"), src("@k y == @r")).unwrap();
    let (code, out) = kir_test_in(&dir, "ulp.kir");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("ulp.kir:2: `y` differs from reference @r's (tol exact): 4 elements differ\n"), "{out}");
    assert!(out.contains("[0] expected 0.7454855, got 0.74548554 (1 ulp)"), "{out}");
    assert!(out.contains("4 elements differ, by at most 1 ulp; if that is within the kernel's accuracy, state it on the `expect:` line: `tol=ulp:1`"), "{out}");

    // Far apart: the distance, no tolerance to paste.
    std::fs::write(dir.join("ulp.kir"), src("@k y[0..1] == [2.0]")).unwrap();
    let (_, out) = kir_test_in(&dir, "ulp.kir");
    assert!(out.contains("ulp.kir:2: y[0] is 0.74548554, expected 2.0 (tol exact, 12658652 ulp apart)"), "{out}");
    assert!(out.contains("1 element differs, by at most 12658652 ulp (too far apart for rounding)"), "{out}");
    assert!(!out.contains("tol=ulp:"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `; order-dependent: NAME` keeps a buffer that contended atomics order out of the GPU row's
/// comparison (the hardware serialises them in any order; the interpreter and the emulator in a
/// fixed one): a run writing only such buffers is `unverified` on the GPU, one writing others
/// too compares those, and a name that is not a buffer of the kernel fails the row.
#[test]
fn order_dependent_buffers_are_not_compared_on_the_gpu() {
    let dir = scratch("order-dependent");
    let kernel = "kernel @count(%a: ptr<global, u32>, %old: ptr<global, u32>, %done: ptr<global, u32>) {
entry:
  %i = global_id.x
  %o = atom.add %a[0], 1
  store %old[%i], %o
  store %done[%i], 1
  ret
}
";
    let run = "; run: @count grid(2) block(64) checks=no-races(contended on purpose) a=zeros:u32:1 old=zeros:u32:128 done=zeros:u32:128\n";
    let cases = [
        (
            "only.kir",
            "; order-dependent: a old done (listed whole)\n",
            "unverified",
            "every buffer it writes is order-dependent (a, old, done), so none was compared",
        ),
        ("some.kir", "; order-dependent: old (the arrival order)\n", "ok   ", "order-dependent, not compared: old"),
        (
            "typo.kir",
            "; order-dependent: olde\n",
            "FAIL ",
            "`; order-dependent:` names `olde`, which is not a buffer of @count (its buffers: a, old, done)",
        ),
    ];
    for (file, line, outcome, text) in cases {
        std::fs::write(dir.join(file), format!("{run}{line}{kernel}")).unwrap();
        let (code, stdout, stderr) =
            cli::kir_in_dir(&dir, &["test", "-v", "--require-gpu", file], &[("KIR_CUDA_DRIVER", "emu")]);
        let gpu = stdout.lines().skip_while(|l| !l.contains(" gpu")).take(2).collect::<Vec<_>>().join("\n");
        assert!(gpu.contains(outcome) && gpu.contains(text), "{file}: {gpu}\n{stdout}\n{stderr}");
        assert_eq!(code, i32::from(outcome == "FAIL "), "{file}: {stdout}");
    }
    // Without a run above it, the directive is a located error.
    std::fs::write(dir.join("orphan.kir"), format!("; order-dependent: old\n{kernel}")).unwrap();
    let (code, stdout, stderr) = cli::kir_in_dir(&dir, &["test", "orphan.kir"], &[]);
    assert!(code != 0 && (stdout + &stderr).contains("orphan.kir:1"), "orphan: exit {code}");
}

/// `--passes P` runs the rows on another pipeline's output (the file row says which), `''` on the
/// file as written, and a malformed pipeline is a usage error naming the passes there are.
#[test]
fn passes_chooses_the_pipeline_the_rows_test() {
    for (p, shown) in [("fold,dce", "passes: fold,dce;"), ("", "passes: ;")] {
        let (code, stdout, stderr) = kir_with_env(&["test", "-v", "--passes", p, "kernels/activations.kir"], &[]);
        assert_eq!(code, 0, "--passes '{p}': {stdout}\n{stderr}");
        let file_row = stdout.lines().find(|l| l.ends_with(")") && l.contains("kernels/activations.kir  (")).unwrap();
        assert!(file_row.contains(shown), "--passes '{p}': {file_row}");
    }
    let (code, _, stderr) = kir_with_env(&["test", "--passes", "fold,nope", "kernels/activations.kir"], &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("error: --passes: unknown pass `nope` (available: inline, fold,"), "{stderr}");
}
