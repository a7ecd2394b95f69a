#!/usr/bin/env bash
# metrics.sh — GET /metrics and `bench/stack up --prometheus`.
#
#   1. Every instance's /metrics is what promtool accepts (its lint
#      included), in Prometheus's content type, and refuses what a route
#      refuses (405, 400).
#   2. After known purchases of three strategies (one with a lock held, one
#      that sells in MariaDB, one that fails on purpose: a product nobody
#      stocks), every counter of every strategy on every instance equals
#      /stats's; the histograms count every answer and every hold; the units
#      of POST /order count its qty; the stock gauge is GET /stock's count.
#   3. With MariaDB paused, /metrics still answers, without the stock.
#   4. bench/stack up --prometheus: every target up; after a sale without a
#      lock (none, hold_ms=2: lost updates certain) PromQL gives the sold
#      units, and the lost units derived from them and the stock's fall are
#      the harness's own figure, exactly. --no-prometheus stops it all.
set -u
T_NAME=metrics
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_setup
t_need promtool -- "GET /metrics's format (promtool, Debian's prometheus)" || t_done

# metrics_flat URL: one "name{labels} value" line per sample of URL's
# /metrics, comments dropped.
metrics_flat() { t_curl "$1/metrics" | grep -v '^#'; }

# stats_flat URL: /stats's counters written as the /metrics samples they
# must equal, one line each, for every strategy.
stats_flat() {
    t_curl "$1/stats" | jq -r '.strategies | to_entries[] | .key as $s | .value |
        ([["sold", .sold], ["sold_out", .sold_out], ["lock_timeout", .lock_timeouts],
          ["unavailable", .unavailable], ["error", .errors], ["unknown", .unknown],
          ["fenced", .fenced], ["lock_lost", .lock_lost]][] |
         "locklab_purchases_total{strategy=\"\($s)\",result=\"\(.[0])\"} \(.[1])"),
        "locklab_sold_units_total{strategy=\"\($s)\"} \(.sold_units)",
        "locklab_retries_total{strategy=\"\($s)\"} \(.retries)",
        "locklab_backend_operations_total{strategy=\"\($s)\"} \(.backend_ops)",
        "locklab_wakeups_total{strategy=\"\($s)\"} \(.wakeups)",
        "locklab_release_errors_total{strategy=\"\($s)\"} \(.release_errors)",
        "locklab_deadlocks_total{strategy=\"\($s)\"} \(.deadlocks)",
        "locklab_cert_failures_total{strategy=\"\($s)\"} \(.cert_failures)",
        "locklab_foreign_locks_total{strategy=\"\($s)\"} \(.foreign)",
        "locklab_request_duration_seconds_count{strategy=\"\($s)\"} \(.requests)",
        "locklab_lock_hold_seconds_count{strategy=\"\($s)\"} \(.holds)"'
}

echo "== the format, on every instance"
for url in "${T_INSTANCES[@]}"; do
    type=$(t_curl -o /dev/null -w '%{content_type}' "$url/metrics")
    t_ok "'$type' = 'text/plain; version=0.0.4; charset=utf-8'" "$url/metrics: Prometheus's content type"
    lint=$(t_curl "$url/metrics" | promtool check metrics 2>&1)
    rc=$?
    [ -n "$lint" ] && t_log "promtool: $lint"
    t_ok "$rc -eq 0 -a $(printf %s "$lint" | wc -c) -eq 0" \
         "$url/metrics: promtool check metrics accepts it, lint and all"
done
code=$(t_curl -o /dev/null -w '%{http_code}' -X POST "${T_INSTANCES[0]}/metrics")
t_ok "$code = 405" "POST /metrics: 405"
code=$(t_curl -o /dev/null -w '%{http_code}' "${T_INSTANCES[0]}/metrics?lock=none")
t_ok "$code = 400" "GET /metrics?lock=none: 400 (it takes no parameter)"

