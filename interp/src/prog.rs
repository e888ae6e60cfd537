//! The execution form of a kernel: resolved once per launch so the hot loop does no hashing or
//! allocation.
//!
//! Guarantees:
//! - Every operand is a register slot: SSA values use their `ValueId` index, each distinct constant
//!   gets one broadcast slot after them ([`Prog::consts`]). Every slot index is `< Prog::nslots`.
//! - No instruction's result slot is one of its operand slots (so a warp can read operands and write
//!   the result in one register file without copying).
//! - Every block call names an existing block with as many arguments as it has parameters; every
//!   block knows its immediate post-dominator ([`EXIT`] when it is the virtual exit), where
//!   divergent lanes reconverge.
//! - A structurally malformed kernel (dangling value or block, wrong operand count, memory op on a
//!   non-pointer) is an [`crate::ErrorKind::InvalidLaunch`] error, never a panic. Type errors beyond
//!   that are the verifier's business; `kir run` verifies before launching.

use crate::error::InterpError;
use kir_ir::cfg::Cfg;
use kir_ir::op::{AtomicOp, Op, ShflMode, SpecialReg, VoteMode};
use kir_ir::types::{AddrSpace, ScalarType, Type};
use kir_ir::{BlockCall, Kernel, Operand, Span, Terminator};
use std::collections::HashMap;

/// The reconvergence "block" of paths whose immediate post-dominator is the virtual exit.
pub(crate) const EXIT: u32 = u32::MAX;
/// No result slot.
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// How a memory instruction addresses memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemAccess {
    pub space: AddrSpace,
    pub elem: ScalarType,
    /// Element size in bytes.
    pub size: u32,
    /// Type of the index operand (sign-extended when signed).
    pub idx_ty: ScalarType,
    /// `64 - bits` of a signed index type (the shift that sign-extends it), 0 for unsigned.
    pub idx_shift: u32,
}

#[derive(Clone, Debug)]
pub(crate) enum XOp {
    /// A pure op, evaluated by `kir_ir::eval`.
    Pure(Op),
    Special(SpecialReg),
    Load(MemAccess),
    Store(MemAccess),
    Atomic(AtomicOp, MemAccess),
    Cas(MemAccess),
    /// `offset` / `offset.bytes`: pointer plus index times `scale` bytes.
    Offset {
        scale: u64,
        idx_ty: ScalarType,
    },
    /// `ptrcast`: same bits.
    Copy,
    /// `addr @decl`: the base pointer of shared declaration `n`.
    SharedAddr(u32),
    Barrier,
    Shfl(ShflMode),
    Vote(VoteMode),
}

