#!/usr/bin/env bash
# Response sizes per DNSSEC algorithm (issue 27, seed 003's "signatures =>
# bigger DNS messages"): one bulwark serves the same zone signed online with
# each algorithm (KSK and ZSK, NSEC3 with no iterations or salt), and kdig
# asks each with DO over TCP, so nothing is cut: the DNSKEY RRset at the
# apex, a signed A, an NXDOMAIN with its NSEC3 proof, and ANY at a name with
# four types (bulwark answers ANY with one RRset and its signature, RFC 8482
# §4.1, so it is the size of that RRset's answer). Prints a markdown table of octets, each marked "TC" when the
# same question over UDP with a 1,232-octet buffer comes back truncated.
# Sizes, not speed: nothing is pinned and the numbers do not drift.
#
# Usage: bench/pq-sizes.sh
# Env:   ALGS="RSASHA256 ECDSAP256SHA256 ED25519 MLDSA44 FALCON512"
#        BULWARK=path   (default target/release/bulwark, else target/debug/bulwark, built if neither)
#        KEEP=1         keep the temp directory
set -euo pipefail

ALGS=${ALGS:-"RSASHA256 ECDSAP256SHA256 ED25519 MLDSA44 FALCON512"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -z "${BULWARK:-}" ]; then
    if [ -x "$TARGET/release/bulwark" ]; then BULWARK=$TARGET/release/bulwark
    else
        [ -x "$TARGET/debug/bulwark" ] || (cd "$ROOT" && cargo build -p bulwark)
        BULWARK=$TARGET/debug/bulwark
    fi
fi
command -v kdig >/dev/null || { echo "missing kdig (apt-get install knot-dnsutils)" >&2; exit 1; }
TMP=$(mktemp -d /tmp/bulwark-pq-sizes.XXXXXX)
PID=
cleanup() {
    if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

zone_of() { echo "$1" | tr 'A-Z' 'a-z' | sed 's/$/.test./'; }

{
    echo "[server]"
    echo "listen = [\"127.0.0.1:0\"]"
    echo "threads = 1"
    echo
} >"$TMP/bulwark.toml"
for alg in $ALGS; do
    zone=$(zone_of "$alg")
    cat >"$TMP/$zone.zone" <<EOF
\$TTL 3600
@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300
  NS ns1
  NS ns2
ns1 A 192.0.2.53
ns2 A 198.51.100.53
www A 192.0.2.80
    AAAA 2001:db8::80
    TXT "v=spf1 -all"
    MX 10 mail
mail A 192.0.2.25
EOF
    cat >>"$TMP/bulwark.toml" <<EOF
[dnssec_policy.p$alg]
algorithm = "$alg"
nsec3 = true

[[zone]]
origin = "$zone"
file = "$zone.zone"
dnssec_policy = "p$alg"

EOF
done

"$BULWARK" serve --config "$TMP/bulwark.toml" --ready-file "$TMP/ready" >"$TMP/bulwark.log" 2>&1 &
PID=$!
port=
for _ in $(seq 1 300); do
    if [ -s "$TMP/ready" ]; then
        port=$(awk '$1 == "dns" { split($2, a, ":"); print a[2]; exit }' "$TMP/ready")
        [ -n "$port" ] && break
    fi
    kill -0 "$PID" 2>/dev/null || { cat "$TMP/bulwark.log" >&2; exit 1; }
    sleep 0.1
done
[ -n "$port" ] || { echo "bulwark did not start" >&2; cat "$TMP/bulwark.log" >&2; exit 1; }
for alg in $ALGS; do
    zone=$(zone_of "$alg")
    for _ in $(seq 1 300); do
        kdig @127.0.0.1 -p "$port" +tcp +dnssec "$zone" SOA 2>/dev/null | grep -q "RRSIG" && break
        sleep 0.1
    done
done

# Octets of the TCP answer, "TC" added when UDP at 1,232 truncates.
size() { # ZONE NAME TYPE
    local out udp bytes
    out=$(kdig @127.0.0.1 -p "$port" +tcp +dnssec +bufsize=1232 "$2" "$3")
    bytes=$(echo "$out" | awk '/^;; Received/ { print $3 }')
    udp=$(kdig @127.0.0.1 -p "$port" +notcp +ignore +dnssec +bufsize=1232 "$2" "$3")
    if echo "$udp" | grep -qiE "^;; flags:.* tc( |;)"; then echo "$bytes TC"; else echo "$bytes"; fi
}

echo "| algorithm | DNSKEY (apex) | signed A | NXDOMAIN + NSEC3 | ANY (one RRset, RFC 8482) |"
echo "| --- | --: | --: | --: | --: |"
for alg in $ALGS; do
    zone=$(zone_of "$alg")
    printf '| %s | %s | %s | %s | %s |\n' "$alg" \
        "$(size "$zone" "$zone" DNSKEY)" \
        "$(size "$zone" "www.$zone" A)" \
        "$(size "$zone" "nope.$zone" A)" \
        "$(size "$zone" "www.$zone" ANY)"
done
echo
echo "Octets of the whole DNS message over TCP with DO; TC: over UDP with a 1,232-octet buffer the answer is truncated."
