//! Shared plumbing for subcommands: reading files, rendering diagnostics, exit codes.
//!
//! Guarantees: a missing or unreadable file, or a file that fails to parse or verify, prints a
//! located message to stderr and yields exit code 1 (2 for usage errors); nothing here panics.

use kir_ir::diag::{self, Diagnostic};
use kir_ir::Module;
use std::io::IsTerminal;
use std::process::ExitCode;

/// A parsed source file.
pub struct Loaded {
    pub path: String,
    pub source: String,
    pub module: Module,
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
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map_err(|e| file_error(path, format!("not valid UTF-8 (byte {})", e.utf8_error().valid_up_to()))),
        Err(e) => Err(file_error(path, e)),
    }
}

/// Reads and parses a file; prints diagnostics and returns exit code 1 on failure.
pub fn load(path: &str) -> Result<Loaded, ExitCode> {
    let source = read_source(path)?;
    match kir_ir::parse(&source) {
        Ok(module) => Ok(Loaded { path: path.to_string(), source, module }),
        Err(diags) => {
            emit(&diags, path, &source);
            Err(ExitCode::from(1))
        }
    }
}

/// Looks up a kernel by name (with or without `@`), or the only kernel when `name` is None.
pub fn select_kernel<'m>(loaded: &'m Loaded, name: Option<&str>) -> Result<&'m kir_ir::Kernel, ExitCode> {
    let m = &loaded.module;
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
pub fn interp_failure(e: &kir_interp::InterpError, loaded: &Loaded) -> ExitCode {
    emit(&[e.to_diagnostic()], &loaded.path, &loaded.source);
    ExitCode::from(if e.kind == kir_interp::ErrorKind::InvalidLaunch { 2 } else { 1 })
}

/// Writes each `--out NAME=PATH` buffer (`(name, buffer index, path)`) as `.npy`.
pub fn write_outputs(outs: &[(String, usize, String)], buffers: &[kir_interp::Buffer]) -> Result<(), ExitCode> {
    for (n, buf, path) in outs {
        kir_interp::npy::write(std::path::Path::new(path), &buffers[*buf])
            .map_err(|e| file_error(path, format!("cannot write --out {n}: {e}")))?;
    }
    Ok(())
}
