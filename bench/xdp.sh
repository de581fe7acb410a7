#!/usr/bin/env bash
# The AF_XDP benchmark (issue 26): bulwark over AF_XDP against knotd's XDP
# mode, bulwark's own socket path, and the socket paths of knotd and NSD
# under a quarter-core quota, all on traffic shaped like the internet. See
# bench/README.md.
#
# The network: two namespaces this script makes (bwx-srv-PID, bwx-gen-PID)
# joined by a veth pair (xs on the server side, 10.99.0.1/16; xg on the
# generator side). The generator is kxdpgun (Debian's knot-dnsutils), itself
# on AF_XDP, pinned to GEN_CPU; it sends each query from one of FLOW_NET's
# addresses (1022 by default) and a port from 2000-65535, so the server sees
# thousands of flows. Each server runs alone, pinned to SERVER_CPU (every
# thread, checked), on the same zone: genzone.py's with NAMES hosts (A and
# AAAA each, 1,000,000 records at the default), signed with NSEC3 by
# `bulwark sign` unless SIGNED=0.
#
# Modes (MODES):
#   xdp     bulwark with [[xdp]] and knotd with `xdp: listen`, unlimited load
#   socket  bulwark's socket path under the same load: the base of the
#           "AF_XDP ≥ 3× our socket path" target
#   quota   the socket paths of bulwark, knotd and NSD, each held to
#           CFS_QUOTA/CFS_PERIOD of a core (cgroup v1), unlimited load
# Query streams (CLASSES):
#   www www-do nx-do mix   as bench/auth.sh (one name; the 100,000-query mix)
#   distinct   every host's A and AAAA once, in random order (1,000,000)
#   water      1,000,000 random names that do not exist
#   nsec3-do   500,000 random names that do not exist, with DO (NSEC3 proofs)
#
# Environment (all optional): DUR=5 ROUNDS=1 NAMES=500000 SIGNED=1
#   GEN_QPS=2000000 SERVER_CPU=1 GEN_CPU=0 CFS_QUOTA=25000 CFS_PERIOD=100000
#   FLOW_NET=10.99.4.0/22 MODES="xdp socket quota"
#   XDP_SERVERS="bulwark-xdp knotd-xdp"  (the xdp mode's servers)
#   CLASSES="www www-do nx-do mix distinct water nsec3-do"
#   OUT=bench/RESULTS.md   BULWARK_BIN (built unless NO_BUILD=1)
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "bench/xdp.sh needs root (namespaces, XDP, cgroups)" >&2; exit 1; }

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
DUR=${DUR:-5}
ROUNDS=${ROUNDS:-1}
NAMES=${NAMES:-500000}
SIGNED=${SIGNED:-1}
GEN_QPS=${GEN_QPS:-2000000}
SERVER_CPU=${SERVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
CFS_QUOTA=${CFS_QUOTA:-25000}
CFS_PERIOD=${CFS_PERIOD:-100000}
FLOW_NET=${FLOW_NET:-10.99.4.0/22}
MODES=${MODES:-"xdp socket quota"}
CLASSES=${CLASSES:-"www www-do nx-do mix distinct water nsec3-do"}
ORIGIN=bench.test.
CLK_TCK=$(getconf CLK_TCK)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BULWARK_BIN=${BULWARK_BIN:-$CARGO_TARGET_DIR/release/bulwark}
OUT=${OUT:-$BENCH/RESULTS.md}
STAMP=$(date -u +%Y%m%d)
ROWS=${ROWS:-$BENCH/results/xdp-$STAMP.tsv}
SRV=bwx-srv-$$
GEN=bwx-gen-$$
SERVER_ADDR=10.99.0.1

. "$BENCH/lib/servers.sh"
. "$BENCH/lib/measure.sh"

WORK=$(mktemp -d /tmp/bench-xdp.XXXXXX)
SERVER_PID=
cleanup() {
    if [ -n "$SERVER_PID" ]; then stop_server "$SERVER_PID"; fi
    quota_off xdp
    ip netns del "$SRV" 2>/dev/null || true
    ip netns del "$GEN" 2>/dev/null || true
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in kxdpgun knotd nsd ip; do
    command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
if [ -z "${NO_BUILD:-}" ]; then
    echo "building bulwark (release)..." >&2
    (cd "$ROOT" && cargo build --release -p bulwark -q)
fi

# --- the zone and the query streams -----------------------------------------
echo "generating the zone ($NAMES hosts) and the query streams in $WORK" >&2
/usr/bin/python3 "$BENCH/lib/genzone.py" "$ORIGIN" "$WORK" "$NAMES"
if [ "$SIGNED" = 1 ]; then
    "$BULWARK_BIN" keys generate "$ORIGIN" -a ECDSAP256SHA256 --role ksk -K "$WORK/keys" >/dev/null
    "$BULWARK_BIN" keys generate "$ORIGIN" -a ECDSAP256SHA256 --role zsk -K "$WORK/keys" >/dev/null
    "$BULWARK_BIN" sign "$ORIGIN" "$WORK/zone" -K "$WORK/keys" --nsec3 -o "$WORK/zone.signed"
    mv "$WORK/zone.signed" "$WORK/zone"
fi
/usr/bin/python3 - "$WORK" "$ORIGIN" "$NAMES" <<'PY'
import os, random, sys
work, origin, names = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(26)
def write(cls, lines):
    with open(os.path.join(work, f"x-{cls}"), "w") as f:
        f.write("\n".join(lines) + "\n")
# kxdpgun's templates: "name type [flag]", D for EDNS with DO.
write("www", [f"www.{origin} A"])
write("www-do", [f"www.{origin} A D"])
write("nx-do", [f"nonexistent.{origin} A D"])
with open(os.path.join(work, "q-mix")) as f:
    write("mix", [l.strip() for l in f if l.strip()])
distinct = [f"h{i}.{origin} {t}" for i in range(names) for t in ("A", "AAAA")]
rng.shuffle(distinct)
write("distinct", distinct)
write("water", [f"{rng.getrandbits(48):012x}.{origin} A" for _ in range(1000000)])
write("nsec3-do", [f"{rng.getrandbits(48):012x}.{origin} A D" for _ in range(500000)])
PY

# --- the network --------------------------------------------------------------
ip netns add "$SRV"
ip netns add "$GEN"
ip link add xs netns "$SRV" type veth peer name xg netns "$GEN"
ip -n "$SRV" addr add "$SERVER_ADDR/16" dev xs
ip -n "$GEN" addr add 10.99.0.2/16 dev xg
# Every address of FLOW_NET is the generator's, so the server's kernel can
# resolve each one (ARP) when its socket path replies.
ip -n "$GEN" route add local "$FLOW_NET" dev lo
for ns in "$SRV" "$GEN"; do
    ip -n "$ns" link set lo up
done
ip -n "$SRV" link set xs up
ip -n "$GEN" link set xg up
FLOWS=$(/usr/bin/python3 -c "import ipaddress,sys; print(ipaddress.ip_network(sys.argv[1]).num_addresses - 2)" "$FLOW_NET")


# --- the servers ----------------------------------------------------------------
start_server() {
    local name=$1 d=$WORK/$1
    mkdir -p "$d"
    case $name in
    bulwark-xdp | bulwark-socket)
        {
            printf '[server]\nlisten = ["%s:53"]\nthreads = 1\n\n' "$SERVER_ADDR"
            # RRL would limit the generator's /22 (it exempts only loopback);
            # knotd and NSD run without it too.
            printf '[rrl]\nresponses_per_second = 0\n\n'
            [ "$name" = bulwark-xdp ] && printf '[[xdp]]\ninterface = "xs"\n\n'
            printf '[[zone]]\norigin = "%s"\nfile = "%s"\n' "$ORIGIN" "$WORK/zone"
        } >"$d/bulwark.toml"
        ip netns exec "$SRV" taskset -c "$SERVER_CPU" "$BULWARK_BIN" serve -c "$d/bulwark.toml" \
            --log-level warn >"$d/log" 2>&1 &
        ;;
    knotd-xdp | knotd-socket)
        mkdir -p "$d/db"
        {
            printf 'server:\n    rundir: "%s"\n    listen: %s@53\n' "$d" "$SERVER_ADDR"
            printf '    udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n'
            [ "$name" = knotd-xdp ] && printf 'xdp:\n    listen: xs@53\n'
            printf 'database:\n    storage: "%s/db"\n' "$d"
            printf 'log:\n  - target: stderr\n    any: warning\n'
            printf 'zone:\n  - domain: %s\n    file: "%s"\n    journal-content: none\n    zonefile-sync: -1\n' \
                "$ORIGIN" "$WORK/zone"
        } >"$d/knot.conf"
        ip netns exec "$SRV" taskset -c "$SERVER_CPU" knotd -c "$d/knot.conf" >"$d/log" 2>&1 &
        ;;
    nsd-socket)
        cat >"$d/nsd.conf" <<CONF
