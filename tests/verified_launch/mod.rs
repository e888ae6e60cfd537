//! Launching one test kernel in the interpreter, which runs only verified IR
//! (`kir_interp::launch_verified`): [`launch`] and [`launch_in`] verify a module holding the
//! kernel (and the functions it calls) and launch it, so that tests written against one `Kernel`
//! stay short.
//!
//! Guarantees: a kernel that does not verify is an `InvalidLaunch` error carrying the verifier's
//! first error, and nothing runs; otherwise the result is `launch_verified`'s.
#![allow(dead_code)]

use kir_interp::{Arg, Buffer, InterpError, LaunchConfig, Options, Stats};
use kir_ir::{Kernel, Module};

/// Verifies a module holding `k` alone and launches `k`.
pub fn launch(
    k: &Kernel,
    cfg: &LaunchConfig,
    args: &[Arg],
    buffers: &mut [Buffer],
    opts: &Options,
) -> Result<Stats, InterpError> {
    launch_in(&[], k, cfg, args, buffers, opts)
}

/// Verifies a module holding `k` and the functions `funcs` and launches `k`.
pub fn launch_in(
    funcs: &[Kernel],
    k: &Kernel,
    cfg: &LaunchConfig,
    args: &[Arg],
    buffers: &mut [Buffer],
    opts: &Options,
) -> Result<Stats, InterpError> {
    let m = Module { kernels: vec![k.clone()], funcs: funcs.to_vec(), ..Module::default() };
    let v = kir_ir::verify::verify(m).map_err(|d| {
        let first = d.list().iter().find(|d| d.is_error()).map(|d| d.message.clone()).unwrap_or_default();
        InterpError::invalid(format!("kernel @{} does not verify: {first}", k.name))
    })?;
    let vk = v.verified_kernel(&k.name).expect("the kernel is in its module");
    kir_interp::launch_verified(vk, cfg, args, buffers, opts)
}
