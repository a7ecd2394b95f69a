#!/usr/bin/env bash
# lifecycle.sh — `bench/stack down` and `bench/stack up` back to back, 20
# times (LOCKLAB_LIFECYCLE_ROUNDS), alternating two topologies, and 200
# purchases through nginx the moment each `up` returns: every one answered
# by the service, sold or sold out, none refused, reset or answered 502 by
# nginx. It runs on a stack of its own (stack-c, tests/other_stack.sh),
# first in chain c, beside chains a and b, so its rounds (12-14 s each on a quiet
# machine) do not lengthen chains a and b; it stops that stack at the end
# (stack_up_c then starts chain c on it with the test topology).
#
# `up` returns only when every server it started answers: MariaDB (set
# up), each Redis server, each ZooKeeper server and the ensemble's leader,
# each etcd member healthy, each instance's /health on its port and on the
# Unix socket nginx uses, and GET /health through nginx reaching every
# instance (bench/lib/stack_*.sh). The purchases check that from outside:
# their 200 go to four strategies in turn, so that every backend serves:
# mysql-update (MariaDB), redisson (Redis), curator (ZooKeeper) and etcd
# (etcd), 50 each over 16 connections from a stock of 40: exactly 40 sold
# and 10 sold out each. The topologies are small, so that the rounds are
# cheap: A is one of everything, B is three instances and a ZooKeeper
# ensemble of three, which is where `up` once returned too early (594 of
# 600 purchases failed, #30). Switching between them also restarts
# ZooKeeper with fresh data each time (bench/lib/stack_servers.sh,
# zk_prepare). A also has the seeds' timing (up --seed-timing): each round
# checks the instances' flags and the session ZooKeeper granted them.
#
# No assertion depends on how long down or up take: each is timed and
# logged, never bounded (beyond bench/stack's own 90 s per server).
set -u
T_NAME=lifecycle
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need curl jq -- "the integration tests (curl, jq)" || t_done

STACK=$T_ROOT/bench/stack
ROUNDS=${LOCKLAB_LIFECYCLE_ROUNDS:-20}
TOPO_A="--instances 1 --redis 1 --zk 1 --etcd 1 --seed-timing"
TOPO_B="--instances 3 --redis 1 --zk 3 --etcd 1"
LOCKS=(mysql-update redisson curator etcd)
S=40 R=50 C=16

# The purchases: 50 for each strategy in turn, each from a stock of 40 (two
# strategies on one product would not exclude each other); sets the counts
# over all four and P_left, the units left by any of them.
purchases() {
    local lock key val out
    P_sold=0 P_sold_out=0 P_transport=0 P_other="" P_left=0
    for lock in "${LOCKS[@]}"; do
        t_reset $S
        out=$("$T_BUILD/ll-load" -c $C -n $R "$LOCKLAB_URL/check/lock?lock=$lock") || true
        while IFS='=' read -r key val; do
            case $key in
                transport_errors) P_transport=$((P_transport + val)) ;;
                result_sold) P_sold=$((P_sold + val)) ;;
                result_sold_out) P_sold_out=$((P_sold_out + val)) ;;
                result_*) P_other+=" $lock:${key#result_}=$val" ;;
                err_*) [ "$val" = 0 ] || P_other+=" $lock:$key=$val" ;;
            esac
        done <<< "$out"
        val=$(t_stock)
        [ "$val" = 0 ] || P_left=$((P_left + ${val:-1}))
    done
}

# The session timeouts ZooKeeper granted: after the purchases, the
# instances' sessions among them.
zk_sessions() { t_zk_sessions; }

# up --seed-timing (round A): the instances run with the seeds' 3 s lease
# and 30 s ZooKeeper session, and ZooKeeper grants that session; without it
# (round B, --defaults), neither flag, and a fifth of the 30 s lease.
timing() {
    local args
    args=$(cat "$T_RUN"/apps/app-*.spec)
    if [ "$name" = A ]; then
        t_ok "$(grep -c -- '--lease-ms 3000 --zk-session-ms 30000' <<< "${args//$'\n'/ }") -eq 1 -a '$(zk_sessions)' = 'to=30000'" \
             "round $round (A, --seed-timing): the instance runs with --lease-ms 3000 --zk-session-ms 30000, ZooKeeper grants 30 s"
    else
        t_ok "$(grep -c -- '--lease-ms\|--zk-session-ms' <<< "$args") -eq 0 -a '$(zk_sessions)' = 'to=6000'" \
             "round $round (B, --defaults): no timing flags, ZooKeeper sessions of a fifth of the 30 s lease"
    fi
}

# What the servers said, when a round went wrong.
explain() {
    local log
    for log in "$T_RUN"/nginx/logs/error.log "$T_RUN"/logs/app-*.log; do
        [ -s "$log" ] || continue
        echo "  --- last lines of ${log#"$T_ROOT"/}"
        tail -n 5 "$log" | sed 's/^/      /'
    done
}

# The stack is this test's alone: stopped at the end, whatever happened.
trap '"$STACK" down > /dev/null 2>&1' EXIT

down_ms=0 up_ms=0
for ((round = 1; round <= ROUNDS; round++)); do
    if ((round % 2)); then topo=$TOPO_A name=A; else topo=$TOPO_B name=B; fi
    t0=$(t_now_us)
    "$STACK" down > /dev/null || t_ok "1 -eq 0" "round $round: bench/stack down"
    t1=$(t_now_us)
    # shellcheck disable=SC2086 # the topology's flags, one word each
    up=$("$STACK" up --defaults $topo 2>&1) ||
        { t_ok "1 -eq 0" "round $round: bench/stack up $topo"; printf '%s\n' "$up" | tail -5; }
    t2=$(t_now_us)
    t_env
    purchases
    down_ms=$((down_ms + (t1 - t0) / 1000)) up_ms=$((up_ms + (t2 - t1) / 1000))
    t_log "round $round ($name: $topo): down $(((t1 - t0) / 1000)) ms, up $(((t2 - t1) / 1000)) ms;" \
          "sold $P_sold, sold out $P_sold_out, transport errors $P_transport${P_other:+, other:$P_other}"
    t_ok "$P_transport -eq 0 -a '$P_other' = ''" \
         "round $round ($name): none of the $((4 * R)) purchases refused, reset or failed"
    t_ok "$P_sold -eq $((4 * S)) -a $P_sold_out -eq $((4 * (R - S))) -a $P_left -eq 0" \
         "round $round ($name): every purchase answered, $((4 * S)) sold and $((4 * (R - S))) sold out, 0 left"
    if [ "$P_sold" -ne $((4 * S)) ] || [ "$P_transport" -ne 0 ] || [ -n "$P_other" ]; then explain; fi
    timing
done
t_log "$ROUNDS rounds: down $((down_ms / ROUNDS)) ms, up $((up_ms / ROUNDS)) ms on average"
t_done
