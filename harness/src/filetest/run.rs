//! `; test: run`: `kir test`'s harness ([`crate::kir_test::test_file`]) on the file: every row must
//! pass (a `skip` row is not a failure) and at least one `; run:` directive must carry an
//! `; expect:` line.

use super::subtest::{Directive, Env, Failure, FileTest, TestFile, Verified};
use crate::directives::Directives;
use crate::kir_test;
use std::path::Path;

/// The `run` kind.
pub struct Run;

impl FileTest for Run {
    fn reads(&self) -> &'static [Directive] {
        &[Directive::Runs, Directive::Expects, Directive::PtxChecks]
    }

    fn run(&self, file: &TestFile, env: &mut Env) -> (Vec<Failure>, Option<Verified>) {
        (run(env, file.path, file.directives), None)
    }
}

fn run(env: &mut Env, path: &Path, d: &Directives) -> Vec<Failure> {
    let mut failures = Vec::new();
    if !d.runs.iter().any(|r| !r.expects.is_empty()) {
        let line = d.runs.first().map(|r| r.line);
        failures.push(Failure {
            line,
            message: "no `; run:` directive carries an `; expect:` line: a wrong kernel would pass".into(),
        });
    }
    let ctx = env.run_context.get_or_insert_with(|| kir_test::Context::detect(false));
    kir_test::test_file(path, ctx, &mut |row| {
        if let kir_test::Outcome::Fail(why) = row.outcome {
            // Run rows are labelled `FILE:LINE @target where`.
            let line = row
                .label
                .split_once(' ')
                .and_then(|(at, _)| at.rsplit_once(':'))
                .and_then(|(_, l)| l.parse::<usize>().ok());
            failures.push(Failure { line, message: format!("{}: FAIL {why}", row.label) });
        }
    });
    failures
}
