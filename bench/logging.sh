#!/usr/bin/env bash
# The cost of logging every query (issue 5): bulwark with dnstap off, to a
# file, to a Unix socket read by fstrm_capture, and to a receiver that stalls;
# knotd without and with mod-dnstap; named without and with its query log.
# Answered qps at maximum load under a CPU quota, in alternating rounds, and
# the ratio with/without per server. See bench/README.md.
#
# Environment (all optional):
#   DUR=5 ROUNDS=3 CLASSES="www mix" MODES=quota (also: max, light)
#   VARIANTS="bulwark-off bulwark-file bulwark-unix bulwark-stalled
#             knotd-off knotd-dnstap named-off named-querylog"
#   CFS_QUOTA=25000 CFS_PERIOD=100000 DNSPERF_OUTSTANDING=500 LIGHT_QPS=20000
#   SERVER_CPU=1 GEN_CPU=0 BULWARK_BIN NO_BUILD=1 KEEP_WORK=1 OUT
#   PERF=0 skips the profile (perf record) of PERF_VARIANT=bulwark-file
#   CALLGRIND=0 skips counting instructions per query, dnstap off and to a
#   file, under callgrind (CALLGRIND_QUERIES=20000 mix queries at 2,000 qps)
set -euo pipefail
[ "$(id -u)" = 0 ] || echo "warning: quota mode needs root (cgroup v1)" >&2

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
DUR=${DUR:-5}
ROUNDS=${ROUNDS:-3}
CLASSES=${CLASSES:-"www mix"}
MODES=${MODES:-quota}
VARIANTS=${VARIANTS:-"bulwark-off bulwark-file bulwark-unix bulwark-stalled knotd-off knotd-dnstap named-off named-querylog"}
LIGHT_QPS=${LIGHT_QPS:-20000}
CFS_QUOTA=${CFS_QUOTA:-25000}
CFS_PERIOD=${CFS_PERIOD:-100000}
DNSPERF_OUTSTANDING=${DNSPERF_OUTSTANDING:-500}
SERVER_CPU=${SERVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
PERF=${PERF:-1}
CALLGRIND=${CALLGRIND:-1}
CALLGRIND_QUERIES=${CALLGRIND_QUERIES:-20000}
ORIGIN=bench.test.
CLK_TCK=$(getconf CLK_TCK)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BULWARK_BIN=${BULWARK_BIN:-$CARGO_TARGET_DIR/release/bulwark}
OUT=${OUT:-$BENCH/RESULTS.md}
STAMP=$(date -u +%Y%m%d)

. "$BENCH/lib/servers.sh"
. "$BENCH/lib/measure.sh"
. "$BENCH/lib/variants.sh"

WORK=$(mktemp -d /tmp/bench-logging.XXXXXX)
SERVER_PID=
cleanup() {
    local v
    if [ -n "$SERVER_PID" ]; then stop_server "$SERVER_PID"; fi
    stop_helpers
    for v in $VARIANTS; do quota_off "$v"; done
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "${NO_BUILD:-}" ]; then
    echo "building bulwark (release)..." >&2
    (cd "$ROOT" && cargo build --release -p bulwark -q)
fi

echo "generating the zone and query files in $WORK" >&2
/usr/bin/python3 "$BENCH/lib/genzone.py" "$ORIGIN" "$WORK"

ALL_TSV=$WORK/all.tsv
: >"$ALL_TSV"

# start_variant PORT VARIANT: the server, and whatever receives its log.
start_variant() {
    local port=$1 v=$2 d=$WORK/$2
    mkdir -p "$d"
    case $v in
    bulwark-off) start_bulwark_toml "$port" "$v" ;;
    bulwark-file)
        start_bulwark_toml "$port" "$v" "[dnstap]
destination = \"file:$d/dnstap.fstrm\"" ;;
    bulwark-unix)
        start_fstrm_capture "$d/dnstap.sock" "$d/captured.fstrm"
        start_bulwark_toml "$port" "$v" "[dnstap]
destination = \"unix:$d/dnstap.sock\"" ;;
    bulwark-stalled)
        start_stalled_receiver "$d/dnstap.sock"
        start_bulwark_toml "$port" "$v" "[dnstap]
