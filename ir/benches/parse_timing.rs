//! Times the parser's two stages (grammar → AST, AST → IR) on generated kernels of growing size.
//! `cargo bench -p kir-ir --features generate --bench parse_timing`
use std::time::Instant;
fn main() {
    // `cargo bench` passes `--bench`; run as a test (`cargo test --benches`) this measures nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    for n in [1_000usize, 10_000, 100_000] {
        let k = kir_ir::generate::random_kernel(7, &kir_ir::generate::GenConfig { insts: n, ..Default::default() });
        let text = kir_ir::print_kernel(&k);
        // Best of 5, to see through the noise of a shared machine.
        let (mut a, mut b) = (std::time::Duration::MAX, std::time::Duration::MAX);
        let mut items = 0;
        for _ in 0..5 {
            let t = Instant::now();
            let ast = kir_ir::text::parse::parse_ast(&text).unwrap();
            a = a.min(t.elapsed());
            items = ast.items.len();
            let t = Instant::now();
            let _m = kir_ir::parse(&text).unwrap();
            b = b.min(t.elapsed());
        }
        println!("{n:>7} insts, {:>8} bytes: grammar {a:>10.2?}  full parse {b:>10.2?}  ({items} items)", text.len());
    }
}