server:
    ip-address: $SERVER_ADDR@53
    server-count: 1
    username: ""
    chroot: ""
    zonesdir: "$d"
    pidfile: "$d/nsd.pid"
    xfrdfile: "$d/xfrd.state"
    zonelistfile: "$d/zone.list"
    database: ""
    logfile: "$d/nsd.log"
    verbosity: 0
    rrl-ratelimit: 0
    rrl-whitelist-ratelimit: 0
remote-control:
    control-enable: no
zone:
    name: $ORIGIN
    zonefile: "$WORK/zone"
CONF
        ip netns exec "$SRV" taskset -c "$SERVER_CPU" nsd -d -c "$d/nsd.conf" >"$d/log" 2>&1 &
        ;;
    esac
    # `ip netns exec` execs the server: $! is the server's PID.
    SERVER_PID=$!
}

# Until www A is answered from the generator's namespace (a big zone takes
# a while to load).
wait_answers() {
    local name=$1 i
    for i in $(seq 1 900); do
        if ip netns exec "$GEN" kdig +retry=0 +time=1 "@$SERVER_ADDR" "www.$ORIGIN" A 2>/dev/null |
            grep -q 192.0.2.80; then
            return 0
        fi
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.2
    done
    echo "$name did not answer; its log:" >&2
    tail -20 "$WORK/$name/log" >&2
    return 1
}

