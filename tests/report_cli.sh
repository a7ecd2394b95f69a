#!/usr/bin/env bash
# report_cli.sh — ll-report's two commands for scripts, on files written
# here: `cost` turns two snapshots of bench/compare's cost_snapshot into
# NN.cost.json (growth of each counter, a thread born during the run counts
# whole, one that ended or whose counter went down adds nothing, ticks are
# 1/CLK_TCK s), and `get` prints one value of a JSON document. No stack.
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
check "$(awk '$1 == "mysql-update" {print $7, $8}' <<< "$table")" "-1..1 2" \
    "build: the table shows lost as a range and the unknown count"
check "$(grep -c 'mysql-update | .* | -1\.\.1 | 2 |' "$B/report.md")" 1 "build: report.md too"
check "$(jq -c '.runs[0].other_answers' "$B/results.json")" 0 "build: an unknown answer is not an 'other' one"
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

printf 'report_cli: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
