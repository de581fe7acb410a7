#!/usr/bin/env bash
# What each transport costs (issue 25, seed 004): UDP, TCP, DNS over TLS,
# DNS over HTTPS (HTTP/2), and DNS over QUIC and DoH over HTTP/3 (bulwark
# alone: no packaged peer serves either), answered from local data so the
# transport is what is measured, by bulwark, Unbound, Knot Resolver and
# dnsdist in one run, each pinned to one core (SERVER_CPU) with the load
# generator on another (GEN_CPU). Prints, per transport and connection pattern, the answered
# queries per second and the server's CPU per answered query, with
# bulwark's ratio to the best peer.
#
# Connection patterns (seed 004's): `long`, CONNS connections (or UDP
# sockets) opened at the start and kept; `30s` and `1s`, each connection
# replaced after as many queries as it carries in 30 s or 1 s at that
# server's own long-lived rate (the generators count queries per connection,
# not seconds: dnsperf -O num-queries-per-conn); `1q`, one query per
# connection, a handshake for every answer. UDP has only `long`.
#
# Generators: dnsperf (-m udp, tcp, dot; Debian's 2.10); h2load for DoH
# (nghttp2-client; dnsperf's DoH keeps one response buffer per connection and
# loses answers that arrive together, DNS-OARC/dnsperf#240, and reconnects
# too slowly to load a server) POSTing one query (application/dns-message,
# RFC 8484 §4.1) over and over, run again and again with QUERIES_PER_CONN x
# CONNS requests for the short patterns; and bench/connperf (built here,
# tokio, rustls, quinn and h3) for DoQ, for DoH over HTTP/3 (POSTs to
# /dns-query) and for TCP and DoT with one query per connection, where
# dnsperf's reconnects, not the server, set the pace.
#
# Environment (all optional):
#   DUR=10                seconds per run
#   SERVERS="bulwark unbound kresd dnsdist"
#   TRANSPORTS="udp tcp dot doh doq doh3"
#   PATTERNS="long 30s 1s 1q"
#   CONNS=16              client sockets / connections
#   OUTSTANDING=400       dnsperf -q (queries in flight over all connections)
#   STREAMS=32            h2load -m (streams in flight per connection)
#   SERVER_CPU=1 GEN_CPU=0
#   QUOTA_ROWS="udp tcp/1q dot/1q doh/1q"   rows measured once more (labelled
#                         ROW@quota) with the server held to CFS_QUOTA of
#                         CFS_PERIOD µs of its core (cgroup v1), so that the
#                         server, not the generator, sets the rate: one
#                         dnsperf or connperf on one core answers ~155,000
#                         UDP queries or ~14,000 connections a second from
#                         every server alike. Empty: none.
#   CFS_QUOTA=25000 CFS_PERIOD=100000
#   BULWARK_BIN=target/release/bulwark (built unless NO_BUILD=1; connperf
#                         is built whenever it is missing)
#   OUT=bench/results/transports-YYYYMMDD   raw outputs and summary.tsv
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
DUR=${DUR:-10}
SERVERS=${SERVERS:-"bulwark unbound kresd dnsdist"}
TRANSPORTS=${TRANSPORTS:-"udp tcp dot doh doq doh3"}
PATTERNS=${PATTERNS:-"long 30s 1s 1q"}
CONNS=${CONNS:-16}
OUTSTANDING=${OUTSTANDING:-400}
STREAMS=${STREAMS:-32}
SERVER_CPU=${SERVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
QUOTA_ROWS=${QUOTA_ROWS-"udp tcp/1q dot/1q doh/1q"}
CFS_QUOTA=${CFS_QUOTA:-25000}
CFS_PERIOD=${CFS_PERIOD:-100000}
CLK_TCK=$(getconf CLK_TCK)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BULWARK_BIN=${BULWARK_BIN:-$CARGO_TARGET_DIR/release/bulwark}
OUT=${OUT:-$BENCH/results/transports-$(date -u +%Y%m%d)}
NAMES=200

. "$BENCH/lib/servers.sh"
. "$BENCH/lib/measure.sh"

for tool in dnsperf h2load kdig unbound kresd dnsdist openssl; do
    command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install dnsperf nghttp2-client knot-dnsutils unbound knot-resolver dnsdist)" >&2; exit 1; }
