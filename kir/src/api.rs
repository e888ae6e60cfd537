//! `kir::api`: kir as a library — parse and check a `.kir` module, launch its kernels in the
//! interpreter with ordinary Rust values, read the results back, emit PTX, run passes.
//!
//! ```
//! use kir::api::Module;
//!
//! let src = r#"
//! kernel @scale(%x: ptr<global, f32>, %y: ptr<global, f32>, %a: f32, %n: u32) {
//! entry:
//!   %i = global_id.x
//!   %inb = lt.u32 %i, %n
//!   br %inb, body, exit
//! body:
//!   %v = load %x[%i]
//!   %r = mul.f32 %v, %a
//!   store %y[%i], %r
//!   jmp exit
//! exit:
//!   ret
//! }
//! "#;
//! let m = Module::parse(src)?;
//! let x: Vec<f32> = (0..100).map(|i| i as f32).collect();
//! let out = m
//!     .kernel("scale")?
//!     .launch(1, 128)
//!     .arg("x", &x[..])
//!     .arg("y", vec![0.0f32; 100])
//!     .arg("a", 2.0f32)
//!     .arg("n", 100u32)
//!     .run()?;
//! let y: Vec<f32> = out.read("y")?;
//! assert_eq!(y[99], 198.0);
//! # Ok::<(), kir::api::Error>(())
//! ```
//!
//! # Guarantees
//! - A [`Module`] has passed every check `kir check` runs (the verifier, then barrier
//!   verification); a module that does not is never made. Its warnings are kept
//!   ([`Module::warnings`]).
//! - Every failure is one [`Error`] (`Display` + [`std::error::Error`]), classified by
//!   [`ErrorKind`]. When the failure has located diagnostics (a parse or check error, a kernel fault,
//!   a pass that rejects a kernel), `Display` renders them against the module's source as
//!   `kir check` does (`file:line:col`, carets, notes, no colour); [`Error::location`] gives the
//!   line and column. Nothing here panics on user input.
//! - Arguments are bound by parameter name, each parameter exactly once, with the types checked
//!   against the parameters: a pointer parameter `ptr<global, T>` takes a buffer of exactly `T`
//!   (a slice, `Vec` or array of the matching Rust type, see [`Element`]), a scalar parameter a
//!   value of exactly its type (`n: u32` takes `1000u32`, not `1000`). Unknown names, a name given
//!   twice, a missing argument or a wrong type are [`ErrorKind::Argument`] errors naming the
//!   parameter and its type; no launch happens.
//! - Launches run in the kir interpreter ([`kir_interp::launch_verified`]) with race detection and
//!   uninitialized-shared-memory checks **on** by default ([`Launch::races`], [`Launch::uninit`]
//!   turn them off), and its default fuel; a kernel fault is [`ErrorKind::KernelFault`].
//! - Results are read back by parameter name and typed: [`Output::read`] of an `f32` buffer as
//!   `u32` is an error, never a reinterpretation.
//! - PTX ([`Module::ptx`], [`compile_to_ptx`]) is what `kir ptx` emits: byte-for-byte deterministic,
//!   with the `.kir` line of each instruction in comments.
//!
//! # The stages, one by one
//! For a tool that renders diagnostics itself (the `kir` command line tool does: colour, the files
//! a module imports), the stages [`Module`] strings together are here too, each taking and
//! returning the IR's own types: [`load_source`] / [`load_file`] (text and its imports to a
//! `kir_ir::Module` and the `SourceMap` its spans point into), [`check`] / [`check_keeping`] (the
//! one way to a [`Checked`] module: `kir check`), [`check_for_passes`] and [`run_pipeline`] (a
//! pass pipeline on a checked module, with dumps, statistics and timings: `kir opt`),
//! [`emit_module`] / [`emit_kernel_in_module`] (PTX of a checked module: `kir ptx`),
//! [`launch_verified`] (a kernel of a checked module in the interpreter, arguments bound by the
//! caller: `kir run`) and [`format_source`] (canonical text with the source's comments:
//! `kir fmt`). They are the functions of the crates below (re-exported, so their guarantees are
//! those crates' module headers), and they never panic on user input.
//!
//! What this module does not do: run on a GPU (see `kir/examples/interp_vs_cudarc.rs` for the
//! `kir::gpu::GpuRunner` side, the `gpu` feature) or run launch graphs (`kir run --graph`).

