//! kernels/activations.kir and kernels/relu_backward.kir in the interpreter against f64 references.
//!
//! Error bounds (2^-24 = EPS; derivations in the kernel headers):
//! - relu_forward, relu_backward: exact (a compare and a select).
//! - sigma(t) computed as 1 / (1 + ex2(-t log2 e)): relative error <= (2|t| + 6) EPS (constant and
//!   product roundings scale the exponent by (1 + 2 EPS), i.e. 2|t| EPS relative on 2^t; ex2.approx
//!   2 ulp = 4 EPS; the add and the div 1 EPS each).
//! - silu_forward x sigma(x): (2|x| + 7) EPS |ref|. silu_backward s + x s sb, times dy:
//!   (4|x| + 16) EPS M, M = |dy| (s + |x| s sb), the sum of the magnitudes of the terms.
//! - gelu (v = 2u log2 e, formed with relative error 5 EPS): each sigmoid (5 ln2 |v| + 6) EPS;
//!   forward and backward are within (8|v| + 24) EPS M (M = |ref| forward, |dy| (s + |x du2 s sb|)
//!   backward). For |x| > 1e4 the kernel clamps x, so |v| is taken at the clamp.
//! - Where a sigmoid underflows (|t| > 87) the kernel's value is 0 or subnormal: absolute floor
//!   (1 + |x|) |dy| 2^-120.
//! - Finite differences (central, h = 1e-4 max(1, |x|)) add h^2 / 6 max|f'''| <= h^2 / 3 (|f'''| <= 2
//!   for both functions) plus 1e-15 max(1, |f|) / h of f64 cancellation.

mod common;
use common::*;
use kir_interp::Buffer;

fn edge_values() -> Vec<f32> {
    let mut v = vec![
        0.0, -0.0, 1.0, -1.0, 1e-30, -1e-30, 0.5, -0.75, 3.0, -3.0, 10.0, -10.0, 50.0, -50.0, 87.0, -87.0, 100.0,
        -100.0,
    ];
    v.extend([1e4, -1e4, 1e6, -1e6, 1e20, -1e20, 3e38, -3e38, f32::NAN]);
    v
}

/// Random x in [-8, 8) followed by the edge values; the length is never a multiple of a block.
fn inputs(n_rand: usize, seed: u64) -> Vec<f32> {
    let mut x = Rng::new(seed).vec(n_rand, 8.0);
    x.extend(edge_values());
    x
}

fn run_fwd(name: &str, x: &[f32], block: u32) -> Vec<f64> {
    let m = load("activations.kir");
    let mut bufs = vec![Buffer::from_f32(x), Buffer::zeros(kir_ir::ScalarType::F32, x.len())];
    launch(&m, name, [blocks(x.len(), block), 1, 1], [block, 1, 1], &[buf(0), buf(1), u32a(x.len() as u32)], &mut bufs);
    bufs[1].to_f64()
}

