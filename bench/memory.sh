#!/usr/bin/env bash
# Zone load time and resident memory for a 1,000,000-record zone: bulwark, knotd, nsd
# (issue 7, "memory for the 1M-record zone <= the best peer's; load time <= 0.5x").
#
# For each server: start it on a free loopback port serving the generated zone,
# time from exec until it answers a query for the LAST name in the zone (so the
# whole zone is loaded), then read resident memory of its process tree:
#   VmRSS  - sum of /proc/PID/status VmRSS over the server and its children
#   Pss    - sum of /proc/PID/smaps_rollup Pss (shared pages split, so forked
#            servers such as nsd are not double-counted)
# Every server is killed by PID on exit.
#
# Usage: bench/memory.sh [RECORDS]      (default 1000000)
# Env:   BULWARK=path/to/bulwark        (default target/release/bulwark, built if absent)
#        REPEAT=N starts each server N times (default 3) and reports the fastest
#        load: other work on a shared 2-core machine makes single loads noisy
#        KEEP=1 keeps the temp directory
set -euo pipefail

RECORDS=${1:-1000000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BULWARK=${BULWARK:-$ROOT/target/release/bulwark}
ORIGIN=bench.test
TMP=$(mktemp -d /tmp/bulwark-memory.XXXXXX)
PIDS=()

cleanup() {
    for pid in "${PIDS[@]:-}"; do
        [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]:-}"; do
        [ -n "$pid" ] && wait "$pid" 2>/dev/null || true
    done
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

if [ ! -x "$BULWARK" ]; then
    (cd "$ROOT" && cargo build --release -p bulwark)
fi

free_port() {
    /usr/bin/python3 - <<'EOF'
import socket
while True:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 0))
    port = u.getsockname()[1]
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        t.bind(("127.0.0.1", port))
    except OSError:
        continue
    print(port)
    break
EOF
}

# ---- the zone ---------------------------------------------------------------
# Per name: A always, AAAA on every 2nd, TXT on every 4th, MX on every 8th
# (about 1.9 records a name); a few names are mail hosts, the rest hosts.
ZONE=$TMP/$ORIGIN.zone
awk -v total="$RECORDS" -v origin="$ORIGIN" 'BEGIN {
    print "$ORIGIN " origin "."
    print "$TTL 3600"
    print "@ IN SOA ns1 hostmaster 2026112201 7200 3600 1209600 300"
    print "@ IN NS ns1"
    print "@ IN NS ns2"
    print "ns1 IN A 192.0.2.53"
    print "ns2 IN A 198.51.100.53"
    n = 5; i = 0; last = ""
    while (n < total) {
        name = sprintf("host%07d", i)
        a = int(i / 65536) % 256; b = int(i / 256) % 256; c = i % 256
        printf "%s IN A 10.%d.%d.%d\n", name, a, b, c; n++; last = name
        if (n < total && i % 2 == 0) { printf "%s IN AAAA 2001:db8:%x:%x::1\n", name, int(i / 65536), i % 65536; n++ }
        if (n < total && i % 4 == 1) { printf "%s IN TXT \"v=spf1 ip4:10.%d.%d.%d -all\"\n", name, a, b, c; n++ }
        if (n < total && i % 8 == 3) { printf "%s IN MX 10 mx%d.%s.\n", name, i % 16, origin; n++ }
        i++
    }
    print last > "/dev/stderr"
}' >"$ZONE" 2>"$TMP/last"
LAST=$(cat "$TMP/last").$ORIGIN
NREC=$(grep -vc '^\$' "$ZONE")
echo "zone: $ZONE, $NREC records, $(du -m "$ZONE" | cut -f1) MB, probe name $LAST" >&2

# ---- measuring ---------------------------------------------------------------
now() { date +%s.%N; }

descendants() { # PID and all its descendants
    local p=$1
    echo "$p"
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do descendants "$c"; done
}

mem_kb() { # field (VmRSS from status, Pss from smaps_rollup) summed over the tree
    local field=$1 pid=$2 sum=0 v
    for p in $(descendants "$pid"); do
        if [ "$field" = VmRSS ]; then
            v=$(awk '/^VmRSS:/ {print $2}' /proc/"$p"/status 2>/dev/null || echo 0)
        else
            v=$(awk '/^Pss:/ {print $2}' /proc/"$p"/smaps_rollup 2>/dev/null || echo 0)
        fi
        sum=$((sum + ${v:-0}))
    done
    echo "$sum"
}

