"""Draws bench/transports.sh's summary.tsv as seed 004's Figures 2 and 3 do:
answered queries per second, and the server's CPU per answered query, for
every transport and connection pattern, one bar per server (log scales: one
query per connection costs a hundred times a long-lived one).

usage: transports_chart.py SUMMARY.tsv CHART.png
"""

import csv
import subprocess
import sys

summary, chart = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(summary), delimiter="\t"))
servers, labels = [], []
for r in rows:
    if r["server"] not in servers:
        servers.append(r["server"])
    if r["transport"] not in labels:
        labels.append(r["transport"])
value = {(r["server"], r["transport"]): r for r in rows}
dat = chart + ".dat"
with open(dat, "w") as f:
    for key in ("qps", "cpu_us_per_query"):
        f.write("transport " + " ".join(servers) + "\n")
        for t in labels:
            cells = []
            for s in servers:
                r = value.get((s, t))
                v = float(r[key]) if r else 0.0
                cells.append(f"{v:.3f}" if v > 0 else "NaN")
            f.write(t + " " + " ".join(cells) + "\n")
        f.write("\n\n")
plot = [
    # Labels such as udp@quota are text, not gnuplot's enhanced markup.
    "set terminal pngcairo noenhanced size 1400,900 font ',10'",
    f"set output '{chart}'",
    "set multiplot layout 2,1",
    "set style data histograms",
    "set style histogram clustered gap 1",
    "set style fill solid 0.8 border -1",
    "set key outside right top",
    "set grid ytics",
    "set logscale y",
    "set xtics rotate by -45",
]
for block, title in ((0, "answered queries per second (one core)"),
                     (1, "server CPU µs per answered query")):
    plot.append(f"set title '{title}'")
    plot.append("plot " + ", ".join(
        f"'{dat}' index {block} using {i + 2}:xtic(1) title columnhead({i + 2})"
        for i in range(len(servers))))
plot.append("unset multiplot")
subprocess.run(["gnuplot"], input="\n".join(plot), text=True, check=True)
