//! Upper bounds of unsigned integer values, for proofs that arithmetic does not wrap.
//!
//! Guarantees:
//! - [`UpperBounds::max_u32`] returns a number that no execution of the body can exceed for that
//!   `u32` operand, in any thread of any launch the interpreter and the GPU accept. The facts it
//!   starts from are the launch limits both enforce (a block has at most 1024 threads, x and y at
//!   most 1024, z at most 64; a grid at most 2^31-1 blocks in x and 65535 in y and z), a kernel's
//!   `reqntid` (the launch is refused otherwise), `laneid < 32`, and constants. Through an
//!   instruction the bound is propagated only where the result provably does not wrap (`add`,
//!   `mul`, `mad`, `shl` with bounds whose exact result fits), or cannot grow (`and` with a
//!   constant, `shr`, `div`/`rem` by a constant, `min`, widening conversions from narrower
//!   unsigned types); everything else is `u32::MAX` (no information). Block parameters are
//!   `u32::MAX`: no loop reasoning.
//! - In a device function `reqntid` is not used (its callers may have any block shape).
//! - Bounds are memoized per value; the walk through definitions is depth-limited (64), beyond
//!   which a value is `u32::MAX`, so nothing recurses unboundedly.

use crate::ir::{Kernel, Operand, ValueDef, ValueId};
use crate::op::{BinOp, Dim, Op, SpecialReg};
use crate::types::ScalarType;
use rustc_hash::FxHashMap;

/// Memoized upper bounds of a body's `u32` values.
pub struct UpperBounds<'k> {
    k: &'k Kernel,
    memo: FxHashMap<ValueId, u64>,
}

const NONE: u64 = u32::MAX as u64;

