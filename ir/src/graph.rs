//! Launch graphs: a named, ordered list of kernel launches over typed buffer and scalar parameters
//! and graph-owned temporary buffers (see `docs/language.md`, "Launch graphs").
//!
//! Guarantees:
//! - [`Expr::eval`] never panics and never wraps: overflow, underflow and division by zero are
//!   errors.
//! - Verification is [`crate::verify::verify_module`] (its graph checks); buffer effects and the dependency DAG are
//!   [`crate::analysis::effects`]; printing is [`crate::text::printer::print_graph`].

use crate::span::Span;
use crate::types::{AddrSpace, Constant, ScalarType, Type};
use std::fmt;

/// A launch graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// The name without `@`.
    pub name: String,
    pub params: Vec<GraphParam>,
    /// Buffers the graph allocates (in global memory) for its own launches.
    pub temps: Vec<Temp>,
    /// Launches in execution order; each launch completes before the next starts.
    pub launches: Vec<Launch>,
    pub span: Span,
}

/// A graph parameter: a global buffer (`ptr<global, T>`) or a scalar.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphParam {
    /// The name without `%`.
    pub name: String,
    pub ty: Type,
    pub span: Span,
}

/// `temp %name: T[len]`: a global buffer of `len` elements of `T`, zero-initialized when the graph
/// starts and freed when it ends.
#[derive(Clone, Debug, PartialEq)]
pub struct Temp {
    pub name: String,
    pub elem: ScalarType,
    pub len: Expr,
    pub span: Span,
}

/// `launch @kernel grid(x, y, z) block(x, y, z) [shared(bytes)] (args)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// The kernel name without `@`.
    pub kernel: String,
    /// Grid size in blocks per dimension (omitted dimensions are 1).
    pub grid: [Expr; 3],
    /// Block size in threads per dimension (omitted dimensions are 1).
    pub block: [Expr; 3],
    /// Dynamic shared memory in bytes, for kernels that declare `shared @x: T[]`.
    pub shared_bytes: Option<Expr>,
    pub args: Vec<LaunchArg>,
    pub span: Span,
    /// The span of each argument (empty for launches made by passes).
    pub arg_spans: Vec<Span>,
}

/// A launch argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LaunchArg {
    /// A graph parameter or temporary, by name (without `%`).
    Value(String),
    /// A literal, typed by the kernel parameter it is passed to.
    Const(Constant),
    /// A computed integer (a function call such as `mul(%m, %n)`).
    Expr(Expr),
}

/// An integer size expression over the graph's integer scalar parameters, evaluated in unsigned
/// 64-bit arithmetic without wrapping.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    Int(u64),
    /// A scalar parameter of the graph, by name (without `%`).
    Param(String),
    Call(ExprFn, Vec<Expr>),
}

/// The functions of size expressions; all take two arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExprFn {
    Add,
    Sub,
    Mul,
    /// Division rounding down.
    Div,
    /// Division rounding up: `ceil_div(n, 256)` blocks of 256 cover `n`.
    CeilDiv,
    Min,
    Max,
}

impl ExprFn {
    pub const ALL: [ExprFn; 7] =
        [ExprFn::Add, ExprFn::Sub, ExprFn::Mul, ExprFn::Div, ExprFn::CeilDiv, ExprFn::Min, ExprFn::Max];
    pub fn name(self) -> &'static str {
        match self {
            ExprFn::Add => "add",
            ExprFn::Sub => "sub",
            ExprFn::Mul => "mul",
            ExprFn::Div => "div",
            ExprFn::CeilDiv => "ceil_div",
            ExprFn::Min => "min",
            ExprFn::Max => "max",
        }
    }
    pub fn from_name(s: &str) -> Option<ExprFn> {
        ExprFn::ALL.iter().copied().find(|f| f.name() == s)
    }
    pub fn arity(self) -> usize {
        2
    }
}

