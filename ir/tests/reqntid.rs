//! `reqntid(x[, y[, z]])`: parsed, printed (trailing 1s omitted), formatted, verified.

use kir_ir::{diag::has_errors, parse, print_module, verify::verify_module};

#[test]
fn reqntid_parses_prints_and_round_trips() {
    let src = "kernel @k(%n: u32) reqntid(32, 8) {\nentry:\n  ret\n}\n\nkernel @one(%n: u32) reqntid(0x100, 1, 1) {\nentry:\n  ret\n}\n";
    let m = parse(src).unwrap();
    assert_eq!(m.kernels[0].reqntid.unwrap().dims, [32, 8, 1]);
    assert_eq!(m.kernels[1].reqntid.unwrap().dims, [256, 1, 1]);
    assert!(verify_module(&m).is_empty());
    let printed = print_module(&m);
    assert!(printed.contains("kernel @k(%n: u32) reqntid(32, 8) {"), "{printed}");
    assert!(printed.contains("kernel @one(%n: u32) reqntid(256) {"), "{printed}");
    let again = parse(&printed).unwrap();
    assert!(again.structurally_eq(&m));
    // The formatter keeps comments and prints the clause like the printer.
    let commented = "; a kernel\nkernel @k(%n: u32) reqntid(32,8) { ; shape\nentry:\n  ret\n}\n";
    let f = kir_ir::text::format::format_source(commented, &parse(commented).unwrap());
    assert!(f.contains("kernel @k(%n: u32) reqntid(32, 8) {"), "{f}");
    assert!(f.contains("; shape") && f.contains("; a kernel"), "{f}");
}

#[test]
fn reqntid_ranges_are_verified() {
    for (shape, ok) in [
        ("1024", true),
        ("32, 32", true),
        ("1, 1, 64", true),
        ("1025", false),
        ("64, 32", false),
        ("0", false),
        ("1, 1, 65", false),
        ("2048, 1, 0", false),
    ] {
        let src = format!("kernel @k() reqntid({shape}) {{\nentry:\n  ret\n}}\n");
        let m = parse(&src).unwrap();
        let d = verify_module(&m);
        assert_eq!(!has_errors(&d), ok, "reqntid({shape}): {d:?}");
        if !ok {
            assert!(d[0].message.contains("invalid block shape"), "{d:?}");
            assert!(d[0].span().is_some_and(|s| &src[s.start as usize..s.end as usize] == format!("reqntid({shape})")));
        }
    }
    for bad in ["reqntid()", "reqntid(1, 2, 3, 4)", "reqntid(99999999999)", "blocks(32)", "reqntid(32) reqntid(32)"] {
        let src = format!("kernel @k() {bad} {{\nentry:\n  ret\n}}\n");
        assert!(parse(&src).is_err(), "{bad} should not parse");
    }
}
