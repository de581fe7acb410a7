#!/usr/bin/env python3
"""Report bench/stats.sh and bench/logging.sh runs into bench/RESULTS.md.

Usage: report_variants.py KIND TSV VERSIONS OUT_MD COMMAND SETTINGS [EXTRA]

KIND is "stats" or "logging". Each TSV row is: round, then the ten fields of
lib/measure.sh (variant, class, mode, sent, completed, lost %, qps, user µs/q,
sys µs/q, dnsperf CPU %), then notes "key=value;..." (counters read around the
run). A variant is SERVER-WHAT; SERVER-off is its baseline, and every other
variant of that server is compared with it: the ratio of the mean answered
qps, the per-round ratios (round r of the variant over round r of the
baseline: they ran minutes apart at most), and the spread of each. EXTRA is
an optional file of text (the perf profile) appended verbatim. Only this
script's KIND block between its markers is replaced in OUT_MD.
"""
import datetime
import os
import statistics
import sys

kind, tsv, versions, out_md, command, settings = sys.argv[1:7]
extra = sys.argv[7] if len(sys.argv) > 7 else ""

rows = {}  # (variant, class, mode) -> list of dicts, in round order
variants, classes, modes = [], [], []
for line in open(tsv):
    f = line.rstrip("\n").split("\t")
    if len(f) < 11:
        continue
    rnd, v, c, m = int(f[0]), f[1], f[2], f[3]
    notes = {}
    for kv in (f[11].split(";") if len(f) > 11 and f[11] else []):
        k, _, val = kv.partition("=")
        notes[k] = val
    rows.setdefault((v, c, m), []).append(dict(
        round=rnd, sent=int(f[4]), done=int(f[5]), lost=float(f[6]), qps=float(f[7]),
        user=float(f[8]), sys=float(f[9]), gen=float(f[10]), notes=notes))
    for lst, x in ((variants, v), (classes, c), (modes, m)):
        if x not in lst:
            lst.append(x)

LABEL = {
    "bulwark-off": "bulwark, statistics off, no endpoint" if kind == "stats" else "bulwark, dnstap off",
    "bulwark-stats": "bulwark, statistics on, Prometheus endpoint scraped every second",
    "bulwark-file": "bulwark, dnstap to a file",
    "bulwark-unix": "bulwark, dnstap to a Unix socket (fstrm_capture)",
    "bulwark-stalled": "bulwark, dnstap to a receiver that stops reading",
    "knotd-off": "knotd, no module",
    "knotd-dnstap": "knotd, mod-dnstap to a file",
    "named-off": "named, querylog no",
    "named-querylog": "named, querylog yes to a file",
}
MODE = {"quota": "quota (max load under the CPU quota)", "max": "max (no quota)",
        "light": "light (fixed load)"}
# Issue 5: dnstap to a file or a socket costs at most 5% of the answered qps.
TARGET = {"bulwark-file": 0.95, "bulwark-unix": 0.95} if kind == "logging" else {}


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def spread(xs):
    """(max - min) / mean, in %: how far apart the rounds were."""
    m = mean(xs)
    return 100 * (max(xs) - min(xs)) / m if xs and m else 0.0


def counter_delta(rs, name):
    """Sum over the runs of a counter's after - before ('a>b' notes)."""
    total, seen = 0, False
    for r in rs:
        val = r["notes"].get(name)
        if not val or "?" in val:
            continue
        b, _, a = val.partition(">")
        total += int(a) - int(b)
        seen = True
    return total if seen else None


def fmt_count(x):
    return "–" if x is None else f"{x:,}"


md = []
title = {"stats": "Statistics on and off (bench/stats.sh, issue 6)",
         "logging": "Query logging: dnstap and the peers' logs (bench/logging.sh, issue 5)"}[kind]
