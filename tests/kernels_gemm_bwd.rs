//! kernels/gemm_bwd.kir: the four GEMM + bias + activation backward kernels (and accumulate
//! variants) in the interpreter against f64 references and finite differences.
//!
//! Error bounds (EPS = 2^-24): an fma chain of L terms is within L EPS of the sum of |terms|
//! (pre: L = k + 1 with the bias). grad_pre = grad act'(pre): the kernel's pre differs from the
//! exact one by dp <= (k + 1) EPS S (S = sum |a b| + |bias|), moving act' by at most
//! max|act''| dp (GELU 1, SiLU 0.5, sigmoid 0.1, tanh 0.8); act' itself carries the
//! activations.kir bounds: GELU (8|v| + 24) EPS M, SiLU (4|x| + 16) EPS M, sigmoid (4|x| + 13) EPS
//! s sb, tanh (8|x| + 14) EPS 4 s(2x) s(-2x); the final product adds EPS. ReLU is exact except
//! where |pre| <= dp (the mask may flip there; such elements are skipped). Accumulate variants
//! add one more rounding of |old + sum|.

mod common;
use common::*;
use kir_interp::Buffer;

const ACTS: [u32; 6] = [0, 1, 2, 3, 4, 5];

fn act_grad_ref(act: u32, x: f64) -> f64 {
    match act {
        0 => 1.0,
        1 => {
            if x > 0.0 {
                1.0
            } else {
                0.0
            }
        }
        2 => gelu_tanh_grad(x),
        3 => silu_grad(x),
        4 => sigmoid(x) * sigmoid(-x),
        5 => 4.0 * sigmoid(2.0 * x) * sigmoid(-2.0 * x),
        _ => f64::NAN,
    }
}

fn act_fwd_ref(act: u32, x: f64) -> f64 {
    match act {
        0 => x,
        1 => x.max(0.0),
        2 => gelu_tanh(x),
        3 => silu(x),
        4 => sigmoid(x),
        5 => x.tanh(),
        _ => f64::NAN,
    }
}

/// Bound on |act'_kernel(pre_kernel) - act'(pre)| given |pre_kernel - pre| <= dp.
fn act_grad_bound(act: u32, x: f64, dp: f64) -> f64 {
    let (s, sb) = (sigmoid(x), sigmoid(-x));
    match act {
        0 | 1 => 0.0,
        2 => {
            let (t1, t2) = gelu_tanh_grad_terms(x);
            (8.0 * gelu_v(x).abs() + 24.0) * EPS * (t1.abs() + t2.abs()) + 1.0 * dp
        }
        3 => (4.0 * x.abs() + 16.0) * EPS * (s + (x * s * sb).abs()) + 0.5 * dp,
        4 => (4.0 * x.abs() + 13.0) * EPS * s * sb + 0.1 * dp,
        _ => (8.0 * x.abs() + 14.0) * EPS * 4.0 * sigmoid(2.0 * x) * sigmoid(-2.0 * x) + 0.8 * dp,
    }
}

struct Problem {
    m: usize,
    n: usize,
    k: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    bias: Vec<f32>,
    grad: Vec<f32>,
}

impl Problem {
    fn new(m: usize, n: usize, k: usize, seed: u64) -> Problem {
        let mut r = Rng::new(seed);
        // scale so |pre| reaches a few units, where the activations bend
        let s = 3.0 / (k as f32).sqrt();
        Problem { m, n, k, a: r.vec(m * k, s), b: r.vec(k * n, 1.0), bias: r.vec(n, 1.0), grad: r.vec(m * n, 2.0) }
    }
    /// pre[i, j] in f64 and the magnitude sum S.
    fn pre(&self, i: usize, j: usize) -> (f64, f64) {
        let (mut p, mut s) = (self.bias[j] as f64, (self.bias[j] as f64).abs());
        for l in 0..self.k {
            let t = self.a[i * self.k + l] as f64 * self.b[l * self.n + j] as f64;
            p += t;
            s += t.abs();
        }
        (p, s)
    }
}

fn run_grad_pre(p: &Problem, act: u32, block: u32) -> Vec<f64> {
    let m = load("gemm_bwd.kir");
    let mn = p.m * p.n;
    let mut bufs = vec![
        Buffer::from_f32(&p.grad),
        Buffer::from_f32(&p.a),
        Buffer::from_f32(&p.b),
        Buffer::from_f32(&p.bias),
        Buffer::from_f32(&vec![-9.0; mn]),
    ];
    let args =
        [buf(0), buf(1), buf(2), buf(3), buf(4), u32a(p.m as u32), u32a(p.n as u32), u32a(p.k as u32), u32a(act)];
    launch(&m, "gemm_bias_act_bwd_grad_pre", [blocks(mn, block), 1, 1], [block, 1, 1], &args, &mut bufs);
    bufs[4].to_f64()
}

