//! Functions and imports through the command line: what a user of `func`, `call` and `import`
//! sees from `kir check`, `kir run`, `kir fmt`, `kir opt` and `kir test`.

mod cli;
use cli::{kir, kir_in_dir};
use std::path::{Path, PathBuf};

/// A fresh directory under the target dir, removed first if a previous run left it.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("functions_cli_{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("lib")).unwrap();
    d
}

const LIB: &str = "\
; doubles and adds one
func @twice_plus(%x: u32, %c: u32) -> u32 {
entry:
  %y = add.u32 %x, %x
  %z = add.u32 %y, %c
  ret %z
}

; stores only for even lanes: divergence and early return inside a function
func @put_even(%p: ptr<global, u32>, %i: u32, %v: u32) {
entry:
  %odd = and.u32 %i, 1
  %is_odd = ne.u32 %odd, 0
  br %is_odd, skip, put
skip:
  ret
put:
  store %p[%i], %v
  ret
}
";

const MAIN: &str = "\
import \"lib/util.kir\"

; out[i] = 2i + 3 for even i, untouched for odd i
kernel @k(%out: ptr<global, u32>) {
entry:
  %t = tid.x
  %v = call @twice_plus(%t, 3)
  call @put_even(%out, %t, %v)
  ret
}
";

fn project(name: &str) -> PathBuf {
    let d = scratch(name);
    std::fs::write(d.join("lib/util.kir"), LIB).unwrap();
    std::fs::write(d.join("main.kir"), MAIN).unwrap();
    d
}

#[test]
fn a_kernel_calling_imported_functions_checks_and_runs() {
    let d = project("run");
    let (code, _, err) = kir_in_dir(&d, &["check", "main.kir"], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = kir_in_dir(
        &d,
        &["run", "main.kir", "--grid", "1", "--block", "8", "--arg", "out=zeros:u32:8", "--print", "out"],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("[0]   3   0   7   0  11   0  15   0"), "{out}");
}

#[test]
fn kir_test_runs_the_kernel_as_written_after_inlining_and_in_the_ptx_emulator() {
    let d = project("test");
    let with_run = MAIN.replace(
        "kernel @k(",
        "; run: @k grid(1) block(8) out=zeros:u32:8\n; expect: @k out[0..8] == [3, 0, 7, 0, 11, 0, 15, 0]\nkernel @k(",
    );
    std::fs::write(d.join("main.kir"), with_run).unwrap();
    let (code, out, err) = kir_in_dir(&d, &["test", "main.kir"], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("ok    main.kir:"), "{out}");
    assert!(out.contains("interp") && out.contains("ptx-emu"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
}

#[test]
fn fmt_keeps_imports_and_prints_only_this_files_functions() {
    let d = project("fmt");
    let (code, out, err) = kir_in_dir(&d, &["fmt", "main.kir"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("import \"lib/util.kir\"\n\n"), "{out}");
    assert!(!out.contains("func @twice_plus"), "imported functions are not copied in:\n{out}");
    assert_eq!(out, MAIN, "the file is already formatted");
    let (code, out, err) = kir_in_dir(&d, &["fmt", "lib/util.kir"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, LIB, "a library of functions formats to itself, comments kept");
}

#[test]
fn opt_prints_a_module_that_stands_alone() {
    let d = project("opt");
    // Without `inline`: the calls stay, and the imported functions are printed with the kernel.
    let (code, out, err) = kir_in_dir(&d, &["opt", "main.kir", "--passes", "fold,dce"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("func @twice_plus(") && out.contains("call @put_even("), "{out}");
    assert!(!out.contains("import"), "{out}");
    std::fs::write(d.join("alone.kir"), &out).unwrap();
    let (code, _, err) = kir_in_dir(&d, &["check", "alone.kir"], &[]);
    assert_eq!(code, 0, "the printed module re-parses and checks on its own: {err}");
    // The default pipeline inlines: no call is left in the kernel.
    let (code, out, err) = kir_in_dir(&d, &["opt", "main.kir"], &[]);
    assert_eq!(code, 0, "{err}");
    let kernel = &out[out.find("kernel @k").expect("the kernel is printed")..];
    assert!(!kernel.contains("call "), "{out}");
}

#[test]
fn import_problems_are_located_errors_with_exit_code_1() {
    let d = scratch("bad_imports");
    std::fs::write(d.join("missing.kir"), "import \"lib/none.kir\"\n").unwrap();
    let (code, _, err) = kir_in_dir(&d, &["check", "missing.kir"], &[]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read imported file `lib/none.kir`") && err.contains("missing.kir:1:8"), "{err}");

    std::fs::write(d.join("lib/a.kir"), "import \"b.kir\"\n").unwrap();
    std::fs::write(d.join("lib/b.kir"), "import \"a.kir\"\n").unwrap();
    std::fs::write(d.join("cycle.kir"), "import \"lib/a.kir\"\n").unwrap();
    let (code, _, err) = kir_in_dir(&d, &["check", "cycle.kir"], &[]);
    assert_eq!(code, 1);
    assert!(err.contains("import cycle: lib/a.kir -> lib/b.kir -> lib/a.kir"), "{err}");

    // A directory, and a file that is not UTF-8, named by an import.
    std::fs::write(d.join("dir.kir"), "import \"lib\"\n").unwrap();
    let (code, _, err) = kir_in_dir(&d, &["check", "dir.kir"], &[]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot import `lib`: it is a directory") && err.contains("dir.kir:1:8"), "{err}");
    std::fs::write(d.join("lib/bin.kir"), [0xffu8, 0xfe, 0x00]).unwrap();
    std::fs::write(d.join("bin.kir"), "import \"lib/bin.kir\"\n").unwrap();
    let (code, _, err) = kir_in_dir(&d, &["check", "bin.kir"], &[]);
    assert_eq!(code, 1);
    assert!(err.contains("is not UTF-8"), "{err}");
}

#[test]
fn the_shipped_kernels_share_the_reductions_of_kernels_lib() {
    for f in ["softmax.kir", "rmsnorm.kir", "grad_clip.kir", "graph_grad_clip.kir", "quantize.kir"] {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels").join(f)).unwrap();
        assert!(text.contains("import \"lib/reduce.kir\""), "{f} imports the library");
        assert!(!text.contains("shfl.bfly"), "{f} no longer spells out a warp reduction");
        assert!(!text.contains("jmp tree(512)"), "{f} no longer spells out a tree reduction");
    }
    let (code, _, err) = kir(&["check", "kernels/lib/reduce.kir"]);
    assert_eq!(code, 0, "{err}");
}
