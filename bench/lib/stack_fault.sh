# shellcheck shell=bash
# bench/lib/stack_fault.sh — faults from outside, as a user runs them:
# `bench/fault …`, which is `bench/stack fault …`.
#
#   pause TARGET [--for MS]     SIGSTOP, the model of a GC pause or a stalled
#                               disk; with --for, SIGCONT after MS (and the
#                               command waits), else at `resume TARGET`
#   resume TARGET               SIGCONT
#   kill TARGET                 SIGKILL: a crash
#   restart TARGET              SIGKILL, then `bench/stack up` brings it back
#   restart redis:K --alone     SIGKILL, then that server alone is started
#                               again (a fraction of a second, not up's
#                               seconds: within a lease), with what it keeps:
#                               server 1 its append-only file (--redis-aof),
#                               the others nothing, as if never locked
#   partition app:PORT BACKEND [--for MS]
#                               cut the instance off from BACKEND (mysql,
#                               redis, redis:K, zk, zk:K, etcd, etcd:K; redis,
#                               zk and etcd mean all of their servers), healed after MS or at
#                               `heal`; needs `bench/stack up --netns`
#   heal [app:PORT]             remove the cuts (of one instance, or all)
#   failover [--lag MS]         Redis server 1's master gives way to its
#                               replica, through the Sentinel; with --lag
#                               the replica's link is cut MS first, so what
#                               the master took meanwhile is lost (needs
#                               `bench/stack up --redis-replica`; --lag
#                               needs root): bench/lib/stack_replica.sh
#   status                      what is paused or cut now
#
# TARGET is app:PORT, mysql, redis:K, zk:K, zk:leader, zk:follower, etcd:K,
# etcd:leader, etcd:follower or nginx.
# A pause stops the whole process group (nginx's workers with their
# master), as a stop-the-world pause stops every thread; the process keeps
# its sockets, its sessions and its locks, and finds on waking that time
# went on without it. A partition drops packets both ways between one
# namespaced instance and the backend's port, nothing else: see
# bench/lib/stack_net.sh. Every fault is logged to .run/logs/faults.log
# with the time, so a test or a report can line it up with what it saw.

fault_log() {
    printf '%s %s\n' "$(date '+%F %T.%3N')" "$*" >>"$RUN/logs/faults.log"
    say "$*"
}

# fault_service TARGET: the internal service name (zk:leader resolved now).
fault_service() {
    local k
    topology_load
    case $1 in
        zk:leader)
            k=$(zk_leader "$TOPO_ZK") || die "no ZooKeeper leader now"
            printf 'zk-%s\n' "$k"
            ;;
        zk:follower)
            ((TOPO_ZK > 1)) || die "zk:follower: ZooKeeper runs standalone (bench/stack up --zk 3)"
            for ((k = 1; k <= TOPO_ZK; k++)); do
                [[ $(zk_mode "$k") == follower ]] && { printf 'zk-%s\n' "$k"; return 0; }
            done
            die "no ZooKeeper follower now"
            ;;
        etcd:leader)
            k=$(etcd_leader "$TOPO_ETCD") || die "no etcd leader now"
            printf 'etcd-%s\n' "$k"
            ;;
        etcd:follower)
            ((TOPO_ETCD > 1)) || die "etcd:follower: etcd runs alone (bench/stack up --etcd 3)"
            for ((k = 1; k <= TOPO_ETCD; k++)); do
                [[ $(etcd_role "$k") == follower ]] && { printf 'etcd-%s\n' "$k"; return 0; }
            done
            die "no etcd follower now"
            ;;
        *) svc_name "$1" ;;
    esac
}

fault_pid() {
    local pid
    pid=$(svc_pid "$1") || die "${1/-/:} is not running"
    printf '%s\n' "$pid"
}

# fault_ms VALUE: a --for value, checked.
fault_ms() {
    if ! [[ $1 =~ ^[0-9]+$ ]] || (($1 < 1 || $1 > 3600000)); then
        die "--for wants milliseconds from 1 to 3600000, not '$1'"
    fi
    printf '%s\n' "$1"
}

fault_sleep_ms() { sleep "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))"; }

fault_pause() {
    local target=$1 ms="" name pid
    shift
    case ${1:-} in
        --for) ms=$(fault_ms "${2:-}") ;;
        "") ;;
        *) die "pause: unknown option '$1'" ;;
    esac
    name=$(fault_service "$target")
    pid=$(fault_pid "$name")
    svc_signal "$pid" STOP
    fault_log "paused ${name/-/:} (pid $pid)${ms:+ for $ms ms}"
    [[ -n $ms ]] || return 0
    fault_sleep_ms "$ms"
    svc_signal "$pid" CONT
    fault_log "resumed ${name/-/:} (pid $pid)"
}

fault_resume() {
    local name pid
    name=$(fault_service "$1")
    pid=$(fault_pid "$name")
    svc_signal "$pid" CONT
    fault_log "resumed ${name/-/:} (pid $pid)"
}

fault_kill() {
    local name
    name=$(fault_service "$1")
    fault_pid "$name" >/dev/null
    stack_lock
    svc_stop "$name" 0 KILL
    fault_log "killed ${name/-/:}"
}

fault_restart() {
    fault_kill "$1"
    exec 9>&-                       # cmd_up takes the lock itself
    cmd_up >/dev/null
    fault_log "restarted $1 (bench/stack up)"
}

