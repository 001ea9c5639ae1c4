#!/usr/bin/env bash
# Session 25 call A (one H200; issue 13). Binaries built on the lead's machine for sm_90a and carried (out/b.txz,
# commit in commit.txt: main 9b74a43 + the `qreg` probe, uncommitted until measured).
#  1. GPU tests "[sm90fwd],[sched]" under FB_SM90_FWD_PROBE=qreg (the default kernels' PTX is identical to main's).
#  2. A/B, three interleaved rounds (order flipped each round): qreg-grid.json (issue 13's d = 128 forward rows N
#     512-4k, bf16 and fp16, causal and not) and qreg-odd.json (GQA 5:1 and 8:1 at batch 5, N 1536 / 1900 / 3000),
#     the default against qreg. Rule (written before the call): qreg becomes d = 128's default if default / qreg
#     >= 1.010 in geomean over the non-causal grid rows N <= 2k (bf16 and fp16, all rounds) and no row of either spec
#     is below 0.990 in every round; tests pass. Prediction: the consumers' wgmmas read 64 KB of shared memory a K/V
#     step instead of 80 KB; if that energy is a few per cent of the board's at the 692 W cap, the clock rises ~0.5-1.5%
#     and the rows gain 0.5-1.5% (largest at short N, where the d = 128 rows are behind cuDNN), cycles level.
#  3. job-clockqreg.sh: default / qreg alone at N = 1k for ~3 s each, SM clock and power.
#  4. SASS of the bf16 default and qreg kernels (cuobjdump): instruction counts, wgmma waits, no local memory.
#  5. If >= 170 s are left: session 24's prepared call E (../../s24/calls/callE24.sh, the query tail's unit count).
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-570}
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
step tests 150 env FB_SM90_FWD_PROBE=qreg $src/build-dev/tests/flashbench_gpu_tests "[sm90fwd],[sched]"
tail -2 $R/tests.log
for r in 1 2 3; do
  order="def qreg"; [ $((r % 2)) -eq 0 ] && order="qreg def"
  for s in grid odd; do
    for w in $order; do
      if [ $w = def ]; then step $w-$s-$r 60 $fb run $c/qreg-$s.json --no-ceilings -q -o $R/$w-$s-$r.json
      else step $w-$s-$r 60 env FB_SM90_FWD_PROBE=qreg $fb run $c/qreg-$s.json --no-ceilings -q -o $R/$w-$s-$r.json; fi
    done
  done
done
python3 $c/qreg_table.py $R grid odd | tee $R/table.txt
kill $smi
step clock 40 env FB=$fb OUTDIR=$R/clock bash $c/job-clockqreg.sh
cat $R/clock/table.txt 2>/dev/null
if command -v cuobjdump > /dev/null; then
  cuobjdump -sass $fb > $R/all.sass 2>/dev/null
  python3 - $R <<'PY' | tee $R/sass.txt
import re, sys
R = sys.argv[1]
txt = open(f"{R}/all.sass").read()
for opt in ("23", "16407"):
    name = f"flash_sm90_fwd_kernelINS1_9FwdTraitsI13__nv_bfloat16Li128ELi128ELb1ELb1ELi2ELb1ELi2EEELj{opt}E"
    i = txt.find(name)
    if i < 0:
        print(opt, "not found"); continue
    j = txt.find("Function :", i + 10)
    body = txt[i:j if j > 0 else len(txt)]
    open(f"{R}/fwd128-bf16-{opt}.sass", "w").write(body)
    ins = re.findall(r"/\*[0-9a-f]{4,}\*/\s+([^;]*);", body)
    ops = [x.split()[0] if not x.startswith("@") else x.split()[1] for x in ins if x.strip()]
    cnt = lambda p: sum(1 for o in ops if o.startswith(p))
    print(f"kOpt {opt}: {len(ops)} instructions, HGMMA {cnt('HGMMA')}, WARPGROUP.DEPBAR {cnt('WARPGROUP.DEPBAR')}, "
          f"WARPGROUP.ARRIVE {cnt('WARPGROUP.ARRIVE')}, LDSM {cnt('LDSM')}, LDL {cnt('LDL')}, STL {cnt('STL')}")
PY
  rm -f $R/all.sass
fi
if [ "$(left)" -ge 170 ]; then DEADLINE=$(( $(left) - 5 )) bash results/h200/s24/calls/callE24.sh; fi
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
