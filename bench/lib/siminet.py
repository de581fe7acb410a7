#!/usr/bin/python3
"""Generate a simulated DNS internet: zones, server configs, the names in it.

Usage:
  python3 bench/lib/siminet.py --out DIR [--tlds 20] [--zones 20000]
      [--hosters 64] [--hosted-share 0.25] [--addresses 256]
      [--servers knot,knot,knot] [--names-per-zone 3] [--seed 1]
      [--unreachable-share 0]

Standard library only; deterministic for a given seed. It writes into DIR:

  zones/             master files: the root (root.zone; its servers
                     a/b/c.root-servers.sim. are in-zone names of the root
                     with their addresses), the TLDs tld0 .. tldN-1 (their
                     servers a.nic.tldK. and b.nic.tldK., glue in the root),
                     the hosters' zones hosterK.tldM. (delegated with glue),
                     and the second-level zones zoneI.tldM.: most delegated
                     with in-bailiwick glue (ns1.zoneI.tldM.), a
                     --hosted-share of them glueless to ns1/ns2.hosterK.tldJ.,
                     so a resolver must resolve those names first. Each zone
                     has SOA, NS, apex A (some AAAA, MX, TXT; a few TXT
                     sets too big for UDP) and --names-per-zone names (www,
                     mail, hostJ, some hostJ.dept below an empty
                     non-terminal) with A, some AAAA, MX, TXT, and some
                     CNAMEs to names of other zones (chains of up to four, a
                     few dangling into NXDOMAIN). With --unreachable-share,
                     that share of the glued zones has a third name server,
                     ns3.zoneI.tldM., at an address in 192.0.2.0/24 that no
                     one serves (packets to it are lost in a namespace whose
                     default route is lo: a resolver must time out and try
                     another server). A server process serves
                     all its zones on all its addresses, so a parent's
                     server may answer for a child it also serves.
  server-N.conf      one per --servers entry (knot: knot.conf(5), nsd:
                     nsd.conf(5)), listening on port 53 of its share of the
                     addresses, one worker, everything written under
                     DIR/run-N/. Server 0 serves the root and the TLDs; the
                     other zones go round-robin (a hosted zone goes with its
                     hoster).
  servers.txt        "KIND CONFIG" per server process, in --servers order
                     (start: knotd -c CONFIG; nsd -d -c CONFIG).
  addresses.txt      every IPv4 address to add to lo (127.0.0.0/8 outside
                     127.0.0.0/24, which is left to the resolvers).
  root-hints.txt     the root servers' addresses, one a line.
  root.hints         the same as a hints file (named.root format).
  zones.txt          "ORIGIN SERVER-INDEX ADDRESS FILE" per zone: which server
                     process serves it, on which address (to poll until
                     every zone is loaded).
  names.txt          "NAME TYPE" for every name and type that has data, in a
                     seeded random order (the dnsperf format). A CNAME owner
                     appears with CNAME, and with A when its chain ends in an
                     address (dangling chains answer NXDOMAIN).

Addresses are 127.(1 + i / 65536).(i / 256 % 256).(i % 256), host part
never .0 nor .255. The root servers and the TLD servers share the first
addresses (all on server 0); the rest are dealt round-robin to the servers,
and each zone's (or hoster's) two name servers get two of its server's.
"""

import argparse
import os
import random
import sys

TTL = 3600
DELEGATION_TTL = 86400
ROOT_SERVERS = ("a", "b", "c")
MAX_CHAIN = 4


