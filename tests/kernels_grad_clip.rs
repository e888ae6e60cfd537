//! kernels/grad_clip.kir: squared_sum, clip_scale_reduce and gradient_clip_gpu_scale in the
//! interpreter against f64 references, alone and as the three-kernel pipeline.
//!
//! Error bounds (EPS = 2^-24): a sum of non-negative terms computed as per-thread running sums of
//! m terms followed by the 10-level tree is within (m + 11) EPS of the exact sum (recursive
//! summation, every partial sum <= the total); the squares are fma-fused into it. The norm
//! (sqrt, exactly rounded) is then within ((m + 11) / 2 + 1) EPS, the scale max_norm / norm within
//! ((m + 11) / 2 + 2) EPS. Scaling a gradient is one rounding: exact against f32 multiplication.

mod common;
use common::*;
use kir_interp::Buffer;
use kir_ir::ScalarType;

fn squared_sum(x: &[f32], grid: u32, block: u32) -> Vec<f64> {
    let m = load("grad_clip.kir");
    let mut bufs = vec![Buffer::from_f32(x), Buffer::from_f32(&vec![-7.0; grid as usize])];
    launch(&m, "squared_sum", [grid, 1, 1], [block, 1, 1], &[buf(0), buf(1), u32a(x.len() as u32)], &mut bufs);
    bufs[1].to_f64()
}

/// The f64 partial of each block: the sum of x[i]^2 over the i its threads visit in the
/// grid-stride loop, and the largest per-thread term count m.
fn squared_sum_ref(x: &[f32], grid: u32, block: u32) -> (Vec<f64>, usize) {
    let stride = (grid * block) as usize;
    let mut p = vec![0.0; grid as usize];
    for (i, v) in x.iter().enumerate() {
        p[(i % stride) / block as usize] += (*v as f64) * (*v as f64);
    }
    (p, x.len().div_ceil(stride))
}

#[test]
fn squared_sum_matches_f64_for_several_shapes() {
    let mut seed = 300;
    for &(n, grid, block) in
        &[(1usize, 1u32, 1u32), (1000, 3, 100), (10_007, 8, 256), (5000, 2, 1024), (777, 40, 32), (65_536, 16, 512)]
    {
        seed += 1;
        let mut x = Rng::new(seed).vec(n, 3.0);
        if n > 20 {
            x[3] = 0.0;
            x[5] = -1e18; // squares to 1e36, still finite in f32
            x[7] = 1e-20;
        }
        let got = squared_sum(&x, grid, block);
        let (want, m) = squared_sum_ref(&x, grid, block);
        let tol: Vec<f64> = want.iter().map(|w| (m as f64 + 11.0) * EPS * w).collect();
        check(&format!("squared_sum n={n} grid={grid} block={block}"), &got, &want, &tol);
    }
}

#[test]
fn squared_sum_nan_poisons_only_its_block() {
    let mut x = Rng::new(310).vec(1024, 1.0);
    x[300] = f32::NAN; // thread 44 of block 1 with grid 4 x block 256
    let got = squared_sum(&x, 4, 256);
    assert!(!got[0].is_nan() && got[1].is_nan() && !got[2].is_nan() && !got[3].is_nan(), "{got:?}");
}

fn clip_scale_reduce(partials: &[f32], max_norm: f32, block: u32) -> (f64, f64) {
    let m = load("grad_clip.kir");
    let mut bufs = vec![Buffer::from_f32(partials), Buffer::from_f32(&[-3.0, -3.0])];
    launch(
        &m,
        "clip_scale_reduce",
        [1, 1, 1],
        [block, 1, 1],
        &[buf(0), u32a(partials.len() as u32), f32a(max_norm), buf(1)],
        &mut bufs,
    );
    let out = bufs[1].to_f64();
    (out[0], out[1])
}

#[test]
fn clip_scale_reduce_computes_scale_and_norm() {
    let mut seed = 320;
    for &block in &[1u32, 37, 128, 1024] {
        for &(n, max_norm) in &[(1800usize, 1.0f32), (5, 100.0), (1, 0.5), (3000, 30.0)] {
            seed += 1;
            let p: Vec<f32> = Rng::new(seed).vec(n, 1.0).iter().map(|v| v.abs()).collect();
            let (scale, norm) = clip_scale_reduce(&p, max_norm, block);
            let sum: f64 = p.iter().map(|v| *v as f64).sum();
            let m = n.div_ceil(block as usize) as f64;
            let want_norm = sum.sqrt();
            let want_scale = (max_norm as f64 / want_norm).min(1.0);
            let what = format!("clip_scale_reduce n={n} block={block} max_norm={max_norm}");
            check(&format!("{what} norm"), &[norm], &[want_norm], &[((m + 11.0) / 2.0 + 1.0) * EPS * want_norm]);
            check(&format!("{what} scale"), &[scale], &[want_scale], &[((m + 11.0) / 2.0 + 2.0) * EPS * want_scale]);
        }
    }
}

