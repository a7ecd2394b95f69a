#!/usr/bin/env bash
# etcd.sh — the etcd strategy and the composite locks (seed 004 §4.1, §4.5)
# against the real stack: three instances behind nginx, a three-member etcd
# cluster, a three-server ZooKeeper ensemble, Redis.
#
#   1. exact counts through nginx × 3 (200 units, 1000 purchases, 64
#      connections) for etcd and hybrid; fallback in an ordinary run takes
#      every lock on its first layer, Redis;
#   2. etcd: re-entry within one request; ?fence=1 sells with the key's
#      create revision as the token; `etcdctl lock` (etcd's own
#      concurrency.Mutex) and the etcd strategy exclude each other, both ways;
#   3. etcd: a holder that dies in its critical section (?crash=1) keeps the
#      lock only until its session's lease runs out: a buyer on another
#      instance, already waiting, gets it, and the counts stay exact;
#   4. etcd: the cluster's leader killed in the middle of a run: the others
#      elect a new one, sales go on, the counts stay exact;
#   5. Redis killed in the middle of a fallback run: it keeps selling on
#      ZooKeeper, and the test reports how many sales switched, how many
#      overlapped another layer's holder, and what ll-check found.
#
# The switch's cost shown on purpose (a fallback holder on Redis at work
# when Redis dies, the next buyer on ZooKeeper: two holders, a lost update;
# hybrid refuses instead) is `bench/lesson fallback-switch`, which the suite
# runs in `lesson`.
# Fault runs assert "nothing oversold, nothing lost" (or, in 5, that every
# lost update is one the ledger shows), never timing. The leases are the test
# topology's 3 s.
set -u
T_NAME=etcd
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
# The ledger (every sale's row, which ll-check reads) is for 5; the
# whole test runs with it, so that the stack restarts once.
t_setup --ledger
t_need etcdctl mariadb -- "etcd's own client and the ledger's products (etcd-client, mariadb)" ||
    t_done

STACK=$T_ROOT/bench/stack
FAULT=$T_ROOT/bench/fault

# Leader loss needs a cluster of three.
IFS=, read -r -a ETCD_MEMBERS <<< "${LOCKLAB_ETCD:-}"
if [ "${#ETCD_MEMBERS[@]}" -lt 3 ]; then
    "$STACK" up --etcd 3 >/dev/null || { echo "stack up --etcd 3 failed"; exit 1; }
    t_env
fi

S=200 R=1000 C=64

