//! Running a kernel (or a launch graph) on the GPU with exactly the arguments and buffers the
//! interpreter got, for `kir diff` and `kir fuzz`.
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
//!   zero-filled; a launch that passes one buffer to two parameters is refused (each launch gets
//!   its own device copies).
//! - Nothing here panics; every problem is an `Err` with a message. Without a CUDA driver the
//!   runner cannot be made at all ([`kir_backend_ptx::gpu::GpuRunner::new`] reports why).

use kir_backend_ptx::gpu::{self, GpuError, GpuRunner, Launch};
use kir_backend_ptx::{emit_kernel, PtxOptions, SmVersion};
use kir_interp::{Arg, Buffer, LaunchConfig};
use kir_ir::graph::Graph;
use kir_ir::types::Constant;
use kir_ir::{Kernel, Module};

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

/// The PTX of kernel `k` for `sm` (no comments), or the emitter's messages.
pub fn ptx_for(k: &Kernel, sm: SmVersion) -> Result<String, String> {
    let opts = PtxOptions { sm, source: None, comments: false };
    emit_kernel(k, &opts).map_err(|d| d.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; "))
}

fn scalar_bytes(c: Constant) -> Vec<u8> {
    let n = if c.ty.is_pred() { 1 } else { c.ty.bytes() as usize };
    c.bits.to_le_bytes()[..n.min(8)].to_vec()
}

/// The GPU arguments of a launch, and for each GPU buffer the index of the interpreter buffer
/// it stands for.
fn gpu_args(args: &[Arg], buffers: &[Buffer]) -> Result<(Vec<gpu::Arg>, Vec<usize>), String> {
    let mut out = Vec::with_capacity(args.len());
    let mut which = Vec::new();
    for a in args {
        match *a {
            Arg::Scalar(c) => out.push(gpu::Arg::Scalar(scalar_bytes(c))),
            Arg::Buffer(i) => {
                let b = buffers
                    .get(i)
                    .ok_or_else(|| format!("argument names buffer {i}, but there are {}", buffers.len()))?;
                if which.contains(&i) {
                    return Err("the GPU runner cannot pass one buffer to two parameters of a launch".into());
                }
                which.push(i);
                out.push(gpu::Arg::Buffer(b.bytes.clone()));
            }
        }
    }
    Ok((out, which))
}

fn launch_of(cfg: &LaunchConfig) -> Launch {
    Launch {
        grid: (cfg.grid[0], cfg.grid[1], cfg.grid[2]),
        block: (cfg.block[0], cfg.block[1], cfg.block[2]),
        dynamic_shared_bytes: cfg.dynamic_shared_bytes,
    }
}

/// Runs `k` (as `ptx`) once with the given arguments; returns all of `buffers` after the run.
pub fn run_kernel(
    runner: &mut GpuRunner,
    k: &Kernel,
    ptx: &str,
    cfg: &LaunchConfig,
    args: &[Arg],
    buffers: &[Buffer],
) -> Result<Vec<Buffer>, String> {
    let (gargs, which) = gpu_args(args, buffers)?;
    let outs = runner.run(ptx, &ptx_entry_name(&k.name), launch_of(cfg), &gargs).map_err(|e| e.to_string())?;
    let mut result = buffers.to_vec();
    for (i, bytes) in which.into_iter().zip(outs) {
        if bytes.len() != result[i].bytes.len() {
            return Err(format!("the GPU returned {} bytes for a buffer of {}", bytes.len(), result[i].bytes.len()));
        }
        result[i].bytes = bytes;
    }
    Ok(result)
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
    let (gargs, _) = gpu_args(args, buffers)?;
    runner.time_kernel(ptx, &ptx_entry_name(&k.name), launch_of(cfg), &gargs, reps).map_err(|e: GpuError| e.to_string())
}

/// The `.entry` name the backend gives kernel `name` (`.` becomes `$`).
pub fn ptx_entry_name(name: &str) -> String {
    name.replace('.', "$")
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
/// them.
pub fn run_graph(
    runner: &mut GpuRunner,
    sm: SmVersion,
    m: &Module,
    g: &Graph,
    args: &[Arg],
    buffers: &[Buffer],
) -> Result<Vec<Buffer>, String> {
    let user = buffers.len();
    let plan = kir_interp::graph::plan_graph(m, g, args, user).map_err(|e| e.to_string())?;
    let mut all: Vec<Buffer> = buffers.to_vec();
    all.extend(plan.temps);
    let mut ptx_cache: Vec<(String, String)> = Vec::new();
    for pl in &plan.launches {
        let at = |e: String| format!("{e} ({})", pl.where_(g));
        let k = pl.kernel;
        let ptx = match ptx_cache.iter().find(|(n, _)| *n == k.name) {
            Some((_, p)) => p.clone(),
            None => {
                let p = ptx_for(k, sm).map_err(at)?;
                ptx_cache.push((k.name.clone(), p.clone()));
                p
            }
        };
        all = run_kernel(runner, k, &ptx, &pl.cfg, &pl.args, &all).map_err(at)?;
    }
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
    fn aliasing_is_refused_and_buffers_map_back() {
        let bufs = vec![Buffer::from_u32(&[1]), Buffer::from_u32(&[2])];
        assert!(gpu_args(&[Arg::Buffer(0), Arg::Buffer(0)], &bufs).is_err());
        let (a, which) = gpu_args(&[Arg::Buffer(1), Arg::Scalar(Constant::u32(7)), Arg::Buffer(0)], &bufs).unwrap();
        assert_eq!(which, vec![1, 0]);
        assert_eq!(a.len(), 3);
        assert!(gpu_args(&[Arg::Buffer(5)], &bufs).is_err());
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
}
