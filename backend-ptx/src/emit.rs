//! Kernel emission: the `.entry` of one verified kernel — parameters, shared declarations, register
//! declarations, blocks as labels, and block arguments as parallel copies on edges.
//!
//! Guarantees:
//! - Each SSA value gets its own virtual register (see [`crate::regs`]); block parameters are
//!   written only by the moves on the edges into their block, emitted as sequentialized parallel
//!   copies ([`crate::pcopy`]), so a swap or rotation of block arguments is correct.
//! - A conditional branch whose both edges carry moves gets an inline edge block (the critical edge
//!   is split); moves are never executed on an edge not taken.
//! - `reqntid(x, y, z)` becomes the performance directive `.reqntid x, y, z` (all three written).
//! - Unreachable blocks are not emitted. A jump to the next emitted block falls through.
//! - Before each kir instruction and terminator, a comment shows the instruction as kir prints it,
//!   prefixed with its source line when the source text is known.
//! - The output is a pure function of the kernel and the options (byte-for-byte deterministic).

use crate::pcopy::{self, Src};
use crate::regs::{Reg, RegClass, RegFile};
use crate::PtxOptions;
use kir_ir::{AddrSpace, BlockCall, BlockId, Diagnostic, Kernel, Operand, Terminator, Type, ValueId};
use std::fmt::Write;

/// A PTX identifier for a kir name: `.` becomes `$` (kir names never contain `$`, so the mapping is
/// one-to-one), and a leading digit gets a `_` prefix.
pub fn ptx_ident(name: &str) -> String {
    PtxIdent { prefix: "", name }.to_string()
}

/// `prefix` followed by [`ptx_ident`] of `name`, printed without building a `String`.
#[derive(Clone, Copy, Debug)]
pub struct PtxIdent<'a> {
    pub prefix: &'static str,
    pub name: &'a str,
}

impl std::fmt::Display for PtxIdent<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.prefix)?;
        if self.name.starts_with(|c: char| c.is_ascii_digit()) {
            f.write_str("_")?;
        }
        let mut parts = self.name.split('.');
        if let Some(first) = parts.next() {
            f.write_str(first)?;
        }
        for p in parts {
            f.write_str("$")?;
            f.write_str(p)?;
        }
        Ok(())
    }
}

pub(crate) use kir_ir::span::LineIndex;

pub(crate) struct KernelEmitter<'a> {
    pub k: &'a Kernel,
    pub opts: &'a PtxOptions,
    pub lines: Option<&'a LineIndex>,
    pub regs: RegFile,
    /// The register of each value, indexed by `ValueId`.
    pub vreg: Vec<Reg>,
    pub out: String,
    pub diags: Vec<Diagnostic>,
    edge_labels: u32,
    /// For each value: every use is an operand of a comparison (so a NaN's payload and the sign
    /// of a zero it carries cannot be observed beyond the comparison's result).
    pub only_compared: Vec<bool>,
}

/// Which values are used only as comparison operands (and at least once).
fn only_compared(k: &Kernel) -> Vec<bool> {
    let mut uses = vec![0u32; k.values.len()];
    let mut cmp_uses = vec![0u32; k.values.len()];
    for (_, i) in k.placed_insts() {
        let inst = k.inst(i);
        let is_cmp = matches!(inst.op, kir_ir::Op::Cmp(..));
        for a in &inst.args {
            if let Some(v) = a.as_value().filter(|v| v.index() < uses.len()) {
                uses[v.index()] += 1;
                cmp_uses[v.index()] += is_cmp as u32;
            }
        }
    }
    for b in k.block_ids() {
        for a in k.block(b).term.operands() {
            if let Some(v) = a.as_value().filter(|v| v.index() < uses.len()) {
                uses[v.index()] += 1;
            }
        }
    }
    uses.iter().zip(&cmp_uses).map(|(&u, &c)| u > 0 && u == c).collect()
}

impl<'a> KernelEmitter<'a> {
    pub fn new(k: &'a Kernel, opts: &'a PtxOptions, lines: Option<&'a LineIndex>) -> KernelEmitter<'a> {
        let mut regs = RegFile::default();
        let vreg = k.values.iter().map(|v| regs.fresh(RegClass::of(v.ty))).collect();
        KernelEmitter {
            k,
            opts,
            lines,
            regs,
            vreg,
            // Roughly what the body takes, so the buffer does not regrow while it is written.
            out: String::with_capacity(48 * (k.insts.len() + 2 * k.blocks.len()) + 256),
            diags: Vec::new(),
            edge_labels: 0,
            only_compared: only_compared(k),
        }
    }

    /// Appends one instruction line (`text` without the trailing `;`). Takes anything printable,
    /// so callers pass `format_args!(...)` and the text is written straight into the output.
    pub fn ins(&mut self, text: impl std::fmt::Display) {
        use std::fmt::Write as _;
        self.out.push('\t');
        // Writing to a String cannot fail.
        let _ = write!(self.out, "{text}");
        self.out.push_str(";\n");
    }

    pub fn fresh(&mut self, c: RegClass) -> Reg {
        self.regs.fresh(c)
    }

    pub fn val(&self, v: ValueId) -> Reg {
        self.vreg[v.index()]
    }

    fn comment(&mut self, span: kir_ir::Span, text: &str) {
        if !self.opts.comments {
            return;
        }
        match (self.lines, span.is_dummy()) {
            (Some(li), false) => {
                let _ = writeln!(self.out, "\t// {}: {}", li.line(span.start), text.trim());
            }
            _ => {
                let _ = writeln!(self.out, "\t// {}", text.trim());
            }
        }
    }

    fn block_label(&self, b: BlockId) -> PtxIdent<'a> {
        PtxIdent { prefix: "$L__", name: &self.k.block(b).name }
    }

