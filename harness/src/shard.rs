//! Splitting a run over machines: `kir test --partition K/N` and `kir fuzz --shard K/N`.
//!
//! Guarantees:
//! - [`Shard::parse`] accepts exactly `K/N` with whole numbers `1 <= K <= N`; anything else
//!   (`0/3`, `4/3`, `a/b`, `1/0`, `1/3/2`, ` 1/3`) is an error saying what is expected, which the
//!   commands report as a usage error (clap's `invalid value` message, exit 2).
//! - Files: [`Shard::has_key`] puts every key in exactly one of the N partitions, the same one
//!   whatever other keys exist and in whatever order they are met: partition
//!   `fnv1a64(key) % N + 1` ([`fnv1a64`], the 64-bit FNV-1a hash of the key's UTF-8 bytes, defined
//!   here and not by the Rust standard library, so it is the same on every platform, toolchain and
//!   run). Adding a file moves no other file; partitions are balanced only on average.
//! - Fuzz cases: [`Shard::cases`] splits case indices `0..C` into N contiguous ranges,
//!   `[floor((K-1)C/N), floor(KC/N))`: disjoint, in order, together exactly `0..C`, sizes
//!   differing by at most one. Case i keeps the seed it has in an unsharded run (`S + i`), so a
//!   shard's failure is reproduced by its seed alone.

use std::fmt;
use std::ops::Range;

/// Partition K of N (1-based), as given on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    k: u32,
    n: u32,
}

impl Shard {
    /// `K/N` with `1 <= K <= N`.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let shape = "expected K/N, whole numbers with 1 <= K <= N (e.g. 2/3)";
        let Some((k, n)) = s.split_once('/') else {
            return Err(shape.to_string());
        };
        let number = |t: &str| -> Option<u32> {
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            t.parse().ok()
        };
        let (Some(k), Some(n)) = (number(k), number(n)) else {
            return Err(shape.to_string());
        };
        if n == 0 {
            return Err("N must be at least 1 (N is the number of parts)".to_string());
        }
        if k == 0 {
            return Err("K must be at least 1: the parts are numbered 1 to N".to_string());
        }
        if k > n {
            return Err(format!("K ({k}) is more than N ({n}): the parts are numbered 1 to N"));
        }
        Ok(Shard { k, n })
    }

    /// Partition K, 1-based.
    pub fn k(self) -> u32 {
        self.k
    }

    /// The number of partitions N.
    pub fn n(self) -> u32 {
        self.n
    }

    /// The partition (1 to N) a key belongs to.
    pub fn partition_of(key: &str, n: u32) -> u32 {
        (fnv1a64(key.as_bytes()) % u64::from(n.max(1))) as u32 + 1
    }

    /// Whether the key (a file's path relative to the directory it was found under) is in this
    /// partition.
    pub fn has_key(self, key: &str) -> bool {
        Shard::partition_of(key, self.n) == self.k
    }

    /// This shard's case indices out of `0..cases`.
    pub fn cases(self, cases: u64) -> Range<u64> {
        let at = |k: u32| (u128::from(k) * u128::from(cases) / u128::from(self.n)) as u64;
        at(self.k - 1)..at(self.k)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        Shard::parse(s)
    }
}

/// 64-bit FNV-1a: offset basis 0xcbf29ce484222325, prime 0x100000001b3.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_values_say_what_is_expected() {
        let shape = "expected K/N, whole numbers with 1 <= K <= N (e.g. 2/3)";
        for (s, msg) in [
            ("0/3", "K must be at least 1: the parts are numbered 1 to N"),
            ("4/3", "K (4) is more than N (3): the parts are numbered 1 to N"),
            ("1/0", "N must be at least 1 (N is the number of parts)"),
            ("0/0", "N must be at least 1 (N is the number of parts)"),
            ("a/b", shape),
            ("3", shape),
            ("1/3/2", shape),
            ("+1/3", shape),
            (" 1/3", shape),
            ("1/", shape),
            ("1/99999999999", shape),
        ] {
            assert_eq!(Shard::parse(s).unwrap_err(), msg);
        }
        let s = Shard::parse("2/3").unwrap();
        assert_eq!((s.k(), s.n(), s.to_string()), (2, 3, "2/3".to_string()));
        assert_eq!(Shard::parse("1/1").unwrap().to_string(), "1/1");
    }

    #[test]
    fn the_hash_is_fnv1a_as_published() {
        // Test vectors of the FNV reference (draft-eastlake-fnv).
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn every_key_is_in_exactly_one_partition_whatever_else_exists() {
        let keys: Vec<String> = (0..500).map(|i| format!("dir{}/file_{i}.kir", i % 7)).collect();
        for n in 1..=8 {
            let mut sizes = vec![0usize; n as usize];
            for key in &keys {
                let owners: Vec<u32> =
                    (1..=n).filter(|&k| Shard::parse(&format!("{k}/{n}")).unwrap().has_key(key)).collect();
                assert_eq!(owners.len(), 1, "{key} in {owners:?} of {n}");
                assert_eq!(owners[0], Shard::partition_of(key, n));
                sizes[owners[0] as usize - 1] += 1;
            }
            // Balanced on average: 500 keys, no partition below half its share.
            assert!(sizes.iter().all(|&s| s * 2 * n as usize >= keys.len()), "{n}: {sizes:?}");
        }
    }

    #[test]
    fn case_ranges_are_contiguous_disjoint_and_cover_every_case() {
        for cases in [0u64, 1, 2, 7, 100, 1001, u64::MAX] {
            for n in 1..=9u32 {
                let mut next = 0u64;
                for k in 1..=n {
                    let r = Shard { k, n }.cases(cases);
                    assert_eq!(r.start, next, "{k}/{n} of {cases}");
                    let len = r.end - r.start;
                    assert!(len == cases / u64::from(n) || len == cases / u64::from(n) + 1, "{k}/{n}: {r:?}");
                    next = r.end;
                }
                assert_eq!(next, cases);
            }
        }
    }
}
