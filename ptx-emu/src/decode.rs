//! One PTX instruction (opcode, modifiers, operands) → one [`Inst`], following the PTX ISA's
//! syntax for each instruction. Every modifier must be understood: cache and memory-ordering
//! hints, which do not change results in a sequentially consistent emulator, are accepted and
//! ignored; anything else unknown is an error naming the instruction and its line.

use crate::float::{Approx, Arith, FCmp, FTy, Rnd};
use crate::prog::*;
use crate::scope::{scalar_type, Scopes, SharedInfo, Sym, DYNAMIC_SHARED};
use crate::{ParseError, ScalarType};

/// An operand as written.
#[derive(Clone, Debug)]
pub enum Operand {
    /// A register, variable, label or special register (`%tid.x`).
    Name(String, u32, u32),
    Int(i128, u32, u32),
    F32(u32, u32, u32),
    F64(u64, u32, u32),
    /// `[base+off]`, `[off]`.
    Mem {
        base: Option<(String, u32, u32)>,
        off: i64,
        line: u32,
        col: u32,
    },
    /// `{a, b, ..}`.
    Vec(Vec<Operand>, u32, u32),
    /// `!%p`.
    Not(Box<Operand>),
    /// `%p|%q`.
    Pair(String, String, u32, u32),
    /// `_`.
    Sink(u32, u32),
    /// `sym+4`.
    SymOff(String, i64, u32, u32),
}

impl Operand {
    fn pos(&self) -> (u32, u32) {
        match self {
            Operand::Name(_, l, c)
            | Operand::Int(_, l, c)
            | Operand::F32(_, l, c)
            | Operand::F64(_, l, c)
            | Operand::Vec(_, l, c)
            | Operand::Pair(_, _, l, c)
            | Operand::Sink(l, c)
            | Operand::SymOff(_, _, l, c) => (*l, *c),
            Operand::Mem { line, col, .. } => (*line, *col),
            Operand::Not(o) => o.pos(),
        }
    }
}

/// An instruction as written.
#[derive(Clone, Debug)]
pub struct RawInst {
    pub guard: Option<(String, bool, u32, u32)>,
    pub opcode: String,
    pub mods: Vec<String>,
    pub operands: Vec<Operand>,
    pub line: u32,
    pub col: u32,
    pub text: String,
}

/// How an operand's immediate is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bits(u32),
    Float(FTy),
}

/// Modifiers not yet consumed by the decoder.
struct Mods<'a> {
    list: Vec<&'a str>,
}

impl<'a> Mods<'a> {
    fn take(&mut self, m: &str) -> bool {
        if let Some(i) = self.list.iter().position(|x| *x == m) {
            self.list.remove(i);
            true
        } else {
            false
        }
    }

    fn take_any(&mut self, ms: &[&'static str]) -> Option<&'static str> {
        ms.iter().copied().find(|m| self.take(m))
    }

    /// Type modifiers, in order, removed from the list.
    fn types(&mut self) -> Vec<ScalarType> {
        let mut out = Vec::new();
        self.list.retain(|m| match scalar_type(m) {
            Some(t) => {
                out.push(t);
                false
            }
            None => true,
        });
        out
    }

    fn rnd(&mut self) -> Option<Rnd> {
        self.take_any(&["rn", "rz", "rm", "rp"]).map(|r| match r {
            "rn" => Rnd::N,
            "rz" => Rnd::Z,
            "rm" => Rnd::M,
            _ => Rnd::P,
        })
    }

    fn irnd(&mut self) -> Option<Rnd> {
        self.take_any(&["rni", "rzi", "rmi", "rpi"]).map(|r| match r {
            "rni" => Rnd::N,
            "rzi" => Rnd::Z,
            "rmi" => Rnd::M,
            _ => Rnd::P,
        })
    }
}

/// Modifiers that only carry cache, eviction, scope or memory-ordering hints.
const HINTS: &[&str] = &[
    "ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "volatile", "relaxed", "acquire", "release", "acq_rel", "sc",
    "weak", "sys", "gpu", "cta", "cluster", "aligned", "uni", "sync",
];

struct Cx<'a> {
    raw: &'a RawInst,
    scopes: &'a Scopes,
    shared: &'a SharedInfo,
}

fn ftype(t: ScalarType) -> Option<FTy> {
    match t {
        ScalarType::F16 => Some(FTy::F16),
        ScalarType::BF16 => Some(FTy::BF16),
        ScalarType::F32 => Some(FTy::F32),
        ScalarType::F64 => Some(FTy::F64),
        _ => None,
    }
}

fn itype(t: ScalarType) -> Option<ITy> {
    use ScalarType::*;
    Some(match t {
        U8 | B8 => ITy { bits: 8, signed: false },
        U16 | B16 => ITy { bits: 16, signed: false },
        U32 | B32 => ITy { bits: 32, signed: false },
        U64 | B64 => ITy { bits: 64, signed: false },
        S8 => ITy { bits: 8, signed: true },
        S16 => ITy { bits: 16, signed: true },
        S32 => ITy { bits: 32, signed: true },
        S64 => ITy { bits: 64, signed: true },
        Pred => ITy { bits: 1, signed: false },
        _ => return None,
    })
}

fn kind_of(t: ScalarType) -> Kind {
    match ftype(t) {
        Some(f) => Kind::Float(f),
        None => Kind::Bits(if t == ScalarType::Pred { 1 } else { t.size() * 8 }),
    }
}

impl<'a> Cx<'a> {
    fn err_at(&self, (line, col): (u32, u32), m: impl Into<String>) -> ParseError {
        ParseError { line, col, message: m.into() }
    }

    fn err(&self, m: impl Into<String>) -> ParseError {
        ParseError { line: self.raw.line, col: self.raw.col, message: m.into() }
    }

    fn name(&self) -> String {
        let mut s = self.raw.opcode.clone();
        for m in &self.raw.mods {
            s.push('.');
            s.push_str(m);
        }
        s
    }

    fn unsupported(&self, why: &str) -> ParseError {
        self.err(format!("unsupported instruction `{}`: {why}", self.name()))
    }

    fn arity(&self, n: usize) -> Result<&'a [Operand], ParseError> {
        let ops = &self.raw.operands;
        if ops.len() != n {
            return Err(self.err(format!("`{}` takes {n} operands, found {}", self.name(), ops.len())));
        }
        Ok(ops)
    }

    fn reg(&self, o: &Operand) -> Result<RegId, ParseError> {
        match o {
            Operand::Name(n, l, c) => match self.scopes.lookup(n) {
                Some(Sym::Reg(r)) => Ok(r),
                Some(_) => Err(self.err_at((*l, *c), format!("`{n}` is a variable, not a register"))),
                None if n.starts_with('%') && sreg(n).is_some() => {
                    Err(self.err_at((*l, *c), format!("special register `{n}` cannot be written")))
                }
                None => Err(self.err_at((*l, *c), self.scopes.undeclared(n, "register"))),
            },
            Operand::Sink(..) => Ok(NO_REG),
            other => Err(self.err_at(other.pos(), "expected a register")),
        }
    }

    /// A destination register (`_` allowed).
    fn dst(&self, o: &Operand) -> Result<RegId, ParseError> {
        self.reg(o)
    }

