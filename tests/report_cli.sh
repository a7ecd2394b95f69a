#!/usr/bin/env bash
# report_cli.sh — ll-report's two commands for scripts, on files written
# here: `cost` turns two snapshots of bench/compare's cost_snapshot into
# NN.cost.json (growth of each counter, a thread born during the run counts
# whole, one that ended or whose counter went down adds nothing, ticks are
# 1/CLK_TCK s), and `get` prints one value of a JSON document; then `build`
# and `check` on a run written here: unknown answers, and what the run is
# measured against (steady rate, efficiency, the ceiling's bound). No stack.
set -u
BUILD=${LOCKLAB_BUILD_DIR:-$(dirname "$0")/../build}
R=$BUILD/ll-report
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
passed=0 failed=0
check() {   # GOT WANT WHAT
    if [ "$1" = "$2" ]; then
        passed=$((passed + 1)); printf '  ok    %s\n' "$3"
    else
        failed=$((failed + 1)); printf '  FAIL  %s\n        got  %s\n        want %s\n' "$3" "$1" "$2"
    fi
}

cat > "$T/before" <<'SNAP'
app 100
nginx 50
thread nginx 11 5
thread nginx 12 7
mysql 300
thread mysql 21 10
redis 0
zookeeper 0
thread app http://127.0.0.1:8000 1000
machine 1000 5000
time 1000.250000
SNAP
cat > "$T/after" <<'SNAP'
machine 1150 5050
time 1001.501200
app 180
nginx 62
thread nginx 11 9
thread nginx 13 6
mysql 345
thread mysql 21 8
redis 1
zookeeper 0
thread app http://127.0.0.1:8000 1500
SNAP
hz=$(getconf CLK_TCK)
cpus=$(nproc)
if [ "$hz" = 100 ]; then
    check "$("$R" cost "$T/before" "$T/after")" \
        "{\"seconds\":1.251,\"cpus\":$cpus,\"machine\":{\"busy_s\":1.50,\"idle_s\":0.50},\"groups\":{\"app\":{\"cpu_s\":0.80,\"switches\":500},\"nginx\":{\"cpu_s\":0.12,\"switches\":10},\"mysql\":{\"cpu_s\":0.45,\"switches\":0},\"redis\":{\"cpu_s\":0.01,\"switches\":0},\"zookeeper\":{\"cpu_s\":0.00,\"switches\":0}}}" \
        "cost: CPU seconds, switches (a new thread whole, an ended one and a falling counter not), machine, seconds"
else
    check "$hz" 100 "CLK_TCK is 100, as on every Linux the expected figures assume"
fi
check "$("$R" cost "$T/before" "$T/after" | jq -c '[.groups | keys_unsorted[]]')" \
    '["app","nginx","mysql","redis","zookeeper"]' "cost: valid JSON, the groups in their order"
printf 'web 3\n' >> "$T/after"
"$R" cost "$T/before" "$T/after" > /dev/null 2>&1
check $? 1 "cost: a line it does not know is an error"

printf '{"in_flight": 0, "strategies": {"none": {"sold": 12, "latency_ms": {"p99": 20.479}}},\n "list": [5, "x", {"a": null}], "s": "two words"}\n' > "$T/doc.json"
check "$("$R" get "$T/doc.json" in_flight)" 0 "get: a member"
check "$("$R" get - strategies.none.sold < "$T/doc.json")" 12 "get: a path, from stdin"
check "$("$R" get "$T/doc.json" strategies.none.latency_ms.p99)" 20.479 "get: a real as it reads"
check "$("$R" get "$T/doc.json" list.1) $("$R" get "$T/doc.json" list.2.a)" "x null" "get: array elements"
check "$("$R" get "$T/doc.json" s)" "two words" "get: a string as it is"
check "$("$R" get "$T/doc.json" strategies.none)" '{"sold":12,"latency_ms":{"p99":20.479}}' "get: an object as JSON"
"$R" get "$T/doc.json" strategies.mutex.sold > /dev/null 2>&1
check $? 1 "get: a path that leads nowhere is an error"
echo 'not json' | "$R" get - in_flight > /dev/null 2>&1
check $? 1 "get: a document that is not JSON is an error"


