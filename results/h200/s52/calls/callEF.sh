#!/usr/bin/env bash
# Session 52 (issue 13): session 51's calls E and F in one device command, so that one machine start serves both
# (seventeen of session 52's requests were refused or held back before one got an H100, and a refused start costs
# ~90 s of the budget). Run as results/h100/s52/README.md says. What each does, and F's rule (written in
# docs/perf-notes.md, "Session 51", before the call), is in its own script:
#   results/h200/s51/calls/callE.sh   every GPU test on the default since 5f398e2, [sm90_dyn] under dynmha, memcheck,
#                                     call D's rows def / dynmha and torch-cudnn (no rule)
#   results/h200/s51/calls/callF.sh   the probe dynlong under the house rule
# E gets E_DEADLINE seconds (default 240), F F_DEADLINE (default 270): 510 s under the device's 600 s a command, with
# time to unpack the build twice and pack what came out. ROUNDS and PEERS=0 shorten E (not F: its rule needs three
# rounds). What comes back: $OUT/E.tgz and $OUT/F.tgz.
set -uo pipefail
DEADLINE=${E_DEADLINE:-240} bash results/h200/s51/calls/callE.sh 2>&1 | tail -40
DEADLINE=${F_DEADLINE:-270} bash results/h200/s51/calls/callF.sh 2>&1 | tail -40
