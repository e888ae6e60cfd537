//! Argument values for launches, shared by `kir run`, `; run:` directives and `kir diff`.
//!
//! Syntax ([`parse_arg_spec`]): a number literal (`.kir` literal rules at the parameter's type:
//! `42`, `-1.5e3`, `0xff`, `0f3f800000`, `inf`, `nan`, `true`), `@PATH.npy`, `rand:TYPE:LEN[:SEED]`,
//! `zeros:TYPE:LEN`, `ones:TYPE:LEN`, `range:TYPE:LEN`.
//!
//! Guarantees:
//! - Parsing and materializing never panic; every problem is an error string naming the value.
//! - `rand` is splitmix64 exactly as docs/testing.md specifies: floats `2 * ((r >> 40) / 2^24) - 1`
//!   (uniform in [-1, 1) on a 2^-23 grid, rounded to the type to nearest even), integers the low
//!   bits of `r`. The same spec always gives the same buffer.
//! - `range` element i is i converted to the type (round to nearest even; integers wrap).
//! - A buffer's element type must equal the parameter's pointee type (an `.npy` of `<u2` is
//!   accepted for `bf16`, as raw bit patterns); buffers are limited to
//!   [`crate::MAX_BUFFER_BYTES`].

use crate::buffer::Buffer;
use crate::npy;
use crate::Arg;
use kir_ir::text::ast::AstOperand;
use kir_ir::types::{AddrSpace, Constant, ScalarType, Type};
use kir_ir::Kernel;
use std::path::{Path, PathBuf};

/// A parsed argument value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgSpec {
    /// A scalar literal, typed when bound to a parameter.
    Number(String),
    /// A `.npy` file.
    Npy(PathBuf),
    Rand {
        elem: ScalarType,
        len: u64,
        seed: u64,
    },
    Zeros {
        elem: ScalarType,
        len: u64,
    },
    Ones {
        elem: ScalarType,
        len: u64,
    },
    Range {
        elem: ScalarType,
        len: u64,
    },
}

/// A value ready to pass: a scalar or a buffer.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Scalar(Constant),
    Buffer(Buffer),
}

fn parse_u64(s: &str, what: &str, whole: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse::<u64>(),
    };
    r.map_err(|_| format!("`{whole}`: {what} `{s}` is not a non-negative integer"))
}

/// Parses an argument value.
pub fn parse_arg_spec(s: &str) -> Result<ArgSpec, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty argument value".into());
    }
    if let Some(p) = s.strip_prefix('@') {
        if p.is_empty() {
            return Err("`@` must be followed by the path of a .npy file".into());
        }
        return Ok(ArgSpec::Npy(PathBuf::from(p)));
    }
    let parts: Vec<&str> = s.split(':').collect();
    let kind = parts[0];
    if matches!(kind, "rand" | "zeros" | "ones" | "range") {
        let want = if kind == "rand" { "rand:TYPE:LEN[:SEED]" } else { "KIND:TYPE:LEN" };
        if parts.len() < 3 || parts.len() > if kind == "rand" { 4 } else { 3 } {
            return Err(format!("`{s}`: expected {}", want.replace("KIND", kind)));
        }
        let elem = ScalarType::from_name(parts[1]).ok_or_else(|| format!("`{s}`: unknown type `{}`", parts[1]))?;
        if elem == ScalarType::Pred {
            return Err(format!("`{s}`: buffers cannot hold `pred`"));
        }
        let len = parse_u64(parts[2], "length", s)?;
        let bytes = len.checked_mul(elem.bytes() as u64).filter(|b| *b <= crate::MAX_BUFFER_BYTES);
        if bytes.is_none() {
            return Err(format!("`{s}`: a buffer may hold at most {} bytes", crate::MAX_BUFFER_BYTES));
        }
        return Ok(match kind {
            "rand" => {
                let seed = match parts.get(3) {
                    Some(x) => parse_u64(x, "seed", s)?,
                    None => 0,
                };
                ArgSpec::Rand { elem, len, seed }
            }
            "zeros" => ArgSpec::Zeros { elem, len },
            "ones" => ArgSpec::Ones { elem, len },
            _ => ArgSpec::Range { elem, len },
        });
    }
    if s.contains(':') {
        return Err(format!(
            "`{s}`: unknown argument value (expected a number, @file.npy, rand:TYPE:LEN[:SEED], zeros:TYPE:LEN, ones:TYPE:LEN or range:TYPE:LEN)"
        ));
    }
    Ok(ArgSpec::Number(s.to_string()))
}

