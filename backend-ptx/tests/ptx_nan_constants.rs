//! NaN constants never reach ptxas as immediates: each body declares one module-scope `.const`
//! variable per NaN it uses (named after the body, so two bodies never clash) and loads it with
//! `ld.const`. ptxas folds NaN immediates as if sign and payload did not matter (on an H100,
//! `sub.rn.f64 %d, %x, 0d7FF8000000000001` computed `0xFFF8000000000001`, where the same NaN in a
//! register comes back unchanged), so the immediate form cannot compute what the interpreter does.
//! Ordinary float constants stay immediates.

use kir_backend_ptx::{emit_module, PtxOptions, SmVersion};

fn ptx(src: &str) -> String {
    let m = kir_ir::verify::check(kir_ir::parse(src).expect("parses")).unwrap_or_else(|d| panic!("{d}"));
    let opts = PtxOptions { sm: SmVersion::Sm90, source: None, comments: false };
    emit_module(&m, &opts).unwrap_or_else(|d| panic!("{d:?}"))
}

const NANS: &str =
    "kernel @k(%x: ptr<global, f64>, %y: ptr<global, f32>, %h: ptr<global, f16>, %b: ptr<global, bf16>, %f: u32) {
entry:
  %x0 = load %x[0]
  %r0 = sub.f64 %x0, 0d7ff8000000000001
  %r1 = mul.f64 %r0, 0dfff8000000000002
  %r2 = add.f64 %r1, 1.5
  store %x[0], %r2
  %y0 = load %y[0]
  %s0 = sub.f32 %y0, 0f7fc00001
  %s1 = fma.f32 %s0, 0f7fc00001, %y0
  store %y[0], %s1
  %h0 = load %h[0]
  %t0 = max.f16 %h0, 0h7e01
  store %h[0], %t0
  %b0 = load %b[0]
  %u0 = min.bf16 %b0, 0hffc2
  store %b[0], %u0
  %c = lt.u32 %f, 2
  br %c, a(0d7ff0000000000003), a(2.0)
a(%p: f64):
  store %x[1], %p
  ret
}

kernel @k2(%x: ptr<global, f64>) {
entry:
  %x0 = load %x[0]
  %r0 = sub.f64 %x0, 0d7ff8000000000001
  store %x[0], %r0
  ret
}
";

/// Whether an instruction line (not a declaration) spells a NaN of some float width.
fn nan_immediate(line: &str) -> Option<String> {
    line.split(|c: char| !c.is_ascii_alphanumeric()).find_map(|w| {
        let nan = if let Some(h) = w.strip_prefix("0d").filter(|h| h.len() == 16) {
            u64::from_str_radix(h, 16).ok().is_some_and(|b| f64::from_bits(b).is_nan())
        } else if let Some(h) = w.strip_prefix("0f").filter(|h| h.len() == 8) {
            u32::from_str_radix(h, 16).ok().is_some_and(|b| f32::from_bits(b).is_nan())
        } else if let Some(h) = w.strip_prefix("0x").filter(|h| h.len() == 4) {
            // f16 (exponent 0x7C00) or bf16 (0x7F80) NaN bits, as a `mov.b16` spells them
            u16::from_str_radix(h, 16)
                .ok()
                .is_some_and(|b| (b & 0x7C00 == 0x7C00 && b & 0x3FF != 0) || (b & 0x7F80 == 0x7F80 && b & 0x7F != 0))
        } else {
            false
        };
        nan.then(|| w.to_string())
    })
}

