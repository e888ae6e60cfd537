//! Interpreter errors: kernel faults, invalid launches and interpreter bugs, kept apart.
//!
//! Guarantees:
//! - Every failure of [`crate::launch`] is an [`InterpError`]; nothing in the interpreter panics on
//!   user input.
//! - A [`ErrorKind::KernelFault`] is the kernel's bug (out-of-bounds access, barrier divergence,
//!   race, fuel...). It carries the block and thread coordinates of the faulting thread (where one
//!   thread is to blame) and the span of the instruction. [`ErrorKind::InvalidLaunch`] is the
//!   caller's mistake (wrong arguments, bad launch shape, limits). [`ErrorKind::Internal`] is a bug
//!   of the interpreter itself.
//! - [`InterpError::to_diagnostic`] is located at the instruction's span (when known), with the
//!   coordinates and details as notes and other involved places as secondary labels.

use kir_ir::diag::Diagnostic;
use kir_ir::Span;
use std::fmt;

/// What kind of fault a kernel committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// A load, store or atomic outside its buffer or shared declaration.
    OutOfBounds,
    /// An access whose address is not a multiple of its size (the element's; a vector access's,
    /// an `ldmatrix` row's or a `cp.async`'s whole size).
    Misaligned,
    /// Threads of a block did not all reach the same barrier instruction.
    BarrierDivergence,
    /// A shuffle or vote whose member mask names lanes that are not executing it.
    DivergentCollective,
    /// Two threads accessed the same byte without a barrier between them, one of them writing.
    DataRace,
    /// A read of shared memory no thread of the block has written.
    UninitializedRead,
    /// The launch ran more thread-instructions than its fuel allows.
    FuelExhausted,
    /// An access to shared memory that a `cp.async` still has in flight (started, not yet waited
    /// for), or a thread that ends with a copy it never waited for.
    AsyncCopyInFlight,
}

impl FaultKind {
    /// Every kind, in the order messages list them. (A kind added to the enum and not here stops
    /// `every_kind_is_listed` below from compiling.)
    pub const ALL: [FaultKind; 8] = [
        FaultKind::OutOfBounds,
        FaultKind::Misaligned,
        FaultKind::BarrierDivergence,
        FaultKind::DivergentCollective,
        FaultKind::DataRace,
        FaultKind::UninitializedRead,
        FaultKind::FuelExhausted,
        FaultKind::AsyncCopyInFlight,
    ];

    /// The kind as users read it (in messages and in a filetest's `; fault:` line).
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::OutOfBounds => "out-of-bounds access",
            FaultKind::Misaligned => "misaligned access",
            FaultKind::BarrierDivergence => "barrier divergence",
            FaultKind::DivergentCollective => "divergent warp collective",
            FaultKind::DataRace => "data race",
            FaultKind::UninitializedRead => "uninitialized read",
            FaultKind::FuelExhausted => "fuel exhausted",
            FaultKind::AsyncCopyInFlight => "async copy in flight",
        }
    }
}

/// Does not compile when a [`FaultKind`] is added and [`FaultKind::ALL`] not told.
#[allow(dead_code)]
fn every_kind_is_listed(k: FaultKind) {
    match k {
        FaultKind::OutOfBounds
        | FaultKind::Misaligned
        | FaultKind::BarrierDivergence
        | FaultKind::DivergentCollective
        | FaultKind::DataRace
        | FaultKind::UninitializedRead
        | FaultKind::FuelExhausted
        | FaultKind::AsyncCopyInFlight => {}
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The kernel did something undefined or ran too long.
    KernelFault(FaultKind),
    /// The launch itself is wrong: arguments, shape, or resource limits.
    InvalidLaunch,
    /// A bug of the interpreter.
    Internal,
}

/// A failed launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterpError {
    pub kind: ErrorKind,
    /// One line saying what went wrong.
    pub message: String,
    /// The instruction (or terminator, barrier...) where it happened.
    pub span: Option<Span>,
    /// The label under the primary span.
    pub label: String,
    /// Block coordinates (`ctaid`) of the faulting thread, where one block is to blame.
    pub block: Option<[u32; 3]>,
    /// Thread coordinates (`tid`) of the faulting thread, where one thread is to blame.
    pub thread: Option<[u32; 3]>,
    /// Other places involved (the other side of a race, where diverged threads are).
    pub labels: Vec<(Span, String)>,
    pub notes: Vec<String>,
}

