"""kir's PTX against its CUDA C twins and PyTorch/cuBLAS on one GPU.  python3 bench.py OUTDIR [--budget S] [--only a,b]

Variants of every kernel, all JIT-compiled from PTX by the same driver (cupy.RawModule(path=)):
  kir       ptx/kir/F.ptx         `kir ptx kernels/F.kir --sm sm_90` (no passes)
  kir_opt   ptx/kir_opt/F.ptx     `kir opt` (default pipeline) then `kir ptx` (what users get; what codequality measures)
  twin      ptx/nvrtc/T.ptx       bench/T.cu, NVRTC 12.9, compute_90, --fmad=false (absent: no twin columns)
  twin_fmad ptx/nvrtc_fmad/T.ptx  bench/T.cu with its __f*_rn intrinsics as plain operators, fmad on
  torch     a PyTorch equivalent (TF32 off), where one is natural; torch.matmul is cuBLAS (f16 in, f16
            out, tensor cores, for the f16 GEMM; f32 SIMT for the f32 GEMMs)
ptx/ is built by build_ptx.py next to this file (KIRBENCH_PTX=DIR reads another directory).
Checks every variant against `twin` (tolerance from the .kir header), against torch, and, for the
kernels that define one, against a host reference (numpy/cupy in f64); then times each: 5
warm-ups, median of 30 launches (CUDA events; 2 rotating input sets when the working set is under
50 MB). Rates: a GEMM's TFLOP/s (2mnk / median) against the nominal peak of its units (f32 SIMT
51e12, f16 tensor cores with f32 accumulation 989e12: H100 SXM datasheet, dense); a memory-bound
kernel's GB/s (its bytes, counted from its arguments, / median) against the copy rate measured on
the same device for the case (a device-to-device cudaMemcpyAsync of half the case's bytes, at
least 4 KiB and at most 256 MiB, counted as read + written, timed the same way: what `kir bench`
measures), and against 3.0e12 B/s. Writes OUTDIR/bench.json.

Dry run without a GPU (KIRBENCH_DRY=1, which implies KIRBENCH_SMALL=1): numpy stands in for cupy,
every launch runs in kir's PTX emulator through `kir run FILE.ptx` (KIR_BIN, default `kir` on
PATH), torch is not used and nothing is timed; the variants are checked against the twin and the
host references at the small sizes. It exercises the cases (argument order, launch shapes, sizes,
tolerances, the twins' entry names) and the PTX of build_ptx.py, not the GPU.

Copied from ../shared/hardware-truth/perf/bench.py (the script behind BENCHMARKS.md "H100 timings",
2026-11-27) and extended for issue 40; bench/perf/README.md says what changed and how to run it.
"""
import json, math, os, re, subprocess, sys, tempfile, threading, time, traceback
T_START = time.time()  # the budget counts from here, imports included
from types import SimpleNamespace as NS
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PTX_DIR = os.environ.get("KIRBENCH_PTX") or os.path.join(HERE, "ptx")
BW, FLOPS, TC_FLOPS, U24 = 3.0e12, 51e12, 989e12, 2.0 ** -24
PEAKS = {"bytes": BW, "flops": FLOPS, "tc_flops": TC_FLOPS}
WARM, REPS, CASE_BUDGET = 5, 30, 20.0  # CASE_BUDGET: seconds of timed launches per case, all variants
DRY = os.environ.get("KIRBENCH_DRY") == "1"  # no GPU: numpy for cupy, kir's PTX emulator for the launches
SMALL = DRY or os.environ.get("KIRBENCH_SMALL") == "1"  # tiny sizes
if SMALL:
    WARM, REPS = 1, 3
S = lambda big, small: small if SMALL else big
VARIANTS = [("kir", "kir", "kir"), ("kir_opt", "kir_opt", "kir"),
            ("twin", "nvrtc", "cu"), ("twin_fmad", "nvrtc_fmad", "cu")]


class _Pool:
    def free_all_blocks(self):
        pass


class _NumpyAsCupy:
    """What bench.py uses of cupy, on the host (dry run)."""
    __version__ = "numpy " + np.__version__
    cuda = NS(runtime=NS(getDeviceProperties=lambda i: {"multiProcessorCount": 132,
                                                         "name": b"no GPU: kir's PTX emulator (dry run)"},
                         driverGetVersion=lambda: 0))

    def get_default_memory_pool(self):
        return _Pool()

    def __getattr__(self, k):
        return getattr(np, k)


if DRY:
    cp = _NumpyAsCupy()
    torch = None
else:
    import cupy as cp
    try:
        import torch
        import torch.nn.functional as F
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    except Exception:
        traceback.print_exc()
        torch = None

SM = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
u32 = np.uint32
cdiv = lambda a, b: (a + b - 1) // b
nsets_for = lambda ws_bytes: 2 if ws_bytes <= 50e6 else 1  # rotate 2 input sets when they fit in L2


def rand(n, seed, lo=-1.0, hi=1.0, dtype=None):
    dtype = dtype or cp.float32
    try:
        if DRY:
            raise TypeError("host")
        a = cp.random.RandomState(seed).uniform(lo, hi, n, dtype=cp.float32)
    except Exception:  # curand unavailable (or the dry run): numpy on the host
        a = cp.asarray(np.random.default_rng(seed).uniform(lo, hi, n).astype(np.float32))
    return a.astype(dtype)


