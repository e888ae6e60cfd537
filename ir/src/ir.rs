//! The in-memory IR: modules, kernels, blocks with block parameters, instructions and SSA values.
//!
//! Guarantees:
//! - Entities of a kernel live in arenas indexed by typed handles ([`ValueId`], [`InstId`],
//!   [`BlockId`]); a handle is only meaningful for the kernel that made it.
//! - Every block has exactly one terminator (by construction: [`Block::term`]); block 0 is the
//!   entry block.
//! - Every value, instruction, block and kernel keeps the [`Span`] of its source text (or
//!   [`Span::DUMMY`] when made by a pass). Spans never take part in equality tests done by
//!   [`Module::structurally_eq`].
//! - Instructions removed from a block stay in the arena but are unreachable from the block
//!   layout; all consumers walk `blocks[b].insts`, never the arena directly.
//!
//! What this module does not guarantee: that a kernel is well-formed (types, dominance). That is the
//! verifier's job ([`crate::verify`]).

use crate::op::Op;
use crate::span::Span;
use crate::types::{Constant, ScalarType, Type};

macro_rules! entity {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);
        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

entity!(
    /// An SSA value of a kernel: a parameter, a block parameter or an instruction result.
    ValueId
);
entity!(
    /// An instruction of a kernel.
    InstId
);
entity!(
    /// A basic block of a kernel.
    BlockId
);

/// A translation unit: kernels, the device functions they call, and the launch graphs that use
/// the kernels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    pub kernels: Vec<Kernel>,
    /// Device functions (`func @name(...) -> T { ... }`): the same body representation as a
    /// kernel, with [`Kernel::func`] set. Imported functions are here too.
    pub funcs: Vec<Kernel>,
    /// Launch graphs over the kernels ([`crate::graph`]).
    pub graphs: Vec<crate::graph::Graph>,
}

impl Module {
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
    pub fn kernel_mut(&mut self, name: &str) -> Option<&mut Kernel> {
        self.kernels.iter_mut().find(|k| k.name == name)
    }
    pub fn func(&self, name: &str) -> Option<&Kernel> {
        self.funcs.iter().find(|k| k.name == name)
    }
    /// The index of function `name` in [`Module::funcs`].
    pub fn func_index(&self, name: &str) -> Option<usize> {
        self.funcs.iter().position(|k| k.name == name)
    }
    /// Every body of the module: kernels first, then functions.
    pub fn bodies(&self) -> impl Iterator<Item = &Kernel> + '_ {
        self.kernels.iter().chain(&self.funcs)
    }
    /// Every body of the module, mutably: kernels first, then functions.
    pub fn bodies_mut(&mut self) -> impl Iterator<Item = &mut Kernel> + '_ {
        self.kernels.iter_mut().chain(&mut self.funcs)
    }
    /// Whether any kernel or function calls a function.
    pub fn has_calls(&self) -> bool {
        self.bodies().any(|k| !k.callees.is_empty())
    }
    pub fn graph(&self, name: &str) -> Option<&crate::graph::Graph> {
        self.graphs.iter().find(|g| g.name == name)
    }
    /// A copy with every span replaced by [`Span::DUMMY`].
    pub fn without_spans(&self) -> Module {
        let mut m = self.clone();
        for k in m.kernels.iter_mut().chain(&mut m.funcs) {
            k.clear_spans();
        }
        for g in &mut m.graphs {
            g.clear_spans();
        }
        m
    }
    /// Equality ignoring source spans: what `parse(print(m)) == m` means.
    pub fn structurally_eq(&self, other: &Module) -> bool {
        self.without_spans() == other.without_spans()
    }
}

/// Where an SSA value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueDef {
    /// The n-th kernel parameter.
    Param(u32),
    /// The n-th parameter of a block.
    BlockParam(BlockId, u32),
    /// The result of an instruction.
    Inst(InstId),
}

