#!/usr/bin/python3
"""Sample CPU time and memory while resperf runs. Used by bench/resolver.sh.

Usage: sample.py OUT INTERVAL NAME=PID[,PID...] [NAME=PID...]

Every INTERVAL seconds (and once more on SIGTERM) appends one line to OUT:

  wall  cpu0_busy cpu0_total cpu0_softirq cpu1_busy ...  udp_rcvbuf_errors
        NAME_utime NAME_stime NAME_rss_kb NAME_drops ...

wall is time.time(); cpuN_* are the jiffies of /proc/stat's per-CPU lines
(busy = everything but idle and iowait; softirq = irq + softirq, the
kernel's packet delivery, which on loopback runs on the sending core and is
charged to no process), so a core's load over an interval is the
difference of busy over the difference of total, whoever ran there;
NAME_utime/stime are fields 14 and 15 of /proc/PID/stat summed over the
group's processes (clock ticks, every thread included), NAME_rss_kb their
VmRSS. A process that has gone counts as zero from then on.

NAME_drops: UDP datagrams the kernel dropped for want of receive-buffer
space at the group's own sockets (the "drops" column of /proc/net/udp and
udp6 for the socket inodes its processes hold open), summed over every
socket seen since the start, so a socket closed later keeps its count.
udp_rcvbuf_errors is the namespace's total (/proc/net/snmp RcvbufErrors):
what no group accounts for went to sockets opened and closed between two
samples (a resolver's short-lived upstream sockets).
"""

import os
import signal
import sys
import time


def cpus():
    out = []
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                v = [int(x) for x in line.split()[1:]]
                idle = v[3] + (v[4] if len(v) > 4 else 0)
                total = sum(v[:8])
                # irq + softirq: the kernel's packet delivery (on loopback,
                # on the sender's core), charged to no process.
                out += [total - idle, total, v[5] + v[6]]
    return out


def udp_drops():
    """{socket inode: drops} of every UDP socket in the namespace."""
    out = {}
    for path in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    v = line.split()
                    if len(v) >= 13:
                        out[v[9]] = int(v[12])
        except (OSError, StopIteration, ValueError):
            pass
    return out


def rcvbuf_errors():
    try:
        with open("/proc/net/snmp") as f:
            rows = [l.split() for l in f if l.startswith("Udp:")]
        return int(dict(zip(rows[0][1:], rows[1][1:])).get("RcvbufErrors", 0))
    except (OSError, IndexError, ValueError):
        return 0


def inodes(pids):
    out = set()
    for p in pids:
        d = f"/proc/{p}/fd"
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            try:
                t = os.readlink(f"{d}/{n}")
            except OSError:
                continue
            if t.startswith("socket:["):
                out.add(t[8:-1])
    return out


def group(pids):
    u = s = rss = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            u += int(fields[11])
            s += int(fields[12])
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1])
                        break
        except (OSError, IndexError, ValueError):
            pass
    return [u, s, rss]


def main():
    out, interval = sys.argv[1], float(sys.argv[2])
    groups = []
    for arg in sys.argv[3:]:
        name, pids = arg.split("=", 1)
        groups.append((name, [p for p in pids.split(",") if p]))
    stop = []

    class Stop(Exception):
        pass

    sleeping = [False]

    def on_term(*_):
        stop.append(1)
        if sleeping[0]:
            raise Stop

    signal.signal(signal.SIGTERM, on_term)
    with open(out, "w") as f:
        ncpu = len(cpus()) // 3
        head = ["wall"] + [f"cpu{i}_{k}" for i in range(ncpu) for k in ("busy", "total", "softirq")]
        head += ["udp_rcvbuf_errors"]
        # Per group: {inode: drops} of every socket it has held.
        seen = [dict() for _ in groups]
        for name, _ in groups:
            head += [f"{name}_utime", f"{name}_stime", f"{name}_rss_kb", f"{name}_drops"]
        f.write("\t".join(head) + "\n")
        nxt = time.time()
        while True:
            row = [f"{time.time():.3f}"] + [str(x) for x in cpus()] + [str(rcvbuf_errors())]
            udp = udp_drops()
            for (_, pids), mine in zip(groups, seen):
                for ino in inodes(pids):
                    if ino in udp:
                        mine[ino] = max(mine.get(ino, 0), udp[ino])
                row += [str(x) for x in group(pids)] + [str(sum(mine.values()))]
            f.write("\t".join(row) + "\n")
            f.flush()
            if stop:
                break
            nxt += interval
            delay = nxt - time.time()
            try:
                sleeping[0] = True
                if delay > 0 and not stop:
                    time.sleep(delay)
            except Stop:
                pass  # woken by SIGTERM: one last sample, then out
            finally:
                sleeping[0] = False


if __name__ == "__main__":
    main()