    /// The address a variable name stands for in its own state space.
    fn symbol_address(&self, n: &str) -> Option<(Space, u64)> {
        match self.scopes.lookup(n)? {
            Sym::Shared(off) => {
                Some((Space::Shared, if off == DYNAMIC_SHARED { self.shared.dynamic_offset } else { off } as u64))
            }
            Sym::Local(off) | Sym::CallParam(off) => Some((Space::Local, off as u64)),
            Sym::Param(off) => Some((Space::Param, off as u64)),
            Sym::Const(off) => Some((Space::Const, off as u64)),
            Sym::Reg(_) => None,
        }
    }

    /// A source operand read as `k`; returns the source and whether it is negated (`!%p`).
    fn src(&self, o: &Operand, k: Kind) -> Result<(Src, bool), ParseError> {
        let imm = |v: u64| Ok((Src::Imm(v), false));
        match o {
            Operand::Not(inner) => {
                if k != Kind::Bits(1) {
                    return Err(self.err_at(o.pos(), "`!` applies to predicate operands only"));
                }
                let (s, n) = self.src(inner, k)?;
                Ok((s, !n))
            }
            Operand::Name(n, l, c) => {
                if let Some(s) = sreg(n) {
                    return Ok((Src::Sreg(s), false));
                }
                match self.scopes.lookup(n) {
                    Some(Sym::Reg(r)) => Ok((Src::Reg(r), false)),
                    Some(_) => imm(self.symbol_address(n).map(|a| a.1).unwrap_or(0)),
                    None => Err(self.err_at((*l, *c), self.scopes.undeclared(n, "register or variable"))),
                }
            }
            Operand::SymOff(n, off, l, c) => match self.symbol_address(n) {
                Some((_, a)) => imm(a.wrapping_add(*off as u64)),
                None => Err(self.err_at((*l, *c), format!("`{n}` is not a variable"))),
            },
            Operand::Int(v, ..) => match k {
                Kind::Bits(b) => imm((*v as u64) & mask(b)),
                Kind::Float(t) => imm(t.from_f64(*v as f64, Rnd::N)),
            },
            Operand::F32(b, ..) => match k {
                // A literal of the operand's own format is its bit pattern (NaN payloads kept).
                Kind::Bits(32) | Kind::Float(FTy::F32) => imm(*b as u64),
                Kind::Float(t) => imm(t.from_f64(f32::from_bits(*b) as f64, Rnd::N)),
                _ => Err(self.err_at(o.pos(), "an f32 literal (`0f...`) needs a 32-bit or float operand")),
            },
            Operand::F64(b, ..) => match k {
                Kind::Bits(64) | Kind::Float(FTy::F64) => imm(*b),
                Kind::Float(t) => imm(t.from_f64(f64::from_bits(*b), Rnd::N)),
                _ => Err(self.err_at(o.pos(), "an f64 literal needs a 64-bit or float operand")),
            },
            Operand::Sink(..) => Err(self.err_at(o.pos(), "`_` is not a source")),
            _ => Err(self.err_at(o.pos(), "expected a register or an immediate")),
        }
    }

    fn s(&self, o: &Operand, k: Kind) -> Result<Src, ParseError> {
        let (s, n) = self.src(o, k)?;
        if n {
            return Err(self.err_at(o.pos(), "a negated predicate is not allowed here"));
        }
        Ok(s)
    }

    /// Whether `o` is an address `[var+off]` of a call's `.param` slot.
    fn is_call_param(&self, o: &Operand) -> bool {
        matches!(o, Operand::Mem { base: Some((n, ..)), .. } if matches!(self.scopes.lookup(n), Some(Sym::CallParam(_))))
    }

    /// `[reg+off]`, `[var+off]`, `[imm]`: base register and offset, and the space of a variable.
    fn address(&self, o: &Operand) -> Result<(Option<RegId>, i64, Option<Space>), ParseError> {
        let Operand::Mem { base, off, .. } = o else {
            return Err(self.err_at(o.pos(), "expected an address `[...]`"));
        };
        match base {
            None => Ok((None, *off, None)),
            Some((n, l, c)) => match self.scopes.lookup(n) {
                Some(Sym::Reg(r)) => Ok((Some(r), *off, None)),
                Some(_) => {
                    let (sp, a) = self.symbol_address(n).expect("a variable");
                    Ok((None, (a as i64).wrapping_add(*off), Some(sp)))
                }
                None => Err(self.err_at((*l, *c), self.scopes.undeclared(n, "register or variable"))),
            },
        }
    }
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

fn sreg(n: &str) -> Option<Sreg> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((base, d)) = n.split_once('.') {
        let d = dim(d)?;
        return Some(match base {
            "%tid" => Sreg::Tid(d),
            "%ntid" => Sreg::Ntid(d),
            "%ctaid" => Sreg::Ctaid(d),
            "%nctaid" => Sreg::Nctaid(d),
            _ => return None,
        });
    }
    Some(match n {
        "%laneid" => Sreg::Laneid,
        "%warpid" => Sreg::Warpid,
        "%nwarpid" => Sreg::Nwarpid,
        "%lanemask_eq" => Sreg::LanemaskEq,
        "%lanemask_lt" => Sreg::LanemaskLt,
        "%lanemask_le" => Sreg::LanemaskLe,
        "%lanemask_gt" => Sreg::LanemaskGt,
        "%lanemask_ge" => Sreg::LanemaskGe,
        "%clock" => Sreg::Clock,
        "%clock64" => Sreg::Clock64,
        "%smid" => Sreg::Smid,
        "%nsmid" => Sreg::Nsmid,
        "%gridid" => Sreg::Gridid,
        "%dynamic_smem_size" => Sreg::DynamicSmemSize,
        "%total_smem_size" => Sreg::TotalSmemSize,
        _ => return None,
    })
}

fn blank(op: Op, line: u32) -> Inst {
    Inst { op, guard: None, dst: [NO_REG; 4], src: [Src::None; 4], neg: 0, base: None, offset: 0, line, wide: None }
}

