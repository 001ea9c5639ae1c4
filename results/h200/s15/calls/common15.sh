# sourced by the session-15 call scripts: the step runner and the device build
set -uo pipefail
t0=$SECONDS; DEADLINE=${DEADLINE:-570}
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt 20 ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"; tail -n ${TAILN:-25} $R/$name.log
}
export PATH=$PATH:/usr/local/cuda/bin
source out/build15.sh
git log --oneline -1 > $R/commit.txt 2>&1; cat out/commit.txt >> $R/commit.txt 2>/dev/null
export OUTDIR
runjob() { local job=$1 f=${2:-out/job-$1.sh}; OUTDIR=$R/$job; mkdir -p $OUTDIR; TAILN=${TN:-30} step $job ${JT:-85} env BUILD=$B OUTDIR=$OUTDIR bash $f; }
