//! Typed kernel bindings (`kir::build`, `kir::bind`) as a crate's build script and code use them:
//! the Rust type of every kind of parameter, names that are not Rust identifiers, what cannot be
//! bound, a broken file's error as the build prints it, the files a build watches; then the
//! bindings of every file in `kernels/` (and one with every scalar type) compiled with `rustc`
//! against the `kir` library this test was built with, and run from a directory where no `.kir`
//! file exists (the module is the one embedded at build time). Also: the example crate
//! `examples/rust-app` is a workspace member (so `cargo test --workspace`, which CI runs, builds
//! and tests it) and names no crate but `kir`.

use kir::api::ErrorKind;
use kir::build::{failure_message, Bindings};
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kir-bindings-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A kernel taking every scalar type, a buffer it reads, one it writes and one it ignores.
const ALL_TYPES: &str = "\
kernel @all(%p: pred, %a: u8, %b: s8, %c: u16, %d: s16, %e: u32, %f: s32, %g: u64, %h: s64, %i: f16, %j: bf16, %k: f32, %l: f64, %src: ptr<global, f16>, %dst: ptr<global, f64>, %unused: ptr<global, u8>) {
entry:
  %v = load %src[0]
  %w = cvt.f64.f16 %v
  %x = add.f64 %w, %l
  %y = select.f64 %p, %x, 0.0
  store %dst[0], %y
  ret
}
";

fn generated(dir: &Path, file: &str, text: &str) -> String {
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    Bindings::new(&path).out_dir(dir).source().unwrap().1
}

