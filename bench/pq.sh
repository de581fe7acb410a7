#!/usr/bin/env bash
# Seed 003's testbed for issue 27: cold-cache resolution time of an A record
# and the round trips it costs, per DNSSEC algorithm (ECDSA P-256, RSA-2048,
# Ed25519, ML-DSA-44, Falcon-512) and delivery mode (TCP after TC, TCP Fast
# Open, cookie-gated large UDP, reused connections, all of them), bulwark as
# the resolver and Unbound as the peer for the algorithms it implements. The
# links have DELAY_MS each way (5: a 10 ms round trip) and RATE (100mbit),
# as in the seed. See bench/lib/pq_testbed.py for the topology; everything
# runs in network namespaces this script makes and removes, on addresses of
# 10.77.0.0/16 that exist only there.
#
# Usage: bench/pq.sh          (as root)
# Env:   ALGS, MODES="tcp tfo cookie reuse all", LOOKUPS=10, DELAY_MS=5,
#        RATE=100mbit, PEER=1 (Unbound), BULWARK=path (default
#        target/release/bulwark, built if absent), KEEP=1 (keep the work dir)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BULWARK=${BULWARK:-$TARGET/release/bulwark}
[ "$(id -u)" -eq 0 ] || { echo "bench/pq.sh makes network namespaces: run it as root" >&2; exit 1; }
for tool in ip tc ethtool kdig unbound python3; do
    command -v "$tool" >/dev/null || {
        echo "missing $tool (apt-get install iproute2 ethtool knot-dnsutils unbound python3)" >&2
        exit 1
    }
done
[ -x "$BULWARK" ] || (cd "$ROOT" && cargo build --release -p bulwark)
WORK=$(mktemp -d /tmp/bulwark-pq.XXXXXX)
cleanup() { if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi; }
trap cleanup EXIT
python3 "$ROOT/bench/lib/pq_testbed.py" "$BULWARK" "$WORK"
