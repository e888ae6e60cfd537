//! `layout`: blocks in reverse post-order.
//!
//! Guarantees:
//! - Reachable blocks are laid out in the kernel's reverse post-order ([`Kernel::reverse_post_order`],
//!   which for structured code is then-before-else-before-join and a loop's header before its body
//!   before its exit), the entry first; unreachable blocks keep their relative order after them.
//!   Layout is the order the PTX emitter writes blocks in, so code that runs in sequence falls
//!   through instead of branching: blocks a pass appended (inlined callees, unrolled copies) land
//!   where they run.
//! - Nothing but the order changes: every instruction, edge and value is the same, so semantics are
//!   untouched. Linear time.

use crate::pass::{Pass, PassContext};
use kir_ir::Kernel;

pub struct Layout;

impl Pass for Layout {
    fn name(&self) -> &'static str {
        "layout"
    }

    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool {
        let rpo = k.reverse_post_order();
        let mut order: Vec<usize> = rpo.iter().map(|b| b.index()).collect();
        let mut placed = vec![false; k.blocks.len()];
        order.iter().for_each(|&b| placed[b] = true);
        order.extend((0..k.blocks.len()).filter(|&b| !placed[b]));
        let moved = order.iter().enumerate().filter(|(new, old)| new != *old).count();
        cx.stats.add("blocks moved", moved as u64);
        if moved == 0 {
            return false;
        }
        crate::edit::permute_blocks(k, &order);
        true
    }
}
