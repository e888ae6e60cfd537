//! Memory of a launch: pointer encoding, global buffers shared by all blocks, and race shadows.
//!
//! Guarantees:
//! - A pointer value is `region << 40 | offset`: region `r >= 1` is global buffer `r - 1` (for
//!   `ptr<global, _>`) or shared declaration `r - 1` (for `ptr<shared, _>`); region 0 is no
//!   memory. Pointer arithmetic changes the 40-bit offset only (wrapping), so a pointer never
//!   walks into another buffer: every access is checked against the region it was derived from.
//! - [`locate`] accepts an access only when it lies entirely inside its region and its byte
//!   address is a multiple of the element size; otherwise it says which rule broke.
//!   [`locate_span`] does the same for an access of any length aligned to a given size (a vector
//!   access, an `ldmatrix` row, a `cp.async` side), with the same address arithmetic.
//! - Global memory is accessed with relaxed atomic loads and stores of the element's width, so
//!   blocks running on different host threads never cause undefined behaviour in the interpreter,
//!   even when the kernel has a cross-block data race (whose outcome is then the kernel's bug).
//! - Race shadows ([`crate::race`] says what they hold and the rule that judges them) have
//!   [`race::WORDS`] words per granule. Global shadows are pooled across launches without
//!   clearing: a launch numbers its blocks after those of the launches that used the shadow before
//!   ([`GlobalMem::race_base`]), and tags numbered at or below its base are stale (empty). A
//!   shadow is cleared only when the 24-bit block numbers would run out; a fresh one is zeroed
//!   pages from the allocator (calloc); a shadow the system refuses is an error, not an abort.

use crate::race::{self, tag};
use kir_ir::types::ScalarType;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

pub(crate) const OFF_BITS: u32 = 40;
pub(crate) const OFF_MASK: u64 = (1 << OFF_BITS) - 1;

pub(crate) fn make_ptr(region: u32, offset: u64) -> u64 {
    ((region as u64) << OFF_BITS) | (offset & OFF_MASK)
}

/// `ptr` moved by `delta` bytes (the offset wraps within 40 bits; the region stays).
pub(crate) fn ptr_add(ptr: u64, delta: i128) -> u64 {
    let off = (ptr & OFF_MASK) as i128 + delta;
    (ptr & !OFF_MASK) | (off as u64 & OFF_MASK)
}

/// Why an access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AccessFault {
    /// Region 0 or a region that does not exist.
    NoRegion(u32),
    /// Byte offset (may be negative) outside `0..len`.
    OutOfBounds {
        region: u32,
        byte: i128,
    },
    Misaligned {
        region: u32,
        byte: i128,
    },
}

/// Resolves `ptr[index]` with elements of `size` bytes against regions of the given lengths:
/// `(region index from 0, byte offset)`: [`locate_span`] of one element, aligned to its size.
#[inline]
pub(crate) fn locate(ptr: u64, index: i128, size: u32, lens: &[u64]) -> Result<(usize, usize), AccessFault> {
    // In bounds, so the offset is not negative.
    locate_span(ptr, index, size, size, size, lens).map(|(r, byte)| (r, byte as usize))
}

/// Resolves an access of `len` bytes at `ptr[index]`, whose elements are `scale` bytes, that
/// must be aligned to `align` bytes (a vector access, an `ldmatrix` row, a `cp.async` side):
/// `(region index from 0, byte offset)`. The checks, in order: the region, then the bounds (the
/// `len` bytes lie inside the region), then the alignment of the byte offset. With
/// `len` 0 nothing is read and the bounds are not checked (the offset may then lie anywhere, even
/// before the region: it is returned as is, and only its alignment is checked).
#[inline]
pub(crate) fn locate_span(
    ptr: u64,
    index: i128,
    scale: u32,
    len: u32,
    align: u32,
    lens: &[u64],
) -> Result<(usize, i128), AccessFault> {
    let region = (ptr >> OFF_BITS) as u32;
    let raw = ptr & OFF_MASK;
    // Offsets at or above 2^39 are negative (pointer moved before its region).
    let off = if raw >= 1 << (OFF_BITS - 1) { raw as i128 - (1i128 << OFF_BITS) } else { raw as i128 };
    // 64-bit address arithmetic, as the GPU's: the index times the element size wraps modulo
    // 2^64 (a `u64` index of 0x4000_0000_0000_0001 on 4-byte elements is element 1).
    let byte = (off as i64).wrapping_add((index as i64).wrapping_mul(scale as i64)) as i128;
    let Some(&rlen) = (region as usize).checked_sub(1).and_then(|r| lens.get(r)) else {
        return Err(AccessFault::NoRegion(region));
    };
    if len > 0 && (byte < 0 || byte + len as i128 > rlen as i128) {
        return Err(AccessFault::OutOfBounds { region, byte });
    }
    if byte.rem_euclid(align as i128) != 0 {
        return Err(AccessFault::Misaligned { region, byte });
    }
    Ok((region as usize - 1, byte))
}

