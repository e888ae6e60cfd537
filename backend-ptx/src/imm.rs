//! How constants and parameters are spelled in PTX: immediates (`0f3F800000`, `-3`,
//! `0xFFFFFFFF`), the text a `mov` takes for any constant, the `.param` type of a scalar, and the
//! type a memory access of an element type names ([`mem_ty`]).
//!
//! Guarantees: [`Imm`] prints a constant exactly as the register that holds it would read (f32
//! and f64 as hex bit patterns, so NaN payloads and signed zeros survive; 8-bit values extended as
//! their 32-bit registers hold them); [`imm_text`] is `None` exactly for the types PTX
//! instructions take no immediate of (pred, f16, bf16), which [`raw_imm`] spells for a `mov`.
//! Shared by instruction lowering ([`crate::lower`]) and the body emitter ([`crate::emit`]).

use crate::regs::Reg;
use kir_ir::{Constant, ScalarType};
use ScalarType as S;

/// The `.param` type of a scalar kernel parameter.
pub fn param_type(s: ScalarType) -> &'static str {
    match s {
        S::Pred | S::U8 => ".u8",
        S::S8 => ".s8",
        S::U16 | S::S16 | S::F16 | S::BF16 => ".b16",
        S::U32 | S::S32 => ".u32",
        S::F32 => ".f32",
        S::U64 | S::S64 => ".u64",
        S::F64 => ".f64",
    }
}

/// The type suffix of a load or store of `elem` (scalar, `.v2`/`.v4`, and `.param`): `u8`/`s8`
/// (into and from the 32-bit registers 8-bit values live in), `b16` for every 16-bit type
/// (PTX has no `f16`/`bf16` loads), `u32`, `f32`, `u64`, `f64`.
pub fn mem_ty(elem: ScalarType) -> &'static str {
    match elem {
        S::U8 | S::Pred => "u8",
        S::S8 => "s8",
        S::U16 | S::S16 | S::F16 | S::BF16 => "b16",
        S::U32 | S::S32 => "u32",
        S::F32 => "f32",
        S::U64 | S::S64 => "u64",
        S::F64 => "f64",
    }
}

/// The bits of a constant as its register holds them (8-bit values extended to 32 bits).
fn reg_bits(c: Constant) -> u64 {
    match c.ty {
        S::S8 => c.as_i128() as i32 as u32 as u64,
        _ => c.bits,
    }
}

/// The PTX type suffix of a float type (`f16`, `bf16`, `f32`, `f64`).
pub fn fty(s: ScalarType) -> &'static str {
    match s {
        S::F16 => "f16",
        S::BF16 => "bf16",
        S::F32 => "f32",
        _ => "f64",
    }
}

/// Immediate text where PTX instructions take one: integers, f32 and f64. `None` for pred, f16
/// and bf16, which must be materialized with [`raw_imm`] and a `mov`.
pub fn imm_text(c: Constant) -> Option<String> {
    takes_imm(c).then(|| Imm(c).to_string())
}

/// Whether `c` is a NaN of a float type. The emitter never gives ptxas such a constant as an
/// immediate or a `mov` source: ptxas folds NaN constants without regard to their sign and payload
/// (on an H100, `sub.rn.f64 %d, %x, 0d7FF8000000000001` computed `0xFFF8000000000001`, while the
/// same NaN in a register comes back unchanged), so it loads them from `.const` memory instead.
pub fn is_float_nan(c: Constant) -> bool {
    c.ty.is_float() && c.as_f64().is_some_and(f64::is_nan)
}

/// Whether PTX instructions take `c` as an immediate (integers, f32, f64).
pub fn takes_imm(c: Constant) -> bool {
    !matches!(c.ty, S::Pred | S::F16 | S::BF16)
}

/// A constant printed as an instruction immediate (see [`imm_text`]), without allocating.
#[derive(Clone, Copy, Debug)]
pub struct Imm(pub Constant);

impl std::fmt::Display for Imm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.0;
        match c.ty {
            S::F32 => write!(f, "0f{:08X}", c.bits),
            S::F64 => write!(f, "0d{:016X}", c.bits),
            t if t.is_signed_int() => {
                let v = c.as_i128();
                if v.unsigned_abs() < (1 << 31) {
                    write!(f, "{v}")
                } else {
                    write!(f, "0x{:X}", reg_bits(c))
                }
            }
            _ => {
                if c.bits < (1 << 31) {
                    write!(f, "{}", c.bits)
                } else {
                    write!(f, "0x{:X}", c.bits)
                }
            }
        }
    }
}

/// An instruction source as printed: a register or an immediate.
#[derive(Clone, Copy, Debug)]
pub enum SrcText {
    Reg(Reg),
    Imm(Imm),
}

impl std::fmt::Display for SrcText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SrcText::Reg(r) => r.fmt(f),
            SrcText::Imm(i) => i.fmt(f),
        }
    }
}

/// The text a `mov` takes for any constant.
pub fn raw_imm(c: Constant) -> String {
    match c.ty {
        S::Pred => (c.bits & 1).to_string(),
        S::F16 | S::BF16 => format!("0x{:04X}", c.bits),
        _ => imm_text(c).unwrap_or_default(),
    }
}
