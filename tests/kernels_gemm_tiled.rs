//! kernels/gemm_tiled.kir (@gemm_tiled, 16x16 shared-memory tiles) in the interpreter against f64.
//!
//! Error bound (EPS = 2^-24): C[i, j] is an fma chain over l = 0 .. k-1 in order (the zero padding
//! of edge tiles adds exact zeros), within k EPS of sum_l |A[i, l] B[l, j]|.

mod common;
use common::*;
use kir_interp::Buffer;

#[test]
fn tiled_gemm_matches_f64_on_several_shapes() {
    let mut seed = 700;
    for &(m, n, k) in &[(25usize, 37usize, 37usize), (64, 64, 64), (3, 1, 5), (1, 1, 1), (17, 33, 100), (40, 20, 16)] {
        seed += 1;
        let mut r = Rng::new(seed);
        let (a, b) = (r.vec(m * k, 2.0), r.vec(k * n, 2.0));
        let module = load("gemm_tiled.kir");
        let mut bufs = vec![Buffer::from_f32(&a), Buffer::from_f32(&b), Buffer::from_f32(&vec![f32::NAN; m * n])];
        let grid = [n.div_ceil(16) as u32, m.div_ceil(16) as u32, 1];
        launch(
            &module,
            "gemm_tiled",
            grid,
            [16, 16, 1],
            &[buf(0), buf(1), buf(2), u32a(m as u32), u32a(n as u32), u32a(k as u32)],
            &mut bufs,
        );
        let got = bufs[2].to_f64();
        let (mut want, mut tol) = (vec![0.0; m * n], vec![0.0; m * n]);
        for i in 0..m {
            for j in 0..n {
                let terms: Vec<f64> = (0..k).map(|l| a[i * k + l] as f64 * b[l * n + j] as f64).collect();
                want[i * n + j] = terms.iter().sum();
                tol[i * n + j] = k as f64 * EPS * terms.iter().map(|t| t.abs()).sum::<f64>();
            }
        }
        check(&format!("gemm_tiled m={m} n={n} k={k}"), &got, &want, &tol);
    }
}

#[test]
fn tiled_gemm_propagates_nan_and_inf_only_where_they_belong() {
    let (m, n, k) = (20, 18, 21);
    let mut r = Rng::new(710);
    let (mut a, b) = (r.vec(m * k, 1.0), r.vec(k * n, 1.0));
    a[5 * k + 3] = f32::NAN; // row 5 of C
    let module = load("gemm_tiled.kir");
    let mut bufs = vec![Buffer::from_f32(&a), Buffer::from_f32(&b), Buffer::zeros(kir_ir::ScalarType::F32, m * n)];
    launch(
        &module,
        "gemm_tiled",
        [2, 2, 1],
        [16, 16, 1],
        &[buf(0), buf(1), buf(2), u32a(m as u32), u32a(n as u32), u32a(k as u32)],
        &mut bufs,
    );
    let c = bufs[2].to_f64();
    for i in 0..m {
        for j in 0..n {
            assert_eq!(c[i * n + j].is_nan(), i == 5, "C[{i}, {j}] = {}", c[i * n + j]);
        }
    }
}
