//! Minimal NumPy `.npy` reading and writing for buffers.
//!
//! Guarantees:
//! - [`read`] accepts format versions 1, 2 and 3, C order, little-endian (or byte-sized) dtypes
//!   `<f2 <f4 <f8 |u1 |i1 <u2 <i2 <u4 <i4 <u8 <i8 |b1` (bool read as `u8`), any shape (flattened);
//!   anything else is an error string naming the file and the problem, never a panic. The data
//!   must be exactly `product(shape) * itemsize` bytes and at most [`crate::MAX_BUFFER_BYTES`].
//! - [`read`] checks the header and the file's size before it reads any data: memory use is bounded
//!   by what the header promises (and the cap), whatever the file is; devices and FIFOs are refused.
//! - A path ending in `.npy.xz` is an xz-compressed `.npy` (how hardware-recorded expectations
//!   are stored, `tests/hardware/`): [`read`] decompresses it (pure Rust) into memory bounded by
//!   the cap plus a header's worth, refusing a stream that would decompress to more, then applies
//!   every check above to the decompressed bytes. [`write`] never writes one.
//! - [`write`] writes version 1.0 with shape `(len,)`; `bf16` is written as `<u2` (raw bit
//!   patterns; NumPy has no bfloat16), so `read(write(b))` gives `b` back except that `bf16` comes
//!   back as `u16` with the same bytes.

use crate::buffer::Buffer;
use kir_ir::types::ScalarType;
use std::path::Path;

const MAGIC: &[u8] = b"\x93NUMPY";

fn descr_of(t: ScalarType) -> &'static str {
    use ScalarType::*;
    match t {
        Pred => "|b1",
        U8 => "|u1",
        S8 => "|i1",
        U16 | BF16 => "<u2",
        S16 => "<i2",
        U32 => "<u4",
        S32 => "<i4",
        U64 => "<u8",
        S64 => "<i8",
        F16 => "<f2",
        F32 => "<f4",
        F64 => "<f8",
    }
}

fn type_of(descr: &str) -> Option<ScalarType> {
    use ScalarType::*;
    Some(match descr {
        "|b1" | "|u1" | "<u1" | "u1" | "b1" => U8,
        "|i1" | "<i1" | "i1" => S8,
        "<u2" => U16,
        "<i2" => S16,
        "<u4" => U32,
        "<i4" => S32,
        "<u8" => U64,
        "<i8" => S64,
        "<f2" => F16,
        "<f4" => F32,
        "<f8" => F64,
        _ => return None,
    })
}

/// The value of `'key': VALUE` in the header dictionary (raw text up to the next top-level comma).
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("'{key}'");
    let at = header.find(&pat)? + pat.len();
    let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = if rest.starts_with('(') { rest.find(')')? + 1 } else { rest.find([',', '}']).unwrap_or(rest.len()) };
    Some(rest[..end].trim())
}

/// The longest header accepted (NumPy writes under 100 bytes; version 2 allows 4 GiB).
const MAX_HEADER: usize = 1 << 20;

/// Where the header text starts and its length, from the first 10 or 12 bytes (`prefix`); `Ok(None)`
/// when more than the 10 bytes given are needed (version 2 and 3 have a 4-byte length).
fn header_span(prefix: &[u8]) -> Result<(usize, usize), String> {
    if prefix.len() < 10 || &prefix[..6] != MAGIC {
        return Err("not a .npy file (bad magic)".into());
    }
    let (hlen, start) = match prefix[6] {
        1 => (u16::from_le_bytes([prefix[8], prefix[9]]) as usize, 10usize),
        2 | 3 => {
            if prefix.len() < 12 {
                return Err("truncated header".into());
            }
            (u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]) as usize, 12)
        }
        v => return Err(format!("unsupported .npy version {v}")),
    };
    if hlen > MAX_HEADER {
        return Err(format!("header of {hlen} bytes (at most {MAX_HEADER})"));
    }
    Ok((start, hlen))
}

