//! The op mnemonic table: the one place where the text format spells each op. The printer
//! ([`Op::mnemonic`]) and the parser ([`parse`], which `text::parse::parse_mnemonic` is) both walk
//! [`FAMILIES`].
//!
//! Guarantees:
//! - Each op family is one [`Family`]: the words its mnemonic starts with ([`Head`]), the shape of
//!   what follows ([`Shape`]), and the two functions between its ops and their spelled [`Fields`].
//!   The printer spells an op by the first family whose `split` takes it (every op has one); the
//!   parser picks the family by the longest head that starts the spelling and reads the rest by
//!   the family's shape. Words naming a sub-op (`add`, `down`, `x`, `rz`) are the sub-op's `name()`.
//! - For every op `o`, `parse(&o.mnemonic(), annot) == Ok(o)`, where `ptrcast` takes its pointer type
//!   from the annotation and `addr` and `call` read as payload 0 (the caller sets it).
//! - No two families have the same head, and no spelling is accepted by two families (both tested
//!   in `ir/tests/mnemonics.rs`, with the accepted non-canonical spellings and the exact message of
//!   each kind of rejected spelling).
//! - [`parse`] never panics: a rejected spelling gets a message naming it (unknown op, a missing or
//!   unknown type, an unexpected modifier, an unknown mode word, a wrong number of parts).

use crate::op::*;
use crate::types::{ScalarType, Type, VecWidth};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::fmt;
use std::sync::OnceLock;

/// The float modifier words besides the roundings, and cvt's saturation.
const APPROX: &str = "approx";
const FULL: &str = "full";
const FTZ: &str = "ftz";
const SAT: &str = "sat";

/// A closed set of values, each spelled by one word: a sub-op (`BinOp`, `ShflMode`, ...), a
/// dimension or a rounding.
pub trait Word: Copy + PartialEq + 'static {
    /// Every value, in the order error messages list them.
    const VALUES: &'static [Self];
    fn word(self) -> &'static str;
}

macro_rules! words_by_name {
    ($($t:ty => $values:expr),* $(,)?) => {$(
        impl Word for $t {
            const VALUES: &'static [Self] = &$values;
            fn word(self) -> &'static str {
                self.name()
            }
        }
    )*};
}

words_by_name! {
    Dim => Dim::ALL,
    Rounding => Rounding::ALL,
    BinOp => ONE_WORD_BINOPS,
    UnOp => UnOp::ALL,
    CmpOp => CmpOp::ALL,
    ShflMode => ShflMode::ALL,
    VoteMode => VoteMode::ALL,
    VecWidth => VecWidth::ALL,
    LdmatrixNum => LdmatrixNum::ALL,
    CpAsyncSize => CpAsyncSize::ALL,
}

/// The input formats of `mma.m16n8k16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaK16(pub MmaKind);

/// The input formats of `mma.m16n8k8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaK8(pub MmaKind);

impl Word for MmaK16 {
    const VALUES: &'static [Self] = &[MmaK16(MmaKind::F16), MmaK16(MmaKind::Bf16)];
    fn word(self) -> &'static str {
        self.0.name()
    }
}

impl Word for MmaK8 {
    const VALUES: &'static [Self] = &[MmaK8(MmaKind::Tf32)];
    fn word(self) -> &'static str {
        self.0.name()
    }
}

/// The binary ops spelled by one word: all but `mul.hi`, a family of its own (it takes no float
/// modifiers and has a fixed length). Built from `BinOp::ALL`, so a new `BinOp` joins it.
const ONE_WORD_BINOPS: [BinOp; BinOp::ALL.len() - 1] = {
    let mut out = [BinOp::Add; BinOp::ALL.len() - 1];
    let (mut i, mut j) = (0, 0);
    while i < BinOp::ALL.len() {
        if !matches!(BinOp::ALL[i], BinOp::MulHi) {
            out[j] = BinOp::ALL[i];
            j += 1;
        }
        i += 1;
    }
    out
};