md.append(f"# {title}\n")
md.append(f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC} with:\n")
md.append(f"```\n{command}\n```\n")
md.append(f"Settings: `{settings}`. Every server pinned to the same core with one worker, "
          "dnsperf (and the scraper or the dnstap receiver) pinned to the other; the same zone "
          "and query files as bench/auth.sh. Variants run in turn, round after round "
          "(each round restarts every server), so drift on the machine shows as spread "
          "between rounds rather than as a difference between variants.\n")
load = open("/proc/loadavg").read().split()[:3]
md.append(f"Load average at the end of the run: {' '.join(load)}.\n")
md.append("Versions:\n")
md.append("```\n" + open(versions).read().strip() + "\n```\n")

nrounds = max((len(x) for x in rows.values()), default=0)
md.append("## Raw figures\n")
md.append("Answered qps per round, then means over the rounds: CPU µs per answered "
          "query (server utime and stime over the run), lost %, dnsperf's CPU %.\n")
hdr = "| variant | class | mode | " + " | ".join(f"qps r{i + 1}" for i in range(nrounds)) + \
    " | mean qps | spread | user µs/q | sys µs/q | lost % | dnsperf CPU % |"
md.append(hdr)
md.append("|---|---|---|" + "--:|" * (nrounds + 6))
for m in modes:
    for c in classes:
        for v in variants:
            rs = rows.get((v, c, m))
            if not rs:
                continue
            q = [r["qps"] for r in rs]
            cells = [f"{x:.0f}" for x in q] + ["–"] * (nrounds - len(q))
            md.append(f"| {v} | {c} | {m} | " + " | ".join(cells) +
                      f" | {mean(q):.0f} | {spread(q):.1f}% | {mean([r['user'] for r in rs]):.2f} | "
                      f"{mean([r['sys'] for r in rs]):.2f} | {mean([r['lost'] for r in rs]):.2f} | "
                      f"{mean([r['gen'] for r in rs]):.0f} |")
md.append("")
md.append("Variants: " + "; ".join(f"`{v}` {LABEL.get(v, v)}" for v in variants) + ".\n")

md.append("## Ratios with / without\n")
md.append("qps ratio: mean answered qps of the variant over its server's `-off` baseline "
          "(> 1 faster). Per round: round r over round r. CPU ratio: total (user + sys) "
          "µs per query, variant over baseline (> 1 costs more).\n")
md.append("| server | variant | class | mode | qps ratio | per round | CPU/q ratio | target |")
md.append("|---|---|---|---|--:|---|--:|---|")
misses = []
for m in modes:
    for c in classes:
        for v in variants:
            server, _, what = v.partition("-")
            if what == "off":
                continue
            base = rows.get((f"{server}-off", c, m))
            rs = rows.get((v, c, m))
            if not base or not rs:
                continue
            bq, vq = mean([r["qps"] for r in base]), mean([r["qps"] for r in rs])
            per = [a["qps"] / b["qps"] for a, b in zip(rs, base) if b["qps"]]
            bt = mean([r["user"] + r["sys"] for r in base])
            vt = mean([r["user"] + r["sys"] for r in rs])
            ratio = vq / bq if bq else 0
            target = "–"
            if v in TARGET and m == "quota":
                ok = ratio >= TARGET[v]
                target = f"≥ {TARGET[v]}: {'met' if ok else 'MISSED'}"
                if not ok:
                    misses.append(f"{v} {c}: {ratio:.3f}")
            per_s = ", ".join(f"{x:.3f}" for x in per)
            if per:
                per_s += f" (min {min(per):.3f}, max {max(per):.3f})"
            md.append(f"| {server} | {what} | {c} | {m} | {ratio:.3f} | {per_s} | "
                      f"{(vt / bt if bt else 0):.3f} | {target} |")
md.append("")
if any(v in TARGET for v in variants) and "quota" in modes:
    if misses:
        md.append("Issue 5's target (dnstap on ≥ 0.95 × off, answered qps under the quota) "
                  "**missed** for: " + "; ".join(misses) + ".\n")
    else:
        md.append("Issue 5's target (dnstap on ≥ 0.95 × off, answered qps under the quota) "
                  "met for every class measured.\n")

