//! Finding the `.kir` files under the paths given to `kir test`.
//!
//! Guarantees:
//! - Terminates on any directory tree: the walk is iterative (no recursion, whatever the depth) and
//!   enters each directory at most once, by its canonical path, so symbolic links that point back
//!   up the tree (or at each other) cannot make it loop.
//! - Tests each file at most once: two names for one file (a link and its target, a file reached
//!   through two linked directories) give one entry, the first in walk order.
//! - Never opens anything but regular files and directories: a dangling symbolic link, a FIFO, a
//!   socket or a device named `*.kir` is reported by its own name as a [`Problem`] and the walk goes
//!   on (a FIFO would block a reader forever).
//! - Deterministic order: directory entries sorted by name, depth first; explicit paths in the
//!   order given. A directory entry that cannot be read is a [`Problem`] too.
//! - An explicit path that does not exist is an error (`Err`), not a problem: it is a usage error.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Something under the paths that could not be tested, with why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    pub why: String,
}

/// The files to test and the problems met on the way.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walk {
    pub files: Vec<PathBuf>,
    pub problems: Vec<Problem>,
}

/// Why `path` (already known not to be a directory or a regular file) cannot be tested.
fn not_a_file(path: &Path) -> String {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(path) {
            Ok(t) => format!("dangling symbolic link (to {})", t.display()),
            Err(_) => "dangling symbolic link".to_string(),
        },
        Ok(_) => "not a regular file (a FIFO, socket or device): not read".to_string(),
        Err(e) => e.to_string(),
    }
}

/// The `.kir` files under `paths` (files given explicitly are taken whatever their extension).
pub fn kir_files(paths: &[PathBuf]) -> Result<Walk, String> {
    let mut walk = Walk::default();
    let mut seen_dirs: HashSet<PathBuf> = HashSet::new();
    let mut seen_files: HashSet<PathBuf> = HashSet::new();
    for root in paths {
        if std::fs::symlink_metadata(root).is_err() {
            return Err(format!("{}: no such file or directory", root.display()));
        }
        // Depth first, in name order: a stack of entries still to visit, reversed.
        let mut stack = vec![(root.clone(), true)];
        while let Some((path, explicit)) = stack.pop() {
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                Err(_) => {
                    walk.problems.push(Problem { why: not_a_file(&path), path });
                    continue;
                }
            };
            if meta.is_dir() {
                let Ok(canonical) = std::fs::canonicalize(&path) else { continue };
                if !seen_dirs.insert(canonical) {
                    continue; // a link back into the tree, or a second name for a directory
                }
                let entries = match std::fs::read_dir(&path) {
                    Ok(rd) => rd,
                    Err(e) => {
                        walk.problems.push(Problem { path, why: format!("cannot read the directory: {e}") });
                        continue;
                    }
                };
                let mut children = Vec::new();
                for entry in entries {
                    match entry {
                        Ok(e) => children.push(e.path()),
                        Err(e) => walk
                            .problems
                            .push(Problem { path: path.clone(), why: format!("cannot read an entry: {e}") }),
                    }
                }
                children.sort();
                for child in children.into_iter().rev() {
                    let is_dir = std::fs::metadata(&child).is_ok_and(|m| m.is_dir());
                    if is_dir || child.extension().is_some_and(|x| x == "kir") {
                        stack.push((child, false));
                    }
                }
            } else if meta.is_file() {
                let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
                if seen_files.insert(canonical) {
                    walk.files.push(path);
                }
            } else {
                let why = if explicit {
                    "not a regular file (a FIFO, socket or device): not read".to_string()
                } else {
                    not_a_file(&path)
                };
                walk.problems.push(Problem { path, why });
            }
        }
    }
    Ok(walk)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kir-walk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn links_into_cycles_and_second_names_are_walked_once() {
        let d = scratch("cycles");
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        std::fs::write(d.join("a/one.kir"), "").unwrap();
        std::fs::write(d.join("a/b/two.kir"), "").unwrap();
        std::fs::write(d.join("a/b/notes.txt"), "").unwrap();
        symlink("..", d.join("a/b/up")).unwrap();
        symlink("../..", d.join("a/b/upup")).unwrap();
        symlink("one.kir", d.join("a/same.kir")).unwrap();
        let w = kir_files(&[d.clone()]).unwrap();
        assert_eq!(w.files, vec![d.join("a/b/two.kir"), d.join("a/one.kir")]);
        assert!(w.problems.is_empty(), "{:?}", w.problems);
        // The same root twice: still once.
        assert_eq!(kir_files(&[d.clone(), d.join("a")]).unwrap().files.len(), 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn dangling_links_and_fifos_are_reported_by_name_and_the_walk_goes_on() {
        let d = scratch("odd");
        std::fs::write(d.join("good.kir"), "").unwrap();
        symlink("missing.kir", d.join("broken.kir")).unwrap();
        let fifo = d.join("pipe.kir");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        let w = kir_files(&[d.clone()]).unwrap();
        assert_eq!(w.files, vec![d.join("good.kir")]);
        assert_eq!(
            w.problems[0],
            Problem { path: d.join("broken.kir"), why: "dangling symbolic link (to missing.kir)".into() }
        );
        if made {
            assert_eq!(w.problems[1].path, fifo);
            assert!(w.problems[1].why.starts_with("not a regular file"), "{:?}", w.problems);
            let explicit = kir_files(&[fifo.clone()]).unwrap();
            assert!(explicit.files.is_empty() && explicit.problems.len() == 1);
        }
        assert!(kir_files(&[d.join("nope")]).unwrap_err().ends_with("nope: no such file or directory"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn deep_trees_do_not_recurse() {
        let d = scratch("deep");
        let mut p = d.clone();
        for _ in 0..200 {
            p = p.join("d");
        }
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("x.kir"), "").unwrap();
        assert_eq!(kir_files(&[d.clone()]).unwrap().files, vec![p.join("x.kir")]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
