//! `; test: verify`: the file is loaded with its imports and checked as `kir check` checks it, and
//! its diagnostics are matched with its annotations ([`super::annotations`]).

use super::annotations::expect_diagnostics;
use super::subtest::{Directive, Env, Failure, FileTest, TestFile, Verified};
use crate::directives::Annotation;
use kir_ir::verify::check_keeping;

use std::path::Path;

/// The `verify` kind.
pub struct Verify;

impl FileTest for Verify {
    fn reads(&self) -> &'static [Directive] {
        &[Directive::Annotations]
    }

    fn run(&self, file: &TestFile, _env: &mut Env) -> (Vec<Failure>, Option<Verified>) {
        let (v, f) = verify(file.path, file.source, &file.directives.annotations);
        (f, Some(v))
    }
}

/// The `verify` kind: load, check, and match the diagnostics with the annotations.
pub fn verify(path: &Path, source: &str, annotations: &[Annotation]) -> (Verified, Vec<Failure>) {
    let (diagnostics, sources) = match kir_ir::text::load::load_source(path, source.to_string()) {
        Ok(l) => (check_keeping(l.module).0, l.sources),
        Err(e) => (e.diagnostics, e.sources),
    };
    expect_diagnostics(path, source, diagnostics, sources, annotations)
}
