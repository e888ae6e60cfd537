import numpy as np, sys
from scipy.optimize import linprog
key=sys.argv[1]; k=int(sys.argv[2]); s=int(sys.argv[3])
hw=np.load(f"/tmp/h3/hw_{key}.npy")
m = (hw & 0x7fffff).astype(np.int64) | 0x800000
e = ((hw>>23)&0xff).astype(np.int64)
emax = np.bincount(e).argmax()
Y = m * (2.0**(e-emax))
L = 23-k
ti = np.arange(1<<L, dtype=np.int64); t=ti/2**L
y = Y[s<<L:(s+1)<<L]
A=np.stack([np.ones_like(t),t,t*t],1); n=3
Aub = np.vstack([np.hstack([-A, -np.ones((len(y),1))]), np.hstack([A, -np.ones((len(y),1))])])
bub = np.concatenate([-y, y+1-1e-9])
c = np.zeros(n+1); c[-1]=1
r = linprog(c, A_ub=Aub, b_ub=bub, bounds=[(None,None)]*n+[(0,None)], method="highs")
P=A@r.x[:3]; f=P-y   # should be in [0,1)
print("slack",r.x[-1])
for name,sel in (("low",f<-0.05),("high",f>1.05)):
    idx=np.nonzero(sel)[0]
    print(name,len(idx))
    for i in idx[:12]: print("   t=%5d %s frac=%.3f"%(i,format(i,'016b'),f[i]))
# histogram of frac of P
h,_=np.histogram(f,bins=20,range=(-0.1,1.1)); print(h)
