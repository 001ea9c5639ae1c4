# Shapes no config in the repo names (issue 13's and 15's "we will also check"; new ones each session): verify every
# tiled kernel, forward and backward, beside naive against fp64. Session 21 (fp16pair128, the fp16-pair fp32 backward,
# is the d = 128 non-causal default): fp32 d = 128 at 1500 x 1100 (GQA 6 / 2: partial key blocks and query tiles), 65
# (one key block, partial), MQA 7 / 1 at 2500 with a sharp softmax (--input-scale 3); fp32 d = 64 at 333 x 2222;
# 16-bit: bf16 d = 128 N = 700 b3 h7, fp16 d = 64 GQA 12 / 4 at 1200 x 900, fp16 d = 128 N = 5000 b1 h4 at scale 2.
R=$1; fb=$BUILD/flashbench
$fb verify --seq-q 1500 --seq-k 1100 --batch 2 --heads 6 --kv-heads 2 --dim 128 --dtype fp32 --causal both --pass all -q -o $R/odd-1500x1100-gqa6x2-d128-fp32.json | tail -2
$fb verify --seq 65 --batch 3 --heads 4 --dim 128 --dtype fp32 --causal both --pass all -q -o $R/odd-65-b3h4-d128-fp32.json | tail -2
$fb verify --seq 2500 --batch 1 --heads 7 --kv-heads 1 --dim 128 --dtype fp32 --causal no --pass all --input-scale 3 -q -o $R/odd-2500-mqa7-d128-fp32-x3.json | tail -2
$fb verify --seq-q 333 --seq-k 2222 --batch 2 --heads 4 --dim 64 --dtype fp32 --causal both --pass all -q -o $R/odd-333x2222-h4-d64-fp32.json | tail -2
$fb verify --seq 700 --batch 3 --heads 7 --dim 128 --dtype bf16 --causal both --pass all -q -o $R/odd-700-b3h7-d128-bf16.json | tail -2
$fb verify --seq-q 1200 --seq-k 900 --batch 2 --heads 12 --kv-heads 4 --dim 64 --dtype fp16 --causal both --pass all -q -o $R/odd-1200x900-gqa12x4-d64-fp16.json | tail -2
$fb verify --seq 5000 --batch 1 --heads 4 --dim 128 --dtype fp16 --causal both --pass all --input-scale 2 -q -o $R/odd-5000-h4-d128-fp16-x2.json | tail -2