/// The word after `atom`: a read-modify-write op, or `cas` ([`Op::AtomicCas`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomWord {
    Rmw(AtomicOp),
    Cas,
}

impl Word for AtomWord {
    const VALUES: &'static [Self] = &{
        let mut out = [AtomWord::Cas; AtomicOp::ALL.len() + 1];
        let mut i = 0;
        while i < AtomicOp::ALL.len() {
            out[i] = AtomWord::Rmw(AtomicOp::ALL[i]);
            i += 1;
        }
        out
    };
    fn word(self) -> &'static str {
        match self {
            AtomWord::Rmw(a) => a.name(),
            AtomWord::Cas => "cas",
        }
    }
}

/// The word of value `i` of `W` (`i < W::VALUES.len()`, as [`WordSet`] guarantees).
fn word_at<W: Word>(i: usize) -> &'static str {
    W::VALUES[i].word()
}

/// Value `i` of `W`: `i` is an index the parser found in the family's word set, which is `W`'s
/// (the round-trip test reads every word of every family).
fn pick<W: Word>(i: usize) -> W {
    W::VALUES[i]
}

/// The index of `w` among `W`'s words.
fn index<W: Word>(w: W) -> Option<usize> {
    W::VALUES.iter().position(|v| *v == w)
}

/// The value of `W` spelled `s`.
fn find<W: Word>(s: &str) -> Option<W> {
    W::VALUES.iter().copied().find(|v| v.word() == s)
}

/// A [`Word`] set with its type erased, as a family names it; a chosen word is its index.
#[derive(Clone, Copy)]
pub struct WordSet {
    /// What a word names, for the error on an unknown one ("shuffle mode").
    pub what: &'static str,
    len: usize,
    word: fn(usize) -> &'static str,
}

impl WordSet {
    pub const fn of<W: Word>(what: &'static str) -> WordSet {
        WordSet { what, len: W::VALUES.len(), word: word_at::<W> }
    }
    pub fn words(&self) -> impl Iterator<Item = &'static str> {
        (0..self.len).map(self.word)
    }
    fn find(&self, s: &str) -> Option<usize> {
        self.words().position(|w| w == s)
    }
}

impl fmt::Debug for WordSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.words()).finish()
    }
}

/// `a, b or c`, each word wrapped in `quote`.
fn one_of(words: impl Iterator<Item = &'static str>, quote: &str) -> String {
    let words: Vec<String> = words.map(|w| format!("{quote}{w}{quote}")).collect();
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => words.concat(),
    }
}

/// How a mnemonic starts.
#[derive(Clone, Copy, Debug)]
pub enum Head {
    /// Fixed words: `mov`, `mul.wide`.
    Words(&'static [&'static str]),
    /// One word naming a sub-op (`add`, `sqrt`, `eq`): it is [`Fields::word`].
    Sub(WordSet),
}

/// One part of a fixed-length shape.
#[derive(Clone, Copy, Debug)]
pub enum Slot {
    /// `x`, `y` or `z`: [`Fields::dim`].
    Dim,
    /// A type: [`Fields::ty`].
    Ty,
    /// A second type, the source of a conversion: [`Fields::from`].
    From,
    /// A word of the set: [`Fields::word`].
    Mode(WordSet),
}

