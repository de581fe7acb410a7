#!/usr/bin/python3
"""Turn bench/resolver.sh's raw files into tables, ratios and charts.

Usage: report.py OUT_DIR

Reads OUT_DIR/raw/ (per run WORKLOAD-RESOLVER-pPASS.{meta,resperf.txt,plot,
samples.tsv,check.txt,dnssec.txt}, plus settings.txt and versions.txt) and writes
OUT_DIR/report.md (printed too), OUT_DIR/summary.tsv (one row per run),
OUT_DIR/curves-WORKLOAD.tsv and the charts OUT_DIR/WORKLOAD.png.

Definitions (seed 000, section IV):
- offered rate: resperf's target qps at that moment of its ramp;
- lost: unanswered within resperf's timeout, or answered with anything but
  NOERROR or NXDOMAIN (the seed counts SERVFAIL as lost);
- successful qps: answers that are not lost, per second;
- the knee: the first moment (after the first second) where the loss over
  three consecutive plot intervals passes 1%; "max qps at <1% loss" is the
  highest successful rate (three intervals averaged) before it;
- CPU per answer: the resolver's user and system time (/proc/PID/stat) over
  the run, divided by the answers that were not lost; "to the knee" counts
  only the time and answers before the knee;
- memory per cached RRset: the growth of the resolver's RSS while priming
  the warm workload, divided by the RRsets (or entries) its cache gained.
"""

import collections
import datetime
import glob
import os
import re
import subprocess
import sys

LOSS_LIMIT = 1.0  # percent
# Mean latency past which a rate is not served, whatever the loss: a
# resolver that queues answers them late but in time for resperf's timeout
# (seconds), so its knee by loss alone measures its queue's depth as much
# as the rate it keeps up with.
LATENCY_BOUND_MS = float(os.environ.get("LATENCY_BOUND_MS", "100"))
CPU_BOUND = 85.0  # percent of the resolver's core
CORE_BOUND = 95.0  # percent of the resolver's core, with others' work
# resperf spins: its core is always busy, and it takes what the
# authoritative servers leave. They (or others' work there) are the limit
# when they take this much of it.
AUTH_BOUND = 40.0

WORKLOAD_TITLE = {
    "cold": "Cold cache: distinct questions over the simulated internet",
    "cold-validating": "Cold cache, validating: distinct questions over the signed internet, DNSSEC validation on",
    "warm": "Cache hits (warm): primed questions asked again",
    "forward": "Forwarding: every question to one upstream that answers every name",
}
ORDER = ["bulwark", "unbound", "kresd", "pdns_recursor", "named", "dnsdist"]


def read_kv(path):
    out = {}
    try:
        for line in open(path):
            k, _, v = line.rstrip("\n").partition(" ")
            if k:
                out[k] = v
    except OSError:
        pass
    return out


def num(text, default=None):
    try:
        return float(text)
    except (TypeError, ValueError):
        return default


def parse_resperf(path):
    text = open(path, errors="replace").read() if os.path.exists(path) else ""

    def grab(pat, cast=float, default=0):
        m = re.search(pat, text)
        return cast(m.group(1)) if m else default

    r = {
        "sent": grab(r"Queries sent:\s+(\d+)", int),
        "completed": grab(r"Queries completed:\s+(\d+)", int),
        "runtime": grab(r"Run time \(s\):\s+([\d.]+)"),
        "resperf_max": grab(r"Maximum throughput:\s+([\d.]+)"),
        "fell_behind": grab(r"Fell behind by \d+ queries, ending test at ([\d.]+) qps", float, None),
        "outstanding": grab(r"Reached (\d+) outstanding", int, None),
        "rcodes": {},
        "error": None,
    }
    m = re.search(r"Response codes:\s+(.*)", text)
    if m:
        for name, count in re.findall(r"([A-Z]+) (\d+) \(", m.group(1)):
            r["rcodes"][name] = int(count)
    if "Statistics:" not in text:
        tail = [l for l in text.splitlines() if l.strip()][-1:] or ["no output"]
        r["error"] = tail[0]
    return r


def parse_plot(path):
    rows = []
    if not os.path.exists(path):
        return rows
    for line in open(path):
        if line.startswith("#"):
            continue
        f = line.split()
        if len(f) >= 6:
            rows.append(dict(t=float(f[0]), target=float(f[1]), sent=float(f[2]),
                             resp=float(f[3]), fail=float(f[4]), lat=float(f[5])))
    return rows


def parse_samples(path):
    if not os.path.exists(path):
        return [], []
    lines = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
    if len(lines) < 2:
        return [], []
    head = lines[0]
    rows = []
    for l in lines[1:]:
        if len(l) == len(head):
            rows.append({h: float(v) for h, v in zip(head, l)})
    return head, rows


def interp(samples, key, t):
    """A cumulative counter at time t (seconds since resperf started)."""
    if not samples or key not in samples[0]:
        return 0.0
    if t <= samples[0]["t"]:
        return samples[0][key]
    for a, b in zip(samples, samples[1:]):
        if a["t"] <= t <= b["t"]:
            if b["t"] == a["t"]:
                return b[key]
            return a[key] + (b[key] - a[key]) * (t - a["t"]) / (b["t"] - a["t"])
    return samples[-1][key]


