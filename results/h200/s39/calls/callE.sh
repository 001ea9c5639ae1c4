#!/usr/bin/env bash
# Session 39, call E (one H200; issue 13), run inline after call D on the same warm machine and binaries (commit.txt):
# call D's held-out row 6 x 64 q / 4 kv heads, N = 6000, d = 128, bf16, causal backward read 0.847x torch-cudnn; its grid
# of 1128 blocks (47 key tiles x 24 K/V planes) is past the head split's gate (8 blocks an SM), so no split is modelled.
# Three rounds of the default and FB_SM90_BWD_SPLIT = 4 / 8 / 16 forced, flash-sm90 alone, that row only; torch-cudnn
# once. (A first run of the same, two rounds with 2 subsets too, returned only 8 of its files: not kept.)
R=$OUT/E; rm -rf $R; mkdir -p $R; tar xJf out/b.txz; src=$(cat out/srcdir.txt); [ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }; fb=$src/build-dev/flashbench; cat out/commit.txt > $R/commit.txt; s=results/h200/s39/calls/held39-b6-h64-kv4-n6000-d128.json; for r in 1 2 3; do for v in def 4 8 16; do w=; [ $v != def ] && w=$v; FB_SM90_BWD_SPLIT=$w timeout 40 $fb run $s --kernels flash-sm90 --filter causal-bwd --no-ceilings -q -o $R/$v-$r.json > $R/$v-$r.log 2>&1; echo "$v-$r rc=$?"; done; done; timeout 40 python3 scripts/peers.py $s --backends cudnn -o $R/peers.json > $R/peers.log 2>&1; python3 - $R <<'PY' | tee $R/table.txt
import json,sys,glob,os
R=sys.argv[1]
pr=[r for r in json.load(open(R+'/peers.json'))['results'] if 'causal-bwd' in r['key'] and r.get('status')=='ok']
p=pr[0]['time_ms']['median'] if pr else float('nan')
print('torch-cudnn causal bwd median ms %.3f' % p)
for f in sorted(glob.glob(R+'/*-[123].json')):
    for r in json.load(open(f))['results']:
        if r['kernel']=='flash-sm90' and 'causal-bwd' in r['key']:
            print(os.path.basename(f), r['status'], r.get('verified'), round(r['time_ms']['median'],3), 'cudnn/ours %.3f'%(p/r['time_ms']['median']))
PY
find $R -size 0 -delete; tar czf $OUT/E.tgz -C $OUT E && rm -rf $R
