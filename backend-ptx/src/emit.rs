//! Body emission: the `.entry` of one verified kernel or the `.func` of one verified device
//! function — parameters, shared declarations, register declarations, blocks as labels, block
//! arguments as parallel copies on edges, and calls.
//!
//! Guarantees:
//! - Each SSA value's registers are decided before emission ([`crate::assign`]): registers of its
//!   own (a vector one per element, see [`crate::regs`]), except that a latch argument may share
//!   its parameter's and an element `vec`, `extract` or `insert` builds may name its source's, in
//!   both cases only where no write of the register can meet a live reader of another value.
//!   Block parameters are written only by the moves on the edges into their block (and by latch
//!   arguments that share their registers), emitted as sequentialized parallel copies
//!   ([`crate::pcopy`]; a vector parameter is one copy per element), so a swap or rotation of block
//!   arguments is correct.
//! - A conditional branch whose both edges carry moves gets an inline edge block (the critical edge
//!   is split); moves are never executed on an edge not taken.
//! - `reqntid(x, y, z)` becomes the performance directive `.reqntid x, y, z` (all three written).
//! - Unreachable blocks are not emitted. A jump to the next emitted block falls through.
//! - Before each kir instruction and terminator, a comment shows the instruction as kir prints it,
//!   prefixed with its source line when the source text is known and the span lies in it (a
//!   function imported from another file has spans past its end: no line number then).
//! - The output is a pure function of the body, the module's function table and the options
//!   (byte-for-byte deterministic).
//!
//! Device functions and calls (the PTX ABI, as NVRTC emits non-inlined `__device__` functions):
//! - A function is a module-internal `.func` (no `.visible`: nothing outside the module calls it),
//!   `.func (.param .bN func_retval0) f(.param .bN f_param_0, ...)`, the result part only when
//!   the function has one. Every parameter and the result are `.param .b32` (types of at most 32
//!   bits; narrower ones are promoted as the ABI promotes them: `pred` as 0/1, 8- and 16-bit
//!   integers zero- or sign-extended by their signedness, `f16`/`bf16` bits zero-extended) or
//!   `.param .b64` (64-bit types and pointers). The callee reads the low bytes back exactly as a
//!   kernel reads its parameters. A vector result (the verifier refuses vector parameters) is a
//!   byte array of its size aligned to its size, `.param .align 16 .b8 func_retval0[16]`, written
//!   with one `st.param.vN` and read with one `ld.param.vN` (as NVRTC returns a `float4`).
//! - Pointers cross calls in kir's register representation, not as generic addresses: a
//!   `ptr<global, T>` is a global-window address (the kernel applied `cvta.to.global` once), a
//!   `ptr<shared, T>` a shared-window address; the callee uses them with `.global` / `.shared`
//!   instructions as the caller would.
//! - A call is `{ .param ... param<i>; st.param ...; .param ... retval0; call.uni (retval0), f,
//!   (param0, ...); ld.param ...; }`: the return parameter is declared (and the call names it)
//!   whenever the callee has a result, even when the caller ignores it. `call.uni` is always
//!   right here: PTX defines `.uni` as "all active threads executing the call have the same guard
//!   predicate and call target", and a kir call is unguarded and direct (the same reasoning as
//!   `bra.uni` for unconditional jumps; NVRTC emits `call.uni` for every direct call).
//! - In a function, `ret %v` stores `%v` to `func_retval0` (promoted as above) and returns.
//!   Special registers, barriers, shuffles and votes need nothing special: they act for the calling
//!   thread, and `bar.sync` is legal in a `.func`.
//! - PTX names never clash: a function's PTX name is its kir name through [`ptx_ident`], unless
//!   that spelling is some other PTX name in scope where the function is called (a kernel's or
//!   function's parameter `<name>_param_<n>`, a shared array `<kernel>$smem$<s>`, `param<n>`,
//!   `retval0`, `func_retval0`); then it is `$func$<ident>$`, which nothing else spells (see
//!   `FuncTable`).
//! - A call whose callee is not in the function table (a body emitted without its module) is a
//!   located diagnostic, never a panic.

use crate::pcopy::{self, Src};
use crate::regs::{Reg, RegClass, RegFile, Regs};
use crate::PtxOptions;
use kir_ir::analysis::available::Available;
use kir_ir::{
    AddrSpace, BlockCall, BlockId, Diagnostic, InstId, Kernel, Module, Operand, ScalarType, Terminator, Type, ValueId,
};
use std::collections::{HashMap, HashSet};
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

