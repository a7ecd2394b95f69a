#!/bin/bash
# docker/galera/node.sh — one MariaDB Galera node, as bench/stack up --galera
# runs it (bench/lib/stack_galera.sh), for docker-compose.yml's galera
# profile: the image's entrypoint, and its health check (`node.sh health`).
#
#   node.sh          start this node: bootstrap the cluster or join it
#   node.sh health   exit 0 when this node is Synced in a Primary component
#
# Node 1 bootstraps the cluster (--wsrep-new-cluster) when it finds no
# cluster to join: none of the nodes listed in GALERA_NODES answers on its
# group communication port. Its grastate.dat is then marked safe to
# bootstrap, as bench/stack marks it: the lab accepts that a node 1 which
# was not the last to stop may lack the others' last transactions. A node 1
# that finds a cluster joins it like the others, each of which takes a state
# transfer from a member (IST, or SST by rsync when its data is too old or
# there is none) and refuses to start when no member answers.
#
# An empty data folder on node 1 (its first bootstrap) is initialised once:
# mariadb-install-db, then a temporary server on a socket of its own with
# replication off loads the database, the account `locklab`@'%' (SELECT,
# INSERT, UPDATE, DELETE on locklab.*, password LOCKLAB_MYSQL_PASSWORD from
# the environment, sent on the client's standard input), sql/schema.sql and
# sql/seed.sql, and stops; the joiners get all of it by their first SST.
# The fencing sequence is made without a cache, as bench/stack makes it
# (Galera refuses a cached sequence that counts by 1). A failed
# initialisation empties the folder again, so the next start retries it.
#
# The server runs as the account mysql (as root, a joiner's rsync SST fails:
# "Permission denied" on ibdata1, /work/shared/MACHINE.md) with the settings
# of stack_galera.sh: ROW binlog format, interleaved auto-increment locks,
# wsrep_retry_autocommit=4, wsrep_sync_wait=1, flush at commit = 2.
#
# Every address, port and folder comes from the environment, defaulting to
# the container's, so that the same script runs natively (docs/journal.md
# shows three copies on loopback):
#
#   GALERA_NODE          this node's number, 1 for the one that bootstraps
#   GALERA_NODES         every node's host:gmcast-port (galera1..3:4567)
#   GALERA_ADDRESS       the address the others reach this node on (the
#                        container's own, from its host name)
#   GALERA_BIND          where MariaDB and gmcast listen (0.0.0.0)
#   GALERA_PORT          MariaDB (3306)
#   GALERA_GMCAST_PORT   group communication (4567)
#   GALERA_IST_PORT      incremental state transfer (4568)
#   GALERA_SST_PORT      rsync state transfer (4444)
#   GALERA_CLUSTER       the cluster's name (locklab)
#   GALERA_DATADIR       the data folder (/var/lib/mysql)
#   GALERA_RUNDIR        socket, pid file and temporary files (/run/mysqld)
#   GALERA_SQL           the folder of schema.sql and seed.sql (/locklab/sql)
#   GALERA_PROVIDER      Galera's library (/usr/lib/galera/libgalera_smm.so)
set -euo pipefail

NODE=${GALERA_NODE:-}
NODES=${GALERA_NODES:-galera1:4567,galera2:4567,galera3:4567}
BIND=${GALERA_BIND:-0.0.0.0}
PORT=${GALERA_PORT:-3306}
GMCAST_PORT=${GALERA_GMCAST_PORT:-4567}
IST_PORT=${GALERA_IST_PORT:-4568}
SST_PORT=${GALERA_SST_PORT:-4444}
CLUSTER=${GALERA_CLUSTER:-locklab}
DATADIR=${GALERA_DATADIR:-/var/lib/mysql}
RUNDIR=${GALERA_RUNDIR:-/run/mysqld}
SQL=${GALERA_SQL:-/locklab/sql}
PROVIDER=${GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}
SOCKET=$RUNDIR/mysqld.sock

say() { printf 'galera%s: %s\n' "$NODE" "$*" >&2; }
die() {
    say "$*"
    exit 1
}

root_sql() { mariadb --no-defaults --socket="$1" -u root --batch -N "${@:2}"; }

