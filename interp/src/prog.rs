//! The execution form of a kernel and of the device functions it calls: resolved once per launch
//! (each function once, however often it is called) so the hot loop does no hashing or allocation.
//!
//! Guarantees:
//! - Every operand is a register slot: SSA values use their `ValueId` index; every value wider
//!   than 64 bits (a 128-bit vector: `vec<4, f32>`, `vec<2, f64>`, ...) also gets a *high* slot
//!   after all the values, holding bits 64..128 while its `ValueId` slot holds bits
//!   0..64; each distinct constant (always a scalar) gets one broadcast slot after those
//!   ([`Prog::consts`]). Every slot index is `< Prog::nslots`. A vector of at most 64 bits lives
//!   in its one slot. Element `i` of a vector of `b`-bit elements is bits `i·b..(i+1)·b` of it
//!   (element 0 lowest, as it is lowest in memory).
//! - The *enclosure program* ([`Progs::build`] with `enc`, for `crate::launch_enclosed`) keeps an
//!   error enclosure per vector element: every vector value of N elements also gets N − 1
//!   *element slots* (after the high slots, before the constants), whose enclosure rows hold the
//!   enclosures of its elements 1..N (element 0's is its value slot's row; the high slot's
//!   enclosure row is unused). Their value rows hold nothing. [`ElSlots`] names them for each
//!   operand and result of an [`XExt`], each `ret` of a vector ([`Prog::ret_el`]) and each call's
//!   vector result ([`XCall::res_el`]); an edge's moves copy them like the value slots. The plain
//!   program has none (every [`ElSlots`] is [`NO_EL`]): its register file, moves and
//!   instructions are exactly what they were before element slots existed.
//! - No instruction's result slot is one of its operand slots, high slots included (so a warp can
//!   read operands and write the result in one register file without copying).
//! - Vector, tensor-core and async-copy instructions are [`XOp::Ext`]: their operands' slots with
//!   each one's high slot ([`XExt`]), apart from the scalar ops' [`XInst`] fields (whose `args`
//!   hold their first four operand slots); the scalar instructions are built as before.
//! - Every block call names an existing block with as many arguments as it has parameters; every
//!   block knows its immediate post-dominator ([`EXIT`] when it is the virtual exit), where
//!   divergent lanes reconverge. An edge's moves copy both slots of a 128-bit block parameter (its
//!   high slot from the argument's high slot), and a function's `ret` of a 128-bit value
//!   ([`XTerm::Return`]) and the call's result ([`XCall::res_hi`]) name both slots too.
//! - [`Progs::build`] makes one [`Prog`] per body of a [`Verified`] module, on the CFG the
//!   verifier built for it (no CFG is built here): index 0 is the kernel, then every function it
//!   reaches through calls ([`XOp::Call`] names its callee by that index, resolved by name once).
//!   A call names a function of the module with as many arguments as it has parameters, and no
//!   function recurses (the verifier's promises; were one broken, it would be an
//!   [`crate::ErrorKind::InvalidLaunch`] error, never a panic), so the call depth is bounded by
//!   the number of functions. [`Progs::stride`] is the register slots one warp needs for the kernel and its
//!   deepest chain of call frames (each frame's slots right after its caller's).
//! - A function's `ret` is [`XTerm::Return`] (back to the caller, with the returned slot); a
//!   kernel's is [`XTerm::Ret`] (the thread exits).
//! - The kernel's `Prog` carries the launch-wide facts of every body: `global_atomics`,
//!   `uses_shared`, `async_copies` and `race_shift` cover the functions' memory accesses too;
//!   `race_shift` divides the element size of every access, vector, `ldmatrix` and `cp.async`
//!   ones included (race detection sees those element by element).
//! - A structurally malformed kernel (dangling value or block, wrong operand count, memory op on a
//!   non-pointer) is an [`crate::ErrorKind::InvalidLaunch`] error, never a panic. Type errors beyond
//!   that are the verifier's business, settled by the [`Verified`] type.

