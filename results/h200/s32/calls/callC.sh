#!/usr/bin/env bash
# Session 32, call C (one H200; issue 13, diagnostic): call B found rows behind their peer in both rounds whose kernels
# did not change since session 29's call B, which read them ahead: flash-sm90's d = 128 backward (fp16 causal N = 1024
# 0.971x, bf16 non-causal N = 512 / 1024 0.996 / 0.993x torch-cudnn) and the portable d = 64 non-causal forward (fp16
# N = 512 / 1024 0.986 / 0.990x, bf16 N = 512 0.991x FlashAttention-2). Three interleaved rounds of those grid rows and
# their neighbours (diag-bwd128.json, diag-fwd64.json) beside the peers, the clock logged: call-to-call spread or a
# change. Binaries as call B's (out/b.txz; commit in commit.txt).
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-400}
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
c=results/h200/s32/calls
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
for r in 1 2 3; do
  step fb-bwd128-$r 60 $fb run $c/diag-bwd128.json -q -o $R/fb-bwd128-$r.json
  step peers-bwd128-$r 60 python3 scripts/peers.py $c/diag-bwd128.json --backends cudnn -o $R/peers-bwd128-$r.json
  step fb-fwd64-$r 40 $fb run $c/diag-fwd64.json -q -o $R/fb-fwd64-$r.json
  step peers-fwd64-$r 40 python3 scripts/peers.py $c/diag-fwd64.json --backends flash -o $R/peers-fwd64-$r.json
done
kill $smi
python3 scripts/ratios.py --round $R/fb-bwd128-1.json $R/peers-bwd128-1.json --round $R/fb-bwd128-2.json \
  $R/peers-bwd128-2.json --round $R/fb-bwd128-3.json $R/peers-bwd128-3.json --pair flash-sm90:torch-cudnn \
  > $R/rounds-bwd128.txt 2>&1
python3 scripts/ratios.py --round $R/fb-fwd64-1.json $R/peers-fwd64-1.json --round $R/fb-fwd64-2.json \
  $R/peers-fwd64-2.json --round $R/fb-fwd64-3.json $R/peers-fwd64-3.json --pair flash:torch-flash \
  > $R/rounds-fwd64.txt 2>&1
for k in bwd128 fwd64; do echo "== $k"; grep -E "^  b" $R/rounds-$k.txt | cut -c1-110; grep -A4 "^summary" $R/rounds-$k.txt; done
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
