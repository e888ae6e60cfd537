//! Running a kernel (or a launch graph) on the GPU with exactly the arguments and buffers the
//! interpreter got: what the GPU engine ([`crate::engine::Gpu`]: `kir test`, `kir diff`, `kir fuzz`)
//! runs on, and `kir bench`'s timing ([`time_kernel`]).
//!
//! Guarantees:
//! - The GPU receives the same bytes the interpreter does: every buffer's initial contents and every
//!   scalar's little-endian bits (`pred` as one byte 0/1), in parameter order.
//! - [`run_kernel`] returns every buffer of the launch after the run, in the order of the
//!   interpreter's buffer list, with its element type, so the two engines' results compare
//!   index by index with [`crate::compare::compare_buffers`]. Buffers no argument refers to come
//!   back unchanged.
//! - [`run_graph`] runs a graph's launches in order on the GPU, evaluating sizes and computed
//!   arguments the way [`kir_interp::graph::run_graph`] does, with the graph's temporaries
//!   zero-filled, all buffers resident on the device for the whole graph (one upload before the
//!   first launch, one download after the last); a buffer passed to several parameters gives them
//!   the same device address, as in the interpreter.
//! - Nothing here panics; every problem is an `Err`: the driver's [`GpuError`] as it is, or a
//!   message (PTX emission, a graph's plan, parameters). Without a CUDA driver the
//!   runner cannot be made at all ([`kir_backend_ptx::gpu::GpuRunner::new`] reports why).
//! - Runs go through [`GpuExec`]: the in-process [`GpuRunner`], or [`crate::isolate::IsolatedGpu`],
//!   whose driver calls happen in a worker process so that a driver crash is an error
//!   ([`GpuError::Crashed`]), not the end of the caller. Both receive and return the same bytes.

use kir_backend_ptx::gpu::{self, GpuError, GpuRunner, Launch};
use kir_backend_ptx::{PtxOptions, SmVersion};
use kir_interp::{Arg, Buffer, LaunchConfig};
use kir_ir::graph::Graph;
use kir_ir::types::Constant;
use kir_ir::Kernel;

/// The PTX target for a device of compute capability `cc`: its own `sm_XX` when kir knows it,
/// else the newest known target below it (the driver JIT-compiles PTX forward). Devices older than
/// sm_80 are not supported.
pub fn sm_for(cc: (i32, i32)) -> Result<SmVersion, String> {
    let (maj, min) = (cc.0.max(0) as u32, cc.1.max(0) as u32);
    SmVersion::ALL
        .iter()
        .rev()
        .copied()
        .find(|v| v.compute_capability() <= (maj, min))
        .ok_or_else(|| format!("the device has compute capability {maj}.{min}; kir emits PTX for sm_80 and newer"))
}

