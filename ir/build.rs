fn main() {
    lalrpop::Configuration::new()
        .use_cargo_dir_conventions()
        .process_file("src/grammar.lalrpop")
        .expect("lalrpop grammar failed to build");
    println!("cargo:rerun-if-changed=src/grammar.lalrpop");
}
