#!/usr/bin/env python3
"""Records what a GPU's tensor cores compute for mma.sync on adversarial inputs, bit for bit.

    python3 record_mma.py OUTDIR [--tiles T] [--seed S] [--rule sm_80|sm_90] [--ptx]   (GPU box: cupy, numpy)
    python3 record_mma.py OUTDIR --dry-run [--tiles T]                                 (anywhere: numpy only)
    python3 record_mma.py OUTDIR --emulator target/release/kir [--tiles T]            (no GPU: kir's PTX emulator)

Instructions (one warp per 16x8 tile, one tile = 128 independent dot products):
  f16   mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
  bf16  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
  tf32  mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
Inputs are generated here with numpy (fixed seed, one generator per instruction and category) as
bit patterns, packed on the host into per-lane registers by the PTX ISA fragment layouts (LAYOUT
below), and run by a CUDA C kernel with inline asm (cupy.RawKernel, NVRTC); --ptx, or an NVRTC
failure, loads the same kernel written directly in PTX through the driver's JIT instead
(cupy.RawModule(path=...), no NVRTC needed). Each lane loads its registers, runs one mma, and stores
its 4 f32 results, which the host unpacks by the same layout.

Written to OUTDIR (nothing else is touched; the hardware is the truth):
  {f16,bf16,tf32}.{A,B,C,D}.npy   A [T,16,K] and B [T,K,8] (k x n) as uint16 (f16, bf16) or uint32
                                  (tf32: f32 patterns, the low 13 bits are part of the input);
                                  C and D [T,16,8] uint32 (f32 patterns)
  {f16,bf16,tf32}.category.npy    uint8 [T]: index into manifest["categories"]
  manifest.json                   device, compute capability, driver and runtime versions, the PTX,
                                  the fragment layouts, the categories with their tile ranges, a
                                  layout self-check, a relaunch determinism check, and the model's
                                  agreement (informational)
Then the Python model (kernels/data/tensor_core_model.py) is run on the same inputs and its
agreement with the GPU is printed per instruction and category, for the rule expected from the
compute capability (sm_80 for 8.x, sm_90 for 9.0 and later -- B200 follows sm_90 in the Khattak &
Mikaitis data) and for neighbouring hypotheses (other block sizes, other extra-bit counts): a
disagreement is reported, never "fixed" by editing anything.

--dry-run: no GPU and no cupy; generates the same inputs, checks that the fragment layouts are
bijections and that packing/unpacking round-trips, runs the model, and prints per category what
the model's outputs look like (NaN/Inf/zero/subnormal counts) and how many outputs separate the
hypotheses (sm_90 vs sm_80 rule, other block sizes, an exactly rounded dot product), i.e. how much
each category can discriminate once a GPU answers. Writes the inputs (no D) and a manifest to OUTDIR.

--emulator KIR: no GPU either; the PTX kernel runs in kir's PTX emulator instead, which checks the
PTX text, the launch shape, the packing and the fragment layouts (exact_small_int must be
bit-exact) end to end. Its D is kir's output, not hardware truth: never keep it as a recording.
"""
import argparse
import json
import os
import platform
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "kernels", "data"))
import tensor_core_model as tcm  # noqa: E402

SEED = 20261128

# ----------------------------------------------------------------------------------------------
# instructions and fragment layouts

INSTRUCTIONS = {
    "f16": dict(ptx="mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", k=16, a_regs=4, b_regs=2,
                in_dtype=np.uint16),
    "bf16": dict(ptx="mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", k=16, a_regs=4, b_regs=2,
                 in_dtype=np.uint16),
    "tf32": dict(ptx="mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", k=8, a_regs=4, b_regs=2,
                 in_dtype=np.uint32),
}

LAYOUT = {
    "source": "NVIDIA PTX ISA, section 9.7.14.5.8 'Matrix Fragments for mma.m16n8k16 with floating point "
              "type' (f16/bf16 A, B, C/D) and section 9.7.14.5.7 'Matrix Fragments for mma.m16n8k8' (.tf32 "
              "A and B; C/D as for m16n8k16); g = laneid >> 2, q = laneid & 3",
    "m16n8k16 A (16x16 row-major, 4 x b32 = 8 halves a0..a7)":
        "element i at row g + 8*[i in {2,3,6,7}], column 2q + (i&1) + 8*[i >= 4]; register i>>1",
    "m16n8k16 B (16x8, k x n, 2 x b32 = 4 halves b0..b3)":
        "element i at k-row 2q + (i&1) + 8*[i >= 2], column g; register i>>1",
    "m16n8k8 tf32 A (16x8 row-major, 4 x b32)": "element i at row g + 8*(i&1), column q + 4*(i>>1); register i",
    "m16n8k8 tf32 B (8x8, k x n, 2 x b32)": "element i at k-row q + 4*i, column g; register i",
    "C, D (16x8, 4 x f32)": "element i at row g + 8*[i >= 2], column 2q + (i&1); register i",
    "packing": "each b32 holding two halves has the lower-numbered element in its low 16 bits",
}


def _lane_gq():
    lane = np.arange(32)[:, None]
    return lane >> 2, lane & 3


def layout_a(fmt):
    """(rows, cols) [32, elements] of the A fragment."""
    g, q = _lane_gq()
    if fmt == "tf32":
        i = np.arange(4)[None, :]
        return g + 8 * (i & 1), q + 4 * (i >> 1)
    i = np.arange(8)[None, :]
    return g + 8 * np.isin(i, [2, 3, 6, 7]), 2 * q + (i & 1) + 8 * (i >= 4)


def layout_b(fmt):
    """(k-rows, cols) [32, elements] of the B fragment."""
    g, q = _lane_gq()
    if fmt == "tf32":
        i = np.arange(2)[None, :]
        return q + 4 * i, g + 0 * i
    i = np.arange(4)[None, :]
    return 2 * q + (i & 1) + 8 * (i >= 2), g + 0 * i


def layout_c():
    g, q = _lane_gq()
    i = np.arange(4)[None, :]
    return g + 8 * (i >= 2), 2 * q + (i & 1)


def _pair(halves):
    h = halves.astype(np.uint32)
    return h[..., 0::2] | (h[..., 1::2] << 16)


def pack(fmt, a, b, c):
    """Tiles -> per-lane registers: A [T,32,4], B [T,32,2], C [T,32,4], all uint32."""
    ar, ac = layout_a(fmt)
    br, bc = layout_b(fmt)
    cr, cc = layout_c()
    ea, eb = a[:, ar, ac], b[:, br, bc]
    if fmt != "tf32":
        ea, eb = _pair(ea), _pair(eb)
    return (np.ascontiguousarray(ea, dtype=np.uint32), np.ascontiguousarray(eb, dtype=np.uint32),
            np.ascontiguousarray(c[:, cr, cc], dtype=np.uint32))


