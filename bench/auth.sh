#!/usr/bin/env bash
# Side-by-side authoritative benchmark (issue 7): bulwark against knotd, nsd
# and named, with a null responder as the kernel's floor. See bench/README.md.
#
# Environment (all optional):
#   DUR=5            seconds per dnsperf run
#   ROUNDS=1         rounds of every server, class and mode; each round
#                    restarts every server, and the table gives each
#                    figure's median over the rounds (use 3 or more when a
#                    ratio sits near its target: one run moves by 10-30%)
#   LIGHT_QPS=20000  the fixed light load
#   SERVERS="null bulwark knotd nsd named"
#   CLASSES="www www-do any-do nx-do mix"
#   MODES="light max quota scale"
#   CFS_QUOTA=25000 CFS_PERIOD=100000   the quota mode's cgroup v1 limits
#   DNSPERF_OUTSTANDING=500             dnsperf -q
#   SERVER_CPU=1 GEN_CPU=0              taskset CPUs
#   BULWARK_BIN=target/release/bulwark  (built unless NO_BUILD=1)
#   BULWARK_BASE_BIN=...   another build, served as `bulwark_base` (add it to
#                    SERVERS) to compare a change with its base in one run
#   OUT=bench/RESULTS.md                where the table goes
#   SIGNED=1         serve the zone signed by `bulwark sign` (every server,
#                    every class); SIGN_ALG=RSASHA256 and NSEC3 as in seed 002
set -euo pipefail
[ "$(id -u)" = 0 ] || echo "warning: quota mode needs root (cgroup v1)" >&2

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
DUR=${DUR:-5}
ROUNDS=${ROUNDS:-1}
LIGHT_QPS=${LIGHT_QPS:-20000}
SERVERS=${SERVERS:-"null bulwark knotd nsd named"}
CLASSES=${CLASSES:-"www www-do any-do nx-do mix"}
MODES=${MODES:-"light max quota scale"}
CFS_QUOTA=${CFS_QUOTA:-25000}
CFS_PERIOD=${CFS_PERIOD:-100000}
DNSPERF_OUTSTANDING=${DNSPERF_OUTSTANDING:-500}
SERVER_CPU=${SERVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
ORIGIN=bench.test.
CLK_TCK=$(getconf CLK_TCK)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BULWARK_BIN=${BULWARK_BIN:-$CARGO_TARGET_DIR/release/bulwark}
NULL_BIN=$CARGO_TARGET_DIR/release/null-responder
OUT=${OUT:-$BENCH/RESULTS.md}
STAMP=$(date -u +%Y%m%d)
CHART=${CHART:-$BENCH/results/auth-$STAMP.png}
# The raw rows go beside the chart, so a partial run written elsewhere
# (OUT=/tmp/x.md CHART=/tmp/x.png) leaves the recorded run's rows alone.
ROWS=${ROWS:-${CHART%.png}.tsv}

. "$BENCH/lib/servers.sh"
. "$BENCH/lib/measure.sh"

WORK=$(mktemp -d /tmp/bench-auth.XXXXXX)
SERVER_PID=
cleanup() {
    local s
    if [ -n "$SERVER_PID" ]; then stop_server "$SERVER_PID"; fi
    for s in $SERVERS; do quota_off "$s"; done
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "${NO_BUILD:-}" ]; then
    echo "building bulwark (release) and the null responder..." >&2
    (cd "$ROOT" && cargo build --release -p bulwark -q)
    (cd "$BENCH/null-responder" && cargo build --release -q)
fi

echo "generating the zone and query files in $WORK" >&2
/usr/bin/python3 "$BENCH/lib/genzone.py" "$ORIGIN" "$WORK"
SIGNED=${SIGNED:-1}
SIGN_ALG=${SIGN_ALG:-RSASHA256}
if [ "$SIGNED" = 1 ]; then
    # Seed 002's deployment: a KSK and a ZSK, RSA/SHA-256, NSEC3. Every
    # server serves the same signed file, so the DO classes compare answers
    # built from identical signatures.
    "$BULWARK_BIN" keys generate "$ORIGIN" -a "$SIGN_ALG" --role ksk -K "$WORK/keys" >/dev/null
    "$BULWARK_BIN" keys generate "$ORIGIN" -a "$SIGN_ALG" --role zsk -K "$WORK/keys" >/dev/null
    "$BULWARK_BIN" sign "$ORIGIN" "$WORK/zone" -K "$WORK/keys" --nsec3 -o "$WORK/zone.signed"
    mv "$WORK/zone.signed" "$WORK/zone"
fi
SIZES_TSV=$WORK/sizes.tsv
: >"$SIZES_TSV"

# Response sizes of the seed's four queries (seed 002 table 2), with a 4096
# EDNS buffer so nothing is truncated: server, class, request, response octets.
measure_sizes() {
    local server=$1 port=$2 class q name type flags out
    for class in www www-do any-do nx-do; do
        q=$(head -1 "$WORK/q-$class")
        name=${q% *}; type=${q#* }
        flags=(+bufsize=4096 +nocookie)
        case $class in *-do) flags+=(+dnssec) ;; esac
        out=$(kdig -p "$port" @127.0.0.1 "${flags[@]}" "$name" "$type" 2>&1 || true)
        printf '%s\t%s\t%s\n' "$server" "$class" \
            "$(echo "$out" | sed -n 's/^;; Received \([0-9]*\) B.*/\1/p' | head -1)" >>"$SIZES_TSV"
    done
}

RESULTS_TSV=$WORK/results.tsv
: >"$RESULTS_TSV"

for round in $(seq 1 "$ROUNDS"); do
for server in $SERVERS; do
    port=$(free_port)
    echo "== round $round/$ROUNDS: $server on 127.0.0.1:$port (CPU $SERVER_CPU)" >&2
    "start_$server" "$port"
    wait_ready "$port" "$server"
    pin_server "$SERVER_PID"
    [ "$server" = null ] || [ "$round" != 1 ] || measure_sizes "$server" "$port"
    for class in $CLASSES; do
        do=0
        case $class in *-do) do=1 ;; esac
        # A short warm-up so caches and lazily built state are in place.
        taskset -c "$GEN_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$WORK/q-$class" \
            -l 1 -Q 5000 >/dev/null 2>&1 || true
        for mode in $MODES; do
            case $mode in
            light) run_dnsperf "$server" "$class" light "$port" "$LIGHT_QPS" "$DUR" "$do" ;;
            max) run_dnsperf "$server" "$class" max "$port" 0 "$DUR" "$do" ;;
            quota)
                # shellcheck disable=SC2046
                quota_on "$server" $(server_pids "$SERVER_PID")
                run_dnsperf "$server" "$class" quota "$port" 0 "$DUR" "$do"
                quota_off "$server"
                ;;
            esac
        done
    done
    stop_server "$SERVER_PID"
    SERVER_PID=