/// What follows the head.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// Exactly these slots (none: the head alone).
    Fixed(&'static [Slot]),
    /// `[.rnd|.approx|.full][.ftz].T` ([`Fields::flags`], [`Fields::ty`]); the modifiers only
    /// where the function says so of the op (its sub-op and type), none otherwise. `rnd` is one of
    /// `rn` (the default, not printed), `rz`, `rm`, `rp`.
    Float(fn(&Fields) -> bool),
    /// `.rnd`, `.sat` and `.ftz` in any order (printed in this one), each at most once, then
    /// `.TO.FROM`; `rnd` is any rounding ([`Fields::rounding`], [`Fields::sat`], [`Fields::ftz`]).
    Cvt,
    /// The word or nothing ([`Fields::flag`]).
    Flag(&'static str),
    /// Nothing: the pointer type comes from the instruction's annotation ([`Fields::ptr`]).
    Annotated,
    /// A word of the set ([`Fields::word`]), then the flag word or nothing ([`Fields::flag`]):
    /// `ldmatrix.x4[.trans]`.
    ModeFlag(WordSet, &'static str),
}

/// What a mnemonic spells besides its family. Each shape reads and writes only its own fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    /// The index of the word chosen from the family's word set (its head's or its `Mode` slot's).
    pub word: usize,
    pub dim: Dim,
    pub ty: ScalarType,
    pub from: ScalarType,
    pub flags: FloatFlags,
    pub rounding: Option<Rounding>,
    pub sat: bool,
    pub ftz: bool,
    pub flag: bool,
    pub ptr: Type,
}

impl Fields {
    /// Every field at its default; a family's `split` sets those its shape spells.
    pub const NONE: Fields = Fields {
        word: 0,
        dim: Dim::X,
        ty: ScalarType::U32,
        from: ScalarType::U32,
        flags: FloatFlags::RN,
        rounding: None,
        sat: false,
        ftz: false,
        flag: false,
        ptr: Type::U32,
    };
    const fn dim(dim: Dim) -> Option<Fields> {
        Some(Fields { dim, ..Fields::NONE })
    }
    const fn ty(ty: ScalarType) -> Option<Fields> {
        Some(Fields { ty, ..Fields::NONE })
    }
    fn word<W: Word>(w: W) -> Option<Fields> {
        Some(Fields { word: index(w)?, ..Fields::NONE })
    }
    const NO_FIELDS: Option<Fields> = Some(Fields::NONE);
}

/// One op family of the text format.
pub struct Family {
    pub head: Head,
    pub shape: Shape,
    /// The op a spelling's fields stand for.
    pub build: fn(&Fields) -> Op,
    /// The fields of an op of this family; `None` for an op of another family.
    pub split: fn(&Op) -> Option<Fields>,
}

/// The head alone.
const BARE: Shape = Shape::Fixed(&[]);
const DIM: Shape = Shape::Fixed(&[Slot::Dim]);
const TY: Shape = Shape::Fixed(&[Slot::Ty]);

const fn family(
    head: &'static [&'static str],
    shape: Shape,
    build: fn(&Fields) -> Op,
    split: fn(&Op) -> Option<Fields>,
) -> Family {
    Family { head: Head::Words(head), shape, build, split }
}

const fn sub_family(head: WordSet, shape: Shape, build: fn(&Fields) -> Op, split: fn(&Op) -> Option<Fields>) -> Family {
    Family { head: Head::Sub(head), shape, build, split }
}