/// The element type and the data size in bytes the header describes (checked against
/// [`crate::MAX_BUFFER_BYTES`]).
fn parse_header(header: &[u8]) -> Result<(ScalarType, u64), String> {
    let header = std::str::from_utf8(header).map_err(|_| "header is not text")?;
    let descr = dict_value(header, "descr").ok_or("header has no 'descr'")?.trim_matches(['\'', '"']);
    let elem = type_of(descr).ok_or_else(|| format!("unsupported dtype '{descr}' (little-endian numbers only)"))?;
    match dict_value(header, "fortran_order") {
        Some("False") => {}
        Some("True") => return Err("Fortran-order arrays are not supported; save with C order".into()),
        _ => return Err("header has no valid 'fortran_order'".into()),
    }
    let shape = dict_value(header, "shape").ok_or("header has no 'shape'")?;
    let inner = shape.trim_start_matches('(').trim_end_matches(')');
    let mut count: u64 = 1;
    for d in inner.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let n: u64 = d.parse().map_err(|_| format!("bad shape {shape}"))?;
        count = count.checked_mul(n).ok_or("shape too large")?;
    }
    let need = count
        .checked_mul(elem.bytes() as u64)
        .filter(|n| *n <= crate::MAX_BUFFER_BYTES)
        .ok_or_else(|| format!("array too large: shape {shape} of {elem} is over {} bytes", crate::MAX_BUFFER_BYTES))?;
    Ok((elem, need))
}

/// Parses `.npy` bytes.
pub fn parse(bytes: &[u8]) -> Result<Buffer, String> {
    let (start, hlen) = header_span(&bytes[..bytes.len().min(12)])?;
    let header = bytes.get(start..start.saturating_add(hlen)).ok_or("truncated header")?;
    let (elem, need) = parse_header(header)?;
    let data = &bytes[start + hlen..];
    if data.len() as u64 != need {
        return Err(format!("data has {} bytes, the header says {need}", data.len()));
    }
    Ok(Buffer { elem, bytes: data.to_vec() })
}

