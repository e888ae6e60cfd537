//! `; test: optimize`: `kir opt FILE [--passes P] [ARGS]` (`; passes: P`, `; args: ARGS`) must exit
//! 0, its output must parse and verify, and the file's FileCheck directives must match what it
//! prints, stderr then stdout (the `kir` binary the runner was given: [`Env::kir_binary`]).

use super::subtest::{comment_of, Directive, Env, Failure, FileTest, TestFile, Verified};
use std::path::Path;
use std::process::Command;

/// The `optimize` kind.
pub struct Optimize;

impl FileTest for Optimize {
    fn reads(&self) -> &'static [Directive] {
        &[Directive::Options]
    }

    fn run(&self, file: &TestFile, env: &mut Env) -> (Vec<Failure>, Option<Verified>) {
        (optimize(env, file.path, file.source), None)
    }
}

fn optimize(env: &Env, path: &Path, source: &str) -> Vec<Failure> {
    let Some(kir) = &env.kir_binary else {
        return vec![Failure::file("`test: optimize` runs the `kir` binary, and the runner was given none")];
    };
    let mut failures = Vec::new();
    let passes = option_lines(source, "passes:", &mut failures);
    let args = option_lines(source, "args:", &mut failures);
    if !failures.is_empty() {
        return failures;
    }
    let mut cmd = Command::new(kir);
    cmd.arg("opt").arg(path);
    if let Some(p) = passes {
        cmd.arg("--passes").arg(p);
    }
    if let Some(a) = args {
        cmd.args(a.split_whitespace());
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => return vec![Failure::file(format!("cannot run `{}`: {e}", kir.display()))],
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return vec![Failure::file(format!("kir opt failed ({}):\n{stderr}", out.status))];
    }
    match kir_ir::parse(&stdout) {
        Err(d) => failures.push(Failure::file(format!(
            "kir opt's output does not parse:\n{}",
            kir_ir::diag::render(&d, "<kir opt output>", &stdout, false)
        ))),
        Ok(m) => {
            let diags = kir_ir::verify::verify_module(&m);
            if kir_ir::diag::has_errors(&diags) {
                failures.push(Failure::file(format!(
                    "kir opt's output does not verify:\n{}",
                    kir_ir::diag::render(&diags, "<kir opt output>", &stdout, false)
                )));
            }
        }
    }
    let checker = match filecheck::CheckerBuilder::new().text(source) {
        Ok(b) => b.finish(),
        Err(e) => {
            failures.push(Failure::file(format!("bad FileCheck directives: {e}")));
            return failures;
        }
    };
    if checker.is_empty() {
        failures.push(Failure::file("no FileCheck directives (`; check:` ...)"));
        return failures;
    }
    let text = format!("{stderr}{stdout}");
    match checker.explain(&text, filecheck::NO_VARIABLES) {
        Ok((true, _)) => {}
        Ok((false, explain)) => failures.push(Failure::file(format!(
            "FileCheck directives do not match what kir opt printed (stderr, then stdout):\n{text}\n--- explanation ---\n{explain}"
        ))),
        Err(e) => failures.push(Failure::file(format!("FileCheck: {e}"))),
    }
    failures
}

/// `; passes: P` / `; args: A` of an `optimize` file: at most one each.
fn option_lines<'a>(source: &'a str, key: &str, failures: &mut Vec<Failure>) -> Option<&'a str> {
    let mut found: Option<(usize, &str)> = None;
    for (n, l) in source.lines().enumerate() {
        let Some(v) = comment_of(l).and_then(|c| c.strip_prefix(key)) else { continue };
        match found {
            None => found = Some((n + 1, v.trim())),
            Some((first, _)) => {
                failures.push(Failure::at(n + 1, format!("a second `; {key}` line (the first is on line {first})")))
            }
        }
    }
    found.map(|(_, v)| v)
}
