//! `inline`: replaces every call by a copy of its callee (a module pass, first in the default
//! pipeline).
//!
//! Guarantees:
//! - It is [`kir_ir::inline::inline_module`]: afterwards no kernel or function of the module
//!   contains a call; the functions stay in the module, call-free (a module keeps its library, and
//!   the passes after this one run on them too). Copies keep the function's spans and get names
//!   `callee.name`; see that module's header for the exact construction.
//! - Behaviour is unchanged: a call executes its callee's body with the arguments bound to the
//!   parameters and returns to the instruction after the call, which is what the copy does.
//! - A module without calls is left alone (the pass manager does not even run the pass, see
//!   [`ModulePass::needed`]). An inlining error (recursion, growth past
//!   [`kir_ir::inline::MAX_INLINED_INSTS`]) is reported as a located error diagnostic and the
//!   pipeline stops with the module as it was before the pass.
//! - Statistics: calls inlined, bodies changed.

use crate::pass::{ModulePass, PassContext};
use kir_ir::{Module, Op};

/// The `inline` pass.
pub struct Inline;

impl ModulePass for Inline {
    fn name(&self) -> &'static str {
        "inline"
    }

    fn run(&self, m: &mut Module, cx: &mut PassContext) -> bool {
        let calls = m
            .bodies()
            .map(|k| k.placed_insts().filter(|(_, i)| matches!(k.inst(*i).op, Op::Call(_))).count() as u64)
            .sum::<u64>();
        let bodies = m.bodies().filter(|k| !k.callees.is_empty()).count() as u64;
        match kir_ir::inline::inline_module(m) {
            Ok(changed) => {
                cx.stats.add("calls inlined", if changed { calls } else { 0 });
                cx.stats.add("bodies with calls", if changed { bodies } else { 0 });
                changed
            }
            Err(d) => {
                cx.diagnostics.push(d);
                true
            }
        }
    }

    fn changes_bodies(&self) -> bool {
        true
    }

    fn needed(&self, m: &Module) -> bool {
        m.has_calls()
    }
}
