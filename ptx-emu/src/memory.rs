//! Global memory: host buffers, each at its own device address range, so every global access is
//! checked against the buffer it falls in and faults name that buffer.
//!
//! Guarantees:
//! - A buffer lives at a 256-byte aligned address at or above [`GLOBAL_BASE`] (4 GiB, so a pointer
//!   truncated to 32 bits never reaches a buffer), and at least [`GUARD_BYTES`] of unmapped space
//!   separate two buffers: an access one element past the end faults instead of landing in the
//!   neighbour.
//! - The host storage of a buffer is 8-byte aligned, so every naturally aligned access of 1, 2, 4
//!   or 8 bytes can be done as one atomic access of that size (blocks run in parallel).
//! - Addresses are never reused within one `Memory`, so a stale pointer to a freed buffer faults.

use std::collections::BTreeMap;

/// Lowest device address of a global buffer.
pub const GLOBAL_BASE: u64 = 1 << 32;
/// Unmapped bytes after every buffer.
pub const GUARD_BYTES: u64 = 4096;
/// Largest single buffer (4 GiB).
pub const MAX_BUFFER_BYTES: u64 = 1 << 32;

/// A buffer in a [`Memory`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub u32);

pub(crate) struct Buffer {
    pub name: String,
    pub addr: u64,
    pub len: u64,
    /// `len` bytes, rounded up to whole words; 8-byte aligned on the host.
    pub words: Vec<u64>,
    pub live: bool,
}

impl Buffer {
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: a u64 slice viewed as bytes; `len <= words.len() * 8`.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.len as usize) }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, with unique access through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, self.len as usize) }
    }
}

/// The device's global memory: named buffers at device addresses.
#[derive(Default)]
pub struct Memory {
    pub(crate) buffers: Vec<Buffer>,
    /// Start address → buffer index, for live buffers.
    by_addr: BTreeMap<u64, u32>,
    next_addr: u64,
}

impl Memory {
    pub fn new() -> Memory {
        Memory { buffers: Vec::new(), by_addr: BTreeMap::new(), next_addr: GLOBAL_BASE }
    }

    /// A new buffer holding `data`. `name` is how faults name it. Fails for buffers over
    /// [`MAX_BUFFER_BYTES`] or when the host cannot allocate it.
    pub fn alloc(&mut self, name: impl Into<String>, data: &[u8]) -> Result<BufferId, String> {
        let id = self.alloc_zeroed(name, data.len() as u64)?;
        self.buffers[id.0 as usize].bytes_mut().copy_from_slice(data);
        Ok(id)
    }

    /// A new zero-filled buffer of `len` bytes.
    pub fn alloc_zeroed(&mut self, name: impl Into<String>, len: u64) -> Result<BufferId, String> {
        let name = name.into();
        if len > MAX_BUFFER_BYTES {
            return Err(format!("buffer `{name}` of {len} bytes is larger than the {MAX_BUFFER_BYTES}-byte limit"));
        }
        let nwords = len.div_ceil(8) as usize;
        let mut words = Vec::new();
        words.try_reserve_exact(nwords).map_err(|_| format!("cannot allocate {len} bytes for buffer `{name}`"))?;
        words.resize(nwords, 0u64);
        if self.next_addr == 0 {
            self.next_addr = GLOBAL_BASE;
        }
        let addr = self.next_addr;
        self.next_addr = (addr + len.max(1) + GUARD_BYTES).next_multiple_of(256);
        let id = BufferId(self.buffers.len() as u32);
        self.by_addr.insert(addr, id.0);
        self.buffers.push(Buffer { name, addr, len, words, live: true });
        Ok(id)
    }

    /// Frees a buffer: its addresses fault from now on and are never reused.
    pub fn free(&mut self, id: BufferId) -> Result<(), String> {
        let b = self.live(id)?;
        let addr = b.addr;
        self.by_addr.remove(&addr);
        let b = &mut self.buffers[id.0 as usize];
        b.live = false;
        b.words = Vec::new();
        Ok(())
    }

