//! Filetests: `.kir` files that say how they are tested, run by one runner (as Cranelift's
//! filetests). A file's `; test: KIND` header picks what is run (docs/testing.md, "Filetests"):
//! each kind is a [`FileTest`] in its own file ([`verify`](mod@verify), [`optimize`], [`run`](mod@run), [`fault`]; what
//! they share: [`subtest`], and the annotation matching of `verify` and `fault`: [`annotations`]);
//! [`Kind`] names them.
//!
//! - `verify`: the file is loaded with its imports and checked as `kir check` checks it
//!   ([`kir_ir::verify::check_keeping`]). Every error and warning must be expected by an
//!   `; error: TEXT` / `; warning: TEXT` annotation (same severity, primary location on the
//!   annotated line, message containing TEXT) and every annotation must be met by one diagnostic;
//!   a file without annotations must produce no diagnostic at all. An annotation ending a code
//!   line is about that line; one on a comment-only line is about the closest preceding line that
//!   is neither blank nor a comment. A diagnostic located in an imported file is about the
//!   `import` line of the tested file through which that file was loaded. Every diagnostic must
//!   have a location (not the dummy span).
//! - `optimize`: `kir opt FILE [--passes P] [ARGS]` (`; passes: P`, `; args: ARGS`) must exit 0,
//!   its output module must parse and verify, and the file's FileCheck directives (`; check:`,
//!   `; nextln:`, `; sameln:`, `; not:`, ... of the `filecheck` crate; at least one) must match
//!   what it prints, stderr then stdout. The text checked is what the `kir` binary prints: the
//!   runner runs the binary it is given ([`Runner::with_kir_binary`]).
//! - `run`: `kir test`'s harness ([`crate::kir_test::test_file`]) on the file: every row must pass
//!   (a `skip` row, such as `gpu` without a GPU, is not a failure) and at least one `; run:`
//!   directive must carry an `; expect:` line.
//! - `fault`: the file is loaded and checked as for `verify`, except that an error of the verifier
//!   itself (or of parsing or imports) is a failure, "a fault test must verify": the kernels must be
//!   well formed for their runs to mean anything. Then every `; run:` directive (at least one) is
//!   launched in the interpreter only ([`kir_interp`], on the module as written; no passes, no PTX),
//!   with both runtime checks on unless its `checks=` turns some off, its `fuel=` if given, and
//!   its blocks on one host thread (so that the fault reported is deterministic, a cross-block race
//!   included), and must stop with a kernel fault. Each run's `; fault: KIND [block(..)]
//!   [thread(..)]` line ([`crate::directives::ExpectedFault`]; KIND as
//!   [`kir_interp::FaultKind::name`] spells it) says which: its kind must be the fault's, and the
//!   coordinates it gives those the fault reports. A run without a `; fault:` line, a run that
//!   passes, one that fails without a kernel fault (bad arguments, an invalid launch), and a wrong
//!   kind or coordinates (the failure names both) are failures with the line. Each fault, as a
//!   diagnostic ([`kir_interp::InterpError::to_diagnostic`]), joins the checks' diagnostics
//!   (warnings, and barrier verification's errors, which a kernel that faults at run time often
//!   has) and all of them are matched with the `; error:` / `; warning:` annotations by exactly
//!   the `verify` rules. `; expect:` lines are not allowed (a fault test checks no outputs).
//!
//! Guarantees:
//! - A file has exactly one header; a missing header, a second one, an unknown kind or any
//!   malformed directive ([`crate::directives`]) is a failure with its line, and nothing else is
//!   run. Directives that belong to another kind (annotations outside `verify` and `fault`,
//!   `; run:` outside `run` and `fault`, `; expect:` and `; check-ptx:` outside `run`, `; fault:`
//!   outside `fault`, `; passes:` / `; args:` outside `optimize`) are failures, never silently
//!   ignored.
//! - Every failure names the file and, where there is one, the line; a [`Report`] holds all of a
//!   file's failures, not only the first, and a failed `verify` or `fault` report shows the
//!   rendered diagnostics. Nothing panics on a bad test file.

