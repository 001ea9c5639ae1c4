#!/usr/bin/env bash
# Session 48, call Q (prepared for a later session; one Hopper GPU, an H100 where one comes; issue 13): call P's steps
# again (results/h200/s48/calls/callP.sh, results in $OUT/Q) on the binaries of commit.txt, with the whole budget of a
# call: ncu of the d = 64 causal N = 1024 backward under def / dyn / off, three interleaved rounds of def / dyn on the
# papers' d = 64 causal grid and two non-causal controls, torch-cudnn once, the tests ([sm90_dyn] as built, [bwd64]
# under dyn) and memcheck.
# Why again: call P ran on an H200 (results/h200/s48/P/), where the default moved 410 / 247 MiB of DRAM at N = 1024 and
# dyn 388 / 236, and dyn read 0.984-1.028x (geomean 1.011): its rule not met. The lead dyn was built for is the H100's:
# there call O measured the default at 856 / 482 MiB (results/h100/s48/O/). The H200's figures do not say what dyn does
# on the H100.
# Rule (docs/perf-notes.md, "Session 48", written before the call): on an H100, call P's rule (the six rows' geomean
# >= 1.02, none below 0.98; each control 0.97-1.03, their geomean 0.99-1.01; every row verified in every round; the
# tests and memcheck pass); since call P's H200 rows already stand at 0.984-1.028x (none below 0.98), dyn then becomes
# the default for causal d = 64 passes on every Hopper GPU. On an H200 this call is a second H200 reading, no verdict.
set -uo pipefail
CALL_NAME=Q DEADLINE=${DEADLINE:-420} exec bash results/h200/s48/calls/callP.sh
