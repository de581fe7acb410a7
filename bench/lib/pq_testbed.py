#!/usr/bin/env python3
"""Seed 003's testbed (issue 27): cold-cache resolution time and round trips
per DNSSEC algorithm and delivery mode, on links with latency.

Four network namespaces: a client (kdig), a resolver (bulwark, or Unbound as
the peer), the authoritative servers (three bulwarks: the root, `test.` and
`example.test.`, each on its own address and each zone signed online with the
algorithm under test, the chain of DS records complete), and a fourth that
holds the wire: delay_link.py forwards frames between the client and the
resolver and between the resolver and the servers, each way after DELAY ms,
and counts DNS questions, SYNs and TCP questions; tbf holds every veth end to
RATE. The kernel here has no netem, so the delay is made in user space.

Every lookup asks `www.exN.test. A` (AD requested) for a zone not asked
before, ex0 to ex9 (LOOKUPS), all on one server: the root's and `test.`'s
keys are in the resolver's cache from a warm-up lookup (`www.warm.test.`), as
they would be on any running resolver, but each zone's delegation, DS,
DNSKEY and answer are not, and each of those answers carries signatures of
the algorithm under test. The resolver runs through all of a case's
lookups, keeping what it knows of the servers (their cookies, its
connections) as the mode allows.

Delivery modes (the resolver's and servers' settings):
  tcp     UDP, then TCP after TC; the servers close idle connections after
          1 s and lookups are 1.5 s apart, so none is reused: the baseline
  tfo     as tcp, with TCP Fast Open on (net.ipv4.tcp_fastopen = 3 in every
          namespace): the kernel holds each server's TFO cookie from the
          warm-up on
  cookie  the servers send UDP answers up to 8,192 octets to clients with a
          valid server cookie (`require_for_udp_above = 1232`), the resolver
          offers 8,192 to servers whose cookie it holds
          (`udp_payload_with_cookie`), from the warm-up on; spaced as tcp
  reuse   TCP after TC, lookups back to back, so the connection to each
          server opened by the warm-up is reused
  all     cookie + reuse + tfo

The resolution time is kdig's (client to resolver and back included: one
more round trip); the round trips are counted on the resolver-to-servers
wire.

Usage: pq_testbed.py BULWARK WORKDIR   (env: ALGS, MODES, LOOKUPS, DELAY_MS,
       RATE, PEER=1 to add Unbound for the algorithms it implements)
"""

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ALGS = os.environ.get("ALGS", "ECDSAP256SHA256 RSASHA256 ED25519 MLDSA44 FALCON512").split()
MODES = os.environ.get("MODES", "tcp tfo cookie reuse all").split()
LOOKUPS = int(os.environ.get("LOOKUPS", "10"))
DELAY_MS = float(os.environ.get("DELAY_MS", "5"))
RATE = os.environ.get("RATE", "100mbit")
PEER = os.environ.get("PEER", "1") == "1"
UNBOUND_ALGS = {"ECDSAP256SHA256", "RSASHA256", "ED25519"}

NS = {"client": "pqc", "resolver": "pqr", "auth": "pqa", "wire": "pqd"}
CLIENT, RESOLVER_CLIENT_SIDE, RESOLVER_AUTH_SIDE = "10.77.1.2", "10.77.1.1", "10.77.2.1"
ROOT, TLD, EXAMPLE = "10.77.2.11", "10.77.2.12", "10.77.2.13"
# resolver -> servers, as delay_link names the direction
UPSTREAM = "dr1>da"


def sh(*args, check=True, ns=None, **kw):
    cmd = (["ip", "netns", "exec", NS[ns]] if ns else []) + list(args)
    return subprocess.run(cmd, check=check, capture_output=True, text=True, **kw)


def setup_network():
    teardown_network()
    for ns in NS.values():
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    links = [("c0", "client", "dc"), ("r0", "resolver", "dr0"), ("r1", "resolver", "dr1"), ("a0", "auth", "da")]
    for end, ns, wire_end in links:
        sh("ip", "link", "add", end, "type", "veth", "peer", "name", wire_end)
        sh("ip", "link", "set", end, "netns", NS[ns])
        sh("ip", "link", "set", wire_end, "netns", NS["wire"])
        for where, dev in ((ns, end), ("wire", wire_end)):
            # Frames go through user space whole: no offloads, so each one
            # is a real frame with its checksum filled in.
            sh("ethtool", "-K", dev, "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off",
               check=False, ns=where)
            sh("ip", "link", "set", dev, "up", ns=where)
        sh("tc", "qdisc", "add", "dev", end, "root", "tbf", "rate", RATE, "burst", "32kbit", "latency", "100ms",
           ns=ns)
    sh("ip", "addr", "add", f"{CLIENT}/24", "dev", "c0", ns="client")
    sh("ip", "route", "add", "default", "via", RESOLVER_CLIENT_SIDE, ns="client")
    sh("ip", "addr", "add", f"{RESOLVER_CLIENT_SIDE}/24", "dev", "r0", ns="resolver")
    sh("ip", "addr", "add", f"{RESOLVER_AUTH_SIDE}/24", "dev", "r1", ns="resolver")
    for a in (ROOT, TLD, EXAMPLE):
        sh("ip", "addr", "add", f"{a}/24", "dev", "a0", ns="auth")
    sh("ip", "route", "add", "default", "via", RESOLVER_AUTH_SIDE, ns="auth")


