#!/usr/bin/env bash
# compare.sh — bench/compare end to end, small: four strategies (one that
# loses updates, two exact ones on MariaDB's stock, redis-decr on Redis's),
# 60 units against 3000 purchases, their five ceilings measured for half a
# second each before and after the runs, and all fourteen by ll-limits for 0.3 s, the HTTP tier's own ceiling, and a retry storm of orders through
# redis-decr and mysql-update. 3000, not fewer: CPU time is read from
# /proc in 10 ms ticks, and each run must last long enough (0.3 s and more)
# for MariaDB's share to be above one tick, or "where the time goes" is 0. Checks that the run produced a
# results.json that ll-report finds valid (counts add up, derived numbers
# agree with raw ones), a self-contained report.html with its charts, a
# report.md, and that the numbers say what the strategies are; and the
# page in headless chromium: every chart has data, report.png is kept.
set -u
T_NAME=compare
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=SCRIPTDIR/lib_page.sh
. "$(dirname "$0")/lib_page.sh"
# --ledger: the pause scenario below needs it (bench/compare would turn it
# on, and off again after: two restarts of every instance), and sweep, etcd
# and faults after this suite run with it too.
t_setup --ledger

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
log=$OUT/compare.log
# Every ceiling, measured by ll-limits itself at 0.3 s a trial, so that all
# fourteen are checked below; the run measures its own five (two passes of
# 0.5 s, before and after its runs: the ones its bounds are checked
# against; a trial of 0.3 s under the other chain's load and ASan once read
# redis_decr at 1435/s, its spread 45 %).
"$T_BUILD/ll-limits" --seconds 0.3 --connections 32 > "$OUT/limits.json" 2> "$OUT/limits.err" ||
    sed 's/^/    ll-limits: /' "$OUT/limits.err"
before=$(t_stock 1002)
"$T_ROOT/bench/compare" --scenario oversell \
    --strategies none,mysql-update,mysql-for-update,redis-decr \
    --stock 60 --requests 3000 --connections 16 --limits-seconds 1 --warmup 1 \
    --storm redis-decr,mysql-update --storm-orders 100 --storm-stock 60 \
    --out "$OUT" > "$log" 2>&1
rc=$?
after=$(t_stock 1002)
sed 's/^/    /' "$log"
t_ok "$rc -eq 0" "bench/compare exits 0"
# The seeds scenario's --max-seconds: ll-load with -n and -d stops at the
# time (no machine sends 10^9 requests in a second).
capped=$("$T_BUILD/ll-load" -c 2 -n 1000000000 -d 1 "$LOCKLAB_URL/health" | sed -n 's/^requests=//p')
t_ok "${capped:-0} -gt 0 -a ${capped:-0} -lt 1000000000" \
     "ll-load -n 1000000000 -d 1 stops after its second ($capped sent)"
runs=("$OUT"/2*/)
run=${runs[0]%/}
t_ok "-d '$run'" "a timestamped run directory"
t_ok "-s '$run/results.json'" "results.json written"
"$T_BUILD/ll-report" check "$run/results.json" >/dev/null 2>"$OUT/check.err"
t_ok "$? -eq 0" "ll-report check: results.json valid ($(head -c 200 "$OUT/check.err"))"
t_ok "-s '$run/report.md'" "report.md written"
html=$run/report.html
t_ok "-s '$html'" "report.html written"
t_ok "$(grep -c '<svg' "$html") -ge 4" "report.html has its four SVG charts (throughput, oversold/lost, efficiency, CPU time)"
t_ok "$(grep -c -E '<(script|link|img)[ >]' "$html") -eq 0" "report.html is self-contained"
wake=$(jq -r '.machine.wake // ""' "$run/results.json")
t_ok "$(grep -c -E '^[0-9]+\.[0-9] us on one CPU(, [0-9]+\.[0-9] us across two)? \(pipe ping-pong\)$' <<< "$wake") -eq 1" \
     "the machine's wake-up cost measured by ll-wake ($wake)"
for s in none mysql-update mysql-for-update redis-decr; do
    t_ok "$(grep -c "^$s " <<< "$("$T_BUILD/ll-report" table "$run/results.json")") -eq 1" \
         "the table has a row for $s"
