//! Property tests of the passes on random valid kernels (`kir_ir::generate`): for random kernels and
//! random inputs, the interpreter's outputs before and after the default pipeline (and random
//! pipelines of fold / dce / simplify-cfg) are bit-identical, and the IR verifies after every pass
//! (the pipelines run with `verify_each`, which also checks that a pass reporting "unchanged" left
//! the kernel untouched).

use kir_ir::generate::{self, GenConfig};
use kir_passes::{parse_pipeline, run_on_kernel, DEFAULT_PIPELINE};
use proptest::prelude::*;

mod generated;
use generated::run;

fn check_pipeline(seed: u64, cfg: &GenConfig, input_seed: u64, pipeline: &str) -> Result<(), TestCaseError> {
    generated::pipeline_keeps_outputs(seed, cfg, input_seed, pipeline).map_err(TestCaseError::fail)
}

fn random_pipeline(bits: u64, len: usize) -> String {
    let names = ["fold", "dce", "simplify-cfg", "fold{approx}"];
    (0..len).map(|i| names[((bits >> (2 * i)) & 3) as usize]).collect::<Vec<_>>().join(",")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn default_pipeline_preserves_interpreter_outputs(seed in any::<u64>(), input_seed in any::<u64>(), insts in 20usize..160) {
        // A third of the kernels carry vector values through the passes.
        let cfg = GenConfig { insts, allow_vectors: seed % 3 == 0, ..GenConfig::default() };
        check_pipeline(seed, &cfg, input_seed, DEFAULT_PIPELINE)?;
    }

    #[test]
    fn random_pipelines_preserve_interpreter_outputs(seed in any::<u64>(), input_seed in any::<u64>(), bits in any::<u64>(), len in 1usize..7) {
        // Uniform control flow and many constants: more branches and loops fold away.
        let cfg = GenConfig { insts: 80, const_percent: 50, divergent_branches: seed % 2 == 0, ..GenConfig::default() };
        let pipeline = random_pipeline(bits, len);
        // `fold{approx}` changes results of approximate ops by design; only exact ops here.
        check_pipeline(seed, &cfg, input_seed, &pipeline)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    /// `simplify-cfg` stops at a fixed point: a second run finds nothing left to do (its rounds
    /// end as soon as a round replaced no value, which must not stop it early).
    #[test]
    fn simplify_cfg_reaches_a_fixed_point(seed in any::<u64>(), insts in 20usize..400, const_percent in 20u32..80) {
        let cfg = GenConfig { insts, const_percent, divergent_branches: seed % 2 == 0, ..GenConfig::default() };
        let mut once = generate::random_kernel(seed, &cfg);
        let p = parse_pipeline("simplify-cfg").map_err(TestCaseError::fail)?;
        run_on_kernel(&mut once, &p).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut twice = once.clone();
        run_on_kernel(&mut twice, &p).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(once == twice, "a second simplify-cfg changed the kernel (seed {seed})\nonce:\n{}\ntwice:\n{}", kir_ir::print_kernel(&once), kir_ir::print_kernel(&twice));
    }
}

#[test]
fn generated_kernels_run_clean_under_race_and_uninit_checks() {
    for seed in 0..40u64 {
        let k = generate::random_kernel(seed, &GenConfig::default());
        run(&k, seed, true);
    }
}