def parse_args(argv):
    p = argparse.ArgumentParser(description="Generate a simulated DNS internet.")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--tlds", type=int, default=20)
    p.add_argument("--zones", type=int, default=20000)
    p.add_argument("--hosters", type=int, default=64)
    p.add_argument("--hosted-share", type=float, default=0.25)
    p.add_argument("--addresses", type=int, default=256)
    p.add_argument("--servers", default="knot,knot,knot")
    p.add_argument("--names-per-zone", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--unreachable-share", type=float, default=0.0)
    a = p.parse_args(argv)
    a.servers = [s.strip() for s in a.servers.split(",") if s.strip()]
    for s in a.servers:
        if s not in ("knot", "nsd"):
            p.error(f"--servers: unknown kind {s!r} (knot or nsd)")
    if not a.servers:
        p.error("--servers: give at least one")
    if a.tlds < 1 or a.zones < 0 or a.hosters < 0 or a.names_per_zone < 1:
        p.error("--tlds and --names-per-zone must be at least 1, counts not negative")
    if not 0.0 <= a.hosted_share <= 1.0 or not 0.0 <= a.unreachable_share <= 1.0:
        p.error("--hosted-share and --unreachable-share must be between 0 and 1")
    return a


def address(i):
    """The i-th address of the pool: 127.1.0.1, 127.1.0.2, ... (.0, .255 skipped)."""
    host = i % 254 + 1
    block = i // 254
    return f"127.{1 + block // 256}.{block % 256}.{host}"


class Zone:
    """One master file being written: origin, lines, and the server it lives on."""

    def __init__(self, origin, server, primary_ns):
        self.origin = origin
        self.server = server
        self.lines = [
            f"$ORIGIN {origin}",
            f"$TTL {TTL}",
            f"@ SOA {primary_ns} hostmaster.{origin if origin != '.' else ''} 1 7200 3600 1209600 300",
        ]
        self.address = None  # one address the zone is served on

    def add(self, owner, rtype, rdata, ttl=None):
        ttl_text = f" {ttl}" if ttl is not None else ""
        self.lines.append(f"{owner}{ttl_text} {rtype} {rdata}")

    def file_name(self):
        return "root.zone" if self.origin == "." else self.origin[:-1] + ".zone"


class Internet:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.names = []  # (name, type)
        self.zones = []  # Zone, in generation order
        # Names that may be a CNAME target: (name, chain depth, ends in A?)
        self.targets = []
        self.n_servers = len(args.servers)
        self.allocate_addresses()

    # -- addresses -------------------------------------------------------
    def allocate_addresses(self):
        a = self.args
        n_tld = min(2 * a.tlds, max(2, (a.addresses - len(ROOT_SERVERS)) // 4))
        infra = len(ROOT_SERVERS) + n_tld
        rest = a.addresses - infra
        if rest < 2 * self.n_servers:
            sys.exit(
                f"siminet: --addresses {a.addresses} is too few: the root and TLDs take "
                f"{infra}, and each of {self.n_servers} servers needs two more"
            )
        self.root_addrs = [address(i) for i in range(len(ROOT_SERVERS))]
        self.tld_addrs = [address(i) for i in range(len(ROOT_SERVERS), infra)]
        self.server_addrs = [[] for _ in range(self.n_servers)]
        for j in range(rest):
            self.server_addrs[j % self.n_servers].append(address(infra + j))
        self.server_addrs[0] = self.root_addrs + self.tld_addrs + self.server_addrs[0]
        self.zone_pool = [
            [x for x in addrs if x not in self.root_addrs and x not in self.tld_addrs]
            for addrs in self.server_addrs
        ]

    def two_addresses(self, server):
        return self.rng.sample(self.zone_pool[server], 2)

    # -- zone contents ---------------------------------------------------
    def host_data(self, zone, owner_rel, fqdn, may_alias):
        """A name's records: a CNAME into another zone now and then, else A, maybe more."""
        r = self.rng
        if may_alias and self.targets and r.random() < 0.15:
            # A name of another zone (targets are never apexes), not making
            # the chain longer than MAX_CHAIN.
            target, depth, resolves = None, 0, False
            for _ in range(8):
                t, d, res = r.choice(self.targets)
                if d < MAX_CHAIN and not t.endswith("." + zone.origin):
                    target, depth, resolves = t, d, res
                    break
            if target is not None and r.random() < 0.1:
                # Dangling: into that zone, at a name it does not have.
                target = f"gone{r.randrange(1 << 20)}.{target.split('.', 1)[1]}"
                zone.add(owner_rel, "CNAME", target)
                self.names.append((fqdn, "CNAME"))
                return
            if target is not None:
                zone.add(owner_rel, "CNAME", target)
                self.names.append((fqdn, "CNAME"))
                if resolves:
                    self.names.append((fqdn, "A"))
                self.targets.append((fqdn, depth + 1, resolves))
                return
        zone.add(owner_rel, "A", f"10.{r.randrange(256)}.{r.randrange(256)}.{r.randrange(1, 255)}")
        self.names.append((fqdn, "A"))
        if r.random() < 0.3:
            zone.add(owner_rel, "AAAA", f"2001:db8:{r.randrange(1 << 16):x}::{r.randrange(1, 1 << 16):x}")
            self.names.append((fqdn, "AAAA"))
        if r.random() < 0.1:
            zone.add(owner_rel, "TXT", f'"v=sim1 {r.randrange(1 << 30)}"')
            self.names.append((fqdn, "TXT"))
        if r.random() < 0.1:
            mx = "mail" if self.args.names_per_zone >= 2 else "www"
            zone.add(owner_rel, "MX", f"10 {mx}.{zone.origin}")
            self.names.append((fqdn, "MX"))
        self.targets.append((fqdn, 0, True))

    def fill(self, zone, ns_names, ns_glue):
        """SOA is there; add NS, in-zone NS addresses, apex data and the names."""
        origin = zone.origin
        r = self.rng
        for ns in ns_names:
            zone.add("@", "NS", ns)
        self.names += [(origin, "SOA"), (origin, "NS")]
        for ns, addr in ns_glue:
            zone.add(ns, "A", addr)
            self.names.append((ns, "A"))
        zone.add("@", "A", f"10.{r.randrange(256)}.{r.randrange(256)}.{r.randrange(1, 255)}")
        self.names.append((origin, "A"))
        if r.random() < 0.3:
            zone.add("@", "AAAA", f"2001:db8:{r.randrange(1 << 16):x}::1")
            self.names.append((origin, "AAAA"))
        # MX targets must be addresses, not aliases (RFC 2181 §10.3).
        mx = "mail" if self.args.names_per_zone >= 2 else "www"
        if r.random() < 0.5:
            zone.add("@", "MX", f"10 {mx}.{origin}")
            self.names.append((origin, "MX"))
        txt = r.random()
        if txt < 0.02:
            # Too big for 1232 octets: the servers truncate over UDP and a
            # resolver must ask again over TCP.
            strings = " ".join(f'"{j:02d}{"x" * 200}"' for j in range(8))
            zone.add("@", "TXT", strings)
            self.names.append((origin, "TXT"))
        elif txt < 0.3:
            zone.add("@", "TXT", f'"v=spf1 mx -all" "sim {r.randrange(1 << 30)}"')
            self.names.append((origin, "TXT"))
        labels = ["www", "mail"] + [
            # One in five a level deeper, below an empty non-terminal.
            f"host{j}.dept" if r.random() < 0.2 else f"host{j}"
            for j in range(2, self.args.names_per_zone)
        ]
        for label in labels[: self.args.names_per_zone]:
            self.host_data(zone, label, f"{label}.{origin}", label != mx)

    # -- the internet ----------------------------------------------------
    def build(self):
        a = self.args
        r = self.rng
        tld_origins = [f"tld{k}." for k in range(a.tlds)]

        root = Zone(".", 0, "a.root-servers.sim.")
        root.address = self.root_addrs[0]
        for letter, addr in zip(ROOT_SERVERS, self.root_addrs):
            root.add("@", "NS", f"{letter}.root-servers.sim.", DELEGATION_TTL)
            # In-zone data of the root ("sim" is not delegated), as
            # root-servers.net is data of its own zone on the real internet.
            root.add(f"{letter}.root-servers.sim.", "A", addr, DELEGATION_TTL)
            self.names.append((f"{letter}.root-servers.sim.", "A"))
        self.names += [(".", "SOA"), (".", "NS")]

        tlds = {}
        for k, origin in enumerate(tld_origins):
            tld = Zone(origin, 0, f"a.nic.{origin}")
            servers = [
                (f"a.nic.{origin}", self.tld_addrs[(2 * k) % len(self.tld_addrs)]),
                (f"b.nic.{origin}", self.tld_addrs[(2 * k + 1) % len(self.tld_addrs)]),
            ]
            tld.address = servers[0][1]
            for ns, addr in servers:
                root.add(origin, "NS", ns, DELEGATION_TTL)
                root.add(ns, "A", addr, DELEGATION_TTL)
                tld.add("@", "NS", ns, DELEGATION_TTL)
                tld.add(ns, "A", addr, DELEGATION_TTL)
                self.names.append((ns, "A"))
            self.names += [(origin, "SOA"), (origin, "NS")]
            tlds[origin] = tld

        def delegate(zone, ns_names, glue):
            parent = tlds[zone.origin.split(".", 1)[1]]
            for ns in ns_names:
                parent.add(zone.origin, "NS", ns, DELEGATION_TTL)
            for ns, addr in glue:
                parent.add(ns, "A", addr, DELEGATION_TTL)

        hosters = []
        for h in range(a.hosters):
            origin = f"hoster{h}.{tld_origins[r.randrange(a.tlds)]}"
            server = h % self.n_servers
            ns_names = [f"ns1.{origin}", f"ns2.{origin}"]
            glue = list(zip(ns_names, self.two_addresses(server)))
            zone = Zone(origin, server, ns_names[0])
            zone.address = glue[0][1]
            self.fill(zone, ns_names, glue)
            delegate(zone, ns_names, glue)
            hosters.append(zone)

        slds = []
        for i in range(a.zones):
            origin = f"zone{i}.{tld_origins[i % a.tlds]}"
            if hosters and r.random() < a.hosted_share:
                hoster = r.choice(hosters)
                ns_names = [f"ns1.{hoster.origin}", f"ns2.{hoster.origin}"]
                zone = Zone(origin, hoster.server, ns_names[0])
                zone.address = hoster.address
                self.fill(zone, ns_names, [])
                delegate(zone, ns_names, [])
            else:
                server = i % self.n_servers
                ns_names = [f"ns1.{origin}", f"ns2.{origin}"]
                glue = list(zip(ns_names, self.two_addresses(server)))
                # Drawn only when asked for: without the option the
                # internet is the same as before it existed.
                if a.unreachable_share > 0 and r.random() < a.unreachable_share:
                    ns_names.append(f"ns3.{origin}")
                    glue.append((ns_names[-1], f"192.0.2.{r.randrange(1, 255)}"))
                zone = Zone(origin, server, ns_names[0])
                zone.address = glue[0][1]
                self.fill(zone, ns_names, glue)
                delegate(zone, ns_names, glue)
            slds.append(zone)

        self.zones = [root] + [tlds[o] for o in tld_origins] + hosters + slds
        r.shuffle(self.names)

    # -- output ----------------------------------------------------------
    def write(self):
        a = self.args
        out = os.path.abspath(a.out)
        zdir = os.path.join(out, "zones")
        os.makedirs(zdir, exist_ok=True)
        for zone in self.zones:
            with open(os.path.join(zdir, zone.file_name()), "w") as f:
                f.write("\n".join(zone.lines))
                f.write("\n")

        def lines(name, rows):
            with open(os.path.join(out, name), "w") as f:
                f.write("".join(f"{row}\n" for row in rows))

        all_addrs = [x for addrs in self.server_addrs for x in addrs]
        lines("addresses.txt", all_addrs)
        lines("root-hints.txt", self.root_addrs)
        hints = []
        for letter, addr in zip(ROOT_SERVERS, self.root_addrs):
            hints.append(f".\t{DELEGATION_TTL}\tIN\tNS\t{letter}.root-servers.sim.")
            hints.append(f"{letter}.root-servers.sim.\t{DELEGATION_TTL}\tIN\tA\t{addr}")
        lines("root.hints", hints)
        lines(
            "zones.txt",
            (f"{z.origin} {z.server} {z.address} {os.path.join(zdir, z.file_name())}" for z in self.zones),
        )
        lines("names.txt", (f"{n} {t}" for n, t in self.names))

        servers = []
        for s, kind in enumerate(a.servers):
            run = os.path.join(out, f"run-{s}")
            os.makedirs(run, exist_ok=True)
            zones = [z for z in self.zones if z.server == s]
            conf = os.path.join(out, f"server-{s}.conf")
            text = (knot_conf if kind == "knot" else nsd_conf)(run, zdir, self.server_addrs[s], zones)
            with open(conf, "w") as f:
                f.write(text)
            servers.append(f"{kind} {conf}")
        lines("servers.txt", servers)


def knot_conf(run, zdir, addrs, zones):
    listen = ", ".join(f"{x}@53" for x in addrs)
    out = [
        "# knot.conf(5); generated by bench/lib/siminet.py",
        "server:",
        f"    rundir: {run}",
        f"    pidfile: {run}/knot.pid",
        f"    listen: [ {listen} ]",
        "    udp-workers: 1",
        "    tcp-workers: 1",
        "    background-workers: 1",
        '    identity: ""',
        '    version: ""',
        "",
        "control:",
        f"    listen: {run}/knot.sock",
        "",
        "database:",
        f"    storage: {run}",
        "",
        "log:",
        "  - target: stderr",
        "    any: notice",
        "",
        "template:",
        "  - id: default",
        f"    storage: {zdir}",
        "    zonefile-sync: -1",
        "    zonefile-load: whole",
        "    journal-content: none",
        "    semantic-checks: off",
        "",
        "zone:",
    ]
    for z in zones:
        out.append(f"  - domain: \"{z.origin}\"")
        out.append(f"    file: {os.path.join(zdir, z.file_name())}")
    return "\n".join(out) + "\n"


def nsd_conf(run, zdir, addrs, zones):
    out = [
        "# nsd.conf(5); generated by bench/lib/siminet.py",
        "server:",
        "    server-count: 1",
        "    port: 53",
        "    do-ip6: no",
    ]
    out += [f"    ip-address: {x}" for x in addrs]
    out += [
        '    username: ""',
        '    chroot: ""',
        '    database: ""',
        f'    zonesdir: "{zdir}"',
        f'    zonelistfile: "{run}/zone.list"',
        f'    xfrdfile: "{run}/xfrd.state"',
        f'    xfrdir: "{run}"',
        f'    pidfile: "{run}/nsd.pid"',
        f'    logfile: "{run}/nsd.log"',
        f'    cookie-secret-file: "{run}/cookie-secrets.txt"',
        "    zonefiles-write: 0",
        "    zonefiles-check: no",
        "    hide-version: yes",
        "    hide-identity: yes",
        "    verbosity: 0",
        # The resolvers all ask from one /24: no response rate limiting.
        "    rrl-ratelimit: 0",
        "    rrl-whitelist-ratelimit: 0",
        "",
        "remote-control:",
        "    control-enable: no",
        "",
    ]
    for z in zones:
        out.append("zone:")
        out.append(f'    name: "{z.origin}"')
        out.append(f'    zonefile: "{os.path.join(zdir, z.file_name())}"')
    return "\n".join(out) + "\n"


def main(argv):
    args = parse_args(argv)
    net = Internet(args)
    net.build()
    net.write()


if __name__ == "__main__":
    main(sys.argv[1:])
