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
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kir"));
    cmd.args(args).current_dir(env!("CARGO_MANIFEST_DIR")).env_remove("KIR_REQUIRE_GPU").env("NO_COLOR", "1");
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
