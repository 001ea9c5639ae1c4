#!/usr/bin/env bash
# Session 61, call W (one Hopper GPU; issue 13): flash-sm90 and PyTorch's cuDNN SDPA in ONE process and ONE timed
# loop. Call V read the in-binary cudnn 10-16 us above its single ncu launch in flashbench's loop, as ours reads: the
# tables' ratios set our kernel in flashbench's loop against torch-cudnn in peers.py's. Here peers.py times both:
# flash-sm90 comes in as a callable through the C API (scripts/fb_torch.py, libflashbench_capi.so).
#   check: fb_torch's flash_sm90 and flash on shapes no config names (seq_q != seq_k, GQA, causal, d 64 / 128, bf16
#          and fp16, forward and backward), judged by peers.py's rule against the plain attention
#   GRIDS (default bf16 gqa; or fp16, short, gqa8 below): configs/issue13-h200.json, configs/gqa-h200.json (fp16:
#          configs/issue13-fp16-h200.json),
#          torch-cudnn and flash_sm90 in peers.py's loop (busy hold), round 1 with flash_sm90 after torch-cudnn in
#          each case, round 2 before it; a grid's two rounds, then the next grid's
#   fb-*: the same grids in flashbench's own loop (flash-sm90 and the in-binary cudnn), once, for the loops' gap
#   PEER / OURS (default cudnn / flash_sm90): PyTorch's backend and fb_torch's kernel timed against it; PEER=flash
#          OURS=flash sets the portable flash against FlashAttention-2 (fb-*: flash alone, no in-binary peer). Both
#          may be comma lists of one length, paired in order (PEER=cudnn,flash OURS=flash_sm90,flash: the four
#          kernels in one loop, each pair's ratio; round 2 times both of ours first). A PEER entry fb:NAME is
#          fb_torch's NAME as the peer, a callable in the same loop: PEER=cudnn,fb:cudnn OURS=flash_sm90,flash_sm90
#          times ours against torch-cudnn and against flashbench's own cuDNN graph (on the libcudnn.so.9 already in
#          the process, PyTorch's, by the loader's soname rule)
#          in one loop. $R/pairs.txt names the pairs (PEER:OURS record names) for w_summary.py.
#   FB_LOOP=0: no fb-* steps (the loops' gap was read in session 62: about a minute a grid saved)
#   INTERLEAVE=1: peers.py --interleave (session 64): the case's kernels take their reps in turn, in a Williams design
#          of orders, so that the GPU's drift over a case falls on every kernel alike (round 2 still starts the design
#          from ours: --callables-first); then scripts/paired.py on each grid's two rounds ($R/paired-GRID.json)
# Ours against torch-cudnn, flashbench's cuDNN graph and FlashAttention-2 in one loop, no fb-*: about 350 s on an
# H100 for two grids (session 62's calls W1, X: a pair's round about 30 s):
#   PEER=cudnn,fb:cudnn,flash OURS=flash_sm90,flash_sm90,flash GRIDS="bf16 gqa" FB_LOOP=0 ... callW.sh=480
set -uo pipefail
export DEADLINE=${DEADLINE:-540}
source scripts/call_step.sh
call_begin $OUT/W
grids=${GRIDS:-bf16 gqa}
peer=${PEER:-cudnn} ours=${OURS:-flash_sm90}
IFS=, read -ra peers <<< "$peer"
IFS=, read -ra ourses <<< "$ours"
[ ${#peers[@]} = ${#ourses[@]} ] || { echo "callW: PEER '$peer' and OURS '$ours' differ in length"; exit 2; }
callables=() fb_list=() backends=() pairs=()
add_callable() {  # NAME: once
  [[ " ${callables[*]} " == *" scripts/fb_torch.py:$1 "* ]] || callables+=(--callable scripts/fb_torch.py:$1)
}
for i in "${!ourses[@]}"; do
  o=${ourses[$i]} p=${peers[$i]}
  add_callable "$o"
  [[ " ${fb_list[*]} " == *" \"${o//_/-}\" "* ]] || fb_list+=("\"${o//_/-}\"")
  if [[ $p == fb:* ]]; then
    add_callable "${p#fb:}"
    pairs+=("${p#fb:}:$o")
  else
    [[ " ${backends[*]} " == *" $p "* ]] || backends+=("$p")
    pairs+=("torch-$p:$o")
  fi
done
[ ${#backends[@]} -gt 0 ] || { echo "callW: PEER '$peer' names no PyTorch backend"; exit 2; }
# the in-binary peer where there is one
[[ " ${backends[*]} " == *" cudnn "* ]] && fb_list=("\"cudnn\"" "${fb_list[@]}")
fb_kernels="[$(IFS=,; echo "${fb_list[*]}")]"
backend_list=$(IFS=,; echo "${backends[*]}")
echo "${pairs[*]}" > $R/pairs.txt
# short: the papers' grid's eight forwards at N = 512 / 1024 (session 59's P2 rows); gqa8: the 8-query-head GQA
# forwards of call V (16 x 8 / 8 and 16 x 8 / 1, N = 1024, d = 128, non-causal).
base='"tokens": 16384, "dtype": ["bf16"], "pass": ["fwd"], "warmup": 5, "reps": 20, "seed": 42, "verify": true'
echo "{\"name\": \"w-short\", \"seq\": [512, 1024], \"model_dim\": 2048, \"head_dim\": [64, 128],
 \"causal\": [false, true], \"kernels\": [\"flash-sm90\"], $base}" > $R/short.json
echo "{\"name\": \"w-gqa8\", \"seq\": [1024], \"heads\": [8], \"kv_heads\": [8, 1], \"head_dim\": [128],
 \"causal\": [false], \"kernels\": [\"flash-sm90\"], $base}" > $R/gqa8.json
declare -A cfg=([bf16]=configs/issue13-h200.json [fp16]=configs/issue13-fp16-h200.json [gqa]=configs/gqa-h200.json
                [short]=$R/short.json
                [gqa8]=$R/gqa8.json)
echo "{\"name\": \"w-check\", \"seq_q\": [384], \"seq_k\": [640], \"batch\": [2], \"heads\": [6], \"kv_heads\": [2, 6],
 \"head_dim\": [64, 128], \"dtype\": [\"bf16\", \"fp16\"], \"causal\": [false, true], \"pass\": [\"fwd\", \"bwd\"],
 \"kernels\": [\"flash-sm90\"], \"warmup\": 1, \"reps\": 2, \"seed\": 7, \"verify\": true}" > $R/check.json
python3 -c 'import sys; sys.path.insert(0, "scripts"); import fb_torch
print(fb_torch.library_path(), fb_torch.kernels())' 2>&1 | tee $R/kernels.txt
step check 60 python3 scripts/peers.py $R/check.json --callable scripts/fb_torch.py:flash_sm90 \
  --callable scripts/fb_torch.py:flash -o $R/check-results.json
interleave=()
[ "${INTERLEAVE:-0}" = 1 ] && interleave=(--interleave)
smi_start
for g in $grids; do
  for r in 1 2; do
    order=()
    [ $r = 2 ] && order=(--callables-first)
    step peers-$g-$r $((70 * ${#peers[@]})) python3 scripts/peers.py ${cfg[$g]} --backends $backend_list \
      "${callables[@]}" --busy-hold "${order[@]}" ${interleave[@]+"${interleave[@]}"} -o $R/peers-$g-$r.json
  done
done
for g in $grids; do
  [ "${FB_LOOP:-1}" = 0 ] && break
  python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s["name"] += "-w"
s["kernels"] = json.loads(sys.argv[3]); json.dump(s, open(sys.argv[2], "w"))' \
    ${cfg[$g]} $R/fb-$g.spec.json "$fb_kernels"
  step fb-$g 80 $fb run $R/fb-$g.spec.json -q -o $R/fb-$g.json
done
smi_stop
python3 - $R "${pairs[@]}" <<'PY'
import glob, json, math, sys
R = sys.argv[1]
pairs = [tuple(p.split(":")) for p in sys.argv[2:]]
def load(path):
    try:
        return json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        return []
chk = load(R + "/check-results.json")
print("check:", len(chk), "records,", sum(1 for r in chk if r.get("verified") is True), "verified; not:",
      [r["key"] + " " + r["kernel"] + " " + r["status"] for r in chk if r.get("verified") is not True][:6])
for f in sorted(glob.glob(R + "/peers-*-[0-9].json")):
    rows = {}
    for r in load(f):
        t = r.get("time_ms")
        if t:
            rows.setdefault(r["key"], {})[r["kernel"]] = t["median"]
    for peer, ours in pairs:
        ratios = [k[peer] / k[ours] for k in rows.values() if peer in k and ours in k]
        if ratios:
            g = math.exp(sum(map(math.log, ratios)) / len(ratios))
            print(f"{f.split('/')[-1]}: {peer}/{ours} over {len(ratios)} cases: {min(ratios):.3f}-"
                  f"{max(ratios):.3f}, geomean {g:.3f}, >= 1.0 in {sum(x >= 1 for x in ratios)}")
PY
if [ ${#interleave[@]} -gt 0 ]; then  # rep by rep (scripts/paired.py): each pair's rows with a 95% interval
  paired_args=()
  for p in "${pairs[@]}"; do paired_args+=(--pair "${p#*:}:${p%%:*}"); done
  for g in $grids; do
    python3 scripts/paired.py $R/peers-$g-1.json $R/peers-$g-2.json "${paired_args[@]}" --json $R/paired-$g.json \
      | grep ": ahead" | sed "s/^/paired $g: /"
  done
fi
call_end W
