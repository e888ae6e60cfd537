//! The pseudo-random number generator kir's deterministic generators share: SplitMix64.
//!
//! Guarantees: the same state gives the same sequence on every machine (pure wrapping integer
//! arithmetic), so generated arguments (`rand:` specs) and generated kernels are reproducible.

/// SplitMix64 (small, fast, good enough for test data): advances `state` and returns the next
/// output. The one implementation in the project: the generator's `Rng`, the `rand` argument generator of docs/testing.md (kir-interp) and the
/// tests' random inputs all draw from it.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
