//! Data-race detection: the shadow entries kept per granule of memory and the rule that judges
//! each access against them.
//!
//! The rule is the PTX memory model's for code without fences: two accesses to the same location
//! by different threads race unless a barrier orders them (same block, different barrier
//! intervals), when
//! - one is a plain write and the other any access (read, write or atomic), or
//! - one is a plain access (read or write) and the other an atomic.
//!
//! Two atomics never race; two reads never race; a thread's own accesses never race with each
//! other. Writes of the same value race like any others (PTX has no "benign" race). In global
//! memory, accesses from different blocks of one launch are never ordered (blocks cannot
//! synchronize); in shared memory each block has its own memory.
//!
//! Guarantees:
//! - Per granule (the smallest access size of the kernel in that memory space, see
//!   `Prog::race_shift`; every byte of a granule is always accessed together, so this is exactly
//!   per-byte tracking; vector accesses, `ldmatrix` rows and async copies are judged element by
//!   element, each an access of its element's size) the shadow holds [`WORDS`] words: three tags, the last plain *write*, the
//!   plain *reads* and the *atomics* (the last thread, or [`tag::MULTI`] when several threads of
//!   one segment did that), and one word packing, for each, the instruction that made it (21 bits
//!   each: an index into the launch's memory instructions; the last value means unknown).
//! - A tag is `block(24) | epoch(24) | thread(16)`: block and epoch (barrier intervals completed
//!   by the block) form the *segment*; accesses of one segment by different threads are unordered,
//!   and so, in global memory, are accesses of different blocks.
//! - [`judge`] is the one definition of the rule: [`global_access`] (atomic words, blocks running
//!   on several host threads) and [`shared_access`] (one block's plain words) both apply it. It
//!   reports a conflict only with an access that really happened in the same segment (or, in
//!   global memory, in another block of this launch): never a false race. Like every last-access
//!   shadow it keeps one writer, one reader and one atomic updater (or "several") per granule, so
//!   when more accesses meet in one segment the pair it names is one of the racing pairs, and an
//!   access of an earlier segment can be forgotten when its block's later accesses of the same
//!   kind replace it (races across blocks are found as far as the last accesses show them).
//! - The site of the other access is reported for shared memory always, and for global memory only
//!   when the launch's blocks run one at a time (`sites_exact`): with blocks racing on several host
//!   threads, a tag and its site are two words another block may change between, so a site could
//!   be another access's — then the report names the other thread without its instruction.

use std::sync::atomic::{AtomicU64, Ordering};

/// Shadow words per granule: the write, read and atomic tags, then their sites packed in one word.
pub(crate) const WORDS: usize = 4;

/// Bits of one site field in the site word (three fields: write, read, atomic).
const SITE_BITS: u32 = 21;
const SITE_UNKNOWN: u64 = (1 << SITE_BITS) - 1;

/// Race tags.
pub(crate) mod tag {
    /// Thread field meaning "several threads of that segment".
    pub const MULTI: u64 = 0xffff;
    /// Thread field meaning "threads of several blocks of this launch" (global memory only; the
    /// block field is one of them, so the tag is as live as theirs).
    pub const MULTI_BLOCKS: u64 = 0xfffe;
    /// Largest block number.
    pub const BLOCK_MAX: u64 = 0xff_ffff;
    pub fn make(block: u64, epoch: u64, tid: u64) -> u64 {
        ((block & 0xff_ffff) << 40) | ((epoch & 0xff_ffff) << 16) | (tid & MULTI)
    }
    pub fn block(t: u64) -> u64 {
        t >> 40
    }
    pub fn segment(t: u64) -> u64 {
        t >> 16
    }
    pub fn tid(t: u64) -> u64 {
        t & MULTI
    }
}

/// What an access does to memory, as race detection sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
    /// `atom.*` or `atom.cas`: reads and writes, atomically.
    Atomic,
}

impl Kind {
    /// The shadow word of this kind's tag (and its field in the site word).
    fn slot(self) -> usize {
        match self {
            Kind::Write => 0,
            Kind::Read => 1,
            Kind::Atomic => 2,
        }
    }
}

/// The other side of a detected race.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// What the other access did.
    pub other_kind: Kind,
    /// Tag of the other access (thread field may be [`tag::MULTI`]).
    pub other: u64,
    /// The other access's instruction (an index into `Prog::race_sites`), when known.
    pub site: Option<u32>,
}

/// Site word `w` with slot `slot`'s field set to `site` (unknown when it does not fit).
#[inline]
fn with_site(w: u64, slot: usize, site: u32) -> u64 {
    let shift = SITE_BITS * slot as u32;
    let v = (site as u64).min(SITE_UNKNOWN);
    (w & !(SITE_UNKNOWN << shift)) | (v << shift)
}

