//! Float `abs` lowers to a sign-bit mask (bit-exact, NaN payload kept) unless every use of its
//! result is a comparison, where the native `abs` (which ptxas folds into the compare) cannot be
//! observed to differ.

use kir_backend_ptx::{emit_module, PtxOptions, SmVersion};

fn ptx(src: &str) -> String {
    let m = kir_ir::parse(src).expect("parses");
    emit_module(
        &kir_ir::verify::check(m).expect("verifies"),
        &PtxOptions { sm: SmVersion::Sm80, source: None, comments: false },
    )
    .expect("emits")
}

#[test]
fn abs_feeding_only_comparisons_is_native() {
    let p = ptx("kernel @k(%x: f32, %o: ptr<global, u32>) {\nentry:\n  %a = abs.f32 %x\n  %c = lt.f32 %a, 1.0\n  %d = gt.f32 %a, 0.5\n  %e = and.pred %c, %d\n  %r = select.u32 %e, 1, 0\n  store %o[0], %r\n  ret\n}\n");
    assert!(p.contains("abs.f32"), "{p}");
    assert!(!p.contains("0x7FFFFFFF"), "{p}");
}

#[test]
fn abs_whose_value_escapes_keeps_the_payload() {
    // Stored, selected or passed to a block: the bits are observable, so the mask is used.
    for body in [
        "  %a = abs.f32 %x\n  store %o[0], %a\n  ret\n",
        "  %a = abs.f32 %x\n  %c = lt.f32 %a, 1.0\n  %s = select.f32 %c, %a, 0.0\n  store %o[0], %s\n  ret\n",
        "  %a = abs.f32 %x\n  jmp out(%a)\nout(%v: f32):\n  store %o[0], %v\n  ret\n",
    ] {
        let p = ptx(&format!("kernel @k(%x: f32, %o: ptr<global, f32>) {{\nentry:\n{body}}}\n"));
        assert!(p.contains("and.b32") && p.contains("0x7FFFFFFF"), "{p}");
        assert!(!p.contains("abs.f32"), "{p}");
    }
}
