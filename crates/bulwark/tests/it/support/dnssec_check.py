#!/usr/bin/python3
"""Validates RRsets a server serves with dnspython, an implementation no one
here wrote: DNSKEY RRset signed by a key in it, then each NAME/TYPE given
signed by the zone's keys. Signatures come from the DO answer, or from an
RRSIG query when the answer carries none.

usage: dnssec_check.py ADDR PORT ZONE NAME/TYPE...
Prints one line per RRset and exits 1 if any fails."""
import sys
import time

import dns.dnssec
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rdatatype
import dns.rrset


def ask(addr, port, qname, rdtype):
    q = dns.message.make_query(qname, rdtype, want_dnssec=True)
    return dns.query.tcp(q, addr, port=port, timeout=5)


def rrset_and_sigs(addr, port, qname, rdtype):
    r = ask(addr, port, qname, rdtype)
    rrset = r.find_rrset(r.answer, qname, dns.rdataclass.IN, rdtype)
    try:
        sigs = r.find_rrset(r.answer, qname, dns.rdataclass.IN, dns.rdatatype.RRSIG, rdtype)
    except KeyError:
        s = ask(addr, port, qname, dns.rdatatype.RRSIG)
        covering = [
            sig
            for rrset in s.answer
            if rrset.rdtype == dns.rdatatype.RRSIG
            for sig in rrset
            if sig.type_covered == rdtype
        ]
        if not covering:
            raise KeyError(f"no RRSIG covering {dns.rdatatype.to_text(rdtype)}")
        sigs = dns.rrset.from_rdata_list(qname, rrset.ttl, covering)
    return rrset, sigs


def main():
    addr, port, zone = sys.argv[1], int(sys.argv[2]), dns.name.from_text(sys.argv[3])
    now = time.time()
    keys, key_sigs = rrset_and_sigs(addr, port, zone, dns.rdatatype.DNSKEY)
    failed = False
    try:
        dns.dnssec.validate(keys, key_sigs, {zone: keys}, now=now)
        print(f"ok {zone} DNSKEY ({len(keys)} keys, {len(key_sigs)} signatures)")
    except dns.dnssec.ValidationFailure as e:
        print(f"FAIL {zone} DNSKEY: {e}")
        failed = True
    for item in sys.argv[4:]:
        name, rdtype = item.rsplit("/", 1)
        qname = dns.name.from_text(name)
        rdtype = dns.rdatatype.from_text(rdtype)
        try:
            rrset, sigs = rrset_and_sigs(addr, port, qname, rdtype)
            dns.dnssec.validate(rrset, sigs, {zone: keys}, now=now)
            tags = sorted(s.key_tag for s in sigs)
            print(f"ok {qname} {dns.rdatatype.to_text(rdtype)} signed by {tags}")
        except (dns.dnssec.ValidationFailure, KeyError) as e:
            print(f"FAIL {qname} {dns.rdatatype.to_text(rdtype)}: {e!r}")
            failed = True
    sys.exit(1 if failed else 0)


main()
