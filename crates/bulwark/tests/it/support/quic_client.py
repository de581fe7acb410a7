"""DNS over QUIC (RFC 9250) and DNS over HTTPS on HTTP/3 from dnspython with
aioquic: clients no one at bulwark wrote. Prints one line per query:
`<rcode> <message id> padded|unpadded <answer rdata, space-separated>`.

usage: quic_client.py doq|h3|h3get ADDRESS PORT CA_FILE|insecure QNAME:QTYPE[:pad] ...

Every query of one run goes over one connection (dnspython's connection
manager for DoQ, one HTTP/3 connection for DoH). `:pad` asks for RFC 7830
padding to 128-octet blocks (RFC 8467's client policy).
"""

import sys

import dns.edns
import dns.message
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


def main():
    mode, address, port, ca = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    if ca == "insecure":
        ca = False
    specs = sys.argv[5:]
    if mode == "doq":
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