impl<'k> UpperBounds<'k> {
    pub fn new(k: &'k Kernel) -> UpperBounds<'k> {
        UpperBounds { k, memo: FxHashMap::default() }
    }

    /// The largest value the `u32` operand `o` can take (`u32::MAX` when nothing is known or it is
    /// not a `u32`).
    pub fn max_u32(&mut self, o: Operand) -> u64 {
        self.bound(o, 0)
    }

    fn bound(&mut self, o: Operand, depth: u32) -> u64 {
        match o {
            Operand::Const(c) => {
                if c.ty == ScalarType::U32 {
                    c.bits & NONE
                } else {
                    NONE
                }
            }
            Operand::Value(v) => {
                if let Some(&b) = self.memo.get(&v) {
                    return b;
                }
                if depth >= 64 {
                    return NONE;
                }
                let b = self.compute(v, depth).min(NONE);
                self.memo.insert(v, b);
                b
            }
        }
    }

    fn special(&self, r: SpecialReg) -> u64 {
        let req = self.k.reqntid.filter(|_| !self.k.is_func()).map(|r| r.dims);
        let dim = |d: Dim| match d {
            Dim::X => 0,
            Dim::Y => 1,
            Dim::Z => 2,
        };
        let block_max = |d: Dim| -> u64 {
            match req {
                Some(dims) => dims[dim(d)] as u64,
                None => {
                    if d == Dim::Z {
                        64
                    } else {
                        1024
                    }
                }
            }
        };
        let grid_max = |d: Dim| -> u64 {
            if d == Dim::X {
                i32::MAX as u64
            } else {
                65535
            }
        };
        match r {
            SpecialReg::Tid(d) => block_max(d) - 1,
            SpecialReg::Ntid(d) => block_max(d),
            SpecialReg::Ctaid(d) => grid_max(d) - 1,
            SpecialReg::Nctaid(d) => grid_max(d),
            SpecialReg::LaneId => 31,
            SpecialReg::WarpId => {
                let threads = req.map(|d| d.iter().map(|&x| x as u64).product()).unwrap_or(1024);
                threads.div_ceil(32).saturating_sub(1)
            }
            SpecialReg::GlobalId(d) => {
                let b = block_max(d);
                (grid_max(d) - 1) * b + (b - 1)
            }
        }
    }

    fn compute(&mut self, v: ValueId, depth: u32) -> u64 {
        let k = self.k;
        if k.value_type(v).scalar() != Some(ScalarType::U32) {
            return NONE;
        }
        let ValueDef::Inst(i) = k.value(v).def else { return NONE };
        let d = k.inst(i);
        let arg = |s: &mut Self, n: usize| s.bound(d.args[n], depth + 1);
        match d.op {
            Op::Special(r) => self.special(r),
            Op::Mov(ScalarType::U32) => arg(self, 0),
            Op::Bin(op, ScalarType::U32, _) => {
                let b_const = d.args[1].as_const().filter(|c| c.ty == ScalarType::U32).map(|c| c.bits & NONE);
                match op {
                    BinOp::Add => arg(self, 0) + arg(self, 1),
                    BinOp::Mul => arg(self, 0).saturating_mul(arg(self, 1)),
                    BinOp::Shl => match b_const {
                        Some(s) if s < 32 => arg(self, 0).saturating_mul(1 << s),
                        _ => NONE,
                    },
                    BinOp::Shr => match b_const {
                        Some(s) if s < 32 => arg(self, 0) >> s,
                        _ => arg(self, 0),
                    },
                    BinOp::And => arg(self, 0).min(arg(self, 1)),
                    BinOp::Div => match b_const {
                        Some(c) if c > 0 => arg(self, 0) / c,
                        _ => arg(self, 0),
                    },
                    BinOp::Rem => match b_const {
                        Some(c) if c > 0 => (c - 1).min(arg(self, 0)),
                        _ => arg(self, 0),
                    },
                    BinOp::Min => arg(self, 0).min(arg(self, 1)),
                    BinOp::Max => arg(self, 0).max(arg(self, 1)),
                    _ => NONE,
                }
            }
            Op::Mad(ScalarType::U32) => arg(self, 0).saturating_mul(arg(self, 1)).saturating_add(arg(self, 2)),
            Op::Cvt { to: ScalarType::U32, from: ScalarType::U8, .. } => u8::MAX as u64,
            Op::Cvt { to: ScalarType::U32, from: ScalarType::U16, .. } => u16::MAX as u64,
            _ => NONE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::load::load_source;

    fn bounds_of(src: &str) -> Vec<(String, u64)> {
        let m = load_source(std::path::Path::new("t.kir"), src.to_string()).expect("parses").module;
        let k = &m.kernels[0];
        let mut ub = UpperBounds::new(k);
        k.placed_insts()
            .filter_map(|(_, i)| k.inst(i).result)
            .map(|v| (k.value(v).name.to_string(), ub.max_u32(Operand::Value(v))))
            .collect()
    }

    #[test]
    fn launch_limits_and_reqntid_bound_thread_indices() {
        let b = bounds_of(
            "kernel @k(%p: ptr<global, u32>, %n: u32) reqntid(16, 16) {\nentry:\n  %tx = tid.x\n  %ty = tid.y\n  %tz = tid.z\n  %row = shl.u32 %ty, 4\n  %i = add.u32 %row, 15\n  %w = add.u32 %n, 1\n  %s = shr.u32 %n, 28\n  %r = rem.u32 %n, 10\n  %l = laneid\n  %c = ctaid.y\n  ret\n}\n",
        );
        let get = |n: &str| b.iter().find(|(x, _)| x == n).map(|(_, v)| *v).unwrap();
        assert_eq!(get("tx"), 15);
        assert_eq!(get("ty"), 15);
        assert_eq!(get("tz"), 0);
        assert_eq!(get("row"), 240);
        assert_eq!(get("i"), 255);
        assert_eq!(get("w"), u32::MAX as u64, "a parameter plus one may wrap: no bound");
        assert_eq!(get("s"), 15);
        assert_eq!(get("r"), 9);
        assert_eq!(get("l"), 31);
        assert_eq!(get("c"), 65534);
    }

    #[test]
    fn without_reqntid_the_hardware_limits_apply() {
        let b = bounds_of(
            "kernel @k() {\nentry:\n  %tx = tid.x\n  %tz = tid.z\n  %j = add.u32 %tx, 512\n  %big = mul.u32 %tx, 8388608\n  ret\n}\n",
        );
        let get = |n: &str| b.iter().find(|(x, _)| x == n).map(|(_, v)| *v).unwrap();
        assert_eq!(get("tx"), 1023);
        assert_eq!(get("tz"), 63);
        assert_eq!(get("j"), 1535);
        assert_eq!(get("big"), u32::MAX as u64, "1023 * 2^23 does not fit: no bound");
    }
}
