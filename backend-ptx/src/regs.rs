//! PTX virtual registers: which register class holds each kir type, and how registers are named and
//! declared.
//!
//! Guarantees:
//! - Every kir type maps to exactly one class ([`RegClass::of`]); the class decides the PTX register
//!   width and the name prefix. A vector `vec<N, T>` is N registers of `T`'s class, one per
//!   element ([`Regs`]): a vector an instruction computes gets a consecutive run
//!   ([`RegFile::fresh_n`], [`Regs::run`]); one built from other values (`vec`, `extract`,
//!   `insert`) may name their registers instead, in any order and more than once (which
//!   [`crate::assign`] decides). `u8`/`s8` live in 32-bit registers, zero-extended for `u8` and
//!   sign-extended for `s8` (every instruction that writes one re-establishes this), so 32-bit
//!   compare, divide, min/max and shift-right instructions give the 8-bit results directly.
//! - Register names are `%<prefix><n>` with `n` counting from 0 per class; [`RegFile::declarations`]
//!   declares exactly the registers handed out, grouped by class in a fixed order (deterministic).

use kir_ir::{ScalarType, Type};

/// A PTX register class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegClass {
    /// `.pred %p`
    Pred,
    /// `.b16 %rs`: u16, s16
    B16,
    /// `.b16 %h`: f16, bf16 (bit patterns; arithmetic through `.f16`/`.bf16` instructions or f32)
    H16,
    /// `.b32 %r`: u8, s8 (extended), u32, s32
    B32,
    /// `.f32 %f`
    F32,
    /// `.b64 %rd`: u64, s64 and pointers
    B64,
    /// `.f64 %fd`
    F64,
}

impl RegClass {
    pub const ALL: [RegClass; 7] =
        [RegClass::Pred, RegClass::B16, RegClass::H16, RegClass::B32, RegClass::F32, RegClass::B64, RegClass::F64];

    pub fn of(ty: Type) -> RegClass {
        match ty {
            Type::Ptr(..) => RegClass::B64,
            Type::Scalar(s) => RegClass::of_scalar(s),
            // Each element in its own register of the element's class.
            Type::Vec(_, e) => RegClass::of_scalar(e),
        }
    }

    /// How many registers a value of `ty` takes: one, or one per element of a vector.
    pub fn count(ty: Type) -> usize {
        match ty {
            Type::Vec(w, _) => w.len(),
            Type::Scalar(_) | Type::Ptr(..) => 1,
        }
    }

    pub fn of_scalar(s: ScalarType) -> RegClass {
        use ScalarType::*;
        match s {
            Pred => RegClass::Pred,
            U8 | S8 | U32 | S32 => RegClass::B32,
            U16 | S16 => RegClass::B16,
            F16 | BF16 => RegClass::H16,
            F32 => RegClass::F32,
            U64 | S64 => RegClass::B64,
            F64 => RegClass::F64,
        }
    }

    pub fn prefix(self) -> &'static str {
        match self {
            RegClass::Pred => "p",
            RegClass::B16 => "rs",
            RegClass::H16 => "h",
            RegClass::B32 => "r",
            RegClass::F32 => "f",
            RegClass::B64 => "rd",
            RegClass::F64 => "fd",
        }
    }

    /// The type in the `.reg` declaration.
    pub fn decl_type(self) -> &'static str {
        match self {
            RegClass::Pred => ".pred",
            RegClass::B16 | RegClass::H16 => ".b16",
            RegClass::B32 => ".b32",
            RegClass::F32 => ".f32",
            RegClass::B64 => ".b64",
            RegClass::F64 => ".f64",
        }
    }

    /// Width in bits (predicates: 1).
    pub fn bits(self) -> u32 {
        match self {
            RegClass::Pred => 1,
            RegClass::B16 | RegClass::H16 => 16,
            RegClass::B32 | RegClass::F32 => 32,
            RegClass::B64 | RegClass::F64 => 64,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A virtual register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg {
    pub class: RegClass,
    pub n: u32,
}

impl Reg {
    /// Register `j` of a run handed out by [`RegFile::fresh_n`] whose first register is `self`
    /// (element `j` of a vector value).
    pub fn elem(self, j: usize) -> Reg {
        Reg { class: self.class, n: self.n + j as u32 }
    }
}

impl std::fmt::Display for Reg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "%{}{}", self.class.prefix(), self.n)
    }
}

/// The registers of one value: one for a scalar or a pointer, one per element for a vector (at
/// most [`Regs::MAX`]). The registers of a vector need not be consecutive or distinct.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Regs {
    regs: [Reg; Regs::MAX],
    len: u8,
}

impl Regs {
    /// The most elements a vector has (`vec<4, T>`).
    pub const MAX: usize = 4;

    /// One register.
    pub fn one(r: Reg) -> Regs {
        Regs { regs: [r; Regs::MAX], len: 1 }
    }

    /// The `n` (1 to [`Regs::MAX`]) consecutive registers from `first` (a run handed out by
    /// [`RegFile::fresh_n`]).
    pub fn run(first: Reg, n: usize) -> Regs {
        debug_assert!((1..=Regs::MAX).contains(&n));
        let mut regs = [first; Regs::MAX];
        for (j, r) in regs.iter_mut().enumerate().take(n) {
            *r = first.elem(j);
        }
        Regs { regs, len: n.clamp(1, Regs::MAX) as u8 }
    }

    /// These registers with element `j` (at most one past the last) in `r`.
    pub fn with(mut self, j: usize, r: Reg) -> Regs {
        debug_assert!(j <= self.len() && j < Regs::MAX);
        self.regs[j] = r;
        self.len = self.len.max(j as u8 + 1);
        self
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// Register `j` (element `j` of a vector).
    pub fn get(&self, j: usize) -> Reg {
        self.as_slice()[j]
    }

    /// The register of a scalar (element 0 of a vector).
    pub fn first(&self) -> Reg {
        self.regs[0]
    }

    pub fn as_slice(&self) -> &[Reg] {
        &self.regs[..self.len()]
    }
}

/// `{%r4, %r5, %r6, %r7}`: the registers as vector instructions list them.
impl std::fmt::Display for Regs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("{")?;
        for (j, r) in self.as_slice().iter().enumerate() {
            if j > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{r}")?;
        }
        f.write_str("}")
    }
}

/// Hands out registers and declares them.
#[derive(Default, Debug)]
pub struct RegFile {
    counts: [u32; 7],
}

impl RegFile {
    pub fn fresh(&mut self, class: RegClass) -> Reg {
        let n = self.counts[class.index()];
        self.counts[class.index()] += 1;
        Reg { class, n }
    }

    /// `n` (at least one) consecutive registers of `class`; returns the first (see [`Reg::elem`]).
    pub fn fresh_n(&mut self, class: RegClass, n: usize) -> Reg {
        let first = self.fresh(class);
        self.counts[class.index()] += n.max(1) as u32 - 1;
        first
    }

    /// `.reg` declarations for every register handed out, one line per class.
    pub fn declarations(&self) -> String {
        let mut out = String::new();
        for c in RegClass::ALL {
            let n = self.counts[c.index()];
            if n > 0 {
                out.push_str(&format!("\t.reg {} \t%{}<{}>;\n", c.decl_type(), c.prefix(), n));
            }
        }
        out
    }
}
