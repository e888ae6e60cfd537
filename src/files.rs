//! Writing output files safely.
//!
//! Guarantees:
//! - [`write_atomically`] writes through a temporary file in the target's directory and a rename:
//!   a reader never sees half a file, and a failed write leaves the old file as it was (the
//!   temporary is removed).
//! - [`same_file`] says whether two paths name one file, also when the second does not exist yet
//!   (its directory is resolved, so `./a/../b.npy` and `b.npy` are the same), following links.

use std::path::{Path, PathBuf};

/// `path` made absolute and free of `.`, `..` and links as far as it exists: the file itself when it
/// exists, else its directory joined with its name; `None` when even the directory does not exist.
fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Some(p);
    }
    let name = path.file_name()?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::canonicalize(dir).ok().map(|d| d.join(name))
}

/// Whether `a` and `b` name the same file (see the module header).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (resolved(a), resolved(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Writes `bytes` to `path` atomically (see the module header); the error names the path.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| format!("`{}` names no file", path.display()))?;
    let tmp = dir.join(format!(".{name}.kir-tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_file_resolves_dots_and_missing_files() {
        let d = std::env::temp_dir().join(format!("kir-files-{}", std::process::id()));
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("a.npy"), b"x").unwrap();
        assert!(same_file(&d.join("a.npy"), &d.join("sub/../a.npy")));
        assert!(same_file(&d.join("new.npy"), &d.join("sub/../new.npy")));
        assert!(!same_file(&d.join("a.npy"), &d.join("b.npy")));
        write_atomically(&d.join("a.npy"), b"yz").unwrap();
        assert_eq!(std::fs::read(d.join("a.npy")).unwrap(), b"yz");
        let e = write_atomically(&d.join("missing/dir/a.npy"), b"1").unwrap_err();
        assert!(e.starts_with("cannot write ") && e.contains("missing/dir/a.npy"), "{e}");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 2, "no temporary left behind");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
