# shellcheck shell=bash
# bench/lib/stack_replica.sh — a replica of Redis server 1 and a Sentinel
# (`bench/stack up --redis-replica`, kept until `up --no-redis-replica`),
# and the failover `bench/fault failover` asks the Sentinel for.
#
#   redis:replica  16399   .run/redis/replica: a replica of redis:1, kept
#                          on disk as server 1 is (it may be the master
#                          one day, holding the Redis stock)
#   sentinel       26379   .run/sentinel: one Sentinel (Debian's
#                          redis-sentinel) watching the master "locklab",
#                          redis:1 at first: quorum 1, down after 2 s
#
# The instances then get --redis-sentinel: every connection to server 1
# asks the Sentinel for the master first (locks/redis_conn.c), as a
# Redisson client made with useSentinelServers() does, so they follow a
# failover. The Sentinel fails over by itself when the master stays down
# for 2 s (`bench/stack kill redis:1`); `bench/fault failover` asks it to at
# once (SENTINEL FAILOVER), and makes what the seeds warn of certain:
#
#   --lag MS   first the replica's link to its master is cut, by two
#              nftables rules on that one connection's ports (found in the
#              master's CLIENT LIST TYPE replica): the replica still
#              answers the Sentinel, so it can be promoted, but whatever
#              the master takes in those MS (a lock) never reaches it;
#   then       SENTINEL FAILOVER; and once the replica is promoted, the
#              old master is demoted at once: REPLICAOF the new one and
#              CLIENT KILL of its normal and pub/sub clients, in one MULTI,
#              which is what the Sentinel itself sends it, only some 8 s
#              later (4 × its publish period), a window in which clients
#              still connected to the old master go on using it. Then the
#              cut is healed, and the old master resyncs from the new one,
#              losing what the replica never got.
#
# `up` puts things back: redis:1 the master, the replica replicating it,
# the Sentinel naming redis:1 (when it names the replica, redis:1 first
# catches up with it as its replica, then takes over by a failover back).
# Without --redis-replica the two are stopped and redis:1 is a master.

REDIS_REPLICA_PORT=$((16399 + STACK_OFFSET))
SENTINEL_PORT=$((26379 + STACK_OFFSET))
SENTINEL_MASTER=locklab
REPL_TABLE="llrepl$((STACK_OFFSET / 100 % 200))"

# Where the Sentinel and the instances reach the two servers (the address
# the Sentinel monitors and announces): NET_HOST with --netns.
replica_host() {
    if ((TOPO_NETNS)); then printf '%s\n' "$NET_HOST"; else printf '127.0.0.1\n'; fi
}

# rcli PORT COMMAND...: one command to the Redis server or Sentinel on PORT.
rcli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}" 2>/dev/null; }

# redis_role PORT: master or slave; nothing when it does not answer.
redis_role() { rcli "$1" ROLE | head -1; }

# sentinel_master: the port of the master the Sentinel names.
sentinel_master() {
    local port
    port=$(rcli "$SENTINEL_PORT" SENTINEL get-master-addr-by-name "$SENTINEL_MASTER" | sed -n 2p)
    [[ $port =~ ^[0-9]+$ ]] && printf '%s\n' "$port"
}

# other_server PORT: the other one of redis:1 and redis:replica.
other_server() {
    if (($1 == $(redis_port 1))); then printf '%s\n' "$REDIS_REPLICA_PORT"; else redis_port 1; fi
}

# replica_synced PORT: PORT is a replica, linked to its master, synced.
replica_synced() {
    local info
    info=$(rcli "$1" INFO replication | tr -d '\r')
    grep -qx 'role:slave' <<<"$info" && grep -qx 'master_link_status:up' <<<"$info" &&
        grep -qx 'master_sync_in_progress:0' <<<"$info"
}

# replica_of PORT MASTER: make PORT a replica of the server on MASTER.
replica_of() {
    local info
    info=$(rcli "$1" INFO replication | tr -d '\r')
    grep -qx 'role:slave' <<<"$info" && grep -qx "master_port:$2" <<<"$info" && return 0
    [[ $(rcli "$1" REPLICAOF "$(replica_host)" "$2") == OK ]] ||
        die "redis on $1 refuses to become a replica of $2"
}

# sentinel_ready: the Sentinel names redis:1 and knows a replica in good
# health (flags exactly "slave"), which is synced: a failover can start.
sentinel_ready() {
    local flags
    [[ $(sentinel_master) == "$(redis_port 1)" ]] || return 1
    flags=$(rcli "$SENTINEL_PORT" SENTINEL replicas "$SENTINEL_MASTER" | grep -A1 -x flags | sed -n 2p)
    [[ $flags == slave ]] && replica_synced "$REDIS_REPLICA_PORT"
}

