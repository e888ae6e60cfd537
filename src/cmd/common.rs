//! Shared plumbing for subcommands: reading files, rendering diagnostics, exit codes.
//!
//! Guarantees: a missing or unreadable file, or a file that fails to parse or verify, prints a
//! located message to stderr and yields exit code 1 (2 for usage errors); nothing here panics.

use kir::ir::diag::{self, Diagnostic};
use kir::ir::verify::Checked;
use kir::ir::Module;
use std::io::IsTerminal;
use std::process::ExitCode;

/// A parsed source file, with the files it imports; `Loaded<Checked>` once it passed the checks
/// ([`load_checked`]).
pub struct Loaded<M = Module> {
    pub path: String,
    pub source: String,
    pub module: M,
    /// The file and everything it imports: spans of the module point into these.
    pub sources: diag::SourceMap,
}

impl<M> Loaded<M> {
    /// Prints diagnostics about the module (their spans may lie in imported files) to stderr.
    pub fn emit(&self, diags: &[Diagnostic]) {
        if !diags.is_empty() {
            eprint!("{}", diag::render_map(diags, &self.sources, stderr_color()));
        }
    }
}

/// Whether stderr is a terminal (colour diagnostics only then).
pub fn stderr_color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// Prints an error about a file (no span) to stderr.
pub fn file_error(path: &str, msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {path}: {msg}");
    ExitCode::from(1)
}

/// Prints diagnostics for `source` to stderr.
pub fn emit(diags: &[Diagnostic], path: &str, source: &str) {
    if !diags.is_empty() {
        eprint!("{}", diag::render(diags, path, source, stderr_color()));
    }
}

/// Reads a file as UTF-8.
pub fn read_source(path: &str) -> Result<String, ExitCode> {
    kir_harness::files::read_source(std::path::Path::new(path)).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(1)
    })
}

/// Reads and parses a file and its imports; prints diagnostics and returns exit code 1 on
/// failure.
pub fn load(path: &str) -> Result<Loaded, ExitCode> {
    let source = read_source(path)?;
    match kir::api::load_source(std::path::Path::new(path), source.clone()) {
        Ok(l) => Ok(Loaded { path: path.to_string(), source, module: l.module, sources: l.sources }),
        Err(e) => {
            eprint!("{}", e.render(stderr_color()));
            Err(ExitCode::from(1))
        }
    }
}

/// Looks up a kernel by name (with or without `@`), or the only kernel when `name` is None.
pub fn select_kernel<'m, M: std::borrow::Borrow<Module>>(
    loaded: &'m Loaded<M>,
    name: Option<&str>,
) -> Result<&'m kir::ir::Kernel, ExitCode> {
    let m: &Module = loaded.module.borrow();
    match name {
        Some(n) => {
            let n = n.trim_start_matches('@');
            m.kernel(n).ok_or_else(|| {
                let names: Vec<String> = m.kernels.iter().map(|k| format!("@{}", k.name)).collect();
                file_error(
                    &loaded.path,
                    format!(
                        "no kernel `@{n}` (kernels here: {})",
                        if names.is_empty() { "none".into() } else { names.join(", ") }
                    ),
                )
            })
        }
        None => match m.kernels.as_slice() {
            [k] => Ok(k),
            [] => Err(file_error(&loaded.path, "this file has no kernel")),
            ks => {
                let names: Vec<String> = ks.iter().map(|k| format!("@{}", k.name)).collect();
                Err(file_error(
                    &loaded.path,
                    format!("this file has {} kernels; choose one with --kernel ({})", ks.len(), names.join(", ")),
                ))
            }
        },
    }
}

/// Reports an interpreter error located in the source: exit 2 for an invalid launch (a usage
/// problem), 1 for a kernel fault or an interpreter bug.
pub fn interp_failure<M>(e: &kir::interp::InterpError, loaded: &Loaded<M>) -> ExitCode {
    loaded.emit(&[e.to_diagnostic()]);
    ExitCode::from(if e.kind == kir::interp::ErrorKind::InvalidLaunch { 2 } else { 1 })
}

