//! Writing output files safely.
//!
//! Guarantees:
//! - [`write_atomically`] writes through a temporary file in the target's directory and a rename:
//!   a reader never sees half a file, and a failed write leaves the old file as it was (the
//!   temporary is removed).
//! - [`read_source`] reads a source file as UTF-8 text: never a FIFO or device (which could block
//!   or never end), and invalid UTF-8 is an error located at `LINE:COL` of the first bad byte.
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

/// A source file's text, or why it cannot be read, starting with the path (`PATH:LINE:COL: ...`
/// for invalid UTF-8, `PATH: ...` otherwise).
pub fn read_source(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?;
    if !meta.is_file() {
        let what = if meta.is_dir() { "is a directory" } else { "not a regular file (a FIFO, socket or device)" };
        return Err(format!("{shown}: {what}"));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{shown}: {e}"))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        // Columns count characters, as the diagnostics do; the text before `at` is valid UTF-8.
        let (line, col) = kir_ir::span::line_col(std::str::from_utf8(&bytes[..at]).unwrap_or(""), at);
        format!(
            "{shown}:{line}:{col}: not valid UTF-8 (byte 0x{:02x} at offset {at}); .kir files are UTF-8 text",
            bytes[at]
        )
    })
}

/// Whether `a` and `b` name the same file (see the module header).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (resolved(a), resolved(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Writes `bytes` to `path` atomically (see the module header); the error names the path. An
/// existing file keeps its permissions, and a symbolic link is followed (its target is replaced,
/// not the link).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let shown = path;
    let target = std::fs::canonicalize(path).ok();
    let path = target.as_deref().unwrap_or(path);
    let old_permissions = std::fs::metadata(path).ok().map(|m| m.permissions());
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| format!("`{}` names no file", path.display()))?;
    let tmp = dir.join(format!(".{name}.kir-tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", shown.display())
    })?;
    if let Some(p) = old_permissions {
        let _ = std::fs::set_permissions(&tmp, p);
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", shown.display())
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

    #[test]
    fn invalid_utf8_is_located_by_line_and_column() {
        let d = std::env::temp_dir().join(format!("kir-files-utf8-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("a.kir"), b"kernel @k() {\nentry:\n  \xc3\xa9\xff ret\n}\n").unwrap();
        assert_eq!(
            read_source(&d.join("a.kir")).unwrap_err(),
            format!(
                "{}:3:4: not valid UTF-8 (byte 0xff at offset 25); .kir files are UTF-8 text",
                d.join("a.kir").display()
            )
        );
        assert_eq!(read_source(&d).unwrap_err(), format!("{}: is a directory", d.display()));
        std::fs::write(d.join("ok.kir"), "x").unwrap();
        assert_eq!(read_source(&d.join("ok.kir")).unwrap(), "x");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_and_permissions_kept() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        let d = std::env::temp_dir().join(format!("kir-files-link-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("real.kir"), "old").unwrap();
        std::fs::set_permissions(d.join("real.kir"), std::fs::Permissions::from_mode(0o600)).unwrap();
        symlink("real.kir", d.join("link.kir")).unwrap();
        write_atomically(&d.join("link.kir"), b"new").unwrap();
        assert!(std::fs::symlink_metadata(d.join("link.kir")).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(d.join("real.kir")).unwrap(), "new");
        assert_eq!(std::fs::metadata(d.join("real.kir")).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
