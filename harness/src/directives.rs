//! Test directives in `.kir` comments: how `kir test` exercises a file.
//!
//! Guarantees:
//! - Parsing is linear in the text (a `run:` line with 100,000 arguments included).
//! - Every line whose comment text starts with `run:`, `expect:`, `fault:`, `check-ptx:`, `test:`,
//!   `error:` or `warning:` (after `;` and spaces) is a directive and is parsed; a malformed directive is an
//!   error with its line number, never silently ignored. So is a near miss: one of these names in
//!   another case or with spaces before the colon (`RUN:`, `error :`), `error:`/`warning:` one
//!   letter off (`eror:`, `warnings:`), and a test header without its colon (`test verify`).
//! - `test:` names a known filetest kind ([`TEST_KINDS`]); `error:`/`warning:` annotations (used by
//!   `crate::filetest`) refer to their own line when they end a code line, else to the closest
//!   preceding line that is neither blank nor a comment. `kir test` ignores these three.
//! - `fault:` (`kir test` and `test: fault` filetests, see `crate::filetest`) attaches to the closest preceding
//!   `run:` line, at most one per run; its kind is a [`FaultKind`] as users read it
//!   ([`FaultKind::name`]: `data race`, `out-of-bounds access`, ...), and its coordinates are
//!   those the fault must report.
//! - Argument values are kept as text here; `kir_interp::args` gives them meaning, so `kir run`,
//!   `kir diff` and `kir test` accept exactly the same values.
//! - `expect:` lines attach to the closest preceding `run:` line of the same kernel or graph; each
//!   has its own tolerance (default exact), separate from the run's `tol=`.
//! - A directive that turns runtime checks off must say why (`checks=none(REASON)`).
//! - `; source: hardware [DESCRIPTION]` (at most once per file) marks every `.npy` expectation of
//!   the file as recorded on real hardware: `kir test` checks the PTX emulator and the GPU against
//!   them too, and `--bless` never rewrites them. Any other source is an error.
//! - `; order-dependent: NAME [NAME ...] [(why)]` attaches to the closest preceding `run:` line: those
//!   output buffers depend on the order in which the hardware serialises contended operations, so
//!   `kir test` does not compare the GPU's values of them with the interpreter's (the interpreter
//!   and the PTX emulator run threads in one fixed order and are still compared). A name that is
//!   not a buffer of the kernel fails the GPU row.
//! - An expectation may end in `sorted`: the buffer and the expected values are compared as
//!   multisets (both sorted in IEEE total order for floats, by value for integers), for outputs
//!   whose order depends on how the hardware serialises contended atomics.
//! - `kir-test.toml` ([`parse_test_config`], [`find_test_config`]), the per-directory settings of
//!   `kir test`: the nearest one at or above a file's directory applies; it is a TOML subset whose
//!   one key is `strict`, and anything else in it is an error with its line and column.
//!
//! Syntax (see docs/testing.md):
//! ```text
//! ; run: @kernel grid(X[,Y[,Z]]) block(X[,Y[,Z]]) [shared=BYTES] [tol=ulp:N|rel:X|abs:X] NAME=VALUE ...
//! ; run: @graph NAME=VALUE ... [tol=...]
//! ; run: @kernel ... [checks=none(REASON)|checks=no-races(REASON)|checks=no-uninit(REASON)] [fuel=N]
//! ; expect: @kernel NAME[A..B] == [v0, v1, ...] [tol=...]
//! ; expect: @kernel NAME == @PATH.npy [tol=...] [sorted]      (PATH may end in .npy.xz)
//! ; source: hardware [DESCRIPTION]   (the file's .npy expectations were recorded on a GPU)
//! ; expect: @kernel NAME == @reference [grid(..) block(..)] [shared=BYTES] [tol=...]
//! ; fault: KIND [block(X[,Y[,Z]])] [thread(X[,Y[,Z]])]   (the run must fault so, see crate::filetest)
//! ; order-dependent: NAME [NAME ...] [(why)]   (not compared on the GPU: the hardware orders them)
//! ; check-ptx: TEXT       (the emitted PTX must contain TEXT, in order with other check-ptx lines)
//! ; test: verify|optimize|run|fault      (a filetest's kind, see crate::filetest)
//! CODE ; error: TEXT     ; warning: TEXT  (an expected diagnostic on that line, see crate::filetest)
//! ```

use kir_interp::FaultKind;
use kir_ir::diag::Severity;
use std::fmt;

/// The kinds of filetest a `; test:` header may name (see `crate::filetest`).
pub const TEST_KINDS: [&str; 4] = ["verify", "optimize", "run", "fault"];

/// A `; fault:` line: the kernel fault a `test: fault` run must stop with.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectedFault {
    /// 1-based line of the `; fault:` line.
    pub line: usize,
    pub kind: FaultKind,
    /// `block(..)`: the block coordinates the fault must report (missing dimensions are 0).
    pub block: Option<[u32; 3]>,
    /// `thread(..)`: the thread coordinates the fault must report.
    pub thread: Option<[u32; 3]>,
}

/// `(x, y, z)`, as the interpreter's notes write coordinates.
pub fn coords(c: [u32; 3]) -> String {
    format!("({}, {}, {})", c[0], c[1], c[2])
}

impl ExpectedFault {
    /// `data race in block (1, 0, 0) thread (0, 0, 0)`: the kind and the coordinates stated.
    pub fn describe(&self) -> String {
        describe_fault(self.kind.name(), self.block, self.thread)
    }

    /// Whether the error a run stopped with is this fault: its kind, and the coordinates this
    /// line states. The message says what was expected and what came instead.
    pub fn check(&self, e: &kir_interp::InterpError) -> Result<(), String> {
        let Some(kind) = e.fault_kind() else {
            return Err(format!("expected {}, the run failed with: {}", self.describe(), e.to_diagnostic().message));
        };
        let wrong = self.kind != kind
            || self.block.is_some_and(|b| e.block != Some(b))
            || self.thread.is_some_and(|t| e.thread != Some(t));
        if wrong {
            return Err(format!(
                "wrong fault: expected {}, got {}",
                self.describe(),
                describe_fault(kind.name(), e.block, e.thread)
            ));
        }
        Ok(())
    }
}