stop() {
    stop_server "$SERVER_PID"
    SERVER_PID=
    # knotd attaches its program through netlink, which outlives it.
    ip -n "$SRV" link set xs xdp off 2>/dev/null || true
}

# run_gen SERVER CLASS MODE: one kxdpgun run; appends a TSV row:
# mode server class flows sent replies qps us_per_reply loss% user_us sys_us
run_gen() {
    local server=$1 class=$2 mode=$3 pids before after out
    pids=$(server_pids "$SERVER_PID")
    out=$WORK/gen-$server-$class-$mode.txt
    before=$(ticks $pids)
    ip netns exec "$GEN" kxdpgun -t "$DUR" -Q "$GEN_QPS" -i "$WORK/x-$class" -I xg \
        -F "$GEN_CPU" -l "$FLOW_NET" "$SERVER_ADDR" >"$out" 2>&1 || true
    after=$(ticks $pids)
    /usr/bin/python3 - "$mode" "$server" "$class" "$FLOWS" "$before" "$after" "$CLK_TCK" \
        "$DUR" "$out" >>"$ROWS" <<'PY'
import re, sys
mode, server, cls, flows, before, after, hz, dur, path = sys.argv[1:]
text = open(path).read()
def grab(pat):
    m = re.search(pat, text)
    return int(m.group(1)) if m else 0
sent = grab(r"total queries:\s+(\d+)")
replies = grab(r"total replies:\s+(\d+)")
b = list(map(int, before.split())); a = list(map(int, after.split()))
per = lambda ticks: ticks / int(hz) * 1e6 / replies if replies else 0
user, system = per(a[0] - b[0]), per(a[1] - b[1])
loss = 100 * (sent - replies) / sent if sent else 100
print("\t".join([mode, server, cls, flows, str(sent), str(replies),
                 f"{replies / float(dur):.0f}", f"{user + system:.3f}", f"{loss:.1f}",
                 f"{user:.3f}", f"{system:.3f}"]))
PY
    tail -n 1 "$ROWS" >&2
}

mkdir -p "$(dirname "$ROWS")"
: >"$ROWS"
servers_of() {
    case $1 in
    xdp) echo "${XDP_SERVERS:-bulwark-xdp knotd-xdp}" ;;
    socket) echo "bulwark-socket" ;;
    quota) echo "bulwark-socket knotd-socket nsd-socket" ;;
    esac
}
for round in $(seq 1 "$ROUNDS"); do
    for mode in $MODES; do
        for server in $(servers_of "$mode"); do
            echo "== round $round: $mode: $server" >&2
            start_server "$server"
            wait_answers "$server"
            pin_server "$SERVER_PID"
            # shellcheck disable=SC2046
            [ "$mode" = quota ] && quota_on xdp $(server_pids "$SERVER_PID")
            for class in $CLASSES; do
                # A second of warm-up: caches, the ARP entries of every flow.
                ip netns exec "$GEN" kxdpgun -t 1 -Q 100000 -i "$WORK/x-$class" -I xg \
                    -F "$GEN_CPU" -l "$FLOW_NET" "$SERVER_ADDR" >/dev/null 2>&1 || true
                run_gen "$server" "$class" "$mode"
            done
            quota_off xdp
            stop
        done
    done
done

versions="bulwark $(git -C "$ROOT" rev-parse --short HEAD); $(knotd -V 2>&1 | head -1); nsd $(nsd -v 2>&1 | head -1 | awk '{print $NF}'); $(kxdpgun -V 2>&1 | head -1); kernel $(uname -r); $(lscpu | sed -n 's/^Model name:\s*//p')"
/usr/bin/python3 "$BENCH/lib/report_xdp.py" "$ROWS" "$versions" \
    "DUR=$DUR ROUNDS=$ROUNDS NAMES=$NAMES SIGNED=$SIGNED GEN_QPS=$GEN_QPS FLOW_NET=$FLOW_NET CFS_QUOTA=$CFS_QUOTA/$CFS_PERIOD bash bench/xdp.sh" \
    >"$WORK/report.md"
cat "$WORK/report.md"
if [ "$OUT" != - ]; then
    {
        echo
        cat "$WORK/report.md"
    } >>"$OUT"
    echo "appended to $OUT; rows in $ROWS" >&2
fi
