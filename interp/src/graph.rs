//! Running launch graphs ([`kir_ir::graph::Graph`]): every launch in order, each to completion,
//! over the caller's buffers and the graph's temporaries.
//!
//! Guarantees:
//! - Arguments are checked against the graph's parameters (count, scalar type, buffer element type)
//!   before anything runs; size expressions are evaluated without wrapping, and a dimension, a
//!   temporary length or a computed argument that does not fit its type is an error naming the
//!   launch. Nothing panics.
//! - Temporaries are zero-filled buffers allocated when the graph starts and dropped when it ends;
//!   the caller's buffers hold the results afterwards (also after an error, with the effects of the
//!   launches that ran).
//! - [`GraphStats`] sums the [`Stats`] of every launch: `launches` counts launches run, and the
//!   global-memory bytes are exactly the sums of the per-launch counts.
//! - An error of a launch is returned with a note naming the launch (index and kernel).
//! - Every launch runs with the module's functions (as [`crate::launch_verified`] runs a kernel of
//!   its module: [`run_graph`] takes a `Verified` module), so kernels that call
//!   functions run as written.

use crate::args::{materialize, ArgSpec, Value};
use crate::{Arg, Buffer, InterpError, LaunchConfig, Options, Stats, MAX_BUFFER_BYTES};
use kir_ir::graph::{Expr, Graph, LaunchArg};
use kir_ir::types::{Constant, ScalarType, Type};
use kir_ir::{Kernel, Module};
use std::path::Path;

/// What a graph run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphStats {
    /// Launches run.
    pub launches: u64,
    /// The sum over launches.
    pub total: Stats,
    /// Each launch's kernel and statistics, in order.
    pub per_launch: Vec<(String, Stats)>,
}

impl GraphStats {
    pub fn global_bytes_read(&self) -> u64 {
        self.total.global_bytes_read
    }
    pub fn global_bytes_written(&self) -> u64 {
        self.total.global_bytes_written
    }
}

/// Arguments bound to a graph's parameters.
#[derive(Clone, Debug)]
pub struct BoundGraph {
    /// One per graph parameter.
    pub args: Vec<Arg>,
    pub buffers: Vec<Buffer>,
}

/// Binds `NAME=VALUE` arguments to the graph's parameters by name (each exactly once, each
/// buffer parameter its own buffer), with the syntax of [`crate::args`].
pub fn bind_graph(g: &Graph, named: &[(String, ArgSpec)], base_dir: Option<&Path>) -> Result<BoundGraph, String> {
    let mut given: Vec<Option<&ArgSpec>> = vec![None; g.params.len()];
    for (name, spec) in named {
        let n = name.trim_start_matches('%');
        let Some((i, _)) = g.param(n) else {
            let names: Vec<String> = g.params.iter().map(|p| format!("{}: {}", p.name, p.ty)).collect();
            return Err(format!("graph @{} has no parameter `{n}` (parameters: {})", g.name, names.join(", ")));
        };
        if given[i].is_some() {
            return Err(format!("parameter `{n}` is given twice"));
        }
        given[i] = Some(spec);
    }
    crate::args::check_buffer_budget(named, base_dir)?;
    let mut out = BoundGraph { args: vec![], buffers: vec![] };
    for (p, spec) in g.params.iter().zip(given) {
        let Some(spec) = spec else {
            return Err(format!("missing argument for graph parameter `{}: {}`", p.name, p.ty));
        };
        match materialize(spec, p.ty, base_dir).map_err(|e| format!("argument `{}`: {e}", p.name))? {
            Value::Scalar(c) => out.args.push(Arg::Scalar(c)),
            Value::Buffer(b) => {
                out.args.push(Arg::Buffer(out.buffers.len()));
                out.buffers.push(b);
            }
        }
    }
    Ok(out)
}

/// One launch of a graph, resolved against the graph's arguments.
pub struct PlannedLaunch<'m> {
    /// Position of the launch in the graph.
    pub index: usize,
    pub kernel: &'m Kernel,
    pub cfg: LaunchConfig,
    /// Buffer arguments index the caller's buffers, then the graph's temporaries.
    pub args: Vec<Arg>,
}

