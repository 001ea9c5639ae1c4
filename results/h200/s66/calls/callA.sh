#!/usr/bin/env bash
# Session 66, call A (one Hopper GPU; issue 13): kernel settings read per variant (kernels/common/settings.h) and
# `flashbench run --variant`, so that an A/B of probe words runs in one process, its reps interleaved.
# (0) binaries of the commit in commit.txt (built here, carried: scripts/call_pack.sh); (1) the GPU tests of variants
# and then the whole GPU test binary (the readers of every probe setting changed); verify --seq 1000, every pass;
# (2) the A/B: flash-sm90 beside itself under the live forward probe words on the d = 64 rows behind torch-cudnn
# (N = 512 causal, both dtypes) and rows around them, a null variant (a word the causal launch ignores) beside them;
# the d = 128 N = 2048 non-causal backward beside its backward words, a null one too. Two processes each, the
# variants named in opposite orders. scripts/paired.py pairs each variant's reps with the default's.
set -uo pipefail
export DEADLINE=${DEADLINE:-580}
source scripts/call_step.sh
call_begin $OUT/A
mkdir -p $R/spec $R/ab
$fb --version
step gpu-variant 60 $gt "[variant]"
tail -2 $R/gpu-variant.log
python3 - "$R/spec" <<'EOF'
import json, sys
d = sys.argv[1]
def spec(name, **kw):
    s = {"name": name, "dtype": ["bf16"], "causal": [True], "pass": ["fwd"], "head_dim": [64], "warmup": 2,
         "reps": 60, "kernels": ["flash-sm90"]}
    s.update(kw)
    json.dump(s, open(f"{d}/{name}.json", "w"), indent=1)
spec("f512c", seq=[512], batch=[32], heads=[32], dtype=["bf16", "fp16"])
spec("f1kc", seq=[1024], batch=[16], heads=[32])
spec("f512n", seq=[512], batch=[32], heads=[32], causal=[False])
spec("fheld", seq_q=[700], seq_k=[700], batch=[3], heads=[20], kv_heads=[4])
spec("fheld2", seq=[1111], batch=[6], heads=[16], kv_heads=[2])
spec("b2k", seq=[2048], batch=[8], heads=[16], head_dim=[128], causal=[False], **{"pass": ["bwd"]}, reps=30)
EOF
FWD="null=flash-sm90:FB_SM90_FWD_PROBE=tailsplit k0rec=flash-sm90:FB_SM90_FWD_PROBE=k0rec \
early=flash-sm90:FB_SM90_FWD_PROBE=early l2hint=flash-sm90:FB_SM90_FWD_PROBE=l2hint \
eager=flash-sm90:FB_SM90_FWD_PROBE=eager oneq=flash-sm90:FB_SM90_FWD_PROBE=oneq \
static=flash-sm90:FB_SM90_FWD_PROBE=static nolazyres=flash-sm90:FB_SM90_FWD_PROBE=nolazyres \
nofastlse=flash-sm90:FB_SM90_FWD_PROBE=nofastlse noqalign=flash-sm90:FB_SM90_FWD_PROBE=noqalign"
BWD="null=flash-sm90:FB_SM90_BWD128=pmajor nopmajor=flash-sm90:FB_SM90_BWD128=nopmajor \
q64=flash-sm90:FB_SM90_BWD128=q64 unit1h=flash-sm90:FB_SM90_BWD128=unit1h direct=flash-sm90:FB_SM90_BWD128=direct \
poly=flash-sm90:FB_SM90_BWD128=poly"
vflags() { local a=() v; for v in "$@"; do a+=(--variant "$v"); done; echo "${a[@]}"; }
rev() { local a=() v; for v in "$@"; do a=("$v" "${a[@]}"); done; echo "${a[@]}"; }
smi_start
for r in 1 2; do
  if [ $r = 1 ]; then fv=$(vflags $FWD); bv=$(vflags $BWD); else fv=$(vflags $(rev $FWD)); bv=$(vflags $(rev $BWD)); fi
  for s in f512c f1kc f512n fheld fheld2; do
    step ab-$s-$r 60 $fb run $R/spec/$s.json --interleave $fv --backend cuda --no-ceilings -q -o $R/ab/$s-$r.json
  done
  step ab-b2k-$r 60 $fb run $R/spec/b2k.json --interleave $bv --backend cuda --no-ceilings -q -o $R/ab/b2k-$r.json
done
smi_stop
fpairs=""; for v in $FWD; do fpairs="$fpairs --pair ${v%%=*}:flash-sm90"; done
bpairs=""; for v in $BWD; do bpairs="$bpairs --pair ${v%%=*}:flash-sm90"; done
python3 scripts/paired.py $R/ab/f*-1.json $R/ab/f*-2.json $fpairs --json $R/paired-fwd.json > $R/paired-fwd.log 2>&1
python3 scripts/paired.py $R/ab/b2k-1.json $R/ab/b2k-2.json $bpairs --json $R/paired-bwd.json > $R/paired-bwd.log 2>&1
step verify 90 $fb verify --seq 1000 --pass all -q --backend cuda
tail -2 $R/verify.log
step gpu-all 200 $gt
tail -2 $R/gpu-all.log
grep -E "^(b|  )" $R/paired-fwd.log | head -80
cat $R/paired-bwd.log | tail -20
call_end A
