//! The op set of the kir IR: what each instruction computes, with its types and modifiers.
//!
//! Guarantees:
//! - An [`Op`] carries every type and modifier needed to know its operand and result types
//!   ([`Op::signature`]), except memory ops, whose element type comes from their pointer operand.
//! - Every op has exactly one textual mnemonic ([`Op::mnemonic`]) that the parser maps back to the
//!   same `Op`. Both directions are driven by one table, [`crate::mnemonic`]; the per-op words
//!   (`BinOp::name` and the like, each sub-enum's `ALL` in the order messages list them) live here.
//! - Pure ops (no memory, no synchronization, no thread identity) are exactly those for which
//!   [`Op::is_pure`] holds; they are evaluated by [`crate::eval`], the single definition of their
//!   semantics used by constant folding and the interpreter.
//!
//! Operand layout per op (the `args` of an instruction):
//! - `Special`: none. `Mov`: `[a]`. Binary ops: `[a, b]`. `Mad`/`Fma`: `[a, b, c]`.
//! - `Unary`, `Cvt`, `Bitcast`: `[a]`. `Cmp`: `[a, b]`. `Select`: `[cond, a, b]`.
//! - `Load`: `[ptr, index]`. `Store`: `[ptr, index, value]`. `Atomic`: `[ptr, index, value]`.
//!   `AtomicCas`: `[ptr, index, compare, new]`. The index counts elements of the pointee type and
//!   may be any integer type (signed types are sign-extended).
//! - `PtrOffset`: `[ptr, index]` (elements). `PtrOffsetBytes`: `[ptr, bytes]`. `PtrCast`: `[ptr]`.
//!   `SharedAddr`: none (names a shared declaration).
//! - `Barrier`: none. `Shfl`: `[value, lane_or_delta, member_mask]`. `Vote`: `[pred, member_mask]`.
//! - `VecBuild`: one operand per element. `VecExtract`: `[vector, lane]`. `VecInsert`:
//!   `[vector, lane, element]`; `lane` is a constant below the width (the verifier's rule).
//! - `LoadVec`: `[ptr, index]`. `StoreVec`: `[ptr, index, vector]`. `Ldmatrix`: `[ptr, index]`
//!   (shared memory; the address of this lane's row). `index` counts scalar elements, as for `Load`.
//! - `Mma`: `[a, b, c]` (fragments, [`MmaKind`]). `CpAsync`: `[dst, dst_index, src, src_index,
//!   src_bytes]` (shared ← global). `CpAsyncCommit`: none. `CpAsyncWait`: `[n]`, a constant.
//!
//! [`Op::address_operands`] names the written operands that are addresses `%p[%i]` (each two
//! operands of the instruction).

use crate::types::{ScalarType, Type, VecWidth};

/// A dimension of the thread/block index space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    X,
    Y,
    Z,
}

