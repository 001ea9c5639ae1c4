#!/usr/bin/env python3
"""Session 60: calls Q and G's figures as JSON, built from the committed files in this folder.

    python3 summarize.py    (writes summary.json)

Q: each process's median (us) and lowest SM clock (MHz, with the power cap's flag) for every row of the eight short
forwards; the in-binary cudnn / flash-sm90 ratio by row in the `cudnn` processes; from smi.csv the SM clock's range
and the most power over the samples drawing more than 150 W, and the power limit. G: the elapsed cycles and duration of
each profile's launch (details.txt, read as session 55's summary reads them; torch-cudnn's from tcudnn-*.txt).
"""
import csv
import glob
import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("s55_summarize", os.path.join(HERE, "..", "s55", "summarize_ncu.py"))
_s55 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_s55)


def row_name(c):
    return f"{c['batch']}x{c['heads']}/{c['kv_heads']} n{c['seq_q']} d{c['head_dim']} " \
           f"{'causal' if c['causal'] else 'full'}"


def q_summary():
    procs, ratios = {}, {}
    for path in sorted(glob.glob(os.path.join(HERE, "Q", "*-[0-9].json"))):
        name = os.path.basename(path)[:-5]
        meds = {}
        for r in json.load(open(path))["results"]:
            if not r.get("time_ms"):
                continue
            clk = r.get("clocks") or {}
            meds.setdefault(row_name(r["case"]), {})[r["kernel"]] = {
                "median_us": round(r["time_ms"]["median"] * 1e3, 1), "sm_mhz_min": clk.get("sm_mhz_min"),
                "sw_power_cap": "sw_power_cap" in clk.get("event_reasons", [])}
        procs[name] = meds
        if name.startswith("cudnn-"):
            ratios[name] = {row: round(k["cudnn"]["median_us"] / k["flash-sm90"]["median_us"], 3)
                            for row, k in meds.items() if "cudnn" in k and "flash-sm90" in k}
    smi = [r for r in csv.reader(open(os.path.join(HERE, "Q", "smi.csv")), skipinitialspace=True)][1:]
    busy = [(int(r[1].split()[0]), float(r[2].split()[0])) for r in smi if len(r) > 5 and float(r[2].split()[0]) > 150]
    limits = sorted({float(r[3].split()[0]) for r in smi if len(r) > 5})
    return {"processes": procs, "cudnn_over_flash_sm90": ratios,
            "smi_busy": {"samples": len(busy), "sm_mhz_min": min(m for m, _ in busy),
                         "sm_mhz_max": max(m for m, _ in busy), "power_w_max": max(w for _, w in busy),
                         "power_limit_w": limits}}


def g_summary():
    out = {name: _s55.details(os.path.join(HERE, "G", name, "details.txt"))
           for name in sorted(os.listdir(os.path.join(HERE, "G")))
           if os.path.isfile(os.path.join(HERE, "G", name, "details.txt"))}
    for path in sorted(glob.glob(os.path.join(HERE, "G", "tcudnn-*.txt"))):
        out[os.path.basename(path)[:-4]] = _s55.details(path)
    return out


def main():
    s = {"Q": q_summary(), "G": g_summary()}
    with open(os.path.join(HERE, "summary.json"), "w") as f:
        json.dump(s, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
