#!/usr/bin/env python3
"""Turn the rows bench/auth.sh measured into bench/RESULTS.md and a chart.

Usage: report.py RESULTS_TSV VERSIONS OUT_MD CHART_PNG COMMAND SETTINGS
"""
import datetime
import os
import subprocess
import sys

tsv, versions, out_md, chart, command, settings = sys.argv[1:7]
runs = {}
servers, classes, modes = [], [], []
for line in open(tsv):
    f = line.rstrip("\n").split("\t")
    if len(f) < 10:
        continue
    s, c, m = f[:3]
    sent, done = int(f[3]), int(f[4])
    lost, qps, user, sys_, gen = map(float, f[5:10])
    runs.setdefault((s, c, m), []).append(
        dict(sent=sent, done=done, lost=lost, qps=qps, user=user, sys=sys_, gen=gen))
    for lst, v in ((servers, s), (classes, c), (modes, m)):
        if v not in lst:
            lst.append(v)


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


# With ROUNDS > 1 every (server, class, mode) was measured once a round:
# each figure is its median over the rounds, each taken on its own (so
# total is the median of user + sys, not the sum of the two medians).
rows = {}
for key, rs in runs.items():
    row = {k: median([r[k] for r in rs]) for k in ("sent", "done", "lost", "qps", "user", "sys", "gen")}
    row["total"] = median([r["user"] + r["sys"] for r in rs])
    row["rounds"] = len(rs)
    rows[key] = row
rounds = max((r["rounds"] for r in rows.values()), default=1)

peers = [s for s in servers if s not in ("null", "bulwark")]
best_peers = [s for s in ("knotd", "nsd") if s in servers]
mode_title = {
    "light": "Light fixed load (dnsperf -Q LIGHT_QPS)",
    "max": "Maximum load (dnsperf unlimited)",
    "quota": "CPU quota (cgroup v1 cfs quota; dnsperf unlimited)",
    "scale1": "bulwark, 1 worker under one quarter-core (dnsperf -c 8)",
    "scale2": "bulwark, 2 workers under two quarter-cores (dnsperf -c 8)",
}

def fmt(x, d=2):
    return f"{x:.{d}f}"

def ratio(a, b):
    return f"{a / b:.2f}" if b else "–"

md = []
md.append("# Authoritative benchmark results\n")
md.append(f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC} with:\n")
md.append(f"```\n{command}\n```\n")
md.append(f"Settings: `{settings}`. Each server pinned to one core with one worker "
          "(`taskset`), dnsperf pinned to the other. CPU per query is the server's "
          "utime/stime from /proc/PID/stat over the run divided by answered queries "
          "(clock-tick resolution: with ~100k answers per run, ±0.1 µs).\n")
if rounds > 1:
    md.append(f"Each figure is the median of {rounds} rounds; each round restarts every "
              "server and measures every class and mode again, so drift on the machine "
              "shows as spread between rounds (see the last table) rather than as a "
              "difference between servers.\n")
load = open("/proc/loadavg").read().split()[:3]
md.append(f"Load average at the end of the run: {' '.join(load)} (2 CPUs: the "
          "benchmark itself keeps both busy; anything else running on the machine "
          "during the run skews the figures).\n")
md.append("Versions:\n")
md.append("```\n" + open(versions).read().strip() + "\n```\n")
md.append(f"![qps and CPU per query]({os.path.relpath(chart, os.path.dirname(out_md))})\n")

for m in modes:
    md.append(f"## {mode_title.get(m, m)}\n")
    md.append("| class | server | answered qps | lost % | user µs/q | sys µs/q | total µs/q | × null | dnsperf CPU % |")
    md.append("|---|---|--:|--:|--:|--:|--:|--:|--:|")
    for c in classes:
        null = rows.get(("null", c, m))
        for s in servers:
            r = rows.get((s, c, m))
            if not r:
                continue
            xn = ratio(r["total"], null["total"]) if null else "–"
            md.append(f"| {c} | {s} | {r['qps']:.0f} | {fmt(r['lost'])} | {fmt(r['user'])} | "
                      f"{fmt(r['sys'])} | {fmt(r['total'])} | {xn} | {r['gen']:.0f} |")
    md.append("")

