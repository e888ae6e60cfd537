#!/usr/bin/env python3
"""A bit-exact model of NVIDIA tensor-core block FMA (D = A*B + C, f32 accumulation), in pure Python ints.

Written from ../shared/hardware-truth/tensor-cores/README.md alone (the model Khattak & Mikaitis,
"Accurate Models of NVIDIA Tensor Cores", arXiv 2512.07004, confirm on A100/H100/H200/B200); nothing
here reads kir's output. No float arithmetic is used anywhere: every value is a (sign, integer
significand, exponent) triple and the sum is an exact Python integer.

One block of n products plus an f32 addend c (`block_fma`):
  1. each non-zero product a*b is exact, with exponent label ea + eb (the unbiased exponent of each
     input; a subnormal input keeps its format's minimum exponent and a significand 0.xxx); zero
     products are dropped and c = 0 is left out;
  2. E = the largest exponent among the products and c, clamped to at least -133;
  3. every term is put on a fixed point with 23 + x fraction bits below 2^E (x = 2 on sm_90,
     x = 1 on sm_80) and truncated (magnitude floored: no sticky bit, no rounding);
  4. the integers are summed exactly;
  5. the sum is normalised and truncated toward zero to f32; a magnitude >= 2^128 gives Inf.
Specials: a NaN input, 0*Inf, or +Inf together with -Inf (from products or c) give 0x7fffffff; any
other Inf gives that Inf. An exactly cancelling sum gives +0; when every term is zero the result
is -0 only if every term (each zero product and c) is -0.

Block sizes (n): f16/bf16 16 on sm_90 and 8 on sm_80; tf32 half of that (8 on sm_90, 4 on sm_80).
A dot product longer than one block chains blocks in order of k, the f32 result of one block being
the c of the next (`dot`). `mma_m16n8k16` / `mma_m16n8k8_tf32` apply `dot` per output element.

Bit patterns in: f16 and bf16 as 16-bit ints; tf32 as f32 bit patterns whose low 13 bits are
ignored; c and results as f32 bit patterns (ints). Helpers: `f32_to_fmt_bits` (exact narrowing of a
value already representable in fmt, as the hardware-truth files store inputs), `f32_to_f16_rne`
(round an f32 result to f16, nearest-even) and `f16_to_f32_bits`.
"""

RULES = {
    # rule: (extra alignment bits x, block size for f16/bf16)
    "sm_80": (1, 8),
    "sm_90": (2, 16),
}

# fmt: (exponent bits, fraction bits)
FORMATS = {
    "f16": (5, 10),
    "bf16": (8, 7),
    "tf32": (8, 10),
}

E_MIN_CLAMP = -133
F32_NAN = 0x7FFFFFFF
F32_PINF = 0x7F800000
F32_NINF = 0xFF800000


def block_size(rule, fmt):
    """Products per hardware block: 16/8 (sm_90/sm_80) for f16/bf16, half of that for tf32."""
    n = RULES[rule][1]
    return n // 2 if fmt == "tf32" else n


# ---------------------------------------------------------------------------------------------
# decoding

# kinds
_ZERO, _FINITE, _INF, _NAN = 0, 1, 2, 3


def _decode_fields(bits, ebits, fbits):
    """(kind, sign, significand m, exponent e) with value = (-1)^sign * m * 2^(e - fbits)."""
    sign = (bits >> (ebits + fbits)) & 1
    ef = (bits >> fbits) & ((1 << ebits) - 1)
    frac = bits & ((1 << fbits) - 1)
    bias = (1 << (ebits - 1)) - 1
    if ef == (1 << ebits) - 1:
        return (_NAN if frac else _INF), sign, 0, 0
    if ef == 0:
        if frac == 0:
            return _ZERO, sign, 0, 0
        return _FINITE, sign, frac, 1 - bias  # subnormal: minimum exponent, significand 0.xxx
    return _FINITE, sign, frac | (1 << fbits), ef - bias