done
# Scaling in every round too: one run of it moved nx-do between 1.67 and
# 1.81 on the same code, so its figure is a median like the others.
if [[ " $MODES " == *" scale "* && " $SERVERS " == *" bulwark "* ]]; then
    run_scaling
fi
done

mkdir -p "$(dirname "$ROWS")"
cp "$RESULTS_TSV" "$ROWS"
versions=$WORK/versions.txt
{
    echo "bulwark: $("$BULWARK_BIN" --version 2>&1 | head -1) (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo "knotd: $(knotd --version 2>&1 | head -1)"
    echo "nsd: $(nsd -v 2>&1 | head -1)"
    echo "named: $(named -v 2>&1 | head -1)"
    echo "dnsperf: $(dnsperf -h 2>&1 | grep -i '^version' | head -1)"
    echo "kernel: $(uname -r); CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); $(nproc) CPUs"
} >"$versions"
/usr/bin/python3 "$BENCH/lib/report.py" "$RESULTS_TSV" "$versions" "$OUT" "$CHART" \
    "${BENCH_COMMAND:-DUR=$DUR ROUNDS=$ROUNDS bench/auth.sh}" "DUR=$DUR ROUNDS=$ROUNDS LIGHT_QPS=$LIGHT_QPS CFS_QUOTA=$CFS_QUOTA/$CFS_PERIOD dnsperf -q $DNSPERF_OUTSTANDING"
/usr/bin/python3 - "$SIZES_TSV" "$OUT" "$SIGNED" "$SIGN_ALG" <<'PY'
import collections, sys
tsv, out_md, signed, alg = sys.argv[1:]
sizes = collections.defaultdict(dict)
servers = []
for line in open(tsv):
    server, cls, size = (line.rstrip("\n").split("\t") + ["", "", ""])[:3]
    if server not in servers:
        servers.append(server)
    sizes[cls][server] = size or "-"
# Seed 002 table 2 (NSD / BIND / Knot 1.x), for comparison.
seed = {"www": "179 / 179 / 43", "www-do": "1180 / 1180 / 219", "any-do": "1821 / 2907 / 2911", "nx-do": "1003 / 1003 / 1003"}
zone = f"signed by bulwark sign ({alg}, NSEC3)" if signed == "1" else "unsigned"
lines = ["<!-- bench/auth.sh sizes: begin -->", "## Response sizes (octets; zone " + zone + ")", "",
         "| class | " + " | ".join(servers) + " | seed 002 table 2 (NSD / BIND / Knot) |",
         "| --- |" + " --- |" * (len(servers) + 1)]
for cls in ["www", "www-do", "any-do", "nx-do"]:
    lines.append(f"| {cls} | " + " | ".join(sizes[cls].get(s, "-") for s in servers) + f" | {seed[cls]} |")
lines += ["", "The seed's zone was ni.rs with 1024/2048-bit RSA keys; sizes differ with names and key sizes, "
          "the shape (minimal responses, NSEC3 proofs) is what compares.", "<!-- bench/auth.sh sizes: end -->"]
text = open(out_md).read()
begin, end = "<!-- bench/auth.sh sizes: begin -->", "<!-- bench/auth.sh sizes: end -->"
block = "\n".join(lines)
if begin in text:
    text = text[: text.index(begin)] + block + text[text.index(end) + len(end):]
else:
    marker = "<!-- bench/auth.sh: end -->"
    text = text.replace(marker, marker + "\n\n" + block, 1) if marker in text else text + "\n" + block + "\n"
open(out_md, "w").write(text)
PY
echo "table: $OUT; chart: $CHART" >&2
