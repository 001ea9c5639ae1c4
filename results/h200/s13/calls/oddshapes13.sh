# Shapes no config in the repo names (issue 13's "we will also check"; new ones each session): verify every tiled
# kernel, forward and backward, beside naive against fp64.
R=$1; fb=$BUILD/flashbench
$fb verify --seq-q 640 --seq-k 1664 --batch 3 --heads 10 --kv-heads 5 --dim 64 --dtype bf16 --causal both --pass all -q -o $R/odd-640x1664-gqa-d64.json | tail -2
$fb verify --seq 4500 --batch 1 --heads 8 --kv-heads 2 --dim 128 --dtype fp16 --causal both --pass all -q -o $R/odd-4500-gqa-d128-fp16.json | tail -2
$fb verify --seq-q 2500 --seq-k 700 --batch 2 --heads 4 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-2500x700-d128.json | tail -2
$fb verify --seq 1333 --batch 2 --heads 6 --kv-heads 2 --dim 64 --dtype fp32 --causal both --pass all -q -o $R/odd-1333-gqa-fp32.json | tail -2
