# shellcheck shell=bash
# bench/lib/stack_fault.sh — faults from outside, as a user runs them:
# `bench/fault …`, which is `bench/stack fault …`.
#
#   pause TARGET [--for MS]     SIGSTOP, the model of a GC pause or a stalled
#                               disk; with --for, SIGCONT after MS (and the
#                               command waits), else at `resume TARGET`
#   resume TARGET               SIGCONT
#   kill TARGET [--for MS]      SIGKILL: a crash; with --for, `bench/stack
#                               up` brings it back after MS
#   restart TARGET              SIGKILL, then `bench/stack up` brings it back
#   restart redis:K --alone [--empty]
#                               SIGKILL, then that server alone is started
#                               again (a fraction of a second, not up's
#                               seconds: within a lease), with what it keeps:
#                               server 1 its append-only file (--redis-aof),
#                               the others nothing, as if never locked;
#                               --empty: server 1 too comes back with
#                               nothing (its append-only file removed)
#   starve TARGET [--cpu PCT] [--for MS]
#                               CPU starvation: the process in a cgroup of
#                               its own whose quota is PCT % of one CPU (2),
#                               its timers and renewals late but running,
#                               unlike a pause; undone after MS or at `feed`
#   feed TARGET                 the quota lifted
#   reset app:PORT redis|mysql  the instance's connections reset by the
#                               backend: Redis's CLIENT KILL, MariaDB's KILL
#                               CONNECTION of each (MariaDB's need --netns,
#                               where they come over TCP from the instance's
#                               own address); the instance reconnects
#   expire app:PORT zk          the instance's ZooKeeper session expired from
#                               outside: the server it is connected to ends
#                               it (ZooKeeper's own terminateSession, through
#                               the server's JMX, bench/lib/ZkSession.java)
#   revoke etcd PRODUCT         the lease of the holder of PRODUCT's etcd lock
#                               revoked (etcdctl lease revoke)
#   clock redis --jump S [--for MS]
#                               every Redis server's wall clock moved S
#                               seconds on (libfaketime: `bench/stack up
#                               --redis-faketime`), so every expiry comes S
#                               seconds early; back after MS or at `clock
#                               redis --jump 0`
#   migrate PRODUCT [--for MS]  on the Redis Cluster (up --redis-cluster N),
#                               the slots of the product's keys (lock:P's,
#                               {stock:P}'s) moved to another master: its
#                               keys at once, the slot migrating (ASK) for
#                               MS (1000), then owned there (MOVED)
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
#   status                      what is paused, starved, cut or shifted now
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
# What a fault leaves in force when its command is interrupted (a quota,
# a clock moved on, a pause, a cut) `bench/stack down` undoes
# (fault_leftovers_undo).

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

# fault_for_ms ARGS...: the value of a lone `--for MS`, checked ("" without).
fault_for_ms() {
    case "$#:${1:-}" in
        0:) ;;
        2:--for) fault_ms "$2" ;;
        *) die "unknown option '$*' (--for MS)" ;;
    esac
}

# fault_kill TARGET [--for MS]: SIGKILL; with --for, `bench/stack up`
# brings it back MS later (only what was killed: the rest is as the last
# `up` left it).
fault_kill() {
    local name ms
    ms=$(fault_for_ms "${@:2}")
    name=$(fault_service "$1")
    fault_pid "$name" >/dev/null
    stack_lock
    svc_stop "$name" 0 KILL
    fault_log "killed ${name/-/:}${ms:+, back in $ms ms}"
    [[ -n $ms ]] || return 0
    exec 9>&-                       # cmd_up takes the lock itself
    fault_sleep_ms "$ms"
    cmd_up >/dev/null
    fault_log "restarted ${name/-/:} (bench/stack up)"
}

fault_restart() {
    fault_kill "$1"
    exec 9>&-                       # cmd_up takes the lock itself
    cmd_up >/dev/null
    fault_log "restarted $1 (bench/stack up)"
}

