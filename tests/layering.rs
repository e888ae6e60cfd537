//! No crate of the workspace has an import circle among its modules, at two grains:
//!
//! - files: no chain of `crate::` paths leads from a file back to itself (a module's `mod.rs`
//!   declaring its children is not an import);
//! - concerns: the top-level modules of a crate (in kir-ir `text`, `verify`, `analysis`, `ir`,
//!   `graph`, ...) form a DAG, so that, for instance, the text format never reaches into the
//!   verifier that reports its errors through it.
//!
//! Every crate is checked by its own test, which names the crate and, on failure, prints the
//! circle file by file: kir-ir (`ir/src`, with the layering of its concerns that ARCHITECTURE.md
//! promises), kir-passes, kir-interp, kir-backend-ptx, kir-ptx-emu, kir-cuda-emu
//! (`ptx-emu/cuda-driver/src`), the `kir` library (`kir/src`), kir-harness (`harness/src`), and the
//! root package kir-cli's two crates: its library (`src/lib.rs` and its modules: the LSP, the CFG
//! pictures) and the `kir` binary (`src/main.rs` and `src/cmd/`).
//!
//! References are read from the source: every `crate::a::b` path outside comments and outside a
//! `#[cfg(test)]` module, plus `super::` paths resolved against the file's own module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, as (module path, file); at the top level only the entries that
/// `keep` accepts (a crate's root file is `lib.rs` or `main.rs`, module path `[]`).
fn modules(dir: &Path, prefix: &[String], keep: &dyn Fn(&str) -> bool, out: &mut Vec<(Vec<String>, PathBuf)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let file_name = p.file_name().unwrap().to_string_lossy().into_owned();
        if prefix.is_empty() && !keep(&file_name) {
            continue;
        }
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            let mut sub = prefix.to_vec();
            sub.push(stem);
            modules(&p, &sub, &|_| true, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let mut path = prefix.to_vec();
            let root = stem == "lib" || (stem == "main" && prefix.is_empty());
            if stem != "mod" && !root {
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

/// A crate's import graphs: module → modules it imports, and concern (top-level module) →
/// concerns it imports; with each module's file.
struct Graphs {
    files: BTreeMap<String, BTreeSet<String>>,
    concerns: BTreeMap<String, BTreeSet<String>>,
    paths: BTreeMap<String, PathBuf>,
}

/// The import graphs of the crate whose modules are the files under `src` (relative to the
/// workspace root) whose top-level entries `keep` accepts.
fn import_graphs(src: &str, keep: &dyn Fn(&str) -> bool) -> Graphs {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut mods = Vec::new();
    modules(&root.join(src), &[], keep, &mut mods);
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
    let paths = mods.iter().map(|(m, f)| (name(m), f.strip_prefix(root).unwrap_or(f).to_path_buf())).collect();
    Graphs { files, concerns, paths }
}

/// Checks both grains of one crate; on a circle, panics naming the crate and each file along it.
fn check_crate(krate: &str, g: &Graphs) {
    if let Some(c) = find_cycle(&g.files) {
        let steps: Vec<String> = c
            .iter()
            .map(|m| format!("  {m} ({})", g.paths.get(m).map(|p| p.display().to_string()).unwrap_or_default()))
            .collect();
        panic!("{krate}: modules import each other in a circle:\n{}", steps.join("\n  imports\n"));
    }
    if let Some(c) = find_cycle(&g.concerns) {
        panic!("{krate}: top-level modules import each other in a circle: {}", c.join(" -> "));
    }
}

/// Whole directories: every top-level entry.
fn all(_: &str) -> bool {
    true
}

/// kir-cli's library: `src/lib.rs` and its modules (not the binary's `main.rs` and `cmd/`).
fn cli_lib(entry: &str) -> bool {
    entry != "main.rs" && entry != "cmd"
}

/// The `kir` binary: `src/main.rs` and `src/cmd/`.
fn kir_bin(entry: &str) -> bool {
    entry == "main.rs" || entry == "cmd"
}

#[test]
fn kir_ir_has_no_import_circle() {
    let g = import_graphs("ir/src", &all);
    assert!(g.files.len() > 20, "found the modules of ir/src: {:?}", g.files.keys());
    assert!(g.files["text::parse"].contains("ir"), "the reader sees `crate::` imports: {:?}", g.files["text::parse"]);
    check_crate("kir-ir", &g);
    let concerns = g.concerns;
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
fn kir_passes_has_no_import_circle() {
    check_crate("kir-passes", &import_graphs("passes/src", &all));
}

#[test]
fn kir_interp_has_no_import_circle() {
    check_crate("kir-interp", &import_graphs("interp/src", &all));
}

#[test]
fn kir_backend_ptx_has_no_import_circle() {
    check_crate("kir-backend-ptx", &import_graphs("backend-ptx/src", &all));
}

#[test]
fn kir_ptx_emu_has_no_import_circle() {
    check_crate("kir-ptx-emu", &import_graphs("ptx-emu/src", &all));
}

#[test]
fn kir_cuda_emu_has_no_import_circle() {
    check_crate("kir-cuda-emu", &import_graphs("ptx-emu/cuda-driver/src", &all));
}

#[test]
fn kir_library_has_no_import_circle() {
    let g = import_graphs("kir/src", &all);
    assert!(g.files.contains_key("api"), "{:?}", g.files.keys());
    check_crate("kir (library)", &g);
}

#[test]
fn kir_harness_has_no_import_circle() {
    let g = import_graphs("harness/src", &all);
    assert!(g.files.contains_key("kir_test") && g.files.contains_key("fuzz"), "{:?}", g.files.keys());
    check_crate("kir-harness", &g);
}

#[test]
fn kir_cli_library_has_no_import_circle() {
    let g = import_graphs("src", &cli_lib);
    assert!(
        g.files.contains_key("lsp::server") && !g.files.keys().any(|m| m.starts_with("cmd")),
        "{:?}",
        g.files.keys()
    );
    check_crate("kir-cli (library)", &g);
}

#[test]
fn kir_binary_has_no_import_circle() {
    let g = import_graphs("src", &kir_bin);
    assert!(g.files.contains_key("cmd::run") && !g.files.contains_key("lsp"), "{:?}", g.files.keys());
    check_crate("kir-cli (the `kir` binary)", &g);
}

#[test]
fn a_planted_circle_fails_the_check() {
    let dir = std::env::temp_dir().join(format!("kir-layering-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src/x")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "mod a;\nmod x;\n").unwrap();
    std::fs::write(dir.join("src/a.rs"), "use crate::x::b::B;\n").unwrap();
    std::fs::write(dir.join("src/x/mod.rs"), "pub mod b;\n").unwrap();
    std::fs::write(dir.join("src/x/b.rs"), "pub struct B;\nfn f() -> super::super::a::A { todo!() }\nuse crate::a;\n")
        .unwrap();
    let src = dir.join("src");
    let g = import_graphs(src.to_str().unwrap(), &all);
    let err = std::panic::catch_unwind(|| check_crate("planted", &g)).expect_err("a -> x::b -> a is a circle");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.starts_with("planted: modules import each other in a circle"), "{msg}");
    assert!(msg.contains("src/a.rs") && msg.contains("src/x/b.rs"), "names the files: {msg}");
    std::fs::remove_dir_all(&dir).unwrap();
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