impl PlannedLaunch<'_> {
    /// The note that locates an error in this launch.
    pub fn where_(&self, g: &Graph) -> String {
        format!("in launch {} (@{}) of graph @{}", self.index, self.kernel.name, g.name)
    }
}

/// A graph ready to run on any engine: its temporaries (zeroed, to be placed after the caller's
/// buffers) and its launches with evaluated shapes and arguments.
pub struct GraphPlan<'m> {
    pub temps: Vec<Buffer>,
    pub launches: Vec<PlannedLaunch<'m>>,
}

/// Evaluates graph `g`'s temporary sizes, launch shapes and computed arguments from its scalar
/// arguments; `user_buffers` is the number of the caller's buffers (temporaries follow them).
/// Used by the interpreter ([`run_graph`]) and the GPU runner, so both run the same launches.
pub fn plan_graph<'m>(
    m: &'m Module,
    g: &Graph,
    args: &[Arg],
    user_buffers: usize,
) -> Result<GraphPlan<'m>, InterpError> {
    let scalar = |name: &str| -> Option<u64> {
        let (i, _) = g.param(name)?;
        match args.get(i)? {
            Arg::Scalar(c) if c.ty.is_int() => u64::try_from(c.as_i128()).ok(),
            _ => None,
        }
    };
    let eval = |e: &Expr, what: &str| {
        e.eval(&scalar).map_err(|msg| InterpError::invalid(format!("graph @{}: {what}: {msg}", g.name)))
    };
    let mut temps = Vec::with_capacity(g.temps.len());
    let mut lens = Vec::with_capacity(g.temps.len());
    let mut total = 0u64;
    for t in &g.temps {
        let len = eval(&t.len, &format!("the length of %{}", t.name))?;
        let bytes = len.checked_mul(t.elem.bytes() as u64).filter(|b| *b <= MAX_BUFFER_BYTES);
        let Some(bytes) = bytes else {
            return Err(InterpError::invalid(format!(
                "graph @{}: temporary %{} of {len} {} elements is larger than {MAX_BUFFER_BYTES} bytes",
                g.name, t.name, t.elem
            )));
        };
        total = total.saturating_add(bytes);
        lens.push(len);
    }
    // The temporaries are made only once they fit the budget together.
    crate::check_memory(total, &format!("graph @{}'s temporaries", g.name)).map_err(InterpError::invalid)?;
    for (t, len) in g.temps.iter().zip(lens) {
        temps.push(Buffer::zeros(t.elem, len as usize));
    }
    let mut launches = Vec::with_capacity(g.launches.len());
    for (li, l) in g.launches.iter().enumerate() {
        let at = |e: InterpError| e.with_note(format!("in launch {li} (@{}) of graph @{}", l.kernel, g.name));
        let Some(k) = m.kernel(&l.kernel) else {
            return Err(at(InterpError::invalid(format!("unknown kernel @{}", l.kernel))));
        };
        let dim = |e: &Expr, what: &str| -> Result<u32, InterpError> {
            let v = eval(e, what).map_err(at)?;
            u32::try_from(v).map_err(|_| at(InterpError::invalid(format!("{what} `{e}` = {v} does not fit in u32"))))
        };
        let mut cfg = LaunchConfig::linear(1, 1);
        for d in 0..3 {
            cfg.grid[d] = dim(&l.grid[d], "grid dimension")?;
            cfg.block[d] = dim(&l.block[d], "block dimension")?;
        }
        if let Some(s) = &l.shared_bytes {
            cfg.dynamic_shared_bytes = dim(s, "dynamic shared memory bytes")?;
        }
        let mut kargs = Vec::with_capacity(l.args.len());
        for (ai, a) in l.args.iter().enumerate() {
            let pty = k.params.get(ai).map(|p| k.value(*p).ty);
            let arg = match a {
                LaunchArg::Const(c) => Arg::Scalar(*c),
                LaunchArg::Value(name) => match (g.param(name), g.temp(name)) {
                    (Some((pi, _)), _) => *args.get(pi).ok_or_else(|| {
                        at(InterpError::invalid(format!("graph @{}: missing argument %{name}", g.name)))
                    })?,
                    (None, Some((ti, _))) => Arg::Buffer(user_buffers + ti),
                    (None, None) => {
                        return Err(at(InterpError::invalid(format!("`%{name}` is not defined in graph @{}", g.name))))
                    }
                },
                LaunchArg::Expr(e) => {
                    let v = eval(e, "a computed argument").map_err(at)?;
                    let Some(Type::Scalar(t)) = pty else {
                        return Err(at(InterpError::invalid(format!(
                            "argument {} of @{} is computed but the parameter is not an integer",
                            ai + 1,
                            k.name
                        ))));
                    };
                    Arg::Scalar(int_constant(t, v).ok_or_else(|| {
                        at(InterpError::invalid(format!(
                            "argument {} of @{}: `{e}` = {v} does not fit in {t}",
                            ai + 1,
                            k.name
                        )))
                    })?)
                }
            };
            kargs.push(arg);
        }
        launches.push(PlannedLaunch { index: li, kernel: k, cfg, args: kargs });
    }
    Ok(GraphPlan { temps, launches })
}