use kir_interp::{Arg, Buffer, LaunchConfig};
use kir_ir::diag::{Diagnostic, SourceMap};
use kir_ir::types::{AddrSpace, Constant, ScalarType, Type};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

pub use half::{bf16, f16};
pub use kir_backend_ptx::SmVersion;
pub use kir_interp::{FaultKind, Stats};

// The stages one by one (see "The stages, one by one" above).
pub use kir_backend_ptx::{emit_kernel_in_module, emit_module, PtxOptions};
pub use kir_interp::launch_verified;
pub use kir_ir::text::format::format_source;
pub use kir_ir::text::load::{load_file, load_source, LoadError, Loaded};
pub use kir_ir::verify::{check, check_keeping, Checked};
pub use kir_passes::{
    check_input as check_for_passes, parse_pipeline, registry, run_pipeline, PassError, Pipeline, Report, RunConfig,
    DEFAULT_PIPELINE,
};

// ---------------------------------------------------------------------------------------------
// Errors

/// What kind of failure an [`Error`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading a file failed.
    Io,
    /// The text is not valid `.kir` syntax.
    Parse,
    /// The module parses but fails the verifier or barrier verification.
    Check,
    /// No kernel of that name in the module.
    UnknownKernel,
    /// Arguments: unknown or missing parameter, a parameter given twice, a wrong type.
    Argument,
    /// The launch itself is wrong (shape, `reqntid`, resource limits).
    InvalidLaunch,
    /// The kernel did something undefined (out of bounds, race, barrier divergence...) or ran out
    /// of fuel.
    KernelFault(FaultKind),
    /// Reading a result: no such buffer, or not of the requested element type.
    Read,
    /// A pass pipeline that does not parse, or a pass that failed.
    Pass,
    /// PTX emission failed.
    Ptx,
    /// A bug of kir itself.
    Internal,
}

/// Every failure of this API. `Display` renders the located diagnostics with the source when there
/// are any, the one-line message otherwise.
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    /// Printed before the rendered diagnostics (e.g. which pass failed).
    headline: bool,
    diagnostics: Vec<Diagnostic>,
    /// The files the diagnostics point into (the module's file and its imports).
    sources: Option<Arc<SourceMap>>,
}

