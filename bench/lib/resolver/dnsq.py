#!/usr/bin/python3
"""Small DNS checks for bench/resolver.sh (standard library only).

  dnsq.py loaded ZONES_TXT [TIMEOUT]
      Until every zone of zones.txt ("ORIGIN SERVER ADDRESS FILE") answers
      its SOA authoritatively at its address, or TIMEOUT seconds (default
      120) pass. Exit 0 when all do; prints how many are missing otherwise.

  dnsq.py check RESOLVER NAMES ZONES_TXT COUNT [SEED] [ad]
      COUNT names of NAMES ("NAME TYPE", A/AAAA/TXT only) asked of the
      resolver at RESOLVER (address[:port]) with RD, and of the zone's own
      server without: the rcode and the RRset of the question's name and
      type must be the same (names the server answers with a CNAME are
      skipped: the chain is checked by the run's rcodes). Prints
      "checked N wrong W timeout T" and one line per wrong answer. With
      `ad` (a signed internet, a validating resolver) the resolver is asked
      with the AD flag (RFC 6840 §5.7: AD back for data it validated) and
      the line ends "noad X": the answers that came back without it.

  dnsq.py dnssec RESOLVER CHECKS
      Whether the resolver validates: each "NAME TYPE EXPECT" line of
      CHECKS (siminet's dnssec-checks.txt) asked with RD, AD and EDNS DO;
      EXPECT `secure` wants NOERROR with the record and AD, `secure-nxdomain`
      NXDOMAIN with AD, `insecure-nxdomain` NXDOMAIN without AD (opt-out),
      `bogus` SERVFAIL. One line per question (with the
      extended DNS error, RFC 8914, when there is one), then "dnssec OK/N
      ok, validates yes|no". Exit 0 when every answer was as expected, 1
      when the resolver validates (AD on a secure answer, SERVFAIL for the
      bogus one) but some answers were wrong, 2 when it does not validate.

  dnsq.py drops ADDR[,ADDR...]
      "RESOLVER AUTH ALL": UDP datagrams dropped for want of buffer space on
      port 53 at the given addresses, on the other port 53 sockets, and in
      the whole namespace (/proc/net/udp, /proc/net/snmp RcvbufErrors).
"""

import random
import socket
import struct
import sys
import time

TYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "MX": 15, "TXT": 16, "AAAA": 28, "DS": 43, "DNSKEY": 48}


def encode_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode("ascii")
    return out + b"\0"


FLAG_AD = 0x0020
FLAG_TC = 0x0200
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}
EDNS_BUFSIZE = 1232  # DNS flag day 2020
OPT_EDE = 15  # RFC 8914


def query(qid, name, qtype, rd, ad=False, do=False):
    flags = (0x0100 if rd else 0) | (FLAG_AD if ad else 0)
    q = encode_name(name) + struct.pack("!HH", qtype, 1)
    if not do:
        return struct.pack("!HHHHHH", qid, flags, 1, 0, 0, 0) + q
    # An OPT record (RFC 6891) with the DO bit (RFC 3225).
    opt = b"\0" + struct.pack("!HHBBHH", 41, EDNS_BUFSIZE, 0, 0, 0x8000, 0)
    return struct.pack("!HHHHHH", qid, flags, 1, 0, 0, 1) + q + opt


def read_name(msg, off):
    labels, jumped, end = [], False, off
    for _ in range(128):
        n = msg[off]
        if n & 0xC0 == 0xC0:
            if not jumped:
                end = off + 2
            off = ((n & 0x3F) << 8) | msg[off + 1]
            jumped = True
            continue
        off += 1
        if n == 0:
            break
        labels.append(msg[off:off + n].decode("ascii", "replace").lower())
        off += n
    if not jumped:
        end = off
    return ".".join(labels) + ".", end


def parse(msg):
    """(id, flags, rcode, [(owner, type, rdata bytes)] of the answer section)."""
    qid, flags, qd, an, _, _ = struct.unpack("!HHHHHH", msg[:12])
    off = 12
    for _ in range(qd):
        _, off = read_name(msg, off)
        off += 4
    answers = []
    for _ in range(an):
        owner, off = read_name(msg, off)
        rtype, _, _, rdlen = struct.unpack("!HHIH", msg[off:off + 10])
        off += 10
        answers.append((owner, rtype, msg[off:off + rdlen]))
        off += rdlen
    return qid, flags, flags & 0xF, answers