impl Dim {
    pub const ALL: [Dim; 3] = [Dim::X, Dim::Y, Dim::Z];
    pub fn name(self) -> &'static str {
        match self {
            Dim::X => "x",
            Dim::Y => "y",
            Dim::Z => "z",
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Special registers: thread identity and launch shape. All are `u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpecialReg {
    /// Thread index within the block.
    Tid(Dim),
    /// Block index within the grid.
    Ctaid(Dim),
    /// Block size.
    Ntid(Dim),
    /// Grid size in blocks.
    Nctaid(Dim),
    /// `ctaid * ntid + tid` (wrapping u32): the global thread index along a dimension.
    GlobalId(Dim),
    /// Lane index within the warp (0..32).
    LaneId,
    /// Warp index within the block (`linear tid / 32`).
    WarpId,
}

impl SpecialReg {
    /// True when the value differs between threads of one block.
    pub fn is_thread_varying(self) -> bool {
        matches!(self, SpecialReg::Tid(_) | SpecialReg::GlobalId(_) | SpecialReg::LaneId | SpecialReg::WarpId)
    }
}

/// Rounding of a float operation or conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// To nearest, ties to even (the default).
    Rn,
    /// Toward zero.
    Rz,
    /// Toward minus infinity.
    Rm,
    /// Toward plus infinity.
    Rp,
    /// Round to an integral value (float→int and float→float): nearest even.
    Rni,
    /// Integral, toward zero.
    Rzi,
    /// Integral, toward minus infinity.
    Rmi,
    /// Integral, toward plus infinity.
    Rpi,
}

impl Rounding {
    pub const ALL: [Rounding; 8] = [
        Rounding::Rn,
        Rounding::Rz,
        Rounding::Rm,
        Rounding::Rp,
        Rounding::Rni,
        Rounding::Rzi,
        Rounding::Rmi,
        Rounding::Rpi,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Rounding::Rn => "rn",
            Rounding::Rz => "rz",
            Rounding::Rm => "rm",
            Rounding::Rp => "rp",
            Rounding::Rni => "rni",
            Rounding::Rzi => "rzi",
            Rounding::Rmi => "rmi",
            Rounding::Rpi => "rpi",
        }
    }
    pub fn from_name(s: &str) -> Option<Rounding> {
        Rounding::ALL.iter().copied().find(|r| r.name() == s)
    }
    /// True for the integral roundings (`rni`, `rzi`, `rmi`, `rpi`).
    pub fn is_integral(self) -> bool {
        matches!(self, Rounding::Rni | Rounding::Rzi | Rounding::Rmi | Rounding::Rpi)
    }
}

/// How a float arithmetic op computes its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatMode {
    /// IEEE 754 correctly rounded with the given (non-integral) rounding.
    Exact(Rounding),
    /// The hardware's fast approximation (`.approx`); its maximum error is documented per op.
    Approx,
    /// `div.full.f32`: the full-range approximate division (2 ulp).
    Full,
}

impl FloatMode {
    pub const RN: FloatMode = FloatMode::Exact(Rounding::Rn);
    pub fn is_approx(self) -> bool {
        !matches!(self, FloatMode::Exact(_))
    }
}

/// Float modifiers: the mode and flush-to-zero of subnormal inputs and outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FloatFlags {
    pub mode: FloatMode,
    pub ftz: bool,
}

impl FloatFlags {
    pub const RN: FloatFlags = FloatFlags { mode: FloatMode::RN, ftz: false };
    pub const APPROX: FloatFlags = FloatFlags { mode: FloatMode::Approx, ftz: false };
}

/// Two-operand arithmetic and logic ops. Which types each accepts is in [`Op::signature`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    /// Low half of the product for integers; rounded product for floats.
    Mul,
    /// High half of the double-width integer product.
    MulHi,
    Div,
    Rem,
    Min,
    Max,
    And,
    Or,
    Xor,
    /// Shift left; the shift amount is always `u32`, amounts >= width give 0.
    Shl,
    /// Shift right, arithmetic for signed types and logical for unsigned; amount is `u32`.
    Shr,
}

impl BinOp {
    pub const ALL: [BinOp; 13] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::MulHi,
        BinOp::Div,
        BinOp::Rem,
        BinOp::Min,
        BinOp::Max,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::Shr,
    ];
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::MulHi => "mul.hi",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
        }
    }
    /// Whether `ty` is a valid operand type for this op.
    pub fn accepts(self, ty: ScalarType) -> bool {
        use BinOp::*;
        match self {
            Add | Sub | Mul | Div | Min | Max => ty.is_int() || ty.is_float(),
            MulHi | Rem | Shl | Shr => ty.is_int(),
            And | Or | Xor => ty.is_int() || ty.is_pred(),
        }
    }
    /// Whether the op takes a rounding/approx modifier for float operands.
    pub fn has_float_mode(self) -> bool {
        matches!(self, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div)
    }
    pub fn is_commutative(self) -> bool {
        use BinOp::*;
        matches!(self, Add | Mul | MulHi | Min | Max | And | Or | Xor)
    }
}

/// One-operand arithmetic ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Abs,
    /// Bitwise not (integers) or logical not (pred).
    Not,
    Sqrt,
    /// `1/sqrt(x)`, approx only.
    Rsqrt,
    /// `1/x`, exact (rounded) or approx.
    Rcp,
    /// `2^x`, approx only.
    Ex2,
    /// `log2(x)`, approx only.
    Lg2,
    /// approx only.
    Sin,
    /// approx only.
    Cos,
    /// approx only (f32).
    Tanh,
}

impl UnOp {
    pub const ALL: [UnOp; 11] = [
        UnOp::Neg,
        UnOp::Abs,
        UnOp::Not,
        UnOp::Sqrt,
        UnOp::Rsqrt,
        UnOp::Rcp,
        UnOp::Ex2,
        UnOp::Lg2,
        UnOp::Sin,
        UnOp::Cos,
        UnOp::Tanh,
    ];
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "neg",
            UnOp::Abs => "abs",
            UnOp::Not => "not",
            UnOp::Sqrt => "sqrt",
            UnOp::Rsqrt => "rsqrt",
            UnOp::Rcp => "rcp",
            UnOp::Ex2 => "ex2",
            UnOp::Lg2 => "lg2",
            UnOp::Sin => "sin",
            UnOp::Cos => "cos",
            UnOp::Tanh => "tanh",
        }
    }
    pub fn accepts(self, ty: ScalarType) -> bool {
        use UnOp::*;
        match self {
            Neg | Abs => ty.is_signed_int() || ty.is_float(),
            Not => ty.is_int() || ty.is_pred(),
            Sqrt | Rcp => matches!(ty, ScalarType::F32 | ScalarType::F64),
            Rsqrt | Ex2 | Lg2 | Sin | Cos | Tanh => ty == ScalarType::F32,
        }
    }
    /// Ops that exist only as `.approx` on the GPU.
    pub fn approx_only(self) -> bool {
        matches!(self, UnOp::Rsqrt | UnOp::Ex2 | UnOp::Lg2 | UnOp::Sin | UnOp::Cos | UnOp::Tanh)
    }
    /// Ops that take float flags (rounding/approx, ftz).
    pub fn has_float_mode(self) -> bool {
        !matches!(self, UnOp::Neg | UnOp::Abs | UnOp::Not)
    }
}

/// Comparison operators. For floats, the plain forms are ordered (false when either operand is NaN)
/// and the `u` forms are unordered (true when either operand is NaN).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    /// Both operands are numbers (not NaN).
    Num,
    /// Either operand is NaN.
    Nan,
}

impl CmpOp {
    pub const ALL: [CmpOp; 14] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
        CmpOp::Equ,
        CmpOp::Neu,
        CmpOp::Ltu,
        CmpOp::Leu,
        CmpOp::Gtu,
        CmpOp::Geu,
        CmpOp::Num,
        CmpOp::Nan,
    ];
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
            CmpOp::Equ => "equ",
            CmpOp::Neu => "neu",
            CmpOp::Ltu => "ltu",
            CmpOp::Leu => "leu",
            CmpOp::Gtu => "gtu",
            CmpOp::Geu => "geu",
            CmpOp::Num => "num",
            CmpOp::Nan => "nan",
        }
    }
    pub fn accepts(self, ty: ScalarType) -> bool {
        match self {
            CmpOp::Eq | CmpOp::Ne => true,
            CmpOp::Lt | CmpOp::Le | CmpOp::Gt | CmpOp::Ge => ty.is_int() || ty.is_float(),
            _ => ty.is_float(),
        }
    }
}

/// Read-modify-write atomic operations (`atom.*`). All return the old value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    Add,
    Min,
    Max,
    Exch,
}

impl AtomicOp {
    pub const ALL: [AtomicOp; 4] = [AtomicOp::Add, AtomicOp::Min, AtomicOp::Max, AtomicOp::Exch];
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Min => "min",
            AtomicOp::Max => "max",
            AtomicOp::Exch => "exch",
        }
    }
    /// Element types the GPU supports for this atomic.
    pub fn accepts(self, ty: ScalarType) -> bool {
        use ScalarType::*;
        match self {
            AtomicOp::Add => matches!(ty, U32 | S32 | U64 | F32 | F64),
            AtomicOp::Min | AtomicOp::Max => matches!(ty, U32 | S32 | U64 | S64),
            AtomicOp::Exch => matches!(ty, U32 | S32 | U64 | S64 | F32 | F64),
        }
    }
}

/// Warp shuffle modes (`shfl.sync.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShflMode {
    /// Read from lane `laneid + delta`; lanes past 31 keep their own value.
    Down,
    /// Read from lane `laneid - delta`; lanes below 0 keep their own value.
    Up,
    /// Read from lane `laneid ^ mask`.
    Bfly,
    /// Read from lane `idx`.
    Idx,
}

impl ShflMode {
    pub const ALL: [ShflMode; 4] = [ShflMode::Down, ShflMode::Up, ShflMode::Bfly, ShflMode::Idx];
    pub fn name(self) -> &'static str {
        match self {
            ShflMode::Down => "down",
            ShflMode::Up => "up",
            ShflMode::Bfly => "bfly",
            ShflMode::Idx => "idx",
        }
    }
}

/// Warp votes (`vote.sync.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VoteMode {
    /// True when the predicate holds on every lane in the member mask. Result `pred`.
    All,
    /// True when it holds on any lane in the member mask. Result `pred`.
    Any,
    /// Bit i set when it holds on lane i (lanes in the member mask). Result `u32`.
    Ballot,
}