done
t_ok "$(grep -c -E '^\[[1-4]/4\] .* sold [0-9]+  sold_out ' "$log") -eq 4" "a result line per strategy, k of 4"
t_ok "$(grep -c '^\[[1-4]/4\] .* warming up for 1 s' "$log") -eq 4" "a warm-up before each"
t_ok "'$after' = '$before'" "the warm-up product's count is put back ($before, $after)"
t_ok "$(jq -r .settings.warmup_s "$run/results.json") = 1" "results.json records the warm-up"

# Over time and by percentile: each run's seconds add up to its answers,
# 200s and transport errors (ll-load counts them itself), its latency at
# each quantile never falls as the quantile rises; the page in a real
# browser has every chart with the points it says it drew.
n=$(jq '[.runs[] | select(.timeline.source == "client" and (.timeline.end_s | length) > 0 and
        (.timeline.answers | add) == .load.responses and
        (.timeline.sold | add) == (.load.status["200"] // 0) and
        (.timeline.errors | add) == .load.transport_errors)] | length' "$run/results.json")
t_ok "$n -eq 4" "every run's one-second buckets add up to its answers, sales and errors ($n of 4)"
n=$(jq '[.runs[] | .lat_percentiles as $p | select(($p | length) > 10 and $p[0][0] == 0 and
        $p[-1][0] == 1 and all(range(1; $p | length); $p[.][0] > $p[. - 1][0] and
        $p[.][1] >= $p[. - 1][1]))] | length' "$run/results.json")
t_ok "$n -eq 4" "every run's latency percentiles, 0 to 1, never fall ($n of 4)"
t_ok "$(grep -c '^## Over time and by percentile' "$run/report.md") -eq 1" "report.md: over time and by percentile"
if t_page "$html" "$run/report.png" report.html; then
    t_ok "$(grep -c -E '^(timeline|percentiles) ' <<< "$T_CHARTS") -eq 8 -a \
          $(grep -c -E '^(bars|cost) ' <<< "$T_CHARTS") -eq 4" \
         "report.html: a timeline and a percentile chart per run, beside its four bar charts"
fi

# The numbers: the exact strategies sell 60 and lose nothing. none races
# without ?hold_ms (foundation.sh makes its loss certain), so its row is
# checked against the raw answers instead: sold, final, oversold and lost
# recomputed here from the instances' /stats and the stock after the run
# (oversold = max(0, sold - 60), lost = sold - (60 - final)).
row() { "$T_BUILD/ll-report" table "$run/results.json" | awk -v s="$1" '$1 == s'; }
for s in mysql-update mysql-for-update redis-decr; do
    read -r _ _ _ _ sold final oversold lost _ <<< "$(row $s)"
    t_ok "'$sold $final $oversold $lost' = '60 0 0 0'" "$s: sold 60, final 0, nothing oversold or lost"
done
# redis-decr sells from Redis: its final is Redis's count, read once the
# consumers drained the stream, and MariaDB's equals it.
t_ok "'$(jq -r '.runs[] | select(.strategy == "redis-decr") | [.stock, .final,
        .reconcile.redis, .reconcile.mysql, .reconcile.in_flight, .reconcile.applied,
        .reconcile.reconciled, .reconcile.drained] | map(tostring) | join(" ")' "$run/results.json")'
        = 'redis 0 0 0 0 60 true true'" "redis-decr: Redis 0, MariaDB 0, 60 applied, reconciled, drained"
t_ok "$(grep -c 'redis-decr .*mysql 0  in flight 0  reconciled, drained' "$log") -eq 1" \
     "its live line says the three stores add up"
t_ok "$(grep -c '^## The Redis stock' "$run/report.md") -eq 1" "report.md: the Redis stock's table"
# The HTTP tier: GET /health with the same load, each run's share of it.
t_ok "$(jq -r '.limits.ceilings.http.rate // 0 | floor' "$run/results.json") -gt 0" \
     "the HTTP tier's ceiling measured ($(jq -r '.limits.ceilings.http.rate // 0 | floor' "$run/results.json")/s)"
t_ok "$(jq '[.runs[] | select(.http_share > 0 and .http_share < 1.5)] | length' "$run/results.json") -eq 4" \
     "every run's share of the HTTP tier"