use crate::error::InterpError;
use kir_ir::analysis::callgraph::successors_first;
use kir_ir::analysis::cfg::Cfg;
use kir_ir::op::{AtomicOp, LdmatrixNum, MmaKind, Op, ShflMode, SpecialReg, VoteMode};
use kir_ir::types::{AddrSpace, ScalarType, Type};
use kir_ir::verify::Verified;
use kir_ir::{BlockCall, Kernel, Operand, Span, Terminator};
use std::collections::HashMap;

/// The reconvergence "block" of paths whose immediate post-dominator is the virtual exit.
pub(crate) const EXIT: u32 = u32::MAX;
/// No result slot.
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// The element slots of a vector value in the enclosure program: the slot whose enclosure row
/// holds element `k + 1`'s enclosure ([`NO_SLOT`] past the last element, for scalars, and
/// everywhere in the plain program). Element 0's enclosure is in the value slot's row.
pub(crate) type ElSlots = [u32; 3];
/// No element slots.
pub(crate) const NO_EL: ElSlots = [NO_SLOT; 3];

/// How a memory instruction addresses memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemAccess {
    pub space: AddrSpace,
    pub elem: ScalarType,
    /// Element size in bytes.
    pub size: u32,
    /// Type of the index operand (sign-extended when signed).
    pub idx_ty: ScalarType,
    /// `64 - bits` of a signed index type (the shift that sign-extends it), 0 for unsigned. A
    /// byte, so that with [`MemAccess::site`] the access stays 12 bytes (instructions are the
    /// interpreter's hot data).
    pub idx_shift: u8,
    /// This instruction's index in the launch's [`Prog::race_sites`] (set by [`Progs::build`]).
    pub site: u32,
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
    /// `call`: [`Prog::calls`]`[n]`.
    Call(u32),
    /// A vector, tensor-core or async-copy instruction (boxed: they are rare, and the scalar
    /// instructions stay small).
    Ext(Box<XExt>),
    /// `cp.async.commit`.
    CpCommit,
    /// `cp.async.wait n`.
    CpWait(u32),
}

impl XOp {
    /// The memory accesses of the instruction (one element each: a vector access, `ldmatrix` and
    /// `cp.async` are seen by race detection element by element; `cp.async` has its destination's
    /// and its source's).
    pub(crate) fn accesses(&self) -> impl Iterator<Item = &MemAccess> {
        let (a, b): (Option<&MemAccess>, Option<&MemAccess>) = match self {
            XOp::Load(m) | XOp::Store(m) | XOp::Atomic(_, m) | XOp::Cas(m) => (Some(m), None),
            XOp::Ext(x) => match &x.kind {
                ExtKind::Load { acc, .. } | ExtKind::Store { acc, .. } | ExtKind::Ldmatrix { acc, .. } => {
                    (Some(acc), None)
                }
                ExtKind::CpAsync { dst, src, .. } => (Some(dst), Some(src)),
                _ => (None, None),
            },
            _ => (None, None),
        };
        a.into_iter().chain(b)
    }

    /// [`XOp::accesses`], to set their race sites.
    fn accesses_mut(&mut self) -> impl Iterator<Item = &mut MemAccess> {
        let (a, b): (Option<&mut MemAccess>, Option<&mut MemAccess>) = match self {
            XOp::Load(m) | XOp::Store(m) | XOp::Atomic(_, m) | XOp::Cas(m) => (Some(m), None),
            XOp::Ext(x) => match &mut x.kind {
                ExtKind::Load { acc, .. } | ExtKind::Store { acc, .. } | ExtKind::Ldmatrix { acc, .. } => {
                    (Some(acc), None)
                }
                ExtKind::CpAsync { dst, src, .. } => (Some(dst), Some(src)),
                _ => (None, None),
            },
            _ => (None, None),
        };
        a.into_iter().chain(b)
    }
}

