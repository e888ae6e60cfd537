#!/usr/bin/env python3
"""approx_f32 family only: interp/emu vs GPU bit mismatches per run (uses ingest.py's command lines)."""
import json, os, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor
import numpy as np
sys.path.insert(0, "/work/shared/hardware-truth/tools")
import ingest
T = "/tmp/ht/ops"
kir = sys.argv[1] if len(sys.argv) > 1 else "/work/main/target/release/kir"
tag = sys.argv[2] if len(sys.argv) > 2 else "x"
man = json.load(open(os.path.join(T, "manifest.json")))
runs = [r for r in man["runs"] if r["family"] == "approx_f32"]
out = f"/tmp/h3/out_{tag}"
os.makedirs(out, exist_ok=True)
def work(r):
    i, e = ingest.engine_cmds(kir, T, r, out)
    a = subprocess.run(i, capture_output=True, text=True); b = subprocess.run(e, capture_output=True, text=True)
    return r, a.returncode, b.returncode, a.stderr[-300:], b.stderr[-300:]
res = {}
with ThreadPoolExecutor(2) as ex:
    for r, ra, rb, ea, eb in ex.map(work, runs):
        g = ingest.as_bits(np.load(os.path.join(T, r["gpu"])))
        row = {}
        for eng, rc, err in (("interp", ra, ea), ("emu", rb, eb)):
            p = os.path.join(out, f"{r['id']}.{eng}.npy")
            if rc != 0: row[eng] = "ERR " + err; continue
            x = ingest.as_bits(np.load(p)); row[eng] = int((x != g).sum())
        res[r["id"]] = row
        print(f"{r['id']:32s} n={len(g):6d} interp {row['interp']}  emu {row['emu']}", flush=True)
json.dump(res, open(f"/tmp/h3/cmp_{tag}.json", "w"), indent=1)
