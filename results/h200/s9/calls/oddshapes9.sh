# Shapes no config in the repo names (issue 13's "we will also check"; new ones each session): verify every tiled
# kernel, forward and backward, beside naive against fp64.
R=$1; fb=$BUILD/flashbench
$fb verify --seq-q 1333 --seq-k 2050 --batch 2 --heads 8 --kv-heads 2 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-1333x2050-d128.json | tail -2
$fb verify --seq 4097 --batch 1 --heads 10 --kv-heads 5 --dim 64 --dtype fp16 --causal both --pass all -q -o $R/odd-4097-d64.json | tail -2
$fb verify --seq 611 --batch 3 --heads 4 --kv-heads 1 --dim 128 --dtype all --causal both --pass all -q -o $R/odd-611-mqa.json | tail -2
$fb verify --seq-q 257 --seq-k 3001 --batch 1 --heads 6 --dim 64 --dtype fp32 --causal both --pass all -q -o $R/odd-257x3001-fp32.json | tail -2
