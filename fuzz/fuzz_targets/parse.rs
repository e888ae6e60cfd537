//! Fuzz target: the parser, verifier, CFG, printer and formatter on arbitrary input.
//! Run with `cargo +nightly fuzz run parse` from the repository root (seed corpus: kernels/).
//! Properties: nothing panics; whatever parses prints to text that re-parses to the same module.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let Ok(m) = kir_ir::parse(src) else { return };
    let _ = kir_ir::verify::verify_module(&m);
    for k in &m.kernels {
        let _ = kir_ir::analysis::cfg::Cfg::new(k).to_dot(k);
    }
    let printed = kir_ir::print_module(&m);
    let again = kir_ir::parse(&printed).expect("printed output must parse");
    assert!(again.structurally_eq(&m), "print/parse round trip changed the module");
    let formatted = kir_ir::text::format::format_source(src, &m);
    let again = kir_ir::parse(&formatted).expect("formatted output must parse");
    assert!(again.structurally_eq(&m), "formatting changed the module");
});
