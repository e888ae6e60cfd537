//! Test directives in `.kir` comments: how `kir test` exercises a file.
//!
//! Guarantees:
//! - Every line whose comment text starts with `run:`, `expect:` or `check-ptx:` (after `;` and
//!   spaces) is a directive and is parsed; a malformed directive is an error with its line number,
//!   never silently ignored.
//! - Argument values are kept as text here; `kir_interp::args` gives them meaning, so `kir run`,
//!   `kir diff` and `kir test` accept exactly the same values.
//! - `expect:` lines attach to the closest preceding `run:` line of the same kernel or graph.
//!
//! Syntax (see docs/testing.md):
//! ```text
//! ; run: @kernel grid(X[,Y[,Z]]) block(X[,Y[,Z]]) [shared=BYTES] [tol=ulp:N|rel:X|abs:X] NAME=VALUE ...
//! ; run: @graph NAME=VALUE ... [tol=...]
//! ; expect: @kernel NAME[A..B] == [v0, v1, ...]
//! ; check-ptx: TEXT       (the emitted PTX must contain TEXT, in order with other check-ptx lines)
//! ```

use std::fmt;

/// A comparison tolerance for floating-point outputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// Bit-exact (the default).
    Exact,
    /// At most N units in the last place apart.
    Ulp(u32),
    /// |a - b| <= X * max(|a|, |b|).
    Rel(f64),
    /// |a - b| <= X.
    Abs(f64),
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::Exact => write!(f, "exact"),
            Tolerance::Ulp(n) => write!(f, "ulp:{n}"),
            Tolerance::Rel(x) => write!(f, "rel:{x}"),
            Tolerance::Abs(x) => write!(f, "abs:{x}"),
        }
    }
}

impl Tolerance {
    pub fn parse(s: &str) -> Result<Tolerance, String> {
        let (kind, val) =
            s.split_once(':').ok_or_else(|| format!("bad tolerance `{s}` (expected ulp:N, rel:X or abs:X)"))?;
        let bad = || format!("bad tolerance value in `{s}`");
        match kind {
            "ulp" => val.parse::<u32>().map(Tolerance::Ulp).map_err(|_| bad()),
            "rel" => val.parse::<f64>().ok().filter(|x| *x >= 0.0).map(Tolerance::Rel).ok_or_else(bad),
            "abs" => val.parse::<f64>().ok().filter(|x| *x >= 0.0).map(Tolerance::Abs).ok_or_else(bad),
            "exact" => Ok(Tolerance::Exact),
            _ => Err(format!("unknown tolerance kind `{kind}` (expected ulp, rel or abs)")),
        }
    }
}

/// One `; expect:` check on an output buffer slice.
#[derive(Clone, Debug, PartialEq)]
pub struct Expect {
    pub line: usize,
    pub buffer: String,
    pub start: usize,
    pub end: usize,
    /// The expected values as written (parsed against the buffer's element type when checked).
    pub values: Vec<String>,
}

/// One `; run:` directive.
#[derive(Clone, Debug, PartialEq)]
pub struct RunDirective {
    /// 1-based line number in the file.
    pub line: usize,
    /// Kernel or graph name, without `@`.
    pub target: String,
    /// `None` for graphs (which carry their own launch shapes).
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    pub shared_bytes: u32,
    pub tol: Option<Tolerance>,
    /// `NAME=VALUE` in order.
    pub args: Vec<(String, String)>,
    pub expects: Vec<Expect>,
}

/// Every directive of a file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Directives {
    pub runs: Vec<RunDirective>,
    /// `; check-ptx:` patterns, in order, with their line numbers.
    pub ptx_checks: Vec<(usize, String)>,
}

/// A malformed directive.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectiveError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for DirectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Parses a launch shape `(x[,y[,z]])` following `grid` or `block`.
fn parse_dims(s: &str) -> Result<[u32; 3], String> {
    let inner = s
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected `(x[,y[,z]])`, found `{s}`"))?;
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("expected 1 to 3 dimensions, found `{s}`"));
    }
    let mut dims = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        dims[i] = p
            .parse::<u32>()
            .ok()
            .filter(|v| *v > 0)
            .ok_or_else(|| format!("bad dimension `{p}` (expected a positive integer)"))?;
    }
    Ok(dims)
}

