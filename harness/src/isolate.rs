//! GPU runs in a worker process, so that a crash of the CUDA driver cannot take the caller down.
//!
//! NVIDIA's driver JIT-compiles PTX inside `cuModuleLoadDataEx`, in the calling process; on some
//! PTX it segfaults. A program that loads PTX it did not write, in a loop (`kir fuzz` and its
//! reducer), would die with it. [`IsolatedGpu`] runs every module load and launch in a long-lived
//! worker: the `kir` executable itself, started as `kir __gpu-worker --device N` ([`worker_main`]),
//! which holds one CUDA context and answers requests on a pipe.
//!
//! Guarantees:
//! - [`IsolatedGpu`] implements [`GpuExec`] as [`GpuRunner`] does (same bytes in, same bytes out:
//!   the worker runs [`GpuRunner::run_sequence`] on exactly the buffers and parameters sent), so a
//!   caller swaps one for the other without other changes.
//! - A worker that dies while answering (a signal, an exit) is reported as
//!   [`GpuError::Crashed`], naming the signal (`SIGSEGV`) or exit status and the [`Stage`] it was
//!   in: the worker announces each stage before entering it (starting, JIT-compiling a module,
//!   running), so a crash inside `cuModuleLoadDataEx` is told apart from one during a launch. A
//!   worker that gives no answer within [`IsolatedGpu::timeout`] is killed and reported as
//!   [`GpuError::TimedOut`]. Either way the caller goes on: the next run starts a fresh worker.
//! - After a run the driver failed ([`GpuError::Driver`]: a kernel fault is sticky for a CUDA
//!   context, so every later call would fail too), the worker is retired and the next run gets a
//!   fresh context. Rejected modules and invalid requests keep the worker.
//! - The worker writes nothing but protocol frames on its protocol pipe (its own stdout is
//!   redirected to stderr, so a driver that prints cannot corrupt an answer), dumps no core files
//!   when it crashes (RLIMIT_CORE 0 on Linux), keeps at most [`WORKER_MODULE_CACHE`] modules
//!   loaded, and exits when its request pipe closes. Writing to a dead worker raises no SIGPIPE in
//!   the caller (requests are written from a thread that blocks it).
//! - Nothing here panics; a malformed frame in either direction is an error, never a crash.

use crate::gpu_exec::GpuExec;
use kir_backend_ptx::gpu::{GpuError, GpuRunner, KernelLaunch, Launch, Param, Stage};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// The hidden subcommand that runs [`worker_main`].
pub const WORKER_COMMAND: &str = "__gpu-worker";

/// The most modules a worker keeps loaded; past it, it unloads them all.
pub const WORKER_MODULE_CACHE: usize = 64;

/// How long a run may take by default before the worker is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

// Frame tags, worker -> caller.
const HELLO: u8 = 1;
const STAGE: u8 = 2;
const DONE: u8 = 3;
const FAILED: u8 = 4;
// Request tag, caller -> worker.
const RUN: u8 = 1;

/// What the worker counted, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IsolationStats {
    /// Workers started (the first one included).
    pub workers: u64,
    /// Runs sent.
    pub runs: u64,
    /// Workers that died while answering.
    pub crashes: u64,
    /// Workers killed for giving no answer in time.
    pub timeouts: u64,
}

/// A GPU whose driver calls run in a worker process (see the module docs).
pub struct IsolatedGpu {
    exe: PathBuf,
    device: usize,
    env: Vec<(String, String)>,
    /// The longest a worker may take to start or to answer one run.
    pub timeout: Duration,
    worker: Option<Worker>,
    name: String,
    cc: (i32, i32),
    emulated: bool,
    stats: IsolationStats,
}

struct Worker {
    child: Child,
    requests: Option<Sender<Vec<u8>>>,
    frames: Receiver<Result<(u8, Vec<u8>), String>>,
}

impl IsolatedGpu {
    /// Starts a worker (`exe __gpu-worker --device N`; `exe` must be the `kir` executable) and
    /// waits for it to open the device: the errors are those of [`GpuRunner::new`] (no driver, no
    /// such device, a `KIR_CUDA_DRIVER` that cannot be honoured), or a crash or hang while
    /// starting.
    pub fn start(exe: &Path, device: usize) -> Result<IsolatedGpu, GpuError> {
        Self::start_with_timeout(exe, device, DEFAULT_TIMEOUT)
    }