_tc = {}  # id -> (array, tensor): the torch views of a case's inputs, made once (outside the timed loop)


def T(a):  # cupy -> torch, zero copy
    if id(a) not in _tc:
        try:
            _tc[id(a)] = (a, torch.from_dlpack(a))
        except Exception:
            _tc[id(a)] = (a, torch.as_tensor(a, device="cuda"))
    return _tc[id(a)][1]


def C(t):  # torch -> cupy, zero copy
    try:
        return cp.from_dlpack(t.contiguous())
    except Exception:
        return cp.asarray(t.contiguous())


_mods = {}


class EmuKernel:
    """A kernel of a PTX file, launched in kir's PTX emulator by `kir run` (dry run): called like a
    cupy RawKernel, fn(grid, block, args); array arguments are read back into place afterwards."""

    def __init__(self, path, kernel):
        text = open(path).read()
        m = re.search(r"\.entry\s+" + re.escape(kernel) + r"\s*\((.*?)\)", text, re.S)
        if not m:
            entries = re.findall(r"[.]entry\s+(\w+)", text)
            raise RuntimeError(f"{path}: no .entry {kernel} (entries: {entries})")
        self.path, self.kernel = path, kernel
        self.params = [p.split()[-1].split("[")[0] for p in m.group(1).split(",") if p.strip()]
        self.kir = os.environ.get("KIR_BIN", "kir")

    def __call__(self, grid, block, args):
        if len(args) != len(self.params):
            raise RuntimeError(f"{self.kernel}: {len(args)} arguments for the parameters {self.params}")
        dims = lambda d: ",".join(str(int(x)) for x in d)
        with tempfile.TemporaryDirectory() as td:
            cmd = [self.kir, "run", self.path, "--kernel", self.kernel, "--grid", dims(grid), "--block", dims(block)]
            outs = []
            for i, (p, a) in enumerate(zip(self.params, args)):
                if isinstance(a, np.ndarray):
                    f = os.path.join(td, f"in{i}.npy")
                    np.save(f, np.ascontiguousarray(a).ravel())
                    cmd += ["--arg", f"{p}=@{f}", "--out", f"{p}={os.path.join(td, f'out{i}.npy')}"]
                    outs.append((i, a))
                else:
                    cmd += ["--arg", f"{p}={int(a) if isinstance(a, (int, np.integer)) else a}"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"`{' '.join(cmd)}` exit {r.returncode}: {r.stderr[-1500:]}")
            for i, a in outs:
                a[...] = np.load(os.path.join(td, f"out{i}.npy")).reshape(a.shape)


def ptx_path(sub, fname):
    return os.path.join(PTX_DIR, sub, fname + ".ptx")


def load(sub, fname, kernel):
    path = ptx_path(sub, fname)
    if DRY:
        return EmuKernel(path, kernel)
    try:
        if path not in _mods:
            _mods[path] = cp.RawModule(path=path)
        return _mods[path].get_function(kernel)
    except Exception as e:
        for ptxas in ("ptxas", "/usr/local/cuda/bin/ptxas"):  # the JIT's reason, if ptxas is around
            try:
                p = subprocess.run([ptxas, "-arch=sm_90", path, "-o", os.devnull], capture_output=True, text=True,
                                   timeout=60)
                raise RuntimeError(f"{e!r}; ptxas rc={p.returncode}: {p.stderr[-800:]}") from e
            except (OSError, subprocess.TimeoutExpired):
                continue
        raise e


def ordered(a):  # float bits -> integers whose differences count ULPs
    if a.dtype == cp.float16:
        i = a.view(cp.int16).astype(cp.int64)
        return cp.where(i < 0, -(i & 0x7FFF), i)
    i = a.view(cp.int32).astype(cp.int64)
    return cp.where(i < 0, -(i & 0x7FFFFFFF), i)


def metric(got, ref, tol, ulp=False):
    """Errors of got against ref; ok iff every |diff| <= tol (ULPs if ulp) and no NaN anywhere."""
    got, ref = got.ravel(), ref.ravel()
    g, r = got.astype(cp.float64), ref.astype(cp.float64)
    d = cp.abs(g - r)
    nan = int(cp.isnan(g).sum()) + int(cp.isnan(r).sum())
    out = {"n": int(got.size), "nan": nan, "max_abs": float(cp.nanmax(d)),
           "max_rel": float(cp.nanmax(d / cp.maximum(cp.abs(r), 1e-30)))}
    if ulp:
        du = cp.abs(ordered(got) - ordered(ref))
        out["max_ulp"] = int(du.max())
        bad = (du > tol) | cp.isnan(g) | cp.isnan(r)
    else:
        bad = ~(d <= tol)  # NaN compares false: counted bad
    out["bad"] = int(bad.sum())
    out["ok"] = out["bad"] == 0 and nan == 0
    return out


