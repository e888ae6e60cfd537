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

/// A translation unit: kernels (and the launch graphs that use them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    pub kernels: Vec<Kernel>,
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
    pub fn graph(&self, name: &str) -> Option<&crate::graph::Graph> {
        self.graphs.iter().find(|g| g.name == name)
    }
    /// A copy with every span replaced by [`Span::DUMMY`].
    pub fn without_spans(&self) -> Module {
        let mut m = self.clone();
        for k in &mut m.kernels {
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

#[derive(Clone, Debug, PartialEq)]
pub struct ValueData {
    /// The name without `%`.
    pub name: String,
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

#[derive(Clone, Debug, PartialEq)]
pub struct InstData {
    pub op: Op,
    pub args: Vec<Operand>,
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
    /// `ret`: the thread exits.
    Ret,
}

impl Terminator {
    /// The successor edges, in order (`then` before `else`).
    pub fn successors(&self) -> Vec<&BlockCall> {
        match self {
            Terminator::Br { then_, else_, .. } => vec![then_, else_],
            Terminator::Jmp(c) => vec![c],
            Terminator::Ret => vec![],
        }
    }
    pub fn successors_mut(&mut self) -> Vec<&mut BlockCall> {
        match self {
            Terminator::Br { then_, else_, .. } => vec![then_, else_],
            Terminator::Jmp(c) => vec![c],
            Terminator::Ret => vec![],
        }
    }
    /// Every operand the terminator reads (condition, then block arguments in edge order).
    pub fn operands(&self) -> Vec<Operand> {
        let mut out = Vec::new();
        if let Terminator::Br { cond, .. } = self {
            out.push(*cond);
        }
        for c in self.successors() {
            out.extend(c.args.iter().copied());
        }
        out
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// The label without `:`.
    pub name: String,
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

#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The name without `@`.
    pub name: String,
    pub params: Vec<ValueId>,
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
            params: vec![],
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
    pub fn add_value(&mut self, name: impl Into<String>, ty: Type, def: ValueDef, span: Span) -> ValueId {
        let id = ValueId(self.values.len() as u32);
        self.values.push(ValueData { name: name.into(), ty, def, span });
        id
    }

    /// Adds a kernel parameter.
    pub fn add_param(&mut self, name: impl Into<String>, ty: Type) -> ValueId {
        let n = self.params.len() as u32;
        let v = self.add_value(name, ty, ValueDef::Param(n), Span::DUMMY);
        self.params.push(v);
        v
    }

    /// Appends a block (terminated by `ret` until its terminator is set).
    pub fn add_block(&mut self, name: impl Into<String>) -> BlockId {
        let id = BlockId(self.blocks.len() as u32);
        self.blocks.push(Block {
            name: name.into(),
            params: vec![],
            insts: vec![],
            term: Terminator::Ret,
            span: Span::DUMMY,
            term_span: Span::DUMMY,
        });
        id
    }

    /// Adds a block parameter.
    pub fn add_block_param(&mut self, b: BlockId, name: impl Into<String>, ty: Type) -> ValueId {
        let n = self.blocks[b.index()].params.len() as u32;
        let v = self.add_value(name, ty, ValueDef::BlockParam(b, n), Span::DUMMY);
        self.blocks[b.index()].params.push(v);
        v
    }

    /// Creates an instruction (not yet placed in any block). When `result` is `Some((name, ty))`
    /// a result value is created too.
    pub fn create_inst(&mut self, op: Op, args: Vec<Operand>, result: Option<(String, Type)>, span: Span) -> InstId {
        let id = InstId(self.insts.len() as u32);
        let result = result.map(|(name, ty)| self.add_value(name, ty, ValueDef::Inst(id), span));
        self.insts.push(InstData { op, args, result, span });
        id
    }

    /// Creates an instruction and appends it to block `b`.
    pub fn append_inst(
        &mut self,
        b: BlockId,
        op: Op,
        args: Vec<Operand>,
        result: Option<(String, Type)>,
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

    /// A value name not used by any value of the kernel, derived from `base`.
    pub fn fresh_value_name(&self, base: &str) -> String {
        let taken: std::collections::HashSet<&str> = self.values.iter().map(|v| v.name.as_str()).collect();
        if !taken.contains(base) {
            return base.to_string();
        }
        (1..).map(|i| format!("{base}.{i}")).find(|n| !taken.contains(n.as_str())).unwrap()
    }

    /// Number of instructions placed in blocks (terminators excluded).
    pub fn inst_count(&self) -> usize {
        self.blocks.iter().map(|b| b.insts.len()).sum()
    }

    /// Replaces every use of `from` (instruction operands and block arguments) by `to`.
    pub fn replace_uses(&mut self, from: ValueId, to: Operand) {
        let sub = |o: &mut Operand| {
            if *o == Operand::Value(from) {
                *o = to;
            }
        };
        for b in 0..self.blocks.len() {
            let insts = self.blocks[b].insts.clone();
            for i in insts {
                self.insts[i.index()].args.iter_mut().for_each(sub);
            }
            let term = &mut self.blocks[b].term;
            if let Terminator::Br { cond, .. } = term {
                sub(cond);
            }
            for c in term.successors_mut() {
                c.args.iter_mut().for_each(sub);
            }
        }
    }

    /// Rebuilds the arenas so that they hold only placed instructions and live values, renumbered in
    /// layout order. Printing and re-parsing a compacted kernel gives a structurally equal kernel.
    pub fn compact(&mut self) {
        let mut new = Kernel {
            name: self.name.clone(),
            params: vec![],
            shared: self.shared.clone(),
            blocks: vec![],
            insts: vec![],
            values: vec![],
            span: self.span,
        };
        let mut vmap = vec![None; self.values.len()];
        for (n, &p) in self.params.iter().enumerate() {
            let d = self.value(p);
            let nv = new.add_value(d.name.clone(), d.ty, ValueDef::Param(n as u32), d.span);
            new.params.push(nv);
            vmap[p.index()] = Some(nv);
        }
        for (bi, b) in self.blocks.iter().enumerate() {
            let mut params = vec![];
            for (n, &p) in b.params.iter().enumerate() {
                let d = self.value(p);
                let nv =
                    new.add_value(d.name.clone(), d.ty, ValueDef::BlockParam(BlockId(bi as u32), n as u32), d.span);
                params.push(nv);
                vmap[p.index()] = Some(nv);
            }
            new.blocks.push(Block {
                name: b.name.clone(),
                params,
                insts: vec![],
                term: b.term.clone(),
                span: b.span,
                term_span: b.term_span,
            });
        }
        for (bi, b) in self.blocks.iter().enumerate() {
            for &i in &b.insts {
                let d = self.inst(i);
                let ni = InstId(new.insts.len() as u32);
                let result = d.result.map(|r| {
                    let rd = self.value(r);
                    let nv = new.add_value(rd.name.clone(), rd.ty, ValueDef::Inst(ni), rd.span);
                    vmap[r.index()] = Some(nv);
                    nv
                });
                new.insts.push(InstData { op: d.op.clone(), args: d.args.clone(), result, span: d.span });
                new.blocks[bi].insts.push(ni);
            }
        }
        // Remap operands; a use of a value that is no longer defined keeps a dangling id past the end
        // of the arena, which the verifier reports.
        let map = |o: &mut Operand, vmap: &[Option<ValueId>]| {
            if let Operand::Value(v) = o {
                if let Some(Some(nv)) = vmap.get(v.index()) {
                    *o = Operand::Value(*nv);
                } else {
                    *o = Operand::Value(ValueId(u32::MAX));
                }
            }
        };
        for inst in &mut new.insts {
            for a in &mut inst.args {
                map(a, &vmap);
            }
        }
        for b in &mut new.blocks {
            if let Terminator::Br { cond, .. } = &mut b.term {
                map(cond, &vmap);
            }
            for c in b.term.successors_mut() {
                for a in &mut c.args {
                    map(a, &vmap);
                }
            }
        }
        *self = new;
    }

    fn clear_spans(&mut self) {
        self.span = Span::DUMMY;
        for v in &mut self.values {
            v.span = Span::DUMMY;
        }
        for i in &mut self.insts {
            i.span = Span::DUMMY;
        }
        for b in &mut self.blocks {
            b.span = Span::DUMMY;
            b.term_span = Span::DUMMY;
        }
        for s in &mut self.shared {
            s.span = Span::DUMMY;
        }
    }
}
