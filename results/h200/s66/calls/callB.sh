#!/usr/bin/env bash
# Session 66, call B (one Hopper GPU; issue 13): call A's pattern on the other rows behind. (1) the portable flash's
# backward (FB_FLASH_BWD's live words as variants) at the d = 64 N = 16384 non-causal backward, the row behind
# FlashAttention-2 (0.991-0.997 in session 64), beside d = 64 N = 8192 and d = 128 N = 16384; (2) flash-sm90's
# backward launch settings (persistence, query tail, PDL, pre-pass, head split) at the d = 128 N = 1024 / 2048 / 4096
# non-causal backwards (N = 2048: 0.993-0.996 against torch-cudnn in session 64). A null variant in each (the
# default's own word). Two processes each, the variants named in opposite orders; scripts/paired.py pairs them.
set -uo pipefail
export DEADLINE=${DEADLINE:-580}
source scripts/call_step.sh
call_begin $OUT/B
mkdir -p $R/spec $R/ab
$fb --version
python3 - "$R/spec" <<'EOF'
import json, sys
d = sys.argv[1]
def spec(name, kernel, **kw):
    s = {"name": name, "dtype": ["bf16"], "causal": [False], "pass": ["bwd"], "warmup": 2, "reps": 16,
         "kernels": [kernel]}
    s.update(kw)
    json.dump(s, open(f"{d}/{name}.json", "w"), indent=1)
spec("p64", "flash", seq=[16384, 8192], batch=[1], heads=[32], head_dim=[64])
spec("p128", "flash", seq=[16384], batch=[1], heads=[16], head_dim=[128])
spec("s128", "flash-sm90", seq=[2048], batch=[8], heads=[16], head_dim=[128], reps=30)
spec("s128b", "flash-sm90", seq=[1024, 4096], batch=[8], heads=[16], head_dim=[128], reps=30)
EOF
P="null=flash:FB_FLASH_BWD=standard lean=flash:FB_FLASH_BWD=lean tail=flash:FB_FLASH_BWD=tail \
notail=flash:FB_FLASH_BWD=notail dqrows=flash:FB_FLASH_BWD=dqrows splitrows=flash:FB_FLASH_BWD=splitrows \
cap8=flash:FB_FLASH_BWD=cap8 desc2=flash:FB_FLASH_BWD=desc2 nodesc2=flash:FB_FLASH_BWD=nodesc2 \
nosubwave=flash:FB_FLASH_BWD=nosubwave"
S="null=flash-sm90:FB_SM90_BWD_PERSIST=default pon=flash-sm90:FB_SM90_BWD_PERSIST=on \
poff=flash-sm90:FB_SM90_BWD_PERSIST=off pdyn=flash-sm90:FB_SM90_BWD_PERSIST=dyn \
pnodyn=flash-sm90:FB_SM90_BWD_PERSIST=nodyn qoff=flash-sm90:FB_SM90_BWD_QTAIL=off \
qnosub=flash-sm90:FB_SM90_BWD_QTAIL=nosubwave pdl=flash-sm90:FB_SM90_BWD_LAUNCHES=pdl \
portable=flash-sm90:FB_SM90_BWD_PREPASS=portable whole=flash-sm90:FB_SM90_BWD_SPLIT=whole"
vflags() { local a=() v; for v in "$@"; do a+=(--variant "$v"); done; echo "${a[@]}"; }
rev() { local a=() v; for v in "$@"; do a=("$v" "${a[@]}"); done; echo "${a[@]}"; }
smi_start
for r in 1 2; do
  if [ $r = 1 ]; then pv=$(vflags $P); sv=$(vflags $S); else pv=$(vflags $(rev $P)); sv=$(vflags $(rev $S)); fi
  for s in p64 p128; do
    step ab-$s-$r 120 $fb run $R/spec/$s.json --interleave $pv --backend cuda --no-ceilings -q -o $R/ab/$s-$r.json
  done
  for s in s128 s128b; do
    step ab-$s-$r 60 $fb run $R/spec/$s.json --interleave $sv --backend cuda --no-ceilings -q -o $R/ab/$s-$r.json
  done
done
smi_stop
ppairs=""; for v in $P; do ppairs="$ppairs --pair ${v%%=*}:flash"; done
spairs=""; for v in $S; do spairs="$spairs --pair ${v%%=*}:flash-sm90"; done
python3 scripts/paired.py $R/ab/p*-1.json $R/ab/p*-2.json $ppairs --json $R/paired-flash.json > $R/paired-flash.log 2>&1
python3 scripts/paired.py $R/ab/s*-1.json $R/ab/s*-2.json $spairs --json $R/paired-sm90.json > $R/paired-sm90.log 2>&1
grep -v "^  b" $R/paired-flash.log | grep -v "^$" | cut -c1-150
grep -v "^  b" $R/paired-sm90.log | grep -v "^$" | cut -c1-150
grep -h "median" $R/paired-flash.log $R/paired-sm90.log | awk '{print $1, $4}' | sort | head -0
call_end B