impl VoteMode {
    pub const ALL: [VoteMode; 3] = [VoteMode::All, VoteMode::Any, VoteMode::Ballot];
    pub fn name(self) -> &'static str {
        match self {
            VoteMode::All => "all",
            VoteMode::Any => "any",
            VoteMode::Ballot => "ballot",
        }
    }
}

/// The shape and input format of a warp-level tensor-core `mma`. The accumulator and result are
/// always four `f32` per lane (`vec<4, f32>`); A is `vec<4, u32>` and B `vec<2, u32>` per lane, laid
/// out as PTX's `mma.sync.aligned.*.row.col` fragments (docs/language.md, "Tensor cores").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MmaKind {
    /// `mma.m16n8k16.f16`: f16 inputs, two per `u32` (the lower-numbered element in the low half).
    F16,
    /// `mma.m16n8k16.bf16`: bf16 inputs, two per `u32`.
    Bf16,
    /// `mma.m16n8k8.tf32`: tf32 inputs, one per `u32` (an f32 bit pattern; the 13 low fraction bits
    /// are ignored).
    Tf32,
}

impl MmaKind {
    pub const ALL: [MmaKind; 3] = [MmaKind::F16, MmaKind::Bf16, MmaKind::Tf32];
    /// The input format word of the mnemonic.
    pub fn name(self) -> &'static str {
        match self {
            MmaKind::F16 => "f16",
            MmaKind::Bf16 => "bf16",
            MmaKind::Tf32 => "tf32",
        }
    }
    /// The shape word of the mnemonic (`m16n8k16` or `m16n8k8`).
    pub fn shape(self) -> &'static str {
        match self {
            MmaKind::F16 | MmaKind::Bf16 => "m16n8k16",
            MmaKind::Tf32 => "m16n8k8",
        }
    }
    /// The reduction depth k of one instruction.
    pub fn k(self) -> usize {
        match self {
            MmaKind::F16 | MmaKind::Bf16 => 16,
            MmaKind::Tf32 => 8,
        }
    }
    /// The operand types: A, B, C (the result is C's type).
    pub fn fragment_types(self) -> [Type; 3] {
        [
            Type::Vec(VecWidth::V4, ScalarType::U32),
            Type::Vec(VecWidth::V2, ScalarType::U32),
            Type::Vec(VecWidth::V4, ScalarType::F32),
        ]
    }
}