fn run_bwd(file: &str, name: &str, x: &[f32], dy: &[f32], block: u32) -> Vec<f64> {
    let m = load(file);
    let mut bufs = vec![Buffer::from_f32(x), Buffer::from_f32(dy), Buffer::zeros(kir_ir::ScalarType::F32, x.len())];
    launch(
        &m,
        name,
        [blocks(x.len(), block), 1, 1],
        [block, 1, 1],
        &[buf(0), buf(1), buf(2), u32a(x.len() as u32)],
        &mut bufs,
    );
    // the inputs are untouched
    assert_eq!(
        bufs[0].to_f32().iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        x.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    bufs[2].to_f64()
}

fn floor(x: f64, dy: f64) -> f64 {
    (1.0 + x.abs().min(1e30)) * dy.abs() * 2f64.powi(-120)
}

const SHAPES: [(usize, u32); 3] = [(1, 32), (250, 96), (3001, 256)];

#[test]
fn relu_forward_and_backward_are_exact() {
    for (i, &(n, b)) in SHAPES.iter().enumerate() {
        let x = inputs(n, 10 + i as u64);
        let dy = Rng::new(20 + i as u64).vec(x.len(), 4.0);
        let y = run_fwd("relu_forward", &x, b);
        let want: Vec<f64> = x
            .iter()
            .map(|&v| {
                if v.is_nan() {
                    f64::NAN
                } else if v > 0.0 {
                    v as f64
                } else {
                    0.0
                }
            })
            .collect();
        check("relu_forward", &y, &want, &vec![0.0; x.len()]);
        let dx = run_bwd("relu_backward.kir", "relu_backward", &x, &dy, b);
        let want: Vec<f64> = x.iter().zip(&dy).map(|(&v, &g)| if v > 0.0 { g as f64 } else { 0.0 }).collect();
        check("relu_backward", &dx, &want, &vec![0.0; x.len()]);
    }
}

#[test]
fn relu_backward_passes_nan_gradients_where_x_is_positive() {
    let x = [1.0f32, -1.0, 0.0, f32::NAN, f32::INFINITY];
    let dy = [f32::NAN, f32::NAN, 5.0, 5.0, 2.0];
    let dx = run_bwd("relu_backward.kir", "relu_backward", &x, &dy, 32);
    check("relu_backward edge", &dx, &[f64::NAN, 0.0, 0.0, 0.0, 2.0], &[0.0; 5]);
}

#[test]
fn gelu_forward_matches_f64_within_the_derived_bound() {
    for (i, &(n, b)) in SHAPES.iter().enumerate() {
        let x = inputs(n, 30 + i as u64);
        let y = run_fwd("gelu_forward", &x, b);
        let want: Vec<f64> = x.iter().map(|&v| gelu_tanh(v as f64)).collect();
        let tol: Vec<f64> = x
            .iter()
            .zip(&want)
            .map(|(&v, r)| (8.0 * gelu_v(v as f64).abs() + 24.0) * EPS * r.abs() + floor(v as f64, 1.0))
            .collect();
        check("gelu_forward", &y, &want, &tol);
    }
}

fn gelu_bwd_tol(x: f64, dy: f64) -> f64 {
    let xc = x.clamp(-1e4, 1e4);
    let (t1, t2) = gelu_tanh_grad_terms(xc);
    (8.0 * gelu_v(xc).abs() + 24.0) * EPS * dy.abs() * (t1.abs() + t2.abs()) + floor(x, dy)
}

#[test]
fn gelu_backward_matches_the_analytic_derivative() {
    for (i, &(n, b)) in SHAPES.iter().enumerate() {
        let x = inputs(n, 40 + i as u64);
        let dy = Rng::new(50 + i as u64).vec(x.len(), 2.0);
        let dx = run_bwd("activations.kir", "gelu_backward", &x, &dy, b);
        let want: Vec<f64> = x.iter().zip(&dy).map(|(&v, &g)| g as f64 * gelu_tanh_grad(v as f64)).collect();
        let tol: Vec<f64> = x.iter().zip(&dy).map(|(&v, &g)| gelu_bwd_tol(v as f64, g as f64)).collect();
        check("gelu_backward", &dx, &want, &tol);
    }
}

#[test]
fn gelu_backward_matches_a_finite_difference_of_the_forward() {
    let x: Vec<f32> = Rng::new(60).vec(997, 6.0);
    let dy = Rng::new(61).vec(x.len(), 2.0);
    let dx = run_bwd("activations.kir", "gelu_backward", &x, &dy, 128);
    let mut want = Vec::new();
    let mut tol = Vec::new();
    for (&v, &g) in x.iter().zip(&dy) {
        let (d, h) = central_diff(gelu_tanh, v as f64);
        want.push(g as f64 * d);
        tol.push(
            gelu_bwd_tol(v as f64, g as f64)
                + (g as f64).abs() * (h * h / 3.0 + 1e-15 * gelu_tanh(v as f64).abs().max(1.0) / h),
        );
    }
    check("gelu_backward vs finite difference", &dx, &want, &tol);
}

#[test]
fn silu_forward_matches_f64_within_the_derived_bound() {
    for (i, &(n, b)) in SHAPES.iter().enumerate() {
        let x = inputs(n, 70 + i as u64);
        let y = run_fwd("silu_forward", &x, b);
        let want: Vec<f64> = x.iter().map(|&v| silu(v as f64)).collect();
        let tol: Vec<f64> = x
            .iter()
            .zip(&want)
            .map(|(&v, r)| (2.0 * (v as f64).abs() + 7.0) * EPS * r.abs() + floor(v as f64, 1.0))
            .collect();
        check("silu_forward", &y, &want, &tol);
    }
}

fn silu_bwd_tol(x: f64, dy: f64) -> f64 {
    let (s, sb) = (sigmoid(x), sigmoid(-x));
    (4.0 * x.abs().min(1e30) + 16.0) * EPS * dy.abs() * (s + (x * s * sb).abs()) + floor(x, dy)
}

#[test]
fn silu_backward_matches_the_analytic_derivative() {
    for (i, &(n, b)) in SHAPES.iter().enumerate() {
        let x = inputs(n, 80 + i as u64);
        let dy = Rng::new(90 + i as u64).vec(x.len(), 2.0);
        let dx = run_bwd("activations.kir", "silu_backward", &x, &dy, b);
        let want: Vec<f64> = x.iter().zip(&dy).map(|(&v, &g)| g as f64 * silu_grad(v as f64)).collect();
        let tol: Vec<f64> = x.iter().zip(&dy).map(|(&v, &g)| silu_bwd_tol(v as f64, g as f64)).collect();
        check("silu_backward", &dx, &want, &tol);
    }
}

#[test]
fn silu_backward_matches_a_finite_difference_of_the_forward() {
    let x: Vec<f32> = Rng::new(100).vec(1003, 12.0);
    let dy = Rng::new(101).vec(x.len(), 2.0);
    let dx = run_bwd("activations.kir", "silu_backward", &x, &dy, 64);
    let mut want = Vec::new();
    let mut tol = Vec::new();
    for (&v, &g) in x.iter().zip(&dy) {
        let (d, h) = central_diff(silu, v as f64);
        want.push(g as f64 * d);
        tol.push(
            silu_bwd_tol(v as f64, g as f64)
                + (g as f64).abs() * (h * h / 3.0 + 1e-15 * silu(v as f64).abs().max(1.0) / h),
        );
    }
    check("silu_backward vs finite difference", &dx, &want, &tol);
}

#[test]
fn reference_gelu_agrees_with_the_tanh_formula() {
    // the references are rewritten in sigmoid form; make sure that is the same function
    for i in -300..=300 {
        let x = i as f64 / 100.0;
        let u = gelu_u(x);
        let tanh_form = 0.5 * x * (1.0 + u.tanh());
        assert!((gelu_tanh(x) - tanh_form).abs() <= 1e-15, "x = {x}");
        let t = u.tanh();
        let d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_K0 * (1.0 + 3.0 * GELU_K1 * x * x);
        assert!((gelu_tanh_grad(x) - d).abs() <= 1e-14, "x = {x}");
    }
}
