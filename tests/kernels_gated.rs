//! kernels/gated_backward.kir (GLU, ReGLU, SwiGLU, GeGLU backward; f32, f16, bf16 storage) in the
//! interpreter against f64 references and finite differences.
//!
//! Error bounds for the f32 math (EPS = 2^-24; M = sum of the magnitudes of the terms):
//! - sigmoids: (2|b| + 6) EPS relative each (see tests/kernels_activations.rs).
//!   glu da = dy s: (2|b| + 8) EPS |da|; glu db = dy a s sb: (4|b| + 16) EPS |db|.
//!   swiglu da = dy b s: (2|b| + 9) EPS |da|; db = dy a (s + b s sb): (4|b| + 18) EPS M.
//! - reglu: one rounding per output: EPS |ref|.
//! - geglu: Phi within (30 + 1.5 b^2) EPS Phi (Numerical Recipes erfcc, relative 1.2e-7 = 2 EPS,
//!   f32 coefficients 6 EPS, t and the exponent -z^2 + p(t) rounded: (12 + 1.5 b^2) EPS, ex2 4 EPS,
//!   the final products and 1 - q: 6 EPS), phi within (6 + 1.5 b^2) EPS phi;
//!   da = dy b Phi: (32 + 1.5 b^2) EPS |da|; db = dy a (Phi + b phi): (34 + 1.5 b^2) EPS M.
//! - Where a sigmoid or exponential underflows, absolute floor (1 + |b|) |dy| (1 + |a|) 2^-120.
//! - f16/bf16: the f32 result is rounded to the storage type: + u (|ref| + err) + half a subnormal
//!   step, u = 2^-11 (f16) or 2^-8 (bf16) ([`Storage::stored_bound`]).

mod common;
use common::*;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Glu,
    ReGlu,
    SwiGlu,
    GeGlu,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Glu => "glu",
            Kind::ReGlu => "reglu",
            Kind::SwiGlu => "swiglu",
            Kind::GeGlu => "geglu",
        }
    }
    /// gate(b) of the forward y = a gate(b).
    fn gate(self, b: f64) -> f64 {
        match self {
            Kind::Glu => sigmoid(b),
            Kind::ReGlu => b.max(0.0),
            Kind::SwiGlu => b * sigmoid(b),
            Kind::GeGlu => b * phi_cdf(b),
        }
    }
    /// (da, db, tol_da, tol_db) for one element, in f64, before storage rounding.
    fn reference(self, a: f64, b: f64, g: f64) -> (f64, f64, f64, f64) {
        let fl = (1.0 + b.abs().min(1e30)) * g.abs() * (1.0 + a.abs()) * 2f64.powi(-120);
        let bb = b.abs().min(1e30);
        match self {
            Kind::Glu => {
                let (s, sb) = (sigmoid(b), sigmoid(-b));
                let (da, db) = (g * s, g * a * s * sb);
                (da, db, (2.0 * bb + 8.0) * EPS * da.abs() + fl, (4.0 * bb + 16.0) * EPS * db.abs() + fl)
            }
            Kind::ReGlu => {
                let (da, db) = if b > 0.0 { (g * b, g * a) } else { (0.0, 0.0) };
                (da, db, EPS * da.abs(), EPS * db.abs())
            }
            Kind::SwiGlu => {
                let (s, sb) = (sigmoid(b), sigmoid(-b));
                let da = g * b * s;
                let db = g * a * (s + b * s * sb);
                let m = (g * a).abs() * (s + (b * s * sb).abs());
                (da, db, (2.0 * bb + 9.0) * EPS * da.abs() + fl, (4.0 * bb + 18.0) * EPS * m + fl)
            }
            Kind::GeGlu => {
                let (p, d) = (phi_cdf(b), phi_pdf(b));
                let da = g * b * p;
                let db = g * a * (p + b * d);
                let m = (g * a).abs() * (p + (b * d).abs());
                let c = 1.5 * bb * bb;
                (da, db, (32.0 + c) * EPS * da.abs() + fl, (34.0 + c) * EPS * m + fl)
            }
        }
    }
}

const KINDS: [Kind; 4] = [Kind::Glu, Kind::ReGlu, Kind::SwiGlu, Kind::GeGlu];
const STORAGES: [Storage; 3] = [Storage::F32, Storage::F16, Storage::BF16];

/// Runs `<kind>_backward_<storage>` on x = [rows, 2h], dy = [rows, h]; returns dx as f64.
fn run(kind: Kind, st: Storage, x: &[f32], dy: &[f32], h: usize, block: u32) -> Vec<f64> {
    let m = load("gated_backward.kir");
    let name = format!("{}_backward_{}", kind.name(), st.suffix());
    let n = dy.len();
    let mut bufs = vec![st.buffer(x), st.buffer(dy), st.zeros(x.len())];
    launch(
        &m,
        &name,
        [blocks(n, block), 1, 1],
        [block, 1, 1],
        &[buf(0), buf(1), buf(2), u32a(n as u32), u32a(h as u32)],
        &mut bufs,
    );
    bufs[2].to_f64()
}

