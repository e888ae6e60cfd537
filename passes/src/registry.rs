//! The pass registry: every pass by name, with a one-line description and its options.
//!
//! Guarantees: names are unique; [`registry`] lists passes in a fixed order (the order of
//! `kir opt --list-passes`). A new pass registers by adding one entry to [`registry`]; its kind
//! (kernel or module pass) is the [`PassKind`] variant its factory returns, and nothing else.

use crate::pass::{PassKind, PassOptions};
use crate::{dce, fold, simplify_cfg};

/// How to make a pass from its options.
pub type PassFactory = fn(&PassOptions) -> Result<PassKind, String>;

/// One registered pass.
pub struct PassInfo {
    pub name: &'static str,
    /// One line, shown by `kir opt --list-passes`.
    pub description: &'static str,
    /// The options it takes in braces, each with a one-line description.
    pub options: &'static [(&'static str, &'static str)],
    pub create: PassFactory,
}

/// Every registered pass.
pub fn registry() -> Vec<PassInfo> {
    vec![
        PassInfo {
            name: "inline",
            description: "replace every call by a copy of the callee's body (callees first; functions stay in the module, call-free)",
            options: &[],
            create: |o| {
                o.expect_only("inline", &[])?;
                Ok(PassKind::Module(Box::new(crate::inline::Inline)))
            },
        },
        PassInfo {
            name: "fold",
            description: "evaluate ops whose operands are constants (exactly as the interpreter does) and apply exact algebraic identities",
            options: &[("approx", "also fold approximate ops (.approx, .full) with their exact result")],
            create: |o| {
                o.expect_only("fold", &["approx"])?;
                Ok(PassKind::Kernel(Box::new(fold::Fold { approx: o.flag("fold", "approx", false)? })))
            },
        },
        PassInfo {
            name: "dce",
            description: "remove side-effect-free instructions whose results are unused, and unused block parameters",
            options: &[],
            create: |o| {
                o.expect_only("dce", &[])?;
                Ok(PassKind::Kernel(Box::new(dce::Dce)))
            },
        },
        PassInfo {
            name: "simplify-cfg",
            description:
                "fold constant branches, remove unreachable blocks, merge straight-line blocks, drop block arguments equal on every edge",
            options: &[],
            create: |o| {
                o.expect_only("simplify-cfg", &[])?;
                Ok(PassKind::Kernel(Box::new(simplify_cfg::SimplifyCfg)))
            },
        },
        PassInfo {
            name: "licm",
            description: "hoist pure, non-faulting instructions whose operands are loop-invariant into the loop's unique preheader (no loads)",
            options: &[],
            create: |o| {
                o.expect_only("licm", &[])?;
                Ok(PassKind::Kernel(Box::new(crate::licm::Licm)))
            },
        },
        PassInfo {
            name: "unroll",
            description: "fully unroll innermost loops with a constant trip count; give counted loops (i < n, i += 1) a main loop doing `factor` iterations per trip",
            options: &[
                ("max-trip", "fully unroll loops of at most this many iterations (default 64; 0: never)"),
                ("max-insts", "... whose copies hold at most this many instructions (default 512)"),
                ("factor", "iterations per trip of a partially unrolled loop (default 4; 0 or 1: no partial unrolling)"),
                ("max-body", "partially unroll loops of at most this many instructions (default 32)"),
                ("explain", "report every loop's outcome, and why a loop was not unrolled, as a note"),
            ],
            create: |o| {
                o.expect_only("unroll", &["max-trip", "max-insts", "factor", "max-body", "explain"])?;
                let d = crate::unroll::Unroll::default();
                Ok(PassKind::Kernel(Box::new(crate::unroll::Unroll {
                    max_trip: o.number("unroll", "max-trip", d.max_trip, 4096)?,
                    max_insts: o.number("unroll", "max-insts", d.max_insts as u64, 1 << 20)? as usize,
                    factor: o.number("unroll", "factor", d.factor as u64, 64)? as u32,
                    max_body: o.number("unroll", "max-body", d.max_body as u64, 4096)? as usize,
                    explain: o.flag("unroll", "explain", false)?,
                })))
            },
        },
        PassInfo {
            name: "ivsr",
            description: "in loops with several copies of their body (unrolled), rebase `j+1, j+2, ...` chains on the induction variable `j` and replace `mul`/`mad`/`add` of `j + c` by a new induction variable stepped by a loop-invariant amount",
            options: &[],
            create: |o| {
                o.expect_only("ivsr", &[])?;
                Ok(PassKind::Kernel(Box::new(crate::ivsr::Ivsr)))
            },
        },
        PassInfo {
            name: "layout",
            description: "lay blocks out in reverse post-order, so that code running in sequence falls through in the PTX",
            options: &[],
            create: |o| {
                o.expect_only("layout", &[])?;
                Ok(PassKind::Kernel(Box::new(crate::layout::Layout)))
            },
        },
        PassInfo {
            name: "offsets",
            description: "address u32-indexed loads, stores and atomics as an offset pointer plus a constant index ([reg+imm] in PTX) where the index arithmetic provably does not wrap",
            options: &[],
            create: |o| {
                o.expect_only("offsets", &[])?;
                Ok(PassKind::Kernel(Box::new(crate::offsets::Offsets)))
            },
        },
        PassInfo {
            name: "cse",
            description: "merge pure, address and special-register instructions equal to one that dominates them",
            options: &[],
            create: |o| {
                o.expect_only("cse", &[])?;
                Ok(PassKind::Kernel(Box::new(crate::cse::Cse)))
            },
        },
        PassInfo {
            name: "verify-barriers",
            description: "reject barriers and full-mask warp collectives that some threads may not reach together (uniformity analysis)",
            options: &[],
            create: |o| {
                o.expect_only("verify-barriers", &[])?;
                Ok(PassKind::Module(Box::new(crate::verify_barriers::VerifyBarriers)))
            },
        },
        PassInfo {
            name: "fuse",
            description: "fuse launches of each launch graph (vertical: producer into consumer with store forwarding; horizontal: independent launches) where every shared buffer is thread-private",
            options: &[("explain", "report every fusion decision (and why each candidate pair was not fused) as a note")],
            create: |o| {
                o.expect_only("fuse", &["explain"])?;
                Ok(PassKind::Module(Box::new(crate::fuse::Fuse { explain: o.flag("fuse", "explain", false)? })))
            },
        },
        PassInfo {
            name: "fma-contract",
            description: "contract mul.rn followed by add.rn into fma (opt-in: rounds once, so results may change in the last bit)",
            options: &[],
            create: |o| {
                o.expect_only("fma-contract", &[])?;
                Ok(PassKind::Kernel(Box::new(crate::fma_contract::FmaContract)))
            },
        },
    ]
}

/// Looks a pass up by name.
pub fn lookup(name: &str) -> Option<PassInfo> {
    registry().into_iter().find(|p| p.name == name)
}
