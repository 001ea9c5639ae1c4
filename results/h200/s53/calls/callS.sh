#!/usr/bin/env bash
# Session 53, call S (prepared for a later session; one Hopper GPU; issue 13): the probe br64short (the portable
# forward's non-causal d = 128 sub-wave grids in 64 x 64 tiles where no block runs more than kBr64ShortMaxTiles = 12
# K/V tiles; kernels/flash/flash_fwd_config.h) under the rule written in docs/perf-notes.md, "Session 53", before the
# call. Call Y's br64 gained on all five of its rows in that scope and lost outside it (results/h100/s53/Y/); these rows
# are fresh. [flashfwd] under br64short, memcheck of a grid in its scope no config names (2 x 3 q / 1 kv heads N = 500
# fp16), then ab_probe (scripts/call_step.sh, the house rule, torch-flash beside): three interleaved rounds def /
# br64short on eight rows drawn with seed 5354 before the call (batch 1-4, 1-8 kv heads, groups 1 / 2 / 4 / 8, at most
# 16 q heads, N 256-4096, in the scope by the launch's own plan) and three controls br64short leaves as built (call Y's
# 1 x 2 / 2 N = 3303 fp16 and 2 x 4 / 1 N = 2053 fp16, out of the scope, and a causal grid).
set -uo pipefail
export DEADLINE=${DEADLINE:-300}
export AB_KERNEL=flash
source scripts/call_step.sh
call_begin $OUT/S; mkdir -p $R/ab $R/specs
step tests-br64short 90 env FB_FLASH_FWD_PROBE=br64short $gt "[flashfwd]"
echo "tests-br64short: $(grep -E 'passed|failed' $R/tests-br64short.log | tail -2 | tr '\n' ' ')"
for row in 1,16,8,679,bf16 2,5,5,331,bf16 1,16,8,403,fp16 3,6,3,675,bf16 3,4,1,304,fp16 1,7,7,280,bf16 \
           2,6,3,257,fp16 4,4,1,713,bf16; do
  IFS=, read -r b h kv n dt <<< "$row"
  ab_spec $R/specs br64s-b$b-h$h-kv$kv-n$n-$dt $b $h $kv $n 128 $dt false fwd
done
ab_spec $R/specs br64sctl-b1-h2-kv2-n3303-fp16 1 2 2 3303 128 fp16 false fwd
ab_spec $R/specs br64sctl-b2-h4-kv1-n2053-fp16 2 4 1 2053 128 fp16 false fwd
ab_spec $R/specs br64sctl-causal-b2-h6-kv3-n700-bf16 2 6 3 700 128 bf16 true fwd
ab_spec $R memcheck-spec 2 3 1 500 128 fp16 false fwd
step memcheck 40 env FB_FLASH_FWD_PROBE=br64short compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $R/memcheck-spec.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/memcheck.json
tail -1 $R/memcheck.log
ab_probe $R/specs 3 br64short FB_FLASH_FWD_PROBE=br64short 'br64s-*' 'br64sctl-*'
call_end S