/// A value or block name. Names up to 24 bytes (all but the longest) are stored inline, without
/// a heap allocation; it dereferences to `&str`.
pub type Name = compact_str::CompactString;

#[derive(Clone, Debug, PartialEq)]
pub struct ValueData {
    /// The name without `%`.
    pub name: Name,
    pub ty: Type,
    pub def: ValueDef,
    /// Where the value is defined.
    pub span: Span,
}

/// An instruction operand: a value or an immediate constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    Value(ValueId),
    Const(Constant),
}

impl Operand {
    pub fn as_value(self) -> Option<ValueId> {
        match self {
            Operand::Value(v) => Some(v),
            Operand::Const(_) => None,
        }
    }
    pub fn as_const(self) -> Option<Constant> {
        match self {
            Operand::Const(c) => Some(c),
            Operand::Value(_) => None,
        }
    }
}

impl From<ValueId> for Operand {
    fn from(v: ValueId) -> Operand {
        Operand::Value(v)
    }
}

impl From<Constant> for Operand {
    fn from(c: Constant) -> Operand {
        Operand::Const(c)
    }
}

/// An instruction's operands, stored inline up to three (every op but a few take at most three),
/// so walking instructions does not chase a pointer per instruction.
pub type Args = smallvec::SmallVec<[Operand; 3]>;

#[derive(Clone, Debug, PartialEq)]
pub struct InstData {
    pub op: Op,
    pub args: Args,
    pub result: Option<ValueId>,
    pub span: Span,
}

/// A jump target with the arguments bound to the target block's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockCall {
    pub block: BlockId,
    pub args: Vec<Operand>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Terminator {
    /// `br %cond, then(args), else(args)`.
    Br { cond: Operand, then_: BlockCall, else_: BlockCall },
    /// `jmp target(args)`.
    Jmp(BlockCall),
    /// `ret`: in a kernel the thread exits; in a function the thread returns to its caller, with
    /// the value when the function has a result (`ret %v`).
    Ret(Option<Operand>),
}

impl Terminator {
    /// The successor edges, in order (`then` before `else`). Allocates nothing.
    pub fn successors(&self) -> impl DoubleEndedIterator<Item = &BlockCall> + '_ {
        let (a, b) = match self {
            Terminator::Br { then_, else_, .. } => (Some(then_), Some(else_)),
            Terminator::Jmp(c) => (Some(c), None),
            Terminator::Ret(_) => (None, None),
        };
        a.into_iter().chain(b)
    }
    pub fn successors_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut BlockCall> + '_ {
        let (a, b) = match self {
            Terminator::Br { then_, else_, .. } => (Some(then_), Some(else_)),
            Terminator::Jmp(c) => (Some(c), None),
            Terminator::Ret(_) => (None, None),
        };
        a.into_iter().chain(b)
    }
    /// Every operand the terminator reads, mutably, in the order of [`Terminator::operands`] (the
    /// returned value of `ret %v` first, like a branch condition).
    /// Allocates nothing.
    pub fn operands_mut(&mut self) -> impl Iterator<Item = &mut Operand> + '_ {
        let (cond, a, b) = match self {
            Terminator::Br { cond, then_, else_ } => (Some(cond), Some(then_), Some(else_)),
            Terminator::Jmp(c) => (None, Some(c), None),
            Terminator::Ret(v) => (v.as_mut(), None, None),
        };
        cond.into_iter().chain(a.into_iter().chain(b).flat_map(|c| c.args.iter_mut()))
    }
    /// Every operand the terminator reads (condition, then block arguments in edge order).
    /// Allocates nothing.
    pub fn operands(&self) -> impl Iterator<Item = Operand> + '_ {
        let cond = match self {
            Terminator::Br { cond, .. } => Some(*cond),
            Terminator::Ret(v) => *v,
            _ => None,
        };
        cond.into_iter().chain(self.successors().flat_map(|c| c.args.iter().copied()))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// The label without `:`.
    pub name: Name,
    pub params: Vec<ValueId>,
    pub insts: Vec<InstId>,
    pub term: Terminator,
    /// The label's span.
    pub span: Span,
    /// The terminator's span.
    pub term_span: Span,
}

