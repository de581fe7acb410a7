#!/usr/bin/env bash
# Recursive resolver benchmark: seed 000's resperf protocol on a simulated
# internet in a private network namespace, bulwark side by side with
# Unbound, Knot Resolver, PowerDNS Recursor and BIND (and dnsdist's packet
# cache for cache hits). See bench/README.md.
#
# Workloads: cold (distinct questions, empty cache), warm (cache hits),
# forward (everything to one upstream), and cold-validating: cold on a
# DNSSEC-signed copy of the same internet (lib/siminet.py --sign), every
# resolver validating from its root anchor. Each resolver is first asked
# the internet's dnssec-checks.txt (AD on secure answers, SERVFAIL for a
# bogus zone, ...): one that does not validate is not measured and the run
# ends with an error; one that validates but answers some checks wrongly is
# measured and reported. The authoritative servers switch between the
# unsigned and the signed internet as the workloads need (a restart).
#
# Usage: bench/resolver.sh [--quick]
#
# Environment (all optional; --quick changes the defaults marked *):
#   RESOLVERS="bulwark unbound kresd pdns_recursor named"
#   WORKLOADS="cold warm forward"   add cold-validating to measure DNSSEC
#                             validation (signing 20,000 zones: ~2.5 min)
#   DNSDIST=1                 dnsdist (packet cache) in front of
#   DNSDIST_BACKEND=unbound   this resolver, in the warm workload
#   PASSES=2 *                every resolver and workload this many times;
#                             the tables give medians over the passes
#   RAMP=15 *                 seconds of resperf's ramp (-r), 0 to *_MAX qps
#   SUSTAIN=0                 seconds at *_MAX after the ramp (-c)
#   COLD_MAX=24000 *          highest offered qps, cold cache
#   WARM_MAX=200000 *         highest offered qps, cache hits
#   FORWARD_MAX=40000 *       highest offered qps, forwarding
#   VALIDATING_MAX=$COLD_MAX  highest offered qps, cold-validating
#   INTERVAL=0.5              resperf's plot interval (-i), also the sampling
#   TIMEOUT=3                 seconds before resperf counts a query lost (-t)
#   WARM_NAMES=30000 *        questions primed then asked again (warm)
#   PRIME_QPS=5000            dnsperf rate of the first priming pass (the
#                             second, for what it lost, goes 4 times faster)
#   ZONES=20000 * TLDS=20 HOSTERS=64 HOSTED_SHARE=0.25 ADDRESSES=256
#   NAMES_PER_ZONE=3 AUTH_SERVERS=knot,knot,knot SEED=1   (lib/siminet.py)
#   NSEC3_SHARE=0.5 NSEC3_OPTOUT_SHARE=0 SIGNER=ldns SIGN_JOBS=$(nproc)
#                             the signed internet (cold-validating): the
#                             share of zones with NSEC3 (iterations 0, no
#                             salt), of NSEC3 TLDs with opt-out; ldns or BIND
#                             tools (bind: ~3x slower); zones signed at once
#   CACHE_BYTES=268435456     each resolver's cache
#   CONCURRENCY=10000         client questions in flight per resolver
#   RESOLVER_CPU=1 GEN_CPU=0  the resolver's core; resperf's and the
#                             authoritative servers' core
#   CHECK_NAMES=40            answers checked against the zones after a run
#   PROFILE=1                 after the passes, bulwark once more per workload
#                             under perf record (PERF_FREQ=1999 Hz); the top
#                             symbols (PERF_LIMIT=0.8 %), system calls and
#                             context switches in OUT/profile/
#   PROFILE_RESOLVERS=bulwark the resolvers profiled so (others: to compare)
#   PERF_ARGS=                more for perf record (-g: call graphs; with
#                             KEEP_WORK=1 the perf.data files are kept)
#   NICE=-20                  the whole run's priority, also given to this
#                             session's autogroup (put back at the end): the
#                             cores are shared, and another session's build
#                             would otherwise take half the resolver's core
#                             (NICE=0 to be polite)
#   BULWARK_UDP_WORKERS=threads  bulwark's [server] udp_workers (threads or
#                             runtime: docs/configuration.md)
#   BULWARK_BIN=target/release/bulwark (built unless NO_BUILD=1)
#   OUT=bench/results/resolver-YYYYMMDD   raw files, tables, charts
#                             (--quick: /tmp/resolver-quick-YYYYMMDD)
#   KEEP_WORK=1               keep the temp dir (configs, logs, the internet)
#   SIGNED_NET=DIR            serve the signed internet a kept run left in
#                             DIR (its net-signed/) instead of signing anew
#                             (same SEED and sizes; signatures last 4 weeks)
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
LIB=$BENCH/lib/resolver

QUICK=${QUICK:-0}
for arg in "$@"; do
    case $arg in
    --quick) QUICK=1 ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "unknown argument $arg (try --help)" >&2
        exit 2
        ;;
    esac
done
export QUICK