/// The `.kir` literal a number spells, at type `ty`.
pub fn number_constant(text: &str, ty: ScalarType) -> Result<Constant, String> {
    let lower = text.to_ascii_lowercase();
    let lit = match lower.as_str() {
        "true" => AstOperand::Bool(true),
        "false" => AstOperand::Bool(false),
        "inf" | "+inf" => AstOperand::Inf { negative: false },
        "-inf" => AstOperand::Inf { negative: true },
        "nan" => AstOperand::Nan,
        _ => {
            let body = text.trim_start_matches(['-', '+']);
            if (body.starts_with("0f") || body.starts_with("0d") || body.starts_with("0h")) && !text.starts_with('-') {
                AstOperand::HexFloat(text.into())
            } else if body.starts_with("0x") {
                AstOperand::Int(text.trim_start_matches('+').into())
            } else if body.contains(['.', 'e', 'E']) {
                AstOperand::Float(text.trim_start_matches('+').into())
            } else if !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()) {
                AstOperand::Int(text.trim_start_matches('+').into())
            } else {
                return Err(format!("`{text}` is not a number"));
            }
        }
    };
    let decimal = matches!(lit, AstOperand::Float(_) | AstOperand::Int(_));
    let c = kir_ir::text::literal::literal_constant(&lit, ty).map_err(|e| format!("`{text}`: {e}"))?;
    // A decimal that rounds to infinity is almost always a typo (and an integer that does not fit
    // is an error too); infinity is spelled `inf`.
    if decimal && c.as_f64().is_some_and(f64::is_infinite) {
        return Err(format!(
            "`{text}` is too large for {ty} (it would round to infinity; write `inf` if that is meant)"
        ));
    }
    Ok(c)
}

/// splitmix64 as docs/testing.md defines it: the next `r` and the new state.
pub use kir_ir::rng::splitmix64;

/// Bits of `v` rounded to the float type `ty` (to nearest even, once: f16 and bf16 through kir's
/// own `cvt.rn` from f64, since `half`'s `bf16::from_f64` rounds from a truncated f64 and can miss
/// the nearest bf16, e.g. for f32 `0xbf348002`).
fn float_bits(ty: ScalarType, v: f64) -> u64 {
    match ty {
        ScalarType::F16 | ScalarType::BF16 => {
            let cvt = kir_ir::Op::Cvt {
                to: ty,
                from: ScalarType::F64,
                rounding: Some(kir_ir::Rounding::Rn),
                sat: false,
                ftz: false,
            };
            match kir_ir::eval::eval_const(&cvt, &[kir_ir::Constant::f64(v)]) {
                Some(c) => c.bits,
                // Not reached: `cvt.rn` from f64 to a 16-bit float is defined for every input.
                None => half::f16::from_f64(v).to_bits() as u64,
            }
        }
        ScalarType::F32 => (v as f32).to_bits() as u64,
        _ => v.to_bits(),
    }
}

/// `v` as an element of type `ty` (floats rounded to nearest even, integers wrapped).
fn number_bits(ty: ScalarType, v: u64) -> u64 {
    if ty.is_float() {
        float_bits(ty, v as f64)
    } else {
        v & ty.mask()
    }
}

/// The buffer a generator spec describes (`None` for numbers and files).
pub fn generate(spec: &ArgSpec) -> Option<Buffer> {
    Some(match *spec {
        ArgSpec::Zeros { elem, len } => Buffer::zeros(elem, len as usize),
        ArgSpec::Ones { elem, len } => Buffer::from_bits(elem, (0..len).map(|_| number_bits(elem, 1))),
        ArgSpec::Range { elem, len } => Buffer::from_bits(elem, (0..len).map(|i| number_bits(elem, i))),
        ArgSpec::Rand { elem, len, seed } => {
            let mut state = seed;
            Buffer::from_bits(
                elem,
                (0..len).map(|_| {
                    let r = splitmix64(&mut state);
                    if elem.is_float() {
                        float_bits(elem, 2.0 * ((r >> 40) as f64 / (1u64 << 24) as f64) - 1.0)
                    } else {
                        r & elem.mask()
                    }
                }),
            )
        }
        ArgSpec::Number(_) | ArgSpec::Npy(_) => return None,
    })
}

