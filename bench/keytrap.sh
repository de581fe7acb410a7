#!/usr/bin/env bash
# KeyTrap (CVE-2023-50387) and NSEC3 iterations (RFC 9276): the CPU one
# question costs a validating resolver when every question makes it
# validate again. bulwark side by side with Unbound and Knot Resolver, each
# on one core. See bench/README.md.
#
# Usage: bench/keytrap.sh
#
# Environment (all optional):
#   RESOLVERS="bulwark unbound kresd"   (one not installed is skipped)
#   WORKLOADS="keytrap nsec3-2500 nsec3-151 clean"
#                             keytrap: RANDOM.keytrap.test. A, a wildcard
#                             with 64 garbage RRSIGs over 64 keys of one tag
#                             (SERVFAIL); nsec3-2500 / nsec3-151: RANDOM.
#                             nsec3-2500.test. / nsec3-151.test. A (NXDOMAIN,
#                             insecure); clean: RANDOM.clean.keytrap.test. A,
#                             a wildcard with its real signature (secure)
#   QUERIES=2000              distinct names per resolver and workload
#   WINDOW=8                  questions outstanding at once
#   TIMEOUT=5                 seconds before a question counts as lost
#   DEADLINE=60               seconds a run may go on sending; CPU is per
#                             answer, so a resolver that is slower than
#                             that is still measured, on fewer questions
#   KEYS=64 SIGS=64           colliding keys, garbage signatures
#   RESOLVER_CPU=1 GEN_CPU=0  the resolver's core; the client's and NSD's
#   NICE=-20                  the run's priority (root only; NICE=0 to be polite)
#   BULWARK_BIN=target/release/bulwark (built unless NO_BUILD=1)
#   OUT=DIR                   also write DIR/keytrap-YYYYMMDD.tsv and .txt
#   KEEP_WORK=1               keep the temp dir (zones, configs, logs)
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")

case "${1:-}" in
-h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
"") ;;
*)
    echo "unknown argument $1 (try --help)" >&2
    exit 2
    ;;
esac