def parse_full(msg):
    """(id, flags, rcode, answers, EDE texts): answers as in parse(), and
    the extended DNS errors (RFC 8914) of the OPT record, "CODE text"."""
    qid, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", msg[:12])
    off = 12
    for _ in range(qd):
        _, off = read_name(msg, off)
        off += 4
    answers, ede = [], []
    for i in range(an + ns + ar):
        owner, off = read_name(msg, off)
        rtype, _, _, rdlen = struct.unpack("!HHIH", msg[off:off + 10])
        off += 10
        rdata = msg[off:off + rdlen]
        off += rdlen
        if i < an:
            answers.append((owner, rtype, rdata))
        elif rtype == 41:
            o = 0
            while o + 4 <= len(rdata):
                code, length = struct.unpack("!HH", rdata[o:o + 4])
                value = rdata[o + 4:o + 4 + length]
                o += 4 + length
                if code == OPT_EDE and len(value) >= 2:
                    info = struct.unpack("!H", value[:2])[0]
                    ede.append(f"{info} {value[2:].decode('utf-8', 'replace')}".strip())
    return qid, flags, flags & 0xF, answers, ede


def addr_port(text):
    host, _, port = text.partition(":")
    return host, int(port or 53)


def ask(sock, server, name, qtype, rd, timeout=2.0, ad=False, do=False, full=False):
    qid = random.randrange(65536)
    sock.settimeout(timeout)
    sock.sendto(query(qid, name, qtype, rd, ad, do), server)
    deadline = time.time() + timeout
    while True:
        try:
            data, _ = sock.recvfrom(65535)
        except socket.timeout:
            return None
        r = parse_full(data) if full else parse(data)
        if r[0] == qid:
            return r
        if time.time() > deadline:
            return None


def loaded(zones_txt, timeout=120.0):
    zones = []
    for line in open(zones_txt):
        f = line.split()
        if len(f) >= 3:
            zones.append((f[0], f[2]))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    deadline = time.time() + timeout
    missing = zones
    while missing and time.time() < deadline:
        pending = {}
        for i, (origin, addr) in enumerate(missing):
            qid = i % 65536
            pending.setdefault(qid, []).append((origin, addr))
            sock.sendto(query(qid, origin, TYPES["SOA"], False), (addr, 53))
            if i % 200 == 199:
                time.sleep(0.002)
        ok = set()
        sock.settimeout(1.0)
        try:
            while len(ok) < len(missing):
                data, src = sock.recvfrom(65535)
                qid, flags, rcode, answers = parse(data)
                if rcode == 0 and flags & 0x0400 and any(t == 6 for _, t, _ in answers):
                    ok.add((answers[0][0], src[0]))
        except socket.timeout:
            pass
        missing = [(o, a) for o, a in missing if (o.lower(), a) not in ok]
        if missing:
            time.sleep(1)
    if missing:
        print(f"{len(missing)} of {len(zones)} zones not loaded, e.g. {missing[:3]}")
        return 1
    return 0


def check(resolver, names_file, zones_txt, count, seed=1, want_ad=False):
    zones = {}
    for line in open(zones_txt):
        f = line.split()
        if len(f) >= 3:
            zones[f[0].lower()] = f[2]
    candidates = []
    for line in open(names_file):
        f = line.split()
        if len(f) == 2 and f[1] in ("A", "AAAA", "TXT"):
            candidates.append((f[0].lower(), f[1]))
    rng = random.Random(seed)
    sample = rng.sample(candidates, min(count, len(candidates)))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    res = addr_port(resolver)
    checked = wrong = timeouts = noad = 0
    for name, tname in sample:
        labels = name.rstrip(".").split(".")
        zone = next((".".join(labels[i:]) + "." for i in range(len(labels)) if ".".join(labels[i:]) + "." in zones), ".")
        qtype = TYPES[tname]
        auth = ask(sock, (zones.get(zone, zones.get(".")), 53), name, qtype, False)
        if auth is None or any(t == TYPES["CNAME"] for _, t, _ in auth[3]):
            continue
        got = ask(sock, res, name, qtype, True, timeout=3.0, ad=want_ad)
        checked += 1
        if got is None:
            timeouts += 1
            print(f"timeout {name} {tname}")
            continue
        # A truncated answer (TC: the big TXT sets, over UDP without EDNS)
        # carries no records to vouch for: not counted.
        if want_ad and got[2] in (0, 3) and not got[1] & (FLAG_AD | FLAG_TC):
            noad += 1
            print(f"noad {name} {tname}: rcode {got[2]} without AD")
        want = (auth[2], sorted(r for o, t, r in auth[3] if o == name and t == qtype))
        have = (got[2], sorted(r for o, t, r in got[3] if o == name and t == qtype))
        if want != have:
            wrong += 1
            print(f"wrong {name} {tname}: rcode {have[0]} with {len(have[1])} records, "
                  f"the zone says rcode {want[0]} with {len(want[1])}")
    print(f"checked {checked} wrong {wrong} timeout {timeouts}" + (f" noad {noad}" if want_ad else ""))
    return 0