    /// The PTX name of a shared declaration.
    pub fn shared_symbol(&self, idx: u32) -> String {
        let s = &self.k.shared[idx as usize];
        format!("{}$smem${}", ptx_ident(&self.k.name), ptx_ident(&s.name))
    }

    /// Emits the whole `.entry` (plus module-scope declarations it needs) into a string.
    pub fn emit(mut self) -> Result<String, Vec<Diagnostic>> {
        let k = self.k;
        let kname = ptx_ident(&k.name);
        let mut reachable = vec![false; k.blocks.len()];
        k.reverse_post_order().into_iter().for_each(|b| reachable[b.index()] = true);

        // Parameter loads.
        let mut params_decl = Vec::new();
        let mut prologue = String::new();
        std::mem::swap(&mut self.out, &mut prologue);
        for (n, &p) in k.params.iter().enumerate() {
            let pname = format!("{kname}_param_{n}");
            let ty = k.value_type(p);
            let r = self.val(p);
            let pty = match ty {
                Type::Ptr(..) => ".u64",
                Type::Scalar(s) => crate::lower::param_type(s),
            };
            params_decl.push(format!("\t.param {pty} {pname}"));
            match ty {
                Type::Ptr(AddrSpace::Global, _) => {
                    let t = self.fresh(RegClass::B64);
                    self.ins(format_args!("ld.param.u64 {t}, [{pname}]"));
                    self.ins(format_args!("cvta.to.global.u64 {r}, {t}"));
                }
                Type::Ptr(AddrSpace::Shared, _) => self.ins(format_args!("ld.param.u64 {r}, [{pname}]")),
                Type::Scalar(s) => self.load_param(r, s, &pname),
            }
        }
        std::mem::swap(&mut self.out, &mut prologue);

        // Body.
        let order: Vec<BlockId> = k.block_ids().filter(|b| reachable[b.index()]).collect();
        for (pos, &b) in order.iter().enumerate() {
            let next = order.get(pos + 1).copied();
            let blk = k.block(b);
            let _ = writeln!(self.out, "{}:", self.block_label(b));
            for &i in &blk.insts {
                if self.opts.comments {
                    let text = kir_ir::printer::print_inst(k, i);
                    self.comment(k.inst(i).span, &text);
                }
                self.lower_inst(i);
            }
            if self.opts.comments {
                let text = kir_ir::printer::print_terminator(k, &blk.term);
                self.comment(blk.term_span, &text);
            }
            self.terminator(&blk.term, next);
        }
        if !self.diags.is_empty() {
            return Err(self.diags);
        }

        let mut s = String::with_capacity(self.out.len() + prologue.len() + 64 * (k.params.len() + 8) + 1024);
        // Dynamic shared memory is an `.extern` array at module scope.
        for (i, d) in k.shared.iter().enumerate() {
            if d.len.is_none() {
                let _ =
                    writeln!(s, ".extern .shared .align {} .b8 {}[];", d.align.max(1), self.shared_symbol(i as u32));
            }
        }
        let _ = writeln!(s, "\n// .kir kernel @{}\n.visible .entry {kname}(", k.name);
        s.push_str(&params_decl.join(",\n"));
        if !params_decl.is_empty() {
            s.push('\n');
        }
        s.push_str(")\n");
        if let Some(r) = k.reqntid {
            let [x, y, z] = r.dims;
            let _ = writeln!(s, ".reqntid {x}, {y}, {z}");
        }
        s.push_str("{\n");
        for (i, d) in k.shared.iter().enumerate() {
            if let Some(bytes) = d.size_bytes() {
                let _ = writeln!(
                    s,
                    "\t.shared .align {} .b8 {}[{}];",
                    d.align.max(1),
                    self.shared_symbol(i as u32),
                    bytes.max(1)
                );
            }
        }
        s.push_str(&self.regs.declarations());
        s.push('\n');
        s.push_str(&prologue);
        s.push_str(&self.out);
        s.push_str("}\n");
        Ok(s)
    }

