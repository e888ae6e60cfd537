import numpy as np
C=np.load("/tmp/h3/C_ex2_1_2_k7.npy"); L=16
def model(tf):  # tf: fraction in units 2^-23 (float, maybe half-integer)
    s=(np.floor(tf).astype(np.int64)>>L).clip(0,127); u=(tf - (s<<L))/2.0**L
    c=C[s]; return np.floor(c[:,0]+u*(c[:,1]+u*c[:,2]))
for key,first,i0 in (("ex2_ftz_0.5_1",0x3f000000,0),("ex2_ftz_-1_-0.5",0xbf000001,-1)):
    hw=np.load(f"/tmp/h3/hw_{key}.npy")
    xb=(np.arange(len(hw),dtype=np.uint64)+first).astype(np.uint32)
    x=xb.view(np.float32).astype(np.float64)
    f=x-i0   # in [0,1)
    Y=((hw&0x7fffff)|0x800000).astype(np.int64); e=((hw>>23)&0xff).astype(np.int64)
    # 2^f in units 2^-23: value = Y*2^(e-127-23) / 2^i0  ->  *2^23
    want = Y*2.0**(e-127-23-i0+23)
    t = f*2**23
    for name,tt in (("exact",t),("trunc",np.floor(t)),("round",np.floor(t+0.5)),("round-even",np.round(t))):
        got=model(tt)
        print(key,name,"exact %.5f"%((got==want).mean()))
print("--- ceil / ftrunc of |x|")
key,first,i0=("ex2_ftz_-1_-0.5",0xbf000001,-1)
hw=np.load(f"/tmp/h3/hw_{key}.npy")
xb=(np.arange(len(hw),dtype=np.uint64)+first).astype(np.uint32)
x=xb.view(np.float32).astype(np.float64)
Y=((hw&0x7fffff)|0x800000).astype(np.int64); e=((hw>>23)&0xff).astype(np.int64)
want = Y*2.0**(e-127-23-i0+23)
t=(x+1)*2**23
for name,tt in (("ceil",np.ceil(t)),("ceil-1/2",np.ceil(t)-0.5)):
    got=model(tt); print(name,"%.5f"%((got==want).mean()), "off by", np.unique(got-want,return_counts=True))
print("--- by parity of 24th bit")
half=(t!=np.floor(t))
for name,tt in (("trunc",np.floor(t)),("ceil",np.ceil(t))):
    got=model(tt)
    for h in (False,True):
        s=half==h; print(name,"half" if h else "int", "%.5f"%((got[s]==want[s]).mean()), np.unique((got-want)[s],return_counts=True))