/// How many 8×8 matrices of 16-bit elements one `ldmatrix` loads (`.x1`, `.x2`, `.x4`): the
/// result is one `u32` per matrix and lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LdmatrixNum {
    X1,
    X2,
    X4,
}

impl LdmatrixNum {
    pub const ALL: [LdmatrixNum; 3] = [LdmatrixNum::X1, LdmatrixNum::X2, LdmatrixNum::X4];
    pub fn name(self) -> &'static str {
        match self {
            LdmatrixNum::X1 => "x1",
            LdmatrixNum::X2 => "x2",
            LdmatrixNum::X4 => "x4",
        }
    }
    /// The number of matrices.
    pub fn count(self) -> usize {
        match self {
            LdmatrixNum::X1 => 1,
            LdmatrixNum::X2 => 2,
            LdmatrixNum::X4 => 4,
        }
    }
    /// The result type: `u32`, `vec<2, u32>` or `vec<4, u32>`.
    pub fn result_type(self) -> Type {
        match self {
            LdmatrixNum::X1 => Type::U32,
            LdmatrixNum::X2 => Type::Vec(VecWidth::V2, ScalarType::U32),
            LdmatrixNum::X4 => Type::Vec(VecWidth::V4, ScalarType::U32),
        }
    }
}

/// The size of one `cp.async` copy: 4, 8 or 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpAsyncSize {
    B4,
    B8,
    B16,
}

impl CpAsyncSize {
    pub const ALL: [CpAsyncSize; 3] = [CpAsyncSize::B4, CpAsyncSize::B8, CpAsyncSize::B16];
    pub fn name(self) -> &'static str {
        match self {
            CpAsyncSize::B4 => "4",
            CpAsyncSize::B8 => "8",
            CpAsyncSize::B16 => "16",
        }
    }
    pub fn bytes(self) -> u32 {
        match self {
            CpAsyncSize::B4 => 4,
            CpAsyncSize::B8 => 8,
            CpAsyncSize::B16 => 16,
        }
    }
}