if [ "$QUICK" = 1 ]; then
    : "${PASSES:=1}" "${RAMP:=5}" "${ZONES:=2000}" "${WARM_NAMES:=5000}"
    : "${COLD_MAX:=12000}" "${WARM_MAX:=100000}" "${FORWARD_MAX:=20000}"
fi
RESOLVERS=${RESOLVERS:-"bulwark unbound kresd pdns_recursor named"}
WORKLOADS=${WORKLOADS:-"cold warm forward"}
DNSDIST=${DNSDIST:-1}
DNSDIST_BACKEND=${DNSDIST_BACKEND:-unbound}
PASSES=${PASSES:-2}
RAMP=${RAMP:-15}
SUSTAIN=${SUSTAIN:-0}
COLD_MAX=${COLD_MAX:-24000}
WARM_MAX=${WARM_MAX:-200000}
FORWARD_MAX=${FORWARD_MAX:-40000}
VALIDATING_MAX=${VALIDATING_MAX:-$COLD_MAX}
INTERVAL=${INTERVAL:-0.5}
TIMEOUT=${TIMEOUT:-3}
WARM_NAMES=${WARM_NAMES:-30000}
PRIME_QPS=${PRIME_QPS:-5000}
ZONES=${ZONES:-20000}
TLDS=${TLDS:-20}
HOSTERS=${HOSTERS:-64}
HOSTED_SHARE=${HOSTED_SHARE:-0.25}
ADDRESSES=${ADDRESSES:-256}
NAMES_PER_ZONE=${NAMES_PER_ZONE:-3}
AUTH_SERVERS=${AUTH_SERVERS:-knot,knot,knot}
SEED=${SEED:-1}
NSEC3_SHARE=${NSEC3_SHARE:-0.5}
NSEC3_OPTOUT_SHARE=${NSEC3_OPTOUT_SHARE:-0}
SIGNER=${SIGNER:-ldns}
SIGN_JOBS=${SIGN_JOBS:-$(nproc)}
CACHE_BYTES=${CACHE_BYTES:-268435456}
CONCURRENCY=${CONCURRENCY:-10000}
RESOLVER_CPU=${RESOLVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
CHECK_NAMES=${CHECK_NAMES:-40}
PROFILE=${PROFILE:-1}
PERF_FREQ=${PERF_FREQ:-1999}
PERF_LIMIT=${PERF_LIMIT:-0.8}
PROFILE_RESOLVERS=${PROFILE_RESOLVERS:-bulwark}
PERF_ARGS=${PERF_ARGS:-}
BULWARK_UDP_WORKERS=${BULWARK_UDP_WORKERS:-threads}
NICE=${NICE:--20}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BULWARK_BIN=${BULWARK_BIN:-$CARGO_TARGET_DIR/release/bulwark}
STAMP=${STAMP:-$(date -u +%Y%m%d)}
# A quick run checks the script; its figures are not worth keeping.
if [ "$QUICK" = 1 ]; then OUT=${OUT:-/tmp/resolver-quick-$STAMP}; fi
OUT=${OUT:-$BENCH/results/resolver-$STAMP}
for wl in $WORKLOADS; do
    case $wl in
    cold | warm | forward | cold-validating) ;;
    *) echo "unknown workload $wl (cold, warm, forward, cold-validating)" >&2; exit 2 ;;
    esac
done
export RESOLVERS WORKLOADS DNSDIST DNSDIST_BACKEND PASSES RAMP SUSTAIN COLD_MAX WARM_MAX \
    VALIDATING_MAX NSEC3_SHARE NSEC3_OPTOUT_SHARE SIGNER SIGN_JOBS \
    FORWARD_MAX INTERVAL TIMEOUT WARM_NAMES PRIME_QPS ZONES TLDS HOSTERS HOSTED_SHARE \
    ADDRESSES NAMES_PER_ZONE AUTH_SERVERS SEED CACHE_BYTES CONCURRENCY RESOLVER_CPU GEN_CPU \
    CHECK_NAMES PROFILE PROFILE_RESOLVERS PERF_ARGS BULWARK_UDP_WORKERS PERF_FREQ PERF_LIMIT BULWARK_BIN STAMP OUT