/// `KIND[ in block (..)][ thread (..)]`.
pub fn describe_fault(kind: &str, block: Option<[u32; 3]>, thread: Option<[u32; 3]>) -> String {
    let mut s = kind.to_string();
    if let Some(b) = block {
        s += &format!(" in block {}", coords(b));
    }
    if let Some(t) = thread {
        s += &format!("{} thread {}", if block.is_some() { "" } else { " in" }, coords(t));
    }
    s
}

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

/// What an `; expect:` line compares a buffer with.
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    /// `NAME[A..B] == [v_A, ...]`: literal values (parsed against the buffer's element type when
    /// checked).
    Values { start: usize, end: usize, values: Vec<String> },
    /// `NAME == @PATH.npy`: the whole buffer, against a `.npy` file (PATH relative to the `.kir`
    /// file's directory; `kir test --bless` writes it).
    Npy { path: String },
    /// `NAME == @REF [grid(..) block(..)] [shared=BYTES]`: the whole buffer, against buffer `NAME`
    /// of kernel or graph `REF` of the same module run in the interpreter on the same inputs (the
    /// run's arguments of the same names), by default with the run's launch shape.
    Reference { target: String, grid: Option<[u32; 3]>, block: Option<[u32; 3]>, shared_bytes: Option<u32> },
}

/// One `; expect:` check on an output buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Expect {
    pub line: usize,
    pub buffer: String,
    pub expected: Expected,
    /// The expectation's own tolerance (`tol=`; default exact), independent of the run's `tol=`
    /// (which is for the PTX emulator and the GPU against the interpreter).
    pub tol: Option<Tolerance>,
    /// `sorted`: compare as multisets (order-free), for outputs whose order the hardware's
    /// scheduling decides.
    pub sorted: bool,
    /// `NAME+NAME2 == @A.npy+@B.npy sorted`: further buffers and their files, joined to the first
    /// and compared as one multiset (an exchange's returned values plus the final memory).
    pub joined: Vec<(String, String)>,
}

impl Expect {
    /// How the expectation reads in a report: `out[0..4] == [..]`, `out == @data/x.npy`, `c == @gemm_naive`.
    pub fn describe(&self) -> String {
        let rhs = match &self.expected {
            Expected::Values { start, end, .. } => {
                return format!("{}[{start}..{end}] == [..] (line {})", self.buffer, self.line)
            }
            Expected::Npy { path } => format!("@{path}"),
            Expected::Reference { target, .. } => format!("@{target}"),
        };
        let sorted = if self.sorted { " sorted" } else { "" };
        let (names, files): (String, String) =
            self.joined.iter().map(|(b, p)| (format!("+{b}"), format!("+@{p}"))).unzip();
        format!("{}{names} == {rhs}{files}{sorted} (line {})", self.buffer, self.line)
    }
}

/// Where a file's `.npy` expectations come from (`; source:`).
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    pub line: usize,
    /// What follows `hardware` (e.g. the device and driver), possibly empty.
    pub description: String,
}

/// The runtime checks of a directive's interpreter runs (`checks=`): both on unless the directive
/// turns some off, with a reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checks {
    pub races: bool,
    pub uninit: bool,
    /// Why some checks are off (required when they are).
    pub reason: Option<String>,
}

impl Default for Checks {
    fn default() -> Checks {
        Checks { races: true, uninit: true, reason: None }
    }
}

impl Checks {
    /// `none(REASON)`, `no-races(REASON)` or `no-uninit(REASON)`.
    fn parse(value: &str) -> Result<Checks, String> {
        let (kind, rest) = value.split_once('(').unwrap_or((value, ""));
        let reason = rest.strip_suffix(')').map(str::trim).filter(|r| !r.is_empty());
        let (races, uninit) = match kind {
            "none" => (false, false),
            "no-races" => (false, true),
            "no-uninit" => (true, false),
            _ => {
                return Err(format!(
                    "unknown checks `{value}` (expected `checks=none(REASON)`, `checks=no-races(REASON)` or `checks=no-uninit(REASON)`)"
                ))
            }
        };
        let Some(reason) = reason else {
            return Err(format!(
                "`checks={kind}` needs the reason the checks are off, in parentheses: `checks={kind}(why this kernel may race or read uninitialized memory)`"
            ));
        };
        Ok(Checks { races, uninit, reason: Some(reason.to_string()) })
    }

    /// `races, uninit`, or what is off and why.
    pub fn describe(&self) -> String {
        match (self.races, self.uninit, &self.reason) {
            (true, true, _) => "checks: races, uninitialized reads".into(),
            (r, u, reason) => {
                let off: Vec<&str> =
                    [(!r).then_some("races"), (!u).then_some("uninitialized reads")].into_iter().flatten().collect();
                format!("checks off: {} ({})", off.join(", "), reason.as_deref().unwrap_or("no reason given"))
            }
        }
    }
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
    /// How the PTX emulator's and the GPU's outputs are compared with the interpreter's.
    pub tol: Option<Tolerance>,
    /// The interpreter's runtime checks (`checks=`).
    pub checks: Checks,
    /// `fuel=N`: this directive's launches may run N thread-instructions in all and N per warp
    /// (instead of `kir test`'s `--fuel` or the defaults).
    pub fuel: Option<u64>,
    /// `tensor-cores=sm_80|sm_90|sm_100`: whose tensor-core arithmetic the interpreter and the PTX
    /// emulator compute for `mma` (default: `kir test`'s, the sm_90 rule).
    pub tensor_cores: Option<kir_ir::eval::tensor_core::TensorCoreRule>,
    /// `NAME=VALUE` in order.
    pub args: Vec<(String, String)>,
    pub expects: Vec<Expect>,
    /// The `; fault:` line after it: the run must stop with that fault (`kir test` and the
    /// `test: fault` filetests check it).
    pub fault: Option<ExpectedFault>,
    /// `; order-dependent: NAME ...` lines after it: output buffers whose contents depend on the
    /// order in which the hardware serialises contended operations (an atomic's returned old
    /// values, a sum of floats in arrival order). The GPU's values of these buffers are not
    /// compared with the interpreter's; the interpreter and the PTX emulator run threads in one
    /// fixed order and are still compared with each other.
    pub order_dependent: Vec<String>,
}