    /// [`IsolatedGpu::start`] with a timeout for starting and for each run.
    pub fn start_with_timeout(exe: &Path, device: usize, timeout: Duration) -> Result<IsolatedGpu, GpuError> {
        Self::start_with_env(exe, device, timeout, &[])
    }

    /// [`IsolatedGpu::start_with_timeout`] with variables set in every worker's environment (on
    /// top of this process's: e.g. `KIR_CUDA_DRIVER`).
    pub fn start_with_env(
        exe: &Path,
        device: usize,
        timeout: Duration,
        env: &[(&str, &str)],
    ) -> Result<IsolatedGpu, GpuError> {
        let mut g = IsolatedGpu {
            exe: exe.to_path_buf(),
            device,
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            timeout,
            worker: None,
            name: String::new(),
            cc: (0, 0),
            emulated: false,
            stats: IsolationStats::default(),
        };
        g.ensure_worker()?;
        Ok(g)
    }

    /// What happened so far.
    pub fn stats(&self) -> IsolationStats {
        self.stats
    }

    /// Starts a worker unless one is running, and reads its greeting.
    fn ensure_worker(&mut self) -> Result<(), GpuError> {
        if self.worker.is_some() {
            return Ok(());
        }
        let mut child = Command::new(&self.exe)
            .arg(WORKER_COMMAND)
            .arg("--device")
            .arg(self.device.to_string())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| GpuError::Driver(format!("cannot start the GPU worker {}: {e}", self.exe.display())))?;
        self.stats.workers += 1;
        let (stdin, stdout) = match (child.stdin.take(), child.stdout.take()) {
            (Some(i), Some(o)) => (i, o),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GpuError::Driver("the GPU worker has no pipes".into()));
            }
        };
        let requests = spawn_writer(stdin);
        let frames = spawn_reader(stdout);
        self.worker = Some(Worker { child, requests: Some(requests), frames });
        match self.next_frame(Stage::Starting)? {
            (HELLO, body) => {
                let mut d = Dec::new(&body);
                let hello = (|| Ok::<_, String>((d.str()?, (d.i32()?, d.i32()?), d.u8()? != 0)))();
                match hello {
                    Ok((name, cc, emulated)) => {
                        (self.name, self.cc, self.emulated) = (name, cc, emulated);
                        Ok(())
                    }
                    Err(e) => Err(self.protocol_error(e)),
                }
            }
            (FAILED, body) => {
                // The worker could not open the device; it exits by itself.
                self.retire();
                Err(decode_error(&body).unwrap_or_else(GpuError::Driver))
            }
            (tag, _) => Err(self.protocol_error(format!("unexpected frame {tag} at start"))),
        }
    }

    /// The next frame of the worker, or the crash or hang that ended it (the worker is then gone).
    fn next_frame(&mut self, mut stage: Stage) -> Result<(u8, Vec<u8>), GpuError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let Some(w) = self.worker.as_mut() else {
                return Err(GpuError::Driver("no GPU worker".into()));
            };
            let left = deadline.saturating_duration_since(Instant::now());
            match w.frames.recv_timeout(left) {
                Ok(Ok((STAGE, body))) => stage = stage_of(body.first().copied().unwrap_or(2)),
                Ok(Ok(frame)) => return Ok(frame),
                Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => {
                    let how = self.reap();
                    self.stats.crashes += 1;
                    return Err(GpuError::Crashed { stage, how });
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(mut w) = self.worker.take() {
                        let _ = w.child.kill();
                        let _ = w.child.wait();
                    }
                    self.stats.timeouts += 1;
                    return Err(GpuError::TimedOut { stage, secs: self.timeout.as_secs() });
                }
            }
        }
    }

    /// Waits for a worker whose pipe closed; how it ended (`SIGSEGV`, `exit 3`).
    fn reap(&mut self) -> String {
        let Some(mut w) = self.worker.take() else { return "gone".into() };
        drop(w.requests.take());
        match wait_a_while(&mut w.child, Duration::from_secs(5)) {
            Some(status) => kir_backend_ptx::tools::crash_of(&status).unwrap_or_else(|| match status.code() {
                Some(c) => format!("exit {c}"),
                None => status.to_string(),
            }),
            None => {
                let _ = w.child.kill();
                let _ = w.child.wait();
                "closed its pipe without exiting (killed)".into()
            }
        }
    }

    /// Ends the worker (it exits when its request pipe closes); the next run starts a new one.
    fn retire(&mut self) {
        if let Some(mut w) = self.worker.take() {
            drop(w.requests.take());
            if wait_a_while(&mut w.child, Duration::from_secs(5)).is_none() {
                let _ = w.child.kill();
                let _ = w.child.wait();
            }
        }
    }

    fn protocol_error(&mut self, what: String) -> GpuError {
        self.retire();
        GpuError::Driver(format!("the GPU worker broke the protocol: {what}"))
    }
}