def teardown_network():
    for ns in NS.values():
        sh("ip", "netns", "del", ns, check=False)


def set_tfo(on):
    for ns in ("client", "resolver", "auth"):
        sh("sh", "-c", f"echo {3 if on else 0} > /proc/sys/net/ipv4/tcp_fastopen", ns=ns)


class Wire:
    def __init__(self, work):
        self.counts = os.path.join(work, "wire.json")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", NS["wire"], sys.executable, os.path.join(HERE, "delay_link.py"),
             str(DELAY_MS), self.counts, "dc:dr0", "dr1:da"],
            stdout=subprocess.PIPE, stderr=open(os.path.join(work, "wire.log"), "w"), text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise SystemExit("delay_link did not start: see wire.log")

    def snapshot(self):
        before = self.read()["dumps"]
        self.proc.send_signal(signal.SIGUSR1)
        for _ in range(500):
            data = self.read()
            if data["dumps"] > before:
                return data["counts"].get(UPSTREAM, {})
            time.sleep(0.002)
        raise SystemExit("delay_link did not write its counters")

    def read(self):
        with open(self.counts) as f:
            return json.load(f)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def wait_answer(ns, server, qname, qtype, deadline=30.0, want="NOERROR"):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        out = sh("kdig", f"@{server}", "+tcp", "+dnssec", "+time=1", "+retry=0", qname, qtype, check=False, ns=ns)
        if want in out.stdout and "RRSIG" in out.stdout:
            return
        time.sleep(0.1)
    raise SystemExit(f"{server} did not serve {qname} {qtype}")


class Bulwark:
    def __init__(self, bulwark, work, name, ns, config):
        self.work = os.path.join(work, name)
        os.makedirs(self.work, exist_ok=True)
        self.config = os.path.join(self.work, "bulwark.toml")
        with open(self.config, "w") as f:
            f.write(config)
        self.ready = os.path.join(self.work, "ready")
        if os.path.exists(self.ready):
            os.remove(self.ready)
        self.control = os.path.join(self.work, "control.sock")
        self.bulwark = bulwark
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", NS[ns], bulwark, "serve", "--config", self.config, "--ready-file", self.ready],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.work, "log"), "w"))
        end = time.monotonic() + 30
        while not (os.path.exists(self.ready) and open(self.ready).read().rstrip().endswith("ready")):
            if self.proc.poll() is not None or time.monotonic() > end:
                raise SystemExit(f"{name} did not start: see {self.work}/log")
            time.sleep(0.02)

    def ctl(self, *words):
        subprocess.run([self.bulwark, "ctl", "--socket", self.control, *words], check=True,
                       capture_output=True)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def zone_file(path, origin, body):
    with open(path, "w") as f:
        f.write(f"$ORIGIN {origin}\n$TTL 3600\n@ IN SOA ns hostmaster 1 7200 3600 1209600 300\n{body}")


