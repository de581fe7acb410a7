# The resolvers under test: configuration, start, cached-RRset count.
# Sourced by bench/resolver.sh, inside its network namespace.
#
# res_start_NAME DIR MODE ADDR: writes NAME's configuration into DIR, starts it
# listening on ADDR:53, pinned to $RESOLVER_CPU, with one worker, and sets
# SERVER_PID. MODE is `recurse` (iterate from the simulated root,
# $NET/root.hints, no DNSSEC validation), `validate` (the same, validating
# from the signed internet's root anchor, $NET/root-anchor.txt, a DS record
# in zone-file form, in place of the built-in root anchors) or `forward`
# (everything to $FWD_ADDR, an authoritative server with a wildcard that
# answers every name; no validation). Caches are $CACHE_BYTES octets (or as
# many entries), more than a run fills. res_count_NAME DIR prints the
# RRsets (or entries) the cache holds.
#
# Every start runs from a fresh DIR: a new process with an empty cache.

BULWARK_CTL_SOCK=ctl.sock

# The root anchor's DS rdata: "TAG ALG DIGEST-TYPE DIGEST".
root_ds() {
    awk '$4 == "DS" { print $5, $6, $7, $8; exit }' "$NET/root-anchor.txt"
}

res_start_bulwark() {
    local d=$1 mode=$2 addr=$3 hints
    hints=$(sed 's/.*/"&"/' "$NET/root-hints.txt" | paste -sd, -)
    {
        echo "[server]"
        echo "listen = [\"$addr:53\"]"
        echo "udp_workers = \"$BULWARK_UDP_WORKERS\""
        echo "[resolver]"
        echo "root_hints = [$hints]"
        echo "allow_recursion = [\"0.0.0.0/0\"]"
        echo "query_localhost = true        # the simulated internet is on 127/8"
        echo "cache_size = $CACHE_BYTES"
        # Every question comes from resperf's one address, and a cold run
        # sends thousands a second to the few root and TLD servers: the
        # DNSBomb and flood bounds (100 waiting per client, 1000 in flight
        # per server) raised to the run's concurrency, as for the peers.
        echo "max_pending_per_client = $CONCURRENCY"
        echo "max_outstanding_per_server = $CONCURRENCY"
        # Validation is on by default (from the built-in root anchors):
        # off unless validating, and then from the signed internet's anchor.
        if [ "$mode" = validate ]; then
            echo "dnssec_validation = true"
            echo "trust_anchor_files = [\"$NET/root-anchor.txt\"]"
        else
            echo "dnssec_validation = false"
        fi
        if [ "$mode" = forward ]; then
            echo "[[resolver.forward]]"
            echo "zone = \".\""
            echo "addresses = [\"$FWD_ADDR\"]"
        fi
    } >"$d/bulwark.toml"
    taskset -c "$RESOLVER_CPU" "$BULWARK_BIN" serve -c "$d/bulwark.toml" --threads 1 \
        --control-socket "$d/$BULWARK_CTL_SOCK" --log-level warn >"$d/log" 2>&1 &
    SERVER_PID=$!
}

res_count_bulwark() {
    "$BULWARK_BIN" ctl -s "$1/$BULWARK_CTL_SOCK" cache stats 2>/dev/null | awk '$1 == "entries" { print $2 }'
}

