#!/usr/bin/env python3
"""Computes the `; expect:` values of the kernel library with numpy, independently of kir.

Every input is rebuilt from the directive's documented argument (`rand:TYPE:LEN:SEED` is
splitmix64 as docs/testing.md specifies it, `ones`, `range`, `@data/scale_half.npy`), and every
output from the kernel's documented math (its header comment), in f64 — or, where the kernel's
result is exactly rounded, with the same IEEE operations in numpy's f32/f16 (correctly rounded),
giving the exact bits. Nothing here reads an output of kir.

Run from the repository root (--check runs ./target/release/kir, built with `cargo build --release`):

    python3 kernels/data/make_expected.py            # (re)writes kernels/data/expected/*.npy
    python3 kernels/data/make_expected.py --check    # also runs ./target/release/kir run on each
                                                     # directive and prints the largest difference
                                                     # against the reference, next to the tol= used
    python3 kernels/data/make_expected.py --literals # prints the literal lists of the .kir files

The tolerances in the .kir files are derived in their comments; --check only shows the margin.
"""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

import expected_reductions  # softmax_online, squared_sum_v4, rmsnorm_v4 (issue 40)
import expected_v4_elementwise  # activations_v4, gated_backward_v4 (issue 40)
import expected_gemm_fast  # gemm_mma_bf16, gemm_sgemm (issue 40)

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.dirname(HERE)
OUT = os.path.join(HERE, "expected")
M64 = (1 << 64) - 1


# ---------------------------------------------------------------- inputs (docs/testing.md)
def splitmix(n, seed):
    """The raw u64 draws r of `rand:TYPE:n:seed`."""
    with np.errstate(over="ignore"):
        idx = np.arange(1, n + 1, dtype=np.uint64)
        state = np.uint64(seed) + idx * np.uint64(0x9E3779B97F4A7C15)
        z = state
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def rand_f64(n, seed):
    """2 * ((r >> 40) / 2^24) - 1, exactly (a 24-bit grid: exact in f32 and f64)."""
    r = splitmix(n, seed)
    return 2.0 * ((r >> np.uint64(40)).astype(np.float64) / 2.0**24) - 1.0