if "bulwark" in servers and peers:
    md.append("## Ratios bulwark / peer\n")
    md.append("User and total are CPU µs per answered query (lower is better for "
              "bulwark: < 1); qps is answered queries per second (> 1 is better).\n")
    md.append("| mode | class | " + " | ".join(
        f"user /{p} | total /{p} | qps /{p}" for p in peers) + " |")
    md.append("|---|---|" + "--:|" * (3 * len(peers)))
    for m in modes:
        if m.startswith("scale"):
            continue
        for c in classes:
            b = rows.get(("bulwark", c, m))
            if not b:
                continue
            cells = []
            for p in peers:
                r = rows.get((p, c, m))
                if not r:
                    cells += ["–"] * 3
                    continue
                cells += [ratio(b["user"], r["user"]), ratio(b["total"], r["total"]),
                          ratio(b["qps"], r["qps"])]
            md.append(f"| {m} | {c} | " + " | ".join(cells) + " |")
    md.append("")

    if best_peers:
        md.append("## Issue 7 targets (against the best of knotd/nsd, same run)\n")
        md.append("User time is compared at maximum load: the kernel splits CPU time "
                  "into user and system by sampling at each timer tick (250 Hz here, "
                  "no precise accounting), and at the light load a run gives a server "
                  "only a few dozen user ticks, too few for a ratio. Total time is "
                  "exact at any load.\n")
        md.append("| class | user ≤ 0.5× best (max) | total ≤ 0.95× best (light) | "
                  "total ≤ 1.1× null (light) | quota qps ≥ 1.05× best |")
        md.append("|---|---|---|---|---|")
        def verdict(val, limit, lower=True):
            ok = val <= limit if lower else val >= limit
            return f"{val:.2f} {'met' if ok else 'missed'}"
        for c in classes:
            b = rows.get(("bulwark", c, "light"))
            bm = rows.get(("bulwark", c, "max"))
            cells = []
            pu = [rows[(p, c, "max")]["user"] for p in best_peers if (p, c, "max") in rows]
            cells.append(verdict(bm["user"] / min(pu), 0.5) if bm and pu and min(pu) else "–")
            if b:
                bt = min(rows[(p, c, "light")]["total"] for p in best_peers if (p, c, "light") in rows)
                cells.append(verdict(b["total"] / bt, 0.95) if bt else "–")
                n = rows.get(("null", c, "light"))
                cells.append(verdict(b["total"] / n["total"], 1.1) if n and n["total"] else "–")
            else:
                cells += ["–"] * 2
            bq = rows.get(("bulwark", c, "quota"))
            pq = [rows[(p, c, "quota")]["qps"] for p in best_peers if (p, c, "quota") in rows]
            cells.append(verdict(bq["qps"] / max(pq), 1.05, lower=False) if bq and pq and max(pq) else "–")
            md.append(f"| {c} | " + " | ".join(cells) + " |")
        md.append("")

if any(m.startswith("scale") for m in modes):
    md.append("## Scaling: 2 workers under two quarter-cores against 1 under one\n")
    md.append("Both runs pinned to the server core, dnsperf with 8 client sockets so "
              "SO_REUSEPORT spreads queries over the workers. Target: ≥ 1.8×.\n")
    md.append("| class | 1 worker qps | 2 workers qps | scaling | target |")
    md.append("|---|--:|--:|--:|---|")
    for c in classes:
        one, two = rows.get(("bulwark", c, "scale1")), rows.get(("bulwark", c, "scale2"))
        if not one or not two or not one["qps"]:
            continue
        x = two["qps"] / one["qps"]
        md.append(f"| {c} | {one['qps']:.0f} | {two['qps']:.0f} | {x:.2f} | "
                  f"{'met' if x >= 1.8 else 'missed'} |")
    md.append("")

if rounds > 1:
    md.append("### User CPU at maximum load, every round\n")
    md.append("µs per answered query, round by round; the user/system split comes from "
              "the kernel's per-tick sampling, the noisiest figure of the run.\n")
    shown = [s for s in ("bulwark", "knotd", "nsd") if s in servers]
    md.append("| class | " + " | ".join(shown) + " |")
    md.append("| --- |" + " --- |" * len(shown))
    for c in classes:
        cells = []
        for s in shown:
            rs = runs.get((s, c, "max"), [])
            cells.append(", ".join(f"{r['user']:.2f}" for r in rs) or "–")
        md.append(f"| {c} | " + " | ".join(cells) + " |")
    md.append("")

md.append("Raw rows: `bench/results/` (TSV: server, class, mode, sent, completed, "
          "lost %, qps, user µs/q, sys µs/q, dnsperf CPU %).\n")
# RESULTS.md holds every benchmark's latest run: replace only this script's
# block between its markers, keeping the other benchmarks' sections.
BEGIN, END = "<!-- bench/auth.sh: begin -->", "<!-- bench/auth.sh: end -->"
block = BEGIN + "\n" + "\n".join(md) + "\n" + END
os.makedirs(os.path.dirname(out_md) or ".", exist_ok=True)
old = open(out_md).read() if os.path.exists(out_md) else ""
if BEGIN in old and END in old:
    head, rest = old.split(BEGIN, 1)
    text = head + block + rest.split(END, 1)[1]
else:
    text = block + "\n\n" + old if old else block + "\n"
with open(out_md, "w") as f:
    f.write(text)
print("\n".join(md))

# The chart: answered qps per server and class (max and quota modes) and CPU
# µs per query (user and system, light load) as clustered bars.
os.makedirs(os.path.dirname(chart), exist_ok=True)
dat = chart + ".dat"
panels = []
with open(dat, "w") as f:
    block = 0
    for key, m, title in (("qps", "max", "answered qps, dnsperf unlimited"),
                          ("qps", "quota", "answered qps under the CPU quota"),
                          ("user", "light", "user CPU µs per query, light load"),
                          ("total", "light", "user+system CPU µs per query, light load")):
        if m not in modes:
            continue
        f.write("class " + " ".join(servers) + "\n")
        for c in classes:
            f.write(c + " " + " ".join(
                fmt(rows[(s, c, m)][key], 3) if (s, c, m) in rows else "0" for s in servers) + "\n")
        f.write("\n\n")
        panels.append((block, title))
        block += 1
if panels:
    gp = [f"set terminal pngcairo size 1200,{330 * len(panels)} font ',10'",
          f"set output '{chart}'",
          f"set multiplot layout {len(panels)},1",
          "set style data histograms", "set style histogram clustered gap 1",
          "set style fill solid 0.8 border -1", "set key outside right top",
          "set grid ytics", "set yrange [0:*]"]
    for block, title in panels:
        gp.append(f"set title '{title}'")
        gp.append("plot " + ", ".join(
            f"'{dat}' index {block} using {i + 2}:xtic(1) title columnhead({i + 2})"
            for i in range(len(servers))))
    gp.append("unset multiplot")
    try:
        subprocess.run(["gnuplot"], input="\n".join(gp), text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"chart not drawn: {e}", file=sys.stderr)
