# Sourced by the scripts/*_h200.sh device scripts (after they cd to the repo root and set $out):
#   step NAME COMMAND...
# runs COMMAND with its output in $out/NAME.log under a time limit (STEP_TIMEOUT from the environment, else
# the script's step_timeout, else 60 s), adds "NAME rc=.. Ns" to the summary array, sets failed=1 when the
# command fails or times out, and shows the log's last step_tail lines (default 4; 0 shows none) on stderr.
# A failing step never stops the script: the rest still run, and the summary says which failed.
failed=0
summary=()
step() {  # name, command...
  local name=$1
  shift
  local t0=$SECONDS
  echo "=== $name: $*" >&2
  timeout "${STEP_TIMEOUT:-${step_timeout:-60}}" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] || failed=1
  summary+=("$(printf "%-${step_name_width:-8}s rc=%-3s %4ss" "$name" "$rc" "$((SECONDS - t0))")")
  if [ "${step_tail:-4}" -gt 0 ]; then tail -n "${step_tail:-4}" "$out/$name.log" >&2; fi
  return 0
}
