# generic per-segment LP fit: Y = floor(c0 + c1*u + c2*u*u), u = t / 2^L (f64), minimax slack
import numpy as np, sys, json
from scipy.optimize import linprog
from concurrent.futures import ProcessPoolExecutor
def lp(y, u):
    base=np.floor(y.min()); y=y-base
    x=lp0(y,u)
    if x is None:
        A=np.stack([np.ones_like(u),u,u*u],1); c,*_=np.linalg.lstsq(A,y+0.5,rcond=None); x=np.append(c,9.9)
    x[0]+=base
    return x
def lp0(y, u):
    A=np.stack([np.ones_like(u),u,u*u],1)
    Aub = np.vstack([np.hstack([-A, -np.ones((len(y),1))]), np.hstack([A, -np.ones((len(y),1))])])
    bub = np.concatenate([-y, y+1-1e-7])
    c = np.zeros(4); c[-1]=1
    r = linprog(c, A_ub=Aub, b_ub=bub, bounds=[(None,None)]*3+[(0,None)], method="highs")
    return r.x if r.status==0 else None
def evalp(c, u):  # the exact f64 expression the Rust code uses
    return np.floor(c[0] + u*(c[1] + u*c[2]))
def seg_fit(args):
    y, u = args
    x = lp(y, u)
    c = x[:3]
    # centre the band: shift c0 so that floor matches as many as possible (try a few offsets)
    best=None
    for d in np.linspace(-0.15,0.15,61):
        cc=c.copy(); cc[0]+=d
        n=(evalp(cc,u)==y).sum()
        if best is None or n>best[0]: best=(n,cc)
    return best[1], x[3], best[0]
def fit_all(Y, k, L, pool):
    nseg = len(Y) >> L
    u = np.arange(1<<L)/2.0**L
    jobs = [(Y[s<<L:(s+1)<<L].astype(np.float64), u) for s in range(nseg)]
    res = list(pool.map(seg_fit, jobs, chunksize=4))
    C = np.array([r[0] for r in res]); slack=np.array([r[1] for r in res]); ok=np.array([r[2] for r in res])
    return C, slack, ok
