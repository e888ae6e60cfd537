#!/usr/bin/env python3
"""Checks tensor_core_model.py against measured tensor-core outputs, bit for bit.

    python3 kernels/data/check_tensor_core_model.py [--shared DIR] [--repo DIR] [-v]

1. ../shared/hardware-truth/tensor-cores/{A100,H100,H200,B200}.tar.xz (Khattak & Mikaitis'
   measurements, unpacked here with tarfile + lzma into a temporary folder): every fp16, bf16 and
   tf32 row (5000 each), d = dot(rule, fmt, a, b, c) with rule sm_80 for the A100 (K = 8 for
   fp16/bf16: one block; tf32 K = 4: one block) and sm_90 for H100/H200/B200 (K = 16: one block;
   tf32 K = 4, treated as one block). For fp16 the f16-output file (d_DEV_fp16.txt, where present)
   is also checked: it matches the model run with c first rounded to f16 (nearest-even) and the f32
   result then rounded to nearest-even f16 (rounding only the f32 result, with c unrounded, does
   not: ~10% of rows differ), i.e. that recording used an f16 C operand. That line is
   informational and does not count toward the exit status: 5000/5000 on A100, H100, H200 and
   4999/5000 on B200 (one exact f16 tie, rounded away from zero there, to even elsewhere).
2. kir's own H100 recording of Triton's sm_90a matmul (tests/hardware/h100/triton/,
   matmul_f16_sm90: in0 @ in1 -> out2, 128x128x128 f16, wgmma m64n64k16): the sm_90 model chained
   over k in blocks of 16 from c = +0, rounded to nearest-even f16.

Prints "N/5000 bit-exact" per device and format and the matmul's count; exits 1 on any mismatch
of the f32 results or of the matmul.
Pure Python (no numpy): the .npy files are read by a minimal reader below.
"""
import argparse
import ast
import os
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tensor_core_model as tcm  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
DEVICES = [("A100", "sm_80"), ("H100", "sm_90"), ("H200", "sm_90"), ("B200", "sm_90")]
FORMATS = [("fp16", "f16"), ("bf16", "bf16"), ("tf32", "tf32")]


def read_hex_rows(path):
    with open(path) as f:
        return [[int(w, 16) for w in line.split()] for line in f if line.strip()]


def read_bin_rows(path):
    with open(path) as f:
        return [int(line.strip(), 2) for line in f if line.strip()]


