"""numpy expectations of the 16-byte vectorized elementwise kernels (issue 40, item 2):
kernels/activations_v4.kir and kernels/gated_backward_v4.kir. No kir involved.

Imported by make_expected.py, whose main calls `register(module)` with itself: this module uses
its input rebuilding (`rand`: splitmix64 as docs/testing.md specifies it), its math (`sigma`,
`gelu_tanh`, `gelu_tanh_deriv`, `silu_deriv`, `Phi`, `phi`), `store` and `expect`, so that the
v4 expectations are computed exactly as the scalar kernels' are, from the kernels' documented
math in f64 (or, where the kernel's result is exactly rounded, with the same f32 operations).

It also checks that the scalar kernels copied into the two files (the references of their
`== @NAME` expectations) are the same text as in activations.kir and gated_backward.kir.
"""
import os
import re

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.dirname(HERE)

ACT = "activations_v4.kir"
GATED = "gated_backward_v4.kir"


def kernel_texts(path):
    """name -> text of every `kernel @name(...) { ... }` of a .kir file (up to its closing `}`)."""
    with open(path) as f:
        src = f.read()
    return {m.group(1): m.group(0) for m in re.finditer(r"^kernel @(\w+)\(.*?^}$", src, re.S | re.M)}


def check_copies(copy_file, original_file, names):
    copies = kernel_texts(os.path.join(KERNELS, copy_file))
    originals = kernel_texts(os.path.join(KERNELS, original_file))
    for n in names:
        assert n in copies, f"{copy_file}: no copy of @{n}"
        assert copies[n] == originals[n], f"{copy_file}: @{n} differs from {original_file}'s"


# (kernel, output, seeds of n = 1000, seeds of n = 1003, tol): seeds are (x,) or (x, dy)
ACT_RUNS = [
    ("relu_forward", "y", (140,), (141,), "exact"),
    ("gelu_forward", "y", (142,), (143,), "rel:2.7e-6"),
    ("gelu_backward", "dx", (144, 145), (146, 147), "abs:4.1e-6"),
    ("silu_forward", "y", (148,), (149,), "rel:6e-7"),
    ("silu_backward", "dx", (150, 151), (152, 153), "abs:1.8e-6"),
]


def activations(m):
    """activations_v4.kir: activations.kir's math (its header), four elements per thread."""
    check_copies(ACT, "activations.kir", [k for (k, *_rest) in ACT_RUNS])
    for (kernel, out, s1000, s1003, tol) in ACT_RUNS:
        for (n, seeds, grid, block) in [(1000, s1000, 2, 128), (1003, s1003, 4, 64)]:
            x64, x = m.rand("f32", n, seeds[0])
            if kernel == "relu_forward":
                # exact: x where x > 0, +0.0 otherwise (select of the literal 0.0; no NaN here)
                ref = np.where(x > 0, x, np.float32(0.0)).astype(np.float32)
            elif kernel == "gelu_forward":
                ref = m.gelu_tanh(x64).astype(np.float32)
            elif kernel == "silu_forward":
                ref = (x64 * m.sigma(x64)).astype(np.float32)
            else:
                dy64, _ = m.rand("f32", n, seeds[1])
                d = m.gelu_tanh_deriv(x64) if kernel == "gelu_backward" else m.silu_deriv(x64)
                ref = (dy64 * d).astype(np.float32)
            args = f"--arg x=rand:f32:{n}:{seeds[0]}"
            if len(seeds) == 2:
                args += f" --arg dy=rand:f32:{n}:{seeds[1]}"
            args += f" --arg {out}=zeros:f32:{n} --arg n={n}"
            name = f"{kernel}_v4_{out}_{n}"
            m.expect(name, ref, ACT, f"--kernel {kernel}_v4 --grid {grid} --block {block} {args}", out, tol)


# (kind, rows, h, seed of x for f32; f16 uses seed + 3, bf16 seed + 6; dy: seed of x + 1)
# Vector runs: h a multiple of 8, so that every type takes the 16-byte path.
GATED_VEC = [
    ("glu", 20, 40, 160),
    ("reglu", 16, 64, 170),
    ("swiglu", 13, 96, 180),
    ("geglu", 7, 128, 190),
]
# Fallback runs (h not a multiple of 4: every thread takes its elements one by one).
GATED_FALLBACK = [
    ("glu", 21, 37, 200),
    ("reglu", 16, 63, 210),
    ("swiglu", 13, 100, 220),  # 100 % 8 = 4: the f32 kernel vectorizes, f16/bf16 fall back
    ("geglu", 7, 129, 230),
]
def gated(m):
    """gated_backward_v4.kir: gated_backward.kir's math, 4 (f32) or 8 (f16, bf16) per thread."""
    check_copies(GATED, "gated_backward.kir", [f"{k}_backward_{t}" for (k, *_r) in GATED_VEC for t in ("f32", "f16", "bf16")])
    for (runs, tag) in [(GATED_VEC, "vec"), (GATED_FALLBACK, "fallback")]:
        for (kind, rows, h, seed0) in runs:
            for ti, ty in enumerate(["f32", "f16", "bf16"]):
                seed = seed0 + 3 * ti
                n = rows * h
                per = 4 if ty == "f32" else 8
                block = 64
                grid = -(-(-(-n // per)) // block)
                ref = m.gated_ref(kind, ty, rows, h, seed)
                run = (
                    f"--kernel {kind}_backward_{ty}_v4 --grid {grid} --block {block} --arg x=rand:{ty}:{2 * n}:{seed}"
                    f" --arg dy=rand:{ty}:{n}:{seed + 1} --arg dx=zeros:{ty}:{2 * n} --arg n={n} --arg h={h}"
                )
                m.expect(f"{kind}_backward_{ty}_v4_dx_{tag}", ref, GATED, run, "dx", m.gated_tol(kind, ty))


def register(m):
    """Adds the v4 expectations to make_expected.py's list (m: that module)."""
    activations(m)
    if os.path.exists(os.path.join(KERNELS, GATED)):
        gated(m)