/// The site in slot `slot`'s field of site word `w`, if known.
#[inline]
fn site_in(w: u64, slot: usize) -> Option<u32> {
    let v = (w >> (SITE_BITS * slot as u32)) & SITE_UNKNOWN;
    (v != SITE_UNKNOWN).then_some(v as u32)
}

/// Whether an earlier access tagged `old` (non-empty, of this launch) is unordered with the
/// current thread `me`'s: another thread of the same segment, or (`cross_block`) any thread of
/// another block.
#[inline]
fn unordered(old: u64, me: u64, cross_block: bool) -> bool {
    if old == 0 {
        return false;
    }
    if tag::tid(old) == tag::MULTI_BLOCKS {
        // At least two blocks: whatever block `me` is in, one of them is another.
        return cross_block;
    }
    if tag::block(old) != tag::block(me) {
        return cross_block;
    }
    tag::segment(old) == tag::segment(me) && tag::tid(old) != tag::tid(me)
}

/// `old` (live or not, see `live`) merged with `me`'s access into one tag: "threads of several
/// blocks" ([`tag::MULTI_BLOCKS`]) when `cross_block` and `old` is another block's of this launch
/// (or already several blocks': blocks are never ordered, so that stays true for the whole
/// launch); "several threads" of the segment ([`tag::MULTI`]) when `old` is another thread's of
/// `me`'s segment; else `me` (an access of an earlier segment of `me`'s block is ordered before
/// every later access of the block, and `me` stands for it against other blocks).
#[inline]
fn merged(old: u64, me: u64, cross_block: bool, live: impl Fn(u64) -> bool) -> u64 {
    let several = |field: u64| (tag::segment(me) << 16) | field;
    if !live(old) {
        me
    } else if cross_block && (tag::tid(old) == tag::MULTI_BLOCKS || tag::block(old) != tag::block(me)) {
        several(tag::MULTI_BLOCKS)
    } else if tag::segment(old) == tag::segment(me) && tag::tid(old) != tag::tid(me) {
        several(tag::MULTI)
    } else {
        me
    }
}

/// The tag of `kind`'s slot after `me`'s access of that kind, given the slot's tag `old`: the
/// last writer (a second writer from another block or thread is a race, reported); readers and
/// atomic updaters accumulate (see [`merged`]).
#[inline]
fn updated(kind: Kind, old: u64, me: u64, cross_block: bool, live: impl Fn(u64) -> bool) -> u64 {
    match kind {
        Kind::Write => me,
        Kind::Read | Kind::Atomic => merged(old, me, cross_block, live),
    }
}

/// The kinds of earlier access that race with an access of `kind` from another thread, in the
/// order a conflict is reported (a write first: it made the location's value).
fn racing(kind: Kind) -> &'static [Kind] {
    match kind {
        Kind::Read => &[Kind::Write, Kind::Atomic],
        Kind::Write => &[Kind::Write, Kind::Atomic, Kind::Read],
        Kind::Atomic => &[Kind::Write, Kind::Read],
    }
}

/// The verdict on an access of `kind` by `me` against a granule's tags (`tags[k.slot()]` for each
/// kind `k`), of which only those `live` (of this launch) count; `cross_block`: other blocks'
/// accesses are unordered (global memory). The first earlier access that races with it, if any.
#[inline]
pub(crate) fn judge(
    kind: Kind,
    tags: [u64; 3],
    me: u64,
    cross_block: bool,
    live: impl Fn(u64) -> bool,
) -> Option<Conflict> {
    racing(kind).iter().find_map(|&k| {
        let old = tags[k.slot()];
        (live(old) && unordered(old, me, cross_block)).then_some(Conflict { other_kind: k, other: old, site: None })
    })
}

