"""numpy expectations of the vectorized reductions (issue 40): kernels/softmax_online.kir,
kernels/squared_sum_v4.kir, kernels/rmsnorm_v4.kir. Registered by make_expected.py
(`expected_reductions.register(expect, rand)`), which writes kernels/data/expected/*.npy and, with
--check, runs kir on each directive and prints the largest difference next to the tolerance.

Nothing here reads an output of kir. Each reference is the kernel's documented math in f64 (with
the kernel's f32 constants: log2 e as f32(1.442695), eps as f32(1e-6)), rounded once to the
output type. The tolerances are the error bounds derived in each .kir file's header; `bound_*`
below recomputes them from the launch and asserts that the tolerance written in the file covers
them.

This module also writes one input, kernels/data/softmax_online_edge_x.npy (built below from
`rand:f32:148:94` with -inf, +inf and NaN elements placed by hand).
"""
import math
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
U = 2.0**-24
L32 = float(np.float32(1.442695))  # the kernels' log2 e, as the f32 literal rounds it
EPS32 = float(np.float32(1e-6))  # rmsnorm's eps, as the f32 literal rounds it


def tol_rel(tol):
    assert tol.startswith("rel:"), tol
    return float(tol[4:])


# ---------------------------------------------------------------- softmax_online.kir
def softmax_ref(x64, rows, cols):
    """y = 2^((x - M) L32) / sum, M the row max skipping NaN (max.f32), in f64."""
    X = x64.reshape(rows, cols)
    with np.errstate(invalid="ignore", over="ignore"):
        M = np.fmax.reduce(X, axis=1)
        e = np.exp2((X - M[:, None]) * L32)
        y = e / e.sum(axis=1)[:, None]
    return y.reshape(-1)


