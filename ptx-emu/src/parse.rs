//! PTX text → [`Program`]: module directives, entries, declarations, labels and instructions.
//!
//! Guarantees: every token is accounted for; anything the emulator does not implement (an
//! instruction, a type or modifier combination, module-level `.global` data, indirect or
//! recursive calls) is a [`ParseError`] with the line and column of the construct, never skipped.
//! Registers must be declared (`.reg`) in an enclosing `{ }` scope before use; labels may be used
//! before they are defined. The decoding of instructions is in [`crate::decode`].
//!
//! Module-level `.const` variables (`[.align A] .type name[[N]] [= literal | {literals}];`) are
//! laid out in one constant memory image per module ([`ConstImage`], at most
//! [`MAX_CONST_BYTES`]), each at its alignment, little-endian; an entry sees those declared before
//! it, at their offsets in the `.const` state space. Initializers must be numeric literals of the
//! variable's kind (as ptxas: float literals for `.f32`/`.f64`, their bits kept); anything else
//! (addresses, `.extern .const`, vector or multi-dimensional variables, `.f16`) is a located error.
//!
//! Device functions (`.func`) and `call`: a direct call `call{.uni} (ret), f, (args);` runs the
//! callee's body inlined at the call, in its own scope, which is what the PTX ABI's semantics come
//! to for a non-recursive program:
//! - `.param` variables declared in a body (a call's argument and return slots) are per-thread
//!   memory (allocated in the thread's local memory); `ld.param`/`st.param` on them read and write
//!   it. The callee's parameters and return parameter name the caller's slots, in order
//!   (pass-by-value: the caller wrote them just before the call and reads the result just after).
//! - `ret` in the callee continues after the call; a divergent `ret` waits for the other lanes
//!   there (the end of the inlined body post-dominates it, so the warp reconverges there as the ISA
//!   describes: "a divergent return suspends threads until all threads are ready to return to the
//!   caller"). `exit` still ends the thread. Special registers, barriers and collectives act for the
//!   calling thread: the inlined instructions are the thread's own.
//! - The callee sees its own declarations and module-level ones (`.shared` variables). Functions may
//!   be defined after their first caller (after a prototype declaration). `.shared` inside a
//!   function, calls through a register, guarded calls and recursion are errors, as is a call whose
//!   argument or result count differs from the function's.

use crate::decode::{decode, Operand, RawInst};
use crate::lex::{lex, Tok, Token};
use crate::prog::{ConstImage, Inst, Kernel, Op, Program, MAX_CONST_BYTES};
use crate::scope::{scalar_type, Scopes, SharedInfo, Sym, DYNAMIC_SHARED};
use crate::{cfg, Entry, Param, ParseError, ScalarType};
use std::collections::HashMap;

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// Module-level `.shared` declarations: name, alignment, size (None: `.extern`, dynamic).
    module_shared: Vec<(String, u32, Option<u32>, u32, u32)>,
    /// Names of module-level `.global` variables (declared, not emulated).
    module_globals: Vec<String>,
    /// The module's constant memory (module-level `.const` variables), shared by its kernels.
    consts: ConstImage,
    /// Each `.const` variable: name, offset in `consts`, line and column of its name.
    const_syms: Vec<(String, u32, u32, u32)>,
    /// Registers declared in the whole module so far (bounded: a short text must not allocate
    /// without limit).
    module_regs: u64,
    /// The module's device functions, by name (collected before the entries are parsed).
    funcs: HashMap<String, FuncDef>,
    /// Calls inlined so far (numbers each inlined body's labels apart).
    inlined: u32,
    /// Tokens of inlined bodies so far (bounded, like registers).
    inlined_tokens: usize,
}

/// A device function: its parameter names and its body, inlined at each call.
#[derive(Clone, Debug)]
struct FuncDef {
    params: Vec<String>,
    /// The return parameter's name.
    ret: Option<String>,
    /// The tokens between the body's braces; `None` for a declaration without a body.
    body: Option<Vec<Token>>,
}

/// At most this many tokens of inlined function bodies per module.
const MAX_INLINED_TOKENS: usize = 1 << 21;
/// At most this many calls nested in each other.
const MAX_CALL_DEPTH: usize = 256;

