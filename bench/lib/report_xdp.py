#!/usr/bin/env python3
"""The report of bench/xdp.sh: raw figures and the issue-26 targets.

Usage: report_xdp.py ROWS VERSIONS COMMAND

ROWS: TSV lines "mode server class flows sent replies qps us_per_reply loss%
user_us sys_us",
one per run; rounds of the same (mode, server, class) are reduced to their
median.
"""
import statistics
import sys
from collections import defaultdict

rows_path, versions, command = sys.argv[1:4]
runs = defaultdict(list)
flows = {}
classes = []
for line in open(rows_path):
    f = line.rstrip("\n").split("\t")
    if len(f) != 11:
        continue
    mode, server, cls, nflows = f[0], f[1], f[2], f[3]
    sent, replies, qps, us, loss = int(f[4]), int(f[5]), float(f[6]), float(f[7]), float(f[8])
    user, system = float(f[9]), float(f[10])
    runs[(mode, server, cls)].append((qps, us, loss, sent, replies, user, system))
    flows[cls] = nflows
    if cls not in classes:
        classes.append(cls)


def med(key, i):
    vals = [r[i] for r in runs.get(key, [])]
    return statistics.median(vals) if vals else None


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "–"


def mark(value, target, higher=True):
    if value is None:
        return "–"
    ok = value >= target if higher else value <= target
    return f"{value:.2f} {'met' if ok else 'missed'}"


print("## AF_XDP and many flows (`bench/xdp.sh`)")
print()
print(f"Command: `{command}`")
print()
print(f"Versions: {versions}")
print()
print("kxdpgun (on AF_XDP itself) in one namespace drives each server in another over a veth "
      "pair, each query from one of the flow network's addresses and a random port; the "
      "server alone on its core, every thread pinned. qps = replies per second; CPU = the "
      "server's user+system time per reply (on veth, the kernel's delivery of a reply to the "
      "generator runs on the sender's core, so it is in every server's figure alike).")
print()
print("| mode | server | class | client flows | sent | replies | qps | CPU µs/reply (user + system) | loss % |")
print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
for (mode, server, cls), rs in runs.items():
    print(f"| {mode} | {server} | {cls} | {flows[cls]} addresses × ports | "
          f"{int(med((mode, server, cls), 3))} | {int(med((mode, server, cls), 4))} | "
          f"{med((mode, server, cls), 0):.0f} | {med((mode, server, cls), 1):.3f} "
          f"({med((mode, server, cls), 5):.2f} + {med((mode, server, cls), 6):.2f}) | "
          f"{med((mode, server, cls), 2):.1f} |")
print()
print("### Targets")
print()
print("| class | client flows | AF_XDP qps: bulwark / knotd XDP (≥ 1.3) | CPU/reply: bulwark / knotd XDP | "
      "bulwark AF_XDP / own socket path (≥ 3) | quarter core, socket paths: bulwark / best of knotd, NSD (≥ 1.05) |")
print("| --- | --- | --- | --- | --- | --- |")
for cls in classes:
    bx = med(("xdp", "bulwark-xdp", cls), 0)
    kx = med(("xdp", "knotd-xdp", cls), 0)
    bxu = med(("xdp", "bulwark-xdp", cls), 1)
    kxu = med(("xdp", "knotd-xdp", cls), 1)
    bs = med(("socket", "bulwark-socket", cls), 0)
    bq = med(("quota", "bulwark-socket", cls), 0)
    peers = [q for q in (med(("quota", "knotd-socket", cls), 0), med(("quota", "nsd-socket", cls), 0)) if q]
    best = max(peers) if peers else None
    print(f"| {cls} | {flows[cls]} addresses × ports | "
          f"{mark(bx / kx if bx and kx else None, 1.3)} | {ratio(bxu, kxu)} | "
          f"{mark(bx / bs if bx and bs else None, 3.0)} | "
          f"{mark(bq / best if bq and best else None, 1.05)} |")
