# Shapes no config in the repo names (issue 13's "we will also check"; new ones each session): verify every tiled
# kernel, forward and backward, beside naive against fp64. Session 20 (`shortstatic`, the static round-robin, is the
# d = 128 non-causal default at <= 4 K/V tiles a work tile): N = 448 and 300 x 500 on it (partial last tiles, 9 and 5
# heads), GQA 10 / 5 fp16 at seq_q != seq_k just over it (600 x 520: 5 K/V tiles, the counter), d = 64 fp16 at 2050,
# fp32 forward and backward at 1234 (d = 64) and MQA 5 / 1 at 777 (d = 128), a sharp softmax (--input-scale 4).
R=$1; fb=$BUILD/flashbench
$fb verify --seq 448 --batch 7 --heads 9 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-448-b7h9-d128.json | tail -2
$fb verify --seq-q 300 --seq-k 500 --batch 6 --heads 5 --dim 128 --dtype fp16 --causal both --pass all --input-scale 4 -q -o $R/odd-300x500-h5-d128-fp16-x4.json | tail -2
$fb verify --seq-q 600 --seq-k 520 --batch 3 --heads 10 --kv-heads 5 --dim 128 --dtype fp16 --causal both --pass all -q -o $R/odd-600x520-gqa10x5-d128-fp16.json | tail -2
$fb verify --seq 2050 --batch 2 --heads 6 --dim 64 --dtype fp16 --causal both --pass all -q -o $R/odd-2050-h6-d64-fp16.json | tail -2
$fb verify --seq 1234 --batch 2 --heads 3 --dim 64 --dtype fp32 --causal both --pass all -q -o $R/odd-1234-h3-d64-fp32.json | tail -2
$fb verify --seq 777 --batch 1 --heads 5 --kv-heads 1 --dim 128 --dtype fp32 --causal both --pass all -q -o $R/odd-777-mqa5-d128-fp32.json | tail -2