/// A parsed `call{.uni} [(rets),] func[, (args)];`.
struct Call {
    at: Token,
    rets: Vec<(String, Token)>,
    func: String,
    func_tok: Token,
    args: Vec<(String, Token)>,
}

/// Parses the call at `toks[i]` (the `call` token); returns it and the index after its `;`.
fn parse_call(toks: &[Token], i: usize) -> Result<(Call, usize), ParseError> {
    let at = toks[i].clone();
    let mut i = i + 1;
    let eof = |what: &str| err(&at, format!("unexpected end of the call: expected {what}"));
    let is = |i: usize, c: char| matches!(toks.get(i), Some(Token { tok: Tok::Punct(p), .. }) if *p == c);
    while matches!(toks.get(i), Some(Token { tok: Tok::Dot(d), .. }) if d == "uni") {
        i += 1;
    }
    let names = |i: &mut usize| -> Result<Vec<(String, Token)>, ParseError> {
        // At `(`.
        *i += 1;
        let mut v = Vec::new();
        loop {
            let t = toks.get(*i).ok_or_else(|| eof("`)`"))?;
            *i += 1;
            match &t.tok {
                Tok::Punct(')') if v.is_empty() => return Ok(v),
                Tok::Ident(n) => v.push((n.clone(), t.clone())),
                other => return Err(err(t, format!("expected a `.param` variable, found {}", show(other)))),
            }
            let t = toks.get(*i).ok_or_else(|| eof("`)`"))?;
            *i += 1;
            match &t.tok {
                Tok::Punct(',') => {}
                Tok::Punct(')') => return Ok(v),
                other => return Err(err(t, format!("expected `,` or `)`, found {}", show(other)))),
            }
        }
    };
    let mut rets = Vec::new();
    if is(i, '(') {
        rets = names(&mut i)?;
        if !is(i, ',') {
            return Err(toks.get(i).map_or_else(|| eof("`,`"), |t| err(t, "expected `,` after the call's results")));
        }
        i += 1;
    }
    let func_tok = toks.get(i).cloned().ok_or_else(|| eof("the called function"))?;
    let Tok::Ident(func) = &func_tok.tok else {
        return Err(err(&func_tok, format!("expected the called function, found {}", show(&func_tok.tok))));
    };
    let func = func.clone();
    i += 1;
    let mut args = Vec::new();
    if is(i, ',') && is(i + 1, '(') {
        i += 1;
        args = names(&mut i)?;
    }
    if is(i, ',') {
        return Err(err(&at, "indirect calls (a call target list or prototype) are not supported by the emulator"));
    }
    if !is(i, ';') {
        return Err(toks
            .get(i)
            .map_or_else(|| eof("`;`"), |t| err(t, format!("expected `;`, found {}", show(&t.tok)))));
    }
    Ok((Call { at, rets, func, func_tok, args }, i + 1))
}