replica_start() {
    local dir="$RUN/redis/replica" log="$RUN/logs/redis-replica.log" pid
    if pid=$(svc_pid redis-replica) && { ! bind_ok "$dir/bind" ||
        [[ $(cat "$dir/persist" 2>/dev/null) != "$(redis_persist 1)" ]]; }; then
        say "redis:replica: its addresses or persistence changed, restarting it"
        svc_stop redis-replica 10
    fi
    if pid=$(svc_pid redis-replica); then
        say "redis:replica already running (pid $pid)"
        return 0
    fi
    port_free_or_die "$REDIS_REPLICA_PORT" redis:replica
    mkdir -p "$dir"
    rm -f "$(pid_file redis-replica)"
    printf '=== %s: redis-server on %s, a replica\n' "$(date '+%F %T')" "$REDIS_REPLICA_PORT" >>"$log"
    # shellcheck disable=SC2046 # one word per address and per persistence flag
    (cd "$dir" && "${BACKEND_PRIO[@]}" redis-server --bind $(backend_binds) \
        --port "$REDIS_REPLICA_PORT" --dir "$dir" --save '' $(redis_persist 1) \
        --maxclients 10000 --protected-mode "$( ((TOPO_NETNS)) && echo no || echo yes)" \
        --replicaof "$(replica_host)" "$(redis_port 1)" \
        --daemonize yes --pidfile "$(pid_file redis-replica)" --logfile "$log" 9>&-) ||
        { log_tail "$log"; die "redis:replica failed to start"; }
    wait_for redis:replica "$STACK_TIMEOUT" - "$log" redis_ping "$REDIS_REPLICA_PORT"
    backend_binds >"$dir/bind"
    redis_persist 1 >"$dir/persist"
    backend_first redis:replica "$(svc_pid redis-replica)"
}

# sentinel_conf: written afresh at every start (the Sentinel rewrites it
# as it learns the replica and the failovers).
sentinel_conf() {
    cat <<EOF
# generated by bench/stack: the Sentinel of the master $SENTINEL_MASTER (redis:1)
port $SENTINEL_PORT
bind $(backend_binds)
protected-mode no
daemonize yes
pidfile $(pid_file sentinel)
logfile $RUN/logs/sentinel.log
dir $RUN/sentinel
sentinel monitor $SENTINEL_MASTER $(replica_host) $(redis_port 1) 1
sentinel down-after-milliseconds $SENTINEL_MASTER 2000
sentinel failover-timeout $SENTINEL_MASTER 10000
sentinel parallel-syncs $SENTINEL_MASTER 1
EOF
}

sentinel_start() {
    local dir="$RUN/sentinel" log="$RUN/logs/sentinel.log"
    port_free_or_die "$SENTINEL_PORT" sentinel
    mkdir -p "$dir"
    rm -f "$(pid_file sentinel)"
    sentinel_conf >"$dir/sentinel.conf"
    printf '=== %s: redis-sentinel on %s\n' "$(date '+%F %T')" "$SENTINEL_PORT" >>"$log"
    (cd "$dir" && "${BACKEND_PRIO[@]}" redis-sentinel "$dir/sentinel.conf" 9>&-) ||
        { log_tail "$log"; die "the Sentinel failed to start"; }
    wait_for sentinel "$STACK_TIMEOUT" - "$log" redis_ping "$SENTINEL_PORT"
    backend_first sentinel "$(svc_pid sentinel)"
}

# replica_up: the replica and the Sentinel, redis:1 the master.
replica_up() {
    local r1 master
    r1=$(redis_port 1)
    if ! svc_running sentinel && [[ $(redis_role "$r1") == slave ]]; then
        say "redis:1 is a replica (a failover) and no Sentinel runs: it is the master again"
        rcli "$r1" REPLICAOF NO ONE >/dev/null
    fi
    replica_start
    # A Sentinel that names a server which is a replica in fact saw a
    # failover that a restart has since undone (new addresses restart both
    # servers, redis:1 a master, the replica its replica): its picture is
    # stale, and following it would make each server the other's replica.
    master=$(sentinel_master) || master=
    if [[ -n $master && $(redis_role "$master") == slave ]]; then
        say "the Sentinel names the server on $master, a replica since a restart: a new Sentinel"
        svc_stop sentinel 15
        [[ $(redis_role "$r1") == slave ]] && rcli "$r1" REPLICAOF NO ONE >/dev/null
    fi
    if ! svc_running sentinel; then
        replica_of "$REDIS_REPLICA_PORT" "$r1"
        sentinel_start
    fi
    master=$(sentinel_master) || die "the Sentinel on $SENTINEL_PORT names no master"
    if ((master != r1)); then
        say "the Sentinel names redis:replica (a failover): redis:1 catches up, then takes over"
        replica_of "$r1" "$master"
        wait_for "redis:1 catching up" "$STACK_TIMEOUT" - "$RUN/logs/redis-1.log" replica_synced "$r1"
        redis_switch 0
    fi
    wait_for "the Sentinel" "$STACK_TIMEOUT" - "$RUN/logs/sentinel.log" sentinel_ready
    say "redis:replica up on 127.0.0.1:$REDIS_REPLICA_PORT; the Sentinel on $SENTINEL_PORT names redis:1"
}

