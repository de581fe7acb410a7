#!/usr/bin/python3
"""Generate a simulated DNS internet: zones, server configs, the names in it.

Usage:
  python3 bench/lib/siminet.py --out DIR [--tlds 20] [--zones 20000]
      [--hosters 64] [--hosted-share 0.25] [--addresses 256]
      [--servers knot,knot,knot] [--names-per-zone 3] [--seed 1]
      [--unreachable-share 0]
      [--sign [--nsec3-share 0.5] [--nsec3-optout-share 0] [--signer ldns]
              [--sign-jobs NCPU]]

Standard library only (--sign runs ldns's or BIND's tools); deterministic for a
given seed (the signatures and keys aside). It writes into DIR:

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

With --sign, every zone is DNSSEC-signed (see sign_internet): one
ECDSAP256SHA256 (algorithm 13) key per zone, flags 257, signing everything
(a combined signing key), signatures valid from a day ago to 30 days ahead;
the root with NSEC, every other zone with NSEC (or, a --nsec3-share of them,
NSEC3 with no extra iterations and an empty salt, RFC 9276; a
--nsec3-optout-share of the NSEC3 TLDs with the opt-out flag, which makes
their NXDOMAIN answers insecure). Each child's DS (SHA-256)
is in its parent. The keys are made by ldns-keygen and the zones signed by
ldns-signzone (--signer bind: dnssec-keygen and dnssec-signzone, about three
times slower), --sign-jobs at a time. The zones/ files are then the signed
ones; the unsigned sources and the keys are under DIR/sign/. Also written:

  root-anchor.txt    the root's DS as a zone-file line, the trust anchor
                     (". 3600 IN DS TAG 13 2 HEX").
  root-anchor.conf   the same as BIND's trust-anchors statement (for
                     named's configuration and delv -a).
  dnssec-checks.txt  "NAME TYPE EXPECT" questions for a validating resolver
                     that are not in names.txt: EXPECT `secure` (NOERROR,
                     the record, AD set), `secure-nxdomain` (NXDOMAIN, AD
                     set), `insecure-nxdomain` (NXDOMAIN without AD: an
                     opt-out NSEC3 covers it) or `bogus` (SERVFAIL). Names
                     of three more second-level zones of tld0 (valid-nsec.,
                     valid-nsec3. and bogus., whose DS in tld0 does not
                     match its key; in zones.txt too), names that do not
                     exist under the root and TLDs of each kind of denial,
                     and DS records asked after those denials.

Signing draws from a random generator of its own, so the signed internet
holds the same zones, names and addresses as the unsigned one of the same
seed, plus the DNSSEC records and the three check zones.

Addresses are 127.(1 + i / 65536).(i / 256 % 256).(i % 256), host part
never .0 nor .255. The root servers and the TLD servers share the first
addresses (all on server 0); the rest are dealt round-robin to the servers,
and each zone's (or hoster's) two name servers get two of its server's.
"""

import argparse
import base64
import concurrent.futures
import hashlib
import os
import random
import shutil
import struct
import subprocess
import sys
import time

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
    p.add_argument("--sign", action="store_true", help="DNSSEC-sign every zone (algorithm 13)")
    p.add_argument("--nsec3-share", type=float, default=0.5,
                   help="with --sign: the share of zones (not the root) denied with NSEC3")
    p.add_argument("--nsec3-optout-share", type=float, default=0.0,
                   help="with --sign: the share of NSEC3 TLDs with the opt-out flag")
    p.add_argument("--signer", choices=("ldns", "bind"), default="ldns",
                   help="with --sign: ldns-keygen/ldns-signzone or dnssec-keygen/dnssec-signzone")
    p.add_argument("--sign-jobs", type=int, default=os.cpu_count() or 1,
                   help="with --sign: zones keyed and signed at once")
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
    if not 0.0 <= a.nsec3_share <= 1.0 or not 0.0 <= a.nsec3_optout_share <= 1.0:
        p.error("--nsec3-share and --nsec3-optout-share must be between 0 and 1")
    if a.sign_jobs < 1:
        p.error("--sign-jobs must be at least 1")
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
        # With --sign: "nsec" or "nsec3" (set by sign_internet unless a
        # check zone set it), the NSEC3 opt-out flag, the key's base name,
        # and whether the DS in the parent is made not to match (bogus).
        self.denial = None
        self.optout = False
        self.key = None
        self.bogus = False

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
        if a.sign:
            # After the shuffle and from addresses already dealt: the zones
            # and names drawn above are those of the unsigned internet.
            self.add_check_zones(tlds[tld_origins[0]])

    def add_check_zones(self, parent):
        """Three zones under tld0 for the validation checks (dnssec-checks.txt),
        on the last server's first two addresses: two signed as usual (one
        with NSEC, one with NSEC3) and one whose DS in the parent matches no
        key of it (bogus)."""
        server = self.n_servers - 1
        addrs = self.zone_pool[server][:2]
        self.checks = []
        for label, denial in (("valid-nsec", "nsec"), ("valid-nsec3", "nsec3"), ("bogus", "nsec")):
            origin = f"{label}.{parent.origin}"
            ns_names = [f"ns1.{origin}", f"ns2.{origin}"]
            zone = Zone(origin, server, ns_names[0])
            zone.address = addrs[0]
            zone.denial = denial
            zone.bogus = label == "bogus"
            for ns in ns_names:
                zone.add("@", "NS", ns)
                parent.add(origin, "NS", ns, DELEGATION_TTL)
            for ns, addr in zip(ns_names, addrs):
                zone.add(ns, "A", addr)
                parent.add(ns, "A", addr, DELEGATION_TTL)
            zone.add("@", "A", "192.0.2.53")
            zone.add("www", "A", "192.0.2.80")
            self.zones.append(zone)
            if zone.bogus:
                self.checks.append((f"www.{origin}", "A", "bogus"))
            else:
                self.checks.append((f"www.{origin}", "A", "secure"))
                self.checks.append((f"nx.{origin}", "A", "secure-nxdomain"))

    # -- output ----------------------------------------------------------
    def write(self):
        a = self.args
        out = os.path.abspath(a.out)
        zdir = os.path.join(out, "zones")
        os.makedirs(zdir, exist_ok=True)
        if a.sign:
            sign_internet(self, out, zdir)
        else:
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


