//! What every kind of filetest shares (Cranelift's `SubTest` idea): the [`FileTest`] trait one file
//! per kind implements, the file a test runs on ([`TestFile`]), what is found once for many files
//! ([`Env`]), and what a test reports ([`Failure`], [`Verified`]).
//!
//! Guarantees: a kind states the directives it reads ([`FileTest::reads`]); the runner makes every
//! other directive of its files a failure before the kind runs, so a kind never sees (and never
//! silently ignores) a directive that belongs to another.

use crate::directives::Directives;
use crate::kir_test;
use kir_ir::diag::{Diagnostic, Severity, SourceMap};
use std::path::{Path, PathBuf};

/// A directive (other than the `; test:` header) that some kinds read and the others refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Directive {
    /// `; error:` / `; warning:` annotations.
    Annotations,
    /// `; run:` lines.
    Runs,
    /// `; expect:` lines of a run.
    Expects,
    /// `; check-ptx:` lines.
    PtxChecks,
    /// `; fault:` lines of a run.
    Faults,
    /// `; passes:` and `; args:` lines.
    Options,
}

/// One kind of filetest: what a file with its `; test:` header runs.
pub trait FileTest {
    /// The directives this kind reads; any other in its files is a failure.
    fn reads(&self) -> &'static [Directive];

    /// The failure for a directive this kind does not read, when it says more than where the
    /// directive belongs (`None`: the runner's message, naming the kinds that read it).
    fn refusal(&self, _d: Directive) -> Option<&'static str> {
        None
    }

    /// Runs the test: every failure, and, for kinds that match diagnostics, those diagnostics.
    fn run(&self, file: &TestFile, env: &mut Env) -> (Vec<Failure>, Option<Verified>);
}

/// The file a test runs on.
pub struct TestFile<'a> {
    /// The file (imports are resolved, and `kir opt` and `kir test` run, on it).
    pub path: &'a Path,
    /// Its text.
    pub source: &'a str,
    /// Its parsed directives.
    pub directives: &'a Directives,
}

/// What is found once for many files: the `kir` binary `optimize` runs, the `kir test` context
/// of `run`.
#[derive(Default)]
pub struct Env {
    pub kir_binary: Option<PathBuf>,
    pub(crate) run_context: Option<kir_test::Context>,
}

/// One reason a filetest failed.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// 1-based line of the tested file the failure is about, when there is one.
    pub line: Option<usize>,
    pub message: String,
}

impl Failure {
    pub(crate) fn at(line: usize, message: impl Into<String>) -> Failure {
        Failure { line: Some(line), message: message.into() }
    }
    pub(crate) fn file(message: impl Into<String>) -> Failure {
        Failure { line: None, message: message.into() }
    }
}

/// The diagnostics of a `verify` file, as `kir check` renders them (of a `fault` file: the checks'
/// diagnostics, then its runs' faults).
#[derive(Clone, Debug)]
pub struct Verified {
    pub diagnostics: Vec<Diagnostic>,
    pub sources: SourceMap,
    /// [`kir_ir::diag::render_map`] without colour: the text users read.
    pub rendered: String,
}

/// The text of a comment-only line after `;` and spaces.
pub(crate) fn comment_of(line: &str) -> Option<&str> {
    line.trim_start().strip_prefix(';').map(str::trim_start)
}

pub(crate) fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}