def decode_input(fmt, bits):
    """Decode one A/B element of format fmt (tf32: an f32 pattern, low 13 bits dropped)."""
    if fmt == "tf32":
        return _decode_fields((int(bits) & 0xFFFFFFFF) >> 13, 8, 10)
    ebits, fbits = FORMATS[fmt]
    return _decode_fields(int(bits) & 0xFFFF, ebits, fbits)


def decode_f32(bits):
    return _decode_fields(int(bits) & 0xFFFFFFFF, 8, 23)


# ---------------------------------------------------------------------------------------------
# one block


def _to_f32_rz(neg, mag, scale):
    """f32 bits of (-1)^neg * mag * 2^scale (mag > 0), truncated toward zero; >= 2^128 -> Inf."""
    s = (1 << 31) if neg else 0
    top = mag.bit_length() - 1 + scale  # exponent of the leading bit
    if top >= 128:
        return s | F32_PINF
    if top >= -126:
        sh = mag.bit_length() - 24
        m = mag >> sh if sh >= 0 else mag << -sh
        return s | ((top + 127) << 23) | (m & 0x7FFFFF)
    # subnormal: multiples of 2^-149
    sh = -149 - scale
    m = mag >> sh if sh >= 0 else mag << -sh
    return s | m  # m == 0 gives a signed zero (truncation of a tiny non-zero sum)


def _block(x, fbits, prods, c):
    """prods: list of decoded (a, b) pairs; c: decoded f32. Returns f32 bits."""
    inf_signs = 0  # bit 0: +Inf seen, bit 1: -Inf seen
    terms = []  # (sign, significand, exponent label, fraction bits)
    all_neg_zero = True
    for (ka, sa, ma, ea), (kb, sb, mb, eb) in prods:
        if ka == _NAN or kb == _NAN:
            return F32_NAN
        s = sa ^ sb
        if ka == _INF or kb == _INF:
            if ka == _ZERO or kb == _ZERO:
                return F32_NAN
            inf_signs |= 2 if s else 1
            continue
        if ka == _ZERO or kb == _ZERO:
            if not s:
                all_neg_zero = False
            continue
        terms.append((s, ma * mb, ea + eb, 2 * fbits))
    kc, sc, mc, ec = c
    if kc == _NAN:
        return F32_NAN
    if kc == _INF:
        inf_signs |= 2 if sc else 1
    elif kc == _ZERO:
        if not sc:
            all_neg_zero = False
    else:
        terms.append((sc, mc, ec, 23))
    if inf_signs:
        if inf_signs == 3:
            return F32_NAN
        return F32_NINF if inf_signs == 2 else F32_PINF
    if not terms:
        return 0x80000000 if all_neg_zero else 0
    big_e = max(t[2] for t in terms)
    if big_e < E_MIN_CLAMP:
        big_e = E_MIN_CLAMP
    frac = 23 + x
    total = 0
    for s, m, e, fb in terms:
        # value = m * 2^(e - fb); fixed point integer = floor(value * 2^(frac - big_e))
        sh = e - fb + frac - big_e
        v = m << sh if sh >= 0 else m >> -sh
        total += -v if s else v
    if total == 0:
        return 0  # exact cancellation (or every term truncated away): +0
    return _to_f32_rz(total < 0, abs(total), big_e - frac)


def block_fma(rule, fmt, a_bits, b_bits, c_bits):
    """One hardware block: sum_k a[k]*b[k] + c, len(a) <= block size. Returns f32 bits."""
    if len(a_bits) != len(b_bits):
        raise ValueError("a and b differ in length")
    if len(a_bits) > block_size(rule, fmt):
        raise ValueError("more products than one %s %s block holds" % (rule, fmt))
    x = RULES[rule][0]
    fbits = FORMATS[fmt][1]
    prods = [(decode_input(fmt, a), decode_input(fmt, b)) for a, b in zip(a_bits, b_bits)]
    return _block(x, fbits, prods, decode_f32(c_bits))


