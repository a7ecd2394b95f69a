#!/usr/bin/env bash
# overload.sh — a flash crowd is the normal case.
#
#   1. Through nginx, 2000 connections for 10 s (wrk) on mysql-update:
#      every answer is a 200, 409 or 503 carrying a JSON result, nginx
#      answers no 502 (no instance is ever called dead for being busy),
#      no connection fails, every sale is accounted for (stock fell by
#      exactly the units sold), and /health answers afterwards.
#   2. One instance of its own with --max-connections 8 under 24
#      connections: past 8, a prompt 503 "overloaded" that closes the
#      connection, never a refused or dropped one.
#
# The crowd's selling rate is printed beside a 64-connection run's, not
# asserted: speed is measured in bench/ (bench/compare --scenario
# throughput --connections 2000; docs/journal.md has the figures).
set -u
T_NAME=overload
. "$(dirname "$0")/lib.sh"
t_setup
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true   # wrk's 2000 sockets

t_need wrk -- "the crowd (wrk)" || t_done

# wrk_run C SECONDS: wrk with the counting script; its JSON line in $W.
wrk_run() {
    W=$(wrk -t2 -c"$1" -d"$2s" --timeout 30s -s "$T_ROOT/bench/load/wrk-count.lua" \
        "$LOCKLAB_URL/check/lock?lock=mysql-update" | tail -1)
}

# settle: no instance has a purchase in flight (wrk's last ones run on).
settle() {
    local url n
    for url in "${T_INSTANCES[@]}"; do
        for _ in $(seq 1 300); do
            n=$(t_curl "$url/stats" | jq '.in_flight')
            [ "${n:-1}" = 0 ] && break
            sleep 0.1
        done
    done
}

sold_by_instances() {
    local url total=0
    for url in "${T_INSTANCES[@]}"; do
        total=$((total + $(t_curl "$url/stats" | jq '.strategies["mysql-update"].sold')))
    done
    echo "$total"
}

S=100000000
echo "== 64 connections for 5 s (the reference rate, printed)"
t_reset $S
wrk_run 64 5
rate64=$(jq -r '.rps' <<< "$W")
settle

echo "== 2000 connections for 10 s through nginx"
t_reset $S
wrk_run 2000 10
settle
rate=$(jq -r '.rps' <<< "$W")
t_log "answers: $(jq -c '.status' <<< "$W"), results: $(jq -c '.result' <<< "$W")"
t_log "$rate answers/s at 2000 connections, $rate64 at 64 (ratio $(jq -n "$rate / $rate64 * 100 | floor")%)"
others=$(jq '[.status | to_entries[] | select(.key != "200" and .key != "409" and .key != "503") | .value] | add // 0' <<< "$W")
t_ok "$others = 0" "every answer was a 200, 409 or 503 (others: $others)"
t_ok "$(jq '.status["502"] // 0' <<< "$W") = 0" "nginx answered no 502"
t_ok "$(jq '.transport_errors' <<< "$W") = 0" "no connection failed (transport errors: $(jq -c '.transport_errors' <<< "$W"))"
answers=$(jq '[.status[]] | add' <<< "$W")
with_result=$(jq '[.result[]] | add' <<< "$W")
t_ok "$answers -gt 0 -a $answers = $with_result" "every one of the $answers answers carried a JSON result"
t_ok "$(jq '.result.sold // 0' <<< "$W") -gt 0" "the crowd bought ($(jq '.result.sold // 0' <<< "$W") sales answered)"
sold=$(sold_by_instances)
final=$(t_stock)
t_ok "$((S - final)) = $sold" "stock fell by exactly the $sold units the instances sold"
ok=0
for _ in 1 2 3; do
    [ "$(t_curl -o /dev/null -w '%{http_code}' "$LOCKLAB_URL/health")" = 200 ] && ok=$((ok + 1))
done
t_ok "$ok = 3" "GET /health through nginx: 200 three times in a row afterwards"

echo "== one instance with --max-connections 8 under 24 connections"
port0=${T_INSTANCES[0]##*:}
port=$((port0 + 90))
log=$(mktemp)
LOCKLAB_MYSQL_PASSWORD=$LOCKLAB_MYSQL_PASSWORD \
    "$T_BUILD/locklab" --port "$port" --name overload-probe --max-connections 8 --threads 4 \
    --mysql-host "$LOCKLAB_MYSQL_HOST" --mysql-port "$LOCKLAB_MYSQL_PORT" \
    --mysql-socket "$LOCKLAB_MYSQL_SOCKET" --mysql-user "$LOCKLAB_MYSQL_USER" \
    --mysql-db "$LOCKLAB_MYSQL_DB" --redis "$LOCKLAB_REDIS" --zk "$LOCKLAB_ZK" \
    --allow-faults >"$log" 2>&1 &
probe=$!
trap 'kill $probe 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 50); do
    [ "$(t_curl -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] && break
    sleep 0.1
done
t_reset 100000
out=$("$T_BUILD/ll-load" -c 24 -n 600 "http://127.0.0.1:$port/check/lock?lock=mutex&hold_ms=5")
get() { sed -n "s/^$1=//p" <<< "$out"; }
t_log "ll-load: requests=$(get requests) sold=$(get result_sold) overloaded=$(get result_overloaded) transport=$(get transport_errors)"
t_ok "'$(get transport_errors)' = 0" "no connection refused or dropped"
t_ok "$(get result_overloaded) -gt 0" "the connections past 8 got 503 overloaded ($(get result_overloaded))"
t_ok "$(( $(get result_sold) + $(get result_overloaded) )) = 600" "every answer was sold or overloaded"
t_ok "'$(get status_503)' = '$(get result_overloaded)'" "each overloaded answer was a 503"
stats=$(t_curl "http://127.0.0.1:$port/stats")
t_ok "$(jq '.overloaded' <<< "$stats") = $(get result_overloaded)" "its /stats counted them"
t_done