# replica_down: without --redis-replica, neither runs and redis:1 is a master.
replica_down() {
    repl_heal
    svc_running sentinel && svc_stop sentinel 15
    svc_running redis-replica && svc_stop redis-replica 10
    if [[ $(redis_role "$(redis_port 1)") == slave ]]; then
        say "redis:1 was a replica (a failover): it is the master again"
        rcli "$(redis_port 1)" REPLICAOF NO ONE >/dev/null
    fi
    return 0
}

# ------------------------------------------------------------------ the failover

# repl_cut MASTER: cut the replica's connection to the master on port
# MASTER, both ways; say which.
repl_cut() {
    local port
    if ((EUID != 0)) || ! command -v nft >/dev/null; then
        die "cutting the replication link needs root and nftables (bench/stack install)"
    fi
    port=$(rcli "$1" CLIENT LIST TYPE replica | sed -n 's/^id=[0-9]* addr=[^ ]*:\([0-9]*\) .*/\1/p' | head -1)
    [[ -n $port ]] || die "no replica is connected to the master on $1"
    nft -f - <<EOF || die "cannot create nftables table $REPL_TABLE"
table inet $REPL_TABLE {
    chain output {
        type filter hook output priority 0; policy accept;
        tcp sport $port tcp dport $1 drop
        tcp sport $1 tcp dport $port drop
    }
}
EOF
    printf '%s\n' "$port"
}

repl_heal() {
    ((EUID == 0)) && command -v nft >/dev/null || return 0
    nft delete table inet "$REPL_TABLE" 2>/dev/null || true
}

# repl_cut_active: a cut is in force.
repl_cut_active() {
    ((EUID == 0)) && command -v nft >/dev/null && nft list table inet "$REPL_TABLE" >/dev/null 2>&1
}

# redis_switch LAG_MS: the master the Sentinel names gives way to the other
# server, its replica; with LAG_MS > 0 the replica's link is cut that long
# first. The old master is demoted as soon as the new one is named.
redis_switch() {
    local lag=$1 from to link deadline
    from=$(sentinel_master) || die "the Sentinel on $SENTINEL_PORT does not answer"
    to=$(other_server "$from")
    if ((lag > 0)); then
        # The replica's link must be up to be cut (after a failover the old
        # master takes a moment to resync as the new one's replica).
        wait_for "a synced replica of $from" "$STACK_TIMEOUT" - "$RUN/logs/sentinel.log" \
            replica_synced "$to"
        link=$(repl_cut "$from")
        say "replication $from -> $to cut (the replica's port $link) for $lag ms"
        sleep "$((lag / 1000)).$(printf '%03d' $((lag % 1000)))"
    fi
    deadline=$((SECONDS + 30))
    # NOGOODSLAVE until the Sentinel has seen the replica's INFO (after a
    # failover back, the old master is a replica it has just met).
    until [[ $(rcli "$SENTINEL_PORT" SENTINEL FAILOVER "$SENTINEL_MASTER") == OK ]]; do
        ((SECONDS < deadline)) || { repl_heal; die "the Sentinel refuses to fail over to $to (see .run/logs/sentinel.log)"; }
        sleep 0.2
    done
    until [[ $(sentinel_master) == "$to" ]]; do
        ((SECONDS < deadline)) || { repl_heal; die "the Sentinel did not name $to within 30 s"; }
        sleep 0.05
    done
    printf 'MULTI\nREPLICAOF %s %s\nCLIENT KILL TYPE normal\nCLIENT KILL TYPE pubsub\nEXEC\n' \
        "$(replica_host)" "$to" | rcli "$from" >/dev/null
    repl_heal
    say "failover: the master is the server on $to; the one on $from is its replica"
}
