# shellcheck shell=bash
# bench/lib/stack_rcluster.sh — a Redis Cluster beside the independent
# servers (`bench/stack up --redis-cluster N`, N masters each with a
# replica, kept in .run/topology until `up --redis-cluster 0`).
#
#   redis:cK   16000+K-1   .run/redis/cK: node K of 2N, Debian's
#              (bus +10000) redis-server in cluster mode (its nodes.conf
#                          and nothing else there: no RDB, no AOF, as the
#                          lock servers); nodes 1..N the masters at the
#                          creation, N+1..2N their replicas
#
# A new cluster is made by `redis-cli --cluster create … --cluster-replicas
# 1 --cluster-yes` (the first N addresses become the masters, each of the
# others the replica of one); nodes restarted on their nodes.conf rejoin
# it by themselves. `up` then waits for cluster_state:ok and for every
# replica's link to be up: a replica that has not finished its first sync
# holds nothing and may not be promoted (cluster-replica-validity-factor),
# so a master killed right after `up` would leave its slots dead. Masters
# sync their replicas at once (repl-diskless-sync-delay 0, not the 5 s
# Redis waits for more replicas to join one transfer). The nodes time
# each other out after 2 s (cluster-node-timeout 2000), so a master killed
# mid-run is replaced by its replica within some 3 s; the whole cluster
# refuses commands meanwhile (cluster-require-full-coverage, the default).
#
# The instances get --redis-cluster with every node's address (their seed
# nodes: the client asks the first that answers for CLUSTER SLOTS,
# clients/redis_cluster.c), and every Redis strategy runs on the cluster.
# The services are redis-cK, so `down` stops them with the other Redis
# servers, and status shows each with its role.

RCLUSTER_BASE_PORT=$((16000 + STACK_OFFSET))
RCLUSTER_NODE_TIMEOUT_MS=2000

rcluster_port() { printf '%d\n' $((RCLUSTER_BASE_PORT + $1 - 1)); }

# rcluster_list N [HOST]: the 2N nodes' addresses, comma-separated.
rcluster_list() {
    local k out="" host=${2:-127.0.0.1}
    for ((k = 1; k <= 2 * $1; k++)); do out+="${out:+,}$host:$((RCLUSTER_BASE_PORT + k - 1))"; done
    printf '%s\n' "$out"
}

# rcluster_info PORT FIELD: one field of CLUSTER INFO of the node on PORT.
rcluster_info() {
    redis-cli -h 127.0.0.1 -p "$1" CLUSTER INFO 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"
}

# rcluster_ok N: every node answers cluster_state:ok, the cluster has N
# masters with slots (cluster_size), and every replica is in sync with its
# master (master_link_status:up).
rcluster_ok() {
    local k port
    for ((k = 1; k <= 2 * $1; k++)); do
        port=$(rcluster_port "$k")
        [[ $(rcluster_info "$port" cluster_state) == ok ]] || return 1
        [[ $(rcluster_info "$port" cluster_size) == "$1" ]] || return 1
        [[ $(rcluster_role "$k") == slave ]] || continue
        redis-cli -h 127.0.0.1 -p "$port" INFO replication 2>/dev/null |
            grep -q '^master_link_status:up' || return 1
    done
}

# rcluster_role K: master or slave (ROLE's first line), nothing when down.
rcluster_role() { redis-cli -h 127.0.0.1 -p "$(rcluster_port "$1")" ROLE 2>/dev/null | head -1; }