/// What an instruction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Read a special register (`tid.x`, `global_id.x`, `laneid`, ...). Result `u32`.
    Special(SpecialReg),
    /// `mov.T a`: copy a value (or materialize a constant).
    Mov(ScalarType),
    /// Two-operand arithmetic/logic. `flags` is meaningful only for float add/sub/mul/div
    /// (and is `FloatFlags::RN` otherwise).
    Bin(BinOp, ScalarType, FloatFlags),
    /// `mul.wide.T a, b`: full product of two `T` integers as the double-width integer.
    MulWide(ScalarType),
    /// `mad.T a, b, c`: low half of `a*b + c` (integers), wrapping.
    Mad(ScalarType),
    /// `fma.T a, b, c`: `a*b + c` rounded once.
    Fma(ScalarType, FloatFlags),
    /// One-operand arithmetic.
    Unary(UnOp, ScalarType, FloatFlags),
    /// Comparison; result `pred`.
    Cmp(CmpOp, ScalarType),
    /// `select.T c, a, b`: `c ? a : b`.
    Select(ScalarType),
    /// `cvt[.rnd][.sat][.ftz].TO.FROM a`: numeric conversion.
    Cvt { to: ScalarType, from: ScalarType, rounding: Option<Rounding>, sat: bool, ftz: bool },
    /// `bitcast.TO.FROM a`: reinterpret bits between types of the same width.
    Bitcast { to: ScalarType, from: ScalarType },
    /// `load p[i]`: read the element at index `i` of pointer `p`.
    Load,
    /// `store p[i], v`.
    Store,
    /// `atom.OP p[i], v`: returns the old value.
    Atomic(AtomicOp),
    /// `atom.cas p[i], cmp, new`: returns the old value; writes `new` if old == cmp (bitwise).
    AtomicCas,
    /// `offset p, i`: pointer `i` elements past `p`.
    PtrOffset,
    /// `offset.bytes p, b`: pointer `b` bytes past `p` (any integer type `b`).
    PtrOffsetBytes,
    /// `ptrcast p : ptr<space, T>`: same address, another element type (same address space).
    PtrCast(Type),
    /// `addr @name`: the address of a shared-memory declaration of the kernel.
    SharedAddr(u32),
    /// `barrier`: block-wide barrier (`bar.sync 0`).
    Barrier,
    /// `shfl.MODE.T v, lane, mask`.
    Shfl(ShflMode, ScalarType),
    /// `vote.MODE p, mask`.
    Vote(VoteMode),
    /// `call @f(args)`: calls the body's callee `n` ([`crate::Kernel::callees`]). Its operand and
    /// result types are the callee's, which the op does not know: [`Op::signature`] and
    /// [`Op::arity`] describe no operands, and the verifier checks calls against the callee.
    Call(u32),
    /// `vec.vN.T a, b[, c, d]`: the vector of its operands (element 0 first).
    VecBuild(VecWidth, ScalarType),
    /// `extract.vN.T v, lane`: element `lane` (a constant) of a vector.
    VecExtract(VecWidth, ScalarType),
    /// `insert.vN.T v, lane, x`: the vector with element `lane` (a constant) replaced by `x`.
    VecInsert(VecWidth, ScalarType),
    /// `load.vN p[i]`: the N elements at index `i` of `p` as one access, aligned to its size.
    LoadVec(VecWidth),
    /// `store.vN p[i], v`: writes the N elements of `v` at index `i` of `p` as one access.
    StoreVec(VecWidth),
    /// `mma.SHAPE.T a, b, c`: the warp's tensor-core product `D = A·B + C` (all 32 lanes, converged).
    Mma(MmaKind),
    /// `ldmatrix.xN[.trans] p[i]`: the warp loads N 8×8 matrices of 16-bit elements from shared
    /// memory; each of the first 8·N lanes gives the address of one 16-byte row.
    Ldmatrix(LdmatrixNum, bool),
    /// `cp.async.N dst[i], src[j], n`: starts copying N bytes from global to shared memory, of
    /// which the first `n` come from `src` and the rest are zeros; complete after a
    /// `cp.async.wait` that covers its group.
    CpAsync(CpAsyncSize),
    /// `cp.async.commit`: closes the thread's group of started copies.
    CpAsyncCommit,
    /// `cp.async.wait n`: waits until at most `n` (a constant) of the thread's committed groups
    /// are still in flight.
    CpAsyncWait,
}

/// What an op needs of its operands and gives as its result, where the op alone determines it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// The operand types; `None` for an operand the op takes as any pointer or any integer
    /// (memory ops, offsets), checked by the verifier's op-specific rules.
    pub args: smallvec::SmallVec<[Option<Type>; 4]>,
    /// The result type; `None` when the op has no result or the result depends on a pointer
    /// operand (loads, atomics, offsets).
    pub result: Option<Type>,
    /// Whether the op produces a value at all.
    pub has_result: bool,
}