# fault_restart_alone redis:K [--empty]: the server killed and started
# again by itself, .run/stack.lock held throughout. `up` would check every
# service of the stack first (3 to 4 s), longer than a lease: a lock a
# holder took before the crash would expire before the server came back
# without it. --empty: whatever it keeps (server 1's append-only file) is
# removed before it starts, a disk lost with the machine.
fault_restart_alone() {
    local k=${1#redis:} empty=${2:-} dir kept
    topology_load
    if [[ $1 != redis:* || ! $k =~ ^[0-9]+$ ]] || ((k < 1 || k > TOPO_REDIS)); then
        die "restart --alone: only redis:K, K from 1 to $TOPO_REDIS, not '$1'"
    fi
    [[ -z $empty || $empty == --empty ]] || die "restart --alone: unknown option '$empty' (--empty)"
    fault_kill "$1"
    dir="$RUN/redis/$k"
    [[ -z $empty ]] || rm -rf "$dir/appendonlydir" "$dir/appendonly.aof" "$dir/dump.rdb"
    redis_start_one "$k"
    redis_ready >/dev/null
    if ((k == 1)) && [[ $TOPO_REDIS_AOF != no && -z $empty ]]; then
        kept="its append-only file kept"
    else
        kept="nothing kept: empty"
    fi
    fault_log "restarted $1 alone ($kept)"
}

# ------------------------------------------------------------ starvation

# A cgroup (v1) of the cpu controller per starved service, named by the
# stack's port offset and the service, under the group its process was in;
# the file .run/faults/starve-NAME remembers that group, so that `feed`,
# `status` and `down` find what is in force.
FAULT_CPU_ROOT=/sys/fs/cgroup/cpu

fault_cpu_group() { printf '%s/locklab%s-%s
' "$FAULT_CPU_ROOT" "$STACK_OFFSET" "$1"; }

# fault_cpu_of PID: the cpu controller's group of PID, relative to its root.
fault_cpu_of() {
    sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}cpu\(,[^:]*\)\{0,1\}:\(.*\)$/\3/p' "/proc/$1/cgroup" | head -1
}

fault_starve() {
    local target=$1 pct=2 ms="" name pid group was p
    shift
    while (($#)); do
        case $1 in
            --cpu)
                if ! [[ ${2:-} =~ ^[0-9]+$ ]] || (($2 < 1 || $2 > 100)); then
                    die "--cpu wants a percentage of one CPU, 1 to 100, not '${2:-}'"
                fi
                pct=$2 ;;
            --for) ms=$(fault_ms "${2:-}") ;;
            *) die "starve: unknown option '$1' (--cpu PCT, --for MS)" ;;
        esac
        shift 2 || die "starve: $1 wants a value"
    done
    ((EUID == 0)) || die "starve needs root (a cgroup of the cpu controller)"
    [[ -w $FAULT_CPU_ROOT/cgroup.procs ]] || die "starve needs the cgroup v1 cpu controller at $FAULT_CPU_ROOT"
    name=$(fault_service "$target")
    pid=$(fault_pid "$name")
    group=$(fault_cpu_group "$name")
    [[ -e $RUN/faults/starve-$name ]] && die "${name/-/:} is starved already (bench/fault feed ${name/-/:})"
    was=$(fault_cpu_of "$pid")
    mkdir -p "$RUN/faults" "$group" || die "cannot make the cgroup $group"
    printf '%s\n' "${was:-/}" >"$RUN/faults/starve-$name"
    echo 100000 >"$group/cpu.cfs_period_us"
    echo $((pct * 1000)) >"$group/cpu.cfs_quota_us"
    # Every process of its group (nginx's workers with their master), each
    # with all its threads (cgroup.procs, not tasks).
    for p in $(fault_group_pids "$pid"); do echo "$p" >"$group/cgroup.procs" 2>/dev/null || true; done
    fault_log "starved ${name/-/:} (pid $pid): $pct % of one CPU${ms:+ for $ms ms}"
    [[ -n $ms ]] || return 0
    fault_sleep_ms "$ms"
    fault_feed_name "$name"
}