#[derive(Clone, Debug)]
pub(crate) struct XInst {
    pub op: XOp,
    pub args: [u32; 4],
    pub nargs: u8,
    pub res: u32,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub(crate) struct XEdge {
    pub block: u32,
    /// Parallel copy `(dst, src)` onto the target's parameters.
    pub moves: Vec<(u32, u32)>,
}

#[derive(Clone, Debug)]
pub(crate) enum XTerm {
    Ret,
    Jmp(XEdge),
    Br { cond: u32, then_: XEdge, else_: XEdge },
}

#[derive(Clone, Debug)]
pub(crate) struct XBlock {
    pub insts: Vec<XInst>,
    pub term: XTerm,
    pub ipdom: u32,
    pub name: String,
    pub span: Span,
    pub term_span: Span,
}

/// A kernel ready to execute.
#[derive(Clone, Debug)]
pub(crate) struct Prog {
    pub blocks: Vec<XBlock>,
    pub nslots: usize,
    /// Broadcast constant slots and their bits.
    pub consts: Vec<(u32, u64)>,
    /// Slot of each kernel parameter.
    pub params: Vec<u32>,
    /// Whether some atomic operates on global memory (blocks then run one at a time, in order).
    pub global_atomics: bool,
    /// Whether any instruction touches shared memory.
    pub uses_shared: bool,
    /// log2 of the race-shadow granule of global and of shared memory: the smallest element size
    /// of a load or store there (8 bytes when there is none). Every such access is aligned to its
    /// size, a multiple of the granule, so all bytes of a granule are always accessed together and
    /// one shadow entry per granule records exactly what one per byte would.
    pub race_shift: [u32; 2],
}

fn malformed(span: Span, msg: impl Into<String>) -> InterpError {
    InterpError::invalid(format!("malformed kernel: {} (run `kir check`)", msg.into())).at(span, "here")
}

impl Prog {
    pub fn new(k: &Kernel) -> Result<Prog, InterpError> {
        if k.blocks.is_empty() {
            return Err(InterpError::invalid(format!("kernel @{} has no blocks", k.name)));
        }
        let nvalues = k.values.len();
        let mut consts: Vec<(u32, u64)> = Vec::new();
        let mut const_slot: HashMap<u64, u32> = HashMap::new();
        let mut slot_of = |o: Operand, span: Span| -> Result<u32, InterpError> {
            match o {
                Operand::Value(v) if v.index() < nvalues => Ok(v.0),
                Operand::Value(_) => Err(malformed(span, "operand names an undefined value")),
                Operand::Const(c) => {
                    let next = (nvalues + consts.len()) as u32;
                    Ok(*const_slot.entry(c.bits).or_insert_with(|| {
                        consts.push((next, c.bits));
                        next
                    }))
                }
            }
        };
        let cfg = Cfg::new(k);
        let nblocks = k.blocks.len();
        let mut blocks = Vec::with_capacity(nblocks);
        let mut global_atomics = false;
        let mut uses_shared = !k.shared.is_empty();
        let mut race_shift = [3u32; 2];
        for b in k.block_ids() {
            let block = k.block(b);
            let mut insts = Vec::with_capacity(block.insts.len());
            for &id in &block.insts {
                let Some(d) = k.insts.get(id.index()) else {
                    return Err(malformed(block.span, "block lists an undefined instruction"));
                };
                let mut span = d.span;
                if d.op == Op::Barrier && span.end > span.start + 7 {
                    // The parser's span of an operand-less instruction may run up to the next token;
                    // point at the word `barrier` only.
                    span.end = span.start + 7;
                }
                if d.args.len() != d.op.arity() || d.args.len() > 4 {
                    return Err(malformed(
                        span,
                        format!("`{}` takes {} operands, found {}", d.op, d.op.arity(), d.args.len()),
                    ));
                }
                let mut args = [0u32; 4];
                for (i, a) in d.args.iter().enumerate() {
                    args[i] = slot_of(*a, span)?;
                }
                let res = match d.result {
                    Some(r) if r.index() < nvalues => r.0,
                    Some(_) => return Err(malformed(span, "result names an undefined value")),
                    None => NO_SLOT,
                };
                if res != NO_SLOT && args[..d.args.len()].contains(&res) {
                    return Err(malformed(span, "an instruction uses its own result"));
                }
                let ptr_of = |o: Operand| -> Result<(AddrSpace, ScalarType), InterpError> {
                    match o {
                        Operand::Value(v) => {
                            k.value_type(v).pointee().ok_or_else(|| malformed(span, "memory operand is not a pointer"))
                        }
                        Operand::Const(_) => Err(malformed(span, "memory operand is a constant, not a pointer")),
                    }
                };
                let int_of = |o: Operand| -> Result<ScalarType, InterpError> {
                    match k.operand_type(o) {
                        Type::Scalar(t) if t.is_int() => Ok(t),
                        _ => Err(malformed(span, "index operand is not an integer")),
                    }
                };
                let mem = |d: &kir_ir::InstData| -> Result<MemAccess, InterpError> {
                    let (space, elem) = ptr_of(d.args[0])?;
                    let idx_ty = int_of(d.args[1])?;
                    let idx_shift = if idx_ty.is_signed_int() { 64 - idx_ty.bits() } else { 0 };
                    Ok(MemAccess { space, elem, size: elem.bytes(), idx_ty, idx_shift })
                };
                let op = match &d.op {
                    op if op.is_pure() => XOp::Pure(*op),
                    Op::Special(r) => XOp::Special(*r),
                    Op::Load => XOp::Load(mem(d)?),
                    Op::Store => XOp::Store(mem(d)?),
                    Op::Atomic(a) => XOp::Atomic(*a, mem(d)?),
                    Op::AtomicCas => XOp::Cas(mem(d)?),
                    Op::PtrOffset => {
                        let (_, elem) = ptr_of(d.args[0])?;
                        XOp::Offset { scale: elem.bytes() as u64, idx_ty: int_of(d.args[1])? }
                    }
                    Op::PtrOffsetBytes => {
                        ptr_of(d.args[0])?;
                        XOp::Offset { scale: 1, idx_ty: int_of(d.args[1])? }
                    }
                    Op::PtrCast(_) => {
                        ptr_of(d.args[0])?;
                        XOp::Copy
                    }
                    Op::SharedAddr(n) => {
                        if *n as usize >= k.shared.len() {
                            return Err(malformed(span, "`addr` names an undefined shared declaration"));
                        }
                        XOp::SharedAddr(*n)
                    }
                    Op::Barrier => XOp::Barrier,
                    Op::Shfl(m, _) => XOp::Shfl(*m),
                    Op::Vote(m) => XOp::Vote(*m),
                    other => {
                        return Err(
                            InterpError::internal(format!("op `{other}` has no execution rule")).at(span, "here")
                        )
                    }
                };
                if let XOp::Load(m) | XOp::Store(m) = &op {
                    let sh = &mut race_shift[(m.space == AddrSpace::Shared) as usize];
                    *sh = (*sh).min(m.size.trailing_zeros());
                }
                match &op {
                    XOp::Atomic(_, m) | XOp::Cas(m) if m.space == AddrSpace::Global => global_atomics = true,
                    XOp::Load(m) | XOp::Store(m) | XOp::Atomic(_, m) | XOp::Cas(m) if m.space == AddrSpace::Shared => {
                        uses_shared = true
                    }
                    _ => {}
                }
                let needs_result = !matches!(op, XOp::Barrier | XOp::Store(_) | XOp::Atomic(..) | XOp::Cas(..));
                if needs_result && res == NO_SLOT && !matches!(op, XOp::Pure(_)) {
                    return Err(malformed(span, format!("`{}` must define a value", d.op)));
                }
                insts.push(XInst { op, args, nargs: d.args.len() as u8, res, span });
            }
            let mut edge = |c: &BlockCall| -> Result<XEdge, InterpError> {
                let Some(target) = k.blocks.get(c.block.index()) else {
                    return Err(malformed(block.term_span, "jump to an undefined block"));
                };
                if target.params.len() != c.args.len() {
                    return Err(malformed(
                        block.term_span,
                        format!(
                            "block `{}` takes {} arguments, given {}",
                            target.name,
                            target.params.len(),
                            c.args.len()
                        ),
                    ));
                }
                let mut moves = Vec::with_capacity(c.args.len());
                for (p, a) in target.params.iter().zip(&c.args) {
                    if p.index() >= nvalues {
                        return Err(malformed(target.span, "block parameter is undefined"));
                    }
                    moves.push((p.0, slot_of(*a, block.term_span)?));
                }
                if c.block == kir_ir::Kernel::ENTRY {
                    return Err(malformed(block.term_span, "the entry block cannot be jumped to"));
                }
                Ok(XEdge { block: c.block.0, moves })
            };
            let term = match &block.term {
                Terminator::Ret(_) => XTerm::Ret,
                Terminator::Jmp(c) => XTerm::Jmp(edge(c)?),
                Terminator::Br { cond, then_, else_ } => {
                    let (then_, else_) = (edge(then_)?, edge(else_)?);
                    drop(edge);
                    let cond = slot_of(*cond, block.term_span)?;
                    XTerm::Br { cond, then_, else_ }
                }
            };
            let ipdom = cfg.ipdom(b).map(|p| p.0).unwrap_or(EXIT);
            blocks.push(XBlock {
                insts,
                term,
                ipdom,
                name: block.name.to_string(),
                span: block.span,
                term_span: block.term_span,
            });
        }
        if !k.blocks[0].params.is_empty() {
            return Err(malformed(k.blocks[0].span, "the entry block has parameters"));
        }
        let mut params = Vec::with_capacity(k.params.len());
        for p in &k.params {
            if p.index() >= nvalues {
                return Err(malformed(k.span, "kernel parameter is undefined"));
            }
            params.push(p.0);
        }
        let nslots = nvalues + consts.len();
        Ok(Prog { blocks, nslots, consts, params, global_atomics, uses_shared, race_shift })
    }
}