impl Error {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into(), headline: false, diagnostics: vec![], sources: None }
    }

    fn located(kind: ErrorKind, message: String, diagnostics: Vec<Diagnostic>, sources: &Arc<SourceMap>) -> Error {
        Error { kind, message, headline: false, diagnostics, sources: Some(sources.clone()) }
    }

    fn from_diagnostics(kind: ErrorKind, diagnostics: Vec<Diagnostic>, sources: &Arc<SourceMap>) -> Error {
        let message = diagnostics
            .iter()
            .find(|d| d.is_error())
            .or(diagnostics.first())
            .map(|d| d.message.clone())
            .unwrap_or_else(|| "failed".into());
        Error::located(kind, message, diagnostics, sources)
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// One line saying what went wrong (the first error's message).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The located diagnostics (empty when the failure has no place in the source).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The fault, when this is a kernel fault.
    pub fn fault(&self) -> Option<FaultKind> {
        match self.kind {
            ErrorKind::KernelFault(f) => Some(f),
            _ => None,
        }
    }

    /// The 1-based line and column of the first diagnostic's primary span, when it has one.
    pub fn location(&self) -> Option<(usize, usize)> {
        let sources = self.sources.as_deref()?;
        let span = self.diagnostics.iter().find_map(|d| d.primary.as_ref())?.span;
        let (file, range) = sources.locate(span)?;
        let source = &sources.files[file].text;
        // An offset inside a character has no location.
        source.is_char_boundary(range.start).then(|| kir_ir::span::line_col(source, range.start))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.sources {
            Some(sources) if !self.diagnostics.is_empty() => {
                if self.headline {
                    writeln!(f, "{}", self.message)?;
                }
                let text = kir_ir::diag::render_map(&self.diagnostics, sources, false);
                f.write_str(text.trim_end())
            }
            _ => f.write_str(&self.message),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `?` in `main` and `unwrap` print Debug: show the rendered error, not the fields.
        write!(f, "{:?} error:\n{self}", self.kind)
    }
}

impl std::error::Error for Error {}

// ---------------------------------------------------------------------------------------------
// Modules and kernels

/// A parsed `.kir` module that passed the verifier and barrier verification, with its source
/// (for rendering errors).
#[derive(Clone, Debug)]
pub struct Module {
    ir: Checked,
    file: String,
    /// The module's file and the files it imports.
    sources: Arc<SourceMap>,
}

impl Module {
    /// Parses and checks `.kir` text (errors name it `input.kir`).
    ///
    /// ```
    /// use kir::api::{ErrorKind, Module};
    /// let err = Module::parse("kernel @k(%n: u32) {\nentry:\n  br %n, a, a\na:\n  ret\n}\n").unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::Check);
    /// assert_eq!(err.message(), "the condition of `br` must be a `pred`, but `%n` has type `u32`");
    /// assert_eq!(err.location(), Some((3, 3)));
    /// // Display renders the diagnostic against the source, as `kir check` does.
    /// assert!(err.to_string().contains("┌─ input.kir:3:3"), "{err}");
    ///
    /// assert_eq!(Module::parse("kernel @k(").unwrap_err().kind(), ErrorKind::Parse);
    /// ```
    pub fn parse(source: &str) -> Result<Module, Error> {
        Module::parse_named("input.kir", source)
    }

    /// Parses and checks `.kir` text; `file` is the name errors are rendered with.
    pub fn parse_named(file: &str, source: &str) -> Result<Module, Error> {
        let sources = Arc::new(SourceMap::single(file, source));
        let ir = kir_ir::parse(source).map_err(|d| Error::from_diagnostics(ErrorKind::Parse, d, &sources))?;
        Module::check(ir, file.to_string(), sources)
    }

    /// Reads, parses and checks a `.kir` file, with the files it imports (`import "..."`,
    /// relative to it).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Module, Error> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let loaded = kir_ir::text::load::load_file(path).map_err(|e| {
            let sources = Arc::new(e.sources);
            match e.diagnostics.first() {
                Some(d) if d.primary.is_none() => Error::new(ErrorKind::Io, d.message.clone()),
                _ => Error::from_diagnostics(ErrorKind::Parse, e.diagnostics, &sources),
            }
        })?;
        Module::check(loaded.module, file, Arc::new(loaded.sources))
    }

    fn check(ir: kir_ir::Module, file: String, sources: Arc<SourceMap>) -> Result<Module, Error> {
        match kir_ir::verify::check(ir) {
            Ok(ir) => Ok(Module { ir, file, sources }),
            Err(d) => Err(Error::from_diagnostics(ErrorKind::Check, d.into_vec(), &sources)),
        }
    }

    /// The kernel named `name` (without `@`).
    ///
    /// ```
    /// let m = kir::api::Module::parse("kernel @k() {\nentry:\n  ret\n}\n")?;
    /// assert_eq!(m.kernel("k")?.name(), "k");
    /// assert_eq!(m.kernel("nope").unwrap_err().to_string(), "no kernel @nope in input.kir (kernels: @k)");
    /// # Ok::<(), kir::api::Error>(())
    /// ```
    pub fn kernel(&self, name: &str) -> Result<Kernel<'_>, Error> {
        let name = name.trim_start_matches('@');
        match self.ir.kernel(name) {
            Some(ir) => Ok(Kernel { module: self, ir }),
            None => {
                let names: Vec<String> = self.ir.kernels.iter().map(|k| format!("@{}", k.name)).collect();
                Err(Error::new(
                    ErrorKind::UnknownKernel,
                    format!("no kernel @{name} in {} (kernels: {})", self.file, names.join(", ")),
                ))
            }
        }
    }

    /// The names of the kernels, in order.
    pub fn kernel_names(&self) -> impl Iterator<Item = &str> {
        self.ir.kernels.iter().map(|k| k.name.as_str())
    }

    /// The checks' warnings (the module has no errors).
    pub fn warnings(&self) -> &[Diagnostic] {
        self.ir.warnings()
    }

    /// The IR, for what this API does not cover.
    pub fn ir(&self) -> &kir_ir::Module {
        &self.ir
    }

    /// The checked IR (what `kir_passes::run_pipeline` and `kir_backend_ptx::emit_module` take;
    /// `kir_interp::launch_verified` takes one of its kernels, `checked().verified_kernel(name)`).
    pub fn checked(&self) -> &Checked {
        &self.ir
    }

    /// The module as `.kir` text (the printer's canonical form).
    pub fn to_text(&self) -> String {
        kir_ir::print_module(&self.ir)
    }

    /// The PTX module of every kernel, for `sm` (what `kir ptx --sm` prints).
    ///
    /// ```
    /// use kir::api::{Module, SmVersion};
    /// let m = Module::parse("kernel @k() {\nentry:\n  ret\n}\n")?;
    /// let ptx = m.ptx(SmVersion::Sm90)?;
    /// assert!(ptx.contains(".target sm_90") && ptx.contains(".visible .entry k("));
    /// # Ok::<(), kir::api::Error>(())
    /// ```
    pub fn ptx(&self, sm: SmVersion) -> Result<String, Error> {
        kir_backend_ptx::emit_module(&self.ir, &self.ptx_options(sm))
            .map_err(|d| Error::from_diagnostics(ErrorKind::Ptx, d, &self.sources))
    }

    fn ptx_options(&self, sm: SmVersion) -> kir_backend_ptx::PtxOptions {
        kir_backend_ptx::PtxOptions { sm, source: self.sources.files.first().map(|f| f.text.clone()), comments: true }
    }

    /// Runs a pass pipeline (`kir opt --passes` syntax, e.g. `"fold,dce"` or
    /// [`kir_passes::DEFAULT_PIPELINE`]) with the verifier after every pass, and returns the
    /// optimized module (checked again). Errors keep pointing into the original source.
    ///
    /// ```
    /// let src = "kernel @k(%p: ptr<global, u32>) {\nentry:\n  %a = add.u32 2, 3\n  store %p[0], %a\n  ret\n}\n";
    /// let m = kir::api::Module::parse(src)?.run_passes("fold,dce")?;
    /// assert!(m.to_text().contains("store %p[0], 5"), "{}", m.to_text());
    /// # Ok::<(), kir::api::Error>(())
    /// ```
    pub fn run_passes(&self, pipeline: &str) -> Result<Module, Error> {
        let p = kir_passes::parse_pipeline(pipeline)
            .map_err(|e| Error::new(ErrorKind::Pass, format!("pass pipeline `{pipeline}`: {e}")))?;
        let cfg = kir_passes::RunConfig { verify_each: true, ..kir_passes::RunConfig::default() };
        let (ir, _) = kir_passes::run_pipeline(self.ir.clone(), &p, &cfg, &mut std::io::sink()).map_err(|e| {
            let diags = e.diagnostics().to_vec();
            let mut err = Error::located(ErrorKind::Pass, e.to_string(), diags, &self.sources);
            err.headline = true;
            err
        })?;
        Ok(Module { ir, file: self.file.clone(), sources: self.sources.clone() })
    }
}