/// What a caller needs of a function: its PTX name and its result type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FuncSym {
    pub symbol: String,
    pub ret: Option<Type>,
}

/// The PTX names and result types of a module's device functions, by kir name.
#[derive(Debug, Default)]
pub(crate) struct FuncTable {
    funcs: HashMap<String, FuncSym>,
}

impl FuncTable {
    /// The table of `m`'s functions. A function's PTX name is [`ptx_ident`] of its kir name unless
    /// that spelling is taken by a name that can be in scope at a call: a parameter
    /// `<body>_param_<n>` of any kernel or function, a shared array `<kernel>$smem$<s>`, or a name
    /// the calling convention declares (`param<n>`, `retval0`, `func_retval0`). Then it is
    /// `$func$<ident>$`: no kir name spells a leading `$`, labels are `$L__`/`$E__`, and parameter
    /// names end in a digit, so that cannot clash either.
    pub fn new(m: &Module) -> FuncTable {
        let mut t = FuncTable::default();
        if m.funcs.is_empty() {
            return t;
        }
        let mut reserved: HashSet<String> = HashSet::new();
        for b in m.bodies() {
            let id = ptx_ident(&b.name);
            for n in 0..b.params.len() {
                reserved.insert(format!("{id}_param_{n}"));
            }
            for s in &b.shared {
                reserved.insert(format!("{id}$smem${}", ptx_ident(&s.name)));
            }
        }
        let is_reserved = |id: &str| {
            reserved.contains(id)
                || id == "retval0"
                || id == "func_retval0"
                || id.strip_prefix("param").is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
        };
        for f in &m.funcs {
            let id = ptx_ident(&f.name);
            let symbol = if is_reserved(&id) { format!("$func${id}$") } else { id };
            t.funcs.entry(f.name.clone()).or_insert(FuncSym { symbol, ret: f.ret_type() });
        }
        t
    }

    pub fn get(&self, name: &str) -> Option<&FuncSym> {
        self.funcs.get(name)
    }
}

/// `d` located at a call, when the call has a real span.
fn at_call(d: Diagnostic, span: kir_ir::Span) -> Diagnostic {
    if span.is_dummy() {
        d
    } else {
        d.at(span, "this call")
    }
}

/// The `.param` declaration of a function parameter or result `name`: `.param .b32 name` for
/// types of up to 32 bits (narrower ones promoted), `.param .b64 name` for 64-bit types and
/// pointers, and for a vector (a function's result) a byte array of its size aligned to its size,
/// `.param .align 16 .b8 name[16]`, as NVRTC passes a `float4`.
pub fn abi_param_decl(ty: Type, name: &str) -> String {
    use ScalarType::*;
    match ty {
        Type::Ptr(..) | Type::Scalar(U64 | S64 | F64) => format!(".param .b64 {name}"),
        Type::Scalar(_) => format!(".param .b32 {name}"),
        Type::Vec(..) => {
            let bytes = ty.bits() / 8;
            format!(".param .align {bytes} .b8 {name}[{bytes}]")
        }
    }
}

/// The diagnostic for a vector parameter or argument: the verifier refuses vector parameters of
/// kernels and functions (vector results of functions are passed, see [`abi_param_decl`]).
fn vector_param_error(ty: Type, span: kir_ir::Span) -> Diagnostic {
    let d = Diagnostic::error(format!("the PTX backend cannot pass a parameter of type `{ty}`"))
        .with_note("pass a pointer and load the vector with `load.v2`/`load.v4`, or pass its elements");
    if span.is_dummy() {
        d
    } else {
        d.at(span, "a vector here")
    }
}

