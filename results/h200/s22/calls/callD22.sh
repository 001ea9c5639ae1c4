#!/usr/bin/env bash
# Session 22 call D (one H200; a diagnostic for issue 13, nothing shipped by it): ncu without clock control
# (--clock-control none: the clocks the power cap gives) of one backward of flash-sm90 and of the in-binary cuDNN on
# four d = 128 bf16 rows behind torch-cudnn in F20 (issue13-h200: N = 1k / 4k non-causal, N = 1k causal; gqa-h200:
# 8 / 8 heads N = 4k): every launch's duration, DRAM bytes read / written, L2 sectors read, and SM clock, so that the
# next session can see whether the remaining gap is DRAM / clock (session 22's fp32 lesson) or the kernel's own time.
R=$OUT/D; mkdir -p $R
set -uo pipefail
t0=$SECONDS
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,sm__cycles_elapsed.avg.per_second
one() {  # name, config, filter, kernel
  timeout -k 3 60 ncu --clock-control none --csv --metrics $m -c 40 $fb run $2 --filter "$3" --kernels $4 \
    --no-ceilings -q --warmup 0 --reps 1 --warmup-time 0 > $R/ncu-$1-$4.log 2>&1
  echo "== $1 $4 rc=$? (t=$((SECONDS - t0)))"
}
for k in flash-sm90 cudnn; do
  one n1k configs/issue13-h200.json '^b16-h16-kv16-n1024-d128-bf16-full-bwd$' $k
  one n4k configs/issue13-h200.json '^b4-h16-kv16-n4096-d128-bf16-full-bwd$' $k
  one n1kc configs/issue13-h200.json '^b16-h16-kv16-n1024-d128-bf16-causal-bwd$' $k
  one gqa8n4k configs/gqa-h200.json '^b4-h8-kv8-n4096-d128-bf16-full-bwd$' $k
done
python3 - $R <<'PY' | tee $R/table.txt
import csv, os, sys
R = sys.argv[1]
print("ncu --clock-control none, one backward each (launches whose names do not look like input fills / fp64 reference):")
print(f"{'row':8} {'kernel':11} {'launch':44} {'us':>8} {'DRAM rd GB':>10} {'wr GB':>7} {'L2 sect M':>9} {'MHz':>6}")
for f in sorted(os.listdir(R)):
    if not f.startswith("ncu-"):
        continue
    row, kern = f[4:-4].split("-", 1)
    rows = {}
    try:
        for r in csv.reader(open(os.path.join(R, f))):
            if len(r) < 15 or not r[0].isdigit():
                continue
            name = r[4]
            if any(x in name for x in ("fill_normal", "to_fp64", "reference", "ref_", "fill_")):
                continue
            d = rows.setdefault((int(r[0]), name), {})
            unit, v = r[-2].strip(), float(r[-1].replace(",", ""))
            d[r[-3]] = (unit, v)
    except OSError:
        continue
    for (i, name), d in sorted(rows.items()):
        def get(k, scale=1.0):
            u, v = d.get(k, ("", float("nan")))
            mult = {"ns": 1e-3, "us": 1, "usecond": 1, "ms": 1e3, "msecond": 1e3, "byte": 1e-9, "Kbyte": 1e-6,
                    "Mbyte": 1e-3, "Gbyte": 1, "sector": 1e-6, "Ksector": 1e-3, "Msector": 1, "hz": 1e-6,
                    "khz": 1e-3, "Mhz": 1, "MHz": 1, "Ghz": 1e3, "GHz": 1e3, "cycle/second": 1e-6,
                    "cycle/nsecond": 1e3, "cycle/usecond": 1}.get(u, float("nan"))
            return v * mult
        print(f"{row:8} {kern:11} {name[:44]:44} {get('gpu__time_duration.sum'):8.1f} "
              f"{get('dram__bytes_read.sum'):10.3f} {get('dram__bytes_write.sum'):7.3f} "
              f"{get('lts__t_sectors_srcunit_tex_op_read.sum'):9.1f} {get('sm__cycles_elapsed.avg.per_second'):6.0f}")
PY
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
