//! The hardware truth: what an NVIDIA H100 computed, in `tests/hardware/h100/` (see its README),
//! reproduced bit for bit by the interpreter and by the PTX emulator, each judged by the recording
//! on its own. Also how `kir test` treats hardware-recorded files: `--bless` never rewrites them,
//! the GPU rows report drift, `--record-gpu` refuses kir's emulated driver, order-free (`sorted`)
//! expectations for outputs the hardware's scheduling orders.

mod cli;
use cli::kir_with_env;
use std::path::{Path, PathBuf};

const TRUTH: &str = "tests/hardware/h100";

/// `kir test ARGS` with NVIDIA's driver if there is one (kir's emulated driver only where a test asks).
fn kir_test(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["test"];
    all.extend_from_slice(args);
    kir_with_env(&all, &[("KIR_CUDA_DRIVER", "")])
}

/// The `FAIL` rows of a `kir test` output with their first message line, grouped by file and
/// engine, at most `limit` of them (a readable assertion message when thousands fail).
fn failures(stdout: &str, limit: usize) -> String {
    let lines: Vec<&str> = stdout.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.contains(" FAIL  ") {
            out.push(format!("{l}\n{}", lines.get(i + 1).copied().unwrap_or_default()));
        }
    }
    let n = out.len();
    out.truncate(limit);
    format!("{n} failing rows; the first {}:\n{}", out.len(), out.join("\n"))
}

/// The rows of engine `engine` (`interp`, `ptx-emu`, `gpu`) and how many of them passed.
fn engine_rows(stdout: &str, engine: &str) -> (usize, usize) {
    // `-v` rows end in `  (NOTE)`: the label is what comes before.
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with('[') && l.split("  (").next().unwrap_or_default().ends_with(&format!(" {engine}")))
        .collect();
    let ok = rows.iter().filter(|l| l.contains(" ok    ") || l.contains(" unverified ")).count();
    (rows.len(), ok)
}

/// Every `; run:` directive under `dir`.
fn run_directives(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            n += run_directives(&p);
        } else if p.extension().is_some_and(|x| x == "kir") {
            n += std::fs::read_to_string(&p).unwrap().lines().filter(|l| l.starts_with("; run:")).count();
        }
    }
    n
}

fn check_family(family: &str) {
    let dir = format!("{TRUTH}/{family}");
    let (code, stdout, stderr) = kir_test(&["-v", &dir]);
    let directives = run_directives(Path::new(&dir));
    let (interp, interp_ok) = engine_rows(&stdout, "interp");
    let (emu, emu_ok) = engine_rows(&stdout, "ptx-emu");
    assert!(
        code == 0 && interp == directives && emu == directives && interp_ok == interp && emu_ok == emu,
        "kir test {dir}: exit {code}; {directives} directives, interp {interp_ok}/{interp} ok, ptx-emu {emu_ok}/{emu} ok\n{}\n{stderr}",
        failures(&stdout, 40)
    );
    // Each emulator row of a directive with expectations was judged by the recording, not by
    // the interpreter (a directive whose outputs are all order-dependent has none).
    let unverified = stdout.lines().filter(|l| l.contains(" unverified ") && l.contains(" interp  (")).count();
    let by_hardware = stdout.lines().filter(|l| l.contains(" ptx-emu  (matches the hardware: ")).count();
    assert_eq!(by_hardware, directives - unverified, "{stdout}");
}

/// The ops tables: every op, type and modifier the verifier accepts, 1,555 launches.
#[test]
fn the_op_tables_reproduce_the_h100_bit_for_bit() {
    check_family("ops");
}

/// Float ops with a NaN constant operand (loaded from `.const` memory: ptxas folds NaN
/// immediates without regard to sign and payload), 224 kernels in f16, bf16, f32 and f64.
#[test]
fn the_nan_constant_tables_reproduce_the_h100() {
    check_family("nan_constants");
}

/// Shuffles, votes, atomics (global and shared, contended ones compared sorted or by their final
/// value) and thread numbering in odd block shapes.
#[test]
fn the_collectives_tables_reproduce_the_h100() {
    check_family("collectives");
}

/// 31 reduced `kir fuzz` kernels on which kir 2dd1779 and the H100 disagreed.
#[test]
fn the_fuzz_cases_reproduce_the_h100() {
    check_family("fuzz");
}

/// Checks the files of folder `dir` (relative to the repository) against its SHA256SUMS; returns
/// the folder's path.
fn sums_hold(dir: &str) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let out = std::process::Command::new("sha256sum")
        .args(["--check", "--quiet", "SHA256SUMS"])
        .current_dir(&root)
        .output()
        .expect("run sha256sum");
    assert!(
        out.status.success(),
        "files under {dir} differ from SHA256SUMS:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    root
}

