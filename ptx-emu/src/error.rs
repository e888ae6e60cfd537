//! Errors: PTX that cannot be loaded ([`ParseError`], always with a line and column) and launches
//! that fail ([`EmuError`]: invalid launches, and kernel faults with the PTX line, the block and the
//! thread that faulted).

use std::fmt;

/// A module that could not be loaded: a syntax error, an undeclared register or label, or an
/// instruction/type/modifier combination the emulator does not implement (never skipped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line of the PTX text.
    pub line: u32,
    /// 1-based column (in characters).
    pub col: u32,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for ParseError {}

/// What went wrong in a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// A load, store or atomic outside every buffer, the shared window, or a parameter.
    OutOfBounds,
    /// An address not aligned to the access size.
    Misaligned,
    /// `bar.sync` not reached by every non-exited thread of the block, or reached at different
    /// barrier instructions, or reached by part of a warp (`.aligned`); a named barrier
    /// (`bar.sync N, count`, `bar.arrive`) that can no longer fill (deadlock), filled for two
    /// different thread counts, or with an id past 15 or a count that is not whole warps.
    BarrierDivergence,
    /// `shfl.sync`/`vote.sync`/`bar.warp.sync` executed by a lane whose member mask names lanes
    /// that do not execute it together, or that does not name the lane itself.
    CollectiveMask,
    /// Shared memory read or written while a `cp.async` whose group its thread has not waited
    /// for (`cp.async.wait_group`) may still be writing it.
    AsyncCopyInFlight,
    /// The launch executed more thread-instructions than its fuel.
    FuelExhausted,
    /// `trap` or `brkpt`.
    Trap,
}

impl FaultKind {
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::OutOfBounds => "out-of-bounds access",
            FaultKind::Misaligned => "misaligned access",
            FaultKind::BarrierDivergence => "barrier divergence",
            FaultKind::CollectiveMask => "warp collective mask violation",
            FaultKind::AsyncCopyInFlight => "cp.async data used before its wait",
            FaultKind::FuelExhausted => "fuel exhausted",
            FaultKind::Trap => "trap",
        }
    }
}

/// The class of a launch error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The kernel faulted while running.
    Fault(FaultKind),
    /// The launch itself is wrong: unknown entry, argument count or size, launch shape, too much
    /// shared memory, a buffer that does not exist.
    InvalidLaunch,
}

/// A failed launch. `line` is the PTX line of the faulting instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmuError {
    pub kind: ErrorKind,
    pub message: String,
    /// 1-based PTX line of the instruction, for faults.
    pub line: Option<u32>,
    /// The instruction's text as written in the PTX, for faults.
    pub instruction: Option<String>,
    /// Block index (ctaid) of the faulting thread.
    pub block: Option<[u32; 3]>,
    /// Thread index (tid) of the faulting thread.
    pub thread: Option<[u32; 3]>,
}

impl EmuError {
    pub fn invalid(message: impl Into<String>) -> EmuError {
        EmuError {
            kind: ErrorKind::InvalidLaunch,
            message: message.into(),
            line: None,
            instruction: None,
            block: None,
            thread: None,
        }
    }

    pub fn fault(kind: FaultKind, message: impl Into<String>) -> EmuError {
        EmuError {
            kind: ErrorKind::Fault(kind),
            message: message.into(),
            line: None,
            instruction: None,
            block: None,
            thread: None,
        }
    }

    /// The fault kind, when the kernel faulted.
    pub fn fault_kind(&self) -> Option<FaultKind> {
        match self.kind {
            ErrorKind::Fault(k) => Some(k),
            ErrorKind::InvalidLaunch => None,
        }
    }
}

fn coords(c: [u32; 3]) -> String {
    format!("({}, {}, {})", c[0], c[1], c[2])
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::Fault(k) => write!(f, "kernel fault ({}): {}", k.name(), self.message)?,
            ErrorKind::InvalidLaunch => write!(f, "invalid launch: {}", self.message)?,
        }
        if let Some(line) = self.line {
            write!(f, " at PTX line {line}")?;
            if let Some(text) = &self.instruction {
                write!(f, " `{text}`")?;
            }
        }
        match (self.block, self.thread) {
            (Some(b), Some(t)) => write!(f, " in block {} thread {}", coords(b), coords(t)),
            (Some(b), None) => write!(f, " in block {}", coords(b)),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for EmuError {}
