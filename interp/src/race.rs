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
//!   per-byte tracking) the shadow holds [`WORDS`] words: the *write* tag (the last plain writer,
//!   or the atomic updaters since the last plain write), the *read* tag (the last plain reader,
//!   or [`tag::MULTI`] when several threads read in the same segment), and for each the
//!   instruction that made it ([`site_word`]).
//! - A tag is `block(24) | epoch(24) | atomic(1) | thread(15)`: block and epoch (barrier
//!   intervals completed by the block) form the *segment*; accesses of one segment by different
//!   threads are unordered.
//! - [`judge`] is the one definition of the rule: [`global_access`] (atomic words, blocks running
//!   on several host threads) and [`shared_access`] (one block's plain words) both apply it. It
//!   reports a conflict only with an access that really happened in the same segment (or, in
//!   global memory, in another block of this launch): never a false race. Like every last-access
//!   shadow it keeps one writer and one reader (or "several") per granule, so when three or more
//!   accesses meet in one segment the pair it names is one of the racing pairs.
//! - The site of the other access (an index into the launch's table of memory instructions) is
//!   reported only when the site word still belongs to the tag that conflicted (a fingerprint of
//!   the tag is stored with it): with blocks racing on several host threads a site could
//!   otherwise be another access's.

use std::sync::atomic::{AtomicU64, Ordering};

/// Shadow words per granule: write tag, read tag, write site, read site.
pub(crate) const WORDS: usize = 4;