/// Reads, parses and checks the `.kir` file at `path` and returns its PTX for `sm`: what a
/// `build.rs` calls to ship PTX with a crate that loads it with cudarc (see `docs/api.md`).
///
/// ```no_run
/// // build.rs
/// let ptx = kir::api::compile_to_ptx("kernels/scale.kir", kir::api::SmVersion::Sm80)?;
/// let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("scale.ptx");
/// std::fs::write(out, ptx).unwrap();
/// println!("cargo:rerun-if-changed=kernels/scale.kir");
/// # Ok::<(), kir::api::Error>(())
/// ```
pub fn compile_to_ptx(path: impl AsRef<Path>, sm: SmVersion) -> Result<String, Error> {
    Module::from_file(path)?.ptx(sm)
}

/// A kernel of a [`Module`].
#[derive(Clone, Copy, Debug)]
pub struct Kernel<'m> {
    module: &'m Module,
    ir: &'m kir_ir::Kernel,
}

impl<'m> Kernel<'m> {
    /// The name, without `@`.
    pub fn name(&self) -> &'m str {
        &self.ir.name
    }

    /// The name of the kernel's `.entry` in the PTX (`.` becomes `$`).
    pub fn ptx_entry_name(&self) -> String {
        ptx_entry_name(&self.ir.name)
    }

    /// The parameters: name (without `%`) and type, in order.
    pub fn params(&self) -> Vec<(&'m str, Type)> {
        self.ir.params.iter().map(|p| (self.ir.value(*p).name.as_str(), self.ir.value(*p).ty)).collect()
    }

    /// The IR of the kernel.
    pub fn ir(&self) -> &'m kir_ir::Kernel {
        self.ir
    }

    /// A PTX module holding this kernel and the functions it calls (as `.func`s).
    pub fn ptx(&self, sm: SmVersion) -> Result<String, Error> {
        kir_backend_ptx::emit_kernel_in_module(&self.module.ir, &self.ir.name, &self.module.ptx_options(sm))
            .map_err(|d| Error::from_diagnostics(ErrorKind::Ptx, d, &self.module.sources))
    }

    /// Starts a launch over `grid` blocks of `block` threads (each a `u32` for 1-D, `[x, y, z]`
    /// or a tuple); add arguments with [`Launch::arg`], then [`Launch::run`].
    pub fn launch(&self, grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Launch<'m> {
        Launch {
            kernel: *self,
            config: LaunchConfig { grid: grid.into().0, block: block.into().0, dynamic_shared_bytes: 0 },
            options: kir_interp::Options { races: true, uninit: true, ..kir_interp::Options::default() },
            given: vec![None; self.ir.params.len()],
            error: None,
        }
    }

    fn param_list(&self) -> String {
        self.params().iter().map(|(n, t)| format!("{n}: {t}")).collect::<Vec<_>>().join(", ")
    }
}