impl Drop for IsolatedGpu {
    fn drop(&mut self) {
        self.retire();
    }
}

impl GpuExec for IsolatedGpu {
    fn run_sequence(&mut self, buffers: &[Vec<u8>], launches: &[KernelLaunch]) -> Result<Vec<Vec<u8>>, GpuError> {
        self.ensure_worker()?;
        self.stats.runs += 1;
        let request = encode_request(buffers, launches);
        let sent = self.worker.as_ref().and_then(|w| w.requests.as_ref()).is_some_and(|r| r.send(request).is_ok());
        if !sent {
            let how = self.reap();
            self.stats.crashes += 1;
            return Err(GpuError::Crashed { stage: Stage::Running, how });
        }
        // Until the worker announces a stage, it is reading the request.
        match self.next_frame(Stage::Running)? {
            (DONE, body) => {
                let mut d = Dec::new(&body);
                let n = d.u32().map_err(|e| self.protocol_error(e))?;
                let mut out = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    out.push(d.bytes().map_err(|e| self.protocol_error(e))?);
                }
                Ok(out)
            }
            (FAILED, body) => {
                let e = decode_error(&body).map_err(|e| self.protocol_error(e))?;
                if matches!(e, GpuError::Driver(_)) {
                    // The context may be broken for good (sticky faults): a fresh one next time.
                    self.retire();
                }
                Err(e)
            }
            (tag, _) => Err(self.protocol_error(format!("unexpected frame {tag}"))),
        }
    }

    fn device_name(&self) -> Result<String, GpuError> {
        Ok(self.name.clone())
    }

    fn is_emulated(&self) -> bool {
        self.emulated
    }

    fn compute_capability(&self) -> Result<(i32, i32), GpuError> {
        Ok(self.cc)
    }
}

/// `Some(status)` once `child` exits, `None` when it has not within `limit`.
fn wait_a_while(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let end = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(2)),
            _ => return None,
        }
    }
}

/// A thread that writes each request (length-prefixed) to the worker's stdin, with SIGPIPE
/// blocked: a dead worker makes the write fail, not the caller die. It ends when the sender is
/// dropped (closing the worker's stdin) or a write fails.
fn spawn_writer(stdin: ChildStdin) -> Sender<Vec<u8>> {
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        block_sigpipe();
        let mut w = BufWriter::new(stdin);
        for req in rx {
            let ok =
                w.write_all(&(req.len() as u64).to_le_bytes()).and_then(|_| w.write_all(&req)).and_then(|_| w.flush());
            if ok.is_err() {
                break;
            }
        }
    });
    tx
}

/// A thread that reads the worker's frames and hands them over; an `Err` (then nothing) when the
/// pipe closes or a frame is malformed.
fn spawn_reader(stdout: std::process::ChildStdout) -> Receiver<Result<(u8, Vec<u8>), String>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        loop {
            let frame = read_frame(&mut r);
            let end = frame.is_err();
            if tx.send(frame).is_err() || end {
                break;
            }
        }
    });
    rx
}

/// Most bytes one frame or request may claim (a corrupt length is an error, not an allocation).
const MAX_MESSAGE: u64 = 1 << 36;

fn read_frame(r: &mut impl Read) -> Result<(u8, Vec<u8>), String> {
    let mut head = [0u8; 9];
    r.read_exact(&mut head).map_err(|e| e.to_string())?;
    let len = u64::from_le_bytes(head[1..].try_into().unwrap_or_default());
    if len > MAX_MESSAGE {
        return Err(format!("a frame of {len} bytes"));
    }
    let mut body = vec![0u8; len as usize];
    r.read_exact(&mut body).map_err(|e| e.to_string())?;
    Ok((head[0], body))
}

fn write_frame(w: &mut dyn Write, tag: u8, body: &[u8]) -> io::Result<()> {
    w.write_all(&[tag])?;
    w.write_all(&(body.len() as u64).to_le_bytes())?;
    w.write_all(body)?;
    w.flush()
}

