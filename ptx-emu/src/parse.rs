//! PTX text → [`Program`]: module directives, entries, declarations, labels and instructions.
//!
//! Guarantees: every token is accounted for; anything the emulator does not implement (an
//! instruction, a type or modifier combination, `.func`/`call`, module-level `.global` data) is a
//! [`ParseError`] with the line and column of the construct, never skipped. Registers must be
//! declared (`.reg`) in an enclosing `{ }` scope before use; labels may be used before they are
//! defined. The decoding of instructions is in [`crate::decode`].

use crate::decode::{decode, Operand, RawInst};
use crate::lex::{lex, Tok, Token};
use crate::prog::{Inst, Kernel, Op, Program, RegId};
use crate::{cfg, Entry, Param, ParseError, ScalarType};
use std::collections::HashMap;

pub fn scalar_type(s: &str) -> Option<ScalarType> {
    use ScalarType::*;
    Some(match s {
        "b8" => B8,
        "b16" => B16,
        "b32" => B32,
        "b64" => B64,
        "u8" => U8,
        "u16" => U16,
        "u32" => U32,
        "u64" => U64,
        "s8" => S8,
        "s16" => S16,
        "s32" => S32,
        "s64" => S64,
        "f16" => F16,
        "bf16" => BF16,
        "f32" => F32,
        "f64" => F64,
        "pred" => Pred,
        _ => return None,
    })
}

/// A named thing in an entry's scope.
#[derive(Clone, Copy, Debug)]
pub enum Sym {
    Reg(RegId),
    /// A shared variable at this offset of the block's shared memory.
    Shared(u32),
    /// A local variable at this offset of the thread's local memory.
    Local(u32),
    /// A kernel parameter at this offset of the parameter space.
    Param(u32),
}

/// Name resolution for one entry: nested `{ }` scopes of registers and variables.
pub struct Scopes {
    pub scopes: Vec<HashMap<String, Sym>>,
    pub nregs: u32,
}

impl Scopes {
    pub fn lookup(&self, name: &str) -> Option<Sym> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn declare(&mut self, name: String, sym: Sym, line: u32, col: u32) -> Result<(), ParseError> {
        let top = self.scopes.last_mut().expect("a scope is always open");
        if top.contains_key(&name) {
            return Err(ParseError { line, col, message: format!("`{name}` is declared twice in this scope") });
        }
        top.insert(name, sym);
        Ok(())
    }
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// Module-level `.shared` declarations: name, alignment, size (None: `.extern`, dynamic).
    module_shared: Vec<(String, u32, Option<u32>, u32, u32)>,
    /// Registers declared in the whole module so far (bounded: a short text must not allocate
    /// without limit).
    module_regs: u64,
}