/// An `; error: TEXT` or `; warning: TEXT` annotation: a diagnostic a filetest expects.
#[derive(Clone, Debug, PartialEq)]
pub struct Annotation {
    /// 1-based line of the annotation itself.
    pub line: usize,
    /// 1-based line the expected diagnostic is on: `line` when the annotation ends a code line,
    /// else the closest preceding line that is neither blank nor a comment.
    pub target_line: usize,
    /// `Error` or `Warning`.
    pub severity: Severity,
    /// The text the diagnostic's message must contain (trimmed, never empty).
    pub text: String,
}

/// Every directive of a file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Directives {
    pub runs: Vec<RunDirective>,
    /// `; check-ptx:` patterns, in order, with their line numbers.
    pub ptx_checks: Vec<(usize, String)>,
    /// `; test:` headers (a kind from [`TEST_KINDS`]) with their line numbers, in order; a
    /// filetest has exactly one.
    pub test_headers: Vec<(usize, String)>,
    /// `; error:` / `; warning:` annotations, in order.
    pub annotations: Vec<Annotation>,
    /// `; source: hardware ...`: the file's `.npy` expectations were recorded on a GPU.
    pub hardware: Option<Source>,
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
        checks: Checks::default(),
        fuel: None,
        tensor_cores: None,
        args: vec![],
        expects: vec![],
        fault: None,
        order_dependent: Vec::new(),
    };
    // Argument names seen so far: one hash lookup per argument keeps a long line linear.
    let mut names = std::collections::HashSet::new();
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
            "checks" => d.checks = Checks::parse(value)?,
            "fuel" => {
                d.fuel = Some(
                    value
                        .parse::<u64>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| format!("bad fuel `{value}` (a positive number of instructions)"))?,
                )
            }
            "tensor-cores" => d.tensor_cores = Some(crate::tensor_cores::parse_rule(value)?),
            "shared" => {
                d.shared_bytes =
                    value.parse::<u32>().map_err(|_| format!("bad shared memory size `{value}` (bytes)"))?
            }
            "" => return Err(format!("missing argument name in `{w}`")),
            _ => {
                if !names.insert(key) {
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
    // @target NAME[A..B] == [v, ...] [tol=..]  |  @target NAME == @PATH.npy [tol=..]
    // | @target NAME == @REF [grid(..) block(..)] [shared=N] [tol=..]
    const FORMS: &str =
        "expected `expect: @kernel NAME[A..B] == [values]`, `NAME == @file.npy` or `NAME == @reference_kernel`";
    let body = body.trim();
    let (target, rest) = body.split_once(char::is_whitespace).ok_or(FORMS)?;
    let target = target
        .strip_prefix('@')
        .ok_or("an expect directive starts with the kernel name, e.g. `@relu_backward`")?
        .to_string();
    let (lhs, rhs) = rest.split_once("==").ok_or("expected `==` in expect directive")?;
    let lhs = lhs.trim();
    let words = split_words(rhs);
    let (first, options) = words.split_first().ok_or(FORMS)?;
    let mut tol = None;
    let mut sorted = false;
    let (mut grid, mut block, mut shared) = (None, None, None);
    for w in options {
        if *w == "sorted" {
            sorted = true;
        } else if let Some(v) = w.strip_prefix("tol=") {
            tol = Some(Tolerance::parse(v)?);
        } else if let Some(v) = w.strip_prefix("grid").filter(|v| v.starts_with('(')) {
            grid = Some(parse_dims(v).map_err(|e| format!("grid: {e}"))?);
        } else if let Some(v) = w.strip_prefix("block").filter(|v| v.starts_with('(')) {
            block = Some(parse_dims(v).map_err(|e| format!("block: {e}"))?);
        } else if let Some(v) = w.strip_prefix("shared=") {
            shared = Some(v.parse::<u32>().map_err(|_| format!("bad shared memory size `{v}` (bytes)"))?);
        } else {
            return Err(format!("unexpected `{w}` after the expected value (options: tol=, sorted, and for a reference kernel grid(..) block(..) shared=)"));
        }
    }
    let shape_given = grid.is_some() || block.is_some() || shared.is_some();
    if lhs.contains('+') {
        // NAME+NAME2 == @A.npy+@B.npy sorted: one multiset of several buffers.
        let names: Vec<&str> = lhs.split('+').map(str::trim).collect();
        let files: Vec<&str> = first.split('+').map(|f| f.strip_prefix('@').unwrap_or("")).collect();
        let npy = |f: &&str| (f.ends_with(".npy") && f.len() > 4) || (f.ends_with(".npy.xz") && f.len() > 7);
        if names.len() != files.len()
            || !files.iter().all(npy)
            || names.iter().any(|n| n.is_empty() || n.contains(|c: char| c.is_whitespace() || c == '['))
        {
            return Err(format!(
                "`{lhs} == {first}` joins buffers: give one `.npy` file per buffer, `A+B == @a.npy+@b.npy sorted`"
            ));
        }
        if !sorted {
            return Err(format!("`{lhs} == {first}` joins buffers into one multiset: it needs `sorted`"));
        }
        if shape_given {
            return Err("grid(..), block(..) and shared= are for a reference kernel, not `.npy` files".into());
        }
        let joined = names[1..].iter().zip(&files[1..]).map(|(n, f)| (n.to_string(), f.to_string())).collect();
        let expected = Expected::Npy { path: files[0].to_string() };
        return Ok((target, Expect { line, buffer: names[0].to_string(), expected, tol, sorted, joined }));
    }
    if let Some(reference) = first.strip_prefix('@') {
        if lhs.contains('[') {
            return Err(format!(
                "`{lhs} == {first}` compares a whole buffer: write `{}` without a range",
                lhs.split('[').next().unwrap_or(lhs).trim()
            ));
        }
        if lhs.is_empty() || lhs.contains(char::is_whitespace) {
            return Err(format!("expected a buffer name before `==`, found `{lhs}`"));
        }
        let expected = if let Some(ext) = [".npy", ".npy.xz"].into_iter().find(|e| reference.ends_with(e)) {
            if shape_given {
                return Err("grid(..), block(..) and shared= are for a reference kernel, not a `.npy` file".into());
            }
            if reference.len() == ext.len() {
                return Err("expected a file name before `.npy`".into());
            }
            Expected::Npy { path: reference.to_string() }
        } else {
            if reference.is_empty() {
                return Err("expected a kernel name or a `.npy` path after `@`".into());
            }
            if grid.is_some() != block.is_some() {
                return Err("a reference launch needs both grid(..) and block(..)".into());
            }
            Expected::Reference { target: reference.to_string(), grid, block, shared_bytes: shared }
        };
        return Ok((target, Expect { line, buffer: lhs.to_string(), expected, tol, sorted, joined: Vec::new() }));
    }
    if shape_given {
        return Err(
            "grid(..), block(..) and shared= are for a reference kernel (`NAME == @ref grid(..) block(..)`)".into()
        );
    }
    let (buffer, range) = lhs.split_once('[').ok_or_else(|| format!("expected `NAME[A..B]`, found `{lhs}`"))?;
    let range = range.strip_suffix(']').ok_or_else(|| format!("expected `]` in `{lhs}`"))?;
    let (a, b) = range.split_once("..").ok_or_else(|| format!("expected a range `A..B` in `{lhs}`"))?;
    let start = a.trim().parse::<usize>().map_err(|_| format!("bad range start `{a}`"))?;
    let end = b.trim().parse::<usize>().map_err(|_| format!("bad range end `{b}`"))?;
    if end <= start {
        return Err(format!("empty range `{start}..{end}`"));
    }
    let list = first
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .ok_or_else(|| format!("expected `[v0, v1, ...]`, `@file.npy` or `@reference_kernel`, found `{first}`"))?;
    let values: Vec<String> = list.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
    if values.len() != end - start {
        return Err(format!(
            "range `{start}..{end}` has {} elements but {} values are given",
            end - start,
            values.len()
        ));
    }
    let expected = Expected::Values { start, end, values };
    Ok((target, Expect { line, buffer: buffer.trim().to_string(), expected, tol, sorted, joined: Vec::new() }))
}

/// Every directive name.
const DIRECTIVE_NAMES: [&str; 9] =
    ["run", "expect", "fault", "check-ptx", "test", "error", "warning", "source", "order-dependent"];

/// Coordinates `(x[,y[,z]])` following `block` or `thread` (missing dimensions are 0).
fn parse_coords(s: &str) -> Result<[u32; 3], String> {
    let inner = s
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected `(x[,y[,z]])`, found `{s}`"))?;
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!("expected 1 to 3 coordinates, found `{s}`"));
    }
    let mut c = [0u32; 3];
    for (i, p) in parts.iter().enumerate() {
        c[i] = p.parse::<u32>().map_err(|_| format!("bad coordinate `{p}` (expected a number)"))?;
    }
    Ok(c)
}

