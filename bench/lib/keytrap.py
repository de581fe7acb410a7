#!/usr/bin/python3
"""The hostile zones of bench/keytrap.sh, and the client that asks them.

  keytrap.py zones OUT [KEYS] [SIGS]
      Writes into OUT three zones signed offline (ECDSAP256SHA256, a KSK
      and a ZSK from dnssec-keygen) and their trust anchors:

      keytrap.test. (CVE-2023-50387, KeyTrap): signed with NSEC by
      dnssec-signzone, its DNSKEY RRset holding KEYS (64) extra keys that
      all share one key tag T (not the KSK's nor the ZSK's). They are real
      P-256 points, so a validator that tries one pays a whole signature
      check: each is a fresh key pair, its tag moved to T with the flags'
      reserved bits (RFC 4034 §2.1.1: bits 0-6 and 9-14 "MUST be ignored
      upon receipt"; the zone-key bit stays set, REVOKE clear; see
      flags_for), about 64 key pairs per colliding key. After signing, SIGS (64) RRSIGs with tag
      T and random signature octets are added over `www A`, `mixed A` and
      the wildcard `*.keytrap.test. A`; the real signature of `www` and of
      the wildcard is removed (bogus whatever a validator tries first),
      `mixed` keeps it among the garbage, and `good A` and the wildcard
      `*.clean.keytrap.test. A` have only their real one (the controls: the
      DNSKEY RRset with the extra keys validates).
      A validator without KeyTrap bounds checks SIGS x KEYS signatures for
      each name under the wildcard.

      nsec3-2500.test.: NSEC3 with 2,500 iterations (ldns-signzone -n -t
      2500: BIND's dnssec-signzone refuses more than 150), no salt. Its
      NXDOMAIN proofs are insecure for a validator that follows RFC 9276
      §3.2 (above its limit, 150 for Unbound and bulwark), and cost 3 x
      2,501 SHA-1 per answer for one that does not. nsec3-151.test.: the
      same with 151 iterations, just past the limit: the control (as
      insecure, and no cheaper, for a validator that does not hash). Both
      hold 64 names besides the apex, ns and www, so that their NXDOMAINs
      carry three NSEC3 records alike.

      Files: OUT/ZONE.signed for the three zones, OUT/anchors.txt (one DS
      line a zone), OUT/keytrap.tag (T).

  keytrap.py ready ADDR PORT QNAME QTYPE SECONDS [RCODE]
      Asks QNAME QTYPE (RD, DO) until the answer has RCODE (0, NOERROR;
      `any` for any answer at all) or SECONDS pass (exit 1, with the last
      outcome). For waiting on a server, and for priming a resolver.

  keytrap.py ask ADDR PORT SUFFIX COUNT [WINDOW] [TIMEOUT] [DEADLINE] [SEED]
      Sends COUNT questions `RANDOM.SUFFIX A` (RD, EDNS DO, 1232), each
      name new, with up to WINDOW (8) outstanding, a question lost after
      TIMEOUT (5) s, and stops sending after DEADLINE (60) s. Prints one
      line of `key=value`: sent, answered, lost, noerror, noerror_ad (of
      those, with AD), nxdomain, nxdomain_ad, servfail, other, wall_s,
      p50_ms, p99_ms, max_ms.
"""

import base64
import os
import random
import re
import select
import socket
import struct
import subprocess
import sys
import time

ALG = 13  # ECDSAP256SHA256
ZONE_KEY_HI = 0x01  # the zone-key bit (flags bit 7) in the flags' first octet


def key_tag(rdata):
    """RFC 4034 Appendix B."""
    acc = 0
    for i, b in enumerate(rdata):
        acc += b << 8 if i % 2 == 0 else b
    acc += (acc >> 16) & 0xFFFF
    return acc & 0xFFFF


def flags_for(public, target):
    """Flags that give `public` the key tag `target`, or None: the zone-key
    bit, never REVOKE, and any of the reserved bits 4-6 (first octet, which
    counts x256 in the tag) and 9-14 and SEP (second octet, x1). Bits 0-3
    stay clear: BIND reads them with the old KEY record's meanings (RFC
    2535 §3.1.2: "no key", an extended-flags field after the flags) and
    refuses a zone holding such a key, even one it does not sign with."""
    rest = sum((b << 8) if i % 2 == 0 else b for i, b in enumerate(bytes([0, 0, 3, ALG]) + public))
    for k in range(8):
        hi = ZONE_KEY_HI | (k << 1)
        base = rest + (hi << 8)
        for carry in {base >> 16, (base + 127) >> 16}:
            lo = (target - base - carry) & 0xFFFF
            if lo < 0x80 and ((base + lo) >> 16) == carry:
                flags = (hi << 8) | lo
                assert key_tag(struct.pack("!HBB", flags, 3, ALG) + public) == target
                return flags
    return None


