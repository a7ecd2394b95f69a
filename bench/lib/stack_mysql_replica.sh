# shellcheck shell=bash
# bench/lib/stack_mysql_replica.sh — an asynchronous read replica of the
# stack's MariaDB (`bench/stack up --read-replica`, kept in .run/topology
# until `up --no-read-replica`), for read/write splitting (seed 000 §1.6.3,
# mycat: reads to a replica, writes to the primary).
#
#   mysql-replica  13316   .run/mysql-replica/data, its socket beside the
#                          primary's (replica.sock); server-id 2, read-only,
#                          no binlog of its own
#
# In this mode only, the primary writes a binary log (ROW, server-id 1;
# mysql_binlog_flags: `up` restarts MariaDB when the mode changes), and
# the replica follows it by GTID (MASTER_USE_GTID=slave_pos) as the account
# locklab_repl (REPLICATION SLAVE; its random password in .run/secrets,
# sent on standard input). It starts from a dump of the primary's locklab
# database taken with its GTID position (mariadb-dump --single-transaction
# --gtid --master-data), so nothing is missed between the dump and the
# link. The account locklab may only SELECT there.
#
# The instances get --mysql-replica (its socket, or NET_HOST:port with
# --netns) and .run/stack.env LOCKLAB_MYSQL_REPLICA: a purchase with
# ?read=replica reads the count there (store/stock.c).
#
# The lag. Asynchronous replication is behind by however long the replica
# takes to apply, which on one machine is usually under a millisecond:
# lost updates then come and go with the load. For a demonstration or a
# test that must not depend on the machine's speed, a documented switch:
#
#   bench/stack read-replica pause    STOP SLAVE SQL_THREAD: the replica
#                                     still receives the binlog but applies
#                                     nothing, so its count stays where it
#                                     was: every sale reads it
#   bench/stack read-replica resume   START SLAVE SQL_THREAD, and waits
#                                     until the replica has applied all the
#                                     primary has (MASTER_GTID_WAIT)
#   bench/stack read-replica status   the two GTID positions, the threads
#
# `pause` removes up.stamp, and `up` resumes the replica (and waits for it
# to catch up) before it returns: `up` puts things back. Without
# --read-replica the replica is stopped and forgets its position (the
# primary stops logging, so the next --read-replica starts from a dump).

MYSQL_REPLICA_PORT=$((13316 + STACK_OFFSET))
TOPO_READ_REPLICA=${TOPO_READ_REPLICA:-0}

# The primary's binary log: on only while it has a replica.
mysql_binlog_flags() {
    if ((TOPO_READ_REPLICA)); then
        printf '%s\n' --log-bin=mysql-bin --server-id=1 --binlog-format=ROW
    else
        printf '%s\n' --skip-log-bin
    fi
}

# binlog_ok: the running primary was started with today's binlog flags.
binlog_ok() { [[ -r $RUN/mysql/binlog && $(<"$RUN/mysql/binlog") == "$(mysql_binlog_flags)" ]]; }

mysql_replica_socket() { printf '%s/replica.sock\n' "$(dirname "$(mysql_socket)")"; }

# What the instances are given: the socket, or over TCP in a namespace.
mysql_replica_addr() {
    if ((TOPO_NETNS)); then
        printf '%s:%s\n' "$NET_HOST" "$MYSQL_REPLICA_PORT"
    else
        mysql_replica_socket
    fi
}

mysql_replica_root() {
    mariadb --no-defaults --socket="$(mysql_replica_socket)" -u "$(mysql_admin)" "$@"
}

mysql_replica_ping() {
    mariadb-admin --no-defaults --socket="$(mysql_replica_socket)" -u "$(mysql_admin)" ping
}

# replica_field NAME: one field of SHOW SLAVE STATUS.
replica_field() {
    mysql_replica_root --batch -e 'SHOW SLAVE STATUS\G' 2>/dev/null |
        sed -n "s/^ *$1: //p"
}

mysql_replica_start() {
    local dir="$RUN/mysql-replica" log="$RUN/logs/mysql-replica.log" pid
    local -a as_user=()
    if pid=$(svc_pid mysql-replica) && ! bind_ok "$dir/bind"; then
        say "mysql-replica: listening addresses changed, restarting it"
        svc_stop mysql-replica 60
    fi
    if pid=$(svc_pid mysql-replica); then
        say "mysql-replica already running (pid $pid)"
        return 0
    fi
    port_free_or_die "$MYSQL_REPLICA_PORT" mysql-replica
    mkdir -p "$dir/tmp"
    ((EUID == 0)) && as_user=(--user=root)
    if [[ ! -d $dir/data/mysql ]]; then
        rm -rf "$dir/data.init" "$dir/seeded"
        say "initialising the read replica's data in ${dir#"$ROOT"/}"
        mariadb-install-db --no-defaults --datadir="$dir/data.init" "${as_user[@]}" \
            --tmpdir="$dir/tmp" --auth-root-authentication-method=socket \
            --auth-root-socket-user="$(mysql_admin)" --skip-test-db --skip-name-resolve \
            >"$RUN/logs/mysql-replica-install.log" 2>&1 ||
            { log_tail "$RUN/logs/mysql-replica-install.log"; die "mariadb-install-db failed (replica)"; }
        mv "$dir/data.init" "$dir/data"
    fi
    rm -f "$(mysql_replica_socket)" "$(pid_file mysql-replica)"
    pid=$(spawn "$log" "${BACKEND_PRIO[@]}" mariadbd --no-defaults "${as_user[@]}" \
        --datadir="$dir/data" --tmpdir="$dir/tmp" \
        --socket="$(mysql_replica_socket)" --port="$MYSQL_REPLICA_PORT" \
        --bind-address="$(backend_binds | tr ' ' ,)" \
        --pid-file="$(pid_file mysql-replica)" --log-error="$log" \
        --skip-name-resolve --max-connections=1000 --innodb-buffer-pool-size=64M \
        --innodb-flush-log-at-trx-commit=2 --skip-log-bin --server-id=2 --read-only \
        --relay-log=relay-bin --performance-schema=OFF)
    wait_for mysql-replica "$STACK_TIMEOUT" "$pid" "$log" mysql_replica_ping
    [[ -s $(pid_file mysql-replica) ]] || printf '%s\n' "$pid" >"$(pid_file mysql-replica)"
    backend_binds >"$dir/bind"
    backend_first mysql-replica "$pid"
}