def median(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def analyse(meta_path):
    base = meta_path[: -len(".meta")]
    meta = read_kv(meta_path)
    if "workload" not in meta:
        return None
    run = dict(id=os.path.basename(base), workload=meta["workload"], resolver=meta["resolver"],
               passno=int(meta.get("pass", 1)), max_qps=num(meta.get("max_qps"), 0),
               backend=meta.get("backend"))
    hz = num(meta.get("clk_tck"), 100)
    interval = num(meta.get("interval"), 0.5)
    rp = parse_resperf(base + ".resperf.txt")
    run.update(sent=rp["sent"], completed=rp["completed"], resperf_max=rp["resperf_max"],
               fell_behind=rp["fell_behind"], outstanding=rp["outstanding"], error=rp["error"],
               rcodes=rp["rcodes"])
    ok = rp["rcodes"].get("NOERROR", 0) + rp["rcodes"].get("NXDOMAIN", 0)
    run["ok"] = ok
    run["servfail"] = rp["rcodes"].get("SERVFAIL", 0)
    run["lost_pct"] = 100.0 * (rp["sent"] - ok) / rp["sent"] if rp["sent"] else None
    run["ok_qps"] = ok / rp["runtime"] if rp["runtime"] else None
    tb = [int(x) for x in meta.get("ticks_before", "0 0").split()]
    ta = [int(x) for x in meta.get("ticks_after", "0 0").split()]
    run["user_us"] = (ta[0] - tb[0]) * 1e6 / hz / ok if ok else None
    run["sys_us"] = (ta[1] - tb[1]) * 1e6 / hz / ok if ok else None
    run["total_us"] = (run["user_us"] + run["sys_us"]) if ok else None
    run["alive"] = meta.get("alive", "?")
    run["unexpected_ids"] = num(meta.get("unexpected_ids"))
    run["check"] = meta.get("check", "")
    run["dnssec"] = meta.get("dnssec", "")

    # Memory per cached RRset: while priming (warm), else over the run.
    kb = lambda k: num(meta.get(k))
    if kb("rss_primed_kb") is not None and kb("rrsets_primed"):
        grew = kb("rss_primed_kb") - kb("rss_start_kb")
        gained = kb("rrsets_primed") - (kb("rrsets_start") or 0)
        run["rrsets"] = kb("rrsets_primed")
        run["rss_mb"] = kb("rss_primed_kb") / 1024
    else:
        grew = (kb("rss_end_kb") or 0) - (kb("rss_start_kb") or 0)
        gained = (kb("rrsets_end") or 0) - (kb("rrsets_start") or 0)
        run["rrsets"] = kb("rrsets_end")
        run["rss_mb"] = (kb("rss_end_kb") or 0) / 1024
    run["bytes_per_rrset"] = grew * 1024 / gained if gained and gained > 0 else None

    # Per plot interval: offered rate, sent, lost, successes, latency, and
    # from the samples the load of the resolver's and the generator's cores.
    buckets = parse_plot(base + ".plot")
    head, samples = parse_samples(base + ".samples.tsv")
    t0 = num(meta.get("t0"), 0)
    # A process that exited reads as zero from then on: keep its counters
    # where they were.
    for k in head:
        if k != "wall":
            last = None
            for s in samples:
                if last is not None and s[k] < last:
                    s[k] = last
                last = s[k]
    for s in samples:
        s["t"] = s["wall"] - t0
        s["res_cpu"] = s.get("resolver_utime", 0) + s.get("resolver_stime", 0)
    gen_cpu = f"cpu{meta.get('gen_cpu', os.environ.get('GEN_CPU', '0'))}"
    settings_gen = read_kv(os.path.join(os.path.dirname(meta_path), "settings.txt")).get("gen_cpu")
    if settings_gen is not None:
        gen_cpu = f"cpu{settings_gen}"
    res_core = f"cpu{read_kv(os.path.join(os.path.dirname(meta_path), 'settings.txt')).get('resolver_cpu', '1')}"
    for b in buckets:
        lo, hi = b["t"] - interval / 2, b["t"] + interval / 2
        dt = hi - lo
        b["queries"] = b["sent"] * interval
        b["lost"] = max(0.0, (b["sent"] - b["resp"] + b["fail"]) * interval)
        b["ok_qps"] = b["resp"] - b["fail"]
        b["res_cpu_pct"] = 100 * (interp(samples, "res_cpu", hi) - interp(samples, "res_cpu", lo)) / hz / dt
        b["resperf_pct"] = 100 * ((interp(samples, "resperf_utime", hi) + interp(samples, "resperf_stime", hi))
                                  - (interp(samples, "resperf_utime", lo) + interp(samples, "resperf_stime", lo))) / hz / dt
        b["auth_pct"] = 100 * ((interp(samples, "auth_utime", hi) + interp(samples, "auth_stime", hi))
                               - (interp(samples, "auth_utime", lo) + interp(samples, "auth_stime", lo))) / hz / dt
        for name, core in (("gen_core_pct", gen_cpu), ("res_core_pct", res_core)):
            busy = interp(samples, core + "_busy", hi) - interp(samples, core + "_busy", lo)
            total = interp(samples, core + "_total", hi) - interp(samples, core + "_total", lo)
            b[name] = 100 * busy / total if total > 0 else 0.0
            sirq = interp(samples, core + "_softirq", hi) - interp(samples, core + "_softirq", lo)
            b[name.replace("core", "softirq")] = 100 * sirq / total if total > 0 else 0.0
    for i, b in enumerate(buckets):
        w = buckets[max(0, i - 1): i + 2]
        q = sum(x["queries"] for x in w)
        b["loss3"] = 100 * sum(x["lost"] for x in w) / q if q else 0.0
        b["ok3"] = sum(x["ok_qps"] for x in w) / len(w)
        b["lost_pct"] = 100 * b["lost"] / b["queries"] if b["queries"] else 0.0
    run["buckets"] = buckets

    knee = None
    for i, b in enumerate(buckets):
        if b["t"] > 1.0 and b["queries"] >= 20 and b["loss3"] > LOSS_LIMIT:
            knee = i
            break
    run["knee"] = knee
    # The latency knee: the first moment where the mean latency over three
    # intervals passes LATENCY_BOUND_MS, or the loss knee if sooner.
    lat_knee = knee
    for i, b in enumerate(buckets[: knee if knee is not None else len(buckets)]):
        w = buckets[max(0, i - 1): i + 2]
        answered = sum(x["resp"] for x in w)
        lat3 = sum(x["lat"] * x["resp"] for x in w) / answered if answered else 0.0
        if b["t"] > 1.0 and b["queries"] >= 20 and 1000 * lat3 > LATENCY_BOUND_MS:
            lat_knee = i
            break
    below_lat = buckets[:lat_knee] if lat_knee is not None else buckets
    run["max_ok_qps_latency"] = max((b["ok3"] for b in below_lat), default=None)
    below = buckets[:knee] if knee is not None else buckets
    run["max_ok_qps"] = max((b["ok3"] for b in below), default=None)
    run["knee_offered"] = buckets[knee]["target"] if knee is not None else None
    resp = sum(b["resp"] * interval for b in below)
    run["latency_ms"] = (1000 * sum(b["lat"] * b["resp"] * interval for b in below) / resp) if resp else None
    ok_below = sum(b["ok_qps"] * interval for b in below)
    if below and ok_below > 0 and samples:
        t_end = below[-1]["t"] + interval / 2
        u = interp(samples, "resolver_utime", t_end) - interp(samples, "resolver_utime", 0)
        s = interp(samples, "resolver_stime", t_end) - interp(samples, "resolver_stime", 0)
        run["user_knee_us"] = u * 1e6 / hz / ok_below
        run["sys_knee_us"] = s * 1e6 / hz / ok_below
    else:
        run["user_knee_us"] = run["sys_knee_us"] = None

    # What bounded the run, judged over the intervals leading to the knee
    # (or the last ones, when there was none).
    win = buckets[max(0, knee - 2): knee + 1] if knee is not None else buckets[-3:]
    avg = lambda k: sum(b[k] for b in win) / len(win) if win else 0.0
    res_cpu, gen_core = avg("res_cpu_pct"), avg("gen_core_pct")
    resperf_cpu, auth_cpu = avg("resperf_pct"), avg("auth_pct")
    # Whatever else ran on the two cores (the machine is shared): a core's
    # load less what the benchmark's own processes used there. On the
    # resolver's core, the kernel's softirq time is mostly the delivery of
    # the resolver's own datagrams (loopback delivers on the sending core),
    # charged to no process: counted apart from other processes' work.
    res_softirq = avg("res_softirq_pct")
    res_others = max(0.0, avg("res_core_pct") - res_cpu - res_softirq)
    gen_others = max(0.0, gen_core - resperf_cpu - auth_cpu)
    run.update(res_cpu_at_knee=res_cpu, gen_core_at_knee=gen_core, resperf_cpu_at_knee=resperf_cpu,
               auth_cpu_at_knee=auth_cpu, res_others_at_knee=res_others, gen_others_at_knee=gen_others,
               res_softirq_at_knee=res_softirq)
    # Datagrams the kernel dropped for want of receive-buffer space during
    # the run, by whose socket they were for:
    # - listen: the resolver's (or dnsdist's) port 53 socket: client
    #   questions it did not read in time (meta drops_*, /proc/net/udp);
    # - upstream: the resolver's other sockets, answers from the
    #   authoritative servers or the forwarder it did not read in time;
    # - auth: the authoritative servers' sockets (queries from the resolver);
    # - resperf: answers resperf did not read in time (a generator limit);
    # - unattributed: sockets opened and closed between two samples (a
    #   resolver's per-query upstream sockets), from the namespace total.
    db = [int(x) for x in meta.get("drops_before", "0 0 0").split()]
    da = [int(x) for x in meta.get("drops_after", "0 0 0").split()]
    d_listen = max(0, da[0] - db[0])
    delta = lambda k: (samples[-1][k] - samples[0][k]) if samples and k in samples[0] else None
    d_res_all, d_auth, d_resperf = delta("resolver_drops"), delta("auth_drops"), delta("resperf_drops")
    d_total = delta("udp_rcvbuf_errors")
    if d_res_all is None:  # samples from before the drop columns
        d_res_all, d_auth, d_resperf = d_listen, max(0, da[1] - db[1]), 0
        d_total = max(0, da[2] - db[2])
    d_upstream = max(0, d_res_all - d_listen)
    d_other = max(0, d_total - max(d_res_all, d_listen) - d_auth - d_resperf)
    run.update(drops_listen=d_listen, drops_upstream=d_upstream, drops_auth=d_auth,
               drops_resperf=d_resperf, drops_other=d_other)
    d_res = d_listen
    fb = rp["fell_behind"]
    lost = max(1, rp["sent"] - ok)
    if run["error"]:
        bound = f"resperf failed: {run['error']}"
    elif run["alive"] == "no":
        bound = "the resolver died during the run"
    elif fb is not None and (knee is None or fb <= (run["knee_offered"] or 0) * 1.05):
        bound = f"generator: resperf fell behind at {fb:.0f} qps"
    elif knee is None:
        bound = f"offered rate: under 1% loss up to {run['max_qps']:.0f} qps"
    elif res_cpu >= CPU_BOUND:
        bound = "resolver CPU"
    elif res_cpu + res_softirq + res_others >= CORE_BOUND and res_others >= 10:
        bound = f"resolver core shared with other work ({res_others:.0f}%)"
    elif res_cpu + res_softirq + res_others >= CORE_BOUND:
        bound = (f"resolver CPU ({res_cpu:.0f}% itself, {res_softirq:.0f}% the kernel delivering "
                 "its datagrams)")
    elif auth_cpu >= AUTH_BOUND or gen_others >= AUTH_BOUND:
        bound = "generator core: the authoritative servers (or other work) took its time"
    elif d_res >= 0.5 * lost:
        bound = "loss, not CPU: dropped at the resolver's listening socket"
    elif d_resperf >= 0.5 * lost:
        bound = "generator: answers dropped at resperf's socket"
    elif d_auth >= 0.1 * lost:
        bound = "loss, not CPU: the authoritative servers' sockets dropped queries"
    elif d_upstream + d_other >= 0.1 * lost:
        bound = "loss, not CPU: answers dropped at the resolver's upstream sockets"
    else:
        bound = "loss, not CPU: a limit on queries in flight, timeouts or SERVFAIL"
    run["bound"] = bound
    run["bound_short"] = bound.split(":")[0].split(" (")[0]
    return run


def read_stats(path):
    """{metric{labels}: value} of a `bulwark ctl stats` dump."""
    out = {}
    try:
        for line in open(path, errors="replace"):
            k, _, v = line.strip().rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    except OSError:
        pass
    return out


def fmt(x, d=2):
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    return f"{x:,.{d}f}" if d else f"{x:,.0f}"


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b not in (None, 0) else "–"


def main():
    out = sys.argv[1]
    raw = os.path.join(out, "raw")
    settings = read_kv(os.path.join(raw, "settings.txt"))
    runs = [r for r in (analyse(p) for p in sorted(glob.glob(os.path.join(raw, "*.meta")))) if r]
    # Runs that did not happen: (id, why) from the meta file's first line
    # ("failed start", "failed dnssec: ...").
    failed = []
    for p in sorted(glob.glob(os.path.join(raw, "*.meta"))):
        if read_kv(p).get("workload") is None:
            with open(p, errors="replace") as f:
                failed.append((os.path.basename(p)[:-5], f.readline().strip()))
    by = collections.defaultdict(list)
    for r in runs:
        by[(r["workload"], r["resolver"])].append(r)
    workloads = [w for w in ("cold", "cold-validating", "warm", "forward") if any(k[0] == w for k in by)]
    resolvers = [x for x in ORDER if any(k[1] == x for k in by)]
    resolvers += sorted({k[1] for k in by} - set(resolvers))

    fields = ["sent", "ok", "lost_pct", "servfail", "max_ok_qps", "max_ok_qps_latency", "resperf_max",
              "latency_ms",
              "user_us", "sys_us", "total_us", "user_knee_us", "sys_knee_us", "rrsets", "rss_mb",
              "bytes_per_rrset", "res_cpu_at_knee", "gen_core_at_knee", "knee_offered"]
    med = {}
    for key, rs in by.items():
        m = {f: median([r[f] for r in rs]) for f in fields}
        m["total_knee_us"] = median([(r["user_knee_us"] or 0) + (r["sys_knee_us"] or 0)
                                     if r["user_knee_us"] is not None else None for r in rs])
        m["passes"] = len(rs)
        m["bounds"] = [r["bound"] for r in sorted(rs, key=lambda r: r["passno"])]
        m["bound_short"] = "; ".join(sorted({r["bound_short"] for r in rs}))
        m["checks"] = [r["check"] for r in rs if r["check"]]
        m["alive"] = all(r["alive"] != "no" for r in rs)
        med[key] = m

    # Raw rows, one per run.
    with open(os.path.join(out, "summary.tsv"), "w") as f:
        cols = ["workload", "resolver", "passno", "max_qps"] + fields + ["bound"]
        f.write("\t".join(cols) + "\n")
        for r in sorted(runs, key=lambda r: (r["workload"], r["resolver"], r["passno"])):
            f.write("\t".join("" if r.get(c) is None else (f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c]))
                              for c in cols) + "\n")

    # Curves averaged over the passes, interval by interval (the passes
    # share the ramp, so interval i is the same offered rate in each).
    curves = {}
    for (w, res), rs in by.items():
        n = min(len(r["buckets"]) for r in rs)
        rows = []
        cum = 0.0
        for i in range(n):
            bs = [r["buckets"][i] for r in rs]
            a = lambda k: sum(b[k] for b in bs) / len(bs)
            cum += a("queries")
            rows.append((a("target"), cum, a("sent"), a("lost_pct"), a("ok_qps"), 1000 * a("lat"),
                         a("res_cpu_pct"), a("gen_core_pct")))
        curves[(w, res)] = rows
    for w in workloads:
        with open(os.path.join(out, f"curves-{w}.tsv"), "w") as f:
            for res in resolvers:
                if (w, res) not in curves:
                    continue
                f.write(f"# {res}\n# offered queries_sent_total sent_qps lost_pct successful_qps "
                        "latency_ms resolver_cpu_pct generator_core_pct\n")
                for row in curves[(w, res)]:
                    f.write(" ".join(f"{x:.3f}" for x in row) + "\n")
                f.write("\n\n")
        draw(out, w, [res for res in resolvers if (w, res) in curves])

    md = report(out, settings, workloads, resolvers, med, failed, by)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(md)
    print(md)


