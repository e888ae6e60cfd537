//! Randomly generated valid kernels (`kir_ir::generate`: loops with block parameters, divergent
//! branches, shared memory and barriers, shuffles, votes, atomics, every scalar type, approximate
//! ops) emitted to PTX and assembled by the real `ptxas` for sm_80 and sm_90. Any ptxas error fails.

use kir_backend_ptx::{emit_module, tools, PtxOptions, SmVersion};
use kir_ir::generate::{random_kernel, GenConfig};
use kir_ir::Module;

fn module(seeds: std::ops::Range<u64>, cfg: &GenConfig) -> Module {
    let mut m = Module::default();
    for seed in seeds {
        let mut k = random_kernel(seed, cfg);
        k.name = format!("fuzz_{seed}");
        m.kernels.push(k);
    }
    m
}

fn assemble(m: &Module) {
    for sm in [SmVersion::Sm80, SmVersion::Sm90] {
        let v = kir_ir::verify::check(m.clone()).unwrap_or_else(|d| panic!("{d}"));
        let ptx = emit_module(&v, &PtxOptions::new(sm)).unwrap_or_else(|d| panic!("emission failed: {d:#?}"));
        if let Err(e) = tools::run_ptxas(&ptx, sm) {
            let lines: Vec<&str> = ptx.lines().collect();
            let first = e
                .lines()
                .find_map(|l| l.split(", line ").nth(1)?.split(';').next()?.trim().parse::<usize>().ok())
                .map(|n| lines.get(n.saturating_sub(1)).copied().unwrap_or("?"))
                .unwrap_or("?");
            panic!("{}: {e}\nfirst offending line: {first}", sm.name());
        }
    }
}

#[test]
fn random_kernels_assemble() {
    if tools::require_tool_or_skip("ptxas").is_none() {
        return;
    }
    assemble(&module(0..60, &GenConfig::default()));
}

#[test]
fn random_kernels_with_approx_ops_and_no_loops_assemble() {
    if tools::require_tool_or_skip("ptxas").is_none() {
        return;
    }
    let cfg = GenConfig { allow_approx: true, allow_loops: false, insts: 200, ..GenConfig::default() };
    assemble(&module(1000..1030, &cfg));
}
