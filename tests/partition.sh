#!/usr/bin/env bash
# partition.sh — a holder cut off from its lock service, by a real network
# cut (bench/fault partition: the instances in network namespaces, two
# nftables rules dropping the packets between one of them and one
# backend), while it can still reach MariaDB.
#
#   redisson: A on instance 0 takes the lock and reads the stock
#   (?hold_ms=8000), then instance 0 loses Redis for 6 s. Its watchdog's
#   renewals go unanswered, so its lease (3 s) runs out in Redis; B on
#   instance 1 takes the lock and sells. When A comes to write, the last
#   lease Redis confirmed has ended: a failed renewal is not a renewal, and
#   A refuses to write (503 lock_lost). Nothing lost.
#   curator: the same with ZooKeeper cut off: A's session expires on the
#   ensemble, B's node leads, A's check cannot confirm its node and refuses.
#
# The stack moves to namespaces (--netns, root only) with the ledger on for
# this test (every backend restarts); the next test's t_setup moves it
# back, which is why it runs last (tests/CMakeLists.txt).
set -u
T_NAME=partition
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
    t_skip "network namespaces need root"
    t_done
fi
t_setup --netns --ledger
APP0=${T_INSTANCES[0]} APP1=${T_INSTANCES[1]}
PORT0=${APP0##*:}

t_ok "'$(t_curl "$APP1/health" | jq -r .status)' = ok" "the instances answer in their namespaces ($APP0, $APP1)"

# shellcheck disable=SC2317 # run through t_until
in_flight() { [ "$(t_curl "$1/stats" | jq -r .in_flight)" -ge "$2" ]; }

# cut_during LOCK BACKEND: A holds on instance 0, instance 0 loses BACKEND.
cut_during() {
    local lock=$1 backend=$2 a b final checked try
    # A round in which A was still taking its lock when the cut began (on
    # a loaded machine, in flight is not yet held: a CI run's ASan pass had
    # A's create fail in the cut) shows nothing of a cut-off holder: A's
    # acquire answers unavailable, which is right. Such a round, where
    # instance 0 counted no hold, is run again, twice at most.
    for try in 1 2 3; do
        t_reset 10
        # A holds 8 s; the cut begins once A is in instance 0 (a bench/fault
        # run later: 0.3 s here when idle, 2-3 s under a load of 20) and lasts
        # 6 s. A's lease then ends at most 3 s (Redis) or its session 4 s
        # (ZooKeeper) after the cut began, before A's check at 8 s unless the
        # cut began 4 s or more after A: that is the margin.
        t_curl "$APP0/check/lock?lock=$lock&hold_ms=8000&wait_ms=20000" > /tmp/locklab-part-$$ &
        t_until 30 in_flight "$APP0" 1 || t_log "A never reached app:$PORT0"
        "$T_ROOT/bench/fault" partition "app:$PORT0" "$backend" --for 6000 >/dev/null &
        sleep 0.3
        b=$(t_curl "$APP1/check/lock?lock=$lock&wait_ms=20000")
        wait
        a=$(cat /tmp/locklab-part-$$)
        rm -f /tmp/locklab-part-$$
        final=$(t_stock)
        t_log "$lock cut from $backend: A $(t_jq "$a" .result) ($(t_jq "$a" .error | cut -c1-90)), B $(t_jq "$b" .result), stock $final"
        # Instance 0 counts a hold only for a purchase that got the lock.
        [ "$(t_curl "$APP0/stats" | jq -r --arg l "$lock" '.strategies[$l].holds // 0')" != 0 ] && break
        t_log "$lock: A was cut off before it held the lock (try $try of 3)"
    done
    t_ok "'$(t_jq "$b" .result)' = sold" "$lock: the instance that still reaches $backend sells"
    t_ok "'$(t_jq "$a" .result)' = lock_lost" "$lock: the cut-off holder refuses to write (lock_lost)"
    t_ok "'$final' = 9" "$lock: one unit sold, none lost"
    checked=$("$T_BUILD/ll-check" --json) || true
    t_ok "'$(jq -r '"\(.sales) \(.lost) \(.overlap)"' <<< "$checked")' = '1 0 0'" \
         "$lock: ll-check finds one sale and nothing wrong in the ledger"
    t_ok "'$("$T_ROOT/bench/fault" status | grep -c cut)' = 0" "$lock: the cut healed"
}

echo "== redisson: a holder cut off from Redis past its lease"
cut_during redisson redis
echo "== curator: a holder cut off from ZooKeeper past its session"
cut_during curator zk

echo "== healed: instance 0 sells again"
for lock in redisson curator; do
    code=""
    for _ in $(seq 1 50); do      # the clients reconnect on their next use
        code=$(t_curl -o /dev/null -w '%{http_code}' "$APP0/check/lock?lock=$lock")
        [ "$code" = 200 ] && break
        sleep 0.2
    done
    t_ok "'$code' = 200" "$lock on instance 0 after the heal"
done
t_done