/// [`generate`] without aborting when the system refuses the memory: an error naming the size.
pub fn try_generate(spec: &ArgSpec) -> Result<Option<Buffer>, String> {
    let rand = |elem: ScalarType, seed: u64| {
        let mut state = seed;
        move |_| {
            let r = splitmix64(&mut state);
            if elem.is_float() {
                float_bits(elem, 2.0 * ((r >> 40) as f64 / (1u64 << 24) as f64) - 1.0)
            } else {
                r & elem.mask()
            }
        }
    };
    Ok(Some(match *spec {
        ArgSpec::Zeros { elem, len } => Buffer::try_zeros(elem, len as usize)?,
        ArgSpec::Ones { elem, len } => {
            Buffer::try_from_bits(elem, len as usize, (0..len).map(|_| number_bits(elem, 1)))?
        }
        ArgSpec::Range { elem, len } => {
            Buffer::try_from_bits(elem, len as usize, (0..len).map(|i| number_bits(elem, i)))?
        }
        ArgSpec::Rand { elem, len, seed } => Buffer::try_from_bits(elem, len as usize, (0..len).map(rand(elem, seed)))?,
        ArgSpec::Number(_) | ArgSpec::Npy(_) => return Ok(None),
    }))
}

/// Makes the value of `spec` for a parameter of type `ty`. Relative `.npy` paths are taken from
/// `base_dir` when given.
pub fn materialize(spec: &ArgSpec, ty: Type, base_dir: Option<&Path>) -> Result<Value, String> {
    match (spec, ty) {
        (ArgSpec::Number(text), Type::Scalar(t)) => Ok(Value::Scalar(number_constant(text, t)?)),
        (ArgSpec::Number(text), Type::Ptr(..)) => {
            Err(format!("a {ty} needs a buffer (rand:, zeros:, @file.npy...), not the number `{text}`"))
        }
        (_, Type::Scalar(t)) => Err(format!("a {t} scalar needs a number, not a buffer")),
        // The verifier refuses vector parameters; a caller that binds one anyway gets an error.
        (_, Type::Vec(..)) => Err(format!("a {ty} cannot be passed to a launch (vectors are not parameters)")),
        (_, Type::Ptr(AddrSpace::Shared, _)) => Err(format!("a {ty} cannot be passed to a launch")),
        (ArgSpec::Npy(path), Type::Ptr(_, elem)) => {
            let full = match base_dir {
                Some(d) if path.is_relative() => d.join(path),
                _ => path.clone(),
            };
            let mut b = npy::read(&full)?;
            if b.elem == ScalarType::U16 && elem == ScalarType::BF16 {
                b.elem = ScalarType::BF16;
            }
            if b.elem != elem {
                return Err(format!("{} holds {} elements, but the parameter is a {ty}", full.display(), b.elem));
            }
            Ok(Value::Buffer(b))
        }
        (_, Type::Ptr(_, elem)) => {
            let b = try_generate(spec)?.ok_or_else(|| "internal: not a generator".to_string())?;
            if b.elem != elem {
                return Err(format!("the buffer holds {} elements, but the parameter is a {ty}", b.elem));
            }
            Ok(Value::Buffer(b))
        }
    }
}

/// Bytes the buffer of `spec` will take (a `.npy` file: its size, an upper bound); 0 for numbers.
pub fn spec_bytes(spec: &ArgSpec, base_dir: Option<&Path>) -> u64 {
    match spec {
        ArgSpec::Number(_) => 0,
        ArgSpec::Npy(path) => {
            let full = match base_dir {
                Some(d) if path.is_relative() => d.join(path),
                _ => path.clone(),
            };
            std::fs::metadata(full).map_or(0, |m| m.len())
        }
        ArgSpec::Rand { elem, len, .. }
        | ArgSpec::Zeros { elem, len }
        | ArgSpec::Ones { elem, len }
        | ArgSpec::Range { elem, len } => len.saturating_mul(elem.bytes() as u64),
    }
}

/// Checks, before any buffer is made, that the buffers of `named` fit the run's memory budget
/// together ([`crate::max_memory`]).
pub fn check_buffer_budget(named: &[(String, ArgSpec)], base_dir: Option<&Path>) -> Result<(), String> {
    let total = named.iter().fold(0u64, |t, (_, s)| t.saturating_add(spec_bytes(s, base_dir)));
    crate::check_memory(total, "the arguments' buffers")
}

/// Arguments bound to a kernel by parameter name.
#[derive(Clone, Debug)]
pub struct Bound {
    pub args: Vec<Arg>,
    pub buffers: Vec<Buffer>,
    /// For each parameter, the buffer it points to.
    pub param_buffer: Vec<Option<usize>>,
}

