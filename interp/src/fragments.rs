//! The warp-wide data layouts of the tensor-core instructions: which lane holds which element of
//! an `mma` operand, and what `ldmatrix` gives each lane. Pure functions of the 32 lanes' register
//! bits; `crate::exec` gathers the registers and checks the warp.
//!
//! Sources, the PTX ISA (section 9.7.15.5, "Matrix multiply-accumulate operation using mma
//! instruction"), with `g = %laneid >> 2` (`groupID`) and `q = %laneid % 4`
//! (`threadID_in_group`):
//! - "Matrix Fragments for `mma.m16n8k16` with floating point type" (9.7.15.5.8), `.f16`/`.bf16`:
//!   A is four `.f16x2` registers holding a0..a7 (low to high), `ai` at row `g` for
//!   `0 <= i < 2 || 4 <= i < 6` and `g + 8` otherwise, column `2q + (i & 1)` for `i < 4` and
//!   `2q + (i & 1) + 8` for `i >= 4`; B is two `.f16x2` registers holding b0..b3, `bi` at row
//!   `2q + (i & 1)` for `i < 2` and `2q + (i & 1) + 8` for `i >= 2`, column `g`; C/D (`.f32`) is
//!   four registers c0..c3, `ci` at row `g` for `i < 2` and `g + 8` for `i >= 2`, column
//!   `2q + (i & 1)`.
//! - "Matrix Fragments for `mma.m16n8k8`" (9.7.15.5.7), `.tf32`: A is four `.b32` registers a0..a3,
//!   row `g` for a0 and a2 and `g + 8` for a1 and a3, column `q` for a0 and a1 and `q + 4` for a2
//!   and a3; B is two `.b32` registers b0, b1, row `q` for b0 and `q + 4` for b1, column `g`; C/D
//!   as for m16n8k16.
//! - "Warp-level matrix load instruction: `ldmatrix`" (9.7.15.5.15), `.m8n8` with `.b16`: the
//!   addresses of the rows of matrix `j` come from threads `8j..8j + 7` (row `r` from thread
//!   `8j + r`); "a group of four consecutive threads loads 16 bytes" (one row), "each thread in a
//!   warp loads fragments of a row, with thread 0 receiving the first fragment": lane `l` gets row
//!   `l / 4`, columns `2(l % 4)` and `2(l % 4) + 1`, in register `j` for matrix `j`; `.trans`
//!   loads the matrix "in column-major format", i.e. lane `l` gets rows `2(l % 4)` and
//!   `2(l % 4) + 1` of column `l / 4`.
//!
//! In a register holding two 16-bit elements, the lower-numbered one is in the low 16 bits
//! ("Elements (low to high)").
//!
//! Guarantees: [`mma`] computes every output with `kir_ir::eval::tensor_core::dot` (the one model
//! of tensor-core arithmetic), over `k` in order, with the C element as its addend; the layouts
//! above are the only other thing it does. Nothing here panics.

use kir_ir::eval::tensor_core::{dot, TensorCoreInput, TensorCoreRule};
use kir_ir::op::MmaKind;

/// One lane's `mma` operands: A as four `u32`, B as two, C as four f32 bit patterns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MmaLane {
    pub a: [u32; 4],
    pub b: [u32; 2],
    pub c: [u32; 4],
}

/// `(row, column)` of C's (or D's) element `i` (0..4) in lane `l`.
pub(crate) fn c_position(l: usize, i: usize) -> (usize, usize) {
    let (g, q) = (l >> 2, l & 3);
    (g + 8 * (i >> 1), 2 * q + (i & 1))
}

/// `(row, column)` of A's element `i` in lane `l`: a 16-bit element (0..8) for f16/bf16, a `u32`
/// (0..4) for tf32.
pub(crate) fn a_position(kind: MmaKind, l: usize, i: usize) -> (usize, usize) {
    let (g, q) = (l >> 2, l & 3);
    match kind {
        MmaKind::F16 | MmaKind::Bf16 => (g + 8 * ((i >> 1) & 1), 2 * q + (i & 1) + 8 * (i >> 2)),
        MmaKind::Tf32 => (g + 8 * (i & 1), q + 4 * (i >> 1)),
    }
}

/// `(k, column)` of B's element `i` in lane `l`: a 16-bit element (0..4) for f16/bf16, a `u32`
/// (0..2) for tf32.
pub(crate) fn b_position(kind: MmaKind, l: usize, i: usize) -> (usize, usize) {
    let (g, q) = (l >> 2, l & 3);
    match kind {
        MmaKind::F16 | MmaKind::Bf16 => (2 * q + (i & 1) + 8 * (i >> 1), g),
        MmaKind::Tf32 => (q + 4 * i, g),
    }
}