# Outside the namespace: build, then run this script again in a private
# network namespace (unshare -n: nothing outside can reach it, nothing in it
# reaches out).
if [ -z "${RESOLVER_BENCH_NETNS:-}" ]; then
    [ "$(id -u)" = 0 ] || { echo "resolver.sh needs root (unshare -n, port 53, ip addr)" >&2; exit 1; }
    tools="resperf dnsperf kdig knotd unbound kresd pdns_recursor named dnsdist gnuplot"
    if [[ " $WORKLOADS " == *" cold-validating "* ]]; then
        if [ "$SIGNER" = bind ]; then tools="$tools dnssec-keygen dnssec-signzone"; else tools="$tools ldns-keygen ldns-signzone"; fi
    fi
    for tool in $tools; do
        command -v "$tool" >/dev/null || echo "warning: $tool is not installed" >&2
    done
    if [ -z "${NO_BUILD:-}" ]; then
        echo "building bulwark (release)..." >&2
        (cd "$ROOT" && cargo build --release -p bulwark -q)
    fi
    export RESOLVER_BENCH_COMMAND="bench/resolver.sh $*"
    # At a higher priority than the rest of the machine (NICE), so that
    # others' work on the two cores takes less from the run. With the
    # kernel's autogroups (kernel.sched_autogroup_enabled=1), a process's
    # nice value only ranks it inside its session's group and each session
    # gets an equal share of a core: others' builds, each in a session of
    # its own, would take half the resolver's core whatever its nice value.
    # So the session's group gets the nice value too (/proc/PID/autogroup).
    # It is put back when the run ends.
    group_nice=
    if [ -w /proc/$$/autogroup ]; then
        group_nice=$(sed -n 's/.* nice //p' /proc/$$/autogroup)
        echo "$NICE" >/proc/$$/autogroup 2>/dev/null ||
            echo "warning: could not set this session's autogroup nice to $NICE" >&2
    fi
    rc=0
    RESOLVER_BENCH_NETNS=1 nice -n "$NICE" unshare -n -- bash "$0" "$@" || rc=$?
    [ -n "$group_nice" ] && echo "$group_nice" >/proc/$$/autogroup 2>/dev/null
    exit "$rc"
fi

. "$BENCH/lib/servers.sh"    # server_pids, pin_server, stop_server
. "$BENCH/lib/measure.sh"    # ticks
. "$LIB/resolvers.sh"
CLK_TCK=$(getconf CLK_TCK)

RES_ADDR=127.0.0.2      # the resolver (or dnsdist) under test
BACKEND_ADDR=127.0.0.3  # dnsdist's backend
FWD_ADDR=127.0.0.4      # the upstream that answers every name (forward)

WORK=$(mktemp -d /tmp/bench-resolver.XXXXXX)
# The unsigned internet (cold, warm, forward) and the signed one
# (cold-validating): the same zones, names and addresses for a SEED, the
# signed one with DNSSEC records and three zones for dnssec-checks.txt.
# NET is the one the authoritative servers serve at the moment.
NET_PLAIN=$WORK/net
NET_SIGNED=$WORK/net-signed
NET=
NEED_PLAIN=0
NEED_SIGNED=0
for wl in $WORKLOADS; do
    if [ "$wl" = cold-validating ]; then NEED_SIGNED=1; else NEED_PLAIN=1; fi