/// What an [`XOp::Ext`] instruction does.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ExtKind {
    /// `vec.vN.T`: one operand per element, of `bits` bits each.
    Build { bits: u32 },
    /// `extract.vN.T v, lane`.
    Extract { bits: u32, lane: u32 },
    /// `insert.vN.T v, lane, x`.
    Insert { bits: u32, lane: u32 },
    /// `load.vN p[i]`: `n` elements, each as `acc` describes (race detection and uninitialized
    /// reads see them one by one); one access of `n · acc.size` bytes, aligned to that.
    Load { acc: MemAccess, n: u32 },
    /// `store.vN p[i], v`.
    Store { acc: MemAccess, n: u32 },
    /// `mma.*`.
    Mma(MmaKind),
    /// `ldmatrix.xN[.trans] p[i]`: `acc` is one 16-bit element of a row.
    Ldmatrix { acc: MemAccess, num: LdmatrixNum, trans: bool },
    /// `cp.async.N dst[i], src[j], n`: `dst` and `src` are one element of each side; `size` bytes.
    CpAsync { dst: MemAccess, src: MemAccess, size: u32 },
}

/// An [`XOp::Ext`] instruction's operands: the slot of each, and the high slot of each 128-bit
/// vector operand ([`NO_SLOT`] for the others); the result is [`XInst::res`] and `res_hi`. In the
/// enclosure program, `el` and `res_el` are the element slots of the vector operands and result.
#[derive(Clone, Debug)]
pub(crate) struct XExt {
    pub kind: ExtKind,
    /// The IR op (its mnemonic names the instruction in messages).
    pub op: Op,
    pub args: [u32; 5],
    pub hi: [u32; 5],
    pub nargs: u8,
    pub res_hi: u32,
    pub el: [ElSlots; 5],
    pub res_el: ElSlots,
}

/// A call: the callee's index in [`Progs::progs`] and the caller's argument slots.
#[derive(Clone, Debug)]
pub(crate) struct XCall {
    pub callee: u32,
    pub args: Vec<u32>,
    /// The high slot of a 128-bit result ([`NO_SLOT`] otherwise).
    pub res_hi: u32,
    /// The element slots of a vector result (the enclosure program's; else [`NO_EL`]).
    pub res_el: ElSlots,
}

