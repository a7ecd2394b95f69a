#!/usr/bin/env bash
# sweep.sh — a run's progress and seconds, and bench/compare --sweep, small.
#
# ll-load: its progress lines (done, sold, rate, time left) and its
# --json's seconds and percentiles, which add up and never fall. Then a
# sweep over connections (1 and 4, wrk, mysql-update and none, 3 s each):
# every run's live line at least once while it ran (wrk prints nothing:
# compare polls /stats), its seconds from those polls adding up to the
# instances' counts, every point a valid run of its own, sweep.json's
# points the points' own numbers, and the sweep's page in headless
# chromium with every chart holding data, and each point's exact
# strategies under their ceilings. Then a sweep over instances (1
# and 2, mutex): each point ran on that many instances, mutex is exact on
# one, and the stack is put back as it was. Then a sweep over threads (1
# and 2 slots an instance, mysql-for-update-naive), each point with
# InnoDB's deadlock detection on and off: four points, each run with its
# slots and its detection, over as many connections as the largest point's
# slots, MariaDB's counters kept before and after each run, and the stack
# put back. Nothing here asserts a time or a rate: only structure.
set -u
T_NAME=sweep
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=SCRIPTDIR/lib_page.sh
. "$(dirname "$0")/lib_page.sh"
# --ledger, as compare before it and etcd after it: no restart between them.
t_setup --ledger

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "== ll-load: progress, seconds, percentiles"
t_reset 100000000
"$T_BUILD/ll-load" -c 4 -d 2.5 --json --progress "$LOCKLAB_URL/check/lock?lock=mysql-update" \
    > "$OUT/load.json" 2> "$OUT/load.err"
t_ok "$? -eq 0" "ll-load ran"
t_ok "$(grep -c -E '^ll-load: [0-9]+ done, [0-9]+ sold, [0-9]+/s, [0-9]+ s left$' "$OUT/load.err") -ge 1" \
     "a progress line each second: done, sold, rate, time left ($(head -1 "$OUT/load.err"))"
t_ok "'$(jq '[(.per_second.answers | add) == .responses, (.per_second.sold | add) == .status["200"],
        (.per_second.errors | add) == .transport_errors, (.per_second.answers | length) >= 2] |
        all' "$OUT/load.json")' = true" "its seconds add up to its answers, 200s and errors"
t_ok "'$(jq '.lat_percentiles as $p | ($p | length) > 10 and all(range(1; $p | length);
        $p[.][0] > $p[. - 1][0] and $p[.][1] >= $p[. - 1][1]) and $p[-1][1] == .lat_max_ms' \
        "$OUT/load.json")' = true" "its latency percentiles never fall and end at the maximum"

echo "== bench/compare --sweep connections=1,4"
"$T_ROOT/bench/compare" --scenario throughput --sweep connections=1,4 \
    --strategies mysql-update,none --duration 3 --limits-seconds 0.3 --warmup 0 \
    --out "$OUT/c" > "$OUT/c.log" 2>&1
rc=$?
sed 's/^/    /' "$OUT/c.log"
t_ok "$rc -eq 0" "bench/compare --sweep exits 0"
dirs=("$OUT"/c/2*-sweep/)
sw=${dirs[0]%/}
t_ok "-s '$sw/sweep.json' -a -s '$sw/sweep.md' -a -s '$sw/sweep.html'" "sweep.json, sweep.md, sweep.html"
t_ok "'$(jq -c '[.param, .values]' "$sw/sweep.json")' = '[\"connections\",[1,4]]'" "a point per value"
t_ok "'$(jq -r '[.series[] | "\(.strategy):\(.points | map(.value) | join(","))"] | join(" ")' \
        "$sw/sweep.json")' = 'mysql-update:1,4 none:1,4'" "a line per strategy, a point per value"
for s in mysql-update none; do
    t_ok "$(grep -c -E "^\[[12]/2\] $s +[0-9]+ done, [0-9]+ sold, [0-9]+/s, [0-9]+ s left$" "$OUT/c.log") -ge 2" \
         "$s: its live line while each of its runs ran (wrk's, from /stats)"