def draw(out, w, names):
    data = os.path.join(out, f"curves-{w}.tsv")
    png = os.path.join(out, f"{w}.png")
    panels = [
        (2, "queries sent (total, thousands)", "column(2)/1000", "Fig. 6: queries sent", ""),
        (4, "% lost (unanswered or SERVFAIL)", "4", "Fig. 8: % queries lost", ""),
        (5, "successful queries per second", "5", "Fig. 10: successful qps", ""),
        (6, "mean latency (ms)", "6", "Fig. 12: latency", "set logscale y"),
        (7, "% of the resolver core", "7", "resolver CPU", "set yrange [0:110]"),
        (8, "% of the generator core", "8", "generator core (resperf + authoritative)", "set yrange [0:110]"),
    ]
    gp = ["set terminal pngcairo size 1500,900 font ',9' noenhanced", f"set output '{png}'",
          f"set multiplot layout 2,3 title '{WORKLOAD_TITLE[w]} — against the offered rate (resperf ramp)'",
          "set key top left", "set grid", "set xlabel 'offered qps'"]
    for _, ylabel, expr, title, extra in panels:
        gp += ["unset logscale y", "set autoscale y", extra, f"set title '{title}'", f"set ylabel '{ylabel}'"]
        expr = expr if expr.startswith("column") else f"column({expr})"
        plots = [f"'{data}' index {i} using 1:({expr}) with lines lw 2 title '{n}'" for i, n in enumerate(names)]
        gp.append("plot " + ", ".join(plots))
    gp.append("unset multiplot")
    try:
        subprocess.run(["gnuplot"], input="\n".join(gp), text=True, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"chart {png} not drawn: {e} {getattr(e, 'stderr', '')}", file=sys.stderr)