/// A shared-memory declaration: `shared @tile: f32[256] align 16`, or `shared @dyn: f32[]` for the
/// launch's dynamic shared memory.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedDecl {
    /// The name without `@`.
    pub name: String,
    pub elem: ScalarType,
    /// Number of elements; `None` for dynamic shared memory (sized at launch).
    pub len: Option<u64>,
    /// Alignment in bytes (a power of two, at least the element size).
    pub align: u32,
    pub span: Span,
}

impl SharedDecl {
    pub fn size_bytes(&self) -> Option<u64> {
        self.len.map(|n| n * self.elem.bytes() as u64)
    }
}

/// A kernel's declared block shape, `reqntid(x[, y[, z]])` (PTX `.reqntid`): every launch must use
/// exactly this block. The verifier checks each dimension is at least 1 and the product at most
/// 1024 (x, y <= 1024, z <= 64); launches with another block are invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReqNtid {
    /// `[x, y, z]`, omitted dimensions 1.
    pub dims: [u32; 3],
    /// The `reqntid(...)` clause.
    pub span: Span,
}

impl ReqNtid {
    /// Threads per block.
    pub fn threads(&self) -> u64 {
        self.dims.iter().map(|&d| d as u64).product()
    }
    /// The clause as printed: trailing dimensions of 1 omitted (x always written).
    pub fn to_text(&self) -> String {
        let n = if self.dims[2] != 1 {
            3
        } else if self.dims[1] != 1 {
            2
        } else {
            1
        };
        let dims: Vec<String> = self.dims[..n].iter().map(|d| d.to_string()).collect();
        format!("reqntid({})", dims.join(", "))
    }
}

/// What makes a body a device function rather than a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuncInfo {
    /// The result type (`-> T`), `None` for a function without a result.
    pub ret: Option<Type>,
    /// The span of `-> T` (or of the parameter list's `)` when there is none).
    pub ret_span: Span,
}

/// A function a body calls, by name: `Op::Call(n)` calls `callees[n]`. Resolved against
/// [`Module::funcs`] by name (the verifier reports unknown names), so a body prints and parses
/// on its own.
#[derive(Clone, Debug, PartialEq)]
pub struct Callee {
    /// The name without `@`.
    pub name: String,
    /// The first call that names it.
    pub span: Span,
}

/// A kernel or, with [`Kernel::func`] set, a device function: both are bodies of blocks in the
/// same representation, so every pass that works on a kernel's body works on a function's.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The name without `@`.
    pub name: String,
    /// `Some` for a device function (`func @name(...) -> T`).
    pub func: Option<FuncInfo>,
    /// The functions this body calls (`Op::Call(n)` names `callees[n]`).
    pub callees: Vec<Callee>,
    pub params: Vec<ValueId>,
    /// The declared block shape, if any.
    pub reqntid: Option<ReqNtid>,
    /// `assume_masks()`: the member masks of this kernel's collectives (other than the constant
    /// full mask) are assumed right, not proven, by barrier verification; the span of the
    /// attribute. The interpreter still checks them at run time.
    pub assume_masks: Option<Span>,
    pub shared: Vec<SharedDecl>,
    /// Layout order; `blocks[0]` is the entry block.
    pub blocks: Vec<Block>,
    pub insts: Vec<InstData>,
    pub values: Vec<ValueData>,
    pub span: Span,
}

impl Kernel {
    /// An empty kernel with a single `entry` block that returns.
    pub fn new(name: impl Into<String>) -> Kernel {
        Kernel {
            name: name.into(),
            func: None,
            callees: vec![],
            params: vec![],
            reqntid: None,
            assume_masks: None,
            shared: vec![],
            blocks: vec![],
            insts: vec![],
            values: vec![],
            span: Span::DUMMY,
        }
    }

