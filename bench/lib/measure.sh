# One measurement: dnsperf against a running server, with the server's CPU
# time from /proc/PID/stat around it. Sourced by bench/auth.sh.

# ticks PIDS...: "utime stime" summed over the processes (fields 14 and 15 of
# /proc/PID/stat, in clock ticks; they include every thread of the process).
ticks() {
    local p u=0 s=0 f
    for p in "$@"; do
        # The command name (field 2) may hold spaces: cut after its ')'.
        f=$(sed 's/.*) //' /proc/"$p"/stat 2>/dev/null) || continue
        set -- $f
        # After the cut, field 3 of the cut line is field 4 of the original.
        u=$((u + ${12})) s=$((s + ${13}))
        set --
    done
    echo "$u $s"
}

# run_dnsperf SERVER CLASS MODE PORT QPS_LIMIT(0 = none) DURATION DO(0/1)
# Appends one TSV row to $RESULTS_TSV:
# server class mode sent completed lost% qps user_us sys_us gen_cpu%
run_dnsperf() {
    local server=$1 class=$2 mode=$3 port=$4 limit=$5 dur=$6 do=$7
    local pids before after out gen args=()
    pids=$(server_pids "$SERVER_PID")
    [ "$limit" != 0 ] && args+=(-Q "$limit")
    [ "$do" = 1 ] && args+=(-D)
    [ -n "${DNSPERF_CLIENTS:-}" ] && args+=(-c "$DNSPERF_CLIENTS")
    out=$WORK/dnsperf-$server-$class-$mode.txt
    before=$(ticks $pids)
    local TIMEFORMAT='%U %S %R'
    { time taskset -c "$GEN_CPU" dnsperf -s 127.0.0.1 -p "$port" \
        -d "$WORK/q-$class" -l "$dur" -q "$DNSPERF_OUTSTANDING" -t 2 \
        "${args[@]}" >"$out" 2>&1; } 2>"$out.time"
    after=$(ticks $pids)
    gen=$(cat "$out.time")
    /usr/bin/python3 - "$server" "$class" "$mode" "$before" "$after" "$gen" \
        "$CLK_TCK" "$out" >>"$RESULTS_TSV" <<'PY'
import re, sys
server, cls, mode, before, after, gen, hz, path = sys.argv[1:]
b = list(map(int, before.split())); a = list(map(int, after.split()))
text = open(path).read()
def grab(pat, cast=float):
    m = re.search(pat, text)
    return cast(m.group(1)) if m else 0
sent = grab(r"Queries sent:\s+(\d+)", int)
done = grab(r"Queries completed:\s+(\d+)", int)
lost = grab(r"Queries lost:\s+\d+ \(([\d.]+)%\)")
qps = grab(r"Queries per second:\s+([\d.]+)")
hz = int(hz)
us = lambda t: t * 1e6 / hz / done if done else 0
gu, gs, gr = map(float, gen.split())
gcpu = 100 * (gu + gs) / gr if gr else 0
print("\t".join([server, cls, mode, str(sent), str(done), f"{lost:.2f}", f"{qps:.0f}",
                 f"{us(a[0]-b[0]):.3f}", f"{us(a[1]-b[1]):.3f}", f"{gcpu:.0f}"]))
PY
    tail -n 1 "$RESULTS_TSV" >&2
}

# Cgroup v1 CPU quota around a server: quota_on NAME PIDS..., quota_off NAME PIDS...
quota_on() {
    local g=/sys/fs/cgroup/cpu/bench-$1 p
    shift
    mkdir -p "$g"
    echo "$CFS_PERIOD" >"$g/cpu.cfs_period_us"
    echo "$CFS_QUOTA" >"$g/cpu.cfs_quota_us"
    for p in "$@"; do echo "$p" >"$g/cgroup.procs" 2>/dev/null; done
}

quota_off() {
    local g=/sys/fs/cgroup/cpu/bench-$1 p
    shift
    [ -d "$g" ] || return 0
    for p in $(cat "$g/cgroup.procs" 2>/dev/null); do
        echo "$p" >/sys/fs/cgroup/cpu/cgroup.procs 2>/dev/null
    done
    rmdir "$g" 2>/dev/null
    return 0
}

# run_scaling: bulwark alone, with 1 worker under CFS_QUOTA and then 2 workers
# under twice that, every class, dnsperf with 8 client sockets (one socket
# would hash every query to one worker). Rows: modes scale1 and scale2.
run_scaling() {
    local threads port class do quota=$CFS_QUOTA
    for threads in 1 2; do
        port=$(free_port)
        echo "== bulwark with $threads worker(s) under $((quota * threads))/$CFS_PERIOD" >&2
        BULWARK_THREADS=$threads start_bulwark "$port"
        wait_ready "$port" bulwark
        pin_server "$SERVER_PID"
        for class in $CLASSES; do
            do=0
            case $class in *-do) do=1 ;; esac
            taskset -c "$GEN_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$WORK/q-$class" \
                -l 1 -Q 5000 >/dev/null 2>&1 || true
            # shellcheck disable=SC2046
            CFS_QUOTA=$((quota * threads)) quota_on bulwark $(server_pids "$SERVER_PID")
            DNSPERF_CLIENTS=8 run_dnsperf bulwark "$class" "scale$threads" "$port" 0 "$DUR" "$do"
            quota_off bulwark
        done
        stop_server "$SERVER_PID"
        SERVER_PID=
    done
}
