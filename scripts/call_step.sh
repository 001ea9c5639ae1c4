# Sourced by a device call's script (results/h200/*/calls/call*.sh), which the device tool runs from the repo root
# of the copied working tree, with the lead's build carried in out/ (scripts/call_pack.sh makes it: b.txz, build-dev's
# flashbench, GPU tests and plug-ins, and with BASE_BUILD a second build's C API library; srcdir.txt, the source path
# the build was configured in; commit.txt, the commit built; base_commit.txt, the second build's):
#   call_begin DIR
# makes DIR and sets R to it, starts the clock for `left` and `step` (DEADLINE seconds from now, default 540: under
# the device's 600 s a command, with time to pack what came out), unpacks the build, and sets fb and gt to its
# flashbench and GPU test binaries; DIR/commit.txt names the commit built, and FLASHBENCH_GIT (exported) its first 12
# digits, which scripts/peers.py's records name. With a second build packed, FB_CAPI_LIB_BASE (exported) names its
# library (scripts/fb_torch.py's flash_sm90_base, flash_base) and DIR/base_commit.txt its commit.
#   left
# prints the seconds left before DEADLINE.
#   step NAME MAX_SECONDS COMMAND...
# runs COMMAND in a process group of its own, stdin closed, its output in $R/NAME.log, stopped (with everything it
# started) after MAX_SECONDS or at the deadline, whichever is first; skipped, saying so, when less than half of
# MAX_SECONDS is left, so that a call never loses its packing to one slow step. Prints "== NAME rc=RC Ns (t=T)".
#   smi_start / smi_stop
# nvidia-smi's SM clock, power, temperature and throttle reasons each second into $R/smi.csv, between the two.
#   ab_variants DIR SPEC_DIR "SPECS" KERNEL NAME=VAR=VALUE[:VAR=VALUE...]...
# the A/B of probe words in one process (session 66; `flashbench run --variant`): each spec run twice with KERNEL's
# variants beside it, their reps interleaved, the variants named in the order given, then reversed, as steps
# ab-SPEC-1 / -2 (90 s at most) writing DIR/SPEC-1.json and -2.json; then scripts/paired.py over them, a pair
# NAME:KERNEL each (KERNEL's rep / the variant's: above 1 the variant is faster), into DIR/paired.json and .log. Name
# a null variant among them (a word that runs KERNEL's own code) to read the A/B's reach. A rule written before the
# call: scripts/ab_rule.py DIR --in-process --kernel KERNEL --variant NAME --rounds 2 ...
#   ab_rounds DIR SPEC_DIR ROUNDS "SPECS" VARIANT...
# (before variants) interleaved A/B rounds of the carried flashbench: VARIANT is NAME=ASSIGNMENT, the environment a
# variant runs under
# (NAME=X=1 for none); round r = 1 .. ROUNDS runs every spec under every variant, in the order given in odd rounds and
# reversed in even ones, as step NAME-SPEC-r (40 s at most) writing DIR/NAME-SPEC-r.json, the layout
# scripts/ab_rule.py and results/h200/s29/calls/ab_table.py read.
#   peers_once DIR SPEC_DIR "SPECS" BACKENDS
# scripts/peers.py once per spec (torch-cudnn, torch-flash: BACKENDS as peers.py takes them) into DIR/peers-SPEC.json.
#   spec_for SRC DST KERNEL [PASS]
# SRC's spec with its kernels set to [KERNEL] and, given PASS, its passes to [PASS] and its name suffixed -PASS,
# written to DST (a call's own spec from a committed one).
#   ab_spec SPEC_DIR NAME BATCH HEADS KV_HEADS SEQ HEAD_DIM DTYPE CAUSAL [PASS]
# one A/B row's spec, SPEC_DIR/NAME.json (flash-sm90, the backward unless PASS says; below). AB_KERNEL (exported)
# names another kernel, for ab_spec and ab_probe alike (flash: the portable kernels, torch-flash beside).
#   ab_probe SPEC_DIR ROUNDS NAME ASSIGNMENT ROWS CONTROLS
# a probe word's A/B under the house rule: list_beside into $R/list.txt, ab_rounds of def (as built) and NAME (under
# ASSIGNMENT) over every spec in SPEC_DIR with smi sampled, scripts/ab_rule.py on flash-sm90 (or AB_KERNEL) with ROWS
# and CONTROLS (globs of spec names) as rule rows and controls (rows' geomean >= 1.02, none below 0.98, each control
# 0.97-1.03 and their geomean 0.99-1.01) into $R/rule.txt and rule.json, printing "rule-NAME rc=RC" and the verdict;
# then, unless PEERS=0, torch-cudnn (torch-flash for AB_KERNEL=flash) once on the ROWS specs, and
# results/h200/s29/calls/ab_table.py's table into $R/table.txt.
#   list_beside SPEC_DIR "SPECS" NAME ASSIGNMENT OUT
# each spec's `flashbench run --list` case lines (the memory each kernel needs, its workspace included) as built and
# under the environment ASSIGNMENT, side by side, appended to OUT a case a line: "SPEC: built LINE | NAME: LINE" (which
# rows a probe's plan gives a workspace: a head split, pieces).
#   ncu_prof NAME FILTER KERNEL KERNEL_REGEX
# Nsight Compute on one launch of KERNEL (the first whose name matches KERNEL_REGEX) at the case of
# configs/issue13-h200.json (or of the spec NCU_SPEC names) that FILTER picks, clocks free, warp states sampled per
# SASS instruction (step ncu-NAME, 45 s at most): $R/NAME/details.txt (the details page) and source-sass.csv (the
# SASS page as CSV, samples and stall reasons an instruction); prints the duration, elapsed cycles and issue figures.
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
  # The device's copy of the tree carries the git metadata of the session's first call, not this commit's: the
  # peers' records (scripts/peers.py) name the commit built, as flashbench's do.
  FLASHBENCH_GIT=$(cut -c1-12 out/commit.txt 2>/dev/null)
  export FLASHBENCH_GIT
  if [ -f build-base/libflashbench_capi.so ]; then
    export FB_CAPI_LIB_BASE=$PWD/build-base/libflashbench_capi.so
    cat out/base_commit.txt > "$R/base_commit.txt" 2>/dev/null
  fi
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

