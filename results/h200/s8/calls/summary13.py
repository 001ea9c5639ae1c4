import json, math, sys
ours, peers = sys.argv[1], sys.argv[2]
def idx(p):
    try: d = json.load(open(p))
    except Exception as e: print(p, e); return {}
    o = {}
    for r in d["results"]: o.setdefault(r["key"], {})[r["kernel"]] = r
    return o
a, b = idx(ours), idx(peers)
def med(r): return r["time_ms"]["median"] if r and r.get("status") == "ok" else None
pairs = [("flash-sm90", "torch-cudnn", b), ("flash-sm90", "cudnn", a), ("flash", "torch-flash", b)]
agg = {}
print("key".ljust(44), "sm90TF  cudnnTF  sm90/tcudnn sm90/cudnn flash/FA2  (time ratios: peer/ours)")
for k in sorted(a, key=lambda k: ("bwd" in k, "d64" not in k, "causal" in k, int(k.split("-n")[1].split("-")[0]) if "-n" in k else 0)):
    cells = []
    for o, p, src in pairs:
        x, y = a[k].get(o), src.get(k, {}).get(p)
        if med(x) and med(y):
            q = med(y) / med(x); agg.setdefault((o, p, "bwd" if "bwd" in k else "fwd"), []).append(q)
            cells.append(f"{q:6.3f}{'' if x.get('verified') else '!'}")
        else: cells.append(f"{'-':>6} ")
    s = a[k].get("flash-sm90"); c = a[k].get("cudnn")
    print(k[:44].ljust(44), f"{s['tflops'] if med(s) else 0:6.0f} {c['tflops'] if med(c) else 0:7.0f}   ", "     ".join(cells))
for key, xs in sorted(agg.items()):
    print(key, "geomean %.3f min %.3f max %.3f n %d" % (math.exp(sum(map(math.log, xs)) / len(xs)), min(xs), max(xs), len(xs)))
bad = [(k, kk) for k in a for kk, r in a[k].items() if r.get("status") == "ok" and r.get("verified") is False]
print("unverified/failed rows:", bad if bad else "none")