# -- DNSSEC -------------------------------------------------------------
ALGORITHM = 13  # ECDSAP256SHA256 (RFC 6605)
SIG_INCEPTION_AGO = 86400  # signatures valid from a day ago ...
SIG_VALIDITY = 30 * 86400  # ... to 30 days ahead


def name_wire(name):
    """The canonical wire form of an absolute name (RFC 4034 §6.2: lower case)."""
    out = b""
    for label in name.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.lower().encode("ascii")
    return out + b"\0"


def read_dnskey(path):
    """(owner, rdata text, rdata wire) of the DNSKEY record in a .key file
    (ldns-keygen's or dnssec-keygen's; comments start with ';')."""
    for line in open(path):
        line = line.split(";", 1)[0].split()
        if "DNSKEY" in line:
            i = line.index("DNSKEY")
            flags, proto, alg = (int(x) for x in line[i + 1:i + 4])
            key = base64.b64decode("".join(line[i + 4:]))
            wire = struct.pack("!HBB", flags, proto, alg) + key
            text = f"{flags} {proto} {alg} {base64.b64encode(key).decode()}"
            return line[0], text, wire
    sys.exit(f"siminet: no DNSKEY record in {path}")


def key_tag(rdata):
    """RFC 4034 appendix B."""
    acc = 0
    for i, b in enumerate(rdata):
        acc += b << 8 if i % 2 == 0 else b
    acc += (acc >> 16) & 0xFFFF
    return acc & 0xFFFF


def ds_rdata(owner, rdata):
    """The SHA-256 DS rdata (RFC 4509) of a DNSKEY, in presentation form."""
    digest = hashlib.sha256(name_wire(owner) + rdata).hexdigest().upper()
    return f"{key_tag(rdata)} {rdata[3]} 2 {digest}"


def utc_stamp(t):
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(t))