impl Op {
    /// Whether the op may be evaluated anywhere its operands are available, once, with the same
    /// result: total, free of effects, and depending only on its operands and the thread — the pure
    /// ops, and the address and special-register ops (`offset`, `offset.bytes`, `ptrcast`,
    /// `addr @shared`, `tid`/`ctaid`/...), which the interpreter and the PTX both compute without a
    /// check that could fail. What loop-invariant code motion may hoist and CSE may merge.
    pub fn is_speculatable(&self) -> bool {
        self.is_pure()
            || matches!(self, Op::PtrOffset | Op::PtrOffsetBytes | Op::PtrCast(_) | Op::SharedAddr(_) | Op::Special(_))
    }

    /// Whether the op is a pure function of its operands: the scalar ones, evaluated by
    /// [`crate::eval`] (what constant folding folds), and the vector element ops
    /// (`vec`/`extract`/`insert`, which only move bits).
    pub fn is_pure(&self) -> bool {
        matches!(
            self,
            Op::VecBuild(..)
                | Op::VecExtract(..)
                | Op::VecInsert(..)
                | Op::Mov(_)
                | Op::Bin(..)
                | Op::MulWide(_)
                | Op::Mad(_)
                | Op::Fma(..)
                | Op::Unary(..)
                | Op::Cmp(..)
                | Op::Select(_)
                | Op::Cvt { .. }
                | Op::Bitcast { .. }
        )
    }

    /// Whether removing an unused instance could change behaviour (memory writes, atomics,
    /// synchronization, collectives). Loads are side-effect free.
    pub fn has_side_effects(&self) -> bool {
        matches!(
            self,
            Op::Store
                | Op::Atomic(_)
                | Op::AtomicCas
                | Op::Barrier
                | Op::Shfl(..)
                | Op::Vote(_)
                | Op::Call(_)
                | Op::StoreVec(_)
                | Op::Mma(_)
                | Op::Ldmatrix(..)
                | Op::CpAsync(_)
                | Op::CpAsyncCommit
                | Op::CpAsyncWait
        )
    }

    /// Whether the op computes on vectors only by moving bits (`vec`, `extract`, `insert`): pure,
    /// but not evaluated by [`crate::eval`], whose values are scalars.
    pub fn is_vector_move(&self) -> bool {
        matches!(self, Op::VecBuild(..) | Op::VecExtract(..) | Op::VecInsert(..))
    }

