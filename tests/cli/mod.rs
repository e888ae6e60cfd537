//! Running the `kir` binary from integration tests, as a user would.
//!
//! Guarantees: the binary runs in the workspace root with piped output (so no colour), without an
//! inherited `KIR_REQUIRE_GPU` (tests that need it pass it explicitly), and a failure to start it
//! fails the test.
#![allow(dead_code)]

use std::process::Command;

/// Runs `kir ARGS...`: (exit code, stdout, stderr).
pub fn kir(args: &[&str]) -> (i32, String, String) {
    kir_with_env(args, &[])
}

/// Runs `kir ARGS...` with extra environment variables.
pub fn kir_with_env(args: &[&str], envs: &[(&str, &str)]) -> (i32, String, String) {
    kir_in_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), args, envs)
}

/// Runs `kir ARGS...` in `dir` (so the rows name files as given) with extra environment variables.
pub fn kir_in_dir(dir: &std::path::Path, args: &[&str], envs: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kir"));
    cmd.args(args).current_dir(dir).env_remove("KIR_REQUIRE_GPU").env("NO_COLOR", "1");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the kir binary");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