def start_authorities(bulwark, work, alg, large_udp):
    """The root, `test.` and the zones of one server (`warm.test.` and
    `ex0.test.` on), each signed with `alg`, with every DS in its parent;
    returns the servers and the root's DS."""
    udp = "max_udp_payload = 8192\n\n[cookies]\nrequire_for_udp_above = 1232\n" if large_udp else ""
    policy = f"[dnssec_policy.p]\nalgorithm = \"{alg}\"\nnsec3 = true\n\n"

    def serve(name, addr, zones):
        d = os.path.join(work, f"{alg}-{name}")
        os.makedirs(d, exist_ok=True)
        # Idle TCP connections close after 1 s, so spaced lookups open new
        # ones and back-to-back lookups keep theirs.
        config = (f"[server]\nlisten = [\"{addr}:53\"]\nthreads = 1\ntcp_idle_timeout = 1\n"
                  f"key_directory = \"{d}/keys\"\n{udp}\n{policy}")
        for origin, body in zones:
            path = os.path.join(d, f"{origin}zone")
            zone_file(path, origin, body)
            config += f"[[zone]]\norigin = \"{origin}\"\nfile = \"{path}\"\ndnssec_policy = \"p\"\n\n"
        server = Bulwark(bulwark, work, f"{alg}-{name}-run", "auth", config)
        dss = []
        for origin, _ in zones:
            wait_answer("auth", addr, origin, "SOA")
            out = subprocess.run([bulwark, "keys", "ds", origin, "-K", f"{d}/keys"], check=True,
                                 capture_output=True, text=True).stdout.strip()
            dss.append(out.splitlines()[0])
        return server, dss

    children = [f"{c}.test." for c in ["warm"] + [f"ex{i}" for i in range(LOOKUPS)]]
    child_body = f"@ NS ns\nns A {EXAMPLE}\nwww A 192.0.2.80\n    AAAA 2001:db8::80\n"
    example, child_ds = serve("example", EXAMPLE, [(c, child_body) for c in children])
    tld_body = f"@ NS ns\nns A {TLD}\n" + "".join(
        f"{c} NS ns.{c}\nns.{c} A {EXAMPLE}\n{ds}\n" for c, ds in zip(children, child_ds))
    tld, (tld_ds,) = serve("tld", TLD, [("test.", tld_body)])
    root_body = f"@ NS ns\nns A {ROOT}\ntest. NS ns.test.\nns.test. A {TLD}\n{tld_ds}\n"
    root, (root_ds,) = serve("root", ROOT, [(".", root_body)])
    return [example, tld, root], root_ds


def resolver_config(work, anchor, mode):
    lines = [
        "[server]", f"listen = [\"{RESOLVER_CLIENT_SIDE}:53\"]", "threads = 1", "",
        "[control]", f"socket = \"{work}/resolver/control.sock\"", "",
        "[resolver]", f"root_hints = [\"{ROOT}:53\"]", f"trust_anchors = [\"{anchor}\"]",
        "allow_recursion = [\"10.77.0.0/16\"]", "experimental_algorithms = [\"FALCON512\"]",
    ]
    if mode in ("cookie", "all"):
        lines.append("udp_payload_with_cookie = 8192")
    return "\n".join(lines) + "\n"


def unbound_config(work, anchor):
    hints = os.path.join(work, "root.hints")
    with open(hints, "w") as f:
        f.write(f". 3600000 NS ns.\nns. 3600000 A {ROOT}\n")
    return (f"server:\n  interface: {RESOLVER_CLIENT_SIDE}\n  port: 53\n  do-daemonize: no\n  chroot: \"\"\n"
            f"  username: \"\"\n  directory: \"{work}\"\n  pidfile: \"\"\n  use-syslog: no\n  logfile: \"\"\n"
            f"  do-ip6: no\n  num-threads: 1\n  access-control: 10.77.0.0/16 allow\n  root-hints: \"{hints}\"\n"
            f"  trust-anchor: \"{anchor}\"\n  module-config: \"validator iterator\"\n"
            f"  local-zone: \"test.\" nodefault\n  do-not-query-localhost: no\n"
            f"remote-control:\n  control-enable: no\n")


def lookup(zone):
    out = sh("kdig", f"@{RESOLVER_CLIENT_SIDE}", "+adflag", "+time=10", "+retry=0", f"www.{zone}", "A",
             ns="client", check=False).stdout
    m = re.search(r"in ([0-9.]+) ms", out)
    flags = re.search(r";; Flags: ([a-z ]+);", out)
    ok = "192.0.2.80" in out and flags is not None and " ad" in f" {flags.group(1)}"
    if not m or not ok:
        raise SystemExit(f"a lookup failed:\n{out}")
    return float(m.group(1))


def round_trips(before, after):
    d = {k: after.get(k, 0) - before.get(k, 0) for k in ("udp", "syn", "syn_data", "tcp")}
    d["rt"] = d["udp"] + d["syn"] + d["syn_data"] + d["tcp"]
    return d


