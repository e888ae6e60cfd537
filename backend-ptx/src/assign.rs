//! Register assignment: which PTX registers ([`Regs`]) hold each value of a body, decided before
//! any of it is emitted.
//!
//! Guarantees:
//! - Every value gets registers of its type's class ([`RegClass::of`]): one, or one per element of
//!   a vector. Values are taken in arena order, and each one that needs registers of its own gets
//!   a fresh run ([`RegFile::fresh_n`]) then; a body without `vec`, `extract` or `insert` is
//!   numbered exactly as when every value had its own registers. The assignment is a pure
//!   function of the body (deterministic).
//! - Latch arguments (`latch_args`): in a block ending in `jmp h(..., %v, ...)` where `%v` is
//!   computed in that block and used nowhere else, by an instruction that does not read the
//!   parameter `%p` of `h` it binds or is a [`single_instruction`] op, and `%p` is not read after
//!   that instruction (nor passed by the jump), `%v` takes `%p`'s registers: `%p` is dead from
//!   there on (the jump's only successor rebinds it), so the instruction may overwrite it, and the
//!   move on the edge disappears. Those registers are written by more than one value
//!   ([`Assignment::shared`]).
//! - Element aliases: an element of the result of `extract`, `vec` or `insert` whose source is a
//!   value (the vector operand's element, the scalar operand) names that value's register instead
//!   of one of its own, so the instruction emits no move for it; in one `vec`, a constant element
//!   equal to an earlier one names that element's register. The result of an `ld.vN`, `mma`,
//!   `ldmatrix` or call is read in place by the `extract`s of its elements, and a `vec` of
//!   computed scalars is stored or fed to `mma` from the scalars' own registers. Why that is sound:
//!   a value is never written again once defined, and it is live only where its definition
//!   dominates, so a register written by one definition holds that definition's value wherever
//!   any value naming it is live (a block parameter's register is written only on the edges into
//!   its block, where nothing naming it is live but as an argument of the edge, which the parallel
//!   copy reads before it writes). A register of a parameter and its latch argument is named by
//!   an element of another value only if that value is not live after the other writer's write
//!   (block liveness, [`Liveness`]), nor read by the writing instruction unless that is a
//!   [`single_instruction`] op (which reads its operands before writing); a write that copies the
//!   register to itself (an `insert` of another element, a `vec` of that very element: no
//!   instruction) does not count.
//! - Never aliased: the element of a value that takes a parameter's registers (it is written
//!   there), parameters, and the results of every other op.

use crate::regs::{Reg, RegClass, RegFile, Regs};
use kir_ir::analysis::cfg::Cfg;
use kir_ir::{BlockId, InstId, Kernel, Op, Operand, Terminator, ValueDef, ValueId};
use std::collections::{HashMap, HashSet};

/// The registers of every value of a body.
#[derive(Debug)]
pub struct Assignment {
    /// Indexed by `ValueId`.
    pub regs: Vec<Regs>,
    /// The registers a block parameter shares with a latch argument (written more than once, so
    /// the emitter's reuse of a register as holding one value does not apply to them).
    pub shared: HashSet<Reg>,
}

/// Whether `op` is lowered to one PTX instruction that reads all its operands before it writes
/// its destination (plus, for 8- and 16-bit integers, a re-extension of the destination alone),
/// or, for a vector result, to a parallel copy of elements (`vec`, `extract`, `insert`, which
/// read every source before writing): either way the result may share the registers of an
/// operand. `mma` is one instruction, its D sharing C's registers as CUTLASS's accumulators do.
pub fn single_instruction(op: &Op) -> bool {
    use kir_ir::{BinOp, FloatMode};
    match op {
        Op::Mma(_) | Op::VecInsert(..) | Op::VecBuild(..) | Op::VecExtract(..) => true,
        Op::Bin(b, s, _) if s.is_int() => matches!(
            b,
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Min | BinOp::Max | BinOp::And | BinOp::Or | BinOp::Xor
        ),
        Op::Bin(BinOp::Add | BinOp::Sub | BinOp::Mul, s, fl) | Op::Fma(s, fl) => {
            matches!(s, kir_ir::ScalarType::F32 | kir_ir::ScalarType::F64)
                && matches!(fl.mode, FloatMode::Exact(_))
                && !(fl.ftz && *s == kir_ir::ScalarType::F64)
        }
        _ => false,
    }
}

