//! Binding `NAME=VALUE` arguments to the parameters of a PTX entry, for `kir run FILE.ptx`: the
//! argument syntax of [`kir_interp::args`] (literals, `@file.npy`, `rand:`/`zeros:`/`ones:`/
//! `range:TYPE:LEN`), bound by the PTX parameter names.
//!
//! Guarantees:
//! - Every parameter is given exactly once, by its PTX name (a leading `%` is ignored); an unknown
//!   name (the message lists the entry's parameters and their types), a parameter given twice or
//!   one missing is an error. Nothing panics.
//! - A buffer form gives the parameter a buffer of its own whose element type is the form's
//!   (`rand:f32:..`, the `.npy` dtype); only a 64-bit parameter (`.u64`, `.b64`, `.s64`) can take a
//!   buffer's address.
//! - A literal is parsed at the type of the parameter with the `.kir` literal rules: `.u32` as
//!   `u32`, `.s32` as `s32`, `.f32` as `f32`, ... Untyped `.bN` parameters take an integer of N bits
//!   or, failing that, a float of N bits (`.b16` f16, `.b32` f32, `.b64` f64; a bf16 is given by its
//!   bits, e.g. `0x3f80`). `true`/`false` are 1/0 for 8-bit parameters (kir passes `pred` as `.u8`).
//! - Parameters passed by value as arrays (`.param .b8 s[16]`) are refused with a clear message.

use kir_interp::args::{materialize, number_constant, ArgSpec, Value};
use kir_interp::{Arg, Buffer};
use kir_ir::types::{AddrSpace, Constant, ScalarType, Type};
use kir_ptx_emu::{Entry, Param, ScalarType as PtxType};
use std::path::Path;

/// Arguments bound to a PTX entry.
#[derive(Clone, Debug)]
pub struct PtxBound {
    /// One per parameter, in order.
    pub args: Vec<Arg>,
    pub buffers: Vec<Buffer>,
    /// For each parameter, the buffer it points to.
    pub param_buffer: Vec<Option<usize>>,
}

/// The kir scalar type a PTX parameter's literal is parsed at (`.bN` as the unsigned type).
pub fn literal_type(t: PtxType) -> ScalarType {
    match t {
        PtxType::B8 | PtxType::U8 => ScalarType::U8,
        PtxType::S8 => ScalarType::S8,
        PtxType::B16 | PtxType::U16 => ScalarType::U16,
        PtxType::S16 => ScalarType::S16,
        PtxType::B32 | PtxType::U32 => ScalarType::U32,
        PtxType::S32 => ScalarType::S32,
        PtxType::B64 | PtxType::U64 => ScalarType::U64,
        PtxType::S64 => ScalarType::S64,
        PtxType::F16 => ScalarType::F16,
        PtxType::BF16 => ScalarType::BF16,
        PtxType::F32 => ScalarType::F32,
        PtxType::F64 => ScalarType::F64,
        PtxType::Pred => ScalarType::Pred,
    }
}

/// The float type of an untyped `.bN` parameter, for float literals.
fn bits_float(t: PtxType) -> Option<ScalarType> {
    match t {
        PtxType::B16 => Some(ScalarType::F16),
        PtxType::B32 => Some(ScalarType::F32),
        PtxType::B64 => Some(ScalarType::F64),
        _ => None,
    }
}

/// `.u32`-style spelling of a parameter's type (with its array length).
pub fn describe(p: &Param) -> String {
    match p.array {
        Some(n) => format!("{}: .{}[{n}]", p.name, p.ty.name()),
        None => format!("{}: .{}", p.name, p.ty.name()),
    }
}

/// The scalar a literal `text` gives parameter `p`.
pub fn scalar_for(p: &Param, text: &str) -> Result<Constant, String> {
    let lower = text.to_ascii_lowercase();
    if p.size == 1 && matches!(lower.as_str(), "true" | "false") {
        let ty = if p.ty == PtxType::Pred { ScalarType::Pred } else { literal_type(p.ty) };
        return Ok(Constant::from_bits(ty, (lower == "true") as u64));
    }
    let ty = literal_type(p.ty);
    match number_constant(text, ty) {
        Ok(c) => Ok(c),
        Err(int_err) => match bits_float(p.ty) {
            Some(f) => number_constant(text, f)
                .map_err(|_| format!("{int_err}; a .{} parameter takes an integer or an {f} literal", p.ty.name())),
            None => Err(int_err),
        },
    }
}