/// The input format of `kind`.
pub(crate) fn input_format(kind: MmaKind) -> TensorCoreInput {
    match kind {
        MmaKind::F16 => TensorCoreInput::F16,
        MmaKind::Bf16 => TensorCoreInput::Bf16,
        MmaKind::Tf32 => TensorCoreInput::Tf32,
    }
}

/// The warp's `D = A·B + C` for `mma` of `kind` under `rule`: each lane's four D elements (f32
/// bits), from the 32 lanes' fragments.
pub(crate) fn mma(rule: TensorCoreRule, kind: MmaKind, lanes: &[MmaLane; 32]) -> [[u32; 4]; 32] {
    let k = kind.k();
    let mut a = [[0u64; 16]; 16];
    let mut b = [[0u64; 16]; 8]; // b[column][k]
    let mut c = [[0u32; 8]; 16];
    let halves = !matches!(kind, MmaKind::Tf32);
    for (l, f) in lanes.iter().enumerate() {
        let a_elems = if halves { 8 } else { 4 };
        for i in 0..a_elems {
            let bits = if halves { (f.a[i / 2] >> (16 * (i % 2))) & 0xffff } else { f.a[i] };
            let (r, col) = a_position(kind, l, i);
            a[r][col] = bits as u64;
        }
        let b_elems = if halves { 4 } else { 2 };
        for i in 0..b_elems {
            let bits = if halves { (f.b[i / 2] >> (16 * (i % 2))) & 0xffff } else { f.b[i] };
            let (kk, col) = b_position(kind, l, i);
            b[col][kk] = bits as u64;
        }
        for i in 0..4 {
            let (r, col) = c_position(l, i);
            c[r][col] = f.c[i];
        }
    }
    let fmt = input_format(kind);
    let mut d = [[0u32; 4]; 32];
    for (l, out) in d.iter_mut().enumerate() {
        for (i, o) in out.iter_mut().enumerate() {
            let (r, col) = c_position(l, i);
            *o = dot(rule, fmt, &a[r][..k], &b[col][..k], c[r][col]);
        }
    }
    d
}

/// What lane `l` gets in register `j` of an `ldmatrix`, given matrix `j` as `rows[r][c]` (16-bit
/// elements): two elements, the first in the low half.
pub(crate) fn ldmatrix_lane(rows: &[[u16; 8]; 8], trans: bool, l: usize) -> u32 {
    let (r, c) = (l / 4, 2 * (l % 4));
    let (lo, hi) = if trans { (rows[c][r], rows[c + 1][r]) } else { (rows[r][c], rows[r][c + 1]) };
    lo as u32 | (hi as u32) << 16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of each operand is held by exactly one (lane, index).
    #[test]
    fn layouts_cover_each_element_once() {
        for kind in MmaKind::ALL {
            let k = kind.k();
            let (na, nb) = if kind == MmaKind::Tf32 { (4, 2) } else { (8, 4) };
            let mut seen_a = vec![0; 16 * k];
            let mut seen_b = vec![0; k * 8];
            let mut seen_c = [0; 128];
            for l in 0..32 {
                for i in 0..na {
                    let (r, c) = a_position(kind, l, i);
                    seen_a[r * k + c] += 1;
                }
                for i in 0..nb {
                    let (r, c) = b_position(kind, l, i);
                    seen_b[r * 8 + c] += 1;
                }
                for i in 0..4 {
                    let (r, c) = c_position(l, i);
                    seen_c[r * 8 + c] += 1;
                }
            }
            assert!(seen_a.iter().all(|&n| n == 1), "{kind:?} A");
            assert!(seen_b.iter().all(|&n| n == 1), "{kind:?} B");
            assert!(seen_c.iter().all(|&n| n == 1), "{kind:?} C");
        }
    }

    /// The ISA's formulas, spelled out for a few lanes.
    #[test]
    fn layouts_match_the_isa_examples() {
        // Lane 5: g = 1, q = 1.
        assert_eq!(a_position(MmaKind::F16, 5, 0), (1, 2));
        assert_eq!(a_position(MmaKind::F16, 5, 3), (9, 3));
        assert_eq!(a_position(MmaKind::F16, 5, 4), (1, 10));
        assert_eq!(a_position(MmaKind::F16, 5, 7), (9, 11));
        assert_eq!(b_position(MmaKind::Bf16, 5, 1), (3, 1));
        assert_eq!(b_position(MmaKind::Bf16, 5, 2), (10, 1));
        assert_eq!(a_position(MmaKind::Tf32, 5, 1), (9, 1));
        assert_eq!(a_position(MmaKind::Tf32, 5, 2), (1, 5));
        assert_eq!(b_position(MmaKind::Tf32, 5, 1), (5, 1));
        assert_eq!(c_position(5, 3), (9, 3));
    }
}