def run_tool(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"siminet: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def add_denial_checks(net):
    """More dnssec-checks.txt lines, once each zone's denial is chosen: a
    name that does not exist under the root and under one TLD of each kind
    of denial there is (NSEC, NSEC3, NSEC3 with opt-out: an opt-out NSEC3
    covering the name could hide an unsigned delegation, so the NXDOMAIN
    is insecure, RFC 5155 §6, and no AD is expected), then a TLD's and a
    second-level zone's DS, asked after those denials: a validator must
    not take the child's apex NSEC, cached from them, as proof that the
    parent has no DS (RFC 6840 §4.1)."""
    if not hasattr(net, "checks"):
        return
    tlds = [z for z in net.zones if z.origin.count(".") == 1 and z.origin != "."]
    kinds = {}
    for z in tlds:
        kinds.setdefault((z.denial, z.optout), z)
    for (denial, optout), z in sorted(kinds.items()):
        net.checks.append((f"nx-check.{z.origin}", "A", "insecure-nxdomain" if optout else "secure-nxdomain"))
    net.checks.append(("nx-check.", "A", "secure-nxdomain"))
    for z in [tlds[0]] + [t for t in tlds if t.denial == "nsec3" and t is not tlds[0]][:1]:
        net.checks.append((z.origin, "DS", "secure"))
    net.checks.append((f"valid-nsec.{tlds[0].origin}", "DS", "secure"))


def sign_internet(net, out, zdir):
    """Key every zone, put each child's DS into its parent, sign every zone
    into zdir, and write root-anchor.txt and dnssec-checks.txt.

    Every key exists before any zone is signed, so the DS records are all
    known up front and the zones (children and parents alike) are signed
    side by side, --sign-jobs at a time, one signer process per zone."""
    a = net.args
    tools = {"ldns": ("ldns-keygen", "ldns-signzone"), "bind": ("dnssec-keygen", "dnssec-signzone")}[a.signer]
    for tool in tools:
        if shutil.which(tool) is None:
            package = "ldnsutils" if a.signer == "ldns" else "bind9-utils"
            sys.exit(f"siminet: --sign needs {tool} (Debian package {package}); or try --signer "
                     f"{'bind' if a.signer == 'ldns' else 'ldns'}")
    sdir = os.path.join(out, "sign")
    kdir = os.path.join(sdir, "keys")
    udir = os.path.join(sdir, "unsigned")
    for d in (kdir, udir):
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
    # A generator of its own: the unsigned internet's draws stay as they were.
    srng = random.Random(f"siminet-sign-{a.seed}")
    for zone in net.zones:
        if zone.denial is None:
            nsec3 = zone.origin != "." and srng.random() < a.nsec3_share
            zone.denial = "nsec3" if nsec3 else "nsec"
            # Opt-out is for zones of delegations (RFC 5155 §6): the TLDs.
            is_tld = zone.origin.count(".") == 1 and zone.origin != "."
            zone.optout = zone.denial == "nsec3" and is_tld and srng.random() < a.nsec3_optout_share
    add_denial_checks(net)

    started = time.time()
    jobs = a.sign_jobs

    def keygen(zone):
        if a.signer == "ldns":
            base = run_tool(["ldns-keygen", "-a", "ECDSAP256SHA256", "-k", zone.origin], kdir).split()[-1]
            # Its DS file: the DS is computed here (ds_rdata), for both signers.
            os.unlink(os.path.join(kdir, base + ".ds"))
        else:
            base = run_tool(["dnssec-keygen", "-q", "-a", str(ALGORITHM), "-f", "KSK", "-n", "ZONE",
                             "-K", kdir, zone.origin], kdir).split()[-1]
        return os.path.join(kdir, base)

    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        for zone, base in zip(net.zones, ex.map(keygen, net.zones)):
            zone.key = base
    keyed = time.time()

    by_origin = {z.origin: z for z in net.zones}
    anchor = None
    for zone in net.zones:
        owner, text, wire = read_dnskey(zone.key + ".key")
        zone.add("@", "DNSKEY", text)
        ds = ds_rdata(zone.origin, wire)
        if zone.bogus:
            # The right key tag and algorithm, a digest of nothing it has.
            tag, alg, dt, digest = ds.split()
            ds = f"{tag} {alg} {dt} {hashlib.sha256(digest.encode()).hexdigest().upper()}"
        if zone.origin == ".":
            anchor = f". {TTL} IN DS {ds}"
            continue
        parent = zone.origin.split(".", 1)[1] or "."
        by_origin[parent].add(zone.origin, "DS", ds, DELEGATION_TTL)

    inception = utc_stamp(started - SIG_INCEPTION_AGO)
    expiration = utc_stamp(started + SIG_VALIDITY)

    def sign(zone):
        src = os.path.join(udir, zone.file_name())
        dst = os.path.join(zdir, zone.file_name())
        with open(src, "w") as f:
            f.write("\n".join(zone.lines))
            f.write("\n")
        if a.signer == "ldns":
            cmd = ["ldns-signzone", "-i", inception, "-e", expiration, "-f", dst]
            if zone.denial == "nsec3":
                # SHA-1, no extra iterations, empty salt (RFC 9276 §3.1).
                cmd += ["-n", "-a", "1", "-t", "0"] + (["-p"] if zone.optout else [])
            cmd += [src, zone.key]
        else:
            # -z: the one key (a KSK) signs every RRset; -P: no post-signing
            # verification (checked separately); -n 1: one thread per zone,
            # the pool runs --sign-jobs zones at once.
            cmd = ["dnssec-signzone", "-q", "-z", "-P", "-n", "1", "-o", zone.origin,
                   "-s", inception, "-e", expiration, "-d", sdir, "-K", kdir, "-f", dst]
            if zone.denial == "nsec3":
                cmd += ["-3", "-", "-H", "0"] + (["-A"] if zone.optout else [])
            cmd += [src, zone.key + ".key"]
        run_tool(cmd, sdir)

    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        list(ex.map(sign, net.zones))
    done = time.time()

    with open(os.path.join(out, "root-anchor.txt"), "w") as f:
        f.write(anchor + "\n")
    tag, alg, dt, digest = anchor.split()[4:]
    with open(os.path.join(out, "root-anchor.conf"), "w") as f:
        f.write(f'trust-anchors {{ . static-ds {tag} {alg} {dt} "{digest}"; }};\n')
    with open(os.path.join(out, "dnssec-checks.txt"), "w") as f:
        f.write("".join(f"{n} {t} {e}\n" for n, t, e in getattr(net, "checks", [])))
    n3 = sum(1 for z in net.zones if z.denial == "nsec3")
    print(f"siminet: signed {len(net.zones)} zones ({len(net.zones) - n3} NSEC, {n3} NSEC3, "
          f"{sum(1 for z in net.zones if z.optout)} with opt-out) with {a.signer}, {jobs} at a time: "
          f"keys {keyed - started:.1f} s, signing {done - keyed:.1f} s", file=sys.stderr)


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
