# shellcheck shell=bash
# bench/lib/stack_galera.sh — a MariaDB Galera cluster (`bench/stack up
# --galera N`, N = 3 or 5, kept in .run/topology until `up --galera 0`),
# each locklab instance talking to its own node: instance i to node
# i mod N + 1, as a load balancer that pins each application server to
# the nearest node would.
#
#   galera:K   MariaDB 13326+K-1, socket .run/galera/K/mysqld.sock,
#              data .run/galera/K/data; group communication (gmcast)
#              13336+K-1, IST 13346+K-1, rsync SST 13356+K-1
#
# Debian's galera-4 (libgalera_smm.so) and rsync for the state transfer
# (SST). The nodes run as the account mysql (`mariadbd --user=mysql`), their
# folders chowned to it: as root with --user=root the rsync SST fails on
# the joiner ("Permission denied" on ibdata1, /work/shared/MACHINE.md). The
# stack's own MariaDB (13306) runs on beside the cluster, untouched:
# LOCKLAB_MYSQL_* still name it; LOCKLAB_GALERA names the nodes.
#
# Settings: ROW binlog format and interleaved auto-increment locks, as
# Galera needs; wsrep_retry_autocommit=4 (an autocommit statement that
# fails certification is retried by the server that many times before the
# client sees 1213); wsrep_sync_wait=1 (every read waits until its node
# has applied what the cluster committed before it: without it, a sale
# that reads on node 2 right after a sale committed on node 1 reads the
# count before it, a lost update under any lock; docs/journal.md measures
# both); innodb_flush_log_at_trx_commit=2 as the single server.
#
# Bringing it up: when no node runs, node 1 bootstraps the cluster
# (--wsrep-new-cluster; its grastate.dat marked safe to bootstrap: the lab
# accepts that a node 1 which was not the last to stop may lack the others'
# last transactions), is set up like the single server (the database, the
# account, the schema and the seed), and the others join it, each by a
# state transfer (IST, or SST by rsync when its data is too old or new). A
# node killed (`bench/stack kill galera:2`) is started again by the next
# `up` and rejoins. `up` returns when every node is Synced and the cluster
# has N members.

GALERA_BASE=$((13326 + STACK_OFFSET))
GALERA_GMCAST_BASE=$((13336 + STACK_OFFSET))
GALERA_IST_BASE=$((13346 + STACK_OFFSET))
GALERA_SST_BASE=$((13356 + STACK_OFFSET))
GALERA_PROVIDER=/usr/lib/galera/libgalera_smm.so
TOPO_GALERA=${TOPO_GALERA:-0}

galera_port() { printf '%d\n' $((GALERA_BASE + $1 - 1)); }
galera_dir() { printf '%s/%s\n' "$(galera_home)" "$1"; }

