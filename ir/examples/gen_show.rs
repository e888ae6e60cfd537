//! Prints a generated kernel: `SEED=7 INSTS=80 cargo run -p kir-ir --example gen_show`.
use kir_ir::generate::{random_kernel, GenConfig};

fn main() {
    let seed = std::env::var("SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let insts = std::env::var("INSTS").ok().and_then(|s| s.parse().ok()).unwrap_or(80);
    print!("{}", kir_ir::print_kernel(&random_kernel(seed, &GenConfig { insts, ..GenConfig::default() })));
}
