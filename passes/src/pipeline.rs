//! Pipeline strings: `fold,dce,simplify-cfg`, with options in braces (`fold{approx}`,
//! `name{key=value other=1}`).
//!
//! Guarantees: [`parse_pipeline`] either returns a pipeline whose every step is a registered pass
//! built with its options, or an error message naming the offending pass or option (unknown
//! pass, unknown option, unbalanced braces, empty step). It never panics.

use crate::pass::{PassKind, PassOptions};
use crate::registry::{lookup, registry};

/// The pipeline `kir opt` runs when `--passes` is absent: `inline` first, so that the kernel
/// passes see (and optimize across) the code of the functions each kernel calls; `licm` after
/// `simplify-cfg` (whose merged blocks give loops their `jmp` preheaders) and before `dce`.
pub const DEFAULT_PIPELINE: &str =
    "inline,fold,simplify-cfg,licm,unroll,fold,simplify-cfg,ivsr,offsets,cse,licm,dce,layout";

/// One step of a pipeline.
pub struct Step {
    /// The step as written, normalized (`fold{approx}`).
    pub spec: String,
    /// The pass, of either kind.
    pub pass: PassKind,
}

impl Step {
    /// The pass's registered name.
    pub fn name(&self) -> &'static str {
        self.pass.name()
    }
}

/// A sequence of passes.
#[derive(Default)]
pub struct Pipeline {
    pub steps: Vec<Step>,
}

impl Pipeline {
    /// The pipeline as a string that parses back to it.
    pub fn spec(&self) -> String {
        self.steps.iter().map(|s| s.spec.as_str()).collect::<Vec<_>>().join(",")
    }
}

/// Splits on commas that are not inside braces.
fn split_top(s: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, ch) in s.char_indices() {
        match ch {
            '{' => {
                depth += 1;
                if depth > 1 {
                    return Err(format!("nested `{{` in pipeline `{s}`"));
                }
            }
            '}' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unbalanced `}}` in pipeline `{s}`"));
                }
            }
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unclosed `{{` in pipeline `{s}`"));
    }
    out.push(&s[start..]);
    Ok(out)
}

/// Parses the options between braces: items separated by spaces or commas, each `key` or `key=value`.
fn parse_options(name: &str, body: &str) -> Result<PassOptions, String> {
    let mut opts = PassOptions::default();
    for item in body.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()) {
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (item.trim(), None),
        };
        if k.is_empty() {
            return Err(format!("empty option name in `{name}{{{body}}}`"));
        }
        opts.items.push((k.to_string(), v));
    }
    Ok(opts)
}

/// Parses one step: `name` or `name{options}`.
pub fn parse_step(text: &str) -> Result<Step, String> {
    let text = text.trim();
    let (name, body) = match text.find('{') {
        Some(open) => {
            let Some(inner) = text[open + 1..].strip_suffix('}') else {
                return Err(format!("`{text}`: options must be written `name{{...}}` with nothing after the `}}`"));
            };
            (text[..open].trim(), Some(inner))
        }
        None => (text, None),
    };
    if name.is_empty() {
        return Err("empty pass name in pipeline".into());
    }
    let Some(info) = lookup(name) else {
        let names: Vec<&str> = registry().iter().map(|p| p.name).collect();
        return Err(format!("unknown pass `{name}` (available: {})", names.join(", ")));
    };
    let opts = match body {
        Some(b) => parse_options(name, b)?,
        None => PassOptions::default(),
    };
    let pass = (info.create)(&opts)?;
    let spec = if opts.items.is_empty() {
        name.to_string()
    } else {
        let items: Vec<String> = opts
            .items
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => k.clone(),
            })
            .collect();
        format!("{name}{{{}}}", items.join(" "))
    };
    Ok(Step { spec, pass })
}

/// Parses a comma-separated pipeline. An empty string is the empty pipeline.
pub fn parse_pipeline(s: &str) -> Result<Pipeline, String> {
    let mut steps = Vec::new();
    if s.trim().is_empty() {
        return Ok(Pipeline { steps });
    }
    for part in split_top(s)? {
        if part.trim().is_empty() {
            return Err(format!("empty step in pipeline `{s}` (two commas in a row, or a trailing comma?)"));
        }
        steps.push(parse_step(part)?);
    }
    Ok(Pipeline { steps })
}
