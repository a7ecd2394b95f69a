#!/usr/bin/env bash
# defects_locks.sh — the defects issue 50 found in the strategies, the
# store and the synchronizers, each made certain by a fault switch or an
# outside action, never by a lucky race (docs/faults.md, "Defects found by
# review, and their tests"). Each part failed on the code before its fix.
#
#   4. ZooKeeper grants a session shorter than the one asked for
#      (maxSessionTimeout 2 s, --zk-session-ms 10000): a holder whose
#      check's answer comes back after the granted session ended
#      (?check_pause_ms, the instance paused meanwhile, so the session
#      really expires and another instance sells) must answer lock_lost,
#      not write a lost update under the 10 s it asked for.
#
# The stack ends with ZooKeeper's maximum lowered; the next suite's
# t_setup gives it back.
set -u
T_NAME=defects_locks
. "$(dirname "$0")/lib.sh"
t_setup --ledger
t_need mariadb -- "the suite's products (mariadb client)" || t_done
APP0=${T_INSTANCES[0]} APP1=${T_INSTANCES[1]}
PORT0=${APP0##*:}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

result_of() { t_jq "$(cat "$1")" .result; }
# shellcheck disable=SC2317 # run through t_until
late() { [ "$(t_curl "$1/stats" | jq -r .late)" -ge "$2" ]; }
ledger_of() { "$T_BUILD/ll-check" --product "$1" --json || true; }

echo "== 4. a ZooKeeper session granted shorter than asked: the lease is the granted one"
# A (instance 0, curator) passes its check, and its answer "comes back" 8 s
# late (?check_pause_ms=8000); meanwhile its instance is paused 5 s, past
# the 2 s granted (ZooKeeper expires the session within 2.5 s: ticks of
# 500 ms) and within the 10 s asked, and B (instance 1) takes the lock when
# A's session ends and sells. A's lease is the session from when its
# check was sent: 2 s, long gone when it wakes.
t_setup --ledger --zk-session-ms 10000 --zk-max-session-ms 2000
P=4101
t_product "$P"
for app in "$APP0" "$APP1"; do       # each instance opens its session
    t_curl "$app/check/lock?lock=curator&product=$P" >/dev/null
done
t_ok "'$(t_zk_sessions)' = 'to=2000'" "ZooKeeper grants 2000 ms to sessions that asked 10000 ($(t_zk_sessions))"
t_reset 10 "$P"
t_curl "$APP0/check/lock?lock=curator&product=$P&check_pause_ms=8000&wait_ms=20000" > "$WORK/a" &
t_until 30 late "$APP0" 1 || t_log "A did not reach its pause in app:$PORT0"
"$T_ROOT/bench/fault" pause "app:$PORT0" --for 5000 >/dev/null &
sleep 0.3
t_curl "$APP1/check/lock?lock=curator&product=$P&wait_ms=20000" > "$WORK/b"
wait
a=$(result_of "$WORK/a") b=$(result_of "$WORK/b")
t_log "A: $(cat "$WORK/a")"
t_log "B: $(cat "$WORK/b")"
t_ok "'$a $b $(t_stock "$P")' = 'lock_lost sold 9'" \
     "A answers lock_lost, B sold, the stock fell by one (A $a, B $b)"
j=$(ledger_of "$P")
t_ok "'$(jq -r '"\(.lost) \(.overlap)"' <<< "$j")' = '0 0'" \
     "ll-check: no lost update, no overlap ($(jq -c .anomalies <<< "$j" | cut -c1-160))"

t_done