pub(crate) struct KernelEmitter<'a> {
    pub k: &'a Kernel,
    pub opts: &'a PtxOptions,
    /// The module's functions, for calls (empty when a body is emitted on its own).
    pub funcs: &'a FuncTable,
    pub lines: Option<&'a LineIndex>,
    pub regs: RegFile,
    /// The registers of each value, indexed by `ValueId` ([`crate::assign`]).
    pub vregs: Vec<Regs>,
    pub out: String,
    pub diags: Vec<Diagnostic>,
    edge_labels: u32,
    /// Each block's position in the emitted order (`usize::MAX`: not emitted), and the position of
    /// the block being emitted: a jump to a block at or before it is a back edge.
    layout_pos: Vec<usize>,
    cur_pos: usize,
    /// The block being emitted, the CFG (for dominance), and the registers holding an index
    /// scaled to bytes, by (index value, element size): with the block that computed each.
    pub cur_block: BlockId,
    pub cfg: kir_ir::analysis::cfg::Cfg,
    pub scaled: Available<(ValueId, i64), Reg>,
    /// Likewise the registers holding an element's address, by (pointer, index value, element size).
    pub addresses: Available<(Operand, ValueId, i64), Reg>,
    /// Likewise the registers holding a PTX special register (`%tid.x`, ...), by its name.
    pub specials: Available<String, Reg>,
    /// Special-register instructions already read into their register by a composite read
    /// (`global_id.x`) earlier in their block: they emit nothing themselves.
    pub early_specials: HashSet<InstId>,
    /// Registers a block parameter shares with a latch argument ([`crate::assign`]).
    pub shared_regs: HashSet<Reg>,
    /// Likewise the zero (and -1) guards of integer divisors, by (divisor value, type).
    pub divisor_guards: Available<(ValueId, kir_ir::ScalarType), (Reg, Reg, Option<Reg>)>,
    /// For each value: every use is an operand of a comparison (so a NaN's payload and the sign
    /// of a zero it carries cannot be observed beyond the comparison's result).
    pub only_compared: Vec<bool>,
    /// The NaN constants this body loads from `.const` memory (see [`crate::imm::is_float_nan`]),
    /// by (type, bits), in first-use order: declared at module scope before the body.
    pub nan_consts: Vec<(kir_ir::ScalarType, u64)>,
}

