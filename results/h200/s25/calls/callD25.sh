#!/usr/bin/env bash
# Session 25 call D (one H200; issue 13). Main 856e311's binaries (commit.txt), built on the lead's machine and carried.
#  1. The GQA shapes no config names, after call C's head-split change, beside the PyTorch peers in one call, two
#     interleaved rounds: unnamed25-gqa.json (call B's 40 q on 8 / 1 kv heads, N 2000 / 4500) and session 23's
#     unnamed-gqa.json (24 / 4, N 2500 / 5120): every flashbench row verified.
#  2. Diagnostic: the portable flash forward at d = 128 N = 1280 (call C: 0.82 / 0.93x FlashAttention-2 at batch 3 /
#     12) under its probe words, each alone: nokpipe (S's fragments not double-buffered), epi,pro (the lean prologue
#     and epilogue of launches up to 1024 keys), nopf (no L2 prefetch of the next wave), persist (one wave of blocks),
#     beside torch-flash, two rounds.
R=$OUT/D; mkdir -p $R; export DEADLINE=${DEADLINE:-300}
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
c=results/h200/s25/calls
g23=results/h200/s23/calls/unnamed-gqa.json
for r in 1 2; do
  step fb-gqa-$r 60 $fb run $c/unnamed25-gqa.json -q -o $R/fb-gqa-$r.json
  step peers-gqa-$r 60 python3 scripts/peers.py $c/unnamed25-gqa.json --backends flash,cudnn -o $R/peers-gqa-$r.json
  step fb-g23-$r 60 $fb run $g23 -q -o $R/fb-g23-$r.json
  step peers-g23-$r 60 python3 scripts/peers.py $g23 --backends flash,cudnn -o $R/peers-g23-$r.json
done
python3 scripts/ratios.py --round $R/fb-{gqa,g23}-1.json $R/peers-{gqa,g23}-1.json \
  --round $R/fb-{gqa,g23}-2.json $R/peers-{gqa,g23}-2.json \
  --pair flash-sm90:torch-cudnn --pair flash:torch-flash --pair flash-sm90:cudnn > $R/rounds.txt 2>&1
grep -A14 "^summary" $R/rounds.txt
for r in 1 2; do
  step peers1280-$r 60 python3 scripts/peers.py $c/flashfwd1280.json --backends flash -o $R/peers1280-$r.json
  for w in default nokpipe epi,pro nopf persist; do
    if [ $w = default ]; then step fwd1280-$w-$r 30 $fb run $c/flashfwd1280.json --filter n1280 --no-ceilings -q -o $R/fwd1280-$w-$r.json
    else step fwd1280-$w-$r 30 env FB_FLASH_FWD_PROBE=$w $fb run $c/flashfwd1280.json --filter n1280 --no-ceilings -q \
      -o $R/fwd1280-$w-$r.json; fi
  done
done
python3 - $R <<'PY' | tee $R/table1280.txt
import json, os, sys
R = sys.argv[1]
def times(p):
    try:
        return {r["key"]: r["time_ms"]["median"] for r in json.load(open(p))["results"]
                if r.get("status") == "ok" and r.get("verified") is not False}
    except (OSError, ValueError, KeyError):
        return {}
print("torch-flash time / flash time under each probe word (above 1: flash faster), rounds 1 / 2")
for w in ("default", "nokpipe", "epi,pro", "nopf", "persist"):
    for key in ("b3-h12-kv12-n1280-d128-bf16-full-fwd", "b12-h12-kv12-n1280-d128-bf16-full-fwd"):
        cells = []
        for r in (1, 2):
            a = times(os.path.join(R, f"peers1280-{r}.json")).get(key)
            b = times(os.path.join(R, f"fwd1280-{w}-{r}.json")).get(key)
            cells.append(f"{a / b:.3f} ({1000 * b:.1f} us)" if a and b else "  -  ")
        print(f"  {w:8s} {key:40s} " + "   ".join(cells))
PY
kill $smi
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
