//! Running `kir_ir::generate`'s random kernels in the interpreter, shared by the pass property
//! tests (`tests/passes_property.rs`, `tests/passes_licm.rs`): random inputs for the generated
//! signature from a seed, and one launch under the generator's launch contract.
//!
//! Guarantees: the same seed gives the same inputs; a launch that fails panics with the
//! interpreter's error and the kernel's text, so a property never passes on an error;
//! [`pipeline_keeps_outputs`] is the one check the pass property tests make.
#![allow(dead_code)]

use kir_interp::{launch_verified, Arg, Buffer, LaunchConfig, Options};
use kir_ir::generate::{self, GenConfig, LaunchContract};
use kir_ir::{Constant, Kernel, ScalarType};

/// The generator's settings for the loop-pass properties: loops on (divergent ones, and divergent
/// branches, when `divergent`), `const_percent` of operands constants.
pub fn loopy(insts: usize, const_percent: u32, divergent: bool) -> GenConfig {
    GenConfig {
        insts,
        const_percent,
        allow_loops: true,
        divergent_loops: divergent,
        divergent_branches: divergent,
        ..GenConfig::default()
    }
}

/// Random input buffers for the generated signature, from a seed.
pub fn inputs(seed: u64) -> Vec<Buffer> {
    let mut rng = generate::Rng::new(seed);
    let n = LaunchContract::DEFAULT.n as usize;
    let ins: Vec<u64> = (0..n).map(|_| generate::random_constant(&mut rng, ScalarType::U32).bits).collect();
    let fins: Vec<u64> = (0..n).map(|_| generate::random_constant(&mut rng, ScalarType::F32).bits).collect();
    let outs: Vec<u64> = (0..n).map(|_| rng.next_u64() & 0xffff_ffff).collect();
    let fouts: Vec<u64> = (0..n).map(|_| rng.next_u64() & 0xffff_ffff).collect();
    vec![
        Buffer::from_bits(ScalarType::U32, ins),
        Buffer::from_bits(ScalarType::F32, fins),
        Buffer::from_bits(ScalarType::U32, outs),
        Buffer::from_bits(ScalarType::F32, fouts),
    ]
}

/// Runs a generated kernel under the launch contract on one host thread, with the race and
/// uninitialized-read checks when `checks`; returns every buffer after the launch.
pub fn run(k: &Kernel, input_seed: u64, checks: bool) -> Vec<Buffer> {
    let c = LaunchContract::DEFAULT;
    let mut bufs = inputs(input_seed);
    let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::Buffer(3), Arg::Scalar(Constant::u32(c.n))];
    let opts = Options { races: checks, uninit: checks, threads: Some(1), ..Options::default() };
    let m = kir_ir::Module { kernels: vec![k.clone()], ..kir_ir::Module::default() };
    let v = kir_ir::verify::verify(m)
        .unwrap_or_else(|d| panic!("a generated kernel verifies: {d}\n{}", kir_ir::print_kernel(k)));
    let vk = v.verified_kernels().next().expect("one kernel");
    if let Err(e) = launch_verified(vk, &LaunchConfig::linear(c.grid_blocks, c.block_threads), &args, &mut bufs, &opts)
    {
        panic!("interpreter failed: {e:?}\n{}", kir_ir::print_kernel(k));
    }
    bufs
}

/// Runs `pipeline` (verifying after every pass) on the generated kernel of `seed` and checks that
/// the interpreter's buffers after a launch from `input_seed` are bit-identical before and after;
/// the error names the pipeline, the seeds and both kernels.
pub fn pipeline_keeps_outputs(seed: u64, cfg: &GenConfig, input_seed: u64, pipeline: &str) -> Result<(), String> {
    let original = generate::random_kernel(seed, cfg);
    let before = run(&original, input_seed, false);
    let mut k = original.clone();
    let p = kir_passes::parse_pipeline(pipeline)?;
    if let Err(e) = kir_passes::run_on_kernel(&mut k, &p) {
        let diags: Vec<String> = e.diagnostics().iter().map(|d| d.message.clone()).collect();
        return Err(format!("{e}: {diags:?}\ninput:\n{}", kir_ir::print_kernel(&original)));
    }
    let after = run(&k, input_seed, false);
    if before != after {
        return Err(format!(
            "outputs differ after `{pipeline}` (seed {seed}, input seed {input_seed})\nbefore:\n{}\nafter:\n{}",
            kir_ir::print_kernel(&original),
            kir_ir::print_kernel(&k)
        ));
    }
    Ok(())
}