/// Where a kernel converts each global-pointer parameter with `cvta.to.global`: the block that
/// dominates every reachable use of the parameter (an instruction operand, a terminator operand
/// or a block argument), moved up the dominator tree out of every loop. A parameter missing from
/// the map is never read (its load is left out). The entry block is where every conversion went
/// before; a later block keeps threads that leave early (`if (i >= n) return`) from converting
/// pointers they never use, as NVRTC's code does. In an irreducible CFG every conversion stays in
/// the entry block.
fn cvta_placement(k: &Kernel, cfg: &kir_ir::analysis::cfg::Cfg) -> HashMap<ValueId, BlockId> {
    let is_param = |v: ValueId| {
        matches!(k.value(v).def, kir_ir::ValueDef::Param(_)) && matches!(k.value(v).ty, Type::Ptr(AddrSpace::Global, _))
    };
    let mut use_blocks: HashMap<ValueId, Vec<BlockId>> = HashMap::new();
    for b in k.block_ids().filter(|&b| cfg.is_reachable(b)) {
        let blk = k.block(b);
        let inst_args = blk.insts.iter().flat_map(|&i| k.inst(i).args.iter().copied());
        for v in inst_args.chain(blk.term.operands()).filter_map(|a| a.as_value()) {
            if is_param(v) {
                use_blocks.entry(v).or_default().push(b);
            }
        }
    }
    if use_blocks.is_empty() {
        return HashMap::new();
    }
    let forest = kir_ir::analysis::loops::LoopForest::new(cfg);
    let mut in_loop = vec![false; k.blocks.len()];
    for l in forest.loops() {
        for b in &l.blocks {
            in_loop[b.index()] = true;
        }
    }
    let mut depth = vec![0usize; k.blocks.len()];
    for &b in cfg.rpo() {
        if let Some(d) = cfg.idom(b).filter(|&d| d != b) {
            depth[b.index()] = depth[d.index()] + 1;
        }
    }
    let up = |b: BlockId| cfg.idom(b).filter(|&d| d != b).unwrap_or(Kernel::ENTRY);
    let common = |mut a: BlockId, mut b: BlockId| {
        while a != b {
            if depth[a.index()] >= depth[b.index()] {
                a = up(a);
            } else {
                b = up(b);
            }
            if a == Kernel::ENTRY || b == Kernel::ENTRY {
                return Kernel::ENTRY;
            }
        }
        a
    };
    let irreducible = forest.is_irreducible();
    use_blocks
        .into_iter()
        .map(|(v, blocks)| {
            let mut at = blocks.into_iter().reduce(common).unwrap_or(Kernel::ENTRY);
            while at != Kernel::ENTRY && (in_loop[at.index()] || irreducible) {
                at = up(at);
            }
            (v, at)
        })
        .collect()
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
    pub fn new(
        k: &'a Kernel,
        opts: &'a PtxOptions,
        lines: Option<&'a LineIndex>,
        funcs: &'a FuncTable,
    ) -> KernelEmitter<'a> {
        let mut regs = RegFile::default();
        let cfg = kir_ir::analysis::cfg::Cfg::new(k);
        let assigned = crate::assign::assign(k, &cfg, &mut regs);
        KernelEmitter {
            k,
            opts,
            funcs,
            lines,
            regs,
            vregs: assigned.regs,
            // Roughly what the body takes, so the buffer does not regrow while it is written.
            out: String::with_capacity(48 * (k.insts.len() + 2 * k.blocks.len()) + 256),
            diags: Vec::new(),
            edge_labels: 0,
            layout_pos: vec![usize::MAX; k.blocks.len()],
            cur_pos: 0,
            cur_block: Kernel::ENTRY,
            cfg,
            scaled: Available::default(),
            addresses: Available::default(),
            specials: Available::default(),
            early_specials: HashSet::new(),
            shared_regs: assigned.shared,
            divisor_guards: Available::default(),
            only_compared: only_compared(k),
            nan_consts: Vec::new(),
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

    /// The register of a scalar or pointer value (element 0 of a vector).
    pub fn val(&self, v: ValueId) -> Reg {
        self.vregs[v.index()].first()
    }

    /// The registers of a value: one per element of a vector.
    pub fn regs_of(&self, v: ValueId) -> Regs {
        self.vregs[v.index()]
    }

    fn comment(&mut self, span: kir_ir::Span, text: &str) {
        if !self.opts.comments {
            return;
        }
        // A span past the end of the source lies in another file (a function imported from it):
        // no line number rather than a wrong one.
        let in_source = self.opts.source.as_ref().is_some_and(|s| span.end as usize <= s.len());
        match (self.lines, span.is_dummy() || !in_source) {
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

    /// The PTX name of the `.const` variable holding NaN constant `bits` of float type `ty` for
    /// this body (one per body, so that two bodies never declare the same symbol).
    pub fn nan_symbol(&self, ty: kir_ir::ScalarType, bits: u64) -> String {
        format!("{}$nan${}${bits:X}", self.body_symbol(), crate::imm::fty(ty))
    }

    /// A fresh register holding NaN constant `c`, loaded from its `.const` variable (declared by
    /// [`KernelEmitter::emit`]). ptxas folds NaN immediates as if their sign and payload did not
    /// matter (`x - NaN` becomes `x + (-NaN)`, the sign flipped at compile time, where the GPU
    /// returns the NaN operand unchanged at run time); a load from constant memory is not folded,
    /// so the hardware computes what the interpreter computes.
    pub fn load_nan(&mut self, c: kir_ir::Constant) -> Reg {
        if !self.nan_consts.contains(&(c.ty, c.bits)) {
            self.nan_consts.push((c.ty, c.bits));
        }
        let sym = self.nan_symbol(c.ty, c.bits);
        let r = self.fresh(RegClass::of_scalar(c.ty));
        let t = match c.ty {
            kir_ir::ScalarType::F64 => "f64",
            kir_ir::ScalarType::F32 => "f32",
            _ => "b16",
        };
        self.ins(format_args!("ld.const.{t} {r}, [{sym}]"));
        r
    }

    /// The PTX name of the body: a kernel's `.entry` name, or a function's name from the table.
    fn body_symbol(&self) -> String {
        match self.funcs.get(&self.k.name) {
            Some(f) if self.k.is_func() => f.symbol.clone(),
            _ => ptx_ident(&self.k.name),
        }
    }

    /// Emits the whole `.entry` or `.func` (plus module-scope declarations it needs) into a
    /// string.
    pub fn emit(mut self) -> Result<String, Vec<Diagnostic>> {
        let k = self.k;
        let is_func = k.is_func();
        let kname = self.body_symbol();
        let mut reachable = vec![false; k.blocks.len()];
        k.reverse_post_order().into_iter().for_each(|b| reachable[b.index()] = true);

        // Parameter loads; a global pointer's `cvta` where its uses need it (`cvta_placement`).
        let cvta_at = if is_func { HashMap::new() } else { cvta_placement(k, &self.cfg) };
        let mut late_cvtas: HashMap<BlockId, Vec<(Reg, Reg)>> = HashMap::new();
        let mut params_decl = Vec::new();
        let mut prologue = String::new();
        std::mem::swap(&mut self.out, &mut prologue);
        for (n, &p) in k.params.iter().enumerate() {
            let pname = format!("{kname}_param_{n}");
            let ty = k.value_type(p);
            let r = self.val(p);
            let decl = match ty {
                // The verifier refuses vector parameters of kernels and functions.
                Type::Vec(..) => {
                    self.diags.push(vector_param_error(ty, k.value(p).span));
                    continue;
                }
                _ if is_func => abi_param_decl(ty, &pname),
                Type::Ptr(..) => format!(".param .u64 {pname}"),
                Type::Scalar(s) => format!(".param {} {pname}", crate::imm::param_type(s)),
            };
            params_decl.push(format!("\t{decl}"));
            match ty {
                // A caller passes pointers in their register form (see the module header).
                Type::Ptr(..) if is_func => self.ins(format_args!("ld.param.u64 {r}, [{pname}]")),
                Type::Ptr(AddrSpace::Global, _) => match cvta_at.get(&p) {
                    // Never read: nothing to load.
                    None => {}
                    Some(&b) => {
                        let t = self.fresh(RegClass::B64);
                        self.ins(format_args!("ld.param.u64 {t}, [{pname}]"));
                        if b == Kernel::ENTRY {
                            self.ins(format_args!("cvta.to.global.u64 {r}, {t}"));
                        } else {
                            late_cvtas.entry(b).or_default().push((r, t));
                        }
                    }
                },
                Type::Ptr(AddrSpace::Shared, _) => self.ins(format_args!("ld.param.u64 {r}, [{pname}]")),
                Type::Scalar(s) => self.load_param(r, s, &pname),
                Type::Vec(..) => {}
            }
        }
        std::mem::swap(&mut self.out, &mut prologue);

        // Body.
        let order: Vec<BlockId> = k.block_ids().filter(|b| reachable[b.index()]).collect();
        for (pos, &b) in order.iter().enumerate() {
            self.layout_pos[b.index()] = pos;
        }
        for (pos, &b) in order.iter().enumerate() {
            self.cur_pos = pos;
            self.cur_block = b;
            let next = order.get(pos + 1).copied();
            let blk = k.block(b);
            let _ = writeln!(self.out, "{}:", self.block_label(b));
            for (r, t) in late_cvtas.remove(&b).unwrap_or_default() {
                self.ins(format_args!("cvta.to.global.u64 {r}, {t}"));
            }
            for &i in &blk.insts {
                if self.opts.comments {
                    let text = kir_ir::text::printer::print_inst(k, i);
                    self.comment(k.inst(i).span, &text);
                }
                self.lower_inst(i);
            }
            if self.opts.comments {
                let text = kir_ir::text::printer::print_terminator(k, &blk.term);
                self.comment(blk.term_span, &text);
            }
            self.terminator(&blk.term, next);
        }
        if !self.diags.is_empty() {
            return Err(self.diags);
        }

        let mut s = String::with_capacity(self.out.len() + prologue.len() + 64 * (k.params.len() + 8) + 1024);
        // NaN constants live in constant memory, out of ptxas's constant folding.
        for &(ty, bits) in &self.nan_consts {
            let (w, hex) = match ty.bits() {
                64 => (8, format!("{bits:016X}")),
                32 => (4, format!("{bits:08X}")),
                _ => (2, format!("{bits:04X}")),
            };
            let _ = writeln!(s, ".const .align {w} .b{} {} = 0x{hex};", w * 8, self.nan_symbol(ty, bits));
        }
        // Dynamic shared memory is an `.extern` array at module scope.
        for (i, d) in k.shared.iter().enumerate() {
            if d.len.is_none() {
                let _ =
                    writeln!(s, ".extern .shared .align {} .b8 {}[];", d.align.max(1), self.shared_symbol(i as u32));
            }
        }
        if is_func {
            let _ = write!(s, "\n// .kir func @{}\n.func ", k.name);
            if let Some(t) = k.ret_type() {
                let _ = write!(s, "({}) ", abi_param_decl(t, "func_retval0"));
            }
            let _ = writeln!(s, "{kname}(");
        } else {
            let _ = writeln!(s, "\n// .kir kernel @{}\n.visible .entry {kname}(", k.name);
        }
        s.push_str(&params_decl.join(",\n"));
        if !params_decl.is_empty() {
            s.push('\n');
        }
        s.push_str(")\n");
        if let Some(r) = k.reqntid.filter(|_| !is_func) {
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

    /// The type of an operand.
    fn operand_type(&self, o: Operand) -> Type {
        match o {
            Operand::Value(v) => self.k.value_type(v),
            Operand::Const(c) => Type::Scalar(c.ty),
        }
    }

    /// Stores `o` (of type `ty`) to the `.param` variable `name` (declared with
    /// [`abi_param_decl`]), promoting types narrower than 32 bits as the PTX ABI does; a vector
    /// with one `st.param.vN` of its elements.
    fn store_param(&mut self, name: &str, o: Operand, ty: Type) {
        use kir_ir::ScalarType::*;
        let s = match ty {
            Type::Ptr(..) => U64,
            Type::Scalar(s) => s,
            Type::Vec(w, e) => {
                // A vector is always a value (there are no vector constants).
                let Some(v) = o.as_value() else { return self.diags.push(vector_param_error(ty, kir_ir::Span::DUMMY)) };
                let regs = self.regs_of(v);
                return self.ins(format_args!("st.param.{}.{} [{name}], {regs}", w.name(), crate::imm::mem_ty(e)));
            }
        };
        let st = match s {
            F32 => "f32",
            F64 => "f64",
            U64 | S64 => "b64",
            _ => "b32",
        };
        let r = match o {
            Operand::Const(c) if crate::imm::is_float_nan(c) => self.load_nan(c),
            Operand::Const(c) => {
                // Immediates are extended by their own signedness (8- and 16-bit signed ones print
                // as negative numbers); pred and the 16-bit floats as their bits.
                let imm = match c.ty {
                    Pred | F16 | BF16 => crate::imm::raw_imm(c),
                    _ => crate::imm::Imm(c).to_string(),
                };
                return self.ins(format_args!("st.param.{st} [{name}], {imm}"));
            }
            Operand::Value(v) => self.val(v),
        };
        let src = match s {
            Pred => {
                let t = self.fresh(RegClass::B32);
                self.ins(format_args!("selp.u32 {t}, 1, 0, {r}"));
                t
            }
            U16 | F16 | BF16 | S16 => {
                let t = self.fresh(RegClass::B32);
                let cvt = if s == S16 { "cvt.s32.s16" } else { "cvt.u32.u16" };
                self.ins(format_args!("{cvt} {t}, {r}"));
                t
            }
            // 8-bit integers already live extended in 32-bit registers.
            _ => r,
        };
        self.ins(format_args!("st.param.{st} [{name}], {src}"));
    }

    /// `call @f(args)`: the call sequence of the PTX ABI (see the module header).
    pub(crate) fn call(&mut self, i: InstId, c: u32) {
        let k = self.k;
        let inst = k.inst(i);
        let callee = k.callees.get(c as usize);
        let Some(f) = callee.and_then(|c| self.funcs.get(&c.name)).cloned() else {
            let name = callee.map(|c| format!("`@{}`", c.name)).unwrap_or_else(|| format!("callee #{c}"));
            let d = Diagnostic::error(format!("cannot emit the call to {name}: the function is not in the PTX module"))
                .with_note(
                    "a body that calls functions is emitted with its module (`emit_module`, `emit_kernel_in_module`)",
                );
            self.diags.push(at_call(d, inst.span));
            return;
        };
        if let Some(t) = inst.args.iter().map(|&a| self.operand_type(a)).find(|t| t.is_vec()) {
            return self.diags.push(vector_param_error(t, inst.span));
        }
        self.out.push_str("\t{\n");
        let mut names = Vec::with_capacity(inst.args.len());
        for (n, &a) in inst.args.iter().enumerate() {
            let ty = self.operand_type(a);
            let name = format!("param{n}");
            self.ins(abi_param_decl(ty, &name));
            self.store_param(&name, a, ty);
            names.push(name);
        }
        let args = names.join(", ");
        match f.ret {
            Some(t) => {
                self.ins(abi_param_decl(t, "retval0"));
                self.ins(format_args!("call.uni (retval0), {}, ({args})", f.symbol));
            }
            None => self.ins(format_args!("call.uni {}, ({args})", f.symbol)),
        }
        match (inst.result, f.ret) {
            (Some(v), Some(_)) => {
                let r = self.val(v);
                match k.value_type(v) {
                    Type::Ptr(..) => self.ins(format_args!("ld.param.u64 {r}, [retval0]")),
                    Type::Scalar(s) => self.load_param(r, s, "retval0"),
                    Type::Vec(w, e) => self.ins(format_args!(
                        "ld.param.{}.{} {}, [retval0]",
                        w.name(),
                        crate::imm::mem_ty(e),
                        self.regs_of(v)
                    )),
                }
            }
            (Some(_), None) => {
                let name = callee.map_or("", |c| &c.name);
                let d = Diagnostic::error(format!("`@{name}` has no result, but this call uses one"));
                self.diags.push(at_call(d, inst.span));
            }
            (None, _) => {}
        }
        self.out.push_str("\t}\n");
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
            let n = RegClass::count(self.k.value_type(p));
            if n > 1 {
                // A vector: every element moves (arguments of vector type are values: there are
                // no vector constants, and the verifier matches argument and parameter types).
                match a.as_value().filter(|&v| RegClass::count(self.k.value_type(v)) == n) {
                    Some(v) => {
                        let (dst, src) = (self.regs_of(p), self.regs_of(v));
                        copies.extend((0..n).map(|j| (dst.get(j), Src::Reg(src.get(j)))))
                    }
                    None => self.diags.push(Diagnostic::error(format!(
                        "the PTX backend cannot bind vector parameter `%{}` of block `{}` to a scalar",
                        self.k.value(p).name,
                        self.k.block(call.block).name
                    ))),
                }
                continue;
            }
            let src = match a {
                Operand::Value(v) => Src::Reg(self.val(v)),
                Operand::Const(c) if crate::imm::is_float_nan(c) => Src::Reg(self.load_nan(c)),
                Operand::Const(c) => match crate::imm::imm_text(c) {
                    Some(t) => Src::Imm(t),
                    None => Src::Imm(crate::imm::raw_imm(c)),
                },
            };
            copies.push((dst, src));
        }
        let regs = &mut self.regs;
        pcopy::sequentialize(&copies, |r| regs.fresh(r.class))
    }

    /// The copies `dst_i <- src_i`, all sources read before any destination is written
    /// ([`pcopy::sequentialize`]: a copy of a register to itself emits nothing).
    pub(crate) fn parallel_copy(&mut self, copies: &[(Reg, Src<Reg>)]) {
        let regs = &mut self.regs;
        let moves = pcopy::sequentialize(copies, |r| regs.fresh(r.class));
        self.emit_moves(&moves);
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
        if self.duplicable_test(call.block) {
            // A back edge to a loop's test: run the test here and branch into the body (or out)
            // directly, as a rotated loop does, instead of jumping back to run it there. The
            // test writes the same registers it writes in its own block, so this is that
            // block's code, moved to the end of the iteration: one branch per iteration less.
            let h = self.k.block(call.block);
            for &i in &h.insts {
                self.lower_inst(i);
            }
            let term = h.term.clone();
            return self.terminator(&term, next);
        }
        if next != Some(call.block) {
            let l = self.block_label(call.block);
            self.ins(format_args!("bra.uni {l}"));
        }
    }

    /// Whether a jump to `target` is a loop's back edge (`target` dominates the jumping block and
    /// lies at or before it) to a small loop test worth repeating at the jump: at most 3 pure or
    /// special-register instructions ending in a branch on a value. Only back edges: a forward
    /// jump to a join whose branch were copied would move the point where the paths reconverge
    /// (past a collective after the join, which then runs on part of the warp).
    fn duplicable_test(&self, target: BlockId) -> bool {
        let pos = self.layout_pos[target.index()];
        if pos == usize::MAX || pos > self.cur_pos || !self.cfg.dominates(target, self.cur_block) {
            return false;
        }
        let h = self.k.block(target);
        matches!(h.term, Terminator::Br { cond: Operand::Value(_), .. })
            && h.insts.len() <= 3
            && h.insts.iter().all(|&i| {
                let op = &self.k.inst(i).op;
                op.is_pure() || matches!(op, kir_ir::Op::Special(_))
            })
    }

    fn terminator(&mut self, t: &Terminator, next: Option<BlockId>) {
        match t {
            Terminator::Ret(v) => {
                if let Some(v) = *v {
                    if self.k.is_func() {
                        let ty = self.operand_type(v);
                        self.store_param("func_retval0", v, ty);
                    }
                }
                self.ins("ret")
            }
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