t_ok "$(grep -c '^## The HTTP tier' "$run/report.md") -eq 1" "report.md: the HTTP tier"
# The storms: 100 orders twice each on 60 units: 60 sold, the stock fell by
# 60, every copy of an accepted order answered sold, every second a replay.
t_ok "'$(jq -r '[.storms[] | "\(.strategy):\(.sold):\(.stock_drop):\(.answered_sold):\(.replayed):\(.exact)"]
        | join(" ")' "$run/results.json")' = 'redis-decr:60:60:120:100:true mysql-update:60:60:120:100:true'" \
     "the storms sold each of 60 units once, through redis-decr and mysql-update"
t_ok "$(grep -c '^## Orders: a retry storm' "$run/report.md") -eq 1" "report.md: the storms"
idx=$(awk -F'\t' '$2 == "none" {print $1}' "$run/raw/runs.tsv")
raw_sold=$(jq -s '[.[].strategies.none.sold] | add' "$run/raw/$idx".stats-*.json)
raw_final=$(jq .count "$run/raw/$idx.stock.json")
want="$raw_sold $raw_final $((raw_sold > 60 ? raw_sold - 60 : 0)) $((raw_sold - (60 - raw_final)))"
read -r _ _ _ _ sold final oversold lost _ <<< "$(row none)"
t_ok "'$sold $final $oversold $lost' = '$want'" \
     "none: the row's sold, final, oversold, lost ($sold $final $oversold $lost) are the raw answers' ($want)"
# Where the time goes: every run has its CPU time per request, the
# instances' and MariaDB's above 0 (all three strategies sell through it).
n=$(jq '[.runs[] | select(.cost.cpu_us_per_request.total > 0 and
        .cost.cpu_us_per_request.app > 0 and .cost.busy > 0 and
        (if .stock == "redis" then .cost.cpu_us_per_request.redis
         else .cost.cpu_us_per_request.mysql end) > 0)] | length' "$run/results.json")
t_ok "$n -eq 4" "every run says where its CPU time went, its stock's server too ($n of 4)"
# Each answered request puts its instance thread to sleep at least once (it
# waits for the next request), and every sale here is a MariaDB statement.
# The instances' count is process-wide (/stats): a thread that ended during
# the run, or between the listing of /proc and its reading, still counts.
n=$(jq '[.runs[] | select(.cost.switches_per_request.app > 0.5 and
        (.stock == "redis" or .cost.switches_per_request.mysql > 0))] | length' "$run/results.json")
t_ok "$n -eq 4" "every run counts the instances' and MariaDB's context switches ($n of 4)"
# The lock's hold: none acquires and releases (nothing), so its purchases
# are timed; the two SQL strategies take no lock of ours and have none.
n=$(jq '[.runs[] | select((.strategy == "none" and .lock_hold_us > 0 and .lock_held_share > 0)
        or (.strategy != "none" and .lock_hold_us == null and .lock_held_share == null))]
        | length' "$run/results.json")
t_ok "$n -eq 4" "the lock's hold is timed where there is a lock ($n of 4)"
t_ok "$(grep -c '^## Where the time goes' "$run/report.md") -eq 1" "report.md: where the time goes"
t_ok "$(grep -c '^where the time goes' "$log") -eq 1" "the terminal shows where the time goes"
t_ok "$(jq '[.runs[] | select(.strategy == "mysql-update" and .ceiling == "mysql_update_peak")]
        | length' "$run/results.json") -eq 1" \
     "mysql-update is measured against the hot-row UPDATE's peak"
t_ok "$(jq '[.runs[] | select(.strategy == "mysql-update" and .efficiency_concurrent > 0)] | length' \
       "$run/results.json") -eq 1" "... and against the concurrent ceiling too"
t_ok "$(grep -c 'of the concurrent hot-row UPDATE ceiling' "$run/report.md") -eq 1" \
     "report.md says so"