    pub const ENTRY: BlockId = BlockId(0);

    pub fn value(&self, v: ValueId) -> &ValueData {
        &self.values[v.index()]
    }
    pub fn value_type(&self, v: ValueId) -> Type {
        self.values[v.index()].ty
    }
    pub fn inst(&self, i: InstId) -> &InstData {
        &self.insts[i.index()]
    }
    pub fn inst_mut(&mut self, i: InstId) -> &mut InstData {
        &mut self.insts[i.index()]
    }
    pub fn block(&self, b: BlockId) -> &Block {
        &self.blocks[b.index()]
    }
    pub fn block_mut(&mut self, b: BlockId) -> &mut Block {
        &mut self.blocks[b.index()]
    }
    pub fn block_ids(&self) -> impl Iterator<Item = BlockId> + '_ {
        (0..self.blocks.len() as u32).map(BlockId)
    }
    pub fn block_by_name(&self, name: &str) -> Option<BlockId> {
        self.blocks.iter().position(|b| b.name == name).map(|i| BlockId(i as u32))
    }
    pub fn param_by_name(&self, name: &str) -> Option<(usize, ValueId)> {
        self.params.iter().enumerate().find(|(_, v)| self.value(**v).name == name).map(|(i, v)| (i, *v))
    }
    /// Whether this body is a device function.
    pub fn is_func(&self) -> bool {
        self.func.is_some()
    }
    /// The result type of a function (`None` for kernels and functions without a result).
    pub fn ret_type(&self) -> Option<Type> {
        self.func.and_then(|f| f.ret)
    }
    /// The index of callee `name`, added to [`Kernel::callees`] when new.
    pub fn callee_index(&mut self, name: &str, span: Span) -> u32 {
        match self.callees.iter().position(|c| c.name == name) {
            Some(i) => i as u32,
            None => {
                self.callees.push(Callee { name: name.to_string(), span });
                (self.callees.len() - 1) as u32
            }
        }
    }
    pub fn shared_by_name(&self, name: &str) -> Option<u32> {
        self.shared.iter().position(|s| s.name == name).map(|i| i as u32)
    }

    /// The type of an operand.
    pub fn operand_type(&self, o: Operand) -> Type {
        match o {
            Operand::Value(v) => self.value_type(v),
            Operand::Const(c) => Type::Scalar(c.ty),
        }
    }

    /// Adds a value to the arena.
    pub fn add_value(&mut self, name: impl Into<Name>, ty: Type, def: ValueDef, span: Span) -> ValueId {
        let id = ValueId(self.values.len() as u32);
        self.values.push(ValueData { name: name.into(), ty, def, span });
        id
    }

    /// Adds a kernel parameter.
    pub fn add_param(&mut self, name: impl Into<Name>, ty: Type) -> ValueId {
        let n = self.params.len() as u32;
        let v = self.add_value(name, ty, ValueDef::Param(n), Span::DUMMY);
        self.params.push(v);
        v
    }

    /// Appends a block (terminated by `ret` until its terminator is set).
    pub fn add_block(&mut self, name: impl Into<Name>) -> BlockId {
        let id = BlockId(self.blocks.len() as u32);
        self.blocks.push(Block {
            name: name.into(),
            params: vec![],
            insts: vec![],
            term: Terminator::Ret(None),
            span: Span::DUMMY,
            term_span: Span::DUMMY,
        });
        id
    }

    /// Adds a block parameter.
    pub fn add_block_param(&mut self, b: BlockId, name: impl Into<Name>, ty: Type) -> ValueId {
        let n = self.blocks[b.index()].params.len() as u32;
        let v = self.add_value(name, ty, ValueDef::BlockParam(b, n), Span::DUMMY);
        self.blocks[b.index()].params.push(v);
        v
    }

    /// Creates an instruction (not yet placed in any block). When `result` is `Some((name, ty))`
    /// a result value is created too.
    pub fn create_inst(
        &mut self,
        op: Op,
        args: impl IntoIterator<Item = Operand>,
        result: Option<(Name, Type)>,
        span: Span,
    ) -> InstId {
        let id = InstId(self.insts.len() as u32);
        let args = args.into_iter().collect();
        let result = result.map(|(name, ty)| self.add_value(name, ty, ValueDef::Inst(id), span));
        self.insts.push(InstData { op, args, result, span });
        id
    }

    /// Creates an instruction and appends it to block `b`.
    pub fn append_inst(
        &mut self,
        b: BlockId,
        op: Op,
        args: impl IntoIterator<Item = Operand>,
        result: Option<(Name, Type)>,
        span: Span,
    ) -> InstId {
        let id = self.create_inst(op, args, result, span);
        self.blocks[b.index()].insts.push(id);
        id
    }

    /// The instructions of the kernel in layout order, with their block.
    pub fn placed_insts(&self) -> impl Iterator<Item = (BlockId, InstId)> + '_ {
        self.block_ids().flat_map(move |b| self.block(b).insts.iter().map(move |i| (b, *i)))
    }

    /// Blocks reachable from the entry in reverse post-order, computed iteratively in time linear
    /// in the number of blocks and edges. The depth-first search takes a block's last successor
    /// first, so for structured code the order is the layout order (`then` before `else` before
    /// the join), and walks over it read the arenas front to back. The search itself runs on a
    /// table of successors gathered in one sweep over the blocks (8 bytes per block), not on the
    /// blocks, which it would otherwise revisit in scattered order. This is the crate's one
    /// reverse post-order: [`crate::analysis::cfg::Cfg::rpo`] is this order, computed once.
    pub fn reverse_post_order(&self) -> Vec<BlockId> {
        let n = self.blocks.len();
        let mut post = Vec::with_capacity(n);
        if n == 0 {
            return post;
        }
        const NONE: u32 = u32::MAX;
        // Successors in the order the search takes them (last first); targets outside the kernel
        // are left out (the verifier reports them).
        let mut succ = vec![[NONE; 2]; n];
        for (slot, b) in succ.iter_mut().zip(&self.blocks) {
            for (j, c) in b.term.successors().rev().take(2).enumerate() {
                if c.block.index() < n {
                    slot[j] = c.block.0;
                }
            }
        }
        let mut seen = vec![false; n];
        // Stack of (block, next successor position); a block is on it at most once, so it never
        // grows past `n` (reserved up front: no regrowth on deep CFGs).
        let mut stack: Vec<(u32, u32)> = Vec::with_capacity(n);
        stack.push((Kernel::ENTRY.0, 0));
        seen[0] = true;
        while let Some(top) = stack.last_mut() {
            let (b, pos) = *top;
            match succ[b as usize].get(pos as usize) {
                Some(&s) => {
                    top.1 += 1;
                    if s != NONE && !seen[s as usize] {
                        seen[s as usize] = true;
                        stack.push((s, 0));
                    }
                }
                None => {
                    post.push(BlockId(b));
                    stack.pop();
                }
            }
        }
        post.reverse();
        post
    }

    /// Number of instructions placed in blocks (terminators excluded).
    pub fn inst_count(&self) -> usize {
        self.blocks.iter().map(|b| b.insts.len()).sum()
    }

    /// Rebuilds the arenas so that they hold only placed instructions and live values, renumbered in
    /// layout order. Printing and re-parsing a compacted kernel gives a structurally equal kernel.
    ///
    /// New numbering: kernel parameters, then block parameters in block order, then instruction
    /// results in layout order; instructions in layout order. When that order is increasing in the
    /// old numbering (the usual case after passes that only remove and merge: a compacted kernel
    /// stays in order), entities slide down inside the existing arenas; otherwise they move into
    /// new ones. Both give the same kernel.
    pub fn compact(&mut self) {
        if !self.compact_in_place() {
            self.compact_into_new_arenas();
        }
        self.compact_callees();
    }

    /// Keeps in [`Kernel::callees`] only the functions placed calls name, numbered in the order
    /// of their first call in the layout (the order the parser assigns), so a body whose last call
    /// of a function was removed no longer lists it.
    pub fn compact_callees(&mut self) {
        if self.callees.is_empty() {
            return;
        }
        let mut map: Vec<Option<u32>> = vec![None; self.callees.len()];
        let mut kept: Vec<Callee> = Vec::new();
        for bi in 0..self.blocks.len() {
            for k in 0..self.blocks[bi].insts.len() {
                let i = self.blocks[bi].insts[k];
                let Some(d) = self.insts.get_mut(i.index()) else { continue };
                let Op::Call(c) = d.op else { continue };
                let Some(slot) = map.get_mut(c as usize) else { continue };
                let n = *slot.get_or_insert_with(|| {
                    kept.push(self.callees[c as usize].clone());
                    (kept.len() - 1) as u32
                });
                d.op = Op::Call(n);
            }
        }
        self.callees = kept;
    }

    /// Whether [`Kernel::compact`] would leave this kernel equal to what it is: the arenas hold
    /// exactly the placed instructions and live values, numbered in layout order, and every value
    /// records where it is defined. Reads the kernel once; allocates nothing.
    pub fn is_compact(&self) -> bool {
        let mut nv = 0u32;
        let mut next = |v: ValueId, def: ValueDef| -> bool {
            let ok = v.0 == nv && self.values.get(v.index()).is_some_and(|d| d.def == def);
            nv += 1;
            ok
        };
        if !self.params.iter().enumerate().all(|(n, &p)| next(p, ValueDef::Param(n as u32))) {
            return false;
        }
        for (bi, b) in self.blocks.iter().enumerate() {
            if !b.params.iter().enumerate().all(|(n, &p)| next(p, ValueDef::BlockParam(BlockId(bi as u32), n as u32))) {
                return false;
            }
        }
        let mut ni = 0u32;
        for b in &self.blocks {
            for &i in &b.insts {
                if i.0 != ni || i.index() >= self.insts.len() {
                    return false;
                }
                if let Some(r) = self.insts[i.index()].result {
                    if !next(r, ValueDef::Inst(i)) {
                        return false;
                    }
                }
                ni += 1;
            }
        }
        self.values.len() == nv as usize && self.insts.len() == ni as usize
    }

    /// The renumbering of [`Kernel::compact`] (old value index to new id, [`ValueId`]`(u32::MAX)`
    /// for values that go away), when the layout order is increasing in the current numbering for
    /// instructions and for values, with every id inside its arena; None otherwise.
    fn in_place_value_map(&self) -> Option<Vec<ValueId>> {
        const GONE: ValueId = ValueId(u32::MAX);
        let mut vmap = vec![GONE; self.values.len()];
        let mut nv = 0u32;
        let mut prev_v: Option<u32> = None;
        let mut assign = |v: ValueId| -> bool {
            if v.index() >= vmap.len() || prev_v.is_some_and(|p| v.0 <= p) {
                return false;
            }
            prev_v = Some(v.0);
            vmap[v.index()] = ValueId(nv);
            nv += 1;
            true
        };
        if !self.params.iter().all(|&p| assign(p)) || !self.blocks.iter().all(|b| b.params.iter().all(|&p| assign(p))) {
            return None;
        }
        let mut prev_i: Option<u32> = None;
        for b in &self.blocks {
            for i in &b.insts {
                if prev_i.is_some_and(|p| i.0 <= p) || i.index() >= self.insts.len() {
                    return None;
                }
                prev_i = Some(i.0);
                if !self.insts[i.index()].result.map_or(true, &mut assign) {
                    return None;
                }
            }
        }
        Some(vmap)
    }

    /// [`Kernel::compact`] inside the existing arenas; false (and nothing changed) when the layout
    /// order is not increasing.
    fn compact_in_place(&mut self) -> bool {
        let Some(vmap) = self.in_place_value_map() else { return false };
        let map = |o: &mut Operand| renumber(&vmap, o);
        let Kernel { params, blocks, insts, values, .. } = self;
        // Entity `old` goes to position `new <= old`. Every position below `new` is final, and the
        // entity found at `new` is dead or already moved (a live one there would have an old index
        // below `old`, so it was placed earlier), so a swap never loses a live entity.
        let mut nv = 0usize;
        let mut place = |v: &mut ValueId, def: ValueDef| {
            values.swap(nv, v.index());
            values[nv].def = def;
            *v = ValueId(nv as u32);
            nv += 1;
        };
        for (n, p) in params.iter_mut().enumerate() {
            place(p, ValueDef::Param(n as u32));
        }
        for (bi, b) in blocks.iter_mut().enumerate() {
            for (n, p) in b.params.iter_mut().enumerate() {
                place(p, ValueDef::BlockParam(BlockId(bi as u32), n as u32));
            }
        }
        // One sweep moves each instruction, renumbers its operands and places its result.
        let mut ni = 0usize;
        for b in blocks.iter_mut() {
            for i in b.insts.iter_mut() {
                insts.swap(ni, i.index());
                let d = &mut insts[ni];
                d.args.iter_mut().for_each(map);
                if let Some(r) = &mut d.result {
                    place(r, ValueDef::Inst(InstId(ni as u32)));
                }
                *i = InstId(ni as u32);
                ni += 1;
            }
            b.term.operands_mut().for_each(map);
        }
        values.truncate(nv);
        insts.truncate(ni);
        true
    }

    /// Rewrites every operand through `vmap` (see [`renumber`]).
    fn remap_operands(&mut self, vmap: &[ValueId]) {
        let map = |o: &mut Operand| renumber(vmap, o);
        for inst in &mut self.insts {
            inst.args.iter_mut().for_each(map);
        }
        for b in &mut self.blocks {
            b.term.operands_mut().for_each(map);
        }
    }

    /// [`Kernel::compact`] by moving every live entity into new arenas (any order).
    fn compact_into_new_arenas(&mut self) {
        // Entities are moved out of the old arenas, not cloned: compaction allocates only the new
        // arenas and the renumbering map.
        let mut old_values = std::mem::take(&mut self.values);
        let mut old_insts = std::mem::take(&mut self.insts);
        let live_insts: usize = self.blocks.iter().map(|b| b.insts.len()).sum();
        let live_values = self.params.len() + self.blocks.iter().map(|b| b.params.len()).sum::<usize>() + live_insts;
        self.values.reserve_exact(live_values);
        self.insts.reserve_exact(live_insts);
        const GONE: ValueId = ValueId(u32::MAX);
        let mut vmap = vec![GONE; old_values.len()];
        let mut take_value = |values: &mut Vec<ValueData>, v: ValueId, def: ValueDef| -> ValueId {
            let nv = ValueId(values.len() as u32);
            let d = &mut old_values[v.index()];
            values.push(ValueData { name: std::mem::take(&mut d.name), ty: d.ty, def, span: d.span });
            vmap[v.index()] = nv;
            nv
        };
        for (n, p) in self.params.iter_mut().enumerate() {
            *p = take_value(&mut self.values, *p, ValueDef::Param(n as u32));
        }
        for (bi, b) in self.blocks.iter_mut().enumerate() {
            for (n, p) in b.params.iter_mut().enumerate() {
                *p = take_value(&mut self.values, *p, ValueDef::BlockParam(BlockId(bi as u32), n as u32));
            }
        }
        for b in self.blocks.iter_mut() {
            for i in b.insts.iter_mut() {
                let d = &mut old_insts[i.index()];
                let ni = InstId(self.insts.len() as u32);
                let result = d.result.map(|r| take_value(&mut self.values, r, ValueDef::Inst(ni)));
                self.insts.push(InstData { op: d.op, args: std::mem::take(&mut d.args), result, span: d.span });
                *i = ni;
            }
        }
        self.remap_operands(&vmap);
        drop(old_values);
        drop(old_insts);
    }

    fn clear_spans(&mut self) {
        self.map_spans(|_| Span::DUMMY);
    }

    /// Rewrites every span of the body (its own, values, instructions, blocks, shared
    /// declarations, callees, `reqntid`, the function header) through `f`.
    pub fn map_spans(&mut self, f: impl Fn(Span) -> Span) {
        self.span = f(self.span);
        if let Some(r) = &mut self.reqntid {
            r.span = f(r.span);
        }
        if let Some(info) = &mut self.func {
            info.ret_span = f(info.ret_span);
        }
        for c in &mut self.callees {
            c.span = f(c.span);
        }
        for v in &mut self.values {
            v.span = f(v.span);
        }
        for i in &mut self.insts {
            i.span = f(i.span);
        }
        for b in &mut self.blocks {
            b.span = f(b.span);
            b.term_span = f(b.term_span);
        }
        for s in &mut self.shared {
            s.span = f(s.span);
        }
    }
}