done
k=0
while IFS=$'\t' read -r v dir; do
    res=$sw/$dir/results.json
    "$T_BUILD/ll-report" check "$res" > /dev/null 2> "$OUT/check.err"
    t_ok "$? -eq 0" "point $v: results.json valid ($(head -c 200 "$OUT/check.err"))"
    t_ok "$(jq -r .settings.connections "$res") = $v" "point $v ran over $v connections"
    n=$(jq '[.runs[] | select(.timeline.source == "server" and (.timeline.end_s | length) >= 2 and
            (.timeline.answers | add) == .server.requests and (.timeline.sold | add) == .server.sold)]
            | length' "$res")
    t_ok "$n -eq 2" "point $v: every run's seconds (polled /stats) add up to the instances' counts"
    for s in mysql-update none; do
        t_ok "'$(jq --arg s "$s" --argjson k "$k" '[.runs[] | select(.strategy == $s)][0].sold_per_s' "$res")' = \
'$(jq --arg s "$s" --argjson k "$k" '.series[] | select(.strategy == $s) | .points[$k].sold_per_s' "$sw/sweep.json")'" \
             "point $v: sweep.json has $s's sold/s of the point's own run"
    done
    t_ok "'$(jq --argjson k "$k" '.http[$k]' "$sw/sweep.json")' = '$(jq '.limits.ceilings.http.rate' "$res")'" \
         "point $v: the HTTP tier's ceiling beside them"
    k=$((k + 1))
done < "$sw/points.tsv"
t_ok "$k -eq 2" "two points in points.tsv"
# The second point reused the first point's ceilings.
t_ok "'$(jq -S -c .limits.ceilings.serial_mysql "$sw"/points/connections-1/2*/results.json)' = \
'$(jq -S -c .limits.ceilings.serial_mysql "$sw"/points/connections-4/2*/results.json)'" \
     "the ceilings measured once, at the first point"
t_ok "$(grep -c '^| mysql-update | 4 |' "$sw/sweep.md") -eq 2" "sweep.md has the tables (the rates, MariaDB's counters)"
# Every point checked its exact strategies against their ceilings (ll-report
# check above refuses one above by more than the ceiling's spread); the
# sweep gathers what came within 5 % of them, point by point.
t_ok "$(jq '[.series[].points[] | select(.bound.exact and .bound.verdict == "above")] | length' "$sw/sweep.json") -eq 0" \
     "no exact strategy above its ceiling at any point ($(jq -r '[.series[] | .strategy as $s | .points[] |
        "\($s)@\(.value): \(.steady_sold_per_s | round)/\(.ceiling_rate | round)"] | join(", ")' "$sw/sweep.json"))"
t_ok "$(grep -c -E '^bounds: [0-9]+ exact runs? set against a ceiling: [0-9]+ within 5 % of it, 0 above' "$OUT/c.log") -eq 2" \
     "every point asserted its bounds (ll-report bounds, which would make compare exit 3)"
near=$(jq '[.series[].points[] | select(.bound.exact and .bound.verdict == "near")] | length' "$sw/sweep.json")
t_ok "$(grep -c -E '^(near its ceiling: .* at connections=|No exact strategy came within 5 %)' "$sw/sweep.md") -eq $((near > 0 ? near : 1))" \
     "sweep.md says which exact strategies came within 5 % of their ceilings ($near), or that none did"
if t_page "$sw/sweep.html" "$sw/sweep.png" sweep.html; then
    t_ok "'$(sort <<< "$T_CHARTS" | uniq -c | xargs)' = '5 sweep 4 4'" \
         "five charts (sold/s, p99, oversold, lost, row lock time a sale), each with a point per strategy and value"
fi

echo "== bench/compare --sweep instances=1,2"
was=$(cksum < "$T_RUN/topology")
"$T_ROOT/bench/compare" --scenario throughput --sweep instances=1,2 --strategies mutex \
    --duration 2 --limits-seconds 0 --warmup 0 --out "$OUT/i" > "$OUT/i.log" 2>&1