#[test]
fn clip_scale_reduce_zero_and_nan_norms_give_scale_one() {
    for block in [1u32, 64] {
        assert_eq!(clip_scale_reduce(&[0.0; 16], 1.0, block), (1.0, 0.0), "zero gradients");
        assert_eq!(clip_scale_reduce(&[0.0; 16], 0.0, block), (1.0, 0.0), "zero gradients and max_norm 0");
        let (s, n) = clip_scale_reduce(&[1.0, f32::NAN, 2.0], 1.0, block);
        assert!(s == 1.0 && n.is_nan(), "NaN norm: scale {s}, norm {n}");
        let (s, n) = clip_scale_reduce(&[f32::INFINITY, 2.0], 1.0, block);
        assert!(s == 0.0 && n == f64::INFINITY, "infinite norm: scale {s}, norm {n}");
    }
}

fn clip(grads: &[f32], scale: f32, block: u32) -> Vec<f32> {
    let m = load("grad_clip.kir");
    let mut bufs = vec![Buffer::from_f32(grads), Buffer::from_f32(&[scale])];
    launch(
        &m,
        "gradient_clip_gpu_scale",
        [blocks(grads.len(), block), 1, 1],
        [block, 1, 1],
        &[buf(0), buf(1), u32a(grads.len() as u32)],
        &mut bufs,
    );
    assert_eq!(bufs[1].to_f32()[0].to_bits(), scale.to_bits(), "the scale is not written");
    bufs[0].to_f32()
}

#[test]
fn gradient_clip_scales_in_place_or_exits_early() {
    let mut g = Rng::new(330).vec(3001, 5.0);
    g[0] = f32::NAN;
    g[1] = -0.0;
    g[2] = 3e38;
    // bit patterns, with every NaN as one (the kernel's NaN payload is the canonical one)
    let bits = |v: &[f32]| v.iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect::<Vec<_>>();
    for block in [256u32, 100] {
        for scale in [0.5f32, 0.123, 0.0, 1.0 - 2.0 * f32::EPSILON] {
            let want: Vec<f32> = g.iter().map(|v| v * scale).collect();
            assert_eq!(bits(&clip(&g, scale, block)), bits(&want), "scale {scale}");
        }
        // |scale - 1| < 1e-7: nothing is written, even though g * scale would differ
        let s = 1.0 - f32::EPSILON / 2.0;
        assert!(g.iter().any(|v| (v * s).to_bits() != v.to_bits()));
        assert_eq!(bits(&clip(&g, s, block)), bits(&g), "scale 1 - 2^-24 leaves grads alone");
        assert_eq!(bits(&clip(&g, 1.0, block)), bits(&g));
    }
}

#[test]
fn the_pipeline_clips_to_max_norm() {
    // two gradient tensors, one partials buffer, as the seed's fused pipeline
    let m = load("grad_clip.kir");
    let g1 = Rng::new(340).vec(5000, 2.0);
    let g2 = Rng::new(341).vec(1234, 2.0);
    let (grid, block) = (6u32, 128u32);
    let mut p = Vec::new();
    for g in [&g1, &g2] {
        p.extend(squared_sum(g, grid, block).iter().map(|v| *v as f32));
    }
    let max_norm = 10.0f32;
    let mut bufs = vec![Buffer::from_f32(&p), Buffer::zeros(ScalarType::F32, 2)];
    launch(
        &m,
        "clip_scale_reduce",
        [1, 1, 1],
        [64, 1, 1],
        &[buf(0), u32a(p.len() as u32), f32a(max_norm), buf(1)],
        &mut bufs,
    );
    let scale = bufs[1].to_f32()[0];
    let norm: f64 = g1.iter().chain(&g2).map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
    assert!(norm > max_norm as f64, "the test needs clipping to happen");
    let c1 = clip(&g1, scale, 256);
    let c2 = clip(&g2, scale, 256);
    let clipped: f64 = c1.iter().chain(&c2).map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
    // m <= 7 terms per thread in squared_sum, then <= 1 in the reduce: bound (7 + 11 + 1 + 11) EPS
    // on the sum, half of it on the norm, plus the scale's division and the products' roundings
    check("clipped norm", &[clipped], &[max_norm as f64], &[20.0 * EPS * max_norm as f64]);
}
