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
//! - Every file and problem has a key ([`Walk::key`], [`Problem::key`]) that names it the same
//!   way whatever else the walk finds: its path relative to the directory argument it was found
//!   under, components joined by `/` (`lib/softmax.kir` under `kernels/`), or, for a path given
//!   explicitly, its file name (so `kir test kernels/x.kir` and `kir test kernels/` give
//!   `x.kir` the same key). [`Walk::retain_keys`] keeps the files and problems of some keys:
//!   `kir test --partition` ([`crate::shard`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Something under the paths that could not be tested, with why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    pub why: String,
    /// Its key (see the module header).
    pub key: String,
}

/// The files to test and the problems met on the way.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walk {
    pub files: Vec<PathBuf>,
    pub problems: Vec<Problem>,
    /// `keys[i]` is the key of `files[i]`.
    keys: Vec<String>,
}

impl Walk {
    /// The key of `files[i]` (see the module header).
    pub fn key(&self, i: usize) -> &str {
        &self.keys[i]
    }

    /// Keeps the files and problems whose key `keep` accepts, in their order.
    pub fn retain_keys(&mut self, keep: impl Fn(&str) -> bool) {
        let (mut files, mut keys) = (Vec::new(), Vec::new());
        for (f, k) in self.files.drain(..).zip(self.keys.drain(..)) {
            if keep(&k) {
                files.push(f);
                keys.push(k);
            }
        }
        (self.files, self.keys) = (files, keys);
        self.problems.retain(|p| keep(&p.key));
    }
}

/// The key of `path`, met under the argument `root`.
fn key_of(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => {
            rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
        }
        _ => path.file_name().map_or_else(|| path.to_string_lossy(), |n| n.to_string_lossy()).into_owned(),
    }
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
                    walk.problems.push(Problem { why: not_a_file(&path), key: key_of(root, &path), path });
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
                        let key = key_of(root, &path);
                        walk.problems.push(Problem { path, why: format!("cannot read the directory: {e}"), key });
                        continue;
                    }
                };
                let mut children = Vec::new();
                for entry in entries {
                    match entry {
                        Ok(e) => children.push(e.path()),
                        Err(e) => walk.problems.push(Problem {
                            path: path.clone(),
                            why: format!("cannot read an entry: {e}"),
                            key: key_of(root, &path),
                        }),
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
                    walk.keys.push(key_of(root, &path));
                    walk.files.push(path);
                }
            } else {
                let why = if explicit {
                    "not a regular file (a FIFO, socket or device): not read".to_string()
                } else {
                    not_a_file(&path)
                };
                walk.problems.push(Problem { key: key_of(root, &path), path, why });
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
        let w = kir_files(std::slice::from_ref(&d)).unwrap();
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
        let w = kir_files(std::slice::from_ref(&d)).unwrap();
        assert_eq!(w.files, vec![d.join("good.kir")]);
        assert_eq!(
            w.problems[0],
            Problem {
                path: d.join("broken.kir"),
                why: "dangling symbolic link (to missing.kir)".into(),
                key: "broken.kir".into()
            }
        );
        if made {
            assert_eq!(w.problems[1].path, fifo);
            assert!(w.problems[1].why.starts_with("not a regular file"), "{:?}", w.problems);
            let explicit = kir_files(std::slice::from_ref(&fifo)).unwrap();
            assert!(explicit.files.is_empty() && explicit.problems.len() == 1);
        }
        assert!(kir_files(&[d.join("nope")]).unwrap_err().ends_with("nope: no such file or directory"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn keys_are_paths_below_the_argument_or_the_name_of_an_explicit_file() {
        let d = scratch("keys");
        std::fs::create_dir_all(d.join("lib")).unwrap();
        std::fs::write(d.join("a.kir"), "").unwrap();
        std::fs::write(d.join("lib/b.kir"), "").unwrap();
        symlink("gone.kir", d.join("lib/c.kir")).unwrap();
        let w = kir_files(std::slice::from_ref(&d)).unwrap();
        assert_eq!((w.key(0), w.key(1), w.problems[0].key.as_str()), ("a.kir", "lib/b.kir", "lib/c.kir"));
        // Another argument spelling of the same directory, and the file given alone.
        let dotted = d.join(".").join("lib").join("..");
        let w2 = kir_files(&[dotted]).unwrap();
        assert_eq!((w2.key(0), w2.key(1)), ("a.kir", "lib/b.kir"));
        assert_eq!(kir_files(&[d.join("lib/b.kir")]).unwrap().key(0), "b.kir");
        // retain_keys keeps files and problems together, in order.
        let mut w3 = w.clone();
        w3.retain_keys(|k| k.starts_with("lib/"));
        assert_eq!(w3.files, vec![d.join("lib/b.kir")]);
        assert_eq!((w3.key(0), w3.problems.len()), ("lib/b.kir", 1));
        let mut w4 = w.clone();
        w4.retain_keys(|k| k == "a.kir");
        assert_eq!((w4.files.len(), w4.key(0), w4.problems.len()), (1, "a.kir", 0));
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
        assert_eq!(kir_files(std::slice::from_ref(&d)).unwrap().files, vec![p.join("x.kir")]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
