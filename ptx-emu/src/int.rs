//! Integer and bit instruction semantics (PTX ISA "Integer Arithmetic", "Logic and Shift", "Bit
//! Field" instructions), on raw register bits. Results are the instruction type's width,
//! zero-extended to 64 bits (`.wide` results: twice the width).
//!
//! Division by zero is undefined in PTX; the emulator returns all ones for `div` and `rem`, which
//! is what NVIDIA GPUs compute. Signed `MIN / -1` wraps to `MIN` and `MIN % -1` is 0.

use crate::prog::{IBin, ICmp, ITy, IUn, MadMode};

#[inline]
fn trunc(t: ITy, v: i128) -> u64 {
    (v as u64) & t.mask()
}

#[inline]
pub fn ibin(op: IBin, t: ITy, a: u64, b: u64) -> u64 {
    let (x, y) = (t.ext(a), t.ext(b));
    match op {
        IBin::Add => trunc(t, x + y),
        IBin::Sub => trunc(t, x - y),
        IBin::AddSat | IBin::SubSat => {
            let v = if op == IBin::AddSat { x + y } else { x - y };
            trunc(t, v.clamp(i32::MIN as i128, i32::MAX as i128))
        }
        IBin::MulLo => trunc(t, x.wrapping_mul(y)),
        IBin::MulHi => mul_hi(t, a, b) & t.mask(),
        IBin::MulWide => {
            let w = ITy { bits: t.bits * 2, signed: t.signed };
            trunc(w, x * y)
        }
        IBin::Mul24Lo | IBin::Mul24Hi => {
            let e24 = |v: u64| -> i128 {
                if t.signed {
                    (((v << 40) as i64) >> 40) as i128
                } else {
                    (v & 0xff_ffff) as i128
                }
            };
            let p = e24(a) * e24(b);
            if op == IBin::Mul24Lo {
                trunc(t, p)
            } else {
                // The high 32 bits of the 48-bit product.
                trunc(t, p >> 16)
            }
        }
        IBin::Div | IBin::Rem => {
            if y == 0 {
                return t.mask();
            }
            if t.signed && y == -1 {
                return if op == IBin::Div { trunc(t, -x) } else { 0 };
            }
            trunc(t, if op == IBin::Div { x / y } else { x % y })
        }
        IBin::Min => trunc(t, x.min(y)),
        IBin::Max => trunc(t, x.max(y)),
        IBin::And => (a & b) & t.mask(),
        IBin::Or => (a | b) & t.mask(),
        IBin::Xor => (a ^ b) & t.mask(),
        IBin::Shl => {
            let s = (b & 0xffff_ffff) as u32;
            if s >= t.bits {
                0
            } else {
                (a << s) & t.mask()
            }
        }
        IBin::Shr => {
            // Amounts at or above the width shift everything out: 0, or the sign for signed types.
            let s = (b & 0xffff_ffff).min(t.bits as u64 - 1) as u32;
            if t.signed {
                trunc(t, x >> s)
            } else if b & 0xffff_ffff >= t.bits as u64 {
                0
            } else {
                (a & t.mask()) >> s
            }
        }
    }
}

/// The high half of the double-width product (as i128, sign-correct for signed types).
fn mul_hi(t: ITy, a: u64, b: u64) -> u64 {
    if t.signed {
        ((t.ext(a) * t.ext(b)) >> t.bits) as u64
    } else {
        let p = (a & t.mask()) as u128 * (b & t.mask()) as u128;
        (p >> t.bits) as u64
    }
}

pub fn iun(op: IUn, t: ITy, a: u64) -> u64 {
    let x = t.ext(a);
    let m = t.mask();
    match op {
        IUn::Abs => trunc(t, x.abs()),
        IUn::Neg => trunc(t, -x),
        IUn::Not => !a & m,
        IUn::Cnot => ((a & m) == 0) as u64,
        IUn::Popc => (a & m).count_ones() as u64,
        IUn::Clz => ((a & m).leading_zeros() - (64 - t.bits)) as u64,
        IUn::Brev => (a & m).reverse_bits() >> (64 - t.bits),
        IUn::Bfind | IUn::BfindShift => {
            // Position of the most significant non-sign bit; 0xffffffff when there is none.
            let v = if t.signed && x < 0 { !(a) & m } else { a & m };
            if v == 0 {
                return 0xffff_ffff;
            }
            let pos = 63 - v.leading_zeros();
            if op == IUn::BfindShift {
                (t.bits - 1 - pos) as u64
            } else {
                pos as u64
            }
        }
    }
}

/// `mad` (`a*b + c`).
pub fn mad(mode: MadMode, t: ITy, sat: bool, a: u64, b: u64, c: u64) -> u64 {
    let (x, y) = (t.ext(a), t.ext(b));
    match mode {
        MadMode::Lo => trunc(t, x.wrapping_mul(y).wrapping_add(t.ext(c))),
        MadMode::Hi => {
            let v = t.ext(mul_hi(t, a, b)).wrapping_add(t.ext(c));
            if sat {
                trunc(t, v.clamp(i32::MIN as i128, i32::MAX as i128))
            } else {
                trunc(t, v)
            }
        }
        MadMode::Wide => {
            let w = ITy { bits: t.bits * 2, signed: t.signed };
            trunc(w, x * y + w.ext(c))
        }
        MadMode::Lo24 => trunc(t, t.ext(ibin(crate::prog::IBin::Mul24Lo, t, a, b)) + t.ext(c)),
        MadMode::Hi24 => trunc(t, t.ext(ibin(crate::prog::IBin::Mul24Hi, t, a, b)) + t.ext(c)),
    }
}