# galera_home [create]: the folder of the nodes' folders. mariadbd runs as
# mysql, which must search every folder above its data: under a checkout it
# cannot enter (a 0700 mktemp folder, /root) mariadb-install-db fails with
# "Errcode: 13" on aria_log_control. There, and where a node's socket
# would pass a Unix socket's 107 bytes (a deep checkout), the nodes live in
# a 0755 folder of /var/tmp instead, its path kept in .run/galera/home, and
# the folder removed when the cluster stops being part of the stack (`up
# --galera 0`, as every test suite but tests/galera.sh asks) or by `down
# --clean`: its 700 MB would otherwise outlive the checkout. Elsewhere in
# .run/galera, kept for the next `up --galera N`.
galera_home() {
    local record="$RUN/galera/home" dir sock
    if [[ -r $record ]]; then
        read -r dir <"$record"
        if [[ -d $dir || ${1:-} != create ]]; then
            printf '%s\n' "$dir"
            return 0
        fi
    fi
    if [[ ${1:-} != create ]]; then
        printf '%s\n' "$RUN/galera"
        return 0
    fi
    mkdir -p "$RUN/galera"
    sock="$RUN/galera/9/mysqld.sock"
    if ((${#sock} <= 107)) && runuser -u mysql -- test -x "$RUN/galera" 2>/dev/null; then
        dir=$RUN/galera
    else
        dir=$(mktemp -d /var/tmp/locklab-galera.XXXXXX) ||
            die "galera: no folder could be made in /var/tmp"
        chmod 755 "$dir"
        say "galera: the account mysql cannot enter ${RUN}, or a socket there would pass 107 bytes; the nodes' data go to $dir" >&2
    fi
    printf '%s\n' "$dir" >"$record"
    printf '%s\n' "$dir"
}

# galera_home_remove: the /var/tmp folder if there is one, nodes stopped.
galera_home_remove() {
    local dir
    [[ -r $RUN/galera/home ]] || return 0
    read -r dir <"$RUN/galera/home"
    [[ $dir == /var/tmp/locklab-galera.* ]] || return 0
    rm -rf "$dir"
    rm -f "$RUN/galera/home" "$RUN/galera/setup.sum"
}
galera_socket() { printf '%s/mysqld.sock\n' "$(galera_dir "$1")"; }

# galera_list N: the nodes' host:port, for stack.env.
galera_list() {
    local k out=""
    for ((k = 1; k <= $1; k++)); do out+="${out:+,}127.0.0.1:$(galera_port "$k")"; done
    printf '%s\n' "$out"
}

galera_root() {
    local k=$1
    shift
    mariadb --no-defaults --socket="$(galera_socket "$k")" -u root "$@"
}

# galera_status K NAME: a wsrep status variable of node K.
galera_status() {
    galera_root "$1" --batch -N -e "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | cut -f2
}

# galera_synced K N: node K is Synced in a primary component of N members.
galera_synced() {
    [[ $(galera_status "$1" wsrep_local_state_comment) == Synced &&
        $(galera_status "$1" wsrep_cluster_status) == Primary &&
        $(galera_status "$1" wsrep_cluster_size) == "$2" ]]
}

galera_primary() { [[ $(galera_status "$1" wsrep_cluster_status) == Primary ]]; }

# The instance on PORT talks to this node (app_args): its socket, or over
# TCP from a namespace.
galera_node_of() { printf '%d\n' $((($1 - APP_BASE_PORT) / 100 % TOPO_GALERA + 1)); }
galera_app_args() {
    local k
    k=$(galera_node_of "$1")
    if ((TOPO_NETNS)); then
        printf '%s\n' --mysql-port "$(galera_port "$k")"
    else
        printf '%s\n' --mysql-socket "$(galera_socket "$k")"
    fi
}

galera_start() {
    local k=$1 n=$2 boot=$3 dir log peers="" j pid
    log="$RUN/logs/galera-$k.log"
    local -a first=()
    galera_home create >/dev/null
    dir=$(galera_dir "$k")
    for ((j = 1; j <= n; j++)); do peers+="${peers:+,}127.0.0.1:$((GALERA_GMCAST_BASE + j - 1))"; done
    port_free_or_die "$(galera_port "$k")" "galera:$k"
    mkdir -p "$dir/data" "$dir/tmp"
    if ((boot)); then
        if [[ ! -d $dir/data/mysql ]]; then
            say "initialising galera:$k's data in ${dir#"$ROOT"/}" >&2
            rm -rf "$dir/data" "$RUN/galera/setup.sum"
            mkdir -p "$dir/data"
            chown -R mysql:mysql "$dir"
            mariadb-install-db --no-defaults --user=mysql --datadir="$dir/data" \
                --tmpdir="$dir/tmp" --auth-root-authentication-method=socket \
                --auth-root-socket-user=root --skip-test-db --skip-name-resolve \
                >"$RUN/logs/galera-install.log" 2>&1 ||
                { log_tail "$RUN/logs/galera-install.log"; die "mariadb-install-db failed (galera:$k)"; }
        fi
        [[ -e $dir/data/grastate.dat ]] &&
            sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' "$dir/data/grastate.dat"
        first=(--wsrep-new-cluster)
    fi
    chown -R mysql:mysql "$dir"
    rm -f "$(galera_socket "$k")" "$(pid_file "galera-$k")"
    pid=$(spawn "$log" "${BACKEND_PRIO[@]}" mariadbd --no-defaults --user=mysql \
        --datadir="$dir/data" --tmpdir="$dir/tmp" --socket="$(galera_socket "$k")" \
        --port="$(galera_port "$k")" --bind-address="$(backend_binds | tr ' ' ,)" \
        --pid-file="$dir/mysqld.pid" \
        --skip-name-resolve --max-connections=1000 --max-connect-errors=1000000 \
        --innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=2 \
        --innodb-lock-wait-timeout=10 --performance-schema=OFF \
        --binlog-format=ROW --innodb-autoinc-lock-mode=2 --default-storage-engine=InnoDB \
        --wsrep-on=ON --wsrep-provider="$GALERA_PROVIDER" \
        --wsrep-cluster-name="locklab$STACK_OFFSET" --wsrep-cluster-address="gcomm://$peers" \
        --wsrep-node-name="galera$k" --wsrep-node-address="127.0.0.1:$((GALERA_GMCAST_BASE + k - 1))" \
        --wsrep-node-incoming-address="127.0.0.1:$(galera_port "$k")" \
        --wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:$((GALERA_GMCAST_BASE + k - 1));ist.recv_addr=127.0.0.1:$((GALERA_IST_BASE + k - 1))" \
        --wsrep-sst-method=rsync --wsrep-sst-receive-address="127.0.0.1:$((GALERA_SST_BASE + k - 1))" \
        --wsrep-retry-autocommit=4 --wsrep-sync-wait=1 --wsrep-slave-threads=2 \
        "${first[@]}")
    printf '%s\n' "$pid" >"$(pid_file "galera-$k")"
    backend_binds >"$dir/bind"
    printf '%s\n' "$pid"
}

# galera_setup: the database, the account and the schema on node 1 (DDL and
# accounts replicate to every node), once for this schema, seed and
# password. The fencing sequence without a cache: Galera refuses a cached
# sequence that counts by 1 (error 1235), and one that counts by 0 would
# interleave the nodes' values (auto_increment_offset), which would not
# order tokens drawn on different nodes.
galera_setup() {
    setup_fresh "$RUN/galera" && return 0
    {
        printf '%s\n' "CREATE DATABASE IF NOT EXISTS locklab CHARACTER SET utf8mb4;"
        mysql_users_sql "SELECT, INSERT, UPDATE, DELETE"
        printf '%s\n' "USE locklab;"
        sed 's/^CREATE SEQUENCE IF NOT EXISTS db_lock_fence;/CREATE SEQUENCE IF NOT EXISTS db_lock_fence NOCACHE;/' \
            "$ROOT/sql/schema.sql"
        cat "$ROOT/sql/seed.sql"
    } | galera_root 1 --batch || die "galera: could not set up locklab on node 1"
    setup_done "$RUN/galera"
}

# galera_up N: the cluster of N nodes, every one Synced.
galera_up() {
    local n=$1 k pid running=0 boot
    mkdir -p "$RUN/galera"
    for ((k = n + 1; k <= 9; k++)); do
        svc_running "galera-$k" && svc_stop "galera-$k" 60
    done
    # A node listening elsewhere than --netns now asks is started again
    # (all of them: the cluster bootstraps again from node 1).
    for ((k = 1; k <= n; k++)); do
        if svc_running "galera-$k" && ! bind_ok "$(galera_dir "$k")/bind"; then
            say "galera:$k: listening addresses changed to $(backend_binds), restarting it"
            svc_stop "galera-$k" 60
        fi
    done
    for ((k = 1; k <= n; k++)); do svc_running "galera-$k" && running=$((running + 1)); done
    if ((running == 0)); then
        pid=$(galera_start 1 "$n" 1)
        wait_for "galera:1 (bootstrap)" "$STACK_TIMEOUT" "$pid" "$RUN/logs/galera-1.log" galera_primary 1
        backend_first galera:1 "$pid"
    fi
    for ((k = 1; k <= n; k++)); do
        svc_running "galera-$k" && continue
        boot=0
        pid=$(galera_start "$k" "$n" "$boot")
        # One joiner at a time: each state transfer has a donor to itself.
        wait_for "galera:$k (joining)" "$STACK_TIMEOUT" "$pid" "$RUN/logs/galera-$k.log" \
            galera_primary "$k"
        backend_first "galera:$k" "$pid"
    done
    for ((k = 1; k <= n; k++)); do
        wait_for "galera:$k synced" "$STACK_TIMEOUT" - "$RUN/logs/galera-$k.log" galera_synced "$k" "$n"
    done
    galera_setup
    say "galera: $n nodes synced on 127.0.0.1:$(galera_port 1)..$(galera_port "$n")"
}

galera_down() {
    local k
    rm -f "$RUN/galera/setup.sum"
    for ((k = 1; k <= 9; k++)); do
        svc_running "galera-$k" && svc_stop "galera-$k" 60
    done
    galera_home_remove
}