/// Every op family, each once.
pub static FAMILIES: &[Family] = &[
    // Thread identity.
    family(
        &["tid"],
        DIM,
        |f| Op::Special(SpecialReg::Tid(f.dim)),
        |op| if let Op::Special(SpecialReg::Tid(d)) = op { Fields::dim(*d) } else { None },
    ),
    family(
        &["ctaid"],
        DIM,
        |f| Op::Special(SpecialReg::Ctaid(f.dim)),
        |op| if let Op::Special(SpecialReg::Ctaid(d)) = op { Fields::dim(*d) } else { None },
    ),
    family(
        &["ntid"],
        DIM,
        |f| Op::Special(SpecialReg::Ntid(f.dim)),
        |op| if let Op::Special(SpecialReg::Ntid(d)) = op { Fields::dim(*d) } else { None },
    ),
    family(
        &["nctaid"],
        DIM,
        |f| Op::Special(SpecialReg::Nctaid(f.dim)),
        |op| if let Op::Special(SpecialReg::Nctaid(d)) = op { Fields::dim(*d) } else { None },
    ),
    family(
        &["global_id"],
        DIM,
        |f| Op::Special(SpecialReg::GlobalId(f.dim)),
        |op| if let Op::Special(SpecialReg::GlobalId(d)) = op { Fields::dim(*d) } else { None },
    ),
    family(
        &["laneid"],
        BARE,
        |_| Op::Special(SpecialReg::LaneId),
        |op| if let Op::Special(SpecialReg::LaneId) = op { Fields::NO_FIELDS } else { None },
    ),
    family(
        &["warpid"],
        BARE,
        |_| Op::Special(SpecialReg::WarpId),
        |op| if let Op::Special(SpecialReg::WarpId) = op { Fields::NO_FIELDS } else { None },
    ),
    // Arithmetic.
    family(&["mov"], TY, |f| Op::Mov(f.ty), |op| if let Op::Mov(t) = op { Fields::ty(*t) } else { None }),
    sub_family(
        WordSet::of::<BinOp>("op"),
        Shape::Float(|f| f.ty.is_float() && pick::<BinOp>(f.word).has_float_mode()),
        |f| Op::Bin(pick(f.word), f.ty, f.flags),
        |op| match *op {
            Op::Bin(b, ty, flags) => Some(Fields { word: index(b)?, ty, flags, ..Fields::NONE }),
            _ => None,
        },
    ),
    family(
        &["mul", "hi"],
        TY,
        |f| Op::Bin(BinOp::MulHi, f.ty, FloatFlags::RN),
        |op| if let Op::Bin(BinOp::MulHi, t, _) = op { Fields::ty(*t) } else { None },
    ),
    family(
        &["mul", "wide"],
        TY,
        |f| Op::MulWide(f.ty),
        |op| if let Op::MulWide(t) = op { Fields::ty(*t) } else { None },
    ),
    family(&["mad"], TY, |f| Op::Mad(f.ty), |op| if let Op::Mad(t) = op { Fields::ty(*t) } else { None }),
    family(
        &["fma"],
        Shape::Float(|_| true),
        |f| Op::Fma(f.ty, f.flags),
        |op| if let Op::Fma(ty, flags) = *op { Some(Fields { ty, flags, ..Fields::NONE }) } else { None },
    ),
    sub_family(
        WordSet::of::<UnOp>("op"),
        Shape::Float(|f| pick::<UnOp>(f.word).has_float_mode()),
        |f| Op::Unary(pick(f.word), f.ty, f.flags),
        |op| match *op {
            Op::Unary(u, ty, flags) => Some(Fields { word: index(u)?, ty, flags, ..Fields::NONE }),
            _ => None,
        },
    ),
    sub_family(
        WordSet::of::<CmpOp>("comparison"),
        TY,
        |f| Op::Cmp(pick(f.word), f.ty),
        |op| match *op {
            Op::Cmp(c, ty) => Some(Fields { word: index(c)?, ty, ..Fields::NONE }),
            _ => None,
        },
    ),
    family(&["select"], TY, |f| Op::Select(f.ty), |op| if let Op::Select(t) = op { Fields::ty(*t) } else { None }),
    // Conversions.
    family(
        &["cvt"],
        Shape::Cvt,
        |f| Op::Cvt { to: f.ty, from: f.from, rounding: f.rounding, sat: f.sat, ftz: f.ftz },
        |op| match *op {
            Op::Cvt { to, from, rounding, sat, ftz } => {
                Some(Fields { ty: to, from, rounding, sat, ftz, ..Fields::NONE })
            }
            _ => None,
        },
    ),
    family(
        &["bitcast"],
        Shape::Fixed(&[Slot::Ty, Slot::From]),
        |f| Op::Bitcast { to: f.ty, from: f.from },
        |op| match *op {
            Op::Bitcast { to, from } => Some(Fields { ty: to, from, ..Fields::NONE }),
            _ => None,
        },
    ),
    // Memory.
    family(&["load"], BARE, |_| Op::Load, |op| if let Op::Load = op { Fields::NO_FIELDS } else { None }),
    family(&["store"], BARE, |_| Op::Store, |op| if let Op::Store = op { Fields::NO_FIELDS } else { None }),
    family(
        &["atom"],
        Shape::Fixed(&[Slot::Mode(WordSet::of::<AtomWord>("atomic operation"))]),
        |f| match pick::<AtomWord>(f.word) {
            AtomWord::Rmw(a) => Op::Atomic(a),
            AtomWord::Cas => Op::AtomicCas,
        },
        |op| match *op {
            Op::Atomic(a) => Fields::word(AtomWord::Rmw(a)),
            Op::AtomicCas => Fields::word(AtomWord::Cas),
            _ => None,
        },
    ),
    family(
        &["offset"],
        Shape::Flag("bytes"),
        |f| if f.flag { Op::PtrOffsetBytes } else { Op::PtrOffset },
        |op| match op {
            Op::PtrOffset => Fields::NO_FIELDS,
            Op::PtrOffsetBytes => Some(Fields { flag: true, ..Fields::NONE }),
            _ => None,
        },
    ),
    family(
        &["ptrcast"],
        Shape::Annotated,
        |f| Op::PtrCast(f.ptr),
        |op| if let Op::PtrCast(ptr) = *op { Some(Fields { ptr, ..Fields::NONE }) } else { None },
    ),
    family(
        &["addr"],
        BARE,
        |_| Op::SharedAddr(0),
        |op| if let Op::SharedAddr(_) = op { Fields::NO_FIELDS } else { None },
    ),
    // Synchronization, calls and warp collectives.
    family(&["barrier"], BARE, |_| Op::Barrier, |op| if let Op::Barrier = op { Fields::NO_FIELDS } else { None }),
    family(&["call"], BARE, |_| Op::Call(0), |op| if let Op::Call(_) = op { Fields::NO_FIELDS } else { None }),
    family(
        &["shfl"],
        Shape::Fixed(&[Slot::Mode(WordSet::of::<ShflMode>("shuffle mode")), Slot::Ty]),
        |f| Op::Shfl(pick(f.word), f.ty),
        |op| match *op {
            Op::Shfl(m, ty) => Some(Fields { word: index(m)?, ty, ..Fields::NONE }),
            _ => None,
        },
    ),
    family(
        &["vote"],
        Shape::Fixed(&[Slot::Mode(WordSet::of::<VoteMode>("vote mode"))]),
        |f| Op::Vote(pick(f.word)),
        |op| if let Op::Vote(m) = *op { Fields::word(m) } else { None },
    ),
    // Vectors.
    family(
        &["vec"],
        Shape::Fixed(&[Slot::Mode(WordSet::of::<VecWidth>("vector width")), Slot::Ty]),
        |f| Op::VecBuild(pick(f.word), f.ty),
        |op| match *op {
            Op::VecBuild(w, ty) => Some(Fields { word: index(w)?, ty, ..Fields::NONE }),
            _ => None,
        },
    ),
    family(
        &["extract"],
        Shape::Fixed(&[Slot::Mode(WordSet::of::<VecWidth>("vector width")), Slot::Ty]),
        |f| Op::VecExtract(pick(f.word), f.ty),
        |op| match *op {
            Op::VecExtract(w, ty) => Some(Fields { word: index(w)?, ty, ..Fields::NONE }),
            _ => None,
        },
    ),
    family(
        &["insert"],
        Shape::Fixed(&[Slot::Mode(WordSet::of::<VecWidth>("vector width")), Slot::Ty]),
        |f| Op::VecInsert(pick(f.word), f.ty),
        |op| match *op {
            Op::VecInsert(w, ty) => Some(Fields { word: index(w)?, ty, ..Fields::NONE }),
            _ => None,
        },
    ),
    family(
        &["load", "v2"],
        BARE,
        |_| Op::LoadVec(VecWidth::V2),
        |op| if let Op::LoadVec(VecWidth::V2) = op { Fields::NO_FIELDS } else { None },
    ),
    family(
        &["load", "v4"],
        BARE,
        |_| Op::LoadVec(VecWidth::V4),
        |op| if let Op::LoadVec(VecWidth::V4) = op { Fields::NO_FIELDS } else { None },
    ),
    family(
        &["store", "v2"],
        BARE,
        |_| Op::StoreVec(VecWidth::V2),
        |op| if let Op::StoreVec(VecWidth::V2) = op { Fields::NO_FIELDS } else { None },
    ),
    family(
        &["store", "v4"],
        BARE,
        |_| Op::StoreVec(VecWidth::V4),
        |op| if let Op::StoreVec(VecWidth::V4) = op { Fields::NO_FIELDS } else { None },
    ),
    // Tensor cores and asynchronous copies.
    family(
        &["mma", "m16n8k16"],
        Shape::Fixed(&[Slot::Mode(WordSet::of::<MmaK16>("`mma.m16n8k16` input type"))]),
        |f| Op::Mma(pick::<MmaK16>(f.word).0),
        |op| match *op {
            Op::Mma(k @ (MmaKind::F16 | MmaKind::Bf16)) => Fields::word(MmaK16(k)),
            _ => None,
        },
    ),
    family(
        &["mma", "m16n8k8"],
        Shape::Fixed(&[Slot::Mode(WordSet::of::<MmaK8>("`mma.m16n8k8` input type"))]),
        |f| Op::Mma(pick::<MmaK8>(f.word).0),
        |op| match *op {
            Op::Mma(k @ MmaKind::Tf32) => Fields::word(MmaK8(k)),
            _ => None,
        },
    ),
    family(
        &["ldmatrix"],
        Shape::ModeFlag(WordSet::of::<LdmatrixNum>("matrix count"), "trans"),
        |f| Op::Ldmatrix(pick(f.word), f.flag),
        |op| match *op {
            Op::Ldmatrix(n, trans) => Some(Fields { word: index(n)?, flag: trans, ..Fields::NONE }),
            _ => None,
        },
    ),
    family(
        &["cp", "async"],
        Shape::Fixed(&[Slot::Mode(WordSet::of::<CpAsyncSize>("copy size in bytes"))]),
        |f| Op::CpAsync(pick(f.word)),
        |op| if let Op::CpAsync(n) = *op { Fields::word(n) } else { None },
    ),
    family(
        &["cp", "async", "commit"],
        BARE,
        |_| Op::CpAsyncCommit,
        |op| if let Op::CpAsyncCommit = op { Fields::NO_FIELDS } else { None },
    ),
    family(
        &["cp", "async", "wait"],
        BARE,
        |_| Op::CpAsyncWait,
        |op| if let Op::CpAsyncWait = op { Fields::NO_FIELDS } else { None },
    ),
];