pub mod annotations;
pub mod fault;
pub mod optimize;
pub mod run;
pub mod subtest;
pub mod verify;

pub use subtest::{Directive, Env, Failure, FileTest, TestFile, Verified};
pub use verify::verify;

use crate::directives::{parse_directives, Directives};
use std::fmt;
use std::path::{Path, PathBuf};
use subtest::{comment_of, severity_name};

/// What a filetest runs (its `; test:` header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Verify,
    Optimize,
    Run,
    Fault,
}

impl Kind {
    /// The kind a header names (one of [`crate::directives::TEST_KINDS`]).
    pub fn from_name(name: &str) -> Option<Kind> {
        match name {
            "verify" => Some(Kind::Verify),
            "optimize" => Some(Kind::Optimize),
            "run" => Some(Kind::Run),
            "fault" => Some(Kind::Fault),
            _ => None,
        }
    }

    /// Every kind.
    pub const ALL: [Kind; 4] = [Kind::Verify, Kind::Optimize, Kind::Run, Kind::Fault];

    /// What the kind runs (one file per kind).
    pub fn test(self) -> &'static dyn FileTest {
        match self {
            Kind::Verify => &verify::Verify,
            Kind::Optimize => &optimize::Optimize,
            Kind::Run => &run::Run,
            Kind::Fault => &fault::Fault,
        }
    }

    /// The header's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Verify => "verify",
            Kind::Optimize => "optimize",
            Kind::Run => "run",
            Kind::Fault => "fault",
        }
    }
}

/// The result of one filetest.
#[derive(Clone, Debug)]
pub struct Report {
    /// The file as given to the runner.
    pub file: String,
    /// The kind that ran (`None` when the header was missing or wrong).
    pub kind: Option<Kind>,
    /// Every failure, in line order (failures without a line first).
    pub failures: Vec<Failure>,
    /// For `verify` and `fault`: the diagnostics.
    pub verified: Option<Verified>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}
impl fmt::Display for Report {
    /// One `FILE:LINE: message` line per failure (continuation lines indented), then for a failed
    /// `verify` or `fault` file its rendered diagnostics.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for fail in &self.failures {
            let at = match fail.line {
                Some(l) => format!("{}:{l}", self.file),
                None => self.file.clone(),
            };
            let mut lines = fail.message.lines();
            writeln!(f, "{at}: {}", lines.next().unwrap_or(""))?;
            for l in lines {
                writeln!(f, "    {l}")?;
            }
        }
        if let Some(v) = self.verified.as_ref().filter(|_| !self.passed()) {
            if v.rendered.is_empty() {
                writeln!(f, "    (no diagnostics)")?;
            } else if self.kind == Some(Kind::Fault) {
                writeln!(f, "    the diagnostics (the checks', then the runs' faults), as `kir check` and `kir run` print them:")?;
                for l in v.rendered.trim_end().lines() {
                    writeln!(f, "    | {l}")?;
                }
            } else {
                writeln!(f, "    the diagnostics, as `kir check` prints them:")?;
                for l in v.rendered.trim_end().lines() {
                    writeln!(f, "    | {l}")?;
                }
            }
        }
        Ok(())
    }
}

/// Runs filetests. Holds what is found once for many files (the `kir` binary for `optimize`, the
/// `kir test` context for `run`).
#[derive(Default)]
pub struct Runner {
    env: Env,
}

impl Runner {
    pub fn new() -> Runner {
        Runner::default()
    }

    /// The `kir` binary `optimize` files run (without it they fail, saying so).
    pub fn with_kir_binary(mut self, path: impl Into<PathBuf>) -> Runner {
        self.env.kir_binary = Some(path.into());
        self
    }