/// Decodes one instruction. Returns the instruction and, for a branch, its label (resolved by
/// the caller once the whole body is read).
pub fn decode(raw: &RawInst, scopes: &Scopes, shared: &SharedInfo) -> Result<(Inst, Option<String>), ParseError> {
    let cx = Cx { raw, scopes, shared };
    let mut m = Mods { list: raw.mods.iter().map(String::as_str).collect() };
    let mut inst = blank(Op::Nop, raw.line);
    if let Some((g, neg, l, c)) = &raw.guard {
        match scopes.lookup(g) {
            Some(Sym::Reg(r)) => inst.guard = Some((r, *neg)),
            _ => return Err(ParseError { line: *l, col: *c, message: format!("undeclared guard predicate `{g}`") }),
        }
    }
    let mut label = None;
    let op = raw.opcode.as_str();
    // Hints that never change results; `.sync`/`.aligned` are required below where they matter.
    let sync = m.take("sync");
    let aligned = m.take("aligned");
    let _ = aligned;
    for h in HINTS {
        m.take(h);
    }
    m.list.retain(|x| !x.starts_with("L1::") && !x.starts_with("L2::"));
    let o = &raw.operands;
    let decoded: Op = match op {
        "mov" => {
            let ty = one_type(&cx, &mut m)?;
            let ops = cx.arity(2)?;
            let bits = if ty == ScalarType::Pred { 1 } else { ty.size() * 8 };
            match (&ops[0], &ops[1]) {
                (Operand::Vec(parts, ..), src) => {
                    let n = parts.len() as u32;
                    if !matches!(n, 2 | 4) || bits % n != 0 || bits / n < 8 {
                        return Err(cx.err(format!("`mov.{}` cannot unpack into {n} parts", ty.name())));
                    }
                    for (i, p) in parts.iter().enumerate() {
                        inst.dst[i] = cx.dst(p)?;
                    }
                    inst.src[0] = cx.s(src, Kind::Bits(bits))?;
                    Op::Unpack { n, part: bits / n }
                }
                (d, Operand::Vec(parts, ..)) => {
                    let n = parts.len() as u32;
                    if !matches!(n, 2 | 4) || bits % n != 0 || bits / n < 8 {
                        return Err(cx.err(format!("`mov.{}` cannot pack {n} parts", ty.name())));
                    }
                    inst.dst[0] = cx.dst(d)?;
                    for (i, p) in parts.iter().enumerate() {
                        inst.src[i] = cx.s(p, Kind::Bits(bits / n))?;
                    }
                    Op::Pack { n, part: bits / n }
                }
                (d, s) => {
                    inst.dst[0] = cx.dst(d)?;
                    inst.src[0] = cx.s(s, kind_of(ty))?;
                    Op::Mov { bits }
                }
            }
        }
        "add" | "sub" | "mul" | "mad" | "fma" | "div" => arith(&cx, &mut m, &mut inst, op)?,
        "mul24" | "mad24" => {
            let t = int_type(&cx, &mut m)?;
            if t.bits != 32 {
                return Err(cx.unsupported("only .u32/.s32"));
            }
            let hi = m.take("hi");
            let lo = m.take("lo");
            if hi == lo {
                return Err(cx.err(format!("`{op}` needs exactly one of `.hi`/`.lo`")));
            }
            let n = if op == "mad24" { 4 } else { 3 };
            let ops = cx.arity(n)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            for i in 1..n {
                inst.src[i - 1] = cx.s(&ops[i], Kind::Bits(32))?;
            }
            if op == "mad24" {
                Op::Mad { mode: if hi { MadMode::Hi24 } else { MadMode::Lo24 }, t, sat: false }
            } else {
                Op::IBin { op: if hi { IBin::Mul24Hi } else { IBin::Mul24Lo }, t }
            }
        }
        "rem" | "and" | "or" | "xor" | "shl" | "shr" => {
            let t = int_type(&cx, &mut m)?;
            let ops = cx.arity(3)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            let (a, na) = cx.src(&ops[1], Kind::Bits(t.bits))?;
            let shift = matches!(op, "shl" | "shr");
            let (b, nb) = cx.src(&ops[2], Kind::Bits(if shift { 32 } else { t.bits }))?;
            inst.src[0] = a;
            inst.src[1] = b;
            inst.neg = na as u8 | (nb as u8) << 1;
            if (na || nb) && t.bits != 1 {
                return Err(cx.err("`!` applies to predicate operands only"));
            }
            if t.bits == 1 && !matches!(op, "and" | "or" | "xor") {
                return Err(cx.unsupported("not defined on .pred"));
            }
            Op::IBin {
                op: match op {
                    "rem" => IBin::Rem,
                    "and" => IBin::And,
                    "or" => IBin::Or,
                    "xor" => IBin::Xor,
                    "shl" => IBin::Shl,
                    _ => IBin::Shr,
                },
                t,
            }
        }
        "not" | "cnot" | "popc" | "clz" | "brev" | "bfind" => {
            let t = int_type(&cx, &mut m)?;
            let ops = cx.arity(2)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            let (a, na) = cx.src(&ops[1], Kind::Bits(t.bits))?;
            inst.src[0] = a;
            inst.neg = na as u8;
            let shiftamt = m.take("shiftamt");
            Op::IUn {
                op: match op {
                    "not" => IUn::Not,
                    "cnot" => IUn::Cnot,
                    "popc" => IUn::Popc,
                    "clz" => IUn::Clz,
                    "brev" => IUn::Brev,
                    _ if shiftamt => IUn::BfindShift,
                    _ => IUn::Bfind,
                },
                t,
            }
        }
        "abs" | "neg" => {
            let ftz = m.take("ftz");
            let ty = one_type(&cx, &mut m)?;
            let ops = cx.arity(2)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            inst.src[0] = cx.s(&ops[1], kind_of(ty))?;
            match ftype(ty) {
                Some(t) if op == "abs" => Op::FAbs { t, ftz },
                Some(t) => Op::FNeg { t, ftz },
                None => {
                    let t = itype(ty)
                        .filter(|t| t.signed)
                        .ok_or_else(|| cx.unsupported("needs a signed integer or float type"))?;
                    Op::IUn { op: if op == "abs" { IUn::Abs } else { IUn::Neg }, t }
                }
            }
        }
        "min" | "max" => {
            let ftz = m.take("ftz");
            if m.take("NaN") || m.take("xorsign") {
                return Err(cx.unsupported("`.NaN`/`.xorsign` forms"));
            }
            let ty = one_type(&cx, &mut m)?;
            let ops = cx.arity(3)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            inst.src[0] = cx.s(&ops[1], kind_of(ty))?;
            inst.src[1] = cx.s(&ops[2], kind_of(ty))?;
            match ftype(ty) {
                Some(t) => Op::FMinMax { t, max: op == "max", ftz },
                None => {
                    Op::IBin { op: if op == "max" { IBin::Max } else { IBin::Min }, t: itype(ty).expect("not a float") }
                }
            }
        }
        "bfe" | "bfi" => {
            let t = int_type(&cx, &mut m)?;
            let n = if op == "bfe" { 4 } else { 5 };
            let ops = cx.arity(n)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            let nv = if op == "bfe" { 1 } else { 2 };
            for i in 0..nv {
                inst.src[i] = cx.s(&ops[1 + i], Kind::Bits(t.bits))?;
            }
            for i in nv..n - 1 {
                inst.src[i] = cx.s(&ops[1 + i], Kind::Bits(32))?;
            }
            if op == "bfe" {
                Op::Bfe { t }
            } else {
                Op::Bfi { t }
            }
        }
        "prmt" => {
            if m.list.iter().any(|x| matches!(*x, "f4e" | "b4e" | "rc8" | "ecl" | "ecr" | "rc16")) {
                return Err(cx.unsupported("only the default `prmt.b32` mode"));
            }
            let _ = int_type(&cx, &mut m)?;
            let ops = cx.arity(4)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            for i in 0..3 {
                inst.src[i] = cx.s(&ops[1 + i], Kind::Bits(32))?;
            }
            Op::Prmt
        }
        "copysign" | "testp" => {
            let kind = if op == "testp" {
                Some(match m.take_any(&["finite", "infinite", "number", "notanumber", "normal", "subnormal"]) {
                    Some("finite") => TestpKind::Finite,
                    Some("infinite") => TestpKind::Infinite,
                    Some("number") => TestpKind::Number,
                    Some("notanumber") => TestpKind::NotANumber,
                    Some("normal") => TestpKind::Normal,
                    Some(_) => TestpKind::Subnormal,
                    None => return Err(cx.err("`testp` needs a test (`.finite`, `.notanumber`, ...)")),
                })
            } else {
                None
            };
            let t = float_type(&cx, &mut m)?;
            let ops = cx.arity(if op == "testp" { 2 } else { 3 })?;
            inst.dst[0] = cx.dst(&ops[0])?;
            inst.src[0] = cx.s(&ops[1], Kind::Float(t))?;
            match kind {
                Some(kind) => Op::Testp { t, kind },
                None => {
                    inst.src[1] = cx.s(&ops[2], Kind::Float(t))?;
                    Op::Copysign { t }
                }
            }
        }
        "sqrt" | "rcp" | "rsqrt" | "sin" | "cos" | "lg2" | "ex2" | "tanh" => {
            let approx = m.take("approx");
            let ftz = m.take("ftz");
            let rnd = m.rnd();
            let t = float_type(&cx, &mut m)?;
            let ops = cx.arity(2)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            inst.src[0] = cx.s(&ops[1], Kind::Float(t))?;
            match (op, approx, rnd) {
                ("sqrt" | "rcp", false, Some(rnd)) if matches!(t, FTy::F32 | FTy::F64) => {
                    if op == "sqrt" {
                        Op::FSqrt { t, rnd, ftz }
                    } else {
                        Op::FRcp { t, rnd, ftz }
                    }
                }
                (_, true, None) => {
                    let f = match op {
                        "sqrt" => Approx::Sqrt,
                        "rcp" => Approx::Rcp,
                        "rsqrt" => Approx::Rsqrt,
                        "sin" => Approx::Sin,
                        "cos" => Approx::Cos,
                        "lg2" => Approx::Lg2,
                        "ex2" => Approx::Ex2,
                        _ => Approx::Tanh,
                    };
                    let ok = match t {
                        FTy::F32 => true,
                        FTy::F64 => matches!(f, Approx::Rsqrt) || (f == Approx::Rcp && ftz),
                        _ => false,
                    };
                    if !ok {
                        return Err(cx.unsupported("this type with `.approx`"));
                    }
                    Op::FApprox { t, f, ftz }
                }
                _ => return Err(cx.unsupported("needs `.approx` or (sqrt/rcp) a rounding modifier")),
            }
        }
        "setp" => {
            let cmp = m.take_any(&[
                "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu", "gtu", "geu",
                "num", "nan",
            ]);
            let Some(cmp) = cmp else { return Err(cx.err("`setp` needs a comparison (`.lt`, ...)")) };
            let bop = m.take_any(&["and", "or", "xor"]).map(|b| match b {
                "and" => BoolOp::And,
                "or" => BoolOp::Or,
                _ => BoolOp::Xor,
            });
            let ftz = m.take("ftz");
            let ty = one_type(&cx, &mut m)?;
            let c = match ftype(ty) {
                Some(t) => Cmp::Float(
                    match cmp {
                        "eq" => FCmp::Eq,
                        "ne" => FCmp::Ne,
                        "lt" => FCmp::Lt,
                        "le" => FCmp::Le,
                        "gt" => FCmp::Gt,
                        "ge" => FCmp::Ge,
                        "equ" => FCmp::Equ,
                        "neu" => FCmp::Neu,
                        "ltu" => FCmp::Ltu,
                        "leu" => FCmp::Leu,
                        "gtu" => FCmp::Gtu,
                        "geu" => FCmp::Geu,
                        "num" => FCmp::Num,
                        "nan" => FCmp::Nan,
                        other => return Err(cx.err(format!("`.{other}` is an integer comparison"))),
                    },
                    t,
                    ftz,
                ),
                None => {
                    let mut t = itype(ty).ok_or_else(|| cx.unsupported("type"))?;
                    let c = match cmp {
                        "eq" => ICmp::Eq,
                        "ne" => ICmp::Ne,
                        "lt" => ICmp::Lt,
                        "le" => ICmp::Le,
                        "gt" => ICmp::Gt,
                        "ge" => ICmp::Ge,
                        "lo" | "ls" | "hi" | "hs" => {
                            t.signed = false;
                            match cmp {
                                "lo" => ICmp::Lt,
                                "ls" => ICmp::Le,
                                "hi" => ICmp::Gt,
                                _ => ICmp::Ge,
                            }
                        }
                        other => return Err(cx.err(format!("`.{other}` is a float comparison"))),
                    };
                    if ty.name().starts_with('b') && !matches!(c, ICmp::Eq | ICmp::Ne) {
                        return Err(cx.err("bit types only compare with `.eq`/`.ne`"));
                    }
                    Cmp::Int(c, t)
                }
            };
            let n = if bop.is_some() { 4 } else { 3 };
            let ops = cx.arity(n)?;
            match &ops[0] {
                Operand::Pair(p, q, l, c) => {
                    inst.dst[0] = cx.dst(&Operand::Name(p.clone(), *l, *c))?;
                    inst.dst[1] = cx.dst(&Operand::Name(q.clone(), *l, *c))?;
                }
                d => inst.dst[0] = cx.dst(d)?,
            }
            inst.src[0] = cx.s(&ops[1], kind_of(ty))?;
            inst.src[1] = cx.s(&ops[2], kind_of(ty))?;
            if bop.is_some() {
                let (s, n) = cx.src(&ops[3], Kind::Bits(1))?;
                inst.src[2] = s;
                inst.neg = (n as u8) << 2;
            }
            Op::Setp { cmp: c, bop }
        }
        "selp" => {
            let ty = one_type(&cx, &mut m)?;
            let ops = cx.arity(4)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            inst.src[0] = cx.s(&ops[1], kind_of(ty))?;
            inst.src[1] = cx.s(&ops[2], kind_of(ty))?;
            let (c, n) = cx.src(&ops[3], Kind::Bits(1))?;
            inst.src[2] = c;
            inst.neg = (n as u8) << 2;
            Op::Selp { bits: ty.size() * 8 }
        }
        "cvt" => {
            let frnd = m.rnd();
            let irnd = m.irnd();
            let ftz = m.take("ftz");
            let sat = m.take("sat");
            if let Some(packed) = m.take_any(&["f16x2", "bf16x2"]) {
                let relu = m.take("relu");
                let tys = m.types();
                if frnd != Some(Rnd::N) || ftz || sat || tys[..] != [ScalarType::F32] {
                    return Err(cx.unsupported("packed conversions other than `cvt.rn[.relu].{f16x2,bf16x2}.f32`"));
                }
                let ops = cx.arity(3)?;
                inst.dst[0] = cx.dst(&ops[0])?;
                inst.src[0] = cx.s(&ops[1], Kind::Bits(32))?;
                inst.src[1] = cx.s(&ops[2], Kind::Bits(32))?;
                if let Some(x) = m.list.first() {
                    return Err(cx.err(format!("unsupported modifier `.{x}` on `{}`", cx.name())));
                }
                inst.op = Op::CvtPack { bf16: packed == "bf16x2", relu };
                return Ok((inst, label));
            }
            if m.list
                .iter()
                .any(|x| x.ends_with("x2") || x.starts_with("e4m3") || x.starts_with("e5m2") || *x == "tf32")
            {
                return Err(cx.unsupported("packed and 8-bit float conversions"));
            }
            let tys = m.types();
            let [to, from] = tys[..] else {
                return Err(cx.err("`cvt` needs a destination and a source type (`cvt.f32.s32`)"));
            };
            if frnd.is_some() && irnd.is_some() {
                return Err(cx.err("`cvt` takes one rounding modifier"));
            }
            let cty = |t: ScalarType| match ftype(t) {
                Some(f) => Ok(CvtTy::Float(f)),
                None if t != ScalarType::Pred => Ok(CvtTy::Int(itype(t).expect("int"))),
                None => Err(cx.unsupported("`.pred` conversions")),
            };
            let (cto, cfrom) = (cty(to)?, cty(from)?);
            let ops = cx.arity(2)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            inst.src[0] = cx.s(&ops[1], kind_of(from))?;
            // Rounding rules (ISA "cvt"): float→float narrowing and int→float need a float
            // rounding; float→int and float→same-float need an integral one; widening needs none.
            match (cfrom, cto) {
                (CvtTy::Float(a), CvtTy::Float(b)) if a == b && frnd.is_some() => {
                    return Err(cx.err("`cvt` between the same float type takes an integral rounding (`.rni` ...)"))
                }
                (CvtTy::Float(_), CvtTy::Int(_)) if frnd.is_some() => {
                    return Err(cx.err("a float-to-integer `cvt` takes an integral rounding (`.rzi` ...)"))
                }
                (CvtTy::Int(_), CvtTy::Float(_)) if irnd.is_some() => {
                    return Err(cx.err("an integer-to-float `cvt` takes a float rounding (`.rn` ...)"))
                }
                // The rounding is mandatory where the result can be inexact (as ptxas requires).
                (CvtTy::Int(_), CvtTy::Float(_)) if frnd.is_none() => {
                    return Err(
                        cx.err("an integer-to-float `cvt` needs a rounding modifier (`.rn`, `.rz`, `.rm`, `.rp`)")
                    )
                }
                (CvtTy::Float(_), CvtTy::Int(_)) if irnd.is_none() => {
                    return Err(cx.err(
                        "a float-to-integer `cvt` needs an integral rounding modifier (`.rni`, `.rzi`, `.rmi`, `.rpi`)",
                    ))
                }
                (CvtTy::Float(a), CvtTy::Float(b))
                    if frnd.is_none() && (b.bits() < a.bits() || (a != b && a.bits() == b.bits())) =>
                {
                    return Err(cx.err("a narrowing float `cvt` needs a rounding modifier (`.rn`, `.rz`, `.rm`, `.rp`)"))
                }
                _ => {}
            }
            Op::Cvt { from: cfrom, to: cto, rnd: frnd.or(irnd), integral: irnd.is_some(), ftz, sat }
        }
        "cvta" => {
            let to = m.take("to");
            let space = space_mod(&mut m).ok_or_else(|| cx.err("`cvta` needs a state space"))?;
            if !matches!(space, Space::Global | Space::Shared | Space::Local | Space::Const) {
                return Err(cx.unsupported("only .global, .shared, .local and .const"));
            }
            let ty = one_type(&cx, &mut m)?;
            if ty.size() != 8 {
                return Err(cx.unsupported("only 64-bit addresses"));
            }
            let ops = cx.arity(2)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            inst.src[0] = cx.s(&ops[1], Kind::Bits(64))?;
            Op::Cvta { to_generic: !to, space, bits: 64 }
        }
        "ld" | "st" | "ldu" => {
            let mut space = space_mod(&mut m).unwrap_or(Space::Generic);
            let n = match m.take_any(&["v2", "v4", "v8"]) {
                Some(v) => v[1..].parse().expect("digit"),
                None => 1u32,
            };
            let ty = one_type(&cx, &mut m)?;
            if ty == ScalarType::Pred {
                return Err(cx.err("memory operations take no `.pred` type"));
            }
            let ops = cx.arity(2)?;
            let (mem, val) = if op == "st" { (&ops[0], &ops[1]) } else { (&ops[1], &ops[0]) };
            let (base, off, var_space) = cx.address(mem)?;
            // A call's `.param` slot is the thread's own memory (see `crate::parse`).
            if space == Space::Param && cx.is_call_param(mem) {
                space = Space::Local;
            }
            if let Some(vs) = var_space {
                if space == Space::Generic {
                    return Err(cx.err_at(mem.pos(), "a variable's address needs the state space on the instruction"));
                }
                if vs != space {
                    return Err(
                        cx.err_at(mem.pos(), format!("`.{}` access to a `.{}` variable", space.name(), vs.name()))
                    );
                }
            }
            if space == Space::Const && op == "st" {
                return Err(cx.err("`st.const`: constant memory is read-only (stores to `.const` are not allowed)"));
            }
            if space == Space::Param && op == "st" {
                return Err(cx.unsupported("stores to kernel parameters"));
            }
            if op == "ldu" {
                space = if space == Space::Generic { Space::Generic } else { space };
            }
            inst.base = base;
            inst.offset = off;
            let regs: Vec<&Operand> = match val {
                // `{ %r1 }`: a one-register vector (Triton's inline assembly writes scalars so).
                Operand::Vec(parts, ..) if parts.len() == n as usize => parts.iter().collect(),
                v if n == 1 => vec![v],
                _ => return Err(cx.err_at(val.pos(), format!("`.v{n}` needs a vector of {n} registers"))),
            };
            if n > 4 {
                return Err(cx.unsupported("vectors longer than 4"));
            }
            for (i, r) in regs.iter().enumerate() {
                if op == "st" {
                    inst.src[i] = cx.s(r, kind_of(ty))?;
                } else {
                    inst.dst[i] = cx.dst(r)?;
                }
            }
            let signed = matches!(ty, ScalarType::S8 | ScalarType::S16 | ScalarType::S32);
            if op == "st" {
                Op::St { space, size: ty.size(), n }
            } else {
                Op::Ld { space, size: ty.size(), signed, n }
            }
        }
        "atom" | "red" => {
            let space = space_mod(&mut m).unwrap_or(Space::Generic);
            if !matches!(space, Space::Global | Space::Shared | Space::Generic) {
                return Err(cx.unsupported("atomics on this state space"));
            }
            let aop = match m.take_any(&["add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas"]) {
                Some("add") => AtomOp::Add,
                Some("min") => AtomOp::Min,
                Some("max") => AtomOp::Max,
                Some("inc") => AtomOp::Inc,
                Some("dec") => AtomOp::Dec,
                Some("and") => AtomOp::And,
                Some("or") => AtomOp::Or,
                Some("xor") => AtomOp::Xor,
                Some("exch") => AtomOp::Exch,
                Some(_) => AtomOp::Cas,
                None => return Err(cx.err(format!("`{op}` needs an operation (`.add`, ...)"))),
            };
            let ty = one_type(&cx, &mut m)?;
            let t = match ftype(ty) {
                Some(f @ (FTy::F32 | FTy::F64)) if matches!(aop, AtomOp::Add | AtomOp::Exch | AtomOp::Cas) => {
                    AtomTy::Float(f)
                }
                Some(_) => return Err(cx.unsupported("this float type or operation")),
                None => {
                    let t = itype(ty)
                        .filter(|t| t.bits >= 32 || (t.bits == 16 && aop == AtomOp::Cas))
                        .ok_or_else(|| cx.unsupported("atomics need 32- or 64-bit types"))?;
                    AtomTy::Int(t)
                }
            };
            let ret = op == "atom";
            let nvals = if aop == AtomOp::Cas { 2 } else { 1 };
            let ops = cx.arity(nvals + 1 + ret as usize)?;
            let mut k = 0;
            if ret {
                inst.dst[0] = cx.dst(&ops[0])?;
                k = 1;
            }
            let (base, off, var_space) = cx.address(&ops[k])?;
            if let Some(vs) = var_space {
                if vs != space {
                    return Err(cx.err_at(ops[k].pos(), "atomic on a variable of another state space"));
                }
            }
            inst.base = base;
            inst.offset = off;
            for i in 0..nvals {
                inst.src[i] = cx.s(&ops[k + 1 + i], kind_of(ty))?;
            }
            Op::Atom { space, op: aop, t, ret }
        }
        "shfl" => {
            if !sync {
                return Err(cx.unsupported("`shfl` without `.sync` (removed in PTX 6.4 for sm_70+)"));
            }
            let mode = match m.take_any(&["up", "down", "bfly", "idx"]) {
                Some("up") => ShflMode::Up,
                Some("down") => ShflMode::Down,
                Some("bfly") => ShflMode::Bfly,
                Some(_) => ShflMode::Idx,
                None => return Err(cx.err("`shfl.sync` needs a mode (`.down`, ...)")),
            };
            let ty = one_type(&cx, &mut m)?;
            if ty != ScalarType::B32 {
                return Err(cx.unsupported("only `.b32`"));
            }
            let ops = cx.arity(5)?;
            match &ops[0] {
                Operand::Pair(d, p, l, c) => {
                    inst.dst[0] = cx.dst(&Operand::Name(d.clone(), *l, *c))?;
                    inst.dst[1] = cx.dst(&Operand::Name(p.clone(), *l, *c))?;
                }
                d => inst.dst[0] = cx.dst(d)?,
            }
            for i in 0..4 {
                inst.src[i] = cx.s(&ops[1 + i], Kind::Bits(32))?;
            }
            Op::Shfl { mode }
        }
        "vote" => {
            if !sync {
                return Err(cx.unsupported("`vote` without `.sync` (removed in PTX 6.4 for sm_70+)"));
            }
            let mode = match m.take_any(&["all", "any", "uni", "ballot"]) {
                Some("all") => VoteMode::All,
                Some("any") => VoteMode::Any,
                Some("uni") => VoteMode::Uni,
                Some(_) => VoteMode::Ballot,
                None => return Err(cx.err("`vote.sync` needs a mode")),
            };
            let ty = one_type(&cx, &mut m)?;
            if (mode == VoteMode::Ballot) != (ty == ScalarType::B32)
                || (mode != VoteMode::Ballot && ty != ScalarType::Pred)
            {
                return Err(cx.err("`vote.sync.ballot` takes `.b32`, the other modes `.pred`"));
            }
            let ops = cx.arity(3)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            let (s, n) = cx.src(&ops[1], Kind::Bits(1))?;
            inst.src[0] = s;
            inst.neg = n as u8;
            inst.src[1] = cx.s(&ops[2], Kind::Bits(32))?;
            Op::Vote { mode }
        }
        "activemask" => {
            let _ = one_type(&cx, &mut m)?;
            let ops = cx.arity(1)?;
            inst.dst[0] = cx.dst(&ops[0])?;
            Op::Activemask
        }
        "bar" | "barrier" => {
            if m.take("warp") {
                if !sync {
                    return Err(cx.unsupported("only `bar.warp.sync`"));
                }
                let ops = cx.arity(1)?;
                inst.src[0] = cx.s(&ops[0], Kind::Bits(32))?;
                Op::BarWarp
            } else {
                let arrive = m.take("arrive");
                m.take("aligned");
                m.take("cta");
                if !sync && !arrive {
                    return Err(
                        cx.unsupported("only `bar.sync`, `bar.arrive` and their `barrier.` forms (no `bar.red`)")
                    );
                }
                if arrive && o.len() != 2 {
                    return Err(cx.err("`bar.arrive` takes a barrier and a thread count"));
                }
                if o.is_empty() || o.len() > 2 {
                    return Err(cx.err("`bar.sync` takes a barrier and an optional thread count"));
                }
                inst.src[0] = cx.s(&o[0], Kind::Bits(32))?;
                if o.len() == 2 {
                    inst.src[1] = cx.s(&o[1], Kind::Bits(32))?;
                }
                Op::Bar { arrive, counted: o.len() == 2 }
            }
        }
        "mma" => {
            // mma.sync.aligned.m16n8k{8,16}.row.col.f32.{f16,bf16}.{f16,bf16}.f32 d, a, b, c
            // mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 d, a, b, c
            use crate::tensor_core::Format;
            m.take("aligned");
            if !sync {
                return Err(cx.err("`mma` must be `.sync.aligned`"));
            }
            let k: u8 = match m.take_any(&["m16n8k16", "m16n8k8"]) {
                Some("m16n8k16") => 16,
                Some(_) => 8,
                None => return Err(cx.unsupported("`mma` shapes other than `.m16n8k16` and `.m16n8k8`")),
            };
            if !m.take("row") || !m.take("col") {
                return Err(cx.unsupported("`mma` layouts other than `.row.col`"));
            }
            // `.tf32` is no scalar type: `.f32.tf32.tf32.f32` is matched as written.
            let tf32 = k == 8 && m.list == ["f32", "tf32", "tf32", "f32"];
            if tf32 {
                m.list.clear();
            }
            let tys = m.types();
            let fmt = match tys[..] {
                [ScalarType::F32, ScalarType::F16, ScalarType::F16, ScalarType::F32] => Format::F16,
                [ScalarType::F32, ScalarType::BF16, ScalarType::BF16, ScalarType::F32] => Format::BF16,
                [] if tf32 => Format::TF32,
                _ => {
                    return Err(cx.unsupported(
                        "`mma` types other than `.f32.f16.f16.f32`, `.f32.bf16.bf16.f32` and (`.m16n8k8`) `.f32.tf32.tf32.f32`",
                    ))
                }
            };
            let ops = cx.arity(4)?;
            let regs = |o: &Operand, n: usize, what: &str| -> Result<Vec<RegId>, ParseError> {
                match o {
                    Operand::Vec(parts, ..) if parts.len() == n => parts.iter().map(|p| cx.reg(p)).collect(),
                    r if n == 1 => Ok(vec![cx.reg(r)?]),
                    x => Err(cx.err_at(x.pos(), format!("`mma .m16n8k{k}` needs {n} registers for {what}"))),
                }
            };
            let (na, nb) =
                if fmt == Format::TF32 { (k as usize / 2, k as usize / 4) } else { (k as usize / 4, k as usize / 8) };
            let d = regs(&ops[0], 4, "D")?;
            inst.dst.copy_from_slice(&d);
            let mut wide = regs(&ops[1], na, "A")?;
            wide.extend(regs(&ops[2], nb, "B")?);
            wide.extend(regs(&ops[3], 4, "C")?);
            inst.wide = Some(wide.into_boxed_slice());
            Op::Mma { k, fmt }
        }
        "wgmma" => {
            if !sync {
                return Err(cx.err("`wgmma` must be `.sync.aligned`"));
            }
            if m.take("fence") {
                cx.arity(0)?;
                Op::WgmmaFence
            } else if m.take("commit_group") {
                cx.arity(0)?;
                Op::WgmmaGroup { wait: false }
            } else if m.take("wait_group") {
                cx.arity(1)?;
                Op::WgmmaGroup { wait: true }
            } else if m.take("mma_async") {
                let shape = m.list.iter().find(|x| x.starts_with("m64n") && x.ends_with("k16")).copied();
                let Some(shape) = shape else {
                    return Err(cx.unsupported("`wgmma.mma_async` shapes other than `.m64nNk16`"));
                };
                m.take(shape);
                let n: u16 = match shape[4..shape.len() - 3].parse() {
                    Ok(n) if n % 8 == 0 && (8..=256).contains(&n) => n,
                    _ => return Err(cx.err(format!("bad `wgmma` shape `.{shape}`"))),
                };
                let tys = m.types();
                let bf16 = match tys[..] {
                    [ScalarType::F32, ScalarType::F16, ScalarType::F16] => false,
                    [ScalarType::F32, ScalarType::BF16, ScalarType::BF16] => true,
                    _ => return Err(cx.unsupported("`wgmma` types other than `.f32.f16.f16` and `.f32.bf16.bf16`")),
                };
                let ops = cx.arity(8)?;
                let d: Vec<RegId> = match &ops[0] {
                    Operand::Vec(parts, ..) if parts.len() == n as usize / 2 => {
                        parts.iter().map(|p| cx.reg(p)).collect::<Result<_, _>>()?
                    }
                    x => return Err(cx.err_at(x.pos(), format!("`.{shape}` needs {} accumulator registers", n / 2))),
                };
                if matches!(ops[1], Operand::Vec(..)) {
                    return Err(cx.unsupported("`wgmma` with A in registers"));
                }
                inst.wide = Some(d.into_boxed_slice());
                inst.src[0] = cx.s(&ops[1], Kind::Bits(64))?;
                inst.src[1] = cx.s(&ops[2], Kind::Bits(64))?;
                let (p, neg) = cx.src(&ops[3], Kind::Bits(1))?;
                inst.src[2] = p;
                inst.neg = (neg as u8) << 2;
                let imm = |o: &Operand, what: &str| -> Result<i64, ParseError> {
                    match cx.s(o, Kind::Bits(32))? {
                        Src::Imm(v) => Ok(v as u32 as i32 as i64),
                        _ => Err(cx.err_at(o.pos(), format!("`wgmma`'s {what} is an immediate"))),
                    }
                };
                let (sa, sb, ta, tb) = (
                    imm(&ops[4], "scale-a")?,
                    imm(&ops[5], "scale-b")?,
                    imm(&ops[6], "trans-a")?,
                    imm(&ops[7], "trans-b")?,
                );
                if ![1, -1].contains(&sa) || ![1, -1].contains(&sb) || !(0..=1).contains(&ta) || !(0..=1).contains(&tb)
                {
                    return Err(cx.err("`wgmma`'s scales are 1 or -1 and its transposes 0 or 1"));
                }
                Op::Wgmma { n, bf16, neg_a: sa == -1, neg_b: sb == -1, trans_a: ta == 1, trans_b: tb == 1 }
            } else {
                return Err(cx.unsupported("`wgmma` other than `fence`, `commit_group`, `wait_group`, `mma_async`"));
            }
        }
        "cp" => {
            if !m.take("async") {
                return Err(cx.unsupported("`cp` other than `cp.async`"));
            }
            if m.take("commit_group") {
                cx.arity(0)?;
                Op::CpAsyncCommit
            } else if m.take("wait_group") {
                let ops = cx.arity(1)?;
                let n = match cx.s(&ops[0], Kind::Bits(32))? {
                    Src::Imm(n) if n < 64 => n as u32,
                    _ => return Err(cx.err("`cp.async.wait_group` takes a constant group count")),
                };
                Op::CpAsyncWait { n, all: false }
            } else if m.take("wait_all") {
                cx.arity(0)?;
                Op::CpAsyncWait { n: 0, all: true }
            } else {
                // `.ca`/`.cg` are cache hints (removed with the others above); `.cg` copies 16 bytes.
                let cache = if raw.mods.iter().any(|x| x == "cg") { "cg" } else { "ca" };
                if !m.take("shared") || !m.take("global") {
                    return Err(cx.unsupported("`cp.async` other than `.shared.global`"));
                }
                let o = &raw.operands;
                if o.len() != 3 && o.len() != 4 {
                    return Err(cx.err("`cp.async` takes [dst], [src], cp-size[, src-size]"));
                }
                let (base, off, _) = cx.address(&o[0])?;
                inst.base = base;
                inst.offset = off;
                let (sb, soff, _) = cx.address(&o[1])?;
                inst.src[0] = sb.map_or(Src::Imm(0), Src::Reg);
                inst.src[1] = Src::Imm(soff as u64);
                let size = match cx.s(&o[2], Kind::Bits(32))? {
                    Src::Imm(n) if matches!(n, 4 | 8 | 16) => n,
                    _ => return Err(cx.err("`cp.async` copies 4, 8 or 16 bytes (a constant)")),
                };
                if cache == "cg" && size != 16 {
                    return Err(cx.err("`cp.async.cg` copies 16 bytes"));
                }
                inst.src[2] = Src::Imm(size);
                inst.src[3] = if o.len() == 4 { cx.s(&o[3], Kind::Bits(32))? } else { Src::Imm(size) };
                Op::CpAsync
            }
        }
        "ldmatrix" => {
            // ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared[::cta].b16 d, [a]
            m.take("aligned");
            if !sync {
                return Err(cx.err("`ldmatrix` must be `.sync.aligned`"));
            }
            if !m.take("m8n8") {
                return Err(cx.unsupported("`ldmatrix` shapes other than `.m8n8`"));
            }
            let num: u8 = match m.take_any(&["x1", "x2", "x4"]) {
                Some("x1") => 1,
                Some("x2") => 2,
                Some(_) => 4,
                None => return Err(cx.err("`ldmatrix` needs `.x1`, `.x2` or `.x4`")),
            };
            let trans = m.take("trans");
            let space = space_mod(&mut m);
            if space != Some(Space::Shared) {
                return Err(cx.err("`ldmatrix` reads `.shared` memory"));
            }
            let ty = one_type(&cx, &mut m)?;
            if ty != ScalarType::B16 {
                return Err(cx.unsupported("`ldmatrix` types other than `.b16`"));
            }
            let ops = cx.arity(2)?;
            let regs: Vec<&Operand> = match &ops[0] {
                Operand::Vec(parts, ..) if parts.len() == num as usize => parts.iter().collect(),
                r if num == 1 => vec![r],
                d => return Err(cx.err_at(d.pos(), format!("`.x{num}` needs {num} destination registers"))),
            };
            for (i, r) in regs.iter().enumerate() {
                inst.dst[i] = cx.dst(r)?;
            }
            let (base, off, _) = cx.address(&ops[1])?;
            inst.base = base;
            inst.offset = off;
            Op::Ldmatrix { num, trans }
        }
        "membar" | "fence" => {
            m.list.retain(|x| !matches!(*x, "cta" | "gl" | "sys" | "sc" | "acq_rel"));
            cx.arity(0)?;
            Op::Nop
        }
        "nop" | "pmevent" => Op::Nop,
        "bra" | "brx" => {
            if op == "brx" {
                return Err(cx.unsupported("indirect branches"));
            }
            let ops = cx.arity(1)?;
            match &ops[0] {
                Operand::Name(l, ..) => label = Some(l.clone()),
                other => return Err(cx.err_at(other.pos(), "expected a label")),
            }
            Op::Bra { target: 0, uni: false }
        }
        "ret" | "exit" => {
            cx.arity(0)?;
            Op::Exit
        }
        "trap" | "brkpt" => Op::Trap,
        "call" => return Err(cx.unsupported("`call` (device functions)")),
        other => return Err(cx.err(format!("unsupported instruction `{other}`"))),
    };
    if let Some(x) = m.list.first() {
        return Err(cx.err(format!("unsupported modifier `.{x}` on `{}`", cx.name())));
    }
    inst.op = decoded;
    Ok((inst, label))
}

