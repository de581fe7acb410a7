#!/usr/bin/env bash
# Signing speed: bulwark sign against dnssec-signzone (BIND) and ldns-signzone
# on the same zone with the same keys, each pinned to one core, plus the raw
# signing rate of aws-lc-rs (the library's ceiling) and bulwark on every core.
# Prints signatures per second, the ratios bulwark/peer, and appends nothing:
# copy the table into bench/RESULTS.md with the command line.
#
# Usage: bench/signing.sh [RECORDS]          (default 1000000)
# Env:   ALGS="13 15 14 8"  algorithms (numbers) to run, in order
#        RSA_RECORDS=N      zone size for RSA algorithms (default 100000: RSA
#                           signs ~3k/s, a 1M-record zone takes minutes per tool)
#        NSEC3=1            sign with NSEC3 (iterations 0, no salt) instead of NSEC
#        BULWARK=path       (default target/release/bulwark, built if absent)
#        SIGN_RATE=path     (default target/release/examples/sign_rate)
#        KEEP=1             keep the temp directory
set -euo pipefail

RECORDS=${1:-1000000}
ALGS=${ALGS:-"13 15 14 8"}
RSA_RECORDS=${RSA_RECORDS:-100000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BULWARK=${BULWARK:-$TARGET/release/bulwark}
SIGN_RATE=${SIGN_RATE:-$TARGET/release/examples/sign_rate}
ORIGIN=bench.test
TMP=$(mktemp -d /tmp/bulwark-signing.XXXXXX)
CORE=1
cleanup() { if [ "${KEEP:-0}" = 1 ]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi; }
trap cleanup EXIT

if [ ! -x "$BULWARK" ] || [ ! -x "$SIGN_RATE" ]; then
    (cd "$ROOT" && cargo build --release -p bulwark && cargo build --release -p bulwark-crypto --examples)
fi
for tool in dnssec-keygen dnssec-signzone ldns-signzone taskset; do
    command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install bind9-utils ldnsutils util-linux)" >&2; exit 1; }
done

# The zone of bench/memory.sh: per name A, AAAA on every 2nd, TXT on every
# 4th, MX on every 8th.
genzone() { # RECORDS FILE
    awk -v total="$1" -v origin="$ORIGIN" 'BEGIN {
        print "$ORIGIN " origin "."
        print "$TTL 3600"
        print "@ IN SOA ns1 hostmaster 2026112201 7200 3600 1209600 300"
        print "@ IN NS ns1"
        print "@ IN NS ns2"
        print "ns1 IN A 192.0.2.53"
        print "ns2 IN A 198.51.100.53"
        n = 5; i = 0
        while (n < total) {
            name = sprintf("host%07d", i)
            a = int(i / 65536) % 256; b = int(i / 256) % 256; c = i % 256
            printf "%s IN A 10.%d.%d.%d\n", name, a, b, c; n++
            if (n < total && i % 2 == 0) { printf "%s IN AAAA 2001:db8:%x:%x::1\n", name, int(i / 65536), i % 65536; n++ }
            if (n < total && i % 4 == 1) { printf "%s IN TXT \"v=spf1 ip4:10.%d.%d.%d -all\"\n", name, a, b, c; n++ }
            if (n < total && i % 8 == 3) { printf "%s IN MX 10 mx%d.%s.\n", name, i % 16, origin; n++ }
            i++
        }
    }' >"$2"
}

mnemonic() {
    case $1 in 8) echo RSASHA256 ;; 10) echo RSASHA512 ;; 13) echo ECDSAP256SHA256 ;;
        14) echo ECDSAP384SHA384 ;; 15) echo ED25519 ;; *) echo "unknown algorithm $1" >&2; exit 1 ;; esac
}

# Seconds of wall time a command takes (it runs pinned to one core).
timed() {
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null 2>"$TMP/last.err" || { cat "$TMP/last.err" >&2; return 1; }
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l
}

signatures() { awk '$4 == "RRSIG" || $3 == "RRSIG" {n++} END {print n+0}' "$1"; }

