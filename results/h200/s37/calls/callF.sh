#!/usr/bin/env bash
# Session 37, call F (one H200; issue 13): the binaries of commit.txt (fd4e984: gqa_causal_plane_group() moved into
# common/head_split.h, no behaviour change). [bwd_gqa] (with [flash_pgroup]) as built and [flash_pgroup] under
# FB_FLASH_BWD=headmajor; then three rounds of the three d = 128 GQA grid rows call E had flash-sm90 behind torch-cudnn
# (rr-*: non-causal, untouched by session 37), each beside torch-cudnn every round.
R=$OUT/F; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-150}
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
gt=$src/build-dev/tests/flashbench_gpu_tests
cat out/commit.txt > $R/commit.txt 2>/dev/null
c=results/h200/s37/calls
step tests-gqa 30 $gt "[bwd_gqa]"
step tests-fpg-headmajor 15 env FB_FLASH_BWD=headmajor $gt "[flash_pgroup]"
for t in gqa fpg-headmajor; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
for r in 1 2 3; do
  for s in $(cd $c && ls rr-*.json | sed 's/\.json$//'); do
    step def-$s-$r 15 $fb run $c/$s.json --no-ceilings -q -o $R/ab/def-$s-$r.json
    step peers-$s-$r 20 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/ab/peers-$s-$r.json
  done
done
python3 - $R/ab > $R/table.txt <<'PY'
import glob, json, math, os, re, sys
d = sys.argv[1]
def t(p):
    try: rs = json.load(open(p))["results"]
    except (OSError, ValueError, KeyError): return None
    for r in rs:
        if r.get("status") == "ok" and (r.get("kernel", "").startswith("torch") or r.get("verified") is True):
            return r["time_ms"]["median"]
    return None
print("torch-cudnn time / flash-sm90 time per round (above 1: flash-sm90 faster) and geomean")
for s in sorted({re.sub(r"^def-|-\d\.json$", "", os.path.basename(f)) for f in glob.glob(os.path.join(d, "def-*.json"))}):
    rs = []
    for r in (1, 2, 3):
        a, p = t(os.path.join(d, f"def-{s}-{r}.json")), t(os.path.join(d, f"peers-{s}-{r}.json"))
        if a and p: rs.append(p / a)
    g = math.exp(sum(map(math.log, rs)) / len(rs)) if rs else float("nan")
    print(f"  {s:32s} " + " ".join(f"{x:.3f}" for x in rs) + f"   gm {g:.3f}")
PY
cat $R/table.txt
tar czf $OUT/F.tgz -C $OUT F && rm -rf $R; echo "done t=$((SECONDS-t0))"