/// Blocks SIGPIPE for the calling thread (Linux; elsewhere nothing).
fn block_sigpipe() {
    #[cfg(target_os = "linux")]
    {
        #[repr(C)]
        struct SigSet([u64; 16]);
        extern "C" {
            fn sigemptyset(set: *mut SigSet) -> i32;
            fn sigaddset(set: *mut SigSet, sig: i32) -> i32;
            fn pthread_sigmask(how: i32, set: *const SigSet, old: *mut SigSet) -> i32;
        }
        const SIG_BLOCK: i32 = 0;
        const SIGPIPE: i32 = 13;
        let mut set = SigSet([0; 16]);
        // SAFETY: `set` is a buffer at least as large as glibc's and musl's sigset_t, initialised by
        // sigemptyset before use; only the calling thread's mask changes.
        unsafe {
            sigemptyset(&mut set);
            sigaddset(&mut set, SIGPIPE);
            pthread_sigmask(SIG_BLOCK, &set, std::ptr::null_mut());
        }
    }
}

// ---- Encoding ----

struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
}

struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    fn new(buf: &'a [u8]) -> Dec<'a> {
        Dec { buf, pos: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or("a truncated message")?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| "bad u32")?))
    }
    fn i32(&mut self) -> Result<i32, String> {
        Ok(i32::from_le_bytes(self.take(4)?.try_into().map_err(|_| "bad i32")?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().map_err(|_| "bad u64")?))
    }
    fn bytes(&mut self) -> Result<Vec<u8>, String> {
        let n = self.u64()?;
        let n = usize::try_from(n).map_err(|_| "a length past the address space")?;
        Ok(self.take(n)?.to_vec())
    }
    fn str(&mut self) -> Result<String, String> {
        String::from_utf8(self.bytes()?).map_err(|_| "a string that is not UTF-8".to_string())
    }
}

fn encode_request(buffers: &[Vec<u8>], launches: &[KernelLaunch]) -> Vec<u8> {
    let mut e = Enc(Vec::with_capacity(64 + buffers.iter().map(Vec::len).sum::<usize>()));
    e.u8(RUN);
    e.u32(buffers.len() as u32);
    for b in buffers {
        e.bytes(b);
    }
    e.u32(launches.len() as u32);
    for l in launches {
        e.str(l.ptx);
        e.str(l.kernel);
        let Launch { grid, block, dynamic_shared_bytes } = l.launch;
        for v in [grid.0, grid.1, grid.2, block.0, block.1, block.2, dynamic_shared_bytes] {
            e.u32(v);
        }
        e.u32(l.params.len() as u32);
        for p in &l.params {
            match p {
                Param::Buffer(i) => {
                    e.u8(0);
                    e.u64(*i as u64);
                }
                Param::Scalar(b) => {
                    e.u8(1);
                    e.bytes(b);
                }
            }
        }
    }
    e.0
}

/// A decoded run request: buffers, then (ptx, kernel, launch, params) per launch.
type Request = (Vec<Vec<u8>>, Vec<(String, String, Launch, Vec<Param>)>);

fn decode_request(body: &[u8]) -> Result<Request, String> {
    let mut d = Dec::new(body);
    if d.u8()? != RUN {
        return Err("an unknown request".into());
    }
    let nb = d.u32()?;
    let mut buffers = Vec::new();
    for _ in 0..nb {
        buffers.push(d.bytes()?);
    }
    let nl = d.u32()?;
    let mut launches = Vec::new();
    for _ in 0..nl {
        let ptx = d.str()?;
        let kernel = d.str()?;
        let mut v = [0u32; 7];
        for x in &mut v {
            *x = d.u32()?;
        }
        let launch = Launch { grid: (v[0], v[1], v[2]), block: (v[3], v[4], v[5]), dynamic_shared_bytes: v[6] };
        let np = d.u32()?;
        let mut params = Vec::new();
        for _ in 0..np {
            params.push(match d.u8()? {
                0 => Param::Buffer(usize::try_from(d.u64()?).map_err(|_| "a buffer index past the address space")?),
                1 => Param::Scalar(d.bytes()?),
                t => return Err(format!("an unknown parameter tag {t}")),
            });
        }
        launches.push((ptx, kernel, launch, params));
    }
    Ok((buffers, launches))
}

fn stage_code(s: Stage) -> u8 {
    match s {
        Stage::Starting => 0,
        Stage::Loading => 1,
        Stage::Running => 2,
    }
}

fn stage_of(c: u8) -> Stage {
    match c {
        0 => Stage::Starting,
        1 => Stage::Loading,
        _ => Stage::Running,
    }
}