echo "raw signing rate of aws-lc-rs, one thread on core $CORE:" >&2
taskset -c "$CORE" "$SIGN_RATE" 2 >"$TMP/raw.tsv"
cat "$TMP/raw.tsv" >&2

NSEC3_LDNS=(); NSEC3_BIND=(); NSEC3_OURS=()
if [ "${NSEC3:-0}" = 1 ]; then
    NSEC3_LDNS=(-n -t 0); NSEC3_BIND=(-3 -); NSEC3_OURS=(--nsec3)
fi
EXPIRE=$(date -u -d '+14 days' +%Y%m%d%H%M%S)

printf '%-16s %9s %12s %12s %12s %12s %12s %8s %8s %8s\n' \
    algorithm records bulwark/s dnssec-sz/s ldns-sz/s raw/s bulwark2/s vs-best vs-raw scale
for alg in $ALGS; do
    name=$(mnemonic "$alg")
    records=$RECORDS
    case $alg in 8 | 10) records=$RSA_RECORDS ;; esac
    zone=$TMP/zone-$records
    [ -f "$zone" ] || genzone "$records" "$zone"
    keys=$TMP/keys-$alg
    mkdir -p "$keys"
    ksk=$(dnssec-keygen -q -K "$keys" -a "$name" -f KSK "$ORIGIN")
    zsk=$(dnssec-keygen -q -K "$keys" -a "$name" "$ORIGIN")

    ours=$(timed taskset -c "$CORE" "$BULWARK" sign "$ORIGIN" "$zone" -K "$keys" -t 1 "${NSEC3_OURS[@]}" -o "$TMP/ours.signed")
    n_ours=$(signatures "$TMP/ours.signed")
    ours2=$(timed "$BULWARK" sign "$ORIGIN" "$zone" -K "$keys" -t 2 "${NSEC3_OURS[@]}" -o "$TMP/ours2.signed")
    bind=$(timed taskset -c "$CORE" dnssec-signzone -O full -n 1 -d "$TMP" -S -K "$keys" -o "$ORIGIN" "${NSEC3_BIND[@]}" -f "$TMP/bind.signed" "$zone")
    n_bind=$(signatures "$TMP/bind.signed")
    # ldns-signzone wants the key base names and writes ZONE.signed.
    cp "$zone" "$TMP/ldns.zone"
    ldns=$(timed taskset -c "$CORE" ldns-signzone "${NSEC3_LDNS[@]}" -e "$EXPIRE" "$TMP/ldns.zone" "$keys/$zsk" "$keys/$ksk")
    n_ldns=$(signatures "$TMP/ldns.zone.signed")

    raw=$(awk -v a="$alg" '$1 == a {print $3}' "$TMP/raw.tsv")
    python3 - "$name" "$records" "$n_ours" "$ours" "$n_bind" "$bind" "$n_ldns" "$ldns" "$raw" "$ours2" <<'PY'
import sys
name, records, n_ours, t_ours, n_bind, t_bind, n_ldns, t_ldns, raw, t_ours2 = sys.argv[1:]
ours = int(n_ours) / float(t_ours)
bind = int(n_bind) / float(t_bind)
ldns = int(n_ldns) / float(t_ldns)
ours2 = int(n_ours) / float(t_ours2)
best = max(bind, ldns)
print(f"{name:<16} {int(records):>9} {ours:>12.0f} {bind:>12.0f} {ldns:>12.0f} {float(raw):>12.0f} {ours2:>12.0f} "
      f"{ours / best:>8.2f} {ours / float(raw):>8.2f} {ours2 / ours:>8.2f}")
print(f"  signatures: bulwark {n_ours} in {float(t_ours):.2f} s, dnssec-signzone {n_bind} in {float(t_bind):.2f} s, "
      f"ldns-signzone {n_ldns} in {float(t_ldns):.2f} s, bulwark on 2 threads {float(t_ours2):.2f} s", file=sys.stderr)
PY
done