destination = \"unix:$d/dnstap.sock\"" ;;
    knotd-off) start_knotd_v "$port" "$v" ;;
    knotd-dnstap) start_knotd_v "$port" "$v" dnstap ;;
    named-off) start_named_v "$port" "$v" ;;
    named-querylog) start_named_v "$port" "$v" querylog ;;
    *)
        echo "unknown variant $v" >&2
        return 1
        ;;
    esac
}

# logged_bytes VARIANT: octets of log written so far (0 when it logs nothing).
logged_bytes() {
    local d=$WORK/$1 f
    for f in "$d/dnstap.fstrm" "$d/captured.fstrm" "$d/query.log"; do
        if [ -f "$f" ]; then
            stat -c %s "$f"
            return
        fi
    done
    echo 0
}

# counters VARIANT OUT: bulwark's statistics (ctl stats), empty for peers.
counters() {
    case $1 in
    bulwark-*) bulwark_ctl_stats "$1" "$2" ;;
    *) : >"$2" ;;
    esac
}

# One row per run: round, the 10 fields of lib/measure.sh, then notes
# (key=value;...): log octets written and bulwark's dnstap counters.
measure() {
    local r=$1 v=$2 class=$3 mode=$4 port=$5 b_bytes a_bytes notes
    local pre=$WORK/$v/stats-before post=$WORK/$v/stats-after k
    counters "$v" "$pre"
    b_bytes=$(logged_bytes "$v")
    RESULTS_TSV=$WORK/row.tsv
    : >"$RESULTS_TSV"
    case $mode in
    light) run_dnsperf "$v" "$class" light "$port" "$LIGHT_QPS" "$DUR" 0 ;;
    max) run_dnsperf "$v" "$class" max "$port" 0 "$DUR" 0 ;;
    quota)
        # shellcheck disable=SC2046
        quota_on "$v" $(server_pids "$SERVER_PID")
        run_dnsperf "$v" "$class" quota "$port" 0 "$DUR" 0
        quota_off "$v"
        ;;
    esac
    counters "$v" "$post"
    a_bytes=$(logged_bytes "$v")
    notes="log_bytes=$((a_bytes - b_bytes))"
    # Every dnstap counter the server shows (frames sent, dropped, ...).
    for k in $(grep -o '^bulwark_dnstap_[a-z_]*_total' "$post" 2>/dev/null | sort -u); do
        notes+=";${k#bulwark_dnstap_}=$(metric "$pre" "$k")>$(metric "$post" "$k")"
    done
    printf '%s\t%s\t%s\n' "$r" "$(cat "$RESULTS_TSV")" "$notes" >>"$ALL_TSV"
}