def unpack_c(regs):
    """Per-lane C/D registers [T,32,4] -> tiles [T,16,8]."""
    cr, cc = layout_c()
    out = np.zeros((regs.shape[0], 16, 8), dtype=np.uint32)
    out[:, cr, cc] = regs
    return out


def unpack_ab(fmt, ra, rb):
    """Inverse of pack for A and B (used by the dry run's round-trip check)."""
    k = INSTRUCTIONS[fmt]["k"]
    dt = INSTRUCTIONS[fmt]["in_dtype"]
    ar, ac = layout_a(fmt)
    br, bc = layout_b(fmt)
    if fmt != "tf32":
        ra = np.stack([ra & 0xFFFF, ra >> 16], axis=-1).reshape(ra.shape[0], 32, -1)
        rb = np.stack([rb & 0xFFFF, rb >> 16], axis=-1).reshape(rb.shape[0], 32, -1)
    a = np.zeros((ra.shape[0], 16, k), dtype=dt)
    b = np.zeros((rb.shape[0], k, 8), dtype=dt)
    a[:, ar, ac] = ra
    b[:, br, bc] = rb
    return a, b


def check_layouts():
    """Every fragment layout must hit each matrix element exactly once."""
    for fmt in INSTRUCTIONS:
        k = INSTRUCTIONS[fmt]["k"]
        for name, (r, cl), shape in (("A", layout_a(fmt), (16, k)), ("B", layout_b(fmt), (k, 8)),
                                     ("C", layout_c(), (16, 8))):
            hits = np.zeros(shape, dtype=int)
            np.add.at(hits, (r, cl), 1)
            if not (hits == 1).all():
                raise AssertionError("%s layout of %s is not a bijection" % (name, fmt))


# ----------------------------------------------------------------------------------------------
# the kernels

CUDA_SRC = r"""
#define MMA_KERNEL(NAME, INSN)                                                                     \
extern "C" __global__ void NAME(const uint4* __restrict__ A, const uint2* __restrict__ B,         \
                                const uint4* __restrict__ C, uint4* __restrict__ D, unsigned ntiles) \
{                                                                                                  \
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;                                            \
    if ((t >> 5) >= ntiles) return; /* warp-uniform: blockDim is a multiple of 32 */              \
    uint4 a = A[t]; uint2 b = B[t]; uint4 c = C[t];                                                \
    float d0, d1, d2, d3;                                                                          \
    asm volatile(INSN " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"              \
                 : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)                                          \
                 : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y),                     \
                   "f"(__uint_as_float(c.x)), "f"(__uint_as_float(c.y)),                           \
                   "f"(__uint_as_float(c.z)), "f"(__uint_as_float(c.w)));                          \
    D[t] = make_uint4(__float_as_uint(d0), __float_as_uint(d1), __float_as_uint(d2),               \
                      __float_as_uint(d3));                                                        \
}
MMA_KERNEL(mma_f16, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
MMA_KERNEL(mma_bf16, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
MMA_KERNEL(mma_tf32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
"""

_PTX_ENTRY = """
.visible .entry mma_{name}(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd, .param .u32 pn)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<16>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<16>;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.u32 %r4, %r1, %r2, %r3;
    shr.u32 %r5, %r4, 5;
    ld.param.u32 %r6, [pn];
    setp.ge.u32 %p1, %r5, %r6;
    @%p1 bra $L_done;
    ld.param.u64 %rd1, [pa];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r4, 16;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.v4.b32 {{%r8, %r9, %r10, %r11}}, [%rd4];
    ld.param.u64 %rd5, [pb];
    cvta.to.global.u64 %rd6, %rd5;
    mul.wide.u32 %rd7, %r4, 8;
    add.s64 %rd8, %rd6, %rd7;
    ld.global.v2.b32 {{%r12, %r13}}, [%rd8];
    ld.param.u64 %rd9, [pc];
    cvta.to.global.u64 %rd10, %rd9;
    add.s64 %rd11, %rd10, %rd3;
    ld.global.v4.f32 {{%f0, %f1, %f2, %f3}}, [%rd11];
    {insn} {{%f4, %f5, %f6, %f7}}, {{%r8, %r9, %r10, %r11}}, {{%r12, %r13}}, {{%f0, %f1, %f2, %f3}};
    ld.param.u64 %rd12, [pd];
    cvta.to.global.u64 %rd13, %rd12;
    add.s64 %rd14, %rd13, %rd3;
    st.global.v4.f32 [%rd14], {{%f4, %f5, %f6, %f7}};
$L_done:
    ret;
}}
"""
PTX_SRC = ".version 7.0\n.target sm_80\n.address_size 64\n" + "".join(
    _PTX_ENTRY.format(name=n, insn=INSTRUCTIONS[n]["ptx"]) for n in INSTRUCTIONS)


# ----------------------------------------------------------------------------------------------
# input generation (bit patterns)

FMT_FIELDS = {  # ebits, fbits, bias, shift of the pattern inside its storage word
    "f16": (5, 10, 15, 0),
    "bf16": (8, 7, 127, 0),
    "tf32": (8, 10, 127, 13),
    "f32": (8, 23, 127, 0),
}


def _enc(fmt, sign, efield, frac):
    ebits, fbits, _, shift = FMT_FIELDS[fmt]
    word = ((sign.astype(np.uint64) << (ebits + fbits)) | (efield.astype(np.uint64) << fbits)
            | frac.astype(np.uint64)) << shift
    return word.astype(np.uint32 if fmt in ("tf32", "f32") else np.uint16)


def normals(rng, fmt, shape, e_lo, e_hi, sign=None):
    """Random normal values with unbiased exponents in [e_lo, e_hi] (clipped to the format)."""
    ebits, fbits, bias, _ = FMT_FIELDS[fmt]
    e = rng.integers(np.maximum(e_lo, 1 - bias), np.minimum(e_hi, bias) + 1, size=shape)
    s = rng.integers(0, 2, size=shape) if sign is None else np.broadcast_to(sign, shape)
    return _enc(fmt, s, e + bias, rng.integers(0, 1 << fbits, size=shape))


def subnormals(rng, fmt, shape):
    _, fbits, _, _ = FMT_FIELDS[fmt]
    return _enc(fmt, rng.integers(0, 2, size=shape), np.zeros(shape, dtype=np.int64),
                rng.integers(1, 1 << fbits, size=shape))


def zeros(rng, fmt, shape, sign=None):
    s = rng.integers(0, 2, size=shape) if sign is None else np.broadcast_to(sign, shape)
    return _enc(fmt, s, np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64))