# Every ceiling, measured its way (locks/lock.h): a plateau swept over
# 1..8 clients then its best count three times, a hold from the median of
# one client's holds, each with its trials and their spread.
for key in mysql_update mysql_update_peak mysql_for_update mysql_share_mode mysql_optimistic \
           mysql_optimistic_recursive mysql_update_noindex serial_mysql serial_redis serial_zk \
           serial_etcd redis_decr redis_watch serial_redis_stock; do
    read -r rate trials spread method sweep hold <<< "$(jq -r ".ceilings.$key |
        [(.rate // 0 | floor), (.trials | length), ((.spread // -1) >= 0), .method,
         (.sweep // [] | length), ((.hold_us // 0) > 0)] | map(tostring) | join(\" \")" "$OUT/limits.json")"
    case $method in
        plateau) how="$sweep -eq 6" ;;
        hold) how="'$hold' = true" ;;
        *) how="'$method' = concurrent" ;;
    esac
    t_ok "$rate -gt 0 -a $trials -ge 3 -a '$spread' = true" \
         "ceiling $key measured ($rate/s, best of $trials trials, their spread)"
    t_ok "$how" "ceiling $key measured as a $method (sweep of $sweep counts, a median hold: $hold)"
done
# GET /locks states every strategy's ceiling: its method (the one ll-limits
# used) and what it measures.
n=$(jq --slurpfile lim "$run/raw/limits.json" '[.strategies[] | select(.ceiling_what == "" or
        .ceiling_method == "" or ($lim[0].ceilings[.ceiling].method // .ceiling_method) != .ceiling_method)]
        | length' "$run/raw/locks.json")
t_ok "$n -eq 0 -a $(jq '.strategies | length' "$run/raw/locks.json") -gt 30" \
     "GET /locks states each strategy's ceiling, its method and what it measures ($n without)"
# The run measured only its strategies' ceilings: five of the fourteen.
t_ok "'$(jq -r '.limits.ceilings | keys - ["http"] | join(" ")' "$run/results.json")' = \
'mysql_for_update mysql_update mysql_update_peak redis_decr serial_mysql'" \
     "bench/compare measured the ceilings of its four strategies, and only those"
# The ceilings were measured twice, before the runs and after them, and the
# report's are both passes together: the faster pass's rate, every trial.
t_ok "'$(jq -c --slurpfile a "$run/raw/limits.before.json" --slurpfile b "$run/raw/limits.after.json" '
    [.limits.ceilings | to_entries[] | select(.key != "http") | .key as $k | .value
     | (.rate == ([$a[0].ceilings[$k].rate, $b[0].ceilings[$k].rate] | max))
       and (.trials == ($a[0].ceilings[$k].trials + $b[0].ceilings[$k].trials))] | unique' \
    "$run/results.json")' = '[true]'" \
     "each ceiling is the best of two passes, before and after the runs, with both passes' trials"
# report.md lists every ceiling with its method, spread and trials, the
# two passes' apart, e.g.
# | serial_mysql | hold | 5346 | 8% | 1 | 4907, 5114, 5346 / 5002, 4950, 5100 | …
line=$(jq -r '.limits.ceilings.serial_mysql | .pass_trials[0] as $f
    | "| serial_mysql | hold | \(.rate | round) | \(.spread * 100 | round)% | 1 | \([.trials | to_entries[]
      | (if .key == 0 then "" elif .key == $f then " / " else ", " end) + (.value | round | tostring)] | join("")) |"' \
       "$run/results.json")
t_ok "$(grep -cF "$line" "$run/report.md") -eq 1" "report.md shows the ceiling's trials and spread ($line)"
# What each run is measured against: its steady rate, the warm-up's seconds
# after its first (the whole run of 3000 purchases is not steady), the
# efficiency from it, and whether the ceiling bounded it. ll-report check
# above refused any exact strategy above its ceiling by more than the
# ceiling's own spread; the report notes one within 5 % of it.
# Why that margin is enough on a shared machine: the ceiling is the
# strategy's own protocol with nothing else on its path, while the run adds
# nginx, an instance and HTTP to every sale (about 450 us of CPU a sale on
# the same two cores), so its steady rate stays far below the ceiling's best
# trial: at most 53 % of it over the 39 exact runs of docs/journal.md's
# figures of 2026-11-26, at load averages of 10 to 16. Only trials all
# slowed about twice as much as the runs after them would fail it, and
# their spread is added.
n=$(jq '[.runs[] | select(.steady_source == "warm-up" and .steady_sold_per_s > 0 and
        (.efficiency - .steady_sold_per_s / .ceiling_rate | fabs) < 1e-9)] | length' "$run/results.json")