smi_start() {
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv \
    -l 1 > "$R/smi.csv" 2>&1 &
  smi_pid=$!
}
smi_stop() { kill "$smi_pid" 2>/dev/null; }

ab_variants() {  # DIR SPEC_DIR "SPECS" KERNEL NAME=VAR=VALUE[:VAR=VALUE...]...
  local dir=$1 specs_dir=$2 specs=$3 kernel=$4
  shift 4
  local fwd=() rev=() pairs=() v s r
  for v in "$@"; do
    fwd+=(--variant "${v%%=*}=$kernel:${v#*=}")
    rev=(--variant "${v%%=*}=$kernel:${v#*=}" "${rev[@]}")
    pairs+=(--pair "${v%%=*}:$kernel")
  done
  mkdir -p "$dir"
  for r in 1 2; do
    local order=("${fwd[@]}")
    [ $r = 2 ] && order=("${rev[@]}")
    for s in $specs; do
      step "ab-$s-$r" 90 "$fb" run "$specs_dir/$s.json" --interleave "${order[@]}" --backend cuda --no-ceilings -q \
        -o "$dir/$s-$r.json"
    done
  done
  python3 scripts/paired.py "$dir"/*-[12].json "${pairs[@]}" --json "$dir/paired.json" > "$dir/paired.log" 2>&1
}

ab_rounds() {  # DIR SPEC_DIR ROUNDS "SPECS" VARIANT...
  local dir=$1 specs_dir=$2 rounds=$3 specs=$4
  shift 4
  local variants=("$@") r s v i order
  for ((r = 1; r <= rounds; ++r)); do
    order=()
    for ((i = 0; i < ${#variants[@]}; ++i)); do
      if ((r % 2 == 0)); then order=("${variants[i]}" "${order[@]}"); else order+=("${variants[i]}"); fi
    done
    for s in $specs; do
      for v in "${order[@]}"; do
        step "${v%%=*}-$s-$r" 40 env "${v#*=}" "$fb" run "$specs_dir/$s.json" --no-ceilings -q \
          -o "$dir/${v%%=*}-$s-$r.json"
      done
    done
  done
}

peers_once() {  # DIR SPEC_DIR "SPECS" BACKENDS
  local s
  for s in $3; do
    step "peers-$s" 30 python3 scripts/peers.py "$2/$s.json" --backends "$4" -o "$1/peers-$s.json"
  done
}

spec_for() {  # SRC DST KERNEL [PASS]
  python3 - "$@" <<'PY'
import json, sys
src, dst, kernel = sys.argv[1:4]
s = json.load(open(src))
s["kernels"] = [kernel]
if len(sys.argv) > 4:
    s["pass"] = [sys.argv[4]]
    s["name"] += "-" + sys.argv[4]
json.dump(s, open(dst, "w"), indent=2)
PY
}

# One A/B row's spec, SPEC_DIR/NAME.json: flash-sm90, the backward unless PASS says, 5 warm-ups and 10 reps, seed 42,
# verified; CAUSAL true or false.
ab_spec() {  # SPEC_DIR NAME BATCH HEADS KV_HEADS SEQ HEAD_DIM DTYPE CAUSAL [PASS]
  python3 - "$@" <<'PY'
import json, os, sys
d, name, b, h, kv, n, hd, dtype, causal = sys.argv[1:10]
if causal not in ("true", "false"):
    sys.exit(f"ab_spec: CAUSAL is true or false, not '{causal}'")
kernel = os.environ.get("AB_KERNEL") or "flash-sm90"
json.dump({"name": name, "seq": [int(n)], "batch": [int(b)], "heads": [int(h)], "kv_heads": [int(kv)],
           "head_dim": [int(hd)], "dtype": [dtype], "causal": [causal == "true"],
           "pass": [sys.argv[10] if len(sys.argv) > 10 else "bwd"], "kernels": [kernel], "warmup": 5,
           "reps": 10, "seed": 42, "verify": True}, open(f"{d}/{name}.json", "w"), indent=2)
PY
}

ab_probe() {  # SPEC_DIR ROUNDS NAME ASSIGNMENT ROWS CONTROLS
  local dir=$1 rounds=$2 name=$3 assign=$4 rows=$5 controls=$6 specs
  local kernel=${AB_KERNEL:-flash-sm90} peer=cudnn
  [ "$kernel" = flash ] && peer=flash
  specs=$(cd "$dir" && ls -- *.json | sed 's/\.json$//' | tr '\n' ' ')
  list_beside "$dir" "$specs" "$name" "$assign" "$R/list.txt"
  smi_start
  ab_rounds "$R/ab" "$dir" "$rounds" "$specs" def=X=1 "$name=$assign"
  smi_stop
  python3 scripts/ab_rule.py "$R/ab" --spec-dir "$dir" --kernel "$kernel" --base def --variant "$name" \
    --rounds "$rounds" --rows "$rows" --controls "$controls" --min-geomean 1.02 --min-row 0.98 \
    --control-band 0.97:1.03 --controls-geomean-band 0.99:1.01 --json "$R/rule.json" > "$R/rule.txt" 2>&1
  echo "rule-$name rc=$?"
  cut -c1-150 "$R/rule.txt"
  [ "${PEERS:-1}" = 0 ] && return
  # shellcheck disable=SC2086  # ROWS is a glob
  peers_once "$R/ab" "$dir" "$(cd "$dir" && ls -- $rows.json | sed 's/\.json$//' | tr '\n' ' ')" "$peer"
  python3 results/h200/s29/calls/ab_table.py "$R/ab" "$kernel" "torch-$peer" def "$name" > "$R/table.txt" 2>&1
  cut -c1-150 "$R/table.txt" | head -24
}

list_beside() {  # SPEC_DIR "SPECS" NAME ASSIGNMENT OUT
  local s
  for s in $2; do
    "$fb" run "$1/$s.json" --list 2>&1 | grep -E "^[0-9]+ " | tr -s ' ' > "$R/.list-a"
    env "$4" "$fb" run "$1/$s.json" --list 2>&1 | grep -E "^[0-9]+ " | tr -s ' ' > "$R/.list-b"
    paste -d"|" "$R/.list-a" "$R/.list-b" | sed "s/|/ | $3: /; s/^/$s: built /" >> "$5"
  done
  rm -f "$R/.list-a" "$R/.list-b"
}

ncu_prof() {  # NAME FILTER KERNEL KERNEL_REGEX
  local n=$1 ncu
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  mkdir -p "$R/$n"
  step "ncu-$n" 45 "$ncu" -f --clock-control none -o "$R/$n/rep" -k "regex:$4" --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section SchedulerStats --section SpeedOfLight \
    --section LaunchStats "$fb" run "${NCU_SPEC:-configs/issue13-h200.json}" --kernels "$3" --filter "$2" \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
  if [ -f "$R/$n/rep.ncu-rep" ]; then
    "$ncu" -i "$R/$n/rep.ncu-rep" --page details > "$R/$n/details.txt" 2>&1
    "$ncu" -i "$R/$n/rep.ncu-rep" --page source --csv --print-source sass > "$R/$n/source-sass.csv" 2>&1
    rm -f "$R/$n/rep.ncu-rep"
  fi
  grep -E "Duration|Elapsed Cycles|Issued Ipc|No Eligible|Warp Cycles Per Issued" "$R/$n/details.txt" 2>/dev/null |
    head -6
}

call_end() {  # NAME
  find "$R" -size 0 -delete
  tar czf "$OUT/$1.tgz" -C "$(dirname "$R")" "$(basename "$R")" && rm -rf "$R"
  echo "done t=$((SECONDS - t0))"
}
