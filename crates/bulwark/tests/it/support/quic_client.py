"""DNS over QUIC (RFC 9250) and DNS over HTTPS on HTTP/3 from dnspython with
aioquic: clients no one at bulwark wrote. Prints one line per query:
`<rcode> <message id> padded|unpadded <answer rdata, space-separated>`.

usage: quic_client.py doq|h3|h3get ADDRESS PORT CA_FILE|insecure QNAME:QTYPE[:pad] ...
       quic_client.py xoq ADDRESS PORT CA_FILE|insecure ZONE

`xoq` asks for ZONE by AXFR over DoQ (RFC 9250 §4.2.2: every message of the
transfer on the stream that asked) and prints `messages N records N`, the
records counted from the first SOA to the closing one, both included.

Every query of one run goes over one connection (dnspython's connection
manager for DoQ, one HTTP/3 connection for DoH). `:pad` asks for RFC 7830
padding to 128-octet blocks (RFC 8467's client policy).
"""

import sys

import dns.edns
import dns.message
import dns.name
import dns.rdatatype
import dns.query
import dns.quic
import dns.rcode


def queries(specs):
    for spec in specs:
        parts = spec.split(":")
        qname, qtype = parts[0], parts[1]
        pad = len(parts) > 2 and parts[2] == "pad"
        q = dns.message.make_query(qname, qtype, use_edns=0 if pad else None, pad=128 if pad else 0)
        yield q


def show(r):
    rdata = [str(rd) for rrset in r.answer for rd in rrset]
    padded = any(o.otype == dns.edns.OptionType.PADDING for o in r.options)
    print(
        dns.rcode.to_text(r.rcode()), r.id, "padded" if padded else "unpadded",
        " ".join(rdata), flush=True,
    )


def xoq(address, port, ca, zone):
    with dns.quic.SyncQuicManager(verify_mode=ca, server_name="localhost") as manager:
        connection = manager.connect(address, port)
        q = dns.message.make_query(zone, "AXFR")
        q.id = 0
        messages = records = soas = 0
        with connection.make_stream(5) as stream:
            stream.send(q.to_wire(), True)
            while soas < 2:
                wire = stream.receive(5)
                r = dns.message.from_wire(wire, xfr=True, origin=dns.name.from_text(zone))
                if r.id != 0 or r.rcode() != dns.rcode.NOERROR:
                    print("bad message", r.id, dns.rcode.to_text(r.rcode()), flush=True)
                    sys.exit(1)
                messages += 1
                for rrset in r.answer:
                    records += len(rrset)
                    if rrset.rdtype == dns.rdatatype.SOA:
                        soas += len(rrset)
        print("messages", messages, "records", records, flush=True)


def main():
    mode, address, port, ca = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    if ca == "insecure":
        ca = False
    specs = sys.argv[5:]
    if mode == "xoq":
        xoq(address, port, ca, specs[0])
    elif mode == "doq":
        with dns.quic.SyncQuicManager(verify_mode=ca, server_name="localhost") as manager:
            connection = manager.connect(address, port)
            for q in queries(specs):
                r = dns.query.quic(
                    q, address, port=port, timeout=5, connection=connection,
                    server_hostname="localhost",
                )
                show(r)
    else:
        with dns.quic.SyncQuicManager(verify_mode=ca, server_name="localhost", h3=True) as manager:
            connection = manager.connect(address, port)
            for q in queries(specs):
                r = dns.query.https(
                    q, f"https://localhost:{port}/dns-query", timeout=5, verify=ca,
                    http_version=dns.query.HTTPVersion.H3,
                    post=(mode == "h3"), bootstrap_address=address,
                    session=connection,
                )
                show(r)


main()
