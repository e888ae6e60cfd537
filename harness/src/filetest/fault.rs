//! `; test: fault`: the file must verify; every `; run:` directive runs in the interpreter only and
//! must stop with the kernel fault its `; fault:` line names; the checks' diagnostics and the
//! faults are matched with the annotations by the `verify` rules ([`super::annotations`]).

use super::annotations::{diagnostic_line, expect_diagnostics};
use super::subtest::{Directive, Env, Failure, FileTest, TestFile, Verified};
use crate::directives::{describe_fault, Directives, RunDirective};
use crate::kir_test;
use kir_interp::Options;
use kir_ir::diag::{render_map, Diagnostic, Severity, SourceMap};
use kir_ir::verify::check_keeping;
use std::path::Path;

/// The `fault` kind.
pub struct Fault;

impl FileTest for Fault {
    fn reads(&self) -> &'static [Directive] {
        &[Directive::Annotations, Directive::Runs, Directive::Faults]
    }

    fn refusal(&self, d: Directive) -> Option<&'static str> {
        (d == Directive::Expects).then_some(
            "`expect:` is not allowed in a `test: fault` file: its runs must fault, and a `; fault:` line says how",
        )
    }

    fn run(&self, file: &TestFile, _env: &mut Env) -> (Vec<Failure>, Option<Verified>) {
        let (v, f) = fault(file.path, file.source, file.directives);
        (f, v)
    }
}

/// The `fault` kind: load and check (the verifier must accept), run every `; run:` directive in
/// the interpreter, and match the checks' diagnostics and the faults with the annotations.
fn fault(path: &Path, source: &str, d: &Directives) -> (Option<Verified>, Vec<Failure>) {
    let must_verify = |diags: &[Diagnostic], sources: &SourceMap| -> Vec<Failure> {
        diags
            .iter()
            .filter(|x| x.severity == Severity::Error)
            .map(|x| Failure {
                line: diagnostic_line(source, sources, x),
                message: format!("a fault test must verify: {}", x.message),
            })
            .collect()
    };
    let rendered = |diagnostics: Vec<Diagnostic>, sources: SourceMap| {
        let rendered = render_map(&diagnostics, &sources, false);
        Some(Verified { diagnostics, sources, rendered })
    };
    let loaded = match kir_ir::text::load::load_source(path, source.to_string()) {
        Ok(l) => l,
        Err(e) => return (rendered(e.diagnostics.clone(), e.sources.clone()), must_verify(&e.diagnostics, &e.sources)),
    };
    let sources = loaded.sources;
    let (mut diagnostics, module) = match check_keeping(loaded.module) {
        (diags, Ok(v)) => (diags, v),
        (diags, Err(_)) => {
            let failures = must_verify(&diags, &sources);
            return (rendered(diags, sources), failures);
        }
    };
    let mut failures = Vec::new();
    if d.runs.is_empty() {
        failures
            .push(Failure::file("a `test: fault` file needs a `; run:` directive (and each of its runs must fault)"));
    }
    let base_dir = path.parent();
    for r in &d.runs {
        let e = match run_in_interpreter(&module, r, base_dir) {
            Ok(()) => {
                failures.push(Failure::at(r.line, "expected a fault, the run passed"));
                continue;
            }
            Err(kir_test::RunError::Args(why)) => {
                failures
                    .push(Failure::at(r.line, format!("expected a kernel fault, the run failed before any: {why}")));
                continue;
            }
            Err(kir_test::RunError::Interp(e)) => e,
        };
        let Some(kind) = e.fault_kind() else {
            failures.push(Failure::at(
                r.line,
                format!("expected a kernel fault, the run failed with: {}", e.to_diagnostic().message),
            ));
            continue;
        };
        let got = describe_fault(kind.name(), e.block, e.thread);
        match &r.fault {
            None => failures.push(Failure::at(
                r.line,
                format!("say which fault: add `; fault: KIND [block(..)] [thread(..)]` after this `; run:` line (the run faulted with {got})"),
            )),
            Some(want) => {
                if let Err(msg) = want.check(&e) {
                    failures.push(Failure::at(want.line, msg));
                }
            }
        }
        diagnostics.push(e.to_diagnostic());
    }
    let (verified, matched) = expect_diagnostics(path, source, diagnostics, sources, &d.annotations);
    failures.extend(matched);
    (Some(verified), failures)
}

/// Launches one directive of a `fault` file in the interpreter, on the module as written, as
/// `kir test` launches a run that must fault ([`kir_test::interpret_fault_run`]), with the runtime
/// checks the directive leaves on.
fn run_in_interpreter(
    module: &kir_ir::verify::Verified,
    r: &RunDirective,
    base_dir: Option<&Path>,
) -> Result<(), kir_test::RunError> {
    let specs = kir_test::named_specs(r).map_err(kir_test::RunError::Args)?;
    let opts = kir_test::directive_options(r, &Options::default(), true);
    kir_test::interpret_fault_run(module, r, &specs, base_dir, opts).map(|_| ())
}
