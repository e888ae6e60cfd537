//! The decoded form of a PTX entry that the executor runs: instructions with resolved registers,
//! immediates already in their operand's bit pattern, labels turned into instruction indices,
//! symbols turned into offsets in their state space, and the reconvergence point of every branch.

use crate::float::{Approx, Arith, FCmp, FTy, Rnd};
use crate::Entry;

pub type RegId = u32;
/// "No register" (a `_` sink, or an absent second destination).
pub const NO_REG: RegId = u32::MAX;
/// Reconvergence point of a branch after which some paths never meet again (they exit).
pub const NO_PC: u32 = u32::MAX;

/// A special register (`%tid.x` ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sreg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    Laneid,
    Warpid,
    Nwarpid,
    LanemaskEq,
    LanemaskLt,
    LanemaskLe,
    LanemaskGt,
    LanemaskGe,
    Clock,
    Clock64,
    Smid,
    Nsmid,
    Gridid,
    DynamicSmemSize,
    TotalSmemSize,
}

/// An instruction source.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Src {
    Reg(RegId),
    Imm(u64),
    Sreg(Sreg),
    /// A generic address of a shared/local symbol needs the thread; only `mov`/`cvta` of a
    /// symbol produce state-space addresses, which are immediates.
    None,
}

/// A state space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Global,
    Shared,
    Local,
    Param,
    Const,
    Generic,
}

impl Space {
    pub fn name(self) -> &'static str {
        match self {
            Space::Global => "global",
            Space::Shared => "shared",
            Space::Local => "local",
            Space::Param => "param",
            Space::Const => "const",
            Space::Generic => "generic",
        }
    }
}

/// An integer type of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ITy {
    pub bits: u32,
    pub signed: bool,
}

impl ITy {
    pub fn mask(self) -> u64 {
        if self.bits >= 64 {
            u64::MAX
        } else {
            (1u64 << self.bits) - 1
        }
    }

    /// The operand's value as i128/u128-safe i128: sign- or zero-extended from `bits`.
    #[inline]
    pub fn ext(self, v: u64) -> i128 {
        if self.signed {
            let sh = 64 - self.bits;
            (((v << sh) as i64) >> sh) as i128
        } else {
            (v & self.mask()) as i128
        }
    }