/// Whether token `i` of `toks` starts an instruction (possibly after its guard).
fn at_inst_start(toks: &[Token], i: usize) -> bool {
    let p = |k: usize| i.checked_sub(k).map(|j| &toks[j].tok);
    match p(1) {
        None | Some(Tok::Punct(';' | '{' | '}' | ':')) => true,
        Some(Tok::Ident(_)) => {
            matches!(p(2), Some(Tok::Punct('@')))
                || (matches!(p(2), Some(Tok::Punct('!'))) && matches!(p(3), Some(Tok::Punct('@'))))
        }
        _ => false,
    }
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

    /// Skips the rest of a statement up to and including its `;` (`.pragma "...";`).
    fn skip_statement(&mut self) -> Result<(), ParseError> {
        while !self.is_punct(';') {
            self.next("`;`")?;
        }
        self.pos += 1;
        Ok(())
    }

    /// Skips a performance directive's name and its list of integers (`.maxntid 256, 1, 1`).
    fn skip_directive_ints(&mut self) {
        self.pos += 1;
        while matches!(self.peek(), Some(Token { tok: Tok::Int(_) | Tok::Punct(','), .. })) {
            self.pos += 1;
        }
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

    /// The number after `.align` (token `at`): a power of two up to 4096.
    fn alignment(&mut self, at: &Token) -> Result<u32, ParseError> {
        let a = self.int("an alignment")?;
        if !a.is_power_of_two() || a > 4096 {
            return Err(err(at, format!("alignment {a} is not a power of two up to 4096")));
        }
        Ok(a as u32)
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
        self.collect_funcs()?;
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
                        let mut names = vec![self.ident("a target name")?.0];
                        while self.is_punct(',') {
                            self.pos += 1;
                            names.push(self.ident("a target name")?.0);
                        }
                        // `sm_90a` -> 90; other names (`texmode_independent`, `debug`) say nothing.
                        prog.sm = names.iter().find_map(|n| {
                            let d = n.strip_prefix("sm_")?;
                            d.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse().ok()
                        });
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
                        } else if d == "extern" && self.is_dot("const") {
                            return Err(err(
                                &t,
                                "`.extern .const` variables (defined in another module) are not supported by the emulator",
                            ));
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
                        // Collected by `collect_funcs` before the entries: skip it here.
                        self.pos += 1;
                        saw_entry_or_func = true;
                        self.func_def()?;
                    }
                    "shared" => {
                        self.pos += 1;
                        self.module_shared_decl(&t, false)?;
                    }
                    "global" => {
                        // Declared data (Triton's NVVM-reflect strings, never read by the code):
                        // skipped with its initializer; an instruction naming it is refused.
                        self.pos += 1;
                        let mut name: Option<String> = None;
                        let mut depth = 0u32;
                        loop {
                            let x = self.next("`;` ending the `.global` declaration")?;
                            match &x.tok {
                                Tok::Ident(n) if depth == 0 && name.is_none() => name = Some(n.clone()),
                                Tok::Punct('{') => depth += 1,
                                Tok::Punct('}') => depth = depth.saturating_sub(1),
                                Tok::Punct(';') if depth == 0 => break,
                                _ => {}
                            }
                        }
                        let Some(name) = name else {
                            return Err(err(&t, "a `.global` declaration without a name"));
                        };
                        self.module_globals.push(name);
                    }
                    "const" => {
                        self.pos += 1;
                        self.const_decl()?;
                    }
                    "file" | "loc" => {
                        let line = t.line;
                        self.skip_line(line);
                    }
                    "section" => {
                        // Debug sections (`.section .debug_info { .b8 ... }`, as Triton and
                        // NVRTC -lineinfo emit them) carry no code: skipped, braces balanced.
                        let line = t.line;
                        self.skip_line(line);
                        if self.is_punct('{') {
                            let mut depth = 0u32;
                            loop {
                                let t = self.next("`}` closing the section")?;
                                match t.tok {
                                    Tok::Punct('{') => depth += 1,
                                    Tok::Punct('}') => {
                                        depth -= 1;
                                        if depth == 0 {
                                            break;
                                        }
                                    }
                                    _ => {}
                                }
                            }
                        }
                    }
                    "pragma" => {
                        self.pos += 1;
                        self.skip_statement()?;
                    }
                    other => return Err(err(&t, format!("unknown or unsupported directive `.{other}`"))),
                },
                other => return Err(err(&t, format!("expected a directive, found {}", show(other)))),
            }
        }
        let _ = saw_entry_or_func;
        // One image for the module: every kernel sees the same constant memory (an entry's
        // scope names only the variables declared before it).
        let consts = std::sync::Arc::new(std::mem::take(&mut self.consts));
        for k in &mut prog.kernels {
            k.consts = consts.clone();
        }
        Ok(prog)
    }

    /// Reads every `.func` of the module into `self.funcs`, so that an entry may call a function
    /// defined after it. Leaves the position at the start.
    fn collect_funcs(&mut self) -> Result<(), ParseError> {
        let mut depth = 0u32;
        let mut i = 0;
        while i < self.toks.len() {
            match &self.toks[i].tok {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => depth = depth.saturating_sub(1),
                Tok::Dot(d) if d == "func" && depth == 0 => {
                    let at = self.toks[i].clone();
                    self.pos = i + 1;
                    let (name, def) = self.func_def()?;
                    i = self.pos;
                    match self.funcs.get_mut(&name) {
                        Some(old) => {
                            if old.params.len() != def.params.len() || old.ret.is_some() != def.ret.is_some() {
                                return Err(err(&at, format!("function `{name}` is declared twice, differently")));
                            }
                            if def.body.is_some() {
                                if old.body.is_some() {
                                    return Err(err(&at, format!("function `{name}` is defined twice")));
                                }
                                *old = def;
                            }
                        }
                        None => {
                            self.funcs.insert(name, def);
                        }
                    }
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        self.pos = 0;
        Ok(())
    }

    /// After `.func`: `[(.param ... ret)] name [(.param ... a, ...)] [directives] ({ body } | ;)`.
    fn func_def(&mut self) -> Result<(String, FuncDef), ParseError> {
        let mut ret = None;
        if self.is_punct('(') {
            self.pos += 1;
            if !self.is_punct(')') {
                ret = Some(self.func_param()?);
            }
            let t = self.next("`)`")?;
            if t.tok != Tok::Punct(')') {
                return Err(err(&t, "a function returns at most one `.param` (expected `)`)"));
            }
        }
        let (name, _) = self.ident("the function's name")?;
        let mut params = Vec::new();
        if self.is_punct('(') {
            self.pos += 1;
            while !self.is_punct(')') {
                params.push(self.func_param()?);
                if self.is_punct(',') {
                    self.pos += 1;
                } else if !self.is_punct(')') {
                    let t = self.next("`,` or `)`")?;
                    return Err(err(&t, format!("expected `,` or `)`, found {}", show(&t.tok))));
                }
            }
            self.pos += 1;
        }
        // Performance directives and pragmas only advise the compiler.
        while let Some(Token { tok: Tok::Dot(d), .. }) = self.peek() {
            match d.as_str() {
                "noreturn"
                | "maxnreg"
                | "maxntid"
                | "reqntid"
                | "minnctapersm"
                | "abi_preserve"
                | "abi_preserve_control" => self.skip_directive_ints(),
                "pragma" => {
                    self.pos += 1;
                    self.skip_statement()?;
                }
                _ => break,
            }
        }
        if self.is_punct(';') {
            self.pos += 1;
            return Ok((name, FuncDef { params, ret, body: None }));
        }
        self.expect_punct('{')?;
        let start = self.pos;
        let mut depth = 1u32;
        loop {
            let t = self.next("`}` closing the function")?;
            match &t.tok {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Tok::Dot(d) if d == "shared" && at_inst_start(&self.toks, self.pos - 1) => {
                    return Err(err(
                        &t,
                        "`.shared` variables inside a function are not supported by the emulator (declare them at module scope)",
                    ));
                }
                _ => {}
            }
        }
        let body = self.toks[start..self.pos - 1].to_vec();
        Ok((name, FuncDef { params, ret, body: Some(body) }))
    }

    /// One `.param [.align N] .type name[[N]]` of a function's parameter or return list; its name.
    fn func_param(&mut self) -> Result<String, ParseError> {
        let pt = self.next("`.param`")?;
        match &pt.tok {
            Tok::Dot(d) if d == "param" => {}
            Tok::Dot(d) if d == "reg" => {
                return Err(err(&pt, "`.reg` function parameters are not supported by the emulator (use `.param`)"))
            }
            other => return Err(err(&pt, format!("expected `.param`, found {}", show(other)))),
        }
        loop {
            let t = self.next("a parameter type")?;
            match &t.tok {
                Tok::Dot(d) if d == "align" => {
                    self.int("an alignment")?;
                }
                Tok::Dot(d) if d == "ptr" || matches!(d.as_str(), "global" | "shared" | "local" | "const") => {}
                Tok::Dot(d) if scalar_type(d).is_some() => {}
                Tok::Ident(n) => {
                    let n = n.clone();
                    if self.is_punct('[') {
                        self.pos += 1;
                        self.int("an array size")?;
                        self.expect_punct(']')?;
                    }
                    return Ok(n);
                }
                other => return Err(err(&t, format!("unexpected {} in a parameter declaration", show(other)))),
            }
        }
    }

    /// Expands the calls of the entry body that starts at the current position (just after its
    /// `{`), in place, in one pass over the body (time and size linear in the expansion, which
    /// is bounded). Each `call{.uni} [(ret),] f[, (args)];` becomes `{`, one alias directive per
    /// argument and result (`.#alias callee_name caller_name ;`, which the lexer cannot produce:
    /// the entry's parser declares the callee's name for the caller's `.param` slot), the callee's
    /// body with its labels renamed apart and each `ret` a branch to its end (its calls expanded
    /// in turn), that end's label, and `}`.
    fn expand_calls(&mut self) -> Result<(), ParseError> {
        let start = self.pos;
        let mut depth = 1u32;
        let mut end = start;
        let mut has_call = false;
        while end < self.toks.len() {
            match &self.toks[end].tok {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Tok::Ident(c) if c == "call" => has_call = true,
                _ => {}
            }
            end += 1;
        }
        if !has_call {
            return Ok(());
        }
        struct Frame {
            toks: std::rc::Rc<[Token]>,
            i: usize,
            /// The function and its instance number (`None` for the entry's own body).
            func: Option<(String, u32)>,
            labels: std::collections::HashSet<String>,
        }
        let entry_toks: std::rc::Rc<[Token]> = self.toks[start..end].into();
        let mut stack = vec![Frame { toks: entry_toks, i: 0, func: None, labels: std::collections::HashSet::new() }];
        let mut out: Vec<Token> = Vec::with_capacity(end - start);
        let mut bodies: HashMap<String, std::rc::Rc<[Token]>> = HashMap::new();
        while let Some(f) = stack.last_mut() {
            let Some(t) = f.toks.get(f.i).cloned() else {
                if let Some((name, n)) = &f.func {
                    let close = f.toks.last().cloned().unwrap_or_else(|| out[out.len() - 1].clone());
                    out.push(Token { tok: Tok::Ident(format!("{name}#ret{n}")), ..close.clone() });
                    out.push(Token { tok: Tok::Punct(':'), ..close.clone() });
                    out.push(Token { tok: Tok::Punct('}'), ..close });
                }
                stack.pop();
                continue;
            };
            let inst_start = at_inst_start(&f.toks, f.i);
            if matches!(&t.tok, Tok::Ident(c) if c == "call") && inst_start {
                if f.i > 0 && !matches!(f.toks[f.i - 1].tok, Tok::Punct(';' | '{' | '}' | ':')) {
                    return Err(err(&t, "guarded calls (`@p call`) are not supported by the emulator"));
                }
                let (call, next) = parse_call(&f.toks, f.i)?;
                f.i = next;
                let Some(def) = self.funcs.get(&call.func) else {
                    return Err(err(&call.func_tok, format!("call to undefined function `{}`", call.func)));
                };
                let Some(body) = &def.body else {
                    return Err(err(&call.func_tok, format!("function `{}` is declared but never defined", call.func)));
                };
                if call.args.len() != def.params.len() || call.rets.len() != def.ret.iter().count() {
                    return Err(err(
                        &call.at,
                        format!(
                            "`{}` takes {} argument(s) and returns {} value(s); the call passes {} and expects {}",
                            call.func,
                            def.params.len(),
                            def.ret.iter().count(),
                            call.args.len(),
                            call.rets.len()
                        ),
                    ));
                }
                let active: Vec<&str> = stack.iter().filter_map(|f| f.func.as_ref().map(|(n, _)| n.as_str())).collect();
                if let Some(i) = active.iter().position(|n| *n == call.func) {
                    return Err(err(
                        &call.at,
                        format!(
                            "recursive call ({} -> {}): the emulator runs calls inlined and cannot run recursion",
                            active[i..].join(" -> "),
                            call.func
                        ),
                    ));
                }
                if stack.len() > MAX_CALL_DEPTH {
                    return Err(err(&call.at, "calls nest too deeply for the emulator"));
                }
                self.inlined_tokens += body.len() + 4 * (call.args.len() + call.rets.len()) + 4;
                if self.inlined_tokens > MAX_INLINED_TOKENS {
                    return Err(err(&call.at, "calls expand to too much code for the emulator"));
                }
                let body = bodies.entry(call.func.clone()).or_insert_with(|| body.as_slice().into()).clone();
                let labels = body
                    .windows(2)
                    .filter_map(|w| match (&w[0].tok, &w[1].tok) {
                        (Tok::Ident(a), Tok::Punct(':')) => Some(a.clone()),
                        _ => None,
                    })
                    .collect();
                out.push(Token { tok: Tok::Punct('{'), ..call.at.clone() });
                for ((caller, ct), callee) in call.args.iter().chain(&call.rets).zip(def.params.iter().chain(&def.ret))
                {
                    out.push(Token { tok: Tok::Dot("#alias".into()), ..ct.clone() });
                    out.push(Token { tok: Tok::Ident(callee.clone()), ..ct.clone() });
                    out.push(Token { tok: Tok::Ident(caller.clone()), ..ct.clone() });
                    out.push(Token { tok: Tok::Punct(';'), ..ct.clone() });
                }
                let n = self.inlined;
                self.inlined += 1;
                stack.push(Frame { toks: body, i: 0, func: Some((call.func, n)), labels });
                continue;
            }
            f.i += 1;
            let Some((name, n)) = &f.func else {
                out.push(t);
                continue;
            };
            match &t.tok {
                Tok::Ident(r) if r == "ret" && inst_start => {
                    out.push(Token { tok: Tok::Ident("bra".into()), ..t.clone() });
                    out.push(Token { tok: Tok::Ident(format!("{name}#ret{n}")), ..t });
                    while matches!(f.toks.get(f.i), Some(Token { tok: Tok::Dot(d), .. }) if d == "uni") {
                        f.i += 1;
                    }
                }
                Tok::Ident(l) if f.labels.contains(l) => {
                    out.push(Token { tok: Tok::Ident(format!("{l}#{n}")), ..t.clone() });
                }
                _ => out.push(t),
            }
        }
        self.toks.splice(start..end, out);
        Ok(())
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
                Tok::Dot(d) if d == "align" => align = self.alignment(&t)?,
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

    /// After `.const` at module level: `[.align A] .type name[[N]] [= init] ;` with `init` one
    /// literal or `{ literal, ... }` (an array; missing elements are zero, `name[]` takes the
    /// initializer's length). Lays the variable out in `self.consts` (aligned, little-endian).
    fn const_decl(&mut self) -> Result<(), ParseError> {
        let mut align = 0u32;
        let ty;
        loop {
            let t = self.next("a type")?;
            match &t.tok {
                Tok::Dot(d) if d == "align" => align = self.alignment(&t)?,
                Tok::Dot(d) if matches!(d.as_str(), "v2" | "v4" | "v8") => {
                    return Err(err(&t, "vector-typed `.const` variables are not supported by the emulator"));
                }
                Tok::Dot(d) => match scalar_type(d) {
                    Some(ScalarType::F16 | ScalarType::BF16) => {
                        return Err(err(
                            &t,
                            format!(
                                "`.{d}` `.const` variables are not supported by the emulator (declare them `.b16`)"
                            ),
                        ))
                    }
                    Some(s) if s != ScalarType::Pred => {
                        ty = s;
                        break;
                    }
                    _ => return Err(err(&t, format!("unsupported type `.{d}` in a `.const` declaration"))),
                },
                other => return Err(err(&t, format!("expected a type, found {}", show(other)))),
            }
        }
        let (name, nt) = self.ident("a variable name")?;
        if self.const_syms.iter().any(|c| c.0 == name)
            || self.module_shared.iter().any(|c| c.0 == name)
            || self.module_globals.contains(&name)
        {
            return Err(err(&nt, format!("`{name}` is declared twice at module scope")));
        }
        let elem = ty.size();
        let align = if align == 0 { elem } else { align };
        let off = self.consts.bytes.len().next_multiple_of(align as usize) as u64;
        let too_large = |size: u128| {
            err(
                &nt,
                format!(
                    "`.const` variable `{name}` ({size} bytes at offset {off}) does not fit in the {MAX_CONST_BYTES} bytes (64 KiB) of constant memory"
                ),
            )
        };
        // `None`: an array without a size (`name[]`), sized by its initializer.
        let mut count: Option<u64> = Some(1);
        let mut array = false;
        if self.is_punct('[') {
            self.pos += 1;
            array = true;
            if self.is_punct(']') {
                count = None;
            } else {
                let n = self.int("an array size")?;
                if n == 0 {
                    return Err(err(&nt, format!("`{name}` has an array size of 0")));
                }
                if off as u128 + n as u128 * elem as u128 > MAX_CONST_BYTES as u128 {
                    return Err(too_large(n as u128 * elem as u128));
                }
                count = Some(n);
            }
            self.expect_punct(']')?;
            if self.is_punct('[') {
                return Err(err(&nt, "multi-dimensional `.const` arrays are not supported by the emulator"));
            }
        }
        let mut vals: Vec<u64> = Vec::new();
        if self.is_punct('=') {
            self.pos += 1;
            if self.is_punct('{') {
                let open = self.next("`{`")?;
                if !array {
                    return Err(err(
                        &open,
                        format!("`{name}` is not an array: its initializer is one value, not `{{...}}`"),
                    ));
                }
                loop {
                    if self.is_punct('{') {
                        let t = self.next("`{`")?;
                        return Err(err(&t, "multi-dimensional `.const` arrays are not supported by the emulator"));
                    }
                    let v = self.const_value(ty)?;
                    vals.push(v);
                    if count.is_some_and(|n| vals.len() as u64 > n) {
                        return Err(err(
                            &open,
                            format!("`{name}` has more initializers than its {} elements", count.unwrap_or(0)),
                        ));
                    }
                    if off as u128 + vals.len() as u128 * elem as u128 > MAX_CONST_BYTES as u128 {
                        return Err(too_large(vals.len() as u128 * elem as u128));
                    }
                    let t = self.next("`,` or `}`")?;
                    match t.tok {
                        Tok::Punct(',') => {}
                        Tok::Punct('}') => break,
                        ref other => {
                            return Err(err(
                                &t,
                                format!("expected `,` or `}}` in an initializer, found {}", show(other)),
                            ))
                        }
                    }
                }
            } else {
                if array {
                    let t = self.peek().cloned().ok_or_else(|| self.eof_err("`{`"))?;
                    return Err(err(&t, format!("`{name}` is an array: its initializer must be `{{...}}`")));
                }
                vals.push(self.const_value(ty)?);
            }
        } else if count.is_none() {
            return Err(err(&nt, format!("`{name}[]` without a size needs an initializer")));
        }
        let n = count.unwrap_or(vals.len() as u64);
        self.expect_punct(';')?;
        let size = n * elem as u64;
        if off + size > MAX_CONST_BYTES as u64 {
            return Err(too_large(size as u128));
        }
        let img = &mut self.consts.bytes;
        img.resize((off + size) as usize, 0);
        for (i, v) in vals.iter().enumerate() {
            let at = off as usize + i * elem as usize;
            img[at..at + elem as usize].copy_from_slice(&v.to_le_bytes()[..elem as usize]);
        }
        self.consts.vars.push((name.clone(), off as u32, size as u32));
        self.const_syms.push((name, off as u32, nt.line, nt.col));
        Ok(())
    }

    /// One literal of a `.const` initializer (optionally negated) as the bits of a `ty` value:
    /// integers (decimal, hex, octal, binary) for integer types, and must fit the type (signed or
    /// unsigned; ptxas accepts wider values, the emulator refuses them); for `.f32` and `.f64`,
    /// float literals only (as ptxas): `0f`/`0d` literals give their bits (NaN payloads kept),
    /// decimal floats their value (rounded to nearest).
    fn const_value(&mut self, ty: ScalarType) -> Result<u64, ParseError> {
        let mut t = self.next("an initializer value")?;
        let neg = t.tok == Tok::Punct('-');
        if neg {
            t = self.next("a number after `-`")?;
        }
        let float = matches!(ty, ScalarType::F32 | ScalarType::F64);
        let bits = ty.size() * 8;
        let f32_of = |x: f64| (x as f32).to_bits() as u64;
        Ok(match t.tok {
            Tok::Int(_) if float => {
                // As ptxas: "Initial value type mismatch".
                return Err(err(
                    &t,
                    format!(
                        "an integer initializer for a `.{}` variable (write a float literal: `1.0`, `0f...`, `0d...`)",
                        ty.name()
                    ),
                ));
            }
            Tok::Int(v) => {
                let x = if neg { -(v as i128) } else { v as i128 };
                if x < -(1i128 << (bits - 1)) || x >= 1i128 << bits {
                    return Err(err(
                        &t,
                        format!("initializer `{}{v}` does not fit in `.{}`", if neg { "-" } else { "" }, ty.name()),
                    ));
                }
                (x as u64) & if bits == 64 { u64::MAX } else { (1 << bits) - 1 }
            }
            Tok::F32(b) if float => {
                let b = if neg { b ^ 0x8000_0000 } else { b };
                if ty == ScalarType::F32 {
                    b as u64
                } else {
                    (f32::from_bits(b) as f64).to_bits()
                }
            }
            Tok::F64(b) if float => {
                let b = if neg { b ^ (1 << 63) } else { b };
                if ty == ScalarType::F64 {
                    b
                } else {
                    f32_of(f64::from_bits(b))
                }
            }
            Tok::F32(_) | Tok::F64(_) => {
                return Err(err(&t, format!("a floating-point initializer for a `.{}` variable", ty.name())))
            }
            Tok::Ident(ref n) => {
                return Err(err(
                    &t,
                    format!(
                        "`.const` initializers other than numeric literals (`{n}`) are not supported by the emulator"
                    ),
                ))
            }
            ref other => return Err(err(&t, format!("expected a numeric literal initializer, found {}", show(other)))),
        })
    }

    fn entry(&mut self, at: &Token) -> Result<Kernel, ParseError> {
        let (name, _) = self.ident("the entry's name")?;
        let mut scopes =
            Scopes { scopes: vec![HashMap::new()], nregs: 0, unsupported_globals: self.module_globals.clone() };
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
                            scopes.declare(n.clone(), Sym::Param(offset), t.line, t.col)?;
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
                | "noreturn" => self.skip_directive_ints(),
                "pragma" => {
                    self.pos += 1;
                    self.skip_statement()?;
                }
                _ => break,
            }
        }
        // Shared memory: module-level declarations, then entry-level ones, in order.
        let mut shared = SharedLayout::default();
        for (n, a, s, line, col) in self.module_shared.clone() {
            shared.add(&mut scopes, n, a, s, line, col)?;
        }
        // Module `.const` variables: their offsets in the module's constant memory.
        for (n, off, line, col) in &self.const_syms {
            scopes.declare(n.clone(), Sym::Const(*off), *line, *col)?;
        }
        let open = self.expect_punct('{')?;
        let mut insts: Vec<Inst> = Vec::new();
        let mut texts: Vec<String> = Vec::new();
        let mut labels: HashMap<String, u32> = HashMap::new();
        let mut pending: Vec<(usize, String, u32, u32)> = Vec::new();
        let mut local_bytes = 0u32;
        let mut first_dynamic_offset: Option<(u32, u32, u32)> = None;
        let mut depth = 1;
        self.expand_calls()?;
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
                    "#alias" => {
                        // From `expand_calls`: a callee's name for a caller's `.param` slot.
                        let (callee, _) = self.ident("a parameter name")?;
                        let (caller, ct) = self.ident("a `.param` variable")?;
                        self.expect_punct(';')?;
                        match scopes.lookup(&caller) {
                            Some(Sym::CallParam(off)) => scopes.declare(callee, Sym::CallParam(off), ct.line, ct.col)?,
                            _ => {
                                return Err(err(
                                    &ct,
                                    format!("call arguments and results must be `.param` variables of the caller, `{caller}` is not"),
                                ))
                            }
                        }
                    }
                    "param" => {
                        // A call's argument or return slot: per-thread memory.
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
                        scopes.declare(n, Sym::CallParam(off), line, col)?;
                    }
                    "pragma" => self.skip_statement()?,
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
                wide: None,
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
            consts: Default::default(),
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
    let mut p = Parser {
        toks,
        pos: 0,
        module_shared: Vec::new(),
        module_globals: Vec::new(),
        consts: ConstImage::default(),
        const_syms: Vec::new(),
        module_regs: 0,
        funcs: HashMap::new(),
        inlined: 0,
        inlined_tokens: 0,
    };
    p.module()
}