echo "== /metrics counts what /stats counts"
t_reset 100
t_load "lock=redis-lua" 60 8
order=$(t_curl -X POST "${T_INSTANCES[0]}/order?lock=redis-lua&order_no=metrics-$$&qty=3")
t_ok "'$(t_jq "$order" .result)' = sold" "POST /order qty=3: sold"
t_load "lock=mysql-update" 150 16
t_load "lock=mutex&product=nosuch" 5 1 "${T_INSTANCES[1]}"
mismatch=0 compared=0
for url in "${T_INSTANCES[@]}"; do
    want=$(stats_flat "$url")
    compared=$((compared + $(wc -l <<< "$want")))
    # The samples whose value differs from /stats's (or that are missing).
    differ=$(awk 'NR == FNR { m[$1] = $2; next } m[$1] != $2 { print $1, "metrics:", m[$1], "stats:", $2 }' \
             <(metrics_flat "$url") - <<< "$want")
    [ -n "$differ" ] && t_log "$url: $differ"
    mismatch=$((mismatch + $(printf %s "$differ" | grep -c .)))
done
t_ok "$compared -ge $((${#T_INSTANCES[@]} * 25 * 15)) -a $mismatch -eq 0" \
     "$compared counters of every strategy on every instance: /metrics = /stats ($mismatch differ)"

sum_metric() { # sum_metric SAMPLE: its value added up over the instances
    local url total=0 v
    for url in "${T_INSTANCES[@]}"; do
        v=$(metrics_flat "$url" | awk -v s="$1" '$1 == s { print $2 }')
        total=$((total + ${v:-0}))
    done
    echo "$total"
}
units=$(sum_metric 'locklab_sold_units_total{strategy="redis-lua"}')
rsold=$(sum_metric 'locklab_purchases_total{strategy="redis-lua",result="sold"}')
rout=$(sum_metric 'locklab_purchases_total{strategy="redis-lua",result="sold_out"}')
t_ok "$units -eq $((rsold + 2)) -a $rsold -gt 1" \
     "redis-lua: the order's qty 3 counts 3 units ($units units, $rsold sales)"
held=$(sum_metric 'locklab_lock_hold_seconds_count{strategy="redis-lua"}')
t_ok "$held -eq $((rsold + rout))" "redis-lua: the hold histogram counts every purchase that held the lock ($held)"
sold=$(sum_metric 'locklab_purchases_total{strategy="mysql-update",result="sold"}')
out=$(sum_metric 'locklab_purchases_total{strategy="mysql-update",result="sold_out"}')
t_ok "$((sold + units)) -eq 100 -a $((sold + out)) -eq 150" \
     "mysql-update: sold the rest of 100 units ($sold), 150 answers over the instances"
n=$(sum_metric 'locklab_request_duration_seconds_count{strategy="mysql-update"}')
inf=$(sum_metric 'locklab_request_duration_seconds_bucket{strategy="mysql-update",le="+Inf"}')
t_ok "$n -eq 150 -a $inf -eq 150" "mysql-update: the latency histogram counts its 150 answers"
bad=$(sum_metric 'locklab_purchases_total{strategy="mutex",result="bad_request"}')
t_ok "$bad -eq 5" "an unknown product counts as result bad_request (5)"
stock=$(metrics_flat "${T_INSTANCES[2]}" | awk '$1 == "locklab_stock_units{product=\"1001\"}" { print $2 }')
t_ok "'$stock' = '$(t_stock)'" "locklab_stock_units is GET /stock's count (${stock:-missing})"

echo "== MariaDB paused: /metrics still answers, without the stock"
"$T_ROOT/bench/fault" pause mysql >/dev/null
text=$(t_curl -m 10 "${T_INSTANCES[0]}/metrics")
"$T_ROOT/bench/fault" resume mysql >/dev/null
t_ok "$(grep -c '^locklab_purchases_total' <<< "$text") -gt 0" "with MariaDB paused, /metrics answers"
t_ok "$(grep -c '^locklab_stock_units' <<< "$text") -eq 0" "... and leaves the stock out"
stock=$(metrics_flat "${T_INSTANCES[0]}" | grep -c '^locklab_stock_units{product="1001"}')
t_ok "$stock -eq 1" "MariaDB back: the stock is in /metrics again"

