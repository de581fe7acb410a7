#!/usr/bin/python3
"""Regenerates the seed corpora in fuzz/corpus/ (run from anywhere).

Queries are built with dnspython; responses are captured from a real peer,
knotd, serving the test zones of the repository on a loopback port. Needs the
Debian packages knot, bind9-utils (named-checkzone) and python3-dnspython.
Files are named by content hash, so a rerun only adds what is new. A handful of
hand-made malformed messages (pointer loops, truncations) are added too.
"""

import hashlib
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

import dns.edns
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rdataclass
import dns.rdatatype
import dns.zone

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "corpus")

# (origin, zone file) pairs served by knotd.
ZONES = [
    ("diff.test.", "crates/bulwark/tests/data/diff.zone"),
    ("other.test.", "crates/bulwark/tests/data/other.zone"),
    ("example.com.", "crates/zone/tests/data/everything.zone"),
    ("tricky.test.", "crates/zone/tests/data/tricky.zone"),
]
# Zone files for zone_parse, as they are in the repository.
ZONE_FILES = [
    "crates/bulwark/tests/data/diff.zone",
    "crates/bulwark/tests/data/other.zone",
    "crates/zone/tests/data/everything.zone",
    "crates/zone/tests/data/everything-include.inc",
    "crates/zone/tests/data/tricky.zone",
    "crates/zone/tests/data/generate.zone",
    "crates/zone/tests/data/crlf.zone",
    "crates/zone/tests/data/include-loop.zone",
    "examples/example.com.zone",
]

# Names the differential zone answers in every way it can (see diff.zone).
EXTRA_NAMES = [
    "ent.diff.test.", "y.ent.diff.test.", "a.wild.diff.test.", "b.c.wild.diff.test.",
    "sub.exists.wild.diff.test.", "y.wild.diff.test.", "z.y.wild.diff.test.",
    "a.ent3.diff.test.", "a.wc.diff.test.", "a.wc2.diff.test.", "host.dn-in.diff.test.",
    "x.host.dn-in.diff.test.", "www.dn-out.diff.test.", "www.sub.diff.test.",
    "deep.below.noglue.diff.test.", "nonexistent.diff.test.", "MiXeD.DIFF.test.",
    "outside.example.", "in.here.other.test.", "example.com.", "tricky.test.",
]