# fault_restart_alone redis:K: the server killed and started again by
# itself, .run/stack.lock held throughout. `up` would check every service
# of the stack first (3 to 4 s), longer than a lease: a lock a holder took
# before the crash would expire before the server came back without it.
fault_restart_alone() {
    local k=${1#redis:}
    topology_load
    if [[ $1 != redis:* || ! $k =~ ^[0-9]+$ ]] || ((k < 1 || k > TOPO_REDIS)); then
        die "restart --alone: only redis:K, K from 1 to $TOPO_REDIS, not '$1'"
    fi
    fault_kill "$1"
    redis_start_one "$k"
    redis_ready >/dev/null
    fault_log "restarted $1 alone ($( ((k == 1)) && [[ $TOPO_REDIS_AOF != no ]] &&
        echo "its append-only file kept" || echo "nothing kept: empty"))"
}

# fault_ports BACKEND: the ports a cut from BACKEND blocks.
fault_ports() {
    local k
    topology_load
    case $1 in
        mysql | mariadb) printf '%s\n' "$MYSQL_PORT" ;;
        redis) for ((k = 1; k <= TOPO_REDIS; k++)); do redis_port "$k"; done ;;
        redis:[1-9]*) redis_port "${1#redis:}" ;;
        zk) for ((k = 1; k <= TOPO_ZK; k++)); do zk_port "$k"; done ;;
        zk:[1-9]*) zk_port "${1#zk:}" ;;
        etcd) for ((k = 1; k <= TOPO_ETCD; k++)); do etcd_port "$k"; done ;;
        etcd:[1-9]*) etcd_port "${1#etcd:}" ;;
        *) die "partition: BACKEND is mysql, redis, redis:K, zk, zk:K, etcd or etcd:K, not '$1'" ;;
    esac
}

# fault_app_index app:PORT: the instance's index, checked.
fault_app_index() {
    local port=${1#app:}
    [[ $1 == app:* && $port =~ ^[0-9]+$ ]] || die "partition: the first target is app:PORT, not '$1'"
    topology_load
    if ((TOPO_NETNS == 0)) || ! net_active; then
        die "partition needs instances in network namespaces: bench/stack up --netns"
    fi
    net_app_index "$port"
}

fault_partition() {
    local app=$1 backend=$2 ms="" i
    local -a ports
    shift 2 || die "usage: bench/fault partition app:PORT BACKEND [--for MS]"
    case ${1:-} in
        --for) ms=$(fault_ms "${2:-}") ;;
        "") ;;
        *) die "partition: unknown option '$1'" ;;
    esac
    i=$(fault_app_index "$app")
    mapfile -t ports < <(fault_ports "$backend")
    net_cut "$i" "${ports[@]}"
    fault_log "cut $app from $backend (ports ${ports[*]})${ms:+ for $ms ms}"
    [[ -n $ms ]] || return 0
    fault_sleep_ms "$ms"
    net_heal "$i"
    fault_log "healed $app"
}

fault_heal() {
    local i=""
    [[ -n ${1:-} ]] && i=$(fault_app_index "$1")
    net_active && net_heal "$i"
    fault_log "healed ${1:-every instance}"
}

fault_failover() {
    local lag=0
    case ${1:-} in
        --lag) lag=$(fault_ms "${2:-}") ;;
        "") ;;
        *) die "failover: unknown option '$1'" ;;
    esac
    topology_load
    if ((TOPO_REDIS_REPLICA == 0)) || ! svc_running sentinel; then
        die "failover needs Redis's replica and Sentinel: bench/stack up --redis-replica"
    fi
    fault_log "failover of Redis server 1 asked$( ((lag)) && echo " (replication cut for $lag ms first)")"
    redis_switch "$lag"
    fault_log "failover done: the master is redis on $(sentinel_master)"
}

fault_status() {
    local file name pid state cuts
    for file in "$RUN/pids"/*.pid; do
        [[ -e $file ]] || continue
        name=${file##*/}
        name=${name%.pid}
        pid=$(svc_pid "$name") || continue
        state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
        [[ $state == T ]] && printf 'paused  %s (pid %s)\n' "${name/-/:}" "$pid"
    done
    if net_active; then
        cuts=$(net_cuts)
        [[ -z $cuts ]] || printf 'cut     %s\n' "$cuts"
    fi
    repl_cut_active && printf 'cut     the replication link of Redis server 1\n'
    return 0
}

cmd_fault() {
    local what=${1:-}
    (($#)) && shift
    # A fault that leaves the process as it was (a pause, a resume, a
    # partition, a failover) changes what the last `up` checked: the next
    # `up` then checks every server (bench/stack, up_state). A kill changes
    # the pid, which the next `up` sees itself.
    case $what in
        status | kill | restart) ;;
        *) rm -f "$RUN/up.stamp" ;;
    esac
    case $what in
        pause) (($# >= 1)) || die "usage: bench/fault pause TARGET [--for MS]"; fault_pause "$@" ;;
        resume) (($# == 1)) || die "usage: bench/fault resume TARGET"; fault_resume "$1" ;;
        kill) (($# == 1)) || die "usage: bench/fault kill TARGET"; fault_kill "$1" ;;
        restart)
            case "$#:${2:-}" in
                1:) fault_restart "$1" ;;
                2:--alone) fault_restart_alone "$1" ;;
                *) die "usage: bench/fault restart TARGET | restart redis:K --alone" ;;
            esac
            ;;
        partition) (($# >= 2)) || die "usage: bench/fault partition app:PORT BACKEND [--for MS]"
            fault_partition "$@" ;;
        heal) fault_heal "${1:-}" ;;
        failover) (($# == 0 || $# == 2)) || die "usage: bench/fault failover [--lag MS]"
            fault_failover "$@" ;;
        status) fault_status ;;
        *) sed -n '4,/^# TARGET/p' "$ROOT/bench/lib/stack_fault.sh" | sed 's/^# \{0,1\}//' >&2
           exit 2 ;;
    esac
}