echo "== bench/stack up --prometheus"
"$T_ROOT/bench/stack" up --prometheus >/dev/null || { echo "stack up --prometheus failed"; exit 1; }
t_env
t_ok "-n '${LOCKLAB_PROMETHEUS:-}'" ".run/stack.env has LOCKLAB_PROMETHEUS"
PROM=${LOCKLAB_PROMETHEUS:-http://127.0.0.1:1}

# prom QUERY: the first result's value, or "none".
prom() {
    t_curl "$PROM/api/v1/query" --data-urlencode "query=$1" |
        jq -r '.data.result[0].value[1] // "none"' 2>/dev/null || echo none
}
# prom_wait QUERY VALUE: poll until QUERY gives VALUE (30 s at most); its last value.
prom_wait() {
    local i got=none
    for ((i = 0; i < 150; i++)); do
        got=$(prom "$1")
        [ "$got" = "$2" ] && break
        sleep 0.2
    done
    echo "$got"
}
# Prometheus's own word on its targets, not `up` (the last run's samples,
# kept in .run/prometheus/data, answer for a while after a restart).
expected=$((${#T_INSTANCES[@]} + 1 + $(tr ',' '\n' <<< "$LOCKLAB_REDIS" | wc -l)))
targets=$(t_curl "$PROM/api/v1/targets?state=active")
up=$(t_jq "$targets" '[.data.activeTargets[] | select(.health == "up")] | length')
t_ok "'$up' = $expected" "Prometheus: every target up ($up of $expected: instances, MariaDB, Redis servers)"
jobs=$(t_jq "$targets" '[.data.activeTargets[].labels.job] | unique | join(",")')
t_ok "'$jobs' = 'locklab,mariadb,redis'" "its jobs: $jobs"
t_ok "$(prom 'mysql_up') = 1" "MariaDB's exporter reaches MariaDB as its own account"

# t0: a moment after the reset that a scrape of every instance has seen,
# so that "@ t0" reads the counters and the stock as the run found them:
# the stock's 200 and no unit sold since, waited for rather than slept on
# (a scrape a second, late on a loaded machine).
t_reset 200
got=$(prom_wait '(min(locklab_stock_units{product="1001"}) == bool 200) * (sum(locklab_sold_units_total) == bool 0)' 1)
t_ok "'$got' = 1" "Prometheus scraped every instance after the reset"
t0=$(date +%s.%3N)
t_load "lock=none&hold_ms=2" 600 32
sold_q="sum(locklab_sold_units_total) - sum(locklab_sold_units_total @ $t0)"
got=$(prom_wait "$sold_q" "$L_sold")
t_ok "'$got' = '$L_sold'" "PromQL: the units sold since the reset ($got) are the answers' ($L_sold)"
fall_q="max(locklab_stock_units{product=\"1001\"} @ $t0) - max(locklab_stock_units{product=\"1001\"})"
fall=$(prom_wait "$fall_q" "$((T_STOCK - L_final))")
lost=$(prom "($sold_q) - ($fall_q)")
t_ok "'$lost' = '$L_lost' -a $L_lost -gt 0" \
     "PromQL: sold units minus the stock's fall ($fall) = the lost updates the harness counts ($lost, $L_lost)"
t_ok "'$(prom 'redis_up')' = 1" "Redis's exporter reaches Redis"

"$T_ROOT/bench/stack" up --no-prometheus >/dev/null || { echo "stack up --no-prometheus failed"; exit 1; }
left=$("$T_ROOT/bench/stack" status | awk '$1 ~ /^(prometheus|exp-)/ && $4 == "running"' | wc -l)
t_ok "$left -eq 0" "--no-prometheus stops Prometheus and the exporters"
t_done
