# shellcheck shell=bash
# bench/lib/stack_servers.sh — the backends: MariaDB, Redis, ZooKeeper, etcd.
#
# Each backend runs from the Debian packages' binaries with a private data
# folder under .run and a non-default port on 127.0.0.1, so the stack can
# live next to system services and other checkouts without touching them:
#
#   MariaDB    13306         .run/mysql/data, socket .run/mysql/mysqld.sock
#   Redis K    16379+K-1     .run/redis/K; server 1 keeps an append-only
#                            file (--redis-aof, default everysec: it holds the
#                            Redis stock), the others nothing (locks only)
#   ZooKeeper  12181+K-1     .run/zk/K (myid, zoo.cfg, snapshots);
#              quorum 12888+K-1, election 13888+K-1 when K > 1 servers
#
# Each backend comes up in two halves, *_start then *_ready, and
# backends_up runs every start before any ready, so the four start side by
# side. Both are idempotent: a start starts what is not running, leaves what
# runs alone (unless its configuration changed) and stops members beyond
# the requested count; a ready waits until what was started answers.
#
# ZooKeeper is started the way the package's zkServer.sh does it, without
# its /etc/zookeeper/conf: QuorumPeerMain from /usr/share/java/zookeeper.jar,
# whose manifest Class-Path brings netty, jute, jackson, ... The manifest
# has slf4j-api but no binding, so slf4j-log4j12 + log4j-1.2 are added to
# the class path, configured by our own log4j.properties to log to the
# console (our log file). Without them the server runs but logs nothing.

MYSQL_PORT=$((13306 + STACK_OFFSET))

# The addresses the backends listen on: 127.0.0.1, and with --netns the
# bridge's too (stack_net.sh), where the namespaced instances reach them.
# A running backend listening elsewhere is restarted (*_bind_ok).
backend_binds() {
    if ((TOPO_NETNS)); then printf '127.0.0.1 %s\n' "$NET_HOST"; else printf '127.0.0.1\n'; fi
}

# bind_ok FILE: the binding recorded in FILE at the last start is today's.
bind_ok() { [[ -r $1 && $(<"$1") == "$(backend_binds)" ]]; }
REDIS_BASE_PORT=$((16379 + STACK_OFFSET))
ZK_CLIENT_BASE=$((12181 + STACK_OFFSET))
ZK_QUORUM_BASE=$((12888 + STACK_OFFSET))
ZK_ELECTION_BASE=$((13888 + STACK_OFFSET))
STACK_TIMEOUT=${LOCKLAB_STACK_TIMEOUT:-90}

# ----------------------------------------------------------------- MariaDB

# The OS account that owns the server and its socket-authenticated admin
# login (root@localhost via unix_socket when run as root).
mysql_admin() { id -un; }