# fault_group_pids PID: PID and the other processes of its process group.
fault_group_pids() {
    local g
    g=$(proc_group "$1" 2>/dev/null) || { printf '%s\n' "$1"; return 0; }
    if [[ $g == "$1" ]]; then pgrep -g "$g" || printf '%s\n' "$1"; else printf '%s\n' "$1"; fi
}

# fault_feed_name NAME: its processes back in their group, ours removed.
fault_feed_name() {
    local name=$1 group was p
    group=$(fault_cpu_group "$name")
    [[ -r $RUN/faults/starve-$name ]] || die "${name/-/:} is not starved"
    read -r was <"$RUN/faults/starve-$name"
    if [[ -d $group ]]; then
        while read -r p; do
            echo "$p" >"$FAULT_CPU_ROOT${was%/}/cgroup.procs" 2>/dev/null || true
        done <"$group/cgroup.procs"
        rmdir "$group" 2>/dev/null || warn "cannot remove the cgroup $group"
    fi
    rm -f "$RUN/faults/starve-$name"
    fault_log "fed ${name/-/:}: its CPU quota lifted"
}

# ------------------------------------------------------------ connections

# fault_app_conns app:PORT PORT...: "LOCAL PEER" for each TCP connection of
# the instance to one of the ports: in its namespace (--netns), every one
# there; else the sockets of its process.
fault_app_conns() {
    local app=$1 port=${1#app:} name pid i
    shift
    [[ $app == app:* && $port =~ ^[0-9]+$ ]] || die "the instance is app:PORT, not '$app'"
    name=$(svc_name "$app")
    pid=$(fault_pid "$name")
    topology_load
    if ((TOPO_NETNS)) && net_active; then
        i=$(net_app_index "$port")
        ip netns exec "$(net_app_ns "$i")" ss -Htn state established
    else
        ss -Htnp state established | grep -F "pid=$pid,"
    fi | awk -v ports=" $* " '{ n = split($4, p, ":"); if (index(ports, " " p[n] " ")) print $3, $4 }'
}

# fault_redis_ports: every Redis server an instance may be connected to.
fault_redis_ports() {
    local k
    topology_load
    for ((k = 1; k <= TOPO_REDIS; k++)); do redis_port "$k"; done
    ((TOPO_REDIS_REPLICA == 0)) || printf '%s\n' "$REDIS_REPLICA_PORT"
    for ((k = 1; k <= 2 * TOPO_REDIS_CLUSTER; k++)); do rcluster_port "$k"; done
}

fault_reset() {
    local app=$1 backend=${2:-} here peer n=0 id
    local -a ports
    case $backend in
        redis)
            mapfile -t ports < <(fault_redis_ports)
            while read -r here peer; do
                redis-cli -h 127.0.0.1 -p "${peer##*:}" CLIENT KILL ADDR "$here" >/dev/null 2>&1 &&
                    n=$((n + 1))
            done < <(fault_app_conns "$app" "${ports[@]}")
            ;;
        mysql | mariadb)
            topology_load
            ((TOPO_NETNS)) || die "reset $app mysql: the instances reach MariaDB through its socket, where nothing tells one from another: bench/stack up --netns"
            # One query for every session, one client for every KILL: an
            # instance has a connection per worker slot.
            local -A mine=()
            local sql=""
            while read -r here peer; do mine[$here]=1; done < <(fault_app_conns "$app" "$MYSQL_PORT")
            while read -r id here; do
                [[ -n ${mine[$here]:-} ]] || continue
                sql+="KILL CONNECTION $id; "
                n=$((n + 1))
            done < <(mysql_root -N -e "SELECT ID, HOST FROM information_schema.PROCESSLIST")
            [[ -z $sql ]] || mysql_root -f -e "$sql" 2>/dev/null || true
            ;;
        *) die "usage: bench/fault reset app:PORT redis|mysql" ;;
    esac
    fault_log "reset $n $backend connection(s) of $app (by the server)"
}