    /// The positions, among the operands as written, that are addresses `%p[%i]` (each is two
    /// operands of the instruction: the pointer and the index).
    pub fn address_operands(&self) -> &'static [usize] {
        match self {
            Op::Load
            | Op::Store
            | Op::Atomic(_)
            | Op::AtomicCas
            | Op::LoadVec(_)
            | Op::StoreVec(_)
            | Op::Ldmatrix(..) => &[0],
            Op::CpAsync(_) => &[0, 1],
            _ => &[],
        }
    }

    /// Whether the op needs the whole warp, converged, to execute (like a full-mask collective):
    /// `mma` and `ldmatrix`.
    pub fn needs_whole_warp(&self) -> bool {
        matches!(self, Op::Mma(_) | Op::Ldmatrix(..))
    }

    /// Whether the op is an approximation whose GPU result may differ from the exact one.
    pub fn is_approx(&self) -> bool {
        match self {
            Op::Bin(_, _, f) | Op::Fma(_, f) | Op::Unary(_, _, f) => f.mode.is_approx(),
            _ => false,
        }
    }

    /// Whether the op is a warp collective (shuffle, vote, and the whole-warp `mma` and `ldmatrix`).
    pub fn is_warp_collective(&self) -> bool {
        matches!(self, Op::Shfl(..) | Op::Vote(_) | Op::Mma(_) | Op::Ldmatrix(..))
    }

    /// Number of operands the op takes (for `Call`, 0: a call takes as many as its callee has
    /// parameters, which only the module knows).
    pub fn arity(&self) -> usize {
        match self {
            Op::Special(_) | Op::SharedAddr(_) | Op::Barrier | Op::Call(_) | Op::CpAsyncCommit => 0,
            Op::Mov(_) | Op::Unary(..) | Op::Cvt { .. } | Op::Bitcast { .. } | Op::PtrCast(_) | Op::CpAsyncWait => 1,
            Op::Bin(..) | Op::MulWide(_) | Op::Cmp(..) | Op::Load | Op::PtrOffset | Op::PtrOffsetBytes => 2,
            Op::Vote(_) | Op::VecExtract(..) | Op::LoadVec(_) | Op::Ldmatrix(..) => 2,
            Op::Mad(_) | Op::Fma(..) | Op::Select(_) | Op::Store | Op::Atomic(_) | Op::Shfl(..) => 3,
            Op::VecInsert(..) | Op::StoreVec(_) | Op::Mma(_) => 3,
            Op::AtomicCas => 4,
            Op::CpAsync(_) => 5,
            Op::VecBuild(w, _) => w.len(),
        }
    }

    /// The operand and result types the op itself determines.
    pub fn signature(&self) -> Signature {
        use ScalarType as S;
        let t = Type::Scalar;
        let (args, result, has_result): (smallvec::SmallVec<[Option<Type>; 4]>, Option<Type>, bool) = match self {
            Op::Special(_) => (smallvec::smallvec![], Some(Type::U32), true),
            Op::Mov(ty) => (smallvec::smallvec![Some(t(*ty))], Some(t(*ty)), true),
            Op::Bin(op, ty, _) => {
                let b = if matches!(op, BinOp::Shl | BinOp::Shr) { S::U32 } else { *ty };
                (smallvec::smallvec![Some(t(*ty)), Some(t(b))], Some(t(*ty)), true)
            }
            Op::MulWide(ty) => {
                let wide = ty.widened().unwrap_or(*ty);
                (smallvec::smallvec![Some(t(*ty)), Some(t(*ty))], Some(t(wide)), true)
            }
            Op::Mad(ty) | Op::Fma(ty, _) => (smallvec::smallvec![Some(t(*ty)); 3], Some(t(*ty)), true),
            Op::Unary(_, ty, _) => (smallvec::smallvec![Some(t(*ty))], Some(t(*ty)), true),
            Op::Cmp(_, ty) => (smallvec::smallvec![Some(t(*ty)), Some(t(*ty))], Some(Type::PRED), true),
            Op::Select(ty) => (smallvec::smallvec![Some(Type::PRED), Some(t(*ty)), Some(t(*ty))], Some(t(*ty)), true),
            Op::Cvt { to, from, .. } | Op::Bitcast { to, from } => {
                (smallvec::smallvec![Some(t(*from))], Some(t(*to)), true)
            }
            Op::Load => (smallvec::smallvec![None, None], None, true),
            Op::Store => (smallvec::smallvec![None, None, None], None, false),
            Op::Atomic(_) => (smallvec::smallvec![None, None, None], None, true),
            Op::AtomicCas => (smallvec::smallvec![None, None, None, None], None, true),
            Op::PtrOffset | Op::PtrOffsetBytes => (smallvec::smallvec![None, None], None, true),
            Op::PtrCast(to) => (smallvec::smallvec![None], Some(*to), true),
            Op::SharedAddr(_) => (smallvec::smallvec![], None, true),
            Op::Barrier => (smallvec::smallvec![], None, false),
            Op::Call(_) => (smallvec::smallvec![], None, false),
            Op::Shfl(_, ty) => {
                (smallvec::smallvec![Some(t(*ty)), Some(Type::U32), Some(Type::U32)], Some(t(*ty)), true)
            }
            Op::Vote(mode) => {
                let r = if *mode == VoteMode::Ballot { Type::U32 } else { Type::PRED };
                (smallvec::smallvec![Some(Type::PRED), Some(Type::U32)], Some(r), true)
            }
            Op::VecBuild(w, ty) => (smallvec::smallvec![Some(t(*ty)); w.len()], Some(Type::Vec(*w, *ty)), true),
            Op::VecExtract(w, ty) => {
                (smallvec::smallvec![Some(Type::Vec(*w, *ty)), Some(Type::U32)], Some(t(*ty)), true)
            }
            Op::VecInsert(w, ty) => {
                let v = Type::Vec(*w, *ty);
                (smallvec::smallvec![Some(v), Some(Type::U32), Some(t(*ty))], Some(v), true)
            }
            Op::LoadVec(_) => (smallvec::smallvec![None, None], None, true),
            Op::StoreVec(_) => (smallvec::smallvec![None, None, None], None, false),
            Op::Mma(kind) => {
                let [a, b, c] = kind.fragment_types();
                (smallvec::smallvec![Some(a), Some(b), Some(c)], Some(c), true)
            }
            Op::Ldmatrix(num, _) => (smallvec::smallvec![None, None], Some(num.result_type()), true),
            Op::CpAsync(_) => (smallvec::smallvec![None, None, None, None, Some(Type::U32)], None, false),
            Op::CpAsyncCommit => (smallvec::smallvec![], None, false),
            Op::CpAsyncWait => (smallvec::smallvec![Some(Type::U32)], None, false),
        };
        Signature { args, result, has_result }
    }
}

