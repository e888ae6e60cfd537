//! The kernel library is in canonical form (`kir fmt --check` is clean), and `kir fmt` reports a
//! non-canonical file with its first differing line and exit 1.

mod cli;
use cli::kir;

#[test]
fn kernel_library_is_canonical() {
    let mut files: Vec<String> = std::fs::read_dir("kernels")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "kir"))
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    assert!(files.len() >= 3);
    let mut args = vec!["fmt", "--check"];
    args.extend(files.iter().map(String::as_str));
    let (code, _, stderr) = kir(&args);
    assert_eq!(code, 0, "not canonical (run `kir fmt --write`):\n{stderr}");
}

#[test]
fn non_canonical_files_are_reported() {
    let dir = std::env::temp_dir().join(format!("kir-fmt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("messy.kir");
    std::fs::write(&path, "kernel @k(%n: u32) {\nentry:\n    %a = add.u32 %n, 1   ; one more\n  ret\n}\n").unwrap();
    let p = path.display().to_string();
    let (code, _, stderr) = kir(&["fmt", "--check", &p]);
    assert_eq!(code, 1);
    assert!(stderr.contains(&format!("{p}:3: not in canonical form")), "{stderr}");
    let (code, stdout, _) = kir(&["fmt", &p]);
    assert_eq!(code, 0);
    assert_eq!(stdout, "kernel @k(%n: u32) {\nentry:\n  %a = add.u32 %n, 1  ; one more\n  ret\n}\n");
    let (code, _, _) = kir(&["fmt", "--write", &p]);
    assert_eq!(code, 0);
    assert_eq!(kir(&["fmt", "--check", &p]).0, 0);
    std::fs::remove_dir_all(&dir).ok();
}