#[derive(Clone, Debug)]
pub(crate) struct XInst {
    pub op: XOp,
    pub args: [u32; 4],
    pub nargs: u8,
    /// A barrier or a call: handled by the warp loop itself, not by the instruction executor
    /// (one byte test per instruction, cheaper than matching the op).
    pub ctl: bool,
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
    /// A kernel's `ret`: the lanes exit.
    Ret,
    /// A function's `ret`: the lanes return to the caller, with the value in this slot
    /// ([`NO_SLOT`] for none) and, for a 128-bit value, its high slot (else [`NO_SLOT`]); in the
    /// enclosure program a vector's element slots are [`Prog::ret_el`]'s.
    Return(u32, u32),
    Jmp(XEdge),
    Br {
        cond: u32,
        then_: XEdge,
        else_: XEdge,
    },
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

/// A kernel or function ready to execute.
#[derive(Clone, Debug)]
pub(crate) struct Prog {
    /// The body's name, without `@`.
    pub name: String,
    pub blocks: Vec<XBlock>,
    /// The calls of [`XOp::Call`].
    pub calls: Vec<XCall>,
    pub nslots: usize,
    /// Broadcast constant slots and their bits.
    pub consts: Vec<(u32, u64)>,
    /// Slot of each parameter.
    pub params: Vec<u32>,
    /// Whether some atomic operates on global memory (blocks then run one at a time, in order).
    pub global_atomics: bool,
    /// Whether any instruction touches shared memory.
    pub uses_shared: bool,
    /// Whether any instruction is a `cp.async` (or its commit/wait).
    pub async_copies: bool,
    /// log2 of the race-shadow granule of global and of shared memory: the smallest element size
    /// of a load, store or atomic there, vector accesses', `ldmatrix`'s and `cp.async`'s elements
    /// included (8 bytes when there is none). Every such access is aligned to its
    /// size, a multiple of the granule, so all bytes of a granule are always accessed together and
    /// one shadow entry per granule records exactly what one per byte would.
    pub race_shift: [u32; 2],
    /// The kernel's: every memory instruction of the launch (kernel and functions), each with the
    /// index of its body in [`Progs::progs`] and its span; [`MemAccess::site`] indexes it, so a
    /// race report can point at the other access's instruction.
    pub race_sites: Vec<(u32, Span)>,
    /// The enclosure program's: per block, the element slots of the vector its `ret` returns
    /// ([`NO_EL`] for other blocks; empty when no `ret` returns a vector, and in the plain
    /// program).
    pub ret_el: Vec<ElSlots>,
}

fn malformed(span: Span, msg: impl Into<String>) -> InterpError {
    InterpError::invalid(format!("malformed kernel: {} (run `kir check`)", msg.into())).at(span, "here")
}

impl Prog {
    /// The execution form of `k`, whose CFG is `cfg` (the verifier's); `resolve(n, span)` gives
    /// the [`Progs::progs`] index of `k.callees[n]`, called once per call instruction. With
    /// `enc`, the enclosure program (with element slots).
    pub fn new(
        k: &Kernel,
        cfg: &Cfg,
        resolve: &mut dyn FnMut(u32, Span) -> Result<u32, InterpError>,
        enc: bool,
    ) -> Result<Prog, InterpError> {
        let what = if k.is_func() { "function" } else { "kernel" };
        if k.blocks.is_empty() {
            return Err(InterpError::invalid(format!("{what} @{} has no blocks", k.name)));
        }
        let nvalues = k.values.len();
        // High slots of the 128-bit values, right after the values.
        let mut hi = vec![NO_SLOT; nvalues];
        let mut nhi = 0usize;
        for (i, v) in k.values.iter().enumerate() {
            if v.ty.bits() > 64 {
                hi[i] = (nvalues + nhi) as u32;
                nhi += 1;
            }
        }
        let hi_of = |o: Operand| -> u32 {
            match o {
                Operand::Value(v) => hi.get(v.index()).copied().unwrap_or(NO_SLOT),
                Operand::Const(_) => NO_SLOT,
            }
        };
        // The enclosure program's element slots of the vectors, after the high slots.
        let mut el = vec![NO_EL; if enc { nvalues } else { 0 }];
        let mut nel = 0usize;
        for (i, v) in k.values.iter().enumerate().filter(|_| enc) {
            if let Type::Vec(w, _) = v.ty {
                for s in &mut el[i][..w.len() - 1] {
                    *s = (nvalues + nhi + nel) as u32;
                    nel += 1;
                }
            }
        }
        let el_of = |o: Operand| -> ElSlots {
            match o {
                Operand::Value(v) => el.get(v.index()).copied().unwrap_or(NO_EL),
                Operand::Const(_) => NO_EL,
            }
        };
        let mut consts: Vec<(u32, u64)> = Vec::new();
        let mut const_slot: HashMap<u64, u32> = HashMap::new();
        let mut slot_of = |o: Operand, span: Span| -> Result<u32, InterpError> {
            match o {
                Operand::Value(v) if v.index() < nvalues => Ok(v.0),
                Operand::Value(_) => Err(malformed(span, "operand names an undefined value")),
                Operand::Const(c) => {
                    let next = (nvalues + nhi + nel + consts.len()) as u32;
                    Ok(*const_slot.entry(c.bits).or_insert_with(|| {
                        consts.push((next, c.bits));
                        next
                    }))
                }
            }
        };
        let nblocks = k.blocks.len();
        let mut blocks = Vec::with_capacity(nblocks);
        let mut global_atomics = false;
        let mut uses_shared = !k.shared.is_empty();
        let mut async_copies = false;
        let mut race_shift = [3u32; 2];
        let mut calls: Vec<XCall> = Vec::new();
        let mut ret_el: Vec<ElSlots> = Vec::new();
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
                if let Op::Call(n) = d.op {
                    let mut args = Vec::with_capacity(d.args.len());
                    for a in &d.args {
                        args.push(slot_of(*a, span)?);
                    }
                    let res = match d.result {
                        Some(r) if r.index() < nvalues => r.0,
                        Some(_) => return Err(malformed(span, "result names an undefined value")),
                        None => NO_SLOT,
                    };
                    let callee = resolve(n, span)?;
                    let res_hi = d.result.map_or(NO_SLOT, |r| hi[r.index()]);
                    let res_el = d.result.map_or(NO_EL, |r| el_of(Operand::Value(r)));
                    calls.push(XCall { callee, args, res_hi, res_el });
                    let op = XOp::Call(calls.len() as u32 - 1);
                    insts.push(XInst { op, args: [0; 4], nargs: 0, ctl: true, res, span });
                    continue;
                }
                let max_args = if matches!(d.op, Op::CpAsync(_)) { 5 } else { 4 };
                if d.args.len() != d.op.arity() || d.args.len() > max_args {
                    return Err(malformed(
                        span,
                        format!("`{}` takes {} operands, found {}", d.op, d.op.arity(), d.args.len()),
                    ));
                }
                let mut all_args = [0u32; 5];
                for (i, a) in d.args.iter().enumerate() {
                    all_args[i] = slot_of(*a, span)?;
                }
                let args = [all_args[0], all_args[1], all_args[2], all_args[3]];
                let res = match d.result {
                    Some(r) if r.index() < nvalues => r.0,
                    Some(_) => return Err(malformed(span, "result names an undefined value")),
                    None => NO_SLOT,
                };
                if res != NO_SLOT && all_args[..d.args.len()].contains(&res) {
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
                // The access through operands `p` (pointer) and `p + 1` (index).
                let mem_at = |d: &kir_ir::InstData, p: usize| -> Result<MemAccess, InterpError> {
                    let (space, elem) = ptr_of(d.args[p])?;
                    let idx_ty = int_of(d.args[p + 1])?;
                    let idx_shift = if idx_ty.is_signed_int() { 64 - idx_ty.bits() as u8 } else { 0 };
                    Ok(MemAccess { space, elem, size: elem.bytes(), idx_ty, idx_shift, site: 0 })
                };
                let mem = |d: &kir_ir::InstData| mem_at(d, 0);
                // A constant operand (a vector lane, a group count: the verifier's rule).
                let constant = |o: Operand| -> Result<u32, InterpError> {
                    match o {
                        Operand::Const(c) => Ok(c.bits as u32),
                        Operand::Value(_) => Err(malformed(span, format!("`{}` needs a constant operand", d.op))),
                    }
                };
                let ext = |kind: ExtKind| -> Result<XOp, InterpError> {
                    let mut hi_args = [NO_SLOT; 5];
                    let mut el_args = [NO_EL; 5];
                    for (i, a) in d.args.iter().enumerate() {
                        hi_args[i] = hi_of(*a);
                        el_args[i] = el_of(*a);
                    }
                    let res_hi = if res == NO_SLOT { NO_SLOT } else { hi[res as usize] };
                    if res_hi != NO_SLOT && hi_args.contains(&res_hi) {
                        return Err(malformed(span, "an instruction uses its own result"));
                    }
                    let res_el = d.result.map_or(NO_EL, |r| el_of(Operand::Value(r)));
                    Ok(XOp::Ext(Box::new(XExt {
                        kind,
                        op: d.op,
                        args: all_args,
                        hi: hi_args,
                        nargs: d.args.len() as u8,
                        res_hi,
                        el: el_args,
                        res_el,
                    })))
                };
                let op = match &d.op {
                    Op::VecBuild(_, t) => ext(ExtKind::Build { bits: t.bits() })?,
                    Op::VecExtract(w, t) | Op::VecInsert(w, t) => {
                        let lane = constant(d.args[1])?;
                        if lane as usize >= w.len() {
                            return Err(malformed(span, format!("lane {lane} of a {}-element vector", w.len())));
                        }
                        let bits = t.bits();
                        ext(if matches!(d.op, Op::VecExtract(..)) {
                            ExtKind::Extract { bits, lane }
                        } else {
                            ExtKind::Insert { bits, lane }
                        })?
                    }
                    Op::LoadVec(w) => ext(ExtKind::Load { acc: mem(d)?, n: w.len() as u32 })?,
                    Op::StoreVec(w) => ext(ExtKind::Store { acc: mem(d)?, n: w.len() as u32 })?,
                    Op::Mma(kind) => ext(ExtKind::Mma(*kind))?,
                    Op::Ldmatrix(num, trans) => {
                        let acc = mem(d)?;
                        if acc.space != AddrSpace::Shared || acc.size != 2 {
                            return Err(malformed(span, "`ldmatrix` reads 16-bit elements of shared memory"));
                        }
                        ext(ExtKind::Ldmatrix { acc, num: *num, trans: *trans })?
                    }
                    Op::CpAsync(size) => {
                        let (dst, src) = (mem_at(d, 0)?, mem_at(d, 2)?);
                        let size = size.bytes();
                        if dst.space != AddrSpace::Shared
                            || src.space != AddrSpace::Global
                            || dst.size > size
                            || src.size > size
                        {
                            return Err(malformed(
                                span,
                                "`cp.async` copies whole elements from global to shared memory",
                            ));
                        }
                        ext(ExtKind::CpAsync { dst, src, size })?
                    }
                    Op::CpAsyncCommit => XOp::CpCommit,
                    Op::CpAsyncWait => XOp::CpWait(constant(d.args[0])?),
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
                for m in op.accesses() {
                    let sh = &mut race_shift[(m.space == AddrSpace::Shared) as usize];
                    *sh = (*sh).min(m.size.trailing_zeros());
                    if m.space == AddrSpace::Shared {
                        uses_shared = true;
                    }
                }
                if let XOp::Atomic(_, m) | XOp::Cas(m) = &op {
                    global_atomics |= m.space == AddrSpace::Global;
                }
                async_copies |= matches!(op, XOp::CpCommit | XOp::CpWait(_))
                    || matches!(&op, XOp::Ext(x) if matches!(x.kind, ExtKind::CpAsync { .. }));
                let needs_result = match &op {
                    XOp::Barrier | XOp::Store(_) | XOp::Atomic(..) | XOp::Cas(..) | XOp::CpCommit | XOp::CpWait(_) => {
                        false
                    }
                    XOp::Ext(x) => !matches!(x.kind, ExtKind::Store { .. } | ExtKind::CpAsync { .. }),
                    _ => true,
                };
                let pure = matches!(&op, XOp::Pure(_))
                    || matches!(&op, XOp::Ext(x) if matches!(x.kind, ExtKind::Build { .. } | ExtKind::Extract { .. } | ExtKind::Insert { .. }));
                if needs_result && res == NO_SLOT && !pure {
                    return Err(malformed(span, format!("`{}` must define a value", d.op)));
                }
                let ctl = matches!(op, XOp::Barrier);
                insts.push(XInst { op, args, nargs: d.args.len() as u8, ctl, res, span });
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
                    // The high half of a 128-bit parameter, from the argument's; and in the
                    // enclosure program its elements' enclosure slots.
                    let (pe, ae) = (el_of(Operand::Value(*p)), el_of(*a));
                    let halves = [(hi[p.index()], hi_of(*a))].into_iter().chain(pe.into_iter().zip(ae));
                    for (d, s) in halves {
                        match (d, s) {
                            (NO_SLOT, NO_SLOT) => {}
                            (d, s) if d != NO_SLOT && s != NO_SLOT => moves.push((d, s)),
                            _ => {
                                return Err(malformed(
                                    block.term_span,
                                    "block argument of another width than its parameter",
                                ))
                            }
                        }
                    }
                }
                if c.block == kir_ir::Kernel::ENTRY {
                    return Err(malformed(block.term_span, "the entry block cannot be jumped to"));
                }
                Ok(XEdge { block: c.block.0, moves })
            };
            let term = match &block.term {
                Terminator::Ret(v) if k.is_func() => match v {
                    Some(v) => {
                        if enc && el_of(*v) != NO_EL {
                            ret_el.resize(nblocks, NO_EL);
                            ret_el[b.index()] = el_of(*v);
                        }
                        XTerm::Return(slot_of(*v, block.term_span)?, hi_of(*v))
                    }
                    None => XTerm::Return(NO_SLOT, NO_SLOT),
                },
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
                return Err(malformed(k.span, format!("{what} parameter is undefined")));
            }
            params.push(p.0);
        }
        let nslots = nvalues + nhi + nel + consts.len();
        Ok(Prog {
            name: k.name.clone(),
            blocks,
            calls,
            nslots,
            consts,
            params,
            global_atomics,
            uses_shared,
            async_copies,
            race_shift,
            race_sites: Vec::new(),
            ret_el,
        })
    }
}

