import numpy as np, sys
sys.path.insert(0,"/tmp/h3")
from fit import *
from concurrent.futures import ProcessPoolExecutor
key=sys.argv[1]; k=int(sys.argv[2])
hw=np.load(f"/tmp/h3/hw_{key}.npy")
m = (hw & 0x7fffff).astype(np.int64) | 0x800000
e = ((hw>>23)&0xff).astype(np.int64)
emax = np.bincount(e).argmax()
Y = m * (2**(e-emax).astype(np.float64))
L=23-k
with ProcessPoolExecutor(2) as pool:
    C, slack, ok = fit_all(Y, k, L, pool)
print(key, "k", k, "exact", ok.sum(), "/", len(Y), "= %.5f"%(ok.sum()/len(Y)), "max slack %.3f"%slack.max(), "worst segs", np.argsort(ok)[:5], ok[np.argsort(ok)[:5]])
np.save(f"/tmp/h3/C_{key}_k{k}.npy", C)