/// A grid or block shape: `x`, `[x, y, z]`, `(x, y)` or `(x, y, z)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3(pub [u32; 3]);

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3([x, 1, 1])
    }
}
impl From<[u32; 3]> for Dim3 {
    fn from(d: [u32; 3]) -> Dim3 {
        Dim3(d)
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3([x, y, 1])
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3([x, y, z])
    }
}

// ---------------------------------------------------------------------------------------------
// Host values

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that is a kir scalar type: `bool` (`pred`), `u8`, `i8` (`s8`), `u16`, `i16`,
/// `u32`, `i32`, `u64`, `i64`, [`f16`](struct@f16), [`bf16`], `f32`, `f64`. Buffers of these are what pointer
/// parameters take and what [`Output::read`] returns. Sealed.
pub trait Element: Copy + sealed::Sealed {
    /// The kir type.
    const TYPE: ScalarType;
    /// The Rust spelling, for error messages.
    const RUST_NAME: &'static str;
    /// The value's bits, zero-extended.
    fn to_bits(self) -> u64;
    /// The value of the low bits.
    fn from_bits(bits: u64) -> Self;
}

macro_rules! element {
    ($($t:ty => $st:ident, $name:literal, |$v:ident| $to:expr, |$b:ident| $from:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const TYPE: ScalarType = ScalarType::$st;
            const RUST_NAME: &'static str = $name;
            fn to_bits(self) -> u64 {
                let $v = self;
                $to
            }
            fn from_bits($b: u64) -> Self {
                $from
            }
        }
        impl sealed::Sealed for &[$t] {}
        impl KernelArg for &[$t] {
            fn into_arg(self) -> ArgValue {
                ArgValue::Buffer(Buffer::from_bits(<$t>::TYPE, self.iter().map(|x| <$t as Element>::to_bits(*x))))
            }
        }
        impl sealed::Sealed for &Vec<$t> {}
        impl KernelArg for &Vec<$t> {
            fn into_arg(self) -> ArgValue {
                self.as_slice().into_arg()
            }
        }
        impl sealed::Sealed for Vec<$t> {}
        impl KernelArg for Vec<$t> {
            fn into_arg(self) -> ArgValue {
                self.as_slice().into_arg()
            }
        }
        impl<const N: usize> sealed::Sealed for &[$t; N] {}
        impl<const N: usize> KernelArg for &[$t; N] {
            fn into_arg(self) -> ArgValue {
                self[..].into_arg()
            }
        }
        impl KernelArg for $t {
            fn into_arg(self) -> ArgValue {
                ArgValue::Scalar(Constant::from_bits(<$t>::TYPE, <$t as Element>::to_bits(self)))
            }
        }
    )*};
}

element! {
    bool => Pred, "bool", |v| v as u64, |b| b & 1 != 0;
    u8 => U8, "u8", |v| v as u64, |b| b as u8;
    i8 => S8, "i8", |v| v as u8 as u64, |b| b as u8 as i8;
    u16 => U16, "u16", |v| v as u64, |b| b as u16;
    i16 => S16, "i16", |v| v as u16 as u64, |b| b as u16 as i16;
    u32 => U32, "u32", |v| v as u64, |b| b as u32;
    i32 => S32, "i32", |v| v as u32 as u64, |b| b as u32 as i32;
    u64 => U64, "u64", |v| v, |b| b;
    i64 => S64, "i64", |v| v as u64, |b| b as i64;
    f16 => F16, "half::f16", |v| v.to_bits() as u64, |b| f16::from_bits(b as u16);
    bf16 => BF16, "half::bf16", |v| v.to_bits() as u64, |b| bf16::from_bits(b as u16);
    f32 => F32, "f32", |v| v.to_bits() as u64, |b| f32::from_bits(b as u32);
    f64 => F64, "f64", |v| v.to_bits(), |b| f64::from_bits(b);
}

