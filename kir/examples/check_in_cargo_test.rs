//! Checking a kernel in `cargo test`: run it in the kir interpreter (race and uninitialized-read
//! checks on) on inputs you choose, and compare with a plain-Rust reference.
//!
//! In your crate, put a function like [`relu_backward_matches_reference`] in a test file and mark
//! it `#[test]`:
//!
//! ```text
//! // tests/kernels.rs
//! #[test]
//! fn relu_backward_matches_reference() -> Result<(), kir::api::Error> { ... }
//! ```
//!
//! A `#[test]` may return `Result<(), kir::api::Error>`: on a failure, cargo prints the error's
//! `Debug`, which is the rendered diagnostic (`relu_backward.kir:LINE:COL` with the source line).
//! This crate runs the function below from `tests/api_example.rs`, and
//! `cargo run -p kir --example check_in_cargo_test` runs it from `main`.

use kir::api::Module;

const KERNEL: &str = include_str!("../../kernels/relu_backward.kir");

/// The check: launch `@relu_backward` on 1000 elements (a partial last block) and compare every
/// output with the reference, bit for bit.
pub fn relu_backward_matches_reference() -> Result<(), kir::api::Error> {
    let m = Module::parse_named("kernels/relu_backward.kir", KERNEL)?;
    let n: u32 = 1000;
    let x: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 - 50.0).collect();
    let dy: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();

    let out = m
        .kernel("relu_backward")?
        .launch(n.div_ceil(256), 256)
        .arg("x", &x)
        .arg("dy", &dy)
        .arg("dx", vec![0.0f32; n as usize])
        .arg("n", n)
        .run()?;
    let dx: Vec<f32> = out.read("dx")?;

    let reference: Vec<f32> = x.iter().zip(&dy).map(|(x, g)| if *x > 0.0 { *g } else { 0.0 }).collect();
    for (i, (got, want)) in dx.iter().zip(&reference).enumerate() {
        assert_eq!(got.to_bits(), want.to_bits(), "dx[{i}]: kernel {got}, reference {want}");
    }
    Ok(())
}

#[allow(dead_code)] // unused where tests/api_example.rs includes this file
fn main() -> Result<(), kir::api::Error> {
    relu_backward_matches_reference()?;
    println!("relu_backward: 1000 elements match the reference (races and uninitialized reads checked)");
    Ok(())
}
