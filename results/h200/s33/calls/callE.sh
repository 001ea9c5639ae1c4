#!/usr/bin/env bash
# Session 33, call E (issue 13; a check, no rule: the change is the default since call B). Carry the binaries of call
# D (commit.txt). The portable d = 64 forward with the lean prologue and epilogue (the default) against
# FB_FLASH_FWD_PROBE=nolean64 (the kernels before) on call A's held-out d = 64 forward rows, which call B's specs did
# not hold: unnamed33-mha.json (batch 2 x 36 heads, N 1450 / 3100 / 6300, bf16 and fp16, both masks) and
# unnamed33-gqa.json (48 q heads on 8 or 2 kv heads, N 2700 / 5500, bf16, both masks), d = 64 forward only
# (held-d64-{mha,gqa}.json),
# three interleaved rounds; FlashAttention-2 (torch-flash) beside each spec once.
R=$OUT/E; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-300}
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
c=results/h200/s33/calls
for r in 1 2 3; do
  for s in mha gqa; do
    step def-$s-$r 40 $fb run $c/held-d64-$s.json --no-ceilings -q -o $R/ab/def-$s-$r.json
    step nolean-$s-$r 40 env FB_FLASH_FWD_PROBE=nolean64 $fb run $c/held-d64-$s.json \
      --no-ceilings -q -o $R/ab/nolean-$s-$r.json
  done
done
for s in mha gqa; do
  step peers-$s 60 python3 scripts/peers.py $c/held-d64-$s.json --backends flash -o $R/ab/peers-$s.json
done
# ab_table: BASE = nolean (the kernels before), VARIANT = def (nolean64 time / default time: above 1, the default faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash torch-flash nolean def > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-160
tar czf $OUT/E.tgz -C $OUT E && rm -rf $R; echo "done t=$((SECONDS-t0))"