def report(out, settings, workloads, resolvers, med, failed, by_key):
    md = ["<!-- bench/resolver.sh: begin -->", "# Resolver benchmark results", ""]
    when = settings.get("finished") or f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}"
    md.append(f"Run {when} "
              f"({settings.get('seconds', '?')} s of measuring) with:\n")
    md.append(f"```\n{settings.get('command', 'bench/resolver.sh')}\n```\n")
    s = settings
    md.append(
        f"Seed 000's resperf protocol on a simulated internet in a private network namespace "
        f"(`unshare -n`): {s.get('zones')} zones under {s.get('tlds')} TLDs, {s.get('hosted_share')} of them "
        f"on {s.get('hosters')} hosters without glue, on {s.get('addresses')} addresses of 127/8, served by "
        f"{s.get('auth_servers')} ({s.get('names')} questions). Each resolver pinned to CPU "
        f"{s.get('resolver_cpu')} with one worker; resperf and the authoritative servers on CPU "
        f"{s.get('gen_cpu')}. One resperf ramp per run from 0 to the highest offered rate over "
        f"{s.get('ramp')} s (plot interval {s.get('interval')} s, queries lost after {s.get('timeout')} s); "
        f"highest offered qps: cold {s.get('cold_max')}, warm {s.get('warm_max')}, forward "
        f"{s.get('forward_max')}"
        + (f", cold-validating {s.get('validating_max')}" if "cold-validating" in workloads else "")
        + ". Cold and forward runs start a fresh resolver and never repeat a question; "
        f"warm runs first prime {s.get('warm_names')} questions (twice, dnsperf at {s.get('prime_qps')} qps) "
        f"and then ask them over and over. Each figure is the median of {s.get('passes')} pass(es).\n")
    if "cold-validating" in workloads:
        md.append(
            f"Cold-validating runs ask the same questions of a DNSSEC-signed copy of the internet "
            f"(`lib/siminet.py --sign`, signer {s.get('signer', '?')}, {s.get('sign_seconds', '?')} s to key and "
            f"sign every zone): one ECDSAP256SHA256 key per zone, the root with NSEC, "
            f"{s.get('nsec3_share', '?')} of the other zones with NSEC3 (no extra iterations, no salt; "
            f"{s.get('nsec3_optout_share', '?')} of the NSEC3 TLDs with opt-out), every resolver validating from the "
            f"generated root anchor; the authoritative servers are restarted on it for these runs. Before each "
            f"run the resolver is asked the DNSSEC checks (AD on secure answers, SERVFAIL for a bogus zone); "
            f"one that does not validate is not measured.\n")
    md.append(f"Load average at the end: {s.get('loadavg', '?')} (2 CPUs; whatever else runs on the "
              "machine lands on one of the two cores and skews the figures).\n")
    try:
        md.append("Versions:\n\n```\n" + open(os.path.join(out, "raw", "versions.txt")).read().strip() + "\n```\n")
    except OSError:
        pass
    md.append("Columns: *sent* queries sent by resperf; *lost %* unanswered or not NOERROR/NXDOMAIN; "
              "*max qps <1%* the highest successful rate before the loss passed 1%; *qps ≤N ms* the "
              "highest before, besides, the mean latency passed N ms (a queue that answers late is "
              "not keeping up); *latency* mean "
              "below the knee; *user/sys µs* CPU per successful answer over the whole run, *to knee* "
              "the same up to the knee; *RRsets* what the cache holds (warm: after priming; cold and "
              "forward: at the end); *B/RRset* RSS growth per RRset gained; *bound* what limited the "
              "run (see below).\n")
    for w in workloads:
        md.append(f"## {WORKLOAD_TITLE[w]}\n")
        md.append(f"![{w}]({w}.png)\n")
        md.append(f"| resolver | sent | lost % | max qps <1% | qps ≤{LATENCY_BOUND_MS:g} ms | resperf max qps "
                  "| latency ms | user µs | sys µs "
                  "| user µs to knee | sys µs to knee | RRsets | RSS MB | B/RRset | bound |")
        md.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
        for res in resolvers:
            m = med.get((w, res))
            if not m:
                continue
            md.append(f"| {res} | {fmt(m['sent'], 0)} | {fmt(m['lost_pct'])} | {fmt(m['max_ok_qps'], 0)} | "
                      f"{fmt(m['max_ok_qps_latency'], 0)} | {fmt(m['resperf_max'], 0)} | {fmt(m['latency_ms'])} | {fmt(m['user_us'])} | "
                      f"{fmt(m['sys_us'])} | {fmt(m['user_knee_us'])} | {fmt(m['sys_knee_us'])} | "
                      f"{fmt(m['rrsets'], 0)} | {fmt(m['rss_mb'], 1)} | {fmt(m['bytes_per_rrset'], 0)} | "
                      f"{m['bound_short']} |")
        md.append("")

    peers = [r for r in resolvers if r != "bulwark"]
    if "bulwark" in resolvers and peers:
        md.append("## Ratios bulwark / peer\n")
        md.append("qps: > 1 is better for bulwark; CPU (user, total = user + sys, per successful answer), "
                  "latency and bytes per RRset: < 1 is better.\n")
        md.append(f"| workload | peer | max qps <1% | qps ≤{LATENCY_BOUND_MS:g} ms | user µs | total µs "
                  "| user µs to knee | total µs to knee | latency | B/RRset |")
        md.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
        for w in workloads:
            b = med.get((w, "bulwark"))
            if not b:
                continue
            for p in peers:
                m = med.get((w, p))
                if not m:
                    continue
                md.append(f"| {w} | {p} | {ratio(b['max_ok_qps'], m['max_ok_qps'])} | "
                          f"{ratio(b['max_ok_qps_latency'], m['max_ok_qps_latency'])} | "
                          f"{ratio(b['user_us'], m['user_us'])} | {ratio(b['total_us'], m['total_us'])} | "
                          f"{ratio(b['user_knee_us'], m['user_knee_us'])} | "
                          f"{ratio(b['total_knee_us'], m['total_knee_us'])} | "
                          f"{ratio(b['latency_ms'], m['latency_ms'])} | "
                          f"{ratio(b['bytes_per_rrset'], m['bytes_per_rrset'])} |")
        md.append("")

        md.append("## Targets: bulwark / best peer in the same run\n")
        md.append("CPU per answer is taken up to the knee (below 1% loss; the whole run when there is no "
                  "knee), so that every resolver is compared at loads it serves.\n")
        md.append("| target | workload | bulwark | best peer | ratio | target | verdict |")
        md.append("|---|---|--:|---|--:|--:|---|")

        def best(w, key, high, pool):
            cands = [(med[(w, p)][key], p) for p in pool if (w, p) in med and med[(w, p)][key] is not None]
            if not cands:
                return None, None
            return (max if high else min)(cands)

        resolver_peers = [p for p in peers if p != "dnsdist"]
        hit_peers = [p for p in ("unbound", "kresd", "pdns_recursor", "dnsdist") if p in peers]
        # (title, workload, key, higher is better, pool, target ratio or None)
        targets = [
            ("cache hits: user CPU per answered query (µs), vs Unbound/kresd/pdns_recursor/dnsdist",
             "warm", "user_knee_us", False, hit_peers, 0.5),
            ("cache hits: total CPU per answered query (µs), vs Unbound/kresd/pdns_recursor/dnsdist",
             "warm", "total_knee_us", False, hit_peers, 0.95),
            ("cache hits: max qps at <1% loss", "warm", "max_ok_qps", True, hit_peers, None),
            ("cold cache: max qps at <1% loss", "cold", "max_ok_qps", True, resolver_peers, 1.5),
            ("cold cache: CPU per resolved name (user + sys µs)", "cold", "total_knee_us", False,
             resolver_peers, 0.67),
            (f"cold cache: max qps at <1% loss and ≤{LATENCY_BOUND_MS:g} ms", "cold", "max_ok_qps_latency",
             True, resolver_peers, None),
            ("cold cache, validating: max qps at <1% loss", "cold-validating", "max_ok_qps", True,
             resolver_peers, 1.5),
            (f"cold cache, validating: max qps at <1% loss and ≤{LATENCY_BOUND_MS:g} ms", "cold-validating",
             "max_ok_qps_latency", True, resolver_peers, None),
            ("cold cache, validating: CPU per validated name (user + sys µs)", "cold-validating",
             "total_knee_us", False, resolver_peers, 0.67),
            ("memory per cached RRset (B, RSS growth while priming), vs Unbound", "warm", "bytes_per_rrset",
             False, ["unbound"], 1.0),
            ("memory per cached RRset (B), vs the best peer", "warm", "bytes_per_rrset", False,
             resolver_peers, None),
            ("forwarding: max qps at <1% loss", "forward", "max_ok_qps", True, resolver_peers, None),
            ("forwarding: CPU per answered query (user + sys µs)", "forward", "total_knee_us", False,
             resolver_peers, None),
        ]
        for title, w, key, high, pool, goal in targets:
            b = med.get((w, "bulwark"))
            if not b:
                continue
            v, p = best(w, key, high, pool)
            if p is None:
                continue
            d = 0 if key in ("max_ok_qps", "max_ok_qps_latency", "bytes_per_rrset") else 2
            r = b[key] / v if b[key] is not None and v else None
            if goal is None or r is None:
                verdict, gtext = "(no target)" if goal is None else "–", "–"
            else:
                ok = r >= goal if high else r <= goal
                verdict = "**met**" if ok else "**missed**"
                gtext = f"{'≥' if high else '≤'} {goal:g}"
            md.append(f"| {title} | {w} | {fmt(b[key], d)} | {p} {fmt(v, d)} | {ratio(b[key], v)} | "
                      f"{gtext} | {verdict} |")
        md.append("")

    if "cold" in workloads and "cold-validating" in workloads:
        md.append("## The cost of validation\n")
        md.append("Each resolver's cold-validating figures over its cold ones (same questions, same zones, "
                  "signed or not): max qps at <1% loss (< 1: fewer with validation) and CPU per answer "
                  "up to the knee (> 1: more with validation).\n")
        md.append("| resolver | max qps cold | max qps validating | ratio | total µs to knee cold "
                  "| total µs to knee validating | ratio |")
        md.append("|---|--:|--:|--:|--:|--:|--:|")
        for res in resolvers:
            c, v = med.get(("cold", res)), med.get(("cold-validating", res))
            if not c or not v:
                continue
            md.append(f"| {res} | {fmt(c['max_ok_qps'], 0)} | {fmt(v['max_ok_qps'], 0)} | "
                      f"{ratio(v['max_ok_qps'], c['max_ok_qps'])} | {fmt(c['total_knee_us'])} | "
                      f"{fmt(v['total_knee_us'])} | {ratio(v['total_knee_us'], c['total_knee_us'])} |")
        md.append("")

    dnssec_files = sorted(glob.glob(os.path.join(out, "raw", "*.dnssec.txt")))
    if dnssec_files:
        md.append("## DNSSEC checks\n")
        md.append("Before each cold-validating run, `dnssec-checks.txt` asked of the fresh resolver with RD, AD "
                  "and DO (`lib/resolver/dnsq.py dnssec`): secure names want NOERROR and AD, names that do not "
                  "exist NXDOMAIN and AD (without AD under an opt-out NSEC3), the bogus zone SERVFAIL, and DS "
                  "records asked after denials in their zones. Wrong answers are listed with the extended DNS "
                  "error the resolver gave.\n")
        md.append("| run | result | wrong answers |")
        md.append("|---|---|---|")
        for pth in dnssec_files:
            lines = [l.strip() for l in open(pth, errors="replace") if l.strip()]
            last = lines[-1] if lines else "no output"
            bad = [l for l in lines[:-1] if not l.startswith("ok ")]
            md.append(f"| {os.path.basename(pth)[:-len('.dnssec.txt')]} | {last} | "
                      f"{'<br>'.join(b.replace('|', '/') for b in bad) or '–'} |")
        md.append("")

    md.append("## What bounded each run\n")
    md.append(f"The knee is where the loss over three plot intervals first passes {LOSS_LIMIT:g}%; the CPU "
              "figures are averages over the three intervals leading to it (the last three without a knee); "
              "drops are datagrams the kernel dropped for want of socket buffer space over the whole run, "
              "by whose socket they were for: the resolver's listening socket (client questions it did not read "
              "in time), its other sockets (answers from upstream it did not read in time), the authoritative "
              "servers' sockets, resperf's socket (answers the generator did not read in time), and "
              "unattributed (the namespace's total less those: sockets opened and closed between two samples, "
              "such as a resolver's per-query upstream sockets). *softirq*: the kernel's packet delivery on the "
              "resolver's core, charged to no process (on loopback a datagram is delivered on the sending "
              "core, so this is mostly the resolver's own sends). *resperf late/duplicate answers*: responses "
              "whose ID resperf no longer waited for (after its timeout, or a second answer to one query). "
              "*resolver CPU*: the resolver used "
              f"{CPU_BOUND:g}% of its core or more. *resolver core shared*: the resolver and other work on "
              f"its core together kept it {CORE_BOUND:g}% busy, others' processes taking 10% or more of it. "
              "*generator*: resperf fell behind its schedule (it ends the run then). *generator core*: the "
              f"authoritative servers (or others' work) took {AUTH_BOUND:g}% of resperf's core or more — "
              "resperf busy-polls, so that core always reads 100% busy and its own share is what the others "
              "leave it. *loss, not CPU*: loss with no core saturated — drops at a socket, a limit on "
              "queries in flight, timeouts or SERVFAIL. *offered rate*: no knee at all; the ramp stayed below the resolver's "
              "limit.\n")
    md.append("| workload | resolver | pass | knee at offered qps | resolver CPU % | softirq on its core % "
              "| other work on its core % | authoritative CPU % | other work on the generator core % "
              "| drops: resolver listening | resolver upstream | authoritative | resperf | unattributed "
              "| resperf late/duplicate answers | bound |")
    md.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    for w in workloads:
        for res in resolvers:
            for r in sorted(by_key.get((w, res), []), key=lambda r: r["passno"]):
                md.append(f"| {w} | {res} | {r['passno']} | {fmt(r['knee_offered'], 0)} | "
                          f"{fmt(r['res_cpu_at_knee'], 0)} | {fmt(r['res_softirq_at_knee'], 0)} | "
                          f"{fmt(r['res_others_at_knee'], 0)} | "
                          f"{fmt(r['auth_cpu_at_knee'], 0)} | {fmt(r['gen_others_at_knee'], 0)} | "
                          f"{fmt(r['drops_listen'], 0)} | {fmt(r['drops_upstream'], 0)} | "
                          f"{fmt(r['drops_auth'], 0)} | {fmt(r['drops_resperf'], 0)} | {fmt(r['drops_other'], 0)} | "
                          f"{fmt(r['unexpected_ids'], 0)} | "
                          f"{r['bound']} |")
    md.append("")

    checks = [(w, res, c) for (w, res), m in med.items() for c in m["checks"]]
    if checks:
        md.append("## Answers checked\n")
        md.append("After each cold and warm run, a sample of the questions it asked, asked again of the "
                  "resolver and of the zone's own server: same rcode and same RRset."
                  + (" Validating runs ask the resolver with AD and count the answers without it (*noad*; "
                     "truncated answers not counted)." if "cold-validating" in workloads else "") + "\n")
        md.append("| workload | resolver | result |")
        md.append("|---|---|---|")
        for w, res, c in sorted(checks, key=lambda x: (workloads.index(x[0]), resolvers.index(x[1]))):
            md.append(f"| {w} | {res} | {c} |")
        md.append("")
    # bulwark's own counters (bulwark ctl stats after each run): why its
    # questions failed, and how its upstream queries fared.
    keys = [("resolutions", "bulwark_resolver_resolutions_total"),
            ("queue full", "bulwark_resolver_queue_full_total"),
            ("client limited", "bulwark_resolver_client_limited_total"),
            ("discarded late", "bulwark_resolver_discarded_answers_total"),
            ("upstream queries", "bulwark_resolver_upstream_queries_total"),
            ("upstream timeouts", "bulwark_resolver_upstream_timeouts_total"),
            ("upstream answered", "bulwark_resolver_upstream_answered_total")]
    rows = []
    for w in workloads:
        for r in sorted(by_key.get((w, "bulwark"), []), key=lambda r: r["passno"]):
            c = read_stats(os.path.join(out, "raw", r["id"] + ".stats.txt"))
            if not c:
                continue
            ans = c.get("bulwark_resolver_upstream_answered_total", 0)
            rtt = c.get("bulwark_resolver_upstream_rtt_seconds_total", 0)
            sf = sum(v for k, v in c.items() if k.startswith("bulwark_resolver_servfail_total"))
            rows.append(f"| {w} | {r['passno']} | " + " | ".join(fmt(c.get(k, 0), 0) for _, k in keys)
                        + f" | {fmt(1000 * rtt / ans if ans else None, 1)} | {fmt(sf, 0)} |")
    if rows:
        md.append("## bulwark's own counters\n")
        md.append("From `bulwark ctl stats` after each run (whole run, overload included): questions handed to "
                  "the resolving task, answered SERVFAIL at once because its queue was full or the client had "
                  "`max_pending_per_client` waiting, answers dropped because the client had waited past "
                  "`discard_timeout_ms`; queries to servers, their time-outs, answers and mean round trip as "
                  "bulwark measured it (from sending to handling the answer).\n")
        md.append("| workload | pass | " + " | ".join(t for t, _ in keys) + " | mean upstream RTT ms | SERVFAIL |")
        md.append("|---|--:|" + "--:|" * (len(keys) + 2))
        md += rows
        md.append("")
    profiles = sorted(glob.glob(os.path.join(out, "profile", "*.perf.txt")))
    if profiles:
        md.append("## Profiles of bulwark\n")
        md.append("One more bulwark run per workload under `perf record` (not in the tables): self time by "
                  "symbol over the whole ramp, overload included; `[k]` kernel, `[.]` user space.\n")
        for pth in profiles:
            text = open(pth, errors="replace").read()
            parts = re.split(r"^# by ", text, flags=re.M)
            sym = [l.rstrip() for l in parts[0].splitlines() if l.strip() and not l.startswith("#")]
            rest = ["by " + p.strip() for p in parts[1:]]
            md.append(f"### {os.path.basename(pth)[:-len('.perf.txt')]}\n")
            md.append("```\n" + "\n".join(sym[:20] + rest) + "\n```\n")
    dead = [k for k, m in med.items() if not m["alive"]]
    if dead or failed:
        md.append("## Failures\n")
        for w, res in dead:
            md.append(f"- {res} was not running at the end of a {w} run (its log is in raw/).")
        for f, why in failed:
            if why.startswith("failed dnssec"):
                md.append(f"- {f}: **does not validate**, not measured ({why[len('failed dnssec: '):]}; "
                          f"see raw/{f}.dnssec.txt and its log).")
            else:
                md.append(f"- {f}: did not start (see its log in raw/).")
        md.append("")
    md.append("<!-- bench/resolver.sh: end -->")
    return "\n".join(md) + "\n"


if __name__ == "__main__":
    main()
