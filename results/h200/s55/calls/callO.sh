#!/usr/bin/env bash
# Session 55, call O (one Hopper GPU; no rule, a diagnostic after call W): does a kernel's place in a case change its
# time? In call T (configs/gqa-h200.json: flash, then flash-sm90, each case after its fp64 reference) flash-sm90's
# 32-query-head N = 16384 backwards read 21.2-21.4 ms with reps climbing (19.15 -> 22.65 ms), in call W (flash-sm90
# first, no reference) 19.1-19.9 ms with flat reps, while the in-binary cudnn timed second there climbed instead. The
# GQA grid as committed (flash first) and with its kernels reversed (flash-sm90 first), two interleaved rounds, and
# peers.py's torch-cudnn / torch-flash (busy hold) once a round; scripts/ratios.py for each order.
set -uo pipefail
export DEADLINE=${DEADLINE:-330}
source scripts/call_step.sh
call_begin $OUT/O
python3 - configs/gqa-h200.json $R/gqa-rev.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["name"] = s["name"] + "-reversed"
s["kernels"] = list(reversed(s["kernels"]))
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY
smi_start
for r in 1 2; do
  order=(asis rev peers)
  ((r % 2 == 0)) && order=(peers rev asis)
  for v in "${order[@]}"; do
    case $v in
      asis) step fb-asis-$r 80 $fb run configs/gqa-h200.json -q -o $R/fb-asis-$r.json ;;
      rev) step fb-rev-$r 80 $fb run $R/gqa-rev.json -q -o $R/fb-rev-$r.json ;;
      peers) step peers-$r 60 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-$r.json ;;
    esac
  done
done
smi_stop
for v in asis rev; do
  rounds=()
  for r in 1 2; do
    [ -f $R/fb-$v-$r.json ] && [ -f $R/peers-$r.json ] && rounds+=(--round $R/fb-$v-$r.json $R/peers-$r.json)
  done
  [ ${#rounds[@]} -gt 0 ] || continue
  python3 scripts/ratios.py "${rounds[@]}" --pair flash-sm90:torch-cudnn --pair flash:torch-flash > $R/ratios-$v.txt 2>&1
  echo "== $v"; grep -A4 "^summary" $R/ratios-$v.txt | cut -c1-150
done
python3 - $R <<'PY' | tee $R/order.txt
import json, math, sys
R = sys.argv[1]
def load(f):
    try:
        return {(r["kernel"], r["key"]): r["time_ms"]["median"] for r in json.load(open(f"{R}/{f}"))["results"]
                if r["status"] == "ok"}
    except (OSError, ValueError, KeyError):
        return {}
for kern in ("flash-sm90", "flash"):
    ratios = []
    for r in (1, 2):
        a, b = load(f"fb-asis-{r}.json"), load(f"fb-rev-{r}.json")
        ratios += [(k, a[(kern, k)] / b[(kern, k)]) for (kk, k) in a if kk == kern and (kern, k) in b]
    if not ratios:
        continue
    g = math.exp(sum(math.log(x) for _, x in ratios) / len(ratios))
    lo, hi = min(ratios, key=lambda t: t[1]), max(ratios, key=lambda t: t[1])
    print(f"{kern}: time as committed / reversed over {len(ratios)} row-rounds: geomean {g:.4f}, "
          f"{lo[1]:.3f} ({lo[0]}) - {hi[1]:.3f} ({hi[0]})")
PY
call_end O