/// Reads a `.npy` file: the header first (magic, version, dtype, shape), then — only when the
/// file's size is exactly what the header says — the data. Never reads more than the header
/// promises, so `/dev/zero` or a huge unrelated file is an error after a few bytes.
pub fn read(path: &Path) -> Result<Buffer, String> {
    use std::io::{Read, Seek};
    let at = |e: String| format!("{}: {e}", path.display());
    let mut f = std::fs::File::open(path).map_err(|e| at(e.to_string()))?;
    let meta = f.metadata().map_err(|e| at(e.to_string()))?;
    if !meta.is_file() {
        return Err(at("not a regular file".into()));
    }
    if is_compressed(path) {
        let bytes =
            decompress_xz(std::io::BufReader::new(f), crate::MAX_BUFFER_BYTES + MAX_HEADER_BYTES).map_err(at)?;
        return parse(&bytes).map_err(at);
    }
    let mut prefix = [0u8; 12];
    let got = read_up_to(&mut f, &mut prefix).map_err(|e| at(e.to_string()))?;
    let (start, hlen) = header_span(&prefix[..got]).map_err(at)?;
    let body_start = (start + hlen) as u64;
    if meta.len() < body_start {
        return Err(at("truncated header".into()));
    }
    let mut header = vec![0u8; hlen];
    f.seek(std::io::SeekFrom::Start(start as u64)).map_err(|e| at(e.to_string()))?;
    f.read_exact(&mut header).map_err(|e| at(format!("truncated header ({e})")))?;
    let (elem, need) = parse_header(&header).map_err(at)?;
    let data_len = meta.len() - body_start;
    if data_len != need {
        return Err(at(format!("data has {data_len} bytes, the header says {need}")));
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(need as usize).map_err(|_| at(format!("cannot allocate {need} bytes for the array")))?;
    f.take(need).read_to_end(&mut bytes).map_err(|e| at(e.to_string()))?;
    if bytes.len() as u64 != need {
        return Err(at(format!("data has {} bytes, the header says {need}", bytes.len())));
    }
    Ok(Buffer { elem, bytes })
}

/// Whether `path` names an xz-compressed `.npy` (`NAME.npy.xz`).
pub fn is_compressed(path: &Path) -> bool {
    path.to_str().is_some_and(|p| p.ends_with(".npy.xz"))
}

/// A `.npy` header is at most this long (version 2/3 store its length in 4 bytes, but NumPy never
/// writes more than a few hundred bytes; this bounds what a compressed file may add to the cap).
const MAX_HEADER_BYTES: u64 = 1 << 16;

/// A writer that refuses to hold more than `limit` bytes: decompression stops with an error
/// instead of growing without bound (a small `.xz` can promise terabytes).
struct BoundedSink {
    bytes: Vec<u8>,
    limit: u64,
}

impl std::io::Write for BoundedSink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() as u64 + data.len() as u64 > self.limit {
            return Err(std::io::Error::other(format!("decompresses to more than {} bytes", self.limit)));
        }
        self.bytes.try_reserve(data.len()).map_err(|_| std::io::Error::other("cannot allocate memory"))?;
        self.bytes.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Decompresses an xz stream into at most `limit` bytes.
fn decompress_xz(mut input: impl std::io::BufRead, limit: u64) -> Result<Vec<u8>, String> {
    let mut sink = BoundedSink { bytes: Vec::new(), limit };
    lzma_rs::xz_decompress(&mut input, &mut sink).map_err(|e| format!("not a valid .xz file: {e}"))?;
    Ok(sink.bytes)
}

/// Reads until `buf` is full or the end of the file; returns the bytes read.
fn read_up_to(f: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// The `.npy` encoding of a buffer.
pub fn encode(b: &Buffer) -> Vec<u8> {
    let mut header = format!("{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}", descr_of(b.elem), b.len());
    // Pad so that magic + version + length + header (+ newline) is a multiple of 64.
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + b.bytes.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&b.bytes[..b.len() * b.elem.bytes() as usize]);
    out
}

/// Writes a buffer as a `.npy` file.
pub fn write(path: &Path, b: &Buffer) -> Result<(), String> {
    if is_compressed(path) {
        return Err(format!("{}: kir writes plain .npy files, not compressed ones", path.display()));
    }
    std::fs::write(path, encode(b)).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {

    #[test]
    fn read_checks_the_header_before_reading_data() {
        let d = std::env::temp_dir().join(format!("kir-npy-read-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let b = Buffer { elem: ScalarType::F32, bytes: [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect() };
        let ok = d.join("ok.npy");
        write(&ok, &b).unwrap();
        assert_eq!(read(&ok).unwrap(), b);
        // A header that promises 2^40 elements: refused from the header alone.
        let mut big = encode(&b);
        let text = String::from_utf8_lossy(&big[10..]).replace("(2,)", "(1099511627776,)");
        big.truncate(10);
        big.extend_from_slice(text.as_bytes());
        std::fs::write(d.join("big.npy"), &big).unwrap();
        let e = read(&d.join("big.npy")).unwrap_err();
        assert!(e.contains("array too large"), "{e}");
        // Data shorter or longer than the header says.
        let mut short = encode(&b);
        short.pop();
        std::fs::write(d.join("short.npy"), &short).unwrap();
        assert!(read(&d.join("short.npy")).unwrap_err().ends_with("data has 7 bytes, the header says 8"));
        // Not a regular file, not .npy at all, tiny files.
        if Path::new("/dev/zero").exists() {
            assert!(read(Path::new("/dev/zero")).unwrap_err().ends_with("not a regular file"));
        }
        std::fs::write(d.join("tiny.npy"), b"\x93NUM").unwrap();
        assert!(read(&d.join("tiny.npy")).unwrap_err().contains("bad magic"));
        let mut v1_empty_header = MAGIC.to_vec();
        v1_empty_header.extend_from_slice(&[1, 0, 0, 0, 7, 7]);
        std::fs::write(d.join("h0.npy"), &v1_empty_header).unwrap();
        assert!(read(&d.join("h0.npy")).unwrap_err().contains("header has no 'descr'"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    use super::*;

    #[test]
    fn round_trip() {
        for b in [
            Buffer::from_f32(&[1.0, -2.5, f32::NAN]),
            Buffer::from_f64(&[0.0, -0.0]),
            Buffer::from_i32(&[-1, 7]),
            Buffer::from_u16_bits(ScalarType::F16, &[0x3c00, 0x8000]),
            Buffer::from_bits(ScalarType::U8, [1, 2, 255]),
            Buffer::zeros(ScalarType::S64, 0),
        ] {
            let enc = encode(&b);
            assert_eq!(enc.len() % 64, b.bytes.len() % 64);
            assert_eq!(parse(&enc).unwrap(), b);
        }
        let bf = Buffer::from_u16_bits(ScalarType::BF16, &[0x3f80]);
        let back = parse(&encode(&bf)).unwrap();
        assert_eq!((back.elem, back.bytes), (ScalarType::U16, bf.bytes));
    }

    #[test]
    fn reads_numpy_headers() {
        // As written by numpy.save(np.arange(6, dtype='<i2').reshape(2, 3)).
        let mut f = b"\x93NUMPY\x01\x00v\x00{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }".to_vec();
        f.resize(10 + 0x76 - 1, b' ');
        f.push(b'\n');
        for i in 0..6u16 {
            f.extend_from_slice(&i.to_le_bytes());
        }
        let b = parse(&f).unwrap();
        assert_eq!(b.elem, ScalarType::S16);
        assert_eq!(b.to_u32(), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn rejects_bad_files() {
        assert!(parse(b"hello").unwrap_err().contains("magic"));
        let mut f = encode(&Buffer::from_f32(&[1.0]));
        f.pop();
        assert!(parse(&f).unwrap_err().contains("data has 3 bytes"));
        let big =
            encode(&Buffer::from_f32(&[1.0])).iter().map(|&c| if c == b'4' { b'9' } else { c }).collect::<Vec<u8>>();
        assert!(parse(&big).unwrap_err().contains("unsupported dtype"));
        let mut fortran = encode(&Buffer::from_f32(&[1.0]));
        let at = fortran.windows(5).position(|w| w == b"False").unwrap();
        fortran[at..at + 5].copy_from_slice(b"True ");
        assert!(parse(&fortran).unwrap_err().contains("Fortran-order"));
    }

    /// `NAME.npy.xz`: read through the decompressor with the same checks; a stream that would
    /// decompress past the limit stops there; a corrupt stream is an error naming the file.
    #[test]
    fn reads_xz_compressed_npy_with_bounded_memory() {
        let d = std::env::temp_dir().join(format!("kir_npy_xz_{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let b = Buffer::from_bits(ScalarType::U64, [0x7ff8000000000000, 0xfff8000000000000, 1]);
        let mut xz = Vec::new();
        lzma_rs::xz_compress(&mut std::io::Cursor::new(encode(&b)), &mut xz).unwrap();
        std::fs::write(d.join("a.npy.xz"), &xz).unwrap();
        assert_eq!(read(&d.join("a.npy.xz")).unwrap(), b);
        // A valid stream of a megabyte of zeros, read with a smaller limit.
        let mut zeros = Vec::new();
        lzma_rs::xz_compress(&mut std::io::Cursor::new(vec![0u8; 1 << 20]), &mut zeros).unwrap();
        let e = decompress_xz(std::io::Cursor::new(&zeros), 4096).unwrap_err();
        assert!(e.contains("decompresses to more than 4096 bytes"), "{e}");
        // Decompressed, but not a .npy.
        std::fs::write(d.join("z.npy.xz"), &zeros).unwrap();
        assert!(read(&d.join("z.npy.xz")).unwrap_err().contains("bad magic"));
        // Not xz at all.
        std::fs::write(d.join("bad.npy.xz"), encode(&b)).unwrap();
        let e = read(&d.join("bad.npy.xz")).unwrap_err();
        assert!(e.contains("bad.npy.xz: not a valid .xz file"), "{e}");
        // Truncated.
        std::fs::write(d.join("cut.npy.xz"), &xz[..xz.len() / 2]).unwrap();
        assert!(read(&d.join("cut.npy.xz")).unwrap_err().contains("not a valid .xz file"));
        assert!(write(&d.join("w.npy.xz"), &b).unwrap_err().contains("not compressed ones"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
