#!/usr/bin/env bash
# Session 22 call E (one H200; issue 13 diagnostic, nothing shipped by it): which kernels PyTorch's cuDNN SDPA backward
# launches, and for how long, on b16-h16-kv16-n1024-d128-bf16-full-bwd (torch-cudnn 1.004x flash-sm90 there in F20,
# while call D found flash-sm90's backward ahead of the in-binary cuDNN on the same row): ncu --clock-control none,
# every launch of scripts/peers.py's first passes (the name filter keeps attention kernels), then the same row's
# timing by peers.py alone.
R=$OUT/E; mkdir -p $R
set -uo pipefail
t0=$SECONDS
spec=results/h200/s22/calls/peer-n1k.json
timeout -k 3 150 ncu --clock-control none --csv --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second \
  -k regex:'sdpa|cudnn|flash|fmha|dot_do|convert|softmax|attention' -c 16 \
  python3 scripts/peers.py $spec --backends cudnn -o $R/ncu-peers.json > $R/ncu-torch-cudnn.log 2>&1
echo "== ncu rc=$? (t=$((SECONDS - t0)))"
grep -E '"gpu__time|"sm__cycles' $R/ncu-torch-cudnn.log | awk -F'","' '{printf "%-4s %-70s %-40s %s\n", $1, substr($5,1,70), $(NF-2), $NF}' | sed 's/"//g' | head -40
timeout -k 3 90 python3 scripts/peers.py $spec --backends cudnn -o $R/peers.json > $R/peers.log 2>&1
echo "== peers rc=$? (t=$((SECONDS - t0)))"; tail -3 $R/peers.log
tar czf $OUT/E.tgz -C $OUT E && rm -rf $R; echo "done t=$((SECONDS-t0))"