    fn load_param(&mut self, r: Reg, s: kir_ir::ScalarType, pname: &str) {
        use kir_ir::ScalarType::*;
        match s {
            Pred => {
                let t = self.fresh(RegClass::B16);
                self.ins(format_args!("ld.param.u8 {t}, [{pname}]"));
                self.ins(format_args!("setp.ne.u16 {r}, {t}, 0"));
            }
            U8 => self.ins(format_args!("ld.param.u8 {r}, [{pname}]")),
            S8 => self.ins(format_args!("ld.param.s8 {r}, [{pname}]")),
            U16 | S16 | F16 | BF16 => self.ins(format_args!("ld.param.b16 {r}, [{pname}]")),
            U32 | S32 => self.ins(format_args!("ld.param.u32 {r}, [{pname}]")),
            F32 => self.ins(format_args!("ld.param.f32 {r}, [{pname}]")),
            U64 | S64 => self.ins(format_args!("ld.param.u64 {r}, [{pname}]")),
            F64 => self.ins(format_args!("ld.param.f64 {r}, [{pname}]")),
        }
    }

    /// The parallel copies binding `call`'s arguments to its target's parameters, sequentialized.
    fn edge_moves(&mut self, call: &BlockCall) -> Vec<(Reg, Src<Reg>)> {
        let params = &self.k.block(call.block).params;
        let mut copies = Vec::with_capacity(params.len());
        for (&p, &a) in params.iter().zip(&call.args) {
            let dst = self.val(p);
            let src = match a {
                Operand::Value(v) => Src::Reg(self.val(v)),
                Operand::Const(c) => match crate::lower::imm_text(c) {
                    Some(t) => Src::Imm(t),
                    None => Src::Imm(crate::lower::raw_imm(c)),
                },
            };
            copies.push((dst, src));
        }
        let regs = &mut self.regs;
        pcopy::sequentialize(&copies, |r| regs.fresh(r.class))
    }

    fn emit_moves(&mut self, moves: &[(Reg, Src<Reg>)]) {
        for (d, s) in moves {
            let ty = match d.class {
                RegClass::Pred => "pred",
                RegClass::B16 | RegClass::H16 => "b16",
                RegClass::B32 => "b32",
                RegClass::F32 => "f32",
                RegClass::B64 => "b64",
                RegClass::F64 => "f64",
            };
            match s {
                Src::Reg(r) => self.ins(format_args!("mov.{ty} {d}, {r}")),
                Src::Imm(t) => self.ins(format_args!("mov.{ty} {d}, {t}")),
            }
        }
    }

    fn jump(&mut self, call: &BlockCall, next: Option<BlockId>) {
        let moves = self.edge_moves(call);
        self.emit_moves(&moves);
        if next != Some(call.block) {
            let l = self.block_label(call.block);
            self.ins(format_args!("bra.uni {l}"));
        }
    }

    fn terminator(&mut self, t: &Terminator, next: Option<BlockId>) {
        match t {
            Terminator::Ret(_) => self.ins("ret"),
            Terminator::Jmp(c) => self.jump(c, next),
            Terminator::Br { cond, then_, else_ } => {
                let p = match cond {
                    Operand::Const(c) => {
                        let taken = if c.bits != 0 { then_ } else { else_ };
                        return self.jump(taken, next);
                    }
                    Operand::Value(v) => self.val(*v),
                };
                let then_moves = self.edge_moves(then_);
                let else_moves = self.edge_moves(else_);
                if then_moves.is_empty() && else_moves.is_empty() && next == Some(then_.block) {
                    let l = self.block_label(else_.block);
                    self.ins(format_args!("@!{p} bra {l}"));
                } else if then_moves.is_empty() {
                    let l = self.block_label(then_.block);
                    self.ins(format_args!("@{p} bra {l}"));
                    self.emit_moves(&else_moves);
                    if next != Some(else_.block) {
                        let l = self.block_label(else_.block);
                        self.ins(format_args!("bra.uni {l}"));
                    }
                } else if else_moves.is_empty() {
                    let l = self.block_label(else_.block);
                    self.ins(format_args!("@!{p} bra {l}"));
                    self.emit_moves(&then_moves);
                    if next != Some(then_.block) {
                        let l = self.block_label(then_.block);
                        self.ins(format_args!("bra.uni {l}"));
                    }
                } else {
                    // Both edges carry moves: split the else edge into an inline edge block.
                    let edge = format!("$E__{}", self.edge_labels);
                    self.edge_labels += 1;
                    self.ins(format_args!("@!{p} bra {edge}"));
                    self.emit_moves(&then_moves);
                    let l = self.block_label(then_.block);
                    self.ins(format_args!("bra.uni {l}"));
                    let _ = writeln!(self.out, "{edge}:");
                    self.emit_moves(&else_moves);
                    if next != Some(else_.block) {
                        let l = self.block_label(else_.block);
                        self.ins(format_args!("bra.uni {l}"));
                    }
                }
            }
        }
    }
}