# fault_expire app:PORT zk: the instance's session, found by its connection
# in the servers' `cons`, ended by the server that holds the connection.
fault_expire() {
    local app=$1 k port here peer sid="" server="" cls="$RUN/zk/class"
    local -a ports
    [[ ${2:-} == zk ]] || die "usage: bench/fault expire app:PORT zk"
    topology_load
    for ((k = 1; k <= TOPO_ZK; k++)); do ports+=("$(zk_port "$k")"); done
    while read -r here peer; do
        for ((k = 1; k <= TOPO_ZK; k++)); do
            port=$(zk_port "$k")
            [[ ${peer##*:} == "$port" ]] || continue
            sid=$(tcp_chat "$port" cons | grep -F "/${here}[" | sed -n 's/.*sid=\(0x[0-9a-f]*\).*/\1/p')
            [[ -n $sid ]] && server=$k && break 2
        done
    done < <(fault_app_conns "$app" "${ports[@]}")
    [[ -n $sid ]] || die "expire: $app has no ZooKeeper session now (no connection in the servers' cons)"
    mkdir -p "$cls"
    if [[ ! $cls/ZkSession.class -nt $ROOT/bench/lib/ZkSession.java ]]; then
        javac -encoding UTF-8 -d "$cls" "$ROOT/bench/lib/ZkSession.java" ||
            die "cannot compile bench/lib/ZkSession.java"
    fi
    java -cp "$cls" ZkSession "$(fault_pid "zk-$server")" "$sid" >/dev/null ||
        die "expire: zk:$server did not end session $sid"
    fault_log "expired $app's ZooKeeper session $sid (ended by zk:$server)"
}

# fault_revoke etcd PRODUCT: the holder's key is the first created under
# the product's prefix (locks/etcd.c), named after its lease.
fault_revoke() {
    local key lease ep out
    [[ ${1:-} == etcd && ${2:-} =~ ^[A-Za-z0-9_-]+$ ]] || die "usage: bench/fault revoke etcd PRODUCT"
    topology_load
    ep=$(etcd_list "$TOPO_ETCD")
    key=$(ETCDCTL_API=3 etcdctl --endpoints "$ep" get --prefix "/locklab/etcd/$2/" --keys-only \
        --sort-by=CREATE --order=ASCEND --limit 1 2>&1 | head -1) || true
    [[ $key == /locklab/etcd/* ]] || die "revoke: nobody holds the etcd lock of product $2 (${key:-no key})"
    lease=${key##*/}
    out=$(ETCDCTL_API=3 etcdctl --endpoints "$ep" lease revoke "$lease" 2>&1) ||
        die "revoke: etcd did not revoke lease $lease: $out"
    fault_log "revoked etcd lease $lease, under which $key held product $2's lock"
}

# ------------------------------------------------------------ a slot's migration

# fault_rc PORT ARGS...: one command to the cluster node on PORT.
fault_rc() { local port=$1; shift; redis-cli -h 127.0.0.1 -p "$port" "$@"; }

# fault_slot_owner SLOT: "PORT ID" of the master that serves SLOT now.
fault_slot_owner() {
    fault_rc "$(rcluster_port 1)" CLUSTER NODES | awk -v s="$1" '
        $3 ~ /master/ && $8 == "connected" {
            for (i = 9; i <= NF; i++) {
                n = split($i, r, "-")
                if ((n == 1 && r[1] == s) || (n == 2 && r[1] <= s && s <= r[2])) {
                    split($2, a, "[:@]"); print a[2], $1; exit
                }
            }
        }'
}

# fault_migrate_slot SLOT MS: SLOT from its master to the next one, its
# keys moved at once and the slot left migrating (ASK) for MS, then its
# owner set everywhere (MOVED), as redis-cli --cluster reshard does.
fault_migrate_slot() {
    local slot=$1 ms=$2 from from_id to to_id port keys k id
    read -r from from_id <<<"$(fault_slot_owner "$slot")"
    [[ -n $from ]] || die "migrate: no master serves slot $slot"
    for ((k = 1; k <= 2 * TOPO_REDIS_CLUSTER; k++)); do     # the next master after it
        port=$(rcluster_port "$k")
        [[ $(rcluster_role "$k") == master && $port != "$from" ]] || continue
        [[ -z ${to:-} || ($port -gt $from && ($to -lt $from || $port -lt $to)) ]] && to=$port
    done
    [[ -n ${to:-} ]] || die "migrate: no other master to move slot $slot to"
    to_id=$(fault_rc "$to" CLUSTER MYID)
    fault_rc "$to" CLUSTER SETSLOT "$slot" IMPORTING "$from_id" >/dev/null
    fault_rc "$from" CLUSTER SETSLOT "$slot" MIGRATING "$to_id" >/dev/null
    fault_migrate_keys "$slot" "$from" "$to"
    fault_log "slot $slot migrating from 127.0.0.1:$from to 127.0.0.1:$to (ASK) for $ms ms"
    fault_sleep_ms "$ms"
    fault_migrate_keys "$slot" "$from" "$to"        # what was made meanwhile
    for ((k = 1; k <= 2 * TOPO_REDIS_CLUSTER; k++)); do
        port=$(rcluster_port "$k")
        [[ $(rcluster_role "$k") == master ]] || continue
        fault_rc "$port" CLUSTER SETSLOT "$slot" NODE "$to_id" >/dev/null
    done
    fault_log "slot $slot now served by 127.0.0.1:$to (MOVED)"
}

# fault_migrate_keys SLOT FROM TO: every key of SLOT on FROM moved to TO.
fault_migrate_keys() {
    local keys
    while :; do
        mapfile -t keys < <(fault_rc "$2" CLUSTER GETKEYSINSLOT "$1" 100)
        ((${#keys[@]})) && [[ -n ${keys[0]} ]] || return 0
        fault_rc "$2" MIGRATE 127.0.0.1 "$3" "" 0 5000 REPLACE KEYS "${keys[@]}" >/dev/null ||
            die "migrate: MIGRATE of slot $1's keys to 127.0.0.1:$3 failed"
    done
}

# fault_migrate PRODUCT [--for MS]: the slots of the product's keys (its
# locks', lock:P and {lock:P}…, and its Redis stock's, {stock:P}…).
fault_migrate() {
    local product=$1 ms=1000 slot
    local -a slots
    shift
    [[ $product =~ ^[A-Za-z0-9_-]+$ ]] || die "usage: bench/fault migrate PRODUCT [--for MS]"
    [[ -z ${1:-} ]] || ms=$(fault_for_ms "$@")
    topology_load
    ((TOPO_REDIS_CLUSTER)) || die "migrate needs the Redis Cluster: bench/stack up --redis-cluster 3"
    mapfile -t slots < <(for k in "lock:$product" "stock:$product"; do
        fault_rc "$(rcluster_port 1)" CLUSTER KEYSLOT "$k"; done | sort -u)
    for slot in "${slots[@]}"; do fault_migrate_slot "$slot" "$ms" & done
    wait
}

# ------------------------------------------------------------ clocks

# The offset every Redis server started under libfaketime reads (FAKETIME_
# TIMESTAMP_FILE, re-read at each call: FAKETIME_NO_CACHE), "+S" seconds.
fault_clock_file() { printf '%s/redis/faketime\n' "$RUN"; }

fault_clock() {
    local what=${1:-} jump="" ms=""
    shift || true
    [[ $what == redis ]] || die "usage: bench/fault clock redis --jump SECONDS [--for MS]"
    while (($#)); do
        case $1 in
            --jump) [[ ${2:-} =~ ^\+?[0-9]+$ ]] || die "--jump wants whole seconds ahead, not '${2:-}'"
                    jump=${2#+} ;;
            --for) ms=$(fault_ms "${2:-}") ;;
            *) die "clock: unknown option '$1' (--jump S, --for MS)" ;;
        esac
        shift 2 || die "clock: $1 wants a value"
    done
    [[ -n $jump ]] || die "usage: bench/fault clock redis --jump SECONDS [--for MS]"
    topology_load
    ((TOPO_REDIS_FAKETIME)) || die "clock redis: the Redis servers do not run under libfaketime (bench/stack up --redis-faketime)"
    printf '+%s\n' "$jump" >"$(fault_clock_file)"
    fault_log "moved the Redis servers' clock to +$jump s${ms:+ for $ms ms}"
    [[ -n $ms ]] || return 0
    fault_sleep_ms "$ms"
    printf '+0\n' >"$(fault_clock_file)"
    fault_log "moved the Redis servers' clock back to +0 s"
}

# fault_leftovers_undo: what an interrupted fault left in force (`down`):
# quotas lifted, the clock back; a pause and a cut go with their processes
# and tables.
fault_leftovers_undo() {
    local file
    for file in "$RUN/faults"/starve-*; do
        [[ -e $file ]] || continue
        fault_feed_name "${file##*/starve-}" >/dev/null
    done
    [[ ! -e $(fault_clock_file) ]] || printf '+0\n' >"$(fault_clock_file)"
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
    for file in "$RUN/faults"/starve-*; do
        [[ -e $file ]] || continue
        name=${file##*/starve-}
        printf 'starved %s\n' "${name/-/:}"
    done
    if [[ -r $(fault_clock_file) && $(<"$(fault_clock_file)") != +0 ]]; then
        printf 'clock   the Redis servers at %s s\n' "$(<"$(fault_clock_file)")"
    fi
    return 0
}

cmd_fault() {
    local what=${1:-}
    (($#)) && shift
    # A fault that leaves the process as it was (a pause, a resume, a
    # partition, a failover) changes what the last `up` checked: the next
    # `up` then checks every server (bench/stack, up_state). A kill changes
    # the pid, which the next `up` sees itself; the others change nothing
    # `up` checks (a quota, a connection, a session, a clock).
    case $what in
        status | kill | restart | starve | feed | reset | expire | revoke | clock | migrate) ;;
        *) rm -f "$RUN/up.stamp" ;;
    esac
    case $what in
        pause) (($# >= 1)) || die "usage: bench/fault pause TARGET [--for MS]"; fault_pause "$@" ;;
        resume) (($# == 1)) || die "usage: bench/fault resume TARGET"; fault_resume "$1" ;;
        kill) (($# == 1 || $# == 3)) || die "usage: bench/fault kill TARGET [--for MS]"; fault_kill "$@" ;;
        restart)
            case "$#:${2:-}" in
                1:) fault_restart "$1" ;;
                2:--alone | 3:--alone) fault_restart_alone "$1" "${3:-}" ;;
                *) die "usage: bench/fault restart TARGET | restart redis:K --alone [--empty]" ;;
            esac
            ;;
        starve) (($# >= 1)) || die "usage: bench/fault starve TARGET [--cpu PCT] [--for MS]"; fault_starve "$@" ;;
        feed) (($# == 1)) || die "usage: bench/fault feed TARGET"; fault_feed_name "$(fault_service "$1")" ;;
        reset) (($# == 2)) || die "usage: bench/fault reset app:PORT redis|mysql"; fault_reset "$@" ;;
        expire) (($# == 2)) || die "usage: bench/fault expire app:PORT zk"; fault_expire "$@" ;;
        revoke) (($# == 2)) || die "usage: bench/fault revoke etcd PRODUCT"; fault_revoke "$@" ;;
        clock) fault_clock "$@" ;;
        migrate) (($# == 1 || $# == 3)) || die "usage: bench/fault migrate PRODUCT [--for MS]"
            fault_migrate "$@" ;;
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