/// The fast path of [`locate`]: `Some((region index from 0, byte))` for an in-bounds, aligned
/// access, `None` otherwise (then [`locate`] says why). `size` must be a power of two.
#[inline(always)]
pub(crate) fn locate_fast(
    ptr: u64,
    idx_bits: u64,
    idx_signed_shift: u32,
    size: u32,
    lens: &[u64],
) -> Option<(usize, usize)> {
    let region = (ptr >> OFF_BITS) as usize;
    let len = *lens.get(region.wrapping_sub(1))?;
    // Offsets at or above 2^39 are negative (a pointer moved before its region), as in [`locate`].
    let raw = (ptr & OFF_MASK) as i64;
    let off = if raw >= 1 << (OFF_BITS - 1) { raw - (1i64 << OFF_BITS) } else { raw };
    // Sign-extended from the index type's width; with no shift (64-bit and narrower unsigned
    // types, whose zero-extended values are below 2^63) the bits read as `i64`, as
    // [`index_value`] defines. The arithmetic wraps modulo 2^64 exactly as [`locate`]'s, so the
    // two always agree.
    let idx = ((idx_bits << idx_signed_shift) as i64) >> idx_signed_shift;
    let byte = off.wrapping_add(idx.wrapping_mul(size as i64));
    if byte < 0 || byte as u64 + size as u64 > len || byte as u64 & (size as u64 - 1) != 0 {
        return None;
    }
    Some((region - 1, byte as usize))
}