done
CONNPERF=$CARGO_TARGET_DIR/connperf/release/connperf
if [ "${NO_BUILD:-0}" != 1 ]; then
    (cd "$ROOT" && cargo build --release -p bulwark >/dev/null)
fi
# connperf is this benchmark's own load generator, not the binary under
# test: NO_BUILD=1 (which keeps a given BULWARK_BIN) still builds it when
# it is missing, or its rows would silently come out empty.
if [ "${NO_BUILD:-0}" != 1 ] || [ ! -x "$CONNPERF" ]; then
    (cd "$BENCH/connperf" && CARGO_TARGET_DIR=$CARGO_TARGET_DIR/connperf cargo build --release >/dev/null)
fi

WORK=$(mktemp -d /tmp/bench-transports.XXXXXX)
SERVER_PID=
cleanup() {
    if [ -n "$SERVER_PID" ]; then stop_server "$SERVER_PID"; fi
    quota_off transports
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$OUT/raw"

# The data every server answers from: NAMES A records, as a zone (bulwark)
# and local-data (Unbound); kresd (a policy.ANSWER rule) and dnsdist (a
# SpoofAction) answer every query under the zone with one A record, the
# cheapest answer each has.
{
    echo "\$ORIGIN bench.example.com."
    echo "\$TTL 3600"
    echo "@ SOA ns admin 1 3600 600 86400 300"
    echo "@ NS ns"
    echo "ns A 192.0.2.1"
    for i in $(seq 0 $((NAMES - 1))); do echo "name$i A 192.0.2.$((i % 250 + 1))"; done
} >"$WORK/zone"
for i in $(seq 0 $((NAMES - 1))); do echo "name$i.bench.example.com. A"; done >"$WORK/queries"
for i in $(seq 0 $((NAMES - 1))); do echo "192.0.2.$((i % 250 + 1)) name$i.bench.example.com"; done >"$WORK/hosts"
# The DoH body: name1.bench.example.com. A, ID 0 (RFC 8484 §4.1).
printf '\x00\x00\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x05name1\x05bench\x07example\x03com\x00\x00\x01\x00\x01' >"$WORK/doh-query"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=localhost -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null

PORT= TLS_PORT= HTTPS_PORT= H3_PORT=

start_server() {
    local s=$1 d=$WORK/$1
    mkdir -p "$d"
    PORT=$(free_port) TLS_PORT=$(free_port) HTTPS_PORT=$(free_port) H3_PORT=$(free_port)
    case $s in
    bulwark)
        cat >"$d/bulwark.toml" <<CONF
[server]
listen = ["127.0.0.1:$PORT"]
threads = 1
tcp_max_connections_per_client = 0
tls_max_queries_per_connection = 0
[rrl]
responses_per_second = 0
[[listener]]
address = "127.0.0.1:$TLS_PORT"
transport = "tls"
certificate = "$WORK/cert.pem"
key = "$WORK/key.pem"
[[listener]]
address = "127.0.0.1:$HTTPS_PORT"
transport = "https"
certificate = "$WORK/cert.pem"
key = "$WORK/key.pem"
[[listener]]
address = "127.0.0.1:$TLS_PORT"
transport = "quic"
certificate = "$WORK/cert.pem"
key = "$WORK/key.pem"
# DoH over HTTP/3 on a listener of its own: with http3 on, the HTTP/2
# listener's answers would carry Alt-Svc, which the doh rows must not.
[[listener]]
address = "127.0.0.1:$H3_PORT"
transport = "https"
http3 = true
certificate = "$WORK/cert.pem"
key = "$WORK/key.pem"
[[zone]]
origin = "bench.example.com."
file = "$WORK/zone"
CONF
        taskset -c "$SERVER_CPU" "$BULWARK_BIN" serve --config "$d/bulwark.toml" --log-level warn >"$d/log" 2>&1 &
        ;;
    unbound)
        {
            cat <<CONF
server:
  interface: 127.0.0.1@$PORT
  interface: 127.0.0.1@$TLS_PORT
  interface: 127.0.0.1@$HTTPS_PORT
  tls-port: $TLS_PORT
  https-port: $HTTPS_PORT
  tls-service-key: "$WORK/key.pem"
  tls-service-pem: "$WORK/cert.pem"
  incoming-num-tcp: 100
  do-daemonize: no
  chroot: ""
  username: ""
  directory: "$d"
  pidfile: ""
  use-syslog: no
  logfile: ""
  do-ip6: no
  num-threads: 1
  so-reuseport: no
  access-control: 127.0.0.0/8 allow
  module-config: "iterator"
  local-zone: "bench.example.com." static
CONF
            awk '{ printf "  local-data: \"%s 3600 IN A %s\"\n", $2, $1 }' "$WORK/hosts"
            echo "remote-control:"
            echo "  control-enable: no"
        } >"$d/unbound.conf"
        taskset -c "$SERVER_CPU" unbound -d -c "$d/unbound.conf" >"$d/log" 2>&1 &
        ;;
    kresd)
        cat >"$d/config" <<CONF
