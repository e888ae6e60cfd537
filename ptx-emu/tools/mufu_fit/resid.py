import numpy as np, sys
key=sys.argv[1]; k=int(sys.argv[2]); s=int(sys.argv[3])
hw=np.load(f"/tmp/h3/hw_{key}.npy")
m = (hw & 0x7fffff).astype(np.int64) | 0x800000
e = ((hw>>23)&0xff).astype(np.int64)
emax = np.bincount(e).argmax()
Y = m * (2.0**(e-emax))
L=23-k
ti=np.arange(1<<L); t=ti/2**L
y=Y[s<<L:(s+1)<<L]+0.5
A=np.stack([np.ones_like(t),t,t*t],1)
c,*_=np.linalg.lstsq(A,y,rcond=None)
r=y-A@c
print("coef",c,"resid range",r.min(),r.max())
# residual stats by low bits
for j in [1,2,3,4,6,8]:
    g=ti % (1<<j)
    mx=[r[g==v].mean() for v in range(1<<j)]
    print(j, np.round(mx,3)[:16])
# by high bits (coarse trend)
g=ti>>(L-5)
print("hi", np.round([r[g==v].mean() for v in range(32)],3))
print("hi-min", np.round([r[g==v].min() for v in range(32)],3))
print("hi-max", np.round([r[g==v].max() for v in range(32)],3))
