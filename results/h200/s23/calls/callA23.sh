#!/usr/bin/env bash
# Session 23 call A (one H200; issue 13, a measurement: no kernel changed). Main's binaries built here for sm_90a,
# carried (out/b.txz, out/commit.txt).
# 1. diag: the row behind in both of session 22 call H's rounds, fp16 d = 128 causal N = 4k backward, and its bf16
#    twin, beside the in-binary cudnn in the same process, under the existing host words that change its block order
#    (FB_SM90_BWD_GROUPED=T: key tiles in plane groups before the tail; 32 = all grouped, the default at 16 heads)
#    and its query tile (FB_SM90_BWD128=q64), two rounds.
# 2. the issue-13 grids (configs/issue13-h200.json, -fp16-h200.json: 48 cases each, flash / flash-sm90 / cudnn,
#    verified) and their PyTorch peers (scripts/peers.py: torch-flash, torch-cudnn), interleaved in two rounds
#    (F bf16, P bf16, F fp16, P fp16, then again), so that each ratio rests on two runs of each side.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-575}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
diag='n4096-d128-(bf16|fp16)-causal-bwd'
for r in 1 2; do
  for w in default g24 q64; do
    case $w in
      default) env=();; g24) env=(FB_SM90_BWD_GROUPED=24);; g28) env=(FB_SM90_BWD_GROUPED=28);; q64) env=(FB_SM90_BWD128=q64);;
    esac
    step diag-$w-$r 30 env "${env[@]}" $fb run configs/issue13-fp16-h200.json --filter "$diag" --kernels flash-sm90,cudnn \
      --reps 20 --no-ceilings -q -o $R/diag-$w-$r.json
    step diag16-$w-$r 30 env "${env[@]}" $fb run configs/issue13-h200.json --filter "$diag" --kernels flash-sm90,cudnn \
      --reps 20 --no-ceilings -q -o $R/diag16-$w-$r.json
  done
done
for r in 1 2; do
  step fb-bf16-$r 110 $fb run configs/issue13-h200.json -q -o $R/fb-bf16-$r.json
  step peers-bf16-$r 90 python3 scripts/peers.py configs/issue13-h200.json --backends flash,cudnn -o $R/peers-bf16-$r.json
  step fb-fp16-$r 110 $fb run configs/issue13-fp16-h200.json -q -o $R/fb-fp16-$r.json
  step peers-fp16-$r 90 python3 scripts/peers.py configs/issue13-fp16-h200.json --backends flash,cudnn -o $R/peers-fp16-$r.json
done
kill $smi
python3 - $R <<'PY' | tee $R/diag-table.txt
import json, os, sys
R = sys.argv[1]
print("diag: cudnn (in-binary) median / flash-sm90 median, d = 128 causal N = 4k backward, per round")
for dt, pre in (("fp16", "diag"), ("bf16", "diag16")):
    for w in ("default", "g24", "q64"):
        row = []
        for r in (1, 2):
            try:
                d = json.load(open(os.path.join(R, f"{pre}-{w}-{r}.json")))
            except (OSError, ValueError):
                row.append("   -   "); continue
            t = {x["kernel"]: x["time_ms"]["median"] for x in d["results"] if x.get("status") == "ok"
                 and x.get("verified") is not False}
            fs, cu = t.get("flash-sm90"), t.get("cudnn")
            row.append(f"{fs:.4f} {cu / fs:.3f}x" if fs and cu else "   -   ")
        print(f"{dt} {w:8} " + "   ".join(row))
PY
for r in 1 2; do for g in bf16 fp16; do
  python3 scripts/ratios.py $R/fb-$g-$r.json $R/peers-$g-$r.json --pair flash-sm90:torch-cudnn --pair flash:torch-flash \
    > $R/sum-$g-$r.txt 2>&1; echo "== round $r $g"; grep -A6 "^summary" $R/sum-$g-$r.txt | tail -n 5
done; done
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
