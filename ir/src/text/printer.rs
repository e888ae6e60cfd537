//! The printer: the canonical text form of a module.
//!
//! Guarantees:
//! - The output is valid input to [`crate::text::parse`], and for a compacted module
//!   (see [`Kernel::compact`]) `parse(print(m))` is structurally equal to `m`.
//! - Constants print so that they re-parse to the same bits: floats in their shortest round-trip
//!   decimal form, the canonical NaN as `nan` and other NaNs as hex bits (`0f7fc00001`), infinities as `inf`/`-inf`, and `-0.0` with its
//!   sign.
//! - Output is deterministic: the same module always prints the same bytes. Unsigned integers
//!   print in decimal, except masks (above 255, every hex digit `0` or `f`), which print in hex.

use crate::graph::{Expr, Graph, Launch, LaunchArg};
use crate::ir::*;
use crate::op::Op;
use crate::types::{Constant, ScalarType};
use std::fmt::Write;

/// Prints a whole module: functions (imported ones included, so the output stands alone), then
/// kernels, then graphs.
pub fn print_module(m: &Module) -> String {
    let mut out = String::new();
    for k in m.funcs.iter().chain(&m.kernels) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&print_kernel(k));
    }
    for g in &m.graphs {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&print_graph(g));
    }
    out
}

/// Prints one kernel or function.
pub fn print_kernel(k: &Kernel) -> String {
    let mut out = String::new();
    for line in kernel_lines(k) {
        out.push_str(&line.text);
        out.push('\n');
    }
    out
}

/// What a printed line of a kernel shows (for tools that interleave source comments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// `kernel @name(...) {` or `func @name(...) -> T {`
    Header,
    /// `  shared @name: T[N]`
    Shared(usize),
    /// `label(params):`
    Label(BlockId),
    /// `  %r = op ...`
    Inst(InstId),
    /// `  br/jmp/ret`
    Term(BlockId),
    /// `}`
    Close,
}

/// One line of a printed kernel.
#[derive(Clone, Debug)]
pub struct PrintedLine {
    pub kind: LineKind,
    pub text: String,
}

/// The printed kernel, line by line, in output order.
pub fn kernel_lines(k: &Kernel) -> Vec<PrintedLine> {
    let mut lines = Vec::new();
    let params: Vec<String> = k.params.iter().map(|p| format!("%{}: {}", k.value(*p).name, k.value(*p).ty)).collect();
    let mut attrs = k.reqntid.map(|r| format!(" {}", r.to_text())).unwrap_or_default();
    if k.assume_masks.is_some() {
        attrs.push_str(" assume_masks()");
    }
    let text = match k.func {
        Some(f) => {
            let ret = f.ret.map(|t| format!(" -> {t}")).unwrap_or_default();
            format!("func @{}({}){ret} {{", k.name, params.join(", "))
        }
        None => format!("kernel @{}({}){attrs} {{", k.name, params.join(", ")),
    };
    lines.push(PrintedLine { kind: LineKind::Header, text });
    for (i, s) in k.shared.iter().enumerate() {
        let len = s.len.map(|n| n.to_string()).unwrap_or_default();
        let mut text = format!("  shared @{}: {}[{}]", s.name, s.elem, len);
        if s.align != s.elem.bytes() {
            let _ = write!(text, " align {}", s.align);
        }
        lines.push(PrintedLine { kind: LineKind::Shared(i), text });
    }
    for (bi, b) in k.blocks.iter().enumerate() {
        let bid = BlockId(bi as u32);
        let mut text = b.name.to_string();
        if !b.params.is_empty() {
            let ps: Vec<String> =
                b.params.iter().map(|p| format!("%{}: {}", k.value(*p).name, k.value(*p).ty)).collect();
            let _ = write!(text, "({})", ps.join(", "));
        }
        text.push(':');
        lines.push(PrintedLine { kind: LineKind::Label(bid), text });
        for &i in &b.insts {
            lines.push(PrintedLine { kind: LineKind::Inst(i), text: format!("  {}", print_inst(k, i)) });
        }
        lines.push(PrintedLine { kind: LineKind::Term(bid), text: format!("  {}", print_terminator(k, &b.term)) });
    }
    lines.push(PrintedLine { kind: LineKind::Close, text: "}".into() });
    lines
}

/// Prints an operand.
pub fn print_operand(k: &Kernel, o: Operand) -> String {
    match o {
        Operand::Value(v) => match k.values.get(v.index()) {
            Some(d) => format!("%{}", d.name),
            None => format!("%<undefined#{}>", v.0),
        },
        Operand::Const(c) => print_constant(c),
    }
}

/// Prints a constant as a literal that re-parses to the same bits at the same type.
pub fn print_constant(c: Constant) -> String {
    match c.ty {
        ScalarType::Pred => (if c.bits != 0 { "true" } else { "false" }).to_string(),
        t if t.is_signed_int() => c.as_i128().to_string(),
        // Masks (every hex digit 0 or f, e.g. 0xffffffff, 0xffff0000) read better in hex.
        t if t.is_unsigned_int() && c.bits > 0xff && is_mask_like(c.bits) => format!("0x{:x}", c.bits),
        t if t.is_unsigned_int() => c.bits.to_string(),
        ScalarType::F32 => {
            let v = f32::from_bits(c.bits as u32);
            if v.is_nan() {
                nan_text(c, format!("0f{:08x}", c.bits))
            } else {
                float_text(v.is_infinite(), v.is_sign_negative(), format!("{v:?}"))
            }
        }
        ScalarType::F64 => {
            let v = f64::from_bits(c.bits);
            if v.is_nan() {
                nan_text(c, format!("0d{:016x}", c.bits))
            } else {
                float_text(v.is_infinite(), v.is_sign_negative(), format!("{v:?}"))
            }
        }
        // f16/bf16: print the exact f32 value (exactly representable, and converts back exactly).
        ScalarType::F16 | ScalarType::BF16 => {
            let v = c.as_f64().unwrap_or(f64::NAN) as f32;
            if v.is_nan() {
                nan_text(c, format!("0h{:04x}", c.bits))
            } else {
                float_text(v.is_infinite(), v.is_sign_negative(), format!("{v:?}"))
            }
        }
        _ => c.bits.to_string(),
    }
}

