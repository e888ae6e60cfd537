#!/usr/bin/env python3
"""Turns the published tensor-core measurements into kir's `; source: hardware` suite.

    python3 tests/hardware/tensor-cores/tools/ingest.py [SHARED_DIR]      (numpy; no GPU)

SHARED_DIR defaults to ../shared/hardware-truth/tensor-cores next to the repository: it holds
{A100,H100,H200,B200}.tar.xz, the measurements of Faizan A. Khattak and Mantas Mikaitis
(north-numerical-computing/MATLAB-tensor-core, commit b12b5a7, model_validation/; BSD-2, the LICENCE
beside the archives and in tests/hardware/tensor-cores/). The archives are read in memory (tarfile +
lzma): nothing is extracted.

For every device DEV and format FMT in fp16, bf16, tf32, the archive holds 5000 rows
`d[i] = sum_k a[i,k] * b[i,k] + c[i]` as one tensor-core instruction of DEV computed them:
`a_DEV_FMT.txt`, `b_DEV_FMT.txt` (K hex f32 bit patterns per row, each exactly representable in FMT;
K = 8 for fp16/bf16 on the A100, 16 on the others, 4 for tf32), `c_DEV_fp32.txt` and `d_DEV_fp32.txt`
(one f32 per row as a 32-character binary string; d is the GPU's f32 result).

Packing: one `mma` per warp computes 8 independent rows. Row r (0..8) of warp w is input row 8w + r:
A's row r holds its a values (k zero-padded to the instruction's k: 16 for mma.m16n8k16.f16/.bf16,
8 for mma.m16n8k8.tf32), B's column r its b values, C[r][r] = c; every other element of A, B and C
is +0. Then D[r][r] is the row's result (zero products change nothing in the block-FMA; see
README.md), held by lane 4r + (r >> 1) as element r & 1 of its D fragment. The fragments follow the
layout tables of docs/language.md ("Fragment layouts", from the PTX ISA), with g = lane >> 2,
q = lane & 3:

    m16n8k16 A  element i (0..8) at row g + 8*[i in {2,3,6,7}], column 2q + (i&1) + 8*[i >= 4]
    m16n8k16 B  element i (0..4) at k 2q + (i&1) + 8*[i >= 2], column g
    m16n8k8  A  element i (0..4) at row g + 8*(i&1), column q + 4*(i>>1)         (tf32)
    m16n8k8  B  element i (0..2) at k q + 4*i, column g                           (tf32)
    C, D        element i (0..4) at row g + 8*[i >= 2], column 2q + (i&1)

A u32 of an f16/bf16 fragment holds two elements, the lower-numbered in its low 16 bits; a tf32
element is its f32 bit pattern. f16 and bf16 values are converted from their f32 patterns exactly
(asserted); the script checks that every layout is a bijection and that unpacking the fragments
gives back every input row.

Written (xz-compressed .npy, which `kir test` reads directly), for each dev in a100 h100 h200 b200
and FMT in fp16 bf16 tf32, into tests/hardware/tensor-cores/data/DEV/:
    FMT.a.npy.xz  u32 [625 warps * 32 lanes * 4]   the A fragment of each lane, warp-major
    FMT.b.npy.xz  u32 [625 * 32 * 2]               the B fragment
    FMT.c.npy.xz  f32 [625 * 32 * 4]               the C fragment: the f32 bit patterns, stored as
                                                   `<f4` so that `load.v4` gives a vec<4, f32>
    FMT.d.npy.xz  u32 [5000]                       the GPU's recorded d, row order (the expectation)
a copy of the archives' LICENCE (tests/hardware/tensor-cores/LICENCE), and SHA256SUMS
(tests/hardware/tensor-cores/SHA256SUMS) over every data file and the LICENCE. Rerunning gives the
same bytes (the checksums say so); the .kir files are written by hand and are not touched.
"""
import hashlib
import io
import lzma
import os
import sys
import tarfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.dirname(HERE)  # tests/hardware/tensor-cores
REPO = os.path.abspath(os.path.join(SUITE, "..", "..", ".."))
DEFAULT_SHARED = os.path.abspath(os.path.join(REPO, "..", "shared", "hardware-truth", "tensor-cores"))