/// The PTX of kernel `k` of the checked module `m` for `sm` (no comments), with the functions it
/// calls as `.func`s, or the emitter's messages.
pub fn ptx_in_module(m: &kir_ir::verify::Checked, k: &Kernel, sm: SmVersion) -> Result<String, String> {
    let opts = PtxOptions { sm, source: None, comments: false };
    kir_backend_ptx::emit_kernel_in_module(m, &k.name, &opts)
        .map_err(|d| d.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; "))
}

/// Something that runs launches on a GPU: [`GpuRunner`] in this process, or
/// [`crate::isolate::IsolatedGpu`] in a worker process.
pub trait GpuExec {
    /// [`GpuRunner::run_sequence`]: copies `buffers` to the device once, runs `launches` in order,
    /// returns every buffer's final contents.
    fn run_sequence(&mut self, buffers: &[Vec<u8>], launches: &[gpu::KernelLaunch]) -> Result<Vec<Vec<u8>>, GpuError>;
    /// The device's name.
    fn device_name(&self) -> Result<String, GpuError>;
    /// Whether the device is kir's emulated one.
    fn is_emulated(&self) -> bool;
    /// The device's compute capability.
    fn compute_capability(&self) -> Result<(i32, i32), GpuError>;
}

impl GpuExec for GpuRunner {
    fn run_sequence(&mut self, buffers: &[Vec<u8>], launches: &[gpu::KernelLaunch]) -> Result<Vec<Vec<u8>>, GpuError> {
        GpuRunner::run_sequence(self, buffers, launches)
    }
    fn device_name(&self) -> Result<String, GpuError> {
        GpuRunner::device_name(self)
    }
    fn is_emulated(&self) -> bool {
        GpuRunner::is_emulated(self)
    }
    fn compute_capability(&self) -> Result<(i32, i32), GpuError> {
        GpuRunner::compute_capability(self)
    }
}

fn scalar_bytes(c: Constant) -> Vec<u8> {
    let n = if c.ty.is_pred() { 1 } else { c.ty.bytes() as usize };
    c.bits.to_le_bytes()[..n.min(8)].to_vec()
}

/// The GPU parameters of a launch over `n_buffers` buffers (a buffer may be passed to several
/// parameters, as in the interpreter: they receive the same device address).
fn gpu_params(args: &[Arg], n_buffers: usize) -> Result<Vec<gpu::Param>, String> {
    args.iter()
        .map(|a| match *a {
            Arg::Scalar(c) => Ok(gpu::Param::Scalar(scalar_bytes(c))),
            Arg::Buffer(i) if i < n_buffers => Ok(gpu::Param::Buffer(i)),
            Arg::Buffer(i) => Err(format!("argument names buffer {i}, but there are {n_buffers}")),
        })
        .collect()
}

/// `buffers` with the contents the GPU returned.
fn with_contents(buffers: &[Buffer], outs: Vec<Vec<u8>>) -> Result<Vec<Buffer>, String> {
    let mut result = buffers.to_vec();
    for (b, bytes) in result.iter_mut().zip(outs) {
        if bytes.len() != b.bytes.len() {
            return Err(format!("the GPU returned {} bytes for a buffer of {}", bytes.len(), b.bytes.len()));
        }
        b.bytes = bytes;
    }
    Ok(result)
}

fn contents(buffers: &[Buffer]) -> Vec<Vec<u8>> {
    buffers.iter().map(|b| b.bytes.clone()).collect()
}

fn launch_of(cfg: &LaunchConfig) -> Launch {
    Launch {
        grid: (cfg.grid[0], cfg.grid[1], cfg.grid[2]),
        block: (cfg.block[0], cfg.block[1], cfg.block[2]),
        dynamic_shared_bytes: cfg.dynamic_shared_bytes,
    }
}

/// Runs `k` (as `ptx`) once with the given arguments; returns all of `buffers` after the run. The
/// driver's error comes back as it is, so that a caller can tell a crash or hang of an isolated
/// runner's worker ([`GpuError::Crashed`], [`GpuError::TimedOut`]) from a failed run.
pub fn run_kernel(
    runner: &mut dyn GpuExec,
    k: &Kernel,
    ptx: &str,
    cfg: &LaunchConfig,
    args: &[Arg],
    buffers: &[Buffer],
) -> Result<Vec<Buffer>, GpuError> {
    let params = gpu_params(args, buffers.len()).map_err(GpuError::Invalid)?;
    let entry = kir::api::ptx_entry_name(&k.name);
    let launch = gpu::KernelLaunch { ptx, kernel: &entry, launch: launch_of(cfg), params };
    let outs = runner.run_sequence(&contents(buffers), &[launch])?;
    with_contents(buffers, outs).map_err(GpuError::Invalid)
}

/// Kernel times in milliseconds of `reps` launches (after one warm-up launch), by CUDA events.
pub fn time_kernel(
    runner: &mut GpuRunner,
    k: &Kernel,
    ptx: &str,
    cfg: &LaunchConfig,
    args: &[Arg],
    buffers: &[Buffer],
    reps: usize,
) -> Result<Vec<f32>, String> {
    let params = gpu_params(args, buffers.len())?;
    runner
        .time_kernel(ptx, &kir::api::ptx_entry_name(&k.name), launch_of(cfg), &contents(buffers), &params, reps)
        .map_err(|e: GpuError| e.to_string())
}

/// The median of `xs` (the mean of the middle two for an even count); `None` when empty.
pub fn median(xs: &[f32]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().map(|&x| x as f64).filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// Runs graph `g` of `m` on the GPU over `buffers` (one per buffer parameter, as
/// [`kir_interp::graph::bind_graph`] made them); returns the caller's buffers after the graph.
/// The launches are planned by [`kir_interp::graph::plan_graph`], exactly as the interpreter runs
/// them. What could not be prepared (the plan, a kernel's PTX, the parameters) is a
/// [`GpuError::Invalid`] with its message; the driver's errors come back as they are.
pub fn run_graph(
    runner: &mut dyn GpuExec,
    sm: SmVersion,
    m: &kir_ir::verify::Checked,
    g: &Graph,
    args: &[Arg],
    buffers: &[Buffer],
) -> Result<Vec<Buffer>, GpuError> {
    let user = buffers.len();
    let invalid = |m: String| GpuError::Invalid(m);
    let plan = kir_interp::graph::plan_graph(m, g, args, user).map_err(|e| invalid(e.to_string()))?;
    let mut all: Vec<Buffer> = buffers.to_vec();
    all.extend(plan.temps);
    // One PTX module per kernel, then one run: the buffers stay on the device across launches.
    let mut ptx_of: Vec<(String, String)> = Vec::new();
    for pl in &plan.launches {
        if !ptx_of.iter().any(|(n, _)| *n == pl.kernel.name) {
            let p = ptx_in_module(m, pl.kernel, sm).map_err(|e| invalid(format!("{e} ({})", pl.where_(g))))?;
            ptx_of.push((pl.kernel.name.clone(), p));
        }
    }
    let entries: Vec<String> = plan.launches.iter().map(|pl| kir::api::ptx_entry_name(&pl.kernel.name)).collect();
    let mut launches = Vec::with_capacity(plan.launches.len());
    for (pl, entry) in plan.launches.iter().zip(&entries) {
        let ptx = ptx_of.iter().find(|(n, _)| *n == pl.kernel.name).map(|(_, p)| p.as_str()).unwrap_or_default();
        let params = gpu_params(&pl.args, all.len()).map_err(|e| invalid(format!("{e} ({})", pl.where_(g))))?;
        launches.push(gpu::KernelLaunch { ptx, kernel: entry, launch: launch_of(&pl.cfg), params });
    }
    let outs = runner.run_sequence(&contents(&all), &launches)?;
    let mut all = with_contents(&all, outs).map_err(invalid)?;
    all.truncate(user);
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kir_ir::ScalarType;

    #[test]
    fn targets_follow_compute_capability() {
        assert_eq!(sm_for((8, 0)), Ok(SmVersion::Sm80));
        assert_eq!(sm_for((8, 7)), Ok(SmVersion::Sm86));
        assert_eq!(sm_for((9, 0)), Ok(SmVersion::Sm90));
        assert_eq!(sm_for((12, 0)), Ok(SmVersion::Sm90));
        assert!(sm_for((7, 5)).unwrap_err().contains("7.5"));
    }

    #[test]
    fn scalars_are_little_endian_at_their_width() {
        assert_eq!(scalar_bytes(Constant::pred(true)), vec![1]);
        assert_eq!(scalar_bytes(Constant::u32(0x0102_0304)), vec![4, 3, 2, 1]);
        assert_eq!(scalar_bytes(Constant::from_bits(ScalarType::S8, 0xff)), vec![0xff]);
        assert_eq!(scalar_bytes(Constant::f64(1.0)), 1.0f64.to_le_bytes().to_vec());
    }

    #[test]
    fn one_buffer_may_be_passed_twice_and_indices_are_checked() {
        let p = gpu_params(&[Arg::Buffer(0), Arg::Buffer(0), Arg::Scalar(Constant::u32(7))], 2).unwrap();
        assert_eq!(p, vec![gpu::Param::Buffer(0), gpu::Param::Buffer(0), gpu::Param::Scalar(vec![7, 0, 0, 0])]);
        assert!(gpu_params(&[Arg::Buffer(5)], 2).unwrap_err().contains("buffer 5"));
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
}
