//! The syntax tree the grammar produces: names and literals as written, not yet resolved.
//!
//! Guarantees: every node keeps the byte span of its text. Nothing here is checked beyond the
//! grammar; [`crate::text::parse`] lowers it to the IR and reports every resolution error.
//!
//! The grammar builds no tree deeper than [`MAX_NESTING`] levels (size expressions, indexed
//! operands): deeper input is a located syntax error, so code that walks these trees recursively
//! (lowering, printing, `Drop`, `Clone`) needs a bounded stack. Everything else is flat lists.

/// The deepest nesting of size expressions (`add(add(...), 1)`) and indexed operands the grammar
/// accepts.
pub const MAX_NESTING: usize = 256;

/// A name or literal spelling from the source. Nearly all fit inline (24 bytes), so building the
/// syntax tree does not allocate per token.
pub type AstStr = compact_str::CompactString;

use crate::span::Span;

#[derive(Clone, Debug)]
pub struct Spanned<T> {
    pub node: T,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum AstType {
    /// A scalar type name as written (`f32`), resolved later.
    Named(Spanned<AstStr>),
    /// `ptr<space, elem>`.
    Ptr { space: Spanned<AstStr>, elem: Spanned<AstStr> },
    /// `vec<len, elem>`; `span` covers the whole type.
    Vec { len: Spanned<AstStr>, elem: Spanned<AstStr>, span: Span },
}

impl AstType {
    pub fn span(&self) -> Span {
        match self {
            AstType::Named(n) => n.span,
            AstType::Ptr { space, elem } => space.span.to(elem.span),
            AstType::Vec { span, .. } => *span,
        }
    }
}

#[derive(Clone, Debug)]
pub struct AstModule {
    pub items: Vec<AstItem>,
}

#[derive(Clone, Debug)]
pub enum AstItem {
    /// A kernel or (with [`AstKernel::func`]) a device function.
    Kernel(Box<AstKernel>),
    Func(Box<AstKernel>),
    Import(AstImport),
    Graph(Box<AstGraph>),
}

#[derive(Clone, Debug)]
pub struct AstParam {
    pub name: Spanned<AstStr>,
    pub ty: Box<AstType>,
}

#[derive(Clone, Debug)]
pub struct AstShared {
    pub name: Spanned<AstStr>,
    pub elem: Spanned<AstStr>,
    /// `None` for `[]` (dynamic shared memory).
    pub len: Option<Spanned<AstStr>>,
    pub align: Option<Spanned<AstStr>>,
    pub span: Span,
}

/// A kernel attribute: `reqntid(256)`.
#[derive(Clone, Debug)]
pub struct AstAttr {
    /// The name (without the `(`).
    pub name: Spanned<AstStr>,
    pub args: Vec<Spanned<AstStr>>,
    pub span: Span,
}

/// `import "path"`.
#[derive(Clone, Debug)]
pub struct AstImport {
    /// The path as written, without quotes.
    pub path: Spanned<AstStr>,
    pub span: Span,
}

/// What a function header adds to a kernel's: `-> T`.
#[derive(Clone, Debug)]
pub struct AstFuncSig {
    pub ret: Option<AstType>,
    /// The `)` closing the parameter list.
    pub params_end: Span,
}

#[derive(Clone, Debug)]
pub struct AstKernel {
    /// `Some` for `func`.
    pub func: Option<AstFuncSig>,
    pub name: Spanned<AstStr>,
    pub params: Vec<AstParam>,
    /// Attributes between the parameter list and `{`.
    pub attrs: Vec<AstAttr>,
    pub shared: Vec<Box<AstShared>>,
    pub blocks: Vec<Box<AstBlock>>,
    pub span: Span,
    /// Span of the closing brace.
    pub end: Span,
}

#[derive(Clone, Debug)]
pub struct AstBlock {
    pub name: Spanned<AstStr>,
    pub params: Vec<AstParam>,
    pub stmts: Vec<AstStmt>,
}

#[derive(Clone, Debug)]
pub enum AstOperand {
    Value(AstStr),
    /// `%p[index]`.
    Indexed(AstStr, Box<Spanned<AstOperand>>),
    Global(AstStr),
    Int(AstStr),
    Float(AstStr),
    HexFloat(AstStr),
    Bool(bool),
    Inf {
        negative: bool,
    },
    Nan,
    /// `@f(args)` (only as the operand of `call`).
    Call(Spanned<AstStr>, Vec<Spanned<AstOperand>>),
}

impl AstOperand {
    /// How many `[`...`]` levels this operand nests (0 for a plain operand), counted up to
    /// [`MAX_NESTING`] (so the walk is bounded).
    pub fn index_depth(&self) -> usize {
        let mut depth = 0;
        let mut cur = self;
        while let AstOperand::Indexed(_, inner) = cur {
            depth += 1;
            if depth >= MAX_NESTING {
                break;
            }
            cur = &inner.node;
        }
        depth
    }
}

#[derive(Clone, Debug)]
pub struct AstBlockCall {
    pub block: Spanned<AstStr>,
    pub args: Vec<Spanned<AstOperand>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum AstStmtKind {
    Inst {
        result: Option<Spanned<AstStr>>,
        op: Spanned<AstStr>,
        args: Vec<Spanned<AstOperand>>,
        annot: Option<AstType>,
    },
    Br {
        cond: Spanned<AstOperand>,
        then_: AstBlockCall,
        else_: AstBlockCall,
    },
    Jmp(AstBlockCall),
    /// `ret` or `ret %v`.
    Ret(Option<Spanned<AstOperand>>),
}

#[derive(Clone, Debug)]
/// Statements hold their kind boxed so that the parser moves small values around.
pub struct AstStmt {
    pub kind: Box<AstStmtKind>,
    pub span: Span,
}

impl AstStmtKind {
    /// The end offset of an instruction's last token (op, last operand or annotation); `None` for
    /// terminators, whose grammar rules end in a token.
    pub fn last_token_end(&self) -> Option<usize> {
        match self {
            AstStmtKind::Inst { op, args, annot, .. } => {
                let end = match (annot, args.last()) {
                    (Some(t), _) => t.span().end,
                    (None, Some(a)) => a.span.end,
                    (None, None) => op.span.start + op.node.len() as u32,
                };
                Some(end as usize)
            }
            _ => None,
        }
    }
}

impl AstStmt {
    pub fn is_terminator(&self) -> bool {
        !matches!(*self.kind, AstStmtKind::Inst { .. })
    }
}

/// `graph @name(params) { temp ...  launch ... }` (see [`crate::graph`]).
#[derive(Clone, Debug)]
pub struct AstGraph {
    pub name: Spanned<AstStr>,
    pub params: Vec<AstParam>,
    pub temps: Vec<Box<AstTemp>>,
    pub launches: Vec<Box<AstLaunch>>,
    pub span: Span,
}

/// `temp %name: T[len]`.
#[derive(Clone, Debug)]
pub struct AstTemp {
    pub name: Spanned<AstStr>,
    pub elem: Spanned<AstStr>,
    pub len: Spanned<AstExpr>,
    pub span: Span,
}

/// `launch @kernel clause(...)... (args)`.
#[derive(Clone, Debug)]
pub struct AstLaunch {
    pub kernel: Spanned<AstStr>,
    pub clauses: Vec<AstClause>,
    pub args: Vec<Spanned<AstGraphArg>>,
    pub span: Span,
}

/// A launch clause: `grid(e, ...)`, `block(e, ...)`, `shared(e)`. The name span includes `(`.
#[derive(Clone, Debug)]
pub struct AstClause {
    pub name: Spanned<AstStr>,
    pub args: Vec<Spanned<AstExpr>>,
    pub span: Span,
}

/// A size expression of a graph: `%param`, an integer, or `fn(args)`. The name span includes `(`.
/// A call keeps its depth (1 + its deepest argument's), at most [`MAX_NESTING`].
#[derive(Clone, Debug)]
pub enum AstExpr {
    Value(AstStr),
    Int(AstStr),
    Call(Spanned<AstStr>, Vec<Spanned<AstExpr>>, u32),
}

impl AstExpr {
    /// Levels of nesting: 1 for a name or an integer.
    pub fn depth(&self) -> usize {
        match self {
            AstExpr::Value(_) | AstExpr::Int(_) => 1,
            AstExpr::Call(_, _, d) => *d as usize,
        }
    }
}

/// A launch argument: an expression (a buffer or scalar name, an integer, a computed size) or
/// another literal (float, predicate).
#[derive(Clone, Debug)]
pub enum AstGraphArg {
    Expr(AstExpr),
    Literal(AstOperand),
}
