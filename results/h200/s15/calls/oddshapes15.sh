# Shapes no config in the repo names (issue 13's "we will also check"; new ones each session): verify every tiled
# kernel, forward and backward, beside naive against fp64. Session 15: d = 64 non-causal shapes whose last round
# of 192-row tiles is partial on 132 SMs (the tail split), short d = 128 non-causal launches (the portable kpipe).
R=$1; fb=$BUILD/flashbench
$fb verify --seq 3000 --batch 2 --heads 10 --dim 64 --dtype bf16 --causal both --pass all -q -o $R/odd-3000-h10-d64.json | tail -2
$fb verify --seq 5000 --batch 1 --heads 12 --kv-heads 4 --dim 64 --dtype fp16 --causal no --pass all -q -o $R/odd-5000-gqa12x4-d64-fp16.json | tail -2
$fb verify --seq 700 --batch 5 --heads 12 --dim 128 --dtype fp16 --causal both --pass all -q -o $R/odd-700-h12-d128-fp16.json | tail -2
$fb verify --seq-q 900 --seq-k 2500 --batch 3 --heads 8 --kv-heads 2 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-900x2500-gqa-d128.json | tail -2
$fb verify --seq-q 1300 --seq-k 400 --batch 2 --heads 6 --dim 64 --dtype bf16 --causal both --pass all -q -o $R/odd-1300x400-d64.json | tail -2
$fb verify --seq 1111 --batch 2 --heads 4 --kv-heads 1 --dim 64 --dtype fp32 --causal both --pass all -q -o $R/odd-1111-mqa-d64-fp32.json | tail -2