/// Assigns registers to every value of `k` (see the module header), from `file`.
pub fn assign(k: &Kernel, cfg: &Cfg, file: &mut RegFile) -> Assignment {
    let into = latch_args(k);
    let alias = element_aliases(k, cfg, &into);
    let n = k.values.len();
    let mut regs: Vec<Regs> = Vec::with_capacity(n);
    for (v, data) in k.values.iter().enumerate() {
        let (class, count) = (RegClass::of(data.ty), RegClass::count(data.ty));
        let lanes = &alias[v][..count.min(Regs::MAX)];
        if lanes.iter().all(Option::is_none) {
            regs.push(Regs::run(file.fresh_n(class, count), count));
        } else {
            // Own registers for the elements that name no other value's; the others are set below
            // (the placeholder is never printed).
            let mut r = Regs::one(Reg { class, n: u32::MAX });
            for (j, l) in lanes.iter().enumerate() {
                r = r.with(j, if l.is_none() { file.fresh(class) } else { Reg { class, n: u32::MAX } });
            }
            regs.push(r);
        }
    }
    let mut shared = HashSet::new();
    for v in 0..n {
        if let Some(p) = into[v] {
            regs[v] = regs[p.index()];
            shared.extend(regs[p.index()].as_slice().iter().copied());
        }
    }
    // Roots own their registers (or took a parameter's above), so one pass resolves every alias.
    for v in 0..n {
        for (j, l) in alias[v].iter().enumerate() {
            if let Some((c, lane)) = *l {
                regs[v] = regs[v].with(j, regs[c.index()].get(lane as usize));
            }
        }
    }
    Assignment { regs, shared }
}

/// How many times each value is read (instruction operands and terminator operands, block
/// arguments included).
fn use_counts(k: &Kernel) -> Vec<u32> {
    let mut uses = vec![0u32; k.values.len()];
    let mut count = |o: Operand| {
        if let Some(v) = o.as_value().filter(|v| v.index() < uses.len()) {
            uses[v.index()] += 1;
        }
    };
    for (_, i) in k.placed_insts() {
        k.inst(i).args.iter().copied().for_each(&mut count);
    }
    for b in k.block_ids() {
        k.block(b).term.operands().for_each(&mut count);
    }
    uses
}

/// Coalescing of block arguments (see the module header): `into[v] = Some(p)` when the latch
/// argument `%v` takes the registers of the parameter `%p` it binds.
fn latch_args(k: &Kernel) -> Vec<Option<ValueId>> {
    let mut into = vec![None; k.values.len()];
    let uses = use_counts(k);
    for b in k.block_ids() {
        let blk = k.block(b);
        let Terminator::Jmp(c) = &blk.term else { continue };
        let params = &k.block(c.block).params;
        for (n, a) in c.args.iter().enumerate() {
            let (Operand::Value(v), Some(&p)) = (*a, params.get(n)) else { continue };
            let (tv, tp) = (k.value_type(v), k.value_type(p));
            if uses.get(v.index()) != Some(&1)
                || RegClass::of(tv) != RegClass::of(tp)
                || RegClass::count(tv) != RegClass::count(tp)
            {
                continue;
            }
            let ValueDef::Inst(def) = k.value(v).def else { continue };
            let Some(j) = blk.insts.iter().position(|&i| i == def) else { continue };
            // An instruction that reads `%p` may overwrite it only if it reads before it writes.
            let reads_p = k.inst(def).args.contains(&Operand::Value(p));
            if (reads_p && !single_instruction(&k.inst(def).op)) || c.args.contains(&Operand::Value(p)) {
                continue;
            }
            let read_later = blk.insts[j + 1..].iter().any(|&i| k.inst(i).args.contains(&Operand::Value(p)));
            if !read_later {
                into[v.index()] = Some(p);
            }
        }
    }
    into
}

/// An element that names another value's register: (the value that owns it, its element).
type Root = Option<(ValueId, u8)>;