fn err(t: &Token, message: impl Into<String>) -> ParseError {
    ParseError { line: t.line, col: t.col, message: message.into() }
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos)
    }

    fn eof_err(&self, what: &str) -> ParseError {
        let (line, col) = self.toks.last().map_or((1, 1), |t| (t.line, t.col));
        ParseError { line, col, message: format!("unexpected end of input: expected {what}") }
    }

    fn next(&mut self, what: &str) -> Result<Token, ParseError> {
        let t = self.toks.get(self.pos).cloned().ok_or_else(|| self.eof_err(what))?;
        self.pos += 1;
        Ok(t)
    }

    fn is_punct(&self, c: char) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Punct(p), .. }) if *p == c)
    }

    fn is_dot(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Dot(d), .. }) if d == s)
    }

    fn expect_punct(&mut self, c: char) -> Result<Token, ParseError> {
        let t = self.next(&format!("`{c}`"))?;
        match t.tok {
            Tok::Punct(p) if p == c => Ok(t),
            _ => Err(err(&t, format!("expected `{c}`, found {}", show(&t.tok)))),
        }
    }

    fn ident(&mut self, what: &str) -> Result<(String, Token), ParseError> {
        let t = self.next(what)?;
        match &t.tok {
            Tok::Ident(s) => Ok((s.clone(), t.clone())),
            other => Err(err(&t, format!("expected {what}, found {}", show(other)))),
        }
    }

    fn int(&mut self, what: &str) -> Result<u64, ParseError> {
        let t = self.next(what)?;
        match t.tok {
            Tok::Int(v) => Ok(v),
            ref other => Err(err(&t, format!("expected {what}, found {}", show(other)))),
        }
    }

    /// Skips the rest of the source line of token `line` (for `.loc`/`.file`-style directives
    /// that end without `;`).
    fn skip_line(&mut self, line: u32) {
        while self.peek().is_some_and(|t| t.line == line) {
            self.pos += 1;
        }
    }

    fn module(&mut self) -> Result<Program, ParseError> {
        let mut prog = Program::default();
        let mut saw_entry_or_func = false;
        while let Some(t) = self.peek().cloned() {
            match &t.tok {
                Tok::Dot(d) => match d.as_str() {
                    "version" => {
                        self.pos += 1;
                        let v = self.next("a PTX version")?;
                        if !matches!(v.tok, Tok::F64(_) | Tok::Int(_)) {
                            return Err(err(&v, "expected a version number after `.version`"));
                        }
                    }
                    "target" => {
                        self.pos += 1;
                        self.ident("a target name")?;
                        while self.is_punct(',') {
                            self.pos += 1;
                            self.ident("a target name")?;
                        }
                    }
                    "address_size" => {
                        self.pos += 1;
                        let n = self.int("an address size")?;
                        if n != 64 {
                            return Err(err(&t, format!("`.address_size {n}`: only 64-bit addressing is supported")));
                        }
                    }
                    "visible" | "weak" | "extern" | "common" => {
                        // Linkage: look at what follows.
                        self.pos += 1;
                        if d == "extern" && self.is_dot("shared") {
                            self.pos += 1;
                            self.module_shared_decl(&t, true)?;
                        } else if !(self.is_dot("entry")
                            || self.is_dot("func")
                            || self.is_dot("global")
                            || self.is_dot("const")
                            || self.is_dot("shared"))
                        {
                            let n = self.peek().cloned();
                            return Err(match n {
                                Some(n) => err(
                                    &n,
                                    format!("expected `.entry` or a declaration after `.{d}`, found {}", show(&n.tok)),
                                ),
                                None => self.eof_err("`.entry`"),
                            });
                        }
                    }
                    "entry" => {
                        self.pos += 1;
                        saw_entry_or_func = true;
                        let k = self.entry(&t)?;
                        if prog.kernels.iter().any(|o| o.info.name == k.info.name) {
                            return Err(err(&t, format!("entry `{}` is defined twice", k.info.name)));
                        }
                        prog.kernels.push(k);
                    }
                    "func" => {
                        let _ = saw_entry_or_func;
                        return Err(err(&t, "`.func` (device functions and `call`) is not supported by the emulator"));
                    }
                    "shared" => {
                        self.pos += 1;
                        self.module_shared_decl(&t, false)?;
                    }
                    "global" | "const" => {
                        return Err(err(
                            &t,
                            format!("module-level `.{d}` variables are not supported by the emulator"),
                        ));
                    }
                    "file" | "loc" | "section" => {
                        let line = t.line;
                        self.skip_line(line);
                    }
                    "pragma" => {
                        self.pos += 1;
                        while !self.is_punct(';') {
                            self.next("`;`")?;
                        }
                        self.pos += 1;
                    }
                    other => return Err(err(&t, format!("unknown or unsupported directive `.{other}`"))),
                },
                other => return Err(err(&t, format!("expected a directive, found {}", show(other)))),
            }
        }
        Ok(prog)
    }

    /// `[.align N] .type name[size] ;` after `.shared` at module level.
    fn module_shared_decl(&mut self, at: &Token, ext: bool) -> Result<(), ParseError> {
        let (name, align, size, line, col) = self.var_decl(at, ext)?;
        self.module_shared.push((name, align, size, line, col));
        Ok(())
    }

    /// A variable declaration after its state space: `[.align N] [.vN] .type name[[size]] ;`.
    /// Returns name, alignment, byte size (None for an `.extern` array without size).
    fn var_decl(&mut self, at: &Token, ext: bool) -> Result<(String, u32, Option<u32>, u32, u32), ParseError> {
        let mut align = 0u32;
        let mut vec = 1u32;
        let ty;
        loop {
            let t = self.next("a type")?;
            match &t.tok {
                Tok::Dot(d) if d == "align" => {
                    let a = self.int("an alignment")?;
                    if !(a as u32).is_power_of_two() || a > 4096 {
                        return Err(err(&t, format!("alignment {a} is not a power of two up to 4096")));
                    }
                    align = a as u32;
                }
                Tok::Dot(d) if d == "v2" || d == "v4" || d == "v8" => vec = d[1..].parse().unwrap_or(1),
                Tok::Dot(d) => match scalar_type(d) {
                    Some(s) if s != ScalarType::Pred => {
                        ty = s;
                        break;
                    }
                    _ => return Err(err(&t, format!("unsupported type `.{d}` in a variable declaration"))),
                },
                other => return Err(err(&t, format!("expected a type, found {}", show(other)))),
            }
        }
        let (name, nt) = self.ident("a variable name")?;
        let elem = ty.size() * vec;
        let mut size = Some(elem);
        if self.is_punct('[') {
            self.pos += 1;
            if self.is_punct(']') {
                if !ext {
                    return Err(err(&nt, format!("`{name}[]` without a size must be `.extern`")));
                }
                size = None;
            } else {
                let n = self.int("an array size")?;
                let total = (n as u128) * elem as u128;
                if total > crate::MAX_SHARED_BYTES as u128 * 16 {
                    return Err(err(&nt, format!("`{name}` is too large ({total} bytes)")));
                }
                size = Some(total as u32);
            }
            self.expect_punct(']')?;
        }
        if self.is_punct('=') {
            return Err(err(&nt, "initialized variables are not supported by the emulator"));
        }
        self.expect_punct(';')?;
        let _ = at;
        Ok((name, if align == 0 { elem.max(1) } else { align }, size, nt.line, nt.col))
    }

    fn entry(&mut self, at: &Token) -> Result<Kernel, ParseError> {
        let (name, _) = self.ident("the entry's name")?;
        let mut scopes = Scopes { scopes: vec![HashMap::new()], nregs: 0 };
        let mut params = Vec::new();
        let mut offset = 0u32;
        if self.is_punct('(') {
            self.pos += 1;
            while !self.is_punct(')') {
                let pt = self.next("`.param`")?;
                if !matches!(&pt.tok, Tok::Dot(d) if d == "param") {
                    return Err(err(&pt, format!("expected `.param`, found {}", show(&pt.tok))));
                }
                let mut align = 0u32;
                let mut ty = None;
                let mut ptr_space = None;
                loop {
                    let t = self.next("a parameter type")?;
                    match &t.tok {
                        Tok::Dot(d) if d == "align" => align = self.int("an alignment")? as u32,
                        Tok::Dot(d) if d == "ptr" => {}
                        Tok::Dot(d) if matches!(d.as_str(), "global" | "shared" | "local" | "const") => {
                            ptr_space = Some(d.clone())
                        }
                        Tok::Dot(d) if ty.is_none() => match scalar_type(d) {
                            Some(s) if s != ScalarType::Pred => ty = Some(s),
                            _ => return Err(err(&t, format!("unsupported parameter type `.{d}`"))),
                        },
                        Tok::Ident(n) if ty.is_some() => {
                            let ty = ty.expect("checked");
                            let mut array = None;
                            let mut size = ty.size();
                            if self.is_punct('[') {
                                self.pos += 1;
                                let n = self.int("an array size")?;
                                if n == 0 || n > 4096 {
                                    return Err(err(&t, format!("parameter array size {n} is out of range")));
                                }
                                self.expect_punct(']')?;
                                array = Some(n as u32);
                                size *= n as u32;
                            }
                            let a = if align == 0 { ty.size() } else { align.max(1) };
                            offset = offset.next_multiple_of(a);
                            scopes.declare(n.clone(), crate::parse::Sym::Param(offset), t.line, t.col)?;
                            params.push(Param {
                                name: n.clone(),
                                ty,
                                array,
                                size,
                                offset,
                                ptr_space: ptr_space.clone(),
                                line: t.line,
                            });
                            offset += size;
                            break;
                        }
                        other => return Err(err(&t, format!("unexpected {} in a parameter declaration", show(other)))),
                    }
                }
                if self.is_punct(',') {
                    self.pos += 1;
                } else if !self.is_punct(')') {
                    let t = self.next("`,` or `)`")?;
                    return Err(err(&t, format!("expected `,` or `)`, found {}", show(&t.tok))));
                }
            }
            self.pos += 1;
        }
        // Performance directives. `.reqntid` and `.maxntid` are kept (launches must match or stay
        // within them); the others only advise the compiler and are skipped.
        let mut reqntid: Option<[u32; 3]> = None;
        let mut maxntid: Option<[u32; 3]> = None;
        while let Some(Token { tok: Tok::Dot(d), .. }) = self.peek() {
            match d.as_str() {
                "reqntid" | "maxntid" => {
                    let which = if d == "reqntid" { "`.reqntid`" } else { "`.maxntid`" };
                    let t = self.next(which)?;
                    let mut dims: Vec<u64> = vec![];
                    while let Some(Token { tok: Tok::Int(v), .. }) = self.peek() {
                        dims.push(*v);
                        self.pos += 1;
                        if self.is_punct(',') {
                            self.pos += 1;
                        } else {
                            break;
                        }
                    }
                    if dims.is_empty() || dims.len() > 3 || dims.iter().any(|&d| d == 0 || d > 1024) {
                        return Err(err(&t, &format!("{which} takes 1 to 3 dimensions from 1 to 1024")));
                    }
                    let slot = if which == "`.reqntid`" { &mut reqntid } else { &mut maxntid };
                    if slot.is_some() {
                        return Err(err(&t, &format!("{which} is given twice")));
                    }
                    let mut r = [1u32; 3];
                    for (d, v) in r.iter_mut().zip(&dims) {
                        *d = *v as u32;
                    }
                    *slot = Some(r);
                }
                "minnctapersm" | "maxnreg" | "maxclusterrank" | "reqnctapercluster" | "explicitcluster"
                | "noreturn" => {
                    self.pos += 1;
                    while matches!(self.peek(), Some(Token { tok: Tok::Int(_) | Tok::Punct(','), .. })) {
                        self.pos += 1;
                    }
                }
                "pragma" => {
                    self.pos += 1;
                    while !self.is_punct(';') {
                        self.next("`;`")?;
                    }
                    self.pos += 1;
                }
                _ => break,
            }
        }
        // Shared memory: module-level declarations, then entry-level ones, in order.
        let mut shared = SharedLayout::default();
        for (n, a, s, line, col) in self.module_shared.clone() {
            shared.add(&mut scopes, n, a, s, line, col)?;
        }
        let open = self.expect_punct('{')?;
        let mut insts: Vec<Inst> = Vec::new();
        let mut texts: Vec<String> = Vec::new();
        let mut labels: HashMap<String, u32> = HashMap::new();
        let mut pending: Vec<(usize, String, u32, u32)> = Vec::new();
        let mut local_bytes = 0u32;
        let mut first_dynamic_offset: Option<(u32, u32, u32)> = None;
        let mut depth = 1;
        loop {
            let t = self.next("`}`")?;
            match &t.tok {
                Tok::Punct('{') => {
                    depth += 1;
                    scopes.scopes.push(HashMap::new());
                }
                Tok::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                    scopes.scopes.pop();
                }
                Tok::Dot(d) => match d.as_str() {
                    "reg" => self.reg_decl(&mut scopes)?,
                    "shared" => {
                        let (n, a, s, line, col) = self.var_decl(&t, false)?;
                        shared.add(&mut scopes, n, a, s, line, col)?;
                    }
                    "local" => {
                        let (n, a, s, line, col) = self.var_decl(&t, false)?;
                        let off = local_bytes.next_multiple_of(a);
                        local_bytes = off + s.unwrap_or(0);
                        if local_bytes > 512 * 1024 {
                            return Err(ParseError {
                                line,
                                col,
                                message: "more than 512 KiB of local memory per thread".into(),
                            });
                        }
                        scopes.declare(n, Sym::Local(off), line, col)?;
                    }
                    "pragma" => {
                        while !self.is_punct(';') {
                            self.next("`;`")?;
                        }
                        self.pos += 1;
                    }
                    "loc" | "file" => self.skip_line(t.line),
                    other => return Err(err(&t, format!("unsupported directive `.{other}` in an entry body"))),
                },
                Tok::Ident(name) if self.is_punct(':') => {
                    self.pos += 1;
                    if labels.insert(name.clone(), insts.len() as u32).is_some() {
                        return Err(err(&t, format!("label `{name}` is defined twice")));
                    }
                }
                Tok::Punct('@') | Tok::Ident(_) => {
                    self.pos -= 1;
                    let raw = self.raw_inst()?;
                    let text = raw.text.clone();
                    let info = shared.info();
                    let (inst, label) = decode(&raw, &scopes, &info)?;
                    first_dynamic_offset.get_or_insert((info.dynamic_offset, raw.line, raw.col));
                    if let Some(l) = label {
                        pending.push((insts.len(), l, raw.line, raw.col));
                    }
                    insts.push(inst);
                    texts.push(text);
                }
                other => {
                    return Err(err(
                        &t,
                        format!("expected an instruction, a label or a declaration, found {}", show(other)),
                    ))
                }
            }
        }
        for (i, l, line, col) in pending {
            let Some(&target) = labels.get(&l) else {
                return Err(ParseError { line, col, message: format!("undefined label `{l}`") });
            };
            if let Op::Bra { target: t, .. } = &mut insts[i].op {
                *t = target;
            }
        }
        // A body that can fall off its end returns there.
        if insts.last().map_or(true, |i| !matches!(i.op, Op::Exit | Op::Bra { .. }) || i.guard.is_some())
            || labels.values().any(|&l| l as usize == insts.len())
        {
            insts.push(Inst {
                op: Op::Exit,
                guard: None,
                dst: [crate::prog::NO_REG; 4],
                src: [crate::prog::Src::None; 4],
                neg: 0,
                base: None,
                offset: 0,
                line: open.line,
            });
            texts.push("ret (end of body)".into());
        }
        let dynamic_shared_offset = shared.info().dynamic_offset;
        if let Some((off, line, col)) = first_dynamic_offset {
            if off != dynamic_shared_offset {
                return Err(ParseError {
                    line,
                    col,
                    message: "a `.shared` declaration after the first instruction moves the `.extern .shared` array; declare shared memory before the instructions".into(),
                });
            }
        }
        cfg::contract(&mut insts);
        let reconverge = cfg::reconvergence(&insts);
        let clear_regs = cfg::maybe_uninitialized(&insts, scopes.nregs);
        let global_atomics = insts
            .iter()
            .any(|i| matches!(i.op, Op::Atom { space: crate::prog::Space::Global | crate::prog::Space::Generic, .. }));
        let info = Entry { name, params, static_shared_bytes: shared.size, line: at.line, reqntid, maxntid };
        Ok(Kernel {
            info,
            insts,
            texts,
            nregs: scopes.nregs,
            static_shared: shared.size,
            dynamic_shared_offset,
            local_bytes,
            param_bytes: offset,
            reconverge,
            clear_regs,
            global_atomics,
        })
    }

    /// `.reg [.vN] .type %r<N>;` or `.reg .type a, b, c;`
    fn reg_decl(&mut self, scopes: &mut Scopes) -> Result<(), ParseError> {
        let t = self.next("a register type")?;
        let ty = match &t.tok {
            Tok::Dot(d) => match scalar_type(d) {
                Some(s) => s,
                None if d.starts_with('v') => {
                    return Err(err(&t, "vector registers (`.reg .v2 ...`) are not supported by the emulator"))
                }
                None => return Err(err(&t, format!("unknown register type `.{d}`"))),
            },
            other => return Err(err(&t, format!("expected a register type, found {}", show(other)))),
        };
        let _ = ty;
        loop {
            let (name, nt) = self.ident("a register name")?;
            if self.is_punct('<') {
                self.pos += 1;
                let n = self.int("a register count")?;
                self.expect_punct('>')?;
                if n > 1 << 20 || scopes.nregs as u64 + n > MAX_REGS || self.module_regs + n > MAX_MODULE_REGS {
                    return Err(err(&nt, format!("too many registers ({n})")));
                }
                self.module_regs += n;
                for i in 0..n {
                    let id = scopes.nregs;
                    scopes.nregs += 1;
                    scopes.declare(format!("{name}{i}"), Sym::Reg(id), nt.line, nt.col)?;
                }
            } else {
                if scopes.nregs as u64 >= MAX_REGS || self.module_regs >= MAX_MODULE_REGS {
                    return Err(err(&nt, "too many registers"));
                }
                self.module_regs += 1;
                let id = scopes.nregs;
                scopes.nregs += 1;
                scopes.declare(name, Sym::Reg(id), nt.line, nt.col)?;
            }
            if self.is_punct(',') {
                self.pos += 1;
                continue;
            }
            self.expect_punct(';')?;
            return Ok(());
        }
    }

    /// One instruction up to and including `;`, split into guard, opcode, modifiers and operands.
    fn raw_inst(&mut self) -> Result<RawInst, ParseError> {
        let first = self.peek().cloned().ok_or_else(|| self.eof_err("an instruction"))?;
        let start = self.pos;
        let mut guard = None;
        if self.is_punct('@') {
            self.pos += 1;
            let neg = self.is_punct('!');
            if neg {
                self.pos += 1;
            }
            let (g, gt) = self.ident("a guard predicate")?;
            guard = Some((g, neg, gt.line, gt.col));
        }
        let (opcode, _) = self.ident("an opcode")?;
        let mut mods = Vec::new();
        while let Some(Token { tok: Tok::Dot(d), .. }) = self.peek() {
            mods.push(d.clone());
            self.pos += 1;
        }
        let mut operands = Vec::new();
        if !self.is_punct(';') {
            loop {
                operands.push(self.operand()?);
                if self.is_punct(',') {
                    self.pos += 1;
                    continue;
                }
                break;
            }
        }
        let semi = self.next("`;`")?;
        if semi.tok != Tok::Punct(';') {
            return Err(err(&semi, format!("expected `,` or `;` after an operand, found {}", show(&semi.tok))));
        }
        let text = render(&self.toks[start..self.pos]);
        Ok(RawInst { guard, opcode, mods, operands, line: first.line, col: first.col, text })
    }

    fn operand(&mut self) -> Result<Operand, ParseError> {
        self.operand_at(0)
    }

    /// An operand; `depth` counts the enclosing `{ }`, `!` and `-` (at most one of each kind is
    /// PTX, and a bound keeps hostile nesting from exhausting the stack).
    fn operand_at(&mut self, depth: u32) -> Result<Operand, ParseError> {
        let t = self.next("an operand")?;
        if depth > 2 {
            return Err(err(&t, "operands nest too deeply (vectors of vectors, `!!`, `--`)"));
        }
        let (line, col) = (t.line, t.col);
        Ok(match &t.tok {
            Tok::Punct('[') => {
                let mut base = None;
                let mut off: i128 = 0;
                let mut sign = 1i128;
                let mut first = true;
                loop {
                    let x = self.next("an address")?;
                    match &x.tok {
                        Tok::Punct(']') if !first => break,
                        Tok::Punct('+') if !first => sign = 1,
                        Tok::Punct('-') => sign = -sign,
                        Tok::Ident(n) if base.is_none() => base = Some((n.clone(), x.line, x.col)),
                        Tok::Int(v) => {
                            off += sign * *v as i128;
                            sign = 1;
                        }
                        other => return Err(err(&x, format!("unexpected {} in an address", show(other)))),
                    }
                    first = false;
                }
                let off = i64::try_from(off).map_err(|_| ParseError {
                    line,
                    col,
                    message: "address offset out of range".into(),
                })?;
                Operand::Mem { base, off, line, col }
            }
            Tok::Punct('{') => {
                let mut parts = Vec::new();
                loop {
                    parts.push(self.operand_at(depth + 1)?);
                    let x = self.next("`,` or `}`")?;
                    match x.tok {
                        Tok::Punct(',') => continue,
                        Tok::Punct('}') => break,
                        ref other => {
                            return Err(err(&x, format!("expected `,` or `}}` in a vector, found {}", show(other))))
                        }
                    }
                }
                Operand::Vec(parts, line, col)
            }
            Tok::Punct('!') => Operand::Not(Box::new(self.operand_at(depth + 1)?)),
            Tok::Punct('-') => match self.operand_at(depth + 1)? {
                Operand::Int(v, l, c) => Operand::Int(-v, l, c),
                Operand::F64(b, l, c) => Operand::F64(b ^ (1 << 63), l, c),
                Operand::F32(b, l, c) => Operand::F32(b ^ 0x8000_0000, l, c),
                _ => return Err(err(&t, "`-` must be followed by a number")),
            },
            Tok::Int(v) => Operand::Int(*v as i128, line, col),
            Tok::F32(b) => Operand::F32(*b, line, col),
            Tok::F64(b) => Operand::F64(*b, line, col),
            Tok::Ident(n) if n == "_" => Operand::Sink(line, col),
            Tok::Ident(n) => {
                // `%tid.x` style special registers carry a component.
                let mut name = n.clone();
                if let Some(Token { tok: Tok::Dot(c), .. }) = self.peek() {
                    if matches!(c.as_str(), "x" | "y" | "z")
                        && matches!(n.as_str(), "%tid" | "%ntid" | "%ctaid" | "%nctaid")
                    {
                        name = format!("{n}.{c}");
                        self.pos += 1;
                    }
                }
                if self.is_punct('|') {
                    self.pos += 1;
                    let (q, _) = self.ident("a second predicate")?;
                    return Ok(Operand::Pair(name, q, line, col));
                }
                if self.is_punct('+') {
                    // `sym+4` as an operand (address of a variable plus an offset).
                    self.pos += 1;
                    let v = self.int("an offset")?;
                    return Ok(Operand::SymOff(name, v as i64, line, col));
                }
                Operand::Name(name, line, col)
            }
            other => return Err(err(&t, format!("expected an operand, found {}", show(other)))),
        })
    }
}

