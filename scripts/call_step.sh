# Sourced by a device call's script (results/h200/*/calls/call*.sh), which the device tool runs from the repo root
# of the copied working tree, with the lead's build carried in out/ (b.txz: build-dev's flashbench, GPU tests and
# plug-ins; srcdir.txt: the source path the build was configured in; commit.txt: the commit built):
#   call_begin DIR
# makes DIR and sets R to it, starts the clock for `left` and `step` (DEADLINE seconds from now, default 540: under
# the device's 600 s a command, with time to pack what came out), unpacks the build, and sets fb and gt to its
# flashbench and GPU test binaries; DIR/commit.txt names the commit built.
#   left
# prints the seconds left before DEADLINE.
#   step NAME MAX_SECONDS COMMAND...
# runs COMMAND in a process group of its own, stdin closed, its output in $R/NAME.log, stopped (with everything it
# started) after MAX_SECONDS or at the deadline, whichever is first; skipped, saying so, when less than half of
# MAX_SECONDS is left, so that a call never loses its packing to one slow step. Prints "== NAME rc=RC Ns (t=T)".
#   call_end NAME
# drops empty files under $R, packs $R into $OUT/NAME.tgz (what the device tool brings back) and removes $R.
call_begin() {  # DIR
  R=$1
  mkdir -p "$R" || { echo "call_begin: cannot make $R" >&2; exit 2; }
  export DEADLINE=${DEADLINE:-540}
  t0=$SECONDS
  tar xJf out/b.txz || { echo "call_begin: out/b.txz did not unpack" >&2; exit 2; }
  local src
  src=$(cat out/srcdir.txt)
  # The build's own paths (the plug-ins' RPATHs, the test fixtures) name the source folder it was configured in.
  [ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
  fb=$src/build-dev/flashbench
  gt=$src/build-dev/tests/flashbench_gpu_tests
  cat out/commit.txt > "$R/commit.txt" 2>/dev/null
}

left() { echo $(( DEADLINE - (SECONDS - t0) )); }

step() {  # NAME MAX_SECONDS COMMAND...
  local name=$1 max=$2
  shift 2
  local l
  l=$(left)
  if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS
  setsid timeout -k 3 "$max" "$@" < /dev/null > "$R/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0)))"
}

call_end() {  # NAME
  find "$R" -size 0 -delete
  tar czf "$OUT/$1.tgz" -C "$(dirname "$R")" "$(basename "$R")" && rm -rf "$R"
  echo "done t=$((SECONDS - t0))"
}
