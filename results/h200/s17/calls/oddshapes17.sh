# Shapes no config in the repo names (issue 13's "we will also check"; new ones each session): verify every tiled
# kernel, forward and backward, beside naive against fp64. Session 17: lengths just past / short of a tile (129, 4095,
# 1919), a decode-like seq_q = 3 against 5000 keys, GQA 12 / 3 and MQA, sharp softmaxes (--input-scale), fp32.
R=$1; fb=$BUILD/flashbench
$fb verify --seq 4095 --batch 1 --heads 6 --dim 64 --dtype bf16 --causal both --pass all --input-scale 5 -q -o $R/odd-4095-h6-d64-x5.json | tail -2
$fb verify --seq 129 --batch 7 --heads 12 --kv-heads 3 --dim 64 --dtype fp16 --causal both --pass all -q -o $R/odd-129-gqa12x3-d64-fp16.json | tail -2
$fb verify --seq 1919 --batch 2 --heads 11 --dim 128 --dtype bf16 --causal both --pass all --input-scale 6 -q -o $R/odd-1919-h11-d128-x6.json | tail -2
$fb verify --seq-q 3 --seq-k 5000 --batch 4 --heads 16 --kv-heads 1 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-3x5000-mqa-d128.json | tail -2
$fb verify --seq-q 3001 --seq-k 1001 --batch 2 --heads 8 --kv-heads 2 --dim 128 --dtype fp16 --causal both --pass all -q -o $R/odd-3001x1001-gqa8x2-d128-fp16.json | tail -2
$fb verify --seq 2049 --batch 2 --heads 3 --dim 64 --dtype fp32 --causal both --pass all -q -o $R/odd-2049-h3-d64-fp32.json | tail -2
