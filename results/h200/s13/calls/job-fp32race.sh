# Session 13, fp32 (issue 15), for the final call (<= 60 s; env BUILD=<build dir> OUTDIR=<dir>): the racecheck
# discriminating run session 12 could not fit. compute-sanitizer --tool racecheck (every hazard printed, verified
# against fp64, as F12b's run that reported 387) of configs/sanitize-fp32-bwd-race.json --filter d128, the default
# (FB_SM90_FP32_BWD_PROBE unset) then racebar (a second bar.sync over both consumers after the barrier that orders
# consumer 1's dS stores before consumer 0's dK fragment loads), ~25 s each. Prints both runs' hazard counts and
# distinct (kind, read pc, write pc), the table last (OUTDIR/table.txt). Racecheck exits 86 on any hazard, so
# "failed steps: 1" is expected whenever the default reproduces the reports.
scripts/fp32s13_race_h200.sh "$OUTDIR" "$BUILD"