/// Race bookkeeping on global memory for an access of `size` bytes at `byte` (both multiples of
/// the granule `1 << shift`) by `me` at instruction `site`. Tags of blocks numbered at or below
/// `base` are stale (from earlier launches). Each access first swaps its own kind's tag, then
/// reads the others, all sequentially consistent: of two conflicting accesses from blocks running
/// at the same time, at least one sees the other. `sites_exact`: the blocks run one at a time, so
/// sites are kept and reported.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn global_access(
    shadow: &[AtomicU64],
    byte: usize,
    size: u32,
    shift: u32,
    base: u64,
    me: u64,
    kind: Kind,
    site: u32,
    sites_exact: bool,
) -> Option<Conflict> {
    // With base 0 the shadow is clean and every tag is this launch's (even block number 0, which
    // a launch of 2^24 blocks or more reaches by wrapping).
    let live = |t: u64| t != 0 && (base == 0 || tag::block(t) > base);
    let mut found = None;
    for g in byte >> shift..(byte + size as usize) >> shift {
        let words = &shadow[WORDS * g..WORDS * g + WORDS];
        let own = kind.slot();
        // Only a write can race with its own slot's earlier access: read that site before this
        // access replaces it.
        let own_site = if kind == Kind::Write { words[3].load(Ordering::Relaxed) } else { 0 };
        // One atomic swap per access; readers and atomic updaters that merge with an earlier
        // access store the merged tag after it (a concurrent access in between may be lost:
        // a last-access shadow forgets too, and of two conflicting accesses one still sees the
        // other).
        let old_own = words[own].swap(me, Ordering::SeqCst);
        let new = updated(kind, old_own, me, true, live);
        if new != me {
            words[own].store(new, Ordering::SeqCst);
        }
        if sites_exact && new != old_own {
            // Blocks run one at a time: nothing else changes the word meanwhile.
            let w = words[3].load(Ordering::Relaxed);
            words[3].store(with_site(w, own, site), Ordering::Relaxed);
        }
        if found.is_none() {
            let tags: [u64; 3] =
                std::array::from_fn(|i| if i == own { old_own } else { words[i].load(Ordering::SeqCst) });
            found = judge(kind, tags, me, true, live).map(|mut c| {
                let slot = c.other_kind.slot();
                let w = if slot == own { own_site } else { words[3].load(Ordering::Relaxed) };
                c.site = if sites_exact { site_in(w, slot) } else { None };
                c
            });
        }
    }
    found
}

