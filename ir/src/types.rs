//! Value types of the kir IR and typed constants.
//!
//! Guarantees:
//! - Every scalar type has a fixed bit width; a value of that type is carried as raw bits in a `u64`,
//!   zero-extended from its width (`pred` is 0 or 1). [`Constant`] and the evaluator in
//!   [`crate::eval`] use exactly this convention, so constant folding and the interpreter agree.
//! - Pointer types carry their address space and element type; pointers are 64-bit byte addresses.
//! - `Display` prints the spelling the parser accepts (`u32`, `ptr<global, f32>`).

use std::fmt;

/// A scalar (non-pointer) type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    Pred,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    BF16,
    F32,
    F64,
}

impl ScalarType {
    /// Every scalar type, in a fixed order (useful for generators and exhaustive tests).
    pub const ALL: [ScalarType; 13] = [
        ScalarType::Pred,
        ScalarType::U8,
        ScalarType::U16,
        ScalarType::U32,
        ScalarType::U64,
        ScalarType::S8,
        ScalarType::S16,
        ScalarType::S32,
        ScalarType::S64,
        ScalarType::F16,
        ScalarType::BF16,
        ScalarType::F32,
        ScalarType::F64,
    ];

    /// Width in bits (`pred` counts as 1).
    pub fn bits(self) -> u32 {
        use ScalarType::*;
        match self {
            Pred => 1,
            U8 | S8 => 8,
            U16 | S16 | F16 | BF16 => 16,
            U32 | S32 | F32 => 32,
            U64 | S64 | F64 => 64,
        }
    }

    /// Size in memory in bytes (`pred` is stored as one byte).
    pub fn bytes(self) -> u32 {
        match self {
            ScalarType::Pred => 1,
            t => t.bits() / 8,
        }
    }

    /// Mask of the bits a value of this type may have set.
    pub fn mask(self) -> u64 {
        match self.bits() {
            64 => u64::MAX,
            b => (1u64 << b) - 1,
        }
    }

    pub fn is_int(self) -> bool {
        use ScalarType::*;
        matches!(self, U8 | U16 | U32 | U64 | S8 | S16 | S32 | S64)
    }

    pub fn is_signed_int(self) -> bool {
        use ScalarType::*;
        matches!(self, S8 | S16 | S32 | S64)
    }

    pub fn is_unsigned_int(self) -> bool {
        use ScalarType::*;
        matches!(self, U8 | U16 | U32 | U64)
    }

    pub fn is_float(self) -> bool {
        use ScalarType::*;
        matches!(self, F16 | BF16 | F32 | F64)
    }

    pub fn is_pred(self) -> bool {
        self == ScalarType::Pred
    }

    /// The integer type of the same width and the given signedness (None for floats and pred).
    pub fn int_of_width(bits: u32, signed: bool) -> Option<ScalarType> {
        use ScalarType::*;
        Some(match (bits, signed) {
            (8, false) => U8,
            (16, false) => U16,
            (32, false) => U32,
            (64, false) => U64,
            (8, true) => S8,
            (16, true) => S16,
            (32, true) => S32,
            (64, true) => S64,
            _ => return None,
        })
    }

    /// For `mul.wide`: the integer type of twice the width and the same signedness.
    pub fn widened(self) -> Option<ScalarType> {
        if !self.is_int() || self.bits() == 64 {
            return None;
        }
        ScalarType::int_of_width(self.bits() * 2, self.is_signed_int())
    }