/// Runs graph `g` of the verified module `m` with one argument per graph parameter. Validity is
/// in the type: the launches run without verifying again.
pub fn run_graph(
    m: &kir_ir::verify::Verified,
    g: &Graph,
    args: &[Arg],
    buffers: &mut [Buffer],
    opts: &Options,
) -> Result<GraphStats, InterpError> {
    check_args(g, args, buffers)?;
    let user = buffers.len();
    let plan = plan_graph(m, g, args, user)?;
    // The caller's buffers, then the temporaries.
    let mut all: Vec<Buffer> = buffers
        .iter_mut()
        .map(|b| {
            let elem = b.elem;
            std::mem::replace(b, Buffer::zeros(elem, 0))
        })
        .collect();
    all.extend(plan.temps);
    let result = (|| {
        let mut stats = GraphStats::default();
        for pl in &plan.launches {
            let s = crate::launch_impl(m, pl.kernel, &pl.cfg, &pl.args, &mut all, opts, None)
                .map_err(|e| e.with_note(pl.where_(g)))?;
            stats.launches += 1;
            stats.total = stats.total.add(s);
            stats.per_launch.push((pl.kernel.name.clone(), s));
        }
        Ok(stats)
    })();
    for (dst, src) in buffers.iter_mut().zip(all.into_iter().take(user)) {
        *dst = src;
    }
    result
}

/// An integer constant of type `t` with value `v`, when it fits.
fn int_constant(t: ScalarType, v: u64) -> Option<Constant> {
    if !t.is_int() {
        return None;
    }
    let max = if t.is_signed_int() { t.mask() >> 1 } else { t.mask() };
    (v <= max).then(|| Constant::from_bits(t, v))
}

fn check_args(g: &Graph, args: &[Arg], buffers: &[Buffer]) -> Result<(), InterpError> {
    if args.len() != g.params.len() {
        return Err(InterpError::invalid(format!(
            "graph @{} takes {} arguments, given {}",
            g.name,
            g.params.len(),
            args.len()
        )));
    }
    for (p, a) in g.params.iter().zip(args) {
        match (p.ty, a) {
            (Type::Scalar(t), Arg::Scalar(c)) if c.ty == t => {}
            (Type::Ptr(_, elem), Arg::Buffer(i)) => match buffers.get(*i) {
                Some(b) if b.elem == elem => {}
                Some(b) => {
                    return Err(InterpError::invalid(format!(
                        "argument %{} must be a buffer of {elem}, given a buffer of {}",
                        p.name, b.elem
                    )))
                }
                None => {
                    return Err(InterpError::invalid(format!(
                        "argument %{} names buffer {i}, but only {} were given",
                        p.name,
                        buffers.len()
                    )))
                }
            },
            (t, _) => return Err(InterpError::invalid(format!("argument %{} must be a {t}", p.name))),
        }
    }
    Ok(())
}