/// Race bookkeeping on one block's shared memory (tags of other generations are stale): granules
/// `first..first + (size >> shift)` of the shadow `words` ([`WORDS`] per granule).
pub(crate) fn shared_access(
    words: &mut [u64],
    first: usize,
    size: u32,
    shift: u32,
    me: u64,
    kind: Kind,
    site: u32,
) -> Option<Conflict> {
    let mut found = None;
    for g in first..first + (size >> shift) as usize {
        let s = &mut words[WORDS * g..WORDS * g + WORDS];
        if found.is_none() {
            found = judge(kind, [s[0], s[1], s[2]], me, false, |t| t != 0).map(|mut c| {
                c.site = site_in(s[3], c.other_kind.slot());
                c
            });
        }
        let own = kind.slot();
        let new = updated(kind, s[own], me, false, |t| t != 0);
        if new != s[own] {
            s[own] = new;
            s[3] = with_site(s[3], own, site);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: u64 = 7;

    fn t(tid: u64) -> u64 {
        tag::make(BLOCK, 3, tid)
    }

    /// Runs accesses `(thread, kind)` on one granule in order; the index of the first that races.
    fn first_race(accesses: &[(u64, Kind)]) -> Option<usize> {
        let mut words = [0u64; WORDS];
        accesses
            .iter()
            .enumerate()
            .find_map(|(i, &(tid, kind))| shared_access(&mut words, 0, 4, 2, t(tid), kind, i as u32).map(|_| i))
    }

    /// The PTX rule, pair by pair: plain-vs-plain with a write, and plain-vs-atomic either way,
    /// race; atomics among themselves and reads among themselves do not; one thread never races
    /// with itself.
    #[test]
    fn every_pair_of_access_kinds() {
        use Kind::*;
        for a in [Read, Write, Atomic] {
            for b in [Read, Write, Atomic] {
                let races = !(a == Read && b == Read) && !(a == Atomic && b == Atomic);
                assert_eq!(first_race(&[(1, a), (2, b)]).is_some(), races, "{a:?} then {b:?}");
                assert_eq!(first_race(&[(1, a), (1, b)]), None, "{a:?} then {b:?}, one thread");
            }
        }
    }

    /// What a last-access shadow could forget, it does not: a plain write followed by the same
    /// thread's atomic still races with another thread's atomic; several atomics then a read by
    /// one of their threads race (another thread's atomic); several readers then one of them
    /// updating atomically race.
    #[test]
    fn merged_tags_keep_the_racing_side() {
        use Kind::*;
        assert_eq!(first_race(&[(1, Write), (1, Atomic), (2, Atomic)]), Some(2));
        assert_eq!(first_race(&[(1, Atomic), (2, Atomic), (2, Read)]), Some(2));
        assert_eq!(first_race(&[(1, Atomic), (2, Atomic), (1, Write)]), Some(2));
        assert_eq!(first_race(&[(1, Read), (2, Read), (1, Atomic)]), Some(2));
        assert_eq!(first_race(&[(1, Atomic), (1, Write), (2, Atomic)]), Some(2));
        assert_eq!(first_race(&[(1, Atomic), (2, Atomic), (3, Atomic), (1, Atomic)]), None);
    }

    /// Accesses of another segment (after a barrier) are ordered; the conflict names the other
    /// access's kind, thread and instruction.
    #[test]
    fn conflicts_name_the_other_access() {
        let mut words = [0u64; WORDS];
        assert!(shared_access(&mut words, 0, 4, 2, t(1), Kind::Atomic, 10).is_none());
        let c = shared_access(&mut words, 0, 4, 2, t(2), Kind::Read, 11).unwrap();
        assert_eq!((c.other_kind, tag::tid(c.other), c.site), (Kind::Atomic, 1, Some(10)));
        // Next epoch: ordered by the barrier.
        let later = tag::make(BLOCK, 4, 2);
        assert!(shared_access(&mut words, 0, 4, 2, later, Kind::Write, 12).is_none());
        let c = shared_access(&mut words, 0, 4, 2, tag::make(BLOCK, 4, 3), Kind::Read, 13).unwrap();
        assert_eq!((c.other_kind, tag::tid(c.other), c.site), (Kind::Write, 2, Some(12)));
    }

    /// Global memory: another block's access is unordered whatever its epoch; a stale tag (of a
    /// block numbered at or below the launch's base) is nobody's.
    #[test]
    fn global_accesses_across_blocks_and_launches() {
        let shadow: Vec<AtomicU64> = (0..2 * WORDS).map(|_| AtomicU64::new(0)).collect();
        let (a, b) = (tag::make(5, 0, 1), tag::make(6, 9, 1));
        assert!(global_access(&shadow, 0, 4, 2, 4, a, Kind::Atomic, 1, true).is_none());
        let c = global_access(&shadow, 0, 4, 2, 4, b, Kind::Write, 2, true).unwrap();
        assert_eq!((c.other_kind, c.other, c.site), (Kind::Atomic, a, Some(1)));
        // A later launch numbered from base 6: block 5's and 6's tags are stale.
        assert!(global_access(&shadow, 0, 4, 2, 6, tag::make(7, 0, 3), Kind::Read, 3, true).is_none());
        // ... but block 7's read is not: block 8's atomic races with it.
        let c = global_access(&shadow, 0, 4, 2, 6, tag::make(8, 0, 3), Kind::Atomic, 4, true).unwrap();
        assert_eq!((c.other_kind, c.site), (Kind::Read, Some(3)));
        // Atomics of two blocks do not race; a plain read of another thread does.
        assert!(global_access(&shadow, 4, 4, 2, 6, tag::make(8, 0, 3), Kind::Atomic, 4, true).is_none());
        assert!(global_access(&shadow, 4, 4, 2, 6, tag::make(9, 0, 3), Kind::Atomic, 5, true).is_none());
        let c = global_access(&shadow, 4, 4, 2, 6, tag::make(9, 0, 4), Kind::Read, 6, true).unwrap();
        assert_eq!((c.other_kind, c.site), (Kind::Atomic, Some(5)));
    }

    /// Reads (and atomics) of several blocks are remembered as such: a later write (atomic
    /// update) from one of those blocks, in a later segment, still races with the other block's.
    #[test]
    fn accesses_of_several_blocks_stay_unordered_for_the_launch() {
        for (first, then) in [(Kind::Read, Kind::Write), (Kind::Read, Kind::Atomic), (Kind::Atomic, Kind::Write)] {
            let shadow: Vec<AtomicU64> = (0..WORDS).map(|_| AtomicU64::new(0)).collect();
            let access = |block, epoch, tid, kind| {
                global_access(&shadow, 0, 4, 2, 0, tag::make(block, epoch, tid), kind, 0, true)
            };
            assert!(access(1, 0, 63, first).is_none());
            assert!(access(2, 0, 47, first).is_none());
            let c = access(2, 1, 14, then).unwrap_or_else(|| panic!("{first:?} then {then:?}"));
            assert_eq!((c.other_kind, tag::tid(c.other)), (first, tag::MULTI_BLOCKS));
        }
    }

    /// A plain write that a barrier orders before its own block's atomics still races with
    /// another block's atomic: the atomics do not replace it.
    #[test]
    fn a_write_ordered_in_its_block_still_races_with_other_blocks() {
        let shadow: Vec<AtomicU64> = (0..WORDS).map(|_| AtomicU64::new(0)).collect();
        let access =
            |block, epoch, tid, kind| global_access(&shadow, 0, 4, 2, 0, tag::make(block, epoch, tid), kind, 0, true);
        assert!(access(1, 0, 0, Kind::Write).is_none());
        assert!(access(1, 1, 0, Kind::Atomic).is_none());
        assert!(access(1, 1, 1, Kind::Atomic).is_none());
        let c = access(2, 0, 0, Kind::Atomic).unwrap();
        assert_eq!((c.other_kind, c.other), (Kind::Write, tag::make(1, 0, 0)));
    }
}
