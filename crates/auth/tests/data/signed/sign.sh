#!/bin/sh
# Regenerates the signed fixtures from crates/bulwark/tests/data/diff.zone with
# BIND's tools (Debian: bind9-dnsutils / bind9utils). Fresh ECDSA P-256 keys
# each run, so the signatures change; the tests only look at owners and types.
# Signatures expire in 2036 so the fixtures can be served by knotd until then.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/../../../../bulwark/tests/data/diff.zone" "$work/diff.zone"
cd "$work"
dnssec-keygen -q -K . -a ECDSAP256SHA256 -f KSK diff.test >/dev/null
dnssec-keygen -q -K . -a ECDSAP256SHA256 diff.test >/dev/null
sign() {
    out=$1; shift
    dnssec-signzone -q -K . -S -o diff.test -s 20240101000000 -e 20360101000000 \
        -O full -f signed.zone "$@" diff.zone
    { echo "; origin: diff.test."
      echo "; Made by sign.sh from crates/bulwark/tests/data/diff.zone; do not edit."
      cat signed.zone; } > "$here/$out"
}
sign diff-nsec.zone
sign diff-nsec3.zone -3 - -H 0
sign diff-optout.zone -3 - -H 0 -A
sign diff-nsec3-salted.zone -3 ab12cd34 -H 5
