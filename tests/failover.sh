#!/usr/bin/env bash
# failover.sh — Redis failover (seed 000 §3.8, seed 001 进阶8, seed 002):
# Redis server 1 with a replica and a Sentinel (bench/stack up
# --redis-replica), the instances asking the Sentinel where the master is.
#
#   1. exact counts through nginx for redisson and redisson-wait, whose
#      every lock the replica acknowledged (WAIT, counted by Redis);
#   2. the seeds' failure, made certain: the replica's link is cut
#      (bench/fault failover --lag), holder A takes the lock on the master
#      and waits after its checks (late_ms); the master fails over to the
#      replica, which never got the lock; B takes it there and sells; A
#      writes late. Two holders: a lost update, and ll-check finds the two
#      critical sections overlapping in the ledger. For redisson and
#      redis-renew. redisson-wait's A is refused instead (503: no replica
#      acknowledged its lock) and nothing is lost;
#   3. a failover with nothing lagging: every slot of every instance
#      follows it, no 503 after it.
#
# Timing only sets the stage (a cut seen in force before A starts, B sent
# after the failover returned, A's pause far longer than the failover);
# every assertion is about answers, counts and the ledger.
set -u
T_NAME=failover
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need redis-cli redis-sentinel nft mariadb -- "Redis failover (redis-cli, redis-sentinel, nftables, mariadb)" ||
    t_done
if [ "$(id -u)" != 0 ]; then
    t_skip "bench/fault failover --lag cuts one connection with nftables: root only"
    t_done
fi
t_setup --redis-replica --ledger
APP0=${T_INSTANCES[0]} APP1=${T_INSTANCES[1]}
S=200 R=1000 C=64
t_ok "-n '${LOCKLAB_REDIS_SENTINEL:-}'" "the stack names its Sentinel (LOCKLAB_REDIS_SENTINEL=${LOCKLAB_REDIS_SENTINEL:-})"

# The master the Sentinel names now, and one command to it.
master() {
    redis-cli -h "${LOCKLAB_REDIS_SENTINEL%:*}" -p "${LOCKLAB_REDIS_SENTINEL#*:}" \
        SENTINEL get-master-addr-by-name locklab | sed -n 2p
}
on_master() { redis-cli -h 127.0.0.1 -p "$(master)" "$@"; }

sql() {
    MYSQL_PWD=$LOCKLAB_MYSQL_PASSWORD mariadb -h"$LOCKLAB_MYSQL_HOST" -P"$LOCKLAB_MYSQL_PORT" \
        -u"$LOCKLAB_MYSQL_USER" "$LOCKLAB_MYSQL_DB" -N -e "$1"
}
for p in 4001 4002 4003; do
    sql "INSERT IGNORE INTO db_stock (product_code, stock_code, count) VALUES ('$p', '001', 10)"
done

echo "== exact counts through nginx, three instances, a replica behind the master"
declare -A WAITS
for lock in redisson redisson-wait; do
    t_reset $S
    on_master CONFIG RESETSTAT >/dev/null
    t_load "lock=$lock" $R $C
    t_exact "$lock with a replica"
    waits=$(on_master INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_wait:calls=\([0-9]*\),.*/\1/p')
    WAITS[$lock]=${waits:-0}
done
t_ok "${WAITS[redisson]} -eq 0" "redisson never waits for the replica"
t_ok "${WAITS[redisson-wait]} -ge $((S + L_sold_out))" \
     "redisson-wait waited for the replica at each of its ${WAITS[redisson-wait]} locks (WAIT)"

echo "== the master fails over before the lock reached the replica"
DIR=$(mktemp -d)
ROUND=(redisson:4001 redis-renew:4002 redisson-wait:4003)
for e in "${ROUND[@]}"; do t_reset 10 "${e#*:}"; done
# The lag is the A's time to take their locks on the master, three curls
# once the cut shows: 5 s, against well under a second here idle and about
# 2 s under a load of 20 on the 2 cores. A writes 10 s after its lock: after
# the failover (the lag and about a second) and B's sale.
"$T_ROOT/bench/fault" failover --lag 5000 >/dev/null &
fault=$!
# A starts once the cut is in force: its nftables table is there
# (bench/lib/stack_replica.sh names it by the stack's offset). One nft call
# a look, not `bench/fault status`, a whole bench/stack run that took
# seconds of the 5 s under the suite's load and once saw the cut only after
# it had healed.
REPL_TABLE=llrepl$((${LOCKLAB_STACK_OFFSET:-0} / 100 % 200))
cut=0
for _ in $(seq 600); do
    nft list table inet "$REPL_TABLE" >/dev/null 2>&1 && { cut=1; break; }
    sleep 0.05
done
for e in "${ROUND[@]}"; do
    t_curl "$APP0/check/lock?lock=${e%:*}&product=${e#*:}&late_ms=10000&wait_ms=20000" > "$DIR/${e#*:}.a" &
done
wait "$fault"
t_ok "$? = 0" "bench/fault failover --lag 5000: the Sentinel promoted the replica"
t_ok "$cut = 1" "the replica's link was cut before the A's were sent"
for e in "${ROUND[@]}"; do
    t_curl "$APP1/check/lock?lock=${e%:*}&product=${e#*:}&wait_ms=20000" > "$DIR/${e#*:}.b" &
done
wait
for e in "${ROUND[@]}"; do
    s=${e%:*} p=${e#*:}
    a=$(t_jq "$(cat "$DIR/$p.a")" .result) b=$(t_jq "$(cat "$DIR/$p.b")" .result)
    final=$(t_stock "$p")
    check=$("$T_BUILD/ll-check" --product "$p" --json) || true
    t_log "$s: A $a, B $b, stock 10 -> $final; ll-check: $(jq -c '.anomalies' <<< "$check" | cut -c1-160)"
    if [ "$s" = redisson-wait ]; then
        t_ok "'$a' = unavailable" "$s: A's lock was never acknowledged by the replica: refused (503)"
        t_ok "$(t_jq "$(cat "$DIR/$p.a")" '.error | contains("acknowledged")') = true" \
             "$s: the answer says the replica did not acknowledge it"
        t_ok "'$b $final' = 'sold 9'" "$s: B alone sold, the stock fell by one"
        t_ok "'$(jq -r '"\(.lost) \(.overlap)"' <<< "$check")' = '0 0'" "$s: ll-check finds nothing lost, no overlap"
    else
        t_ok "'$a $b $final' = 'sold sold 9'" "$s: A and B both held the lock and sold; the stock fell by one"
        t_ok "'$(jq -r '"\(.lost) \(.overlap)"' <<< "$check")' = '1 1'" \
             "$s: ll-check names the lost update and the two holders' overlap"
    fi
done
rm -rf "$DIR"

echo "== a failover with nothing lagging: every instance follows it"
"$T_ROOT/bench/fault" failover >/dev/null
t_ok "$? = 0" "bench/fault failover"
for lock in redisson redisson-wait redis-renew; do
    t_reset 40
    t_load "lock=$lock" 40 16
    t_ok "$L_sold = 40 -a $L_unavailable = 0 -a $L_final = 0" \
         "$lock sells all 40 on the new master (redis on $(master)), no 503"
done

t_done
