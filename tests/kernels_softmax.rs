//! kernels/softmax.kir (@softmax_rows) in the interpreter against an f64 reference.
//!
//! Error bound (EPS = 2^-24): e_j = ex2((x_j - max) log2 e): the subtraction, the constant and the
//! product perturb the exponent by 3 EPS |x_j - max| log2 e, so e_j is within
//! (3 |x_j - max| + 4) EPS relative (4 EPS: ex2.approx's 2 ulp). The sum of non-negative e_j over
//! ceil(cols / B) running adds, 5 butterfly levels and B / 32 warp sums adds that many EPS to the
//! largest term error; the division adds EPS. Subnormal e_j (x_j - max < -87) add 2^-149 absolute.

mod common;
use common::*;
use kir_interp::Buffer;

fn run(x: &[f32], rows: usize, cols: usize, grid: u32, block: u32) -> Vec<f64> {
    let m = load("softmax.kir");
    let mut bufs = vec![Buffer::from_f32(x), Buffer::from_f32(&vec![-5.0; x.len()])];
    launch(
        &m,
        "softmax_rows",
        [grid, 1, 1],
        [block, 1, 1],
        &[buf(0), buf(1), u32a(rows as u32), u32a(cols as u32)],
        &mut bufs,
    );
    bufs[1].to_f64()
}

fn check_rows(x: &[f32], rows: usize, cols: usize, block: u32) {
    // one extra block: rows beyond `rows` must leave y alone
    let got = run(x, rows, cols, rows as u32 + 1, block);
    let levels = cols.div_ceil(block as usize) as f64 + 5.0 + block as f64 / 32.0;
    let (mut want, mut tol) = (Vec::new(), Vec::new());
    for r in 0..rows {
        let row: Vec<f64> = x[r * cols..(r + 1) * cols].iter().map(|v| *v as f64).collect();
        let mx = row.iter().filter(|v| !v.is_nan()).fold(f64::NEG_INFINITY, |a, b| a.max(*b));
        let e: Vec<f64> = row.iter().map(|v| (v - mx).exp()).collect();
        let s: f64 = e.iter().sum();
        let worst = row.iter().filter(|v| v.is_finite()).map(|v| 3.0 * (v - mx).abs() + 4.0).fold(0.0, f64::max);
        for (j, v) in row.iter().enumerate() {
            let y = e[j] / s;
            want.push(y);
            // a -inf element gives exactly 0 (ex2(-inf) = 0)
            let rel = if v.is_finite() { (3.0 * (v - mx).abs() + 4.0 + worst + levels + 1.0) * EPS * y } else { 0.0 };
            tol.push(rel + 2f64.powi(-149) / s * 2.0);
        }
    }
    check(&format!("softmax_rows rows={rows} cols={cols} block={block}"), &got[..rows * cols], &want, &tol);
    assert!(got[rows * cols..].iter().all(|v| *v == -5.0), "rows past `rows` are left alone");
}

#[test]
fn softmax_matches_f64_on_several_shapes() {
    let mut seed = 600;
    for &(rows, cols, block) in
        &[(13usize, 300usize, 64u32), (4, 7, 32), (3, 1000, 256), (2, 1, 32), (5, 2049, 1024), (1, 33, 96)]
    {
        seed += 1;
        let x = Rng::new(seed).vec(rows * cols, 10.0);
        check_rows(&x, rows, cols, block);
    }
}

#[test]
fn softmax_edge_rows() {
    let cols = 50;
    let mut x = Rng::new(610).vec(5 * cols, 3.0);
    x[3] = f32::NEG_INFINITY; // row 0: one -inf gives 0
    for v in &mut x[cols..2 * cols] {
        *v = 1e30; // row 1: equal huge values: uniform
    }
    for (j, v) in x[2 * cols..3 * cols].iter_mut().enumerate() {
        *v = -(j as f32) * 40.0; // row 2: differences up to 1960, most e_j underflow
    }
    x[3 * cols] = 0.0; // row 3 ordinary
    check_rows(&x, 4, cols, 32);
    // row 4 holds a NaN: the whole row is NaN; other rows are unaffected
    x[4 * cols + 9] = f32::NAN;
    let got = run(&x, 5, cols, 5, 64);
    assert!(got[4 * cols..].iter().all(|v| v.is_nan()));
    assert!(got[..4 * cols].iter().all(|v| !v.is_nan()));
}
