//! Parses every file of `kernels/` KIR_REPS times (default 200), for profiling the front end:
//! `valgrind --tool=callgrind target/release/examples/parse_profile`.
fn main() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "kir"))
        .collect();
    files.sort();
    let sources: Vec<String> = files.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
    let reps: u32 = std::env::var("KIR_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let t = std::time::Instant::now();
    for _ in 0..reps {
        for s in &sources {
            std::hint::black_box(kir_ir::parse(s).unwrap());
        }
    }
    println!("parse of {} files: {:?} per repetition", sources.len(), t.elapsed() / reps);
}