DEVICES = ["A100", "H100", "H200", "B200"]
FORMATS = ["fp16", "bf16", "tf32"]
ROWS = 5000
ROWS_PER_WARP = 8
WARPS = ROWS // ROWS_PER_WARP  # 625
LANES = 32


# ---------------------------------------------------------------------------------------------
# fragment layouts (docs/language.md, "Fragment layouts")

def a_pos_k16(lane, i):
    g, q = lane >> 2, lane & 3
    return g + 8 * (i in (2, 3, 6, 7)), 2 * q + (i & 1) + 8 * (i >= 4)


def b_pos_k16(lane, i):
    g, q = lane >> 2, lane & 3
    return 2 * q + (i & 1) + 8 * (i >= 2), g


def a_pos_tf32(lane, i):
    g, q = lane >> 2, lane & 3
    return g + 8 * (i & 1), q + 4 * (i >> 1)


def b_pos_tf32(lane, i):
    g, q = lane >> 2, lane & 3
    return q + 4 * i, g


def cd_pos(lane, i):
    g, q = lane >> 2, lane & 3
    return g + 8 * (i >= 2), 2 * q + (i & 1)


# instruction shapes: (k, elements of A per lane, elements of B per lane, elements per u32)
SHAPES = {
    "fp16": dict(k=16, a=(a_pos_k16, 8), b=(b_pos_k16, 4), per_u32=2),
    "bf16": dict(k=16, a=(a_pos_k16, 8), b=(b_pos_k16, 4), per_u32=2),
    "tf32": dict(k=8, a=(a_pos_tf32, 4), b=(b_pos_tf32, 2), per_u32=1),
}


def index_table(pos, n, shape):
    """[lane, i] -> flat index into a tile of `shape`; asserts the layout is a bijection."""
    rows, cols = shape
    t = np.array([[pos(l, i)[0] * cols + pos(l, i)[1] for i in range(n)] for l in range(LANES)])
    assert sorted(t.ravel().tolist()) == list(range(rows * cols)), f"layout {pos.__name__} is not a bijection"
    return t


def diagonal_holder(r):
    """(lane, element) of the D fragment that holds D[r][r], from the C/D layout."""
    hits = [(l, i) for l in range(LANES) for i in range(4) if cd_pos(l, i) == (r, r)]
    assert len(hits) == 1
    return hits[0]


for r in range(ROWS_PER_WARP):
    assert diagonal_holder(r) == (4 * r + (r >> 1), r & 1), r


# ---------------------------------------------------------------------------------------------
# reading the archives

def read_archive(path, dev):
    """{FMT: (a u32 [5000, K], b u32 [5000, K], c u32 [5000], d u32 [5000])} from DEV.tar.xz."""
    out = {}
    with tarfile.open(path, "r:xz") as t:
        def text(name):
            f = t.extractfile(f"{dev}/{name}")
            assert f is not None, f"{path}: no {dev}/{name}"
            return f.read().decode("ascii")

        for fmt in FORMATS:
            def hex_rows(name):
                rows = [l.split() for l in text(name).splitlines() if l.strip()]
                assert len(rows) == ROWS and len({len(r) for r in rows}) == 1, name
                return np.array([[int(x, 16) for x in r] for r in rows], dtype=np.uint64).astype(np.uint32)

            def bin_rows(name):
                rows = [l.strip() for l in text(name).splitlines() if l.strip()]
                assert len(rows) == ROWS and all(len(r) == 32 and set(r) <= {"0", "1"} for r in rows), name
                return np.array([int(r, 2) for r in rows], dtype=np.uint64).astype(np.uint32)

            a = hex_rows(f"{fmt}/a_{dev}_{fmt}.txt")
            b = hex_rows(f"{fmt}/b_{dev}_{fmt}.txt")
            assert a.shape == b.shape, (dev, fmt)
            c = bin_rows(f"{fmt}/c_{dev}_fp32.txt")
            d = bin_rows(f"{fmt}/d_{dev}_fp32.txt")
            out[fmt] = (a, b, c, d)
    return out


