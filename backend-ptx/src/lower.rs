//! Instruction lowering: one kir instruction becomes a short PTX sequence with kir's semantics.
//!
//! Guarantees (what the emitted code computes; `ir/src/eval.rs` is the definition it follows):
//! - Exact float ops always carry their rounding (`add.rn.f32`, `div.rn.f32`, `sqrt.rn.f32`,
//!   `fma.rn.f32`): ptxas never contracts or reassociates them. `.ftz` appears only where the kir
//!   instruction asks for it.
//! - f16/bf16 live in `.b16` registers. Where PTX has a correctly rounded native instruction for
//!   the op, type, rounding and target (`add.rn.f16`, `fma.rn.bf16`, `add.rn.bf16` on sm_90) it is
//!   used; otherwise the operands are widened exactly to f32, the op is rounded once in f32 with the
//!   same rounding mode and the result is rounded to the 16-bit type (`cvt.<rnd>.f16.f32`). That is
//!   exact: directed roundings compose, and for round-to-nearest f32's 24 bits are at least
//!   2p + 2 for p = 11 (f16) and 8 (bf16), so the double rounding is innocuous. `.ftz` applies to
//!   f32 only (as in kir and PTX) and is ignored for the 16-bit types.
//! - `neg`/`abs` of floats touch the sign bit only (xor/and), keeping NaN payloads.
//! - Integer `div`/`rem` guard the divisor: `x / 0` and `x % 0` are all ones (PTX gives an
//!   unspecified value, which a `selp` replaces); signed `MIN / -1` is `MIN` and `MIN % -1` is 0
//!   (the division runs by 1 there, as PTX does not define that overflow).
//! - Float `min`/`max` use PTX's `min`/`max` (a NaN operand is ignored; two NaNs give the
//!   canonical NaN for f16/bf16/f32 and the second operand's NaN, quieted, for f64, as the H100
//!   computes it: docs/language.md, "NaN and signed zero"). `cvt.sat` to a float adds `+0.0` after clamping so `-0.0` becomes `+0.0`.
//! - Which NaN an f64 op returns does not depend on ptxas's operand order. The H100 returns the
//!   later machine operand's NaN and ptxas may swap commutative operands (`add`, `mul`, `min`,
//!   `max`, `fma`'s multiplicands; `sub a, b` becomes `(-b) + a`), so an f64
//!   `add`/`sub`/`mul`/`min`/`max`/`fma` with two operands that may hold different NaNs is
//!   emitted with `a` replaced by `a'` ([`crate::nan_order`]): `add`/`sub`/`mul`:
//!   `testp.notanumber.f64 p, b; selp.f64 a', b, a, p; op d, a', b`; `min`/`max`: the test on `a`;
//!   `fma`: `a' = isnan(b) ? b : isnan(c) ? c : a`. A NaN then sits in every machine operand that
//!   could win, or in none but one. Cost: a `testp` and a `selp` per choice, two for such an
//!   `add`/`sub`/`mul`/`min`/`max`, up to four for `fma`; none where non-NaN constants leave one
//!   operand that can be NaN, where the operands are one value, where a NaN constant is taken
//!   unconditionally (`add %x, K` is `add K, K`), or for f16/bf16/f32, whose NaN results are
//!   canonical. An op whose first operand is an f64 NaN constant is computed explicitly
//!   (`leading_nan_bin`, `leading_nan_fma`).
//! - Shifts use PTX's clamping of the amount, which is kir's rule (amounts >= width shift everything
//!   out). 8-bit integers are computed in 32-bit registers and re-extended after each op that can
//!   carry bits out of the low byte.
//! - Loads/stores/atomics address `p + i * sizeof(T)` with the index sign-extended (signed types)
//!   or zero-extended (unsigned), via `mul.wide.{s32,u32}` (64-bit: `mul.lo.s64`) and `add.s64`;
//!   a constant index becomes an immediate offset. Shared pointers are 64-bit addresses in the `.shared` window
//!   (`mov.u64 %rd, symbol`), used with `ld.shared`/`st.shared`/`atom.shared` directly.
//! - Vectors: element j of a `vec<N, T>` is register j of the value's [`crate::regs::Regs`].
//!   `vec`/`extract`/`insert` are parallel copies of elements (the lane is a constant): a `mov`
//!   per element whose register is not already its source's ([`crate::assign`] makes most of them
//!   the same register, so usually nothing is emitted); `load.vN`/`store.vN`
//!   are one `ld`/`st` `.vN` with the element's memory type (`.b16` for every 16-bit type, `.u8`/
//!   `.s8` into and from the 32-bit registers of 8-bit values, which stay extended) at the address
//!   a scalar access of the same element computes. `mma` is one `mma.sync.aligned.SHAPE.row.col.
//!   f32.T.T.f32 {D}, {A}, {B}, {C}` (A, B in `.b32` registers, C, D in `.f32` ones); `ldmatrix`
//!   one `ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16 {r..}, [addr]`; `cp.async` of 4 or 8
//!   bytes `cp.async.ca.shared.global`, of 16 `.cg` (L2 only; PTX allows `.cg` for 16 bytes
//!   only), the source size as the `u32` register or an immediate; `cp.async.commit` and
//!   `cp.async.wait N` are `cp.async.commit_group` and `cp.async.wait_group N`. An `mma` or
//!   `ldmatrix` without a result still executes (into scratch registers): the warp's collective.
//! - An op/type/mode combination PTX cannot express and the verifier does not exclude yields a
//!   located diagnostic, never a panic or wrong code.

use crate::emit::KernelEmitter;
pub use crate::imm::{fty, imm_text, mem_ty, param_type, raw_imm, takes_imm, Imm, SrcText};
use crate::nan_order::{self, Plan, Step, When};
use crate::pcopy::Src;
use crate::regs::{Reg, RegClass, Regs};
use crate::SmVersion;
use kir_ir::{
    AddrSpace, AtomicOp, BinOp, CmpOp, Diagnostic, FloatFlags, FloatMode, InstId, Op, Operand, Rounding, ScalarType,
    ShflMode, SpecialReg, UnOp, VoteMode,
};
use ScalarType as S;

/// The PTX name of a special register read by one `mov` (`%tid.x`, ...), or `None` for the
/// composite ones kir computes (`global_id`, `warpid`).
fn plain_special(r: SpecialReg) -> Option<String> {
    match r {
        SpecialReg::Tid(x) => Some(format!("%tid.{}", x.name())),
        SpecialReg::Ctaid(x) => Some(format!("%ctaid.{}", x.name())),
        SpecialReg::Ntid(x) => Some(format!("%ntid.{}", x.name())),
        SpecialReg::Nctaid(x) => Some(format!("%nctaid.{}", x.name())),
        SpecialReg::LaneId => Some("%laneid".to_string()),
        SpecialReg::GlobalId(_) | SpecialReg::WarpId => None,
    }
}

fn is8(s: ScalarType) -> bool {
    matches!(s, S::U8 | S::S8)
}

fn is16f(s: ScalarType) -> bool {
    matches!(s, S::F16 | S::BF16)
}

/// Integer instruction type: 8-bit types compute as 32-bit.
fn ity(s: ScalarType) -> &'static str {
    match s {
        S::U8 | S::U32 => "u32",
        S::S8 | S::S32 => "s32",
        S::U16 => "u16",
        S::S16 => "s16",
        S::U64 => "u64",
        S::S64 => "s64",
        _ => "b32",
    }
}

/// Bit type of the register holding `s`.
fn bty(s: ScalarType) -> &'static str {
    match RegClass::of_scalar(s) {
        RegClass::Pred => "pred",
        RegClass::B16 | RegClass::H16 => "b16",
        RegClass::B32 | RegClass::F32 => "b32",
        RegClass::B64 | RegClass::F64 => "b64",
    }
}

