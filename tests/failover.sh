#!/usr/bin/env bash
# failover.sh — Redis failover (seed 000 §3.8, seed 001 进阶8, seed 002):
# Redis server 1 with a replica and a Sentinel (bench/stack up
# --redis-replica), the instances asking the Sentinel where the master is.
#
#   1. exact counts through nginx for redisson and redisson-wait, whose
#      every lock the replica acknowledged (WAIT, counted by Redis);
#   2. a failover with nothing lagging: every slot of every instance
#      follows it, no 503 after it;
#   3. left in place, then an up on new addresses (--netns): redis:1 the
#      master again, the Sentinel following.
#
# The seeds' failure itself, a master that fails over before its replica
# got the lock (two holders, a lost update; redisson-wait refused instead),
# is `bench/lesson redis-failover`, which the suite runs in `lesson`.
set -u
T_NAME=failover
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need redis-cli redis-sentinel -- "Redis failover (redis-cli, redis-sentinel)" ||
    t_done
t_setup --redis-replica
S=200 R=1000 C=64
t_ok "-n '${LOCKLAB_REDIS_SENTINEL:-}'" "the stack names its Sentinel (LOCKLAB_REDIS_SENTINEL=${LOCKLAB_REDIS_SENTINEL:-})"

# The master the Sentinel names now, and one command to it.
master() {
    redis-cli -h "${LOCKLAB_REDIS_SENTINEL%:*}" -p "${LOCKLAB_REDIS_SENTINEL#*:}" \
        SENTINEL get-master-addr-by-name locklab | sed -n 2p
}
on_master() { redis-cli -h 127.0.0.1 -p "$(master)" "$@"; }

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

echo "== a failover with nothing lagging: every instance follows it"
"$T_ROOT/bench/fault" failover >/dev/null
t_ok "$? = 0" "bench/fault failover"
for lock in redisson redisson-wait redis-renew; do
    t_reset 40
    t_load "lock=$lock" 40 16
    t_ok "$L_sold = 40 -a $L_unavailable = 0 -a $L_final = 0" \
         "$lock sells all 40 on the new master (redis on $(master)), no 503"
done

# The failover stays in place: the replica is the master the Sentinel
# names. An up on new addresses (--netns, as the fault matrix's after this
# suite) restarts both servers, redis:1 a master and the replica its
# replica, so the Sentinel's picture is stale; following it made each
# server the other's replica and the up waited for ever (CI, 2026-12-02).
echo "== new addresses after the failover: redis:1 the master again"
LOCKLAB_STACK_TIMEOUT=30 t_setup --redis-replica --netns
r1=${LOCKLAB_REDIS%%,*} r1=${r1##*:}
t_ok "$(master) = $r1" "after up --netns the Sentinel names redis:1 (on $r1), not the replica"
t_reset 40
t_load "lock=redisson" 40 16
t_ok "$L_sold = 40 -a $L_final = 0" "redisson sells all 40 on redis:1"

t_done