# replica_seed: the replica from a dump of the primary at a GTID position,
# then linked to it from there.
replica_seed() {
    local rpw
    rpw=$(secret repl-password)
    say "mysql-replica: copying locklab from the primary and linking it (GTID)"
    printf '%s\n' "STOP SLAVE; RESET SLAVE ALL;" | mysql_replica_root --batch ||
        die "mysql-replica: cannot reset its replication"
    mariadb-dump --no-defaults --socket="$(mysql_socket)" -u "$(mysql_admin)" \
        --single-transaction --gtid --master-data=2 --databases locklab \
        >"$RUN/mysql-replica/seed.sql" || die "mysql-replica: mariadb-dump of the primary failed"
    {
        sed -n 's/^-- \(SET GLOBAL gtid_slave_pos=.*\)$/\1/p' "$RUN/mysql-replica/seed.sql"
        cat "$RUN/mysql-replica/seed.sql"
        mysql_users_sql SELECT
        printf '%s\n' "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$MYSQL_PORT," \
            "MASTER_USER='locklab_repl', MASTER_PASSWORD='$rpw', MASTER_USE_GTID=slave_pos," \
            "MASTER_CONNECT_RETRY=1;" "START SLAVE;"
    } | mysql_replica_root --batch || die "mysql-replica: loading the dump or linking failed"
    rm -f "$RUN/mysql-replica/seed.sql"
    touch "$RUN/mysql-replica/seeded"
}

# replica_caught_up: the replica has applied all the primary has logged.
replica_caught_up() {
    local pos
    pos=$(mysql_root --batch -N -e 'SELECT @@gtid_binlog_pos') || return 1
    [[ $(mysql_replica_root --batch -N -e "SELECT MASTER_GTID_WAIT('$pos', 1)") == 0 ]]
}

# mysql_replica_up: the primary's account for the replica, the replica
# started, seeded when new (or broken), running and caught up.
mysql_replica_up() {
    local rpw user io sql
    rpw=$(secret repl-password)
    for user in "'locklab_repl'@'127.0.0.1'" "'locklab_repl'@'localhost'"; do
        printf '%s\n' "CREATE USER IF NOT EXISTS $user IDENTIFIED BY '$rpw';" \
            "ALTER USER $user IDENTIFIED BY '$rpw';" "GRANT REPLICATION SLAVE ON *.* TO $user;"
    done | mysql_root --batch || die "cannot create the replication account on the primary"
    mysql_replica_start
    io=$(replica_field Last_IO_Errno) sql=$(replica_field Last_SQL_Errno)
    if [[ ! -e $RUN/mysql-replica/seeded || ${io:-0} != 0 || ${sql:-0} != 0 ]]; then
        replica_seed
    else
        mysql_replica_root --batch -e 'START SLAVE' 2>/dev/null || true
    fi
    wait_for "mysql-replica catching up" "$STACK_TIMEOUT" - "$RUN/logs/mysql-replica.log" replica_caught_up
    say "mysql-replica up on 127.0.0.1:$MYSQL_REPLICA_PORT (socket $(mysql_replica_socket)), replicating by GTID"
}

mysql_replica_down() {
    rm -f "$RUN/mysql-replica/seeded"
    svc_running mysql-replica && svc_stop mysql-replica 60
    return 0
}

# bench/stack read-replica pause|resume|status
cmd_read_replica() {
    [[ -r $RUN/topology ]] && topology_load
    ((TOPO_READ_REPLICA)) || die "no read replica: bench/stack up --read-replica"
    svc_running mysql-replica || die "mysql-replica is not running: bench/stack up"
    case ${1:-} in
        pause)
            stack_lock
            mysql_replica_root --batch -e 'STOP SLAVE SQL_THREAD' || die "STOP SLAVE SQL_THREAD failed"
            stamp_clear
            say "mysql-replica: its SQL thread stopped: it applies nothing until resume (or up)"
            ;;
        resume)
            stack_lock
            mysql_replica_root --batch -e 'START SLAVE SQL_THREAD' || die "START SLAVE SQL_THREAD failed"
            wait_for "mysql-replica catching up" "$STACK_TIMEOUT" - "$RUN/logs/mysql-replica.log" replica_caught_up
            say "mysql-replica: applying again, caught up"
            ;;
        status)
            printf 'primary gtid_binlog_pos %s\n' "$(mysql_root --batch -N -e 'SELECT @@gtid_binlog_pos')"
            printf 'replica gtid_slave_pos  %s\n' "$(mysql_replica_root --batch -N -e 'SELECT @@gtid_slave_pos')"
            printf 'io %s sql %s behind %s s\n' "$(replica_field Slave_IO_Running)" \
                "$(replica_field Slave_SQL_Running)" "$(replica_field Seconds_Behind_Master)"
            ;;
        *) die "usage: bench/stack read-replica pause|resume|status" ;;
    esac
}
