# sourced by the session-6 device scripts: step runner, binaries from out/bin.tgz
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
B=build-dev
if [ ! -x $B/flashbench ] || [ out/bin.txz -nt $B/flashbench ]; then mkdir -p $B && tar xJf out/bin.txz -C $B && touch $B/flashbench; fi
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
export BUILD=$B PATH=$PATH:/usr/local/cuda/bin
