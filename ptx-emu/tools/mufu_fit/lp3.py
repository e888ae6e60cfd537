import numpy as np, sys
from scipy.optimize import linprog
key=sys.argv[1]; k=int(sys.argv[2]); segs=[int(s) for s in sys.argv[3].split(",")]; qs=[int(s) for s in sys.argv[4].split(",")]
hw=np.load(f"/tmp/h3/hw_{key}.npy")
m = (hw & 0x7fffff).astype(np.int64) | 0x800000
e = ((hw>>23)&0xff).astype(np.int64)
emax = np.bincount(e).argmax()
Y = m * (2.0**(e-emax))
L = 23-k
def fit(y, cols):
    A=np.stack(cols,1); n=A.shape[1]
    Aub = np.vstack([np.hstack([-A, -np.ones((len(y),1))]), np.hstack([A, -np.ones((len(y),1))])])
    bub = np.concatenate([-y, y+1-1e-9])
    c = np.zeros(n+1); c[-1]=1
    r = linprog(c, A_ub=Aub, b_ub=bub, bounds=[(None,None)]*n+[(0,None)], method="highs")
    return r.x
for s in segs:
    ti = np.arange(1<<L, dtype=np.int64)
    y = Y[s<<L:(s+1)<<L]
    for q in qs:
        sq = ((ti*ti) >> (2*L-q)) / 2**q
        x = fit(y, [np.ones(len(ti)), ti/2**L, sq])
        print(key,"seg",s,"sq-bits",q,"slack %.4f"%x[-1], x[:-1], flush=True)