    pub fn name(self) -> &'static str {
        use ScalarType::*;
        match self {
            Pred => "pred",
            U8 => "u8",
            U16 => "u16",
            U32 => "u32",
            U64 => "u64",
            S8 => "s8",
            S16 => "s16",
            S32 => "s32",
            S64 => "s64",
            F16 => "f16",
            BF16 => "bf16",
            F32 => "f32",
            F64 => "f64",
        }
    }

    pub fn from_name(s: &str) -> Option<ScalarType> {
        ScalarType::ALL.iter().copied().find(|t| t.name() == s)
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a pointer points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AddrSpace {
    /// Device memory, shared by every thread of a launch.
    Global,
    /// Per-block on-chip memory, shared by the threads of one block.
    Shared,
}

impl AddrSpace {
    pub fn name(self) -> &'static str {
        match self {
            AddrSpace::Global => "global",
            AddrSpace::Shared => "shared",
        }
    }
    pub fn from_name(s: &str) -> Option<AddrSpace> {
        match s {
            "global" => Some(AddrSpace::Global),
            "shared" => Some(AddrSpace::Shared),
            _ => None,
        }
    }
}

impl fmt::Display for AddrSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The number of elements of a vector type: 2 or 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VecWidth {
    V2,
    V4,
}

impl VecWidth {
    pub const ALL: [VecWidth; 2] = [VecWidth::V2, VecWidth::V4];
    /// The number of elements.
    pub fn len(self) -> usize {
        match self {
            VecWidth::V2 => 2,
            VecWidth::V4 => 4,
        }
    }
    /// The width with `n` elements.
    pub fn of(n: u64) -> Option<VecWidth> {
        match n {
            2 => Some(VecWidth::V2),
            4 => Some(VecWidth::V4),
            _ => None,
        }
    }
    /// `v2` or `v4`, as mnemonics spell it.
    pub fn name(self) -> &'static str {
        match self {
            VecWidth::V2 => "v2",
            VecWidth::V4 => "v4",
        }
    }
}

/// The largest vector in bits (a 16-byte access; PTX's `.v4.b32` / `.v2.b64`).
pub const MAX_VEC_BITS: u32 = 128;

/// The type of an SSA value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Type {
    Scalar(ScalarType),
    /// A 64-bit byte address into `space`, whose elements have type `elem` (never `pred`).
    Ptr(AddrSpace, ScalarType),
    /// `vec<N, T>`: N (2 or 4) elements of scalar type `T` (never `pred`), at most 128 bits in all
    /// ([`Type::vec`] is the checked constructor). Element 0 is the lowest in memory.
    Vec(VecWidth, ScalarType),
}

impl Type {
    pub const PRED: Type = Type::Scalar(ScalarType::Pred);
    pub const U32: Type = Type::Scalar(ScalarType::U32);
    pub const U64: Type = Type::Scalar(ScalarType::U64);
    pub const S32: Type = Type::Scalar(ScalarType::S32);
    pub const F32: Type = Type::Scalar(ScalarType::F32);

    pub fn scalar(self) -> Option<ScalarType> {
        match self {
            Type::Scalar(s) => Some(s),
            Type::Ptr(..) | Type::Vec(..) => None,
        }
    }

    /// `vec<n, elem>` when it is a valid vector type: 2 or 4 elements of a non-`pred` scalar, at
    /// most [`MAX_VEC_BITS`] in all; the error says which rule it breaks.
    pub fn vec(n: u64, elem: ScalarType) -> Result<Type, String> {
        let w = VecWidth::of(n).ok_or_else(|| format!("a vector has 2 or 4 elements, not {n}"))?;
        if elem.is_pred() {
            return Err("vectors of `pred` are not allowed".into());
        }
        let bits = elem.bits() * n as u32;
        if bits > MAX_VEC_BITS {
            return Err(format!(
                "`vec<{n}, {elem}>` is {bits} bits; vectors are at most {MAX_VEC_BITS} bits (16 bytes)"
            ));
        }
        Ok(Type::Vec(w, elem))
    }

    /// The width and element type of a vector type.
    pub fn vector(self) -> Option<(VecWidth, ScalarType)> {
        match self {
            Type::Vec(w, e) => Some((w, e)),
            _ => None,
        }
    }

    pub fn is_vec(self) -> bool {
        matches!(self, Type::Vec(..))
    }

    pub fn is_ptr(self) -> bool {
        matches!(self, Type::Ptr(..))
    }