/// The Rust spelling of a kir scalar type.
fn rust_name(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Pred => bool::RUST_NAME,
        ScalarType::U8 => u8::RUST_NAME,
        ScalarType::S8 => i8::RUST_NAME,
        ScalarType::U16 => u16::RUST_NAME,
        ScalarType::S16 => i16::RUST_NAME,
        ScalarType::U32 => u32::RUST_NAME,
        ScalarType::S32 => i32::RUST_NAME,
        ScalarType::U64 => u64::RUST_NAME,
        ScalarType::S64 => i64::RUST_NAME,
        ScalarType::F16 => f16::RUST_NAME,
        ScalarType::BF16 => bf16::RUST_NAME,
        ScalarType::F32 => f32::RUST_NAME,
        ScalarType::F64 => f64::RUST_NAME,
    }
}

/// An argument value, made by [`KernelArg::into_arg`].
#[derive(Clone, Debug)]
pub enum ArgValue {
    /// For a scalar parameter.
    Scalar(Constant),
    /// For a `ptr<global, T>` parameter: a buffer the launch gets its own copy of.
    Buffer(Buffer),
}

impl ArgValue {
    fn describe(&self) -> String {
        match self {
            ArgValue::Scalar(c) => format!("a {}", rust_name(c.ty)),
            ArgValue::Buffer(b) => format!("a buffer of {} (`&[{}]`)", b.elem, rust_name(b.elem)),
        }
    }
}

/// What [`Launch::arg`] accepts: a scalar of an [`Element`] type for a scalar parameter; for a
/// pointer parameter a slice, `&Vec`, `Vec` or array reference of one, or a
/// [`kir_interp::Buffer`]. Sealed.
pub trait KernelArg: sealed::Sealed {
    /// The value to bind.
    fn into_arg(self) -> ArgValue;
}

impl sealed::Sealed for Buffer {}
impl KernelArg for Buffer {
    fn into_arg(self) -> ArgValue {
        ArgValue::Buffer(self)
    }
}

// ---------------------------------------------------------------------------------------------
// Launches

/// A launch being set up: arguments by parameter name, checks and limits. [`Launch::run`] runs it.
#[derive(Clone, Debug)]
#[must_use = "a launch does nothing until `.run()`"]
pub struct Launch<'m> {
    kernel: Kernel<'m>,
    config: LaunchConfig,
    options: kir_interp::Options,
    given: Vec<Option<ArgValue>>,
    /// The first argument error; reported by `run`.
    error: Option<Error>,
}