for r in $(seq 1 "$ROUNDS"); do
    for v in $VARIANTS; do
        port=$(free_port)
        echo "== round $r: $v on 127.0.0.1:$port (CPU $SERVER_CPU)" >&2
        start_variant "$port" "$v"
        wait_ready "$port" "$v"
        if [ "$v" = bulwark-stalled ] &&
            ! wait_file_word "$WORK/$v/dnstap.sock.state" started; then
            echo "warning: bulwark did not complete the handshake with the stalled receiver" >&2
        fi
        for class in $CLASSES; do
            warm_up "$port" "$class"
            for mode in $MODES; do
                measure "$r" "$v" "$class" "$mode" "$port"
            done
        done
        stop_server "$SERVER_PID"
        SERVER_PID=
        stop_helpers
        # The logs can be large: keep only the configuration and server log.
        rm -f "$WORK/$v"/*.fstrm "$WORK/$v/query.log"
    done
done

# Profile hints: where bulwark spends its time at full load with dnstap to a
# file (perf record on the server's CPU; the top symbols go into the report).
PERF_TXT=
PERF_VARIANT=${PERF_VARIANT:-bulwark-file}
if [ "$PERF" = 1 ] && command -v perf >/dev/null; then
    echo "== profile: $PERF_VARIANT, mix, dnsperf unlimited, no quota" >&2
    port=$(free_port)
    start_variant "$port" "$PERF_VARIANT"
    wait_ready "$port" "$PERF_VARIANT"
    warm_up "$port" mix
    taskset -c "$GEN_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$WORK/q-mix" -l "$((DUR + 2))" \
        -q "$DNSPERF_OUTSTANDING" >/dev/null 2>&1 &
    gen=$!
    sleep 1
    perf record -q -g -p "$SERVER_PID" -o "$WORK/perf.data" -- sleep "$DUR" >/dev/null 2>&1 || true
    wait "$gen" || true
    stop_server "$SERVER_PID"
    SERVER_PID=
    stop_helpers
    rm -f "$WORK/$PERF_VARIANT"/*.fstrm
    PERF_TXT=$BENCH/results/logging-perf-$STAMP.txt
    {
        echo "## Profile hints: $PERF_VARIANT under full load"
        echo
        echo "\`perf record -g -p PID\` for ${DUR} s while dnsperf sends the \`mix\` class"
        echo "unlimited (no quota); the hottest symbols by self time, per thread"
        echo "(cpu-clock samples), first all of them, then those outside the kernel:"
        echo
        perf report -i "$WORK/perf.data" --no-children --sort comm,dso,symbol -g none \
            --stdio 2>/dev/null | grep -v '^#' | grep '%' | sed 's/ *- *- *$//' >"$WORK/perf.txt"
        echo '```'
        head -25 "$WORK/perf.txt"
        echo '```'
        echo
        echo '```'
        grep -v 'kernel.kallsyms' "$WORK/perf.txt" | head -20
        echo '```'
        echo
    } >"$PERF_TXT" || true
fi

# Instructions per query, dnstap off and to a file: the run-independent cost
# of logging (every thread: the workers' encoding and the writer's I/O).
if [ "$CALLGRIND" = 1 ] && command -v valgrind >/dev/null; then
    CG_TXT=$BENCH/results/logging-callgrind-$STAMP.txt
    {
        echo "## Instructions per query (callgrind)"
        echo
        echo "\`valgrind --tool=callgrind\`, counters zeroed once the server answers, then"
        echo "$CALLGRIND_QUERIES \`mix\` queries at 2,000 qps; Ir counts every instruction of"
        echo "every thread (workers and the dnstap writer) over the answered queries."
        echo
        echo "| variant | answered | Ir | Ir per query |"
        echo "|---|--:|--:|--:|"
        callgrind_row bulwark-off ""
        callgrind_row bulwark-file "[dnstap]
destination = \"file:$WORK/bulwark-file-cg/dnstap.fstrm\""
        echo
    } >"$CG_TXT"
    if [ -n "$PERF_TXT" ]; then
        cat "$CG_TXT" >>"$PERF_TXT"
    else
        PERF_TXT=$CG_TXT
    fi
fi

cp "$ALL_TSV" "$BENCH/results/logging-$STAMP.tsv"
versions=$WORK/versions.txt
{
    echo "bulwark: $("$BULWARK_BIN" --version 2>&1 | head -1) (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), working tree $(git -C "$ROOT" status --porcelain 2>/dev/null | grep -c . || true) files changed)"
    echo "knotd: $(knotd --version 2>&1 | head -1); knot-module-dnstap $(dpkg-query -W -f='${Version}' knot-module-dnstap 2>/dev/null)"
    echo "named: $(named -v 2>&1 | head -1)"
    echo "fstrm_capture: fstrm-bin $(dpkg-query -W -f='${Version}' fstrm-bin 2>/dev/null)"
    echo "dnsperf: $(dnsperf -h 2>&1 | grep -i '^version' | head -1)"
    echo "kernel: $(uname -r); CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); $(nproc) CPUs"
} >"$versions"
/usr/bin/python3 "$BENCH/lib/report_variants.py" logging "$ALL_TSV" "$versions" "$OUT" \
    "${BENCH_COMMAND:-DUR=$DUR ROUNDS=$ROUNDS bench/logging.sh}" \
    "DUR=$DUR ROUNDS=$ROUNDS CLASSES=\"$CLASSES\" MODES=\"$MODES\" CFS_QUOTA=$CFS_QUOTA/$CFS_PERIOD dnsperf -q $DNSPERF_OUTSTANDING" \
    "$PERF_TXT"
echo "report: $OUT; rows: bench/results/logging-$STAMP.tsv" >&2