impl Expr {
    pub fn one() -> Expr {
        Expr::Int(1)
    }
    /// Every parameter name the expression reads.
    pub fn params(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_params(&mut out);
        out
    }
    fn collect_params<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Int(_) => {}
            Expr::Param(p) => out.push(p),
            Expr::Call(_, args) => args.iter().for_each(|a| a.collect_params(out)),
        }
    }
    /// Evaluates the expression; `param` gives the value of a scalar parameter (None: unknown).
    pub fn eval(&self, param: &dyn Fn(&str) -> Option<u64>) -> Result<u64, String> {
        match self {
            Expr::Int(v) => Ok(*v),
            Expr::Param(p) => param(p).ok_or_else(|| format!("`%{p}` has no integer value")),
            Expr::Call(f, args) => {
                if args.len() != f.arity() {
                    return Err(format!("`{}` takes {} arguments, not {}", f.name(), f.arity(), args.len()));
                }
                let a = args[0].eval(param)?;
                let b = args[1].eval(param)?;
                let overflow = || format!("`{self}` overflows 64 bits ({a}, {b})");
                match f {
                    ExprFn::Add => a.checked_add(b).ok_or_else(overflow),
                    ExprFn::Sub => a.checked_sub(b).ok_or_else(|| format!("`{self}` is negative ({a} - {b})")),
                    ExprFn::Mul => a.checked_mul(b).ok_or_else(overflow),
                    ExprFn::Div | ExprFn::CeilDiv if b == 0 => Err(format!("`{self}` divides by zero")),
                    ExprFn::Div => Ok(a / b),
                    ExprFn::CeilDiv => Ok(a / b + u64::from(a % b != 0)),
                    ExprFn::Min => Ok(a.min(b)),
                    ExprFn::Max => Ok(a.max(b)),
                }
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Int(v) => write!(f, "{v}"),
            Expr::Param(p) => write!(f, "%{p}"),
            Expr::Call(func, args) => {
                write!(f, "{}(", func.name())?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl Launch {
    /// The span of argument `i`, or of the launch when unknown.
    pub fn arg_span(&self, i: usize) -> Span {
        self.arg_spans.get(i).copied().filter(|s| !s.is_dummy()).unwrap_or(self.span)
    }
    /// The buffer names passed as arguments, with their argument positions.
    pub fn value_args(&self) -> impl Iterator<Item = (usize, &str)> {
        self.args.iter().enumerate().filter_map(|(i, a)| match a {
            LaunchArg::Value(v) => Some((i, v.as_str())),
            _ => None,
        })
    }
}

impl Graph {
    pub fn param(&self, name: &str) -> Option<(usize, &GraphParam)> {
        self.params.iter().enumerate().find(|(_, p)| p.name == name)
    }
    pub fn temp(&self, name: &str) -> Option<(usize, &Temp)> {
        self.temps.iter().enumerate().find(|(_, t)| t.name == name)
    }
    /// The type of a name: a parameter's type, or `ptr<global, T>` for a temporary.
    pub fn value_type(&self, name: &str) -> Option<Type> {
        if let Some((_, p)) = self.param(name) {
            return Some(p.ty);
        }
        self.temp(name).map(|(_, t)| Type::Ptr(AddrSpace::Global, t.elem))
    }
    /// Whether `name` is a buffer (a pointer parameter or a temporary).
    pub fn is_buffer(&self, name: &str) -> bool {
        self.value_type(name).is_some_and(|t| t.is_ptr())
    }
    /// A name not used by any parameter or temporary, derived from `base`.
    pub fn fresh_name(&self, base: &str) -> String {
        let taken = |n: &str| self.value_type(n).is_some();
        if !taken(base) {
            return base.to_string();
        }
        (1..).map(|i| format!("{base}.{i}")).find(|n| !taken(n)).unwrap_or_else(|| base.to_string())
    }
    /// Replaces every span by [`Span::DUMMY`].
    pub fn clear_spans(&mut self) {
        self.span = Span::DUMMY;
        self.params.iter_mut().for_each(|p| p.span = Span::DUMMY);
        self.temps.iter_mut().for_each(|t| t.span = Span::DUMMY);
        for l in &mut self.launches {
            l.span = Span::DUMMY;
            l.arg_spans.clear();
        }
    }
}
