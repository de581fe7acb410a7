"""ML-DSA-44 (DNSSEC algorithm 18) through dnspython, the independent side of
dnssec_pq.rs: dnspython >= 2.9.2 with cryptography's ML-DSA signs and
verifies it as draft-westerbaan-dnssec-mldsa describes, code that no one
here wrote.

    verify-file ORIGIN FILE     every signed RRset of a signed zone file
    verify-live ORIGIN ADDR PORT NAME...
                                the DNSKEY RRset and each NAME's A RRset (or
                                its denial) as a server gives them over TCP
    sign ORIGIN IN OUT          signs IN with a new KSK and ZSK into OUT and
                                prints the KSK's DS (SHA-256)

Exits non-zero, saying what failed, when anything does not verify.
"""

import sys

import dns.dnssec
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import dns.zone
from dns.dnssectypes import Algorithm
from dns.dnssecalgs.mldsa import PrivateMLDSA44

RRSIG = dns.rdatatype.RRSIG
IN = dns.rdataclass.IN


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def check_algorithm(dnskey_rrset):
    algorithms = {k.algorithm for k in dnskey_rrset}
    if algorithms != {Algorithm.MLDSA44}:
        fail(f"DNSKEY algorithms {sorted(algorithms)}, expected only 18")
    for key in dnskey_rrset:
        if len(key.key) != 1312:
            fail(f"an ML-DSA-44 public key of {len(key.key)} octets, not 1312")


def verify_file(origin_text, path):
    origin = dns.name.from_text(origin_text)
    zone = dns.zone.from_file(path, origin=origin, relativize=False)
    dnskey = zone.find_rrset(origin, dns.rdatatype.DNSKEY)
    check_algorithm(dnskey)
    keys = {origin: dnskey}
    signed = 0
    first = None
    for name, node in zone.nodes.items():
        for rdataset in node.rdatasets:
            if rdataset.rdtype == RRSIG:
                continue
            sigs = node.get_rdataset(IN, RRSIG, rdataset.rdtype)
            if sigs is None:
                # Delegation NS and glue are not signed (RFC 4035 §2.2).
                continue
            for sig in sigs:
                if len(sig.signature) != 2420:
                    fail(f"{name} {rdataset.rdtype!r}: a signature of {len(sig.signature)} octets")
            try:
                dns.dnssec.validate((name, rdataset), (name, sigs), keys)
            except dns.dnssec.ValidationFailure as e:
                fail(f"{name} {dns.rdatatype.to_text(rdataset.rdtype)}: {e}")
            signed += 1
            if first is None:
                first = (name, rdataset, sigs)
    # The verifier must be able to say no: one flipped octet fails.
    name, rdataset, sigs = first
    sig = next(iter(sigs))
    broken = bytearray(sig.signature)
    broken[len(broken) // 2] ^= 0x01
    bad = sig.replace(signature=bytes(broken))
    try:
        dns.dnssec.validate_rrsig((name, rdataset), bad, keys)
    except dns.dnssec.ValidationFailure:
        pass
    else:
        fail("a signature with a flipped octet verified")
    print(f"verified {signed} signed RRsets")


def ask(addr, port, qname, rdtype):
    query = dns.message.make_query(qname, rdtype, want_dnssec=True, payload=1232)
    query.flags &= ~dns.flags.RD
    return dns.query.tcp(query, addr, port=port, timeout=5)


def verify_live(origin_text, addr, port, names):
    origin = dns.name.from_text(origin_text)
    answer = ask(addr, port, origin, dns.rdatatype.DNSKEY)
    dnskey = answer.find_rrset(answer.answer, origin, IN, dns.rdatatype.DNSKEY)
    dnskey_sigs = answer.find_rrset(answer.answer, origin, IN, RRSIG, dns.rdatatype.DNSKEY)
    check_algorithm(dnskey)
    keys = {origin: dnskey}
    dns.dnssec.validate(dnskey, dnskey_sigs, keys)
    checked = 1
    for text in names:
        qname = dns.name.from_text(text)
        response = ask(addr, port, qname, dns.rdatatype.A)
        # The answer's RRsets, or the denial in the authority section.
        section = response.answer if response.answer else response.authority
        rrsets = [r for r in section if r.rdtype != RRSIG]
        if not rrsets:
            fail(f"{text}: nothing to verify in {response}")
        for rrset in rrsets:
            sigs = [s for s in section if s.rdtype == RRSIG and s.name == rrset.name
                    and s.covers == rrset.rdtype]
            if not sigs:
                fail(f"{text}: {rrset.name} {dns.rdatatype.to_text(rrset.rdtype)} is unsigned")
            try:
                dns.dnssec.validate(rrset, sigs[0], keys)
            except dns.dnssec.ValidationFailure as e:
                fail(f"{text}: {rrset.name} {dns.rdatatype.to_text(rrset.rdtype)}: {e}")
            checked += 1
    print(f"verified {checked} RRsets")


def sign(origin_text, source, target):
    origin = dns.name.from_text(origin_text)
    zone = dns.zone.from_file(source, origin=origin, relativize=False)
    ksk = PrivateMLDSA44.generate()
    zsk = PrivateMLDSA44.generate()
    ksk_dnskey = dns.dnssec.make_dnskey(ksk.public_key(), Algorithm.MLDSA44, flags=257)
    zsk_dnskey = dns.dnssec.make_dnskey(zsk.public_key(), Algorithm.MLDSA44, flags=256)
    dns.dnssec.sign_zone(
        zone,
        keys=[(ksk, ksk_dnskey), (zsk, zsk_dnskey)],
        lifetime=7 * 86400,
        policy=dns.dnssec.allow_all_policy,
    )
    zone.to_file(target, relativize=False)
    ds = dns.dnssec.make_ds(origin, ksk_dnskey, "SHA256")
    print(f"{origin} IN DS {ds}")


def main(argv):
    if len(argv) >= 3 and argv[0] == "verify-file":
        verify_file(argv[1], argv[2])
    elif len(argv) >= 5 and argv[0] == "verify-live":
        verify_live(argv[1], argv[2], int(argv[3]), argv[4:])
    elif len(argv) == 4 and argv[0] == "sign":
        sign(argv[1], argv[2], argv[3])
    else:
        fail(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
