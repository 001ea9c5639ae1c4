# Session 17 (lead): where cuDNN's L2 reads go. Call A's ncu (results/h200/s17/callA/clock16/summary.json): at the
# d = 128 N = 1k non-causal forward both kernels' SMs receive 35.65M sectors from the crossbar, but ours takes 36.7M
# tex-source L2 read sectors to cuDNN's 18.5M, and cuDNN's kernels are not clustered (cga1x1x1: no TMA multicast).
# GH100's L2 request coalescer (LRC) merges identical read requests in hardware ("type_hardware") as well as by
# multicast ("type_programmatic"): its counters for both kernels, forward and backward, d = 64 and 128, N = 1k, one
# launch each (ncu's default clock control), the metric names this ncu knows only (queried first).
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s17/calls/job-lrc17.sh
set -uo pipefail
build=${BUILD:?}; out=${OUTDIR:?}; mkdir -p "$out"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd); spec=$here/lrc17.json
want="gpu__time_duration.sum lts__t_sectors.sum lts__t_sectors_srcunit_tex_op_read.sum l1tex__m_xbar2l1tex_read_sectors.sum
lrc__lts2lrc_sectors_op_read.sum lrc__xbar2gpc_sectors_op_read.sum lrc__lrc2xbar_sectors_op_read.sum
lrc__request_sectors_op_read_coalescable.sum lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum
lrc__request_sectors_op_read_coalescing_achieved_type_programmatic.sum lrc__xbar2gpc_sectors_op_read_coalescing_achieved.sum
lrc__xbar2lrc_requests_op_read.sum dram__bytes_read.sum sm__cycles_elapsed.avg.per_second"
ncu --query-metrics --chip gh100 > "$out/ncu-query.txt" 2>&1
have=""
for m in $want; do b=${m%.*}; b=${b%.avg}; grep -q "^$b " "$out/ncu-query.txt" && have="$have${have:+,}$m"; done
echo "metrics: $have" > "$out/ncu.log"
rm -f "$out/ncu-query.txt"
for f in n1024-d128-bf16-full-fwd n1024-d64-bf16-full-fwd n1024-d128-bf16-full-bwd n1024-d64-bf16-full-bwd; do
  for k in flash-sm90 cudnn; do
    # forward: the attention kernel; backward: every kernel of the pass (pre-pass, main, convert), the first 6 launches
    case $f in *fwd) kr='regex:flash_sm90_fwd|fprop'; c=1;; *) kr='regex:flash_sm90_bwd|dgrad|bprop|sdpa|convert|dot'; c=6;; esac
    timeout 60 ncu --csv --metrics "$have" -k "$kr" -c $c \
      "$build/flashbench" run "$spec" --kernels $k --filter "$f\$" --no-ceilings -q --warmup 0 --reps 1 --warmup-time 0 \
      > "$out/ncu-$k-$f.csv" 2>> "$out/ncu.log"
    echo "ncu $k $f rc=$?" >> "$out/ncu.log"
  done
done
python3 - "$out" <<'PY' | tee "$out/table.txt"
import csv, glob, json, os, sys
out = sys.argv[1]
rows = {}
for p in sorted(glob.glob(os.path.join(out, "ncu-*.csv"))):
    tag = os.path.basename(p)[4:-4]
    for r in csv.reader(open(p)):
        if len(r) > 14 and r[0].strip('"').isdigit():
            k = (tag, r[0], r[4][:70])
            try:
                rows.setdefault(k, {})[r[12]] = float(r[14].replace(",", ""))
            except ValueError:
                pass
json.dump([{"run": k[0], "launch": k[1], "kernel": k[2], "metrics": v} for k, v in rows.items()],
          open(os.path.join(out, "summary.json"), "w"), indent=1)
short = {"gpu__time_duration.sum": "ns", "lts__t_sectors_srcunit_tex_op_read.sum": "L2 tex rd",
         "l1tex__m_xbar2l1tex_read_sectors.sum": "xbar->SM", "lrc__lts2lrc_sectors_op_read.sum": "L2->LRC",
         "lrc__xbar2gpc_sectors_op_read.sum": "LRC->GPC",
         "lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum": "coal hw",
         "lrc__request_sectors_op_read_coalescing_achieved_type_programmatic.sum": "coal prog"}
print(f"{'run':42s} {'kernel':40s} " + " ".join(f"{v:>11s}" for v in short.values()))
for (tag, i, name), v in rows.items():
    print(f"{tag:42s} {name[:40]:40s} " + " ".join(f"{v.get(m, float('nan')):>11.4g}" for m in short))
PY
