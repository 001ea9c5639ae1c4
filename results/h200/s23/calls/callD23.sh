#!/usr/bin/env bash
# Session 23 call D (one H200; issue 13): why call C's rows no config names are behind cuDNN, with host words only
# (main's binaries, carried; no kernel changed). Each setting in its own process, two rounds, every row verified;
# the in-binary cudnn beside the default in each round.
#  1. GQA non-causal d = 128 backward, the head split (FB_SM90_BWD_SPLIT=s forces s subsets; the default's model,
#     kernels/common/head_split.h, takes the largest split within 5% of its best): 24 q / 4 kv (call C: 0.949x /
#     0.921x torch-cudnn at N = 2500 / 5120) at splits 1, 2, 3, 6, and the GQA grid's 32 / 8, 32 / 1, 8 / 1 rows at
#     N = 1k / 4k at splits 1, 2, 4, 8 (a split that does not divide the group runs unsplit).
#     Prediction: the model's choice at 24 / 4 is 6 (one-head units, 80-query steps); 2 or 3 is faster there.
#  2. MHA non-causal d = 128 backward at N = 1536 (call C: 0.950x fp16, 0.972x bf16): q80_kernel() keeps 64 queries
#     a step there (whole tiles of 80 pad 4.2% > kMaxQ80Padding 3%); FB_SM90_BWD128=q80c runs the 80-query kernel.
#     Prediction: q80c 1.00-1.03x the default.
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
c=results/h200/s23/calls
grid='(h32-kv8|h32-kv1|h8-kv1)-n(1024|4096)-d128-bf16-full-bwd'
for r in 1 2; do
  step g6-default-$r 30 $fb run $c/unnamed-gqa.json --filter full-bwd --kernels flash-sm90,cudnn --no-ceilings -q -o $R/g6-default-$r.json
  for s in 1 2 3 6; do
    step g6-s$s-$r 30 env FB_SM90_BWD_SPLIT=$s $fb run $c/unnamed-gqa.json --filter full-bwd --kernels flash-sm90 --no-ceilings -q -o $R/g6-s$s-$r.json
  done
  step grid-default-$r 40 $fb run configs/gqa-h200.json --filter "$grid" --kernels flash-sm90,cudnn --no-ceilings -q -o $R/grid-default-$r.json
  for s in 1 2 4 8; do
    step grid-s$s-$r 40 env FB_SM90_BWD_SPLIT=$s $fb run configs/gqa-h200.json --filter "$grid" --kernels flash-sm90 --no-ceilings -q -o $R/grid-s$s-$r.json
  done
  step mha-default-$r 30 $fb run $c/unnamed-mha.json --filter 'n1536-d128-(bf16|fp16)-full-bwd' --kernels flash-sm90,cudnn --no-ceilings -q -o $R/mha-default-$r.json
  step mha-q80c-$r 30 env FB_SM90_BWD128=q80c $fb run $c/unnamed-mha.json --filter 'n1536-d128-(bf16|fp16)-full-bwd' --kernels flash-sm90 --no-ceilings -q -o $R/mha-q80c-$r.json
done
kill $smi
python3 - $R <<'PY' | tee $R/table.txt
import glob, json, os, re, sys
R = sys.argv[1]
t = {}  # (group, setting, round) -> {(key, kernel): (median ms, verified)}
for f in sorted(glob.glob(os.path.join(R, "*.json"))):
    g, s, r = re.match(r"(\w+)-(\w+)-(\d)\.json", os.path.basename(f)).groups()
    try:
        d = json.load(open(f))
    except ValueError:
        continue
    t[(g, s, r)] = {(x["key"], x["kernel"]): (x["time_ms"]["median"] if x.get("status") == "ok" else None,
                                               x.get("verified")) for x in d["results"]}
print("median ms per setting (round 1 / round 2); ratio = default's time / the setting's (above 1: the setting is faster);"
      " cudnn = in-binary cudnn's time / the default's")
for g, settings in (("g6", ["s1", "s2", "s3", "s6"]), ("grid", ["s1", "s2", "s4", "s8"]), ("mha", ["q80c"])):
    keys = sorted({k for (gg, s, r), v in t.items() if gg == g for (k, kern) in v if kern == "flash-sm90"})
    for k in keys:
        cells = []
        for s in ["default"] + settings:
            vals = []
            for r in "12":
                a = t.get((g, s, r), {}).get((k, "flash-sm90"), (None, None))
                base = t.get((g, "default", r), {}).get((k, "flash-sm90"), (None, None))[0]
                if a[0] is None or a[1] is False or base is None:
                    vals.append("  -  ")
                elif s == "default":
                    cu = t.get((g, "default", r), {}).get((k, "cudnn"), (None, None))[0]
                    vals.append(f"{a[0]:.3f}" + (f" c{cu / a[0]:.3f}" if cu else ""))
                else:
                    vals.append(f"{base / a[0]:.3f}")
            cells.append(f"{s}: " + " / ".join(vals))
        print(f"{k:40} " + "  ".join(cells))
PY
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
