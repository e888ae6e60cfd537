//! `kir run FILE --graph G [--arg NAME=VALUE]... [--out NAME=PATH.npy] [--stats] [--time]`: run a
//! launch graph in the interpreter (the graph half of `kir run`; options as for kernels).
//!
//! Guarantees:
//! - The file is parsed and verified first; arguments are bound to the graph's parameters by name
//!   (every parameter exactly once; scalar type; buffer element type) with clear errors (exit 2).
//! - A fault in a launch prints the located diagnostic with a note naming the launch and exits 1;
//!   nothing panics.
//! - Without `--out`, every buffer parameter some launch may write is summarized on stdout; with
//!   `--out NAME=PATH.npy` that buffer is written as `.npy`.
//! - `--stats` prints the number of launches and the global-memory bytes read and written, in total
//!   and per launch; these are the interpreter's exact counts.

use super::common::{self, usage};
use super::run_options::RunArgs as Args;
use kir::interp::graph::{bind_graph, run_graph};
use std::process::ExitCode;
use std::time::Instant;

/// Runs graph `name` of `a.file`.
pub fn run(a: &Args, name: &str) -> ExitCode {
    let loaded = match common::load_checked(&a.file) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let m = &loaded.module;
    let g = match common::select_graph(&loaded, name) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let named = match common::named_args(&a.launch.target.args) {
        Ok(n) => n,
        Err(e) => return usage(e),
    };
    let mut bound = match bind_graph(g, &named, None) {
        Ok(b) => b,
        Err(e) => return usage(e),
    };
    let buffer_of = |n: &str| match g.param(n).map(|(i, _)| bound.args[i]) {
        Some(kir::interp::Arg::Buffer(b)) => Some(b),
        _ => None,
    };
    let resolved = common::resolve_outputs(&a.outs, &a.prints, &a.file, &named, |n| {
        buffer_of(n).ok_or_else(|| format!("graph @{} has no buffer parameter `{n}`", g.name))
    });
    let common::Outputs { outs, prints } = match resolved {
        Ok(r) => r,
        Err(code) => return code,
    };
    let opts = a.launch.interp_options(a.races, a.uninit);
    let start = Instant::now();
    let result = run_graph(m, g, &bound.args, &mut bound.buffers, &opts);
    let elapsed = start.elapsed();
    let stats = match result {
        Ok(s) => s,
        Err(e) => return common::interp_failure(&e, &loaded),
    };
    if let Err(code) = common::write_outputs(&outs, &bound.buffers) {
        return code;
    }
    common::print_buffers(&prints, &bound.buffers);
    if outs.is_empty() && prints.is_empty() {
        let written: std::collections::BTreeSet<String> =
            g.launches.iter().flat_map(|l| kir::ir::analysis::effects::launch_effects(m, l).writes).collect();
        for p in &g.params {
            if let (true, Some(b)) = (written.contains(&p.name), buffer_of(&p.name)) {
                println!("%{}: {}", p.name, kir::interp::outputs::summary(&bound.buffers[b]));
            }
        }
    }
    if a.stats {
        println!(
            "stats: {} launches, global memory {} bytes read, {} bytes written, {} thread-instructions",
            stats.launches,
            stats.total.global_bytes_read,
            stats.total.global_bytes_written,
            stats.total.thread_instructions
        );
        for (i, (k, s)) in stats.per_launch.iter().enumerate() {
            println!(
                "  launch {i} @{k}: {} bytes read, {} bytes written, {} blocks",
                s.global_bytes_read, s.global_bytes_written, s.blocks
            );
        }
    }
    if a.time {
        println!("time: {:.3} ms", elapsed.as_secs_f64() * 1e3);
    }
    ExitCode::SUCCESS
}
