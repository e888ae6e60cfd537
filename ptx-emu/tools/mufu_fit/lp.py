import numpy as np, sys
from scipy.optimize import linprog
key=sys.argv[1]; k=int(sys.argv[2]); segs=[int(s) for s in sys.argv[3].split(",")]; deg=int(sys.argv[4]) if len(sys.argv)>4 else 2
mode=sys.argv[5] if len(sys.argv)>5 else "floor"
hw=np.load(f"/tmp/h3/hw_{key}.npy")
m = (hw & 0x7fffff).astype(np.int64) | 0x800000
e = ((hw>>23)&0xff).astype(np.int64)
# normalise output to integer Y in units of the binade's typical ulp
emax = np.bincount(e).argmax()
Y = m * (2.0**(e-emax))
L = 23-k
for s in segs:
    t = np.arange(1<<L, dtype=np.float64)
    y = Y[s<<L:(s+1)<<L]
    tt = t/2**L
    A = np.stack([tt**j for j in range(deg+1)],1)
    # vars: c_0..c_deg, slack
    n=deg+1
    # y <= A c + s  -> -A c - s <= -y ; A c - s <= y+1-1e-9
    Aub = np.vstack([np.hstack([-A, -np.ones((len(t),1))]), np.hstack([A, -np.ones((len(t),1))])])
    bub = np.concatenate([-y, y+1-1e-9]) if mode=="floor" else np.concatenate([-y+0.5, y+0.5])
    c = np.zeros(n+1); c[-1]=1
    r = linprog(c, A_ub=Aub, b_ub=bub, bounds=[(None,None)]*n+[(0,None)], method="highs")
    print(key, "k",k,"seg",s,"deg",deg,"slack %.4f"%r.x[-1], "coef", r.x[:-1])
