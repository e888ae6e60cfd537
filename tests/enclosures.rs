//! Issue 42: differential tests of kernels with approximate ops need no hand-written `tol=`. A
//! `; run:` without `tol=` judges the PTX emulator (and a GPU) by the interpreter's per-element
//! error enclosures (interp/src/enclose.rs, harness/src/enclosure.rs).
//!
//! - Every library kernel (`kernels/*.kir`) with every `tol=` removed from its `; run:` lines
//!   passes all its rows, and the approximate kernels' emulator rows say they were judged by
//!   enclosures (not bit-identical by luck, not by a derived tolerance).
//! - It still catches bugs: PTX whose `ex2.approx`/`rsqrt.approx` result is perturbed by 8 ulp
//!   (a fault a compiler could make) fails those rows, with the element and its enclosure named.
//! - Soundness and tightness on generated kernels: random chains of approximate and exact f32 ops
//!   (interpreter with enclosures vs the PTX emulator, whose approximate ops are its own models,
//!   not the interpreter's): every emulator result lies in its enclosure, and the enclosures are
//!   within a stated factor of the widths a direct error analysis allows.

use kir_harness::kir_test::{self, Outcome, Row};
use std::path::{Path, PathBuf};

/// A copy of `kernels/` (with `data/`, `lib/`, `kir-test.toml`) whose `; run:` lines have no
/// `tol=`, in a fresh temporary directory.
fn kernels_without_tol() -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("kir-enclosures-{}-{:?}", std::process::id(), std::thread::current().id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(Path::new("kernels"), &dir);
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "kir") {
            let text = std::fs::read_to_string(&p).unwrap();
            let stripped: Vec<String> = text
                .lines()
                .map(|l| {
                    if l.starts_with("; run:") {
                        l.split(' ').filter(|w| !w.starts_with("tol=")).collect::<Vec<_>>().join(" ")
                    } else {
                        l.to_string()
                    }
                })
                .collect();
            std::fs::write(&p, stripped.join("\n") + "\n").unwrap();
        }
    }
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// `kir test`'s rows for `file`, with the emulator's PTX passed through `hook` when given.
fn rows(file: &Path, hook: Option<Box<dyn Fn(&str) -> String>>) -> Vec<Row> {
    let mut ctx = kir_test::Context::detect(false);
    ctx.ptxas = None;
    ctx.emu_ptx_hook = hook;
    let mut rows = Vec::new();
    kir_test::test_file(file, &mut ctx, &mut |r| rows.push(r));
    rows
}

/// Files with approximate ops whose emulator rows are judged by enclosures; the vectorized ones
/// (`store.v4` of approximate results) need an enclosure per vector element.
const APPROXIMATE: [&str; 8] = [
    "activations",
    "gated_backward",
    "gemm_bwd",
    "softmax",
    "rmsnorm",
    "softmax_online",
    "activations_v4",
    "gated_backward_v4",
];

#[test]
fn library_kernels_pass_without_hand_written_tolerances() {
    let dir = kernels_without_tol();
    let mut enclosed = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "kir") {
            continue;
        }
        for r in rows(&p, None) {
            assert!(!matches!(r.outcome, Outcome::Fail(_)), "{}: {:?}", r.label, r.outcome);
            if r.label.ends_with(" ptx-emu")
                && r.note.as_deref().is_some_and(|n| n.contains("within per-element enclosures"))
            {
                enclosed.push(r.label.clone());
            }
        }
    }
    for name in APPROXIMATE {
        assert!(
            enclosed.iter().any(|l| l.contains(&format!("{name}.kir"))),
            "{name}: no row judged by enclosures: {enclosed:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Multiplies the result (`operand` false) or the operand of every `OP.approx.f32 %d, %s;` by
/// `0f3F800008` (1 + 2^-20: 8 ulp), with a `mul.rn.f32` after (or before) it.
fn perturb(op: &'static str, operand: bool) -> Box<dyn Fn(&str) -> String> {
    Box::new(move |ptx: &str| {
        let mut out = String::new();
        let mut hits = 0;
        for line in ptx.lines() {
            let t = line.trim();
            let regs = t.strip_prefix(&format!("{op}.approx.f32 ")).map(|rest| {
                let mut it = rest.trim_end_matches(';').split(", ");
                (it.next().unwrap().to_string(), it.next().unwrap().to_string())
            });
            if let (Some((_, s)), true) = (&regs, operand) {
                out.push_str(&format!("\tmul.rn.f32 {s}, {s}, 0f3F800008;\n"));
            }
            out.push_str(line);
            out.push('\n');
            if let (Some((d, _)), false) = (&regs, operand) {
                out.push_str(&format!("\tmul.rn.f32 {d}, {d}, 0f3F800008;\n"));
            }
            hits += regs.is_some() as usize;
        }
        assert!(hits > 0, "no {op}.approx.f32 in the PTX");
        out
    })
}

#[test]
fn a_few_ulp_perturbation_of_an_approximate_op_fails() {
    let dir = kernels_without_tol();
    // 8 ulp on every exp's result would cancel in softmax's normalization (and is rightly
    // accepted): there the fault is 8 ulp on the exp's operand.
    for (file, op, operand, kernels) in [
        ("activations", "ex2", false, &["gelu_forward", "gelu_backward", "silu_forward", "silu_backward"][..]),
        // The same functions on `vec<4, f32>`: each element is judged by its own enclosure.
        (
            "activations_v4",
            "ex2",
            false,
            &["gelu_forward_v4", "gelu_backward_v4", "silu_forward_v4", "silu_backward_v4"][..],
        ),
        ("softmax", "ex2", true, &["softmax_rows"][..]),
        ("softmax_online", "ex2", true, &["softmax_online", "softmax_warp_rows"][..]),
        ("rmsnorm", "rsqrt", false, &["persistent_decoder"][..]),
    ] {
        let rows = rows(&dir.join(format!("{file}.kir")), Some(perturb(op, operand)));
        for k in kernels {
            let failed: Vec<&Row> = rows
                .iter()
                .filter(|r| r.label.contains(&format!("@{k} ")) && r.label.ends_with(" ptx-emu"))
                .filter(|r| matches!(r.outcome, Outcome::Fail(_)))
                .collect();
            assert!(!failed.is_empty(), "{file} @{k}: the perturbed PTX passed: {rows:?}");
            let Outcome::Fail(msg) = &failed[0].outcome else { unreachable!() };
            // Outside a range that names the op, or off an enclosure that rounding to the
            // output's format made exact (rmsnorm's f16 outputs).
            let outside = msg.contains("outside its enclosure") && msg.contains(&format!("{op}.approx.f32"));
            assert!(outside || msg.contains("its enclosure is exact"), "{msg}");
        }
        // The rows that do not run the perturbed op are unaffected.
        for r in rows.iter().filter(|r| !r.label.ends_with(" ptx-emu")) {
            assert!(!matches!(r.outcome, Outcome::Fail(_)), "{}: {:?}", r.label, r.outcome);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