def time_it(launch, nsets, reps, warm, use_torch=False):
    """warm-ups, then `reps` launches each between two CUDA events (cupy's, or torch's for torch ops)."""
    sync = torch.cuda.synchronize if use_torch else cp.cuda.Device().synchronize
    event = (lambda: torch.cuda.Event(enable_timing=True)) if use_torch else cp.cuda.Event
    for i in range(warm):
        launch(i % nsets)
    sync()
    ev = [(event(), event()) for _ in range(reps)]
    for i, (a, b) in enumerate(ev):
        a.record()
        launch(i % nsets)
        b.record()
    sync()
    ts = sorted(a.elapsed_time(b) if use_torch else cp.cuda.get_elapsed_time(a, b) for a, b in ev)
    return {"median_ms": ts[len(ts) // 2], "min_ms": ts[0], "max_ms": ts[-1], "reps": reps, "warm": warm}


def copy_rate(case_bytes):
    """The device's copy rate for a case moving case_bytes: a device-to-device memcpy of half of
    them (at least 4 KiB, at most 256 MiB), read + written, timed like the kernels (kir bench's)."""
    n = int(min(max(case_bytes // 2, 4096), 256 << 20))
    src, dst = cp.empty(n, cp.uint8), cp.empty(n, cp.uint8)
    src.fill(1)
    rt = cp.cuda.runtime
    stream = cp.cuda.get_current_stream().ptr
    t = time_it(lambda i: rt.memcpyAsync(dst.data.ptr, src.data.ptr, n, rt.memcpyDeviceToDevice, stream), 1, REPS, WARM)
    t["bytes"] = 2 * n
    t["GBps"] = 2 * n / (t["median_ms"] * 1e-3) / 1e9
    del src, dst
    return t


# ---------------------------------------------------------------- cases
# A case: kir/cu file names (cu None: no twin), kernel, launch shape, input sets, out() allocator,
# args(set, out), torch(set), tol_twin / tol_torch (a number or a function of (set 0, flat
# reference)), floor (("bytes" | "flops" | "tc_flops", amount)), note on the tolerances; optionally
# host_ref(set 0) -> flat reference with tol_host (host = numpy in the dry run, cupy on the GPU).
def elementwise(name, kir, torch_fn, tol_twin, tol_torch, note, cu="activations", vec=1):
    n, B = S(1 << 26, 5003 if vec > 1 else 5000), 256  # 5003: a 3-element tail for the 4-wide kernel
    return NS(name=name, kir=kir, cu=cu, kernel=name, grid=(cdiv(cdiv(n, vec), B),), block=(B,),
              sets=[(rand(n, 11), rand(n, 12))], size=f"n={n}", out=lambda: cp.empty(n, cp.float32),
              args=lambda s, o: (s[0], s[1], o, u32(n)), torch=(lambda s: torch_fn(T(s[1]), T(s[0]))) if torch else None,
              tol_twin=tol_twin, tol_torch=tol_torch, floor=("bytes", 12 * n), note=note)


def relu_torch(dy, x):
    return torch.ops.aten.threshold_backward(dy, x, 0.0)


def case_relu():
    return elementwise("relu_backward", "relu_backward", relu_torch,
                       0.0, 0.0, "a select: bit-identical required, torch threshold_backward too")


def case_relu_v4():
    c = elementwise("relu_backward_v4", "relu_backward_v4", relu_torch, 0.0, 0.0,
                    "relu_backward with 16-byte loads/stores (4 per thread, scalar tail): bit-identical required, "
                    "torch threshold_backward too", cu="relu_backward_v4", vec=4)
    c.host_ref, c.tol_host = (lambda s: cp.where(s[0] > 0, s[1], cp.float32(0))), 0.0
    return c


def case_gelu(v4=False):
    return elementwise("gelu_backward" + ("_v4" if v4 else ""), "activations" + ("_v4" if v4 else ""),
                       lambda dy, x: torch.ops.aten.gelu_backward(dy, x, approximate="tanh"),
                       2 * 44 * 1.5 * U24, 1e-5, "tanh GELU, x,dy in [-1,1): header bound 44*1.5*2^-24 per side -> "
                       "twin 7.9e-6; torch's tanh form adds < 10 ulp of terms <= 1.5 -> 1e-5"
                       + ("; 16-byte accesses, 4 per thread, scalar tail" if v4 else ""),
                       cu="activations" + ("_v4" if v4 else ""), vec=4 if v4 else 1)


def case_swiglu(dt, v4=False):
    h, rows = S(4096, 100 if not v4 else 96), S(16384, 13)  # v4: h % E == 0 takes the vector path (E = 4 f32, 8 f16)
    n, f32 = rows * h, dt == cp.float32
    per = (4 if f32 else 8) if v4 else 1  # elements per thread

    def tfn(s):  # what autograd runs for a * silu(b) with a, b = x.chunk(2, -1): mul and silu backward, cat
        x, dy = T(s[0]).view(rows, 2 * h), T(s[1]).view(rows, h)
        a, b = x[:, :h], x[:, h:]
        return torch.cat([dy * F.silu(b), torch.ops.aten.silu_backward(dy * a, b)], dim=1)
    name = "swiglu_backward_" + ("f32" if f32 else "f16") + ("_v4" if v4 else "")
    f = "gated_backward" + ("_v4" if v4 else "")
    return NS(name=name, kir=f, cu=f, kernel=name, grid=(cdiv(cdiv(n, per), 256),), block=(256,),
              sets=[(rand(2 * n, 21, dtype=dt), rand(n, 22, dtype=dt))], size=f"rows={rows} h={h} n={n}",
              out=lambda: cp.empty(2 * n, dt), args=lambda s, o: (s[0], s[1], o, u32(n), u32(h)),
              torch=tfn if torch else None, tol_twin=4e-6 if f32 else 1e-3, tol_torch=1e-5 if f32 else 2e-3,
              floor=("bytes", 5 * n * (4 if f32 else 2)),
              note="inputs in [-1,1); twin = header directive (f32 4e-6, f16 1e-3); torch: f32 < 10 more roundings "
                   "-> 1e-5; f16 two more f16 roundings (dy*a, silu(b)) of values < 1 -> 2e-3")


def softmax_host(rows, cols):
    def ref(s):  # f64 softmax with kir's constant f32(log2 e): y = 2^((x - max) log2e) / sum
        x = s[0].reshape(rows, cols).astype(cp.float64)
        e = cp.exp2((x - x.max(axis=1, keepdims=True)) * float(np.float32(1.442695)))
        return (e / e.sum(axis=1, keepdims=True)).ravel()
    return ref


def case_softmax():
    rows, cols, B = S(65536, 5), S(1024, 1000), 256
    return NS(name="softmax_rows", kir="softmax", cu="softmax", kernel="softmax_rows", grid=(rows,), block=(B,),
              sets=[(rand(rows * cols, 31),)], size=f"rows={rows} cols={cols}",
              out=lambda: cp.empty(rows * cols, cp.float32), args=lambda s, o: (s[0], o, u32(rows), u32(cols)),
              torch=(lambda s: torch.softmax(T(s[0]).view(rows, cols), dim=-1)) if torch else None,
              tol_twin=lambda s, r: 3e-6 * cp.abs(r), tol_torch=lambda s, r: 1e-5 * cp.abs(r),
              floor=("bytes", 8 * rows * cols),
              note="x in [-1,1): header rel 3e-6 (twin); torch: kir <= 27 2^-24 + torch (expf, 32 serial + 5 "
                   "shuffle adds, div) <= ~45 2^-24 -> rel 1e-5")


def case_softmax_online(kernel):
    rows, cols, B = S(65536, 6), S(1024, 1003), 256  # 1003: rows start off 16-byte boundaries (head, tail)
    grid = (rows,) if kernel == "softmax_online" else (cdiv(rows, B // 32),)
    return NS(name=kernel, kir="softmax_online", cu="softmax_online", kernel=kernel, grid=grid, block=(B,),
              sets=[(rand(rows * cols, 31),)], size=f"rows={rows} cols={cols}",
              out=lambda: cp.empty(rows * cols, cp.float32), args=lambda s, o: (s[0], o, u32(rows), u32(cols)),
              torch=(lambda s: torch.softmax(T(s[0]).view(rows, cols), dim=-1)) if torch else None,
              tol_twin=0.0, tol_torch=lambda s, r: 2e-5 * cp.abs(r),
              host_ref=softmax_host(rows, cols), tol_host=lambda s, r: 1e-5 * cp.abs(r),
              floor=("bytes", 8 * rows * cols),
              note="online max/sum, 16-byte accesses; twin: the same ops in the same order -> bit-identical "
                   "(ex2.approx both); header: GPU (8 + 7L)u with L = q + 12 -> < 7e-6 rel; torch (<= ~45u) -> "
                   "rel 2e-5; host f64 (interpreter-exact ex2 <= 4e-6, GPU ex2 2 ulp) -> rel 1e-5")


def case_gemm_tiled():
    m = n = k = S(4096, 40)

    def bound(s, _):  # each side within k 2^-24 sum|a||b| (recursive summation, any order)
        return 2 * k * U24 * cp.matmul(cp.abs(s[0]).reshape(m, k), cp.abs(s[1]).reshape(k, n)).ravel()
    return NS(name="gemm_tiled", kir="gemm_tiled", cu="gemm_tiled", kernel="gemm_tiled", grid=(cdiv(n, 16), cdiv(m, 16)),
              block=(16, 16), sets=[(rand(m * k, 41), rand(k * n, 42))], size=f"m=n=k={m}",
              out=lambda: cp.empty(m * n, cp.float32), args=lambda s, o: (s[0], s[1], o, u32(m), u32(n), u32(k)),
              torch=(lambda s: torch.matmul(T(s[0]).view(m, k), T(s[1]).view(k, n))) if torch else None,
              tol_twin=0.0, tol_torch=bound, floor=("flops", 2 * m * n * k),
              note="fixed-order fma chain: bit-identical required; torch within 2k 2^-24 |A||B| elementwise")


def case_gemm_mma():
    m = n = k = S(4096, 128)  # the kernel needs m, n multiples of 64 and k of 32; 128: 2 x 2 blocks, 4 k-tiles
    sets = [(rand(m * k, 131, dtype=cp.float16), rand(k * n, 132, dtype=cp.float16))]

    def absprod(s):
        return cp.matmul(cp.abs(s[0].astype(cp.float32)).reshape(m, k), cp.abs(s[1].astype(cp.float32)).reshape(k, n)).ravel()

    def tol_torch(s, ref):  # both sides within k 2^-24 |A||B| of the exact product, torch's result rounded to f16
        return 2 * k * U24 * absprod(s) + 2.0 ** -10 * cp.abs(ref.astype(cp.float32))

    def host(s):
        return cp.matmul(s[0].astype(cp.float64).reshape(m, k), s[1].astype(cp.float64).reshape(k, n)).ravel()
    return NS(name="gemm_mma", kir="gemm_mma", cu="gemm_mma", kernel="gemm_mma", grid=(n // 64, m // 64), block=(128,),
              sets=sets, size=f"m=n=k={m} f16 -> f32", out=lambda: cp.empty(m * n, cp.float32),
              args=lambda s, o: (s[0], s[1], o, u32(m), u32(n), u32(k)),
              torch=(lambda s: torch.matmul(T(s[0]).view(m, k), T(s[1]).view(k, n))) if torch else None,
              tol_twin=0.0, tol_torch=tol_torch, host_ref=host, tol_host=lambda s, r: k * U24 * absprod(s),
              floor=("tc_flops", 2 * m * n * k),
              note="mma.sync m16n8k16 f16, f32 accumulate, blocks of 16 in k order: twin (same PTX instructions, "
                   "same order) bit-identical; block FMA truncation <= k 2^-24 |A||B| vs f64; torch.matmul "
                   "f16 (cuBLAS, f16 out): + the same again + 2^-10 |C|")


def case_squared_sum(grid, name, kernel="squared_sum", kir="grad_clip", cu="grad_clip"):
    n, B = S(1 << 26, 10003), 256
    vec = 4 if kernel.endswith("_v4") else 1
    m = cdiv(n // vec, B * grid) + (vec > 1)  # terms per accumulator (v4: quads, plus a tail element)
    rel = (m + (12 if vec > 1 else 11)) * U24  # header bound of each block partial; the f64 sum of the partials adds nothing
    total = lambda out: cp.asarray([float(cp.sum(out.astype(cp.float64)))])
    exact = lambda s: float(cp.sum(s[0].astype(cp.float64) ** 2))
    return NS(name=name, kir=kir, cu=cu, kernel=kernel, grid=(grid,), block=(B,),
              sets=[(rand(n, 51),)], size=f"n={n} ({m}/{'accumulator' if vec > 1 else 'thread'})",
              out=lambda: cp.empty(grid, cp.float32),
              args=lambda s, o: (s[0], o, u32(n)), tol_twin=0.0, floor=("bytes", 4 * n),
              torch=(lambda s: torch.linalg.vector_norm(T(s[0]))) if torch else None,
              torch_cmp=lambda out, tout, s: (total(out), (tout.double() ** 2).reshape(1), (rel + 1e-5) * exact(s)),
              exact_check=lambda out, s: metric(total(out), cp.asarray([exact(s)]), rel * exact(s)),
              note=f"partials bit-identical required; sum of partials vs f64 within (m+{12 if vec > 1 else 11})2^-24 = {rel:.2e} rel; "
                   "vs torch vector_norm(x)^2 + 1e-5 rel for torch's own order")


def rms_norm_torch(x, eps):
    if hasattr(F, "rms_norm"):  # torch >= 2.4
        return F.rms_norm(x, (x.shape[-1],), eps=eps)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def case_rmsnorm(kernel="persistent_decoder", kir="rmsnorm", cu="rmsnorm"):
    tokens, hidden, B, G = S(65536, 7), S(4096, 1003 if kernel == "rmsnorm_v4" else 1000), 256, S(SM * 8, 3)

    def host(s):  # f64 math rounded to f16
        x = s[0].reshape(tokens, hidden).astype(cp.float64)
        return (x / cp.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6)).astype(cp.float16).ravel()
    return NS(name=kernel, kir=kir, cu=cu, kernel=kernel, grid=(G,), block=(B,),
              sets=[(rand(tokens * hidden, 61, -2.0, 2.0, dtype=cp.float16),)], size=f"tokens={tokens} hidden={hidden}",
              out=lambda: cp.empty(tokens * hidden, cp.float16), args=lambda s, o: (s[0], o, u32(tokens), u32(hidden)),
              torch=(lambda s: rms_norm_torch(T(s[0]).view(tokens, hidden), 1e-6)) if torch else None,
              tol_twin=1, tol_torch=1, ulp=True, floor=("bytes", 4 * tokens * hidden),
              host_ref=host if kernel == "rmsnorm_v4" else None, tol_host=1,
              note="f16 in/out, f32 math: header: within 1 f16 ulp; torch rms_norm (eps=1e-6, f32 opmath) differs "
                   "in the scale by << 2^-11, so also <= 1 ulp" + ("; rmsnorm_v4: 16-byte accesses, hidden 1003 in the "
                                                                    "dry run (rows off 16-byte boundaries)"
                                                                    if kernel == "rmsnorm_v4" else ""))


def case_gemm_bwd_db():
    m, k, n = S(4096, 19), S(1024, 29), S(1024, 75)
    sets = [(rand(m * k, 71 + 2 * i), rand(m * n, 72 + 2 * i)) for i in range(nsets_for(4 * (m * k + m * n + k * n)))]

    def bound(s, _):
        return 2 * m * U24 * cp.matmul(cp.abs(s[0]).reshape(m, k).T, cp.abs(s[1]).reshape(m, n)).ravel()
    return NS(name="gemm_bwd_db", kir="gemm_bwd", cu="gemm_bwd", kernel="gemm_bwd_db", grid=(cdiv(k * n, 256),),
              block=(256,), sets=sets, size=f"m={m} k={k} n={n}", out=lambda: cp.empty(k * n, cp.float32),
              args=lambda s, o: (s[0], s[1], o, u32(m), u32(n), u32(k)),
              torch=(lambda s: torch.matmul(T(s[0]).view(m, k).t(), T(s[1]).view(m, n))) if torch else None,
              tol_twin=0.0, tol_torch=bound, floor=("flops", 2 * m * n * k),
              note="d_b = A^T G, fma chain over i: bit-identical required; torch within 2m 2^-24 |A|^T|G|")


def case_grad_pre():
    m, k, n, act = S(4096, 19), S(1024, 5), S(1024, 75), 2
    w = math.sqrt(3 / k)  # b ~ U(-w, w): pre = a b + bias has unit-ish variance, as after a sane init
    sets = [(rand(m * n, 81 + 4 * i), rand(m * k, 82 + 4 * i), rand(k * n, 83 + 4 * i, -w, w), rand(n, 84 + 4 * i, -0.1, 0.1))
            for i in range(nsets_for(4 * (2 * m * n + m * k + k * n + n)))]
    cache = {}

    def pre_of(s):
        if not cache:
            A, Bm = s[1].reshape(m, k), s[2].reshape(k, n)
            cache["pre"] = cp.matmul(A, Bm) + s[3][None, :]
            cache["S"] = cp.matmul(cp.abs(A), cp.abs(Bm)) + cp.abs(s[3])[None, :]
        return cache["pre"], cache["S"]

    def act_bound(s, _=None):  # header: (8|v| + 24) 2^-24 of magnitude sums <= 1.5, times |grad|, both sides
        pre = pre_of(s)[0]
        v = cp.abs(pre * (2.3022082 + 0.10294324 * pre * pre))
        return (2 * (8 * v + 24) * 1.5 * U24 * cp.abs(s[0].reshape(m, n))).ravel()

    def tol_torch(s, _):  # + pre's difference (2(k+1) 2^-24 S) through |gelu''| <= 1, + torch's own gelu' (16 ulp)
        return act_bound(s) + (cp.abs(s[0].reshape(m, n)) * (2 * (k + 1) * U24 * pre_of(s)[1] + 16 * U24)).ravel()

    def tfn(s):
        pre = torch.addmm(T(s[3]), T(s[1]).view(m, k), T(s[2]).view(k, n))
        return torch.ops.aten.gelu_backward(T(s[0]).view(m, n), pre, approximate="tanh")
    return NS(name="gemm_bias_act_bwd_grad_pre", kir="gemm_bwd", cu="gemm_bwd", kernel="gemm_bias_act_bwd_grad_pre",
              grid=(cdiv(m * n, 256),), block=(256,), sets=sets, size=f"m={m} k={k} n={n} act=gelu",
              out=lambda: cp.empty(m * n, cp.float32),
              args=lambda s, o: (s[0], s[1], s[2], s[3], o, u32(m), u32(n), u32(k), u32(act)),
              torch=tfn if torch else None, tol_twin=act_bound, tol_torch=tol_torch, floor=("flops", 2 * m * n * k),
              note="grad * gelu'(A B + bias), tanh GELU; twin: header act' bound 2(8|v|+24)1.5 2^-24 |g| (pre is "
                   "bit-identical); torch (addmm + gelu_backward): + 2(k+1)2^-24 |A||B| through |gelu''| <= 1")


# Scalar kernels first, each vectorized / tensor-core variant of issue 40 after its scalar one (same sizes).
CASES = [("relu_backward", case_relu), ("relu_backward_v4", case_relu_v4), ("gelu_backward", case_gelu),
         ("gelu_backward_v4", lambda: case_gelu(True)),
         ("swiglu_backward_f32", lambda: case_swiglu(cp.float32)), ("swiglu_backward_f32_v4", lambda: case_swiglu(cp.float32, True)),
         ("swiglu_backward_f16", lambda: case_swiglu(cp.float16)), ("swiglu_backward_f16_v4", lambda: case_swiglu(cp.float16, True)),
         ("softmax_rows", case_softmax), ("softmax_online", lambda: case_softmax_online("softmax_online")),
         ("softmax_warp_rows", lambda: case_softmax_online("softmax_warp_rows")),
         ("squared_sum", lambda: case_squared_sum(S(SM * 8, 8), "squared_sum")),
         ("squared_sum_v4", lambda: case_squared_sum(S(SM * 8, 8), "squared_sum_v4", "squared_sum_v4", "squared_sum_v4",
                                                     "squared_sum_v4")),
         ("persistent_decoder", case_rmsnorm), ("rmsnorm_v4", lambda: case_rmsnorm("rmsnorm_v4", "rmsnorm_v4", "rmsnorm_v4")),
         ("gemm_tiled", case_gemm_tiled), ("gemm_mma", case_gemm_mma), ("gemm_bwd_db", case_gemm_bwd_db),
         ("gemm_bias_act_bwd_grad_pre", case_grad_pre),
         ("squared_sum_grid8", lambda: case_squared_sum(8, "squared_sum_grid8"))]


# ---------------------------------------------------------------- runner
def tolv(tol, s, ref):
    return tol(s, ref) if callable(tol) else tol


def run_case(c):
    res = {"kernel": c.kernel, "size": c.size, "launch": f"grid{c.grid} block{c.block}", "note": c.note,
           "floor": c.floor, "floor_ms": 1e3 * c.floor[1] / PEAKS[c.floor[0]], "variants": {}}
    ulp = getattr(c, "ulp", False)
    fns, outs = {}, {}
    for v, sub, kind in VARIANTS:  # load (driver JIT), one launch for the checks
        fname = c.kir if kind == "kir" else c.cu
        if fname is None or (kind == "cu" and not os.path.exists(ptx_path(sub, fname))):
            continue  # no twin (yet): no twin columns
        r = res["variants"][v] = {}
        try:
            t = time.time()
            fn = load(sub, fname, c.kernel)
            r["load_ms"] = (time.time() - t) * 1e3
            o = [c.out() for _ in c.sets]
            for x in o:
                x.fill(-7)  # sentinel
            if DRY:
                t = time.time()
                fn(c.grid, c.block, c.args(c.sets[0], o[0]))
                r["emulator_s"] = time.time() - t  # CPU time of the PTX emulator and kir run: not a GPU time
            else:
                a, b = cp.cuda.Event(), cp.cuda.Event()
                a.record()
                fn(c.grid, c.block, c.args(c.sets[0], o[0]))
                b.record()
                b.synchronize()
                r["first_ms"] = cp.cuda.get_elapsed_time(a, b)
            fns[v], outs[v] = fn, o
        except Exception as e:
            traceback.print_exc()
            r["error"] = repr(e)[:1500]
    tout = None
    if torch is not None and c.torch is not None:
        try:
            tout = c.torch(c.sets[0])
            torch.cuda.synchronize()
        except Exception as e:
            traceback.print_exc()
            res["torch_error"] = repr(e)[:1500]
    host = None
    if getattr(c, "host_ref", None) is not None:
        try:
            host = c.host_ref(c.sets[0])
        except Exception as e:
            traceback.print_exc()
            res["host_error"] = repr(e)[:1500]
    for v, o in outs.items():
        r = res["variants"][v]
        try:
            left = int((o[0] == -7).sum())  # the sentinel, where the launch wrote nothing
            if left:
                r["sentinel_left"] = left
            if "twin" in outs and v != "twin":
                r["vs_twin"] = metric(o[0], outs["twin"][0], tolv(c.tol_twin, c.sets[0], outs["twin"][0].ravel()), ulp)
            if tout is not None and hasattr(c, "torch_cmp"):
                got, want, tol = c.torch_cmp(o[0], tout, c.sets[0])
                r["vs_torch"] = metric(got, C(want), tol)
            elif tout is not None:
                want = C(tout).ravel()
                r["vs_torch"] = metric(o[0], want, tolv(c.tol_torch, c.sets[0], want), ulp)
            if host is not None:
                r["vs_host"] = metric(o[0], host, tolv(c.tol_host, c.sets[0], host), ulp)
            if hasattr(c, "exact_check"):
                r["vs_f64"] = c.exact_check(o[0], c.sets[0])
        except Exception as e:
            traceback.print_exc()
            r["check_error"] = repr(e)[:1500]
    if DRY:
        return res  # nothing is timed without a GPU
    nv = len(fns) + (tout is not None)
    for v, fn in fns.items():  # timing, within a per-case budget
        r = res["variants"][v]
        try:
            est = max(r.get("first_ms", 1.0), 1e-3) / 1e3
            reps, warm = REPS, WARM
            if est * (REPS + WARM) * nv > CASE_BUDGET:
                reps, warm = max(3, int(CASE_BUDGET / nv / est) - 1), 1
            o = outs[v]
            r.update(time_it(lambda i: fn(c.grid, c.block, c.args(c.sets[i], o[i])), len(c.sets), reps, warm))
        except Exception as e:
            traceback.print_exc()
            r["time_error"] = repr(e)[:1500]
    if tout is not None:
        del tout
        r = res["variants"]["torch"] = {}
        try:
            r.update(time_it(lambda i: c.torch(c.sets[i]), len(c.sets), REPS, WARM, use_torch=True))
        except Exception as e:
            traceback.print_exc()
            r["time_error"] = repr(e)[:1500]
    if c.floor[0] == "bytes":
        try:
            res["copy"] = copy_rate(c.floor[1])
        except Exception as e:
            traceback.print_exc()
            res["copy_error"] = repr(e)[:1500]
    for r in res["variants"].values():
        if "median_ms" in r:
            r["pct_of_floor"] = 100.0 * res["floor_ms"] / r["median_ms"]
            r["achieved"] = c.floor[1] / (r["median_ms"] * 1e-3) / (1e9 if c.floor[0] == "bytes" else 1e12)
            if "copy" in res:
                r["pct_of_copy"] = 100.0 * r["achieved"] / res["copy"]["GBps"]
    return res


def fmt(x, f="%.3f"):
    return f % x if isinstance(x, (int, float)) else "-"


ROW = "%-26s|%8s|%8s|%8s|%8s|%8s|%6s|%6s|%12s|%12s|%12s|%7s| %s"
HEAD = ROW % ("kernel", "kir ms", "kir-opt", "twin ms", "twin-fma", "torch ms", "o/twin", "o/trch", "kir-opt rate",
              "twin rate", "torch rate", "%cp|pk", "max abs err of kir-opt vs twin, torch, host; failed checks")


def summary_line(name, res):
    V = res.get("variants", {})
    ms = {v: V.get(v, {}).get("median_ms") for v in ("kir", "kir_opt", "twin", "twin_fmad", "torch")}
    ratio = lambda a, b: ms[a] / ms[b] if ms[a] and ms[b] else None
    kv = V.get("kir_opt", {})
    fails = [f"{v}:{c[3:]}" for v, r in V.items() for c in ("vs_twin", "vs_torch", "vs_host", "vs_f64")
             if c in r and not r[c]["ok"]]
    fails += [f"{v}:{k}" for v, r in V.items() for k in r if k.endswith("error") or k == "sentinel_left"]
    fails += [k.replace("_", ":") for k in ("torch_error", "host_error", "copy_error") if k in res]
    err = "%s, %s, %s; %s" % (fmt(kv.get("vs_twin", {}).get("max_abs"), "%.1e"),
                              fmt(kv.get("vs_torch", {}).get("max_abs"), "%.1e"),
                              fmt(kv.get("vs_host", {}).get("max_abs"), "%.1e"), " ".join(fails) or "none")
    unit = "GB/s" if res["floor"][0] == "bytes" else "TF/s"
    rate = lambda v: fmt(V.get(v, {}).get("achieved"), "%.1f" + unit)
    # memory-bound: % of the measured copy rate (kir-opt); GEMMs: % of the units' nominal peak
    pct = fmt(kv.get("pct_of_copy"), "%.0f%%") if res["floor"][0] == "bytes" else fmt(kv.get("pct_of_floor"), "%.0f%%pk")
    return ROW % (name[:26], fmt(ms["kir"]), fmt(ms["kir_opt"]), fmt(ms["twin"]), fmt(ms["twin_fmad"]), fmt(ms["torch"]),
                  fmt(ratio("kir_opt", "twin"), "%.2f"), fmt(ratio("kir_opt", "torch"), "%.2f"),
                  rate("kir_opt"), rate("twin"), rate("torch"), pct, err)


def main():
    args = sys.argv[1:]
    opt = lambda k, dflt: args[args.index(k) + 1] if k in args else dflt
    budget, only = float(opt("--budget", 120.0 if not DRY else 1800.0)), opt("--only", None)  # --only name,name,...
    outdir = args[0] if args and not args[0].startswith("--") else "out"
    os.makedirs(outdir, exist_ok=True)
    t0 = T_START
    # a hung kernel must not eat the caller's whole time limit: leave at budget + 50 s regardless
    wd = threading.Timer(max(30.0, budget + 50 - (time.time() - t0)),
                         lambda: (print("WATCHDOG: exiting", flush=True), os._exit(3)))
    wd.daemon = True
    wd.start()
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"]
    meta = {"device": dev.decode() if isinstance(dev, bytes) else str(dev), "sms": SM, "cupy": cp.__version__,
            "torch": torch.__version__ if torch else None, "driver": cp.cuda.runtime.driverGetVersion(),
            "ptx": PTX_DIR, "small": SMALL, "dry_run": DRY}
    print(meta, f"(imports took {time.time() - t0:.1f} s)", flush=True)
    if DRY:
        print("DRY RUN: no GPU; every launch ran in kir's PTX emulator (CPU), nothing is timed", flush=True)
    results = {}
    for name, mk in CASES:
        if only and name not in only.split(","):
            continue
        if time.time() - t0 > budget:
            print(f"budget of {budget:.0f} s spent: remaining cases skipped", flush=True)
            break
        c = None
        try:
            c = mk()
            print(f"\n== {name}: {c.size}, grid{c.grid} block{c.block}\n   tolerances: {c.note}", flush=True)
            results[name] = run_case(c)
            for v, r in results[name]["variants"].items():
                print("  %-9s %s" % (v, {k: (round(x, 4) if isinstance(x, float) else x) for k, x in r.items()}), flush=True)
            if "copy" in results[name]:
                print("  copy      %s" % {k: round(x, 4) if isinstance(x, float) else x for k, x in results[name]["copy"].items()})
            print(HEAD + "\n" + summary_line(name, results[name]), flush=True)
        except Exception as e:
            traceback.print_exc()
            results[name] = {"error": repr(e)[:1500]}
        finally:
            c = None
            _mods.clear()
            _tc.clear()
            cp.get_default_memory_pool().free_all_blocks()
            if torch is not None:
                torch.cuda.empty_cache()
        with open(os.path.join(outdir, "bench.json"), "w") as f:
            json.dump({"meta": meta, "elapsed_s": time.time() - t0, "results": results}, f, indent=1, default=str)
    print("\nmedian ms; o/twin, o/trch: kir-opt (default pipeline) over the twin / torch (above 1: kir slower);")
    print("rates: GB/s (bytes counted from the arguments) or TF/s (2mnk); %copy: kir-opt's GB/s over the copy rate")
    print("measured for the case; %pk: kir-opt's TF/s over the units' nominal peak (f32 51e12, f16 tensor cores 989e12)")
    print(HEAD)
    bad = 0
    for name, res in results.items():
        print(summary_line(name, res) if "variants" in res else f"{name[:26]:26}| ERROR {res.get('error')}")
        bad += "variants" not in res or not summary_line(name, res).endswith("; none")
    print(f"total {time.time() - t0:.0f} s; {len(results) - bad} cases clean, {bad} with a failed check or an error")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
