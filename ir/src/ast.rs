//! The syntax tree the grammar produces: names and literals as written, not yet resolved.
//!
//! Guarantees: every node keeps the byte span of its text. Nothing here is checked beyond the
//! grammar; [`crate::parse`] lowers it to the IR and reports every resolution error.

use crate::span::Span;

#[derive(Clone, Debug)]
pub struct Spanned<T> {
    pub node: T,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum AstType {
    /// A scalar type name as written (`f32`), resolved later.
    Named(Spanned<String>),
    /// `ptr<space, elem>`.
    Ptr { space: Spanned<String>, elem: Spanned<String> },
}

impl AstType {
    pub fn span(&self) -> Span {
        match self {
            AstType::Named(n) => n.span,
            AstType::Ptr { space, elem } => space.span.to(elem.span),
        }
    }
}

#[derive(Clone, Debug)]
pub struct AstModule {
    pub items: Vec<AstItem>,
}

#[derive(Clone, Debug)]
pub enum AstItem {
    Kernel(AstKernel),
    Graph(AstGraph),
}

#[derive(Clone, Debug)]
pub struct AstParam {
    pub name: Spanned<String>,
    pub ty: AstType,
}

#[derive(Clone, Debug)]
pub struct AstShared {
    pub name: Spanned<String>,
    pub elem: Spanned<String>,
    /// `None` for `[]` (dynamic shared memory).
    pub len: Option<Spanned<String>>,
    pub align: Option<Spanned<String>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct AstKernel {
    pub name: Spanned<String>,
    pub params: Vec<AstParam>,
    pub shared: Vec<AstShared>,
    pub blocks: Vec<AstBlock>,
    pub span: Span,
    /// Span of the closing brace.
    pub end: Span,
}

#[derive(Clone, Debug)]
pub struct AstBlock {
    pub name: Spanned<String>,
    pub params: Vec<AstParam>,
    pub stmts: Vec<AstStmt>,
}

#[derive(Clone, Debug)]
pub enum AstOperand {
    Value(String),
    /// `%p[index]`.
    Indexed(String, Box<Spanned<AstOperand>>),
    Global(String),
    Int(String),
    Float(String),
    HexFloat(String),
    Bool(bool),
    Inf {
        negative: bool,
    },
    Nan,
}

#[derive(Clone, Debug)]
pub struct AstBlockCall {
    pub block: Spanned<String>,
    pub args: Vec<Spanned<AstOperand>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum AstStmtKind {
    Inst {
        result: Option<Spanned<String>>,
        op: Spanned<String>,
        args: Vec<Spanned<AstOperand>>,
        annot: Option<AstType>,
    },
    Br {
        cond: Spanned<AstOperand>,
        then_: AstBlockCall,
        else_: AstBlockCall,
    },
    Jmp(AstBlockCall),
    Ret,
}

#[derive(Clone, Debug)]
pub struct AstStmt {
    pub kind: AstStmtKind,
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
        !matches!(self.kind, AstStmtKind::Inst { .. })
    }
}

/// `graph @name(params) { temp ...  launch ... }` (see [`crate::graph`]).
#[derive(Clone, Debug)]
pub struct AstGraph {
    pub name: Spanned<String>,
    pub params: Vec<AstParam>,
    pub temps: Vec<AstTemp>,
    pub launches: Vec<AstLaunch>,
    pub span: Span,
}

/// `temp %name: T[len]`.
#[derive(Clone, Debug)]
pub struct AstTemp {
    pub name: Spanned<String>,
    pub elem: Spanned<String>,
    pub len: Spanned<AstExpr>,
    pub span: Span,
}

/// `launch @kernel clause(...)... (args)`.
#[derive(Clone, Debug)]
pub struct AstLaunch {
    pub kernel: Spanned<String>,
    pub clauses: Vec<AstClause>,
    pub args: Vec<Spanned<AstGraphArg>>,
    pub span: Span,
}

/// A launch clause: `grid(e, ...)`, `block(e, ...)`, `shared(e)`. The name span includes `(`.
#[derive(Clone, Debug)]
pub struct AstClause {
    pub name: Spanned<String>,
    pub args: Vec<Spanned<AstExpr>>,
    pub span: Span,
}

/// A size expression of a graph: `%param`, an integer, or `fn(args)`. The name span includes `(`.
#[derive(Clone, Debug)]
pub enum AstExpr {
    Value(String),
    Int(String),
    Call(Spanned<String>, Vec<Spanned<AstExpr>>),
}

/// A launch argument: an expression (a buffer or scalar name, an integer, a computed size) or
/// another literal (float, predicate).
#[derive(Clone, Debug)]
pub enum AstGraphArg {
    Expr(AstExpr),
    Literal(AstOperand),
}
