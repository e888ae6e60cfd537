//! Loads PTX files and lists their entries and parameters, or the first error with its location.
//!
//! `cargo run -p kir-ptx-emu --example ptx_parse -- FILE.ptx...`

fn main() {
    let mut failed = false;
    for path in std::env::args().skip(1) {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{path}: {e}");
                failed = true;
                continue;
            }
        };
        match kir_ptx_emu::Module::parse(&text) {
            Ok(m) => {
                for e in m.entries() {
                    let ps: Vec<String> = e.params.iter().map(|p| format!("{}: .{}", p.name, p.ty.name())).collect();
                    println!("{path}: {}({}) static shared {} B", e.name, ps.join(", "), e.static_shared_bytes);
                }
            }
            Err(e) => {
                eprintln!("{path}:{e}");
                failed = true;
            }
        }
    }
    std::process::exit(failed as i32);
}
