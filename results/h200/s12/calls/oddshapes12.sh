# Shapes no config in the repo names (issue 13's "we will also check"; new ones each session): verify every tiled
# kernel, forward and backward, beside naive against fp64.
R=$1; fb=$BUILD/flashbench
$fb verify --seq-q 777 --seq-k 1999 --batch 2 --heads 6 --kv-heads 3 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-777x1999-d128.json | tail -2
$fb verify --seq 3001 --batch 1 --heads 12 --kv-heads 4 --dim 64 --dtype fp16 --causal both --pass all -q -o $R/odd-3001-gqa-d64-fp16.json | tail -2
$fb verify --seq 2049 --batch 3 --heads 2 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-2049-b3-d128.json | tail -2
$fb verify --seq-q 1500 --seq-k 3100 --batch 1 --heads 4 --kv-heads 1 --dim 128 --dtype fp32 --causal both --pass all -q -o $R/odd-1500x3100-mqa-fp32.json | tail -2