def dot(rule, fmt, a_bits, b_bits, c_bits, n=None, x=None):
    """sum_k a[k]*b[k] + c as chained blocks of n (default: the hardware block size) in k order.
    n and x (extra alignment bits) override the rule's, to try other hypotheses."""
    if len(a_bits) != len(b_bits):
        raise ValueError("a and b differ in length")
    if n is None:
        n = block_size(rule, fmt)
    if x is None:
        x = RULES[rule][0]
    fbits = FORMATS[fmt][1]
    da = [decode_input(fmt, a) for a in a_bits]
    db = [decode_input(fmt, b) for b in b_bits]
    acc = int(c_bits) & 0xFFFFFFFF
    for k0 in range(0, len(da), n):
        acc = _block(x, fbits, list(zip(da[k0:k0 + n], db[k0:k0 + n])), decode_f32(acc))
    return acc


def matmul(rule, fmt, a, b, c, n=None, x=None):
    """D[i][j] = dot(A[i, :], B[:, j], C[i][j]) for nested lists (or arrays) of bit patterns
    (n, x: as for dot)."""
    rows, kk = len(a), len(a[0])
    cols = len(b[0])
    if len(b) != kk:
        raise ValueError("A is %dx%d but B has %d rows" % (rows, kk, len(b)))
    if n is None:
        n = block_size(rule, fmt)
    if x is None:
        x = RULES[rule][0]
    fbits = FORMATS[fmt][1]
    da = [[decode_input(fmt, v) for v in row] for row in a]
    dbt = [[decode_input(fmt, b[k][j]) for k in range(kk)] for j in range(cols)]
    out = []
    for i in range(rows):
        orow = []
        for j in range(cols):
            acc = int(c[i][j]) & 0xFFFFFFFF
            ai, bj = da[i], dbt[j]
            for k0 in range(0, kk, n):
                acc = _block(x, fbits, list(zip(ai[k0:k0 + n], bj[k0:k0 + n])), decode_f32(acc))
            orow.append(acc)
        out.append(orow)
    return out


def mma_m16n8k16(rule, fmt, a, b, c):
    """mma.sync m16n8k16 (fmt f16 or bf16): A 16x16, B 16x8 (k x n), C 16x8 f32 bits -> D 16x8."""
    if fmt not in ("f16", "bf16"):
        raise ValueError("m16n8k16 takes f16 or bf16")
    if len(a) != 16 or len(a[0]) != 16 or len(b) != 16 or len(b[0]) != 8:
        raise ValueError("shapes must be A 16x16, B 16x8")
    return matmul(rule, fmt, a, b, c)


def mma_m16n8k8_tf32(rule, a, b, c):
    """mma.sync m16n8k8 tf32: A 16x8, B 8x8 (k x n), C 16x8 f32 bits -> D 16x8 f32 bits."""
    if len(a) != 16 or len(a[0]) != 8 or len(b) != 8 or len(b[0]) != 8:
        raise ValueError("shapes must be A 16x8, B 8x8")
    return matmul(rule, "tf32", a, b, c)


# ---------------------------------------------------------------------------------------------
# conversions (ints only)


def f32_to_fmt_bits(fmt, bits):
    """Narrow an f32 pattern whose value is exactly representable in fmt (tf32: returned as is)."""
    bits = int(bits) & 0xFFFFFFFF
    if fmt == "tf32":
        return bits
    if fmt == "bf16":
        if bits & 0xFFFF and (bits & 0x7F800000) != 0x7F800000:
            raise ValueError("%08x is not a bf16 value" % bits)
        return bits >> 16
    # f16
    kind, s, m, e = decode_f32(bits)
    if kind == _NAN:
        return (s << 15) | 0x7C00 | 0x200 | ((bits & 0x7FFFFF) >> 13)
    if kind == _INF:
        return (s << 15) | 0x7C00
    if kind == _ZERO:
        return s << 15
    # value = m * 2^(e - 23); normalise so that m has its leading bit at 2^23
    sh = 24 - m.bit_length()
    m <<= sh
    e -= sh
    if e > 15:
        raise ValueError("%08x overflows f16" % bits)
    if e >= -14:
        if m & 0x1FFF:
            raise ValueError("%08x is not an f16 value" % bits)
        return (s << 15) | ((e + 15) << 10) | ((m >> 13) & 0x3FF)
    sh = 13 + (-14 - e)  # subnormal f16: multiples of 2^-24
    if sh > 24 or m & ((1 << sh) - 1):
        raise ValueError("%08x is not an f16 value" % bits)
    return (s << 15) | (m >> sh)