/// `KIND [block(..)] [thread(..)]` of a `; fault:` line.
fn parse_fault(line: usize, body: &str) -> Result<ExpectedFault, String> {
    let words = split_words(body);
    let coord_at = words.iter().position(|w| w.contains('(')).unwrap_or(words.len());
    let kind_text = words[..coord_at].join(" ");
    let names = || FaultKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ");
    if kind_text.is_empty() {
        return Err(format!("`fault:` needs the kind of fault (one of: {})", names()));
    }
    let kind = FaultKind::ALL
        .into_iter()
        .find(|k| k.name() == kind_text)
        .ok_or_else(|| format!("unknown fault kind `{kind_text}` (expected one of: {})", names()))?;
    let mut f = ExpectedFault { line, kind, block: None, thread: None };
    for w in &words[coord_at..] {
        let (slot, name, rest) = if let Some(r) = w.strip_prefix("block") {
            (&mut f.block, "block", r)
        } else if let Some(r) = w.strip_prefix("thread") {
            (&mut f.thread, "thread", r)
        } else {
            return Err(format!("unexpected `{w}` after the fault kind (expected `block(..)` or `thread(..)`)"));
        };
        if !rest.starts_with('(') {
            return Err(format!("unexpected `{w}` after the fault kind (expected `block(..)` or `thread(..)`)"));
        }
        if slot.is_some() {
            return Err(format!("`{name}(..)` is given twice"));
        }
        *slot = Some(parse_coords(rest).map_err(|e| format!("{name}: {e}"))?);
    }
    Ok(f)
}

/// Whether `a` becomes `b` by one insertion, deletion, substitution or swap of neighbours.
fn one_edit_apart(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[prefix..], &b[prefix..]);
    match (ra.len(), rb.len()) {
        (0, 0) => false,
        (x, y) if x == y => ra[1..] == rb[1..] || (x >= 2 && ra[0] == rb[1] && ra[1] == rb[0] && ra[2..] == rb[2..]),
        (x, y) if x + 1 == y => ra == &rb[1..],
        (x, y) if y + 1 == x => &ra[1..] == rb,
        _ => false,
    }
}

/// A comment that looks like a directive but is not one, which would otherwise be silently
/// ignored: a directive's name in another case or with spaces before the colon (`RUN:`,
/// `run :`, `Expect:`), `error`/`warning` one letter off (`eror:`, `warnings:`), or a test header
/// without its colon (`test verify`). Returns the text as written (up to the colon, or the whole
/// header) and what to write instead.
fn misspelled_directive(comment: &str) -> Option<(&str, String)> {
    let word_end = comment.find(|c: char| !(c.is_ascii_alphabetic() || c == '-')).unwrap_or(comment.len());
    let word = &comment[..word_end];
    let lower = word.to_ascii_lowercase();
    let rest = comment[word_end..].trim_start_matches([' ', '\t']);
    if !rest.starts_with(':') {
        // `test verify`: a header without its colon (only with a known kind, so that prose such
        // as `; test depends on ...` stays a comment).
        let kind = rest.trim_end();
        if lower == "test" && word_end < comment.len() && TEST_KINDS.contains(&kind) {
            return Some((comment.trim_end(), format!("test: {kind}")));
        }
        return None;
    }
    let colon = word_end + (comment[word_end..].len() - rest.len());
    let spelled = &comment[..=colon];
    if DIRECTIVE_NAMES.contains(&lower.as_str()) {
        return Some((spelled, format!("{lower}:")));
    }
    ["error", "warning"].into_iter().find(|n| one_edit_apart(&lower, n)).map(|n| (spelled, format!("{n}:")))
}