done
RAW=$OUT/raw
mkdir -p "$RAW"
# A run this script writes replaces the last one in OUT.
rm -f "$RAW"/*
rm -rf "$OUT/profile"
AUTH_PIDS=()
UPSTREAM_PID=
SERVING=
NOT_VALIDATING=()
DNSSEC_WRONG=()
SIGN_SECONDS=
SERVER_PID=
BACKEND_PID=
SAMPLER_PID=
PERF_PID=
PERFSTAT_PID=
cleanup() {
    local p
    [ -n "$SAMPLER_PID" ] && kill "$SAMPLER_PID" 2>/dev/null
    [ -n "$PERF_PID" ] && kill -INT "$PERF_PID" 2>/dev/null
    [ -n "$PERFSTAT_PID" ] && kill -INT "$PERFSTAT_PID" 2>/dev/null
    [ -n "$SERVER_PID" ] && stop_server "$SERVER_PID"
    [ -n "$BACKEND_PID" ] && stop_server "$BACKEND_PID"
    for p in "${AUTH_PIDS[@]}"; do stop_server "$p"; done
    [ -n "$UPSTREAM_PID" ] && stop_server "$UPSTREAM_PID"
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# --- the simulated internet ---------------------------------------------
siminet() {
    /usr/bin/python3 "$BENCH/lib/siminet.py" --tlds "$TLDS" --zones "$ZONES" \
        --hosters "$HOSTERS" --hosted-share "$HOSTED_SHARE" --addresses "$ADDRESSES" \
        --servers "$AUTH_SERVERS" --names-per-zone "$NAMES_PER_ZONE" --seed "$SEED" "$@"
}
if [ "$NEED_PLAIN" = 1 ]; then
    log "generating the simulated internet ($ZONES zones, $TLDS TLDs, $HOSTERS hosters) in $NET_PLAIN"
    siminet --out "$NET_PLAIN"
    NAMES_DIR=$NET_PLAIN
fi
if [ "$NEED_SIGNED" = 1 ] && [ -n "${SIGNED_NET:-}" ]; then
    # A signed internet an earlier run kept (KEEP_WORK=1): the same SEED
    # and sizes give the same names, so only the signing is skipped.
    [ -f "$SIGNED_NET/names.txt" ] || { echo "SIGNED_NET=$SIGNED_NET holds no signed internet" >&2; exit 2; }
    log "reusing the signed internet in $SIGNED_NET"
    # Its files name the directory it was made in: moved since, they are
    # made to name where it is now.
    made_in=$(awk 'NR == 1 { print $2 }' "$SIGNED_NET/servers.txt" | xargs dirname)
    if [ "$made_in" != "$SIGNED_NET" ]; then
        sed -i "s|$made_in|$SIGNED_NET|g" "$SIGNED_NET"/servers.txt "$SIGNED_NET"/zones.txt \
            "$SIGNED_NET"/server-*.conf
    fi
    NET_SIGNED=$SIGNED_NET
    SIGN_SECONDS=0
    NAMES_DIR=${NAMES_DIR:-$NET_SIGNED}
elif [ "$NEED_SIGNED" = 1 ]; then
    log "generating and signing the simulated internet ($ZONES zones, NSEC3 share $NSEC3_SHARE) in $NET_SIGNED"
    t_sign=$(date +%s)
    siminet --out "$NET_SIGNED" --sign --nsec3-share "$NSEC3_SHARE" \
        --nsec3-optout-share "$NSEC3_OPTOUT_SHARE" --signer "$SIGNER" --sign-jobs "$SIGN_JOBS"
    SIGN_SECONDS=$(($(date +%s) - t_sign))
    NAMES_DIR=${NAMES_DIR:-$NET_SIGNED}
fi
# The questions are the same in both internets.
NAMES=$NAMES_DIR/names.txt
NNAMES=$(wc -l <"$NAMES")
head -n "$WARM_NAMES" "$NAMES" >"$WORK/warm-names.txt"
# Forwarding: the upstream answers every name, so the questions need not
# exist: the internet's, then the same under another label, twice as many
# distinct questions for the ramp.
{ cat "$NAMES"; sed -e 's/^\. /fwd. /;t' -e 's/^/fwd./' "$NAMES"; } >"$WORK/forward-names.txt"

ip link set lo up
{
    for a in $RES_ADDR $BACKEND_ADDR $FWD_ADDR; do echo "addr add $a/32 dev lo"; done
    sed 's|.*|addr add &/32 dev lo|' "$NAMES_DIR/addresses.txt"
} | ip -batch -

# serve_internet DIR: the authoritative servers of the internet in DIR
# (lib/siminet.py's servers.txt), on the generator's core, in place of the
# ones serving now; once every zone answers, NET is DIR.
serve_internet() {
    local dir=$1 kind conf i=0 p
    [ "$SERVING" = "$dir" ] && return 0
    for p in "${AUTH_PIDS[@]}"; do stop_server "$p"; done
    AUTH_PIDS=()
    SERVING=
    while read -r kind conf; do
        case $kind in
        knot) taskset -c "$GEN_CPU" knotd -c "$conf" >"$WORK/auth-$(basename "$dir")-$i.log" 2>&1 & ;;
        nsd) taskset -c "$GEN_CPU" nsd -d -c "$conf" >"$WORK/auth-$(basename "$dir")-$i.log" 2>&1 & ;;
        *) echo "unknown server kind $kind in $dir/servers.txt" >&2; exit 1 ;;
        esac
        AUTH_PIDS+=($!)
        i=$((i + 1))
    done <"$dir/servers.txt"
    log "waiting for every zone of $(basename "$dir") to load"
    local t0
    t0=$(date +%s)
    /usr/bin/python3 "$LIB/dnsq.py" loaded "$dir/zones.txt" 300 || {
        echo "the authoritative servers did not load every zone; their logs:" >&2
        tail -n 5 "$WORK"/auth-"$(basename "$dir")"-*.log >&2
        exit 1
    }
    log "$(basename "$dir") loaded in $(($(date +%s) - t0)) s"
    # knotd moves each UDP worker to CPU (worker id mod CPUs) once it
    # starts: pin them all back onto the generator's core.
    for p in "${AUTH_PIDS[@]}"; do SERVER_CPU=$GEN_CPU pin_server "$p"; done
    AUTH_LIST=$(for p in "${AUTH_PIDS[@]}" $UPSTREAM_PID; do server_pids "$p"; done | paste -sd, -)
    NET=$dir
    SERVING=$dir
}

# The upstream of the forwarding workload (seed 000's INETSIM): one knotd
# with a wildcard at the root, so every name has an A and an AAAA record.
mkdir -p "$WORK/upstream"
cat >"$WORK/upstream/root.zone" <<ZONE
\$TTL 3600
@ SOA ns.upstream. hostmaster.upstream. 1 7200 3600 1209600 300
@ NS ns.upstream.
ns.upstream. A $FWD_ADDR
* A 192.0.2.1
* AAAA 2001:db8::1
ZONE
cat >"$WORK/upstream/knot.conf" <<CONF
server:
    rundir: $WORK/upstream
    listen: $FWD_ADDR@53
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: $WORK/upstream
log:
  - target: stderr
    any: warning
zone:
  - domain: "."
    file: $WORK/upstream/root.zone
    journal-content: none
    zonefile-sync: -1
CONF
taskset -c "$GEN_CPU" knotd -c "$WORK/upstream/knot.conf" >"$WORK/upstream/log" 2>&1 &
UPSTREAM_PID=$!
echo ". 0 $FWD_ADDR $WORK/upstream/root.zone" >"$WORK/upstream/zones.txt"
/usr/bin/python3 "$LIB/dnsq.py" loaded "$WORK/upstream/zones.txt" 30
SERVER_CPU=$GEN_CPU pin_server "$UPSTREAM_PID"

# The internet the first workload needs.
case " $WORKLOADS " in
" cold-validating "*) serve_internet "$NET_SIGNED" ;;
*) serve_internet "$NET_PLAIN" ;;
esac

# The offered rate of a workload, capped so that a cold run never repeats a
# question: resperf's ramp sends MAX * RAMP / 2 queries, then MAX a second.
max_of() {
    local m n=$NNAMES
    case $1 in
    cold) m=$COLD_MAX ;;
    cold-validating) m=$VALIDATING_MAX ;;
    warm) m=$WARM_MAX ;;
    forward) m=$FORWARD_MAX n=$((2 * NNAMES)) ;;
    esac
    if [ "$1" != warm ]; then
        local cap
        cap=$(awk -v n="$n" -v r="$RAMP" -v s="$SUSTAIN" 'BEGIN { printf "%d", 0.95 * n / (r / 2 + s) }')
        if [ "$m" -gt "$cap" ]; then
            echo "note: $1 capped at $cap qps: $NNAMES names for a ${RAMP}s ramp (raise NAMES_PER_ZONE or ZONES)" >&2
            m=$cap
        fi
    fi
    echo "$m"
}

rss_kb() {
    local p s=0
    for p in "$@"; do
        s=$((s + $(awk '/^VmRSS:/ { print $2 }' /proc/"$p"/status 2>/dev/null || echo 0)))
    done
    echo "$s"
}

# wait_answering NAME MODE: until the resolver at RES_ADDR answers (a root
# server's address when recursing, any name when forwarding). Validating,
# with CD: whether it validates is asked next (the DNSSEC checks in run_one).
wait_answering() {
    local name=$1 q=a.root-servers.sim. want i cd=+nocdflag
    want=$(head -1 "$NET/root-hints.txt")
    if [ "$2" = forward ]; then q=ready.tld0.; want=192.0.2.1; fi
    [ "$2" = validate ] && cd=+cdflag
    for i in $(seq 1 150); do
        if kdig +short $cd +time=1 +retry=0 @"$RES_ADDR" "$q" A 2>/dev/null | grep -qx "$want"; then
            return 0
        fi
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.2
    done
    echo "$name did not answer on $RES_ADDR; its log:" >&2
    tail -n 20 "$WORK/run/log" >&2 2>/dev/null
    return 1
}

# run_one WORKLOAD RESOLVER PASS: a fresh resolver, (warm: primed), one
# resperf ramp, CPU and memory around it. Everything lands in $RAW/ID.*.
run_one() {
    local wl=$1 res=$2 pass=$3 mode=recurse id d max data pids t0 t1 before after
    local count_name=$res dnssec_result=
    id=$wl-$res-p$pass
    [ "$wl" = forward ] && mode=forward
    [ "$wl" = cold-validating ] && mode=validate
    if [ "$mode" = validate ]; then serve_internet "$NET_SIGNED"; else serve_internet "$NET_PLAIN"; fi
    max=$(max_of "$wl")
    d=$WORK/run
    rm -rf "$d" "$WORK/backend"
    mkdir -p "$d"
    log "pass $pass/$PASSES, $wl: $res (resolver core $RESOLVER_CPU, up to $max qps)"
    if [ "$res" = dnsdist ]; then
        mkdir -p "$WORK/backend"
        "res_start_$DNSDIST_BACKEND" "$WORK/backend" "$mode" "$BACKEND_ADDR"
        BACKEND_PID=$SERVER_PID
    fi
    "res_start_$res" "$d" "$mode" "$RES_ADDR"
    if ! wait_answering "$res" "$mode"; then
        echo "$res failed to start; skipped" >&2
        echo "failed start" >"$RAW/$id.meta"
        cp "$d/log" "$RAW/$id.log" 2>/dev/null || true
        stop_server "$SERVER_PID"; SERVER_PID=
        [ -n "$BACKEND_PID" ] && { stop_server "$BACKEND_PID"; BACKEND_PID=; }
        return 0
    fi
    if [ "$mode" = validate ]; then
        # Does it validate? Measuring one that does not would compare
        # iteration with validation. A few names outside names.txt (and
        # their zones' keys) are in its cache afterwards.
        local rc=0
        /usr/bin/python3 "$LIB/dnsq.py" dnssec "$RES_ADDR" "$NET/dnssec-checks.txt" >"$RAW/$id.dnssec.txt" 2>&1 || rc=$?
        dnssec_result=$(tail -n 1 "$RAW/$id.dnssec.txt" | sed 's/^dnssec //')
        if [ "$rc" = 0 ]; then
            log "$res validates: $dnssec_result"
        elif [ "$rc" = 1 ]; then
            echo "WARNING: $res validates but answered some DNSSEC checks wrongly ($dnssec_result):" >&2
            grep -v '^ok ' "$RAW/$id.dnssec.txt" | sed 's/^/    /' >&2
            DNSSEC_WRONG+=("$id")
        else
            echo "ERROR: $res DOES NOT VALIDATE ($dnssec_result); not measured:" >&2
            sed 's/^/    /' "$RAW/$id.dnssec.txt" >&2
            echo "failed dnssec: $dnssec_result" >"$RAW/$id.meta"
            cp "$d/log" "$RAW/$id.log" 2>/dev/null || true
            NOT_VALIDATING+=("$id")
            stop_server "$SERVER_PID"; SERVER_PID=
            return 0
        fi
    fi
    SERVER_CPU=$RESOLVER_CPU pin_server "$SERVER_PID"
    pids=$(server_pids "$SERVER_PID")
    if [ -n "$BACKEND_PID" ]; then
        SERVER_CPU=$RESOLVER_CPU pin_server "$BACKEND_PID"
        pids="$pids $(server_pids "$BACKEND_PID")"
    fi
    {
        echo "workload $wl"
        echo "resolver $res"
        echo "pass $pass"
        echo "max_qps $max"
        echo "ramp $RAMP"
        echo "sustain $SUSTAIN"
        echo "interval $INTERVAL"
        echo "clk_tck $CLK_TCK"
        echo "rss_start_kb $(rss_kb $pids)"
        echo "rrsets_start $("res_count_$count_name" "$d")"
        [ "$res" = dnsdist ] && echo "backend $DNSDIST_BACKEND"
        [ -n "$dnssec_result" ] && echo "dnssec $dnssec_result"
    } >"$RAW/$id.meta"

    data=$NAMES
    [ "$wl" = forward ] && data=$WORK/forward-names.txt
    local reopen=()
    if [ "$wl" = warm ]; then
        # Prime: every question once at a rate all resolvers keep up with,
        # then once more for what the first pass lost; then the same
        # questions again and again under resperf (-R), all cache hits.
        data=$WORK/warm-names.txt
        reopen=(-R)
        local k rate=$PRIME_QPS
        for k in 1 2; do
            taskset -c "$GEN_CPU" dnsperf -s "$RES_ADDR" -d "$data" -n 1 -Q "$rate" \
                -t "$TIMEOUT" -q 2000 >"$RAW/$id.prime$k.txt" 2>&1 || true
            rate=$((PRIME_QPS * 4))
        done
        sleep 1
        {
            echo "rss_primed_kb $(rss_kb $pids)"
            echo "rrsets_primed $("res_count_$count_name" "$d")"
        } >>"$RAW/$id.meta"
    fi

    # The run: resperf on the generator's core, sampled beside it (the
    # resolver's CPU and RSS, the authoritative servers', resperf's own, and
    # both cores' load, every INTERVAL).
    # resperf ends the run when it falls this far behind its schedule:
    # 50 ms of the highest rate (its default, 1000 queries, is 10 ms at
    # 100k qps: one scheduling hiccup).
    local behind=$((max / 20 > 1000 ? max / 20 : 1000))
    echo "drops_before $(/usr/bin/python3 "$LIB/dnsq.py" drops "$RES_ADDR,$BACKEND_ADDR")" >>"$RAW/$id.meta"
    before=$(ticks $pids)
    t0=$(date +%s.%N)
    taskset -c "$GEN_CPU" resperf -s "$RES_ADDR" -d "$data" "${reopen[@]}" \
        -m "$max" -r "$RAMP" -c "$SUSTAIN" -i "$INTERVAL" -t "$TIMEOUT" -b 2048 -F "$behind" \
        -P "$RAW/$id.plot" >"$RAW/$id.resperf.txt" 2>&1 &
    local rp=$!
    if [ -n "${PROFILING:-}" ]; then
        # Where the resolver's time goes over the ramp: perf samples on its
        # threads (perf itself on the generator's core).
        taskset -c "$GEN_CPU" perf record -F "$PERF_FREQ" $PERF_ARGS -o "$WORK/perf.data" \
            -p "$(echo $pids | tr ' ' ,)" >"$WORK/perf.log" 2>&1 &
        PERF_PID=$!
        # What the resolver asks of the kernel: system calls by name and
        # context switches, to set beside its answers.
        taskset -c "$GEN_CPU" perf stat -e 'syscalls:sys_enter_*,context-switches' -x, \
            -o "$WORK/perfstat.csv" -p "$(echo $pids | tr ' ' ,)" >/dev/null 2>&1 &
        PERFSTAT_PID=$!
    fi
    # The sampler on the generator's core, out of the resolver's way.
    taskset -c "$GEN_CPU" /usr/bin/python3 "$LIB/sample.py" "$RAW/$id.samples.tsv" "$INTERVAL" \
        "resolver=$(echo $pids | tr ' ' ,)" "auth=$AUTH_LIST" "resperf=$rp" &
    SAMPLER_PID=$!
    wait "$rp" || true
    t1=$(date +%s.%N)
    if [ -n "$PERF_PID" ]; then
        kill -INT "$PERF_PID" 2>/dev/null || true
        wait "$PERF_PID" 2>/dev/null || true
        PERF_PID=
        {
            echo "# perf record -F $PERF_FREQ of $res's threads over the $wl ramp (0 to $max qps);"
            echo "# self time by shared object and symbol, [k] the kernel, [.] user space"
            perf report -i "$WORK/perf.data" --stdio --no-children --sort dso,sym \
                --percent-limit "$PERF_LIMIT" 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 60 || true
            echo "# by thread"
            perf report -i "$WORK/perf.data" --stdio --no-children --sort comm \
                --percent-limit 1 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 12 || true
            echo "# by shared object"
            perf report -i "$WORK/perf.data" --stdio --no-children --sort dso \
                --percent-limit 1 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 12 || true
        } >"$RAW/$id.perf.txt"
        kill -INT "$PERFSTAT_PID" 2>/dev/null || true
        wait "$PERFSTAT_PID" 2>/dev/null || true
        PERFSTAT_PID=
        {
            echo "# perf stat of $res's threads over the $wl ramp: system calls and context switches"
            awk -F, '$1 ~ /^[0-9]+$/ && $1 > 0 { sub(/^syscalls:sys_enter_/, "", $3); print $1, $3 }' \
                "$WORK/perfstat.csv" 2>/dev/null | sort -rn | head -n 30 || true
        } >"$RAW/$id.syscalls.txt"
        if [ -n "${KEEP_WORK:-}" ]; then
            mv "$WORK/perf.data" "$WORK/$id.perf.data"   # for perf annotate
        else
            rm -f "$WORK/perf.data"
        fi
    fi
    after=$(ticks $pids)
    kill "$SAMPLER_PID" 2>/dev/null || true
    wait "$SAMPLER_PID" 2>/dev/null || true
    SAMPLER_PID=
    {
        echo "t0 $t0"
        echo "t1 $t1"
        echo "ticks_before $before"
        echo "ticks_after $after"
        echo "drops_after $(/usr/bin/python3 "$LIB/dnsq.py" drops "$RES_ADDR,$BACKEND_ADDR")"
        echo "alive $(kill -0 "$SERVER_PID" 2>/dev/null && echo yes || echo no)"
        echo "rss_end_kb $(rss_kb $pids)"
        echo "rrsets_end $("res_count_$count_name" "$d")"
        # resperf warns once per response whose ID it no longer waits for
        # (answered after its timeout, or answered twice): counted here,
        # and the warnings cut from its output (they run to megabytes).
        echo "unexpected_ids $(grep -c 'unexpected id' "$RAW/$id.resperf.txt" || true)"
    } >>"$RAW/$id.meta"
    sed -i '/unexpected id/d' "$RAW/$id.resperf.txt"
    # The resolver's own account of the run (drops, limits, timeouts).
    "res_stats_$res" "$d" >"$RAW/$id.stats.txt" 2>&1 || true
    if [ "$res" = dnsdist ]; then
        { echo "# backend $DNSDIST_BACKEND"; "res_stats_$DNSDIST_BACKEND" "$WORK/backend"; } \
            >>"$RAW/$id.stats.txt" 2>&1 || true
    fi
    # Are the answers right? A sample of the run's questions against the
    # zones' own servers, once the load is off: TIMEOUT seconds after the
    # ramp, so that a resolver still working through its backlog (or
    # holding a failure for a second, as named's servfail-ttl does) is
    # asked once it has caught up.
    if [ "$CHECK_NAMES" -gt 0 ] && [ "$wl" != forward ]; then
        sleep "$TIMEOUT"
        local sent
        sent=$(sed -n 's/^ *Queries sent: *//p' "$RAW/$id.resperf.txt")
        head -n "${sent:-$CHECK_NAMES}" "$data" >"$WORK/sent.txt"
        # Validating: asked with AD, the answers without it counted.
        /usr/bin/python3 "$LIB/dnsq.py" check "$RES_ADDR" "$WORK/sent.txt" "$NET/zones.txt" \
            "$CHECK_NAMES" "$pass" $([ "$mode" = validate ] && echo ad) >"$RAW/$id.check.txt" 2>&1 || true
        echo "check $(tail -n 1 "$RAW/$id.check.txt")" >>"$RAW/$id.meta"
    fi
    grep -h 'Queries sent\|Queries lost\|Response codes\|Maximum throughput\|Fell behind\|Reached' \
        "$RAW/$id.resperf.txt" | sed 's/^ */    /' >&2 || true
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "$res is no longer running after the run; its log:" >&2
        tail -n 20 "$d/log" >&2
    fi
    # The resolver's log: whole when small, else its first and last lines
    # and a count of its lines by message (named logs every lame server).
    if [ -f "$d/log" ] && [ "$(wc -c <"$d/log")" -gt 16384 ]; then
        {
            echo "# $(wc -l <"$d/log") lines; the first 20, the last 20, then the commonest messages"
            head -n 20 "$d/log"
            echo "..."
            tail -n 20 "$d/log"
            echo "# commonest messages (numbers and timestamps elided)"
            # head closes the pipe early: not a failure (pipefail would say so).
            cut -c25- "$d/log" | sed -E 's/[0-9]+/N/g' | sort | uniq -c | sort -rn | head -n 15 || true
        } >"$RAW/$id.log"
    else
        cp "$d/log" "$RAW/$id.log" 2>/dev/null || true
    fi
    stop_server "$SERVER_PID"
    SERVER_PID=
    if [ -n "$BACKEND_PID" ]; then
        stop_server "$BACKEND_PID"
        BACKEND_PID=
    fi
}