def to_f16_bits(bits):
    """f32 bit patterns -> f16 bit patterns, asserting each is exact (NaNs: quiet, payload kept)."""
    f = bits.view(np.float32)
    h = f.astype(np.float16)
    back = h.astype(np.float32).view(np.uint32)
    nan = np.isnan(f)
    assert np.array_equal(back[~nan], bits[~nan]), "an fp16 input is not exactly representable in f16"
    assert not nan.any(), "NaN inputs: convert their payloads by hand"
    return h.view(np.uint16).astype(np.uint32)


def to_bf16_bits(bits):
    assert not (bits & 0xFFFF).any(), "a bf16 input is not exactly representable in bf16"
    return bits >> 16


# ---------------------------------------------------------------------------------------------
# packing

def pack(fmt, a, b, c):
    """Per-lane fragments (u32 [625*32*4], [625*32*2], [625*32*4]) of the rows, 8 per warp."""
    sh = SHAPES[fmt]
    k_inst, per = sh["k"], sh["per_u32"]
    K = a.shape[1]
    assert K <= k_inst, (fmt, K)
    if fmt == "fp16":
        a, b = to_f16_bits(a), to_f16_bits(b)
    elif fmt == "bf16":
        a, b = to_bf16_bits(a), to_bf16_bits(b)
    # Tiles: A [w, 16, k] row-major, B [w, k, 8] (k x n), C [w, 16, 8].
    A = np.zeros((WARPS, 16, k_inst), dtype=np.uint32)
    B = np.zeros((WARPS, k_inst, 8), dtype=np.uint32)
    C = np.zeros((WARPS, 16, 8), dtype=np.uint32)
    rw = np.arange(ROWS).reshape(WARPS, ROWS_PER_WARP)
    for r in range(ROWS_PER_WARP):
        A[:, r, :K] = a[rw[:, r]]
        B[:, :K, r] = b[rw[:, r]]
        C[:, r, r] = c[rw[:, r]]
    (apos, na), (bpos, nb) = sh["a"], sh["b"]
    ai = index_table(apos, na, (16, k_inst))
    bi = index_table(bpos, nb, (k_inst, 8))
    ci = index_table(cd_pos, 4, (16, 8))
    ae = A.reshape(WARPS, -1)[:, ai]  # [w, lane, element]
    be = B.reshape(WARPS, -1)[:, bi]
    ce = C.reshape(WARPS, -1)[:, ci]
    if per == 2:  # two 16-bit elements per u32, the lower-numbered in the low half
        ae = ae[:, :, 0::2] | (ae[:, :, 1::2] << 16)
        be = be[:, :, 0::2] | (be[:, :, 1::2] << 16)
    assert ae.shape == (WARPS, LANES, 4) and be.shape == (WARPS, LANES, 2) and ce.shape == (WARPS, LANES, 4)
    frags = ae.reshape(-1).astype(np.uint32), be.reshape(-1).astype(np.uint32), ce.reshape(-1).astype(np.uint32)
    check_unpack(fmt, frags, a, b, c)
    return frags