impl Family {
    /// How many parts of `parts` the head takes, and the sub-op word it names; `None` when the
    /// spelling does not start with this family's head.
    pub fn head_match(&self, parts: &[&str]) -> Option<(usize, usize)> {
        match self.head {
            Head::Words(words) => parts.starts_with(words).then_some((words.len(), 0)),
            Head::Sub(set) => Some((1, set.find(parts.first()?)?)),
        }
    }

    /// The head's words joined, for messages (the first head of a sub-op family).
    fn head_text(&self) -> String {
        self.heads().first().map(|h| h.join(".")).unwrap_or_default()
    }

    /// The heads the family answers to, as their parts.
    pub fn heads(&self) -> Vec<Vec<&'static str>> {
        match self.head {
            Head::Words(words) => vec![words.to_vec()],
            Head::Sub(set) => set.words().map(|w| vec![w]).collect(),
        }
    }

    /// Reads `m` as an op of this family; `None` when `m` does not start with its head.
    pub fn parse(&self, m: &str, annot: Option<Type>) -> Option<Result<Op, String>> {
        let parts: SmallVec<[&str; 6]> = m.split('.').collect();
        let (n, word) = self.head_match(&parts)?;
        Some(self.read(m, &parts[n..], Fields { word, ..Fields::NONE }, annot))
    }

    /// Reads the parts after the head (`tail`) by the family's shape.
    fn read(&self, m: &str, tail: &[&str], mut f: Fields, annot: Option<Type>) -> Result<Op, String> {
        let ty = |p: &str| ScalarType::from_name(p).ok_or_else(|| format!("unknown type `{p}` in `{m}`"));
        let unexpected = |md: &str| format!("unexpected modifier `.{md}` in `{m}`");
        let exact_len = |n: usize| match tail.len().cmp(&n) {
            std::cmp::Ordering::Equal => Ok(()),
            std::cmp::Ordering::Less => Err(format!("`{m}` is missing a modifier or type suffix")),
            std::cmp::Ordering::Greater => Err(format!("`{m}` has unexpected modifiers")),
        };
        match self.shape {
            Shape::Fixed(slots) => {
                exact_len(slots.len())?;
                for (slot, part) in slots.iter().zip(tail) {
                    match slot {
                        Slot::Dim => {
                            f.dim = find(part).ok_or_else(|| {
                                format!(
                                    "`{m}`: the dimension must be {}",
                                    one_of(WordSet::of::<Dim>("dimension").words(), "`")
                                )
                            })?
                        }
                        Slot::Ty => f.ty = ty(part)?,
                        Slot::From => f.from = ty(part)?,
                        Slot::Mode(set) => {
                            f.word = set.find(part).ok_or_else(|| {
                                format!("unknown {} `{part}` (expected {})", set.what, one_of(set.words(), ""))
                            })?
                        }
                    }
                }
            }
            Shape::Float(takes_flags) => {
                let Some((last, mods)) = tail.split_last() else {
                    return Err(format!("`{m}` needs a type suffix (e.g. `{m}.u32`)"));
                };
                f.ty = ty(last)?;
                if takes_flags(&f) {
                    f.flags = float_flags(mods).map_err(unexpected)?;
                } else if let Some(md) = mods.first() {
                    return Err(unexpected(md));
                }
            }
            Shape::Cvt => {
                let [mods @ .., to, from] = tail else {
                    let head = self.head_text();
                    return Err(format!("`{m}` needs a destination and a source type (e.g. `{head}.f32.u32`)"));
                };
                f.ty = ty(to)?;
                f.from = ty(from)?;
                for md in mods {
                    match *md {
                        SAT if !f.sat => f.sat = true,
                        FTZ if !f.ftz => f.ftz = true,
                        r if f.rounding.is_none() && find::<Rounding>(r).is_some() => f.rounding = find(r),
                        other => return Err(unexpected(other)),
                    }
                }
            }
            Shape::Flag(word) => match tail {
                [] => {}
                [w] if *w == word => f.flag = true,
                [w] => {
                    let head = self.head_text();
                    return Err(format!("{} (did you mean `{head}.{word}`?)", unexpected(w)));
                }
                _ => exact_len(1)?,
            },
            Shape::ModeFlag(set, word) => {
                let Some((first, rest)) = tail.split_first() else {
                    return Err(format!("`{m}` needs a {} ({})", set.what, one_of(set.words(), "`")));
                };
                f.word = set
                    .find(first)
                    .ok_or_else(|| format!("unknown {} `{first}` (expected {})", set.what, one_of(set.words(), "")))?;
                match rest {
                    [] => {}
                    [w] if *w == word => f.flag = true,
                    [w] => return Err(unexpected(w)),
                    _ => return Err(format!("`{m}` has unexpected modifiers")),
                }
            }
            Shape::Annotated => {
                exact_len(0)?;
                match annot {
                    Some(t @ Type::Ptr(..)) => f.ptr = t,
                    _ => {
                        let head = self.head_text();
                        return Err(format!(
                            "`{head}` needs the target pointer type: `%q = {head} %p : ptr<global, u8>`"
                        ));
                    }
                }
            }
        }
        Ok((self.build)(&f))
    }

    /// Writes the mnemonic of the op whose fields are `f`.
    fn spell(&self, f: &Fields, s: &mut String) {
        match self.head {
            Head::Words(words) => {
                for (i, w) in words.iter().enumerate() {
                    if i > 0 {
                        s.push('.');
                    }
                    s.push_str(w);
                }
            }
            Head::Sub(set) => s.push_str((set.word)(f.word)),
        }
        let mut push = |w: &str| {
            s.push('.');
            s.push_str(w);
        };
        match self.shape {
            Shape::Fixed(slots) => {
                for slot in slots {
                    push(match slot {
                        Slot::Dim => f.dim.word(),
                        Slot::Ty => f.ty.name(),
                        Slot::From => f.from.name(),
                        Slot::Mode(set) => (set.word)(f.word),
                    })
                }
            }
            Shape::Float(takes_flags) => {
                if takes_flags(f) {
                    match f.flags.mode {
                        FloatMode::Exact(Rounding::Rn) => {}
                        FloatMode::Exact(r) => push(r.word()),
                        FloatMode::Approx => push(APPROX),
                        FloatMode::Full => push(FULL),
                    }
                    if f.flags.ftz {
                        push(FTZ);
                    }
                }
                push(f.ty.name());
            }
            Shape::Cvt => {
                if let Some(r) = f.rounding {
                    push(r.word());
                }
                if f.sat {
                    push(SAT);
                }
                if f.ftz {
                    push(FTZ);
                }
                push(f.ty.name());
                push(f.from.name());
            }
            Shape::Flag(word) => {
                if f.flag {
                    push(word)
                }
            }
            Shape::ModeFlag(set, word) => {
                push((set.word)(f.word));
                if f.flag {
                    push(word)
                }
            }
            Shape::Annotated => {}
        }
    }
}