/// Checks the `--out NAME=PATH` list before the run: every PATH non-empty, no two outputs to one
/// file, and no output over an input of the run (the kernel's own file, an `@PATH.npy` argument).
pub fn check_out_paths(
    outs: &[(String, usize, String)],
    source: &str,
    named: &[(String, kir::interp::args::ArgSpec)],
) -> Result<(), String> {
    use kir_harness::files::same_file;
    use std::path::Path;
    for (i, (n, _, path)) in outs.iter().enumerate() {
        if path.trim().is_empty() {
            return Err(format!("--out {n}=: expected a file name after `=` (e.g. --out {n}={n}.npy)"));
        }
        if let Some((m, _, _)) = outs[..i].iter().find(|(_, _, q)| same_file(Path::new(q), Path::new(path))) {
            return Err(format!("--out {m}={path} and --out {n}={path} write the same file"));
        }
        if same_file(Path::new(path), Path::new(source)) {
            return Err(format!("--out {n}={path} would overwrite the file being run"));
        }
        for (arg, spec) in named {
            if let kir::interp::args::ArgSpec::Npy(p) = spec {
                if same_file(Path::new(path), p) {
                    return Err(format!("--out {n}={path} would overwrite the input of --arg {arg}"));
                }
            }
        }
    }
    Ok(())
}

/// Writes each `--out NAME=PATH` buffer (`(name, buffer index, path)`) as `.npy`, atomically.
pub fn write_outputs(outs: &[(String, usize, String)], buffers: &[kir::interp::Buffer]) -> Result<(), ExitCode> {
    for (n, buf, path) in outs {
        kir_harness::files::write_atomically(std::path::Path::new(path), &kir::interp::npy::encode(&buffers[*buf]))
            .map_err(|e| file_error(path, format!("cannot write --out {n}: {e}")))?;
    }
    Ok(())
}

/// The buffers a run writes out (`--out NAME=PATH`: name, buffer, path) and prints (`--print
/// NAME[:N]`: name, buffer, count).
pub struct Outputs {
    pub outs: Vec<(String, usize, String)>,
    pub prints: Vec<(String, usize, Option<usize>)>,
}

/// Resolves `--out` and `--print` against the run's parameters — `buffer_of(NAME)` is the buffer
/// of parameter NAME or why there is none — and checks the `--out` paths ([`check_out_paths`]);
/// a problem is a usage error (printed, exit 2).
pub fn resolve_outputs(
    outs: &[String],
    prints: &[String],
    source: &str,
    named: &[(String, kir::interp::args::ArgSpec)],
    buffer_of: impl Fn(&str) -> Result<usize, String>,
) -> Result<Outputs, ExitCode> {
    let mut r = Outputs { outs: Vec::new(), prints: Vec::new() };
    for s in outs {
        let (n, path) = split_named(s, "out").map_err(usage)?;
        let b = buffer_of(&n).map_err(|e| usage(format!("--out {n}: {e}")))?;
        r.outs.push((n, b, path));
    }
    check_out_paths(&r.outs, source, named).map_err(usage)?;
    for s in prints {
        let (n, limit) = parse_print(s).map_err(usage)?;
        let b = buffer_of(&n).map_err(|e| usage(format!("--print {n}: {e}")))?;
        r.prints.push((n, b, limit));
    }
    Ok(r)
}

/// A `--print NAME[:N]` value: the parameter name and how many elements (all when no `:N`).
pub fn parse_print(s: &str) -> Result<(String, Option<usize>), String> {
    let (name, limit) = match s.rsplit_once(':') {
        Some((n, l)) => {
            let l =
                l.trim().parse::<usize>().map_err(|_| format!("--print {s}: `{l}` is not a count (NAME or NAME:N)"))?;
            (n, Some(l))
        }
        None => (s, None),
    };
    let name = name.trim().trim_start_matches('%');
    if name.is_empty() {
        return Err(format!("--print `{s}`: expected NAME or NAME:N"));
    }
    Ok((name.to_string(), limit))
}

/// Prints each `(name, buffer index, limit)` as `%name: ` and the buffer's [`kir::interp::outputs::listing`].
pub fn print_buffers(prints: &[(String, usize, Option<usize>)], buffers: &[kir::interp::Buffer]) {
    for (n, b, limit) in prints {
        println!("%{n}: {}", kir::interp::outputs::listing(&buffers[*b], *limit));
    }
}