/// Binds `NAME=VALUE` arguments to `kernel`'s parameters: each parameter exactly once, by name
/// (without `%`), each pointer parameter its own buffer.
pub fn bind(kernel: &Kernel, named: &[(String, ArgSpec)], base_dir: Option<&Path>) -> Result<Bound, String> {
    let mut given: Vec<Option<&ArgSpec>> = vec![None; kernel.params.len()];
    for (name, spec) in named {
        let n = name.trim_start_matches('%');
        let Some((i, _)) = kernel.param_by_name(n) else {
            let names: Vec<String> =
                kernel.params.iter().map(|p| format!("{}: {}", kernel.value(*p).name, kernel.value_type(*p))).collect();
            return Err(format!("kernel @{} has no parameter `{n}` (parameters: {})", kernel.name, names.join(", ")));
        };
        if given[i].is_some() {
            return Err(format!("parameter `{n}` is given twice"));
        }
        given[i] = Some(spec);
    }
    check_buffer_budget(named, base_dir)?;
    let mut out = Bound { args: vec![], buffers: vec![], param_buffer: vec![] };
    for (i, p) in kernel.params.iter().enumerate() {
        let v = kernel.value(*p);
        let Some(spec) = given[i] else {
            return Err(format!("missing argument for parameter `{}: {}`", v.name, v.ty));
        };
        match materialize(spec, v.ty, base_dir).map_err(|e| format!("argument `{}`: {e}", v.name))? {
            Value::Scalar(c) => {
                out.args.push(Arg::Scalar(c));
                out.param_buffer.push(None);
            }
            Value::Buffer(b) => {
                out.args.push(Arg::Buffer(out.buffers.len()));
                out.param_buffer.push(Some(out.buffers.len()));
                out.buffers.push(b);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn half_floats_round_to_nearest_once() {
        // f32 0xbf348002 (= -0.70507824...) lies just above the bf16 midpoint 0xbf348000: the
        // nearest bf16 is 0xbf35 (rounding from a truncated f64 gave 0xbf34).
        let v = f32::from_bits(0xbf34_8002) as f64;
        assert_eq!(super::float_bits(ScalarType::BF16, v), 0xbf35);
        // An exact tie rounds to even.
        assert_eq!(super::float_bits(ScalarType::BF16, f32::from_bits(0x3f80_8000) as f64), 0x3f80);
        assert_eq!(super::float_bits(ScalarType::BF16, f32::from_bits(0x3f81_8000) as f64), 0x3f82);
        // f16: 1 + 2^-11 + 2^-40 is above the tie: rounds up; the tie itself to even.
        assert_eq!(super::float_bits(ScalarType::F16, 1.0 + 2f64.powi(-11) + 2f64.powi(-40)), 0x3c01);
        assert_eq!(super::float_bits(ScalarType::F16, 1.0 + 2f64.powi(-11)), 0x3c00);
    }

    #[test]
    fn decimals_that_overflow_to_infinity_are_errors() {
        let e = number_constant("1e40", ScalarType::F32).unwrap_err();
        assert_eq!(e, "`1e40` is too large for f32 (it would round to infinity; write `inf` if that is meant)");
        assert!(number_constant("70000.0", ScalarType::F16).unwrap_err().contains("too large for f16"));
        assert!(number_constant("70000", ScalarType::F16).is_err(), "an integer must be exact");
        assert!(number_constant("-1e309", ScalarType::F64).is_err());
        assert!(number_constant("inf", ScalarType::F32).unwrap().as_f64().unwrap().is_infinite());
        assert_eq!(number_constant("3.4028235e38", ScalarType::F32).unwrap().as_f64(), Some(f32::MAX as f64));
        assert_eq!(number_constant("65504", ScalarType::F16).unwrap().as_f64(), Some(65504.0));
    }

    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!(parse_arg_spec("1.5").unwrap(), ArgSpec::Number("1.5".into()));
        assert_eq!(parse_arg_spec("@a/b.npy").unwrap(), ArgSpec::Npy("a/b.npy".into()));
        assert_eq!(parse_arg_spec("rand:f32:10").unwrap(), ArgSpec::Rand { elem: ScalarType::F32, len: 10, seed: 0 });
        assert_eq!(parse_arg_spec("rand:f16:10:7").unwrap(), ArgSpec::Rand { elem: ScalarType::F16, len: 10, seed: 7 });
        assert_eq!(parse_arg_spec("zeros:u32:4").unwrap(), ArgSpec::Zeros { elem: ScalarType::U32, len: 4 });
        assert_eq!(parse_arg_spec("range:s8:4").unwrap(), ArgSpec::Range { elem: ScalarType::S8, len: 4 });
        assert!(parse_arg_spec("rand:q32:4").unwrap_err().contains("unknown type"));
        assert!(parse_arg_spec("zeros:f32").unwrap_err().contains("zeros:TYPE:LEN"));
        assert!(parse_arg_spec("zeros:f32:-1").unwrap_err().contains("not a non-negative integer"));
        assert!(parse_arg_spec("zeros:f32:99999999999999").unwrap_err().contains("at most"));
        assert!(parse_arg_spec("foo:bar").unwrap_err().contains("unknown argument value"));
    }

    #[test]
    fn numbers_follow_literal_rules() {
        assert_eq!(number_constant("-1", ScalarType::S32).unwrap(), Constant::s32(-1));
        assert_eq!(number_constant("0xffffffff", ScalarType::S32).unwrap(), Constant::s32(-1));
        assert_eq!(number_constant("1.5", ScalarType::F32).unwrap(), Constant::f32(1.5));
        assert_eq!(number_constant("1e-6", ScalarType::F64).unwrap(), Constant::f64(1e-6));
        assert_eq!(number_constant("2", ScalarType::F32).unwrap(), Constant::f32(2.0));
        assert_eq!(number_constant("-inf", ScalarType::F32).unwrap(), Constant::f32(f32::NEG_INFINITY));
        assert_eq!(number_constant("0f3f800000", ScalarType::F32).unwrap(), Constant::f32(1.0));
        assert!(number_constant("300", ScalarType::U8).is_err());
        assert!(number_constant("1.5", ScalarType::U32).is_err());
        assert!(number_constant("abc", ScalarType::U32).is_err());
    }

    #[test]
    fn generators() {
        // splitmix64 with seed 0: first output is 0xe220a8397b1dcdaf (the reference sequence).
        let mut s = 0;
        assert_eq!(splitmix64(&mut s), 0xe220_a839_7b1d_cdaf);
        let b = generate(&ArgSpec::Rand { elem: ScalarType::F32, len: 1000, seed: 3 }).unwrap();
        let v = b.to_f32();
        assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
        assert_eq!(b, generate(&ArgSpec::Rand { elem: ScalarType::F32, len: 1000, seed: 3 }).unwrap());
        let first = generate(&ArgSpec::Rand { elem: ScalarType::F32, len: 1, seed: 0 }).unwrap().to_f32()[0];
        // r >> 40 = 0xe220a8 = 14819496; 2 * 14819496 / 2^24 - 1 = 12861776 / 2^24 = 0.76662158966064453125 (exact in f32).
        assert_eq!(first, 0.766_621_589_660_644_531_25);
        let r = generate(&ArgSpec::Range { elem: ScalarType::F16, len: 3 }).unwrap();
        assert_eq!(r.to_f32(), vec![0.0, 1.0, 2.0]);
        let o = generate(&ArgSpec::Ones { elem: ScalarType::BF16, len: 2 }).unwrap();
        assert_eq!(o.bytes, vec![0x80, 0x3f, 0x80, 0x3f]);
        let u = generate(&ArgSpec::Range { elem: ScalarType::U8, len: 300 }).unwrap();
        assert_eq!(u.get_bits(257), 1);
    }

    /// `try_generate` (what `kir run` uses, fallible) makes exactly what `generate` makes.
    #[test]
    fn try_generate_agrees_with_generate() {
        for elem in [ScalarType::F32, ScalarType::F16, ScalarType::BF16, ScalarType::U8, ScalarType::S64] {
            for len in [0, 1, 7, 300] {
                for spec in [
                    ArgSpec::Zeros { elem, len },
                    ArgSpec::Ones { elem, len },
                    ArgSpec::Range { elem, len },
                    ArgSpec::Rand { elem, len, seed: 9 },
                ] {
                    assert_eq!(try_generate(&spec).unwrap(), generate(&spec), "{spec:?}");
                }
            }
        }
        assert_eq!(try_generate(&ArgSpec::Number("1".into())).unwrap(), None);
        assert!(crate::buffer::refused(3 << 30).contains("3221225472 bytes (3.0 GiB)"));
    }
}