def read_npy(path):
    """Minimal .npy reader (version 1/2, C order, little-endian '<f2'/'<u2'/'<f4'/'<u4'):
    returns (shape, list of raw unsigned bit patterns)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError("%s: not an .npy file" % path)
    major = data[6]
    if major == 1:
        hlen = int.from_bytes(data[8:10], "little")
        off = 10
    else:
        hlen = int.from_bytes(data[8:12], "little")
        off = 12
    header = ast.literal_eval(data[off:off + hlen].decode("latin1"))
    body = data[off + hlen:]
    descr, shape = header["descr"], header["shape"]
    if header["fortran_order"] or descr not in ("<f2", "<u2", "<f4", "<u4"):
        raise ValueError("%s: unsupported %r" % (path, header))
    width = int(descr[2])
    count = 1
    for d in shape:
        count *= d
    vals = [int.from_bytes(body[i * width:(i + 1) * width], "little") for i in range(count)]
    return shape, vals


def check_device(tmp, dev, rule, verbose):
    ok = True
    for dname, fmt in FORMATS:
        folder = os.path.join(tmp, dev, dname)
        a = read_hex_rows(os.path.join(folder, "a_%s_%s.txt" % (dev, dname)))
        b = read_hex_rows(os.path.join(folder, "b_%s_%s.txt" % (dev, dname)))
        c = read_bin_rows(os.path.join(folder, "c_%s_fp32.txt" % dev))
        d = read_bin_rows(os.path.join(folder, "d_%s_fp32.txt" % dev))
        d16_path = os.path.join(folder, "d_%s_fp16.txt" % dev)
        d16 = read_bin_rows(d16_path) if os.path.exists(d16_path) else None
        n = len(d)
        k = len(a[0])
        good = good16 = 0
        shown = 0
        for i in range(n):
            ai = [tcm.f32_to_fmt_bits(fmt, v) for v in a[i]]
            bi = [tcm.f32_to_fmt_bits(fmt, v) for v in b[i]]
            # each row is one hardware block; tf32 rows (K = 4) are one block whatever the rule
            got = tcm.dot(rule, fmt, ai, bi, c[i], n=len(ai))
            if got == d[i]:
                good += 1
            elif verbose and shown < 10:
                shown += 1
                print("  %s %s row %d: model %08x hardware %08x" % (dev, dname, i, got, d[i]))
            if d16 is not None:
                # the f16-output recording (f16 C and D): c is first rounded to f16 (RNE), then
                # the same block, then the f32 result rounded to f16 (RNE) -- measured: every row
                c16 = tcm.f16_to_f32_bits(tcm.f32_to_f16_rne(c[i]))
                got16 = tcm.dot(rule, fmt, ai, bi, c16, n=len(ai))
                h = tcm.f16_to_f32_bits(tcm.f32_to_f16_rne(got16))
                if h == d16[i]:
                    good16 += 1
                elif verbose and shown < 10:
                    shown += 1
                    print("  %s %s row %d: f16 of model %08x hardware %08x" % (dev, dname, i, h, d16[i]))
        line = "%s %-4s (%s, K=%d): %d/%d bit-exact" % (dev, dname, rule, k, good, n)
        if d16 is not None:
            line += "; f16 output (c->f16, model, ->f16 RNE): %d/%d" % (good16, n)
            # informational only (not part of the pass/fail): B200 row 254 is an exact f16 tie
            # (f32 result c0185000) that the B200 rounds away from zero, to odd; the H100 (row
            # 4669) and H200 (rows 401, 4113) round their ties to even
        print(line)
        ok &= good == n
    return ok


def check_triton(repo, verbose):
    base = os.path.join(repo, "tests", "hardware", "h100", "triton", "matmul_f16_sm90.")
    (m, kk), a = read_npy(base + "in0.npy")
    (k2, nn), b = read_npy(base + "in1.npy")
    shape_c, c_hw = read_npy(base + "out2.npy")
    assert kk == k2 and tuple(shape_c) == (m, nn)
    a2 = [a[i * kk:(i + 1) * kk] for i in range(m)]
    b2 = [b[k * nn:(k + 1) * nn] for k in range(kk)]
    zero = [[0] * nn for _ in range(m)]
    d = tcm.matmul("sm_90", "f16", a2, b2, zero, n=16)
    good = 0
    shown = 0
    for i in range(m):
        for j in range(nn):
            h = tcm.f32_to_f16_rne(d[i][j])
            if h == c_hw[i * nn + j]:
                good += 1
            elif verbose and shown < 10:
                shown += 1
                print("  triton [%d,%d]: model f16 %04x (f32 %08x) hardware %04x"
                      % (i, j, h, d[i][j], c_hw[i * nn + j]))
    print("Triton H100 matmul_f16_sm90 (%dx%dx%d, sm_90 blocks of 16, f16 RNE): %d/%d bit-exact"
          % (m, nn, kk, good, m * nn))
    return good == m * nn


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=os.path.join(REPO, "..", "shared", "hardware-truth", "tensor-cores"))
    ap.add_argument("--repo", default=REPO)
    ap.add_argument("-v", "--verbose", action="store_true", help="show the first mismatches")
    args = ap.parse_args()
    t0 = time.time()
    ok = True
    with tempfile.TemporaryDirectory(prefix="tensor-cores-") as tmp:
        for dev, rule in DEVICES:
            path = os.path.join(args.shared, dev + ".tar.xz")
            with tarfile.open(path, "r:xz") as tar:
                members = [mb for mb in tar.getmembers()
                           if mb.isfile() and mb.name.split("/")[1:2] in (["fp16"], ["bf16"], ["tf32"])]
                for mb in members:
                    if mb.name.startswith("/") or ".." in mb.name.split("/"):
                        raise ValueError("unsafe member %s" % mb.name)
                tar.extractall(tmp, members=members)
            ok &= check_device(tmp, dev, rule, args.verbose)
    ok &= check_triton(args.repo, args.verbose)
    print("%s in %.1f s" % ("all bit-exact" if ok else "MISMATCHES", time.time() - t0))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
