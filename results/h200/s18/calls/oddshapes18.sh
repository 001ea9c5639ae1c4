# Shapes no config in the repo names (issue 13's "we will also check"; new ones each session): verify every tiled
# kernel, forward and backward, beside naive against fp64. Session 18 (pairq, the plane-major order, is the d = 128
# non-causal default): odd query-tile counts and planes (seq 1153 over 9 x 5 planes, 383, 2817), GQA 20 / 4 and
# 6 / 1, seq_q != seq_k both ways, a sharp softmax (--input-scale 4), fp16 and fp32.
R=$1; fb=$BUILD/flashbench
$fb verify --seq 1153 --batch 9 --heads 5 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-1153-b9h5-d128.json | tail -2
$fb verify --seq 383 --batch 5 --heads 20 --kv-heads 4 --dim 128 --dtype fp16 --causal both --pass all -q -o $R/odd-383-gqa20x4-d128-fp16.json | tail -2
$fb verify --seq 2817 --batch 1 --heads 7 --dim 128 --dtype bf16 --causal both --pass all --input-scale 4 -q -o $R/odd-2817-h7-d128-x4.json | tail -2
$fb verify --seq-q 700 --seq-k 2300 --batch 3 --heads 6 --kv-heads 1 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-700x2300-mqa6-d128.json | tail -2
$fb verify --seq-q 1800 --seq-k 257 --batch 2 --heads 10 --kv-heads 5 --dim 64 --dtype fp16 --causal both --pass all -q -o $R/odd-1800x257-gqa10x5-d64-fp16.json | tail -2
$fb verify --seq 1537 --batch 2 --heads 3 --dim 128 --dtype fp32 --causal both --pass all -q -o $R/odd-1537-h3-d128-fp32.json | tail -2
