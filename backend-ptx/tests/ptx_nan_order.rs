//! The PTX of f64 ops with operands that may hold different NaNs: `a` is first replaced by the NaN
//! kir's order makes win (`testp.notanumber.f64`, `selp.f64`: backend-ptx/src/nan_order.rs), so
//! the result does not depend on the order ptxas gives commutative operands. What it costs, op by
//! op, and where it costs nothing: f16, bf16 and f32 (canonical NaN results), non-NaN constants,
//! one value in two places. `tests/f64_nan_order.rs` checks what the code computes.

use kir_backend_ptx::{emit_module, PtxOptions, SmVersion};

fn ptx(src: &str) -> String {
    let m = kir_ir::verify::check(kir_ir::parse(src).expect("parses")).unwrap_or_else(|d| panic!("{d}"));
    let opts = PtxOptions { sm: SmVersion::Sm90, source: None, comments: false };
    emit_module(&m, &opts).unwrap_or_else(|d| panic!("{d:?}"))
}

/// A kernel computing `insts` (each `%rN = ...` on `%a`, `%b`, `%c` of type `t`), storing each.
fn kernel(t: &str, insts: &[&str]) -> String {
    let mut body = String::new();
    for (n, inst) in insts.iter().enumerate() {
        body.push_str(&format!("  %r{n} = {inst}\n  store %p[{n}], %r{n}\n"));
    }
    format!("kernel @k(%p: ptr<global, {t}>, %a: {t}, %b: {t}, %c: {t}) {{\nentry:\n{body}  ret\n}}\n")
}

/// (`testp` lines, `selp` lines) of the PTX.
fn choices(p: &str) -> (usize, usize) {
    let count = |head: &str| p.lines().filter(|l| l.trim_start().starts_with(head)).count();
    (count("testp.notanumber.f64"), count("selp.f64"))
}

#[test]
fn f64_ops_of_two_values_choose_the_nan_first() {
    for inst in ["add.f64 %a, %b", "sub.f64 %a, %b", "mul.rz.f64 %a, %b", "min.f64 %a, %b", "max.f64 %a, %b"] {
        let p = ptx(&kernel("f64", &[inst]));
        assert_eq!(choices(&p), (1, 1), "{inst}:\n{p}");
    }
    let p = ptx(&kernel("f64", &["add.f64 %a, %b"]));
    let lines: Vec<&str> = p.lines().map(str::trim).collect();
    let at = lines.iter().position(|l| l.starts_with("testp")).unwrap();
    // testp on b, a' = b if it is NaN, then the op on a' and b.
    let (t, s, op) = (lines[at], lines[at + 1], lines[at + 2]);
    let word = |l: &str, i: usize| l.split([' ', ',', ';']).filter(|w| !w.is_empty()).nth(i).unwrap().to_string();
    let (pred, b) = (word(t, 1), word(t, 2));
    assert_eq!((word(s, 2), word(s, 4)), (b.clone(), pred), "{p}");
    assert_eq!((word(op, 0), word(op, 2), word(op, 3)), ("add.rn.f64".to_string(), word(s, 1), b), "{p}");
    // fma: b, then c.
    let p = ptx(&kernel("f64", &["fma.f64 %a, %b, %c"]));
    assert_eq!(choices(&p), (2, 2), "{p}");
}

#[test]
fn nothing_to_choose_costs_nothing() {
    let free = [
        "add.f64 %a, 1.5",
        "sub.f64 2.0, %b",
        "mul.f64 %a, %a",
        "min.f64 %a, -0.0",
        "max.f64 %b, %b",
        "div.f64 %a, %b",
        "fma.f64 %a, 2.0, 3.0",
        "fma.f64 1.0, %b, 3.0",
        "fma.f64 %a, %a, %c",
    ];
    let p = ptx(&kernel("f64", &free));
    assert_eq!(choices(&p), (0, 0), "{p}");
    // A NaN constant `b` is taken without a test: `add %a, K` is `add K, K`.
    let p = ptx(&kernel("f64", &["add.f64 %a, 0d7ff8000000000001", "sub.f64 %a, 0dfff0000000000002"]));
    assert_eq!(choices(&p), (0, 0), "{p}");
    let sub: Vec<&str> =
        p.lines().find(|l| l.trim().starts_with("sub.rn.f64")).unwrap().split([' ', ',', ';']).collect();
    let sub: Vec<&str> = sub.into_iter().filter(|w| !w.is_empty()).collect();
    assert_eq!(sub[2], sub[3], "{p}");
    // One non-NaN constant leaves fma two operands that can be NaN: one choice.
    let p = ptx(&kernel("f64", &["fma.f64 %a, %b, 3.0", "fma.f64 %a, 2.0, %c", "fma.f64 1.0, %b, %c"]));
    assert_eq!(choices(&p), (3, 3), "{p}");
    for t in ["f32", "f16", "bf16"] {
        let ops: Vec<String> =
            ["add", "sub", "mul", "min", "max"].iter().map(|op| format!("{op}.{t} %a, %b")).collect();
        let mut insts: Vec<&str> = ops.iter().map(String::as_str).collect();
        let fma = format!("fma.{t} %a, %b, %c");
        insts.push(&fma);
        let p = ptx(&kernel(t, &insts));
        assert!(!p.contains("testp"), "{t}:\n{p}");
    }
}

/// ptxas accepts the sequences (when installed: `scripts/setup-tools.sh`).
#[test]
fn ptxas_accepts_the_choices() {
    let Some(ptxas) = kir_backend_ptx::tools::find_ptxas() else {
        eprintln!("skip: ptxas not found");
        return;
    };
    let src = kernel("f64", &["add.f64 %a, %b", "sub.f64 %a, %b", "min.f64 %a, %b", "fma.f64 %a, %b, %c"]);
    let dir = std::env::temp_dir().join(format!("kir-nan-order-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("k.ptx");
    std::fs::write(&f, ptx(&src)).unwrap();
    let out = std::process::Command::new(ptxas)
        .args(["-arch=sm_90", f.to_str().unwrap(), "-o", dir.join("k.cubin").to_str().unwrap()])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