impl<'m> Launch<'m> {
    /// Binds the parameter `name` (with or without `%`). Mistakes (unknown name, given twice,
    /// wrong type) are reported by [`Launch::run`].
    ///
    /// ```
    /// let m = kir::api::Module::parse(
    ///     "kernel @fill(%p: ptr<global, u32>, %v: u32) {\nentry:\n  %i = tid.x\n  store %p[%i], %v\n  ret\n}\n",
    /// )?;
    /// let k = m.kernel("fill")?;
    /// let out = k.launch(1, 4).arg("p", vec![0u32; 4]).arg("v", 7u32).run()?;
    /// assert_eq!(out.read::<u32>("p")?, [7, 7, 7, 7]);
    ///
    /// let err = k.launch(1, 4).arg("p", vec![0u32; 4]).arg("v", 7).run().unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "argument `v`: parameter `v: u32` takes a u32, given a i32 (an integer literal is i32 unless suffixed: write e.g. `1u32`)"
    /// );
    /// # Ok::<(), kir::api::Error>(())
    /// ```
    pub fn arg(mut self, name: &str, value: impl KernelArg) -> Launch<'m> {
        if self.error.is_some() {
            return self;
        }
        if let Err(e) = self.bind(name, value.into_arg()) {
            self.error = Some(e);
        }
        self
    }

    fn bind(&mut self, name: &str, value: ArgValue) -> Result<(), Error> {
        let k = self.kernel;
        let name = name.trim_start_matches('%');
        let arg_err = |m: String| Error::new(ErrorKind::Argument, m);
        let Some((i, p)) = k.ir.param_by_name(name) else {
            return Err(arg_err(format!(
                "kernel @{} has no parameter `{name}` (parameters: {})",
                k.name(),
                k.param_list()
            )));
        };
        if self.given[i].is_some() {
            return Err(arg_err(format!("parameter `{name}` is given twice")));
        }
        let ty = k.ir.value(p).ty;
        let wrong = |takes: String| {
            let mut m =
                format!("argument `{name}`: parameter `{name}: {ty}` takes {takes}, given {}", value.describe());
            if matches!((ty, &value), (Type::Scalar(t), ArgValue::Scalar(c)) if c.ty == ScalarType::S32 && t.is_int()) {
                m.push_str(&format!(
                    " (an integer literal is i32 unless suffixed: write e.g. `1{}`)",
                    rust_name(ty_scalar(ty))
                ));
            }
            arg_err(m)
        };
        match (ty, &value) {
            (Type::Scalar(t), ArgValue::Scalar(c)) if c.ty == t => {}
            (Type::Scalar(t), _) => return Err(wrong(format!("a {}", rust_name(t)))),
            (Type::Ptr(AddrSpace::Shared, _), _) => {
                return Err(arg_err(format!(
                    "parameter `{name}: {ty}` is a shared-memory pointer; a launch cannot pass one"
                )))
            }
            (Type::Ptr(_, e), ArgValue::Buffer(b)) if b.elem == e => {}
            (Type::Ptr(_, e), _) => {
                return Err(wrong(format!("a buffer of {e} (`&[{}]`)", rust_name(e))));
            }
        }
        self.given[i] = Some(value);
        Ok(())
    }

    /// Bytes of dynamic shared memory per block (default 0).
    pub fn dynamic_shared_bytes(mut self, bytes: u32) -> Launch<'m> {
        self.config.dynamic_shared_bytes = bytes;
        self
    }

    /// Data-race detection (default on; its shadow memory limits the buffers to
    /// [`kir_interp::MAX_RACE_BYTES`] in total).
    pub fn races(mut self, on: bool) -> Launch<'m> {
        self.options.races = on;
        self
    }

    /// Reports of reads of shared memory no thread has written (default on).
    pub fn uninit(mut self, on: bool) -> Launch<'m> {
        self.options.uninit = on;
        self
    }

    /// The launch's fuel in thread-instructions, also the per-warp limit (as `kir run --fuel`).
    pub fn fuel(mut self, thread_instructions: u64) -> Launch<'m> {
        self.options = self.options.clone().with_fuel(thread_instructions);
        self
    }

    /// Host threads for blocks (default: all cores); results do not depend on it.
    pub fn threads(mut self, n: usize) -> Launch<'m> {
        self.options.threads = Some(n);
        self
    }

    /// Runs the launch in the interpreter and returns every buffer's final contents.
    ///
    /// A kernel fault is an [`ErrorKind::KernelFault`] located at the faulting instruction:
    /// ```
    /// let src = "kernel @oob(%p: ptr<global, f32>) {\nentry:\n  %i = tid.x\n  store %p[%i], 1.0\n  ret\n}\n";
    /// let m = kir::api::Module::parse(src)?;
    /// let err = m.kernel("oob")?.launch(1, 8).arg("p", vec![0.0f32; 4]).run().unwrap_err();
    /// assert_eq!(err.fault(), Some(kir::api::FaultKind::OutOfBounds));
    /// assert_eq!(err.location(), Some((4, 3)));
    /// assert!(err.to_string().contains("input.kir:4:3"), "{err}");
    /// # Ok::<(), kir::api::Error>(())
    /// ```
    pub fn run(self) -> Result<Output, Error> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let k = self.kernel;
        let mut args = Vec::with_capacity(self.given.len());
        let mut buffers = Vec::new();
        let mut names = Vec::new();
        let mut total: u64 = 0;
        for (given, p) in self.given.into_iter().zip(&k.ir.params) {
            let v = k.ir.value(*p);
            match given {
                None => {
                    return Err(Error::new(
                        ErrorKind::Argument,
                        format!("missing argument for parameter `{}: {}` of @{}", v.name, v.ty, k.name()),
                    ))
                }
                Some(ArgValue::Scalar(c)) => args.push(Arg::Scalar(c)),
                Some(ArgValue::Buffer(b)) => {
                    total = total.saturating_add(b.bytes.len() as u64);
                    args.push(Arg::Buffer(buffers.len()));
                    buffers.push(b);
                    names.push(v.name.to_string());
                }
            }
        }
        kir_interp::check_memory(total, "the arguments' buffers")
            .map_err(|m| Error::new(ErrorKind::InvalidLaunch, m))?;
        let m = k.module;
        let verified = m
            .ir
            .verified_kernel(&k.ir.name)
            .ok_or_else(|| Error::new(ErrorKind::UnknownKernel, format!("no kernel @{} in {}", k.ir.name, m.file)))?;
        let stats =
            kir_interp::launch_verified(verified, &self.config, &args, &mut buffers, &self.options).map_err(|e| {
                let kind = match e.kind {
                    kir_interp::ErrorKind::KernelFault(f) => ErrorKind::KernelFault(f),
                    kir_interp::ErrorKind::InvalidLaunch => ErrorKind::InvalidLaunch,
                    kir_interp::ErrorKind::Internal => ErrorKind::Internal,
                };
                let d = e.to_diagnostic();
                Error::located(kind, e.to_string(), vec![d], &m.sources)
            })?;
        let buffers = names.into_iter().zip(buffers).collect();
        Ok(Output { kernel: k.name().to_string(), buffers, stats })
    }
}

