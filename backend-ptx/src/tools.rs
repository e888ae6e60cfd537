//! Finding and running NVIDIA's command-line tools (`ptxas`, `nvdisasm`) and NVRTC's library, as
//! installed from PyPI by `scripts/setup-tools.sh` into `.tools/py` of the workspace.
//!
//! Guarantees:
//! - [`find_ptxas`] looks, in order, at `$KIR_PTXAS`, `.tools/py/nvidia/cuda_nvcc/bin/ptxas` under
//!   the workspace root (found from `CARGO_MANIFEST_DIR` at build time, then from the current
//!   directory upward), then `ptxas` on `PATH`; it returns only files that exist.
//!   `KIR_PTXAS=none` finds none (what a fresh clone without `.tools/` sees).
//! - A missing tool's message names the one command that installs it ([`INSTALL_HINT`]).
//! - [`run_ptxas`] never panics: a missing tool, a failed spawn or a rejected module is an `Err`
//!   carrying ptxas's own messages. On success it reports per-kernel register counts parsed from
//!   `ptxas -v`.
//! - A ptxas that *crashes* is never reported as rejecting the PTX ([`PtxasError`], from
//!   [`assemble_checked`] / [`run_ptxas_checked`]; the `String` errors of [`run_ptxas`] and
//!   [`assemble`] are its `Display`): killed by a signal (`ptxas crashed (SIGSEGV) on ...`), an
//!   exit status of 128 + a crash signal (a wrapper script whose ptxas crashed: exit 139 is
//!   SIGSEGV), or a non-zero exit without any error message (no line containing `error` or
//!   `fatal`) is [`PtxasError::Crashed`]; only a non-zero exit with ptxas's error messages is
//!   [`PtxasError::Rejected`]. A crash of NVIDIA's tool is not a verdict on the PTX.
//! - [`require_tool_or_skip`] is the policy for tests that need a tool: with `CI=true` a missing
//!   tool panics (the test fails) with the install hint; otherwise it prints a `skip:` line to
//!   stderr and the test returns early.

use crate::SmVersion;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The hint printed when a tool is missing: the command to run, from the repository root.
pub const INSTALL_HINT: &str = "run `bash scripts/setup-tools.sh` to install it from PyPI into .tools/";

/// Candidate workspace roots: the one this crate was built in, then the current directory and its
/// ancestors.
fn roots() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Some(parent) = manifest.parent() {
        out.push(parent.to_path_buf());
    }
    if let Ok(cwd) = std::env::current_dir() {
        out.extend(cwd.ancestors().map(Path::to_path_buf));
    }
    out
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Looks for a tool: the env override, then `.tools/py/<rel>` under a workspace root, then `PATH`.
fn find_tool(env: &str, rel: &[&str], name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    for root in roots() {
        for r in rel {
            let p = root.join(".tools/py").join(r);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    on_path(name)
}

/// `ptxas`: `$KIR_PTXAS`, `.tools/py/nvidia/cuda_nvcc/bin/ptxas`, then `PATH`; none when
/// `KIR_PTXAS=none`.
pub fn find_ptxas() -> Option<PathBuf> {
    if std::env::var_os("KIR_PTXAS").is_some_and(|v| v == "none") {
        return None;
    }
    find_tool("KIR_PTXAS", &["nvidia/cuda_nvcc/bin/ptxas"], "ptxas")
}

/// The release `ptxas --version` reports (`12.9.86` from `... V12.9.86`), if it runs and says one.
pub fn ptxas_version(ptxas: &Path) -> Option<String> {
    let out = Command::new(ptxas).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v = text
        .split_whitespace()
        .rev()
        .find(|w| w.starts_with('V') && w[1..].starts_with(|c: char| c.is_ascii_digit()))?;
    Some(v[1..].to_string())
}

/// `nvdisasm`: `$KIR_NVDISASM`, the PyPI wheel's locations under `.tools/py`, then `PATH`.
pub fn find_nvdisasm() -> Option<PathBuf> {
    find_tool("KIR_NVDISASM", &["nvidia/cu13/bin/nvdisasm", "nvidia/cuda_nvdisasm/bin/nvdisasm"], "nvdisasm")
}

/// NVRTC's shared library: `$KIR_NVRTC`, then `.tools/py/nvidia/cuda_nvrtc/lib/libnvrtc.so.12`.
pub fn find_nvrtc() -> Option<PathBuf> {
    find_tool("KIR_NVRTC", &["nvidia/cuda_nvrtc/lib/libnvrtc.so.12"], "libnvrtc.so.12")
}

/// What `ptxas -v` said about one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelResources {
    pub name: String,
    pub registers: u32,
}

/// The result of a successful `ptxas` run.
#[derive(Clone, Debug, Default)]
pub struct PtxasReport {
    pub kernels: Vec<KernelResources>,
    /// ptxas's stderr (the `-v` info lines, warnings).
    pub log: String,
    /// The cubin, when [`assemble`] was asked to keep it.
    pub cubin: Option<Vec<u8>>,
}

impl PtxasReport {
    pub fn registers(&self, kernel: &str) -> Option<u32> {
        self.kernels.iter().find(|k| k.name == kernel).map(|k| k.registers)
    }
}

/// Parses `ptxas -v` output: `Compiling entry function 'k' for 'sm_80'` followed by
/// `Used N registers`.
pub fn parse_ptxas_verbose(log: &str) -> Vec<KernelResources> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().map(str::to_string);
        } else if let Some(rest) = line.split("Used ").nth(1) {
            if let (Some(name), Some(n)) = (current.take(), rest.split_whitespace().next()) {
                if rest.split_whitespace().nth(1) == Some("registers,") || rest.contains("registers") {
                    if let Ok(n) = n.parse() {
                        out.push(KernelResources { name, registers: n });
                    }
                }
            }
        }
    }
    out
}