def colliding_keys(count, target):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    keys, tries = [], 0
    while len(keys) < count:
        tries += 1
        pub = (
            ec.generate_private_key(ec.SECP256R1())
            .public_key()
            .public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)[1:]
        )
        flags = flags_for(pub, target)
        if flags is not None:
            keys.append((flags, pub))
    return keys, tries


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def make_keys(zone, d):
    ksk = run("dnssec-keygen", "-q", "-K", d, "-a", "ECDSAP256SHA256", "-f", "KSK", zone).strip()
    zsk = run("dnssec-keygen", "-q", "-K", d, "-a", "ECDSAP256SHA256", zone).strip()
    ds = run("dnssec-dsfromkey", "-2", os.path.join(d, ksk + ".key")).strip()
    tag = lambda base: int(base.rsplit("+", 1)[1])
    return ksk, zsk, ds, tag(ksk), tag(zsk)


def owner_type(line):
    """(owner, type, covered) of a dnssec-signzone -O full line."""
    t = line.split()
    if len(t) < 5 or line.startswith((";", "$")):
        return None
    covered = t[4].upper() if t[3].upper() == "RRSIG" else None
    return t[0].lower(), t[3].upper(), covered


def keytrap_zone(out, nkeys, nsigs):
    zone = "keytrap.test."
    kdir = os.path.join(out, "keys-keytrap")
    os.makedirs(kdir, exist_ok=True)
    ksk, zsk, ds, ksk_tag, zsk_tag = make_keys(zone, kdir)
    rng = random.Random(0x6B7470)
    target = rng.randrange(1, 65536)
    while target in (ksk_tag, zsk_tag):
        target = rng.randrange(1, 65536)
    keys, tries = colliding_keys(nkeys, target)
    text = [
        f"$ORIGIN {zone}",
        "$TTL 300",
        "@ SOA ns hostmaster 1 3600 900 604800 300",
        "@ NS ns",
        "ns A 127.0.0.1",
        "good A 192.0.2.82",
        "mixed A 192.0.2.81",
        "www A 192.0.2.80",
        "* A 192.0.2.99",
        "*.clean A 192.0.2.98",
    ]
    for flags, pub in keys:
        text.append(f"@ DNSKEY {flags} 3 {ALG} {base64.b64encode(pub).decode()}")
    unsigned = os.path.join(out, "keytrap.test")
    with open(unsigned, "w") as f:
        f.write("\n".join(text) + "\n")
    signed = unsigned + ".signed"
    run("dnssec-signzone", "-S", "-K", kdir, "-O", "full", "-d", out, "-o", zone, "-f", signed, unsigned)
    lines = open(signed).read().splitlines()
    # The real signatures' validity, for the garbage ones (in their time).
    sample = next(l for l in lines if (owner_type(l) or ("",))[1:3] == ("RRSIG", "A"))
    t = sample.split()
    expiration, inception = t[8], t[9]
    strip = {f"www.{zone}", f"*.{zone}"}
    kept = [l for l in lines if not (owner_type(l) and owner_type(l)[0] in strip and owner_type(l)[1:3] == ("RRSIG", "A"))]
    assert len(lines) - len(kept) == 2, "the real RRSIGs of www and * are gone"
    for owner, labels in ((f"www.{zone}", 3), (f"mixed.{zone}", 3), (f"*.{zone}", 2)):
        for _ in range(nsigs):
            sig = base64.b64encode(rng.randbytes(64)).decode()
            kept.append(f"{owner} 300 IN RRSIG A {ALG} {labels} 300 {expiration} {inception} {target} {zone} {sig}")
    with open(signed, "w") as f:
        f.write("\n".join(kept) + "\n")
    with open(os.path.join(out, "keytrap.tag"), "w") as f:
        f.write(f"{target}\n")
    sys.stderr.write(
        f"keytrap.test.: {nkeys} keys with tag {target} ({tries} key pairs made), "
        f"{nsigs} garbage RRSIGs on www, mixed and *; KSK {ksk_tag}, ZSK {zsk_tag}\n"
    )
    return ds


def nsec3_zone(out, iterations):
    zone = f"nsec3-{iterations}.test."
    kdir = os.path.join(out, f"keys-{zone}")
    os.makedirs(kdir, exist_ok=True)
    ksk, zsk, ds, _, _ = make_keys(zone, kdir)
    unsigned = os.path.join(out, zone.rstrip("."))
    # 64 names more: with that many NSEC3 spans an NXDOMAIN almost always
    # needs three records (the apex's, the next closer name's and the
    # wildcard's), whatever the iterations, so the zones cost the same to
    # validate; with four names, one record often covers two of them.
    with open(unsigned, "w") as f:
        f.write(
            f"$ORIGIN {zone}\n$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n"
            "@ NS ns\nns A 127.0.0.1\nwww A 192.0.2.1\n"
            + "".join(f"h{i} A 192.0.2.{i + 2}\n" for i in range(64))
        )
    signed = unsigned + ".signed"
    subprocess.run(
        ["ldns-signzone", "-n", "-t", str(iterations), "-o", zone, "-f", signed, unsigned,
         os.path.join(kdir, ksk), os.path.join(kdir, zsk)],
        check=True, capture_output=True,
    )
    n = sum(1 for l in open(signed) if re.search(rf"\sNSEC3\s+1 0 {iterations} ", l))
    assert n >= 3, f"{zone}: NSEC3 records with {iterations} iterations: {n}"
    return ds