t_ok "$n -eq 4" "every run's steady rate from its warm-up, its efficiency from that ($n of 4)"
t_ok "'$(jq -r '[.runs[] | select(.bound.exact) | .strategy] | join(" ")' "$run/results.json")' = \
'mysql-update mysql-for-update redis-decr'" "the exact strategies' runs are checked against their ceilings"
t_ok "$(jq '[.runs[] | select(.bound.exact and .bound.verdict == "above")] | length' "$run/results.json") -eq 0" \
     "no exact strategy above its ceiling by more than its spread ($(jq -r '[.runs[] | "\(.strategy): \(.steady_sold_per_s | round)/\(.ceiling_rate | round) \(.bound.verdict)"] | join(", ")' "$run/results.json"))"
near=$(jq '[.runs[] | select(.bound.exact and .bound.verdict == "near")] | length' "$run/results.json")
t_ok "$(grep -c 'sold/s steady against its ceiling' "$run/report.md") -eq $near" \
     "report.md notes each exact strategy within 5 % of its ceiling ($near)"
t_ok "$(grep -c "^bounds: 3 exact runs set against a ceiling: $near within 5 % of it, 0 above" "$log") -eq 1" \
     "compare asserted the bounds itself (ll-report bounds: it exits 3 on one above)"
t_ok "$(grep -c 'whole-run rates, 3000 purchases over 16 connections' "$run/report.md") -eq 1" \
     "report.md says the table's rates are whole-run ones, steady/s beside them"

# What redlock and ZooKeeper ran on. The tests' topology has 5 Redis
# servers and 3 ZooKeeper servers; the report names them, and warns when a
# redlock row ran over fewer than 3 Redis servers (the stack's default is
# one): the same raw answers, rebuilt with one run renamed redlock.
t_ok "'$(jq -r '.settings.redis_servers, .settings.zk_servers' "$run/results.json" | xargs)' = '5 3'" \
     "results.json: 5 Redis servers, 3 ZooKeeper servers"
t_ok "$(grep -c 'Redis servers.*: 5$' "$run/report.md") -eq 1" "report.md names the Redis servers"
cp -r "$run/raw" "$OUT/raw1"
sed -i 's/\tmysql-update\t/\tredlock\t/' "$OUT/raw1/runs.tsv"
topology() {    # REDIS_SERVERS: the warning lines of the rebuilt report
    sed -i "s/^redis_servers=.*/redis_servers=$1/" "$OUT/raw1/settings.env"
    mkdir -p "$OUT/r$1" && rm -rf "$OUT/r$1/raw" && cp -r "$OUT/raw1" "$OUT/r$1/raw"
    "$T_BUILD/ll-report" build "$OUT/r$1" > "$OUT/r$1.out" 2>&1
    grep -c '^redlock ran over' "$OUT/r$1/report.md" "$OUT/r$1.out" | cut -d: -f2 | xargs
}
t_ok "'$(topology 1)' = '1 1'" "redlock over one Redis server: report.md and the terminal say what it is not"
t_ok "'$(topology 2)' = '1 1'" "... and over two"
t_ok "'$(topology 3)' = '0 0'" "... but not over three"

# --products: the load spread over four products, one lock per product
# (redisson) against one for all (redisson-global); both exact, each
# product sold out, and the report's granularity table names the locks.
echo "== bench/compare --products 4"
"$T_ROOT/bench/compare" --scenario oversell --strategies redisson,redisson-global --products 4 \
    --stock 20 --requests 400 --connections 16 --limits-seconds 0 --warmup 0 \
    --out "$OUT/grain" > "$OUT/grain.log" 2>&1
rc=$?
sed 's/^/    /' "$OUT/grain.log"
t_ok "$rc -eq 0" "bench/compare --products 4 exits 0"
runs=("$OUT"/grain/2*/)
grun=${runs[0]%/}
"$T_BUILD/ll-report" check "$grun/results.json" >/dev/null 2>&1
t_ok "$? -eq 0" "ll-report check: results.json valid"
t_ok "'$(jq -r '"\(.settings.products) \(.settings.stock)"' "$grun/results.json")' = '4 80'" \
     "4 products of 20 units: a stock of 80"