/// The recorded files are the specification: their bytes are pinned by SHA256SUMS, so no tool
/// (nor a hand) can rewrite them unnoticed.
#[test]
fn the_recorded_files_are_unchanged() {
    let root = sums_hold(TRUTH);
    // Every recorded GPU output is listed.
    let sums = std::fs::read_to_string(root.join("SHA256SUMS")).unwrap();
    let listed = sums.lines().filter(|l| l.contains("/gpu/")).count();
    let mut on_disk = 0;
    for fam in ["ops/data/gpu", "collectives/data/gpu", "fuzz/gpu", "nan_constants/data/gpu"] {
        on_disk += std::fs::read_dir(root.join(fam)).unwrap().count();
    }
    assert_eq!(listed, on_disk, "a GPU output under {TRUTH} is not in SHA256SUMS");
}

/// A scratch directory with a hardware-marked file: a kernel that writes `x + 1` for `x` in
/// `in`, with an expectation file `want.npy` holding `recorded`.
fn scratch(name: &str, recorded: &[u32], expect_extra: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kir-hw-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = format!(
        "; source: hardware Test GPU (made up for this test)\n\
         ; run: @inc grid(1) block(4) in=@in.npy out=zeros:u32:4\n\
         ; expect: @inc out == @want.npy{expect_extra}\n\
         kernel @inc(%in: ptr<global, u32>, %out: ptr<global, u32>) {{\n\
         entry:\n  %i = tid.x\n  %v = load %in[%i]\n  %w = add.u32 %v, 1\n  store %out[%i], %w\n  ret\n}}\n"
    );
    std::fs::write(dir.join("inc.kir"), src).unwrap();
    let enc = |v: &[u32]| kir_interp::npy::encode(&kir_interp::Buffer::from_u32(v));
    std::fs::write(dir.join("in.npy"), enc(&[10, 20, 30, 40])).unwrap();
    if !recorded.is_empty() {
        std::fs::write(dir.join("want.npy"), enc(recorded)).unwrap();
    }
    dir
}

