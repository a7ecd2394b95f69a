#!/bin/bash
# docker/galera/netns.sh — docker-compose.yml's galera profile without
# Docker: node.sh three times, each as its container would run it, so that
# the entrypoint is run and not guessed where there is no Docker engine.
#
#   docker/galera/netns.sh up      start galera1..3, one after the other
#   docker/galera/netns.sh check   the account from node 3, node 2's row on 3
#   docker/galera/netns.sh down    stop the three, remove the namespaces
#
# Each node gets what its container would give it: a network namespace of
# its own on a bridge (NET.11..13, the host NET.1), and a mount and UTS
# namespace with the host name galeraK, an /etc/hosts naming the three
# nodes, and folders of its own bound on /var/lib/mysql and /run/mysqld.
# node.sh then runs with its defaults, as in the image: the node's address
# from its host name, the peers galera1..3:4567, MariaDB on 3306, IST on
# 4568, SST on 4444. Only GALERA_NODE, GALERA_SQL (the repository's sql/,
# which the compose file mounts on /locklab/sql) and LOCKLAB_MYSQL_PASSWORD
# are set: the password exported, or a random one kept in DIR/password.
# Like the containers, nodes 2 and 3 start once the one before is healthy
# (`node.sh health`, run inside the node's namespaces).
#
# Root only (namespaces, bridges). LOCKLAB_STACK_OFFSET names the bridge
# and the namespaces (llgOFFSET, llgOFFSET-K); GALERA_NETNS_NET (10.155.0)
# is the /24 and LOCKLAB_RUN (.run) holds DIR, galera-netns/. `down` stops
# each node by the pid file its mariadbd wrote.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BR=llg${LOCKLAB_STACK_OFFSET:-0}
NET=${GALERA_NETNS_NET:-10.155.0}
DIR=$(mkdir -p "${LOCKLAB_RUN:-$ROOT/.run}/galera-netns" && cd "${LOCKLAB_RUN:-$ROOT/.run}/galera-netns" && pwd)

die() {
    printf 'netns.sh: %s\n' "$*" >&2
    exit 1
}

password() {
    if [[ -n ${LOCKLAB_MYSQL_PASSWORD:-} ]]; then
        printf '%s\n' "$LOCKLAB_MYSQL_PASSWORD"
    else
        [[ -s $DIR/password ]] ||
            (umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/password")
        cat "$DIR/password"
    fi
}

network() {
    local k
    ip link add "$BR" type bridge || die "cannot make the bridge $BR (taken?)"
    ip addr add "$NET.1/24" dev "$BR"
    ip link set "$BR" up
    printf '127.0.0.1 localhost\n%s.11 galera1\n%s.12 galera2\n%s.13 galera3\n' \
        "$NET" "$NET" "$NET" >"$DIR/hosts"
    for k in 1 2 3; do
        ip netns add "$BR-$k"
        ip link add "$BR-h$k" type veth peer name eth0 netns "$BR-$k"
        ip link set "$BR-h$k" master "$BR" up
        ip -n "$BR-$k" addr add "$NET.1$k/24" dev eth0
        ip -n "$BR-$k" link set eth0 up
        ip -n "$BR-$k" link set lo up
    done
}

# start K: node.sh in node K's namespaces, its log in DIR/K.log.
start() {
    local k=$1
    mkdir -p "$DIR/$k/data" "$DIR/$k/run"
    # shellcheck disable=SC2016 # expanded by the inner bash
    LOCKLAB_MYSQL_PASSWORD=$(password) ip netns exec "$BR-$k" unshare -m -u --fork bash -c '
        hostname "galera$1"
        mount --bind "$2/hosts" /etc/hosts
        mount --bind "$2/$1/data" /var/lib/mysql
        mount --bind "$2/$1/run" /run/mysqld
        echo $$ >"$2/$1.ns-pid"
        exec env GALERA_NODE="$1" GALERA_SQL="$3/sql" "$3/docker/galera/node.sh"' \
        _ "$k" "$DIR" "$ROOT" >"$DIR/$k.log" 2>&1 &
}

healthy() {
    [[ -s $DIR/$1.ns-pid ]] &&
        nsenter -t "$(cat "$DIR/$1.ns-pid")" -n -m -u "$HERE/node.sh" health
}

up() {
    local k
    ip netns list | grep -q "^$BR-1\b" && die "$BR-1 exists: run down first"
    network
    for k in 1 2 3; do
        rm -f "$DIR/$k.ns-pid"
        start "$k"
        SECONDS=0
        until healthy "$k"; do
            kill -0 $! 2>/dev/null || { tail -n 20 "$DIR/$k.log"; die "galera$k stopped"; }
            ((SECONDS < 120)) || { tail -n 20 "$DIR/$k.log"; die "galera$k: not healthy in 120 s"; }
            sleep 0.5
        done
        echo "galera$k healthy in $SECONDS s ($(grep -m1 '^galera.*: \(joining\|no cluster\)' "$DIR/$k.log"))"
    done
}

check() {
    local -x MYSQL_PWD
    MYSQL_PWD=$(password)
    sql() { mariadb --no-defaults -h "$NET.1$1" -P 3306 -u locklab locklab --batch -e "$2"; }
    sql 3 "SELECT CURRENT_USER(), @@wsrep_node_name, @@wsrep_node_address, VARIABLE_VALUE AS size
           FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE'" &&
        sql 2 "UPDATE db_stock SET count = count - 1 WHERE product_code = '1002';
               SELECT @@wsrep_node_name, count FROM db_stock WHERE product_code = '1002'" &&
        sql 3 "SELECT @@wsrep_node_name, count FROM db_stock WHERE product_code = '1002'"
}

down() {
    local k pid
    for k in 3 2 1; do
        # Only a mariadbd of this data folder (a pid file left by a crash
        # may name another process by now).
        pid=$(cat "$DIR/$k/run/mysqld.pid" 2>/dev/null) &&
            [[ /proc/$pid/root/var/lib/mysql -ef $DIR/$k/data ]] && kill "$pid" || pid=""
        while [[ -n $pid && -e /proc/$pid && $(awk '{ print $3 }' "/proc/$pid/stat") != Z ]]; do
            sleep 0.5
        done
    done
    for k in 1 2 3; do ip netns del "$BR-$k" 2>/dev/null; done
    ip link del "$BR" 2>/dev/null
    return 0
}

case ${1:-} in
up | check | down) "$1" ;;
*) die "usage: netns.sh up|check|down" ;;
esac
