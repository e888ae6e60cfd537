//! Judging another engine's buffers by the interpreter's per-element error enclosures
//! (`kir_interp::enclose`), the comparison of a run that gives no `tol=` and contains approximate
//! ops.
//!
//! Guarantees:
//! - An element passes when its bits equal the interpreter's, or when the interpreter's enclosure
//!   of it is a range and the value lies in it numerically (`-0 == +0`; a NaN never lies in a
//!   range). Nothing else passes: an element whose enclosure is exact must match bit for bit, and
//!   one whose enclosure is unknown — or any differing element of a launch whose enclosures are
//!   unusable (an uncertain branch, address, atomic, vote or shuffle lane) — fails with the reason
//!   and the advice to give an explicit `tol=`.
//! - Messages show, for the reported element, the enclosure, its width in ulp, the approximate op
//!   it started from and the exact op that amplified it (`file:line:col` and the instruction's
//!   text); a passing comparison's note shows the widest enclosure it used.

use crate::engine::{EngineError, Inputs};
use kir_interp::enclose::ulp_of;
use kir_interp::enclose::{Enc, Enclosures};
use kir_interp::{Buffer, LaunchConfig, Options};
use kir_ir::diag::SourceMap;
use kir_ir::eval::Fmt;
use kir_ir::verify::Verified;
use kir_ir::Span;

/// Runs kernel `name` of `module` in the interpreter with enclosures, on copies of `inputs`.
pub fn run_enclosed(
    module: &Verified,
    name: &str,
    cfg: &LaunchConfig,
    inputs: &Inputs<'_>,
    opts: &Options,
) -> Result<(Vec<Buffer>, Enclosures), EngineError> {
    let k = module.verified_kernel(name).ok_or_else(|| EngineError::Target(format!("no kernel `@{name}`")))?;
    let mut buffers = inputs.buffers.to_vec();
    let (_, enc) = kir_interp::launch_enclosed(k, cfg, inputs.args, &mut buffers, opts)?;
    Ok((buffers, enc))
}

/// `file:line:col` and the source text of the instruction at `s`.
fn site(sources: &SourceMap, s: Span) -> String {
    let text = sources
        .locate(s)
        .and_then(|(i, r)| sources.files.get(i).and_then(|f| f.text.get(r)))
        .map(|t| t.split('\n').next().unwrap_or("").trim().to_string())
        .unwrap_or_default();
    let pos = sources.position(s).unwrap_or_else(|| "?".into());
    if text.is_empty() {
        pos
    } else {
        format!("`{text}` at {pos}")
    }
}

/// The enclosure of element `index` of buffer `b` (entries in byte order).
fn element_enc(entries: &[(usize, u32, Enc)], index: usize, size: usize) -> Enc {
    let byte = index * size;
    match entries.binary_search_by_key(&byte, |e| e.0) {
        Ok(i) if entries[i].1 as usize == size => entries[i].2,
        Ok(_) => Enc::Unknown { at: Span::DUMMY, why: kir_interp::enclose::Why::Bits },
        Err(_) => Enc::Exact,
    }
}

/// Width of a range in ulp of its larger end.
fn width_ulps(f: Fmt, lo: u64, hi: u64) -> f64 {
    let (l, h) = (f.to_f64(lo), f.to_f64(hi));
    let u = ulp_of(f, l.abs().max(h.abs()));
    if u > 0.0 {
        (h - l) / u
    } else {
        0.0
    }
}

/// How a range is described: `[lo, hi] (±N ulp: from SITE, amplified by SITE)`.
fn describe_range(f: Fmt, lo: u64, hi: u64, origin: Span, amp: Span, sources: &SourceMap) -> String {
    let show = |b: u64| {
        let x = f.to_f64(b);
        if f == Fmt::F64 {
            format!("{x:e}")
        } else {
            format!("{:e}", x as f32)
        }
    };
    let mut s = format!(
        "[{}, {}] (±{:.0} ulp: from {}",
        show(lo),
        show(hi),
        (width_ulps(f, lo, hi) / 2.0).ceil(),
        site(sources, origin)
    );
    if !amp.is_dummy() {
        s.push_str(&format!(", amplified by {}", site(sources, amp)));
    }
    s.push(')');
    s
}

/// An element of another engine that the enclosures do not accept: `decidable` when it lies
/// outside a range or differs where the enclosure is exact (a real difference), not when its
/// enclosure is unknown or the launch's enclosures are unusable (nothing can be said without an
/// explicit tolerance).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disagreement {
    pub message: String,
    pub decidable: bool,
}

impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What [`judge_buffer`] found in a buffer that matches: how many elements had a non-exact
/// enclosure, and the widest enclosure an element needed (width in ulp, description).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BufferMatch {
    pub inexact: usize,
    pub widest: Option<(f64, String)>,
}