def quads_per_thread(rows, cols, threads):
    """The most whole quads one thread (or lane) takes in a row: ceil(quads / threads)."""
    q = 0
    for r in range(rows):
        base, end = r * cols, (r + 1) * cols
        a = min((base + 3) & ~3, end)
        b = max(end & ~3, a)
        q = max(q, -(-((b - a) // 4) // threads))
    return q


def bound_gpu_vs_interp(rows, cols, threads, across_warps):
    """softmax_online.kir's header: ptx-emu or GPU vs the interpreter, (14 + 6L)u."""
    _, L = bound_softmax_online(rows, cols, threads, across_warps)
    return (14 + 6 * L) * U


def bound_softmax_online(rows, cols, threads, across_warps):
    """softmax_online.kir's header: interpreter vs the exact math, (9 + 4L)u with
    L = q + 2 + 5 (+ 5 across warps)."""
    L = quads_per_thread(rows, cols, threads) + 2 + 5 + (5 if across_warps else 0)
    return (9 + 4 * L) * U, L


def bound_vs_softmax_rows(rows, cols, threads, across_warps, B_rows):
    """Interpreter, online vs softmax_rows on block(B_rows): (10 + 4L + k)u, k = ceil(cols /
    B_rows) + 5 + B_rows / 32."""
    _, L = bound_softmax_online(rows, cols, threads, across_warps)
    k = -(-cols // B_rows) + 5 + B_rows // 32
    return (10 + 4 * L + k) * U


def softmax(expect, rand):
    k = "softmax_online.kir"
    tol_np, tol_rows = "rel:4.2e-6", "rel:5.2e-6"
    # (rows, cols, seed, suffix, online block, warp-kernel grid and block, softmax_rows block)
    runs = [
        (13, 300, 90, "300", 64, (7, 64)),
        (4, 7, 91, "7", 32, (1, 128)),
        (3, 1000, 92, "1000", 256, (3, 32)),
        (16, 1024, 93, "1024", 128, (4, 128)),
    ]
    for (rows, cols, seed, suf, B, (wg, wb)) in runs:
        x64, _ = rand("f32", rows * cols, seed)
        y = softmax_ref(x64, rows, cols)
        # the stated tolerances cover the derived bounds of both kernels
        b_blk, _ = bound_softmax_online(rows, cols, B, True)
        b_wrp, _ = bound_softmax_online(rows, cols, 32, False)
        assert max(b_blk, b_wrp) <= tol_rel(tol_np), (suf, b_blk, b_wrp)
        assert bound_vs_softmax_rows(rows, cols, B, True, B) <= tol_rel(tol_rows), suf
        assert bound_vs_softmax_rows(rows, cols, 32, False, B) <= tol_rel(tol_rows), suf
        assert max(bound_gpu_vs_interp(rows, cols, B, True), bound_gpu_vs_interp(rows, cols, 32, False)) <= 6.2e-6, suf
        # softmax_rows (the copy in the same file) against numpy: e_j 3u, k levels of sums, the
        # division: (4 + k)u (its run is the 300-column one, B = 64)
        if suf == "300":
            kk = -(-cols // B) + 5 + B // 32
            assert (4 + kk) * U <= 1e-6
        # the f32 constant's distance from log2 e moves y by at most |x - M| |L32 - log2 e| ln 2
        # relative (times 2 through the normalization): below 1e-7 for |x - M| < 2
        with np.errstate(invalid="ignore"):
            X = x64.reshape(rows, cols)
            true = np.exp(X - X.max(axis=1)[:, None])
            true = (true / true.sum(axis=1)[:, None]).reshape(-1)
        assert np.max(np.abs(true - y) / true) < 1e-7
        name = f"softmax_online_y_{suf}"
        args = f"--arg x=rand:f32:{rows * cols}:{seed} --arg y=zeros:f32:{rows * cols} --arg rows={rows} --arg cols={cols}"
        expect(name, y.astype(np.float32), k, f"--kernel softmax_online --grid {rows} --block {B} {args}", "y", tol_np)
        expect(name, y.astype(np.float32), k, f"--kernel softmax_warp_rows --grid {wg} --block {wb} {args}", "y", tol_np)
        if suf == "300":
            expect(name, y.astype(np.float32), k, f"--kernel softmax_rows --grid {rows} --block {B} {args}", "y", "rel:1e-6")

    # the edge run, 4 rows of 37: row 0 with -inf at 3, 17, 36; row 1 all -inf; row 2 +inf at
    # 20; row 3 NaN at 5
    rows, cols = 4, 37
    x64, x = rand("f32", rows * cols, 94)
    x = x.copy().reshape(rows, cols)
    x[0, [3, 17, 36]] = -np.inf
    x[1, :] = -np.inf
    x[2, 20] = np.inf
    x[3, 5] = np.nan
    x = x.reshape(-1)
    np.save(os.path.join(HERE, "softmax_online_edge_x.npy"), x)
    y = softmax_ref(x.astype(np.float64), rows, cols)
    yr = y.reshape(rows, cols)
    assert np.all(yr[0, [3, 17, 36]] == 0.0) and np.all(np.isfinite(yr[0]))
    assert np.all(np.isnan(yr[1:]))
    args = f"--arg x=@kernels/data/softmax_online_edge_x.npy --arg y=zeros:f32:{rows * cols} --arg rows={rows} --arg cols={cols}"
    expect("softmax_online_y_edge", y.astype(np.float32), k, f"--kernel softmax_online --grid 4 --block 32 {args}", "y", tol_np)
    expect("softmax_online_y_edge", y.astype(np.float32), k, f"--kernel softmax_warp_rows --grid 2 --block 64 {args}", "y", tol_np)


# ---------------------------------------------------------------- squared_sum_v4.kir
def squared_sum(expect, rand):
    k = "squared_sum_v4.kir"
    tol = "rel:1.1e-6"
    for (n, seed, G, B) in [(10000, 11, 8, 256), (777, 12, 3, 128), (65536, 13, 16, 256)]:
        x64, _ = rand("f32", n, seed)
        quads = n // 4
        blk = np.zeros(n, dtype=np.int64)
        q = np.arange(quads * 4) // 4
        blk[: quads * 4] = (q // B) % G
        blk[quads * 4:] = 0  # tail element 4 (n / 4) + g is taken by global thread g < n % 4: block 0
        parts = np.array([np.sum(x64[blk == g] ** 2) for g in range(G)])
        # (m + 12)u plus the f32 rounding of the reference, m = the most terms of one accumulator
        m = -(-quads // (B * G)) + (1 if n % 4 else 0)
        assert (m + 13) * U <= tol_rel(tol), (n, m)
        expect(f"squared_sum_v4_partials_{n}", parts.astype(np.float32), k, f"--kernel squared_sum_v4 --grid {G} --block {B} --arg x=rand:f32:{n}:{seed} --arg partials=zeros:f32:{G} --arg n={n}", "partials", tol)


# ---------------------------------------------------------------- rmsnorm_v4.kir
def rmsnorm(expect, rand):
    k = "rmsnorm_v4.kir"
    for (T, H, seed, G, B) in [(7, 1000, 80, 3, 128), (5, 512, 81, 2, 64), (3, 100, 82, 4, 32), (9, 77, 83, 3, 32), (16, 4096, 84, 4, 256)]:
        x64, _ = rand("f16", T * H, seed)
        X = x64.reshape(T, H)
        ms = (X * X).sum(axis=1) / H
        out = X / np.sqrt(ms + EPS32)[:, None]
        # the header's bound before the f16 rounding: ((m + 14) / 2 + 3)u, m = 2 ceil(chunks / B) + 1
        m = 2 * -(-(H // 8 + 1) // B) + 1
        assert ((m + 14) / 2 + 3) * U < 2e-6, (H, m)
        expect(f"rmsnorm_v4_out_{H}", out.reshape(-1).astype(np.float16), k, f"--kernel rmsnorm_v4 --grid {G} --block {B} --arg input=rand:f16:{T * H}:{seed} --arg output=zeros:f16:{T * H} --arg num_tokens={T} --arg hidden={H}", "output", "ulp:1")


def register(expect, rand):
    softmax(expect, rand)
    squared_sum(expect, rand)
    rmsnorm(expect, rand)
