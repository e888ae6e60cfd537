//! Typed host buffers: the global memory a launch reads and writes.
//!
//! Guarantees:
//! - A [`Buffer`] is a little-endian byte array of elements of one scalar type; `bytes.len()` is a
//!   multiple of the element size whenever the buffer was made by a constructor here (the
//!   interpreter treats trailing bytes as out of bounds).
//! - `pred` elements are one byte, 0 or 1. f16/bf16 are their 16-bit IEEE/bfloat patterns.
//! - Conversions to host types ([`Buffer::to_f32`], [`Buffer::to_f64`], [`Buffer::to_u32`]) never
//!   panic; they convert value by value (`as` casts for integers, exact widening or
//!   round-to-nearest narrowing for floats).
//! - [`Buffer::try_zeros`] and [`Buffer::try_from_bits`] return an error, never abort, when the
//!   system refuses the memory (the other constructors abort like any Rust allocation).

use half::{bf16, f16};
use kir_ir::types::ScalarType;

/// The error of a refused allocation of `n` bytes.
pub fn refused(n: usize) -> String {
    format!("cannot allocate {n} bytes ({}): the system refused the memory", human_bytes(n as u64))
}

/// `n` bytes in the largest binary unit that keeps it at or above 1 (`2.0 GiB`).
pub fn human_bytes(n: u64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} bytes")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// A typed host buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub elem: ScalarType,
    pub bytes: Vec<u8>,
}

impl Buffer {
    /// `len` zero elements.
    pub fn zeros(elem: ScalarType, len: usize) -> Buffer {
        Buffer { elem, bytes: vec![0; len * elem.bytes() as usize] }
    }
    /// `len` zero elements, or an error saying how many bytes the system refused. The memory comes
    /// zeroed from the allocator (calloc: untouched pages cost nothing).
    pub fn try_zeros(elem: ScalarType, len: usize) -> Result<Buffer, String> {
        let n = len.checked_mul(elem.bytes() as usize).ok_or_else(|| refused(usize::MAX))?;
        if n == 0 {
            return Ok(Buffer { elem, bytes: Vec::new() });
        }
        let layout = std::alloc::Layout::array::<u8>(n).map_err(|_| refused(n))?;
        // SAFETY: `layout` has a non-zero size; a non-null result is `n` zeroed bytes allocated by
        // the global allocator with the layout `Vec<u8>` of capacity `n` frees with.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(refused(n));
        }
        // SAFETY: as above; length = capacity = `n`, all initialized (zero).
        Ok(Buffer { elem, bytes: unsafe { Vec::from_raw_parts(ptr, n, n) } })
    }
    /// [`Buffer::from_bits`] of `len` elements, with the memory reserved first: an error, not an
    /// abort, when the system refuses it.
    pub fn try_from_bits(elem: ScalarType, len: usize, bits: impl IntoIterator<Item = u64>) -> Result<Buffer, String> {
        let size = elem.bytes() as usize;
        let n = len.checked_mul(size).ok_or_else(|| refused(usize::MAX))?;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(n).map_err(|_| refused(n))?;
        for b in bits.into_iter().take(len) {
            bytes.extend_from_slice(&b.to_le_bytes()[..size]);
        }
        Ok(Buffer { elem, bytes })
    }
    /// A buffer from raw element bits (each zero-extended from the element width).
    pub fn from_bits(elem: ScalarType, bits: impl IntoIterator<Item = u64>) -> Buffer {
        let size = elem.bytes() as usize;
        let mut bytes = Vec::new();
        for b in bits {
            bytes.extend_from_slice(&b.to_le_bytes()[..size]);
        }
        Buffer { elem, bytes }
    }
    pub fn from_f32(v: &[f32]) -> Buffer {
        Buffer::from_bits(ScalarType::F32, v.iter().map(|x| x.to_bits() as u64))
    }
    pub fn from_f64(v: &[f64]) -> Buffer {
        Buffer::from_bits(ScalarType::F64, v.iter().map(|x| x.to_bits()))
    }
    pub fn from_u32(v: &[u32]) -> Buffer {
        Buffer::from_bits(ScalarType::U32, v.iter().map(|x| *x as u64))
    }
    pub fn from_i32(v: &[i32]) -> Buffer {
        Buffer::from_bits(ScalarType::S32, v.iter().map(|x| *x as u32 as u64))
    }
    /// A buffer of 16-bit patterns (meant for `f16`/`bf16`, also accepts `u16`/`s16`).
    pub fn from_u16_bits(elem: ScalarType, v: &[u16]) -> Buffer {
        Buffer::from_bits(elem, v.iter().map(|x| *x as u64))
    }
    /// Number of whole elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.elem.bytes() as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The raw bits of element `i`, zero-extended (0 when `i` is out of range).
    pub fn get_bits(&self, i: usize) -> u64 {
        let size = self.elem.bytes() as usize;
        let Some(chunk) = self.bytes.get(i * size..i * size + size) else {
            return 0;
        };
        let mut b = [0u8; 8];
        b[..size].copy_from_slice(chunk);
        u64::from_le_bytes(b)
    }
    /// Sets element `i` from raw bits (ignored when out of range).
    pub fn set_bits(&mut self, i: usize, bits: u64) {
        let size = self.elem.bytes() as usize;
        if let Some(chunk) = self.bytes.get_mut(i * size..i * size + size) {
            chunk.copy_from_slice(&bits.to_le_bytes()[..size]);
        }
    }
    /// Every element as f64 (exact for every type but 64-bit integers beyond 2^53).
    pub fn to_f64(&self) -> Vec<f64> {
        (0..self.len()).map(|i| bits_to_f64(self.elem, self.get_bits(i))).collect()
    }
    /// Every element as f32 (f64 and large integers are rounded).
    pub fn to_f32(&self) -> Vec<f32> {
        (0..self.len())
            .map(|i| {
                let b = self.get_bits(i);
                match self.elem {
                    ScalarType::F32 => f32::from_bits(b as u32),
                    _ => bits_to_f64(self.elem, b) as f32,
                }
            })
            .collect()
    }
    /// Every element as u32 (`as` casts: integers truncate/wrap, floats saturate).
    pub fn to_u32(&self) -> Vec<u32> {
        (0..self.len())
            .map(|i| {
                let b = self.get_bits(i);
                if self.elem.is_float() {
                    bits_to_f64(self.elem, b) as u32
                } else {
                    sign_extend(self.elem, b) as u32
                }
            })
            .collect()
    }
}

/// The raw bits sign-extended to i64 for signed integer types, unchanged otherwise.
pub(crate) fn sign_extend(ty: ScalarType, bits: u64) -> i64 {
    if ty.is_signed_int() {
        let shift = 64 - ty.bits();
        ((bits << shift) as i64) >> shift
    } else {
        bits as i64
    }
}

/// The value of `bits` of type `ty` as f64 (integers converted, 64-bit ones rounded).
pub fn bits_to_f64(ty: ScalarType, bits: u64) -> f64 {
    match ty {
        ScalarType::F16 => f16::from_bits(bits as u16).to_f64(),
        ScalarType::BF16 => bf16::from_bits(bits as u16).to_f64(),
        ScalarType::F32 => f32::from_bits(bits as u32) as f64,
        ScalarType::F64 => f64::from_bits(bits),
        t if t.is_signed_int() => sign_extend(t, bits) as f64,
        _ => bits as f64,
    }
}