/// `bfe`: extract `len` bits at `pos`, sign-extended for signed types (ISA pseudocode).
pub fn bfe(t: ITy, a: u64, pos: u64, len: u64) -> u64 {
    let msb = t.bits - 1;
    let pos = (pos & 0xff) as u32;
    let len = (len & 0xff) as u32;
    let x = a & t.mask();
    let sbit = if !t.signed || len == 0 {
        false
    } else {
        let b = (pos + len - 1).min(msb);
        (x >> b) & 1 == 1
    };
    let mut d = 0u64;
    for i in 0..=msb {
        let bit = if i < len && pos + i <= msb { (x >> (pos + i)) & 1 == 1 } else { sbit };
        if bit {
            d |= 1 << i;
        }
    }
    d
}

/// `bfi`: insert the low `len` bits of `a` into `b` at `pos`.
pub fn bfi(t: ITy, a: u64, b: u64, pos: u64, len: u64) -> u64 {
    let msb = t.bits - 1;
    let pos = (pos & 0xff) as u32;
    let len = (len & 0xff) as u32;
    let mut f = b & t.mask();
    for i in 0..len {
        if pos + i > msb {
            break;
        }
        let bit = (a >> i) & 1;
        f = (f & !(1 << (pos + i))) | (bit << (pos + i));
    }
    f
}

/// `prmt.b32` (default mode): select bytes of {b, a} by the nibbles of c.
pub fn prmt(a: u64, b: u64, c: u64) -> u64 {
    let bytes = ((b & 0xffff_ffff) << 32) | (a & 0xffff_ffff);
    let mut d = 0u64;
    for i in 0..4 {
        let sel = (c >> (4 * i)) & 0xf;
        let byte = (bytes >> (8 * (sel & 7))) & 0xff;
        let byte = if sel & 8 != 0 {
            if byte & 0x80 != 0 {
                0xff
            } else {
                0
            }
        } else {
            byte
        };
        d |= byte << (8 * i);
    }
    d
}

#[inline]
pub fn icmp(c: ICmp, t: ITy, a: u64, b: u64) -> bool {
    let (x, y) = (t.ext(a), t.ext(b));
    match c {
        ICmp::Eq => x == y,
        ICmp::Ne => x != y,
        ICmp::Lt => x < y,
        ICmp::Le => x <= y,
        ICmp::Gt => x > y,
        ICmp::Ge => x >= y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const U32: ITy = ITy { bits: 32, signed: false };
    const S32: ITy = ITy { bits: 32, signed: true };

    #[test]
    fn arithmetic_wraps_and_widens() {
        assert_eq!(ibin(IBin::Add, U32, 0xffff_ffff, 1), 0);
        assert_eq!(ibin(IBin::MulWide, U32, 0xffff_ffff, 2), 0x1_ffff_fffe);
        assert_eq!(ibin(IBin::MulWide, S32, (-2i32) as u32 as u64, 3), (-6i64) as u64);
        assert_eq!(ibin(IBin::MulHi, U32, 0x8000_0000, 4), 2);
        let u64t = ITy { bits: 64, signed: false };
        assert_eq!(ibin(IBin::MulHi, u64t, u64::MAX, u64::MAX), u64::MAX - 1);
        assert_eq!(mad(MadMode::Hi, u64t, false, u64::MAX, 2, 5), 6);
        assert_eq!(mad(MadMode::Lo, u64t, false, u64::MAX, 1 << 63, 1 << 63), 0);
        let s64 = ITy { bits: 64, signed: true };
        assert_eq!(ibin(IBin::MulHi, s64, i64::MIN as u64, i64::MIN as u64), 1 << 62);
        assert_eq!(ibin(IBin::Div, S32, (-7i32) as u32 as u64, 2), (-3i32) as u32 as u64);
        assert_eq!(ibin(IBin::Rem, S32, (-7i32) as u32 as u64, 2), (-1i32) as u32 as u64);
        assert_eq!(ibin(IBin::Div, S32, i32::MIN as u32 as u64, (-1i32) as u32 as u64), i32::MIN as u32 as u64);
        assert_eq!(ibin(IBin::Div, U32, 5, 0), 0xffff_ffff);
        assert_eq!(ibin(IBin::AddSat, S32, i32::MAX as u64, 1), i32::MAX as u64);
    }

    #[test]
    fn shifts_clamp_their_amount() {
        assert_eq!(ibin(IBin::Shl, U32, 1, 32), 0);
        assert_eq!(ibin(IBin::Shr, U32, 0x8000_0000, 40), 0);
        assert_eq!(ibin(IBin::Shr, S32, 0x8000_0000, 40), 0xffff_ffff);
        assert_eq!(ibin(IBin::Shr, S32, 0x8000_0000, 31), 0xffff_ffff);
        assert_eq!(ibin(IBin::Shr, S32, 0x4000_0000, 30), 1);
    }

    #[test]
    fn bit_instructions() {
        assert_eq!(iun(IUn::Clz, U32, 1), 31);
        assert_eq!(iun(IUn::Popc, U32, 0xf0f0), 8);
        assert_eq!(iun(IUn::Brev, U32, 1), 0x8000_0000);
        assert_eq!(iun(IUn::Bfind, U32, 0), 0xffff_ffff);
        assert_eq!(iun(IUn::Bfind, S32, (-1i32) as u32 as u64), 0xffff_ffff);
        assert_eq!(bfe(U32, 0xabcd, 4, 8), 0xbc);
        assert_eq!(bfe(S32, 0x80, 4, 4), 0xffff_fff8);
        assert_eq!(bfi(U32, 0xf, 0, 8, 4), 0xf00);
        assert_eq!(prmt(0x4433_2211, 0x8877_6655, 0x3210), 0x4433_2211);
        assert_eq!(prmt(0x4433_2211, 0x8877_6655, 0x7654), 0x8877_6655);
    }
}
