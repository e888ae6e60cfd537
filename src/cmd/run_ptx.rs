//! `kir run FILE.ptx [--kernel K] --grid X[,Y[,Z]] --block X[,Y[,Z]] [--arg NAME=VALUE]...
//! [--out NAME=PATH.npy] [--shared BYTES] [--fuel N] [--threads N] [--stats] [--time]`: run an
//! entry of any PTX file (kir's, NVRTC's, hand-written) in the PTX emulator — the PTX half of
//! `kir run`.
//!
//! Guarantees:
//! - Arguments are bound by the PTX parameter names ([`kir_harness::ptx_args`]): every parameter exactly
//!   once; a buffer form for a 64-bit parameter gives it a buffer of the form's element type; a
//!   literal is parsed at the parameter's type. Problems are usage errors (exit 2), as are
//!   `--graph`, `--races` and `--uninit`, which only the interpreter has.
//! - A PTX file the emulator cannot load is a located error (`FILE:LINE:COL`, the line and a
//!   caret) with exit 1; so is a kernel fault, at the faulting PTX instruction, with the block and
//!   thread. An invalid launch (shape, shared memory) exits 2. Nothing panics.
//! - Without `--kernel`, a file with a single entry runs it; otherwise the entries are listed.
//! - Without `--out`, every buffer the run changed is summarized on stdout as `kir run` does, and
//!   the buffers it left unchanged are named; with `--out NAME=PATH.npy` that buffer is written.
//! - `--stats` prints the emulator's counts in `kir run`'s format; `--time` the launch's wall time.
//! - The launch runs through [`kir_harness::engine::Engine`]: the [`PtxEmulator`] over the file's
//!   text ([`EmuProgram::from_loaded`]), with no `.kir` module ([`PtxEmulator::entries_only`]:
//!   a PTX file has entries, not kernels or graphs of a checked module).

use super::common::{self, usage};
use super::run_options::RunArgs as Args;
use kir::ir::diag::Diagnostic;
use kir::ir::span::Span;
use kir_harness::emu_exec;
use kir_harness::engine::{EmuProgram, Engine as _, EngineError, Inputs, Launch, PtxEmulator};
use std::process::ExitCode;
use std::time::Instant;

/// Whether `path` names a PTX file (by its extension).
pub fn is_ptx(path: &str) -> bool {
    std::path::Path::new(path).extension().is_some_and(|e| e.eq_ignore_ascii_case("ptx"))
}

/// The byte span of 1-based `line` (its text without leading/trailing blanks) and, when `col` is
/// given, of the character at 1-based `col` on it.
fn line_span(text: &str, line: u32, col: Option<u32>) -> Span {
    let mut start = 0usize;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line as usize {
            let body = l.trim_end_matches(['\n', '\r']);
            if let Some(c) = col {
                let off = body.char_indices().nth((c as usize).saturating_sub(1)).map(|(o, _)| o);
                let off = off.unwrap_or(body.len());
                let len = body[off..].chars().next().map_or(0, char::len_utf8);
                return Span::new(start + off, start + off + len);
            }
            let lead = body.len() - body.trim_start().len();
            return Span::new(start + lead, start + body.trim_end().len());
        }
        start += l.len();
    }
    Span::new(text.len(), text.len())
}

/// Prints a diagnostic about the PTX text to stderr.
fn emit(d: Diagnostic, path: &str, text: &str) {
    common::emit(&[d], path, text);
}