# build: unknown answers (a sale whose answer was lost) on a run written
# here. 10 units; the instances counted 8 sold and 2 unknown; 1 is left:
# the stock fell by 9, one more than the sales counted, so one unknown
# sold. lost is -1 on the counted sales alone, 1 if both unknown sold, and
# the table shows the range.
B=$T/build
mkdir -p "$B/raw"
printf 'scenario=oversell\nstock=10\nrequests=12\nconnections=4\n' > "$B/raw/settings.env"
printf 'nproc=2\n' > "$B/raw/machine.env"
printf '01\tmysql-update\tmysql\n' > "$B/raw/runs.tsv"
cat > "$B/raw/01.load.json" <<'JSON'
{"requests":12,"responses":12,"transport_errors":0,"elapsed_s":1.0,"rps":12,
 "status":{"200":8,"409":2,"500":2},"result":{"sold":8,"sold_out":2,"unknown":2},
 "lat_mean_ms":1,"lat_p50_ms":1,"lat_p90_ms":1,"lat_p95_ms":1,"lat_p99_ms":1,"lat_max_ms":1}
JSON
printf '{"product":"1001","count":1}\n' > "$B/raw/01.stock.json"
printf '{"strategies":{"mysql-update":{"requests":12,"sold":8,"sold_out":2,"unknown":2}}}\n' \
    > "$B/raw/01.stats-0.json"
table=$("$R" build "$B")
check "$(jq -c '.runs[0] | [.sold, .unknown, .final, .oversold, .oversold_max, .lost_updates, .lost_updates_max]' "$B/results.json")" \
    "[8,2,1,0,0,-1,1]" "build: unknown counted apart from sold, oversold and lost up to their values for sold + unknown"
check "$(awk '$1 == "mysql-update" {print $8, $9}' <<< "$table")" "-1..1 2" \
    "build: the table shows lost as a range and the unknown count"
check "$(grep -c 'mysql-update | .* | -1\.\.1 | 2 |' "$B/report.md")" 1 "build: report.md too"
check "$(jq -c '.runs[0].other_answers' "$B/results.json")" 0 "build: an unknown answer is not an 'other' one"
"$R" check "$B/results.json" > /dev/null 2>&1
check $? 0 "check: the answers, unknown ones among them, add up"

# build and check: what a run is measured against (report_ceiling.c). The
# same run, now with its warm-up (seconds of 40, 900, 1000 sales and a
# last one cut short: steady 950/s from the whole seconds after the first,
# where the whole run sold 8/s), GET /locks (mysql-update, exact, against
# mysql_update_peak) and the ceiling's trials. 1000/s, trials 1000, 980:
# within 5 % (a note); 900, 880: above by more than its 2 % spread, which
# `check` refuses; 960 over trials 600..960, spread 37 %: below, and the
# efficiency a range.
printf '{"elapsed_s":3.2,"per_second":{"answers":[40,900,1000,5],"sold":[40,900,1000,5],"errors":[0,0,0,0]}}\n' \
    > "$B/raw/01.warmup.json"
printf '{"strategies":[{"name":"mysql-update","family":"mysql","exact":true,"ceiling":"mysql_update_peak"}]}\n' \
    > "$B/raw/locks.json"
ceiling() {     # RATE TRIALS…: raw/limits.json with that ceiling, then build
    local rate=$1
    shift
    printf '{"ceilings":{"mysql_update_peak":{"method":"plateau","rate":%s,"trials":[%s]}}}\n' \
        "$rate" "$(IFS=,; echo "$*")" > "$B/raw/limits.json"
    "$R" build "$B" > "$T/table" 2>&1
}
ceiling 1000 1000 980
check "$(jq -c '.runs[0] | [.steady_source, .steady_sold_per_s, .efficiency, .bound.verdict, .bound.exact]' "$B/results.json")" \
    '["warm-up",950,0.95,"near",true]' "build: the steady rate is the warm-up's after its first second, the efficiency uses it"
check "$(grep -c '^mysql-update: 950 sold/s steady against its ceiling mysql_update_peak of 1000/s' "$T/table")" 1 \
    "build: a run within 5 % of its ceiling gets a note"
check "$(grep -c 'whole-run rates, 12 purchases over 4 connections' "$T/table")" 1 \
    "build: the table says its rates are whole-run ones, steady/s beside them"
"$R" check "$B/results.json" > /dev/null 2>&1
check $? 0 "check: near the ceiling is no failure"
"$R" bounds "$B/results.json" > "$T/bounds" 2>&1
check "$? $(cat "$T/bounds")" \
    "0 bounds: 1 exact run set against a ceiling: 1 within 5 % of it, 0 above it by more than the ceiling's spread" \
    "bounds (compare's assertion): near the ceiling is counted, no failure"
ceiling 900 900 880
"$R" check "$B/results.json" > /dev/null 2> "$T/check.err"
check "$? $(grep -c 'mysql-update, an exact strategy, sold 950/s steady, above its ceiling mysql_update_peak of 900/s' "$T/check.err")" \
    "1 1" "check: an exact strategy above its ceiling by more than the spread fails"