/// Type for mov/selp: floats keep their float type (f32/f64 registers), others their bit type.
fn mty(s: ScalarType) -> &'static str {
    match s {
        S::F32 => "f32",
        S::F64 => "f64",
        _ => bty(s),
    }
}

/// `.rn`, `.rz`, ... for a non-integral rounding (integral ones map to their plain counterpart).
fn rnd(r: Rounding) -> &'static str {
    match r {
        Rounding::Rn | Rounding::Rni => ".rn",
        Rounding::Rz | Rounding::Rzi => ".rz",
        Rounding::Rm | Rounding::Rmi => ".rm",
        Rounding::Rp | Rounding::Rpi => ".rp",
    }
}

/// `.rni`, `.rzi`, ... for float→int or round-to-integral (plain ones map to their integral form).
fn irnd(r: Rounding) -> &'static str {
    match r {
        Rounding::Rn | Rounding::Rni => ".rni",
        Rounding::Rz | Rounding::Rzi => ".rzi",
        Rounding::Rm | Rounding::Rmi => ".rmi",
        Rounding::Rp | Rounding::Rpi => ".rpi",
    }
}

fn ftz(b: bool) -> &'static str {
    if b {
        ".ftz"
    } else {
        ""
    }
}

impl KernelEmitter<'_> {
    fn unsupported(&mut self, i: InstId, what: &str) {
        let d = self.k.inst(i);
        self.diags.push(
            Diagnostic::error(format!("the PTX backend cannot emit `{}`: {what}", d.op.mnemonic()))
                .at(d.span, "this instruction")
                .with_note(format!("target {}", self.opts.sm.name())),
        );
    }

    /// A register holding the operand (constants are materialized with `mov`).
    pub fn reg(&mut self, o: Operand) -> Reg {
        match o {
            Operand::Value(v) => self.val(v),
            Operand::Const(c) if crate::imm::is_float_nan(c) => self.load_nan(c),
            Operand::Const(c) => {
                let r = self.fresh(RegClass::of_scalar(c.ty));
                self.ins(format_args!("mov.{} {r}, {}", mty(c.ty), raw_imm(c)));
                r
            }
        }
    }

    /// The operand as an instruction source: an immediate where PTX takes one, else a register.
    pub fn op(&mut self, o: Operand) -> SrcText {
        if let Operand::Const(c) = o {
            if takes_imm(c) && !crate::imm::is_float_nan(c) {
                return SrcText::Imm(Imm(c));
            }
        }
        SrcText::Reg(self.reg(o))
    }

    /// Re-extends an 8-bit value held in a 32-bit register.
    fn renorm(&mut self, r: Reg, s: ScalarType) {
        match s {
            S::U8 => self.ins(format_args!("and.b32 {r}, {r}, 255")),
            S::S8 => self.ins(format_args!("cvt.s32.s8 {r}, {r}")),
            _ => {}
        }
    }

    /// f16/bf16 bits → f32 (exact).
    fn to_f32(&mut self, h: Reg, s: ScalarType) -> Reg {
        let f = self.fresh(RegClass::F32);
        self.ins(format_args!("cvt.f32.{} {f}, {h}", fty(s)));
        f
    }

    /// f32 → f16/bf16 with rounding `r` into `d`.
    fn from_f32(&mut self, d: Reg, f: Reg, s: ScalarType, r: Rounding) {
        if s == S::BF16 && matches!(rnd(r), ".rm" | ".rp") {
            // cvt to bf16 has only .rn/.rz: round toward zero, then step the magnitude up by one
            // ulp when the discarded bits are nonzero and the sign matches the direction.
            let toward_neg = rnd(r) == ".rm";
            let b = self.fresh(RegClass::B32);
            let lo = self.fresh(RegClass::B32);
            let hi = self.fresh(RegClass::B32);
            let p = self.fresh(RegClass::Pred);
            let q = self.fresh(RegClass::Pred);
            let n = self.fresh(RegClass::Pred);
            self.ins(format_args!("mov.b32 {b}, {f}"));
            self.ins(format_args!("and.b32 {lo}, {b}, 65535"));
            self.ins(format_args!("shr.u32 {hi}, {b}, 16"));
            self.ins(format_args!("setp.ne.u32 {p}, {lo}, 0"));
            self.ins(format_args!("setp.{}.s32 {q}, {b}, 0", if toward_neg { "lt" } else { "ge" }));
            self.ins(format_args!("and.pred {p}, {p}, {q}"));
            self.ins(format_args!("testp.notanumber.f32 {n}, {f}"));
            let one = self.fresh(RegClass::B32);
            self.ins(format_args!("selp.b32 {one}, 1, 0, {p}"));
            self.ins(format_args!("add.s32 {hi}, {hi}, {one}"));
            self.ins(format_args!("selp.b32 {hi}, 32767, {hi}, {n}"));
            self.ins(format_args!("cvt.u16.u32 {d}, {hi}"));
        } else {
            self.ins(format_args!("cvt{}.{}.f32 {d}, {f}", rnd(r), fty(s)));
        }
    }

    /// Flush a subnormal f32 to a zero of the same sign.
    fn flush32(&mut self, f: Reg) -> Reg {
        let out = self.fresh(RegClass::F32);
        self.ins(format_args!("cvt.ftz.f32.f32 {out}, {f}"));
        out
    }

    pub fn lower_inst(&mut self, i: InstId) {
        let inst = self.k.inst(i).clone();
        let a = inst.args.clone();
        let d = inst.result.map(|v| self.val(v));
        match inst.op {
            Op::Call(c) => self.call(i, c),
            Op::Special(r) => {
                let Some(d) = d else { return };
                if self.early_specials.contains(&i) {
                    // Read into its register already, for a composite read earlier in the block.
                    return;
                }
                self.special(d, r)
            }
            Op::Mov(s) => {
                let Some(d) = d else { return };
                let x = if s == S::Pred { SrcText::Reg(self.reg(a[0])) } else { self.op(a[0]) };
                self.ins(format_args!("mov.{} {d}, {x}", mty(s)));
            }
            Op::Bin(op, s, fl) => {
                let Some(d) = d else { return };
                if s.is_float() {
                    self.float_bin(i, op, s, fl, a[0], a[1], d)
                } else {
                    self.int_bin(op, s, a[0], a[1], d)
                }
            }
            Op::MulWide(s) => {
                let Some(d) = d else { return };
                let x = self.reg(a[0]);
                let y = self.op(a[1]);
                if is8(s) {
                    let t = self.fresh(RegClass::B32);
                    self.ins(format_args!("mul.lo.{} {t}, {x}, {y}", ity(s)));
                    self.ins(format_args!("cvt.u16.u32 {d}, {t}"));
                } else {
                    self.ins(format_args!("mul.wide.{} {d}, {x}, {y}", ity(s)));
                }
            }
            Op::Mad(s) => {
                let Some(d) = d else { return };
                let x = self.reg(a[0]);
                let y = self.op(a[1]);
                let z = self.op(a[2]);
                self.ins(format_args!("mad.lo.{} {d}, {x}, {y}, {z}", ity(s)));
                self.renorm(d, s);
            }
            Op::Fma(s, fl) => {
                let Some(d) = d else { return };
                self.fma(i, s, fl, &a, d)
            }
            Op::Unary(op, s, fl) => {
                let Some(d) = d else { return };
                self.unary(i, op, s, fl, a[0], d)
            }
            Op::Cmp(op, s) => {
                let Some(d) = d else { return };
                self.cmp(op, s, a[0], a[1], d)
            }
            Op::Select(s) => {
                let Some(d) = d else { return };
                let c = self.reg(a[0]);
                if s == S::Pred {
                    let x = self.reg(a[1]);
                    let y = self.reg(a[2]);
                    let t1 = self.fresh(RegClass::Pred);
                    let t2 = self.fresh(RegClass::Pred);
                    self.ins(format_args!("and.pred {t1}, {c}, {x}"));
                    self.ins(format_args!("not.pred {t2}, {c}"));
                    self.ins(format_args!("and.pred {t2}, {t2}, {y}"));
                    self.ins(format_args!("or.pred {d}, {t1}, {t2}"));
                } else {
                    let x = if is16f(s) { SrcText::Reg(self.reg(a[1])) } else { self.op(a[1]) };
                    let y = if is16f(s) { SrcText::Reg(self.reg(a[2])) } else { self.op(a[2]) };
                    self.ins(format_args!("selp.{} {d}, {x}, {y}, {c}", mty(s)));
                }
            }
            Op::Cvt { to, from, rounding, sat, ftz } => {
                let Some(d) = d else { return };
                self.cvt(i, to, from, rounding, sat, ftz, a[0], d)
            }
            Op::Bitcast { to, from } => {
                let Some(d) = d else { return };
                let x = self.reg(a[0]);
                self.ins(format_args!("mov.b{} {d}, {x}", RegClass::of_scalar(to).bits()));
                if is8(to) && to != from {
                    self.renorm(d, to);
                }
            }
            Op::Load => {
                let Some(d) = d else { return };
                let Some((space, elem)) = self.k.operand_type(a[0]).pointee() else {
                    return self.unsupported(i, "not a pointer");
                };
                let addr = self.address(a[0], a[1], elem.bytes() as i64);
                self.ins(format_args!("ld{}.{} {d}, {addr}", ss(space), mem_ty(elem)));
            }
            Op::Store => {
                let Some((space, elem)) = self.k.operand_type(a[0]).pointee() else {
                    return self.unsupported(i, "not a pointer");
                };
                let v = self.reg(a[2]);
                let addr = self.address(a[0], a[1], elem.bytes() as i64);
                self.ins(format_args!("st{}.{} {addr}, {v}", ss(space), mem_ty(elem)));
            }
            Op::Atomic(op) => {
                let Some((space, elem)) = self.k.operand_type(a[0]).pointee() else {
                    return self.unsupported(i, "not a pointer");
                };
                let v = self.reg(a[2]);
                let addr = self.address(a[0], a[1], elem.bytes() as i64);
                let t = match (op, elem) {
                    (AtomicOp::Exch, _) => bty(elem).to_string(),
                    (_, S::F32) => "f32".into(),
                    (_, S::F64) => "f64".into(),
                    _ => ity(elem).to_string(),
                };
                match d {
                    Some(d) => self.ins(format_args!("atom{}.{}.{t} {d}, {addr}, {v}", ss(space), op.name())),
                    None if op != AtomicOp::Exch => {
                        self.ins(format_args!("red{}.{}.{t} {addr}, {v}", ss(space), op.name()))
                    }
                    None => {
                        let sink = self.fresh(RegClass::of_scalar(elem));
                        self.ins(format_args!("atom{}.exch.{t} {sink}, {addr}, {v}", ss(space)));
                    }
                }
            }
            Op::AtomicCas => {
                let Some((space, elem)) = self.k.operand_type(a[0]).pointee() else {
                    return self.unsupported(i, "not a pointer");
                };
                let cmp = self.reg(a[2]);
                let new = self.reg(a[3]);
                let addr = self.address(a[0], a[1], elem.bytes() as i64);
                let d = d.unwrap_or_else(|| self.fresh(RegClass::of_scalar(elem)));
                self.ins(format_args!("atom{}.cas.{} {d}, {addr}, {cmp}, {new}", ss(space), bty(elem)));
            }
            Op::PtrOffset | Op::PtrOffsetBytes => {
                let Some(d) = d else { return };
                let size = match (&inst.op, self.k.operand_type(a[0]).pointee()) {
                    (Op::PtrOffset, Some((_, elem))) => elem.bytes() as i64,
                    _ => 1,
                };
                let (base, off) = self.addr_parts(a[0], a[1], size, Some(d));
                if base == d {
                    // computed in place
                } else if off == 0 {
                    self.ins(format_args!("mov.b64 {d}, {base}"));
                } else {
                    self.ins(format_args!("add.s64 {d}, {base}, {off}"));
                }
            }
            Op::PtrCast(_) => {
                let Some(d) = d else { return };
                let x = self.reg(a[0]);
                self.ins(format_args!("mov.b64 {d}, {x}"));
            }
            Op::SharedAddr(idx) => {
                let Some(d) = d else { return };
                if idx as usize >= self.k.shared.len() {
                    return self.unsupported(i, "no such shared declaration");
                }
                let sym = self.shared_symbol(idx);
                self.ins(format_args!("mov.u64 {d}, {sym}"));
            }
            Op::Barrier => self.ins("bar.sync 0"),
            Op::Shfl(mode, s) => {
                let Some(d) = d else { return };
                self.shfl(mode, s, &a, d)
            }
            Op::Vote(mode) => {
                let Some(d) = d else { return };
                let p = self.reg(a[0]);
                let m = self.op(a[1]);
                match mode {
                    VoteMode::Ballot => self.ins(format_args!("vote.sync.ballot.b32 {d}, {p}, {m}")),
                    VoteMode::All => self.ins(format_args!("vote.sync.all.pred {d}, {p}, {m}")),
                    VoteMode::Any => self.ins(format_args!("vote.sync.any.pred {d}, {p}, {m}")),
                }
            }
            Op::VecBuild(w, _) => {
                let Some(v) = inst.result else { return };
                let d = self.regs_of(v);
                // Elements that name their source's register (crate::assign) copy nothing; an
                // element sharing an earlier element's register (a repeated constant) is written once.
                let mut copies = Vec::with_capacity(w.len());
                for (j, &x) in a.iter().enumerate().take(w.len()) {
                    if !d.as_slice()[..j].contains(&d.get(j)) {
                        let src = self.copy_src(x);
                        copies.push((d.get(j), src));
                    }
                }
                self.parallel_copy(&copies);
            }
            Op::VecExtract(w, _) => {
                let Some(d) = d else { return };
                let (Some(v), Some(lane)) = (self.vector_regs(a[0], w.len()), const_lane(a[1], w.len())) else {
                    return self.unsupported(i, "the vector must be a value and the lane a constant below its width");
                };
                self.parallel_copy(&[(d, Src::Reg(v.get(lane)))]);
            }
            Op::VecInsert(w, _) => {
                let Some(dv) = inst.result else { return };
                let (Some(v), Some(lane)) = (self.vector_regs(a[0], w.len()), const_lane(a[1], w.len())) else {
                    return self.unsupported(i, "the vector must be a value and the lane a constant below its width");
                };
                let d = self.regs_of(dv);
                let x = self.copy_src(a[2]);
                // A parallel copy of the elements: the result may share `v`'s registers (in place,
                // emit.rs's latch arguments) or name them (crate::assign); copies of a register
                // to itself emit nothing.
                let copies: Vec<(Reg, Src<Reg>)> =
                    (0..w.len()).map(|j| (d.get(j), if j == lane { x.clone() } else { Src::Reg(v.get(j)) })).collect();
                self.parallel_copy(&copies);
            }
            Op::LoadVec(w) => {
                let Some(dv) = inst.result else { return };
                let Some((space, elem)) = self.vector_access(i, a[0], w) else { return };
                let addr = self.address(a[0], a[1], elem.bytes() as i64);
                let regs = self.regs_of(dv);
                self.ins(format_args!("ld{}.{}.{} {regs}, {addr}", ss(space), w.name(), mem_ty(elem)));
            }
            Op::StoreVec(w) => {
                let Some((space, elem)) = self.vector_access(i, a[0], w) else { return };
                let Some(regs) = self.vector_regs(a[2], w.len()) else {
                    return self.unsupported(i, "the stored vector must be a value");
                };
                let addr = self.address(a[0], a[1], elem.bytes() as i64);
                self.ins(format_args!("st{}.{}.{} {addr}, {regs}", ss(space), w.name(), mem_ty(elem)));
            }
            Op::Mma(kind) => {
                let (Some(x), Some(y), Some(z)) =
                    (self.vector_regs(a[0], 4), self.vector_regs(a[1], 2), self.vector_regs(a[2], 4))
                else {
                    return self.unsupported(i, "the fragments must be vector values");
                };
                let classes = [x.first().class, y.first().class, z.first().class];
                if classes != [RegClass::B32, RegClass::B32, RegClass::F32] {
                    return self.unsupported(i, "A and B must be `u32` vectors and C an `f32` vector");
                }
                // Without a result the warp still executes it (a collective): into scratch registers.
                let d = match inst.result {
                    Some(v) => self.regs_of(v),
                    None => Regs::run(self.regs.fresh_n(RegClass::F32, 4), 4),
                };
                let t = kind.name();
                let shape = kind.shape();
                self.ins(format_args!("mma.sync.aligned.{shape}.row.col.f32.{t}.{t}.f32 {d}, {x}, {y}, {z}"));
            }
            Op::Ldmatrix(num, trans) => {
                match self.k.operand_type(a[0]).pointee() {
                    Some((AddrSpace::Shared, e)) if e.bits() == 16 => {}
                    _ => return self.unsupported(i, "the address must be a `ptr<shared, T>` of a 16-bit T"),
                }
                let addr = self.address(a[0], a[1], 2);
                let d = match inst.result {
                    Some(v) => self.regs_of(v),
                    None => Regs::run(self.regs.fresh_n(RegClass::B32, num.count()), num.count()),
                };
                self.ins(format_args!(
                    "ldmatrix.sync.aligned.m8n8.{}{}.shared.b16 {d}, {addr}",
                    num.name(),
                    if trans { ".trans" } else { "" },
                ));
            }
            Op::CpAsync(size) => {
                let (dst, src) = (self.k.operand_type(a[0]).pointee(), self.k.operand_type(a[2]).pointee());
                let (Some((AddrSpace::Shared, de)), Some((AddrSpace::Global, se))) = (dst, src) else {
                    return self.unsupported(i, "it copies from a `ptr<global, T>` to a `ptr<shared, T>`");
                };
                let dst = self.address(a[0], a[1], de.bytes() as i64);
                let src = self.address(a[2], a[3], se.bytes() as i64);
                let n = self.op(a[4]);
                // `.cg` (cache in L2 only) exists for 16-byte copies only; `.ca` for 4 and 8.
                let cache = if size.bytes() == 16 { "cg" } else { "ca" };
                self.ins(format_args!("cp.async.{cache}.shared.global {dst}, {src}, {}, {n}", size.bytes()));
            }
            Op::CpAsyncCommit => self.ins("cp.async.commit_group"),
            Op::CpAsyncWait => {
                let Operand::Const(c) = a[0] else {
                    return self.unsupported(i, "the number of groups must be a constant");
                };
                // Any N: ptxas saturates it to 63 (`DEPBAR.LE SB0, 0x3f` for N = 64 or 2^32 - 1),
                // which waits for at least what N asks.
                self.ins(format_args!("cp.async.wait_group {}", c.bits));
            }
        }
    }

    /// The registers of a vector operand of `n` elements (`None` for a constant, which is never a
    /// vector, or a value of another width).
    fn vector_regs(&self, o: Operand, n: usize) -> Option<Regs> {
        let v = o.as_value()?;
        (RegClass::count(self.k.value_type(v)) == n).then(|| self.regs_of(v))
    }

    /// The space and element type of a `load.vN`/`store.vN` through `p`, when PTX has that access:
    /// N elements of at most 16 bytes in all (else a located diagnostic and `None`).
    fn vector_access(&mut self, i: InstId, p: Operand, w: kir_ir::types::VecWidth) -> Option<(AddrSpace, ScalarType)> {
        match self.k.operand_type(p).pointee() {
            Some((space, elem)) if kir_ir::Type::vec(w.len() as u64, elem).is_ok() => Some((space, elem)),
            Some(_) => {
                self.unsupported(i, "no such vector access (N elements, 16 bytes at most)");
                None
            }
            None => {
                self.unsupported(i, "not a pointer");
                None
            }
        }
    }

    /// A copy's source for `o`: a register, or the constant as `mov` spells it (a NaN constant is
    /// loaded from its `.const` variable, never an immediate).
    fn copy_src(&mut self, o: Operand) -> Src<Reg> {
        match o {
            Operand::Const(c) if !crate::imm::is_float_nan(c) => Src::Imm(raw_imm(c)),
            _ => Src::Reg(self.reg(o)),
        }
    }

    fn special(&mut self, d: Reg, r: SpecialReg) {
        if let Some(name) = plain_special(r) {
            return self.read_special_into(d, name);
        }
        match r {
            // Read by one `mov` above.
            SpecialReg::Tid(_)
            | SpecialReg::Ctaid(_)
            | SpecialReg::Ntid(_)
            | SpecialReg::Nctaid(_)
            | SpecialReg::LaneId => {}
            SpecialReg::GlobalId(x) => {
                let c = self.special_reg(format!("%ctaid.{}", x.name()));
                let n = self.special_reg(format!("%ntid.{}", x.name()));
                let t = self.special_reg(format!("%tid.{}", x.name()));
                self.ins(format_args!("mad.lo.s32 {d}, {c}, {n}, {t}"));
            }
            SpecialReg::WarpId => {
                // kir's warpid is the linear thread index / 32 (not PTX's volatile %warpid).
                let tz = self.special_reg("%tid.z".to_string());
                let ny = self.special_reg("%ntid.y".to_string());
                let ty = self.special_reg("%tid.y".to_string());
                let nx = self.special_reg("%ntid.x".to_string());
                let tx = self.special_reg("%tid.x".to_string());
                let r = self.fresh(RegClass::B32);
                self.ins(format_args!("mad.lo.s32 {r}, {tz}, {ny}, {ty}"));
                self.ins(format_args!("mad.lo.s32 {r}, {r}, {nx}, {tx}"));
                self.ins(format_args!("shr.u32 {d}, {r}, 5"));
            }
        }
    }

    /// Reads the PTX special register `name` into `d` and remembers that `d` holds it.
    fn read_special_into(&mut self, d: Reg, name: String) {
        self.ins(format_args!("mov.u32 {d}, {name}"));
        if !self.shared_regs.contains(&d) {
            self.specials.record(name, self.cur_block, d);
        }
    }

    /// A register holding the PTX special register `name` (constant for the thread): one read
    /// earlier in a dominating block (by an instruction of the kernel or for another composite
    /// read), else read now. The registers remembered are written once (never block parameters).
    fn special_reg(&mut self, name: String) -> Reg {
        let here = self.cur_block;
        if let Some(r) = self.specials.find(&name, &self.cfg, here) {
            return r;
        }
        // A read of the same register by an instruction later in this block (one earlier would
        // be in the table): read it into that instruction's register now, once, for both.
        let k = self.k;
        let later = k.block(here).insts.iter().copied().find(|&i| {
            let d = k.inst(i);
            matches!(d.op, Op::Special(r) if plain_special(r).as_deref() == Some(name.as_str()))
                && d.result.is_some_and(|v| !self.shared_regs.contains(&self.val(v)))
                && !self.early_specials.contains(&i)
        });
        if let Some(i) = later {
            let r = self.val(k.inst(i).result.expect("checked above"));
            self.early_specials.insert(i);
            self.read_special_into(r, name);
            return r;
        }
        let r = self.fresh(RegClass::B32);
        self.read_special_into(r, name);
        r
    }

    fn int_bin(&mut self, op: BinOp, s: ScalarType, a: Operand, b: Operand, d: Reg) {
        if s == S::Pred {
            let x = self.reg(a);
            let y = self.reg(b);
            let name = match op {
                BinOp::And => "and",
                BinOp::Or => "or",
                _ => "xor",
            };
            return self.ins(format_args!("{name}.pred {d}, {x}, {y}"));
        }
        if matches!(op, BinOp::Div | BinOp::Rem) {
            return self.divrem(op, s, a, b, d);
        }
        let x = self.reg(a);
        let y = self.op(b);
        let t = ity(s);
        match op {
            BinOp::Add => self.ins(format_args!("add.{t} {d}, {x}, {y}")),
            BinOp::Sub => self.ins(format_args!("sub.{t} {d}, {x}, {y}")),
            BinOp::Mul => self.ins(format_args!("mul.lo.{t} {d}, {x}, {y}")),
            BinOp::MulHi if is8(s) => {
                self.ins(format_args!("mul.lo.{t} {d}, {x}, {y}"));
                self.ins(format_args!("shr.{t} {d}, {d}, 8"));
            }
            BinOp::MulHi => self.ins(format_args!("mul.hi.{t} {d}, {x}, {y}")),
            BinOp::Min => self.ins(format_args!("min.{t} {d}, {x}, {y}")),
            BinOp::Max => self.ins(format_args!("max.{t} {d}, {x}, {y}")),
            BinOp::And => self.ins(format_args!("and.{} {d}, {x}, {y}", bty(s))),
            BinOp::Or => self.ins(format_args!("or.{} {d}, {x}, {y}", bty(s))),
            BinOp::Xor => self.ins(format_args!("xor.{} {d}, {x}, {y}", bty(s))),
            BinOp::Shl => self.ins(format_args!("shl.{} {d}, {x}, {y}", bty(s))),
            BinOp::Shr => self.ins(format_args!("shr.{t} {d}, {x}, {y}")),
            BinOp::Div | BinOp::Rem => {}
        }
        if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::MulHi | BinOp::Shl) {
            self.renorm(d, s);
        }
    }

    /// The guard of a register divisor `b` of type `s`: `(b == 0, the divisor to divide by, b == -1
    /// for signed types)`, where the divisor to divide by is `b` itself, or 1 where a signed `b` is
    /// -1. A
    /// guard computed for the same divisor in a dominating block is reused (`x / n` and `x % n`
    /// test `n` once).
    fn divisor_guard(&mut self, b: Operand, s: ScalarType) -> (Reg, Reg, Option<Reg>) {
        let here = self.cur_block;
        let key = b.as_value().map(|v| (v, s));
        if let Some(g) = key.and_then(|k| self.divisor_guards.find(&k, &self.cfg, here)) {
            return g;
        }
        let t = ity(s);
        let y = self.reg(b);
        let pz = self.fresh(RegClass::Pred);
        self.ins(format_args!("setp.eq.{t} {pz}, {y}, 0"));
        // PTX defines division by zero to give an unspecified value (it does not trap), which the
        // final `selp` on `pz` replaces: a zero divisor needs no substitute. Signed `MIN / -1`,
        // whose overflow PTX does not define, divides by 1 instead.
        let (safe, pm) = if s.is_signed_int() {
            let pm = self.fresh(RegClass::Pred);
            let safe = self.fresh(RegClass::of_scalar(s));
            self.ins(format_args!("setp.eq.{t} {pm}, {y}, -1"));
            self.ins(format_args!("selp.{} {safe}, 1, {y}, {pm}", bty(s)));
            (safe, Some(pm))
        } else {
            (y, None)
        };
        if let Some(k) = key {
            self.divisor_guards.record(k, here, (pz, safe, pm));
        }
        (pz, safe, pm)
    }

    /// Integer division and remainder with kir's defined results for a zero divisor and for
    /// signed `MIN / -1`.
    fn divrem(&mut self, op: BinOp, s: ScalarType, a: Operand, b: Operand, d: Reg) {
        let t = ity(s);
        let name = if op == BinOp::Div { "div" } else { "rem" };
        let all_ones = if s == S::U8 {
            "255"
        } else if s.is_signed_int() {
            "-1"
        } else {
            "0xFFFFFFFFFFFFFFFF"
        };
        let all_ones = if s.is_unsigned_int() && s != S::U8 {
            match s.bits() {
                16 => "0xFFFF",
                32 => "0xFFFFFFFF",
                _ => all_ones,
            }
        } else {
            all_ones
        };
        let x = self.reg(a);
        if let Operand::Const(c) = b {
            let v = c.as_i128();
            if v == 0 {
                self.ins(format_args!("mov.{} {d}, {all_ones}", bty(s)));
                return;
            }
            if !(s.is_signed_int() && v == -1) {
                let y = self.op(b);
                self.ins(format_args!("{name}.{t} {d}, {x}, {y}"));
                return;
            }
        }
        let cls = RegClass::of_scalar(s);
        let (pz, safe, pm) = self.divisor_guard(b, s);
        let q = self.fresh(cls);
        self.ins(format_args!("{name}.{t} {q}, {x}, {safe}"));
        if op == BinOp::Div {
            if let Some(pm) = pm {
                let n = self.fresh(cls);
                self.ins(format_args!("neg.{t} {n}, {x}"));
                self.ins(format_args!("selp.{} {q}, {n}, {q}, {pm}", bty(s)));
            }
        }
        self.ins(format_args!("selp.{} {d}, {all_ones}, {q}, {pz}", bty(s)));
        self.renorm(d, s);
    }

    #[allow(clippy::too_many_arguments)]
    fn float_bin(&mut self, i: InstId, op: BinOp, s: ScalarType, fl: FloatFlags, a: Operand, b: Operand, d: Reg) {
        let plan = if s == S::F64 { nan_order::bin_plan(op, a, b) } else { Plan::AsWritten };
        if plan == Plan::LeadingNanConst {
            return self.leading_nan_bin(op, a, b, d);
        }
        match op {
            BinOp::Min | BinOp::Max => {
                if let Plan::ReplaceA(steps) = &plan {
                    let y = self.reg(b);
                    let x = self.nan_order_a(&[a, b], &[None, Some(y)], steps);
                    return self.ins(format_args!("{}.f64 {d}, {x}, {y}", op.name()));
                }
                let x = self.reg(a);
                let y = if is16f(s) { SrcText::Reg(self.reg(b)) } else { self.op(b) };
                let f = if fl.ftz && s == S::F32 { ".ftz" } else { "" };
                return self.ins(format_args!("{}{f}.{} {d}, {x}, {y}", op.name(), fty(s)));
            }
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div => {}
            _ => return self.unsupported(i, "not a float operation"),
        }
        if s == S::F64 && fl.ftz {
            return self.unsupported(i, "PTX has no .ftz for f64");
        }
        let r = match fl.mode {
            FloatMode::Exact(r) => r,
            FloatMode::Approx | FloatMode::Full if op == BinOp::Div && s == S::F32 => {
                let x = self.reg(a);
                let y = self.op(b);
                let m = if fl.mode == FloatMode::Approx { "approx" } else { "full" };
                return self.ins(format_args!("div.{m}{}.f32 {d}, {x}, {y}", ftz(fl.ftz)));
            }
            _ => return self.unsupported(i, "only div.f32 has .approx/.full"),
        };
        let name = match op {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            _ => "div",
        };
        if let Plan::ReplaceA(steps) = &plan {
            let y = self.reg(b);
            let x = self.nan_order_a(&[a, b], &[None, Some(y)], steps);
            return self.ins(format_args!("{name}{}.f64 {d}, {x}, {y}", rnd(r)));
        }
        if !is16f(s) {
            let x = self.reg(a);
            let y = self.op(b);
            return self.ins(format_args!("{name}{}{}.{} {d}, {x}, {y}", rnd(r), ftz(fl.ftz), fty(s)));
        }
        if op == BinOp::Div {
            return self.unsupported(i, "div takes f32 or f64");
        }
        // `.ftz` applies to f32 only (kir, like PTX): ignored for f16/bf16.
        let native = rnd(r) == ".rn" && (s == S::F16 || self.opts.sm >= SmVersion::Sm90);
        let x = self.reg(a);
        let y = self.reg(b);
        if native {
            return self.ins(format_args!("{name}.rn.{} {d}, {x}, {y}", fty(s)));
        }
        let fx = self.to_f32(x, s);
        let fy = self.to_f32(y, s);
        let fr = self.fresh(RegClass::F32);
        self.ins(format_args!("{name}{}.f32 {fr}, {fx}, {fy}", rnd(r)));
        self.from_f32(d, fr, s, r);
    }

    /// `op K, x` (`add`, `sub`, `mul`, `min`, `max`) with `K` an f64 NaN constant, computed
    /// explicitly. ptxas can encode a constant only as the later operand of the machine
    /// instruction, and the H100 returns the later of two NaN operands: emitted as written, `K`
    /// would win where kir's order (`b`, then `a`: docs/language.md) says a NaN `x` does. On
    /// 2026-11-27 it did in all 24 lanes per op where `x` was NaN too. So: `add`/`sub`/`mul` give
    /// `x` quieted if it is NaN, else `K` quieted (`t + t` quiets `t`); `min`/`max` give `x`,
    /// quieted if NaN. Three instructions for an op that is rare outside generated code.
    fn leading_nan_bin(&mut self, op: BinOp, k: Operand, b: Operand, d: Reg) {
        let x = self.reg(b);
        let p = self.fresh(RegClass::Pred);
        let t = self.fresh(RegClass::F64);
        self.ins(format_args!("testp.notanumber.f64 {p}, {x}"));
        if matches!(op, BinOp::Min | BinOp::Max) {
            self.ins(format_args!("add.rn.f64 {t}, {x}, {x}"));
            return self.ins(format_args!("selp.f64 {d}, {t}, {x}, {p}"));
        }
        let kr = self.reg(k);
        self.ins(format_args!("selp.f64 {t}, {x}, {kr}, {p}"));
        self.ins(format_args!("add.rn.f64 {d}, {t}, {t}"));
    }

    /// The register holding `a'` of a [`Plan::ReplaceA`] for the f64 op on `ops` (`a` first): the
    /// operand of the first of `steps` that applies, else `a`; `regs[i]` holds `ops[i]` for the
    /// operands the op itself reads from registers (`a`'s register is made here, and only when
    /// some step may leave `a` in place or tests it). Emitted from the last step to the first,
    /// each a `testp.notanumber.f64` and a `selp.f64` (an unconditional step: nothing), so the
    /// first step's choice is made last and wins.
    fn nan_order_a(&mut self, ops: &[Operand], regs: &[Option<Reg>], steps: &[Step]) -> Reg {
        let operand = |this: &mut Self, i: usize| regs[i].unwrap_or_else(|| this.reg(ops[i]));
        let mut cur: Option<Reg> = None;
        for step in steps.iter().rev() {
            let take = operand(self, step.take);
            match step.when {
                When::Always => cur = Some(take),
                When::NaN(t) => {
                    let tested = operand(self, t);
                    let keep = match cur {
                        Some(r) => r,
                        None => operand(self, 0),
                    };
                    let (p, out) = (self.fresh(RegClass::Pred), self.fresh(RegClass::F64));
                    self.ins(format_args!("testp.notanumber.f64 {p}, {tested}"));
                    self.ins(format_args!("selp.f64 {out}, {take}, {keep}, {p}"));
                    cur = Some(out);
                }
            }
        }
        match cur {
            Some(r) => r,
            None => operand(self, 0),
        }
    }

    /// `fma K, y, z` with `K` an f64 NaN constant (see [`Self::leading_nan_bin`]): the first NaN
    /// of `y`, `z`, `K` (kir's order for `fma`: `b`, `c`, then `a`), quieted.
    fn leading_nan_fma(&mut self, a: &[Operand], d: Reg) {
        let y = self.reg(a[1]);
        let z = self.reg(a[2]);
        let k = self.reg(a[0]);
        let (py, pz) = (self.fresh(RegClass::Pred), self.fresh(RegClass::Pred));
        let t = self.fresh(RegClass::F64);
        self.ins(format_args!("testp.notanumber.f64 {py}, {y}"));
        self.ins(format_args!("testp.notanumber.f64 {pz}, {z}"));
        self.ins(format_args!("selp.f64 {t}, {z}, {k}, {pz}"));
        self.ins(format_args!("selp.f64 {t}, {y}, {t}, {py}"));
        self.ins(format_args!("add.rn.f64 {d}, {t}, {t}"));
    }

    fn fma(&mut self, i: InstId, s: ScalarType, fl: FloatFlags, a: &[Operand], d: Reg) {
        let FloatMode::Exact(r) = fl.mode else {
            return self.unsupported(i, "fma has no .approx");
        };
        if s == S::F64 && fl.ftz {
            return self.unsupported(i, "PTX has no .ftz for f64");
        }
        if s == S::F64 {
            match nan_order::fma_plan(a[0], a[1], a[2]) {
                Plan::LeadingNanConst => return self.leading_nan_fma(a, d),
                Plan::ReplaceA(steps) => {
                    let (y, z) = (self.reg(a[1]), self.reg(a[2]));
                    let x = self.nan_order_a(a, &[None, Some(y), Some(z)], &steps);
                    return self.ins(format_args!("fma{}.f64 {d}, {x}, {y}, {z}", rnd(r)));
                }
                Plan::AsWritten => {}
            }
        }
        if !is16f(s) {
            let x = self.reg(a[0]);
            let y = self.op(a[1]);
            let z = self.op(a[2]);
            return self.ins(format_args!("fma{}{}.{} {d}, {x}, {y}, {z}", rnd(r), ftz(fl.ftz), fty(s)));
        }
        let x = self.reg(a[0]);
        let y = self.reg(a[1]);
        let z = self.reg(a[2]);
        if rnd(r) == ".rn" {
            return self.ins(format_args!("fma.rn.{} {d}, {x}, {y}, {z}", fty(s)));
        }
        let (fx, fy, fz) = (self.to_f32(x, s), self.to_f32(y, s), self.to_f32(z, s));
        let fr = self.fresh(RegClass::F32);
        // The product of two 16-bit significands is exact in f32; one rounding in f32, one to 16 bits.
        self.ins(format_args!("fma{}.f32 {fr}, {fx}, {fy}, {fz}", rnd(r)));
        self.from_f32(d, fr, s, r);
    }

    fn unary(&mut self, i: InstId, op: UnOp, s: ScalarType, fl: FloatFlags, a: Operand, d: Reg) {
        let x = self.reg(a);
        match op {
            // `abs` whose result only feeds comparisons: the native instruction (which ptxas folds
            // into the compare as an operand modifier). It may change a NaN's payload, which no
            // comparison can observe; everywhere else the sign-bit mask keeps payloads exact.
            UnOp::Abs
                if matches!(s, S::F32 | S::F64)
                    && !fl.ftz
                    && self.k.inst(i).result.is_some_and(|r| self.only_compared[r.index()]) =>
            {
                self.ins(format_args!("abs.{} {d}, {x}", s.name()));
            }
            UnOp::Neg | UnOp::Abs if s.is_float() => {
                let w = RegClass::of_scalar(s).bits();
                let sign: u64 = 1 << (w - 1);
                if op == UnOp::Neg {
                    self.ins(format_args!("xor.b{w} {d}, {x}, 0x{sign:X}"));
                } else {
                    self.ins(format_args!("and.b{w} {d}, {x}, 0x{:X}", sign - 1));
                }
            }
            UnOp::Neg => {
                self.ins(format_args!("neg.{} {d}, {x}", signed_ity(s)));
                self.renorm(d, s);
            }
            UnOp::Abs => {
                self.ins(format_args!("abs.{} {d}, {x}", signed_ity(s)));
                self.renorm(d, s);
            }
            UnOp::Not => {
                self.ins(format_args!("not.{} {d}, {x}", bty(s)));
                if s == S::U8 {
                    self.renorm(d, s);
                }
            }
            UnOp::Sqrt | UnOp::Rcp => {
                let name = op.name();
                match (s, fl.mode) {
                    (S::F32, FloatMode::Exact(r)) => {
                        self.ins(format_args!("{name}{}{}.f32 {d}, {x}", rnd(r), ftz(fl.ftz)))
                    }
                    (S::F32, FloatMode::Approx) => self.ins(format_args!("{name}.approx{}.f32 {d}, {x}", ftz(fl.ftz))),
                    (S::F64, FloatMode::Exact(r)) if !fl.ftz => self.ins(format_args!("{name}{}.f64 {d}, {x}", rnd(r))),
                    (S::F64, FloatMode::Approx) if op == UnOp::Rcp && fl.ftz => {
                        self.ins(format_args!("rcp.approx.ftz.f64 {d}, {x}"))
                    }
                    _ => self.unsupported(i, "no such PTX instruction for this type and mode"),
                }
            }
            UnOp::Rsqrt | UnOp::Ex2 | UnOp::Lg2 | UnOp::Sin | UnOp::Cos | UnOp::Tanh => {
                if s != S::F32 || fl.mode != FloatMode::Approx {
                    return self.unsupported(i, "only the .approx.f32 form exists");
                }
                if op == UnOp::Tanh {
                    // tanh.approx.f32 has no .ftz: flush input and result explicitly.
                    let x = if fl.ftz { self.flush32(x) } else { x };
                    if fl.ftz {
                        let t = self.fresh(RegClass::F32);
                        self.ins(format_args!("tanh.approx.f32 {t}, {x}"));
                        self.ins(format_args!("cvt.ftz.f32.f32 {d}, {t}"));
                    } else {
                        self.ins(format_args!("tanh.approx.f32 {d}, {x}"));
                    }
                } else {
                    self.ins(format_args!("{}.approx{}.f32 {d}, {x}", op.name(), ftz(fl.ftz)));
                }
            }
        }
    }

    fn cmp(&mut self, op: CmpOp, s: ScalarType, a: Operand, b: Operand, d: Reg) {
        if s == S::Pred {
            let x = self.reg(a);
            let y = self.reg(b);
            if op == CmpOp::Ne {
                self.ins(format_args!("xor.pred {d}, {x}, {y}"));
            } else {
                let t = self.fresh(RegClass::Pred);
                self.ins(format_args!("xor.pred {t}, {x}, {y}"));
                self.ins(format_args!("not.pred {d}, {t}"));
            }
            return;
        }
        let x = self.reg(a);
        if s == S::BF16 && self.opts.sm < SmVersion::Sm90 {
            let y = self.reg(b);
            let fx = self.to_f32(x, s);
            let fy = self.to_f32(y, s);
            return self.ins(format_args!("setp.{}.f32 {d}, {fx}, {fy}", op.name()));
        }
        let y = if is16f(s) { SrcText::Reg(self.reg(b)) } else { self.op(b) };
        let t = if s.is_float() { fty(s) } else { ity(s) };
        self.ins(format_args!("setp.{}.{t} {d}, {x}, {y}", op.name()));
    }

    #[allow(clippy::too_many_arguments)]
    fn cvt(
        &mut self,
        i: InstId,
        to: ScalarType,
        from: ScalarType,
        r: Option<Rounding>,
        sat: bool,
        ftz: bool,
        a: Operand,
        d: Reg,
    ) {
        if to == S::Pred || from == S::Pred {
            return self.unsupported(i, "cvt does not take pred");
        }
        let x = self.reg(a);
        let sat_s = if sat { ".sat" } else { "" };
        match (from.is_float(), to.is_float()) {
            (false, false) => {
                // PTX rejects .sat where the destination holds every source value; it is a no-op there.
                let fits = if from.is_signed_int() == to.is_signed_int() {
                    to.bits() >= from.bits()
                } else {
                    from.is_unsigned_int() && to.bits() > from.bits()
                };
                let sat = sat && !fits;
                let sat_s = if sat { ".sat" } else { "" };
                if to == from && !sat {
                    return self.ins(format_args!("mov.{} {d}, {x}", bty(to)));
                }
                let fs = match from {
                    S::U8 => "u8",
                    S::S8 => "s8",
                    _ => ity(from),
                };
                let ts = match to {
                    S::U8 => "u8",
                    S::S8 => "s8",
                    _ => ity(to),
                };
                self.ins(format_args!("cvt{sat_s}.{ts}.{fs} {d}, {x}"));
            }
            (false, true) => {
                let r = rnd(r.unwrap_or(Rounding::Rn));
                if to == S::BF16 {
                    let f = self.fresh(RegClass::F32);
                    self.ins(format_args!("cvt{r}{sat_s}.f32.{} {f}, {x}", ity(from)));
                    let rr = Rounding::from_name(&r[1..]).unwrap_or(Rounding::Rn);
                    self.from_f32(d, f, to, rr);
                } else {
                    self.ins(format_args!("cvt{r}{sat_s}.{}.{} {d}, {x}", fty(to), ity(from)));
                }
            }
            (true, false) => {
                let r = irnd(r.unwrap_or(Rounding::Rzi));
                let ts = match to {
                    S::U8 => "u8",
                    S::S8 => "s8",
                    _ => ity(to),
                };
                let (src, fs) = match from {
                    S::BF16 => (self.to_f32(x, from), "f32"),
                    S::F16 => (x, "f16"),
                    S::F32 => (x, "f32"),
                    _ => (x, "f64"),
                };
                let fz = if ftz && from == S::F32 { ".ftz" } else { "" };
                self.ins(format_args!("cvt{r}{fz}{sat_s}.{ts}.{fs} {d}, {src}"));
            }
            (true, true) => self.cvt_ff(i, to, from, r, sat, ftz, x, d),
        }
    }

    /// Float → float conversion: a 16-bit source is first widened exactly to f32; rounding to an
    /// integral value, saturation and input flushing happen in the (wide) source type; then one
    /// rounding to the destination.
    #[allow(clippy::too_many_arguments)]
    fn cvt_ff(
        &mut self,
        _i: InstId,
        to: ScalarType,
        from: ScalarType,
        r: Option<Rounding>,
        sat: bool,
        ftz: bool,
        x: Reg,
        d: Reg,
    ) {
        let (mut x, mut xt) = (x, from);
        if to == from && !sat && !(ftz && to == S::F32) && !r.is_some_and(|r| r.is_integral()) {
            // The value unchanged, except that a NaN becomes what `add` makes of it (the
            // canonical NaN for f32 and narrower, the NaN quieted with its payload for f64: the
            // H100's rule for same-type conversions; a `mov` would keep a signaling NaN): adding
            // -0.0 is exact for every other value, signed zeros included. 16-bit values take the
            // exact f32 round trip.
            return match to {
                S::F32 => self.ins(format_args!("add.rn.f32 {d}, {x}, 0f80000000")),
                S::F64 => self.ins(format_args!("add.rn.f64 {d}, {x}, 0d8000000000000000")),
                _ => {
                    let f = self.to_f32(x, from);
                    let g = self.fresh(RegClass::F32);
                    self.ins(format_args!("add.rn.f32 {g}, {f}, 0f80000000"));
                    self.from_f32(d, g, to, Rounding::Rn)
                }
            };
        }
        if is16f(from) {
            // A bf16 subnormal widens to an f32 subnormal, which `.ftz` flushes (below).
            let flush = ftz && from == S::BF16;
            if to == S::F32 && !sat && !flush && !r.is_some_and(|r| r.is_integral()) {
                return self.ins(format_args!("cvt.f32.{} {d}, {x}", fty(from)));
            }
            x = self.to_f32(x, from);
            xt = S::F32;
        }
        let integral = r.filter(|r| r.is_integral());
        // `.ftz` flushes f32 operands, and the f32 result of widening a bf16 (f16 values widen to
        // normal f32 values).
        let flush_in = ftz && (from == S::F32 || (from == S::BF16 && to == S::F32));
        if integral.is_some() || sat || flush_in {
            let t = self.fresh(RegClass::of_scalar(xt));
            let ir = integral.map(irnd).unwrap_or("");
            let fz = if flush_in { ".ftz" } else { "" };
            self.ins(format_args!("cvt{ir}{fz}{}.{}.{} {t}, {x}", if sat { ".sat" } else { "" }, fty(xt), fty(xt)));
            if sat {
                // kir's .sat gives +0.0 for -0.0 (and NaN): adding +0.0 in rn turns -0.0 into +0.0
                // and leaves every other value unchanged.
                self.ins(format_args!(
                    "add.rn.{0} {t}, {t}, {1}",
                    fty(xt),
                    if xt == S::F32 { "0f00000000" } else { "0d0000000000000000" }
                ));
            }
            x = t;
        }
        let rr = r.filter(|r| !r.is_integral()).unwrap_or(Rounding::Rn);
        match (xt, to) {
            (a, b) if a == b => self.ins(format_args!("mov.{} {d}, {x}", mty(b))),
            (S::F32, S::F64) => self.ins(format_args!("cvt.f64.f32 {d}, {x}")),
            (S::F64, S::F32) => self.ins(format_args!("cvt{}{}.f32.f64 {d}, {x}", rnd(rr), ftz_s(ftz))),
            (S::F32, S::F16 | S::BF16) => self.from_f32(d, x, to, rr),
            (S::F64, S::F16) => self.ins(format_args!("cvt{}.f16.f64 {d}, {x}", rnd(rr))),
            (S::F64, S::BF16) => {
                // f64 → f32 → bf16: directed roundings compose; for rn, 24 >= 2*8+2.
                let f = self.fresh(RegClass::F32);
                self.ins(format_args!("cvt{}.f32.f64 {f}, {x}", rnd(rr)));
                self.from_f32(d, f, to, rr);
            }
            _ => self.ins(format_args!("cvt{}.{}.{} {d}, {x}", rnd(rr), fty(to), fty(xt))),
        }
    }

    fn shfl(&mut self, mode: ShflMode, s: ScalarType, a: &[Operand], d: Reg) {
        let c = if mode == ShflMode::Up { 0 } else { 31 };
        let lane = self.op(a[1]);
        let mask = self.op(a[2]);
        let x = self.reg(a[0]);
        let m = mode.name();
        match RegClass::of_scalar(s) {
            RegClass::B32 | RegClass::F32 => self.ins(format_args!("shfl.sync.{m}.b32 {d}, {x}, {lane}, {c}, {mask}")),
            RegClass::B16 | RegClass::H16 => {
                let (t, u) = (self.fresh(RegClass::B32), self.fresh(RegClass::B32));
                self.ins(format_args!("cvt.u32.u16 {t}, {x}"));
                self.ins(format_args!("shfl.sync.{m}.b32 {u}, {t}, {lane}, {c}, {mask}"));
                self.ins(format_args!("cvt.u16.u32 {d}, {u}"));
            }
            RegClass::B64 | RegClass::F64 => {
                let r: Vec<Reg> = (0..4).map(|_| self.fresh(RegClass::B32)).collect();
                self.ins(format_args!("mov.b64 {{{}, {}}}, {x}", r[0], r[1]));
                self.ins(format_args!("shfl.sync.{m}.b32 {}, {}, {lane}, {c}, {mask}", r[2], r[0]));
                self.ins(format_args!("shfl.sync.{m}.b32 {}, {}, {lane}, {c}, {mask}", r[3], r[1]));
                self.ins(format_args!("mov.b64 {d}, {{{}, {}}}", r[2], r[3]));
            }
            RegClass::Pred => {
                let (t, u) = (self.fresh(RegClass::B32), self.fresh(RegClass::B32));
                self.ins(format_args!("selp.u32 {t}, 1, 0, {x}"));
                self.ins(format_args!("shfl.sync.{m}.b32 {u}, {t}, {lane}, {c}, {mask}"));
                self.ins(format_args!("setp.ne.u32 {d}, {u}, 0"));
            }
        }
    }

    /// `(base, offset)` with `base + offset` = `ptr + index * size` (bytes); the index is
    /// sign- or zero-extended to 64 bits per its type. A register index is scaled and added into
    /// `dest` when given (then the base is `dest`), else into a fresh register.
    fn addr_parts(&mut self, ptr: Operand, idx: Operand, size: i64, dest: Option<Reg>) -> (Reg, i64) {
        let p = self.reg(ptr);
        match idx {
            Operand::Const(c) => {
                let off = (c.as_i128() as i64).wrapping_mul(size);
                if i32::try_from(off).is_ok() {
                    return (p, off);
                }
                let t = self.fresh(RegClass::B64);
                self.ins(format_args!("add.s64 {t}, {p}, {off}"));
                (t, 0)
            }
            Operand::Value(v) => {
                // An access at the address an earlier one in a dominating block computed reads
                // that register (an `offset` value gets its own).
                let here = self.cur_block;
                if dest.is_none() {
                    if let Some(r) = self.addresses.find(&(ptr, v, size), &self.cfg, here) {
                        return (r, 0);
                    }
                }
                let t = self.scaled_index(v, size);
                let a = dest.unwrap_or_else(|| self.fresh(RegClass::B64));
                self.ins(format_args!("add.s64 {a}, {p}, {t}"));
                if dest.is_none() {
                    self.addresses.record((ptr, v, size), here, a);
                }
                (a, 0)
            }
        }
    }

    /// A register holding index `v` sign- or zero-extended to 64 bits and times `size`: one
    /// computed earlier in a block that dominates this one (the same value, as in a
    /// dominator-based CSE), else computed now. `mul.wide` + `add` rather than `mad.wide`: the
    /// scaled index is shared between several pointers indexed alike, and ptxas folds each use
    /// into an IMAD.WIDE.
    fn scaled_index(&mut self, v: kir_ir::ValueId, size: i64) -> Reg {
        let here = self.cur_block;
        if let Some(r) = self.scaled.find(&(v, size), &self.cfg, here) {
            return r;
        }
        let it = self.k.value_type(v).scalar().unwrap_or(S::U64);
        let x = self.val(v);
        let t = self.fresh(RegClass::B64);
        let wide = if it.is_signed_int() { "s32" } else { "u32" };
        match it.bits() {
            64 => self.ins(format_args!("mul.lo.s64 {t}, {x}, {size}")),
            16 => {
                let w = self.fresh(RegClass::B32);
                self.ins(format_args!("cvt.{wide}.{} {w}, {x}", ity(it)));
                self.ins(format_args!("mul.wide.{wide} {t}, {w}, {size}"));
            }
            _ => self.ins(format_args!("mul.wide.{wide} {t}, {x}, {size}")),
        }
        self.scaled.record((v, size), here, t);
        t
    }

    /// The `[reg+off]` address of element `idx` of `ptr`.
    fn address(&mut self, ptr: Operand, idx: Operand, size: i64) -> String {
        let (base, off) = self.addr_parts(ptr, idx, size, None);
        if off == 0 {
            format!("[{base}]")
        } else {
            format!("[{base}+{off}]")
        }
    }
}

fn ftz_s(b: bool) -> &'static str {
    ftz(b)
}

fn signed_ity(s: ScalarType) -> &'static str {
    match s.bits() {
        8 | 32 => "s32",
        16 => "s16",
        _ => "s64",
    }
}

/// The lane of `extract`/`insert`: a constant below `n`.
fn const_lane(o: Operand, n: usize) -> Option<usize> {
    match o {
        Operand::Const(c) if c.bits < n as u64 => Some(c.bits as usize),
        _ => None,
    }
}

fn ss(space: AddrSpace) -> &'static str {
    match space {
        AddrSpace::Global => ".global",
        AddrSpace::Shared => ".shared",
    }
}
