//! Line endings: LF and CRLF files parse alike; a bare CR (old Mac line endings) is a located
//! error, never a file whose remainder silently becomes one comment.

const KERNEL: &str =
    "; a comment\nkernel @k(%out: ptr<global, u32>) {\nentry:\n  %t = tid.x : u32\n  store %out[%t], %t\n  ret\n}\n";

#[test]
fn lf_and_crlf_parse_alike_and_a_bare_cr_is_an_error() {
    // LF and CRLF: both parse.
    assert!(kir_ir::parse(KERNEL).is_ok());
    assert!(kir_ir::parse(&KERNEL.replace('\n', "\r\n")).is_ok());
    // CR only: the first CR ends the comment for a reader, but would not for the lexer.
    let cr = KERNEL.replace('\n', "\r");
    let errs = kir_ir::parse(&cr).expect_err("a bare CR is rejected");
    assert_eq!(errs.len(), 1);
    let d = &errs[0];
    assert!(d.message.contains("carriage return"), "{d:?}");
    let span = d.primary.as_ref().map(|l| l.span).expect("located");
    assert_eq!(span.start as usize, KERNEL.find('\n').unwrap(), "at the first bare CR");
}