# mysql_socket [create]: the socket path. Unix socket paths are limited to
# about 108 bytes, so a deep checkout gets a short mktemp folder instead,
# recorded in .run/mysql/socket-dir so every command finds the same one.
mysql_socket() {
    local sock="$RUN/mysql/mysqld.sock" record="$RUN/mysql/socket-dir" dir
    if ((${#sock} <= 100)); then
        printf '%s\n' "$sock"
        return 0
    fi
    if [[ -r $record ]]; then
        read -r dir <"$record"
        if [[ -d $dir || ${1:-} != create ]]; then
            printf '%s/mysqld.sock\n' "$dir"
            return 0
        fi
    fi
    [[ ${1:-} == create ]] || return 1
    dir=$(mktemp -d /tmp/locklab-mysql.XXXXXX)
    printf '%s\n' "$dir" >"$record"
    printf '%s/mysqld.sock\n' "$dir"
}

mysql_root() {
    mariadb --no-defaults --socket="$(mysql_socket)" -u "$(mysql_admin)" "$@"
}

mysql_ping() {
    mariadb-admin --no-defaults --socket="$(mysql_socket)" -u "$(mysql_admin)" ping
}

# The stack's own tmpdir, for the bootstrap and the server: at start-up
# mariadbd deletes every #sql* file in its tmpdir (the temporary tables it
# left), so one starting in a shared /tmp deletes the temporary tables of
# another one running there: a second stack's bootstrap then fails with
# "Unknown table 'mysql.tmp_proxies_priv'" (5 of 18 bootstraps, six at a
# time; none of 18 with a tmpdir each; #30).
mysql_tmpdir() {
    mkdir -p "$RUN/mysql/tmp"
    printf '%s\n' "$RUN/mysql/tmp"
}

# Initialise the data folder once. mariadb-install-db runs into a scratch
# folder that is renamed on success, so an interrupted run is redone.
mysql_init() {
    local data="$RUN/mysql/data" tmp="$RUN/mysql/data.init" log="$RUN/logs/mysql-install.log"
    local -a as_user=()
    [[ -d $data/mysql ]] && return 0
    rm -rf "$tmp"
    mkdir -p "$tmp"
    ((EUID == 0)) && as_user=(--user=root)
    say "initialising MariaDB data in ${data#"$ROOT"/}"
    if ! mariadb-install-db --no-defaults --datadir="$tmp" "${as_user[@]}" \
        --tmpdir="$(mysql_tmpdir)" \
        --auth-root-authentication-method=socket \
        --auth-root-socket-user="$(mysql_admin)" \
        --skip-test-db --skip-name-resolve >"$log" 2>&1; then
        # The server's own lines say why; the script's advice follows them.
        grep -E '^ERROR|\[ERROR\]|\[Warning\]' "$log" | head -n 10 | sed 's/^/    /' >&2
        log_tail "$log"
        die "mariadb-install-db failed"
    fi
    rm -rf "$data" "$RUN/mysql/setup.sum"
    mv "$tmp" "$data"
}

# The database, the application's least-privilege account (no DDL, no
# GRANT, nothing outside locklab.*) and the schema + seed, every time: all
# of it is idempotent, and REVOKE first means a widened grant is narrowed.
# The account's password is the stack's random secret (stack_common.sh),
# sent on the client's standard input, never on its command line.
# mysql_users_sql PRIVILEGES: the SQL that makes the account locklab, with
# PRIVILEGES on locklab.* and nothing else, from 127.0.0.1, the socket and,
# for the namespaced instances of --netns (stack_net.sh), 10.77.% (MariaDB
# listens there only in that mode). The replica and Galera's node 1 run it too.
mysql_users_sql() {
    local user pw
    pw=$(secret mysql-password)
    for user in "'locklab'@'127.0.0.1'" "'locklab'@'localhost'" "'locklab'@'10.77.%'"; do
        printf '%s\n' "CREATE USER IF NOT EXISTS $user IDENTIFIED BY '$pw';" \
            "ALTER USER $user IDENTIFIED BY '$pw';" \
            "REVOKE ALL PRIVILEGES, GRANT OPTION FROM $user;" "GRANT $1 ON locklab.* TO $user;"
    done
}

# setup_fresh DIR: this schema, seed and password were set up already for
# the server of DIR (DIR/setup.sum); setup_done DIR records it.
setup_sum() {
    cat "$ROOT/sql/schema.sql" "$ROOT/sql/seed.sql" - <<<"$(secret mysql-password)" | sha256sum | cut -c1-16
}
setup_fresh() { [[ -r $1/setup.sum && $(<"$1/setup.sum") == "$(setup_sum)" ]]; }
setup_done() { setup_sum >"$1/setup.sum"; }

mysql_setup() {
    # Done already for this schema, seed and password: a test run calls
    # `up` dozens of times on a running MariaDB.
    setup_fresh "$RUN/mysql" && return 0
    # One client for all of it.
    {
        printf '%s\n' "CREATE DATABASE IF NOT EXISTS locklab CHARACTER SET utf8mb4;"
        mysql_users_sql "SELECT, INSERT, UPDATE, DELETE"
        printf '%s\n' "USE locklab;"
        cat "$ROOT/sql/schema.sql" "$ROOT/sql/seed.sql"
    } | mysql_root --batch || die "could not create the locklab database and user, or load sql/schema.sql and sql/seed.sql"
    setup_done "$RUN/mysql"
}

# The two settings of MariaDB that follow the topology, both dynamic: a
# running server that has other values gets them by SET GLOBAL (mysql_tune),
# a new one on its command line.
#   max_connections         every worker slot's connection of every instance
#                           (--threads; 16, the server's default, when not
#                           given) and each instance's few of its own (the
#                           metrics reader, the Redis stock's consumer), plus
#                           300 for the rest (ll-limits' clients, the tests'
#                           and tools' clients, the exporter, a replica's
#                           link); never below 1000
#   innodb_deadlock_detect  --mysql-deadlock-detect on|off (on, MariaDB's
#                           default): off, a transaction waiting for a row
#                           lock no longer walks the wait-for graph, and a
#                           deadlock ends only at innodb_lock_wait_timeout
mysql_max_connections() {
    local n=$((TOPO_INSTANCES * (${TOPO_THREADS:-16} + 4) + 300))
    ((n > 1000)) || n=1000
    printf '%d\n' "$n"
}
mysql_deadlock_detect() { [[ $TOPO_MYSQL_DEADLOCK_DETECT == off ]] && echo 0 || echo 1; }
mysql_tune_flags() {
    printf '%s\n' "--max-connections=$(mysql_max_connections)" \
        "--innodb-deadlock-detect=$(mysql_deadlock_detect)"
}

# mysql_tune: the running server given mysql_tune_flags' values, unless
# .run/mysql/tune says it has them (written at its start and here).
mysql_tune() {
    local want
    want=$(mysql_tune_flags)
    [[ -r $RUN/mysql/tune && $(<"$RUN/mysql/tune") == "$want" ]] && return 0
    mysql_root -e "SET GLOBAL max_connections = $(mysql_max_connections);
        SET GLOBAL innodb_deadlock_detect = $(mysql_deadlock_detect)" ||
        die "could not set max_connections and innodb_deadlock_detect on mariadb"
    printf '%s\n' "$want" >"$RUN/mysql/tune"
    say "mariadb: max_connections $(mysql_max_connections), innodb_deadlock_detect $TOPO_MYSQL_DEADLOCK_DETECT"
}

# mysql_start: start MariaDB unless it runs (MYSQL_STARTED: its pid, or
# empty); mysql_ready waits until it answers and sets it up. Between the
# two the other backends start (backends_up).
MYSQL_STARTED=""
mysql_start() {
    local pid log="$RUN/logs/mysql.log" sock
    local -a as_user=()
    MYSQL_STARTED=""
    mkdir -p "$RUN/mysql"
    sock=$(mysql_socket create)
    if pid=$(svc_pid mysql) && ! bind_ok "$RUN/mysql/bind"; then
        say "mariadb: listening addresses changed to $(backend_binds), restarting it"
        svc_stop mysql 60
    elif pid=$(svc_pid mysql) && ! binlog_ok; then     # --read-replica (stack_mysql_replica.sh)
        say "mariadb: binary log now $(mysql_binlog_flags | tr '\n' ' '), restarting it"
        svc_stop mysql 60
    fi
    if pid=$(svc_pid mysql); then
        say "mariadb already running (pid $pid)"
        return 0
    fi
    port_free_or_die "$MYSQL_PORT" mariadb
    mysql_init
    rm -f "$sock" "$(pid_file mysql)"
    ((EUID == 0)) && as_user=(--user=root)
    mysql_binlog_flags >"$RUN/mysql/binlog"
    # shellcheck disable=SC2046 # one word per flag
    MYSQL_STARTED=$(spawn "$log" "${BACKEND_PRIO[@]}" mariadbd --no-defaults "${as_user[@]}" \
        --datadir="$RUN/mysql/data" --tmpdir="$(mysql_tmpdir)" \
        --socket="$sock" --port="$MYSQL_PORT" --bind-address="$(backend_binds | tr ' ' ,)" \
        --pid-file="$(pid_file mysql)" --log-error="$log" \
        --skip-name-resolve $(mysql_tune_flags) --max-connect-errors=1000000 \
        --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=2 \
        $(mysql_binlog_flags) --innodb-lock-wait-timeout=10 --performance-schema=OFF)
    mysql_tune_flags >"$RUN/mysql/tune"
}

mysql_ready() {
    local pid=$MYSQL_STARTED
    if [[ -n $pid ]]; then
        wait_for "mariadb" "$STACK_TIMEOUT" "$pid" "$RUN/logs/mysql.log" mysql_ping
        backend_binds >"$RUN/mysql/bind"
        backend_first mariadb "$pid"
        # mariadbd writes the pid file itself; make sure it is there.
        [[ -s $(pid_file mysql) ]] || printf '%s\n' "$pid" >"$(pid_file mysql)"
    fi
    mysql_setup
    mysql_tune
    say "mariadb up on 127.0.0.1:$MYSQL_PORT (socket $(mysql_socket))"
}

# ------------------------------------------------------------------- Redis

redis_port() { printf '%d\n' $((REDIS_BASE_PORT + $1 - 1)); }

# redis_persist K: how server K keeps its data, as redis-server's flags.
# Server 1 holds the stock of the redis-stock strategies ({stock:P}, the
# sales streams, the orders), which must survive a restart: an append-only
# file, written before each reply and synced to the disk by the policy of
# --redis-aof (everysec, always; no: nothing kept, as for the locks). The
# others hold Redlock's locks only and keep nothing, which is Redlock's own
# lesson: a server restarted empty can grant a lock a second time.
redis_persist() {
    if (($1 == 1)) && [[ $TOPO_REDIS_AOF != no ]]; then
        printf '%s\n' --appendonly yes --appendfsync "$TOPO_REDIS_AOF"
    else
        printf '%s\n' --appendonly no
    fi
}

# redis_clock: the prefix that starts a Redis server under libfaketime
# (--redis-faketime), one word a line, or nothing. Its wall clock is offset
# by what .run/redis/faketime says, re-read at every call, so that
# `bench/fault clock redis` moves it mid-run; the monotonic clock is left
# alone (Redis's timers), and glibc's malloc is preloaded first because
# libfaketime cannot start under Redis's jemalloc (libfaketime issue 130):
# the first clock_gettime() of jemalloc's start recurses into libfaketime's.
redis_clock() {
    local lib
    ((TOPO_REDIS_FAKETIME)) || return 0
    for lib in /usr/lib/*/faketime/libfaketimeMT.so.1; do [[ -e $lib ]] && break; done
    [[ -e $lib ]] || return 0
    [[ -e $RUN/redis/faketime ]] || printf '+0\n' >"$RUN/redis/faketime"
    printf '%s\n' env "LD_PRELOAD=$(dirname "$(dirname "$lib")")/libc_malloc_debug.so.0:$lib" \
        "FAKETIME_TIMESTAMP_FILE=$RUN/redis/faketime" FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1
}

redis_ping() {
    [[ $(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null) == PONG ]]
}

# redis_start N: servers 1..N started where not running (REDIS_STARTED:
# their K), any K > N left from a bigger topology stopped; redis_ready
# waits for those started.
REDIS_STARTED=()
redis_start() {
    local n=$1 k
    REDIS_STARTED=()
    for_each_extra redis "$n" 10
    for ((k = 1; k <= n; k++)); do
        redis_start_one "$k"
    done
}

# redis_start_one K: server K started if it is not running (added to
# REDIS_STARTED); `bench/fault restart redis:K --alone` starts it so.
redis_start_one() {
    local k=$1 port dir pid log
    local -a clock
    port=$(redis_port "$k")
    dir="$RUN/redis/$k"
    log="$RUN/logs/redis-$k.log"
    if pid=$(svc_pid "redis-$k") && ! bind_ok "$dir/bind"; then
        say "redis:$k: listening addresses changed to $(backend_binds), restarting it"
        svc_stop "redis-$k" 10
    fi
    if pid=$(svc_pid "redis-$k") && [[ $(cat "$dir/persist" 2>/dev/null) != "$(redis_persist "$k")" ]]; then
        say "redis:$k: persistence changed to '$(redis_persist "$k" | xargs)', restarting it"
        svc_stop "redis-$k" 10
    fi
    if pid=$(svc_pid "redis-$k") && [[ $(cat "$dir/clock" 2>/dev/null) != "$TOPO_REDIS_FAKETIME" ]]; then
        say "redis:$k: $( ((TOPO_REDIS_FAKETIME)) && echo "now under libfaketime" || echo "no longer under libfaketime"), restarting it"
        svc_stop "redis-$k" 10
    fi
    if pid=$(svc_pid "redis-$k"); then
        say "redis:$k already running (pid $pid)"
        return 0
    fi
    port_free_or_die "$port" "redis:$k"
    mkdir -p "$dir"
    rm -f "$(pid_file "redis-$k")"
    printf '=== %s: redis-server on %s\n' "$(date '+%F %T')" "$port" >>"$log"
    # No RDB snapshots; an append-only file on server 1 only (see
    # redis_persist). A restarted lock server is empty, which is exactly
    # the failure the Redis lock strategies must survive.
    # Protected mode refuses every address but loopback's; with --netns
    # the instances come from the bridge, which only this machine has.
    mapfile -t clock < <(redis_clock)
    ((TOPO_REDIS_FAKETIME == 0 || ${#clock[@]})) || die "redis:$k: --redis-faketime, but no libfaketime (bench/stack install)"
    # shellcheck disable=SC2046 # one word per address, as --bind takes them
    (cd "$dir" && "${BACKEND_PRIO[@]}" "${clock[@]}" redis-server --bind $(backend_binds) --port "$port" --dir "$dir" \
        --save '' $(redis_persist "$k") --maxclients 10000 \
        --protected-mode "$( ((TOPO_NETNS)) && echo no || echo yes)" \
        --daemonize yes --pidfile "$(pid_file "redis-$k")" --logfile "$log" 9>&-) ||
        { log_tail "$log"; die "redis:$k failed to start"; }
    REDIS_STARTED+=("$k")
}

redis_ready() {
    local k port dir
    for k in "${REDIS_STARTED[@]}"; do
        port=$(redis_port "$k")
        dir="$RUN/redis/$k"
        wait_for "redis:$k" "$STACK_TIMEOUT" - "$RUN/logs/redis-$k.log" redis_ping "$port"
        backend_binds >"$dir/bind"
        redis_persist "$k" >"$dir/persist"
        printf '%s\n' "$TOPO_REDIS_FAKETIME" >"$dir/clock"
        backend_first "redis:$k" "$(svc_pid "redis-$k")"
        say "redis:$k up on 127.0.0.1:$port"
    done
}

# for_each_extra KIND N BOUND: stop KIND-K for every pid file with K > N.
for_each_extra() {
    local kind=$1 n=$2 bound=$3 file k
    for file in "$RUN/pids/$kind"-*.pid; do
        [[ -e $file ]] || continue
        k=${file##*/"$kind"-}
        k=${k%.pid}
        [[ $k =~ ^[0-9]+$ ]] || continue
        ((k > n)) && svc_stop "$kind-$k" "$bound"
    done
    return 0
}

# --------------------------------------------------------------- ZooKeeper

ZK_CLASSPATH=/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar

zk_port() { printf '%d\n' $((ZK_CLIENT_BASE + $1 - 1)); }

# zk_mode K: "leader", "follower", "standalone", or nothing when server K
# does not serve (down, or an ensemble member without a quorum).
zk_mode() {
    tcp_chat "$(zk_port "$1")" srvr | sed -n 's/^Mode: //p'
}

# zk_cfg K N: server K's zoo.cfg for an ensemble of N. Short ticks make
# session expiry and leader election quick, which is what crash tests wait
# on: sessions live 2 ticks = 1 s at least, a follower may lag 5 ticks.
# maxSessionTimeout=60000: a client gets the session it asks for up to 60 s
# (20 ticks, 10 s, by default), so the seeds' 30 s (seed 000 §4.3, up
# --seed-timing) and Curator's default 60 s are theirs, not cut to 10 s;
# up --zk-max-session-ms MS lowers it, so that a client asking more is
# granted less than it asked.
# forceSync=no: each transaction is written to the log before it is
# acknowledged, but not fsynced, as MariaDB here writes its redo log at
# each COMMIT and syncs it once a second (innodb_flush_log_at_trx_commit=2):
# a killed server loses nothing, a crashed machine what the kernel had not
# yet written back (Redis keeps nothing at all).
# A lock's znodes are ephemeral anyway: they die with their session.
# snapCount=2000: a snapshot every 1000-2000 transactions, not 50000-100000,
# so that a restarted server replays at most that many from its log: the
# tests restart servers after runs of tens of thousands of transactions
# (ll-limits's serial_zk alone makes about 300 a second), and a cold JVM
# replaying them took 6 s of a 28 s quorum outage on a loaded machine. A
# snapshot here is a few kB (the lock znodes). preAllocSize=4096 (kB): log
# files grow by 4 MB, not 64.
zk_cfg() {
    local k=$1 n=$2 j
    cat <<EOF
# generated by bench/stack: ZooKeeper $k of $n
tickTime=500
maxSessionTimeout=${TOPO_ZK_MAX_SESSION_MS:-60000}
initLimit=20
syncLimit=5
dataDir=$RUN/zk/$k
clientPort=$(zk_port "$k")
clientPortAddress=$( ((TOPO_NETNS)) && echo 0.0.0.0 || echo 127.0.0.1)
maxClientCnxns=0
4lw.commands.whitelist=*
admin.enableServer=false
forceSync=no
snapCount=2000
preAllocSize=4096
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
EOF
    ((n > 1)) || return 0
    for ((j = 1; j <= n; j++)); do
        printf 'server.%d=127.0.0.1:%d:%d\n' "$j" \
            $((ZK_QUORUM_BASE + j - 1)) $((ZK_ELECTION_BASE + j - 1))
    done
}

zk_log4j() {
    cat <<'EOF'
# generated by bench/stack: ZooKeeper logs to the console = .run/logs/zk-K.log
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}: %m%n
EOF
}

# zk_prepare K N: write server K's myid and zoo.cfg. A changed zoo.cfg
# (the ensemble grew or shrank) restarts a running server with its
# snapshots wiped: ZooKeeper holds nothing here but lock znodes, and mixing
# histories of different ensembles is how a quorum refuses to form.
zk_prepare() {
    local k=$1 n=$2 dir="$RUN/zk/$1" cfg new
    mkdir -p "$dir"
    printf '%d\n' "$k" >"$dir/myid"
    cfg="$dir/zoo.cfg"
    new=$(zk_cfg "$k" "$n")
    if [[ -r $cfg && $(<"$cfg") == "$new" ]]; then
        return 0
    fi
    if [[ -r $cfg ]]; then
        say "zk:$k: zoo.cfg changed (an ensemble of $n server(s)), restarting it with fresh data"
        svc_stop "zk-$k" 15
        rm -rf "$dir/version-2"
    fi
    printf '%s\n' "$new" >"$cfg"
}

zk_start() {
    local k=$1 n=$2 port pid
    port=$(zk_port "$k")
    port_free_or_die "$port" "zk:$k"
    if ((n > 1)); then
        port_free_or_die $((ZK_QUORUM_BASE + k - 1)) "zk:$k (quorum port)"
        port_free_or_die $((ZK_ELECTION_BASE + k - 1)) "zk:$k (election port)"
    fi
    # Serial GC: three JVMs share two cores with MariaDB and the servers.
    pid=$(spawn "$RUN/logs/zk-$k.log" "${BACKEND_PRIO[@]}" java -Xms32m -Xmx256m -XX:+UseSerialGC \
        -Djava.net.preferIPv4Stack=true \
        -Dlog4j.configuration="file:$RUN/zk/log4j.properties" \
        -Dzookeeper.admin.enableServer=false \
        -cp "$ZK_CLASSPATH" \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$RUN/zk/$k/zoo.cfg")
    printf '%s\n' "$pid" >"$(pid_file "zk-$k")"
}

# zk_serving K: server K answers and has a role.
zk_serving() {
    local mode
    mode=$(zk_mode "$1")
    [[ $mode == leader || $mode == follower || $mode == standalone ]]
}

# zk_has_leader N: exactly one of servers 1..N is the leader.
zk_has_leader() {
    local n=$1 k leaders=0
    for ((k = 1; k <= n; k++)); do
        [[ $(zk_mode "$k") == leader ]] && leaders=$((leaders + 1))
    done
    ((leaders == 1))
}

# zk_leader N: print the K of the leader (1 for a standalone server).
zk_leader() {
    local n=$1 k mode
    for ((k = 1; k <= n; k++)); do
        mode=$(zk_mode "$k")
        if [[ $mode == leader || $mode == standalone ]]; then
            printf '%d\n' "$k"
            return 0
        fi
    done
    return 1
}

# zk_start_all N: 1 = standalone, N > 1 = an ensemble; every member not
# running is started (ZK_STARTED: their K). zk_ready N waits until each of
# them serves and, for an ensemble, one of them leads.
ZK_STARTED=()
zk_start_all() {
    local n=$1 k pid
    ZK_STARTED=()
    mkdir -p "$RUN/zk"
    zk_log4j >"$RUN/zk/log4j.properties"
    for_each_extra zk "$n" 15
    for ((k = 1; k <= n; k++)); do
        zk_prepare "$k" "$n"
        if pid=$(svc_pid "zk-$k"); then
            say "zk:$k already running (pid $pid)"
        else
            zk_start "$k" "$n"
            ZK_STARTED+=("$k")
        fi
    done
}

zk_ready() {
    local n=$1 k pid
    for k in "${ZK_STARTED[@]}"; do
        read -r pid <"$(pid_file "zk-$k")"
        wait_for "zk:$k" "$STACK_TIMEOUT" "$pid" "$RUN/logs/zk-$k.log" zk_serving "$k"
        backend_first "zk:$k" "$pid"
        say "zk:$k up on 127.0.0.1:$(zk_port "$k") ($(zk_mode "$k"))"
    done
    if ((n > 1)); then
        wait_for "zk ensemble" "$STACK_TIMEOUT" - "$RUN/logs/zk-1.log" zk_has_leader "$n"
        say "zk ensemble of $n serving, leader zk:$(zk_leader "$n")"
    fi
}

# -------------------------------------------------------------------- etcd

# etcd K (of --etcd N: 1 alone, 3 a cluster) serves clients on
# 12279+K-1 and its peers on 12679+K-1, with its data in .run/etcd/K/data.
# Debian's etcd-server (3.4) runs as it is, with these choices:
#   - heartbeat 100 ms, election timeout 1 s (etcd's defaults): a leader
#     lost is replaced in about a second, which the leader-loss test waits on;
#   - its write-ahead log fsynced at every commit (3.4 has no way to turn
#     that off), which bounds serial_etcd on this disk;
#   - history compacted down to the last 10000 revisions, so a long
#     benchmark does not fill the backend (a watch from a compacted
#     revision is cancelled, and the strategy looks again);
#   - with --netns it listens on the bridge too (stack_net.sh).
# A changed cluster (N) restarts every member with fresh data, as zk_prepare
# does: etcd holds nothing here but lock keys and their leases.
ETCD_CLIENT_BASE=$((12279 + STACK_OFFSET))
ETCD_PEER_BASE=$((12679 + STACK_OFFSET))

etcd_port() { printf '%d\n' $((ETCD_CLIENT_BASE + $1 - 1)); }
etcd_peer_port() { printf '%d\n' $((ETCD_PEER_BASE + $1 - 1)); }

# etcd_args K N: member K's command line after the binary, one per line.
etcd_args() {
    local k=$1 n=$2 j cluster="" clients="" host
    for ((j = 1; j <= n; j++)); do
        cluster+="${cluster:+,}e$j=http://127.0.0.1:$(etcd_peer_port "$j")"
    done
    for host in $(backend_binds); do
        clients+="${clients:+,}http://$host:$(etcd_port "$k")"
    done
    printf '%s\n' --name "e$k" "--data-dir=$RUN/etcd/$k/data" \
        --listen-client-urls "$clients" \
        --advertise-client-urls "http://127.0.0.1:$(etcd_port "$k")" \
        --listen-peer-urls "http://127.0.0.1:$(etcd_peer_port "$k")" \
        --initial-advertise-peer-urls "http://127.0.0.1:$(etcd_peer_port "$k")" \
        --initial-cluster "$cluster" --initial-cluster-state new \
        --initial-cluster-token "locklab-$STACK_OFFSET-$n" \
        --heartbeat-interval 100 --election-timeout 1000 \
        --auto-compaction-mode revision --auto-compaction-retention 10000 \
        --logger zap --log-outputs stderr --log-level warn
}

# etcd_status K: member K's /v3/maintenance/status answer, or nothing.
etcd_status() {
    curl -s -m 2 -X POST -d '{}' "http://127.0.0.1:$(etcd_port "$1")/v3/maintenance/status" 2>/dev/null
}

# etcd_role K: "leader", "follower", or nothing when K does not serve.
etcd_role() {
    local s
    s=$(etcd_status "$1")
    [[ -n $s ]] || return 0
    jq -r 'if .leader == null then empty
           elif .leader == .header.member_id then "leader" else "follower" end' <<<"$s" 2>/dev/null
}

# etcd_healthy K: member K answers and its cluster has a leader.
etcd_healthy() {
    [[ $(curl -s -m 2 "http://127.0.0.1:$(etcd_port "$1")/health" 2>/dev/null) == *'"health":"true"'* ]]
}

# etcd_leader N: print the K of the leader among 1..N.
etcd_leader() {
    local n=$1 k
    for ((k = 1; k <= n; k++)); do
        [[ $(etcd_role "$k") == leader ]] && { printf '%d\n' "$k"; return 0; }
    done
    return 1
}

# etcd_prepare K N: a member whose command line would change stops. If
# its cluster changed (it grew or shrank) it loses its data and starts
# afresh; if only the addresses it serves clients on did (--netns), it
# keeps them: a member restarted empty would be refused by peers that
# remember it ("already bootstrapped").
etcd_prepare() {
    local k=$1 n=$2 dir="$RUN/etcd/$1" new
    mkdir -p "$dir"
    new=$(etcd_args "$k" "$n")
    [[ -r $dir/args && $(<"$dir/args") == "$new" ]] && return 0
    if [[ -r $dir/args ]]; then
        svc_stop "etcd-$k" 15
        if [[ $(etcd_cluster_args <"$dir/args") == $(etcd_cluster_args <<<"$new") ]]; then
            say "etcd:$k: restarting it to serve clients on $(backend_binds | tr '\n' ' ')"
            printf '%s\n' "$new" >"$dir/args"
            return 0
        fi
        say "etcd:$k: cluster changed to $n member(s), restarting it with fresh data"
    fi
    rm -rf "$dir/data"
    printf '%s\n' "$new" >"$dir/args"
}

# etcd_cluster_args: the command line on stdin less the client addresses.
etcd_cluster_args() { sed '/^--listen-client-urls$/{n;d}'; }

etcd_start() {
    local k=$1 pid
    local -a args
    port_free_or_die "$(etcd_port "$k")" "etcd:$k"
    port_free_or_die "$(etcd_peer_port "$k")" "etcd:$k (peer port)"
    mapfile -t args <"$RUN/etcd/$k/args"
    pid=$(spawn "$RUN/logs/etcd-$k.log" "${BACKEND_PRIO[@]}" etcd "${args[@]}")
    printf '%s\n' "$pid" >"$(pid_file "etcd-$k")"
}

# etcd_start_all N: members 1..N started where not running (ETCD_STARTED:
# their K), members beyond N stopped; etcd_ready N waits until every member
# answers healthy (so the cluster has a leader).
ETCD_STARTED=()
etcd_start_all() {
    local n=$1 k pid
    ETCD_STARTED=()
    mkdir -p "$RUN/etcd"
    for_each_extra etcd "$n" 15
    # Every member stopped that must be before any starts: a member started
    # next to peers of the old cluster would be refused.
    for ((k = 1; k <= n; k++)); do etcd_prepare "$k" "$n"; done
    for ((k = 1; k <= n; k++)); do
        if pid=$(svc_pid "etcd-$k"); then
            say "etcd:$k already running (pid $pid)"
        else
            etcd_start "$k"
            ETCD_STARTED+=("$k")
        fi
    done
}

etcd_ready() {
    local n=$1 k pid
    for k in "${ETCD_STARTED[@]}"; do
        read -r pid <"$(pid_file "etcd-$k")"
        wait_for "etcd:$k" "$STACK_TIMEOUT" "$pid" "$RUN/logs/etcd-$k.log" etcd_healthy "$k"
        backend_first "etcd:$k" "$pid"
        say "etcd:$k up on 127.0.0.1:$(etcd_port "$k") ($(etcd_role "$k"))"
    done
    # The members left running answer too (one may have lost its peers).
    for ((k = 1; k <= n; k++)); do
        wait_for "etcd:$k" "$STACK_TIMEOUT" - "$RUN/logs/etcd-$k.log" etcd_healthy "$k"
    done
    ((n > 1)) && say "etcd cluster of $n serving, leader etcd:$(etcd_leader "$n")"
    return 0
}

# ----------------------------------------------------------------- all four

# backends_start REDIS_N ZK_N ETCD_N, then backends_ready with the same:
# MariaDB, Redis, ZooKeeper and etcd, each started before any is waited on,
# so that the JVMs' start, InnoDB's recovery and etcd's election overlap
# (and whatever `up` does in between, such as the build): `up` takes as
# long as the slowest, not their sum. ZooKeeper, the slowest, starts first.
# A kind whose servers are all as the last `up` left them (bench/stack,
# all_same) is skipped, its ensemble's leader check too.
backends_start() {
    all_same zk "$2" || zk_start_all "$2"
    all_same etcd "$3" || etcd_start_all "$3"
    svc_same mysql || mysql_start
    all_same redis "$1" || redis_start "$1"
}

backends_ready() {
    svc_same mysql || mysql_ready
    all_same redis "$1" || redis_ready
    all_same zk "$2" || zk_ready "$2"
    all_same etcd "$3" || etcd_ready "$3"
}
