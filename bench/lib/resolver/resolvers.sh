# The resolvers under test: configuration, start, cached-RRset count.
# Sourced by bench/resolver.sh, inside its network namespace.
#
# res_start_NAME DIR MODE ADDR: writes NAME's configuration into DIR, starts it
# listening on ADDR:53, pinned to $RESOLVER_CPU, with one worker and no
# DNSSEC validation, and sets SERVER_PID. MODE is `recurse` (iterate from
# the simulated root, $NET/root.hints) or `forward` (everything to
# $FWD_ADDR, an authoritative server with a wildcard that answers every
# name). Caches are $CACHE_BYTES octets (or as many entries), more than a
# run fills. res_count_NAME DIR prints the RRsets (or entries) the cache holds.
#
# Every start runs from a fresh DIR: a new process with an empty cache.

BULWARK_CTL_SOCK=ctl.sock

res_start_bulwark() {
    local d=$1 mode=$2 addr=$3 hints
    hints=$(sed 's/.*/"&"/' "$NET/root-hints.txt" | paste -sd, -)
    {
        echo "[server]"
        echo "listen = [\"$addr:53\"]"
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
    local d=$1 mode=$2 addr=$3
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
    # The iterator alone: no validator, the simulated internet is unsigned.
    module-config: "iterator"
    msg-cache-size: $((CACHE_BYTES / 2))
    rrset-cache-size: $CACHE_BYTES
    # One thread: one slab each (the slabs only split locks between threads).
    msg-cache-slabs: 1
    rrset-cache-slabs: 1
    infra-cache-slabs: 1
    key-cache-slabs: 1
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
-- No validation: the simulated internet is unsigned.
trust_anchors.remove('.')
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
dnssec=off
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
    taskset -c "$RESOLVER_CPU" pdns_recursor --config-dir="$d" >"$d/log" 2>&1 &
    SERVER_PID=$!
}

res_count_pdns_recursor() {
    rec_control --socket-dir="$1" get cache-entries 2>/dev/null
}

res_start_named() {
    local d=$1 mode=$2 addr=$3 fwd=""
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
    dnssec-validation no;
    max-cache-size $CACHE_BYTES;
    recursive-clients $CONCURRENCY;
    udp-receive-buffer 4194304;
    notify no;
    $fwd
};
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
        grep -E '^total\.(num\.|requestlist\.|recursion)|^num\.query\.(udpout|tcpout|ratelimited)|^unwanted\.|^mem\.cache|^rrset\.cache|^msg\.cache|^num\.answer\.rcode\.(SERVFAIL|NOERROR|NXDOMAIN)|^total\.tcpusage' || true
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
        grep -E '^(questions|all-outqueries|outgoing-timeouts|over-capacity-drops|too-old-drops|servfail-answers|udp-recvbuf-errors|udp-in-errors|udp-sndbuf-errors|udp-noport-errors|concurrent-queries|max-mthread-stack|unreachables|throttled-out|noerror-answers|nxdomain-answers|cache-entries|packetcache-entries|packetcache-hits|cache-hits|cache-misses|resource-limits|chain-resends|qa-latency|real-memory-usage|tcp-outqueries|policy-drops|client-parse-errors|spoof-prevents|nod-lookups-dropped-oversize|case-mismatches|unexpected-packets|ignored-packets)\b' || true
}

res_stats_named() {
    local d=$1
    rm -f "$d/named.stats"
    rndc -k "$d/rndc.key" -s 127.0.0.1 -p 953 stats >/dev/null 2>&1 || return 0
    awk '/^\+\+ Name Server Statistics/ { s = "ns" } /^\+\+ Resolver Statistics/ { s = "res" }
         /^\+\+ Socket I\/O/ { s = "sock" } /^\+\+ Cache/ || /^\+\+ Zone/ || /^\+\+ Per/ || /^\+\+ Incoming/ || /^\+\+ Outgoing/ { s = "" }
         /^\[View: / { v = ($0 ~ /^\[View: default/) }
         s != "" && $1 ~ /^[0-9]+$/ && (s != "res" || v) { n = $1; $1 = ""; print s ":" $0 " " n }' "$d/named.stats" |
        grep -iE 'recursion|dropped|timeout|SERVFAIL|rejected|recv|queries resulted|exceeded|spilled|failed|lame|mismatch|requests received|responses sent|truncated|query timeout|fetch' || true
}

res_stats_dnsdist() {
    dnsdist -C "$1/dnsdist.conf" -c -e 'dumpStats()' 2>/dev/null || true
}
