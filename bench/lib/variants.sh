# Server variants for bench/stats.sh and bench/logging.sh: bulwark from a
# configuration file, knotd with and without mod-dnstap, named with and
# without query logging, and the helpers that run beside them on the
# generator's CPU (dnstap receivers, the Prometheus scraper). Sourced after
# lib/servers.sh and lib/measure.sh; each start_* sets SERVER_PID as there.

# start_bulwark_toml PORT NAME [EXTRA_TOML]: bulwark from $WORK/NAME/bulwark.toml,
# one UDP worker, a control socket at $WORK/NAME/control.sock, and whatever
# tables EXTRA_TOML adds ([statistics], [prometheus], [dnstap]).
start_bulwark_toml() {
    write_bulwark_toml "$@"
    taskset -c "$SERVER_CPU" "$BULWARK_BIN" serve --config "$WORK/$2/bulwark.toml" \
        >"$WORK/$2/log" 2>&1 &
    SERVER_PID=$!
}

# write_bulwark_toml PORT NAME [EXTRA_TOML]: only the configuration file.
write_bulwark_toml() {
    local port=$1 extra=${3:-} d=$WORK/$2
    mkdir -p "$d"
    rm -f "$d/control.sock"
    cat >"$d/bulwark.toml" <<CONF
[server]
listen = ["127.0.0.1:$port"]
threads = 1

[log]
level = "warn"

[control]
socket = "$d/control.sock"

[[zone]]
origin = "$ORIGIN"
file = "$WORK/zone"

$extra
CONF
}

# bulwark_ctl_stats NAME OUT: `bulwark ctl stats` of the server NAME into OUT.
bulwark_ctl_stats() {
    "$BULWARK_BIN" ctl --socket "$WORK/$1/control.sock" stats >"$2" 2>&1 || true
}

# metric FILE NAME: the sum of every sample of the metric NAME (any labels) in
# a Prometheus text dump; "?" when it is absent.
metric() {
    awk -v n="$2" '
        $1 == n || index($1, n "{") == 1 { s += $NF; found = 1 }
        END { if (found) printf "%d\n", s; else print "?" }' "$1"
}

# start_knotd_v PORT NAME [dnstap]: knotd exactly as lib/servers.sh starts it
# (one UDP, one TCP, one background worker), and with "dnstap" mod-dnstap as a
# global module logging queries and responses to $WORK/NAME/dnstap.fstrm.
start_knotd_v() {
    local port=$1 name=$2 tap=${3:-} d=$WORK/$2
    mkdir -p "$d/db"
    rm -f "$d/dnstap.fstrm"
    {
        cat <<CONF
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
CONF
        if [ "$tap" = dnstap ]; then
            cat <<CONF
mod-dnstap:
  - id: tap
    sink: "$d/dnstap.fstrm"
    log-queries: on
    log-responses: on
template:
  - id: default
    global-module: mod-dnstap/tap
CONF
        fi
        cat <<CONF
zone:
  - domain: $ORIGIN
    file: "$WORK/zone"
    journal-content: none
    zonefile-sync: -1
CONF
    } >"$d/knot.conf"
    taskset -c "$SERVER_CPU" knotd -c "$d/knot.conf" >"$d/log" 2>&1 &
    SERVER_PID=$!
}

# start_named_v PORT NAME [querylog]: named with one worker (-n 1), in the
# foreground with its own logging (-f, not -g: -g sends everything to stderr
# and ignores the logging statement). Both variants log the default category
# to $WORK/NAME/named.log; "querylog" adds `querylog yes` with the queries
# category to $WORK/NAME/query.log.
start_named_v() {
    local port=$1 name=$2 ql=${3:-} d=$WORK/$2 qopt="querylog no;" qcat=""
    mkdir -p "$d"
    rm -f "$d/query.log"
    if [ "$ql" = querylog ]; then
        qopt="querylog yes;"
        qcat='channel queries_file { file "'"$d"'/query.log"; print-time yes; severity info; };
    category queries { queries_file; };'
    fi
    cat >"$d/named.conf" <<CONF
options {
    directory "$d";
    pid-file "$d/named.pid";
    listen-on port $port { 127.0.0.1; };
    listen-on-v6 { none; };
    recursion no;
    notify no;
    minimal-responses no;
    $qopt
};
logging {
    channel main_file { file "$d/named.log"; print-time yes; severity warning; };
    category default { main_file; };
    $qcat
};
controls { };
zone "$ORIGIN" { type primary; file "$WORK/zone"; };
CONF
    taskset -c "$SERVER_CPU" named -f -n 1 -c "$d/named.conf" >"$d/log" 2>&1 &
    SERVER_PID=$!
}

