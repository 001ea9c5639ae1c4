#!/usr/bin/env bash
# Session 53 (issue 13): prepared calls one after another in one device command, so that one machine start serves
# several (session 52: seventeen requests refused or held back before one ran; each refused start costs ~90 s of the
# budget). The binaries are built on the device (results/h200/s46/calls/devbuild.sh: about a minute) unless out/
# already holds COMMIT's (a warm machine keeps out/ between calls: ignored, not carried).
#   bash results/h200/s53/calls/chain.sh COMMIT SCRIPT=DEADLINE [SCRIPT=DEADLINE ...]
# COMMIT: the full hash of the tree sent (git rev-parse HEAD here), or `out`: the commit out/commit.txt names (session
# 57's fourth call typed a hash that matched no build, rebuilt on the device and ran out of time); SCRIPT: a call
# script (results/h200/*/calls/),
# run with DEADLINE seconds (call_step.sh's deadline), its output's last 40 lines printed. Other settings (ROUNDS,
# PEERS) pass through the environment. SCRIPT=DEADLINE may carry a prefix GPU: (H100:, H200:): run only when the
# device's name (nvidia-smi) holds GPU, so that one command picks what to run by the card that came.
set -uo pipefail
commit=${1:-}
shift || true
if [ "$commit" = out ]; then
  commit=$(cat out/commit.txt 2>/dev/null) || { echo "chain: COMMIT 'out', but out/commit.txt is missing"; exit 1; }
fi
if [ "$(cat out/commit.txt 2>/dev/null)" != "$commit" ] || [ ! -f out/b.txz ]; then
  bash results/h200/s46/calls/devbuild.sh "$commit" | tail -5
  [ "$(cat out/commit.txt 2>/dev/null)" = "$commit" ] || { echo "chain: no build of $commit"; exit 1; }
else
  echo "chain: out/ holds $commit's build"
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
echo "chain: device '$gpu'"
for c in "$@"; do
  if [[ "$c" =~ ^(H[0-9]+): ]]; then
    want=${BASH_REMATCH[1]}
    c=${c#*:}
    [[ "$gpu" == *"$want"* ]] || { echo "chain: skip $c (not an $want)"; continue; }
  fi
  script=${c%%=*} deadline=${c#*=}
  [ -f "$script" ] || { echo "chain: no script $script"; continue; }
  echo "==== $script (DEADLINE $deadline, t=$SECONDS)"
  DEADLINE=$deadline bash "$script" 2>&1 | tail -40
done
echo "chain: done at t=$SECONDS"