/// The float modifiers `[.rnd|.approx|.full][.ftz]` (`rnd` not integral); the error is the first
/// word out of place.
fn float_flags<'a>(mods: &[&'a str]) -> Result<FloatFlags, &'a str> {
    let mut flags = FloatFlags::RN;
    let mut seen_mode = false;
    for (i, md) in mods.iter().enumerate() {
        let mode = match *md {
            FTZ if i == mods.len() - 1 => {
                flags.ftz = true;
                continue;
            }
            APPROX => Some(FloatMode::Approx),
            FULL => Some(FloatMode::Full),
            r => find::<Rounding>(r).filter(|r| !r.is_integral()).map(FloatMode::Exact),
        };
        match mode {
            Some(mode) if !seen_mode => {
                flags.mode = mode;
                seen_mode = true;
            }
            _ => return Err(md),
        }
    }
    Ok(flags)
}

/// The families (as indices into [`FAMILIES`]) by the first word of each of their heads.
fn by_first_word() -> &'static FxHashMap<&'static str, SmallVec<[usize; 2]>> {
    static INDEX: OnceLock<FxHashMap<&'static str, SmallVec<[usize; 2]>>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index: FxHashMap<&'static str, SmallVec<[usize; 2]>> = FxHashMap::default();
        for (i, fam) in FAMILIES.iter().enumerate() {
            for head in fam.heads() {
                index.entry(head[0]).or_default().push(i);
            }
        }
        index
    })
}