START=$(date +%s)
for pass in $(seq 1 "$PASSES"); do
    for wl in $WORKLOADS; do
        list=$RESOLVERS
        [ "$wl" = warm ] && [ "$DNSDIST" = 1 ] && list="$list dnsdist"
        for res in $list; do
            run_one "$wl" "$res" "$pass"
        done
    done
done
# Profiles: bulwark once more per workload under perf record, outside the
# measured passes (perf's sampling costs the resolver a little), kept in
# OUT/profile/ beside the raw files.
if [ "$PROFILE" = 1 ] && command -v perf >/dev/null; then
    MEASURED_RAW=$RAW
    RAW=$OUT/profile
    mkdir -p "$RAW"
    for wl in $WORKLOADS; do
        for res in $PROFILE_RESOLVERS; do
            [[ " $RESOLVERS " == *" $res "* ]] && PROFILING=1 run_one "$wl" "$res" profile
        done
    done
    RAW=$MEASURED_RAW
fi
log "measured in $(($(date +%s) - START)) s; writing the report"

{
    echo "bulwark: $("$BULWARK_BIN" --version 2>&1 | head -1) (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD -- crates 2>/dev/null || echo ', with uncommitted changes'))"
    echo "unbound: $(unbound -V 2>&1 | sed -n 's/^Version //p' | head -1)"
    echo "kresd: $(kresd --version 2>&1 | head -1)"
    echo "pdns_recursor: $(pdns_recursor --version 2>&1 | grep -o 'PowerDNS Recursor [^ ]*' | head -1)"
    echo "named: $(named -v 2>&1 | head -1)"
    echo "dnsdist: $(dnsdist --version 2>&1 | head -1)"
    echo "knotd (authoritative): $(knotd --version 2>&1 | head -1)"
    echo "resperf: $(resperf -h 2>&1 | grep -i '^version' | head -1)"
    echo "kernel: $(uname -r); CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); $(nproc) CPUs"
} >"$RAW/versions.txt"
cat >"$RAW/settings.txt" <<SET
command ${RESOLVER_BENCH_COMMAND:-bench/resolver.sh}
passes $PASSES
ramp $RAMP
sustain $SUSTAIN
interval $INTERVAL
timeout $TIMEOUT
cold_max $(max_of cold 2>/dev/null)
validating_max $(max_of cold-validating 2>/dev/null)
signed $NEED_SIGNED
nsec3_share $NSEC3_SHARE
nsec3_optout_share $NSEC3_OPTOUT_SHARE
signer $SIGNER
sign_jobs $SIGN_JOBS
sign_seconds $SIGN_SECONDS
warm_max $WARM_MAX
forward_max $(max_of forward 2>/dev/null)
warm_names $WARM_NAMES
prime_qps $PRIME_QPS
names $NNAMES
zones $ZONES
tlds $TLDS
hosters $HOSTERS
hosted_share $HOSTED_SHARE
addresses $ADDRESSES
auth_servers $AUTH_SERVERS
cache_bytes $CACHE_BYTES
concurrency $CONCURRENCY
resolver_cpu $RESOLVER_CPU
gen_cpu $GEN_CPU
nice $NICE
dnsdist_backend $DNSDIST_BACKEND
loadavg $(cut -d' ' -f1-3 /proc/loadavg)
seconds $(($(date +%s) - START))
finished $(date -u '+%Y-%m-%d %H:%M UTC')
SET
/usr/bin/python3 "$LIB/report.py" "$OUT"
echo "report: $OUT/report.md; charts: $OUT/*.png; raw: $RAW" >&2
if [ "${#DNSSEC_WRONG[@]}" -gt 0 ]; then
    echo "WARNING: validating, but some DNSSEC checks answered wrongly: ${DNSSEC_WRONG[*]} (see ID.dnssec.txt in $OUT/raw or $OUT/profile)" >&2
fi
if [ "${#NOT_VALIDATING[@]}" -gt 0 ]; then
    echo "ERROR: no validation, so not measured in cold-validating: ${NOT_VALIDATING[*]} (see ID.dnssec.txt in $OUT/raw or $OUT/profile)" >&2
    exit 1
fi