def save(target, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def flatten(origin, path, out_dir):
    """Writes the zone with $INCLUDE and $GENERATE expanded, for knotd."""
    out = os.path.join(out_dir, origin + "zone")
    subprocess.run(
        ["named-checkzone", "-q", "-D", "-o", out, origin, os.path.basename(path)],
        cwd=os.path.dirname(path), check=True)
    return out


def start_knot(tmp):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    zones = []
    flat = []
    for origin, path in ZONES:
        zf = flatten(origin, os.path.join(ROOT, path), tmp)
        flat.append((origin, zf))
        zones.append(f"  - domain: {origin}\n    file: {zf}\n")
    conf = os.path.join(tmp, "knot.conf")
    with open(conf, "w") as f:
        f.write(f"""server:
  listen: 127.0.0.1@{port}
  rundir: {tmp}
  identity: fuzz-seed
  nsid: fuzz-seed
database:
  storage: {tmp}/db
log:
  - target: stderr
    any: error
zone:
{''.join(zones)}""")
    proc = subprocess.Popen(["knotd", "-c", conf], stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            udp_exchange(port, dns.message.make_query("diff.test.", "SOA").to_wire(), 0.2)
            return proc, port, flat
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit("knotd did not start")


def udp_exchange(port, wire, timeout=2.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.sendto(wire, ("127.0.0.1", port))
        return s.recv(65535)
    finally:
        s.close()


def tcp_exchange(port, wire):
    with socket.create_connection(("127.0.0.1", port), timeout=2.0) as s:
        s.sendall(struct.pack("!H", len(wire)) + wire)
        head = s.recv(2, socket.MSG_WAITALL)
        (n,) = struct.unpack("!H", head)
        return s.recv(n, socket.MSG_WAITALL)


def questions(flat):
    """Every (name, type) the zones hold, then names that exercise the answer steps."""
    seen = []
    for origin, path in flat:
        z = dns.zone.from_file(path, origin, relativize=False)
        for name, node in z.nodes.items():
            for rds in node.rdatasets:
                seen.append((name.to_text(), rds.rdtype))
    for n in EXTRA_NAMES:
        for t in ("A", "AAAA", "TXT", "MX", "NS", "DS", "ANY"):
            seen.append((n, dns.rdatatype.from_text(t)))
    return seen


def queries(flat):
    """Queries in many shapes: plain, EDNS with options, DO, odd flags and opcodes."""
    qs = []
    for i, (name, rdtype) in enumerate(questions(flat)):
        flavour = i % 4
        if flavour == 0:
            m = dns.message.make_query(name, rdtype, use_edns=False)
        elif flavour == 1:
            m = dns.message.make_query(name, rdtype, use_edns=0, payload=1232)
        elif flavour == 2:
            m = dns.message.make_query(name, rdtype, want_dnssec=True, payload=4096)
        else:
            m = dns.message.make_query(name, rdtype, use_edns=0, payload=512,
                                       options=[dns.edns.GenericOption(10, bytes(range(8)))])
        m.id = i & 0xFFFF
        qs.append(m.to_wire())
    special = [
        dns.message.make_query("diff.test.", "SOA", use_edns=0,
                               options=[dns.edns.GenericOption(3, b""),
                                        dns.edns.GenericOption(11, b""),
                                        dns.edns.GenericOption(12, b"\0" * 20)]),
        dns.message.make_query("diff.test.", "SOA", use_edns=0,
                               options=[dns.edns.GenericOption(10, bytes(range(24)))]),
        dns.message.make_query("www.diff.test.", "A", use_edns=0,
                               options=[dns.edns.ECSOption("192.0.2.0", 24)]),
        dns.message.make_query("www.diff.test.", "A", use_edns=1),
        dns.message.make_query("big.diff.test.", "TXT", use_edns=False),
        dns.message.make_query("big.diff.test.", "TXT", use_edns=0, payload=600),
        dns.message.make_query("id.server.", "TXT", rdclass="CH"),
        dns.message.make_query("version.bind.", "TXT", rdclass="CH", use_edns=False),
        dns.message.make_query("hostname.bind.", "TXT", rdclass="CH"),
        dns.message.make_query("diff.test.", "AXFR", use_edns=False),
        dns.message.make_query("diff.test.", "IXFR", use_edns=False),
        dns.message.make_query("www.diff.test.", "A", rdclass="NONE"),
        dns.message.make_query("www.diff.test.", "A", rdclass="ANY"),
        dns.message.make_query("www.diff.test.", "TYPE65280"),
        dns.message.make_query(".", "NS"),
    ]
    notify = dns.message.make_query("diff.test.", "SOA", use_edns=False)
    notify.set_opcode(dns.opcode.NOTIFY)
    notify.flags |= dns.flags.AA
    special.append(notify)
    odd = dns.message.make_query("www.diff.test.", "A", use_edns=False)
    odd.flags |= dns.flags.CD | dns.flags.AD
    special.append(odd)
    for i, m in enumerate(special):
        m.id = 0xF000 + i
        qs.append(m.to_wire())
    # Two questions, and none.
    two = bytearray(dns.message.make_query("www.diff.test.", "A", use_edns=False).to_wire())
    two[4:6] = b"\x00\x02"
    two += b"\x03ns1\xc0\x10\x00\x01\x00\x01"
    qs.append(bytes(two))
    qs.append(b"\x12\x34\x01\x00" + b"\x00" * 8)
    return qs


def malformed():
    """Hand-made bytes that must be refused cleanly."""
    h = b"\xab\xcd\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
    return [
        h + b"\xc0\x0c\x00\x01\x00\x01",                   # pointer to itself
        h + b"\x01a\xc0\x0c\x00\x01\x00\x01",              # pointer loop through a label
        h + b"\xc0\x20\x00\x01\x00\x01",                   # forward pointer
        h + b"\x03www\x04diff\x04test",                    # name runs off the end
        h + b"\x03www\x04diff\x04test\x00\x00\x01",        # question cut short
        h + b"\x40" + b"a" * 64 + b"\x00\x00\x01\x00\x01",  # label over 63
        h[:11],                                            # short header
        b"\xab\xcd\x01\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x06\x00\x0a\x00\x02\x01\x02",  # bad cookie option
        h + b"\x00\x00\x01\x00\x01\xff",                   # trailing octet
    ]


def main():
    tmp = tempfile.mkdtemp(prefix="bulwark-fuzz-corpus-")
    proc, port, flat = start_knot(tmp)
    try:
        qs = queries(flat)
        responses = []
        for q in qs:
            try:
                responses.append(udp_exchange(port, q))
            except OSError:
                pass
        for q in qs[::7]:
            try:
                responses.append(tcp_exchange(port, q))
            except OSError:
                pass
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    bad = malformed()
    for q in qs + bad:
        save("answer_query", q)
    for m in qs[::3] + responses + bad:
        save("message_parse", m)
        save("message_roundtrip", m)
    # TCP streams: selector octet, schedule seed, then framed messages.
    framed = [struct.pack("!H", len(m)) + m for m in qs[:60]]
    for i in range(0, 60, 6):
        save("tcp_framing", bytes([i % 4, i]) + b"".join(framed[i:i + 6]))
    save("tcp_framing", b"\x01\x07" + framed[0] + b"\x00\x05abcde")       # short length
    save("tcp_framing", b"\x01\x09" + framed[1] + b"\xff\xff" + b"x" * 40)  # over the limit
    save("tcp_framing", b"\x03\x0b" + b"\x01\x00" + b"y" * 200)             # never finishes
    for path in ZONE_FILES:
        with open(os.path.join(ROOT, path), "rb") as f:
            save("zone_parse", f.read())


if __name__ == "__main__":
    main()
