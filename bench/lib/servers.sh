# Start and stop the servers under test. Sourced by bench/auth.sh.
# Each start_X writes its config into $WORK/X/, starts the server pinned to
# $SERVER_CPU on 127.0.0.1:$1 and sets SERVER_PID. The caller waits for it
# with wait_ready and kills it with stop_server.

free_port() {
    # A port free for UDP and for a TCP listener; after a run that churned
    # connections, many ports are held by TIME_WAIT, so try again until one
    # binds both ways.
    /usr/bin/python3 -c 'import socket
for _ in range(1000):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", s.getsockname()[1]))
    except OSError:
        continue
    print(s.getsockname()[1])
    break
else:
    raise SystemExit("no free port")'
}

start_bulwark() {
    local port=$1 d=$WORK/bulwark
    mkdir -p "$d"
    # RRL exempts loopback by default (docs/configuration.md), so it never
    # limits dnsperf; cookies only act on queries that carry one.
    taskset -c "$SERVER_CPU" "$BULWARK_BIN" serve --threads "${BULWARK_THREADS:-1}" \
        --listen "127.0.0.1:$port" --zone "$ORIGIN=$WORK/zone" \
        --log-level warn >"$d/log" 2>&1 &
    SERVER_PID=$!
}

# start_bulwark_base PORT: bulwark built from another commit ($BULWARK_BASE_BIN),
# served the same way, so that a change is measured against its base in one
# run: with SERVERS="bulwark bulwark_base" the report's ratio columns are
# this build over the base.
start_bulwark_base() {
    local port=$1 d=$WORK/bulwark_base
    mkdir -p "$d"
    taskset -c "$SERVER_CPU" "${BULWARK_BASE_BIN:?set BULWARK_BASE_BIN to the base build}" serve \
        --threads "${BULWARK_THREADS:-1}" \
        --listen "127.0.0.1:$port" --zone "$ORIGIN=$WORK/zone" \
        --log-level warn >"$d/log" 2>&1 &
    SERVER_PID=$!
}

start_knotd() {
    local port=$1 d=$WORK/knotd
    mkdir -p "$d/db"
    cat >"$d/knot.conf" <<CONF
server:
    rundir: "$d"
    listen: 127.0.0.1@$port
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: "$d/db"
log:
  - target: stderr
    any: warning
zone:
  - domain: $ORIGIN
    file: "$WORK/zone"
    journal-content: none
    zonefile-sync: -1
CONF
    taskset -c "$SERVER_CPU" knotd -c "$d/knot.conf" >"$d/log" 2>&1 &
    SERVER_PID=$!
}

start_nsd() {
    local port=$1 d=$WORK/nsd
    mkdir -p "$d"
    cat >"$d/nsd.conf" <<CONF
server:
    ip-address: 127.0.0.1@$port
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
    hide-version: no
    # Debian builds NSD with RRL on (200 qps per /24 by default): off, as
    # for every other server here, or it drops most of dnsperf's queries.
    rrl-ratelimit: 0
    rrl-whitelist-ratelimit: 0
remote-control:
    control-enable: no
zone:
    name: $ORIGIN
    zonefile: "$WORK/zone"
CONF
    taskset -c "$SERVER_CPU" nsd -d -c "$d/nsd.conf" >"$d/log" 2>&1 &
    SERVER_PID=$!
}

start_named() {
    local port=$1 d=$WORK/named
    mkdir -p "$d"
    cat >"$d/named.conf" <<CONF
options {
    directory "$d";
    pid-file "$d/named.pid";
    listen-on port $port { 127.0.0.1; };
    listen-on-v6 { none; };
    recursion no;
    notify no;
    minimal-responses no;
};
controls { };
zone "$ORIGIN" { type primary; file "$WORK/zone"; };
CONF
    taskset -c "$SERVER_CPU" named -g -n 1 -c "$d/named.conf" >"$d/log" 2>&1 &
    SERVER_PID=$!
}

start_null() {
    local port=$1
    taskset -c "$SERVER_CPU" "$NULL_BIN" "127.0.0.1:$port" >"$WORK/null.log" 2>&1 &
    SERVER_PID=$!
}

# wait_ready PORT NAME: until the server answers www A (null: any reply).
wait_ready() {
    local port=$1 name=$2 i
    for i in $(seq 1 200); do
        if dig +tries=1 +time=1 -p "$port" @127.0.0.1 "www.$ORIGIN" A 2>/dev/null |
            grep -q 'status: NOERROR\|status: FORMERR\|opcode: QUERY'; then
            if [ "$name" = null ] ||
                dig +short -p "$port" @127.0.0.1 "www.$ORIGIN" A | grep -q 192.0.2.80; then
                return 0
            fi
        fi
        sleep 0.1
    done
    echo "$name did not answer on port $port; its log:" >&2
    cat "$WORK/$name/log" "$WORK/$name"/*.log 2>/dev/null | tail -20 >&2
    return 1
}

# pin_server PID: every thread of the server and its children onto
# $SERVER_CPU, then check that none left it. taskset at start is not enough:
# knotd moves each UDP worker thread to CPU (worker id % online CPUs) when the
# worker starts, which put its only worker on the generator's core, where it
# shared that core with dnsperf and got same-CPU loopback wake-ups.
pin_server() {
    local p t bad=0
    for p in $(server_pids "$1"); do
        taskset -a -p -c "$SERVER_CPU" "$p" >/dev/null || bad=1
        for t in /proc/"$p"/task/*; do
            [ "$(sed -n 's/^Cpus_allowed_list:\t*//p' "$t/status" 2>/dev/null)" = "$SERVER_CPU" ] || bad=1
        done
    done
    [ "$bad" = 0 ] || { echo "could not pin every thread of PID $1 to CPU $SERVER_CPU" >&2; return 1; }
}

# All PIDs of a server: the process and its descendants (nsd forks its
# workers; their CPU time is not in the parent's utime until they exit).
server_pids() {
    local p=$1 c
    echo "$p"
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
        server_pids "$c"
    done
}

stop_server() {
    local p=$1 kids c i
    [ -n "$p" ] || return 0
    kids=$(server_pids "$p")
    kill "$p" 2>/dev/null || true
    for i in $(seq 1 50); do
        kill -0 "$p" 2>/dev/null || break
        sleep 0.1
    done
    # Whatever is still there (a child the parent did not reap, or a parent
    # that ignored SIGTERM) is killed by PID.
    for c in $kids; do
        kill -9 "$c" 2>/dev/null || true
    done
    wait "$p" 2>/dev/null || true
    return 0
}