answers() { # port: does the server answer A for the last name?
    local out
    out=$(dig @127.0.0.1 -p "$1" +tries=1 +time=1 +norec +short "$LAST" A 2>/dev/null) || return 1
    [ -n "$out" ] && [[ "$out" != *";;"* ]]
}

declare -A LOAD RSS PSS
REPEAT=${REPEAT:-3}
measure() { # name port command...: REPEAT times
    local i
    for ((i = 0; i < REPEAT; i++)); do measure_once "$@"; done
}
measure_once() { # name port command...
    local name=$1 port=$2 start pid deadline
    shift 2
    start=$(now)
    "$@" >"$TMP/$name.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    deadline=$(( $(date +%s) + 600 ))
    until answers "$port"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "$name exited; log:" >&2; tail -20 "$TMP/$name.log" >&2; return 1
        fi
        [ "$(date +%s)" -lt "$deadline" ] || { echo "$name: no answer in 600 s" >&2; return 1; }
        sleep 0.01  # a load takes ~0.5 s: poll finely enough to tell 0.05 s apart
    done
    local took
    took=$(awk -v a="$start" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}')
    if [ -z "${LOAD[$name]:-}" ] || awk -v t="$took" -v m="${LOAD[$name]}" 'BEGIN {exit !(t < m)}'; then
        LOAD[$name]=$took
    fi
    sleep 1 # let post-load work (knotd's timers, nsd's forks) settle
    RSS[$name]=$(mem_kb VmRSS "$pid")
    PSS[$name]=$(mem_kb Pss "$pid")
    echo "$name: answered after $took s, VmRSS ${RSS[$name]} kB, Pss ${PSS[$name]} kB" >&2
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# bulwark: one worker, no config file.
P=$(free_port)
measure bulwark "$P" "$BULWARK" serve -l "127.0.0.1:$P" -z "$ORIGIN.=$ZONE" -t 1 --log-level warn

# knotd: temp config, storage and rundir in the temp dir; no journal, no zone-file sync.
P=$(free_port)
mkdir -p "$TMP/knot"
cat >"$TMP/knot/knot.conf" <<EOF
server:
    listen: 127.0.0.1@$P
    rundir: $TMP/knot
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: $TMP/knot
log:
  - target: stderr
    any: warning
template:
  - id: default
    storage: $TMP/knot
    file: $ZONE
    journal-content: none
    zonefile-sync: -1
    zonefile-load: whole
    semantic-checks: off
zone:
  - domain: $ORIGIN
EOF
measure knotd "$P" knotd -c "$TMP/knot/knot.conf"

# nsd: temp config, no nsd.db, no remote control, foreground.
P=$(free_port)
mkdir -p "$TMP/nsd"
cat >"$TMP/nsd/nsd.conf" <<EOF
server:
    ip-address: 127.0.0.1
    port: $P
    server-count: 1
    username: ""
    chroot: ""
    database: ""
    zonesdir: "$TMP"
    pidfile: "$TMP/nsd/nsd.pid"
    xfrdfile: "$TMP/nsd/xfrd.state"
    zonelistfile: "$TMP/nsd/zone.list"
    logfile: "$TMP/nsd/nsd.log"
remote-control:
    control-enable: no
zone:
    name: $ORIGIN
    zonefile: "$ZONE"
EOF
measure nsd "$P" nsd -c "$TMP/nsd/nsd.conf" -d

# ---- table -------------------------------------------------------------------
echo
echo "Zone: $NREC records ($(du -m "$ZONE" | cut -f1) MB master file), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs"
echo "knotd: $(knotd --version 2>&1 | head -1); nsd: $(nsd -v 2>&1 | head -1)"
echo
printf '| %-8s | %10s | %12s | %12s |\n' server "load s (min of $REPEAT)" "VmRSS MiB" "Pss MiB"
printf '|%s|%s|%s|%s|\n' ---------- ------------ -------------- --------------
for s in bulwark knotd nsd; do
    printf '| %-8s | %10s | %12.1f | %12.1f |\n' "$s" "${LOAD[$s]}" \
        "$(echo "${RSS[$s]} / 1024" | bc -l)" "$(echo "${PSS[$s]} / 1024" | bc -l)"
done
echo
for s in knotd nsd; do
    printf 'bulwark/%s: load %.2fx, VmRSS %.2fx, Pss %.2fx\n' "$s" \
        "$(echo "${LOAD[bulwark]} / ${LOAD[$s]}" | bc -l)" \
        "$(echo "${RSS[bulwark]} / ${RSS[$s]}" | bc -l)" \
        "$(echo "${PSS[bulwark]} / ${PSS[$s]}" | bc -l)"
done
