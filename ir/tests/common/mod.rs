//! Helpers shared by the verifier tests.
#![allow(dead_code)]

use kir_ir::*;

/// Each error's message followed by its notes.
pub fn errors(k: &Kernel) -> Vec<String> {
    kir_ir::verify::verify_body(k, None, None)
        .0
        .into_iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{} [{}]", d.message, d.notes.join("; ")))
        .collect()
}

#[track_caller]
pub fn assert_clean(k: &Kernel) {
    let d = kir_ir::verify::verify_body(k, None, None).0;
    assert!(d.is_empty(), "expected no diagnostics, got {d:#?}\n{}", print_kernel(k));
}

#[track_caller]
pub fn assert_error(k: &Kernel, needle: &str) {
    let e = errors(k);
    assert!(e.iter().any(|m| m.contains(needle)), "expected an error containing {needle:?}, got {e:#?}");
}