/// The element aliases of every value (see the module header), by `ValueId`: `Some((c, l))` at
/// element `j` of `v` when it names the register of element `l` of `c`, a value that owns that
/// register (or took a parameter's).
fn element_aliases(k: &Kernel, cfg: &Cfg, into: &[Option<ValueId>]) -> Vec<[Root; Regs::MAX]> {
    let mut alias: Vec<[Root; Regs::MAX]> = vec![[None; Regs::MAX]; k.values.len()];
    // The other writers of the registers of each parameter that shares them with latch arguments.
    let mut group: HashMap<ValueId, Vec<ValueId>> = HashMap::new();
    for (v, p) in into.iter().enumerate() {
        if let Some(p) = *p {
            group.entry(p).or_insert_with(|| vec![p]).push(ValueId(v as u32));
        }
    }
    let mut checker = Checker { k, cfg, group: &group, into, live: None, pos: None };
    for &b in cfg.rpo() {
        for &i in &k.block(b).insts {
            let inst = k.inst(i);
            let Some(d) = inst.result.filter(|d| into[d.index()].is_none()) else { continue };
            let n = RegClass::count(k.value_type(d));
            // The element a source operand provides, as its owner's (resolved through aliases).
            let root = |alias: &[[Root; Regs::MAX]], o: Operand, lane: usize| -> Root {
                let v = o.as_value()?;
                if lane >= RegClass::count(k.value_type(v)).min(Regs::MAX)
                    || RegClass::of(k.value_type(v)) != RegClass::of(k.value_type(d))
                {
                    return None;
                }
                Some(alias[v.index()][lane].unwrap_or((v, lane as u8)))
            };
            let mut lanes: [Root; Regs::MAX] = [None; Regs::MAX];
            match inst.op {
                Op::VecExtract(w, _) if n == 1 => {
                    let (v, lane) = (inst.args[0], inst.args[1]);
                    if let (Some(v), Operand::Const(c)) = (v.as_value(), lane) {
                        if RegClass::count(k.value_type(v)) == w.len() && c.bits < w.len() as u64 {
                            lanes[0] = root(&alias, Operand::Value(v), c.bits as usize);
                        }
                    }
                }
                Op::VecBuild(w, _) if n == w.len() && inst.args.len() == n => {
                    for (j, &x) in inst.args.iter().enumerate() {
                        lanes[j] = match x {
                            Operand::Value(_) => root(&alias, x, 0),
                            // A repeated constant: the register of its first element.
                            Operand::Const(_) => inst.args[..j].iter().position(|&y| y == x).map(|j0| (d, j0 as u8)),
                        };
                    }
                }
                Op::VecInsert(w, _) if n == w.len() => {
                    let (v, lane, x) = (inst.args[0], inst.args[1], inst.args[2]);
                    let Operand::Const(c) = lane else { continue };
                    if v.as_value().is_none_or(|v| RegClass::count(k.value_type(v)) != n) || c.bits >= n as u64 {
                        continue;
                    }
                    for (j, l) in lanes.iter_mut().enumerate().take(n) {
                        *l = if j as u64 == c.bits { root(&alias, x, 0) } else { root(&alias, v, j) };
                    }
                }
                _ => continue,
            }
            for (j, l) in lanes.iter().enumerate().take(n) {
                if let Some((c, lane)) = *l {
                    if c == d || checker.may_name((d, j), (c, lane), &alias) {
                        alias[d.index()][j] = Some((c, lane));
                    }
                }
            }
        }
    }
    alias
}

/// Decides whether a value may name a register that latch coalescing gave to several values.
struct Checker<'a> {
    k: &'a Kernel,
    cfg: &'a Cfg,
    group: &'a HashMap<ValueId, Vec<ValueId>>,
    into: &'a [Option<ValueId>],
    /// Computed on first need (most bodies never need it).
    live: Option<Liveness>,
    /// Each placed instruction's block and position, likewise.
    pos: Option<HashMap<InstId, (BlockId, usize)>>,
}