port_of() { local p=${1##*:}; echo "${p%%/*}"; }

all_healthy() {
    local url
    for url in "${T_INSTANCES[@]}"; do
        curl -sf -m 2 "$url/health" >/dev/null || return 1
    done
}

# The whole stack again: every instance answers, etcd has a leader.
stack_whole() {
    local i
    "$STACK" up >/dev/null 2>&1
    for ((i = 0; i < 120; i++)); do
        "$STACK" etcd-leader >/dev/null 2>&1 && all_healthy && { echo yes; return; }
        sleep 0.5
    done
    echo no
}

counts_exact() {
    t_ok "'$L_oversold' = 0 -a '$L_lost' = 0" "$1: 0 oversold, 0 lost updates"
    t_ok "$L_sold -gt 0" "$1: sells ($L_sold)"
}

result_of() { t_jq "$1" .result; }

# The fallback counters of GET /stats, added up over the instances: held_on
# per layer, switched, overlapped.
fallback_counts() {
    local url
    for url in "${T_INSTANCES[@]}"; do t_curl "$url/stats"; done |
        jq -s -r '[.[].fallback] | "\(map(.held_on.redisson) | add) \(map(.held_on.curator) | add) \(map(.held_on["mysql-lock-table"]) | add) \(map(.switched) | add) \(map(.overlapped) | add)"'
}

# etcd's own client: `etcdctl lock NAME CMD…` runs CMD holding
# concurrency.Mutex on NAME.
ETCDCTL=(env ETCDCTL_API=3 etcdctl --endpoints "$LOCKLAB_ETCD" --dial-timeout 2s)

echo "== exact counts, three instances behind nginx"
# hybrid waits in redisson's layer, which is not fair: a purchase waits its
# turn in its instance's line (locks/redis_pubsub.c: the permits go to the
# waiter that has waited longest) and for its instance's turn at the lock.
# Measured through nginx at 23 sales/s (a sale held 30 ms), 64 connections:
# the longest wait 6-9 s where a fair lock's would be 64 / 23 = 2.8 s; the
# request's 10 s (--lock-wait-ms) then holds down to about 20 sales/s,
# where hybrid makes 45 on cold ZooKeeper JVMs and 150-190 warm. Taken by
# whoever woke first, as they were, the permits let a waiter wait 10 s at
# 45 sales/s: 121 of these 1000 purchases once answered lock_timeout.
# etcd's own (65-85 sales/s here: every purchase, sold out or not, takes
# the lock through a lease, a transaction and a watch) needs no more than
# as many sold out as sold to show it exact.
for lock in etcd hybrid fallback; do
    t_reset $S
    r=$R
    [ $lock = etcd ] && r=$((2 * S))
    t_load "lock=$lock" $r $C
    t_exact "$lock"
done
read -r on_redis on_zk on_mysql switched overlapped <<< "$(fallback_counts)"
t_ok "$on_redis -gt 0 -a $on_zk -eq 0 -a $on_mysql -eq 0 -a $switched -eq 0" \
     "fallback: with every backend up, every lock is Redis's ($on_redis), none switched"

echo "== etcd: re-entry, the fence, and etcd's own Mutex"
t_reset 5
t_load "lock=etcd&reentry=3" 20 4
t_ok "$L_sold -eq 5 -a $L_lock_timeout -eq 0 -a $L_final -eq 0" "etcd: reentry=3 sells within one request"
t_reset 5
t_load "lock=etcd&fence=1" 20 4
t_ok "$L_sold -eq 5 -a $L_final -eq 0" "etcd: ?fence=1 sells, the create revision as the token"
fences=$(t_curl "$LOCKLAB_URL/locks" | jq -r '.strategies[] | select(.name == "etcd") | .fence')
t_ok "'$fences' = etcd" "GET /locks: etcd's tokens are the etcd service's"

# The keys under a prefix, from the first member (the gateway's range).
etcd_keys() {
    local b64 end
    b64=$(printf '%s' "$1" | base64 -w0)
    end=$(printf '%s' "${1%?}$(printf '%s' "${1: -1}" | tr '/' '0')" | base64 -w0)
    t_curl -X POST -d "{\"key\":\"$b64\",\"range_end\":\"$end\"}" \
        "http://${LOCKLAB_ETCD%%,*}/v3/kv/range" | jq -r '.kvs[]?.key | @base64d'
}

t_reset 10 1002
out=$(mktemp)
"${ETCDCTL[@]}" lock /locklab/etcd/1002 sleep 8 > "$out" 2>&1 &
holder=$!
for ((i = 0; i < 50; i++)); do
    [ -n "$(etcd_keys /locklab/etcd/1002/)" ] && break
    sleep 0.1
done
t_log "etcdctl holds $(etcd_keys /locklab/etcd/1002/)"
t_load "lock=etcd&product=1002&wait_ms=1000" 3 3
t_ok "$L_sold -eq 0 -a $L_lock_timeout -eq 3" "etcd waits while etcdctl's Mutex holds the lock"
wait "$holder"
t_load "lock=etcd&product=1002" 3 3
t_ok "$L_sold -eq 3" "etcd sells once etcdctl released it"
t_curl -o /dev/null "${T_INSTANCES[0]}/check/lock?lock=etcd&product=1002&hold_ms=4000" &
holder=$!
sleep 1
got=$(timeout 2 "${ETCDCTL[@]}" lock /locklab/etcd/1002 echo got 2>/dev/null | tail -1)
t_ok "'$got' != got" "etcdctl's Mutex waits while locklab holds the lock"
wait "$holder"
got=$(timeout 5 "${ETCDCTL[@]}" lock /locklab/etcd/1002 echo got 2>/dev/null | tail -1)
t_ok "'$got' = got" "etcdctl's Mutex acquires once locklab released it"
rm -f "$out"

echo "== etcd: a holder dies in its critical section"
victim=${T_INSTANCES[1]}
t_reset 100
t_curl -o /dev/null "$victim/check/lock?lock=etcd&hold_ms=3000" &
holder=$!
sleep 0.5
t_curl -o "$out" "${T_INSTANCES[2]}/check/lock?lock=etcd&wait_ms=20000" &
waiter=$!
sleep 0.5
"$STACK" kill "app:$(port_of "$victim")" >/dev/null
wait "$holder"
wait "$waiter"
t_ok "'$(result_of "$(cat "$out")")' = sold" \
     "the waiter on another instance gets the lock once the dead holder's lease runs out"
t_reset 100
t_load "lock=etcd" 300 32
counts_exact "etcd after app:$(port_of "$victim") was killed holding the lock"
t_ok "$(stack_whole) = yes" "bench/stack up restores app:$(port_of "$victim")"
t_reset 100
t_curl -o /dev/null "$victim/check/lock?lock=etcd&crash=1"
t_load "lock=etcd" 300 32
counts_exact "etcd after its holder crashed (?crash=1)"
t_ok "$(stack_whole) = yes" "bench/stack up restores app:$(port_of "$victim") again"
rm -f "$out"

echo "== etcd: the leader dies in the middle of a run"
leader=$("$STACK" etcd-leader)
t_reset $S
( sleep 1.5; t_log "killing etcd:$leader (the leader)"; "$FAULT" kill "etcd:$leader" >/dev/null ) &
killer=$!
t_load "lock=etcd" $R $C
wait "$killer"
counts_exact "etcd with its leader killed mid-run"
t_ok "$("$STACK" etcd-leader 2>/dev/null || echo none) != $leader" \
     "the two left elected another leader"
t_ok "$(stack_whole) = yes" "bench/stack up restores etcd:$leader"

echo "== fallback when Redis dies mid-run (--ledger)"
sql() {
    MYSQL_PWD=$LOCKLAB_MYSQL_PASSWORD mariadb -h"$LOCKLAB_MYSQL_HOST" -P"$LOCKLAB_MYSQL_PORT" \
        -u"$LOCKLAB_MYSQL_USER" "$LOCKLAB_MYSQL_DB" -N -e "$1"
}
sql "INSERT IGNORE INTO db_stock (product_code, stock_code, count) VALUES ('3101', '001', 10)"
# 1500 units, 3000 purchases: Redis dies after a tenth to a third of the
# sales (about 270 a second on Redis).
t_reset 1500 3101
( sleep 0.5; t_log "killing redis:1"; "$FAULT" kill redis:1 >/dev/null ) &
killer=$!
t_load "lock=fallback&product=3101" 3000 $C
wait "$killer"
read -r on_redis on_zk on_mysql switched overlapped <<< "$(fallback_counts)"
check=$("$T_BUILD/ll-check" --product 3101 --json) || true
t_log "fallback with Redis killed at 0.5 s: sold $L_sold (redisson $on_redis, curator $on_zk," \
      "mysql-lock-table $on_mysql), switched $switched, overlapped in an instance $overlapped;" \
      "ll-check: $(jq -c '{lost, overlap}' <<< "$check"); lost updates by the counts $L_lost"
t_ok "$on_zk -gt 0 -a $switched -gt 0" "fallback keeps selling on ZooKeeper once Redis is gone"
# Every holder checks the stock, so the count never goes below 0; but a
# sale lost in the switch's overlap is a unit sold again once the stock
# runs out (sold = stock + lost), which the counts call oversold.
t_ok "$L_final -ge 0 -a $L_oversold -le $L_lost" \
     "fallback: the stock never went below 0; a unit sold past it is an update lost in the switch ($L_oversold)"
t_ok "$(( L_sold + L_sold_out + L_unavailable )) -eq $L_requests" \
     "fallback: every purchase sold, sold out or (mid-switch) found no layer"
# Each unit lost is a sale that overlapped another: the ledger finds the
# loss from the recorded reads and writes alone. Its holders' overlap it
# finds only when both holds were recorded whole: a redisson hold cut by
# Redis's death may not be (CI's sanitized pass, 2026-12-02: lost 1,
# overlap 0), so the overlap is logged above, not asserted.
t_ok "$(jq --argjson lost "$L_lost" '.lost >= $lost' <<< "$check") = true" \
     "ll-check accounts for every lost update the counts show ($L_lost)"
t_ok "$(stack_whole) = yes" "bench/stack up restores redis:1"

t_done
