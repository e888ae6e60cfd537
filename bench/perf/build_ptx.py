"""Builds ptx/ (run on the dev machine, NOT on the GPU box; bench.py only reads the results).

  python3 build_ptx.py KIR_BINARY KIR_REPO LIBNVRTC [OUTDIR]
OUTDIR defaults to ptx/ next to this file (where bench.py reads it; KIRBENCH_PTX names another).
OUTDIR/kir/F.ptx      : `kir ptx kernels/F.kir --sm sm_90` (as written, no passes)
OUTDIR/kir_opt/F.ptx  : `kir opt kernels/F.kir` (default pipeline) then `kir ptx --sm sm_90`,
                        i.e. what the project's codequality table measures
OUTDIR/nvrtc/T.ptx    : bench/T.cu through NVRTC, compute_90, --fmad=false (the project's setting)
OUTDIR/nvrtc_fmad/T.ptx: bench/T.cu with PLAIN_OPS prepended (the exactly rounded intrinsics become
                        plain C operators), NVRTC compute_90, default flags (fmad on): what a user
                        writing ordinary CUDA C gets. The unmodified twins give PTX byte-identical
                        to nvrtc/ with fmad on, since __f*_rn intrinsics are never contracted.
A kernel file whose twin bench/T.cu does not exist (yet) gets its kir PTX only; bench.py then shows
no twin columns for it.

Copied from ../shared/hardware-truth/perf/build_ptx.py (the script behind BENCHMARKS.md "H100
timings", 2026-11-27) and extended for issue 40: the vectorized and tensor-core kernels, twins
optional, an output directory, the directories created.
"""
import ctypes, os, subprocess, sys, tempfile

FILES = {  # kir file -> twin .cu file (bench/T.cu), used when it exists
    "relu_backward": "activations", "activations": "activations", "gated_backward": "gated_backward",
    "softmax": "softmax", "gemm_tiled": "gemm_tiled", "grad_clip": "grad_clip",
    "rmsnorm": "rmsnorm", "gemm_bwd": "gemm_bwd",
    # issue 40: 16-byte accesses, tensor cores
    "relu_backward_v4": "relu_backward_v4", "gemm_mma": "gemm_mma", "rmsnorm_v4": "rmsnorm_v4",
    "squared_sum_v4": "squared_sum_v4", "softmax_online": "softmax_online", "activations_v4": "activations_v4",
    "gated_backward_v4": "gated_backward_v4",
}


PLAIN_OPS = b"""#define __fmul_rn(a, b) ((a) * (b))
#define __fadd_rn(a, b) ((a) + (b))
#define __fsub_rn(a, b) ((a) - (b))
#define __fdiv_rn(a, b) ((a) / (b))
#define __fmaf_rn(a, b, c) fmaf((a), (b), (c))
#define __fsqrt_rn(a) sqrtf(a)
"""


def nvrtc(lib, src, name, opts):
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, name.encode(), 0, None, None) == 0
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    if rc != 0:
        raise RuntimeError(f"{name}: nvrtc rc={rc}\n{log.value.decode()}")
    n = ctypes.c_size_t()
    lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
    ptx = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetPTX(prog, ptx)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return ptx.value


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    kir, repo, libpath = sys.argv[1:4]
    out = os.path.abspath(sys.argv[4]) if len(sys.argv) > 4 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "ptx")
    for sub in ("kir", "kir_opt", "nvrtc", "nvrtc_fmad"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    lib = ctypes.CDLL(libpath)
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    print(f"NVRTC {major.value}.{minor.value}; writing {out}")
    kdir = os.path.join(repo, "kernels")
    twins = set()
    for f, cu in FILES.items():
        src = os.path.join(kdir, f + ".kir")
        if not os.path.exists(src):
            print(f"kernels/{f}.kir: not in this checkout, skipped")
            continue
        subprocess.run([kir, "ptx", src, "--sm", "sm_90", "-o", os.path.join(out, "kir", f + ".ptx")], check=True)
        # the optimized module is written to a temporary file; its imports and data paths are
        # resolved when `kir opt` reads the source, so nothing relative breaks
        with tempfile.TemporaryDirectory() as td:
            opt = os.path.join(td, f + ".opt.kir")
            subprocess.run([kir, "opt", src, "-o", opt], check=True)
            subprocess.run([kir, "ptx", opt, "--sm", "sm_90", "-o", os.path.join(out, "kir_opt", f + ".ptx")],
                           check=True)
        if os.path.exists(os.path.join(repo, "bench", cu + ".cu")):
            twins.add(cu)
        else:
            print(f"kernels/{f}.kir: no twin bench/{cu}.cu, kir PTX only")
    for cu in sorted(twins):
        src = open(os.path.join(repo, "bench", cu + ".cu"), "rb").read()
        base = [b"--gpu-architecture=compute_90"]
        same = nvrtc(lib, src, cu + ".cu", base)  # unmodified twin, fmad on
        for sub, text, opts in (("nvrtc", src, base + [b"--fmad=false"]), ("nvrtc_fmad", PLAIN_OPS + src, base)):
            ptx = nvrtc(lib, text, cu + ".cu", opts)
            if sub == "nvrtc":
                print(f"{cu}.cu: fmad on, unmodified source -> PTX identical to --fmad=false: {same == ptx}")
            open(os.path.join(out, sub, cu + ".ptx"), "wb").write(ptx)
    print("done")


if __name__ == "__main__":
    main()