impl Checker<'_> {
    /// Whether element `j` of `d` may name the register of `root` (element `l` of `c`, holding it
    /// at `d`'s definition): true unless another value written to that register is written while
    /// `d` is live, or by an instruction that reads `d` and is not a [`single_instruction`] op. A
    /// write that copies the register to itself (an `insert` of another element, a `vec` of that
    /// very element, `d`'s included: no instruction) keeps `c`'s element there and does not count.
    fn may_name(&mut self, (d, j): (ValueId, usize), root: (ValueId, u8), alias: &[[Root; Regs::MAX]]) -> bool {
        let (c, l) = root;
        let owner = self.into[c.index()].unwrap_or(c);
        let Some(writers) = self.group.get(&owner) else { return true };
        let k = self.k;
        // The register an operand's element is, as a root; `d`'s element `j` as if it named `root`.
        let root_of = |o: Operand, e: usize| {
            let v = o.as_value()?;
            Some(if (v, e) == (d, j) { root } else { alias[v.index()][e].unwrap_or((v, e as u8)) })
        };
        for &g in writers.iter().filter(|&&g| g != c) {
            match k.value(g).def {
                ValueDef::BlockParam(b, _) => {
                    if self.liveness().live_in(b, d) {
                        return false;
                    }
                }
                ValueDef::Inst(i) => {
                    let inst = k.inst(i);
                    let in_place = match inst.op {
                        Op::VecInsert(..) => {
                            matches!(inst.args[1], Operand::Const(x) if x.bits != l as u64)
                                && root_of(inst.args[0], l as usize) == Some(root)
                        }
                        Op::VecBuild(..) => inst.args.get(l as usize).and_then(|&x| root_of(x, 0)) == Some(root),
                        _ => false,
                    };
                    if in_place {
                        continue;
                    }
                    if inst.args.contains(&Operand::Value(d)) && !single_instruction(&inst.op) {
                        return false;
                    }
                    let Some(&(b, at)) = self.positions().get(&i) else { return false };
                    let blk = k.block(b);
                    let reads = |o: &Operand| *o == Operand::Value(d);
                    if blk.insts[at + 1..].iter().any(|&j| k.inst(j).args.iter().any(reads))
                        || blk.term.operands().any(|o| reads(&o))
                        || self.liveness().live_out(b, d)
                    {
                        return false;
                    }
                }
                ValueDef::Param(_) => return false,
            }
        }
        true
    }

    fn liveness(&mut self) -> &Liveness {
        self.live.get_or_insert_with(|| Liveness::new(self.k, self.cfg))
    }

    fn positions(&mut self) -> &HashMap<InstId, (BlockId, usize)> {
        let k = self.k;
        self.pos.get_or_insert_with(|| {
            let mut m = HashMap::new();
            for b in k.block_ids() {
                for (at, &i) in k.block(b).insts.iter().enumerate() {
                    m.insert(i, (b, at));
                }
            }
            m
        })
    }
}

/// Which values are live into and out of each reachable block (a value is read by a block's
/// instructions or terminator, block arguments at the end of the block that passes them; a
/// block's parameters are defined at its start).
#[derive(Debug)]
pub struct Liveness {
    words: usize,
    live_in: Vec<u64>,
    live_out: Vec<u64>,
}

impl Liveness {
    pub fn new(k: &Kernel, cfg: &Cfg) -> Liveness {
        let words = k.values.len().div_ceil(64).max(1);
        let nb = k.blocks.len();
        let mut uses = vec![0u64; nb * words];
        let mut defs = vec![0u64; nb * words];
        let set = |bits: &mut [u64], b: BlockId, v: ValueId| {
            bits[b.index() * words + v.index() / 64] |= 1 << (v.index() % 64)
        };
        let has = |bits: &[u64], b: BlockId, v: ValueId| {
            bits[b.index() * words + v.index() / 64] >> (v.index() % 64) & 1 != 0
        };
        for &b in cfg.rpo() {
            let blk = k.block(b);
            for &p in &blk.params {
                set(&mut defs, b, p);
            }
            let reads = blk.insts.iter().map(|&i| (k.inst(i).args.clone(), k.inst(i).result));
            let term: Vec<Operand> = blk.term.operands().collect();
            for (args, result) in reads.chain(std::iter::once((term.into(), None))) {
                for v in args.iter().filter_map(|a| a.as_value()).filter(|v| v.index() < k.values.len()) {
                    if !has(&defs, b, v) {
                        set(&mut uses, b, v);
                    }
                }
                if let Some(r) = result {
                    set(&mut defs, b, r);
                }
            }
        }
        let mut live_in = uses.clone();
        let mut live_out = vec![0u64; nb * words];
        let mut changed = true;
        while changed {
            changed = false;
            for &b in cfg.rpo().iter().rev() {
                let o = b.index() * words;
                for &s in cfg.succs(b) {
                    let si = s.index() * words;
                    for w in 0..words {
                        live_out[o + w] |= live_in[si + w];
                    }
                }
                for w in 0..words {
                    let x = uses[o + w] | (live_out[o + w] & !defs[o + w]);
                    if x != live_in[o + w] {
                        live_in[o + w] = x;
                        changed = true;
                    }
                }
            }
        }
        Liveness { words, live_in, live_out }
    }

    fn bit(bits: &[u64], words: usize, b: BlockId, v: ValueId) -> bool {
        bits.get(b.index() * words + v.index() / 64).is_some_and(|w| w >> (v.index() % 64) & 1 != 0)
    }

    /// Whether `v` is live at the start of `b` (after its parameters are bound).
    pub fn live_in(&self, b: BlockId, v: ValueId) -> bool {
        Liveness::bit(&self.live_in, self.words, b, v)
    }

    /// Whether `v` is live at the end of `b` (after its terminator reads its operands).
    pub fn live_out(&self, b: BlockId, v: ValueId) -> bool {
        Liveness::bit(&self.live_out, self.words, b, v)
    }
}