RESOLVERS=${RESOLVERS:-"bulwark unbound kresd"}
WORKLOADS=${WORKLOADS:-"keytrap nsec3-2500 nsec3-151 clean"}
QUERIES=${QUERIES:-2000}
WINDOW=${WINDOW:-8}
TIMEOUT=${TIMEOUT:-5}
DEADLINE=${DEADLINE:-60}
KEYS=${KEYS:-64}
SIGS=${SIGS:-64}
RESOLVER_CPU=${RESOLVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
NICE=${NICE:--20}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BULWARK_BIN=${BULWARK_BIN:-$CARGO_TARGET_DIR/release/bulwark}
STAMP=${STAMP:-$(date -u +%Y%m%d)}
OUT=${OUT:-}
export RESOLVERS WORKLOADS QUERIES WINDOW TIMEOUT DEADLINE KEYS SIGS RESOLVER_CPU GEN_CPU \
    BULWARK_BIN STAMP OUT

# Outside: build, then (as root) run again in a private network namespace,
# so that nothing reaches out (kresd would ask the real root servers for
# its priming and time-skew checks).
if [ -z "${KEYTRAP_BENCH_NETNS:-}" ]; then
    for tool in nsd unbound kresd dnssec-keygen dnssec-signzone dnssec-dsfromkey ldns-signzone taskset; do
        command -v "$tool" >/dev/null || echo "warning: $tool is not installed" >&2
    done
    /usr/bin/python3 -c 'import cryptography' 2>/dev/null ||
        { echo "keytrap.sh needs python3-cryptography (the colliding keys)" >&2; exit 1; }
    if [ -z "${NO_BUILD:-}" ]; then
        echo "building bulwark (release)..." >&2
        (cd "$ROOT" && cargo build --release -p bulwark -q)
    fi
    export KEYTRAP_BENCH_COMMAND="bench/keytrap.sh $*"
    if [ "$(id -u)" = 0 ]; then
        KEYTRAP_BENCH_NETNS=1 nice -n "$NICE" unshare -n -- bash "$0" "$@"
        exit
    fi
    echo "not root: running on the machine's loopback, without a namespace" >&2
    KEYTRAP_BENCH_NETNS=0 bash "$0" "$@"
    exit
fi
if [ "$KEYTRAP_BENCH_NETNS" = 1 ]; then
    ip link set lo up
fi

. "$BENCH/lib/servers.sh" # server_pids, pin_server, stop_server, free_port
. "$BENCH/lib/measure.sh" # ticks
CLK_TCK=$(getconf CLK_TCK)
SERVER_CPU=$RESOLVER_CPU # for pin_server
KT=$BENCH/lib/keytrap.py

WORK=$(mktemp -d /tmp/bench-keytrap.XXXXXX)
NSD_PID=
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && stop_server "$SERVER_PID"
    [ -n "$NSD_PID" ] && stop_server "$NSD_PID"
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# --- the zones and their server ------------------------------------------
log "making the zones in $WORK/zones"
/usr/bin/python3 "$KT" zones "$WORK/zones" "$KEYS" "$SIGS"
ZONES="keytrap.test. nsec3-2500.test. nsec3-151.test."
mapfile -t ANCHORS <"$WORK/zones/anchors.txt"

NSD_PORT=$(free_port)
mkdir -p "$WORK/nsd"
{
    cat <<CONF
server:
    ip-address: 127.0.0.1@$NSD_PORT
    server-count: 1
    do-ip6: no
    username: ""
    chroot: ""
    zonesdir: "$WORK/nsd"
    pidfile: "$WORK/nsd/nsd.pid"
    xfrdfile: "$WORK/nsd/xfrd.state"
    zonelistfile: "$WORK/nsd/zone.list"
    database: ""
    logfile: "$WORK/nsd/nsd.log"
    verbosity: 0
    zonefiles-write: 0
    # Debian builds NSD with RRL on: off, or it drops the resolvers' queries.
    rrl-ratelimit: 0
    rrl-whitelist-ratelimit: 0
remote-control:
    control-enable: no
CONF
    for z in $ZONES; do
        printf 'zone:\n    name: "%s"\n    zonefile: "%s"\n' "$z" "$WORK/zones/${z%.}.signed"
    done
} >"$WORK/nsd/nsd.conf"
taskset -c "$GEN_CPU" nsd -d -c "$WORK/nsd/nsd.conf" >"$WORK/nsd/log" 2>&1 &
NSD_PID=$!
for z in $ZONES; do
    /usr/bin/python3 "$KT" ready 127.0.0.1 "$NSD_PORT" "$z" SOA 30 ||
        { cat "$WORK/nsd/log" "$WORK/nsd/nsd.log" >&2; exit 1; }
done
log "nsd serves $ZONES on 127.0.0.1@$NSD_PORT"

# --- the resolvers -------------------------------------------------------
# start_NAME DIR PORT: configuration into DIR, the resolver on
# 127.0.0.1:PORT pinned to RESOLVER_CPU with one worker, validating with
# each zone's DS as its trust anchor and reaching the zones at NSD as stub
# zones (kresd: forwarding, its STUB does not validate). Sets SERVER_PID.
start_bulwark() {
    local d=$1 port=$2 z a
    {
        echo "[server]"
        echo "listen = [\"127.0.0.1:$port\"]"
        echo "[resolver]"
        echo "root_hints = [\"127.0.0.1:9\"]"
        echo "query_localhost = true"
        echo "dnssec_validation = true"
        echo "key_tag_signaling = false"
        printf 'trust_anchors = ['
        for a in "${ANCHORS[@]}"; do printf '"%s", ' "$a"; done
        echo "]"
        for z in $ZONES; do
            printf '[[resolver.stub]]\nzone = "%s"\naddresses = ["127.0.0.1:%s"]\n' "$z" "$NSD_PORT"
        done
    } >"$d/bulwark.toml"
    taskset -c "$RESOLVER_CPU" "$BULWARK_BIN" serve -c "$d/bulwark.toml" --threads 1 \
        --log-level warn >"$d/log" 2>&1 &
    SERVER_PID=$!
}

start_unbound() {
    local d=$1 port=$2 z a
    {
        cat <<CONF
server:
    interface: 127.0.0.1
    port: $port
    access-control: 127.0.0.0/8 allow
    do-not-query-localhost: no
    do-ip6: no
    module-config: "validator iterator"
    local-zone: "test." nodefault
    num-threads: 1
    so-reuseport: no
    chroot: ""
    username: ""
    directory: "$d"
    pidfile: ""
    use-syslog: no
    logfile: "$d/unbound.log"
    verbosity: 0
CONF
        for a in "${ANCHORS[@]}"; do echo "    trust-anchor: \"$a\""; done
        printf 'remote-control:\n    control-enable: no\n'
        for z in $ZONES; do
            printf 'stub-zone:\n    name: "%s"\n    stub-addr: 127.0.0.1@%s\n' "$z" "$NSD_PORT"
        done
    } >"$d/unbound.conf"
    taskset -c "$RESOLVER_CPU" unbound -d -c "$d/unbound.conf" >"$d/log" 2>&1 &
    SERVER_PID=$!
}

start_kresd() {
    local d=$1 port=$2 z a names=""
    for z in $ZONES; do names="$names todname('$z'),"; done
    {
        echo "net.ipv6 = false"
        echo "net.listen('127.0.0.1', $port, { kind = 'dns' })"
        echo "trust_anchors.remove('.')"
        # Nothing that would ask the real root (outside a namespace).
        echo "modules.unload('priming')"
        echo "modules.unload('detect_time_skew')"
        echo "modules.unload('ta_signal_query')"
        for a in "${ANCHORS[@]}"; do echo "trust_anchors.add('$a')"; done
        echo "cache.open(256 * MB, 'lmdb://$d/cache')"
        echo "policy.add(policy.all(policy.FLAGS({'ALLOW_LOCAL'})))"
        echo "policy.add(policy.suffix(policy.FORWARD('127.0.0.1@$NSD_PORT'), {$names}))"
    } >"$d/config"
    taskset -c "$RESOLVER_CPU" kresd -n -c "$d/config" "$d" >"$d/log" 2>&1 </dev/null &
    SERVER_PID=$!
}

version_of() {
    case $1 in
    bulwark) "$BULWARK_BIN" --version 2>&1 | head -1 ;;
    unbound) unbound -V 2>&1 | head -1 ;;
    kresd) kresd --version 2>&1 | head -1 ;;
    esac
}