/// Parses every directive of a file.
pub fn parse_directives(source: &str) -> Result<Directives, Vec<DirectiveError>> {
    let mut out = Directives::default();
    let mut errs = Vec::new();
    // The closest line so far that is neither blank nor a comment (what a comment-only
    // annotation refers to).
    let mut last_code_line = None;
    // Whether the last `run:` line so far parsed (`None` before the first).
    let mut last_run_ok = None;
    for (n, raw) in source.lines().enumerate() {
        let line = n + 1;
        let code = raw.split(';').next().unwrap_or("");
        let on_code_line = !code.trim().is_empty();
        if on_code_line {
            last_code_line = Some(line);
        }
        let Some(pos) = raw.find(';') else { continue };
        let comment = raw[pos + 1..].trim_start();
        let annotation = [("error:", Severity::Error), ("warning:", Severity::Warning)]
            .into_iter()
            .find_map(|(name, severity)| comment.strip_prefix(name).map(|body| (name, severity, body.trim())));
        if let Some((name, severity, text)) = annotation {
            if text.is_empty() {
                errs.push(DirectiveError {
                    line,
                    message: format!("`{name}` needs the text the diagnostic's message must contain"),
                });
            } else if let Some(target_line) = last_code_line {
                out.annotations.push(Annotation { line, target_line, severity, text: text.to_string() });
            } else {
                errs.push(DirectiveError {
                    line,
                    message: format!(
                        "`{name}` on a comment line refers to the closest code line above it, and there is none"
                    ),
                });
            }
        } else if let Some(body) = comment.strip_prefix("test:") {
            let kind = body.trim();
            if TEST_KINDS.contains(&kind) {
                out.test_headers.push((line, kind.to_string()));
            } else {
                errs.push(DirectiveError {
                    line,
                    message: format!("unknown test kind `{kind}` (expected one of: {})", TEST_KINDS.join(", ")),
                });
            }
        } else if let Some(body) = comment.strip_prefix("run:") {
            last_run_ok = Some(false);
            match parse_run(line, body) {
                Ok(d) => {
                    out.runs.push(d);
                    last_run_ok = Some(true);
                }
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
        } else if let Some(body) = comment.strip_prefix("order-dependent:") {
            // `; order-dependent: NAME [NAME ...] [(why)]`: buffer names up to a parenthesis.
            let names: Vec<String> = body
                .split('(')
                .next()
                .unwrap_or("")
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|w| !w.is_empty())
                .map(|w| w.trim_start_matches('%').to_string())
                .collect();
            match out.runs.last_mut() {
                _ if last_run_ok == Some(false) => {}
                _ if names.is_empty() => errs.push(DirectiveError {
                    line,
                    message: "`order-dependent:` needs the names of the buffers whose contents depend on the order of contended operations".into(),
                }),
                None => errs.push(DirectiveError {
                    line,
                    message: "`order-dependent:` names buffers of the `run:` line above it, and there is none".into(),
                }),
                Some(r) => r.order_dependent.extend(names),
            }
        } else if let Some(body) = comment.strip_prefix("fault:") {
            match (parse_fault(line, body), out.runs.last_mut()) {
                (Err(message), _) => errs.push(DirectiveError { line, message }),
                // The `run:` line above is malformed (reported already).
                (Ok(_), _) if last_run_ok == Some(false) => {}
                (Ok(_), None) => errs.push(DirectiveError {
                    line,
                    message: "`fault:` says how the `run:` line above it faults, and there is none".into(),
                }),
                (Ok(f), Some(r)) => match &r.fault {
                    Some(first) => errs.push(DirectiveError {
                        line,
                        message: format!(
                            "a second `fault:` line for the `run:` on line {} (the first is on line {}): a run faults once",
                            r.line, first.line
                        ),
                    }),
                    None => r.fault = Some(f),
                },
            }
        } else if let Some(body) = comment.strip_prefix("source:") {
            let body = body.trim();
            let (kind, description) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
            if kind != "hardware" {
                errs.push(DirectiveError {
                    line,
                    message: format!(
                        "unknown source `{kind}` (the one source kir knows is `hardware`: `; source: hardware DEVICE`, for expectations recorded on a GPU)"
                    ),
                });
            } else if let Some(first) = &out.hardware {
                errs.push(DirectiveError {
                    line,
                    message: format!("a second `source:` line (the first is on line {})", first.line),
                });
            } else {
                out.hardware = Some(Source { line, description: description.trim().to_string() });
            }
        } else if let Some(body) = comment.strip_prefix("check-ptx:") {
            if body.trim().is_empty() {
                errs.push(DirectiveError { line, message: "`check-ptx:` needs the text the PTX must contain".into() });
            } else {
                out.ptx_checks.push((line, body.trim().to_string()));
            }
        } else if let Some((spelled, instead)) = misspelled_directive(comment) {
            let how = if spelled.to_ascii_lowercase().replace([' ', '\t'], "") == instead {
                " (lowercase, no space before `:`)"
            } else {
                ""
            };
            errs.push(DirectiveError {
                line,
                message: format!("`{spelled}` looks like a directive but is not one: write `{instead}`{how}"),
            });
        }
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs)
    }
}

/// The name of `kir test`'s per-directory settings file (docs/testing.md, "Settings").
pub const TEST_CONFIG_NAME: &str = "kir-test.toml";

/// The settings of a `kir-test.toml`. It applies to every `.kir` file at or below its directory
/// that has no nearer one ([`find_test_config`]), as `rustfmt.toml` does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TestConfig {
    /// `strict = true`: a directive without `; expect:` fails, as with `kir test --strict`.
    pub strict: bool,
    /// The 1-based line that set `strict`, if any.
    pub strict_line: Option<usize>,
}