"$R" bounds "$B/results.json" > "$T/bounds" 2> "$T/bounds.err"
check "$? $(cat "$T/bounds") $(grep -c 'above its ceiling mysql_update_peak of 900/s' "$T/bounds.err")" \
    "1 bounds: 1 exact run set against a ceiling: 0 within 5 % of it, 1 above it by more than the ceiling's spread (not a bound) 1" \
    "bounds: ... fails too, and names the run"
check "$(grep -c '^ABOVE ITS CEILING, mysql-update' "$T/table") $(grep -c 'ABOVE ITS CEILING, mysql-update' "$B/report.md")" \
    "1 1" "build: ... and the table and report.md say so"
sed -i 's/"exact":true/"exact":false/' "$B/raw/locks.json"
ceiling 900 900 880
"$R" check "$B/results.json" > /dev/null 2>&1
check $? 0 "check: a strategy that is not exact may pass its ceiling (its sales overlap)"
"$R" bounds "$B/results.json" > "$T/bounds" 2>&1
check "$? $(cat "$T/bounds")" \
    "0 bounds: 0 exact runs set against a ceiling: 0 within 5 % of it, 0 above it by more than the ceiling's spread" \
    "bounds: ... and is not counted"
ceiling 1200 1200 700 1000
check "$(jq -c '.runs[0] | [.bound.verdict, (.efficiency_range | map(. * 1000 | round))]' "$B/results.json") $(awk '$1 == "mysql-update" {print $14}' "$T/table")" \
    '["below",[792,1357]] 79.2..135.7%' "build: a ceiling spread past 10 % makes the efficiency a range"
rm "$B/raw/01.warmup.json"
ceiling 960 960
check "$(jq -c '.runs[0] | [.steady_source, .steady_sold_per_s]' "$B/results.json")" '["whole run",8]' \
    "build: without a warm-up the steady rate is the whole run's, and the report says so"

check "$(grep -c 'another strategy' <<< "$table")" 0 "build: a run alone says nothing of mixed strategies"

# build: a run whose purchases met another strategy's lock on their key
# (two instances' "foreign", added up) is said to have been mixed.
printf '{"strategies":{"mysql-update":{"requests":6,"sold":4,"foreign":2}}}\n' > "$B/raw/01.stats-0.json"
printf '{"strategies":{"mysql-update":{"requests":6,"sold":4,"foreign":1}}}\n' > "$B/raw/01.stats-1.json"
table=$("$R" build "$B")
check "$(jq -c '.runs[0].server.foreign' "$B/results.json")" 3 "build: foreign added up over the instances"
check "$(grep -c "^mysql-update: 3 purchases found the lock's key held by another strategy's kind of lock. Strategies were mixed" <<< "$table")" 1 \
    "build: the table's notes say the run met another strategy's lock"
check "$(grep -c 'mysql-update: 3 purchases found' "$B/report.md") $(grep -c 'mysql-update: 3 purchases found' "$B/report.html")" \
    "1 1" "build: report.md and report.html too"

# build: the seeds' column. none's figure (473.8/s) was measured on one
# service, mysql-for-update's (231.5/s) through nginx on three: each stands
# only beside a run on as many instances, and the note names the other.
S=$T/seeds
mkdir -p "$S/raw"
cp "$B/raw/machine.env" "$S/raw/"
printf '01\tnone\tlocal\n02\tmysql-for-update\tmysql\n' > "$S/raw/runs.tsv"
for i in 01 02; do
    cp "$B/raw/01.load.json" "$S/raw/$i.load.json"
    cp "$B/raw/01.stock.json" "$S/raw/$i.stock.json"
done
seeds_build() {     # INSTANCES SERVED: the seeds scenario so run, then build
    printf 'scenario=seeds\nstock=10\nrequests=12\nconnections=4\ninstances=%s\ninstances_served=%s\n' \
        "$1" "$2" > "$S/raw/settings.env"
    "$R" build "$S" > "$T/table" 2>&1
}
seeds_build 3 3
check "$(jq -c '[.runs[] | [.seed.rps, .seed_elsewhere.instances]]' "$S/results.json") $(awk '$1 == "none" || $1 == "mysql-for-update" {print $NF}' "$T/table" | paste -sd' ')" \
    '[[null,1],[231.5,null]] - 231.5' "build: on three instances, only the seeds' three-instance figure stands"
