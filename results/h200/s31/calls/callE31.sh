#!/usr/bin/env bash
# Session 31, call E (issue 13, diagnostic for session 32). Carry main's binaries (commit.txt = HEAD). flash-sm90's
# forward on few-wave causal shapes beside torch-cudnn: session 29's call A read batch 5 x 14 heads d = 128 causal
# N = 1150 at 0.978x with the peer measured once; here it (and its non-causal twin) and five fresh causal shapes
# (sm90-*.json: MHA N 900-1700, 32 q / 8 kv heads N = 2300, d = 64 N = 1200) run three interleaved rounds of
# flashbench and peers.py (cuDNN SDPA), so that each ratio has its peer beside it in every round.
R=$OUT/E; mkdir -p $R/r; export DEADLINE=${DEADLINE:-300}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left; the step's process group stopped at MAX
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; setsid timeout -k 3 $max "$@" < /dev/null > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
c=results/h200/s31/calls
for r in 1 2 3; do
  for f in $c/sm90-*.json; do
    s=$(basename $f .json)
    step fb-$s-$r 20 $fb run $f --no-ceilings -q -o $R/r/def-$s-$r.json
    step cudnn-$s-$r 30 python3 scripts/peers.py $f --backends cudnn -o $R/r/peers-$s-$r.json
  done
done
python3 - $R/r > $R/table.txt 2>&1 <<'PY'
import glob, json, math, os, re, sys
d = sys.argv[1]
def med(path, kernel):
    try:
        rs = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        return {}
    return {r["key"]: r["time_ms"]["median"] for r in rs if r.get("kernel") == kernel and r.get("status") == "ok"
            and (kernel != "flash-sm90" or r.get("verified") is True)}
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
rows = {}
for f in sorted(glob.glob(os.path.join(d, "def-*-[0-9].json"))):
    spec, r = re.match(r"def-(.*)-(\d)\.json", os.path.basename(f)).groups()
    ours = med(f, "flash-sm90"); peer = med(os.path.join(d, f"peers-{spec}-{r}.json"), "torch-cudnn")
    for k, t in ours.items():
        if k in peer: rows.setdefault(k, []).append(peer[k] / t)
print("torch-cudnn time / flash-sm90 time, round by round (interleaved), and their geomean")
for k, v in sorted(rows.items()):
    print(f"{k:44s} " + " ".join(f"{x:.3f}" for x in v) + f"  gm {gm(v):.3f}")
PY
cat $R/table.txt
tar czf $OUT/E.tgz -C $OUT E && rm -rf $R; echo "done t=$((SECONDS-t0))"
