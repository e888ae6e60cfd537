//! Literals and written types, resolved against what a position expects; shared by the lowering
//! of kernels ([`crate::text::parse`]) and of launch graphs.
//!
//! Guarantees: a literal becomes a [`Constant`] of the expected type only when it denotes exactly
//! one value of that type (integers in range, or hex spelling a bit pattern; integer spellings of
//! floats only when exact; hex floats with exactly the type's digits); otherwise the error says
//! why. Unknown type names and address spaces are located errors; pointers to `pred` are refused.

use crate::diag::Diagnostic;
use crate::text::ast::*;
use crate::types::{AddrSpace, Constant, ScalarType, Type};

/// Parses a literal as a constant of type `ty`.
pub fn literal_constant(lit: &AstOperand, ty: ScalarType) -> Result<Constant, String> {
    match lit {
        AstOperand::Bool(b) => {
            if ty == ScalarType::Pred {
                Ok(Constant::pred(*b))
            } else {
                Err(format!("`{b}` is a pred literal, but a `{ty}` is expected here"))
            }
        }
        AstOperand::Int(text) => int_literal(text, ty),
        AstOperand::Float(text) => {
            if !ty.is_float() {
                return Err(format!("float literal `{text}` where a `{ty}` is expected"));
            }
            float_from_text(text, ty)
        }
        AstOperand::HexFloat(text) => {
            let (kind, digits) = text.split_at(2);
            let want = match ty {
                ScalarType::F32 => ("0f", 8),
                ScalarType::F64 => ("0d", 16),
                ScalarType::F16 | ScalarType::BF16 => ("0h", 4),
                _ => return Err(format!("hex float literal `{text}` where a `{ty}` is expected")),
            };
            if kind != want.0 || digits.len() != want.1 {
                return Err(format!(
                    "a `{ty}` hex literal is `{}` followed by {} hex digits, not `{text}`",
                    want.0, want.1
                ));
            }
            let bits = u64::from_str_radix(digits, 16).map_err(|_| format!("bad hex float literal `{text}`"))?;
            Ok(Constant::from_bits(ty, bits))
        }
        AstOperand::Inf { negative } => {
            if !ty.is_float() {
                return Err(format!("`inf` where a `{ty}` is expected"));
            }
            float_from_f64(if *negative { f64::NEG_INFINITY } else { f64::INFINITY }, ty)
        }
        AstOperand::Nan => {
            if !ty.is_float() {
                return Err(format!("`nan` where a `{ty}` is expected"));
            }
            Ok(Constant::canonical_nan(ty))
        }
        AstOperand::Value(_) | AstOperand::Indexed(..) | AstOperand::Global(_) | AstOperand::Call(..) => {
            Err("not a literal".into())
        }
    }
}

fn int_literal(text: &str, ty: ScalarType) -> Result<Constant, String> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let hex = body.starts_with("0x");
    let magnitude = if hex { u128::from_str_radix(&body[2..], 16) } else { body.parse::<u128>() }
        .map_err(|_| format!("integer literal `{text}` is too large"))?;
    if ty.is_float() {
        // Integer spelling of a float: must be exactly representable.
        let v = if neg { -(magnitude as f64) } else { magnitude as f64 };
        let c = float_from_f64(v, ty)?;
        let back = c.as_f64().unwrap_or(f64::NAN);
        if magnitude > (1u128 << 53) || back != v {
            return Err(format!("`{text}` is not exactly representable as `{ty}`; write a float literal"));
        }
        return Ok(c);
    }
    if ty.is_pred() {
        return Err(format!("integer literal `{text}` where a `pred` is expected (use `true` or `false`)"));
    }
    let bits = ty.bits();
    let umax: u128 = if bits == 64 { u64::MAX as u128 } else { (1u128 << bits) - 1 };
    let value: i128 = if neg { -(magnitude as i128) } else { magnitude as i128 };
    let ok = if ty.is_signed_int() {
        let min = -(1i128 << (bits - 1));
        let max = (1i128 << (bits - 1)) - 1;
        // Hex literals may spell the bit pattern of a negative number (`0xffffffff` as s32 is -1).
        (value >= min && value <= max) || (hex && !neg && magnitude <= umax)
    } else {
        !neg && magnitude <= umax
    };
    if !ok {
        return Err(format!("integer literal `{text}` is out of range for `{ty}`"));
    }
    Ok(Constant::int_wrapping(ty, value))
}