# Helpers beside the server run on the generator's CPU and are stopped by PID.
HELPER_PIDS=()

# start_fstrm_capture SOCKET OUT: Frame Streams receiver (fstrm-bin) writing
# what it reads to OUT; waits until the socket exists.
start_fstrm_capture() {
    local sock=$1 out=$2 i
    rm -f "$sock" "$out"
    taskset -c "$GEN_CPU" fstrm_capture -t protobuf:dnstap.Dnstap -u "$sock" -w "$out" \
        >"$out.log" 2>&1 &
    HELPER_PIDS+=($!)
    for i in $(seq 1 100); do
        [ -S "$sock" ] && return 0
        sleep 0.05
    done
    echo "fstrm_capture did not create $sock" >&2
    return 1
}

# start_stalled_receiver SOCKET: accepts one Frame Streams connection,
# completes the handshake, then never reads (lib/fstrm_stall.py).
start_stalled_receiver() {
    local sock=$1 i
    rm -f "$sock" "$sock.state"
    taskset -c "$GEN_CPU" /usr/bin/python3 "$BENCH/lib/fstrm_stall.py" "$sock" \
        >"$sock.log" 2>&1 &
    HELPER_PIDS+=($!)
    for i in $(seq 1 100); do
        [ -S "$sock" ] && return 0
        sleep 0.05
    done
    echo "stalled receiver did not create $sock" >&2
    return 1
}

# wait_file_word FILE WORD: until FILE holds WORD (5 s), e.g. the stalled
# receiver's "started" once the server has connected and sent START.
wait_file_word() {
    local i
    for i in $(seq 1 100); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# start_scraper URL OUT: GET URL once a second (lib/scrape.py) until stopped.
start_scraper() {
    taskset -c "$GEN_CPU" /usr/bin/python3 "$BENCH/lib/scrape.py" "$1" "$2" >"$2.log" 2>&1 &
    HELPER_PIDS+=($!)
}

# stop_helpers: SIGTERM each helper by PID, then wait for it.
stop_helpers() {
    local p
    for p in "${HELPER_PIDS[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${HELPER_PIDS[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    HELPER_PIDS=()
}

# warm_up PORT CLASS: one second at 5k qps, as auth.sh does.
warm_up() {
    local do=()
    case $2 in *-do) do=(-D) ;; esac
    taskset -c "$GEN_CPU" dnsperf -s 127.0.0.1 -p "$1" -d "$WORK/q-$2" -l 1 -Q 5000 \
        "${do[@]}" >/dev/null 2>&1 || true
}

# callgrind_row NAME EXTRA_TOML: bulwark (configured as start_bulwark_toml
# does) under `valgrind --tool=callgrind`, counters zeroed once it answers,
# then CALLGRIND_QUERIES `mix` queries at 2,000 qps; prints a Markdown row:
# name, answered, instructions (Ir, every thread), Ir per answered query.
callgrind_row() {
    local v=$1 extra=$2 port d answered ir
    port=$(free_port)
    d=$WORK/$v-cg
    mkdir -p "$d"
    rm -f "$d"/cg.out*
    write_bulwark_toml "$port" "$v-cg" "$extra"
    taskset -c "$SERVER_CPU" valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" \
        "$BULWARK_BIN" serve --config "$d/bulwark.toml" >"$d/log" 2>&1 &
    SERVER_PID=$!
    wait_ready "$port" "$v-cg"
    callgrind_control -z "$SERVER_PID" >/dev/null 2>&1 || true
    taskset -c "$GEN_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$WORK/q-mix" -Q 2000 \
        -l "$((CALLGRIND_QUERIES / 2000))" -t 5 >"$d/dnsperf.txt" 2>&1 || true
    callgrind_control -d "$SERVER_PID" >/dev/null 2>&1 || true
    stop_server "$SERVER_PID"
    SERVER_PID=
    answered=$(awk '/Queries completed:/ { print $3 }' "$d/dnsperf.txt")
    # cg.out.1 is the dump taken after the queries (from zero to dump);
    # cg.out, written at exit, holds only the shutdown.
    ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$d/cg.out.1" 2>/dev/null || true)
    /usr/bin/python3 -c 'import sys
v, done, ir = sys.argv[1], int(sys.argv[2] or 0), int(sys.argv[3] or 0)
print(f"| {v} | {done:,} | {ir:,} | {ir / done if done else 0:,.0f} |")' \
        "$v" "${answered:-0}" "${ir:-0}"
}