def check_unpack(fmt, frags, a, b, c):
    """Unpacks the fragments by the same tables and checks that every row comes back."""
    sh = SHAPES[fmt]
    k_inst, per = sh["k"], sh["per_u32"]
    (apos, na), (bpos, nb) = sh["a"], sh["b"]
    af, bf, cf = (f.reshape(WARPS, LANES, -1) for f in frags)

    def halves(regs, n):
        if per == 1:
            return regs
        out = np.zeros(regs.shape[:2] + (n,), dtype=np.uint32)
        out[:, :, 0::2] = regs & 0xFFFF
        out[:, :, 1::2] = regs >> 16
        return out

    ae, be = halves(af, na), halves(bf, nb)
    A = np.zeros((WARPS, 16, k_inst), dtype=np.uint32)
    B = np.zeros((WARPS, k_inst, 8), dtype=np.uint32)
    C = np.zeros((WARPS, 16, 8), dtype=np.uint32)
    for l in range(LANES):
        for i in range(na):
            A[:, apos(l, i)[0], apos(l, i)[1]] = ae[:, l, i]
        for i in range(nb):
            B[:, bpos(l, i)[0], bpos(l, i)[1]] = be[:, l, i]
        for i in range(4):
            C[:, cd_pos(l, i)[0], cd_pos(l, i)[1]] = cf[:, l, i]
    K = a.shape[1]
    for n in range(ROWS):
        w, r = divmod(n, ROWS_PER_WARP)
        assert np.array_equal(A[w, r, :K], a[n]) and not A[w, r, K:].any(), (fmt, n)
        assert np.array_equal(B[w, :K, r], b[n]) and not B[w, K:, r].any(), (fmt, n)
        assert C[w, r, r] == c[n], (fmt, n)
    # Nothing else is non-zero: rows 8..15 of A and C, and C off the diagonal.
    assert not A[:, 8:, :].any() and not C[:, 8:, :].any()
    assert np.count_nonzero(C) == np.count_nonzero(c)
    # The diagonal holder reads back c.
    for r in range(ROWS_PER_WARP):
        l, i = diagonal_holder(r)
        assert np.array_equal(cf[:, l, i], c[r::ROWS_PER_WARP]), (fmt, r)


# ---------------------------------------------------------------------------------------------
# writing

def npy_xz(arr, dtype="<u4"):
    """The xz-compressed .npy of `arr` (u32 bit patterns), written as `dtype` (same bytes)."""
    assert arr.dtype == np.uint32
    buf = io.BytesIO()
    data = np.ascontiguousarray(arr, dtype="<u4").view(dtype)
    np.lib.format.write_array(buf, data, version=(1, 0), allow_pickle=False)
    return lzma.compress(buf.getvalue(), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=9 | lzma.PRESET_EXTREME)


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_SHARED
    written = []
    for dev in DEVICES:
        sets = read_archive(os.path.join(shared, f"{dev}.tar.xz"), dev)
        outdir = os.path.join(SUITE, "data", dev.lower())
        os.makedirs(outdir, exist_ok=True)
        for fmt in FORMATS:
            a, b, c, d = sets[fmt]
            frags = pack(fmt, a, b, c)
            for name, arr in zip("abcd", frags + (d,)):
                rel = f"data/{dev.lower()}/{fmt}.{name}.npy.xz"
                with open(os.path.join(SUITE, rel), "wb") as f:
                    f.write(npy_xz(arr, "<f4" if name == "c" else "<u4"))
                written.append(rel)
            print(f"{dev} {fmt}: K={a.shape[1]} -> k={SHAPES[fmt]['k']}, {WARPS} warps; "
                  f"NaN/Inf in d: {int((((d >> 23) & 0xFF) == 0xFF).sum())}, zero d: {int(((d & 0x7FFFFFFF) == 0).sum())}")
    # The licence travels with the data (BSD-2 clause 1).
    with open(os.path.join(shared, "LICENCE"), "rb") as f:
        licence = f.read()
    with open(os.path.join(SUITE, "LICENCE"), "wb") as f:
        f.write(licence)
    written.append("LICENCE")
    with open(os.path.join(SUITE, "SHA256SUMS"), "w") as f:
        for rel in sorted(written):
            with open(os.path.join(SUITE, rel), "rb") as g:
                f.write(f"{hashlib.sha256(g.read()).hexdigest()}  {rel}\n")
    print(f"wrote {len(written)} files and SHA256SUMS under {os.path.relpath(SUITE, REPO)}")


if __name__ == "__main__":
    main()