fn encode_error(err: &GpuError) -> Vec<u8> {
    let mut e = Enc(Vec::new());
    match err {
        GpuError::NoDriver => e.u8(0),
        GpuError::DriverSelection(s) => {
            e.u8(1);
            e.str(s);
        }
        GpuError::NoDevice => e.u8(2),
        GpuError::Driver(s) => {
            e.u8(3);
            e.str(s);
        }
        GpuError::ModuleRejected { error, log } => {
            e.u8(4);
            e.str(error);
            e.str(log);
        }
        GpuError::Invalid(s) => {
            e.u8(5);
            e.str(s);
        }
        GpuError::Crashed { stage, how } => {
            e.u8(6);
            e.u8(stage_code(*stage));
            e.str(how);
        }
        GpuError::TimedOut { stage, secs } => {
            e.u8(7);
            e.u8(stage_code(*stage));
            e.u64(*secs);
        }
    }
    e.0
}

fn decode_error(body: &[u8]) -> Result<GpuError, String> {
    let mut d = Dec::new(body);
    Ok(match d.u8()? {
        0 => GpuError::NoDriver,
        1 => GpuError::DriverSelection(d.str()?),
        2 => GpuError::NoDevice,
        3 => GpuError::Driver(d.str()?),
        4 => GpuError::ModuleRejected { error: d.str()?, log: d.str()? },
        5 => GpuError::Invalid(d.str()?),
        6 => GpuError::Crashed { stage: stage_of(d.u8()?), how: d.str()? },
        7 => GpuError::TimedOut { stage: stage_of(d.u8()?), secs: d.u64()? },
        t => return Err(format!("an unknown error tag {t}")),
    })
}

// ---- The worker ----

/// The worker's protocol output: the process's original stdout, while fd 1 itself is pointed at
/// stderr (so that nothing else the process prints can corrupt a frame).
fn protocol_output() -> Box<dyn Write> {
    #[cfg(unix)]
    {
        use std::os::fd::FromRawFd;
        extern "C" {
            fn dup(fd: i32) -> i32;
            fn dup2(old: i32, new: i32) -> i32;
        }
        // SAFETY: plain descriptor calls; the duplicated descriptor is owned by the returned File
        // only, and fd 1 stays open (now a copy of fd 2).
        unsafe {
            let fd = dup(1);
            if fd >= 0 && dup2(2, 1) >= 0 {
                return Box::new(std::fs::File::from_raw_fd(fd));
            }
        }
    }
    Box::new(io::stdout())
}

/// No core file when the worker crashes (a campaign may crash the driver many times).
fn no_core_dumps() {
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    {
        #[repr(C)]
        struct RLimit {
            cur: u64,
            max: u64,
        }
        extern "C" {
            fn setrlimit(resource: i32, limit: *const RLimit) -> i32;
        }
        const RLIMIT_CORE: i32 = 4;
        // SAFETY: sets this process's core-size limit to zero; the struct matches Linux's rlimit on
        // 64-bit targets.
        unsafe {
            setrlimit(RLIMIT_CORE, &RLimit { cur: 0, max: 0 });
        }
    }
}

/// `kir __gpu-worker --device N`: opens the device, greets, then answers run requests from stdin
/// until it closes (see the module docs). Exit 0 when stdin closes or the device cannot be opened
/// (the caller got the reason), 1 when the caller went away mid-answer.
pub fn worker_main(device: usize) -> ExitCode {
    no_core_dumps();
    let mut out = BufWriter::new(protocol_output());
    let runner = GpuRunner::new(device).and_then(|r| {
        let name = r.device_name()?;
        let cc = r.compute_capability()?;
        Ok((r, name, cc))
    });
    let (mut runner, name, cc) = match runner {
        Ok(x) => x,
        Err(e) => {
            let _ = write_frame(&mut out, FAILED, &encode_error(&e));
            return ExitCode::SUCCESS;
        }
    };
    let mut hello = Enc(Vec::new());
    hello.str(&name);
    hello.i32(cc.0);
    hello.i32(cc.1);
    hello.u8(kir_backend_ptx::gpu::is_emulated_device(&name) as u8);
    if write_frame(&mut out, HELLO, &hello.0).is_err() {
        return ExitCode::from(1);
    }
    let mut input = BufReader::new(io::stdin().lock());
    loop {
        let mut len = [0u8; 8];
        if input.read_exact(&mut len).is_err() {
            return ExitCode::SUCCESS;
        }
        let len = u64::from_le_bytes(len);
        if len > MAX_MESSAGE {
            let _ =
                write_frame(&mut out, FAILED, &encode_error(&GpuError::Invalid(format!("a request of {len} bytes"))));
            return ExitCode::from(1);
        }
        let mut body = vec![0u8; len as usize];
        if input.read_exact(&mut body).is_err() {
            return ExitCode::SUCCESS;
        }
        let answer = match decode_request(&body) {
            Ok(req) => serve(&mut runner, &mut out, req),
            Err(e) => Err(GpuError::Invalid(format!("a malformed request: {e}"))),
        };
        let written = match answer {
            Ok(buffers) => {
                let mut e = Enc(Vec::new());
                e.u32(buffers.len() as u32);
                for b in &buffers {
                    e.bytes(b);
                }
                write_frame(&mut out, DONE, &e.0)
            }
            Err(err) => write_frame(&mut out, FAILED, &encode_error(&err)),
        };
        if written.is_err() {
            return ExitCode::from(1);
        }
        if runner.loaded_modules() > WORKER_MODULE_CACHE {
            runner.unload_all();
        }
    }
}

