#!/usr/bin/env bash
# Runs flashbench's CUDA kernels under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on a
# tiny sweep and writes a summary: per tool, the errors it reported and the exit status.
#
#   scripts/sanitize.sh [-e FLASHBENCH] [-s SPEC] [-t "memcheck racecheck ..."] [-c COMPUTE_SANITIZER]
#                       SUMMARY.json
#
#   -e  the flashbench binary (default: $FLASHBENCH_EXE, else build/flashbench)
#   -s  the sweep spec (default: configs/sanitize.json: N = 17 and 130, d = 64 and 128, every dtype,
#       both masks, fwd and bwd, GQA and MHA, one rep, verified)
#   -t  the tools, space-separated (default: memcheck racecheck synccheck initcheck)
#   -c  the compute-sanitizer binary (default: compute-sanitizer on PATH)
#
# Each tool's whole output goes to SUMMARY's name with "-TOOL.log" in place of ".json", next to it.
# A tool counts as clean when its "ERROR SUMMARY" line says 0 errors AND flashbench exited 0 under it
# AND the results show kernels that ran (ok_runs per kernel is in the summary)
# (flashbench exits 1 when a verification fails: a kernel that computes wrong answers under the
# sanitizer is not clean either). A log without an ERROR SUMMARY line (the sanitizer could not attach,
# e.g. "Device not supported") is not clean.
#
# Exit status: 0 every tool clean, 1 some tool found errors or did not finish, 2 bad arguments.
set -u -o pipefail

# compute-sanitizer exits with this when it found errors; anything else non-zero is the program's own.
readonly SANITIZER_ERROR_EXIT=86

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
exe="${FLASHBENCH_EXE:-$root/build/flashbench}"
spec="$root/configs/sanitize.json"
tools="memcheck racecheck synccheck initcheck"
sanitizer="compute-sanitizer"

usage() {
  sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
die() {
  echo "sanitize.sh: $*" >&2
  exit 2
}

while getopts "e:s:t:c:h" opt; do
  case "$opt" in
    e) exe="$OPTARG" ;;
    s) spec="$OPTARG" ;;
    t) tools="$OPTARG" ;;
    c) sanitizer="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || usage
summary="$1"

[ -x "$exe" ] || die "-e $exe: flashbench binary not found or not executable (build it, or set FLASHBENCH_EXE)"
[ -r "$spec" ] || die "-s $spec: spec not readable"
command -v "$sanitizer" >/dev/null 2>&1 || die "-c $sanitizer: compute-sanitizer not found (it comes with the CUDA toolkit)"
[ -d "$(dirname "$summary")" ] || die "$summary: folder $(dirname "$summary") does not exist"
case "$summary" in *.json) ;; *) die "$summary: the summary is JSON, name it *.json" ;; esac
for t in $tools; do
  case "$t" in memcheck | racecheck | synccheck | initcheck) ;; *) die "-t: unknown tool '$t' (memcheck, racecheck, synccheck, initcheck)" ;; esac
done

json_string() {  # a JSON string literal of $1 (escapes backslashes, quotes and control characters)
  printf '%s' "$1" | python3 -c 'import json, sys; print(json.dumps(sys.stdin.read()), end="")' 2>/dev/null ||
    printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr -d '\000-\037')"
}

workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT

sanitizer_version="$("$sanitizer" --version 2>/dev/null | grep -i version | tail -n 1)"
fb_version="$("$exe" --version 2>/dev/null | head -n 1)"

all_clean=1
entries=""
printf '%-10s %-8s %-10s %-12s %s\n' tool errors exit status "ok runs per kernel"
for tool in $tools; do
  log="${summary%.json}-$tool.log"
  extra=()
  # racecheck: report every hazard it finds, not only its summary analysis.
  [ "$tool" = racecheck ] && extra=(--racecheck-report all)
  cmd=("$sanitizer" --tool "$tool" --error-exitcode "$SANITIZER_ERROR_EXIT" ${extra[@]+"${extra[@]}"}
       "$exe" run "$spec" --backend cuda -q --no-ceilings -o "$workdir/$tool.json")
  "${cmd[@]}" >"$log" 2>&1
  rc=$?
  # "========= ERROR SUMMARY: 3 errors" (the last one, should the program print its own).
  errors="$(grep -Eo 'ERROR SUMMARY: [0-9]+ error' "$log" | tail -n 1 | grep -Eo '[0-9]+')"
  # racecheck ends with its own line: "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)".
  [ -n "$errors" ] ||
    errors="$(grep -Eo 'RACECHECK SUMMARY: .*\([0-9]+ error' "$log" | tail -n 1 | grep -Eo '\([0-9]+' | tr -d '(')"
  if [ -z "$errors" ]; then
    status="no-summary"
    errors_json=null
  elif [ "$errors" -gt 0 ] || [ "$rc" -eq "$SANITIZER_ERROR_EXIT" ]; then
    status="errors"
    errors_json="$errors"
  elif [ "$rc" -ne 0 ]; then
    status="program-failed"
    errors_json="$errors"
  else
    status="clean"
    errors_json="$errors"
  fi
  # How many kernel runs the tool actually watched: a clean summary over nothing proves nothing.
  ran="$(python3 -c 'import json, sys, collections
try:
    rs = json.load(open(sys.argv[1]))["results"]
except Exception:
    print("{}"); sys.exit()
ok = collections.Counter(r["kernel"] for r in rs if r["status"] == "ok")
print(json.dumps(dict(sorted(ok.items()))))' "$workdir/$tool.json" 2>/dev/null)"
  ran="${ran:-{\}}"
  if [ "$status" = clean ] && [ "$ran" = "{}" ]; then status="nothing-ran"; fi
  [ "$status" = clean ] || all_clean=0
  printf '%-10s %-8s %-10s %-12s %s\n' "$tool" "${errors:--}" "$rc" "$status" "$ran"
  shown="$(basename "$sanitizer") --tool $tool --error-exitcode $SANITIZER_ERROR_EXIT${extra[*]:+ ${extra[*]}} flashbench run $(basename "$spec") --backend cuda -q --no-ceilings"
  entries+="${entries:+,}
    $(json_string "$tool"): {\"status\": \"$status\", \"errors\": $errors_json, \"exit_code\": $rc, \"ok_runs\": $ran, \"log\": $(json_string "$(basename "$log")"), \"command\": $(json_string "$shown")}"
done

clean_json=$([ "$all_clean" = 1 ] && echo true || echo false)
tmp="$summary.tmp.$$"
cat >"$tmp" <<EOF
{
  "created": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "sanitizer": $(json_string "$sanitizer_version"),
  "flashbench": $(json_string "$fb_version"),
  "spec": $(json_string "$(basename "$spec")"),
  "clean": $clean_json,
  "tools": {$entries
  }
}
EOF
mv "$tmp" "$summary"
echo "sanitize.sh: summary -> $summary" >&2
[ "$all_clean" = 1 ] || exit 1
