//! Which buffers a kernel writes, and one-line summaries of buffers for people.
//!
//! Guarantees:
//! - [`written_params`] marks every pointer parameter from which a `store` or atomic's pointer may
//!   derive (through `offset`, `offset.bytes`, `ptrcast` and block parameters), and every one from
//!   which an argument of a `call` may derive (a function may write through any pointer it is
//!   passed); it never misses one (it may over-approximate through block parameters that merge
//!   pointers, and through calls).
//! - [`summary`] never panics; it shows the first elements, min/max/mean over non-NaN values and the
//!   NaN count (floats), in a stable format.
//! - [`listing`] shows a buffer's values exactly (integers in decimal from their bits, floats —
//!   f16 and bf16 included — as the shortest decimal that reads back to the same value, NaN with its
//!   bits unless canonical), right-aligned in rows of at most 100 characters, each row starting
//!   with the index of its first element.

use crate::buffer::Buffer;
use kir_ir::analysis::effects::param_access;
use kir_ir::{Kernel, Op, Operand};

/// For each kernel parameter, whether the kernel may write memory through it (the `write` flag of
/// [`kir_ir::analysis::effects::param_access`], over [`kir_ir::analysis::provenance`]), or pass it (or a pointer
/// derived from it) to a function, which may write through it.
pub fn written_params(k: &Kernel) -> Vec<bool> {
    let mut written: Vec<bool> = param_access(k).iter().map(|a| a.write).collect();
    if k.callees.is_empty() {
        return written;
    }
    let origin = kir_ir::analysis::provenance::pointer_origins(k);
    for (_, i) in k.placed_insts() {
        let Some(d) = k.insts.get(i.index()) else { continue };
        if !matches!(d.op, Op::Call(_)) {
            continue;
        }
        for a in &d.args {
            let Operand::Value(v) = a else { continue };
            for &o in origin.get(v.index()).into_iter().flatten() {
                if let Some(w) = written.get_mut(o as usize) {
                    *w = true;
                }
            }
        }
    }
    written
}

fn fmt_value(v: f64, float: bool) -> String {
    if float {
        format!("{v}")
    } else {
        format!("{}", v as i128)
    }
}

/// `f32[1000] [0, 1.5, ...] min -1 max 2 mean 0.25 NaN 0`.
pub fn summary(b: &Buffer) -> String {
    let vals = b.to_f64();
    let float = b.elem.is_float();
    let first: Vec<String> = vals.iter().take(8).map(|v| fmt_value(*v, float)).collect();
    let more = if vals.len() > 8 { ", ..." } else { "" };
    let mut s = format!("{}[{}] [{}{more}]", b.elem, vals.len(), first.join(", "));
    let nums: Vec<f64> = vals.iter().copied().filter(|v| !v.is_nan()).collect();
    if !nums.is_empty() {
        let min = nums.iter().copied().fold(f64::INFINITY, f64::min);
        let max = nums.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = nums.iter().sum::<f64>() / nums.len() as f64;
        s.push_str(&format!(" min {} max {} mean {mean:.6}", fmt_value(min, float), fmt_value(max, float)));
    }
    if float {
        s.push_str(&format!(" NaN {}", vals.len() - nums.len()));
    }
    s
}

/// One element, exactly: unsigned integers in decimal, the rest as the `.kir` printer writes
/// constants (signed decimal, shortest round-trip floats, `nan` or NaN bits).
pub fn element_text(b: &Buffer, i: usize) -> String {
    let bits = b.get_bits(i);
    if b.elem.is_unsigned_int() {
        bits.to_string()
    } else {
        kir_ir::text::printer::print_constant(kir_ir::Constant::from_bits(b.elem, bits))
    }
}

/// The first `limit` (all when `None`) values of `b`, as rows:
/// ```text
/// f32[10], all 10:
///   [0]  0.0  1.5  -2.25 ...
/// ```
pub fn listing(b: &Buffer, limit: Option<usize>) -> String {
    const WIDTH: usize = 100;
    let n = limit.map_or(b.len(), |l| l.min(b.len()));
    let head = if n == b.len() {
        format!("{}[{}], all {n}:", b.elem, b.len())
    } else {
        format!("{}[{}], first {n}:", b.elem, b.len())
    };
    let texts: Vec<String> = (0..n).map(|i| element_text(b, i)).collect();
    let w = texts.iter().map(String::len).max().unwrap_or(1);
    let idx_w = format!("[{}]", n.saturating_sub(1)).len();
    let per_row = ((WIDTH - 2 - idx_w) / (w + 2)).max(1);
    let mut out = head;
    for (r, row) in texts.chunks(per_row).enumerate() {
        out.push_str(&format!("\n  {:>idx_w$}", format!("[{}]", r * per_row)));
        for t in row {
            out.push_str(&format!("  {t:>w$}"));
        }
    }
    out
}

#[cfg(test)]
mod listing_tests {
    use super::*;
    use kir_ir::ScalarType;

    #[test]
    fn values_are_exact_and_rows_are_wrapped() {
        let b = Buffer::from_u32(&(0..30).collect::<Vec<u32>>());
        let text = listing(&b, None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "u32[30], all 30:");
        assert!(lines[1].starts_with("   [0]   0   1   2"), "{text}");
        assert!(lines.iter().all(|l| l.len() <= 100), "{text}");
        assert!(lines.len() > 2, "wrapped: {text}");
        assert_eq!(listing(&b, Some(3)), "u32[30], first 3:\n  [0]  0  1  2");
        assert_eq!(listing(&b, Some(99)).lines().next(), Some("u32[30], all 30:"));
        // f16 as decimals, and a signed type and a u64 beyond 2^53 exactly.
        let h = Buffer {
            elem: ScalarType::F16,
            bytes: [0x3c00u16, 0xc100, 0x7e00].iter().flat_map(|v| v.to_le_bytes()).collect(),
        };
        assert_eq!(listing(&h, None), "f16[3], all 3:\n  [0]     1.0    -2.5  0h7e00");
        let s = Buffer { elem: ScalarType::S8, bytes: vec![0xff, 0x80] };
        assert_eq!(listing(&s, None), "s8[2], all 2:\n  [0]    -1  -128");
        let big = Buffer { elem: ScalarType::U64, bytes: (u64::MAX - 1).to_le_bytes().to_vec() };
        assert_eq!(element_text(&big, 0), "18446744073709551614");
        let empty = Buffer { elem: ScalarType::F32, bytes: vec![] };
        assert_eq!(listing(&empty, None), "f32[0], all 0:");
    }
}
