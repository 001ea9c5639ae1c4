#!/usr/bin/env bash
# Session 18 call D (one H200, no build; call C's binaries, main aa77d82's code): pmajor on the GQA grid's non-causal rows
R=$OUT/D; mkdir -p $R; export DEADLINE=${DEADLINE:-200}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binM18c.txz}
source out/common15.sh
cat out/commit.txt > $R/commit.txt 2>/dev/null
TN=30 JT=170 runjob pmajor-gqa results/h200/s18/calls/job-pmajor-gqa.sh
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