/// The warp-wide fast path of [`locate_fast`]: when every lane in `mask` (non-zero) uses the same
/// pointer and the smallest and largest of their indices both give in-bounds elements (which, with
/// an aligned pointer, makes every lane's access in bounds and aligned), `Some((region index from
/// 0, byte offset of each lane))`; `None` otherwise (then the lanes are checked one by one).
/// Lanes outside `mask` get the offset of the lowest lane in `mask`. `size` must be a power of two
/// and every length below 2^40.
#[inline(always)]
pub(crate) fn locate_warp(
    ptrs: &[u64; 32],
    idxs: &[u64; 32],
    mask: u32,
    idx_signed_shift: u32,
    size: u32,
    lens: &[u64],
) -> Option<(usize, [usize; 32])> {
    if mask == 0 {
        return None;
    }
    let l0 = mask.trailing_zeros() as usize;
    let (p0, i0) = (ptrs[l0], idxs[l0]);
    let mut diff = 0u64;
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    let mut idx = [0i64; 32];
    for l in 0..32 {
        let on = mask >> l & 1 != 0;
        let p = if on { ptrs[l] } else { p0 };
        let i = if on { idxs[l] } else { i0 };
        diff |= p ^ p0;
        // Sign-extended from the index type's width; with no shift the bits read as `i64`
        // (see [`index_value`]).
        let v = ((i << idx_signed_shift) as i64) >> idx_signed_shift;
        idx[l] = v;
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let region = (p0 >> OFF_BITS) as usize;
    let len = *lens.get(region.wrapping_sub(1))?;
    // Offsets at or above 2^39 are negative (a pointer moved before its region), as in [`locate`].
    let raw = (p0 & OFF_MASK) as i64;
    let off = if raw >= 1 << (OFF_BITS - 1) { raw - (1i64 << OFF_BITS) } else { raw };
    let size = size as i64;
    // With `lo` and `hi` bounded first (|off| < 2^39, lengths < 2^40, size <= 8), no product or
    // sum below overflows; indices beyond the bounds (wrapping products) go lane by lane.
    if diff != 0
        || lo < -(1 << OFF_BITS)
        || hi > len as i64 + (1 << OFF_BITS)
        || off & (size - 1) != 0
        || off + lo * size < 0
        || off + hi * size + size > len as i64
    {
        return None;
    }
    let mut bytes = [0usize; 32];
    for l in 0..32 {
        bytes[l] = (off + idx[l] * size) as usize;
    }
    Some((region - 1, bytes))
}

/// One global buffer as the interpreter sees it.
pub(crate) struct Region {
    ptr: *mut u8,
    pub len: u64,
}

/// The global buffers of a launch.
pub(crate) struct GlobalMem {
    pub regions: Vec<Region>,
    pub lens: Vec<u64>,
    /// Per region, [`race::WORDS`] words per granule when race detection is on.
    pub race: Option<Vec<Vec<AtomicU64>>>,
    /// log2 of the granule of `race`.
    pub race_shift: u32,
    /// Tags with a block field at or below this are from earlier launches (stale); this launch's
    /// block `b` (linear) is tagged `race_base + b + 1`.
    pub race_base: u64,
    /// What `race_base` the next launch on these shadows starts from.
    race_used: u64,
    /// The launch's blocks run one at a time, so a race report may name the other access's
    /// instruction from the shadow (see `crate::race`).
    pub race_sites_exact: bool,
}

// SAFETY: every access through the raw pointers is an atomic load/store of an aligned element
// inside the region (checked by `locate`), and the buffers outlive the launch that holds this.
unsafe impl Sync for GlobalMem {}
unsafe impl Send for GlobalMem {}

impl GlobalMem {
    /// Views `bufs` (each must be 8-byte aligned or empty) as global memory.
    /// With `races`, the shadow has [`race::WORDS`] words per granule of `1 << race_shift` bytes, for a launch
    /// of `nblocks` blocks.
    /// Fails (naming the size) when the system refuses the memory of a shadow.
    pub fn new(bufs: &mut [&mut [u8]], races: bool, race_shift: u32, nblocks: u64) -> Result<GlobalMem, String> {
        let regions: Vec<Region> =
            bufs.iter_mut().map(|b| Region { ptr: b.as_mut_ptr(), len: b.len() as u64 }).collect();
        let lens = regions.iter().map(|r| r.len).collect();
        let (mut race_base, mut race_used) = (0, 0);
        let race = if !races {
            None
        } else {
            let mut taken: Vec<(Vec<AtomicU64>, u64)> = regions
                .iter()
                .map(|r| shadow_take(race::WORDS * (r.len as usize).div_ceil(1 << race_shift)))
                .collect::<Result<_, _>>()?;
            race_base = taken.iter().map(|t| t.1).max().unwrap_or(0);
            if race_base + nblocks > tag::BLOCK_MAX {
                // Block numbers would wrap: start over on clean shadows.
                for (v, used) in &mut taken {
                    if *used > 0 {
                        for t in v.iter_mut() {
                            *t.get_mut() = 0;
                        }
                    }
                }
                race_base = 0;
            }
            // A launch of more blocks than the field holds aliases block numbers (as it always
            // did); its shadows are cleared before the next launch.
            race_used = (race_base + nblocks).min(tag::BLOCK_MAX + 1);
            Some(taken.into_iter().map(|t| t.0).collect())
        };
        Ok(GlobalMem { regions, lens, race, race_shift, race_base, race_used, race_sites_exact: false })
    }

    /// Loads `size` bytes at `(region, byte)` as returned by [`locate`].
    #[inline]
    pub fn load(&self, region: usize, byte: usize, size: u32) -> u64 {
        let p = unsafe { self.regions[region].ptr.add(byte) };
        // SAFETY: `locate` checked bounds and alignment; the base is 8-byte aligned.
        unsafe {
            match size {
                1 => (*(p as *const AtomicU8)).load(Ordering::Relaxed) as u64,
                2 => (*(p as *const AtomicU16)).load(Ordering::Relaxed) as u64,
                4 => (*(p as *const AtomicU32)).load(Ordering::Relaxed) as u64,
                _ => (*(p as *const AtomicU64)).load(Ordering::Relaxed),
            }
        }
    }

    /// [`GlobalMem::load`] at each of the 32 lanes' offsets (from [`locate_warp`]).
    #[inline]
    pub fn load_lanes(&self, region: usize, bytes: &[usize; 32], size: u32) -> [u64; 32] {
        let base = self.regions[region].ptr;
        let mut out = [0u64; 32];
        macro_rules! lanes {
            ($atomic:ty) => {
                for l in 0..32 {
                    // SAFETY: `locate_warp` checked every offset for bounds and alignment (inactive
                    // lanes carry an active lane's offset); the base is 8-byte aligned.
                    out[l] = unsafe { (*(base.add(bytes[l]) as *const $atomic)).load(Ordering::Relaxed) } as u64;
                }
            };
        }
        match size {
            1 => lanes!(AtomicU8),
            2 => lanes!(AtomicU16),
            4 => lanes!(AtomicU32),
            _ => lanes!(AtomicU64),
        }
        out
    }

    /// [`GlobalMem::store`] of `vals` at every offset of the lanes in `mask`, in lane order.
    #[inline]
    pub fn store_lanes(&self, region: usize, bytes: &[usize; 32], size: u32, mask: u32, vals: &[u64; 32]) {
        let base = self.regions[region].ptr;
        macro_rules! lanes {
            ($atomic:ty, $t:ty) => {
                for l in 0..32 {
                    if mask >> l & 1 != 0 {
                        // SAFETY: as in `load_lanes`.
                        unsafe { (*(base.add(bytes[l]) as *const $atomic)).store(vals[l] as $t, Ordering::Relaxed) }
                    }
                }
            };
        }
        match size {
            1 => lanes!(AtomicU8, u8),
            2 => lanes!(AtomicU16, u16),
            4 => lanes!(AtomicU32, u32),
            _ => lanes!(AtomicU64, u64),
        }
    }

    #[inline]
    pub fn store(&self, region: usize, byte: usize, size: u32, bits: u64) {
        let p = unsafe { self.regions[region].ptr.add(byte) };
        // SAFETY: as in `load`.
        unsafe {
            match size {
                1 => (*(p as *const AtomicU8)).store(bits as u8, Ordering::Relaxed),
                2 => (*(p as *const AtomicU16)).store(bits as u16, Ordering::Relaxed),
                4 => (*(p as *const AtomicU32)).store(bits as u32, Ordering::Relaxed),
                _ => (*(p as *const AtomicU64)).store(bits, Ordering::Relaxed),
            }
        }
    }
}

impl Drop for GlobalMem {
    fn drop(&mut self) {
        for v in self.race.take().into_iter().flatten() {
            shadow_give(v, self.race_used);
        }
    }
}

/// Global race shadows of finished launches, kept for the next launch (at most
/// [`SHADOW_POOL_BYTES`] in all): clearing a shadow that is already mapped costs a fraction of
/// page-faulting in a fresh one, and the same buffers are often launched on again.
/// Each with the `race_used` of the launch that gave it back.
#[allow(clippy::type_complexity)]
static SHADOW_POOL: std::sync::Mutex<Vec<(Vec<AtomicU64>, u64)>> = std::sync::Mutex::new(Vec::new());
const SHADOW_POOL_BYTES: usize = 256 << 20;

/// A shadow of `n` tags and the block numbers used on it: a pooled one of that length, or a fresh
/// one (all zero, none used).
fn shadow_take(n: usize) -> Result<(Vec<AtomicU64>, u64), String> {
    let found = {
        let mut pool = SHADOW_POOL.lock().unwrap_or_else(|p| p.into_inner());
        pool.iter().position(|v| v.0.len() == n).map(|i| pool.swap_remove(i))
    };
    match found {
        Some(f) => Ok(f),
        None => Ok((zeroed_atomics(n)?, 0)),
    }
}

/// Returns a shadow to the pool if it fits (else frees it).
fn shadow_give(v: Vec<AtomicU64>, used: u64) {
    if v.is_empty() {
        return;
    }
    let mut pool = SHADOW_POOL.lock().unwrap_or_else(|p| p.into_inner());
    let held: usize = pool.iter().map(|v| v.0.len() * 8).sum();
    if held + v.len() * 8 <= SHADOW_POOL_BYTES {
        pool.push((v, used));
    }
}

/// `n` atomics of value 0, allocated zeroed (calloc: fresh pages cost nothing until touched).
fn zeroed_atomics(n: usize) -> Result<Vec<AtomicU64>, String> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let refused = || format!("race-detection shadow: {}", crate::buffer::refused(n.saturating_mul(8)));
    let layout = std::alloc::Layout::array::<AtomicU64>(n).map_err(|_| refused())?;
    // SAFETY: `layout` has a non-zero size; a non-null result is `n` zeroed, aligned AtomicU64s (all
    // zero bits is a valid AtomicU64) allocated by the global allocator with the layout that a
    // `Vec<AtomicU64>` of capacity `n` frees with.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut AtomicU64;
    if ptr.is_null() {
        return Err(refused());
    }
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// Reads `size` little-endian bytes of `mem` at `byte` (in bounds by construction).
#[inline]
pub(crate) fn read_le(mem: &[u8], byte: usize, size: u32) -> u64 {
    match size {
        1 => mem[byte] as u64,
        2 => u16::from_le_bytes([mem[byte], mem[byte + 1]]) as u64,
        4 => u32::from_le_bytes(mem[byte..byte + 4].try_into().unwrap_or([0; 4])) as u64,
        _ => u64::from_le_bytes(mem[byte..byte + 8].try_into().unwrap_or([0; 8])),
    }
}

#[inline]
pub(crate) fn write_le(mem: &mut [u8], byte: usize, size: u32, bits: u64) {
    match size {
        1 => mem[byte] = bits as u8,
        2 => mem[byte..byte + 2].copy_from_slice(&(bits as u16).to_le_bytes()),
        4 => mem[byte..byte + 4].copy_from_slice(&(bits as u32).to_le_bytes()),
        _ => mem[byte..byte + 8].copy_from_slice(&bits.to_le_bytes()),
    }
}

/// [`read_le`] at `start + bytes[l]` for each of the 32 lanes (offsets from [`locate_warp`]).
#[inline]
pub(crate) fn read_lanes(mem: &[u8], start: usize, bytes: &[usize; 32], size: u32) -> [u64; 32] {
    let mut out = [0u64; 32];
    macro_rules! lanes {
        ($t:ty) => {
            for l in 0..32 {
                let at = start + bytes[l];
                let b = mem.get(at..at + size as usize).and_then(|b| b.try_into().ok());
                out[l] = <$t>::from_le_bytes(b.unwrap_or_default()) as u64;
            }
        };
    }
    match size {
        1 => lanes!(u8),
        2 => lanes!(u16),
        4 => lanes!(u32),
        _ => lanes!(u64),
    }
    out
}

/// [`write_le`] of `vals` at `start + bytes[l]` for the lanes in `mask`, in lane order.
#[inline]
pub(crate) fn write_lanes(mem: &mut [u8], start: usize, bytes: &[usize; 32], size: u32, mask: u32, vals: &[u64; 32]) {
    for l in 0..32 {
        if mask >> l & 1 != 0 {
            write_le(mem, start + bytes[l], size, vals[l]);
        }
    }
}

/// Element type of the index operand sign- or zero-extended to i128.
#[inline]
/// The element index an index operand denotes. Signed types are sign-extended; `u64` indices
/// wrap modulo 2^64 like the GPU's 64-bit address arithmetic, so they read as `i64`
/// (`0xffff_ffff_ffff_ffff` is -1); narrower unsigned types are zero-extended.
pub(crate) fn index_value(ty: ScalarType, bits: u64) -> i128 {
    if ty.is_signed_int() {
        crate::buffer::sign_extend(ty, bits) as i128
    } else if ty.bits() == 64 {
        bits as i64 as i128
    } else {
        bits as i128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `locate_warp` accepts a warp only when every active lane passes `locate_fast`, with the same
    /// region and byte; it accepts every warp with one pointer and in-bounds, aligned lanes.
    #[test]
    fn locate_warp_agrees_with_locate_fast() {
        let lens = [4096u64, 100, 0];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..20_000 {
            let r = next();
            let size = 1u32 << (r % 4);
            let shift = [0u32, 32, 48, 56][(r >> 2) as usize % 4];
            let region = 1 + (r >> 4) % 4; // region 4 does not exist
            let off = match (r >> 8) % 4 {
                0 => 0,
                1 => size as u64 * ((r >> 12) % 8),
                2 => (r >> 12) % 64,
                _ => OFF_MASK - (r >> 12) % 16,
            };
            let uniform = (r >> 20) % 4 != 0;
            let mask = match (r >> 24) % 3 {
                0 => u32::MAX,
                1 => (next() as u32) | 1,
                _ => 1 << ((r >> 28) % 32),
            };
            let (mut ptrs, mut idxs) = ([0u64; 32], [0u64; 32]);
            let base = (r >> 32) % 1200;
            for l in 0..32 {
                let x = next();
                ptrs[l] = make_ptr(region as u32, if uniform || x % 7 != 0 { off } else { off + size as u64 });
                idxs[l] = match x % 9 {
                    0 => u64::MAX - (x >> 8) % 4,
                    1 => (x >> 8) % 5000,
                    _ => base + l as u64,
                };
            }
            let got = locate_warp(&ptrs, &idxs, mask, shift, size, &lens);
            let lanes: Vec<usize> = (0..32).filter(|l| mask >> l & 1 != 0).collect();
            let each: Vec<_> = lanes.iter().map(|&l| locate_fast(ptrs[l], idxs[l], shift, size, &lens)).collect();
            match got {
                Some((reg, bytes)) => {
                    accepted += 1;
                    for (k, &l) in lanes.iter().enumerate() {
                        assert_eq!(each[k], Some((reg, bytes[l])), "lane {l}");
                    }
                }
                None => {
                    refused += 1;
                    let same_ptr = lanes.iter().all(|&l| ptrs[l] == ptrs[lanes[0]]);
                    assert!(!same_ptr || each.iter().any(|e| e.is_none()), "a uniform in-bounds warp was refused");
                }
            }
        }
        assert!(accepted > 1000 && refused > 1000, "{accepted} accepted, {refused} refused");
    }
}