# --- the client -------------------------------------------------------------

def question(qid, name, qtype=1):
    wire = b"".join(bytes([len(l)]) + l.encode() for l in name.rstrip(".").split(".")) + b"\0"
    header = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 1)  # RD
    opt = b"\0" + struct.pack("!HHIH", 41, 1232, 0x8000, 0)  # EDNS, DO
    return header + wire + struct.pack("!HH", qtype, 1) + opt


def ask(addr, port, suffix, count, window=8, timeout=5.0, deadline=60.0, seed=None):
    rng = random.Random(seed)
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(window)]
    for s in socks:
        s.connect((addr, port))
    busy = {}  # socket -> (id, sent at)
    stats = dict(sent=0, answered=0, lost=0, noerror=0, noerror_ad=0, nxdomain=0, nxdomain_ad=0,
                 servfail=0, other=0)
    lat = []
    start = time.monotonic()

    def send(s):
        qid = rng.randrange(65536)
        label = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(12))
        s.send(question(qid, f"{label}.{suffix}"))
        busy[s] = (qid, time.monotonic())
        stats["sent"] += 1

    for s in socks:
        if stats["sent"] < count:
            send(s)
    while busy:
        ready, _, _ = select.select(list(busy), [], [], 0.05)
        now = time.monotonic()
        for s in ready:
            data = s.recv(65535)
            qid, at = busy[s]
            if len(data) < 12 or struct.unpack("!H", data[:2])[0] != qid:
                continue
            flags = struct.unpack("!H", data[2:4])[0]
            rcode = flags & 0xF
            stats["answered"] += 1
            name = {0: "noerror", 3: "nxdomain", 2: "servfail"}.get(rcode, "other")
            stats[name] += 1
            if flags & 0x0020 and name + "_ad" in stats:
                stats[name + "_ad"] += 1
            lat.append(now - at)
            del busy[s]
            if stats["sent"] < count and now - start < deadline:
                send(s)
        for s, (qid, at) in list(busy.items()):
            if now - at > timeout:
                stats["lost"] += 1
                del busy[s]
                if stats["sent"] < count and now - start < deadline:
                    send(s)
    wall = time.monotonic() - start
    lat.sort()
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else 0
    stats.update(wall_s=f"{wall:.2f}", p50_ms=f"{pick(0.5):.2f}", p99_ms=f"{pick(0.99):.2f}",
                 max_ms=f"{(lat[-1] * 1000 if lat else 0):.2f}")
    print(" ".join(f"{k}={v}" for k, v in stats.items()))


def ready(addr, port, qname, qtype, seconds, want):
    types = {"A": 1, "SOA": 6, "DNSKEY": 48, "TXT": 16}
    wire = question(0x5EED, qname, types[qtype])
    deadline = time.monotonic() + seconds
    last = "no answer"
    while time.monotonic() < deadline:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(0.5)
        try:
            s.sendto(wire, (addr, port))
            data = s.recv(65535)
            rcode = data[3] & 0xF
            if want == "any" or rcode == int(want):
                return 0
            last = f"rcode {rcode}"
        except OSError as e:
            last = str(e)
            time.sleep(0.05)  # not listening yet: the error came at once
        finally:
            s.close()
    print(f"{addr}@{port} {qname} {qtype}: {last}", file=sys.stderr)
    return 1


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "zones":
        out = sys.argv[2]
        nkeys = int(sys.argv[3]) if len(sys.argv) > 3 else 64
        nsigs = int(sys.argv[4]) if len(sys.argv) > 4 else 64
        os.makedirs(out, exist_ok=True)
        anchors = [keytrap_zone(out, nkeys, nsigs), nsec3_zone(out, 2500), nsec3_zone(out, 151)]
        with open(os.path.join(out, "anchors.txt"), "w") as f:
            f.write("\n".join(anchors) + "\n")
    elif len(sys.argv) >= 7 and sys.argv[1] == "ready":
        a = sys.argv[2:]
        sys.exit(ready(a[0], int(a[1]), a[2], a[3], float(a[4]), a[5] if len(a) > 5 else "0"))
    elif len(sys.argv) >= 6 and sys.argv[1] == "ask":
        a = sys.argv[2:]
        ask(a[0], int(a[1]), a[2], int(a[3]),
            int(a[4]) if len(a) > 4 else 8,
            float(a[5]) if len(a) > 5 else 5.0,
            float(a[6]) if len(a) > 6 else 60.0,
            int(a[7]) if len(a) > 7 else None)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
