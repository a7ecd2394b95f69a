#!/usr/bin/env bash
# read_replica.sh — read/write splitting under a correct lock (seed 000
# §1.6.3, mycat): the stack's MariaDB with an asynchronous replica
# (bench/stack up --read-replica), the guarded sale reading its count there
# with ?read=replica.
#
#   1. the strategies whose read is their lock or their check (their own
#      sale: mysql-update, mysql-for-update, the optimistic lock, ...) refuse
#      read=replica (400 naming the parameter);
#   2. redisson reading the primary: exact;
#   3. redisson reading the replica while it applies nothing (the documented
#      switch `bench/stack read-replica pause`, STOP SLAVE SQL_THREAD): every
#      sale reads the count the replica froze at, S, and writes S − 1: R
#      sales, the stock down by one, R − 1 lost updates, exactly, on any
#      machine (a lock excludes the sales; it cannot make a stale read fresh);
#   4. resumed (`read-replica resume` waits until it has caught up): exact
#      again on the primary;
#   5. without --read-replica, read=replica answers 400 naming the missing
#      replica (and MariaDB is back to no binary log).
set -u
T_NAME=read_replica
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_setup --read-replica
STACK=$T_ROOT/bench/stack
t_ok "-n '${LOCKLAB_MYSQL_REPLICA:-}'" "the stack names its read replica (LOCKLAB_MYSQL_REPLICA=${LOCKLAB_MYSQL_REPLICA:-})"

echo "== strategies whose read is their lock or their check refuse read=replica"
for lock in mysql-update mysql-for-update mysql-optimistic mysql-share-mode redis-decr; do
    code=$(t_curl -o /tmp/rr.$$ -w '%{http_code}' "$LOCKLAB_URL/check/lock?lock=$lock&read=replica")
    t_ok "'$code' = 400 -a '$(t_jq "$(cat /tmp/rr.$$)" .parameter)' = read" "$lock: 400 on read=replica ($(t_jq "$(cat /tmp/rr.$$)" .error))"
done
rm -f /tmp/rr.$$

echo "== redisson reading the primary: exact"
t_reset 200
t_load "lock=redisson&read=primary" 300 16
t_exact "redisson, read=primary"

echo "== redisson reading a replica that applies nothing: R sales, the stock down by one"
S=200 R=100
t_reset $S
"$STACK" read-replica resume >/dev/null     # it has the reset
"$STACK" read-replica pause >/dev/null
t_load "lock=redisson&read=replica" $R 16
t_log "redisson, read=replica (paused): sold=$L_sold final=$L_final lost=$L_lost"
t_ok "$L_sold -eq $R" "all $R purchases answered sold ($L_sold)"
t_ok "'$L_final' = $((S - 1))" "the stock went down by one: $L_final"
t_ok "'$L_lost' = $((R - 1))" "$((R - 1)) lost updates under a correct lock ($L_lost)"
"$STACK" read-replica resume >/dev/null

echo "== caught up: exact again"
t_reset 100
t_load "lock=mysql-lock-table&read=primary" 150 16
t_exact "mysql-lock-table, read=primary"

echo "== without --read-replica"
"$T_ROOT/bench/stack" up --no-read-replica >/dev/null || { echo "stack up --no-read-replica failed"; exit 1; }
t_env
answer=$(t_curl "$LOCKLAB_URL/check/lock?lock=redisson&read=replica")
t_ok "'$(t_jq "$answer" .parameter)' = read" "read=replica without a replica: 400 ($(t_jq "$answer" .error))"
t_ok "-z \"\$(grep -s READ_REPLICA '$T_RUN/topology')\"" "the topology forgot the replica"
t_done