static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A scratch directory unique to this call, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, String> {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("kir-ptxas-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Why `ptxas` produced no cubin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PtxasError {
    /// No ptxas was found ([`find_ptxas`]).
    NotFound,
    /// kir could not run it (scratch files, spawn).
    Io(String),
    /// ptxas ran and rejected the module: its error messages.
    Rejected { ptxas: PathBuf, sm: &'static str, log: String },
    /// ptxas crashed: `how` is the signal (`SIGSEGV`), an exit status that stands for one
    /// (`exit 139 (SIGSEGV)`), or a failure without an error message (`exit 1 without an error
    /// message`); `log` is whatever it printed.
    Crashed { ptxas: PathBuf, sm: &'static str, how: String, log: String },
}

impl PtxasError {
    /// Whether ptxas crashed (a bug of NVIDIA's tool, not a verdict on the PTX).
    pub fn is_crash(&self) -> bool {
        matches!(self, PtxasError::Crashed { .. })
    }
}

impl std::fmt::Display for PtxasError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PtxasError::NotFound => write!(f, "ptxas not found ({INSTALL_HINT})"),
            PtxasError::Io(e) => write!(f, "{e}"),
            PtxasError::Rejected { ptxas, sm, log } => {
                write!(f, "ptxas ({}) rejected the module for {sm}:\n{log}", ptxas.display())
            }
            PtxasError::Crashed { ptxas, sm, how, log } => {
                write!(f, "ptxas crashed ({how}) on the module for {sm} ({})", ptxas.display())?;
                if !log.trim().is_empty() {
                    write!(f, ":\n{log}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for PtxasError {}

/// The conventional name of a signal number (`SIGSEGV` for 11), or `signal N`.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        31 => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

/// Signals that mean a program crashed (rather than was asked to stop).
const CRASH_SIGNALS: [i32; 6] = [4, 5, 6, 7, 8, 11];

/// How a process ended, when that was by a signal: `SIGSEGV`, or `exit 139 (SIGSEGV)` for a shell
/// wrapper whose program crashed (128 + a crash signal).
pub fn crash_of(status: &std::process::ExitStatus) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return Some(signal_name(sig));
        }
    }
    match status.code() {
        Some(c) if c > 128 && CRASH_SIGNALS.contains(&(c - 128)) => {
            Some(format!("exit {c} ({})", signal_name(c - 128)))
        }
        _ => None,
    }
}

/// Whether ptxas's output states an error (a rejection always does: `ptxas fatal`, `error :`).
fn states_an_error(log: &str) -> bool {
    log.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.contains("error") || l.contains("fatal")
    })
}

/// Classifies a finished ptxas run: `None` on success.
fn classify(ptxas: &Path, sm: SmVersion, status: &std::process::ExitStatus, log: &str) -> Option<PtxasError> {
    if status.success() {
        return None;
    }
    let (ptxas, sm, log) = (ptxas.to_path_buf(), sm.name(), log.to_string());
    if let Some(how) = crash_of(status) {
        return Some(PtxasError::Crashed { ptxas, sm, how, log });
    }
    if !states_an_error(&log) {
        let code = status.code().map_or("a failure".to_string(), |c| format!("exit {c}"));
        return Some(PtxasError::Crashed { ptxas, sm, how: format!("{code} without an error message"), log });
    }
    Some(PtxasError::Rejected { ptxas, sm, log })
}

/// SASS instructions per kernel of a cubin (`nvdisasm -c`, NOPs excluded), keyed by kernel name:
/// the static code-size measure of the benchmarks that compare kir with NVRTC.
pub fn sass_instruction_counts(cubin: &[u8]) -> Result<std::collections::BTreeMap<String, usize>, String> {
    Ok(sass_instructions(cubin)?.into_iter().map(|(k, ins)| (k, ins.len())).collect())
}

/// The SASS instructions of each kernel of a cubin (`nvdisasm -c`; NOPs excluded), as nvdisasm
/// writes them (`LDG.E.128 R4, desc[UR4][R2.64] ;`), keyed by kernel name, in code order.
pub fn sass_instructions(cubin: &[u8]) -> Result<std::collections::BTreeMap<String, Vec<String>>, String> {
    let nvdisasm = find_nvdisasm().ok_or_else(|| format!("nvdisasm not found: {INSTALL_HINT}"))?;
    let dir = Scratch::new()?;
    let f = dir.0.join("kernel.cubin");
    std::fs::write(&f, cubin).map_err(|e| format!("cannot write {}: {e}", f.display()))?;
    let out = Command::new(&nvdisasm)
        .arg("-c")
        .arg(&f)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvdisasm.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut kernels: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix(".section\t").or_else(|| t.strip_prefix(".section ")) {
            cur = rest.trim().strip_prefix(".text.").map(|s| s.split(',').next().unwrap_or(s).to_string());
        } else if let (Some(k), true) = (&cur, t.starts_with("/*")) {
            let ins = t.split("*/").nth(1).unwrap_or("").trim();
            if !ins.is_empty() && !ins.starts_with("NOP") {
                kernels.entry(k.clone()).or_default().push(ins.to_string());
            }
        }
    }
    Ok(kernels)
}