/// A malformed `kir-test.toml`: where (1-based line and column) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestConfigError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// Parses a `kir-test.toml`: a subset of TOML with top-level `KEY = VALUE` lines, `#` comments
/// and blank lines. The one key is `strict` (`true` or `false`). Anything else — an unknown or
/// repeated key, another value, a table header, a line without `=` — is an error with its line
/// and column, never ignored: a typo must not silently leave the library lenient.
pub fn parse_test_config(text: &str) -> Result<TestConfig, TestConfigError> {
    let mut cfg = TestConfig::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |at: &str, message: String| {
            // `at` is a subslice of `raw`: its column is its byte offset, in characters, plus one.
            let offset = at.as_ptr() as usize - raw.as_ptr() as usize;
            Err(TestConfigError { line, col: raw[..offset].chars().count() + 1, message })
        };
        let content = raw.split('#').next().unwrap_or("");
        let item = content.trim_start();
        if item.trim_end().is_empty() {
            continue;
        }
        if item.starts_with('[') {
            return err(
                item,
                format!("tables are not supported: {TEST_CONFIG_NAME} has only top-level keys (`strict`)"),
            );
        }
        let Some(eq) = item.find('=') else {
            return err(item, format!("expected `KEY = VALUE` (e.g. `strict = true`), found `{}`", item.trim_end()));
        };
        let key = item[..eq].trim_end();
        let rest = &item[eq + 1..];
        let value = rest.trim();
        let value_at = rest.trim_start();
        match key {
            "strict" => {
                if let Some(first) = cfg.strict_line {
                    return err(item, format!("`strict` is set twice (first on line {first})"));
                }
                cfg.strict = match value {
                    "true" => true,
                    "false" => false,
                    "" => return err(value_at, "`strict` needs a value: `true` or `false`".to_string()),
                    other => return err(value_at, format!("`strict` must be `true` or `false`, not `{other}`")),
                };
                cfg.strict_line = Some(line);
            }
            "" => return err(item, "expected a key before `=` (the one key is `strict`)".to_string()),
            other => return err(item, format!("unknown key `{other}` (the one key is `strict`)")),
        }
    }
    Ok(cfg)
}