rcluster_start_one() {
    local k=$1 port dir log
    port=$(rcluster_port "$k")
    dir="$RUN/redis/c$k"
    log="$RUN/logs/redis-c$k.log"
    svc_running "redis-c$k" && return 0
    port_free_or_die "$port" "redis:c$k"
    port_free_or_die "$((port + 10000))" "redis:c$k's cluster bus"
    mkdir -p "$dir"
    rm -f "$(pid_file "redis-c$k")"
    printf '=== %s: redis-server on %s, cluster node %s\n' "$(date '+%F %T')" "$port" "$k" >>"$log"
    # shellcheck disable=SC2046 # one word per address
    (cd "$dir" && "${BACKEND_PRIO[@]}" redis-server --bind $(backend_binds) --port "$port" \
        --dir "$dir" --save '' --appendonly no --maxclients 10000 \
        --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" \
        --cluster-node-timeout "$RCLUSTER_NODE_TIMEOUT_MS" --repl-diskless-sync-delay 0 \
        --protected-mode "$( ((TOPO_NETNS)) && echo no || echo yes)" \
        --daemonize yes --pidfile "$(pid_file "redis-c$k")" --logfile "$log" 9>&-) ||
        { log_tail "$log"; die "redis:c$k failed to start"; }
    wait_for "redis:c$k" "$STACK_TIMEOUT" - "$log" redis_ping "$port"
    backend_first "redis:c$k" "$(svc_pid "redis-c$k")"
}

# rcluster_stop_extra N: nodes beyond 2N (a bigger cluster before) stopped,
# their folders removed: a node that knew the old cluster cannot join a new
# one. With N = 0 every node.
rcluster_stop_extra() {
    local n=$1 file k
    for file in "$RUN/pids"/redis-c*.pid; do
        [[ -e $file ]] || continue
        k=${file##*/redis-c}
        k=${k%.pid}
        [[ $k =~ ^[0-9]+$ ]] && ((k > 2 * n)) && svc_stop "redis-c$k" 10
    done
    return 0
}

# rcluster_up N: 2N nodes running, in one cluster of N masters, state ok.
rcluster_up() {
    local n=$1 k port assigned=0 size="" fresh=0
    local -a addrs=()
    if [[ -r $RUN/redis/cluster-size ]]; then size=$(<"$RUN/redis/cluster-size"); fi
    if [[ -n $size && $size != "$n" ]]; then
        say "redis cluster: $size masters before, $n now: made afresh"
        rcluster_stop_extra 0
        rm -rf "$RUN"/redis/c[0-9]*
    fi
    for ((k = 1; k <= 2 * n; k++)); do
        svc_running "redis-c$k" || [[ -s $RUN/redis/c$k/nodes.conf ]] || fresh=1
        rcluster_start_one "$k"
        addrs+=("127.0.0.1:$(rcluster_port "$k")")
    done
    for ((k = 1; k <= 2 * n; k++)); do
        port=$(rcluster_port "$k")
        ((assigned += $(rcluster_info "$port" cluster_slots_assigned))) || true
    done
    if ((assigned == 0)); then
        ((fresh)) || say "redis cluster: no node holds a slot: made afresh"
        redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
            >>"$RUN/logs/redis-cluster.log" 2>&1 ||
            { log_tail "$RUN/logs/redis-cluster.log"; die "redis-cli --cluster create failed"; }
    fi
    printf '%s\n' "$n" >"$RUN/redis/cluster-size"
    wait_for "the redis cluster (cluster_state:ok, replicas in sync)" "$STACK_TIMEOUT" - \
        "$RUN/logs/redis-c1.log" rcluster_ok "$n"
    say "redis cluster up: $n masters and $n replicas on 127.0.0.1:$(rcluster_port 1)..$(rcluster_port $((2 * n)))"
}

# rcluster_down: without --redis-cluster, no node runs (their nodes.conf
# stay: the next `up --redis-cluster N` of the same N finds the cluster).
rcluster_down() { rcluster_stop_extra 0; }

# rcluster_status N: one status line per node, with its role.
rcluster_status() {
    local k
    for ((k = 1; k <= 2 * $1; k++)); do
        status_line "redis:c$k" "redis-c$k" "127.0.0.1:$(rcluster_port "$k") $(rcluster_role "$k")"
    done
}