check "$(grep -c 'here three: .* Left out, measured on one: none 473.8/s (bench/compare --scenario seeds --instances 1' "$T/table") $(grep -c 'Left out, measured on one: none 473.8/s' "$S/report.md") $(grep -c 'Left out, measured on one: none 473.8/s' "$S/report.html")" \
    "1 1 1" "build: ... and the note says which was left out, in the table, report.md and report.html"
seeds_build 1 1
check "$(jq -c '[.runs[] | [.seed.rps, .seed_elsewhere.instances]]' "$S/results.json") $(grep -c 'here one: .* Left out, measured on three: mysql-for-update 231.5/s' "$T/table")" \
    '[[473.8,null],[null,3]] 1' "build: on one instance, only the seeds' one-instance figure stands, the other named"
seeds_build 3 1
check "$(jq -c '[.runs[] | .seed.rps]' "$S/results.json")" '[473.8,null]' \
    "build: nginx to a stack of one instance is a run on one (instances_served)"
sed -i '/^instances_served=/d' "$S/raw/settings.env"
"$R" build "$S" > /dev/null 2>&1
check "$(jq -c '[.runs[] | .seed.rps]' "$S/results.json")" '[null,231.5]' \
    "build: a run written before instances_served counts --instances"
check "$(jq -c '[.runs[] | has("seed") or has("seed_elsewhere")]' "$B/results.json")" '[false]' \
    "build: another scenario has no seeds' figure at all"
# A run that --max-seconds stopped: 12 of the 20 purchases asked were sent.
printf 'scenario=seeds\nstock=10\nrequests=20\nmax_seconds=30\nconnections=4\ninstances=3\ninstances_served=3\n' \
    > "$S/raw/settings.env"
"$R" build "$S" > "$T/table" 2>&1
check "$(grep -c '^mysql-for-update: 12 of 20 purchases sent: the run stopped at --max-seconds 30' "$T/table") $(grep -c 'mysql-for-update: 12 of 20 purchases sent' "$S/report.md") $(grep -c 'mysql-for-update: 12 of 20 purchases sent' "$S/report.html")" \
    "1 1 1" "build: a run --max-seconds stopped is named with what it sent (table, report.md, report.html)"
sed -i '/^max_seconds=/d' "$S/raw/settings.env"
"$R" build "$S" > "$T/table" 2>&1
check "$(grep -c 'purchases sent' "$T/table")" 0 "build: without --max-seconds, no such note"


# limits-merge: compare's two passes of ll-limits, before and after the
# runs, as one limits.json: the faster pass's rate, both passes' trials
# (a slash between them in the ceilings table) and their spread; a pass
# that failed leaves the other's, and says so.
printf '{"seconds":1.5,"ceilings":{"serial_mysql":{"method":"hold","rate":1000,"hold_us":1000,"trials":[900,1000,950],"spread":0.1},"serial_zk":{"method":"hold","rate":500,"trials":[500]},"serial_redis":{"error":"redis down"}}}\n' > "$T/lim.a"
printf '{"seconds":1.5,"ceilings":{"serial_mysql":{"method":"hold","rate":1200,"hold_us":833,"trials":[800,1200,1100],"spread":0.33},"serial_zk":{"error":"zk down"},"serial_redis":{"method":"hold","rate":300,"trials":[300,290]}}}\n' > "$T/lim.b"
"$R" limits-merge "$T/lim.a" "$T/lim.b" > "$T/lim.json"
check "$? $(jq -c '[.seconds, (.ceilings.serial_mysql | [.rate, .hold_us, .trials, (.spread * 100 | round), .passes, .pass_trials])]' "$T/lim.json")" \
    '0 [3,[1200,833,[900,1000,950,800,1200,1100],33,[1000,1200],[3,3]]]' \
    "limits-merge: the faster pass's ceiling, every trial of both, their spread"
check "$(jq -c '.ceilings | [(.serial_zk | [.rate, .trials, .passes, .pass_errors, has("error")]), (.serial_redis | [.rate, .passes, .pass_errors[0]])]' "$T/lim.json")" \
    '[[500,[500],[500,null],[null,"zk down"],false],[300,[null,300],"redis down"]]' \
    "limits-merge: a failed pass leaves the other's rate and names its error"
mkdir -p "$T/m/raw"
cp -r "$B/raw/." "$T/m/raw/"
cp "$T/lim.json" "$T/m/raw/limits.json"
"$R" build "$T/m" > /dev/null 2>&1
check "$(grep -c '| serial_mysql | hold | 1200 | 33% | [0-9]* | 900, 1000, 950 / 800, 1200, 1100 |' "$T/m/report.md")" 1 \
    "build: the ceilings table shows the two passes' trials with a slash between them"

printf 'report_cli: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
