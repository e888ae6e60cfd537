//! Minimal NumPy `.npy` reading and writing for buffers.
//!
//! Guarantees:
//! - [`read`] accepts format versions 1, 2 and 3, C order, little-endian (or byte-sized) dtypes
//!   `<f2 <f4 <f8 |u1 |i1 <u2 <i2 <u4 <i4 <u8 <i8 |b1` (bool read as `u8`), any shape (flattened);
//!   anything else is an error string naming the file and the problem, never a panic. The data
//!   must be exactly `product(shape) * itemsize` bytes and at most [`crate::MAX_BUFFER_BYTES`].
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

/// Parses `.npy` bytes.
pub fn parse(bytes: &[u8]) -> Result<Buffer, String> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err("not a .npy file (bad magic)".into());
    }
    let major = bytes[6];
    let (hlen, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err("truncated header".into());
            }
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        v => return Err(format!("unsupported .npy version {v}")),
    };
    let header = bytes.get(start..start.saturating_add(hlen)).ok_or("truncated header")?;
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
    let need =
        count.checked_mul(elem.bytes() as u64).filter(|n| *n <= crate::MAX_BUFFER_BYTES).ok_or("array too large")?;
    let data = &bytes[start + hlen..];
    if data.len() as u64 != need {
        return Err(format!("data has {} bytes, the header says {need}", data.len()));
    }
    Ok(Buffer { elem, bytes: data.to_vec() })
}

/// Reads a `.npy` file.
pub fn read(path: &Path) -> Result<Buffer, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
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
    std::fs::write(path, encode(b)).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
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
}