res_start_unbound() {
    local d=$1 mode=$2 addr=$3 modules="iterator" anchor=""
    # The iterator alone, no validator (the simulated internet is unsigned),
    # unless validating: then a static anchor (trust-anchor-file, not
    # auto-trust-anchor-file: no RFC 5011 tracking, nothing written back),
    # validation failures in the log whatever the verbosity, and a key
    # cache of a quarter of CACHE_BYTES (its default, 4 MiB, is sized for
    # fewer zones than the internet's 20,000 keys).
    if [ "$mode" = validate ]; then
        modules="validator iterator"
        anchor="trust-anchor-file: \"$NET/root-anchor.txt\"
    val-log-level: 2
    key-cache-size: $((CACHE_BYTES / 4))
    key-cache-slabs: 1"
    else
        anchor="key-cache-slabs: 1"
    fi
    cat >"$d/unbound.conf" <<CONF
server:
    username: ""
    chroot: ""
    directory: "$d"
    pidfile: "$d/unbound.pid"
    use-syslog: no
    logfile: "$d/unbound.log"
    verbosity: 0
    interface: $addr
    port: 53
    do-ip6: no
    access-control: 0.0.0.0/0 allow
    num-threads: 1
    so-reuseport: no
    do-not-query-localhost: no
    root-hints: "$NET/root.hints"
    module-config: "$modules"
    $anchor
    msg-cache-size: $((CACHE_BYTES / 2))
    rrset-cache-size: $CACHE_BYTES
    # One thread: one slab each (the slabs only split locks between threads).
    msg-cache-slabs: 1
    rrset-cache-slabs: 1
    infra-cache-slabs: 1
    # Its ports come out of the file descriptor limit (20000 here).
    num-queries-per-thread: $CONCURRENCY
    outgoing-range: $((CONCURRENCY + CONCURRENCY / 2 < 16384 ? CONCURRENCY + CONCURRENCY / 2 : 16384))
    extended-statistics: yes
    # The receive buffer bulwark asks for (4 MiB; the kernel caps it at
    # net.core.rmem_max), where a peer has a setting for it.
    so-rcvbuf: 4m
remote-control:
    control-enable: yes
    control-interface: "$d/control.sock"
    control-use-cert: no
CONF
    if [ "$mode" = forward ]; then
        printf 'forward-zone:\n    name: "."\n    forward-addr: %s\n' "$FWD_ADDR" >>"$d/unbound.conf"
    fi
    taskset -c "$RESOLVER_CPU" unbound -d -c "$d/unbound.conf" >"$d/log" 2>&1 &
    SERVER_PID=$!
}

res_count_unbound() {
    unbound-control -c "$1/unbound.conf" stats_noreset 2>/dev/null | sed -n 's/^rrset\.cache\.count=//p'
}

res_start_kresd() {
    local d=$1 mode=$2 addr=$3 hints
    hints=$(awk '$4 == "A" { printf "[\"%s\"] = \"%s\", ", $1, $5 }' "$NET/root.hints")
    cat >"$d/config" <<CONF
net.ipv6 = false
net.listen('$addr', 53, { kind = 'dns' })
-- Not the built-in root anchor: no validation (the simulated internet is
-- unsigned), or (validate) the signed internet's own, read-only.
trust_anchors.remove('.')
$([ "$mode" = validate ] && echo "trust_anchors.add_file('$NET/root-anchor.txt', true)")
modules.load('hints > iterate')
hints.root({ $hints })
cache.open($CACHE_BYTES, 'lmdb://$d/cache')
-- The simulated internet is on 127/8, which kresd skips unless told.
policy.add(policy.all(policy.FLAGS({'ALLOW_LOCAL'})))
CONF
    if [ "$mode" = forward ]; then
        echo "policy.add(policy.all(policy.FORWARD('$FWD_ADDR')))" >>"$d/config"
    fi
    # kresd is one process with one worker; -n: no console on stdin.
    taskset -c "$RESOLVER_CPU" kresd -n -c "$d/config" "$d" >"$d/log" 2>&1 </dev/null &
    SERVER_PID=$!
}

res_count_kresd() {
    /usr/bin/python3 - "$1/control/$SERVER_PID" <<'PY' 2>/dev/null
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(3)
s.connect(sys.argv[1])
s.sendall(b"cache.count()\n")
buf = b""
while b"\n>" not in buf and len(buf) < 4096:
    buf += s.recv(4096)
    if buf.strip().strip(b">").strip().isdigit():
        break
print(buf.decode().replace(">", "").split()[0])
PY
}

