#!/usr/bin/env bash
# Session 15 call N (one H200, no build): main 18ba308 + cudnns15 027057e (FB_CUDNN_FWD_PROBE=nostats, a measurement
# probe of the in-binary cuDNN peer's forward without its Stats output) built here and carried; the cudnn GPU tests
# (default path), then job-cudnn-nostats.sh.
R=$OUT/N; mkdir -p $R; export DEADLINE=${DEADLINE:-100}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binN.txz}
source out/common15.sh
TAILN=3 step gputests 30 $B/tests/flashbench_gpu_tests "[cudnn]"
TN=40 JT=50 runjob nostats results/h200/s15/calls/job-cudnn-nostats.sh
tar czf $OUT/N.tgz -C $OUT N && rm -rf $R; echo "done t=$((SECONDS-t0))"
