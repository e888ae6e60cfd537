//! `kir fuzz` as CI runs it: 50 generated kernels through the verifiers, the interpreter, the
//! default pipeline (results preserved bit for bit), ptxas (required under CI=true) and the GPU when
//! there is one; plus its usage errors.

mod cli;
use cli::kir;

use std::process::Command;

#[test]
fn fifty_cases_pass_every_check() {
    let dir = std::env::temp_dir().join(format!("kir-fuzz-cli-{}", std::process::id()));
    let ptxas = kir_backend_ptx::tools::require_tool_or_skip("ptxas");
    let (code, out, err) = kir(&["fuzz", "--cases", "50", "--seed", "1", "--out-dir", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("FAIL"), "{out}");
    assert!(out.contains("fuzz: 50 cases, 50 passed, 0 failed;"), "{out}");
    if ptxas.is_some() {
        assert!(out.contains("ptxas ran on 50,"), "{out}");
    } else {
        assert!(out.contains("skip: ptxas not found"), "{out}");
    }
    if kir_backend_ptx::gpu::devices().is_ok() {
        assert!(out.contains("GPU on 50;"), "{out}");
    } else {
        assert!(out.contains("skip: no GPU: "), "{out}");
        assert!(out.contains("GPU on 0 (no GPU)"), "{out}");
    }
    assert!(!dir.exists(), "no failure, so nothing is written");
}

#[test]
fn requiring_a_missing_gpu_fails() {
    if kir_backend_ptx::gpu::devices().is_ok() {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kir"))
        .args(["fuzz", "--cases", "1", "--no-ptxas"])
        .env("KIR_REQUIRE_GPU", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error: no GPU: no CUDA driver (libcuda not found); a GPU is required"), "{err}");
}

#[test]
fn usage_errors() {
    let (code, _, err) = kir(&["fuzz", "--pipeline", "fold,nonsense"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("error: --pipeline: "), "{err}");
    let (code, _, err) = kir(&["fuzz", "--sm", "sm_70"]);
    assert_eq!(code, 2);
    insta::assert_snapshot!("fuzz_bad_sm", err);
    let (code, _, err) = kir(&["fuzz", "--insts", "0"]);
    assert_eq!(code, 2);
    assert_eq!(err, "error: --insts must be at least 1\n");
}

/// Large kernels once made the generator and the barrier verifier disagree (seed 100967: a barrier
/// under a branch on a global load, which the verifier rightly counts as divergent because the
/// kernel writes global memory). The generator now treats loaded values as divergent.
#[test]
fn large_generated_kernels_are_accepted_by_the_barrier_verifier() {
    let dir = std::env::temp_dir().join(format!("kir-fuzz-large-{}", std::process::id()));
    let (code, out, err) = kir(&[
        "fuzz",
        "--cases",
        "100",
        "--seed",
        "100900",
        "--insts",
        "300",
        "--no-ptxas",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("fuzz: 100 cases, 100 passed, 0 failed;"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}
