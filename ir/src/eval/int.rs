//! Integer arithmetic on raw bits for every width (8, 16, 32, 64), signed and unsigned.
//!
//! Guarantees: every function takes operands zero-extended from `bits` and returns a result
//! zero-extended from its width (wrap-around), so a result never has bits above its type's width.
//! Division by zero gives all ones (quotient and remainder, signed and unsigned: what NVIDIA GPUs
//! compute); `MIN / -1` is `MIN` and `MIN % -1` is 0. Shift amounts of at least the width give 0
//! (`shl`, unsigned `shr`) or the sign fill (signed `shr`).

/// The width's value mask.
#[inline(always)]
pub const fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Sign-extends the low `bits` bits of `x`.
#[inline(always)]
pub const fn sext(x: u64, bits: u32) -> i64 {
    let s = 64 - bits;
    ((x << s) as i64) >> s
}

/// The value of `x` as a mathematical integer: sign-extended when `signed`, else zero-extended.
#[inline(always)]
pub const fn value(x: u64, bits: u32, signed: bool) -> i128 {
    if signed {
        sext(x, bits) as i128
    } else {
        (x & mask(bits)) as i128
    }
}

#[inline(always)]
pub fn div(a: u64, b: u64, bits: u32, signed: bool) -> u64 {
    let m = mask(bits);
    if b & m == 0 {
        return m;
    }
    if signed {
        (sext(a, bits).wrapping_div(sext(b, bits)) as u64) & m
    } else {
        (a & m) / (b & m)
    }
}

#[inline(always)]
pub fn rem(a: u64, b: u64, bits: u32, signed: bool) -> u64 {
    let m = mask(bits);
    if b & m == 0 {
        return m;
    }
    if signed {
        (sext(a, bits).wrapping_rem(sext(b, bits)) as u64) & m
    } else {
        (a & m) % (b & m)
    }
}

#[inline(always)]
pub fn min(a: u64, b: u64, bits: u32, signed: bool) -> u64 {
    if value(a, bits, signed) <= value(b, bits, signed) {
        a
    } else {
        b
    }
}

#[inline(always)]
pub fn max(a: u64, b: u64, bits: u32, signed: bool) -> u64 {
    if value(a, bits, signed) >= value(b, bits, signed) {
        a
    } else {
        b
    }
}

/// High half of the double-width product.
#[inline(always)]
pub fn mul_hi(a: u64, b: u64, bits: u32, signed: bool) -> u64 {
    let p = value(a, bits, signed).wrapping_mul(value(b, bits, signed));
    ((p >> bits) as u64) & mask(bits)
}

/// The full product as a double-width value (`bits` <= 32).
#[inline(always)]
pub fn mul_wide(a: u64, b: u64, bits: u32, signed: bool) -> u64 {
    let p = value(a, bits, signed) * value(b, bits, signed);
    (p as u64) & mask(2 * bits)
}

/// `shl`: the amount is a u32; amounts >= width give 0.
#[inline(always)]
pub fn shl(a: u64, amount: u64, bits: u32) -> u64 {
    let n = amount & 0xffff_ffff;
    if n >= bits as u64 {
        0
    } else {
        (a << n) & mask(bits)
    }
}

/// `shr`: arithmetic for signed types, logical otherwise; amounts >= width saturate.
#[inline(always)]
pub fn shr(a: u64, amount: u64, bits: u32, signed: bool) -> u64 {
    let n = (amount & 0xffff_ffff).min(bits as u64 - 1 + (!signed) as u64);
    if signed {
        ((sext(a, bits) >> n) as u64) & mask(bits)
    } else if n >= bits as u64 {
        0
    } else {
        (a & mask(bits)) >> n
    }
}

/// Integer comparison per signedness; `op` as in `CmpOp` (only eq ne lt le gt ge are integer).
#[inline(always)]
pub fn cmp(a: u64, b: u64, bits: u32, signed: bool) -> std::cmp::Ordering {
    value(a, bits, signed).cmp(&value(b, bits, signed))
}

/// Clamps (`sat`) or wraps a mathematical integer into an integer type.
#[inline(always)]
pub fn from_i128(v: i128, bits: u32, signed: bool, sat: bool) -> u64 {
    if sat {
        let (lo, hi) = range(bits, signed);
        (v.clamp(lo, hi) as u64) & mask(bits)
    } else {
        (v as u64) & mask(bits)
    }
}

/// The value range of an integer type.
#[inline(always)]
pub const fn range(bits: u32, signed: bool) -> (i128, i128) {
    if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}
