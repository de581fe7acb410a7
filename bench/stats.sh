#!/usr/bin/env bash
# The cost of statistics (issue 6): bulwark with `[statistics] enabled = false`
# and no endpoint, against statistics on with the Prometheus endpoint scraped
# once a second. Answered qps at maximum load under a CPU quota and CPU µs per
# query, in alternating rounds (off, on, off, on, ...). See bench/README.md.
#
# Environment (all optional):
#   DUR=5 ROUNDS=3 CLASSES="www mix" MODES="quota light" (also: max)
#   VARIANTS="bulwark-off bulwark-stats"
#   CFS_QUOTA=25000 CFS_PERIOD=100000 DNSPERF_OUTSTANDING=500 LIGHT_QPS=20000
#   SERVER_CPU=1 GEN_CPU=0 BULWARK_BIN NO_BUILD=1 KEEP_WORK=1 OUT
#   QUERIES_METRIC=bulwark_queries_total   the counter read from the scrapes
#   CALLGRIND=0      skips counting instructions per query under callgrind
#   CALLGRIND_QUERIES=20000                 (queries sent to each variant)
set -euo pipefail
[ "$(id -u)" = 0 ] || echo "warning: quota mode needs root (cgroup v1)" >&2

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
DUR=${DUR:-5}
ROUNDS=${ROUNDS:-3}
CLASSES=${CLASSES:-"www mix"}
MODES=${MODES:-"quota light"}
VARIANTS=${VARIANTS:-"bulwark-off bulwark-stats"}
LIGHT_QPS=${LIGHT_QPS:-20000}
CFS_QUOTA=${CFS_QUOTA:-25000}
CFS_PERIOD=${CFS_PERIOD:-100000}
DNSPERF_OUTSTANDING=${DNSPERF_OUTSTANDING:-500}
SERVER_CPU=${SERVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
QUERIES_METRIC=${QUERIES_METRIC:-bulwark_queries_total}
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

WORK=$(mktemp -d /tmp/bench-stats.XXXXXX)
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

# variant_toml VARIANT METRICS_PORT: the tables that make the variant.
variant_toml() {
    case $1 in
    bulwark-off) printf '[statistics]\nenabled = false\n' ;;
    bulwark-stats) printf '[statistics]\nenabled = true\n\n[prometheus]\nlisten = "127.0.0.1:%s"\n' "$2" ;;
    *)
        echo "unknown variant $1" >&2
        return 1
        ;;
    esac
}

# wait_http URL: until the endpoint answers (10 s).
wait_http() {
    local i
    for i in $(seq 1 100); do
        curl -fsS -o /dev/null --max-time 1 "$1" && return 0
        sleep 0.1
    done
    echo "no answer from $1" >&2
    return 1
}

# One row per run: round, the 10 fields of lib/measure.sh, then notes: the
# scraper's progress and the queries counter of its last scrape.
measure() {
    local r=$1 v=$2 class=$3 mode=$4 port=$5 notes= f=$WORK/$2/scrape.txt
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
    if [ -f "$f" ]; then
        notes="scrapes_ok=$(awk '$1 == "scrapes_ok" { print $2 }' "$f")"
        notes+=";scrapes_failed=$(awk '$1 == "scrapes_failed" { print $2 }' "$f")"
        notes+=";scrape_ms_mean=$(awk '$1 == "scrape_ms_mean" { print $2 }' "$f")"
        notes+=";queries=$(metric "$f" "$QUERIES_METRIC")"
    fi
    printf '%s\t%s\t%s\n' "$r" "$(cat "$RESULTS_TSV")" "$notes" >>"$ALL_TSV"
}

for r in $(seq 1 "$ROUNDS"); do
    for v in $VARIANTS; do
        port=$(free_port)
        mport=$(free_port)
        echo "== round $r: $v on 127.0.0.1:$port (CPU $SERVER_CPU)" >&2
        start_bulwark_toml "$port" "$v" "$(variant_toml "$v" "$mport")"
        wait_ready "$port" "$v"
        if [ "$v" = bulwark-stats ]; then
            wait_http "http://127.0.0.1:$mport/metrics"
            start_scraper "http://127.0.0.1:$mport/metrics" "$WORK/$v/scrape.txt"
        fi
        for class in $CLASSES; do
            warm_up "$port" "$class"
            for mode in $MODES; do
                measure "$r" "$v" "$class" "$mode" "$port"
            done
        done
        stop_helpers
        rm -f "$WORK/$v/scrape.txt"
        stop_server "$SERVER_PID"
        SERVER_PID=
    done
done

# Optional: instructions per query under callgrind, for a fixed load of
# CALLGRIND_QUERIES mix queries, counters zeroed after start-up so zone
# loading is not counted.
CG_TXT=
if [ "$CALLGRIND" = 1 ] && command -v valgrind >/dev/null; then
    CG_TXT=$BENCH/results/stats-callgrind-$STAMP.txt
    {
        echo "## Instructions per query (callgrind)"
        echo
        echo "\`valgrind --tool=callgrind\`, counters zeroed once the server answers, then"
        echo "$CALLGRIND_QUERIES \`mix\` queries at 2,000 qps (no quota, no scraper); Ir is"
        echo "every instruction the process ran over the answered queries."
        echo
        echo "| variant | answered | Ir | Ir per query |"
        echo "|---|--:|--:|--:|"
    } >"$CG_TXT"
    for v in $VARIANTS; do
        callgrind_row "$v" "$(variant_toml "$v" "$(free_port)")" >>"$CG_TXT"
    done
    echo >>"$CG_TXT"
fi

cp "$ALL_TSV" "$BENCH/results/stats-$STAMP.tsv"
versions=$WORK/versions.txt
{
    echo "bulwark: $("$BULWARK_BIN" --version 2>&1 | head -1) (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), working tree $(git -C "$ROOT" status --porcelain 2>/dev/null | grep -c . || true) files changed)"
    echo "dnsperf: $(dnsperf -h 2>&1 | grep -i '^version' | head -1)"
    echo "kernel: $(uname -r); CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); $(nproc) CPUs"
} >"$versions"
/usr/bin/python3 "$BENCH/lib/report_variants.py" stats "$ALL_TSV" "$versions" "$OUT" \
    "${BENCH_COMMAND:-DUR=$DUR ROUNDS=$ROUNDS bench/stats.sh}" \
    "DUR=$DUR ROUNDS=$ROUNDS CLASSES=\"$CLASSES\" MODES=\"$MODES\" CFS_QUOTA=$CFS_QUOTA/$CFS_PERIOD LIGHT_QPS=$LIGHT_QPS dnsperf -q $DNSPERF_OUTSTANDING" \
    "$CG_TXT"
echo "report: $OUT; rows: bench/results/stats-$STAMP.tsv" >&2