    /// Reads the file at `path` and runs it by its header.
    pub fn run_file(&mut self, path: &Path) -> Report {
        match crate::files::read_source(path) {
            Ok(source) => self.run_source(path, &source),
            Err(e) => report(path, None, vec![Failure::file(format!("cannot read: {e}"))], None),
        }
    }

    /// Runs `source`, the text of the file at `path` (imports are resolved, and `kir opt` and
    /// `kir test` run, on `path`, so for `optimize` and `run` it must be the file's text), by its
    /// header.
    pub fn run_source(&mut self, path: &Path, source: &str) -> Report {
        let directives = match parse_directives(source) {
            Ok(d) => d,
            Err(errs) => {
                let failures = errs.into_iter().map(|e| Failure::at(e.line, e.message)).collect();
                return report(path, None, failures, None);
            }
        };
        let kind = match header(&directives) {
            Ok(k) => k,
            Err(f) => return report(path, None, vec![f], None),
        };
        let misplaced = misplaced_directives(kind, source, &directives);
        if !misplaced.is_empty() {
            return report(path, Some(kind), misplaced, None);
        }
        self.run_parsed(kind, path, source, &directives)
    }

    /// Runs `source` as a `kind` test whatever its header says, ignoring the directives of other
    /// kinds (e.g. `verify` on a library kernel, which has `; run:` lines and no header: it must
    /// check cleanly).
    pub fn run_as(&mut self, kind: Kind, path: &Path, source: &str) -> Report {
        match parse_directives(source) {
            Ok(d) => self.run_parsed(kind, path, source, &d),
            Err(errs) => {
                report(path, Some(kind), errs.into_iter().map(|e| Failure::at(e.line, e.message)).collect(), None)
            }
        }
    }

    fn run_parsed(&mut self, kind: Kind, path: &Path, source: &str, d: &Directives) -> Report {
        let file = TestFile { path, source, directives: d };
        let (failures, verified) = kind.test().run(&file, &mut self.env);
        report(path, Some(kind), failures, verified)
    }
}

fn report(path: &Path, kind: Option<Kind>, mut failures: Vec<Failure>, verified: Option<Verified>) -> Report {
    failures.sort_by_key(|f| f.line);
    Report { file: path.display().to_string(), kind, failures, verified }
}

/// The one `; test:` header.
fn header(d: &Directives) -> Result<Kind, Failure> {
    match d.test_headers.as_slice() {
        [] => Err(Failure::at(
            1,
            "no `; test: KIND` header (every filetest names its kind: `; test: verify`, `; test: optimize`, `; test: run` or `; test: fault`)",
        )),
        [(line, kind)] => Kind::from_name(kind).ok_or_else(|| Failure::at(*line, format!("unknown test kind `{kind}`"))),
        [(first, _), (line, _), ..] => {
            Err(Failure::at(*line, format!("a second `; test:` header (the first is on line {first}): a file is one test")))
        }
    }
}

/// Directives that mean nothing to `kind`: failures, so that they are never silently ignored.
fn misplaced_directives(kind: Kind, source: &str, d: &Directives) -> Vec<Failure> {
    let test = kind.test();
    let mut out = Vec::new();
    let mut refuse = |what: Directive, line: usize, spelled: &str| {
        if test.reads().contains(&what) {
            return;
        }
        let message = match test.refusal(what) {
            Some(m) => m.to_string(),
            None => format!("{spelled} in {} files, not `test: {}`", homes(what), kind.name()),
        };
        out.push(Failure::at(line, message));
    };
    for a in &d.annotations {
        let spelled = format!("`{}:` annotations belong", severity_name(a.severity));
        refuse(Directive::Annotations, a.line, &spelled);
    }
    for r in &d.runs {
        refuse(Directive::Runs, r.line, "`run:` belongs");
    }
    for e in d.runs.iter().flat_map(|r| &r.expects) {
        refuse(Directive::Expects, e.line, "`expect:` belongs");
    }
    for (line, _) in &d.ptx_checks {
        refuse(Directive::PtxChecks, *line, "`check-ptx:` belongs");
    }
    for f in d.runs.iter().filter_map(|r| r.fault.as_ref()) {
        refuse(Directive::Faults, f.line, "`fault:` belongs");
    }
    for (n, l) in source.lines().enumerate() {
        if let Some(key) = comment_of(l).and_then(|c| ["passes:", "args:"].into_iter().find(|k| c.starts_with(k))) {
            refuse(Directive::Options, n + 1, &format!("`{key}` belongs"));
        }
    }
    out
}