/// Renumbers a value operand through `vmap` (old value index to new id) during compaction; a use
/// of a value that is no longer defined gets a dangling id past the end of the arena, which the
/// verifier reports.
fn renumber(vmap: &[ValueId], o: &mut Operand) {
    if let Operand::Value(v) = o {
        *v = vmap.get(v.index()).copied().unwrap_or(ValueId(u32::MAX));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{random_kernel, GenConfig};

    /// Generated kernels, compacted (as the parser returns them), with every third instruction
    /// unplaced (as passes leave them): the layout order stays increasing, so `compact` works in
    /// place.
    fn thinned(seed: u64) -> Kernel {
        let mut k = random_kernel(seed, &GenConfig { insts: 200, ..GenConfig::default() });
        k.compact();
        let mut n = 0;
        for b in &mut k.blocks {
            b.insts.retain(|_| {
                n += 1;
                n % 3 != 0
            });
        }
        k
    }

    #[test]
    fn compacting_in_place_gives_the_kernel_new_arenas_give() {
        for seed in 0..30 {
            let k = thinned(seed);
            assert!(k.in_place_value_map().is_some(), "seed {seed}");
            let (mut a, mut b) = (k.clone(), k.clone());
            assert!(a.compact_in_place());
            b.compact_into_new_arenas();
            assert!(a == b, "seed {seed}:\n{}\n{}", crate::print_kernel(&a), crate::print_kernel(&b));
            assert!(a.insts.len() < k.insts.len() && a.values.len() < k.values.len());
        }
    }

    #[test]
    fn compacting_out_of_layout_order_uses_new_arenas() {
        for seed in 0..30 {
            let mut k = thinned(seed);
            // Swap the instruction lists of the first two blocks that have instructions.
            let full: Vec<usize> = (0..k.blocks.len()).filter(|&b| !k.blocks[b].insts.is_empty()).take(2).collect();
            let [x, y] = full[..] else { continue };
            let moved = std::mem::take(&mut k.blocks[x].insts);
            k.blocks[x].insts = std::mem::replace(&mut k.blocks[y].insts, moved);
            assert!(k.in_place_value_map().is_none());
            let mut a = k.clone();
            assert!(!a.compact_in_place(), "seed {seed}");
            assert!(a == k, "a refused in-place compaction must leave the kernel untouched");
            a.compact();
            let mut b = k.clone();
            b.compact_into_new_arenas();
            assert!(a == b);
            // Renumbered in layout order: instruction ids count up through the blocks.
            let ids: Vec<u32> = a.blocks.iter().flat_map(|b| b.insts.iter().map(|i| i.0)).collect();
            assert_eq!(ids, (0..ids.len() as u32).collect::<Vec<_>>());
        }
    }
}