# Counters read around each run (bulwark ctl stats; log octets from the file).
have_counters = any(r["notes"] for rs in rows.values() for r in rs)
if have_counters:
    md.append("## Counters over the measured runs\n")
    if kind == "logging":
        names = []
        for rs in rows.values():
            for r in rs:
                for k in r["notes"]:
                    if k != "log_bytes" and k not in names:
                        names.append(k)
        md.append("Summed over the rounds: answered queries, the log octets written (the "
                  "dnstap file, the file fstrm_capture wrote, knotd's sink, named's query "
                  "log), and the change of every `bulwark_dnstap_*_total` counter of "
                  "`bulwark ctl stats`, read before and after each run.\n")
        md.append("| variant | class | mode | answered | log MB | " +
                  " | ".join(f"dnstap {n.removesuffix('_total')}" for n in names) + " |")
        md.append("|---|---|---|--:|--:|" + "--:|" * len(names))
        for m in modes:
            for c in classes:
                for v in variants:
                    rs = rows.get((v, c, m))
                    if not rs:
                        continue
                    logb = sum(int(r["notes"].get("log_bytes", "0") or 0) for r in rs)
                    md.append(f"| {v} | {c} | {m} | {sum(r['done'] for r in rs):,} | "
                              f"{logb / 1e6:.1f} | " +
                              " | ".join(fmt_count(counter_delta(rs, n)) for n in names) + " |")
        md.append("")
        st = [(c, m, rows[("bulwark-stalled", c, m)]) for m in modes for c in classes
              if ("bulwark-stalled", c, m) in rows]
        if st:
            md.append("Stalled receiver, `bulwark_dnstap_frames_dropped_total` before → after "
                      "each run:\n")
            for c, m, rs in st:
                cells = ", ".join(f"r{r['round']}: {r['notes'].get('frames_dropped_total', '?').replace('>', ' → ')}"
                                  for r in rs)
                md.append(f"- {c} {m}: {cells}")
            md.append("")
    else:
        md.append("Per run of `bulwark-stats`: the scraper's successful / failed scrapes and "
                  "its mean time per scrape (the endpoint served on the server's core), and "
                  "the queries counter the last scrape showed.\n")
        md.append("| variant | class | mode | round | scrapes ok | failed | ms/scrape | "
                  "queries counter (last scrape) |")
        md.append("|---|---|---|--:|--:|--:|--:|--:|")
        for m in modes:
            for c in classes:
                for v in variants:
                    for r in rows.get((v, c, m), []):
                        n = r["notes"]
                        if "scrapes_ok" not in n:
                            continue
                        md.append(f"| {v} | {c} | {m} | {r['round']} | {n.get('scrapes_ok')} | "
                                  f"{n.get('scrapes_failed')} | {n.get('scrape_ms_mean')} | "
                                  f"{n.get('queries', '?')} |")
        md.append("")

if extra and os.path.exists(extra) and os.path.getsize(extra):
    md.append(open(extra).read().rstrip() + "\n")

md.append(f"Raw rows: `bench/results/{kind}-YYYYMMDD.tsv` (round, then the columns of "
          "`auth-*.tsv`, then the counters as notes).\n")

BEGIN = f"<!-- bench/{kind}.sh: begin -->"
END = f"<!-- bench/{kind}.sh: end -->"
block = BEGIN + "\n" + "\n".join(md) + "\n" + END
old = open(out_md).read() if os.path.exists(out_md) else ""
if BEGIN in old and END in old:
    head, rest = old.split(BEGIN, 1)
    text = head + block + rest.split(END, 1)[1]
else:
    text = (old.rstrip("\n") + "\n\n" + block + "\n") if old else block + "\n"
with open(out_md, "w") as f:
    f.write(text)
print("\n".join(md))