impl InterpError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> InterpError {
        InterpError {
            kind,
            message: message.into(),
            span: None,
            label: String::new(),
            block: None,
            thread: None,
            labels: vec![],
            notes: vec![],
        }
    }
    pub fn fault(kind: FaultKind, message: impl Into<String>) -> InterpError {
        InterpError::new(ErrorKind::KernelFault(kind), message)
    }
    pub fn invalid(message: impl Into<String>) -> InterpError {
        InterpError::new(ErrorKind::InvalidLaunch, message)
    }
    pub fn internal(message: impl Into<String>) -> InterpError {
        InterpError::new(ErrorKind::Internal, message)
    }
    pub fn at(mut self, span: Span, label: impl Into<String>) -> InterpError {
        self.span = Some(span);
        self.label = label.into();
        self
    }
    pub fn with_label(mut self, span: Span, label: impl Into<String>) -> InterpError {
        self.labels.push((span, label.into()));
        self
    }
    pub fn with_note(mut self, note: impl Into<String>) -> InterpError {
        self.notes.push(note.into());
        self
    }
    pub fn in_block(mut self, block: [u32; 3]) -> InterpError {
        self.block = Some(block);
        self
    }
    pub fn in_thread(mut self, block: [u32; 3], thread: [u32; 3]) -> InterpError {
        self.block = Some(block);
        self.thread = Some(thread);
        self
    }
    /// The fault kind, when this is a kernel fault.
    pub fn fault_kind(&self) -> Option<FaultKind> {
        match self.kind {
            ErrorKind::KernelFault(f) => Some(f),
            _ => None,
        }
    }

    /// A located diagnostic: primary span at the instruction, coordinates in a note.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let prefix = match self.kind {
            ErrorKind::KernelFault(f) => format!("kernel fault ({})", f.name()),
            ErrorKind::InvalidLaunch => "invalid launch".to_string(),
            ErrorKind::Internal => "internal interpreter error".to_string(),
        };
        let mut d = Diagnostic::error(format!("{prefix}: {}", self.message));
        if let Some(span) = self.span.filter(|s| !s.is_dummy()) {
            d = d.at(span, self.label.clone());
        }
        for (s, l) in &self.labels {
            if !s.is_dummy() {
                d = d.with_label(*s, l.clone());
            }
        }
        match (self.block, self.thread) {
            (Some(b), Some(t)) => d = d.with_note(format!("in block {} thread {}", coords(b), coords(t))),
            (Some(b), None) => d = d.with_note(format!("in block {}", coords(b))),
            _ => {}
        }
        for n in &self.notes {
            d = d.with_note(n.clone());
        }
        if self.kind == ErrorKind::Internal {
            d = d.with_note("this is a bug of the kir interpreter, not of the kernel; please report it");
        }
        d
    }
}

/// `(x, y, z)`.
pub fn coords(c: [u32; 3]) -> String {
    format!("({}, {}, {})", c[0], c[1], c[2])
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::KernelFault(k) => write!(f, "kernel fault ({}): {}", k.name(), self.message)?,
            ErrorKind::InvalidLaunch => write!(f, "invalid launch: {}", self.message)?,
            ErrorKind::Internal => write!(f, "internal interpreter error: {}", self.message)?,
        }
        match (self.block, self.thread) {
            (Some(b), Some(t)) => write!(f, " (block {} thread {})", coords(b), coords(t)),
            (Some(b), None) => write!(f, " (block {})", coords(b)),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for InterpError {}