    /// The value sign- or zero-extended to 64 bits.
    #[inline]
    pub fn ext64(self, v: u64) -> u64 {
        self.ext(v) as u64
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IBin {
    Add,
    AddSat,
    Sub,
    SubSat,
    MulLo,
    MulHi,
    MulWide,
    Mul24Lo,
    Mul24Hi,
    Div,
    Rem,
    Min,
    Max,
    And,
    Or,
    Xor,
    Shl,
    Shr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IUn {
    Abs,
    Neg,
    Not,
    Cnot,
    Popc,
    Clz,
    Brev,
    Bfind,
    BfindShift,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadMode {
    Lo,
    Hi,
    Wide,
    Lo24,
    Hi24,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ICmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Int(ICmp, ITy),
    Float(FCmp, FTy, bool),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
    Xor,
}

/// A value type of `cvt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CvtTy {
    Int(ITy),
    Float(FTy),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomOp {
    Add,
    Min,
    Max,
    Inc,
    Dec,
    And,
    Or,
    Xor,
    Exch,
    Cas,
}

/// The element type of an atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomTy {
    Int(ITy),
    Float(FTy),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestpKind {
    Finite,
    Infinite,
    Number,
    NotANumber,
    Normal,
    Subnormal,
}

/// A decoded instruction's operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// `d = s0` on `bits` bits.
    Mov {
        bits: u32,
    },
    /// `mov.bN d, {s0, .., s(n-1)}`: parts of `part` bits, s0 lowest.
    Pack {
        n: u32,
        part: u32,
    },
    /// `mov.bN {d0, ..}, s0`.
    Unpack {
        n: u32,
        part: u32,
    },
    IBin {
        op: IBin,
        t: ITy,
    },
    IUn {
        op: IUn,
        t: ITy,
    },
    Mad {
        mode: MadMode,
        t: ITy,
        sat: bool,
    },
    Bfe {
        t: ITy,
    },
    Bfi {
        t: ITy,
    },
    Prmt,
    /// `contractible`: written without a rounding modifier (`add.f32`, `mul.f32`), so ptxas may
    /// fuse a `mul` feeding an `add` into one `fma` (see [`crate::cfg::contract`]).
    FBin {
        op: Arith,
        t: FTy,
        rnd: Rnd,
        ftz: bool,
        sat: bool,
        contractible: bool,
    },
    /// `a*b + c` rounded once; the negations come from contracting `mul` + `sub`.
    Fma {
        t: FTy,
        rnd: Rnd,
        ftz: bool,
        sat: bool,
        neg_product: bool,
        neg_addend: bool,
    },
    FMinMax {
        t: FTy,
        max: bool,
        ftz: bool,
    },
    FAbs {
        t: FTy,
        ftz: bool,
    },
    FNeg {
        t: FTy,
        ftz: bool,
    },
    FSqrt {
        t: FTy,
        rnd: Rnd,
        ftz: bool,
    },
    FRcp {
        t: FTy,
        rnd: Rnd,
        ftz: bool,
    },
    FApprox {
        t: FTy,
        f: Approx,
        ftz: bool,
    },
    DivApprox {
        ftz: bool,
    },
    DivFull {
        ftz: bool,
    },
    Copysign {
        t: FTy,
    },
    Testp {
        t: FTy,
        kind: TestpKind,
    },
    /// `setp`: d0 = cmp(s0, s1) [bop s2], d1 (optional) = !cmp(..) [bop s2].
    Setp {
        cmp: Cmp,
        bop: Option<BoolOp>,
    },
    /// `selp.T d, a, b, c`: c ? a : b.
    Selp {
        bits: u32,
    },
    /// `cvt.rn[.relu].{f16x2,bf16x2}.f32 d, a, b`: `a` rounded into the upper half of `d`, `b`
    /// into the lower half.
    CvtPack {
        bf16: bool,
        relu: bool,
    },
    Cvt {
        from: CvtTy,
        to: CvtTy,
        rnd: Option<Rnd>,
        integral: bool,
        ftz: bool,
        sat: bool,
    },
    Cvta {
        to_generic: bool,
        space: Space,
        bits: u32,
    },
    Ld {
        space: Space,
        size: u32,
        signed: bool,
        n: u32,
    },
    St {
        space: Space,
        size: u32,
        n: u32,
    },
    Atom {
        space: Space,
        op: AtomOp,
        t: AtomTy,
        ret: bool,
    },
    Shfl {
        mode: ShflMode,
    },
    Vote {
        mode: VoteMode,
    },
    Activemask,
    /// `bar.sync` / `barrier.sync` (`arrive`: `bar.arrive`): barrier id in `src[0]`, thread count
    /// in `src[1]` when `counted`.
    Bar {
        arrive: bool,
        counted: bool,
    },
    BarWarp,
    /// `ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16`: `num` 8x8 matrices of b16, row
    /// addresses from lanes `8i..8i+7` (base register + offset), one 32-bit fragment per matrix
    /// into `dst[i]`.
    Ldmatrix {
        num: u8,
        trans: bool,
    },
    /// `mma.sync.aligned.m16n8k{8,16}.row.col.f32.{f16,bf16}.{f16,bf16}.f32` and
    /// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`: `dst` holds D's 4 registers, `wide`
    /// A's (f16/bf16: `k / 4`, tf32: `k / 2`), B's (`k / 8`, tf32: `k / 4`) and C's (4) registers
    /// in that order.
    Mma {
        k: u8,
        fmt: crate::tensor_core::Format,
    },
    /// `cp.async.{ca,cg}.shared.global [dst], [src], cp-size[, src-size]`: `base`/`offset` the
    /// shared destination, `src[0]` the global source register (`Src::Imm(0)` for none) with
    /// `src[1]` its offset, `src[2]` the bytes copied (4, 8, 16), `src[3]` the bytes read from the
    /// source (the rest zero-filled).
    CpAsync,
    /// `wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} d, a-desc, b-desc, scale-d,
    /// imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b`: `wide` holds D's `n / 2` registers,
    /// `src[0]`/`src[1]` the descriptors, `src[2]` scale-d (a predicate, `neg` bit 2).
    Wgmma {
        n: u16,
        bf16: bool,
        neg_a: bool,
        neg_b: bool,
        trans_a: bool,
        trans_b: bool,
    },
    /// `wgmma.fence.sync.aligned`.
    WgmmaFence,
    /// `wgmma.commit_group.sync.aligned` (`wait`: `wgmma.wait_group.sync.aligned N`).
    WgmmaGroup {
        wait: bool,
    },
    /// `cp.async.commit_group`.
    CpAsyncCommit,
    /// `cp.async.wait_group N` (`all`: `cp.async.wait_all`, which commits first).
    CpAsyncWait {
        n: u32,
        all: bool,
    },
    Nop,
    Bra {
        target: u32,
        uni: bool,
    },
    Exit,
    Trap,
}

/// One decoded instruction.
#[derive(Clone, Debug)]
pub struct Inst {
    pub op: Op,
    /// Guard predicate register and whether it is negated (`@!%p`).
    pub guard: Option<(RegId, bool)>,
    pub dst: [RegId; 4],
    pub src: [Src; 4],
    /// Bit i set: source i is a negated predicate (`!%p`).
    pub neg: u8,
    /// Address of a memory instruction: base register (or none) plus byte offset.
    pub base: Option<RegId>,
    pub offset: i64,
    /// 1-based PTX line.
    pub line: u32,
    /// The operand registers of an instruction with more than four sources (`mma`: A, B, C).
    pub wide: Option<Box<[RegId]>>,
}

/// A decoded entry.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub info: Entry,
    pub insts: Vec<Inst>,
    /// The instruction text as written, for fault messages (one per instruction).
    pub texts: Vec<String>,
    pub nregs: u32,
    /// Bytes of static shared memory (module- and entry-level).
    pub static_shared: u32,
    /// Offset of the `.extern .shared` array (the static size rounded up to its alignment).
    pub dynamic_shared_offset: u32,
    /// Bytes of `.local` memory per thread.
    pub local_bytes: u32,
    /// Bytes of the parameter space.
    pub param_bytes: u32,
    /// Reconvergence instruction of every instruction that is a conditional branch
    /// (`NO_PC` where the paths only meet at exit); indexed like `insts`.
    pub reconverge: Vec<u32>,
    /// Registers some path may read before writing them, zeroed before each block (`None`: all).
    pub clear_regs: Option<Vec<RegId>>,
    /// Whether the kernel has an atomic on global (or generic) memory: blocks then run in order.
    pub global_atomics: bool,
    /// The module's `.const` variables declared before this entry (constant bank, read-only).
    pub consts: std::sync::Arc<ConstImage>,
}

/// A module's constant memory: its `.const` variables laid out from offset 0 with their
/// alignment, little-endian, at most [`MAX_CONST_BYTES`] bytes. A `.const` variable's address (in
/// the `.const` state space) is its offset here.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ConstImage {
    pub bytes: Vec<u8>,
    /// Each variable: name, offset, size in bytes (in offset order).
    pub vars: Vec<(String, u32, u32)>,
}

/// Largest constant memory image of a module: 64 KiB, the size of the hardware's constant bank
/// for user `.const` data.
pub const MAX_CONST_BYTES: u32 = 64 * 1024;

impl ConstImage {
    /// A description of constant offset `off` for fault messages: the variable it falls in or
    /// follows.
    pub fn describe(&self, off: u64) -> String {
        match self.vars.iter().rev().find(|v| v.1 as u64 <= off) {
            Some((n, o, s)) if off < (*o + *s) as u64 => format!("`{n}`+{}", off - *o as u64),
            Some((n, o, s)) => {
                format!("{} bytes past the end of `{n}` ({s} bytes at offset {o})", off - (*o + *s) as u64)
            }
            None => "before every `.const` variable".into(),
        }
    }
}

impl std::fmt::Debug for ConstImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ConstImage({} bytes, {:?})", self.bytes.len(), self.vars)
    }
}

/// Everything a module holds.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub kernels: Vec<Kernel>,
    /// The `XX` of the module's `.target sm_XX[a]` (none without an `sm_` target).
    pub sm: Option<u32>,
}