pub fn run(a: &Args) -> ExitCode {
    if a.launch.graph.is_some() {
        return usage("--graph is for .kir files; a PTX file has entries (choose one with --kernel)");
    }
    if a.races || a.uninit {
        return usage("--races and --uninit are interpreter checks; they are not available for PTX files");
    }
    let text = match common::read_source(&a.file) {
        Ok(t) => t,
        Err(code) => return code,
    };
    // A load error is reported here, located at its column; the engine takes the loaded module.
    let program: Result<EmuProgram, emu_exec::EmuFailure> = match kir_ptx_emu::Module::parse(&text) {
        Ok(m) => Ok(EmuProgram::from_loaded(text.clone(), m)),
        Err(e) => {
            let d = Diagnostic::error(format!("cannot load the PTX: {}", e.message))
                .at(line_span(&text, e.line, Some(e.col)), "here");
            emit(d, &a.file, &text);
            return ExitCode::from(1);
        }
    };
    let Ok(loaded) = &program else { return ExitCode::from(1) };
    let module = loaded.module();
    let names: Vec<&str> = module.entries().iter().map(|e| e.name.as_str()).collect();
    let listed = if names.is_empty() { "none".to_string() } else { names.join(", ") };
    let entry = match &a.launch.target.kernel {
        Some(k) => {
            let k = k.trim_start_matches('@');
            match module.entry(k) {
                Some(e) => e,
                None => return common::file_error(&a.file, format!("no entry `{k}` (entries here: {listed})")),
            }
        }
        None => match module.entries() {
            [e] => e,
            es => {
                return common::file_error(
                    &a.file,
                    format!("this file has {} entries; choose one with --kernel ({listed})", es.len()),
                )
            }
        },
    };
    let (grid, block) = match a.launch.dims() {
        Ok(d) => d,
        Err(e) => return usage(e),
    };
    let named = match common::named_args(&a.launch.target.args) {
        Ok(n) => n,
        Err(e) => return usage(e),
    };
    let bound = match kir_harness::ptx_args::bind(entry, &named, None) {
        Ok(b) => b,
        Err(e) => return usage(e),
    };
    let resolved = common::resolve_outputs(&a.outs, &a.prints, &a.file, &named, |n| {
        let i = entry
            .params
            .iter()
            .position(|p| p.name == n)
            .ok_or_else(|| format!("entry `{}` has no parameter `{n}`", entry.name))?;
        bound.param_buffer[i].ok_or_else(|| format!("parameter `{n}` is a scalar, not a buffer"))
    });
    let common::Outputs { outs, prints } = match resolved {
        Ok(r) => r,
        Err(code) => return code,
    };
    let buffer_names: Vec<String> = {
        let mut v = vec![String::new(); bound.buffers.len()];
        for (p, b) in entry.params.iter().zip(&bound.param_buffer) {
            if let Some(b) = b {
                v[*b] = p.name.clone();
            }
        }
        v
    };
    let cfg = kir::interp::LaunchConfig { grid, block, dynamic_shared_bytes: a.launch.target.shared };
    let mut emulator = PtxEmulator::entries_only(&program, a.launch.emu_options());
    let inputs = Inputs { args: &bound.args, buffers: &bound.buffers, names: &buffer_names };
    let start = Instant::now();
    let result = emulator.run(&Launch::Kernel { name: &entry.name, cfg }, &inputs);
    let elapsed = start.elapsed();
    let buffers = match result {
        Ok(b) => b,
        Err(EngineError::Emu(f)) => return failure(&f, &a.file, &text),
        Err(e) => return common::file_error(&a.file, e),
    };
    if let Err(code) = common::write_outputs(&outs, &buffers) {
        return code;
    }
    common::print_buffers(&prints, &buffers);
    if outs.is_empty() && prints.is_empty() {
        let mut unchanged = Vec::new();
        for (p, b) in entry.params.iter().zip(&bound.param_buffer) {
            let Some(b) = *b else { continue };
            if buffers[b] == bound.buffers[b] {
                unchanged.push(format!("%{}", p.name));
            } else {
                println!("%{}: {}", p.name, kir::interp::outputs::summary(&buffers[b]));
            }
        }
        if !unchanged.is_empty() {
            println!("unchanged: {}", unchanged.join(", "));
        }
    }
    if a.stats {
        let stats = emulator.last_stats().copied().unwrap_or_default();
        super::common::print_launch_stats(&super::common::emu_launch_stats(&stats));
    }
    if a.time {
        println!("time: {:.3} ms", elapsed.as_secs_f64() * 1e3);
    }
    ExitCode::SUCCESS
}

/// Reports a failed emulator run: a fault located at its PTX instruction (exit 1), an invalid
/// launch (exit 2), anything else (exit 1).
fn failure(f: &emu_exec::EmuFailure, path: &str, text: &str) -> ExitCode {
    match f.class {
        emu_exec::FailureClass::InvalidLaunch => match &f.emu_error {
            Some(e) => usage(e),
            None => usage(&f.message),
        },
        emu_exec::FailureClass::Fault(kind) => {
            let coords = |c: [u32; 3]| format!("({}, {}, {})", c[0], c[1], c[2]);
            let (message, block, thread) = match &f.emu_error {
                Some(e) => (e.message.as_str(), e.block, e.thread),
                None => (f.message.as_str(), None, None),
            };
            let mut d = Diagnostic::error(format!("kernel fault ({}): {message}", kind.name()));
            if let Some(line) = f.ptx_line {
                d = d.at(line_span(text, line, None), "this instruction");
            }
            match (block, thread) {
                (Some(b), Some(t)) => d = d.with_note(format!("in block {} thread {}", coords(b), coords(t))),
                (Some(b), None) => d = d.with_note(format!("in block {}", coords(b))),
                _ => {}
            }
            emit(d, path, text);
            ExitCode::from(1)
        }
        _ => common::file_error(path, &f.message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_a_line_or_a_column() {
        let t = "a\n\t  st.global.u32 [x], y;  \nz";
        assert_eq!(&t[line_span(t, 2, None).range()], "st.global.u32 [x], y;");
        assert_eq!(&t[line_span(t, 2, Some(3)).range()], " ");
        assert_eq!(&t[line_span(t, 2, Some(4)).range()], "s");
        assert_eq!(line_span(t, 9, None), Span::new(t.len(), t.len()));
        assert!(is_ptx("x/y.PTX") && is_ptx("a.ptx") && !is_ptx("a.kir") && !is_ptx("ptx"));
    }
}