/// The kinds that read `what`, as the failure for a misplaced one names them: "`test: run` and
/// `test: fault`".
fn homes(what: Directive) -> String {
    let names: Vec<String> = Kind::ALL
        .iter()
        .filter(|k| k.test().reads().contains(&what))
        .map(|k| format!("`test: {}`", k.name()))
        .collect();
    names.join(" and ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNDEFINED: &str = "kernel @k(%out: ptr<global, u32>) {\nentry:\n  store %out[0], %zz\n  ret\n}\n";

    fn run(src: &str) -> Report {
        Runner::new().run_source(Path::new("t/case.kir"), src)
    }

    fn shown(r: &Report) -> String {
        r.to_string()
    }

    #[test]
    fn an_annotated_error_passes() {
        let src = UNDEFINED.replace("%zz\n", "%zz ; error: undefined value `%zz`\n") + "; test: verify\n";
        let r = run(&src);
        assert!(r.passed(), "{r}");
        assert_eq!(r.kind, Some(Kind::Verify));
        assert!(r.verified.unwrap().rendered.contains("t/case.kir:3:"));
        // On a comment-only line: about the code line above it.
        let src = UNDEFINED.replace("%zz\n", "%zz\n  ; error: undefined value `%zz`\n") + "; test: verify\n";
        assert!(run(&src).passed());
    }

    #[test]
    fn a_missing_expected_error_is_reported_with_its_line() {
        let src = "; test: verify\nkernel @k() {\nentry:\n  ret ; error: something\n}\n";
        let r = run(src);
        assert_eq!(r.failures, vec![Failure::at(4, "expected error containing `something`, but there is none")]);
        assert!(shown(&r).starts_with("t/case.kir:4: expected error containing `something`"), "{r}");
        assert!(shown(&r).contains("(no diagnostics)"), "{r}");
    }

    #[test]
    fn an_unexpected_error_is_reported_with_its_line_and_the_rendered_diagnostics() {
        let src = format!("; test: verify\n{UNDEFINED}");
        let r = run(&src);
        assert_eq!(r.failures.len(), 1, "{r}");
        assert_eq!(r.failures[0].line, Some(4));
        assert!(r.failures[0].message.starts_with("unexpected error (no `; error:` annotation matches it): "), "{r}");
        let text = shown(&r);
        assert!(text.starts_with("t/case.kir:4: unexpected error"), "{text}");
        assert!(text.contains("    | error: ") && text.contains("t/case.kir:4:18"), "{text}");
    }

    #[test]
    fn an_annotation_on_the_wrong_line_fails_twice() {
        let src = UNDEFINED.replace("  ret\n", "  ret ; error: undefined value `%zz`\n") + "; test: verify\n";
        let r = run(&src);
        let got: Vec<(Option<usize>, &str)> = r.failures.iter().map(|f| (f.line, f.message.as_str())).collect();
        assert_eq!(got.len(), 2, "{r}");
        assert_eq!(got[0].0, Some(3));
        assert!(got[0].1.starts_with("unexpected error"), "{r}");
        assert_eq!(got[1].0, Some(4));
        assert!(got[1].1.starts_with("expected error containing `") && got[1].1.contains("undefined value"), "{r}");
        // A comment-only annotation after a blank line still refers to the code line above.
        let src = UNDEFINED.replace("  ret\n", "  ret\n\n; error: undefined value `%zz`\n") + "; test: verify\n";
        let r = run(&src);
        assert_eq!(r.failures.iter().map(|f| f.line).collect::<Vec<_>>(), vec![Some(3), Some(6)], "{r}");
        assert!(r.failures[1].message.starts_with("expected error on line 4 containing"), "{r}");
    }

    #[test]
    fn a_wrong_message_or_severity_fails() {
        let src = UNDEFINED.replace("%zz\n", "%zz ; error: undefined variable\n") + "; test: verify\n";
        let r = run(&src);
        assert_eq!(r.failures.iter().map(|f| f.line).collect::<Vec<_>>(), vec![Some(3), Some(3)], "{r}");
        assert!(r
            .failures
            .iter()
            .any(|f| f.message == "expected error containing `undefined variable`, but there is none"));
        let src = UNDEFINED.replace("%zz\n", "%zz ; warning: undefined value `%zz`\n") + "; test: verify\n";
        let r = run(&src);
        assert_eq!(r.failures.len(), 2, "{r}");
        assert!(r.failures.iter().any(|f| f.message.starts_with("expected warning containing")), "{r}");
    }

    #[test]
    fn one_annotation_per_diagnostic() {
        // Two errors on one line need two annotations; a third annotation is one too many.
        let src = "kernel @k(%out: ptr<global, u32>) {\nentry:\n  %a = add.u32 %x, %y ; error: `%x`\n  ; error: `%y`\n  ; error: undefined value\n  ret\n}\n; test: verify\n";
        let r = run(src);
        assert_eq!(r.failures.len(), 1, "{r}");
        assert_eq!(r.failures[0].line, Some(5));
    }

    #[test]
    fn a_missing_header_is_reported() {
        let r = run(UNDEFINED);
        assert_eq!(r.kind, None);
        assert_eq!(r.failures.len(), 1);
        assert_eq!(r.failures[0].line, Some(1));
        assert!(shown(&r).starts_with("t/case.kir:1: no `; test: KIND` header"), "{r}");
    }

    #[test]
    fn an_unknown_kind_a_second_header_and_a_near_miss_are_reported_with_their_lines() {
        let r = run(&format!("; test: verif\n{UNDEFINED}"));
        assert_eq!(r.failures.len(), 1, "{r}");
        assert_eq!(r.failures[0].line, Some(1));
        assert!(r.failures[0].message.contains("unknown test kind `verif`"), "{r}");
        let r = run(&format!("; test: verify\n{UNDEFINED}; test: run\n"));
        assert_eq!(
            r.failures,
            vec![Failure::at(7, "a second `; test:` header (the first is on line 1): a file is one test")]
        );
        let r = run(&format!("; test: verify\n{UNDEFINED}; eror: x\n"));
        assert_eq!(r.failures[0].line, Some(7));
        assert!(r.failures[0].message.contains("write `error:`"), "{r}");
    }

    #[test]
    fn directives_of_another_kind_are_reported() {
        let src = "; test: verify\n; passes: dce\n; run: @k grid(1) block(1)\nkernel @k() {\nentry:\n  ret\n}\n";
        let r = run(src);
        assert_eq!(r.failures.iter().map(|f| f.line).collect::<Vec<_>>(), vec![Some(2), Some(3)], "{r}");
        let src = "; test: optimize\nkernel @k() {\nentry:\n  ret ; error: x\n}\n";
        let r = Runner::new().with_kir_binary("/nonexistent/kir").run_source(Path::new("t/case.kir"), src);
        assert_eq!(r.failures.len(), 1, "{r}");
        assert!(r.failures[0].message.contains("belong in `test: verify` and `test: fault` files"), "{r}");
    }

    #[test]
    fn optimize_without_a_binary_says_so() {
        let r = run("; test: optimize\nkernel @k() {\nentry:\n  ret\n}\n; check: ret\n");
        assert_eq!(r.failures.len(), 1);
        assert!(r.failures[0].message.contains("runs the `kir` binary"), "{r}");
    }

    #[test]
    fn a_clean_file_without_annotations_passes_and_a_library_kernel_runs_as_verify() {
        let src = "kernel @k() {\nentry:\n  ret\n}\n";
        let r = Runner::new().run_as(Kind::Verify, Path::new("t/clean.kir"), src);
        assert!(r.passed(), "{r}");
        assert_eq!(r.verified.unwrap().rendered, "");
    }

    /// Thread t of a 2-thread block stores to out[t + 4] of a 4-element buffer (lines 6 and 9).
    const OOB: &str = "; test: fault\nkernel @k(%out: ptr<global, u32>) {\nentry:\n  %t = tid.x : u32\n  %i = add.u32 %t, 4\n  store %out[%i], %t ; error: out-of-bounds store\n  ret\n}\n; run: @k grid(2) block(2) out=zeros:u32:4\n";
    const OOB_FAULT: &str = "; fault: out-of-bounds access block(0) thread(0)\n";

    fn lines_and_messages(r: &Report) -> Vec<(Option<usize>, &str)> {
        r.failures.iter().map(|f| (f.line, f.message.as_str())).collect()
    }

    #[test]
    fn a_fault_file_passes() {
        let r = run(&format!("{OOB}{OOB_FAULT}"));
        assert!(r.passed(), "{r}");
        assert_eq!(r.kind, Some(Kind::Fault));
        let rendered = r.verified.unwrap().rendered;
        assert!(rendered.starts_with("error: kernel fault (out-of-bounds access): out-of-bounds store"), "{rendered}");
        assert!(rendered.contains("t/case.kir:6:3") && rendered.contains("in block (0, 0, 0) thread (0, 0, 0)"));
        // The coordinates are optional.
        assert!(run(&format!("{OOB}; fault: out-of-bounds access\n")).passed());
        assert!(run(&format!("{OOB}; fault: out-of-bounds access thread(0)\n")).passed());
    }

    #[test]
    fn a_run_that_passes_in_a_fault_file_fails() {
        let r = run(&format!("{OOB}{OOB_FAULT}")
            .replace("grid(2) block(2) out=zeros:u32:4", "grid(1) block(2) out=zeros:u32:8"));
        assert_eq!(
            lines_and_messages(&r),
            vec![
                (Some(6), "expected error containing `out-of-bounds store`, but there is none"),
                (Some(9), "expected a fault, the run passed"),
            ],
            "{r}"
        );
        // Nor may it fail otherwise.
        let r = run(&format!("{OOB}{OOB_FAULT}").replace(" out=zeros:u32:4", ""));
        assert_eq!(r.failures[1].line, Some(9), "{r}");
        assert!(
            r.failures[1].message.starts_with("expected a kernel fault, the run failed before any: ")
                && r.failures[1].message.contains("out"),
            "{r}"
        );
    }

    #[test]
    fn a_wrong_fault_kind_names_both() {
        let r = run(&format!("{OOB}; fault: data race\n"));
        assert_eq!(
            lines_and_messages(&r),
            vec![(
                Some(10),
                "wrong fault: expected data race, got out-of-bounds access in block (0, 0, 0) thread (0, 0, 0)"
            )],
            "{r}"
        );
        assert!(
            shown(&r).starts_with("t/case.kir:10: wrong fault: expected data race, got out-of-bounds access"),
            "{r}"
        );
    }

    #[test]
    fn wrong_coordinates_name_both() {
        let r = run(&format!("{OOB}; fault: out-of-bounds access block(1) thread(0)\n"));
        assert_eq!(
            lines_and_messages(&r),
            vec![(
                Some(10),
                "wrong fault: expected out-of-bounds access in block (1, 0, 0) thread (0, 0, 0), got out-of-bounds access in block (0, 0, 0) thread (0, 0, 0)"
            )],
            "{r}"
        );
        let r = run(&format!("{OOB}; fault: out-of-bounds access thread(1)\n"));
        assert_eq!(
            lines_and_messages(&r),
            vec![(
                Some(10),
                "wrong fault: expected out-of-bounds access in thread (1, 0, 0), got out-of-bounds access in block (0, 0, 0) thread (0, 0, 0)"
            )],
            "{r}"
        );
    }

    #[test]
    fn a_run_without_a_fault_line_says_which_fault() {
        let r = run(OOB);
        assert_eq!(
            lines_and_messages(&r),
            vec![(
                Some(9),
                "say which fault: add `; fault: KIND [block(..)] [thread(..)]` after this `; run:` line (the run faulted with out-of-bounds access in block (0, 0, 0) thread (0, 0, 0))"
            )],
            "{r}"
        );
        // A file without runs tests nothing.
        let r = run("; test: fault\nkernel @k() {\nentry:\n  ret\n}\n");
        assert_eq!(
            lines_and_messages(&r),
            vec![(None, "a `test: fault` file needs a `; run:` directive (and each of its runs must fault)")]
        );
    }

    #[test]
    fn an_expect_line_in_a_fault_file_is_reported() {
        let r = run(&format!("{OOB}{OOB_FAULT}; expect: @k out[0..1] == [0]\n"));
        assert_eq!(
            lines_and_messages(&r),
            vec![(
                Some(11),
                "`expect:` is not allowed in a `test: fault` file: its runs must fault, and a `; fault:` line says how"
            )],
            "{r}"
        );
    }

    #[test]
    fn a_fault_line_in_a_run_file_is_reported() {
        let src = "; test: run\nkernel @k(%out: ptr<global, u32>) {\nentry:\n  ret\n}\n; run: @k grid(1) block(1) out=zeros:u32:1\n; expect: @k out[0..1] == [0]\n; fault: data race\n";
        let r = run(src);
        assert_eq!(
            lines_and_messages(&r),
            vec![(Some(8), "`fault:` belongs in `test: fault` files, not `test: run`")],
            "{r}"
        );
        let r = run(&src.replace("test: run", "test: verify"));
        assert_eq!(
            lines_and_messages(&r),
            vec![
                (Some(6), "`run:` belongs in `test: run` and `test: fault` files, not `test: verify`"),
                (Some(7), "`expect:` belongs in `test: run` files, not `test: verify`"),
                (Some(8), "`fault:` belongs in `test: fault` files, not `test: verify`"),
            ],
            "{r}"
        );
    }

    #[test]
    fn an_unmatched_error_annotation_in_a_fault_file_is_reported() {
        let src = format!("{OOB}{OOB_FAULT}").replace("  ret\n", "  ret ; error: something\n");
        let r = run(&src);
        assert_eq!(
            lines_and_messages(&r),
            vec![(Some(7), "expected error containing `something`, but there is none")],
            "{r}"
        );
        assert!(shown(&r).contains("    | error: kernel fault (out-of-bounds access)"), "{r}");
        // A fault no annotation expects.
        let r = run(&format!("{OOB}{OOB_FAULT}").replace("out-of-bounds store\n", "out-of-bounds load\n"));
        let got = lines_and_messages(&r);
        assert_eq!(got.len(), 2, "{r}");
        assert_eq!(got[0], (Some(6), "expected error containing `out-of-bounds load`, but there is none"));
        assert_eq!(got[1].0, Some(6));
        assert!(
            got[1].1.starts_with(
                "unexpected error (no `; error:` annotation matches it): kernel fault (out-of-bounds access): out-of-bounds store"
            ),
            "{r}"
        );
    }

    #[test]
    fn a_fault_file_must_verify() {
        let src = format!("; test: fault\n{UNDEFINED}; run: @k grid(1) block(1) out=zeros:u32:1\n; fault: data race\n");
        let r = run(&src);
        assert_eq!(lines_and_messages(&r), vec![(Some(4), "a fault test must verify: undefined value `%zz`")], "{r}");
        assert!(shown(&r).contains("    | error: undefined value `%zz`"), "{r}");
    }
}