def f32_to_f16_rne(bits):
    """Round an f32 pattern to f16, nearest-even (NaN keeps a quiet NaN, overflow gives Inf)."""
    kind, s, m, e = decode_f32(bits)
    sign = s << 15
    if kind == _NAN:
        return sign | 0x7E00 | ((int(bits) & 0x7FFFFF) >> 13)
    if kind == _INF:
        return sign | 0x7C00
    if kind == _ZERO:
        return sign
    # value = m * 2^(e - 23); target quantum 2^(max(ex, -14) - 10), ex = exponent of leading bit
    ex = e + m.bit_length() - 24
    q = max(ex, -14) - 10
    sh = q - (e - 23)  # bits to drop from m (> 0 always: f32 has more fraction bits)
    if sh <= 0:
        r = m << -sh
    else:
        r = m >> sh
        rem = m & ((1 << sh) - 1)
        half = 1 << (sh - 1)
        if rem > half or (rem == half and (r & 1)):
            r += 1
    # r * 2^q; r < 2^11 (normal after possible carry) or subnormal
    if q == -24 and ex < -14:  # subnormal: r <= 2^10, and r == 2^10 encodes the least normal
        return sign | r
    if r == 1 << 11:
        r >>= 1
        q += 1
    biased = q + 10 + 15
    if biased >= 31:
        return sign | 0x7C00
    return sign | (biased << 10) | (r & 0x3FF)


def f16_to_f32_bits(h):
    """Widen an f16 pattern to f32 bits (exact)."""
    kind, s, m, e = _decode_fields(int(h) & 0xFFFF, 5, 10)
    sign = s << 31
    if kind == _NAN:
        return sign | 0x7F800000 | ((int(h) & 0x3FF) << 13)
    if kind == _INF:
        return sign | 0x7F800000
    if kind == _ZERO:
        return sign
    sh = 11 - m.bit_length()
    m <<= sh
    e -= sh
    return sign | ((e + 127) << 23) | ((m << 13) & 0x7FFFFF)


if __name__ == "__main__":
    # tiny self-check of the special cases (the real check: check_tensor_core_model.py)
    one16, inf16, nan16 = 0x3C00, 0x7C00, 0x7E00
    assert block_fma("sm_90", "f16", [one16], [one16], 0x3F800000) == 0x40000000
    assert block_fma("sm_90", "f16", [inf16], [0], 0) == F32_NAN
    assert block_fma("sm_90", "f16", [inf16, inf16], [one16, 0xBC00], 0) == F32_NAN
    assert block_fma("sm_90", "f16", [inf16], [one16], 0x3F800000) == F32_PINF
    assert block_fma("sm_90", "f16", [nan16], [one16], 0) == F32_NAN
    assert block_fma("sm_90", "f16", [0x8000], [0], 0x80000000) == 0x80000000
    assert block_fma("sm_90", "f16", [0x8000], [0x8000], 0x80000000) == 0
    assert block_fma("sm_90", "f16", [one16], [0xBC00], 0x3F800000) == 0
    assert block_fma("sm_90", "bf16", [0x7F00], [0x7F00], 0) == F32_PINF
    for h in range(0x10000):
        if (h & 0x7C00) != 0x7C00 or not (h & 0x3FF):
            assert f32_to_f16_rne(f16_to_f32_bits(h)) == h, hex(h)
            assert f32_to_fmt_bits("f16", f16_to_f32_bits(h)) == h, hex(h)
    print("tensor_core_model: self-check ok")