/// A byte count: digits, optionally followed by `K`, `M`, `G` (or `KiB`, `MiB`, `GiB`; powers of
/// 1024), e.g. `--max-memory 2G`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KiB" | "k" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        "T" | "TiB" => 40,
        _ => return Err(format!("`{s}`: expected a byte count such as 4096, 512M or 8G")),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{s}`: expected a positive byte count such as 4096, 512M or 8G"))
}

/// Applies `--max-memory` (the budget of every run's buffers) when given.
pub fn apply_max_memory(arg: Option<&str>) -> Result<(), ExitCode> {
    if let Some(v) = arg {
        match parse_bytes(v) {
            Ok(n) => kir::interp::set_max_memory(n),
            Err(e) => return Err(usage(format!("--max-memory {e}"))),
        }
    }
    Ok(())
}

/// A usage error (bad flags or argument values): message on stderr, exit 2.
pub fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// `X[,Y[,Z]]` with missing dimensions 1 (for `--grid`/`--block`).
pub fn parse_dims(s: &str, what: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("--{what} `{s}`: expected X[,Y[,Z]]"));
    }
    let mut d = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        d[i] = p.parse().map_err(|_| format!("--{what} `{s}`: `{p}` is not a positive integer"))?;
        if d[i] == 0 {
            return Err(format!("--{what} `{s}`: dimensions must be at least 1"));
        }
    }
    Ok(d)
}

/// `NAME=VALUE` (a leading `%` on NAME is dropped), for `--arg` and `--out`.
pub fn split_named(s: &str, flag: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() => Ok((n.trim().trim_start_matches('%').to_string(), v.to_string())),
        _ => Err(format!("--{flag} `{s}`: expected NAME=VALUE")),
    }
}

/// Parses every `--arg NAME=VALUE` into an argument spec (`kir::interp::args` syntax).
pub fn named_args(args: &[String]) -> Result<Vec<(String, kir::interp::args::ArgSpec)>, String> {
    args.iter()
        .map(|s| {
            let (n, v) = split_named(s, "arg")?;
            kir::interp::args::parse_arg_spec(&v).map(|spec| (n.clone(), spec)).map_err(|e| format!("--arg {n}: {e}"))
        })
        .collect()
}

/// Reads, parses and checks a file (`kir check`'s checks: verifier and barrier verification);
/// prints every diagnostic and returns exit code 1 when any is an error.
pub fn load_checked(path: &str) -> Result<Loaded<Checked>, ExitCode> {
    let Loaded { path, source, module, sources } = load(path)?;
    let (diags, checked) = match kir::api::check(module) {
        Ok(c) => (c.warnings().to_vec(), Some(c)),
        Err(d) => (d.into_vec(), None),
    };
    if !diags.is_empty() {
        eprint!("{}", diag::render_map(&diags, &sources, stderr_color()));
    }
    match checked {
        Some(module) => Ok(Loaded { path, source, module, sources }),
        None => Err(ExitCode::from(1)),
    }
}

/// Looks up a graph by name (with or without `@`).
pub fn select_graph<'m>(loaded: &'m Loaded<Checked>, name: &str) -> Result<&'m kir::ir::graph::Graph, ExitCode> {
    let name = name.trim_start_matches('@');
    loaded.module.graph(name).ok_or_else(|| {
        let names: Vec<String> = loaded.module.graphs.iter().map(|g| format!("@{}", g.name)).collect();
        let have = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        file_error(&loaded.path, format!("no graph `@{name}` (graphs here: {have})"))
    })
}

/// The `--stats` line of `kir run` (interpreter and PTX emulator alike: the emulator's counts
/// come in through [`emu_launch_stats`]).
pub fn print_launch_stats(s: &kir::interp::Stats) {
    println!(
        "stats: {} thread-instructions ({} warp-instructions), global memory {} bytes read, {} bytes written, {} barriers, {} blocks of {} threads",
        s.thread_instructions,
        s.warp_instructions,
        s.global_bytes_read,
        s.global_bytes_written,
        s.barriers,
        s.blocks,
        s.threads / s.blocks.max(1),
    );
}

/// The PTX emulator's launch counts as the interpreter's (the emulator depends on no kir crate,
/// so it has its own type with the same fields).
pub fn emu_launch_stats(s: &kir_ptx_emu::Stats) -> kir::interp::Stats {
    kir::interp::Stats {
        thread_instructions: s.thread_instructions,
        warp_instructions: s.warp_instructions,
        global_bytes_read: s.global_bytes_read,
        global_bytes_written: s.global_bytes_written,
        barriers: s.barriers,
        blocks: s.blocks,
        threads: s.threads,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn byte_counts_with_units() {
        assert_eq!(super::parse_bytes("4096"), Ok(4096));
        assert_eq!(super::parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(super::parse_bytes("8GiB"), Ok(8 << 30));
        for bad in ["", "0", "8X", "-1", "99999999999999999999T", "G"] {
            assert!(super::parse_bytes(bad).is_err(), "{bad}");
        }
    }
}
