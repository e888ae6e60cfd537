//! kernels/rmsnorm.kir (@persistent_decoder, persistent RMSNorm over f16 rows) in the interpreter
//! against an f64 reference.
//!
//! Error bound (EPS = 2^-24): with m = ceil(hidden / B) terms per thread, the sum of squares (exact
//! squares of f16 values, fma-fused) goes through m running adds, 5 butterfly levels and B / 32 warp
//! sums: relative (m + 5 + B/32) EPS. Then the mean (div) and + eps: 2 EPS; rsqrt.approx: 2^-22.9
//! < 2.2 EPS on the GPU (the interpreter rounds once); the scale has relative error
//! (m + 7 + B/32) / 2 EPS + 2.2 EPS, the product one more EPS: C = (m + 7 + B/32) / 2 + 4. The f16
//! store adds half an f16 ulp ([`Storage::stored_bound`]).

mod common;
use common::*;

const EPS_NORM: f64 = 1e-6;

fn run(x: &[f32], tokens: usize, hidden: usize, grid: u32, block: u32) -> Vec<f64> {
    let m = load("rmsnorm.kir");
    let st = Storage::F16;
    let mut bufs = vec![st.buffer(x), st.buffer(&vec![f32::NAN; x.len()])];
    launch(
        &m,
        "persistent_decoder",
        [grid, 1, 1],
        [block, 1, 1],
        &[buf(0), buf(1), u32a(tokens as u32), u32a(hidden as u32)],
        &mut bufs,
    );
    bufs[1].to_f64()
}

fn check_shape(tokens: usize, hidden: usize, grid: u32, block: u32, seed: u64, edit: impl Fn(&mut Vec<f32>)) {
    let st = Storage::F16;
    let mut x: Vec<f32> = Rng::new(seed).vec(tokens * hidden, 2.0).iter().map(|v| st.round(*v)).collect();
    edit(&mut x);
    let got = run(&x, tokens, hidden, grid, block);
    let m = hidden.div_ceil(block as usize) as f64;
    let c = (m + 7.0 + block as f64 / 32.0) / 2.0 + 4.0;
    let (mut want, mut tol) = (Vec::new(), Vec::new());
    for t in 0..tokens {
        let row = &x[t * hidden..(t + 1) * hidden];
        let ms: f64 = row.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / hidden as f64;
        let inv = 1.0 / (ms + EPS_NORM).sqrt();
        for v in row {
            let r = *v as f64 * inv;
            let w = st.round(r as f32) as f64;
            want.push(if w.is_infinite() { w } else { r });
            tol.push(st.stored_bound(r, c * EPS * r.abs()));
        }
    }
    check(&format!("persistent_decoder tokens={tokens} hidden={hidden} grid={grid} block={block}"), &got, &want, &tol);
}

#[test]
fn rmsnorm_matches_f64_on_several_shapes() {
    let mut seed = 500;
    // hidden not a multiple of the block, more blocks than tokens, one warp, 1024 threads
    for &(tokens, hidden, grid, block) in &[
        (7usize, 1000usize, 3u32, 128u32),
        (5, 512, 2, 64),
        (3, 100, 4, 32),
        (1, 1, 1, 32),
        (4, 33, 8, 96),
        (3, 4099, 2, 1024),
        (10, 70, 1, 32),
    ] {
        seed += 1;
        check_shape(tokens, hidden, grid, block, seed, |_| {});
    }
}

#[test]
fn rmsnorm_edge_rows() {
    // row 0 all zero (output 0), row 1 large values (6e4: x^2 = 3.6e9 is fine in f32), row 2 one
    // tiny value among zeros, row 3 negative constants
    check_shape(5, 300, 2, 64, 510, |x| {
        for j in 0..300 {
            x[j] = 0.0;
            x[300 + j] = if j % 2 == 0 { 6e4 } else { -6e4 };
            x[600 + j] = 0.0;
            x[900 + j] = -0.5;
        }
        x[600 + 17] = Storage::F16.round(1e-4);
    });
}

#[test]
fn rmsnorm_nan_poisons_only_its_row() {
    let (tokens, hidden) = (4, 200);
    let mut x: Vec<f32> = Rng::new(520).vec(tokens * hidden, 1.0).iter().map(|v| Storage::F16.round(*v)).collect();
    x[hidden + 5] = f32::NAN;
    let got = run(&x, tokens, hidden, 3, 64);
    for t in 0..tokens {
        let nans = got[t * hidden..(t + 1) * hidden].iter().filter(|v| v.is_nan()).count();
        assert_eq!(nans, if t == 1 { hidden } else { 0 }, "row {t}");
    }
}