def dnssec(resolver, checks_file):
    """Does the resolver validate? See the module's help."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    res = addr_port(resolver)
    total = good = 0
    secure_ad = bogus_servfail = False
    for line in open(checks_file):
        f = line.split()
        if len(f) != 3:
            continue
        name, tname, expect = f[0].lower(), f[1], f[2]
        got = None
        # The first question validates the whole chain from the root:
        # give it time, and ask again once.
        for _ in range(2):
            got = ask(sock, res, name, TYPES[tname], True, timeout=5.0, ad=True, do=True, full=True)
            if got is not None:
                break
        total += 1
        if got is None:
            print(f"FAIL {name} {tname} want {expect}: no answer")
            continue
        _, flags, rcode, answers, ede = got
        ad = bool(flags & FLAG_AD)
        has = any(o == name and t == TYPES[tname] for o, t, _ in answers)
        if expect == "secure":
            ok = rcode == 0 and ad and has
            secure_ad |= rcode == 0 and ad
        elif expect == "secure-nxdomain":
            ok = rcode == 3 and ad
            secure_ad |= rcode == 3 and ad
        elif expect == "insecure-nxdomain":
            ok = rcode == 3 and not ad
        elif expect == "bogus":
            ok = rcode == 2
            bogus_servfail |= ok
        else:
            print(f"FAIL {name} {tname}: unknown expectation {expect}")
            continue
        good += ok
        text = f"{'ok' if ok else 'FAIL'} {name} {tname} want {expect}: {RCODES.get(rcode, rcode)}" \
               f"{' AD' if ad else ' no AD'}, {len(answers)} answer records"
        if ede:
            text += "; EDE " + "; ".join(ede)
        print(text)
    validates = secure_ad and bogus_servfail
    print(f"dnssec {good}/{total} ok, validates {'yes' if validates else 'no'}")
    if not validates:
        return 2
    return 0 if good == total else 1


def drops(resolver_addrs):
    """UDP datagrams dropped for want of buffer space, in this namespace:
    on the sockets of port 53 at the resolver's addresses, on the other
    port 53 sockets (the authoritative servers), and in all (the rest went
    to resperf's socket or to the resolvers' upstream sockets)."""
    mine = set()
    for a in resolver_addrs.split(","):
        if a:
            mine.add("%08X:0035" % int.from_bytes(socket.inet_aton(a), "little"))
    res = auth = 0
    with open("/proc/net/udp") as f:
        next(f)
        for line in f:
            fields = line.split()
            if len(fields) < 13 or not fields[1].endswith(":0035"):
                continue
            if fields[1] in mine:
                res += int(fields[12])
            else:
                auth += int(fields[12])
    total = 0
    with open("/proc/net/snmp") as f:
        rows = [l.split() for l in f if l.startswith("Udp:")]
    if len(rows) >= 2:
        total = int(dict(zip(rows[0][1:], rows[1][1:])).get("RcvbufErrors", 0))
    print(f"{res} {auth} {total}")
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "drops":
        return drops(argv[1])
    if len(argv) >= 2 and argv[0] == "loaded":
        return loaded(argv[1], float(argv[2]) if len(argv) > 2 else 120.0)
    if len(argv) >= 5 and argv[0] == "check":
        return check(argv[1], argv[2], argv[3], int(argv[4]), int(argv[5]) if len(argv) > 5 else 1,
                     len(argv) > 6 and argv[6] == "ad")
    if len(argv) == 3 and argv[0] == "dnssec":
        return dnssec(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