fn space_mod(m: &mut Mods) -> Option<Space> {
    m.take_any(&["global", "shared", "local", "param", "const"]).map(|s| match s {
        "global" => Space::Global,
        "shared" => Space::Shared,
        "local" => Space::Local,
        "param" => Space::Param,
        _ => Space::Const,
    })
}

fn one_type(cx: &Cx, m: &mut Mods) -> Result<ScalarType, ParseError> {
    let t = m.types();
    match t[..] {
        [t] => Ok(t),
        [] => Err(cx.err(format!("`{}` needs a type", cx.name()))),
        _ => Err(cx.err(format!("`{}` takes one type", cx.name()))),
    }
}

fn int_type(cx: &Cx, m: &mut Mods) -> Result<ITy, ParseError> {
    let t = one_type(cx, m)?;
    itype(t).ok_or_else(|| cx.unsupported("needs an integer, bit or predicate type"))
}

fn float_type(cx: &Cx, m: &mut Mods) -> Result<FTy, ParseError> {
    let t = one_type(cx, m)?;
    ftype(t).ok_or_else(|| cx.unsupported("needs a float type"))
}

/// add sub mul mad fma div, integer and float.
fn arith(cx: &Cx, m: &mut Mods, inst: &mut Inst, op: &str) -> Result<Op, ParseError> {
    let rnd = m.rnd();
    let ftz = m.take("ftz");
    let sat = m.take("sat");
    let approx = m.take("approx");
    let full = m.take("full");
    let (lo, hi, wide) = (m.take("lo"), m.take("hi"), m.take("wide"));
    if m.take("cc") || m.take("c") {
        return Err(cx.unsupported("carry forms (`.cc`, `addc`)"));
    }
    let ty = one_type(cx, m)?;
    let n = if matches!(op, "mad" | "fma") { 4 } else { 3 };
    let ops = cx.arity(n)?;
    inst.dst[0] = cx.dst(&ops[0])?;
    if let Some(t) = ftype(ty) {
        if lo || hi || wide {
            return Err(cx.err("`.lo`/`.hi`/`.wide` apply to integers"));
        }
        for i in 1..n {
            inst.src[i - 1] = cx.s(&ops[i], Kind::Float(t))?;
        }
        if ftz && t != FTy::F32 && !matches!(t, FTy::F16) {
            return Err(cx.unsupported("`.ftz` applies to f32 (and f16)"));
        }
        return Ok(match op {
            "div" => match (approx, full, rnd) {
                (true, false, None) if t == FTy::F32 => Op::DivApprox { ftz },
                (false, true, None) if t == FTy::F32 => Op::DivFull { ftz },
                (false, false, Some(rnd)) if matches!(t, FTy::F32 | FTy::F64) => {
                    Op::FBin { op: Arith::Div, t, rnd, ftz, sat, contractible: false }
                }
                _ => return Err(cx.unsupported("float `div` needs `.approx`, `.full` (f32) or a rounding modifier")),
            },
            "mad" | "fma" => {
                let Some(rnd) = rnd else {
                    return Err(cx.unsupported("`fma`/`mad` on floats needs a rounding modifier"));
                };
                Op::Fma { t, rnd, ftz, sat, neg_product: false, neg_addend: false }
            }
            _ => {
                if approx || full {
                    return Err(cx.unsupported("modifier"));
                }
                let a = match op {
                    "add" => Arith::Add,
                    "sub" => Arith::Sub,
                    _ => Arith::Mul,
                };
                // Without a rounding modifier ptxas may contract add/mul into fma; the emulator
                // computes the uncontracted, round-to-nearest result, which is what the PTX says.
                Op::FBin { op: a, t, rnd: rnd.unwrap_or(Rnd::N), ftz, sat, contractible: rnd.is_none() }
            }
        });
    }
    let t = itype(ty).ok_or_else(|| cx.unsupported("type"))?;
    if rnd.is_some() || ftz || approx || full {
        return Err(cx.err("rounding and `.ftz` apply to floats"));
    }
    if t.bits == 1 || t.bits == 8 {
        return Err(cx.unsupported("8-bit and predicate arithmetic"));
    }
    let wide_src = wide && matches!(op, "mul" | "mad");
    let src_bits = t.bits;
    for i in 1..n {
        let bits = if op == "mad" && wide && i == 3 { t.bits * 2 } else { src_bits };
        inst.src[i - 1] = cx.s(&ops[i], Kind::Bits(bits))?;
    }
    if wide_src && t.bits == 64 {
        return Err(cx.err("`.wide` takes 16- or 32-bit operands"));
    }
    if sat && !(t.signed && t.bits == 32 && (matches!(op, "add" | "sub") || (op == "mad" && hi))) {
        return Err(cx.unsupported("`.sat` on this integer form"));
    }
    Ok(match op {
        "add" => Op::IBin { op: if sat { IBin::AddSat } else { IBin::Add }, t },
        "sub" => Op::IBin { op: if sat { IBin::SubSat } else { IBin::Sub }, t },
        "mul" => Op::IBin {
            op: match (lo, hi, wide) {
                (true, false, false) => IBin::MulLo,
                (false, true, false) => IBin::MulHi,
                (false, false, true) => IBin::MulWide,
                _ => return Err(cx.err("integer `mul` needs exactly one of `.lo`, `.hi`, `.wide`")),
            },
            t,
        },
        "mad" => Op::Mad {
            mode: match (lo, hi, wide) {
                (true, false, false) => MadMode::Lo,
                (false, true, false) => MadMode::Hi,
                (false, false, true) => MadMode::Wide,
                _ => return Err(cx.err("integer `mad` needs exactly one of `.lo`, `.hi`, `.wide`")),
            },
            t,
            sat,
        },
        "div" => Op::IBin { op: IBin::Div, t },
        _ => return Err(cx.unsupported("integer form")),
    })
}
