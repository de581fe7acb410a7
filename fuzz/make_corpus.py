#!/usr/bin/python3
"""Regenerates the seed corpora in fuzz/corpus/ (run from anywhere).

Queries are built with dnspython; responses are captured from a real peer,
knotd, serving the test zones of the repository on a loopback port. Needs the
Debian packages knot, bind9-utils (named-checkzone) and python3-dnspython.
Files are named by content hash, so a rerun only adds what is new. A handful of
hand-made malformed messages (pointer loops, truncations) are added too.

The seeds of the replication targets (xfr_update, transfer_reader,
tsig_verify) are UPDATE messages, AXFR and IXFR answers (knotd's, and
incremental ones built here), and messages signed with the TSIG keys the
tsig_verify target holds. Name targets on the command line to write only
their corpora:

    /usr/bin/python3 fuzz/make_corpus.py xfr_update transfer_reader tsig_verify
"""

import base64
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
import dns.entropy
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import dns.tsig
import dns.update
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


# Targets to write seeds for; empty: all of them.
ONLY = set(sys.argv[1:])


def save(target, data):
    if ONLY and target not in ONLY:
        return
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
        zones.append(f"  - domain: {origin}\n    file: {zf}\n    acl: transfer\n")
    conf = os.path.join(tmp, "knot.conf")
    with open(conf, "w") as f:
        f.write(f"""server:
  listen: 127.0.0.1@{port}
  rundir: {tmp}
  identity: fuzz-seed
  nsid: fuzz-seed
database:
  storage: {tmp}/db
key:
  - id: xfr.key.
    algorithm: hmac-sha256
    secret: {base64.b64encode(TSIG_KEYS["xfr.key."][1]).decode()}
# Transfers only with TSIG: unsigned AXFR queries are refused (NOTAUTH).
acl:
  - id: transfer
    key: xfr.key.
    action: transfer
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


def tcp_transfer(port, query):
    """Every message of a zone transfer over TCP, up to the closing SOA. A
    signed transfer is checked by dnspython, message by message."""
    wire = query.to_wire()
    msgs = []
    soas = 0
    ctx = None
    with socket.create_connection(("127.0.0.1", port), timeout=2.0) as s:
        s.sendall(struct.pack("!H", len(wire)) + wire)
        while soas < 2 and len(msgs) < 100:
            head = s.recv(2, socket.MSG_WAITALL)
            if len(head) < 2:
                break
            (n,) = struct.unpack("!H", head)
            m = s.recv(n, socket.MSG_WAITALL)
            msgs.append(m)
            parsed = dns.message.from_wire(
                m, keyring=query.keyring, request_mac=query.mac, xfr=True,
                tsig_ctx=ctx, multi=True, one_rr_per_rrset=True)
            ctx = parsed.tsig_ctx
            soas += sum(1 for rr in parsed.answer if rr.rdtype == dns.rdatatype.SOA)
            if parsed.rcode() != 0:
                break
    return msgs


def framed(msgs):
    return b"".join(struct.pack("!H", len(m)) + m for m in msgs)


# ---- xfr_update: UPDATE messages for diff.test. (RFC 2136) ----

UPDATE_SOA = "ns1.diff.test. hostmaster.diff.test. {} 7200 3600 1209600 300"
DNSKEY = "257 3 13 l/kel4t/DCK1wZFKOS/OeOtDnC1PWiINuPH8jIdaNa0pvqpiV7j0fgca qEynqefqiQZfcYbMyGm0SQcrWrTR3Q=="
RRSIG = ("A 13 3 3600 20360101000000 20240101000000 24545 diff.test. "
         "JTgC1cCGE6U/wcoB8SJY7sMDQftgu+0ZXqunzbBugWxUL5v+jsXPTJUS BW+DPg4kWwiB9FMScuQyINnO3Fx6gA==")


def update_messages():
    """UPDATE messages, one per way RFC 2136 lets a message change a zone or
    be turned down, and pairs of messages applied in a row."""
    def u(*steps, zone="diff.test.", edns=False):
        m = dns.update.UpdateMessage(zone)
        for op, *args in steps:
            getattr(m, op)(*args)
        if edns:
            m.use_edns(0)
        return m.to_wire()

    singles = [
        u(("add", "new", 300, "A", "192.0.2.200")),
        u(("add", "www", 3600, "A", "192.0.2.81")),
        u(("add", "www", 60, "A", "192.0.2.81")),
        u(("add", "WWW", 3600, "AAAA", "2001:DB8::80")),
        u(("delete", "www", "A")),
        u(("delete", "www", "A", "192.0.2.80")),
        u(("delete", "www")),
        u(("delete", "x.y.ent")),
        u(("replace", "www", 300, "TXT", '"replaced"')),
        u(("present", "www"), ("absent", "nothere"), ("add", "nothere", 300, "AAAA", "2001:db8::99")),
        u(("present", "www", "A"), ("absent", "www", "CNAME"), ("delete", "www", "AAAA")),
        u(("present", "www", "A", "192.0.2.80"), ("add", "www", 3600, "A", "192.0.2.82")),
        u(("present", "multi", "TXT", '"first string" "second string"'),
          ("present", "multi", "TXT", '"another record"'), ("delete", "multi", "TXT")),
        u(("present", "nothere")),
        u(("absent", "www")),
        u(("present", "www", "MX")),
        u(("absent", "www", "A")),
        u(("present", "www", "A", "192.0.2.99")),
        u(("add", "@", 3600, "SOA", UPDATE_SOA.format(2024010200))),
        u(("add", "@", 3600, "SOA", UPDATE_SOA.format(2024010100))),
        u(("add", "www", 3600, "SOA", UPDATE_SOA.format(2024010200))),
        u(("delete", "@", "SOA")),
        u(("delete", "@", "NS")),
        u(("delete", "@", "NS", "ns1.diff.test.")),
        u(("delete", "@", "NS", "ns1.diff.test."), ("delete", "@", "NS", "ns2.outside.example.")),
        u(("delete", "@")),
        u(("add", "www", 300, "CNAME", "c1")),
        u(("add", "c1", 300, "A", "192.0.2.1")),
        u(("add", "c1", 300, "CNAME", "www")),
        u(("delete", "c1", "CNAME"), ("add", "c1", 300, "A", "192.0.2.1")),
        u(("add", "newsub", 3600, "NS", "ns.newsub"), ("add", "ns.newsub", 3600, "A", "192.0.2.5")),
        u(("add", "a.sub", 300, "A", "192.0.2.6")),
        u(("add", "x.y.ent", 300, "DNAME", "other.test.")),
        u(("add", "inside", 300, "A", "192.0.2.7")),
        u(("add", "*.wild", 300, "AAAA", "2001:db8::100")),
        u(("add", "www", 3600, "RRSIG", RRSIG)),
        u(("delete", "www", "RRSIG")),
        u(("add", "www", 300, "NSEC", "zzz.diff.test. A RRSIG NSEC")),
        u(("add", "@", 3600, "DNSKEY", DNSKEY)),
        u(("delete", "@", "DNSKEY")),
        u(("delete", "@", "NSEC3PARAM")),
        u(("present", "@", "DNSKEY"), ("add", "new", 300, "TXT", '"signed zone"')),
        u(("add", "sub", 3600, "DS", "12345 13 2 2BB183AF5F22588179A53B0A98631FAD1A292118D2C0AE2E1FA19E0D7C6E1F70")),
        u(("add", "big", 3600, "TXT", '"e"')),
        u(("add", "outside.example.", 300, "A", "192.0.2.8")),
        u(("add", "new", 300, "A", "192.0.2.9"), zone="other.test."),
        u(("add", "new", 300, "MX", "10 mail"), ("add", "new", 300, "SRV", "0 0 53 ns1"), edns=True),
        u(),
    ]
    # Class ANY with data, a prerequisite with a TTL: refused as malformed.
    bad = bytearray(u(("present", "www")))
    bad[-6:-2] = b"\x00\x00\x0e\x10"
    singles.append(bytes(bad))
    notupdate = dns.message.make_query("diff.test.", "SOA", use_edns=False).to_wire()
    singles.append(notupdate)
    pairs = [
        (u(("add", "new", 300, "A", "192.0.2.200")), u(("delete", "new", "A", "192.0.2.200"))),
        (u(("add", "new", 300, "A", "192.0.2.200")), u(("present", "new"), ("add", "new", 60, "A", "192.0.2.201"))),
        (u(("delete", "www")), u(("absent", "www"), ("add", "www", 300, "CNAME", "c1"))),
        (u(("add", "@", 3600, "SOA", UPDATE_SOA.format(2024010300))), u(("add", "new", 300, "A", "192.0.2.1"))),
        (u(("present", "nothere")), u(("add", "x", 300, "TXT", '"second"'))),
        (u(("delete", "@", "NS", "ns1.diff.test.")), u(("delete", "@", "NS", "ns2.outside.example."))),
        (u(("delete", "c1", "CNAME")), u(("add", "c1", 300, "AAAA", "2001:db8::c1"))),
    ]
    return singles, pairs


# ---- tsig_verify: messages signed with the target's keys (RFC 8945) ----

TSIG_KEYS = {
    "xfr.key.": (dns.tsig.HMAC_SHA256, b"bulwark-fuzz-xfr-key-secret-0001"),
    "other.": (dns.tsig.HMAC_SHA1, b"other-key-secret"),
    # Not in the target's ring: BADKEY.
    "nokey.": (dns.tsig.HMAC_SHA256, b"a key nobody holds"),
    "xfr.key.md5.": (dns.tsig.HMAC_MD5, b"bulwark-fuzz-xfr-key-secret-0001"),
}
# The MAC of the request the target reads the input as an answer to.
REQUEST_MAC = b"fuzz-request-mac-fuzz-request-ma"
SIGNED_AT = 1_700_000_000


def tsig_key(name):
    alg, secret = TSIG_KEYS[name]
    if name == "xfr.key.md5.":
        name = "xfr.key."
    return dns.tsig.Key(name, secret, alg)


def signed_at(t, render):
    """Renders with dnspython's clock stopped at `t` (it signs at time.time())."""
    real = time.time
    time.time = lambda: t
    try:
        return render()
    finally:
        time.time = real


def truncate_mac(wire, unsigned_len, mac_len):
    """The signed message with its MAC cut to `mac_len` octets (RFC 8945
    §5.2.2.1): the MAC covers no length, so the first octets stay valid."""
    at = unsigned_len
    while wire[at] != 0:          # the key name, uncompressed
        at += wire[at] + 1
    at += 1 + 10                  # root label, type, class, TTL, RDLENGTH
    rd_at = at - 2
    while wire[at] != 0:          # the algorithm name
        at += wire[at] + 1
    at += 1 + 8                   # root label, time signed, fudge
    (size,) = struct.unpack("!H", wire[at:at + 2])
    rest = wire[at + 2 + size:]
    mac = wire[at + 2:at + 2 + mac_len]
    rdlen = struct.unpack("!H", wire[rd_at:rd_at + 2])[0] - size + mac_len
    return (wire[:rd_at] + struct.pack("!H", rdlen) + wire[rd_at + 2:at]
            + struct.pack("!H", mac_len) + mac + rest)


def tsig_messages():
    """(clock, message) pairs for tsig_verify."""
    out = []

    def request(make, key, t=SIGNED_AT, fudge=300, truncate=None):
        m = make()
        unsigned_len = len(m.to_wire())
        m.use_tsig(tsig_key(key), fudge=fudge)
        wire = signed_at(t, m.to_wire)
        if truncate:
            wire = truncate_mac(wire, unsigned_len, truncate)
        return wire

    query = lambda: dns.message.make_query("www.diff.test.", "A", use_edns=False)
    query_edns = lambda: dns.message.make_query("diff.test.", "SOA", use_edns=0)
    axfr = lambda: dns.message.make_query("diff.test.", "AXFR", use_edns=False)

    def update():
        m = dns.update.UpdateMessage("diff.test.")
        m.add("new", 300, "A", "192.0.2.200")
        return m

    def notify():
        m = dns.message.make_query("diff.test.", "SOA", use_edns=False)
        m.set_opcode(dns.opcode.NOTIFY)
        m.flags |= dns.flags.AA
        return m

    for make in (query, query_edns, axfr, update, notify):
        for key in ("xfr.key.", "other."):
            out.append((SIGNED_AT, request(make, key)))
    t = SIGNED_AT
    out += [
        (t + 299, request(query, "xfr.key.")),            # inside the fudge
        (t + 301, request(query, "xfr.key.")),            # BADTIME
        (t - 1000, request(query, "other.")),             # BADTIME, the other way
        (t, request(query, "xfr.key.", fudge=0)),
        (t, request(query, "nokey.")),                    # BADKEY
        (t, request(query, "xfr.key.md5.")),              # BADKEY: no hmac-md5
        (t, request(query, "other.", truncate=10)),       # accepted truncation
        (t, request(query, "other.", truncate=12)),
        (t, request(query, "xfr.key.", truncate=16)),     # BADTRUNC
        (t + 400, request(query, "xfr.key.", truncate=16)),  # BADTIME before BADTRUNC
        (t, request(query, "xfr.key.", truncate=8)),      # too short: FORMERR
        (t, request(query, "other.", truncate=9)),        # too short: FORMERR
    ]
    # A wrong MAC: BADSIG.
    bad = bytearray(request(query, "xfr.key."))
    bad[-10] ^= 0xFF
    out.append((t, bytes(bad)))

    # Answers to a request whose MAC was REQUEST_MAC.
    def response(key, make=query, t=SIGNED_AT):
        q = make()
        q.use_tsig(tsig_key(key))
        signed_at(t, q.to_wire)
        r = dns.message.make_response(q)
        r.request_mac = REQUEST_MAC
        return r

    for key in ("xfr.key.", "other."):
        r = response(key)
        out.append((t, signed_at(t, r.to_wire)))
    r = response("xfr.key.")
    r.use_tsig(tsig_key("xfr.key."), tsig_error=18, other_data=SIGNED_AT.to_bytes(6, "big"))
    out.append((t, signed_at(t, r.to_wire)))

    # A transfer answer of several messages, the later ones continuing the
    # MAC chain (RFC 8945 §5.3.1), one of them unsigned.
    for key, unsigned_middle in (("xfr.key.", False), ("xfr.key.", True), ("other.", True)):
        q = axfr()
        q.use_tsig(tsig_key(key))
        signed_at(t, q.to_wire)
        first = dns.message.make_response(q)
        first.request_mac = REQUEST_MAC
        first.answer.append(dns.rrset.from_text(
            "diff.test.", 3600, "IN", "SOA", UPDATE_SOA.format(2024010101)))
        msgs = [signed_at(t, lambda: first.to_wire(multi=True))]
        ctx = first.tsig_ctx
        if unsigned_middle:
            mid = dns.message.Message(id=first.id)
            mid.flags = first.flags
            mid.answer.append(dns.rrset.from_text("www.diff.test.", 3600, "IN", "A", "192.0.2.80"))
            wire = mid.to_wire()
            ctx.update(wire)
            msgs.append(wire)
        last = dns.message.Message(id=first.id)
        last.flags = first.flags
        last.answer.append(dns.rrset.from_text(
            "diff.test.", 3600, "IN", "SOA", UPDATE_SOA.format(2024010101)))
        last.use_tsig(tsig_key(key))
        msgs.append(signed_at(t, lambda: last.to_wire(multi=True, tsig_ctx=ctx)))
        out.append((t, framed(msgs)))
    return out


# ---- transfer_reader: AXFR and IXFR answers (RFC 5936, RFC 1995) ----

def transfer_header(mode, limits=0x3F, serial=2024010101):
    return bytes([mode, limits]) + struct.pack("!I", serial)


def diff_records():
    z = dns.zone.from_file(os.path.join(ROOT, "crates/bulwark/tests/data/diff.zone"),
                           "diff.test.", relativize=False)
    soa = None
    rrs = []
    for name, node in sorted(z.nodes.items()):
        for rds in node.rdatasets:
            for rd in rds:
                rr = dns.rrset.from_rdata(name, rds.ttl, rd)
                if rds.rdtype == dns.rdatatype.SOA:
                    soa = rr
                else:
                    rrs.append(rr)
    return soa, rrs


def soa_rr(serial):
    return dns.rrset.from_text("diff.test.", 3600, "IN", "SOA", UPDATE_SOA.format(serial))


def answer_messages(qtype, chunks, qid=0x5A5A):
    """One response per chunk of records; only the first carries the question."""
    msgs = []
    for i, chunk in enumerate(chunks):
        q = dns.message.make_query("diff.test.", qtype, use_edns=False)
        q.id = qid
        r = dns.message.make_response(q)
        r.flags |= dns.flags.AA
        if i > 0:
            r.question = []
        for rr in chunk:
            r.answer.append(rr)
        msgs.append(r.to_wire())
    return msgs


def transfer_inputs(knot_port):
    soa, rrs = diff_records()
    serial = 2024010101
    out = []
    # A whole zone in several messages, and in one.
    chunks = [[soa] + rrs[:20], rrs[20:50], rrs[50:], [soa]]
    out.append(transfer_header(0) + framed(answer_messages("AXFR", chunks)))
    out.append(transfer_header(0x80) + framed(answer_messages("AXFR", [[soa] + rrs + [soa]])))
    out.append(transfer_header(0) + framed(answer_messages("AXFR", [[soa, soa]])))
    # The same as an AXFR-style IXFR answer, and cut short.
    out.append(transfer_header(1 | 8, serial=serial - 5) + framed(answer_messages("IXFR", chunks)))
    out.append(transfer_header(0) + framed(answer_messages("AXFR", chunks[:2])))
    # Limits too small for it.
    out.append(transfer_header(0, limits=0x03) + framed(answer_messages("AXFR", chunks)))
    # Incremental: 2024010101 -> 02 -> 03, over three messages.
    a = dns.rrset.from_text("new.diff.test.", 300, "IN", "A", "192.0.2.200")
    www = dns.rrset.from_text("www.diff.test.", 3600, "IN", "A", "192.0.2.80")
    txt = dns.rrset.from_text("www.diff.test.", 300, "IN", "TXT", '"short ttl"')
    ixfr = [[soa_rr(serial + 2), soa_rr(serial), www, soa_rr(serial + 1), a],
            [soa_rr(serial + 1), txt, soa_rr(serial + 2)],
            [www, soa_rr(serial + 2)]]
    out.append(transfer_header(1 | 8, serial=serial) + framed(answer_messages("IXFR", ixfr)))
    out.append(transfer_header(1 | 8 | 0x80, serial=serial)
               + framed(answer_messages("IXFR", [sum(ixfr, [])])))
    out.append(transfer_header(1, serial=serial) + framed(answer_messages("IXFR", ixfr)))
    # Broken chains: the second diff starts elsewhere; the end is not reached.
    broken = [[soa_rr(serial + 2), soa_rr(serial), www, soa_rr(serial + 1), a,
               soa_rr(serial + 7), soa_rr(serial + 2), soa_rr(serial + 2)]]
    out.append(transfer_header(1 | 8, serial=serial) + framed(answer_messages("IXFR", broken)))
    # A single SOA: up to date, or newer (ask again).
    out.append(transfer_header(1 | 8, serial=serial) + framed(answer_messages("IXFR", [[soa_rr(serial)]])))
    out.append(transfer_header(1 | 8, serial=serial) + framed(answer_messages("IXFR", [[soa_rr(serial + 9)]])))
    # The root as the apex: every owner is inside.
    out.append(transfer_header(4) + framed(answer_messages("AXFR", chunks)))
    # knotd's own answers: AXFR and IXFR of diff.test. and other.test., a
    # SOA answer, and an error.
    # knotd transfers only to TSIG-signed queries, and signs every message.
    for apex, mode in (("diff.test.", 0), ("other.test.", 2)):
        q = dns.message.make_query(apex, "AXFR", use_edns=False)
        q.use_tsig(tsig_key("xfr.key."))
        out.append(transfer_header(mode) + framed(tcp_transfer(knot_port, q)))
    q = dns.message.make_query("diff.test.", "IXFR", use_edns=False)
    q.authority.append(soa_rr(serial - 1))
    q.use_tsig(tsig_key("xfr.key."))
    out.append(transfer_header(1 | 8, serial=serial - 1) + framed(tcp_transfer(knot_port, q)))
    q = dns.message.make_query("diff.test.", "AXFR", use_edns=False)
    out.append(transfer_header(0) + framed(tcp_transfer(knot_port, q)))
    q = dns.message.make_query("diff.test.", "SOA", use_edns=0)
    out.append(transfer_header(0) + framed([udp_exchange(knot_port, q.to_wire())]))
    q = dns.message.make_query("nowhere.test.", "AXFR", use_edns=False)
    out.append(transfer_header(0) + framed(tcp_transfer(knot_port, q)))
    # NOTIFY, with the new SOA in its answer section (RFC 1996 §3.7).
    n = dns.message.make_query("diff.test.", "SOA", use_edns=False)
    n.set_opcode(dns.opcode.NOTIFY)
    n.flags |= dns.flags.AA
    n.answer.append(soa_rr(serial + 1))
    out.append(transfer_header(0) + framed([n.to_wire()]))
    return out


def xfr_seeds(knot_port):
    # dnspython picks message IDs at random; fixed ones keep the seeds (named
    # by their hash) the same from one run to the next.
    ids = iter(range(0x2000, 0x10000))
    random_16 = dns.entropy.random_16
    dns.entropy.random_16 = lambda: next(ids)
    try:
        write_xfr_seeds(knot_port)
    finally:
        dns.entropy.random_16 = random_16


def write_xfr_seeds(knot_port):
    singles, pairs = update_messages()
    for m in singles:
        save("xfr_update", m)
    for a, b in pairs:
        save("xfr_update", struct.pack("!H", len(a)) + a + b)
    for clock, m in tsig_messages():
        save("tsig_verify", clock.to_bytes(6, "big") + m)
    for data in transfer_inputs(knot_port):
        save("transfer_reader", data)


def main():
    tmp = tempfile.mkdtemp(prefix="bulwark-fuzz-corpus-")
    proc, port, flat = start_knot(tmp)
    try:
        xfr_seeds(port)
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