impl BufferMatch {
    /// `bit-identical ...` or `within per-element enclosures (...)`.
    pub fn describe(&self) -> String {
        match &self.widest {
            None if self.inexact == 0 => "bit-identical; no approximate op's error reaches it".into(),
            None => format!("bit-identical ({} elements had enclosures)", self.inexact),
            Some((_, w)) => {
                format!("within per-element enclosures ({} elements inexact; widest used: {w})", self.inexact)
            }
        }
    }
}

/// Judges buffer `b` of another engine by the interpreter's `a` (named `name`) and its
/// non-exact element enclosures `entries` (byte order), in a launch whose enclosures are unusable
/// for `unusable`, if so. The first element that fails, as a message.
pub fn judge_buffer(
    name: &str,
    a: &Buffer,
    b: &Buffer,
    entries: &[(usize, u32, Enc)],
    unusable: Option<&kir_interp::enclose::Unusable>,
    sources: &SourceMap,
) -> Result<BufferMatch, Disagreement> {
    let real = |message: String| Disagreement { message, decidable: true };
    let unknown = |message: String| Disagreement { message, decidable: false };
    if a.elem != b.elem || a.bytes.len() != b.bytes.len() {
        return Err(real(format!("buffer `{name}` came back with another type or length")));
    }
    let size = a.elem.bytes() as usize;
    let fmt = Fmt::of(a.elem);
    let mut found = BufferMatch::default();
    // The widest range an element needed: (width, element, lo, hi, origin, amplifier).
    let mut widest: Option<(f64, usize, u64, u64, Span, Span)> = None;
    for j in 0..a.len() {
        let (x, y) = (a.get_bits(j), b.get_bits(j));
        let e = element_enc(entries, j, size);
        if !e.is_exact() {
            found.inexact += 1;
        }
        if x == y {
            continue;
        }
        let head = || {
            let render = |bits: u64| crate::compare::render_element(a.elem, bits);
            format!("buffer `{name}` element {j}: the interpreter computed {}, this engine {}", render(x), render(y))
        };
        if let Some(u) = unusable {
            return Err(unknown(format!(
                "{}, and no enclosure of this launch holds for sure: {} at {} uses {} ({}); give an explicit tolerance (`tol=`, `--tol`)",
                head(),
                u.what,
                sources.position(u.at).unwrap_or_else(|| "?".into()),
                u.cause.1.describe(),
                site(sources, u.cause.0)
            )));
        }
        match (e, fmt) {
            (Enc::Range { lo, hi, origin, amp }, Some(f)) => {
                let (l, h, v) = (f.to_f64(lo), f.to_f64(hi), f.to_f64(y));
                if !(l <= v && v <= h) {
                    let range = describe_range(f, lo, hi, origin, amp, sources);
                    return Err(real(format!("{}, outside its enclosure {range}", head())));
                }
                let w = width_ulps(f, lo, hi);
                if widest.is_none_or(|(ww, ..)| w > ww) {
                    widest = Some((w, j, lo, hi, origin, amp));
                }
            }
            (Enc::Unknown { at, why }, _) => {
                let at = if at.is_dummy() { "?".to_string() } else { site(sources, at) };
                return Err(unknown(format!(
                    "{}, and its enclosure is unknown: {} ({at}); give an explicit tolerance (`tol=`, `--tol`)",
                    head(),
                    why.describe()
                )));
            }
            _ => {
                return Err(real(format!("{}; its enclosure is exact (no approximate op's error reaches it)", head())))
            }
        }
    }
    if let (Some((w, j, lo, hi, origin, amp)), Some(f)) = (widest, fmt) {
        found.widest = Some((w, format!("`{name}`[{j}] {}", describe_range(f, lo, hi, origin, amp, sources))));
    }
    Ok(found)
}

/// Judges `other` (buffers of another engine) by the interpreter's `reference` buffers and their
/// enclosures `enc`, skipping buffers not marked in `compared`: `Ok` with a note on the widest
/// enclosure used, or the first failure.
pub fn judge(
    names: &[String],
    reference: &[Buffer],
    other: &[Buffer],
    enc: &Enclosures,
    compared: &[bool],
    sources: &SourceMap,
) -> Result<String, String> {
    if other.len() != reference.len() {
        return Err(format!("{} buffers came back, expected {}", other.len(), reference.len()));
    }
    let mut all = BufferMatch::default();
    for (i, (a, b)) in reference.iter().zip(other).enumerate() {
        if !compared.get(i).copied().unwrap_or(true) {
            continue;
        }
        let entries: &[(usize, u32, Enc)] = enc.buffers.get(i).map_or(&[], |v| v.as_slice());
        let m = judge_buffer(&names[i], a, b, entries, enc.unusable.as_ref(), sources).map_err(|d| d.message)?;
        all.inexact += m.inexact;
        if let Some((w, d)) = m.widest {
            if all.widest.as_ref().is_none_or(|(ww, _)| w > *ww) {
                all.widest = Some((w, d));
            }
        }
    }
    Ok(all.describe())
}