/// Assembles `ptx` for `sm` with `ptxas -v`; keeps the cubin when `keep_cubin`. A crash of ptxas is
/// [`PtxasError::Crashed`], never a rejection.
pub fn assemble_checked(ptx: &str, sm: SmVersion, keep_cubin: bool) -> Result<PtxasReport, PtxasError> {
    let ptxas = find_ptxas().ok_or(PtxasError::NotFound)?;
    let dir = Scratch::new().map_err(PtxasError::Io)?;
    let input = dir.0.join("kernel.ptx");
    std::fs::write(&input, ptx).map_err(|e| PtxasError::Io(format!("cannot write {}: {e}", input.display())))?;
    let cubin = dir.0.join("kernel.cubin");
    let out = Command::new(&ptxas)
        .arg(format!("-arch={}", sm.name()))
        .arg("-v")
        .arg("-o")
        .arg(if keep_cubin { cubin.as_os_str() } else { "/dev/null".as_ref() })
        .arg(&input)
        .output()
        .map_err(|e| PtxasError::Io(format!("cannot run {}: {e}", ptxas.display())))?;
    let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if let Some(e) = classify(&ptxas, sm, &out.status, &log) {
        return Err(e);
    }
    let cubin = if keep_cubin {
        Some(std::fs::read(&cubin).map_err(|e| PtxasError::Io(format!("cannot read cubin: {e}")))?)
    } else {
        None
    };
    Ok(PtxasReport { kernels: parse_ptxas_verbose(&log), log, cubin })
}

