//! Matching a file's diagnostics with its `; error:` / `; warning:` annotations: the rules of the
//! `verify` kind, which the `fault` kind shares (see the `filetest` module's header).
//!
//! Guarantees: the matching is the largest one-to-one matching (same severity, same line, message
//! containing the text), so that which annotation takes which of two similar diagnostics never
//! makes a correct file fail; every unmatched annotation and every unmatched error or warning is
//! a failure with its line.

use super::subtest::{severity_name, Failure, Verified};
use crate::directives::Annotation;
use kir_ir::diag::{render_map, Diagnostic, Severity, SourceMap};
use std::path::Path;

/// Matches `diagnostics` (of the load of `path`, whose text is `source`) with the annotations:
/// every error and warning expected by one, every annotation met by one (the `verify` rules, which
/// the `fault` kind shares).
pub fn expect_diagnostics(
    path: &Path,
    source: &str,
    diagnostics: Vec<Diagnostic>,
    sources: SourceMap,
    annotations: &[Annotation],
) -> (Verified, Vec<Failure>) {
    let rendered = render_map(&diagnostics, &sources, false);
    let mut failures = Vec::new();
    let imports = import_lines(path, source, &sources);
    // The errors and warnings with the line of the tested file each is about.
    let mut located: Vec<(&Diagnostic, usize)> = Vec::new();
    for d in diagnostics.iter().filter(|d| d.severity != Severity::Note) {
        let what = format!("{} `{}`", severity_name(d.severity), d.message);
        let Some(span) = d.span().filter(|s| !s.is_dummy()) else {
            failures.push(Failure::file(format!("{what} has no location")));
            continue;
        };
        let Some((file, range)) = sources.locate(span) else {
            failures.push(Failure::file(format!("{what} points into no file of the load")));
            continue;
        };
        if file == 0 {
            located.push((d, kir_ir::span::line_col(source, range.start).0));
            continue;
        }
        match imports.iter().rev().find(|(f, _)| *f <= file) {
            Some((_, line)) => located.push((d, *line)),
            None => failures.push(Failure::file(format!(
                "{what} is in `{}`, which no `import` line of this file loads",
                sources.files[file].name
            ))),
        }
    }
    let matches = match_annotations(annotations, &located);
    for (a, m) in annotations.iter().zip(&matches.annotation_to_diag) {
        if m.is_none() {
            let on = if a.target_line == a.line { String::new() } else { format!(" on line {}", a.target_line) };
            failures.push(Failure::at(
                a.line,
                format!("expected {}{on} containing `{}`, but there is none", severity_name(a.severity), a.text),
            ));
        }
    }
    for ((d, line), matched) in located.iter().zip(&matches.diag_matched) {
        if !matched {
            failures.push(Failure::at(
                *line,
                format!(
                    "unexpected {} (no `; {}:` annotation matches it): {}",
                    severity_name(d.severity),
                    severity_name(d.severity),
                    d.message
                ),
            ));
        }
    }
    (Verified { diagnostics, sources, rendered }, failures)
}

/// The line of the tested file (file 0 of `sources`) a diagnostic is located on, if it is.
pub fn diagnostic_line(source: &str, sources: &SourceMap, d: &Diagnostic) -> Option<usize> {
    let span = d.span().filter(|s| !s.is_dummy())?;
    match sources.locate(span)? {
        (0, range) => Some(kir_ir::span::line_col(source, range.start).0),
        _ => None,
    }
}

/// For each file of the load that a line `import "P"` of the tested file loads directly: its
/// index in `sources` and that line, in load order. (The loader loads files depth first, so the
/// files after a direct import's file, up to the next one, are what it loaded in turn.)
fn import_lines(path: &Path, source: &str, sources: &SourceMap) -> Vec<(usize, usize)> {
    let dir = path.parent().unwrap_or(Path::new(""));
    let canonical = |p: &Path| std::fs::canonicalize(p).ok();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (n, l) in source.lines().enumerate() {
        let Some(rest) = l.trim_start().strip_prefix("import") else { continue };
        let Some(quoted) = rest.trim_start().strip_prefix('"') else { continue };
        let Some((target, _)) = quoted.split_once('"') else { continue };
        let Some(want) = canonical(&dir.join(target)) else { continue };
        let found = sources
            .files
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, f)| canonical(Path::new(&f.name)).as_ref() == Some(&want));
        if let Some((i, _)) = found {
            out.push((i, n + 1));
        }
    }
    out.sort();
    out
}

struct Matching {
    annotation_to_diag: Vec<Option<usize>>,
    diag_matched: Vec<bool>,
}

/// The largest one-to-one matching of annotations with diagnostics (same severity, same line,
/// message containing the text), so that which annotation takes which of two similar diagnostics
/// never makes a correct file fail.
fn match_annotations(annotations: &[Annotation], diags: &[(&Diagnostic, usize)]) -> Matching {
    let fits = |a: &Annotation, (d, line): &(&Diagnostic, usize)| {
        a.severity == d.severity && a.target_line == *line && d.message.contains(&a.text)
    };
    let mut diag_owner: Vec<Option<usize>> = vec![None; diags.len()];
    // Kuhn's augmenting paths (the sizes are a file's annotations).
    fn augment(a: usize, seen: &mut [bool], owner: &mut [Option<usize>], fits: &dyn Fn(usize, usize) -> bool) -> bool {
        for d in 0..owner.len() {
            if seen[d] || !fits(a, d) {
                continue;
            }
            seen[d] = true;
            let free = match owner[d] {
                None => true,
                Some(other) => augment(other, seen, owner, fits),
            };
            if free {
                owner[d] = Some(a);
                return true;
            }
        }
        false
    }
    let fit = |a: usize, d: usize| fits(&annotations[a], &diags[d]);
    for a in 0..annotations.len() {
        let mut seen = vec![false; diags.len()];
        augment(a, &mut seen, &mut diag_owner, &fit);
    }
    let mut annotation_to_diag = vec![None; annotations.len()];
    for (d, o) in diag_owner.iter().enumerate() {
        if let Some(a) = o {
            annotation_to_diag[*a] = Some(d);
        }
    }
    Matching { annotation_to_diag, diag_matched: diag_owner.iter().map(Option::is_some).collect() }
}