t_ok "'$(jq -r '[.runs[] | "\(.strategy):\(.lock_key):\(.sold):\(.final):\(.oversold):\(.lost_updates)"]
        | join(" ")' "$grun/results.json")' = 'redisson:lock:<product>:80:0:0:0 redisson-global:lock:all:80:0:0:0'" \
     "redisson (a lock per product) and redisson-global (lock:all) both sell exactly 80"
t_ok "'$(jq -s -r 'map(.count) | map(tostring) | join(" ")' "$grun"/raw/01.stock-*.json)' = '0 0 0 0'" \
     "every product sold out: the load reached all four"
t_ok "$(grep -c '^## Lock granularity: 4 products' "$grun/report.md") -eq 1" "report.md: the granularity table"
t_ok "$(grep -c 'one for all (lock:all)' "$grun/report.md") -eq 1" "... naming redisson-global's one lock"

# The pause scenario, small: redisson with and without ?fence=1 while
# instance 0 is paused twice for 4 s, past its 3 s lease. The fenced run loses nothing
# and ll-check finds its ledger clean; compare puts the stack back as it was
# (its own lease; the ledger t_setup turned on stays) at the end.
echo "== bench/compare --scenario pause"
was=$(cksum < "$T_RUN/topology")
"$T_ROOT/bench/compare" --scenario pause --strategies redisson --duration 13 --fault-ms 4000 \
    --connections 16 --out "$OUT/pause" > "$OUT/pause.log" 2>&1
rc=$?
sed 's/^/    /' "$OUT/pause.log"
t_ok "$rc -eq 0" "bench/compare --scenario pause exits 0"
runs=("$OUT"/pause/2*/)
prun=${runs[0]%/}
t_ok "'$(jq -r '[.runs[] | "\(.strategy):\(.fence)"] | join(" ")' "$prun/results.json")' = 'redisson:false redisson:true'" \
     "a run without and a run with the fence"
# With the fence two holders may still overlap (the paused one and its
# successor): what the token promises is that the overlap costs nothing.
t_ok "'$(jq -r '.runs[] | select(.fence) | "\(.oversold) \(.lost_updates) \(.check.lost) \(.check.token)"' "$prun/results.json")' = '0 0 0 0'" \
     "redisson +fence under pauses: nothing oversold or lost, no stale token in the ledger ($(jq -r '.runs[] | select(.fence) | .check.overlap' "$prun/results.json") overlaps made harmless)"
t_ok "$(jq '[.runs[] | .check.sales] | min' "$prun/results.json") -gt 0" "ll-check judged every run's ledger"
t_ok "$(grep -c '^## Under faults' "$prun/report.md") -eq 1" "report.md has the faults table"
t_ok "'$(cksum < "$T_RUN/topology")' = '$was'" "the stack is put back as it was"

# The same on a stopped stack: compare starts it, changes it (the pause's
# ledger and 3 s leases) and stops it, and must put its topology back
# first, or the next `bench/stack up` would start the scenario's.
# This chain's stack already has the scenario's leases: it is stopped
# with others (20 s), which the pause changes.
echo "== bench/compare --scenario pause on a stopped stack"
lease=$(sed -n 's/^LEASE_MS=//p' "$T_RUN/topology" | tail -1)
{ "$T_ROOT/bench/stack" up --lease-ms 20000 && "$T_ROOT/bench/stack" down; } > "$OUT/down.log" 2>&1 ||
    sed 's/^/    /' "$OUT/down.log"
was=$(cksum < "$T_RUN/topology")
"$T_ROOT/bench/compare" --scenario pause --strategies redisson --duration 4 --fault-ms 1000 \
    --connections 8 --limits-seconds 0 --out "$OUT/pause-cold" > "$OUT/pause-cold.log" 2>&1
rc=$?
sed 's/^/    /' "$OUT/pause-cold.log"
t_ok "$rc -eq 0" "bench/compare --scenario pause on a stopped stack exits 0"
t_ok "'$(cksum < "$T_RUN/topology")' = '$was'" "the stack it started is put back as it was before it stops"
t_ok "'$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$LOCKLAB_URL/health")' = 000" "... and stopped"
"$T_ROOT/bench/stack" up --lease-ms "${lease:-30000}" > "$OUT/up.log" 2>&1 ||
    { sed 's/^/    /' "$OUT/up.log"; t_ok "1 -eq 0" "bench/stack up after it"; }
t_done