res_start_pdns_recursor() {
    local d=$1 mode=$2 addr=$3
    cat >"$d/recursor.conf" <<CONF
local-address=$addr
local-port=53
allow-from=0.0.0.0/0
threads=1
pdns-distributes-queries=no
reuseport=no
hint-file=$NET/root.hints
# Query 127/8 too: the simulated internet lives there.
dont-query=
$(if [ "$mode" = validate ]; then
    echo "dnssec=validate"
    echo "dnssec-log-bogus=yes"
    echo "lua-config-file=$d/recursor.lua"
else
    echo "dnssec=off"
fi)
max-cache-entries=$((CACHE_BYTES / 64))
max-packetcache-entries=$((CACHE_BYTES / 128))
max-mthreads=$CONCURRENCY
socket-dir=$d
daemon=no
write-pid=no
disable-syslog=yes
loglevel=3
quiet=yes
CONF
    if [ "$mode" = forward ]; then
        echo "forward-zones-recurse=.=$FWD_ADDR" >>"$d/recursor.conf"
    fi
    if [ "$mode" = validate ]; then
        # The built-in root anchors out, the signed internet's in.
        printf 'clearTA()\naddTA(".", "%s")\n' "$(root_ds)" >"$d/recursor.lua"
    fi
    taskset -c "$RESOLVER_CPU" pdns_recursor --config-dir="$d" >"$d/log" 2>&1 &
    SERVER_PID=$!
}

res_count_pdns_recursor() {
    rec_control --socket-dir="$1" get cache-entries 2>/dev/null
}

res_start_named() {
    local d=$1 mode=$2 addr=$3 fwd="" validation=no anchors=""
    if [ "$mode" = validate ]; then
        # The signed internet's root anchor (a trust-anchors statement with
        # its static-ds) in place of the built-in one.
        validation=yes
        anchors="include \"$NET/root-anchor.conf\";"
    fi
    rndc-confgen -a -c "$d/rndc.key" -A hmac-sha256 >/dev/null 2>&1
    [ "$mode" = forward ] && fwd="forwarders { $FWD_ADDR; }; forward only;"
    cat >"$d/named.conf" <<CONF
include "$d/rndc.key";
options {
    directory "$d";
    pid-file "$d/named.pid";
    statistics-file "$d/named.stats";
    listen-on port 53 { $addr; };
    listen-on-v6 { none; };
    recursion yes;
    allow-recursion { any; };
    allow-query { any; };
    allow-query-cache { any; };
    dnssec-validation $validation;
    max-cache-size $CACHE_BYTES;
    recursive-clients $CONCURRENCY;
    udp-receive-buffer 4194304;
    notify no;
    $fwd
};
$anchors
zone "." { type hint; file "$NET/root.hints"; };
controls { inet 127.0.0.1 port 953 allow { 127.0.0.1; } keys { "rndc-key"; }; };
CONF
    # -g: foreground, logs on stderr; -n 1: one worker thread.
    taskset -c "$RESOLVER_CPU" named -g -n 1 -c "$d/named.conf" >"$d/log" 2>&1 &
    SERVER_PID=$!
}

