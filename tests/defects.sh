#!/usr/bin/env bash
# defects.sh — the defects of issue 50 that show only on the live stack,
# each made certain by a fault switch or an outside action:
#
#   1. mysql-optimistic, whose UPDATE and the SELECT behind it share one
#      round trip: the server kills the connection between their answers
#      (?lose_answer=2, a KILL CONNECTION in the SELECT's place). The
#      UPDATE committed and answered: the purchase is sold, counted sold,
#      and an order so sold is not sold again by its retry on another
#      instance (the old code answered 503 and dropped the order's claim);
#   2. redis-watch, its WATCH lost between the read and the write: the
#      slot's connection is killed from outside (CLIENT KILL) while the
#      purchase holds between its two steps (?hold_ms), and another sells
#      the last unit meanwhile. The write must not commit on a fresh
#      connection without the WATCH (the old code sold the unit twice).
set -u
T_NAME=defects
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_setup

# ask I PATH [CURL-ARGS]: one request to instance I; A_GOT is "CODE
# RESULT", A_BODY the answer.
ask() {
    local body code
    body=$(t_curl -w '\n%{http_code}' "${@:3}" "${T_INSTANCES[$1]}$2") || true
    code=${body##*$'\n'} A_BODY=${body%$'\n'*}
    A_GOT="$code $(jq -r .result <<< "$A_BODY" 2>/dev/null)"
}

echo "== mysql-optimistic: killed between the UPDATE's answer and the SELECT's"
t_reset 10
ask 0 "/check/lock?lock=mysql-optimistic&lose_answer=2"
t_ok "'$A_GOT' = '200 sold'" "a sale MariaDB committed is answered sold ($A_GOT: ${A_BODY:0:100})"
t_ok "$(t_stock) -eq 9" "the unit is gone from MariaDB ($(t_stock))"
t_ok "$(t_stats_sum mysql-optimistic sold) -eq 1" "/stats counts it sold"
sleep 0.3   # the slot waits DB_RETRY_MS (200 ms) before it connects again
ask 0 "/check/lock?lock=mysql-optimistic"
t_ok "'$A_GOT' = '200 sold'" "the next purchase, on a new connection, sells ($A_GOT)"
t_ok "$(t_stock) -eq 8" "it took one unit ($(t_stock))"

echo "== ... and an order so sold is not sold again by its retry elsewhere"
t_reset 10
order="defects-$$-$RANDOM"
ask 0 "/order?order_no=$order&lock=mysql-optimistic&lose_answer=2" -X POST
t_ok "'$A_GOT' = '200 sold'" "the order is sold ($A_GOT: ${A_BODY:0:100})"
sleep 0.3
ask 1 "/order?order_no=$order&lock=mysql-optimistic" -X POST
t_ok "'${A_GOT#* }' = sold -a '$(jq -r '.replayed // false' <<< "$A_BODY")' = true" \
    "its retry on another instance replays the first answer ($A_GOT: ${A_BODY:0:100})"
t_ok "$(t_stock) -eq 9" "one unit for the order, not two ($(t_stock))"

echo "== redis-watch: its slot's connection killed between the WATCH and the EXEC"
# A WATCHes and reads the last unit on instance 0, then holds (?hold_ms)
# before its MULTI … EXEC; B sells that unit on instance 1; then A's own
# connection, the one that holds the WATCH (the only client whose last
# command is the read step's HGET), is killed from outside, as a Sentinel
# failover's CLIENT KILL, a `timeout` or an RST would. A's write must not
# run on a fresh connection without its WATCH.
if t_need redis-cli -- "CLIENT KILL of a slot's connection (redis-cli)"; then
    IFS=, read -r -a REDIS <<< "$LOCKLAB_REDIS"
    on_redis() { redis-cli -h "${REDIS[0]%:*}" -p "${REDIS[0]#*:}" "$@"; }
    watcher() { on_redis CLIENT LIST TYPE normal | sed -n 's/^id=\([0-9]*\) .* cmd=hget .*/\1/p' | head -1; }
    # shellcheck disable=SC2317 # run through t_until
    watching() { [ -n "$(watcher)" ]; }
    t_reset 1
    t_curl "${T_INSTANCES[0]}/check/lock?lock=redis-watch&hold_ms=5000" > "/tmp/defects-a.$$" &
    a=$!
    t_until 5 watching
    victim=$(watcher)
    t_ok "-n '$victim'" "A has WATCHed and read, and holds (client $victim)"
    ask 1 "/check/lock?lock=redis-watch"
    t_ok "'$A_GOT' = '200 sold'" "B sells the last unit meanwhile ($A_GOT)"
    t_ok "'$(on_redis CLIENT KILL ID "$victim")' = 1" "A's connection killed from outside"
    wait "$a"
    got=$(jq -r .result "/tmp/defects-a.$$")
    rm -f "/tmp/defects-a.$$"
    t_ok "'$got' = sold_out" "A, its WATCH gone, does not sell the unit again (A: $got)"
    t_ok "'$(on_redis GET '{stock:1001}')' = 0" "Redis's count is 0, not -1 ($(on_redis GET '{stock:1001}'))"
    t_ok "$(t_stats_sum redis-watch sold) -eq 1" "one unit sold in all ($(t_stats_sum redis-watch sold))"
fi

t_done
