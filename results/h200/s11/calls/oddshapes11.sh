# Shapes no config in the repo names (issue 13's "we will also check"; new ones each session): verify every tiled
# kernel, forward and backward, beside naive against fp64.
R=$1; fb=$BUILD/flashbench
$fb verify --seq-q 1111 --seq-k 2900 --batch 2 --heads 10 --kv-heads 5 --dim 64 --dtype bf16 --causal both --pass all -q -o $R/odd-1111x2900-d64.json | tail -2
$fb verify --seq 1700 --batch 1 --heads 8 --kv-heads 1 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-1700-mqa-d128.json | tail -2
$fb verify --seq 4097 --batch 1 --heads 4 --dim 128 --dtype fp16 --causal both --pass all -q -o $R/odd-4097-d128-fp16.json | tail -2
$fb verify --seq-q 2300 --seq-k 613 --batch 1 --heads 4 --kv-heads 2 --dim 64 --dtype fp32 --causal both --pass all -q -o $R/odd-2300x613-fp32.json | tail -2