# health: Synced and Primary, as bench/stack's galera_synced asks (without
# the member count: a cluster that lost a node still serves).
health() {
    local state
    state=$(root_sql "$SOCKET" 2>/dev/null -e "SHOW GLOBAL STATUS WHERE Variable_name IN
        ('wsrep_local_state_comment', 'wsrep_cluster_status')") || return 1
    grep -qx $'wsrep_local_state_comment\tSynced' <<<"$state" &&
        grep -qx $'wsrep_cluster_status\tPrimary' <<<"$state"
}

# cluster_answers: some node listed in GALERA_NODES accepts a connection on
# its group communication port (this one does not listen yet).
cluster_answers() {
    local peer
    for peer in ${NODES//,/ }; do
        # shellcheck disable=SC2016 # expanded by the inner bash
        timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "${peer%:*}" "${peer##*:}" \
            2>/dev/null && return 0
    done
    return 1
}

# setup_sql: the database, the account and the schema, for the client's
# standard input. The password is quoted for a SQL string.
setup_sql() {
    local pw=$LOCKLAB_MYSQL_PASSWORD
    pw=${pw//\\/\\\\}
    pw=${pw//\'/\'\'}
    printf '%s\n' "CREATE DATABASE IF NOT EXISTS locklab CHARACTER SET utf8mb4;" \
        "CREATE USER IF NOT EXISTS 'locklab'@'%' IDENTIFIED BY '$pw';" \
        "GRANT SELECT, INSERT, UPDATE, DELETE ON locklab.* TO 'locklab'@'%';" \
        "USE locklab;"
    sed 's/^CREATE SEQUENCE IF NOT EXISTS db_lock_fence;/CREATE SEQUENCE IF NOT EXISTS db_lock_fence NOCACHE;/' \
        "$SQL/schema.sql"
    cat "$SQL/seed.sql"
}

# initialise: an empty data folder made into node 1's first state.
initialise() {
    local sock=$RUNDIR/init.sock pid k
    [[ -n ${LOCKLAB_MYSQL_PASSWORD:-} ]] || { say "export LOCKLAB_MYSQL_PASSWORD: node 1 makes the locklab account"; return 1; }
    say "initialising $DATADIR"
    mariadb-install-db --no-defaults --user=mysql --datadir="$DATADIR" --tmpdir="$RUNDIR/tmp" \
        --auth-root-authentication-method=socket --auth-root-socket-user=root \
        --skip-test-db --skip-name-resolve >"$RUNDIR/install.log" 2>&1 ||
        { cat "$RUNDIR/install.log" >&2; return 1; }
    mariadbd --no-defaults --user=mysql --datadir="$DATADIR" --tmpdir="$RUNDIR/tmp" \
        --socket="$sock" --pid-file="$RUNDIR/init.pid" --skip-networking --wsrep-on=OFF \
        --skip-name-resolve --innodb-buffer-pool-size=128M --performance-schema=OFF &
    pid=$!
    for ((k = 0; k < 60; k++)); do
        root_sql "$sock" -e 'SELECT 1' >/dev/null 2>&1 && break
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.5
    done
    setup_sql | root_sql "$sock" || { kill "$pid"; wait "$pid"; return 1; }
    kill "$pid"
    wait "$pid" || true
    say "locklab's account, schema and seed loaded"
}

start() {
    local address peers=$NODES
    local -a first=()
    [[ $NODE =~ ^[1-9][0-9]*$ ]] || die "GALERA_NODE: this node's number (1 bootstraps the cluster)"
    address=${GALERA_ADDRESS:-$(getent hosts "$(hostname)" | awk '{ print $1; exit }')}
    [[ -n $address ]] || die "no address: set GALERA_ADDRESS"
    mkdir -p "$DATADIR" "$RUNDIR/tmp"
    chown mysql:mysql "$DATADIR" "$RUNDIR" "$RUNDIR/tmp"
    if cluster_answers; then
        say "joining the cluster ($peers)"
    elif [[ $NODE == 1 ]]; then
        if [[ ! -d $DATADIR/mysql ]]; then
            initialise || {
                find "$DATADIR" -mindepth 1 -delete
                die "initialisation failed; $DATADIR emptied"
            }
        fi
        [[ -e $DATADIR/grastate.dat ]] &&
            sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' "$DATADIR/grastate.dat"
        say "no cluster answers: bootstrapping one"
        first=(--wsrep-new-cluster)
    else
        die "no cluster answers on $peers (node 1 bootstraps it)"
    fi
    chown -R mysql:mysql "$DATADIR" "$RUNDIR"
    rm -f "$SOCKET"
    exec mariadbd --no-defaults --user=mysql \
        --datadir="$DATADIR" --tmpdir="$RUNDIR/tmp" --socket="$SOCKET" \
        --port="$PORT" --bind-address="$BIND" --pid-file="$RUNDIR/mysqld.pid" \
        --skip-name-resolve --max-connections=1000 --max-connect-errors=1000000 \
        --innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=2 \
        --innodb-lock-wait-timeout=10 --performance-schema=OFF \
        --binlog-format=ROW --innodb-autoinc-lock-mode=2 --default-storage-engine=InnoDB \
        --wsrep-on=ON --wsrep-provider="$PROVIDER" \
        --wsrep-cluster-name="$CLUSTER" --wsrep-cluster-address="gcomm://$peers" \
        --wsrep-node-name="galera$NODE" --wsrep-node-address="$address:$GMCAST_PORT" \
        --wsrep-node-incoming-address="$address:$PORT" \
        --wsrep-provider-options="gmcast.listen_addr=tcp://$BIND:$GMCAST_PORT;ist.recv_addr=$address:$IST_PORT" \
        --wsrep-sst-method=rsync --wsrep-sst-receive-address="$address:$SST_PORT" \
        --wsrep-retry-autocommit=4 --wsrep-sync-wait=1 --wsrep-slave-threads=2 \
        "${first[@]}"
}

case ${1:-start} in
start) start ;;
health) health ;;
*) die "usage: node.sh [start|health]" ;;
esac