/// Race tags.
pub(crate) mod tag {
    /// Thread field meaning "several threads of that segment".
    pub const MULTI: u64 = 0x7fff;
    /// Set in a write tag made by atomics (plain writes leave it clear).
    pub const ATOMIC: u64 = 0x8000;
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
    /// The thread (or [`MULTI`]), without the atomic bit.
    pub fn tid(t: u64) -> u64 {
        t & MULTI
    }
    pub fn is_atomic(t: u64) -> bool {
        t & ATOMIC != 0
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

/// A site word: the instruction `site` that stored tag `t`, with a fingerprint of `t`.
#[inline]
pub(crate) fn site_word(site: u32, t: u64) -> u64 {
    ((site as u64) << 32) | fingerprint(t)
}

#[inline]
fn fingerprint(t: u64) -> u64 {
    (t ^ (t >> 32)) & 0xffff_ffff
}

/// The site in word `w` if it was stored with tag `t`.
#[inline]
fn site_of(w: u64, t: u64) -> Option<u32> {
    (w != 0 && w & 0xffff_ffff == fingerprint(t)).then_some((w >> 32) as u32)
}

/// Whether an earlier access tagged `old` (non-empty, of this launch) is unordered with the
/// current thread `me`'s: another thread of the same segment, or (`cross_block`) any thread of
/// another block.
#[inline]
fn unordered(old: u64, me: u64, cross_block: bool) -> bool {
    if old == 0 {
        return false;
    }
    if tag::block(old) != tag::block(me) {
        return cross_block;
    }
    tag::segment(old) == tag::segment(me) && tag::tid(old) != tag::tid(me)
}

/// `old` merged with `me`'s access into one tag: `me` when `old` is empty, of another segment or
/// `me`'s own; else "several threads" of the segment ([`tag::MULTI`]), keeping `flag`.
#[inline]
fn merged(old: u64, me: u64, flag: u64) -> u64 {
    if old != 0 && tag::segment(old) == tag::segment(me) && tag::tid(old) != tag::tid(me) {
        (tag::segment(me) << 16) | tag::MULTI | flag
    } else {
        me | flag
    }
}

/// The verdict on one access of `kind` by `me` (a tag without the atomic bit) against a granule's
/// write tag `w` and read tag `r`, of which only those `live` (of this launch) count; `cross_block`:
/// other blocks' accesses are unordered (global memory). Returns the new write and read tags and
/// the conflict, if any (the write side first: it is the one that made the location's value).
#[inline]
pub(crate) fn judge(kind: Kind, w: u64, r: u64, me: u64, cross_block: bool, live: impl Fn(u64) -> bool) -> Verdict {
    let against_w = live(w) && unordered(w, me, cross_block);
    let against_r = live(r) && unordered(r, me, cross_block);
    let with_w = Conflict { other_kind: if tag::is_atomic(w) { Kind::Atomic } else { Kind::Write }, other: w, site: None };
    let with_r = Conflict { other_kind: Kind::Read, other: r, site: None };
    // A stale tag is of another segment, so `merged` and the segment tests below ignore it.
    let (new_w, new_r, conflict) = match kind {
        Kind::Read => (w, merged(r, me, 0), against_w.then_some(with_w)),
        Kind::Write => (me, r, if against_w { Some(with_w) } else { against_r.then_some(with_r) }),
        Kind::Atomic => {
            let same_segment = live(w) && tag::segment(w) == tag::segment(me);
            let new_w = if same_segment && !tag::is_atomic(w) && tag::tid(w) == tag::tid(me) {
                // This thread's own plain write stays: it races with more than its atomic would.
                w
            } else if same_segment && tag::is_atomic(w) {
                merged(w, me, tag::ATOMIC)
            } else {
                me | tag::ATOMIC
            };
            let plain_w = against_w && !tag::is_atomic(w);
            (new_w, r, if plain_w { Some(with_w) } else { against_r.then_some(with_r) })
        }
    };
    Verdict { w: new_w, r: new_r, conflict }
}

/// What [`judge`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// The granule's new write and read tags.
    pub w: u64,
    pub r: u64,
    pub conflict: Option<Conflict>,
}

impl Verdict {
    /// The conflict is with the read tag (so its site is the read site).
    fn from_read(&self) -> bool {
        self.conflict.is_some_and(|c| c.other_kind == Kind::Read)
    }
}

/// Race bookkeeping on global memory for an access of `size` bytes at `byte` (both multiples of
/// the granule `1 << shift`) by `me` at instruction `site`. Tags of blocks numbered at or below
/// `base` are stale (from earlier launches). Tags are updated with compare-and-swap, so of two
/// conflicting accesses from blocks running at the same time at least one sees the other.
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
) -> Option<Conflict> {
    // With base 0 the shadow is clean and every tag is this launch's (even block number 0, which
    // a launch of 2^24 blocks or more reaches by wrapping).
    let live = |t: u64| t != 0 && (base == 0 || tag::block(t) > base);
    let mut found = None;
    for g in byte >> shift..(byte + size as usize) >> shift {
        let words = &shadow[WORDS * g..WORDS * g + WORDS];
        let (wt, rt, ws, rs) = (&words[0], &words[1], &words[2], &words[3]);
        // Site words before the tags: a site word read this early still carries the fingerprint
        // of the tag it belongs to, checked when it is reported.
        let (w_site, r_site) = (ws.load(Ordering::SeqCst), rs.load(Ordering::SeqCst));
        let r_now = rt.load(Ordering::SeqCst);
        // The write tag by compare-and-swap (its new value depends on the old one for atomics).
        let mut verdict = judge(kind, 0, r_now, me, true, live);
        let old_w = wt
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |w| {
                verdict = judge(kind, w, r_now, me, true, live);
                (verdict.w != w).then_some(verdict.w)
            })
            .unwrap_or_else(|w| w);
        if verdict.w != old_w {
            ws.store(site_word(site, verdict.w), Ordering::SeqCst);
        }
        if kind == Kind::Read {
            let mut new_r = 0;
            let old_r = rt
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |r| {
                    new_r = merged(r, me, 0);
                    (new_r != r).then_some(new_r)
                })
                .unwrap_or_else(|r| r);
            if new_r != old_r {
                rs.store(site_word(site, new_r), Ordering::SeqCst);
            }
        }
        if found.is_none() {
            if let Some(mut c) = verdict.conflict {
                c.site = site_of(if verdict.from_read() { r_site } else { w_site }, c.other);
                found = Some(c);
            }
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
        let v = judge(kind, s[0], s[1], me, false, |t| t != 0);
        if found.is_none() {
            if let Some(mut c) = v.conflict {
                c.site = site_of(if v.from_read() { s[3] } else { s[2] }, c.other);
                found = Some(c);
            }
        }
        if v.w != s[0] {
            s[0] = v.w;
            s[2] = site_word(site, v.w);
        }
        if v.r != s[1] {
            s[1] = v.r;
            s[3] = site_word(site, v.r);
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
        accesses.iter().enumerate().find_map(|(i, &(tid, kind))| {
            shared_access(&mut words, 0, 4, 2, t(tid), kind, i as u32).map(|_| i)
        })
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
        assert!(global_access(&shadow, 0, 4, 2, 4, a, Kind::Atomic, 1).is_none());
        let c = global_access(&shadow, 0, 4, 2, 4, b, Kind::Write, 2).unwrap();
        assert_eq!((c.other_kind, c.other, c.site), (Kind::Atomic, a | tag::ATOMIC, Some(1)));
        // A later launch numbered from base 6: block 5's and 6's tags are stale.
        assert!(global_access(&shadow, 0, 4, 2, 6, tag::make(7, 0, 3), Kind::Read, 3).is_none());
        // ... but block 7's read is not: block 8's atomic races with it.
        let c = global_access(&shadow, 0, 4, 2, 6, tag::make(8, 0, 3), Kind::Atomic, 4).unwrap();
        assert_eq!((c.other_kind, c.site), (Kind::Read, Some(3)));
        // Atomics of two blocks do not race; a plain read of another thread does.
        assert!(global_access(&shadow, 4, 4, 2, 6, tag::make(8, 0, 3), Kind::Atomic, 4).is_none());
        assert!(global_access(&shadow, 4, 4, 2, 6, tag::make(9, 0, 3), Kind::Atomic, 5).is_none());
        let c = global_access(&shadow, 4, 4, 2, 6, tag::make(9, 0, 4), Kind::Read, 6).unwrap();
        assert_eq!((c.other_kind, c.site), (Kind::Atomic, Some(5)));
    }
}