#[test]
fn bless_never_rewrites_a_hardware_recording() {
    let dir = scratch("bless", &[11, 21, 31, 99], "");
    let before = std::fs::read(dir.join("want.npy")).unwrap();
    let (code, stdout, _) = kir_test(&["--bless", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("`out` differs from the recorded"), "{stdout}");
    assert!(
        stdout.contains("(not rewritten by --bless:")
            && stdout.contains(":1 says the expectations were recorded on hardware"),
        "{stdout}"
    );
    assert!(!stdout.contains("blessed: wrote"), "{stdout}");
    assert_eq!(std::fs::read(dir.join("want.npy")).unwrap(), before);
    // The emulator row is judged by the recording too, and says so.
    assert!(stdout.contains("the PTX emulator does not reproduce the hardware"), "{stdout}");
    // A missing recording is not created either.
    std::fs::remove_file(dir.join("want.npy")).unwrap();
    let (code, stdout, _) = kir_test(&["--bless", dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        stdout.contains("the hardware recording") && stdout.contains("kir never writes it from its own output"),
        "{stdout}"
    );
    assert!(!dir.join("want.npy").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_matching_recording_passes_in_every_engine() {
    let dir = scratch("ok", &[11, 21, 31, 41], "");
    let (code, stdout, _) = kir_test(&["-v", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("ptx-emu") && stdout.contains("matches the hardware: out == @want.npy"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With a GPU (here kir's emulated driver), the GPU row is compared with the recording: a
/// difference is drift, named as such; `--record-gpu` will not take kir's emulator for hardware.
#[test]
fn gpu_rows_report_drift_and_record_gpu_refuses_the_emulated_driver() {
    let emu = [("KIR_CUDA_DRIVER", "emu"), ("KIR_CUDA_EMU_LOG", "")];
    let dir = scratch("drift", &[11, 21, 31, 41], "");
    let (code, stdout, stderr) = kir_with_env(&["test", "-v", "--require-gpu", dir.to_str().unwrap()], &emu);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("reproduces the recording: out == @want.npy"), "{stdout}");
    std::fs::write(dir.join("want.npy"), kir_interp::npy::encode(&kir_interp::Buffer::from_u32(&[11, 21, 31, 42])))
        .unwrap();
    let (code, stdout, _) = kir_with_env(&["test", "--require-gpu", dir.to_str().unwrap()], &emu);
    assert_eq!(code, 1);
    assert!(
        stdout.contains("drift: kir-ptx-emu")
            && stdout.contains("computes other bits than were recorded on Test GPU (made up for this test)"),
        "{stdout}"
    );
    std::fs::remove_file(dir.join("want.npy")).unwrap();
    let (code, stdout, _) = kir_with_env(&["test", "--record-gpu", "--require-gpu", dir.to_str().unwrap()], &emu);
    assert_eq!(code, 1);
    assert!(stdout.contains("--record-gpu refuses to record it from kir's emulated CUDA driver"), "{stdout}");
    assert!(!dir.join("want.npy").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `sorted`: the buffer and the recording compared as multisets.
#[test]
fn sorted_expectations_are_order_free() {
    let dir = scratch("sorted", &[41, 11, 31, 21], " sorted");
    let (code, stdout, _) = kir_test(&[dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    let dir2 = scratch("unsorted", &[41, 11, 31, 21], "");
    let (code, stdout, _) = kir_test(&[dir2.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}");
    let dir3 = scratch("multiset", &[41, 11, 31, 31], " sorted");
    let (code, stdout, _) = kir_test(&[dir3.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("compared sorted"), "{stdout}");
    for d in [dir, dir2, dir3] {
        std::fs::remove_dir_all(&d).unwrap();
    }
}

const TENSOR_CORES: &str = "tests/hardware/tensor-cores";

/// The tensor cores of an A100, H100, H200 and B200 as Khattak and Mikaitis measured them
/// (`tests/hardware/tensor-cores/README.md`): 5,000 fp16, 5,000 bf16 and 5,000 tf32 dot products per
/// device, 8 per warp through one `mma`, under each device's rule (`tensor-cores=`). Every set must
/// be reproduced bit for bit by the interpreter and, judged by the recording itself, by the PTX
/// emulator.
#[test]
fn the_tensor_core_measurements_reproduce_on_every_device() {
    let (code, stdout, stderr) = kir_test(&["-v", TENSOR_CORES]);
    let directives = run_directives(Path::new(TENSOR_CORES));
    assert_eq!(directives, 12, "4 devices x fp16, bf16, tf32");
    let mut wrong = Vec::new();
    for dev in ["a100", "h100", "h200", "b200"] {
        for fmt in ["fp16", "bf16", "tf32"] {
            let want = format!("d == @data/{dev}/{fmt}.d.npy.xz");
            let row = |engine: &str, note: &str| {
                stdout.lines().any(|l| {
                    l.starts_with('[')
                        && l.contains(&format!("mma_{dev}.kir:"))
                        && l.contains(" ok    ")
                        && l.contains(&format!(" {engine}  ({note}"))
                        && l.contains(&want)
                })
            };
            if !row("interp", "") {
                wrong.push(format!("{dev} {fmt}: the interpreter does not reproduce {want}"));
            }
            if !row("ptx-emu", "matches the hardware: ") {
                wrong.push(format!("{dev} {fmt}: the PTX emulator does not reproduce {want}"));
            }
        }
    }
    let (interp, interp_ok) = engine_rows(&stdout, "interp");
    let (emu, emu_ok) = engine_rows(&stdout, "ptx-emu");
    assert!(
        code == 0 && wrong.is_empty() && interp == directives && emu == directives && interp_ok == interp && emu_ok == emu,
        "kir test {TENSOR_CORES}: exit {code}; interp {interp_ok}/{interp} ok, ptx-emu {emu_ok}/{emu} ok\n{}\n{}\n{stderr}",
        wrong.join("\n"),
        failures(&stdout, 40)
    );
}

/// The tensor-core data are the authors' measurements: SHA256SUMS pins every data file and the
/// licence that travels with them, and lists every file under `data/`.
#[test]
fn the_tensor_core_measurements_are_unchanged() {
    let root = sums_hold(TENSOR_CORES);
    let sums = std::fs::read_to_string(root.join("SHA256SUMS")).unwrap();
    let listed: std::collections::BTreeSet<&str> = sums.lines().filter_map(|l| l.split("  ").nth(1)).collect();
    assert!(listed.contains("LICENCE"), "{sums}");
    let mut on_disk = Vec::new();
    for dev in std::fs::read_dir(root.join("data")).unwrap() {
        let dev = dev.unwrap();
        for f in std::fs::read_dir(dev.path()).unwrap() {
            on_disk.push(format!(
                "data/{}/{}",
                dev.file_name().to_string_lossy(),
                f.unwrap().file_name().to_string_lossy()
            ));
        }
    }
    assert_eq!(on_disk.len(), 4 * 3 * 4, "{on_disk:?}");
    for f in &on_disk {
        assert!(listed.contains(f.as_str()), "{f} is not in {TENSOR_CORES}/SHA256SUMS");
    }
}
