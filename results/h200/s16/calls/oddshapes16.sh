# Shapes no config in the repo names (issue 13's "we will also check"; new ones each session): verify every tiled
# kernel, forward and backward, beside naive against fp64. Session 16: sharp softmaxes (--input-scale) where a
# lazily moved row maximum would show (lazyres), GQA/MQA with seq_q != seq_k, odd lengths at d = 64 / 128, fp32.
R=$1; fb=$BUILD/flashbench
$fb verify --seq 2500 --batch 3 --heads 9 --dim 64 --dtype bf16 --causal both --pass all --input-scale 4 -q -o $R/odd-2500-h9-d64-x4.json | tail -2
$fb verify --seq 6000 --batch 1 --heads 10 --kv-heads 5 --dim 64 --dtype fp16 --causal both --pass all --input-scale 8 -q -o $R/odd-6000-gqa10x5-d64-fp16-x8.json | tail -2
$fb verify --seq 1500 --batch 4 --heads 7 --dim 128 --dtype bf16 --causal both --pass all --input-scale 3 -q -o $R/odd-1500-h7-d128-x3.json | tail -2
$fb verify --seq-q 777 --seq-k 3333 --batch 2 --heads 8 --kv-heads 1 --dim 128 --dtype fp16 --causal both --pass all -q -o $R/odd-777x3333-mqa-d128-fp16.json | tail -2
$fb verify --seq-q 2100 --seq-k 650 --batch 3 --heads 6 --dim 64 --dtype bf16 --causal both --pass all -q -o $R/odd-2100x650-d64.json | tail -2
$fb verify --seq 1234 --batch 3 --heads 5 --dim 128 --dtype fp32 --causal both --pass all -q -o $R/odd-1234-h5-d128-fp32.json | tail -2