const SHAPES: [(usize, usize, usize, u32); 4] =
    [(1, 1, 1, 32), (19, 75, 29, 256), (33, 17, 64, 100), (4, 300, 3, 1024)];

#[test]
fn grad_pre_matches_f64_for_every_activation() {
    for (si, &(m, n, k, block)) in SHAPES.iter().enumerate() {
        let p = Problem::new(m, n, k, 400 + si as u64);
        for act in ACTS {
            let got = run_grad_pre(&p, act, block);
            let (mut g, mut want, mut tol) = (Vec::new(), Vec::new(), Vec::new());
            for i in 0..m {
                for j in 0..n {
                    let (pre, s) = p.pre(i, j);
                    let dp = (k as f64 + 1.0) * EPS * s;
                    if act == 1 && pre.abs() <= dp {
                        continue;
                    }
                    let gr = p.grad[i * n + j] as f64;
                    let d = act_grad_ref(act, pre);
                    g.push(got[i * n + j]);
                    want.push(gr * d);
                    tol.push(gr.abs() * (act_grad_bound(act, pre, dp) + EPS * d.abs()));
                }
            }
            assert!(want.len() * 10 >= m * n * 9, "too many elements skipped");
            check(&format!("grad_pre act={act} m={m} n={n} k={k}"), &g, &want, &tol);
        }
    }
}

#[test]
fn grad_pre_matches_finite_differences_of_the_activations() {
    let p = Problem::new(23, 41, 13, 410);
    for act in [2u32, 3, 4, 5] {
        let got = run_grad_pre(&p, act, 128);
        let (mut want, mut tol) = (Vec::new(), Vec::new());
        for i in 0..p.m {
            for j in 0..p.n {
                let (pre, s) = p.pre(i, j);
                let dp = (p.k as f64 + 1.0) * EPS * s;
                let (d, h) = central_diff(|x| act_fwd_ref(act, x), pre);
                let gr = p.grad[i * p.n + j] as f64;
                want.push(gr * d);
                // |f'''| <= 2 for all four activations
                tol.push(
                    gr.abs()
                        * (act_grad_bound(act, pre, dp)
                            + EPS * d.abs()
                            + h * h / 3.0
                            + 1e-15 * act_fwd_ref(act, pre).abs().max(1.0) / h),
                );
            }
        }
        check(&format!("grad_pre act={act} vs finite difference"), &got, &want, &tol);
    }
}

#[test]
fn grad_pre_with_an_unknown_activation_writes_nan() {
    let p = Problem::new(3, 5, 2, 420);
    for act in [6u32, 9, u32::MAX] {
        assert!(run_grad_pre(&p, act, 32).iter().all(|v| v.is_nan()), "act {act}");
    }
}

/// Runs a reduction kernel: out = the `_accum` variant adds to `init`.
fn run_reduce(name: &str, inputs: [&[f32]; 2], init: &[f32], dims: &[u32], threads: usize, block: u32) -> Vec<f64> {
    let m = load("gemm_bwd.kir");
    let mut bufs = vec![Buffer::from_f32(inputs[0])];
    let mut args = vec![buf(0)];
    if !inputs[1].is_empty() {
        bufs.push(Buffer::from_f32(inputs[1]));
        args.push(buf(1));
    }
    bufs.push(Buffer::from_f32(init));
    args.push(buf(bufs.len() - 1));
    args.extend(dims.iter().map(|d| u32a(*d)));
    let last = bufs.len() - 1;
    launch(&m, name, [blocks(threads, block), 1, 1], [block, 1, 1], &args, &mut bufs);
    bufs[last].to_f64()
}