/// Static shared memory layout of an entry.
#[derive(Default)]
pub struct SharedLayout {
    pub size: u32,
    pub dyn_align: u32,
}

/// What decoding needs to know about the entry's shared memory.
pub struct SharedInfo {
    /// Offset of the `.extern .shared` array with the declarations seen so far.
    pub dynamic_offset: u32,
}

impl SharedLayout {
    fn add(
        &mut self,
        scopes: &mut Scopes,
        name: String,
        align: u32,
        size: Option<u32>,
        line: u32,
        col: u32,
    ) -> Result<(), ParseError> {
        match size {
            Some(s) => {
                let off = self.size.next_multiple_of(align);
                let end = off as u64 + s as u64;
                if end > crate::MAX_SHARED_BYTES as u64 {
                    return Err(ParseError {
                        line,
                        col,
                        message: format!("static shared memory exceeds {} bytes", crate::MAX_SHARED_BYTES),
                    });
                }
                self.size = end as u32;
                scopes.declare(name, Sym::Shared(off), line, col)
            }
            None => {
                // The dynamic array starts after all static shared memory; its offset is fixed
                // once the layout is complete, so it is resolved as a special symbol.
                self.dyn_align = self.dyn_align.max(align);
                scopes.declare(name, Sym::Shared(DYNAMIC_SHARED), line, col)
            }
        }
    }