    /// The pointee type and address space of a pointer type.
    pub fn pointee(self) -> Option<(AddrSpace, ScalarType)> {
        match self {
            Type::Ptr(space, elem) => Some((space, elem)),
            Type::Scalar(_) | Type::Vec(..) => None,
        }
    }

    /// Width in bits of a value of this type (pointers are 64-bit; a vector is all its elements).
    pub fn bits(self) -> u32 {
        match self {
            Type::Scalar(s) => s.bits(),
            Type::Ptr(..) => 64,
            Type::Vec(w, e) => e.bits() * w.len() as u32,
        }
    }
}

impl From<ScalarType> for Type {
    fn from(s: ScalarType) -> Type {
        Type::Scalar(s)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Scalar(s) => write!(f, "{s}"),
            Type::Ptr(space, elem) => write!(f, "ptr<{space}, {elem}>"),
            Type::Vec(w, elem) => write!(f, "vec<{}, {elem}>", w.len()),
        }
    }
}

/// A typed scalar constant, stored as raw bits zero-extended from the type's width.
///
/// Equality is bitwise: `-0.0 != 0.0`, and two NaNs are equal only with identical payloads. That is
/// what the IR needs (constant folding must not change a NaN payload or the sign of a zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Constant {
    pub ty: ScalarType,
    pub bits: u64,
}

impl Constant {
    /// The canonical quiet NaN of a float type, as the GPU produces it (all mantissa bits set for
    /// f32/f64 per PTX: `0x7fffffff`; `0x7fff` for f16/bf16).
    pub fn canonical_nan(ty: ScalarType) -> Constant {
        match ty {
            ScalarType::F32 => Constant::from_bits(ty, 0x7fff_ffff),
            ScalarType::F64 => Constant::from_bits(ty, 0x7fff_ffff_ffff_ffff),
            _ => Constant::from_bits(ty, 0x7fff),
        }
    }

    /// A constant from raw bits; bits above the type's width are cleared.
    pub fn from_bits(ty: ScalarType, bits: u64) -> Constant {
        Constant { ty, bits: bits & ty.mask() }
    }
    pub fn pred(b: bool) -> Constant {
        Constant { ty: ScalarType::Pred, bits: b as u64 }
    }
    pub fn u32(v: u32) -> Constant {
        Constant { ty: ScalarType::U32, bits: v as u64 }
    }
    pub fn u64(v: u64) -> Constant {
        Constant { ty: ScalarType::U64, bits: v }
    }
    pub fn s32(v: i32) -> Constant {
        Constant::from_bits(ScalarType::S32, v as u32 as u64)
    }
    pub fn f32(v: f32) -> Constant {
        Constant { ty: ScalarType::F32, bits: v.to_bits() as u64 }
    }
    pub fn f64(v: f64) -> Constant {
        Constant { ty: ScalarType::F64, bits: v.to_bits() }
    }
    /// An integer constant from a mathematical value, wrapped to the type's width.
    pub fn int_wrapping(ty: ScalarType, v: i128) -> Constant {
        Constant::from_bits(ty, v as u64)
    }
    /// The value as a signed integer (sign-extended for signed types, zero-extended otherwise).
    pub fn as_i128(self) -> i128 {
        if self.ty.is_signed_int() {
            let shift = 64 - self.ty.bits();
            (((self.bits << shift) as i64) >> shift) as i128
        } else {
            self.bits as i128
        }
    }
    /// The value of a float constant as f64 (exact for every float type).
    pub fn as_f64(self) -> Option<f64> {
        Some(match self.ty {
            ScalarType::F16 => half::f16::from_bits(self.bits as u16).to_f64(),
            ScalarType::BF16 => half::bf16::from_bits(self.bits as u16).to_f64(),
            ScalarType::F32 => f32::from_bits(self.bits as u32) as f64,
            ScalarType::F64 => f64::from_bits(self.bits),
            _ => return None,
        })
    }
    pub fn is_zero_bits(self) -> bool {
        self.bits == 0
    }
}
