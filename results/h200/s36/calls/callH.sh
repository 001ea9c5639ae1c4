#!/usr/bin/env bash
# Session 36, call H (one H200; issue 13): a screen, no rule. Call G's loss (flash's d = 128 non-causal forward at 2 x
# 36 q / 9 kv heads, N = 9000, bf16: 0.995x FlashAttention-2 over three rounds) under the forward's probe words, two
# rounds in rotated order beside the default, flash only, verified; the same binaries (commit.txt). A lead for the
# next session, not a change.
R=$OUT/H; mkdir -p $R; export DEADLINE=${DEADLINE:-200}
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
s=results/h200/s36/calls/unnamed36-b2-h36-kv9-n9000-d128.json
words="def nokvtail nopdltail l2order pf nopf persist epi,pro nokpipe novlate"
for r in 1 2; do
  ws=$words; [ $r = 2 ] && ws=$(echo $words | tr ' ' '\n' | tac | tr '\n' ' ')
  for w in $ws; do
    e=$w; [ $w = def ] && e=
    step $w-$r 20 env FB_FLASH_FWD_PROBE=$e $fb run $s --kernels flash --filter full-fwd --no-ceilings -q \
      -o $R/$w-$r.json
  done
done
python3 - $R "$words" > $R/table.txt <<'PY'
import json, math, os, sys
R, words = sys.argv[1], sys.argv[2].split()
def t(w, r):
    try:
        rs = json.load(open(os.path.join(R, f"{w}-{r}.json")))["results"]
        return next(x["time_ms"]["median"] for x in rs if x["status"] == "ok" and x.get("verified") is True)
    except Exception:
        return None
print("flash, b2-h36-kv9-n9000-d128-bf16-full-fwd: median ms by round, default / word (above 1: the word faster)")
d = [t("def", r) for r in (1, 2)]
for w in words:
    x = [t(w, r) for r in (1, 2)]
    rat = [a / b for a, b in zip(d, x) if a and b]
    gm = math.exp(sum(map(math.log, rat)) / len(rat)) if rat else float("nan")
    print(f"{w:10s} {x}  {gm:.3f}")
PY
cat $R/table.txt
tar czf $OUT/H.tgz -C $OUT H && rm -rf $R; echo "done t=$((SECONDS-t0))"