    fn info(&self) -> SharedInfo {
        SharedInfo { dynamic_offset: self.size.next_multiple_of(self.dyn_align.max(1)) }
    }
}

/// Most registers an entry may declare (all scopes together).
const MAX_REGS: u64 = 1 << 20;
/// Most registers a module may declare (all entries together).
const MAX_MODULE_REGS: u64 = 1 << 21;

/// Offset placeholder of the `.extern .shared` array: resolved at launch to the kernel's
/// `dynamic_shared_offset`.
pub const DYNAMIC_SHARED: u32 = u32::MAX;

fn show(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Dot(s) => format!("`.{s}`"),
        Tok::Int(v) => format!("`{v}`"),
        Tok::F32(b) => format!("`0f{b:08X}`"),
        Tok::F64(b) => format!("`0d{b:016X}`"),
        Tok::Str(s) => format!("\"{s}\""),
        Tok::Punct(c) => format!("`{c}`"),
    }
}

/// The instruction's tokens as text (for fault messages).
fn render(toks: &[Token]) -> String {
    let mut s = String::new();
    let mut prev: Option<&Tok> = None;
    for t in toks {
        let glue = matches!(t.tok, Tok::Dot(_) | Tok::Punct(',' | ';' | ']' | '}' | '|'))
            || matches!(prev, Some(Tok::Punct('[' | '{' | '@' | '!' | '|' | '-' | '+')))
            || (matches!(t.tok, Tok::Punct('+') | Tok::Punct('-'))
                && matches!(prev, Some(Tok::Ident(_) | Tok::Int(_))));
        if !s.is_empty() && !glue {
            s.push(' ');
        }
        match &t.tok {
            Tok::Ident(x) => s.push_str(x),
            Tok::Dot(x) => {
                s.push('.');
                s.push_str(x);
            }
            Tok::Int(v) => s.push_str(&v.to_string()),
            Tok::F32(b) => s.push_str(&format!("0f{b:08X}")),
            Tok::F64(b) => s.push_str(&format!("0d{b:016X}")),
            Tok::Str(x) => s.push_str(&format!("\"{x}\"")),
            Tok::Punct(c) => s.push(*c),
        }
        prev = Some(&t.tok);
    }
    s
}

pub fn parse_program(text: &str) -> Result<Program, ParseError> {
    let toks = lex(text)?;
    let mut p = Parser { toks, pos: 0, module_shared: Vec::new(), module_regs: 0 };
    p.module()
}
