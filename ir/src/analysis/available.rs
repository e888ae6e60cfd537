//! Values available at a block: what a dominator-based reuse (CSE in the IR, reuse of registers in
//! the PTX emitter) looks up.
//!
//! Guarantees: [`Available::find`] returns a value recorded under the key in a block that
//! dominates the asking block (or is it; within one block, records made earlier in the walk come
//! earlier in the block), the most recent such record first, looking at most at the
//! [`Available::WINDOW`] most recent records of the key, so a long run of equal keys recorded in
//! sibling blocks keeps the walk linear. A walk that visits dominators before the blocks they
//! dominate (reverse post-order) finds every reuse the window allows.

use crate::analysis::cfg::Cfg;
use crate::ir::BlockId;
use rustc_hash::FxHashMap;
use std::hash::Hash;

/// Records of `V`s by key, each with the block it was made in.
#[derive(Clone, Debug)]
pub struct Available<K, V> {
    records: FxHashMap<K, Vec<(BlockId, V)>>,
}

impl<K, V> Default for Available<K, V> {
    fn default() -> Self {
        Available { records: FxHashMap::default() }
    }
}

impl<K: Hash + Eq, V: Copy> Available<K, V> {
    /// How many of a key's most recent records [`Available::find`] looks at.
    pub const WINDOW: usize = 16;

    /// A value recorded under `key` in a block dominating `at`, if one is among the most recent.
    pub fn find(&self, key: &K, cfg: &Cfg, at: BlockId) -> Option<V> {
        let known = self.records.get(key)?;
        known.iter().rev().take(Self::WINDOW).find(|(b, _)| cfg.dominates(*b, at)).map(|&(_, v)| v)
    }

    /// Records `value` under `key`, made in block `at`.
    pub fn record(&mut self, key: K, at: BlockId, value: V) {
        self.records.entry(key).or_default().push((at, value));
    }
}
