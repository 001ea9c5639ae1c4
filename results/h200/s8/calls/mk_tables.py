import json, math, sys
ours, peers = sys.argv[1], sys.argv[2]
def idx(p):
    o = {}
    for r in json.load(open(p))["results"]: o.setdefault(r["key"], {})[r["kernel"]] = r
    return o
a, b = idx(ours), idx(peers)
def med(r): return r["time_ms"]["median"] if r and r.get("status") == "ok" else None
def tf(r): return f"{r['tflops']:.0f}" if med(r) else "—"
def ratio(x, y):
    return f"{med(y)/med(x):.2f}×" if med(x) and med(y) else "—"
agg = {}
for p in ("fwd", "bwd"):
    for d in (128, 64):
        for causal in (False, True):
            rows = [k for k in a if f"-d{d}-" in k and k.endswith(f"-{'causal' if causal else 'full'}-{p}")]
            rows.sort(key=lambda k: int(k.split("-n")[1].split("-")[0]))
            print(f"\n{p}, head dim {d}{', causal' if causal else ''}:\n")
            print("| N | flash-sm90 ms | flash-sm90 | cudnn (in flashbench) | torch-cudnn | flash | torch-flash (FA2) | flash-sm90 vs torch-cudnn | flash-sm90 vs cudnn | flash vs FA2 |")
            print("|---|---|---|---|---|---|---|---|---|---|")
            for k in rows:
                s, c, f = a[k].get("flash-sm90"), a[k].get("cudnn"), a[k].get("flash")
                tc, tfl = b.get(k, {}).get("torch-cudnn"), b.get(k, {}).get("torch-flash")
                n = k.split("-n")[1].split("-")[0]
                bad = [kk for kk, r in a[k].items() if med(r) and not r.get("verified")]
                print(f"| {n} | {med(s):.3f} | {tf(s)} | {tf(c)} | {tf(tc)} | {tf(f)} | {tf(tfl)} | {ratio(s, tc)} | {ratio(s, c)} | {ratio(f, tfl)} |" + (f" unverified: {bad}" if bad else ""))
                for name, x, y in (("sm90/torch-cudnn", s, tc), ("sm90/cudnn", s, c), ("flash/FA2", f, tfl)):
                    if med(x) and med(y): agg.setdefault((p, name), []).append(med(y) / med(x))
print()
for (p, name), xs in sorted(agg.items()):
    print(f"{p} {name}: {min(xs):.2f}–{max(xs):.2f}×, geomean {math.exp(sum(map(math.log, xs))/len(xs)):.3f}, n={len(xs)}, >=1.0 in {sum(x >= 1.0 for x in xs)}")