def f32_to_bf16_bits(x32):
    """Round f32 values to bf16, nearest even (no NaN among our inputs); returns u16 bits."""
    b = x32.astype(np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def bf16_bits_to_f64(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def rand(ty, n, seed):
    """The values of `rand:ty:n:seed`, as f64 (and the exact storage array)."""
    v = rand_f64(n, seed)
    if ty == "f32":
        s = v.astype(np.float32)
        return s.astype(np.float64), s
    if ty == "f16":
        s = v.astype(np.float16)  # f64 -> f16 rounds to nearest even
        return s.astype(np.float64), s
    if ty == "bf16":
        s = f32_to_bf16_bits(v.astype(np.float32))
        return bf16_bits_to_f64(s), s
    if ty == "u8":
        s = (splitmix(n, seed) & np.uint64(0xFF)).astype(np.uint8)
        return s.astype(np.float64), s
    raise ValueError(ty)


def store(ty, v64):
    """An f64 reference rounded to the storage type (nearest even), as the array to save."""
    if ty == "f32":
        return v64.astype(np.float32)
    if ty == "f16":
        return v64.astype(np.float16)
    if ty == "bf16":
        # f64 -> f32 -> bf16 can double-round; the references stored as bf16 are within the
        # stated tolerance either way (the tolerance covers a whole bf16 half-ulp).
        return f32_to_bf16_bits(v64.astype(np.float32))
    raise ValueError(ty)


# ---------------------------------------------------------------- math of the headers
def sigma(t):
    return 1.0 / (1.0 + np.exp(-t))


SQ2PI = math.sqrt(2.0 / math.pi)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(SQ2PI * (x + 0.044715 * x**3)))


def gelu_tanh_deriv(x):
    u = SQ2PI * (x + 0.044715 * x**3)
    th = np.tanh(u)
    du = SQ2PI * (1.0 + 3.0 * 0.044715 * x**2)
    return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * du


def silu_deriv(x):
    s = sigma(x)
    return s + x * s * (1.0 - s)


def Phi(b):
    return 0.5 * (1.0 + np.vectorize(math.erf)(b / math.sqrt(2.0)))


def phi(b):
    return np.exp(-0.5 * b * b) / math.sqrt(2.0 * math.pi)


def act_deriv(act, pre):
    if act == 0:
        return np.ones_like(pre)
    if act == 1:
        return (pre > 0).astype(np.float64)
    if act == 2:
        return gelu_tanh_deriv(pre)
    if act == 3:
        return silu_deriv(pre)
    if act == 4:
        return sigma(pre) * (1.0 - sigma(pre))
    if act == 5:
        return 1.0 - np.tanh(pre) ** 2
    raise ValueError(act)


# ---------------------------------------------------------------- the expectations
# Each entry: (npy name, reference array, kir file, directive for --check, buffer, tol).
EXPECTED = []


def expect(name, ref, kir, run, buf, tol):
    EXPECTED.append((name, ref, kir, run, buf, tol))


def activations():
    k = "activations.kir"
    x64, x = rand("f32", 4000, 1)
    # relu_forward: exact; y = x for x > 0, +0.0 otherwise (select of the literal 0.0).
    y = np.where(x > 0, x, np.float32(0.0)).astype(np.float32)
    expect("relu_forward_y", y, k, "--kernel relu_forward --grid 16 --block 256 --arg x=rand:f32:4000:1 --arg y=zeros:f32:4000 --arg n=4000", "y", "exact")
    x64, _ = rand("f32", 4000, 2)
    expect("gelu_forward_y", gelu_tanh(x64).astype(np.float32), k, "--kernel gelu_forward --grid 16 --block 256 --arg x=rand:f32:4000:2 --arg y=zeros:f32:4000 --arg n=4000", "y", "rel:2.7e-6")
    x64, _ = rand("f32", 4000, 3)
    dy64, _ = rand("f32", 4000, 4)
    expect("gelu_backward_dx", (dy64 * gelu_tanh_deriv(x64)).astype(np.float32), k, "--kernel gelu_backward --grid 16 --block 256 --arg x=rand:f32:4000:3 --arg dy=rand:f32:4000:4 --arg dx=zeros:f32:4000 --arg n=4000", "dx", "abs:4.1e-6")
    x64, _ = rand("f32", 1000, 5)
    expect("silu_forward_y", (x64 * sigma(x64)).astype(np.float32), k, "--kernel silu_forward --grid 8 --block 128 --arg x=rand:f32:1000:5 --arg y=zeros:f32:1000 --arg n=1000", "y", "rel:6e-7")
    x64, _ = rand("f32", 1000, 6)
    dy64, _ = rand("f32", 1000, 7)
    expect("silu_backward_dx", (dy64 * silu_deriv(x64)).astype(np.float32), k, "--kernel silu_backward --grid 8 --block 128 --arg x=rand:f32:1000:6 --arg dy=rand:f32:1000:7 --arg dx=zeros:f32:1000 --arg n=1000", "dx", "abs:1.8e-6")


def relu_backward():
    k = "relu_backward.kir"
    for (n, sx, sdy, grid, name) in [(1000, 3, 4, 4, "relu_backward_dx_1000")]:
        _, x = rand("f32", n, sx)
        _, dy = rand("f32", n, sdy)
        dx = np.where(x > 0, dy, np.float32(0.0)).astype(np.float32)
        expect(name, dx, k, f"--kernel relu_backward --grid {grid} --block 256 --arg x=rand:f32:{n}:{sx} --arg dy=rand:f32:{n}:{sdy} --arg dx=zeros:f32:{n} --arg n={n}", "dx", "exact")


GATED_TOL32 = {"glu": "abs:2e-6", "reglu": "exact", "swiglu": "abs:2e-6", "geglu": "abs:3e-6"}


def gated_ref(kind, ty, rows, h, seed):
    """gated_backward.kir's math (its header) on `rand` inputs, f64, rounded once to the storage
    type (reglu f32: one exact f32 product)."""
    n = rows * h
    x64, xs = rand(ty, 2 * n, seed)
    dy64, dys = rand(ty, n, seed + 1)
    x2 = x64.reshape(rows, 2 * h)
    a, b = x2[:, :h], x2[:, h:]
    g = dy64.reshape(rows, h)
    if kind == "glu":
        da = g * sigma(b)
        db = g * a * sigma(b) * (1.0 - sigma(b))
    elif kind == "reglu":
        # exact: f32 products of f32 (or f16/bf16) inputs, then one rounding to the
        # storage type; 0.0 (positive zero) where b <= 0
        if ty == "f32":
            a32 = xs.reshape(rows, 2 * h)[:, :h]
            b32 = xs.reshape(rows, 2 * h)[:, h:]
            g32 = dys.reshape(rows, h)
            da = np.where(b32 > 0, g32 * b32, np.float32(0.0))
            db = np.where(b32 > 0, g32 * a32, np.float32(0.0))
        else:
            # a product of two f16/bf16 values is exact in f64 (and in f32)
            da = np.where(b > 0, g * b, 0.0)
            db = np.where(b > 0, g * a, 0.0)
    elif kind == "swiglu":
        s = sigma(b)
        da = g * b * s
        db = g * a * s * (1.0 + b * (1.0 - s))
    else:
        P = Phi(b)
        da = g * b * P
        db = g * a * (P + b * phi(b))
    dx = np.concatenate([da, db], axis=1).reshape(-1)
    if kind == "reglu" and ty == "f32":
        return dx.astype(np.float32)
    return store(ty, dx.astype(np.float64))


def gated_tol(kind, ty):
    """The tolerance of a gated kernel's output: reglu is exact, the others within their bound."""
    if kind == "reglu":
        return "exact"
    return GATED_TOL32[kind] if ty == "f32" else {"f16": "abs:1e-3", "bf16": "abs:8e-3"}[ty]


def gated():
    k = "gated_backward.kir"
    rows = [
        ("glu", 777, 37, 7, 20),
        ("reglu", 1024, 64, 8, 29),
        ("swiglu", 1300, 100, 11, 38),
        ("geglu", 903, 129, 8, 47),
    ]
    for (kind, n, h, grid, seed0) in rows:
        for ti, ty in enumerate(["f32", "f16", "bf16"]):
            seed = seed0 + 3 * ti
            rows_ = n // h
            ref = gated_ref(kind, ty, rows_, h, seed)
            tol = gated_tol(kind, ty)
            expect(f"{kind}_backward_{ty}_dx", ref, k, f"--kernel {kind}_backward_{ty} --grid {grid} --block 128 --arg x=rand:{ty}:{2 * n}:{seed} --arg dy=rand:{ty}:{n}:{seed + 1} --arg dx=zeros:{ty}:{2 * n} --arg n={n} --arg h={h}", "dx", tol)


def sum_tol(bound, ref):
    """abs tolerance of a summed output: the largest recursive-summation bound (len * 2^-24 *
    sum of |terms|, as gemm_bwd.kir's header states it) plus the reference's own rounding to f32
    (2^-24 * max |ref|), rounded up to two significant digits."""
    t = float(bound.max()) + 2.0**-24 * float(np.abs(ref).max())
    e = math.floor(math.log10(t)) - 1
    d = math.ceil(t / 10.0**e)  # 10 ..= 100
    return f"abs:{d / 10:g}e{e + 1}"


def gemm_pre(a, b, bias, m, n, k):
    return a.reshape(m, k) @ b.reshape(k, n) + bias.reshape(1, n)


def gemm_bwd():
    kf = "gemm_bwd.kir"
    m, n, k = 19, 75, 5
    grad64, grad = rand("f32", m * n, 60)
    a64, _ = rand("f32", m * k, 61)
    b64, _ = rand("f32", k * n, 62)
    bias64, _ = rand("f32", n, 63)
    pre = gemm_pre(a64, b64, bias64, m, n, k).reshape(-1)
    args = "--grid 6 --block 256 --arg grad=rand:f32:1425:60 --arg a=rand:f32:95:61 --arg b=rand:f32:375:62 --arg bias=rand:f32:75:63 --arg grad_pre=zeros:f32:1425 --arg m=19 --arg n=75 --arg k=5"
    for act in range(6):
        if act == 0:
            ref = (grad * np.float32(1.0)).astype(np.float32)  # exact: grad * 1
            tol = "exact"
        elif act == 1:
            # exact: grad * (pre > 0 ? 1 : 0) in f32 (so -0 for a negative grad where pre <= 0).
            # The f32 fma chain's pre is within 6 * 2^-24 * sum|terms| of the f64 pre; the mask
            # is the same where |pre| is larger than that (asserted here).
            terms = np.abs(a64.reshape(m, k)) @ np.abs(b64.reshape(k, n)) + np.abs(bias64).reshape(1, n)
            assert np.all(np.abs(pre) > 6 * 2.0**-24 * terms.reshape(-1)), "a pre too close to 0"
            ref = (grad * (pre > 0).astype(np.float32)).astype(np.float32)
            tol = "exact"
        else:
            ref = (grad64 * act_deriv(act, pre)).astype(np.float32)
            tol = "abs:3e-5"
        expect(f"gemm_grad_pre_act{act}", ref, kf, f"--kernel gemm_bias_act_bwd_grad_pre {args} --arg act={act}", "grad_pre", tol)

    m, n, k = 19, 75, 29
    gp64, _ = rand("f32", m * n, 64)
    b64, _ = rand("f32", k * n, 65)
    # d_a[i, l] = 1 + sum_j grad_pre[i, j] b[l, j]
    d_a = 1.0 + gp64.reshape(m, n) @ b64.reshape(k, n).T
    bound = (n + 1) * 2.0**-24 * (1.0 + np.abs(gp64.reshape(m, n)) @ np.abs(b64.reshape(k, n)).T)
    expect("gemm_bwd_da_accum_d_a", d_a.reshape(-1).astype(np.float32), kf, "--kernel gemm_bwd_da_accum --grid 3 --block 256 --arg grad_pre=rand:f32:1425:64 --arg b=rand:f32:2175:65 --arg d_a=ones:f32:551 --arg m=19 --arg n=75 --arg k=29", "d_a", sum_tol(bound, d_a))
    a64, _ = rand("f32", m * k, 66)
    gp64, _ = rand("f32", m * n, 67)
    db0, _ = rand("f32", k * n, 68)
    d_b = db0.reshape(k, n) + a64.reshape(m, k).T @ gp64.reshape(m, n)
    bound = (m + 1) * 2.0**-24 * (np.abs(db0.reshape(k, n)) + np.abs(a64.reshape(m, k)).T @ np.abs(gp64.reshape(m, n)))
    expect("gemm_bwd_db_accum_d_b", d_b.reshape(-1).astype(np.float32), kf, "--kernel gemm_bwd_db_accum --grid 9 --block 256 --arg a=rand:f32:551:66 --arg grad_pre=rand:f32:1425:67 --arg d_b=rand:f32:2175:68 --arg m=19 --arg n=75 --arg k=29", "d_b", sum_tol(bound, d_b))
    gp64, _ = rand("f32", m * n, 69)
    dbias0, _ = rand("f32", n, 70)
    d_bias = dbias0 + gp64.reshape(m, n).sum(axis=0)
    bound = (m + 1) * 2.0**-24 * (np.abs(dbias0) + np.abs(gp64.reshape(m, n)).sum(axis=0))
    expect("gemm_bwd_dbias_accum_d_bias", d_bias.astype(np.float32), kf, "--kernel gemm_bwd_dbias_accum --grid 1 --block 256 --arg grad_pre=rand:f32:1425:69 --arg d_bias=rand:f32:75:70 --arg m=19 --arg n=75", "d_bias", sum_tol(bound, d_bias))


def graph_gemm_bwd():
    kf = "graph_gemm_bwd.kir"
    for (name, m, n, k, seeds, act) in [("gemm_bias_act_bwd", 19, 75, 29, (1, 2, 3, 4), 1), ("gemm_bias_act_bwd_square", 24, 24, 24, (5, 6, 7, 8), 0)]:
        grad64, grad = rand("f32", m * n, seeds[0])
        a64, _ = rand("f32", m * k, seeds[1])
        b64, _ = rand("f32", k * n, seeds[2])
        bias64, _ = rand("f32", n, seeds[3])
        pre = gemm_pre(a64, b64, bias64, m, n, k)
        if act == 1:
            terms = np.abs(a64.reshape(m, k)) @ np.abs(b64.reshape(k, n)) + np.abs(bias64).reshape(1, n)
            assert np.all(np.abs(pre) > (k + 1) * 2.0**-24 * terms), "a pre too close to 0"
        # grad_pre is exact in f32 for act 0 and 1 (grad * 1 or grad * 0)
        gp = (grad.reshape(m, n) * act_deriv(act, pre).astype(np.float32)).astype(np.float64)
        B = b64.reshape(k, n)
        A = a64.reshape(m, k)
        d_a = gp @ B.T
        d_b = A.T @ gp
        d_bias = gp.sum(axis=0)
        for (buf, ref, bound) in [
            ("d_a", d_a, n * 2.0**-24 * (np.abs(gp) @ np.abs(B).T)),
            ("d_b", d_b, m * 2.0**-24 * (np.abs(A).T @ np.abs(gp))),
            ("d_bias", d_bias, m * 2.0**-24 * np.abs(gp).sum(axis=0)),
        ]:
            tol = sum_tol(bound, ref)
            if name.endswith("square"):
                rargs = f"--graph {name} --arg grad=rand:f32:{m*n}:{seeds[0]} --arg a=rand:f32:{m*k}:{seeds[1]} --arg b=rand:f32:{k*n}:{seeds[2]} --arg bias=rand:f32:{n}:{seeds[3]} --arg d_a=zeros:f32:{m*k} --arg d_b=zeros:f32:{k*n} --arg d_bias=zeros:f32:{n} --arg n={n} --arg act={act}"
            else:
                rargs = f"--graph {name} --arg grad=rand:f32:{m*n}:{seeds[0]} --arg a=rand:f32:{m*k}:{seeds[1]} --arg b=rand:f32:{k*n}:{seeds[2]} --arg bias=rand:f32:{n}:{seeds[3]} --arg d_a=zeros:f32:{m*k} --arg d_b=zeros:f32:{k*n} --arg d_bias=zeros:f32:{n} --arg m={m} --arg n={n} --arg k={k} --arg act={act}"
            expect(f"{name}_{buf}", ref.reshape(-1).astype(np.float32), kf, rargs, buf, tol)


def grad_clip():
    kf = "grad_clip.kir"
    _, g = rand("f32", 10000, 14)
    expect("gradient_clip_half_grads", (g * np.float32(0.5)).astype(np.float32), kf, "--kernel gradient_clip_gpu_scale --grid 40 --block 256 --arg grads=rand:f32:10000:14 --arg scale=@kernels/data/scale_half.npy --arg n=10000", "grads", "exact")
    _, g = rand("f32", 1000, 15)
    expect("gradient_clip_one_grads", g, kf, "--kernel gradient_clip_gpu_scale --grid 4 --block 256 --arg grads=rand:f32:1000:15 --arg scale=ones:f32:1 --arg n=1000", "grads", "exact")
    kf = "graph_grad_clip.kir"
    g64, g = rand("f32", 5000, 3)
    norm = math.sqrt(float(np.sum(g64 * g64)))
    scale = min(1.0, 1.0 / norm)
    expect("clip_pipeline_g", (g64 * scale).astype(np.float32), kf, "--graph clip_pipeline --arg g=rand:f32:5000:3 --arg n=5000 --arg max_norm=1.0 --arg out=zeros:f32:2", "g", "rel:6e-7")
    LITERALS.append(("graph_grad_clip.kir @clip_pipeline out[0..2] (scale, norm; f64)", [scale, norm]))
    for (buf, seed) in [("g0", 4), ("g1", 5)]:
        _, g = rand("f32", 3000, seed)
        expect(f"clip_apply2_{buf}", (g * np.float32(0.5)).astype(np.float32), kf, "--graph clip_apply2 --arg g0=rand:f32:3000:4 --arg g1=rand:f32:3000:5 --arg scale=@kernels/data/scale_half.npy --arg n=3000", buf, "exact")


def act_chain():
    _, x = rand("f32", 1000, 7)
    _, dy = rand("f32", 1000, 8)
    d = np.where(x > 0, np.float32(1.0), np.float32(0.0)).astype(np.float32)
    dx = (d * dy * np.float32(0.5)).astype(np.float32)  # exact f32 ops, -0 where dy < 0 = x
    expect("act_chain_dx", dx, "graph_act_chain.kir", "--graph act_chain --arg x=rand:f32:1000:7 --arg dy=rand:f32:1000:8 --arg dx=zeros:f32:1000 --arg n=1000 --arg s=0.5", "dx", "exact")


def relu_backward_v4():
    # relu_backward_v4.kir: the math of relu_backward.kir (exact), four elements per thread plus a
    # scalar tail; n = 1003 exercises the tail (3 elements), n = 1000 has none.
    k = "relu_backward_v4.kir"
    for (n, sx, sdy, grid, block) in [(1000, 120, 121, 2, 128), (1003, 122, 123, 4, 64)]:
        _, x = rand("f32", n, sx)
        _, dy = rand("f32", n, sdy)
        dx = np.where(x > 0, dy, np.float32(0.0)).astype(np.float32)
        expect(f"relu_backward_v4_dx_{n}", dx, k, f"--kernel relu_backward_v4 --grid {grid} --block {block} --arg x=rand:f32:{n}:{sx} --arg dy=rand:f32:{n}:{sdy} --arg dx=zeros:f32:{n} --arg n={n}", "dx", "exact")


def gemm_mma_expect(kernel, fmt, runs):
    """Expectations of a tensor-core GEMM like gemm_mma.kir (`fmt` "f16" or "bf16" inputs, f32
    C): C = A B with mma.m16n8k16 issued in increasing k, one per block of 16 products, from
    C = +0. Each output is kernels/data/tensor_core_model.py's dot (sm_90 rule, blocks of 16
    chained in k order): exact bits. numpy's f64 product is only a sanity check. `runs`:
    (m, n, k, seed of A, seed of B, expectation name)."""
    sys.path.insert(0, HERE)
    import tensor_core_model as tcm

    kf = f"{kernel}.kir"
    for (m, n, kk, sa, sb, name) in runs:
        a64, a16 = rand(fmt, m * kk, sa)
        b64, b16 = rand(fmt, kk * n, sb)
        abits = a16.view(np.uint16).reshape(m, kk).tolist()
        bbits = b16.view(np.uint16).reshape(kk, n).tolist()
        zero = [[0] * n for _ in range(m)]
        d = tcm.matmul("sm_90", fmt, abits, bbits, zero)
        c = np.array(d, dtype=np.uint64).astype(np.uint32).view(np.float32).reshape(-1)
        # sanity (not the expectation): distance to the f64 product. A block truncates each of
        # its at most 17 terms (16 products and the running c) by less than 2^-25 of 2^E <= its
        # largest |term|, and its sum by less than 2^-23 relative; the errors of the chained
        # blocks add up. Bound per output, with a factor 2 of slack for the partial sums being
        # the exact ones: sum over blocks of 2 (17 2^-25 max(|products|, |c in|) + 2^-23 |c out|).
        A, B = a64.reshape(m, kk), b64.reshape(kk, n)
        ref = A @ B
        bound = np.zeros((m, n))
        before = np.zeros((m, n))
        for k0 in range(0, kk, 16):
            prods = np.abs(A[:, None, k0:k0 + 16] * B[k0:k0 + 16, :].T[None, :, :]).max(axis=2)
            after = A[:, :k0 + 16] @ B[:k0 + 16, :]
            bound += 2 * (17 * 2.0**-25 * np.maximum(prods, np.abs(before)) + 2.0**-23 * np.abs(after))
            before = after
        diff = np.abs(c.astype(np.float64).reshape(m, n) - ref)
        print(f"{name}: model vs numpy f64 A @ B: max abs diff {diff.max():.3g} (max |C| {np.abs(ref).max():.3g}, bound {bound.min():.3g}..{bound.max():.3g})", file=sys.stderr)
        assert np.all(diff <= bound), f"{name}: the tensor-core model is further from A @ B than its truncation bound"
        expect(name, c, kf, f"--kernel {kernel} --grid {n // 64},{m // 64} --block 128 --arg a=rand:{fmt}:{m * kk}:{sa} --arg b=rand:{fmt}:{kk * n}:{sb} --arg c=zeros:f32:{m * n} --arg m={m} --arg n={n} --arg k={kk}", "c", "exact")


def gemm_mma():
    gemm_mma_expect("gemm_mma", "f16", [(128, 128, 128, 130, 131, "gemm_mma_c_128"), (64, 128, 256, 132, 133, "gemm_mma_c_64x128x256")])


LITERALS = []


def literals():
    # squared_sum: partials[g] = sum over i = g B + t + j (B G) of x[i]^2, in f64
    for (n, seed, G, B) in [(10000, 11, 8, 256), (777, 12, 3, 100)]:
        x64, _ = rand("f32", n, seed)
        idx = np.arange(n)
        parts = [float(np.sum(x64[(idx // B) % G == g] ** 2)) for g in range(G)]
        LITERALS.append((f"grad_clip.kir @squared_sum n={n} seed={seed} (f64 sums)", parts))
    # clip_scale_reduce on range:f32:1800: every partial sum is an integer below 2^24, so exact;
    # norm = f32 sqrt(1619100), scale = f32 (1 / norm): both correctly rounded in numpy
    s = np.float32(sum(range(1800)))
    norm = np.sqrt(s)
    scale = np.float32(1.0) / norm
    LITERALS.append(("grad_clip.kir @clip_scale_reduce range 1800 (exact f32)", [float(scale), float(norm)]))
    # row_absmax: exact
    x64, _ = rand("f32", 2400, 21)
    LITERALS.append(("quantize.kir @row_absmax 8x300 (exact)", [float(v) for v in np.abs(x64.reshape(8, 300)).max(axis=1)]))
    # relu_backward 2^20: dx for a few ranges (exact)
    _, x = rand("f32", 1 << 20, 1)
    _, dy = rand("f32", 1 << 20, 2)
    dx = np.where(x > 0, dy, np.float32(0.0))
    for (lo, hi) in [(1048560, 1048576)]:
        LITERALS.append((f"relu_backward.kir 2^20 dx[{lo}..{hi}]", [float(v) for v in dx[lo:hi]]))
    # relu_backward_v4.kir's 2^20 run has the same inputs and math: the same literals
    LITERALS.append(("relu_backward_v4.kir 2^20 dx[1048560..1048576]", [float(v) for v in dx[1048560:1048576]]))
    # quantize.kir: row_absmax 3x10 and the first outputs of dequant_u8 (f16 ops: exact inputs, the
    # product rounded once)
    x64, _ = rand("f32", 30, 22)
    LITERALS.append(("quantize.kir @row_absmax 3x10 (exact)", [float(v) for v in np.abs(x64.reshape(3, 10)).max(axis=1)]))
    _, q = rand("u8", 1000, 23)
    deq = (q[:4].astype(np.float16) - np.float16(128)) * np.float16(0.0125)
    LITERALS.append(("quantize.kir @dequant_u8 out[0..4] (exact)", [float(v) for v in deq]))


def check(name, ref, kir, run, buf, tol):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "o.npy")
        cmd = ["./target/release/kir", "run", os.path.join("kernels", kir)] + run.split() + ["--out", f"{buf}={out}"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{name}: kir run failed: {p.stderr}")
            return
        got = np.load(out)
    if ref.dtype == np.uint16 and got.dtype == np.uint16:
        r, gt = bf16_bits_to_f64(ref), bf16_bits_to_f64(got)
    else:
        r, gt = ref.astype(np.float64), got.astype(np.float64)
    same_bits = ref.tobytes() == got.tobytes()
    absd = np.abs(r - gt)
    rel = absd / np.maximum(np.maximum(np.abs(r), np.abs(gt)), 1e-300)
    print(f"{name:36} {tol:11} bits {'same' if same_bits else 'differ'}  max abs {absd.max():.3g}  max rel {rel.max():.3g}")


def main():
    activations()
    relu_backward()
    gated()
    gemm_bwd()
    graph_gemm_bwd()
    grad_clip()
    act_chain()
    relu_backward_v4()
    gemm_mma()
    expected_reductions.register(expect, rand)
    expected_v4_elementwise.register(sys.modules[__name__])
    expected_gemm_fast.register(sys.modules[__name__])
    literals()
    os.makedirs(OUT, exist_ok=True)
    for (name, ref, *_rest) in EXPECTED:
        np.save(os.path.join(OUT, name + ".npy"), ref)
    if "--literals" in sys.argv:
        for (what, vals) in LITERALS:
            print(what + ": [" + ", ".join(repr(v) for v in vals) + "]")
    if "--lines" in sys.argv:
        for (name, ref, kir, run, buf, tol) in EXPECTED:
            who = run.split()[1]
            t = "" if tol == "exact" else f" tol={tol}"
            print(f"{kir}: ; expect: @{who} {buf} == @data/expected/{name}.npy{t}")
    if "--check" in sys.argv:
        for e in EXPECTED:
            check(*e)


if __name__ == "__main__":
    main()
