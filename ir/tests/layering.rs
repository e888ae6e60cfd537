//! The modules of `kir-ir` import each other in no circle, at two grains:
//!
//! - files: no chain of `crate::` paths leads from a file back to itself (a module's `mod.rs`
//!   declaring its children is not an import);
//! - concerns: the top-level modules (`text`, `verify`, `analysis`, `ir`, `graph`, ...) form a
//!   DAG, so that, for instance, the text format never reaches into the verifier that reports its
//!   errors through it.
//!
//! References are read from the source: every `crate::a::b` path outside comments and outside a
//! `#[cfg(test)]` module, plus `super::` paths resolved against the file's own module. A failure
//! prints the circle, file by file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, as (module path, file).
fn modules(dir: &Path, prefix: &[String], out: &mut Vec<(Vec<String>, PathBuf)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            let mut sub = prefix.to_vec();
            sub.push(stem);
            modules(&p, &sub, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let mut path = prefix.to_vec();
            if stem != "mod" && stem != "lib" {
                path.push(stem);
            }
            out.push((path, p));
        }
    }
}

/// The file's code without comments and without its `#[cfg(test)]` modules.
fn code(src: &str) -> String {
    let mut out = String::new();
    let mut skip_depth: Option<i64> = None;
    let mut depth = 0i64;
    let mut cfg_test = false;
    for line in src.lines() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        let line = match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        };
        if t.starts_with("#[cfg(test)]") {
            cfg_test = true;
            continue;
        }
        let opens = line.matches('{').count() as i64;
        let closes = line.matches('}').count() as i64;
        if cfg_test && skip_depth.is_none() && t.starts_with("mod ") {
            skip_depth = Some(depth);
        }
        cfg_test = false;
        depth += opens - closes;
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The `::`-separated identifier paths that start at `start` in `code` (`crate::a::b::C`).
fn paths_after(code: &str, start: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(start) {
        let before = rest[..i].chars().last();
        rest = &rest[i + start.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let mut segs = Vec::new();
        let mut r = rest;
        loop {
            let n = r.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(r.len());
            if n == 0 {
                break;
            }
            segs.push(r[..n].to_string());
            r = &r[n..];
            match r.strip_prefix("::") {
                Some(x) => r = x,
                None => break,
            }
        }
        out.push(segs);
    }
    out
}

/// The known module a path lands in: the longest module path that prefixes it.
fn resolve(known: &BTreeSet<Vec<String>>, path: &[String]) -> Option<Vec<String>> {
    (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| known.contains(p))
}

fn name(m: &[String]) -> String {
    if m.is_empty() {
        "lib".into()
    } else {
        m.join("::")
    }
}

/// A cycle in `graph`, if any (as the nodes along it, the first repeated at the end).
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    for root in graph.keys() {
        if state.contains_key(root.as_str()) {
            continue;
        }
        let mut stack: Vec<(&str, Vec<&str>)> = vec![(root.as_str(), graph[root].iter().map(String::as_str).collect())];
        state.insert(root, 1);
        while let Some((node, next)) = stack.last_mut() {
            let node = *node;
            match next.pop() {
                Some(n) => match state.get(n) {
                    None => {
                        state.insert(n, 1);
                        let succ = graph.get(n).map(|s| s.iter().map(String::as_str).collect()).unwrap_or_default();
                        stack.push((n, succ));
                    }
                    Some(1) => {
                        let at = stack.iter().position(|(x, _)| *x == n).unwrap();
                        let mut cycle: Vec<String> = stack[at..].iter().map(|(x, _)| x.to_string()).collect();
                        cycle.push(n.to_string());
                        return Some(cycle);
                    }
                    _ => {}
                },
                None => {
                    state.insert(node, 2);
                    stack.pop();
                }
            }
        }
    }
    None
}

fn import_graphs() -> (BTreeMap<String, BTreeSet<String>>, BTreeMap<String, BTreeSet<String>>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut mods = Vec::new();
    modules(&src, &[], &mut mods);
    let known: BTreeSet<Vec<String>> = mods.iter().map(|(m, _)| m.clone()).collect();
    let mut files: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut concerns: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, file) in &mods {
        let text = code(&std::fs::read_to_string(file).unwrap());
        let mut targets: Vec<Vec<String>> = paths_after(&text, "crate::");
        let is_mod_file = file.file_name().is_some_and(|f| f == "mod.rs" || f == "lib.rs");
        for p in paths_after(&text, "super::") {
            // `super` of `a::b` (a file) is `a`; of `a/mod.rs` (module `a`) it is the parent of `a`.
            let mut base = m.clone();
            if !is_mod_file || !base.is_empty() {
                base.pop();
            }
            base.extend(p);
            targets.push(base);
        }
        let from = name(m);
        files.entry(from.clone()).or_default();
        for t in targets {
            let Some(to) = resolve(&known, &t) else { continue };
            // The crate root and a module's own children are not imports of it.
            if to.is_empty() || to == *m || to.starts_with(m) {
                continue;
            }
            files.get_mut(&from).unwrap().insert(name(&to));
            let (cf, ct) = (m.first().cloned().unwrap_or_default(), to[0].clone());
            if !cf.is_empty() && cf != ct {
                concerns.entry(cf).or_default().insert(ct);
            }
        }
    }
    (files, concerns)
}

#[test]
fn ir_files_import_each_other_in_no_circle() {
    let (files, _) = import_graphs();
    assert!(files.len() > 20, "found the modules of ir/src: {:?}", files.keys());
    assert!(files["text::parse"].contains("ir"), "the reader sees `crate::` imports: {:?}", files["text::parse"]);
    if let Some(c) = find_cycle(&files) {
        panic!("ir/src modules import each other in a circle: {}", c.join(" -> "));
    }
}

#[test]
fn ir_concerns_form_a_dag() {
    let (_, concerns) = import_graphs();
    if let Some(c) = find_cycle(&concerns) {
        panic!("ir/src top-level modules import each other in a circle: {}", c.join(" -> "));
    }
    // The layering the architecture promises: the text format and the data model never reach
    // into verification or analyses.
    for (from, to) in [("text", "verify"), ("text", "analysis"), ("ir", "text"), ("ir", "verify"), ("graph", "text")] {
        assert!(
            !concerns.get(from).is_some_and(|s| s.contains(to)),
            "`{from}` imports `{to}`: {:?}",
            concerns.get(from)
        );
    }
}

#[test]
fn the_reader_finds_a_planted_circle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    g.entry("d".into()).or_default().insert("a".into());
    let c = find_cycle(&g).expect("a -> b -> c -> a");
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4);
    assert_eq!(
        code("use crate::a;\n// crate::b\n#[cfg(test)]\nmod tests {\n    use crate::c;\n}\nfn f() {}\n"),
        "use crate::a;\nfn f() {}\n"
    );
    assert_eq!(paths_after("x crate::a::B; mycrate::z crate::c", "crate::"), vec![vec!["a", "B"], vec!["c"]]);
}