/// Every op the text format can spell, with every operand type its `accepts` admits and every
/// modifier combination the parser takes, in a fixed order. `PtrCast` and `SharedAddr` are given
/// with representative payloads (`ptr<global, u8>`, declaration 0). Some of these the verifier
/// rejects (e.g. `.rz` on an approx-only op); this is the syntactic set, for round-trip tests and
/// exhaustive checks.
pub fn all_ops() -> Vec<Op> {
    use ScalarType as S;
    let mut ops = Vec::new();
    for d in Dim::ALL {
        for r in [
            SpecialReg::Tid(d),
            SpecialReg::Ctaid(d),
            SpecialReg::Ntid(d),
            SpecialReg::Nctaid(d),
            SpecialReg::GlobalId(d),
        ] {
            ops.push(Op::Special(r));
        }
    }
    ops.push(Op::Special(SpecialReg::LaneId));
    ops.push(Op::Special(SpecialReg::WarpId));
    let modes = [
        FloatMode::RN,
        FloatMode::Exact(Rounding::Rz),
        FloatMode::Exact(Rounding::Rm),
        FloatMode::Exact(Rounding::Rp),
        FloatMode::Approx,
        FloatMode::Full,
    ];
    let all_flags: Vec<FloatFlags> =
        modes.iter().flat_map(|&mode| [false, true].map(move |ftz| FloatFlags { mode, ftz })).collect();
    for t in S::ALL {
        ops.push(Op::Mov(t));
        for b in BinOp::ALL {
            if !b.accepts(t) {
                continue;
            }
            if t.is_float() && b.has_float_mode() {
                for f in &all_flags {
                    ops.push(Op::Bin(b, t, *f));
                }
            } else {
                ops.push(Op::Bin(b, t, FloatFlags::RN));
            }
        }
        if t.widened().is_some() {
            ops.push(Op::MulWide(t));
        }
        if t.is_int() {
            ops.push(Op::Mad(t));
        }
        if t.is_float() {
            for f in &all_flags {
                ops.push(Op::Fma(t, *f));
            }
        }
        for u in UnOp::ALL {
            if !u.accepts(t) {
                continue;
            }
            if u.has_float_mode() {
                for f in &all_flags {
                    ops.push(Op::Unary(u, t, *f));
                }
            } else {
                ops.push(Op::Unary(u, t, FloatFlags::RN));
            }
        }
        for c in CmpOp::ALL {
            if c.accepts(t) {
                ops.push(Op::Cmp(c, t));
            }
        }
        ops.push(Op::Select(t));
        for from in S::ALL {
            if t.is_pred() || from.is_pred() {
                continue;
            }
            for rounding in std::iter::once(None).chain(Rounding::ALL.map(Some)) {
                for sat in [false, true] {
                    for ftz in [false, true] {
                        ops.push(Op::Cvt { to: t, from, rounding, sat, ftz });
                    }
                }
            }
            if t.bits() == from.bits() {
                ops.push(Op::Bitcast { to: t, from });
            }
        }
        for m in ShflMode::ALL {
            ops.push(Op::Shfl(m, t));
        }
    }
    ops.extend([
        Op::Load,
        Op::Store,
        Op::Atomic(AtomicOp::Add),
        Op::Atomic(AtomicOp::Min),
        Op::Atomic(AtomicOp::Max),
        Op::Atomic(AtomicOp::Exch),
        Op::AtomicCas,
        Op::PtrOffset,
        Op::PtrOffsetBytes,
        Op::PtrCast(Type::Ptr(crate::types::AddrSpace::Global, S::U8)),
        Op::SharedAddr(0),
        Op::Barrier,
        Op::Vote(VoteMode::All),
        Op::Vote(VoteMode::Any),
        Op::Vote(VoteMode::Ballot),
    ]);
    for t in S::ALL {
        for w in VecWidth::ALL {
            if Type::vec(w.len() as u64, t).is_ok() {
                ops.extend([Op::VecBuild(w, t), Op::VecExtract(w, t), Op::VecInsert(w, t)]);
            }
        }
    }
    for w in VecWidth::ALL {
        ops.extend([Op::LoadVec(w), Op::StoreVec(w)]);
    }
    ops.extend(MmaKind::ALL.map(Op::Mma));
    for n in LdmatrixNum::ALL {
        ops.extend([Op::Ldmatrix(n, false), Op::Ldmatrix(n, true)]);
    }
    ops.extend(CpAsyncSize::ALL.map(Op::CpAsync));
    ops.extend([Op::CpAsyncCommit, Op::CpAsyncWait]);
    ops
}
