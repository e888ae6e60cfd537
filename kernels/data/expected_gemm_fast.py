"""numpy expectations of the fast GEMMs (issue 40): kernels/gemm_mma_bf16.kir (bf16 tensor-core
GEMM) and kernels/gemm_sgemm.kir (register-blocked f32 SGEMM). Registered by make_expected.py
(`expected_gemm_fast.register(sys.modules[__name__])`), which writes kernels/data/expected/*.npy
and, with --check, runs kir on each directive and prints the difference next to the tolerance.

Nothing here reads an output of kir; every expectation is exact (bit for bit):
- gemm_mma_bf16: each output is tensor_core_model.py's `dot` with the sm_90 rule for bf16 (blocks of
  16 products chained in increasing k from +0), as gemm_mma.kir's header states for f16. numpy's
  f64 A @ B is only a sanity check, asserted within the truncations' bound.
- gemm_sgemm: each output is the chain acc = fma.f32(A[i, l], B[l, j], acc) over l = 0 .. k - 1
  from +0.0. Each f32 fma is emulated exactly: the product of two f32 is exact in f64, the sum
  p + acc is split into hi = fl64(p + acc) and its exact error lo (TwoSum), hi is moved to the
  odd neighbour when lo != 0 and hi is even (round-to-odd at 53 bits), and the result is rounded
  to f32 (nearest even): round-to-odd with at least 2 extra bits makes that single rounding of
  the exact a b + acc. The f64 A @ B is a sanity check within k 2^-24 sum |A B|.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.dirname(HERE)


def fma_f32(a, b, c):
    """Correctly rounded f32 fma of f32 arrays, elementwise (finite values, no overflow)."""
    p = a.astype(np.float64) * b.astype(np.float64)  # exact: 24 + 24 bits
    c64 = c.astype(np.float64)
    hi = p + c64
    z = hi - p
    lo = (p - (hi - z)) + (c64 - z)  # TwoSum: hi + lo == p + c exactly
    bits = hi.view(np.uint64)
    even = (bits & np.uint64(1)) == 0
    fix = (lo != 0) & even
    toward = np.where(lo > 0, np.inf, -np.inf)
    hi = np.where(fix, np.nextafter(hi, toward), hi)
    return hi.astype(np.float32)


def chain(A, B):
    """C[i, j] = fma chain over l in increasing order from +0.0 (A [m, k], B [k, n] f32)."""
    m, kk = A.shape
    n = B.shape[1]
    acc = np.zeros((m, n), dtype=np.float32)
    for l in range(kk):
        acc = fma_f32(np.repeat(A[:, l:l + 1], n, axis=1), np.repeat(B[l:l + 1, :], m, axis=0), acc)
    return acc


def self_test():
    """fma_f32 against exact rational arithmetic on random and near-tie inputs."""
    from fractions import Fraction
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, 4000).astype(np.float32)
    b = rng.uniform(-1, 1, 4000).astype(np.float32)
    c = rng.uniform(-1, 1, 4000).astype(np.float32)
    c[:1000] = (-(a[:1000].astype(np.float64) * b[:1000])).astype(np.float32)  # cancellation
    c[1000:2000] = c[1000:2000] * np.float32(2.0**-30)  # small addends: ties in the sticky bits
    got = fma_f32(a, b, c)
    for x, y, z, g in zip(a.tolist(), b.tolist(), c.tolist(), got.tolist()):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        r = np.float32(float(exact))  # float(Fraction) is correctly rounded to f64 ...
        # ... so check g is the f32 nearest to exact (ties to even) directly
        lo_, hi_ = np.nextafter(np.float32(g), np.float32(-np.inf)), np.nextafter(np.float32(g), np.float32(np.inf))
        dg = abs(Fraction(float(g)) - exact)
        assert dg <= abs(Fraction(float(lo_)) - exact) and dg <= abs(Fraction(float(hi_)) - exact), (x, y, z, g, r)


def gemm_sgemm(m):
    kf = "gemm_sgemm.kir"
    if not os.path.exists(os.path.join(KERNELS, kf)):
        return
    self_test()
    for (mm, n, kk, sa, sb, name) in [(128, 128, 128, 150, 151, "gemm_sgemm_c_128"), (64, 128, 256, 152, 153, "gemm_sgemm_c_64x128x256")]:
        a64, a32 = m.rand("f32", mm * kk, sa)
        b64, b32 = m.rand("f32", kk * n, sb)
        A, B = a32.reshape(mm, kk), b32.reshape(kk, n)
        c = chain(A, B)
        ref = a64.reshape(mm, kk) @ b64.reshape(kk, n)
        bound = (kk + 1) * 2.0**-24 * (np.abs(a64.reshape(mm, kk)) @ np.abs(b64.reshape(kk, n)))
        diff = np.abs(c.astype(np.float64) - ref)
        print(f"{name}: fma chain vs numpy f64 A @ B: max abs diff {diff.max():.3g} (bound {bound.min():.3g}..{bound.max():.3g})", file=sys.stderr)
        assert np.all(diff <= bound), name
        m.expect(name, c.reshape(-1), kf, f"--kernel gemm_sgemm --grid {n // 64},{mm // 64} --block 256 --arg a=rand:f32:{mm * kk}:{sa} --arg b=rand:f32:{kk * n}:{sb} --arg c=zeros:f32:{mm * n} --arg m={mm} --arg n={n} --arg k={kk}", "c", "exact")


def assert_bf16_rand_unaffected(m, n, seed):
    """kir's rand:bf16 rounded with half 2.7.1's bf16::from_f64, which drops the f64's low 32 bits
    before rounding (so a value just above a bf16 tie could round the wrong way; fixed, with a
    test in interp/src/args.rs). The bf16 runs were chosen with seeds where that gave the
    correctly rounded value for every element, so their expectations hold for kir before and
    after the fix: asserted here."""
    v = m.rand_f64(n, seed)
    t = ((v.view(np.uint64) >> np.uint64(32)) << np.uint64(32)).view(np.float64)
    assert (m.f32_to_bf16_bits(t.astype(np.float32)) == m.rand("bf16", n, seed)[1]).all(), (n, seed)


def gemm_mma_bf16(m):
    if not os.path.exists(os.path.join(KERNELS, "gemm_mma_bf16.kir")):
        return
    runs = [(128, 128, 128, 140, 144, "gemm_mma_bf16_c_128"), (192, 64, 64, 142, 147, "gemm_mma_bf16_c_192x64x64")]
    for (mm, n, kk, sa, sb, _) in runs:
        assert_bf16_rand_unaffected(m, mm * kk, sa)
        assert_bf16_rand_unaffected(m, kk * n, sb)
    m.gemm_mma_expect("gemm_mma_bf16", "bf16", runs)


def register(m):
    """Adds the fast GEMMs' expectations to make_expected.py's list (m: that module)."""
    gemm_mma_bf16(m)
    gemm_sgemm(m)
