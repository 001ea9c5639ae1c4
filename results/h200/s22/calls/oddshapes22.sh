# Shapes no config in the repo names (issue 13's and 15's "we will also check"; new ones each session): verify every
# tiled kernel, forward and backward, beside naive against fp64. Session 22 (the d = 128 non-causal fp32 backward now
# runs in plane-major block order after a fused pre-pass): fp32 d = 128 at 1234 x 2345 with GQA 9 / 3 (partial query
# tiles and key blocks, planes of 37 key blocks), 3 queries on 4444 keys (one tile a plane, 70 key blocks), MQA 5 / 1 at
# 1777 with input scale 4, 64 x 64 b5 h3 (one block a plane); fp32 d = 64 at 999 x 1501 GQA 4 / 2; 16-bit: bf16 d = 64
# N = 3100 b2 h5 at scale 2, fp16 d = 128 GQA 10 / 2 at 900 x 1300.
R=$1; fb=$BUILD/flashbench
$fb verify --seq-q 1234 --seq-k 2345 --batch 2 --heads 9 --kv-heads 3 --dim 128 --dtype fp32 --causal both --pass all -q -o $R/odd-1234x2345-gqa9x3-d128-fp32.json | tail -2
$fb verify --seq-q 3 --seq-k 4444 --batch 3 --heads 4 --dim 128 --dtype fp32 --causal no --pass all -q -o $R/odd-3x4444-b3h4-d128-fp32.json | tail -2
$fb verify --seq 1777 --batch 1 --heads 5 --kv-heads 1 --dim 128 --dtype fp32 --causal no --pass all --input-scale 4 -q -o $R/odd-1777-mqa5-d128-fp32-x4.json | tail -2
$fb verify --seq 64 --batch 5 --heads 3 --dim 128 --dtype fp32 --causal both --pass all -q -o $R/odd-64-b5h3-d128-fp32.json | tail -2
$fb verify --seq-q 999 --seq-k 1501 --batch 2 --heads 4 --kv-heads 2 --dim 64 --dtype fp32 --causal both --pass all -q -o $R/odd-999x1501-gqa4x2-d64-fp32.json | tail -2
$fb verify --seq 3100 --batch 2 --heads 5 --dim 64 --dtype bf16 --causal both --pass all --input-scale 2 -q -o $R/odd-3100-b2h5-d64-bf16-x2.json | tail -2
$fb verify --seq-q 900 --seq-k 1300 --batch 1 --heads 10 --kv-heads 2 --dim 128 --dtype fp16 --causal both --pass all -q -o $R/odd-900x1300-gqa10x2-d128-fp16.json | tail -2