def infs(rng, fmt, shape):
    ebits = FMT_FIELDS[fmt][0]
    return _enc(fmt, rng.integers(0, 2, size=shape), np.full(shape, (1 << ebits) - 1),
                np.zeros(shape, dtype=np.int64))


def nans(rng, fmt, shape):
    """NaNs with random signs and payloads, quiet and signalling (tf32: also f32 NaNs whose payload
    lies only in the 13 bits a tf32 input ignores)."""
    ebits, fbits, _, shift = FMT_FIELDS[fmt]
    frac = rng.integers(1, 1 << fbits, size=shape)
    out = _enc(fmt, rng.integers(0, 2, size=shape), np.full(shape, (1 << ebits) - 1), frac)
    if fmt == "tf32":
        low = rng.integers(1, 1 << 13, size=shape).astype(np.uint32)
        out = np.where(rng.random(shape) < 0.25, (out & np.uint32(0xFF800000)) | low, out)
    return out


def mix(rng, choices, probs, shape):
    """Elementwise choice among arrays of the same shape."""
    idx = rng.choice(len(choices), size=shape, p=probs)
    out = np.array(choices[0], copy=True)
    for j in range(1, len(choices)):
        out = np.where(idx == j, choices[j], out)
    return out


def values(fmt, bits):
    """Exact values of input/f32 bit patterns as float64 (for building inputs, not for the model)."""
    bits = np.asarray(bits)
    if fmt == "f16":
        return bits.view(np.float16).astype(np.float64)
    if fmt == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if fmt == "tf32":
        return (bits & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    return bits.view(np.float32).astype(np.float64)


def f32_bits(x):
    with np.errstate(all="ignore"):
        return np.asarray(x, dtype=np.float64).astype(np.float32).view(np.uint32)


# Each generator takes (rng, fmt, T, K) and returns A [T,16,K], B [T,K,8], C [T,16,8] bit patterns.
# `v` (tile index mod 4) picks a variant inside a category.


def _tile_variant(T):
    return np.arange(T) % 4


def gen_exact_small_int(rng, fmt, T, K):
    """Small integers: every model and the exact sum agree, so this is the layout check."""
    a = f32_bits(rng.integers(-4, 5, size=(T, 16, K)))
    b = f32_bits(rng.integers(-4, 5, size=(T, K, 8)))
    c = f32_bits(rng.integers(-64, 65, size=(T, 16, 8)))
    return _narrow(fmt, a), _narrow(fmt, b), c


def _narrow(fmt, f32pat):
    """f32 patterns of values exact in fmt -> fmt patterns (vectorised)."""
    if fmt == "tf32":
        return f32pat.astype(np.uint32)
    if fmt == "bf16":
        return (f32pat >> 16).astype(np.uint16)
    return f32pat.view(np.float32).astype(np.float16).view(np.uint16)


def gen_random(rng, fmt, T, K):
    a = normals(rng, fmt, (T, 16, K), -3, 3)
    b = normals(rng, fmt, (T, K, 8), -3, 3)
    c = normals(rng, "f32", (T, 16, 8), -3, 3)
    return a, b, c


def gen_random_bits(rng, fmt, T, K):
    """Every bit random: all classes of values (NaN and Inf included) at their natural frequency."""
    dt = INSTRUCTIONS[fmt]["in_dtype"]
    hi = 1 << (32 if fmt == "tf32" else 16)
    a = rng.integers(0, hi, size=(T, 16, K), dtype=np.uint64).astype(dt)
    b = rng.integers(0, hi, size=(T, K, 8), dtype=np.uint64).astype(dt)
    c = rng.integers(0, 1 << 32, size=(T, 16, 8), dtype=np.uint64).astype(np.uint32)
    return a, b, c


def gen_cancellation(rng, fmt, T, K):
    """Products that cancel in pairs (a random pairing of k per tile: A[:, p] = A[:, q],
    B[p, :] = -B[q, :]), some entries then nudged by one unit in the last place, and c one of: +-0,
    tiny, moderate, or exactly -(one product) so that c and a product cancel too."""
    a = normals(rng, fmt, (T, 16, K), -2, 2)
    b = normals(rng, fmt, (T, K, 8), -2, 2)
    sign_bit = np.uint32(0x80000000) if fmt == "tf32" else np.uint16(0x8000)
    unit = np.uint32(1 << 13) if fmt == "tf32" else np.uint16(1)
    half = K // 2
    v = _tile_variant(T)
    for t in range(T):
        perm = rng.permutation(K)
        p, q = perm[:half], perm[half:]
        a[t][:, q] = a[t][:, p]
        b[t][q, :] = b[t][p, :] ^ sign_bit
        if v[t] >= 2:  # nudge: residuals far below the cancelled magnitude
            nudge_a = rng.random((16, K)) < 0.15
            nudge_b = rng.random((K, 8)) < 0.15
            a[t] = np.where(nudge_a, a[t] ^ unit, a[t])
            b[t] = np.where(nudge_b, b[t] ^ unit, b[t])
    av, bv = values(fmt, a), values(fmt, b)
    k0 = rng.integers(0, K, size=(T, 16, 8))
    # -(a[i,k0] * b[k0,j]) for a random k0 per element (exact in f32 for these exponents)
    ii = np.arange(16)[None, :, None]
    jj = np.arange(8)[None, None, :]
    tt = np.arange(T)[:, None, None]
    prod0 = av[tt, ii, k0] * bv[tt, k0, jj]
    cchoice = rng.integers(0, 5, size=(T, 16, 8))
    c = np.select(
        [cchoice == 0, cchoice == 1, cchoice == 2, cchoice == 3],
        [zeros(rng, "f32", (T, 16, 8)), normals(rng, "f32", (T, 16, 8), -40, -20),
         normals(rng, "f32", (T, 16, 8), -2, 2), f32_bits(-prod0)],
        f32_bits(-prod0 * (1 + 2.0 ** -20)))
    return a, b, c.astype(np.uint32)


def gen_exponent_spread(rng, fmt, T, K):
    """Exponents spread over a window of 2W (W in {8, 15, 30, 60} per tile, clipped to the format),
    so alignment shifts exceed 25 bits and terms are truncated partly or wholly."""
    a = np.empty((T, 16, K), dtype=INSTRUCTIONS[fmt]["in_dtype"])
    b = np.empty((T, K, 8), dtype=a.dtype)
    c = np.empty((T, 16, 8), dtype=np.uint32)
    for t in range(T):
        w = int(rng.choice([8, 15, 30, 60]))
        a[t] = normals(rng, fmt, (16, K), -w, w)
        b[t] = normals(rng, fmt, (K, 8), -w, w)
        c[t] = normals(rng, "f32", (16, 8), -2 * w, 2 * w)
    return a, b, c


def gen_subnormal(rng, fmt, T, K):
    """Subnormal inputs, products below 2^-126 (bf16/tf32) and tiny c: the E >= -133 clamp and the
    f32 subnormal result range."""
    shape_a, shape_b, shape_c = (T, 16, K), (T, K, 8), (T, 16, 8)
    if fmt == "f16":
        tiny_lo, tiny_hi = -14, -10
    else:
        tiny_lo, tiny_hi = -80, -55  # products near 2^-160 .. 2^-110
    a = mix(rng, [subnormals(rng, fmt, shape_a), normals(rng, fmt, shape_a, tiny_lo, tiny_hi),
                  zeros(rng, fmt, shape_a)], [0.5, 0.4, 0.1], shape_a)
    b = mix(rng, [subnormals(rng, fmt, shape_b), normals(rng, fmt, shape_b, tiny_lo, tiny_hi),
                  normals(rng, fmt, shape_b, -2, 2)], [0.45, 0.45, 0.1], shape_b)
    c = mix(rng, [zeros(rng, "f32", shape_c), subnormals(rng, "f32", shape_c),
                  normals(rng, "f32", shape_c, -126, -110), normals(rng, "f32", shape_c, -60, -40)],
            [0.3, 0.4, 0.2, 0.1], shape_c)
    return a, b, c


def gen_signed_zero(rng, fmt, T, K):
    """+-0 everywhere: v0 random zero density (50/90/100 %), v1 A all +-0 (random signs), v2 every
    product -0 (A -0, B positive), v3 row/column-uniform signs so that whole dot products are -0;
    c is +-0 mostly."""
    dt = INSTRUCTIONS[fmt]["in_dtype"]
    a = np.empty((T, 16, K), dtype=dt)
    b = np.empty((T, K, 8), dtype=dt)
    v = _tile_variant(T)
    for t in range(T):
        if v[t] == 0:
            pz = float(rng.choice([0.5, 0.9, 1.0]))
            a[t] = np.where(rng.random((16, K)) < pz, zeros(rng, fmt, (16, K)), normals(rng, fmt, (16, K), -2, 2))
            b[t] = np.where(rng.random((K, 8)) < pz, zeros(rng, fmt, (K, 8)), normals(rng, fmt, (K, 8), -2, 2))
        elif v[t] == 1:
            a[t] = zeros(rng, fmt, (16, K))
            b[t] = normals(rng, fmt, (K, 8), -2, 2)
        elif v[t] == 2:
            a[t] = zeros(rng, fmt, (16, K), sign=1)
            b[t] = mix(rng, [normals(rng, fmt, (K, 8), -2, 2, sign=0), zeros(rng, fmt, (K, 8), sign=0)],
                       [0.7, 0.3], (K, 8))
        else:
            rs = rng.integers(0, 2, size=(16, 1))
            cs = rng.integers(0, 2, size=(1, 8))
            a[t] = zeros(rng, fmt, (16, K), sign=rs)
            b[t] = normals(rng, fmt, (K, 8), -2, 2, sign=cs)
    c = mix(rng, [zeros(rng, "f32", (T, 16, 8), sign=1), zeros(rng, "f32", (T, 16, 8), sign=0),
                  normals(rng, "f32", (T, 16, 8), -2, 2)], [0.45, 0.45, 0.1], (T, 16, 8))
    return a, b, c


def gen_inf_nan(rng, fmt, T, K):
    """Inf and NaN: v0 sparse specials of every kind (NaN payloads, +-Inf, zeros next to them),
    v1 +-Inf in A only (B non-zero: +Inf with -Inf), v2 Inf in B where A has zeros (0*Inf),
    v3 c = +-Inf or NaN (payloads) with finite or one infinite product."""
    dt = INSTRUCTIONS[fmt]["in_dtype"]
    a = normals(rng, fmt, (T, 16, K), -2, 2)
    b = normals(rng, fmt, (T, K, 8), -2, 2)
    c = normals(rng, "f32", (T, 16, 8), -2, 2)
    v = _tile_variant(T)
    for t in range(T):
        if v[t] == 0:
            p = float(rng.choice([0.01, 0.03, 0.1]))
            for arr, shape in ((a, (16, K)), (b, (K, 8))):
                arr[t] = mix(rng, [arr[t], infs(rng, fmt, shape), nans(rng, fmt, shape), zeros(rng, fmt, shape)],
                             [1 - p, p / 2, p / 4, p / 4], shape)
            c[t] = mix(rng, [c[t], infs(rng, "f32", (16, 8)), nans(rng, "f32", (16, 8))], [0.9, 0.05, 0.05], (16, 8))
        elif v[t] == 1:
            a[t] = np.where(rng.random((16, K)) < 0.08, infs(rng, fmt, (16, K)), a[t])
        elif v[t] == 2:
            b[t] = np.where(rng.random((K, 8)) < 0.1, infs(rng, fmt, (K, 8)), b[t])
            a[t] = np.where(rng.random((16, K)) < 0.3, zeros(rng, fmt, (16, K)), a[t])
        else:
            c[t] = mix(rng, [infs(rng, "f32", (16, 8)), nans(rng, "f32", (16, 8)), c[t]], [0.5, 0.3, 0.2], (16, 8))
            a[t] = np.where(rng.random((16, K)) < 0.03, infs(rng, fmt, (16, K)), a[t])
    return a.astype(dt), b.astype(dt), c


def gen_overflow(rng, fmt, T, K):
    """Products and sums beyond f32: bf16/tf32 products up to 2^254 (v0 same sign, v1 mixed signs,
    v2 pair-cancelling huge products, v3 products near 2^126 summing past 2^128); f16 products stay
    below 2^32, so c is near FLT_MAX there (and in v3 for all formats)."""
    dt = INSTRUCTIONS[fmt]["in_dtype"]
    a = np.empty((T, 16, K), dtype=dt)
    b = np.empty((T, K, 8), dtype=dt)
    c = np.empty((T, 16, 8), dtype=np.uint32)
    big = 15 if fmt == "f16" else 127
    sign_bit = np.uint32(0x80000000) if fmt == "tf32" else np.uint16(0x8000)
    v = _tile_variant(T)
    for t in range(T):
        if v[t] == 0:
            a[t] = normals(rng, fmt, (16, K), big - 40, big, sign=0)
            b[t] = normals(rng, fmt, (K, 8), big - 40, big, sign=0)
            c[t] = normals(rng, "f32", (16, 8), 100, 127)
        elif v[t] == 1:
            a[t] = normals(rng, fmt, (16, K), big - 60, big)
            b[t] = normals(rng, fmt, (K, 8), big - 60, big)
            c[t] = normals(rng, "f32", (16, 8), 120, 127)
        elif v[t] == 2:
            a[t] = normals(rng, fmt, (16, K), big - 10, big)
            b[t] = normals(rng, fmt, (K, 8), big - 10, big)
            perm = rng.permutation(K)
            p, q = perm[:K // 2], perm[K // 2:]
            a[t][:, q] = a[t][:, p]
            b[t][q, :] = b[t][p, :] ^ sign_bit
            if rng.random() < 0.5:
                b[t][q[0], :] ^= np.uint32(1 << 13) if fmt == "tf32" else np.uint16(1)
            c[t] = normals(rng, "f32", (16, 8), -10, 10)
        else:
            if fmt == "f16":
                a[t] = normals(rng, fmt, (16, K), 10, 15)
                b[t] = normals(rng, fmt, (K, 8), 10, 15)
            else:
                a[t] = normals(rng, fmt, (16, K), 60, 64)
                b[t] = normals(rng, fmt, (K, 8), 60, 64)
            c[t] = mix(rng, [np.full((16, 8), 0x7F7FFFFF, dtype=np.uint32),
                             np.full((16, 8), 0xFF7FFFFF, dtype=np.uint32),
                             normals(rng, "f32", (16, 8), 126, 127)], [0.3, 0.3, 0.4], (16, 8))
    return a, b, c


def gen_c_subnormal(rng, fmt, T, K):
    """c subnormal (f32) with v0 zero products, v1 products that cancel exactly, v2 tiny products
    of comparable size (bf16/tf32) or the smallest f16 products, v3 a mix."""
    dt = INSTRUCTIONS[fmt]["in_dtype"]
    a = np.empty((T, 16, K), dtype=dt)
    b = np.empty((T, K, 8), dtype=dt)
    c = subnormals(rng, "f32", (T, 16, 8))
    sign_bit = np.uint32(0x80000000) if fmt == "tf32" else np.uint16(0x8000)
    lo, hi = (-14, -12) if fmt == "f16" else (-76, -64)
    v = _tile_variant(T)
    for t in range(T):
        if v[t] == 0:
            a[t] = zeros(rng, fmt, (16, K))
            b[t] = normals(rng, fmt, (K, 8), -2, 2)
        elif v[t] == 1:
            a[t] = normals(rng, fmt, (16, K), lo, hi)
            b[t] = normals(rng, fmt, (K, 8), lo, hi)
            perm = rng.permutation(K)
            p, q = perm[:K // 2], perm[K // 2:]
            a[t][:, q] = a[t][:, p]
            b[t][q, :] = b[t][p, :] ^ sign_bit
        elif v[t] == 2:
            a[t] = mix(rng, [subnormals(rng, fmt, (16, K)), normals(rng, fmt, (16, K), lo, hi)], [0.5, 0.5], (16, K))
            b[t] = mix(rng, [subnormals(rng, fmt, (K, 8)), normals(rng, fmt, (K, 8), lo, hi)], [0.5, 0.5], (K, 8))
        else:
            a[t] = mix(rng, [zeros(rng, fmt, (16, K)), normals(rng, fmt, (16, K), lo, hi),
                             subnormals(rng, fmt, (16, K))], [0.5, 0.25, 0.25], (16, K))
            b[t] = normals(rng, fmt, (K, 8), lo, hi)
    return a, b, c


def gen_c_dominant(rng, fmt, T, K):
    """|c| far above the products (2^d times, d in [5, 40]) so that products are truncated: negative
    products against positive c (and vice versa) separate truncation toward zero from flooring;
    v3: c = +-FLT_MAX or +-2^k exactly with small products of the opposite sign."""
    a = normals(rng, fmt, (T, 16, K), -2, 2)
    b = normals(rng, fmt, (T, K, 8), -2, 2)
    d = rng.integers(5, 41, size=(T, 1, 1))
    c = normals(rng, "f32", (T, 16, 8), 0, 0)
    e = ((c >> 23) & 0xFF).astype(np.int64) + d
    c = ((c & np.uint32(0x807FFFFF)) | (e.astype(np.uint32) << 23)).astype(np.uint32)
    v = _tile_variant(T)
    for t in range(T):
        if v[t] == 3:
            pw = rng.integers(0, 3, size=(16, 8))
            exps = rng.integers(5, 41, size=(16, 8))
            powers = _enc("f32", rng.integers(0, 2, size=(16, 8)), exps + 127, np.zeros((16, 8), dtype=np.int64))
            c[t] = np.where(pw == 0, np.where(rng.random((16, 8)) < 0.5, 0x7F7FFFFF, 0xFF7FFFFF), powers)
    return a, b, c


def gen_tf32_lowbits(rng, fmt, T, K):
    """tf32 only: f32 patterns with random low 13 bits, which a tf32 input ignores; in every fourth
    tile some inputs are f32 NaNs whose payload lies only in those bits (a tf32 Inf if they are
    ignored), some next to zeros."""
    a, b, c = gen_random(rng, fmt, T, K)
    a = a | rng.integers(0, 1 << 13, size=a.shape).astype(np.uint32)
    b = b | rng.integers(0, 1 << 13, size=b.shape).astype(np.uint32)
    v = _tile_variant(T)
    for t in range(T):
        if v[t] == 3:
            for arr, shape in ((a, (16, K)), (b, (K, 8))):
                low_nan = (rng.integers(0, 2, size=shape).astype(np.uint32) << 31) | np.uint32(0x7F800000) \
                    | rng.integers(1, 1 << 13, size=shape).astype(np.uint32)
                pick = rng.random(shape)
                arr[t] = np.where(pick < 0.04, low_nan, np.where(pick < 0.08, np.uint32(0), arr[t]))
    return a, b, c


CATEGORIES = [
    ("exact_small_int", gen_exact_small_int, None),
    ("random", gen_random, None),
    ("random_bits", gen_random_bits, None),
    ("cancellation", gen_cancellation, None),
    ("exponent_spread", gen_exponent_spread, None),
    ("subnormal", gen_subnormal, None),
    ("signed_zero", gen_signed_zero, None),
    ("inf_nan", gen_inf_nan, None),
    ("overflow", gen_overflow, None),
    ("c_subnormal", gen_c_subnormal, None),
    ("c_dominant", gen_c_dominant, None),
    ("tf32_lowbits", gen_tf32_lowbits, "tf32"),
]


def generate(fmt, tiles, seed):
    """All categories of one instruction: (A, B, C, category index, [(name, start, end, doc)])."""
    k = INSTRUCTIONS[fmt]["k"]
    fmt_index = list(INSTRUCTIONS).index(fmt)
    parts, spans = [], []
    start = 0
    for ci, (name, gen, only) in enumerate(CATEGORIES):
        if only is not None and only != fmt:
            continue
        rng = np.random.default_rng([seed, fmt_index, ci])
        a, b, c = gen(rng, fmt, tiles, k)
        dt = INSTRUCTIONS[fmt]["in_dtype"]
        assert a.shape == (tiles, 16, k) and b.shape == (tiles, k, 8) and c.shape == (tiles, 16, 8), name
        parts.append((a.astype(dt), b.astype(dt), c.astype(np.uint32), np.full(tiles, ci, dtype=np.uint8)))
        spans.append((name, start, start + tiles, " ".join((gen.__doc__ or "").split())))
        start += tiles
    a, b, c, cat = (np.concatenate([p[i] for p in parts]) for i in range(4))
    return a, b, c, cat, spans


# ----------------------------------------------------------------------------------------------
# references


def expected_rule(cc):
    major = int(cc.split(".")[0])
    return "sm_80" if major < 9 else "sm_90"


def hypotheses(fmt, rule):
    """(label, x, n): the expected model first, then neighbours it must be told apart from."""
    x0 = tcm.RULES[rule][0]
    n0 = tcm.block_size(rule, fmt)
    k = INSTRUCTIONS[fmt]["k"]
    hyp = [("model %s (x=%d, block %d)" % (rule, x0, n0), x0, n0)]
    for x in (1, 2, 3):
        for n in sorted({4, 8, k}):
            if (x, n) != (x0, n0) and n <= k:
                hyp.append(("x=%d, block %d" % (x, n), x, n))
    return hyp


def model_tiles(fmt, a, b, c, rule, x=None, n=None):
    out = np.empty(c.shape, dtype=np.uint32)
    for t in range(a.shape[0]):
        out[t] = tcm.matmul(rule, fmt, a[t].tolist(), b[t].tolist(), c[t].tolist(), n=n, x=x)
    return out


def exact_rn_tiles(fmt, a, b, c):
    """The exactly rounded dot product (one nearest-even rounding of the exact sum), same specials."""
    fbits = tcm.FORMATS[fmt][1]
    out = np.empty(c.shape, dtype=np.uint32)
    for t in range(a.shape[0]):
        da = [[tcm.decode_input(fmt, v) for v in row] for row in a[t].tolist()]
        db = [[tcm.decode_input(fmt, v) for v in row] for row in b[t].tolist()]
        ct = c[t].tolist()
        for i in range(16):
            for j in range(8):
                prods = [(da[i][k], db[k][j]) for k in range(len(db))]
                # specials and zeros exactly as the model (one block with no truncation differs
                # only for finite non-zero sums)
                special = tcm._block(30, fbits, prods, tcm.decode_f32(ct[i][j]))
                terms = []
                for (ka, sa, ma, ea), (kb, sb, mb, eb) in prods:
                    if ka == tcm._FINITE and kb == tcm._FINITE:
                        terms.append((sa ^ sb, ma * mb, ea + eb - 2 * fbits))
                kc, sc, mc, ec = tcm.decode_f32(ct[i][j])
                if kc == tcm._FINITE:
                    terms.append((sc, mc, ec - 23))
                if not terms or special in (tcm.F32_NAN, tcm.F32_PINF, tcm.F32_NINF):
                    out[t, i, j] = special
                    continue
                lo = min(e for _, _, e in terms)
                total = sum((-m if s else m) << (e - lo) for s, m, e in terms)
                out[t, i, j] = _to_f32_rn(total, lo)
    return out


def _to_f32_rn(total, scale):
    if total == 0:
        return 0
    s = (1 << 31) if total < 0 else 0
    mag = abs(total)
    top = mag.bit_length() - 1 + scale
    q = max(top, -126) - 23  # quantum exponent
    sh = q - scale
    if sh <= 0:
        r = mag << -sh
    else:
        r, rem = mag >> sh, mag & ((1 << sh) - 1)
        half = 1 << (sh - 1)
        if rem > half or (rem == half and r & 1):
            r += 1
    if r >= 1 << 24:
        r >>= 1
        q += 1
    if q + 23 >= 128:
        return s | tcm.F32_PINF
    if r < 1 << 23:
        return s | r  # subnormal (or zero)
    return s | ((q + 23 + 127) << 23) | (r & 0x7FFFFF)


def classify(d):
    """Counts of result classes of f32 patterns."""
    e = (d >> 23) & 0xFF
    f = d & 0x7FFFFF
    neg = d >> 31
    return {
        "nan": int(((e == 255) & (f != 0)).sum()),
        "+inf": int(((e == 255) & (f == 0) & (neg == 0)).sum()),
        "-inf": int(((e == 255) & (f == 0) & (neg == 1)).sum()),
        "+0": int((d == 0).sum()),
        "-0": int((d == 0x80000000).sum()),
        "subnormal": int(((e == 0) & (f != 0)).sum()),
        "normal": int(((e > 0) & (e < 255)).sum()),
    }


def choice_points(fmt, a, b, c):
    """Masks [T,16,8] of the dot products where the model rests on a choice the Khattak-Mikaitis
    data cannot settle: 'all_neg_zero' (every product and c is -0: the model says -0, kir's PTX
    emulator +0), 'all_zero_mixed' (all zero, not all -0: +0), and for tf32 'tf32_lowbit_nan' (an
    f32 NaN whose payload lies only in the low 13 bits, no other NaN: the model ignores those bits
    and sees Inf; kir's PTX emulator keeps a NaN)."""
    if fmt == "tf32":
        mag_a, mag_b = a & np.uint32(0x7FFFE000), b & np.uint32(0x7FFFE000)
        sgn_a, sgn_b = a >> 31, b >> 31
        emax, fmask = np.uint32(0x7F800000), np.uint32(0x007FE000)
    else:
        mag_a, mag_b = a & np.uint16(0x7FFF), b & np.uint16(0x7FFF)
        sgn_a, sgn_b = a >> 15, b >> 15
        emax, fmask = (np.uint16(0x7C00), np.uint16(0x03FF)) if fmt == "f16" else (np.uint16(0x7F80), np.uint16(0x007F))
    special_a = (mag_a & emax) == emax
    special_b = (mag_b & emax) == emax
    any_special = special_a.any(axis=2)[:, :, None] | special_b.any(axis=1)[:, None, :]
    nz_a, nz_b = (mag_a != 0).astype(np.int64), (mag_b != 0).astype(np.int64)
    nonzero_products = np.einsum("tik,tkj->tij", nz_a, nz_b)
    c_zero = (c & np.uint32(0x7FFFFFFF)) == 0
    all_zero = (nonzero_products == 0) & c_zero & ~any_special
    psign = (sgn_a.astype(np.int64)[:, :, :, None] ^ sgn_b.astype(np.int64)[:, None, :, :])  # [T,16,K,8]
    all_neg = (psign.min(axis=2) == 1) & ((c >> 31) == 1)
    out = {"all_neg_zero": all_zero & all_neg, "all_zero_mixed": all_zero & ~all_neg}
    if fmt == "tf32":
        low_nan_a = ((a & emax) == emax) & ((a & fmask) == 0) & ((a & np.uint32(0x1FFF)) != 0)
        low_nan_b = ((b & emax) == emax) & ((b & fmask) == 0) & ((b & np.uint32(0x1FFF)) != 0)
        true_nan_a = ((a & emax) == emax) & ((a & fmask) != 0)
        true_nan_b = ((b & emax) == emax) & ((b & fmask) != 0)
        low = low_nan_a.any(axis=2)[:, :, None] | low_nan_b.any(axis=1)[:, None, :]
        true = true_nan_a.any(axis=2)[:, :, None] | true_nan_b.any(axis=1)[:, None, :]
        c_nan = ((c & np.uint32(0x7F800000)) == np.uint32(0x7F800000)) & ((c & np.uint32(0x7FFFFF)) != 0)
        out["tf32_lowbit_nan"] = low & ~true & ~c_nan
    return out


def _short_classes(x):
    return ", ".join("%s %d" % (k, v) for k, v in classify(x).items() if v) or "none"


def same_up_to_nan(x, y):
    nx = ((x >> 23) & 0xFF == 255) & (x & 0x7FFFFF != 0)
    ny = ((y >> 23) & 0xFF == 255) & (y & 0x7FFFFF != 0)
    return (x == y) | (nx & ny)


# ----------------------------------------------------------------------------------------------
# the GPU


class Gpu:
    def __init__(self, use_ptx):
        import cupy as cp  # only here: the module imports without cupy
        self.cp = cp
        dev = cp.cuda.Device(0)
        props = cp.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.cc = "%d.%d" % (props["major"], props["minor"])
        self.info = {
            "device": self.name,
            "compute_capability": self.cc,
            "driver_version": cp.cuda.runtime.driverGetVersion(),
            "runtime_version": cp.cuda.runtime.runtimeGetVersion(),
            "cupy": cp.__version__,
            "device_id": dev.id,
            "nvidia_smi": _nvidia_smi(),
        }
        self.kernels = {}
        self.how = None
        if not use_ptx:
            try:
                mod = cp.RawModule(code=CUDA_SRC, options=("--std=c++14",))
                self.kernels = {f: mod.get_function("mma_" + f) for f in INSTRUCTIONS}
                self.how = "CUDA C inline asm, cupy.RawModule (NVRTC)"
            except Exception as err:  # NVRTC missing or refusing: fall back to the PTX text
                print("NVRTC path failed (%s); using the PTX kernel" % str(err).splitlines()[0])
        if not self.kernels:
            self._tmp = tempfile.mkdtemp(prefix="record_mma_")
            path = os.path.join(self._tmp, "mma.ptx")
            with open(path, "w") as f:
                f.write(PTX_SRC)
            mod = cp.RawModule(path=path)
            self.kernels = {f: mod.get_function("mma_" + f) for f in INSTRUCTIONS}
            self.how = "PTX .version 7.0 .target sm_80, cupy.RawModule(path=...) (driver JIT)"

    def run(self, fmt, ra, rb, rc):
        cp = self.cp
        T = ra.shape[0]
        A, B, C = cp.asarray(ra), cp.asarray(rb), cp.asarray(rc)
        D = cp.zeros_like(C)
        threads = 128
        blocks = (T * 32 + threads - 1) // threads
        self.kernels[fmt]((blocks,), (threads,), (A, B, C, D, np.uint32(T)))
        cp.cuda.runtime.deviceSynchronize()
        return cp.asnumpy(D)


class EmulatorGpu:
    """Stand-in for the GPU (no cupy): the PTX kernel run by kir's PTX emulator (`kir run FILE.ptx`).
    Proves the PTX, the launch shape, the packing and the layout (exact_small_int) without a GPU;
    its outputs are kir's, NOT hardware truth (the emulator sums exactly and rounds once)."""

    def __init__(self, kir):
        import subprocess
        self.subprocess = subprocess
        self.kir = kir
        self.name = "kir PTX emulator (%s) -- not hardware" % kir
        self.cc = "9.0"
        self.info = {"device": self.name, "compute_capability": "emulated", "driver_version": None}
        self.how = "PTX .version 7.0 .target sm_80, kir run (PTX emulator)"
        self._tmp = tempfile.mkdtemp(prefix="record_mma_emu_")
        self.path = os.path.join(self._tmp, "mma.ptx")
        with open(self.path, "w") as f:
            f.write(PTX_SRC)

    def run(self, fmt, ra, rb, rc):
        T = ra.shape[0]
        files = {}
        for name, arr in (("pa", ra), ("pb", rb), ("pc", rc)):
            files[name] = os.path.join(self._tmp, name + ".npy")
            np.save(files[name], arr.ravel())
        out = os.path.join(self._tmp, "pd.out.npy")
        np.save(os.path.join(self._tmp, "pd.npy"), np.zeros(rc.size, dtype=np.uint32))
        threads = 128
        blocks = (T * 32 + threads - 1) // threads
        cmd = [self.kir, "run", self.path, "--kernel", "mma_" + fmt, "--grid", str(blocks), "--block", str(threads),
               "--arg", "pa=@" + files["pa"], "--arg", "pb=@" + files["pb"], "--arg", "pc=@" + files["pc"],
               "--arg", "pd=@" + os.path.join(self._tmp, "pd.npy"), "--arg", "pn=%d" % T, "--out", "pd=" + out]
        p = self.subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError("emulator: %s\n%s%s" % (" ".join(cmd), p.stdout[-2000:], p.stderr[-2000:]))
        return np.load(out).astype(np.uint32).reshape(rc.shape)


def _nvidia_smi():
    import subprocess
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,vbios_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        return out.stdout.strip() or None
    except Exception:
        return None


# ----------------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: inputs, layout checks, model only")
    ap.add_argument("--tiles", type=int, default=48, help="tiles per category (x128 dot products)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--rule", choices=sorted(tcm.RULES), help="model rule (default: from the compute capability)")
    ap.add_argument("--ptx", action="store_true", help="load the PTX kernel (driver JIT) instead of NVRTC")
    ap.add_argument("--no-hypotheses", action="store_true", help="check the expected model only")
    ap.add_argument("--emulator", metavar="KIR", help="no GPU: run the PTX kernel in kir's PTX emulator "
                    "(e.g. target/release/kir) to check the kernel, packing and layout; not hardware data")
    args = ap.parse_args(argv)
    t0 = time.time()
    check_layouts()
    os.makedirs(args.outdir, exist_ok=True)

    if args.dry_run:
        gpu = None
    elif args.emulator:
        gpu = EmulatorGpu(os.path.abspath(args.emulator))
    else:
        gpu = Gpu(args.ptx)
    if gpu is not None:
        print("device: %s, compute capability %s, driver %s; kernel: %s"
              % (gpu.name, gpu.cc, gpu.info["driver_version"], gpu.how))
        rule = args.rule or expected_rule(gpu.cc)
    else:
        rule = args.rule or "sm_90"
    manifest = {
        "what": "mma.sync on adversarial inputs: inputs and the GPU's outputs as bit patterns"
                + (" (EMULATOR RUN: D is kir's PTX emulator, not hardware)" if args.emulator else ""),
        "script": "tests/hardware/tools/tensor_cores/record_mma.py",
        "dry_run": bool(args.dry_run),
        "seed": args.seed,
        "tiles_per_category": args.tiles,
        "platform": platform.platform(),
        "numpy": np.__version__,
        "layout": LAYOUT,
        "kernel_cuda": CUDA_SRC,
        "kernel_ptx": PTX_SRC,
        "model_rule": rule,
        "instructions": {},
    }
    if gpu is not None:
        manifest.update(gpu.info)
        manifest["kernel_used"] = gpu.how
    manifest["categories"] = [name for name, _, _ in CATEGORIES]
    all_ok = True
    for fmt, spec in INSTRUCTIONS.items():
        a, b, c, cat, spans = generate(fmt, args.tiles, args.seed)
        ra, rb, rc = pack(fmt, a, b, c)
        ua, ub = unpack_ab(fmt, ra, rb)
        assert (ua == a).all() and (ub == b).all() and (unpack_c(rc) == c).all(), "pack/unpack round trip"
        files = {}
        for name, arr in (("A", a), ("B", b), ("C", c), ("category", cat)):
            fn = "%s.%s.npy" % (fmt, name)
            np.save(os.path.join(args.outdir, fn), arr)
            files[name] = {"file": fn, "dtype": str(arr.dtype), "shape": list(arr.shape)}
        entry = {"ptx": spec["ptx"], "k": spec["k"], "files": files,
                 "categories": [{"name": n, "tiles": [s, e], "description": doc} for n, s, e, doc in spans]}
        d = None
        if gpu is not None:
            d = unpack_c(gpu.run(fmt, ra, rb, rc))
            d2 = unpack_c(gpu.run(fmt, ra, rb, rc))
            entry["relaunch_bit_identical"] = bool((d == d2).all())
            np.save(os.path.join(args.outdir, "%s.D.npy" % fmt), d)
            files["D"] = {"file": "%s.D.npy" % fmt, "dtype": "uint32", "shape": list(d.shape)}
            # layout check: small integers, where every model equals the exact sum
            s, e = spans[0][1], spans[0][2]
            exact = values(fmt, a[s:e]) @ values(fmt, b[s:e]) + values("f32", c[s:e])
            entry["layout_check_exact_small_int"] = bool((f32_bits(exact) == d[s:e]).all())
            if not entry["layout_check_exact_small_int"]:
                print("%s: LAYOUT CHECK FAILED: exact small-integer tiles differ from the GPU" % fmt)
                all_ok = False
        print("== %s  %s  (%d tiles x 128 dot products per category, model rule %s)"
              % (fmt, spec["ptx"], args.tiles, rule))
        hyps = hypotheses(fmt, rule)
        if args.no_hypotheses:
            hyps = hyps[:1]
        preds = {}
        for label, x, n in hyps:
            preds[label] = model_tiles(fmt, a, b, c, rule, x=x, n=n)
        rn = exact_rn_tiles(fmt, a, b, c)
        main_label = hyps[0][0]
        check = {}
        for name, s, e, _ in spans:
            m = preds[main_label][s:e]
            total = m.size
            row = {"dot_products": total, "model_classes": classify(m)}
            if d is None:
                row["differs_from"] = {lbl: int((p[s:e] != m).sum()) for lbl, p in preds.items() if lbl != main_label}
                row["differs_from"]["exactly rounded"] = int((rn[s:e] != m).sum())
                cls = ", ".join("%s %d" % (k, v) for k, v in row["model_classes"].items() if v)
                print("  %-16s %6d dots; model gives %s" % (name, total, cls))
                print("  %-16s separates: %s" % ("", ", ".join(
                    "%s %d" % (k, v) for k, v in row["differs_from"].items())))
            else:
                hw = d[s:e]
                row["agree"] = {lbl: int((p[s:e] == hw).sum()) for lbl, p in preds.items()}
                row["agree"]["exactly rounded"] = int((rn[s:e] == hw).sum())
                row["agree_up_to_nan_payload"] = int(same_up_to_nan(m, hw).sum())
                row["hardware_classes"] = classify(hw)
                ok = row["agree"][main_label] == total
                all_ok &= ok
                others = ", ".join("%s %d" % (k, v) for k, v in row["agree"].items() if k != main_label)
                print("  %-16s %6d/%d bit-exact (%d up to NaN payload)%s; others: %s"
                      % (name, row["agree"][main_label], total, row["agree_up_to_nan_payload"],
                         "" if ok else "  <-- DISAGREES", others))
                if not ok:
                    bad = np.argwhere(m != hw)[:3]
                    for t, i, j in bad:
                        tt = s + t
                        print("      tile %d [%d,%d]: a %s b %s c %08x model %08x gpu %08x"
                              % (tt, i, j, " ".join("%x" % v for v in a[tt, i]),
                                 " ".join("%x" % v for v in b[tt, :, j]), c[tt, i, j], m[t, i, j], hw[t, i, j]))
            check[name] = row
        entry["model_check"] = check
        # the choice points, over all categories
        cp_rows = {}
        for cname, mask in choice_points(fmt, a, b, c).items():
            m = preds[main_label][mask]
            row = {"dot_products": int(mask.sum()), "model": classify(m)}
            line = "  choice point %-16s %5d dots: model %s" % (cname, mask.sum(), _short_classes(m))
            if d is not None:
                row["hardware"] = classify(d[mask])
                line += "; hardware %s" % _short_classes(d[mask])
            print(line)
            cp_rows[cname] = row
        entry["choice_points"] = cp_rows
        manifest["instructions"][fmt] = entry
    manifest["seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(args.outdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    if args.dry_run:
        print("dry run: inputs and manifest in %s (no D: no GPU), %.1f s" % (args.outdir, time.time() - t0))
        return 0
    print("%s; %s, %.1f s" % ("the model reproduces every output" if all_ok else "DISAGREEMENTS above (data kept as recorded)",
                              args.outdir, time.time() - t0))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