/// Binds `named` arguments to `entry`'s parameters (see the module docs). Relative `.npy` paths
/// are taken from `base_dir` when given.
pub fn bind(entry: &Entry, named: &[(String, ArgSpec)], base_dir: Option<&Path>) -> Result<PtxBound, String> {
    kir_interp::args::check_buffer_budget(named, base_dir)?;
    let list = || entry.params.iter().map(describe).collect::<Vec<_>>().join(", ");
    let mut given: Vec<Option<&ArgSpec>> = vec![None; entry.params.len()];
    for (name, spec) in named {
        let n = name.trim_start_matches('%');
        let Some(i) = entry.params.iter().position(|p| p.name == n) else {
            let have = if entry.params.is_empty() { "none".to_string() } else { list() };
            return Err(format!("entry `{}` has no parameter `{n}` (parameters: {have})", entry.name));
        };
        if given[i].is_some() {
            return Err(format!("parameter `{n}` is given twice"));
        }
        given[i] = Some(spec);
    }
    let mut out = PtxBound { args: vec![], buffers: vec![], param_buffer: vec![] };
    for (p, spec) in entry.params.iter().zip(given) {
        let Some(spec) = spec else {
            return Err(format!("missing argument for parameter `{}`", describe(p)));
        };
        let at = |e: String| format!("argument `{}`: {e}", p.name);
        if p.array.is_some() || p.size > 8 {
            return Err(at(format!(
                "`{}` is passed by value as {} bytes; kir run cannot pass array parameters",
                describe(p),
                p.size
            )));
        }
        match spec {
            ArgSpec::Number(text) => {
                out.args.push(Arg::Scalar(scalar_for(p, text).map_err(at)?));
                out.param_buffer.push(None);
            }
            _ => {
                if p.size != 8 || matches!(p.ty, PtxType::F64) {
                    return Err(at(format!(
                        "a buffer's address needs a 64-bit integer parameter (.u64, .b64, .s64), but `{}` is given one",
                        describe(p)
                    )));
                }
                // Any element type: the form decides it (the pointee type below is a placeholder).
                let elem = match spec {
                    ArgSpec::Rand { elem, .. }
                    | ArgSpec::Zeros { elem, .. }
                    | ArgSpec::Ones { elem, .. }
                    | ArgSpec::Range { elem, .. } => *elem,
                    _ => ScalarType::U8,
                };
                let buf = match spec {
                    ArgSpec::Npy(path) => {
                        let full = match base_dir {
                            Some(d) if path.is_relative() => d.join(path),
                            _ => path.clone(),
                        };
                        kir_interp::npy::read(&full).map_err(at)?
                    }
                    _ => match materialize(spec, Type::Ptr(AddrSpace::Global, elem), base_dir).map_err(at)? {
                        Value::Buffer(b) => b,
                        Value::Scalar(_) => return Err(at("internal: a buffer form made a scalar".into())),
                    },
                };
                out.args.push(Arg::Buffer(out.buffers.len()));
                out.param_buffer.push(Some(out.buffers.len()));
                out.buffers.push(buf);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kir_interp::args::parse_arg_spec;

    fn entry() -> Entry {
        let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry e(\n.param .u64 e_p0,\n.param .u32 e_n,\n.param .b16 e_h,\n.param .u8 e_flag,\n.param .s32 e_s\n)\n{\nret;\n}\n";
        kir_ptx_emu::Module::parse(ptx).unwrap_or_else(|e| panic!("{e}")).entries()[0].clone()
    }

    fn named(v: &[(&str, &str)]) -> Vec<(String, ArgSpec)> {
        v.iter().map(|(n, s)| (n.to_string(), parse_arg_spec(s).unwrap())).collect()
    }

    #[test]
    fn binds_by_ptx_name_with_literals_at_the_param_type() {
        let e = entry();
        let b = bind(
            &e,
            &named(&[("e_n", "1000"), ("%e_p0", "rand:f16:8:1"), ("e_h", "1.5"), ("e_flag", "true"), ("e_s", "-3")]),
            None,
        )
        .unwrap();
        assert_eq!(b.param_buffer, vec![Some(0), None, None, None, None]);
        assert_eq!(b.buffers[0].elem, ScalarType::F16);
        assert_eq!(b.buffers[0].len(), 8);
        assert_eq!(b.args[1], Arg::Scalar(Constant::u32(1000)));
        assert_eq!(b.args[2], Arg::Scalar(Constant::from_bits(ScalarType::F16, 0x3e00)));
        assert_eq!(b.args[3], Arg::Scalar(Constant::from_bits(ScalarType::U8, 1)));
        assert_eq!(b.args[4], Arg::Scalar(Constant::s32(-3)));
        let b = bind(
            &e,
            &named(&[("e_n", "7"), ("e_p0", "zeros:u32:1"), ("e_h", "0x3f80"), ("e_flag", "0"), ("e_s", "0")]),
            None,
        )
        .unwrap();
        assert_eq!(b.args[2], Arg::Scalar(Constant::from_bits(ScalarType::U16, 0x3f80)));
    }

    #[test]
    fn errors_are_clear() {
        let e = entry();
        let all = [("e_n", "1"), ("e_p0", "zeros:u32:1"), ("e_h", "0"), ("e_flag", "0"), ("e_s", "0")];
        let err = bind(&e, &named(&[("bogus", "1")]), None).unwrap_err();
        assert_eq!(
            err,
            "entry `e` has no parameter `bogus` (parameters: e_p0: .u64, e_n: .u32, e_h: .b16, e_flag: .u8, e_s: .s32)"
        );
        assert_eq!(bind(&e, &named(&all[..4]), None).unwrap_err(), "missing argument for parameter `e_s: .s32`");
        let err = bind(&e, &named(&[("e_n", "1"), ("e_n", "2")]), None).unwrap_err();
        assert_eq!(err, "parameter `e_n` is given twice");
        let mut bad = all;
        bad[0] = ("e_n", "zeros:f32:4");
        let err = bind(&e, &named(&bad), None).unwrap_err();
        assert!(err.starts_with("argument `e_n`: a buffer's address needs a 64-bit integer parameter"), "{err}");
        bad = all;
        bad[0] = ("e_n", "1.5");
        assert!(bind(&e, &named(&bad), None).unwrap_err().starts_with("argument `e_n`: "));
        bad = all;
        bad[2] = ("e_h", "1.5.2");
        let err = bind(&e, &named(&bad), None).unwrap_err();
        assert!(err.contains("a .b16 parameter takes an integer or an f16 literal"), "{err}");
        bad = all;
        bad[4] = ("e_s", "3000000000");
        assert!(bind(&e, &named(&bad), None).is_err());
    }
}