res_count_named() {
    local d=$1
    rm -f "$d/named.stats"
    rndc -k "$d/rndc.key" -s 127.0.0.1 -p 953 stats >/dev/null 2>&1 || return 0
    # The RRsets (positive, negative and stale) of the default view's cache.
    awk '/^\+\+ Cache DB RRsets \+\+/ { s = 1; next } /^\+\+/ { s = 0 }
         s && /^\[View: / { v = ($0 ~ /^\[View: default/) ; next }
         s && v && $1 ~ /^[0-9]+$/ { n += $1 } END { print n + 0 }' "$d/named.stats"
}

# dnsdist with its packet cache, in front of $DNSDIST_BACKEND (started by
# the caller on $BACKEND_ADDR). Its entries are whole responses, one per
# question, not RRsets.
res_start_dnsdist() {
    local d=$1 mode=$2 addr=$3
    cat >"$d/dnsdist.conf" <<CONF
setLocal('$addr:53')
setACL({'0.0.0.0/0'})
setSecurityPollSuffix('')
setUDPSocketBufferSizes(4194304, 4194304)
newServer({address='$BACKEND_ADDR:53', name='backend'}):setUp()
pc = newPacketCache($((CACHE_BYTES / 128)), {maxTTL=86400, minTTL=0, temporaryFailureTTL=60, staleTTL=60})
getPool(''):setCache(pc)
controlSocket('127.0.0.1:5199')
setKey('$(head -c 32 /dev/urandom | base64)')
setConsoleACL('127.0.0.1/32')
CONF
    taskset -c "$RESOLVER_CPU" dnsdist --supervised --disable-syslog -C "$d/dnsdist.conf" >"$d/log" 2>&1 &
    SERVER_PID=$!
}

res_count_dnsdist() {
    dnsdist -C "$1/dnsdist.conf" -c -e 'getPool(""):getCache():getStats()["entries"]' 2>/dev/null
}

# res_stats_NAME DIR: the resolver's own counters after a run (what it
# dropped, refused or timed out, and why), as its operator would read them;
# run_one keeps the lines that say where queries went missing.
res_stats_bulwark() {
    "$BULWARK_BIN" ctl -s "$1/$BULWARK_CTL_SOCK" stats 2>/dev/null |
        grep -E '^bulwark_(resolver_|udp|net_|queries|responses|dropped)' | grep -v '_bucket' || true
}

res_stats_unbound() {
    unbound-control -c "$1/unbound.conf" stats_noreset 2>/dev/null |
        grep -E '^total\.(num\.|requestlist\.|recursion)|^num\.query\.(udpout|tcpout|ratelimited)|^unwanted\.|^mem\.cache|^rrset\.cache|^msg\.cache|^num\.answer\.rcode\.(SERVFAIL|NOERROR|NXDOMAIN)|^total\.tcpusage|^num\.answer\.(secure|bogus)|^num\.rrset\.bogus|^key\.cache\.count|^mem\.mod\.validator' || true
}

res_stats_kresd() {
    /usr/bin/python3 - "$1/control/$SERVER_PID" <<'PY' 2>/dev/null || true
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(3)
s.connect(sys.argv[1])
s.sendall(b"worker.stats()\n")
buf = b""
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
        if b"}" in buf and buf.rstrip().endswith(b">"):
            break
except socket.timeout:
    pass
text = buf.decode(errors="replace").replace("> ", "")
for line in text.splitlines():
    line = line.strip().rstrip(",")
    if "=" in line:
        k, _, v = line.partition("=")
        print(k.strip().strip("[]'"), v.strip())
PY
}

res_stats_pdns_recursor() {
    rec_control --socket-dir="$1" get-all 2>/dev/null |
        grep -E '^(questions|all-outqueries|outgoing-timeouts|over-capacity-drops|too-old-drops|servfail-answers|udp-recvbuf-errors|udp-in-errors|udp-sndbuf-errors|udp-noport-errors|concurrent-queries|max-mthread-stack|unreachables|throttled-out|noerror-answers|nxdomain-answers|cache-entries|packetcache-entries|packetcache-hits|cache-hits|cache-misses|resource-limits|chain-resends|qa-latency|real-memory-usage|tcp-outqueries|policy-drops|client-parse-errors|spoof-prevents|nod-lookups-dropped-oversize|case-mismatches|unexpected-packets|ignored-packets|dnssec-validations|dnssec-result-[a-z-]+)\b' || true
}

res_stats_named() {
    local d=$1
    rm -f "$d/named.stats"
    rndc -k "$d/rndc.key" -s 127.0.0.1 -p 953 stats >/dev/null 2>&1 || return 0
    awk '/^\+\+ Name Server Statistics/ { s = "ns" } /^\+\+ Resolver Statistics/ { s = "res" }
         /^\+\+ Socket I\/O/ { s = "sock" } /^\+\+ Cache/ || /^\+\+ Zone/ || /^\+\+ Per/ || /^\+\+ Incoming/ || /^\+\+ Outgoing/ { s = "" }
         /^\[View: / { v = ($0 ~ /^\[View: default/) }
         s != "" && $1 ~ /^[0-9]+$/ && (s != "res" || v) { n = $1; $1 = ""; print s ":" $0 " " n }' "$d/named.stats" |
        grep -iE 'recursion|dropped|timeout|SERVFAIL|rejected|recv|queries resulted|exceeded|spilled|failed|lame|mismatch|requests received|responses sent|truncated|query timeout|fetch|validation' || true
}

res_stats_dnsdist() {
    dnsdist -C "$1/dnsdist.conf" -c -e 'dumpStats()' 2>/dev/null || true
}