/// Splits on whitespace, except inside brackets/parentheses (`grid(4, 2)`, `[1.0, 2.0]`).
fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    for ch in s.chars() {
        match ch {
            '(' | '[' => {
                depth += 1;
                cur.push(ch)
            }
            ')' | ']' => {
                depth -= 1;
                cur.push(ch)
            }
            c if c.is_whitespace() && depth <= 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn parse_run(line: usize, body: &str) -> Result<RunDirective, String> {
    let words = split_words(body);
    let mut it = words.iter();
    let target = it
        .next()
        .and_then(|w| w.strip_prefix('@'))
        .filter(|n| !n.is_empty())
        .ok_or(
            "a run directive starts with the kernel or graph name, e.g. `run: @relu_backward grid(4) block(256) ...`",
        )?
        .to_string();
    let mut d = RunDirective {
        line,
        target,
        grid: None,
        block: None,
        shared_bytes: 0,
        tol: None,
        args: vec![],
        expects: vec![],
    };
    for w in it {
        if let Some(rest) = w.strip_prefix("grid") {
            if rest.starts_with('(') {
                d.grid = Some(parse_dims(rest).map_err(|e| format!("grid: {e}"))?);
                continue;
            }
        }
        if let Some(rest) = w.strip_prefix("block") {
            if rest.starts_with('(') {
                d.block = Some(parse_dims(rest).map_err(|e| format!("block: {e}"))?);
                continue;
            }
        }
        let (key, value) = w
            .split_once('=')
            .ok_or_else(|| format!("expected `NAME=VALUE`, `grid(..)` or `block(..)`, found `{w}`"))?;
        match key {
            "tol" => d.tol = Some(Tolerance::parse(value)?),
            "shared" => {
                d.shared_bytes =
                    value.parse::<u32>().map_err(|_| format!("bad shared memory size `{value}` (bytes)"))?
            }
            "" => return Err(format!("missing argument name in `{w}`")),
            _ => {
                if d.args.iter().any(|(k, _)| k == key) {
                    return Err(format!("argument `{key}` is given twice"));
                }
                d.args.push((key.to_string(), value.to_string()));
            }
        }
    }
    if d.grid.is_some() != d.block.is_some() {
        return Err("a kernel run needs both grid(..) and block(..)".into());
    }
    Ok(d)
}

fn parse_expect(line: usize, body: &str) -> Result<(String, Expect), String> {
    // @kernel NAME[A..B] == [v, ...]
    let body = body.trim();
    let (target, rest) =
        body.split_once(char::is_whitespace).ok_or("expected `expect: @kernel NAME[A..B] == [values]`")?;
    let target = target
        .strip_prefix('@')
        .ok_or("an expect directive starts with the kernel name, e.g. `@relu_backward`")?
        .to_string();
    let (lhs, rhs) = rest.split_once("==").ok_or("expected `==` in expect directive")?;
    let lhs = lhs.trim();
    let (buffer, range) = lhs.split_once('[').ok_or_else(|| format!("expected `NAME[A..B]`, found `{lhs}`"))?;
    let range = range.strip_suffix(']').ok_or_else(|| format!("expected `]` in `{lhs}`"))?;
    let (a, b) = range.split_once("..").ok_or_else(|| format!("expected a range `A..B` in `{lhs}`"))?;
    let start = a.trim().parse::<usize>().map_err(|_| format!("bad range start `{a}`"))?;
    let end = b.trim().parse::<usize>().map_err(|_| format!("bad range end `{b}`"))?;
    if end <= start {
        return Err(format!("empty range `{start}..{end}`"));
    }
    let rhs = rhs.trim();
    let list = rhs
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .ok_or_else(|| format!("expected `[v0, v1, ...]`, found `{rhs}`"))?;
    let values: Vec<String> = list.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
    if values.len() != end - start {
        return Err(format!(
            "range `{start}..{end}` has {} elements but {} values are given",
            end - start,
            values.len()
        ));
    }
    Ok((target, Expect { line, buffer: buffer.trim().to_string(), start, end, values }))
}

/// Parses every directive of a file.
pub fn parse_directives(source: &str) -> Result<Directives, Vec<DirectiveError>> {
    let mut out = Directives::default();
    let mut errs = Vec::new();
    for (n, raw) in source.lines().enumerate() {
        let line = n + 1;
        let Some(pos) = raw.find(';') else { continue };
        let comment = raw[pos + 1..].trim_start();
        if let Some(body) = comment.strip_prefix("run:") {
            match parse_run(line, body) {
                Ok(d) => out.runs.push(d),
                Err(message) => errs.push(DirectiveError { line, message }),
            }
        } else if let Some(body) = comment.strip_prefix("expect:") {
            match parse_expect(line, body) {
                Ok((target, e)) => match out.runs.iter_mut().rev().find(|r| r.target == target) {
                    Some(r) => r.expects.push(e),
                    None => errs.push(DirectiveError {
                        line,
                        message: format!("`expect:` for @{target} has no preceding `run:` line for @{target}"),
                    }),
                },
                Err(message) => errs.push(DirectiveError { line, message }),
            }
        } else if let Some(body) = comment.strip_prefix("check-ptx:") {
            out.ptx_checks.push((line, body.trim().to_string()));
        }
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let src = "; run: @relu_backward grid(4096) block(256) x=rand:f32:1048576:1 dy=rand:f32:1048576:2 dx=zeros:f32:1048576 n=1048576\n\
                   ; expect: @relu_backward dx[0..2] == [0.0, 1.5]\n";
        let d = parse_directives(src).unwrap();
        assert_eq!(d.runs.len(), 1);
        let r = &d.runs[0];
        assert_eq!(r.target, "relu_backward");
        assert_eq!(r.grid, Some([4096, 1, 1]));
        assert_eq!(r.block, Some([256, 1, 1]));
        assert_eq!(r.args[0], ("x".to_string(), "rand:f32:1048576:1".to_string()));
        assert_eq!(r.args.len(), 4);
        assert_eq!(r.expects[0].values, vec!["0.0", "1.5"]);
        assert_eq!(r.tol, None);
    }

    #[test]
    fn multi_dimensional_shapes_tolerances_and_shared() {
        let d = parse_directives("; run: @k grid(4, 2) block(16,16) shared=1024 tol=ulp:2 a=1\n").unwrap();
        let r = &d.runs[0];
        assert_eq!(r.grid, Some([4, 2, 1]));
        assert_eq!(r.block, Some([16, 16, 1]));
        assert_eq!(r.shared_bytes, 1024);
        assert_eq!(r.tol, Some(Tolerance::Ulp(2)));
    }

    #[test]
    fn malformed_directives_are_errors_with_line_numbers() {
        let src = "kernel\n; run: relu grid(1) block(1)\n; run: @k grid(0) block(1)\n; run: @k grid(1)\n; run: @k grid(1) block(1) tol=ulp:x\n; expect: @nothing a[0..1] == [1]\n; run: @k grid(1) block(1) a=1 a=2\n";
        let errs = parse_directives(src).unwrap_err();
        let lines: Vec<usize> = errs.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![2, 3, 4, 5, 6, 7]);
        assert!(errs[0].message.contains("starts with the kernel or graph name"));
        assert!(errs[1].message.contains("bad dimension `0`"));
        assert!(errs[2].message.contains("both grid(..) and block(..)"));
        assert!(errs[3].message.contains("bad tolerance value"));
        assert!(errs[4].message.contains("no preceding `run:` line"));
        assert!(errs[5].message.contains("given twice"));
    }

    #[test]
    fn expect_range_must_match_value_count() {
        let errs = parse_directives("; run: @k grid(1) block(1)\n; expect: @k out[0..3] == [1, 2]\n").unwrap_err();
        assert!(errs[0].message.contains("3 elements but 2 values"));
    }

    #[test]
    fn ordinary_comments_are_not_directives() {
        let d = parse_directives("; this kernel runs: fast\n; running: no\nkernel @k() {\nentry:\n  ret\n}\n").unwrap();
        assert!(d.runs.is_empty());
    }
}