/// The nearest `kir-test.toml` in the directory of `file` or one above it, walking up to the
/// root (the path is made absolute first, without resolving links).
pub fn find_test_config(file: &std::path::Path) -> Option<std::path::PathBuf> {
    let abs = std::path::absolute(file).ok()?;
    abs.ancestors().skip(1).map(|dir| dir.join(TEST_CONFIG_NAME)).find(|p| p.is_file())
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
        assert_eq!(
            r.expects[0].expected,
            Expected::Values { start: 0, end: 2, values: vec!["0.0".into(), "1.5".into()] }
        );
        assert_eq!(r.expects[0].tol, None);
        assert_eq!(r.checks, Checks::default());
        assert_eq!(r.tol, None);
    }

    #[test]
    fn hardware_source_and_sorted_expectations() {
        let src = "; source: hardware NVIDIA H100 80GB HBM3, driver 580\n\
                   ; run: @k grid(1) block(1) a=zeros:u32:4\n\
                   ; expect: @k a == @data/gpu/k.a.npy.xz sorted\n\
                   ; expect: @k a[0..2] == [1, 2] sorted tol=ulp:0\n";
        let d = parse_directives(src).unwrap();
        assert_eq!(d.hardware, Some(Source { line: 1, description: "NVIDIA H100 80GB HBM3, driver 580".into() }));
        let e = &d.runs[0].expects;
        assert_eq!(e[0].expected, Expected::Npy { path: "data/gpu/k.a.npy.xz".into() });
        assert!(e[0].sorted && e[1].sorted);
        assert_eq!(e[0].describe(), "a == @data/gpu/k.a.npy.xz sorted (line 3)");
        assert_eq!(
            parse_directives("; run: @k grid(1) block(1)\n; expect: @k a == @x.npy\n").unwrap().runs[0].expects[0]
                .sorted,
            false
        );
        let j =
            parse_directives("; run: @k grid(1) block(1)\n; expect: @k old+a == @o.npy.xz+@a.npy sorted\n").unwrap();
        let j = &j.runs[0].expects[0];
        assert_eq!((j.buffer.as_str(), &j.joined), ("old", &vec![("a".to_string(), "a.npy".to_string())]));
        assert_eq!(j.describe(), "old+a == @o.npy.xz+@a.npy sorted (line 2)");
        for (bad, why) in [
            ("old+a == @o.npy+@a.npy", "it needs `sorted`"),
            ("old+a == @o.npy sorted", "one `.npy` file per buffer"),
            ("old+ == @o.npy+@a.npy sorted", "one `.npy` file per buffer"),
            ("old+a == @o.npy+@ref sorted", "one `.npy` file per buffer"),
        ] {
            let e = parse_directives(&format!("; run: @k grid(1) block(1)\n; expect: @k {bad}\n")).unwrap_err();
            assert!(e[0].message.contains(why), "{bad}: {}", e[0].message);
        }
        let errs = parse_directives("; source: simulator\n; source: hardware\n; source: hardware again\n; Source: hardware\n; expect: @k a == @.npy.xz\n").unwrap_err();
        let msgs: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.message.as_str())).collect();
        assert!(
            msgs[0].0 == 1
                && msgs[0].1.starts_with("unknown source `simulator` (the one source kir knows is `hardware`"),
            "{msgs:?}"
        );
        assert!(msgs[1].0 == 3 && msgs[1].1.contains("a second `source:` line (the first is on line 2)"), "{msgs:?}");
        assert!(msgs[2].0 == 4 && msgs[2].1.contains("write `source:`"), "{msgs:?}");
        assert!(msgs[3].0 == 5 && msgs[3].1.contains("expected a file name before `.npy`"), "{msgs:?}");
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

    #[test]
    fn expectations_from_files_and_reference_kernels_with_their_own_tolerance() {
        let src = "; run: @gemm grid(2,2) block(16,16) tol=ulp:4 a=rand:f32:64 c=zeros:f32:64\n\
                   ; expect: @gemm c == @data/c.npy tol=rel:1e-6\n\
                   ; expect: @gemm c == @gemm_naive\n\
                   ; expect: @gemm c == @gemm_naive grid(4) block(64) shared=0 tol=abs:0.5\n\
                   ; expect: @gemm c[0..2] == [1, 2] tol=ulp:1\n";
        let d = parse_directives(src).unwrap();
        let e = &d.runs[0].expects;
        assert_eq!(d.runs[0].tol, Some(Tolerance::Ulp(4)));
        assert_eq!(e[0].expected, Expected::Npy { path: "data/c.npy".into() });
        assert_eq!(e[0].tol, Some(Tolerance::Rel(1e-6)));
        assert_eq!(
            e[1].expected,
            Expected::Reference { target: "gemm_naive".into(), grid: None, block: None, shared_bytes: None }
        );
        assert_eq!(e[1].tol, None);
        assert_eq!(
            e[2].expected,
            Expected::Reference {
                target: "gemm_naive".into(),
                grid: Some([4, 1, 1]),
                block: Some([64, 1, 1]),
                shared_bytes: Some(0)
            }
        );
        assert_eq!(e[3].tol, Some(Tolerance::Ulp(1)));
        assert_eq!(e[1].describe(), "c == @gemm_naive (line 3)");
        assert_eq!(e[3].describe(), "c[0..2] == [..] (line 5)");
    }

    #[test]
    fn malformed_expectations_say_what_is_wrong() {
        let cases = [
            ("c[0..2] == @x.npy", "compares a whole buffer"),
            ("c == @.npy", "file name before `.npy`"),
            ("c == @x.npy grid(1) block(1)", "not a `.npy` file"),
            ("c == @ref grid(2)", "both grid(..) and block(..)"),
            ("c == @ref bogus", "unexpected `bogus`"),
            ("c[0..1] == [1] grid(1) block(1)", "for a reference kernel"),
            ("c[0..1] == [1] tol=ulp:x", "bad tolerance value"),
            ("c == 1.0", "expected `NAME[A..B]`"),
            ("c == @", "a kernel name or a `.npy` path"),
        ];
        for (body, want) in cases {
            let src = format!("; run: @k grid(1) block(1)\n; expect: @k {body}\n");
            let errs = parse_directives(&src).unwrap_err();
            assert_eq!(errs[0].line, 2, "{body}");
            assert!(errs[0].message.contains(want), "{body}: {}", errs[0].message);
        }
    }

    #[test]
    fn checks_are_on_unless_turned_off_with_a_reason() {
        let d =
            parse_directives("; run: @k grid(1) block(1) checks=no-races(atomic counters race on purpose)\n").unwrap();
        let c = &d.runs[0].checks;
        assert_eq!((c.races, c.uninit), (false, true));
        assert_eq!(c.describe(), "checks off: races (atomic counters race on purpose)");
        let d = parse_directives("; run: @k grid(1) block(1) checks=none(reads padding)\n").unwrap();
        assert_eq!(d.runs[0].checks.describe(), "checks off: races, uninitialized reads (reads padding)");
        assert_eq!(Checks::default().describe(), "checks: races, uninitialized reads");
        for (v, want) in [("none", "needs the reason"), ("none()", "needs the reason"), ("off(x)", "unknown checks")] {
            let errs = parse_directives(&format!("; run: @k grid(1) block(1) checks={v}\n")).unwrap_err();
            assert!(errs[0].message.contains(want), "{v}: {}", errs[0].message);
        }
    }

    #[test]
    fn a_long_run_line_is_parsed_and_still_checks_duplicates() {
        let args: String = (0..100_000).map(|i| format!(" a{i}=1")).collect();
        let d = parse_directives(&format!("; run: @k grid(1) block(1){args}\n")).unwrap();
        assert_eq!(d.runs[0].args.len(), 100_000);
        let errs = parse_directives(&format!("; run: @k grid(1) block(1){args} a99999=2\n")).unwrap_err();
        assert!(errs[0].message.contains("argument `a99999` is given twice"));
    }

    #[test]
    fn near_miss_directives_and_empty_checks_are_errors() {
        let src = "; RUN: @k grid(1) block(1)\n; run : @k grid(1) block(1)\n; Expect: @k a[0..1] == [1]\n; check-ptx:\n; running: fine\n; runs: fine\n; Run it: fine\n";
        let errs = parse_directives(src).unwrap_err();
        let got: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.message.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (1, "`RUN:` looks like a directive but is not one: write `run:` (lowercase, no space before `:`)"),
                (2, "`run :` looks like a directive but is not one: write `run:` (lowercase, no space before `:`)"),
                (
                    3,
                    "`Expect:` looks like a directive but is not one: write `expect:` (lowercase, no space before `:`)"
                ),
                (4, "`check-ptx:` needs the text the PTX must contain"),
            ]
        );
    }

    #[test]
    fn test_headers_and_annotations() {
        let src = "; test: verify\nkernel @k() {\nentry:\n  %x = add.u32 %y, 1 ; error: `%y` is not defined\n\n; warning: unreachable\n  ; error:   second on line 4  \n  ret\n}\n";
        let d = parse_directives(src).unwrap();
        assert_eq!(d.test_headers, vec![(1, "verify".to_string())]);
        let got: Vec<(usize, usize, Severity, &str)> =
            d.annotations.iter().map(|a| (a.line, a.target_line, a.severity, a.text.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (4, 4, Severity::Error, "`%y` is not defined"),
                (6, 4, Severity::Warning, "unreachable"),
                (7, 4, Severity::Error, "second on line 4"),
            ]
        );
        assert!(d.runs.is_empty());
    }

    #[test]
    fn malformed_headers_and_annotations_are_errors_with_line_numbers() {
        let src = "; error: nothing above\n; test: verfy\n; test:\nkernel @k() {\n; warning:\n}\n";
        let errs = parse_directives(src).unwrap_err();
        let got: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.message.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (1, "`error:` on a comment line refers to the closest code line above it, and there is none"),
                (2, "unknown test kind `verfy` (expected one of: verify, optimize, run, fault)"),
                (3, "unknown test kind `` (expected one of: verify, optimize, run, fault)"),
                (5, "`warning:` needs the text the diagnostic's message must contain"),
            ]
        );
    }

    #[test]
    fn near_misses_of_the_filetest_directives_are_errors() {
        let src = "; eror: x\n; test verify\n; Warning: y\n; error : z\n; warnign: w\n; TEST: run\n; errors: e\n\
                   ; test depends on the counter\n; testing: fine\n; mirror: fine\n; warn: fine\n; the error: fine\n";
        let errs = parse_directives(src).unwrap_err();
        let got: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.message.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (1, "`eror:` looks like a directive but is not one: write `error:`"),
                (2, "`test verify` looks like a directive but is not one: write `test: verify`"),
                (
                    3,
                    "`Warning:` looks like a directive but is not one: write `warning:` (lowercase, no space before `:`)"
                ),
                (4, "`error :` looks like a directive but is not one: write `error:` (lowercase, no space before `:`)"),
                (5, "`warnign:` looks like a directive but is not one: write `warning:`"),
                (6, "`TEST:` looks like a directive but is not one: write `test:` (lowercase, no space before `:`)"),
                (7, "`errors:` looks like a directive but is not one: write `error:`"),
            ]
        );
    }

    #[test]
    fn fault_lines_attach_to_the_run_above() {
        let src =
            "; test: fault\n; run: @k grid(3) block(32) out=zeros:u32:1\n; fault: data race block(1) thread(0,0,0)\n\
                   ; run: @k grid(1) block(1) out=zeros:u32:1 fuel=100\n;   fault:   fuel exhausted\n\
                   ; run: @k grid(1) block(1) out=zeros:u32:1\n";
        let d = parse_directives(src).unwrap();
        assert_eq!(d.test_headers, vec![(1, "fault".to_string())]);
        let f = d.runs[0].fault.as_ref().unwrap();
        assert_eq!((f.line, f.kind, f.block, f.thread), (3, FaultKind::DataRace, Some([1, 0, 0]), Some([0, 0, 0])));
        assert_eq!(f.describe(), "data race in block (1, 0, 0) thread (0, 0, 0)");
        let f = d.runs[1].fault.as_ref().unwrap();
        assert_eq!((f.line, f.kind, f.block, f.thread), (5, FaultKind::FuelExhausted, None, None));
        assert_eq!(d.runs[1].fuel, Some(100));
        assert_eq!(d.runs[2].fault, None);
        // Every kind is spelled as users read it.
        for k in FaultKind::ALL {
            let d =
                parse_directives(&format!("; run: @k grid(1) block(1)\n; fault: {} thread(5)\n", k.name())).unwrap();
            assert_eq!(d.runs[0].fault.as_ref().map(|f| (f.kind, f.thread)), Some((k, Some([5, 0, 0]))));
        }
        assert_eq!(describe_fault("data race", None, Some([2, 0, 0])), "data race in thread (2, 0, 0)");
    }

    #[test]
    fn malformed_fault_lines_are_errors_with_line_numbers() {
        let src = "; fault: data race\n; run: @k grid(1) block(1)\n; fault: race\n; fault:\n\
                   ; fault: data race block(1) block(2)\n; fault: data race block(x)\n; fault: data race warp(1)\n\
                   ; fault: out-of-bounds access thread(1,2,3,4)\n; fault: misaligned access\n; fault: data race\n\
                   ; Fault: data race\n; run: @k grid(0) block(1)\n; fault: data race\n";
        let errs = parse_directives(src).unwrap_err();
        let got: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.message.as_str())).collect();
        let kinds = "out-of-bounds access, misaligned access, barrier divergence, divergent warp collective, data race, uninitialized read, fuel exhausted, async copy in flight";
        assert_eq!(
            got,
            [
                (1, "`fault:` says how the `run:` line above it faults, and there is none".to_string()),
                (3, format!("unknown fault kind `race` (expected one of: {kinds})")),
                (4, format!("`fault:` needs the kind of fault (one of: {kinds})")),
                (5, "`block(..)` is given twice".to_string()),
                (6, "block: bad coordinate `x` (expected a number)".to_string()),
                (7, "unexpected `warp(1)` after the fault kind (expected `block(..)` or `thread(..)`)".to_string()),
                (8, "thread: expected 1 to 3 coordinates, found `(1,2,3,4)`".to_string()),
                (
                    10,
                    "a second `fault:` line for the `run:` on line 2 (the first is on line 9): a run faults once"
                        .to_string()
                ),
                (
                    11,
                    "`Fault:` looks like a directive but is not one: write `fault:` (lowercase, no space before `:`)"
                        .to_string()
                ),
                (12, "grid: bad dimension `0` (expected a positive integer)".to_string()),
            ]
            .iter()
            .map(|(l, m)| (*l, m.as_str()))
            .collect::<Vec<_>>()
        );
    }
    #[test]
    fn test_config_subset_of_toml() {
        let ok = parse_test_config("# the library\n\nstrict = true  # every run must expect\n").unwrap();
        assert_eq!(ok, TestConfig { strict: true, strict_line: Some(3) });
        assert_eq!(parse_test_config("strict=false").unwrap().strict, false);
        assert_eq!(parse_test_config("").unwrap(), TestConfig::default());
        let e = |t: &str| parse_test_config(t).unwrap_err();
        let at = |t: &str| {
            let x = e(t);
            (x.line, x.col, x.message)
        };
        assert_eq!(at("strict = yes"), (1, 10, "`strict` must be `true` or `false`, not `yes`".to_string()));
        assert_eq!(at("\n  stric = true"), (2, 3, "unknown key `stric` (the one key is `strict`)".to_string()));
        assert_eq!(at("strict = true\nstrict = false"), (2, 1, "`strict` is set twice (first on line 1)".to_string()));
        assert_eq!(at("[test]\nstrict = true").1, 1);
        assert!(at("[test]").2.starts_with("tables are not supported"));
        assert_eq!(at("strict true").2, "expected `KEY = VALUE` (e.g. `strict = true`), found `strict true`");
        assert_eq!(at("strict =").2, "`strict` needs a value: `true` or `false`");
        assert_eq!(at("= true").2, "expected a key before `=` (the one key is `strict`)");
        assert_eq!(at("strict = \"true\"").2, "`strict` must be `true` or `false`, not `\"true\"`");
    }
}
