# Shapes no config in the repo names (issue 13's "we will also check"): verify every tiled kernel, forward and
# backward, bf16 and fp16 (and fp32 at one shape), against fp64 beside naive.
R=$1; fb=$BUILD/flashbench
$fb verify --seq-q 1000 --seq-k 1537 --batch 3 --heads 6 --kv-heads 2 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-1000x1537-d128.json | tail -2
$fb verify --seq 2999 --batch 1 --heads 12 --kv-heads 3 --dim 64 --dtype fp16 --causal both --pass all -q -o $R/odd-2999-d64.json | tail -2
$fb verify --seq 777 --batch 2 --heads 8 --kv-heads 1 --dim 128 --dtype all --causal both --pass all -q -o $R/odd-777-mqa.json | tail -2