/// The execution forms of a launch: the kernel and the functions it reaches.
#[derive(Clone, Debug)]
pub(crate) struct Progs {
    /// The kernel at index 0, then the functions in the order first reached.
    pub progs: Vec<Prog>,
    /// Register slots per warp: the kernel's plus the deepest chain of call frames.
    pub stride: usize,
}

impl Progs {
    /// Builds kernel `kernel` of the verified module `m` and every function it reaches, each once,
    /// on the CFGs the verifier built (none is built again here); with `enc`, the enclosure
    /// programs (with element slots).
    pub fn build(m: &Verified, kernel: &Kernel, enc: bool) -> Result<Progs, InterpError> {
        let funcs = &m.funcs;
        // A body's CFG, by its (verified: unique) name.
        let cfg_of = |body: &Kernel| -> Result<&Cfg, InterpError> {
            match m.bodies().position(|b| b.name == body.name && b.is_func() == body.is_func()) {
                Some(i) => Ok(m.cfg(i)),
                None => Err(InterpError::invalid(format!("@{} is not a body of the launched module", body.name))),
            }
        };
        let mut bodies: Vec<&Kernel> = vec![kernel];
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut progs: Vec<Prog> = Vec::new();
        let mut i = 0;
        while i < bodies.len() {
            let body = bodies[i];
            let mut resolve = |n: u32, span: Span| -> Result<u32, InterpError> {
                let Some(c) = body.callees.get(n as usize) else {
                    return Err(malformed(
                        span,
                        format!("`call` names callee #{n}, but `@{}` has no such callee", body.name),
                    ));
                };
                if let Some(&id) = ids.get(c.name.as_str()) {
                    return Ok(id);
                }
                let Some(f) = funcs.iter().find(|f| f.name == c.name) else {
                    return Err(malformed(
                        span,
                        format!("`@{}` calls `@{}`, which the module does not define", body.name, c.name),
                    ));
                };
                if !f.is_func() {
                    return Err(malformed(span, format!("`@{}` is a kernel, not a function", f.name)));
                }
                let id = bodies.len() as u32;
                bodies.push(f);
                ids.insert(&f.name, id);
                Ok(id)
            };
            progs.push(Prog::new(body, cfg_of(body)?, &mut resolve, enc)?);
            i += 1;
        }
        // Arity of every call, against its callee.
        for p in &progs {
            for inst in p.blocks.iter().flat_map(|b| &b.insts) {
                if let XOp::Call(c) = inst.op {
                    let call = &p.calls[c as usize];
                    let f = &progs[call.callee as usize];
                    if f.params.len() != call.args.len() {
                        return Err(malformed(
                            inst.span,
                            format!("`@{}` takes {} arguments, given {}", f.name, f.params.len(), call.args.len()),
                        ));
                    }
                }
            }
        }
        let stride = stack_need(&progs)?;
        // Launch-wide facts cover every body.
        let (mut atomics, mut shared, mut shift, mut copies) = (false, false, [3u32; 2], false);
        for p in &progs {
            atomics |= p.global_atomics;
            shared |= p.uses_shared;
            copies |= p.async_copies;
            shift = [shift[0].min(p.race_shift[0]), shift[1].min(p.race_shift[1])];
        }
        let mut sites = Vec::new();
        for (body, p) in progs.iter_mut().enumerate() {
            for inst in p.blocks.iter_mut().flat_map(|b| &mut b.insts) {
                let site = sites.len() as u32;
                let mut any = false;
                for m in inst.op.accesses_mut() {
                    m.site = site;
                    any = true;
                }
                if any {
                    sites.push((body as u32, inst.span));
                }
            }
        }
        let k = &mut progs[0];
        k.race_sites = sites;
        k.global_atomics = atomics;
        k.uses_shared = shared;
        k.async_copies = copies;
        k.race_shift = shift;
        Ok(Progs { progs, stride })
    }
}

