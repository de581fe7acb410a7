#!/usr/bin/env python3
"""Write the benchmark zone and the dnsperf query files.

Usage: genzone.py ORIGIN OUTDIR [NAMES]

The zone has an apex with SOA, NS, MX and TXT; NAMES hosts (default 10,000)
each with A and AAAA; a wildcard; CNAMEs; and delegations with glue. The
query files are one "name type" per line, the format dnsperf reads (-d).
The DO bit is set on the command line (dnsperf -D), not in the file.
"""
import os
import random
import sys

origin = sys.argv[1].rstrip(".") + "."
out = sys.argv[2]
names = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
rng = random.Random(7)  # fixed seed: every run queries the same names
os.makedirs(out, exist_ok=True)

with open(os.path.join(out, "zone"), "w") as z:
    z.write(f"$ORIGIN {origin}\n$TTL 3600\n")
    z.write("@ IN SOA ns1 hostmaster 2026112201 7200 3600 1209600 300\n")
    z.write("@ IN NS ns1\n@ IN NS ns2\n")
    z.write("@ IN MX 10 mail\n")
    z.write('@ IN TXT "v=spf1 mx -all"\n')
    z.write("@ IN A 192.0.2.1\n@ IN AAAA 2001:db8::1\n")
    z.write("ns1 IN A 192.0.2.53\nns2 IN A 192.0.2.54\n")
    z.write("mail IN A 192.0.2.25\n")
    z.write("www IN A 192.0.2.80\nwww IN AAAA 2001:db8::80\n")
    z.write("*.wild IN A 192.0.2.99\n*.wild IN TXT \"wildcard\"\n")
    for i in range(names):
        z.write(f"h{i} IN A 10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}\n")
        z.write(f"h{i} IN AAAA 2001:db8:{1 + (i >> 16):x}::{i & 0xffff:x}\n")
    for i in range(100):
        z.write(f"alias{i} IN CNAME h{i}\n")
    for i in range(100):
        z.write(f"sub{i} IN NS ns.sub{i}\n")
        z.write(f"ns.sub{i} IN A 198.51.100.{i}\n")

def write(name, lines):
    with open(os.path.join(out, name), "w") as f:
        f.write("\n".join(lines) + "\n")

write("q-www", [f"www.{origin} A"])
write("q-www-do", [f"www.{origin} A"])
write("q-any-do", [f"{origin} ANY"])
write("q-nx-do", [f"nonexistent.{origin} A"])

# The mix: 70% existing A/AAAA, 20% NXDOMAIN, 10% other types (MX, TXT,
# NS, SOA at the apex; CNAMEs; wildcard; referrals).
mix = []
others = [(origin, "MX"), (origin, "TXT"), (origin, "NS"), (origin, "SOA")]
for _ in range(100000):
    r = rng.random()
    if r < 0.70:
        mix.append(f"h{rng.randrange(names)}.{origin} {rng.choice(['A', 'AAAA'])}")
    elif r < 0.90:
        mix.append(f"nx{rng.randrange(1 << 30)}.{origin} A")
    else:
        k = rng.randrange(7)
        if k < 4:
            n, t = others[k]
            mix.append(f"{n} {t}")
        elif k == 4:
            mix.append(f"alias{rng.randrange(100)}.{origin} A")
        elif k == 5:
            mix.append(f"x{rng.randrange(1000)}.wild.{origin} TXT")
        else:
            mix.append(f"host.sub{rng.randrange(100)}.{origin} A")
write("q-mix", mix)