    fn live(&self, id: BufferId) -> Result<&Buffer, String> {
        match self.buffers.get(id.0 as usize) {
            Some(b) if b.live => Ok(b),
            Some(b) => Err(format!("buffer `{}` was freed", b.name)),
            None => Err(format!("no buffer #{}", id.0)),
        }
    }

    /// The device address of a buffer's first byte.
    pub fn address(&self, id: BufferId) -> Result<u64, String> {
        Ok(self.live(id)?.addr)
    }

    /// A buffer's name.
    pub fn name(&self, id: BufferId) -> Result<&str, String> {
        Ok(&self.live(id)?.name)
    }

    /// Renames a live buffer: faults name it by `name` from now on.
    pub fn rename(&mut self, id: BufferId, name: impl Into<String>) -> Result<(), String> {
        self.live(id)?;
        self.buffers[id.0 as usize].name = name.into();
        Ok(())
    }

    /// A buffer's contents.
    pub fn bytes(&self, id: BufferId) -> Result<&[u8], String> {
        Ok(self.live(id)?.bytes())
    }

    /// A buffer's contents, writable.
    pub fn bytes_mut(&mut self, id: BufferId) -> Result<&mut [u8], String> {
        self.live(id)?;
        Ok(self.buffers[id.0 as usize].bytes_mut())
    }

    /// The live buffer holding device address `addr`, and the offset of `addr` in it.
    pub fn find(&self, addr: u64) -> Option<(BufferId, u64)> {
        let (&start, &i) = self.by_addr.range(..=addr).next_back()?;
        let b = &self.buffers[i as usize];
        (addr - start < b.len).then_some((BufferId(i), addr - start))
    }

    /// Live buffers in address order.
    pub fn buffers(&self) -> impl Iterator<Item = BufferId> + '_ {
        self.by_addr.values().map(|&i| BufferId(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_separated_and_found_by_address() {
        let mut m = Memory::new();
        let a = m.alloc("a", &[1, 2, 3, 4]).unwrap();
        let b = m.alloc_zeroed("b", 16).unwrap();
        let (aa, ab) = (m.address(a).unwrap(), m.address(b).unwrap());
        assert!(aa >= GLOBAL_BASE && aa % 256 == 0 && ab % 256 == 0);
        assert!(ab >= aa + 4 + GUARD_BYTES);
        assert_eq!(m.find(aa + 3), Some((a, 3)));
        assert_eq!(m.find(aa + 4), None);
        assert_eq!(m.find(ab + 15), Some((b, 15)));
        assert_eq!(m.bytes(a).unwrap(), &[1, 2, 3, 4]);
        m.free(a).unwrap();
        assert_eq!(m.find(aa), None);
        assert!(m.bytes(a).unwrap_err().contains("freed"));
        let c = m.alloc_zeroed("c", 4).unwrap();
        assert!(m.address(c).unwrap() > ab, "addresses are never reused");
    }

    #[test]
    fn renamed_buffers_keep_their_address_and_contents() {
        let mut m = Memory::new();
        let a = m.alloc("a", &[7, 8]).unwrap();
        let addr = m.address(a).unwrap();
        m.rename(a, "out").unwrap();
        assert_eq!(m.name(a).unwrap(), "out");
        assert_eq!((m.address(a).unwrap(), m.bytes(a).unwrap()), (addr, &[7u8, 8][..]));
        m.free(a).unwrap();
        assert!(m.rename(a, "x").unwrap_err().contains("freed"));
        assert!(m.rename(BufferId(9), "x").is_err());
    }

    #[test]
    fn oversized_buffer_is_an_error() {
        let mut m = Memory::new();
        assert!(m.alloc_zeroed("huge", MAX_BUFFER_BYTES + 1).unwrap_err().contains("limit"));
    }
}
