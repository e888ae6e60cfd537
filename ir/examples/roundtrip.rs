fn main() {
    let path = std::env::args().nth(1).unwrap();
    let src = std::fs::read_to_string(&path).unwrap();
    match kir_ir::parse(&src) {
        Ok(m) => {
            let p = kir_ir::print_module(&m);
            print!("{p}");
            let m2 = kir_ir::parse(&p).unwrap();
            println!("roundtrip eq: {}", m.structurally_eq(&m2));
        }
        Err(d) => print!("{}", kir_ir::diag::render(&d, &path, &src, false)),
    }
}