net.ipv6 = false
net.listen('127.0.0.1', $PORT, { kind = 'dns' })
net.listen('127.0.0.1', $TLS_PORT, { kind = 'tls' })
net.listen('127.0.0.1', $HTTPS_PORT, { kind = 'doh2' })
net.tls('$WORK/cert.pem', '$WORK/key.pem')
trust_anchors.remove('.')
-- Every question under the zone answered by a rule, kresd's cheapest
-- local answer (its policies refuse the special-use .test).
policy.add(policy.suffix(policy.ANSWER({ [kres.type.A] = { rdata = kres.str2ip('192.0.2.1'), ttl = 3600 } }), { todname('bench.example.com.') }))
CONF
        taskset -c "$SERVER_CPU" kresd -n -c "$d/config" "$d" >"$d/log" 2>&1 </dev/null &
        ;;
    dnsdist)
        cat >"$d/dnsdist.conf" <<CONF
setLocal('127.0.0.1:$PORT')
addTLSLocal('127.0.0.1:$TLS_PORT', '$WORK/cert.pem', '$WORK/key.pem')
addDOHLocal('127.0.0.1:$HTTPS_PORT', '$WORK/cert.pem', '$WORK/key.pem', '/dns-query')
setMaxTCPConnectionsPerClient(0)
addAction(AllRule(), SpoofAction({'192.0.2.1'}))
CONF
        taskset -c "$SERVER_CPU" dnsdist --supervised --disable-syslog -C "$d/dnsdist.conf" >"$d/log" 2>&1 </dev/null &
        ;;
    esac
    SERVER_PID=$!
}