/// Inputs: a, dy uniform in [-3, 3), b uniform in [-6, 6) with edge values written over the first
/// columns of b; all rounded to the storage type.
fn inputs(st: Storage, rows: usize, h: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut r = Rng::new(seed);
    let mut x = Vec::with_capacity(rows * 2 * h);
    let big: f32 = if st == Storage::F16 { 6e4 } else { 1e30 };
    let edges = [0.0f32, -0.0, 1e-20, -1e-20, 5.0, -5.0, 10.0, -10.0, 30.0, -30.0, 1e4, -1e4, big, -big, f32::NAN];
    let mut e = 0;
    for _ in 0..rows {
        for _ in 0..h {
            x.push(st.round(r.unit() * 3.0));
        }
        for j in 0..h {
            let v = if j < 2 && e < edges.len() {
                e += 1;
                edges[e - 1]
            } else {
                r.unit() * 6.0
            };
            x.push(st.round(v));
        }
    }
    let dy: Vec<f32> = (0..rows * h).map(|_| st.round(r.unit() * 3.0)).collect();
    (x, dy)
}

fn check_against_reference(kind: Kind, st: Storage, rows: usize, h: usize, block: u32, seed: u64) {
    let (x, dy) = inputs(st, rows, h, seed);
    let got = run(kind, st, &x, &dy, h, block);
    let mut want = vec![0.0; x.len()];
    let mut tol = vec![0.0; x.len()];
    for r in 0..rows {
        for j in 0..h {
            let (ia, ib) = (r * 2 * h + j, r * 2 * h + h + j);
            let (da, db, ta, tb) = kind.reference(x[ia] as f64, x[ib] as f64, dy[r * h + j] as f64);
            // the kernel rounds to the storage type, so overflow there is the reference's too
            want[ia] = st.round(da as f32) as f64;
            want[ib] = st.round(db as f32) as f64;
            want[ia] = if want[ia].is_infinite() { want[ia] } else { da };
            want[ib] = if want[ib].is_infinite() { want[ib] } else { db };
            tol[ia] = st.stored_bound(da, ta);
            tol[ib] = st.stored_bound(db, tb);
        }
    }
    check(&format!("{}_backward_{} rows={rows} h={h}", kind.name(), st.suffix()), &got, &want, &tol);
}

#[test]
fn every_variant_matches_f64_on_several_shapes() {
    let mut seed = 1000;
    for kind in KINDS {
        for st in STORAGES {
            for &(rows, h, block) in &[(1usize, 1usize, 32u32), (3, 37, 128), (17, 129, 96), (8, 8, 1024)] {
                seed += 1;
                check_against_reference(kind, st, rows, h, block, seed);
            }
        }
    }
}

#[test]
fn f32_variants_match_finite_differences_of_the_forward() {
    // y = a gate(b): da = dy gate(b) (exact), db = dy a gate'(b), by central difference.
    let (rows, h) = (9, 50);
    for (k, kind) in KINDS.iter().enumerate() {
        let mut r = Rng::new(2000 + k as u64);
        let x: Vec<f32> = (0..rows * 2 * h).map(|_| r.unit() * 4.0).collect();
        let dy: Vec<f32> = (0..rows * h).map(|_| r.unit() * 2.0).collect();
        let got = run(*kind, Storage::F32, &x, &dy, h, 64);
        let (mut g_sel, mut want, mut tol) = (Vec::new(), Vec::new(), Vec::new());
        for row in 0..rows {
            for j in 0..h {
                let (ia, ib) = (row * 2 * h + j, row * 2 * h + h + j);
                let (a, b, g) = (x[ia] as f64, x[ib] as f64, dy[row * h + j] as f64);
                if matches!(kind, Kind::ReGlu) && b.abs() < 1e-3 {
                    continue; // max(b, 0) has no derivative at 0
                }
                let (_, _, ta, tb) = kind.reference(a, b, g);
                let (d, step) = central_diff(|t| kind.gate(t), b);
                let fd = step * step / 3.0 + 1e-15 * kind.gate(b).abs().max(1.0) / step;
                g_sel.extend([got[ia], got[ib]]);
                want.extend([g * kind.gate(b), g * a * d]);
                tol.extend([ta, tb + (g * a).abs() * fd]);
            }
        }
        check(&format!("{}_backward_f32 vs finite difference", kind.name()), &g_sel, &want, &tol);
    }
}

#[test]
fn nan_gate_inputs_give_nan_except_for_the_reglu_mask() {
    for kind in KINDS {
        let x = [1.5f32, f32::NAN];
        let dy = [2.0f32];
        let got = run(kind, Storage::F32, &x, &dy, 1, 32);
        if matches!(kind, Kind::ReGlu) {
            assert_eq!(got, vec![0.0, 0.0], "reglu: the mask b > 0 is false for NaN");
        } else {
            assert!(got[0].is_nan() && got[1].is_nan(), "{}: {got:?}", kind.name());
        }
    }
}

#[test]
fn reference_erfc_matches_known_values() {
    // values from a correctly rounded erfc (Python's math.erfc)
    for (x, want) in [
        (0.0, 1.0),
        (0.5, 0.4795001221869535),
        (1.0, 0.15729920705028513),
        (2.0, 0.004677734981047265),
        (2.9, 4.109787809945886e-05),
        (3.0, 2.2090496998585438e-05),
        (5.0, 1.5374597944280351e-12),
        (-1.0, 1.842700792949715),
    ] {
        let got = erfc(x);
        assert!((got - want).abs() <= 1e-13 * want, "erfc({x}) = {got}, want {want}");
    }
}