/// The register slots of the kernel and its deepest call chain (each body's `nslots` plus the
/// largest need of its callees); recursion is an invalid launch naming the cycle. Callees first
/// from `kir_ir::analysis::callgraph::successors_first` (iterative).
fn stack_need(progs: &[Prog]) -> Result<usize, InterpError> {
    let succs: Vec<Vec<usize>> = progs.iter().map(|p| p.calls.iter().map(|c| c.callee as usize).collect()).collect();
    let order = successors_first(&succs, [0]).map_err(|cycle| {
        let mut names: Vec<String> = cycle.iter().map(|&(x, _)| format!("`@{}`", progs[x].name)).collect();
        names.extend(cycle.first().map(|&(x, _)| format!("`@{}`", progs[x].name)));
        InterpError::invalid(format!("recursive functions: {}", names.join(" -> ")))
            .with_note("kir functions cannot recurse (run `kir check`)")
    })?;
    let mut need = vec![0usize; progs.len()];
    for p in order {
        let deepest =
            progs[p].calls.iter().map(|c| need.get(c.callee as usize).copied().unwrap_or(0)).max().unwrap_or(0);
        need[p] = progs[p].nslots.saturating_add(deepest);
    }
    Ok(need.first().copied().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(src: &str) -> Verified {
        kir_ir::verify::verify(kir_ir::parse(src).unwrap_or_else(|d| panic!("{d:?}"))).unwrap()
    }

    #[test]
    fn the_stride_is_the_kernel_plus_its_deepest_call_chain() {
        let m = module(
            "func @leaf(%x: u32) -> u32 {
entry:
  %a = add.u32 %x, 1
  %b = add.u32 %a, 2
  %c = add.u32 %b, 3
  ret %c
}
func @mid(%x: u32) -> u32 {
entry:
  %y = call @leaf(%x)
  ret %y
}
kernel @k(%out: ptr<global, u32>) {
entry:
  %t = tid.x
  %v = call @leaf(%t)
  %w = call @mid(%v)
  store %out[%t], %w
  ret
}",
        );
        let p = Progs::build(&m, &m.kernels[0], false).unwrap();
        let slots = |n: &str| p.progs.iter().find(|x| x.name == n).unwrap().nslots;
        // k -> mid -> leaf is deeper than k -> leaf.
        assert_eq!(p.stride, slots("k") + slots("mid") + slots("leaf"));
    }
}

#[cfg(test)]
mod size_tests {
    /// Instructions are the interpreter's hot data: a memory access's race site must not grow them
    /// (48 bytes, as before sites existed).
    #[test]
    fn instructions_stay_small() {
        assert_eq!(std::mem::size_of::<super::MemAccess>(), 12);
        assert_eq!(std::mem::size_of::<super::XInst>(), 48);
    }
}