#[test]
fn nan_constants_are_loaded_from_const_memory() {
    let p = ptx(NANS);
    let decls: Vec<&str> = p.lines().filter(|l| l.starts_with(".const")).collect();
    assert_eq!(
        decls,
        [
            ".const .align 8 .b64 k$nan$f64$7FF8000000000001 = 0x7FF8000000000001;",
            ".const .align 8 .b64 k$nan$f64$FFF8000000000002 = 0xFFF8000000000002;",
            ".const .align 4 .b32 k$nan$f32$7FC00001 = 0x7FC00001;",
            ".const .align 2 .b16 k$nan$f16$7E01 = 0x7E01;",
            ".const .align 2 .b16 k$nan$bf16$FFC2 = 0xFFC2;",
            ".const .align 8 .b64 k$nan$f64$7FF0000000000003 = 0x7FF0000000000003;",
            ".const .align 8 .b64 k2$nan$f64$7FF8000000000001 = 0x7FF8000000000001;",
        ],
        "{p}"
    );
    for l in p.lines().filter(|l| l.starts_with('\t')) {
        assert_eq!(nan_immediate(l), None, "a NaN immediate in `{l}`:\n{p}");
    }
    // The f32 NaN used twice is loaded at each use, from the one variable.
    assert_eq!(p.matches("ld.const.f32").count(), 2, "{p}");
    assert_eq!(p.matches("ld.const.b16").count(), 2, "{p}");
    // The block argument (a parallel copy) too; the ordinary constants stay immediates.
    assert!(p.contains("[k$nan$f64$7FF0000000000003]"), "{p}");
    assert!(p.contains("0d3FF8000000000000") && p.contains("0d4000000000000000"), "{p}");
}

/// The detector above finds the immediates the emitter used to write.
#[test]
fn the_nan_immediate_detector_finds_each_width() {
    assert!(nan_immediate("\tsub.rn.f64 %fd0, %fd1, 0d7FF8000000000000;").is_some());
    assert!(nan_immediate("\tadd.rn.f32 %f0, %f1, 0fFFC00001;").is_some());
    assert!(nan_immediate("\tmov.b16 %h0, 0x7E01;").is_some());
    assert!(nan_immediate("\tmov.b16 %h0, 0xFFC2;").is_some());
    assert_eq!(nan_immediate("\tadd.rn.f64 %fd0, %fd1, 0d7FF0000000000000;"), None);
    assert_eq!(nan_immediate("\tmov.b16 %h0, 0x3C00;"), None);
}

/// ptxas accepts the module (when installed: `scripts/setup-tools.sh`).
#[test]
fn ptxas_accepts_the_const_loads() {
    let Some(ptxas) = kir_backend_ptx::tools::find_ptxas() else {
        eprintln!("skip: ptxas not found");
        return;
    };
    let dir = std::env::temp_dir().join(format!("kir-nan-consts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("nan.ptx");
    std::fs::write(&f, ptx(NANS)).unwrap();
    let out = std::process::Command::new(ptxas)
        .args(["-arch=sm_90", f.to_str().unwrap(), "-o", dir.join("nan.cubin").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// An f64 `op K, x` with `K` a NaN constant is computed explicitly (`testp`, `selp`, `add t, t`):
/// ptxas encodes a constant as the machine instruction's later operand, where the H100 lets it win
/// over a NaN `x` that kir's order (`b` first) says wins. `div` (order `a` first) and f32 (canonical
/// NaN results) are emitted as written.
#[test]
fn a_leading_f64_nan_constant_is_computed_explicitly() {
    let ops = ["add", "sub", "mul", "min", "max", "div"];
    let body: String =
        ops.iter().map(|op| format!("  %{op} = {op}.f64 0d7ff8000000000001, %x0\n  store %x[0], %{op}\n")).collect();
    let src = format!(
        "kernel @k(%x: ptr<global, f64>, %y: ptr<global, f32>) {{\nentry:\n  %x0 = load %x[0]\n{body}  %f = fma.f64 0d7ff8000000000001, %x0, %x0\n  store %x[0], %f\n  %y0 = load %y[0]\n  %g = add.f32 0f7fc00001, %y0\n  store %y[0], %g\n  ret\n}}\n"
    );
    let p = ptx(&src);
    let lines: Vec<&str> = p.lines().map(str::trim).collect();
    // add, sub, mul: testp, selp, add; min, max: testp, add, selp; fma: 2 testp, 2 selp, add.
    assert_eq!(lines.iter().filter(|l| l.starts_with("testp.notanumber.f64")).count(), 7, "{p}");
    assert_eq!(lines.iter().filter(|l| l.starts_with("selp.f64")).count(), 7, "{p}");
    for op in ["sub.rn.f64", "mul.rn.f64", "min.f64", "max.f64", "fma.rn.f64"] {
        assert!(!p.contains(op), "`{op}` with a leading NaN constant should be computed explicitly:\n{p}");
    }
    assert!(lines.iter().any(|l| l.starts_with("div.rn.f64")), "{p}");
    assert!(lines.iter().any(|l| l.starts_with("add.rn.f32")), "{p}");
}
