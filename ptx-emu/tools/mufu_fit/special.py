import json, os, sys
import numpy as np
T="/tmp/ht/ops"; tag=sys.argv[1]; eng=sys.argv[2] if len(sys.argv)>2 else "interp"
man=json.load(open(f"{T}/manifest.json"))
def f(b): return np.array([b],np.uint32).view(np.float32)[0]
for r in man["runs"]:
    if r["family"]!="approx_f32": continue
    g=np.load(f"{T}/{r['gpu']}").view(np.uint32).ravel()
    x=np.load(f"/tmp/h3/out_{tag}/{r['id']}.{eng}.npy").view(np.uint32).ravel()
    ins=[np.load(f"{T}/{p['npy']}").view(np.uint32).ravel() for p in r["params"] if p["kind"]=="in"]
    a=ins[0]
    gn=(g&0x7fffffff)>0x7f800000; xn=(x&0x7fffffff)>0x7f800000
    def spec(v): 
        m=v&0x7fffffff; return (m>=0x7f800000)|(m<0x00800000)
    bad = (g!=x)
    nanpay = bad&gn&xn
    nanness = bad&(gn!=xn)
    sp = bad&~gn&~xn&(spec(g)|spec(x)|spec(a)|(len(ins)>1 and spec(ins[1])))
    rest = bad&~nanpay&~nanness&~sp
    print(f"{r['id']:28s} mism {bad.sum():5d} nanpayload {nanpay.sum():4d} nanness {nanness.sum():4d} special(in/out inf/0/sub) {sp.sum():4d} finite {rest.sum():5d}")
    idx=np.nonzero(nanpay|nanness|sp)[0]
    for i in idx[:int(os.environ.get("SHOW","4"))]:
        s=" ".join(f"{v[i]:08x}({f(v[i]):.6g})" for v in ins)
        print(f"     [{i}] {s} -> gpu {g[i]:08x}({f(g[i]):.6g}) {eng} {x[i]:08x}({f(x[i]):.6g})")