# The names each workload asks under.
suffix_of() {
    case $1 in
    keytrap) echo keytrap.test. ;;
    nsec3-2500) echo nsec3-2500.test. ;;
    nsec3-151) echo nsec3-151.test. ;;
    clean) echo clean.keytrap.test. ;;
    *) echo "unknown workload $1" >&2; exit 2 ;;
    esac
}
TSV=$WORK/results.tsv
: >"$TSV"
for res in $RESOLVERS; do
    if [ "$res" = kresd ] && ! command -v kresd >/dev/null; then
        log "kresd is not installed: skipped"
        continue
    fi
    d=$WORK/$res
    mkdir -p "$d"
    port=$(free_port)
    "start_$res" "$d" "$port"
    if ! /usr/bin/python3 "$KT" ready 127.0.0.1 "$port" good.keytrap.test. A 30; then
        cat "$d/log" >&2
        exit 1
    fi
    pin_server "$SERVER_PID"
    # Prime: each zone's DNSKEY RRset validated and cached before measuring.
    for q in good.keytrap.test. www.nsec3-2500.test. www.nsec3-151.test.; do
        /usr/bin/python3 "$KT" ready 127.0.0.1 "$port" "$q" A 10 || true
    done
    log "$res ($(version_of "$res")) on 127.0.0.1:$port, CPU $RESOLVER_CPU"
    for wl in $WORKLOADS; do
        pids=$(server_pids "$SERVER_PID")
        before=$(ticks $pids)
        line=$(taskset -c "$GEN_CPU" /usr/bin/python3 "$KT" ask 127.0.0.1 "$port" "$(suffix_of "$wl")" \
            "$QUERIES" "$WINDOW" "$TIMEOUT" "$DEADLINE")
        after=$(ticks $pids)
        printf '%s\t%s\t%s\t%s\t%s\n' "$res" "$wl" "$before" "$after" "$line" >>"$TSV"
        log "  $wl: $line"
    done
    stop_server "$SERVER_PID"
    SERVER_PID=