#[test]
fn da_db_dbias_and_their_accumulate_variants_match_f64() {
    for (si, &(m, n, k, block)) in SHAPES.iter().enumerate() {
        let mut r = Rng::new(430 + si as u64);
        let (a, b, gp) = (r.vec(m * k, 1.0), r.vec(k * n, 1.0), r.vec(m * n, 1.0));
        for accum in [false, true] {
            let sfx = if accum { "_accum" } else { "" };
            let init = |len: usize, r: &mut Rng| if accum { r.vec(len, 4.0) } else { vec![f32::NAN; len] };
            let finish = |sum: f64, mag: f64, len: usize, old: f32| -> (f64, f64) {
                let base = len as f64 * EPS * mag;
                if accum {
                    let w = old as f64 + sum;
                    (w, base + EPS * (w.abs() + base))
                } else {
                    (sum, base)
                }
            };
            // d_a = grad_pre B^T: [m, k]
            let o = init(m * k, &mut r);
            let got =
                run_reduce(&format!("gemm_bwd_da{sfx}"), [&gp, &b], &o, &[m as u32, n as u32, k as u32], m * k, block);
            let (mut want, mut tol) = (vec![0.0; m * k], vec![0.0; m * k]);
            for i in 0..m {
                for l in 0..k {
                    let terms: Vec<f64> = (0..n).map(|j| gp[i * n + j] as f64 * b[l * n + j] as f64).collect();
                    (want[i * k + l], tol[i * k + l]) =
                        finish(terms.iter().sum(), terms.iter().map(|t| t.abs()).sum(), n, o[i * k + l]);
                }
            }
            check(&format!("gemm_bwd_da{sfx} m={m} n={n} k={k}"), &got, &want, &tol);
            // d_b = A^T grad_pre: [k, n]
            let o = init(k * n, &mut r);
            let got =
                run_reduce(&format!("gemm_bwd_db{sfx}"), [&a, &gp], &o, &[m as u32, n as u32, k as u32], k * n, block);
            let (mut want, mut tol) = (vec![0.0; k * n], vec![0.0; k * n]);
            for l in 0..k {
                for j in 0..n {
                    let terms: Vec<f64> = (0..m).map(|i| a[i * k + l] as f64 * gp[i * n + j] as f64).collect();
                    (want[l * n + j], tol[l * n + j]) =
                        finish(terms.iter().sum(), terms.iter().map(|t| t.abs()).sum(), m, o[l * n + j]);
                }
            }
            check(&format!("gemm_bwd_db{sfx} m={m} n={n} k={k}"), &got, &want, &tol);
            // d_bias = column sums of grad_pre: [n]
            let o = init(n, &mut r);
            let got = run_reduce(&format!("gemm_bwd_dbias{sfx}"), [&gp, &[]], &o, &[m as u32, n as u32], n, block);
            let (mut want, mut tol) = (vec![0.0; n], vec![0.0; n]);
            for j in 0..n {
                let terms: Vec<f64> = (0..m).map(|i| gp[i * n + j] as f64).collect();
                (want[j], tol[j]) = finish(terms.iter().sum(), terms.iter().map(|t| t.abs()).sum(), m, o[j]);
            }
            check(&format!("gemm_bwd_dbias{sfx} m={m} n={n}"), &got, &want, &tol);
        }
    }
}

#[test]
fn da_db_dbias_match_finite_differences_of_the_forward() {
    // L(A, B, bias) = sum grad_pre .* (A B + bias) is linear in each argument, so the central
    // difference has no truncation error, only f64 rounding.
    let (m, n, k) = (7, 11, 5);
    let mut r = Rng::new(440);
    let (a, b, gp, bias) = (r.vec(m * k, 1.0), r.vec(k * n, 1.0), r.vec(m * n, 1.0), r.vec(n, 1.0));
    let loss = |a: &[f64], b: &[f64], bias: &[f64]| -> f64 {
        let mut s = 0.0;
        for i in 0..m {
            for j in 0..n {
                let mut p = bias[j];
                for l in 0..k {
                    p += a[i * k + l] * b[l * n + j];
                }
                s += gp[i * n + j] as f64 * p;
            }
        }
        s
    };
    let (a64, b64, bias64) = (f64s(&a), f64s(&b), f64s(&bias));
    let h = 1e-3;
    let fd = |which: usize, idx: usize| -> f64 {
        let mut v = [a64.clone(), b64.clone(), bias64.clone()];
        v[which][idx] += h;
        let up = loss(&v[0], &v[1], &v[2]);
        v[which][idx] -= 2.0 * h;
        (up - loss(&v[0], &v[1], &v[2])) / (2.0 * h)
    };
    // each f64 evaluation of L is within (m n + k + 1) 2^-53 of sum |terms| <= m n (k + 1)
    let fd_tol = 2.0 * ((m * n + k + 1) as f64 * 2f64.powi(-53) * (m * n * (k + 1)) as f64) / (2.0 * h);
    let dims = [m as u32, n as u32, k as u32];
    let da = run_reduce("gemm_bwd_da", [&gp, &b], &vec![0.0; m * k], &dims, m * k, 64);
    let want: Vec<f64> = (0..m * k).map(|i| fd(0, i)).collect();
    check("d_a vs finite difference", &da, &want, &vec![n as f64 * EPS * n as f64 + fd_tol; m * k]);
    let db = run_reduce("gemm_bwd_db", [&a, &gp], &vec![0.0; k * n], &dims, k * n, 64);
    let want: Vec<f64> = (0..k * n).map(|i| fd(1, i)).collect();
    check("d_b vs finite difference", &db, &want, &vec![m as f64 * EPS * m as f64 + fd_tol; k * n]);
    let dbias = run_reduce("gemm_bwd_dbias", [&gp, &[]], &vec![0.0; n], &[m as u32, n as u32], n, 64);
    let want: Vec<f64> = (0..n).map(|j| fd(2, j)).collect();
    check("d_bias vs finite difference", &dbias, &want, &vec![m as f64 * EPS * m as f64 + fd_tol; n]);
}