fn float_from_text(text: &str, ty: ScalarType) -> Result<Constant, String> {
    let bad = || format!("bad float literal `{text}`");
    Ok(match ty {
        ScalarType::F64 => Constant::f64(text.parse::<f64>().map_err(|_| bad())?),
        ScalarType::F32 => Constant::f32(text.parse::<f32>().map_err(|_| bad())?),
        // f16/bf16: the printer writes the exact f32 value, which converts exactly; other decimal
        // text is rounded to f32 first, then to the narrow type (round to nearest even each time).
        ScalarType::F16 => {
            Constant::from_bits(ty, half::f16::from_f32(text.parse::<f32>().map_err(|_| bad())?).to_bits() as u64)
        }
        ScalarType::BF16 => {
            Constant::from_bits(ty, half::bf16::from_f32(text.parse::<f32>().map_err(|_| bad())?).to_bits() as u64)
        }
        _ => return Err(bad()),
    })
}

fn float_from_f64(v: f64, ty: ScalarType) -> Result<Constant, String> {
    Ok(match ty {
        ScalarType::F64 => Constant::f64(v),
        ScalarType::F32 => Constant::f32(v as f32),
        ScalarType::F16 => Constant::from_bits(ty, half::f16::from_f64(v).to_bits() as u64),
        ScalarType::BF16 => Constant::from_bits(ty, half::bf16::from_f64(v).to_bits() as u64),
        _ => return Err(format!("a float where a `{ty}` is expected")),
    })
}

/// How a type position describes what it accepts, for its error messages.
pub(crate) struct TypeContext {
    /// The label under an unknown address space.
    pub spaces: &'static str,
    /// Whether an unknown type gets a note listing every type.
    pub list_types: bool,
}

/// Kernel parameters and block parameters: every type.
const KERNEL_TYPES: TypeContext = TypeContext { spaces: "expected `global` or `shared`", list_types: true };

pub(crate) fn lower_type(t: &AstType, errs: &mut Vec<Diagnostic>) -> Option<Type> {
    lower_type_in(t, errs, &KERNEL_TYPES)
}

/// Resolves a written type, reporting unknown names (shared by kernels and graphs).
pub(crate) fn lower_type_in(t: &AstType, errs: &mut Vec<Diagnostic>, cx: &TypeContext) -> Option<Type> {
    let scalar = |n: &Spanned<AstStr>, errs: &mut Vec<Diagnostic>| match ScalarType::from_name(&n.node) {
        Some(s) => Some(s),
        None => {
            let mut d = Diagnostic::error(format!("unknown type `{}`", n.node)).at(n.span, "not a type");
            if cx.list_types {
                d = d.with_note(
                    "types are pred, u8, u16, u32, u64, s8, s16, s32, s64, f16, bf16, f32, f64, ptr<global|shared, T>, vec<2|4, T>",
                );
            }
            errs.push(d);
            None
        }
    };
    match t {
        AstType::Named(n) => scalar(n, errs).map(Type::Scalar),
        AstType::Ptr { space, elem } => {
            let sp = AddrSpace::from_name(&space.node);
            if sp.is_none() {
                errs.push(
                    Diagnostic::error(format!("unknown address space `{}`", space.node)).at(space.span, cx.spaces),
                );
            }
            let el = scalar(elem, errs);
            if el == Some(ScalarType::Pred) {
                errs.push(
                    Diagnostic::error("pointers to `pred` are not allowed").at(elem.span, "use u8 or u32 storage"),
                );
                return None;
            }
            Some(Type::Ptr(sp?, el?))
        }
        AstType::Vec { len, elem, span } => {
            let el = scalar(elem, errs)?;
            let n: u64 = len.node.parse().unwrap_or(0);
            match Type::vec(n, el) {
                Ok(t) => Some(t),
                Err(msg) => {
                    errs.push(Diagnostic::error(msg).at(*span, "not a vector type"));
                    None
                }
            }
        }
    }
}
