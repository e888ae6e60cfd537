fn main() {
    lalrpop::Configuration::new()
        .use_cargo_dir_conventions()
        .process_file("src/text/grammar.lalrpop")
        .expect("lalrpop grammar failed to build");
    println!("cargo:rerun-if-changed=src/text/grammar.lalrpop");
}
