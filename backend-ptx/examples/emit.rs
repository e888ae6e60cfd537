//! `cargo run -p kir-backend-ptx --example emit -- FILE [sm_XX]`: print the PTX of a .kir file
//! (a development aid; the CLI's `kir ptx` is the user-facing command).
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: emit FILE [sm_XX]");
        std::process::exit(2);
    };
    let sm = args.get(2).and_then(|s| kir_backend_ptx::SmVersion::from_name(s)).unwrap_or_default();
    let src = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {path}: {e}");
            std::process::exit(1);
        }
    };
    // With the functions it imports (relative to the file).
    let m = match kir_ir::text::load::load_source(std::path::Path::new(path), src.clone()) {
        Ok(l) => l.module,
        Err(e) => {
            eprint!("{}", e.render(false));
            std::process::exit(1);
        }
    };
    let opts = kir_backend_ptx::PtxOptions { sm, source: Some(src.clone()), comments: true };
    let m = match kir_ir::verify::verify(m) {
        Ok(v) => v,
        Err(d) => {
            eprint!("{}", kir_ir::diag::render(d.list(), path, &src, false));
            std::process::exit(1);
        }
    };
    match kir_backend_ptx::emit_module(&m, &opts) {
        Ok(p) => print!("{p}"),
        Err(d) => {
            eprint!("{}", kir_ir::diag::render(&d, path, &src, false));
            std::process::exit(1);
        }
    }
}