/// Reads a mnemonic: the family whose head is the longest that starts `m`, then the rest by its
/// shape. `ptrcast` takes its type from `annot`; `addr` and `call` read as payload 0.
pub fn parse(m: &str, annot: Option<Type>) -> Result<Op, String> {
    let parts: SmallVec<[&str; 6]> = m.split('.').collect();
    let candidates = by_first_word().get(parts[0]).map_or(&[][..], |c| &c[..]);
    let found = candidates
        .iter()
        .filter_map(|&i| FAMILIES[i].head_match(&parts).map(|(n, word)| (&FAMILIES[i], n, word)))
        .max_by_key(|&(_, n, _)| n);
    let Some((fam, n, word)) = found else {
        return Err(format!("unknown op `{m}`"));
    };
    fam.read(m, &parts[n..], Fields { word, ..Fields::NONE }, annot)
}

impl Op {
    /// The op's textual mnemonic, as the parser accepts it (without operands).
    pub fn mnemonic(&self) -> String {
        let mut s = String::new();
        match FAMILIES.iter().find_map(|fam| Some((fam, (fam.split)(self)?))) {
            Some((fam, fields)) => fam.spell(&fields, &mut s),
            // Not reached: every op has a family (`every_op_has_one_family` in ir/tests/mnemonics.rs).
            None => s = format!("{self:?}"),
        }
        s
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.mnemonic())
    }
}