/// `nan` for the canonical NaN (which the literal `nan` stands for), else the exact bits.
fn nan_text(c: Constant, bits_text: String) -> String {
    if c == Constant::canonical_nan(c.ty) {
        "nan".to_string()
    } else {
        bits_text
    }
}

fn is_mask_like(bits: u64) -> bool {
    (0..16).all(|i| matches!((bits >> (4 * i)) & 0xf, 0 | 0xf))
}

fn float_text(inf: bool, neg: bool, debug: String) -> String {
    if inf {
        return if neg { "-inf".into() } else { "inf".into() };
    }
    // `{:?}` gives the shortest round-trip form, always with `.` or an exponent (`1e-40`, `1.5`).
    // Make sure a mantissa without `.` before an exponent still lexes as a float: `1e20` does.
    debug
}

/// Prints one instruction (without indentation or newline).
pub fn print_inst(k: &Kernel, i: InstId) -> String {
    let d = k.inst(i);
    let mut s = String::new();
    if let Some(r) = d.result {
        let _ = write!(s, "%{} = ", k.value(r).name);
    }
    s.push_str(&d.op.mnemonic());
    let addresses = d.op.address_operands();
    let ops: Vec<String> = match &d.op {
        _ if !addresses.is_empty() && d.args.len() == d.op.arity() => {
            // Written operand `n` is an address when `addresses` names it: two instruction operands.
            let mut v = vec![];
            let mut at = 0;
            let mut n = 0;
            while at < d.args.len() {
                if addresses.contains(&n) && at + 1 < d.args.len() {
                    v.push(format!("{}[{}]", print_operand(k, d.args[at]), print_operand(k, d.args[at + 1])));
                    at += 2;
                } else {
                    v.push(print_operand(k, d.args[at]));
                    at += 1;
                }
                n += 1;
            }
            v
        }
        Op::SharedAddr(idx) => {
            vec![format!("@{}", k.shared.get(*idx as usize).map(|s| s.name.as_str()).unwrap_or("<undeclared>"))]
        }
        Op::Call(idx) => {
            let args: Vec<String> = d.args.iter().map(|a| print_operand(k, *a)).collect();
            let name = k.callees.get(*idx as usize).map(|c| c.name.as_str()).unwrap_or("<undeclared>");
            vec![format!("@{name}({})", args.join(", "))]
        }
        _ => d.args.iter().map(|a| print_operand(k, *a)).collect(),
    };
    if !ops.is_empty() {
        s.push(' ');
        s.push_str(&ops.join(", "));
    }
    if let Op::PtrCast(t) = &d.op {
        let _ = write!(s, " : {t}");
    }
    s
}

fn print_call(k: &Kernel, c: &BlockCall) -> String {
    let name = k.blocks.get(c.block.index()).map(|b| b.name.as_str()).unwrap_or("<undefined-block>");
    if c.args.is_empty() {
        name.to_string()
    } else {
        let args: Vec<String> = c.args.iter().map(|a| print_operand(k, *a)).collect();
        format!("{name}({})", args.join(", "))
    }
}

/// Prints a terminator.
pub fn print_terminator(k: &Kernel, t: &Terminator) -> String {
    match t {
        Terminator::Ret(None) => "ret".into(),
        Terminator::Ret(Some(v)) => format!("ret {}", print_operand(k, *v)),
        Terminator::Jmp(c) => format!("jmp {}", print_call(k, c)),
        Terminator::Br { cond, then_, else_ } => {
            format!("br {}, {}, {}", print_operand(k, *cond), print_call(k, then_), print_call(k, else_))
        }
    }
}

/// Prints a launch argument.
pub fn print_launch_arg(a: &LaunchArg) -> String {
    match a {
        LaunchArg::Value(v) => format!("%{v}"),
        LaunchArg::Const(c) => print_constant(*c),
        LaunchArg::Expr(e) => e.to_string(),
    }
}

/// Prints launch dimensions as written in a launch, without trailing `1`s.
pub fn print_dims(dims: &[Expr; 3]) -> String {
    let used = dims.iter().rposition(|d| *d != Expr::Int(1)).map(|i| i + 1).unwrap_or(1);
    dims[..used].iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
}

/// Prints one launch (without indentation or newline).
pub fn print_launch(l: &Launch) -> String {
    let mut s = format!("launch @{} grid({}) block({})", l.kernel, print_dims(&l.grid), print_dims(&l.block));
    if let Some(b) = &l.shared_bytes {
        let _ = write!(s, " shared({b})");
    }
    let args: Vec<String> = l.args.iter().map(print_launch_arg).collect();
    let _ = write!(s, " ({})", args.join(", "));
    s
}

/// Prints a graph in the text format.
pub fn print_graph(g: &Graph) -> String {
    let mut out = String::new();
    let params: Vec<String> = g.params.iter().map(|p| format!("%{}: {}", p.name, p.ty)).collect();
    let _ = writeln!(out, "graph @{}({}) {{", g.name, params.join(", "));
    for t in &g.temps {
        let _ = writeln!(out, "  temp %{}: {}[{}]", t.name, t.elem, t.len);
    }
    for l in &g.launches {
        let _ = writeln!(out, "  {}", print_launch(l));
    }
    out.push_str("}\n");
    out
}