#[test]
fn every_parameter_kind_has_its_rust_type() {
    let dir = scratch("types");
    let rs = generated(&dir, "all_types.kir", ALL_TYPES);
    let signature = "            engine: &E,
            grid: impl ::core::convert::Into<::kir::api::Dim3>,
            block: impl ::core::convert::Into<::kir::api::Dim3>,
            p: bool,
            a: u8,
            b: i8,
            c: u16,
            d: i16,
            e: u32,
            f: i32,
            g: u64,
            h: i64,
            i: ::kir::api::f16,
            j: ::kir::api::bf16,
            k: f32,
            l: f64,
            src: &E::Slice<::kir::api::f16>,
            dst: &mut E::Slice<f64>,
            unused: &E::Slice<u8>,
        ) -> ::core::result::Result<(), ::kir::api::Error> {";
    assert!(rs.contains(signature), "{rs}");
    assert!(rs.contains("pub mod all_types {") && rs.contains("    pub mod all {"), "{rs}");
    assert!(rs.contains("/// - `src`: `%src: ptr<global, f16>`, read only\n"), "{rs}");
    assert!(rs.contains("/// - `dst`: `%dst: ptr<global, f64>`, written\n"), "{rs}");
    assert!(rs.contains("/// - `unused`: `%unused: ptr<global, u8>`, not accessed\n"), "{rs}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn names_that_are_not_rust_identifiers_are_made_into_ones() {
    let dir = scratch("names");
    let rs = generated(
        &dir,
        "2d.kir",
        "kernel @type(%self: u32, %grid: u32, %0: u32, %a.b: u32, %a_b: u32) {\nentry:\n  ret\n}\n",
    );
    assert!(rs.contains("pub mod _2d {") && rs.contains("    pub mod type_ {"), "{rs}");
    assert!(rs.contains("pub const NAME: &str = \"type\";"), "{rs}");
    assert!(
        rs.contains(
            "self_: u32,\n            grid_: u32,\n            _0: u32,\n            a_b: u32,\n            a_b_: u32,"
        ),
        "{rs}"
    );
    // Two kernels whose Rust names collide.
    let path = dir.join("twins.kir");
    std::fs::write(&path, "kernel @x.y() {\nentry:\n  ret\n}\nkernel @x_y() {\nentry:\n  ret\n}\n").unwrap();
    let err = Bindings::new(&path).out_dir(&dir).generate().unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: two kernels are bound to the Rust module `x_y` (kernel names differ only in `.` vs `_`); rename one",
            path.display()
        )
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// What a build script prints for a file that fails `kir check`: the diagnostic as `kir check`
/// renders it, located in the file, then what happened; and nothing is written.
#[test]
fn a_file_that_fails_kir_check_is_an_error_with_its_diagnostic() {
    let dir = scratch("broken");
    let path = dir.join("bad.kir");
    std::fs::write(&path, "kernel @k(%n: u32) {\nentry:\n  br %n, a, a\na:\n  ret\n}\n").unwrap();
    let err = Bindings::new(&path).out_dir(&dir).generate().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Check);
    let shown = path.display();
    assert_eq!(
        failure_message(&err),
        format!(
            "error: the condition of `br` must be a `pred`, but `%n` has type `u32`
  ┌─ {shown}:3:3
  │
1 │ kernel @k(%n: u32) {{
  │           -- `%n` is defined here as `u32`
2 │ entry:
3 │   br %n, a, a
  │   ^^^^^^^^^^^ condition has type `u32`
  │
  = compare it first: `%c = ne.u32 %n, 0`
  = in kernel `@k`, block `entry`
error: kir::build: does not pass `kir check`; no bindings were generated"
        )
    );
    assert!(!dir.join("bad.rs").exists());
    // A kernel whose parameter a launch cannot pass.
    let shared = dir.join("shared.kir");
    std::fs::write(&shared, "kernel @k(%s: ptr<shared, f32>) {\nentry:\n  ret\n}\n").unwrap();
    let err = Bindings::new(&shared).out_dir(&dir).generate().unwrap_err();
    assert_eq!(
        failure_message(&err),
        format!(
            "error: {}: kernel @k: parameter `%s: ptr<shared, f32>` is a shared-memory pointer, which a launch cannot pass\nerror: kir::build: cannot be bound; no bindings were generated",
            shared.display()
        )
    );
    // A missing file.
    let err = Bindings::new(dir.join("nope.kir")).out_dir(&dir).generate().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(failure_message(&err).ends_with("error: kir::build: cannot be read; no bindings were generated"));
    std::fs::remove_dir_all(&dir).ok();
}

/// The files to watch are the file and its imports; an unchanged output is not rewritten (so
/// cargo does not recompile the crate); outside a build script there is no `OUT_DIR`.
#[test]
fn a_build_watches_the_file_and_its_imports_and_rewrites_only_changes() {
    let dir = scratch("watch");
    let g = Bindings::new("kernels/softmax.kir").out_dir(&dir).generate().unwrap();
    assert_eq!(g.inputs, [PathBuf::from("kernels/softmax.kir"), PathBuf::from("kernels/lib/reduce.kir")]);
    assert_eq!(g.path, dir.join("softmax.rs"));
    let first = std::fs::metadata(&g.path).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    Bindings::new("kernels/softmax.kir").out_dir(&dir).generate().unwrap();
    assert_eq!(std::fs::metadata(&g.path).unwrap().modified().unwrap(), first);
    let renamed = Bindings::new("kernels/softmax.kir").module_name("norm").out_dir(&dir).generate().unwrap();
    assert!(std::fs::read_to_string(&renamed.path).unwrap().contains("\npub mod norm {\n"));
    if std::env::var_os("OUT_DIR").is_none() {
        let err = Bindings::new("kernels/softmax.kir").generate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "OUT_DIR is not set: call kir::build from a build script, or give Bindings::out_dir"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The `kir` library this test binary was linked with: the newest `libkir-*.rlib` next to it that
/// is not newer than it (any of them holds the same `kir::bind` and `kir::api`).
fn kir_rlib() -> (PathBuf, PathBuf) {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    let time = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).unwrap();
    let limit = time(&exe);
    let rlib = std::fs::read_dir(&deps)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("libkir-") && n.ends_with(".rlib")
        })
        .filter(|p| time(p) <= limit)
        .max_by_key(|p| time(p))
        .unwrap_or_else(|| panic!("no libkir-*.rlib in {}", deps.display()));
    (rlib, deps)
}

/// Every library kernel's bindings compile; launched from a directory without the `.kir` files,
/// they run the embedded module (imports included) and write back only what the kernel writes.
#[test]
fn the_bindings_of_every_library_file_compile_and_run_from_anywhere() {
    let dir = scratch("library");
    let mut files: Vec<PathBuf> = std::fs::read_dir("kernels")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "kir"))
        .collect();
    files.sort();
    assert!(files.len() >= 12, "{files:?}");
    std::fs::write(dir.join("all_types.kir"), ALL_TYPES).unwrap();
    files.push(dir.join("all_types.kir"));
    let mut includes = String::new();
    for f in &files {
        let g = Bindings::new(f).out_dir(&dir).generate().unwrap_or_else(|e| panic!("{}", failure_message(&e)));
        includes.push_str(&format!("include!({:?});\n", g.path.display().to_string()));
    }
    let main = format!(
        "{includes}
use kir::bind::Interpreter;
use kir::api::f16;
fn main() {{
    let cpu = Interpreter::new();
    let (x, dy, mut dx) = (vec![1.0f32, -2.0, 3.0], vec![10.0f32, 20.0, 30.0], vec![0.0f32; 3]);
    relu_backward::relu_backward::launch(&cpu, 1, 32, &x, &dy, &mut dx, 3).unwrap();
    assert_eq!(dx, [10.0, 0.0, 30.0]);
    // softmax.kir imports lib/reduce.kir: both are embedded.
    let (xs, mut ys) = (vec![0.0f32; 7], vec![0.0f32; 7]);
    softmax::softmax_rows::launch(&cpu, 1, 32, &xs, &mut ys, 1, 7).unwrap();
    assert!(ys.iter().all(|v| (v - 1.0 / 7.0).abs() < 1e-6), \"{{ys:?}}\");
    let src = vec![f16::from_f32(1.5)];
    let (mut dst, unused) = (vec![0.0f64; 1], vec![7u8; 2]);
    all_types::all::launch(&cpu, 1, 1, true, 1, -1, 2, -2, 3, -3, 4, -4, f16::ONE, kir::api::bf16::ONE, 1.0, 0.25, &src, &mut dst, &unused).unwrap();
    assert_eq!(dst, [1.75]);
    println!(\"ok: {{}}\", softmax::SOURCE.file());
}}
"
    );
    std::fs::write(dir.join("main.rs"), main).unwrap();
    let (rlib, deps) = kir_rlib();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let o = Command::new(rustc)
        .args(["--edition", "2021", "--crate-type", "bin", "--color", "never", "-o"])
        .arg(dir.join("app"))
        .arg("--extern")
        .arg(format!("kir={}", rlib.display()))
        .arg("-L")
        .arg(format!("dependency={}", deps.display()))
        .arg(dir.join("main.rs"))
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let run = Command::new(dir.join("app")).current_dir(&elsewhere).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(String::from_utf8_lossy(&run.stdout), "ok: kernels/softmax.kir\n");
    std::fs::remove_dir_all(&dir).ok();
}

/// The example crate is built and tested by `cargo test --workspace` (a member), and is a
/// downstream crate's code: it names no kir crate but `kir`, and no cudarc or half of its own.
#[test]
fn the_example_crate_is_a_workspace_member_using_only_kir() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = manifest.lines().find(|l| l.starts_with("members = ")).unwrap();
    assert!(members.contains("\"examples/rust-app\""), "{members}");
    let app = root.join("examples/rust-app");
    let deps = std::fs::read_to_string(app.join("Cargo.toml")).unwrap();
    assert!(deps.contains("[dependencies]\nkir = { path = \"../../kir\" }\n"), "{deps}");
    let mut seen = 0;
    let mut stack = vec![app.join("src"), app.join("tests"), app.join("build.rs")];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if p.extension().and_then(|x| x.to_str()) != Some("rs") {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for krate in ["kir_ir", "kir_passes", "kir_backend_ptx", "kir_interp", "kir_harness", "cudarc", "half::"] {
                assert!(!code.contains(krate), "{}:{}: names `{krate}`: {line}", p.display(), i + 1);
            }
        }
    }
    assert!(seen >= 5, "{seen} files");
}