/// [`assemble_checked`] with the error as text.
pub fn assemble(ptx: &str, sm: SmVersion, keep_cubin: bool) -> Result<PtxasReport, String> {
    assemble_checked(ptx, sm, keep_cubin).map_err(|e| e.to_string())
}

/// Runs `ptxas -arch=sm_XX -v -o /dev/null` on `ptx`.
pub fn run_ptxas_checked(ptx: &str, sm: SmVersion) -> Result<PtxasReport, PtxasError> {
    assemble_checked(ptx, sm, false)
}

/// [`run_ptxas_checked`] with the error as text.
pub fn run_ptxas(ptx: &str, sm: SmVersion) -> Result<PtxasReport, String> {
    assemble(ptx, sm, false)
}

/// Test policy for a missing tool: returns the tool's path, or `None` after printing a skip line —
/// except with `CI=true`, where a missing tool panics so that the test fails.
pub fn require_tool_or_skip(name: &str) -> Option<PathBuf> {
    let found = match name {
        "ptxas" => find_ptxas(),
        "nvdisasm" => find_nvdisasm(),
        "nvrtc" | "libnvrtc" => find_nvrtc(),
        other => on_path(other),
    };
    if found.is_none() {
        if std::env::var("CI").map(|v| v == "true").unwrap_or(false) {
            panic!("{name} not found and CI=true: {INSTALL_HINT}");
        }
        eprintln!("skip: {name} not found ({INSTALL_HINT})");
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_verbose_output() {
        let log = "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function 'relu_backward' for 'sm_80'\nptxas info    : Function properties for relu_backward\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 10 registers, 380 bytes cmem[0]\n";
        assert_eq!(parse_ptxas_verbose(log), vec![KernelResources { name: "relu_backward".into(), registers: 10 }]);
    }

    /// The exit status of `sh -c SCRIPT`.
    #[cfg(unix)]
    fn status_of(script: &str) -> std::process::ExitStatus {
        Command::new("sh").arg("-c").arg(script).status().unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn crashes_are_not_rejections() {
        let p = Path::new("/opt/ptxas");
        let sm = SmVersion::Sm80;
        let crashed = |e: Option<PtxasError>| match e {
            Some(PtxasError::Crashed { how, .. }) => how,
            other => panic!("{other:?}"),
        };
        assert_eq!(crashed(classify(p, sm, &status_of("kill -SEGV $$"), "")), "SIGSEGV");
        assert_eq!(crashed(classify(p, sm, &status_of("kill -ABRT $$"), "ptxas info: x")), "SIGABRT");
        assert_eq!(crashed(classify(p, sm, &status_of("exit 139"), "")), "exit 139 (SIGSEGV)");
        assert_eq!(crashed(classify(p, sm, &status_of("exit 1"), "")), "exit 1 without an error message");
        let info = "ptxas info    : 0 bytes gmem\n";
        assert_eq!(crashed(classify(p, sm, &status_of("exit 255"), info)), "exit 255 without an error message");
        let log = "ptxas /tmp/k.ptx, line 7; error   : Unknown symbol 'x'\nptxas fatal   : Ptx assembly aborted due to errors\n";
        match classify(p, sm, &status_of("exit 255"), log) {
            Some(e @ PtxasError::Rejected { .. }) => {
                assert!(!e.is_crash());
                assert!(e.to_string().starts_with("ptxas (/opt/ptxas) rejected the module for sm_80:\n"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(classify(p, sm, &status_of("exit 0"), ""), None);
        let e = classify(p, sm, &status_of("kill -SEGV $$"), "").unwrap();
        assert!(e.is_crash());
        assert_eq!(e.to_string(), "ptxas crashed (SIGSEGV) on the module for sm_80 (/opt/ptxas)");
        assert_eq!(signal_name(11), "SIGSEGV");
        assert_eq!(signal_name(64), "signal 64");
    }

    #[test]
    fn sm_names_round_trip() {
        for v in SmVersion::ALL {
            assert_eq!(SmVersion::from_name(v.name()), Some(v));
        }
        assert_eq!(SmVersion::from_name("90"), Some(SmVersion::Sm90));
        assert_eq!(SmVersion::from_name("sm_70"), None);
    }
}
