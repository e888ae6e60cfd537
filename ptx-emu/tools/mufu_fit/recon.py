# reconstruct the hardware's bits over each binade of mufu_binades.npz: hw = CR(f(x)) + delta (ulps, ordered)
import numpy as np, json, mpmath
mpmath.mp.prec = 200
Z = np.load("/work/shared/hardware-truth/approx/mufu_binades.npz")
J = json.load(open("/work/shared/hardware-truth/approx/mufu.json"))["binades"]
def ordf(b): b=b.astype(np.int64); return np.where(b>=2**31, -(b&0x7fffffff), b)
def unord(o): return np.where(o<0, (-o)|0x80000000, o).astype(np.uint32)
F = {"ex2": (np.exp2, lambda x: mpmath.power(2, x)), "lg2": (np.log2, lambda x: mpmath.log(x, 2)),
     "rsqrt": (lambda x: 1/np.sqrt(x), lambda x: 1/mpmath.sqrt(x)), "rcp": (lambda x: 1/x, lambda x: 1/x),
     "sqrt": (np.sqrt, mpmath.sqrt)}
for key in Z.files:
    d = Z[key].astype(np.int64); info = J[key]
    op = info["op"].split(".")[0]
    first = int(info["first_bits"], 16); n = len(d)
    xb = (np.arange(n, dtype=np.uint64) + first).astype(np.uint32)
    x = xb.view(np.float32).astype(np.float64)
    r64 = F[op][0](x)
    r32 = r64.astype(np.float32)
    # ambiguity: f64 value within 2^-48 of a boundary
    lo = (r64*(1-2**-48)).astype(np.float32); hi = (r64*(1+2**-48)).astype(np.float32)
    amb = np.nonzero(lo != hi)[0]
    for i in amb:
        v = F[op][1](mpmath.mpf(float(x[i])))
        r32[i] = np.float32(float(v)) if abs(float(v) - float(np.float32(float(v))))!=0 or True else r32[i]
        # exact CR via mpmath: round to 24 bits
        r32[i] = np.float32(mpmath.mpf(mpmath.nstr(v, 60)) if False else float(mpmath.mpf(v)))  # float() double-rounds; fix below
        m, e = mpmath.frexp(v)  # v = m*2^e, 0.5<=|m|<1
        q = mpmath.nint(m * 2**24)  # round half even
        r32[i] = np.float32(float(q * mpmath.mpf(2)**(e-24)))
    rb = r32.view(np.uint32)
    hw = unord(ordf(rb) + d)
    np.save(f"/tmp/h3/hw_{key}.npy", hw)
    np.save(f"/tmp/h3/amb_{key}.npy", amb)
    print(key, op, hex(first), n, "ambiguous", len(amb), "nan?", (d==-128).sum(), "clip", (np.abs(d)==127).sum())
