# Shapes no config in the repo names (issue 13's "we will also check"; new ones each session): verify every tiled
# kernel, forward and backward, beside naive against fp64.
R=$1; fb=$BUILD/flashbench
$fb verify --seq 2304 --batch 2 --heads 24 --kv-heads 6 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-2304-gqa24x6-d128.json | tail -2
$fb verify --seq-q 1100 --seq-k 2900 --batch 2 --heads 6 --dim 64 --dtype fp16 --causal both --pass all -q -o $R/odd-1100x2900-d64-fp16.json | tail -2
$fb verify --seq-q 5000 --seq-k 300 --batch 1 --heads 16 --kv-heads 1 --dim 64 --dtype bf16 --causal both --pass all -q -o $R/odd-5000x300-mqa-d64.json | tail -2
$fb verify --seq 777 --batch 3 --heads 8 --kv-heads 2 --dim 128 --dtype fp32 --causal both --pass all -q -o $R/odd-777-gqa-d128-fp32.json | tail -2
