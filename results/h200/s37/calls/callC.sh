#!/usr/bin/env bash
# Session 37, call C (one H200; issue 13; a screen, nothing ships from it): the binaries of commit.txt. Three
# interleaved rounds of the rows call B had behind a peer, each beside its peer every round: flash-sm90's d = 64
# non-causal MHA backward at N = 4096 (8 and 32 heads) under the default and its probe words; flash's causal d = 64 GQA
# backward at 6 x 20 q / 4 kv N = 2600 under the default, its backward probe words and forced head splits; flash's
# d = 128 fp16 non-causal forward at 7 x 16 / 4 N = 4600 (the default only; session 36's call H screened its words).
R=$OUT/C; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-400}
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
c=results/h200/s37/calls
sm90v="def FB_SM90_BWD_SHARE=off FB_SM90_BWD64=nopmajor64 FB_SM90_BWD64=direct FB_SM90_BWD_PERSIST=off"
flv="def FB_FLASH_BWD=lean FB_FLASH_BWD=tail FB_FLASH_BWD=notail FB_FLASH_BWD=dqrows FB_FLASH_BWD=splitrows FB_FLASH_BWD_SPLIT=1 FB_FLASH_BWD_SPLIT=5"
for r in 1 2 3; do
  for s in scr-sm90-b4-h8-kv8-n4096-d64 scr-sm90-b4-h32-kv32-n4096-d64; do
    vs=$sm90v; [ $r = 2 ] && vs=$(echo $vs | tr ' ' '\n' | tac | tr '\n' ' ')
    for v in $vs; do w=; [ $v != def ] && w=$v; tag=$(echo $v | tr '=' '-')
      step $tag-$s-$r 30 env $w $fb run $c/$s.json --no-ceilings -q -o $R/ab/$tag-$s-$r.json; done
    step peers-$s-$r 25 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/ab/peers-$s-$r.json
  done
  s=scr-flash-b6-h20-kv4-n2600-d64
  vs=$flv; [ $r = 2 ] && vs=$(echo $vs | tr ' ' '\n' | tac | tr '\n' ' ')
  for v in $vs; do w=; [ $v != def ] && w=$v; tag=$(echo $v | tr '=' '-')
    step $tag-$s-$r 30 env $w $fb run $c/$s.json --no-ceilings -q -o $R/ab/$tag-$s-$r.json; done
  step peers-$s-$r 25 python3 scripts/peers.py $c/$s.json --backends flash -o $R/ab/peers-$s-$r.json
  s=scr-flash-b7-h16-kv4-n4600-d128
  step def-$s-$r 30 $fb run $c/$s.json --no-ceilings -q -o $R/ab/def-$s-$r.json
  step peers-$s-$r 25 python3 scripts/peers.py $c/$s.json --backends flash -o $R/ab/peers-$s-$r.json
done
python3 - $R/ab > $R/table.txt <<'PY'
import glob, json, math, os, re, sys
d = sys.argv[1]
def t(p):
    try: rs = json.load(open(p))["results"]
    except (OSError, ValueError, KeyError): return None
    for r in rs:
        if r.get("status") == "ok" and (r.get("kernel", "").startswith("torch") or r.get("verified") is True):
            return r["time_ms"]["median"]
    return None
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
print("peer time / ours per round (above 1: ours faster) and geomean; variants by the word that set them")
for s in sorted({re.sub(r"^peers-|-\d\.json$", "", os.path.basename(f)) for f in glob.glob(os.path.join(d, "peers-*.json"))}):
    print(s)
    tags = sorted({re.sub(rf"-{re.escape(s)}-\d\.json$", "", os.path.basename(f)) for f in glob.glob(os.path.join(d, f"*-{s}-*.json"))} - {"peers"})
    for tag in ["def"] + [x for x in tags if x != "def"]:
        rs = []
        for r in (1, 2, 3):
            a, p = t(os.path.join(d, f"{tag}-{s}-{r}.json")), t(os.path.join(d, f"peers-{s}-{r}.json"))
            if a and p: rs.append(p / a)
        print(f"  {tag:28s} " + " ".join(f"{x:.3f}" for x in rs) + f"   gm {gm(rs):.3f}")
PY
cat $R/table.txt
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
