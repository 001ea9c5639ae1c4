#!/usr/bin/env bash
# Session 71, call M (one Hopper GPU; issue 13): session 71's causal masks (c20d618: each score's column a literal
# against its row's limit, no column sums; 29 SASS instructions fewer a masked forward step, 24-208 a backward kernel)
# against the build before them, two builds of flash-sm90 in one peers.py loop: flash_sm90 (this commit) and
# flash_sm90_base (BASE_BUILD's library, scripts/fb_torch.py), reps interleaved, the bf16 and fp16 grids' 48 rows each
# (forward and backward), two rounds (the second with the base first); paired.py: flash_sm90 against flash_sm90_base
# (above 1.0: this commit faster); first same_bits.py (both builds' outputs bit for bit). Rule
# (results/h200/s71/calls/ruleM.py, written before the call): the causal rows are the rows the change reaches, the
# non-causal ones (no grid shape masks there) controls. About 200 s on an H100.
#   BASE_BUILD=/path/to/base/build bash scripts/call_pack.sh   (a build of 2cd2855, configured as build-dev is)
#   bash results/h200/s53/calls/chain.sh out results/h200/s71/calls/callM.sh=420
set -uo pipefail
export DEADLINE=${DEADLINE:-400}
source scripts/call_step.sh
call_begin $OUT/M
if [ -z "${FB_CAPI_LIB_BASE:-}" ]; then
  echo "callM: no second build packed (BASE_BUILD=... scripts/call_pack.sh)" | tee $R/rule.txt
  call_end M
  exit 2
fi
echo "callM: this build $(cat $R/commit.txt | cut -c1-12), base $(cat $R/base_commit.txt)"
# The same bits from both builds (the rewrite's claim), on shapes no config names.
step same-bits 90 python3 results/h200/s71/calls/same_bits.py
tail -1 $R/same-bits.log
smi_start
for g in ${GRIDS:-bf16 fp16}; do
  src=configs/issue13-h200.json
  [ $g = fp16 ] && src=configs/issue13-fp16-h200.json
  spec_for $src $R/$g.json flash-sm90
  for r in 1 2; do
    order=(--callable scripts/fb_torch.py:flash_sm90 --callable scripts/fb_torch.py:flash_sm90_base)
    [ $r = 2 ] && order=(--callable scripts/fb_torch.py:flash_sm90_base --callable scripts/fb_torch.py:flash_sm90)
    step ab-$g-$r 95 python3 scripts/peers.py $R/$g.json "${order[@]}" --busy-hold --interleave -o $R/ab-$g-$r.json
  done
  python3 scripts/paired.py $R/ab-$g-1.json $R/ab-$g-2.json --pair flash_sm90:flash_sm90_base \
    --json $R/paired-$g.json > $R/paired-$g.log
  grep -E ": ahead [0-9]+, level" $R/paired-$g.log | sed "s/^/$g: /"
done
smi_stop
python3 results/h200/s71/calls/ruleM.py $R > $R/rule.txt 2>&1
cat $R/rule.txt
call_end M