# Waits until the server answers name1 over UDP (every listener is up by
# then: each server opens them all before its first answer).
wait_answering() {
    local i
    for i in $(seq 1 100); do
        if kdig @127.0.0.1 -p "$PORT" +time=1 +retry=0 name1.bench.example.com A 2>/dev/null | grep -q 'status: NOERROR'; then
            return 0
        fi
        kill -0 "$SERVER_PID" 2>/dev/null || { echo "server exited:" >&2; cat "$WORK"/*/log >&2; exit 1; }
        sleep 0.1
    done
    echo "server not answering" >&2
    exit 1
}

# Queries per connection for PATTERN: 0 (kept) for `long`, 1 for `1q`, and
# for `1s` and `30s` what one connection carried in that time in the
# server's long-lived run of the same transport.
per_connection() {
    local s=$1 t=$2 p=$3 qps
    case $p in
    long) echo 0 ;;
    1q) echo 1 ;;
    *)
        qps=$(awk -F'\t' -v s="$s" -v t="$t" '$1 == s && $2 == t { print $4 }' "$OUT/summary.tsv")
        /usr/bin/python3 -c "import sys; print(max(1, round(float(sys.argv[1] or 0) * int(sys.argv[2].rstrip('s')) / int(sys.argv[3]))))" \
            "${qps:-0}" "$p" "$CONNS"
        ;;
    esac
}

# The seconds a run's answers are counted over: DUR (dnsperf and connperf
# send for that long), or for DoH's short patterns the sum of the h2load
# runs' own times ("finished in 2.51s, ...", or in ms), which may outlast
# DUR.
run_seconds() {
    local t=$1 n=$2 raw=$3
    if [ "$t" = doh ] && [ "$n" -gt 0 ]; then
        sed -n 's/^finished in \([0-9.]*\)\(m*\)s,.*/\1 \2/p' "$raw" |
            awk '{ s += ($2 == "m") ? $1 / 1000 : $1 } END { print s + 0 }'
    else
        echo "$DUR"
    fi
}

# measure SERVER TRANSPORT PATTERN [SUFFIX]: one run; appends a row to
# summary.tsv (the transport column is `T` for long-lived connections,
# `T/PATTERN` else, with SUFFIX after it).
measure() {
    local s=$1 t=$2 p=$3 raw before after answered n label=$2
    [ "$p" = long ] || label=$t/$p
    label=$label${4:-}
    raw=$OUT/raw/$s-${label/\//-}.txt
    n=$(per_connection "$s" "$t" "$p")
    local pids
    pids=$(server_pids "$SERVER_PID")
    before=$(ticks $pids)
    case $t/$p in
    tcp/1q | dot/1q | doq/* | doh3/*)
        local port=$TLS_PORT mode=$t
        [ "$t" = tcp ] && port=$PORT
        [ "$t" = doh3 ] && port=$H3_PORT mode=h3
        taskset -c "$GEN_CPU" "$CONNPERF" "$mode" "127.0.0.1:$port" "$DUR" "$CONNS" \
            "$(( (OUTSTANDING + CONNS - 1) / CONNS ))" "$n" "$WORK/queries" >"$raw" 2>&1 || true
        answered=$(sed -n 's/^answered \([0-9]*\)$/\1/p' "$raw")
        ;;
    udp/* | tcp/* | dot/*)
        local port=$PORT per=()
        [ "$t" = dot ] && port=$TLS_PORT
        [ "$n" -gt 0 ] && per=(-O "num-queries-per-conn=$n")
        taskset -c "$GEN_CPU" dnsperf -m "$t" -s 127.0.0.1 -p "$port" -d "$WORK/queries" \
            -c "$CONNS" -q "$OUTSTANDING" -l "$DUR" -t 5 "${per[@]}" >"$raw" 2>&1 || true
        answered=$(sed -n 's/^ *Queries completed: *\([0-9]*\).*/\1/p' "$raw")
        ;;
    doh/*)
        # Long-lived: one h2load run. Short: h2load runs of n requests per
        # connection, one after another until DUR has passed.
        local until=$(($(date +%s) + DUR)) streams=$STREAMS
        answered=0
        : >"$raw"
        while :; do
            local args=(-c "$CONNS" -m "$streams")
            if [ "$n" -gt 0 ]; then
                [ "$n" -lt "$streams" ] && streams=$n
                # One query per connection: more connections per h2load run,
                # so starting h2load does not set the pace.
                local clients=$CONNS
                [ "$n" -eq 1 ] && clients=$((CONNS * 4))
                args=(-c "$clients" -m "$streams" -n $((clients * n)))
            else
                args+=(-D "$DUR")
            fi
            # Many runs for a short pattern: each keeps only its totals.
            taskset -c "$GEN_CPU" h2load "${args[@]}" \
                -d "$WORK/doh-query" -H 'content-type: application/dns-message' \
                -H 'accept: application/dns-message' \
                "https://127.0.0.1:$HTTPS_PORT/dns-query" 2>&1 |
                if [ "$n" -gt 0 ]; then grep -E '^(finished in|requests:|status codes:)'; else cat; fi \
                    >>"$raw" || true
            [ "$n" -eq 0 ] || [ "$(date +%s)" -ge "$until" ] && break
        done
        # "requests: N total, N started, N done, N succeeded, ..."
        answered=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' "$raw" | awk '{ s += $1 } END { print s + 0 }')
        ;;
    esac
    after=$(ticks $pids)
    /usr/bin/python3 - "$s" "$label" "$before" "$after" "${answered:-0}" "$(run_seconds "$t" "$n" "$raw")" "$CLK_TCK" \
        >>"$OUT/summary.tsv" <<'PY'
import sys
s, t, before, after, answered, dur, hz = sys.argv[1:]
b = [int(x) for x in before.split()]
a = [int(x) for x in after.split()]
cpu_us = ((a[0] - b[0]) + (a[1] - b[1])) * 1e6 / int(hz)
n = int(answered)
print(f"{s}\t{t}\t{n}\t{n / float(dur):.0f}\t{cpu_us / n if n else 0:.2f}")
PY
}

printf 'server\ttransport\tanswered\tqps\tcpu_us_per_query\n' >"$OUT/summary.tsv"
for s in $SERVERS; do
    start_server "$s"
    wait_answering
    pin_server "$SERVER_PID"
    for t in $TRANSPORTS; do
        # DoQ and DoH over HTTP/3: no packaged peer serves them.
        [[ "$t" = doq || "$t" = doh3 ]] && [ "$s" != bulwark ] && continue
        for p in $PATTERNS; do
            [ "$t" = udp ] && [ "$p" != long ] && continue
            measure "$s" "$t" "$p"
            tail -1 "$OUT/summary.tsv" >&2
            row=$t
            [ "$p" = long ] || row=$t/$p
            if [[ " $QUOTA_ROWS " == *" $row "* ]]; then
                # shellcheck disable=SC2046
                quota_on transports $(server_pids "$SERVER_PID")
                measure "$s" "$t" "$p" @quota
                quota_off transports
                tail -1 "$OUT/summary.tsv" >&2
            fi
        done
    done
    stop_server "$SERVER_PID"
    SERVER_PID=
done

{
    echo "# transports, $(date -u +%Y-%m-%dT%H:%MZ), DUR=$DUR CONNS=$CONNS OUTSTANDING=$OUTSTANDING STREAMS=$STREAMS QUOTA_ROWS=\"$QUOTA_ROWS\" (@quota: CFS $CFS_QUOTA/$CFS_PERIOD)"
    echo "# $(lscpu | sed -n 's/^Model name: *//p'), server on CPU $SERVER_CPU, generator on CPU $GEN_CPU"
    echo "# bulwark $(cd "$ROOT" && git rev-parse --short HEAD), unbound $(unbound -V 2>&1 | sed -n 's/^Version //p'), $(kresd --version), $(dnsdist --version 2>&1 | head -1)"
} >"$OUT/versions.txt"
/usr/bin/python3 - "$OUT/summary.tsv" <<'PY' | tee "$OUT/report.md"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
transports = []
for r in rows:
    if r["transport"] not in transports:
        transports.append(r["transport"])
own_udp = next((float(r["qps"]) for r in rows
                if r["server"] == "bulwark" and r["transport"] == "udp"), 0.0)
print("| transport | server | qps | CPU µs/query | bulwark/best peer qps | bulwark/best peer CPU | bulwark/own UDP qps |")
print("| --- | --- | --: | --: | --: | --: | --: |")
for t in transports:
    here = [r for r in rows if r["transport"] == t]
    mine = next((r for r in here if r["server"] == "bulwark"), None)
    peers = [r for r in here if r["server"] != "bulwark" and float(r["qps"]) > 0]
    best_qps = max(peers, key=lambda r: float(r["qps"]), default=None)
    best_cpu = min((r for r in peers if float(r["cpu_us_per_query"]) > 0),
                   key=lambda r: float(r["cpu_us_per_query"]), default=None)
    for r in here:
        ratio_q = ratio_c = ""
        if r is mine and best_qps:
            ratio_q = f"{float(mine['qps']) / float(best_qps['qps']):.2f} ({best_qps['server']})"
        if r is mine and best_cpu and float(mine["cpu_us_per_query"]) > 0:
            ratio_c = f"{float(mine['cpu_us_per_query']) / float(best_cpu['cpu_us_per_query']):.2f} ({best_cpu['server']})"
        ratio_u = ""
        if r is mine and own_udp > 0:
            ratio_u = f"{float(mine['qps']) / own_udp:.2f}"
        print(f"| {t} | {r['server']} | {float(r['qps']):.0f} | {float(r['cpu_us_per_query']):.2f} | {ratio_q} | {ratio_c} | {ratio_u} |")
PY
# Seed 004's Figures 2 and 3: qps and CPU per query, every transport and
# pattern, one bar per server.
/usr/bin/python3 "$BENCH/lib/transports_chart.py" "$OUT/summary.tsv" "$OUT/transports.png" ||
    echo "chart not drawn (gnuplot?)" >&2