/// One run in the worker: each module loaded after a `Loading` stage frame, then a `Running`
/// frame and the launches.
fn serve(runner: &mut GpuRunner, out: &mut dyn Write, req: Request) -> Result<Vec<Vec<u8>>, GpuError> {
    let (buffers, launches) = req;
    let announce = |out: &mut dyn Write, s: Stage| {
        write_frame(out, STAGE, &[stage_code(s)]).map_err(|e| GpuError::Driver(format!("the caller went away: {e}")))
    };
    for (i, (ptx, ..)) in launches.iter().enumerate() {
        if launches[..i].iter().any(|l| l.0 == *ptx) {
            continue;
        }
        announce(out, Stage::Loading)?;
        runner.load(ptx)?;
    }
    announce(out, Stage::Running)?;
    let ls: Vec<KernelLaunch> = launches
        .iter()
        .map(|(ptx, kernel, launch, params)| KernelLaunch { ptx, kernel, launch: *launch, params: params.clone() })
        .collect();
    runner.run_sequence(&buffers, &ls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_errors_round_trip() {
        let launches = [KernelLaunch {
            ptx: ".version 8.0",
            kernel: "k",
            launch: Launch { grid: (2, 1, 1), block: (64, 1, 3), dynamic_shared_bytes: 16 },
            params: vec![Param::Buffer(1), Param::Scalar(vec![1, 2, 3, 4])],
        }];
        let bufs = vec![vec![1u8, 2], vec![], vec![9; 100]];
        let (b, l) = decode_request(&encode_request(&bufs, &launches)).unwrap();
        assert_eq!(b, bufs);
        assert_eq!(l.len(), 1);
        assert_eq!((l[0].0.as_str(), l[0].1.as_str()), (".version 8.0", "k"));
        assert_eq!((l[0].2.grid, l[0].2.block, l[0].2.dynamic_shared_bytes), ((2, 1, 1), (64, 1, 3), 16));
        assert_eq!(l[0].3, launches[0].params);
        for e in [
            GpuError::NoDriver,
            GpuError::NoDevice,
            GpuError::DriverSelection("x".into()),
            GpuError::Driver("d".into()),
            GpuError::ModuleRejected { error: "e".into(), log: "l".into() },
            GpuError::Invalid("i".into()),
            GpuError::Crashed { stage: Stage::Loading, how: "SIGSEGV".into() },
            GpuError::TimedOut { stage: Stage::Running, secs: 7 },
        ] {
            assert_eq!(decode_error(&encode_error(&e)), Ok(e));
        }
        // Truncated or corrupt messages are errors, not panics.
        let req = encode_request(&bufs, &launches);
        for n in 0..req.len() {
            assert!(decode_request(&req[..n]).is_err());
        }
        assert!(decode_error(&[99]).is_err());
        let mut huge = vec![RUN];
        huge.extend_from_slice(&1u32.to_le_bytes());
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_request(&huge).is_err());
    }

    #[test]
    fn frames_round_trip_and_a_closed_pipe_is_an_error() {
        let mut v = Vec::new();
        write_frame(&mut v, DONE, b"abc").unwrap();
        let mut r = &v[..];
        assert_eq!(read_frame(&mut r), Ok((DONE, b"abc".to_vec())));
        assert!(read_frame(&mut r).is_err());
        let mut short = &v[..5];
        assert!(read_frame(&mut short).is_err());
    }
}