rc=$?
sed 's/^/    /' "$OUT/i.log"
t_ok "$rc -eq 0" "bench/compare --sweep instances exits 0"
dirs=("$OUT"/i/2*-sweep/)
sw=${dirs[0]%/}
for v in 1 2; do
    res=$(echo "$sw"/points/instances-"$v"/2*/results.json)
    t_ok "$(jq '.runs[0].instances | length' "$res") -eq $v" "point $v: the stack ran $v instance(s)"
done
t_ok "'$(jq -c '.series[0].points[0] | [.oversold, .lost_updates]' "$sw/sweep.json")' = '[0,0]'" \
     "mutex on one instance behind nginx: nothing oversold or lost"
t_env
t_ok "${#T_INSTANCES[@]} -eq 3 -a '$(cksum < "$T_RUN/topology")' = '$was'" \
     "the stack is put back as it was (3 instances)"

echo "== bench/compare --sweep threads=1,2 (--deadlock-detect on,off by default)"
was=$(cksum < "$T_RUN/topology")
"$T_ROOT/bench/compare" --scenario throughput --sweep threads=1,2 --strategies mysql-for-update-naive \
    --duration 2 --limits-seconds 0 --warmup 0 --out "$OUT/t" > "$OUT/t.log" 2>&1
rc=$?
sed 's/^/    /' "$OUT/t.log"
t_ok "$rc -eq 0" "bench/compare --sweep threads exits 0"
dirs=("$OUT"/t/2*-sweep/)
sw=${dirs[0]%/}
t_ok "'$(cut -f1,3 "$sw/points.tsv" | tr '\t\n' ':,')' = '1:detect on,1:detect off,2:detect on,2:detect off,'" \
     "a point per value and detection ($(cut -f1,3 "$sw/points.tsv" | tr '\t\n' ':,'))"
while IFS=$'\t' read -r v dir variant; do
    res=$sw/$dir/results.json raw=$sw/$dir/raw
    "$T_BUILD/ll-report" check "$res" > /dev/null 2> "$OUT/check.err"
    t_ok "$? -eq 0" "point $v, $variant: results.json valid ($(head -c 200 "$OUT/check.err"))"
    t_ok "'$(jq -r '"\(.settings.threads) \(.settings.deadlock_detect) \(.settings.connections)"' "$res")' = '$v ${variant#detect } 6'" \
         "point $v, $variant: $v slots an instance, detection ${variant#detect }, 6 connections (3 x 2 slots)"
    t_ok "'$(cut -f1 "$raw/01.innodb-before" | xargs) / $(cut -f1 "$raw/01.innodb-after" | xargs)' = 'Innodb_deadlocks Innodb_row_lock_time Innodb_row_lock_waits / Innodb_deadlocks Innodb_row_lock_time Innodb_row_lock_waits'" \
         "point $v, $variant: MariaDB's counters before and after the run"
done < "$sw/points.tsv"
t_ok "'$(jq -r '[.series[] | "\(.strategy):\(.points | map(.value) | join(","))"] | join(" ")' \
        "$sw/sweep.json")' = 'mysql-for-update-naive (detect on):1,2 mysql-for-update-naive (detect off):1,2'" \
     "sweep.json: a line per strategy and detection, a point per value"
t_ok "$(jq '[.series[].points[] | select((.row_lock_waits | type) == "number" and .row_lock_waits >= 0
        and (.row_lock_ms_per_sale | type) == "number" and .deadlocks == 0)] | length' "$sw/sweep.json") -eq 4" \
     "every point has MariaDB's row lock waits, their time a sale and its deadlocks (none)"
t_ok "$(grep -c '^| mysql-for-update-naive (detect off) | 2 |' "$sw/sweep.md") -eq 2" \
     "sweep.md: the point in the rates' table and in MariaDB's counters'"
t_ok "'$(cksum < "$T_RUN/topology")' = '$was'" "the stack is put back as it was (its slots, detection on)"
t_done