fn ty_scalar(t: Type) -> ScalarType {
    match t {
        Type::Scalar(s) | Type::Ptr(_, s) => s,
    }
}

/// The results of a launch: the final contents of every buffer argument, by parameter name.
#[derive(Clone, Debug)]
pub struct Output {
    kernel: String,
    buffers: Vec<(String, Buffer)>,
    stats: Stats,
}

impl Output {
    /// The final contents of the buffer passed for parameter `name`, as `T`, which must be the
    /// buffer's element type.
    ///
    /// ```
    /// let src = "kernel @k(%p: ptr<global, f32>) {\nentry:\n  store %p[0], 1.5\n  ret\n}\n";
    /// let m = kir::api::Module::parse(src)?;
    /// let out = m.kernel("k")?.launch(1, 1).arg("p", &[0.0f32; 2]).run()?;
    /// assert_eq!(out.read::<f32>("p")?, [1.5, 0.0]);
    /// assert_eq!(
    ///     out.read::<u32>("p").unwrap_err().to_string(),
    ///     "buffer `p` of @k holds f32: read it as Vec<f32>, not Vec<u32>"
    /// );
    /// # Ok::<(), kir::api::Error>(())
    /// ```
    pub fn read<T: Element>(&self, name: &str) -> Result<Vec<T>, Error> {
        let b = self.buffer(name)?;
        if b.elem != T::TYPE {
            return Err(Error::new(
                ErrorKind::Read,
                format!(
                    "buffer `{}` of @{} holds {}: read it as Vec<{}>, not Vec<{}>",
                    name.trim_start_matches('%'),
                    self.kernel,
                    b.elem,
                    rust_name(b.elem),
                    T::RUST_NAME
                ),
            ));
        }
        Ok((0..b.len()).map(|i| T::from_bits(b.get_bits(i))).collect())
    }

    /// The buffer passed for parameter `name`, untyped.
    pub fn buffer(&self, name: &str) -> Result<&Buffer, Error> {
        let name = name.trim_start_matches('%');
        self.buffers.iter().find(|(n, _)| n == name).map(|(_, b)| b).ok_or_else(|| {
            let names: Vec<&str> = self.buffers.iter().map(|(n, _)| n.as_str()).collect();
            Error::new(
                ErrorKind::Read,
                format!("@{} has no buffer parameter `{name}` (buffers: {})", self.kernel, names.join(", ")),
            )
        })
    }

    /// What the launch did (instructions, bytes, barriers).
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
}

/// The name of the PTX `.entry` kir emits for the kernel or device function `name` (without `@`):
/// `.` becomes `$` (a fused kernel `@a.b` is the entry `a$b`). [`Kernel::ptx_entry_name`] for a
/// kernel of a [`Module`].
///
/// ```
/// assert_eq!(kir::api::ptx_entry_name("relu_deriv.mul"), "relu_deriv$mul");
/// ```
pub fn ptx_entry_name(name: &str) -> String {
    name.replace('.', "$")
}