done

# --- the report -----------------------------------------------------------
REPORT=$WORK/report.txt
{
    echo "bench/keytrap.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs"
    echo "command: ${KEYTRAP_BENCH_COMMAND:-bench/keytrap.sh} (QUERIES=$QUERIES WINDOW=$WINDOW" \
        "TIMEOUT=$TIMEOUT DEADLINE=$DEADLINE KEYS=$KEYS SIGS=$SIGS, resolver on CPU $RESOLVER_CPU," \
        "client and NSD on CPU $GEN_CPU, network namespace: $([ "$KEYTRAP_BENCH_NETNS" = 1 ] && echo yes || echo no))"
    for res in $RESOLVERS; do
        [ -d "$WORK/$res" ] && echo "  $res: $(version_of "$res")"
    done
    echo "  nsd: $(nsd -v 2>&1 | head -1)"
    echo "  zones: $(sed -n 's/^/keytrap.test. tag /p' "$WORK/zones/keytrap.tag"), $KEYS keys share it," \
        "$SIGS garbage RRSIGs per poisoned RRset"
    echo
    /usr/bin/python3 - "$TSV" "$CLK_TCK" "$WORKLOADS" <<'PY'
import sys
path, hz, workloads = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
# The answers that are right: keytrap SERVFAIL, clean NOERROR with AD,
# nsec3-* NXDOMAIN without AD.
right_of = {
    "keytrap": lambda f: int(f["servfail"]),
    "clean": lambda f: int(f["noerror_ad"]),
    "nsec3-2500": lambda f: int(f["nxdomain"]) - int(f["nxdomain_ad"]),
    "nsec3-151": lambda f: int(f["nxdomain"]) - int(f["nxdomain_ad"]),
}
rows, cpu = [], {}
for line in open(path):
    res, wl, before, after, kv = line.rstrip("\n").split("\t")
    b, a = list(map(int, before.split())), list(map(int, after.split()))
    f = dict(x.split("=") for x in kv.split())
    n = int(f["answered"])
    us = lambda t: t * 1e6 / hz / n if n else float("nan")
    user, system = us(a[0] - b[0]), us(a[1] - b[1])
    cpu[(res, wl)] = user + system
    right = right_of[wl](f)
    rows.append((res, wl, f["sent"], f["answered"], f["lost"], f"{right}/{n}", f["wall_s"],
                 f["p50_ms"], f["p99_ms"], f["max_ms"], f"{user:.1f}", f"{system:.1f}",
                 f"{user + system:.1f}"))
head = ("resolver", "workload", "sent", "answered", "lost", "right", "wall s", "p50 ms",
        "p99 ms", "max ms", "user µs/q", "sys µs/q", "CPU µs/q")
w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
for r in [head] + rows:
    print("  ".join(str(c).rjust(w[i]) if i > 1 else str(c).ljust(w[i]) for i, c in enumerate(r)))
print()
print("right: answers as RFC 4035 / RFC 9276 say (keytrap SERVFAIL, clean NOERROR with AD,")
print("nsec3-* NXDOMAIN without AD); CPU: the resolver's utime + stime over the run / answers.")
peers = sorted({r for r, _ in cpu} - {"bulwark"})
if "bulwark" in {r for r, _ in cpu} and peers:
    print()
    print("CPU per question, bulwark / peer:")
    for wl in workloads:
        cells = []
        for p in peers:
            if (p, wl) in cpu and ("bulwark", wl) in cpu and cpu[(p, wl)] > 0:
                cells.append(f"{p} {cpu[('bulwark', wl)] / cpu[(p, wl)]:.2f}")
        print(f"  {wl:<11} " + ", ".join(cells))
PY
} >"$REPORT"
cat "$REPORT"
if [ -n "$OUT" ]; then
    mkdir -p "$OUT"
    cp "$TSV" "$OUT/keytrap-$STAMP.tsv"
    cp "$REPORT" "$OUT/keytrap-$STAMP.txt"
    log "written: $OUT/keytrap-$STAMP.tsv, $OUT/keytrap-$STAMP.txt"
fi
