//! Runs the check of `examples/check_in_cargo_test.rs` as a real `#[test]`, the way a user's crate
//! would.

#[path = "../examples/check_in_cargo_test.rs"]
mod example;

#[test]
fn relu_backward_matches_reference() -> Result<(), kir::api::Error> {
    example::relu_backward_matches_reference()
}