def run_case(bulwark, work, wire, alg, mode, anchor, resolver):
    """LOOKUPS lookups in zones not asked before; (times in ms, round-trip
    counts)."""
    rdir = os.path.join(work, "resolver")
    times, trips = [], []

    def start():
        if resolver == "unbound":
            os.makedirs(rdir, exist_ok=True)
            conf = os.path.join(rdir, "unbound.conf")
            with open(conf, "w") as f:
                f.write(unbound_config(rdir, anchor))
            p = subprocess.Popen(["ip", "netns", "exec", NS["resolver"], "unbound", "-d", "-c", conf],
                                 stdout=subprocess.DEVNULL, stderr=open(os.path.join(rdir, "unbound.log"), "w"))
            end = time.monotonic() + 10
            while True:
                # Answered from Unbound's own data: nothing is resolved, and
                # the cache stays cold.
                out = sh("kdig", f"@{RESOLVER_CLIENT_SIDE}", "+time=1", "+retry=0", "id.server.", "CH", "TXT",
                         ns="client", check=False).stdout
                if "status:" in out:
                    break
                if time.monotonic() > end:
                    raise SystemExit("unbound did not start")
                time.sleep(0.05)
            return p
        return Bulwark(bulwark, work, "resolver", "resolver", resolver_config(work, anchor, mode))

    def stop(r):
        if isinstance(r, Bulwark):
            r.stop()
        else:
            r.terminate()
            r.wait()

    spaced = mode in ("tcp", "tfo", "cookie")
    r = start()
    lookup("warm.test.")  # the root's and test.'s keys; TFO and server cookies
    for i in range(LOOKUPS):
        if spaced:
            time.sleep(1.5)  # the servers have closed the idle connections
        before = wire.snapshot()
        times.append(lookup(f"ex{i}.test."))
        trips.append(round_trips(before, wire.snapshot()))
    stop(r)
    return times, trips


def main(argv):
    bulwark, work = argv[0], argv[1]
    setup_network()
    wire = Wire(work)
    rows = []
    try:
        for alg in ALGS:
            for large_udp in (False, True):
                modes = [m for m in MODES if (m in ("cookie", "all")) == large_udp]
                if not modes:
                    continue
                servers, anchor = start_authorities(bulwark, work, alg, large_udp)
                try:
                    for mode in modes:
                        set_tfo(mode in ("tfo", "all"))
                        times, trips = run_case(bulwark, work, wire, alg, mode, anchor, "bulwark")
                        rows.append(("bulwark", alg, mode, times, trips))
                    if PEER and not large_udp and alg in UNBOUND_ALGS and "tcp" in MODES:
                        set_tfo(False)
                        times, trips = run_case(bulwark, work, wire, alg, "tcp", anchor, "unbound")
                        rows.append(("unbound", alg, "tcp", times, trips))
                finally:
                    for s in servers:
                        s.stop()
                    shutil.rmtree(os.path.join(work, "resolver"), ignore_errors=True)
    finally:
        wire.stop()
        teardown_network()
    report(rows)


def report(rows):
    base = {(r[0], r[2]): statistics.mean(r[3]) for r in rows if r[1] == "ECDSAP256SHA256"}
    print(f"Links: {DELAY_MS:g} ms each way ({2 * DELAY_MS:g} ms round trip), {RATE}; {LOOKUPS} lookups each, "
          "each in a zone not asked before.")
    print()
    print("| resolver | algorithm | mode | mean ms | min | max | / P-256 same mode | round trips to servers | UDP | SYN | SYN+data | TCP |")
    print("| --- | --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |")
    for resolver, alg, mode, times, trips in rows:
        mean = statistics.mean(times)
        ref = base.get((resolver, mode))
        ratio = f"{mean / ref:.2f}" if ref else "-"
        avg = {k: statistics.mean(t[k] for t in trips) for k in ("rt", "udp", "syn", "syn_data", "tcp")}
        print(f"| {resolver} | {alg} | {mode} | {mean:.1f} | {min(times):.1f} | {max(times):.1f} | {ratio} | "
              f"{avg['rt']:.1f} | {avg['udp']:.1f} | {avg['syn']:.1f} | {avg['syn_data']:.1f} | {avg['tcp']:.1f} |")
    print()
    print("Targets (issue 27): a post-quantum zone within 1.1x of ECDSA P-256 with the delivery modes on;")
    print("one round trip for a large answer where the resolver holds the server's cookie.")
    for mode in ("all", "cookie"):
        ref = base.get(("bulwark", mode))
        for resolver, alg, m, times, trips in rows:
            if resolver == "bulwark" and m == mode and alg in ("MLDSA44", "FALCON512") and ref:
                per_answer = statistics.mean(t["rt"] for t in trips) / 3
                print(f"- {alg}, {mode}: {statistics.mean(times):.1f} ms / P-256 {ref:.1f} ms = "
                      f"{statistics.mean(times) / ref:.2f}; {per_answer:.2f} round trips per answer "
                      "(3 answers a lookup: the delegation with its DS, the DNSKEY RRset, the A)")
    tcp = base.get(("bulwark", "tcp"))
    if tcp:
        for resolver, alg, m, times, _ in rows:
            if resolver == "bulwark" and m == "tcp" and alg in ("MLDSA44", "FALCON512"):
                print(f"- {alg}, tcp (the seed's baseline, 2x there): {statistics.mean(times) / tcp:.2f} x P-256")


if __name__ == "__main__":
    main(sys.argv[1:])
