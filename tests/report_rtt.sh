#!/usr/bin/env bash
# report_rtt.sh — ll-report's side of bench/compare --rtt, on a run
# directory written here (no stack): `ll-report rtt` puts the points
# together (each strategy's sold/s, rank and p99 at each round trip, the
# lock's hold in round trips), sets the model 1 / (k × R) beside each
# measured rate — N / (k × R) for a hold per instance, none for a strategy
# without one or at 0 ms — and the model with the loopback's own time per
# sale added, and again with the growth of the round trip an application
# saw (its PINGs) in place of R, and again with what a round trip inside
# the lock's timed hold cost (its growth since 0 ms over k − 1), and takes ll-delay's cost over a point
# from its two snapshots. And `ll-report locks` says which strategies are exact, which
# is what --rtt runs by default.
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

# run NAME SOLD_PER_S P99 HOLD_US SHARE: one run of results.json.
run() {
    printf '{"strategy":"%s","family":"f","sold_per_s":%s,"latency_ms":{"p99":%s},' "$1" "$2" "$3"
    printf '"lock_hold_us":%s,"lock_held_share":%s,"oversold":0,"lost_updates":0}' "$4" "$5"
}
point() {   # DIR RUNS...
    mkdir -p "$T/run/$1"
    local IFS=,
    printf '{"settings":{"scenario":"throughput","duration_s":"3","connections":"64","instances":"3"},' \
        > "$T/run/$1/results.json"
    printf '"machine":{},"runs":[%s]}\n' "${*:2}" >> "$T/run/$1/results.json"
}
mkdir -p "$T/run"
printf 'values=0,0.5\nstarted=2026-01-01T00:00:00Z\n' > "$T/run/rtt.env"
printf 'mysql-update -1\nmysql-for-update 1\nredis-lua 4\nnone 0\n' > "$T/run/holds.tsv"
point points/rtt-0/a "$(run mysql-update 6000 10 null null)" "$(run mysql-for-update 4000 12 null null)" \
    "$(run redis-lua 2000 20 400 0.8)" "$(run none 9000 5 null null)"
point points/rtt-0.5/b "$(run mysql-update 3000 20 null null)" "$(run mysql-for-update 1000 30 null null)" \
    "$(run redis-lua 400 60 1500 0.75)" "$(run none 5000 9 null null)"
printf '0\tpoints/rtt-0/a\n0.5\tpoints/rtt-0.5/b\n' > "$T/run/points.tsv"
printf '0 5 0.60 100\n' > "$T/run/points/rtt-0/ping.txt"
printf '0 9 1.60 90\n' > "$T/run/points/rtt-0.5/ping.txt"
cat > "$T/run/points/rtt-0.5/delay-before.json" <<'JSON'
{"pid":7,"delay_us":250,"packets":1000,"cpu_s":0.5,"elapsed_s":2,"late_us_mean":3,"late_us_p99":40,"held_max":9}
JSON
cat > "$T/run/points/rtt-0.5/delay-after.json" <<'JSON'
{"pid":7,"delay_us":250,"packets":21000,"cpu_s":2.5,"elapsed_s":12,"late_us_mean":4,"late_us_p99":50,"held_max":12}
JSON

"$R" rtt "$T/run" > "$T/out.txt"
check $? 0 "rtt: exits 0"
for f in rtt.json rtt.md rtt.html; do
    check "$([ -s "$T/run/$f" ] && echo yes)" yes "rtt: writes $f"
done
j=$T/run/rtt.json
at() { jq -r --arg s "$1" --argjson r "$2" \
       ".strategies[] | select(.strategy == \$s) | .points[] | select(.rtt_ms == \$r) | $3" "$j"; }
check "$(jq -c .values "$j")" "[0,0.5]" "rtt: the round trips in order"
check "$(at redis-lua 0.5 '"\(.sold_per_s) \(.rank) \(.p99_ms)"')" "400 4 60" "rtt: sold/s, rank and p99 of a point"
check "$(at redis-lua 0.5 .hold_rtts)" "3" "rtt: the hold in round trips (1500 us at 0.5 ms)"
check "$(at mysql-for-update 0.5 '"\(.model_per_s) \(.model_ratio)"')" "2000 0.5" \
      "rtt: the model 1 / (k × R), and sold / model"
check "$(at mysql-update 0.5 .model_per_s)" "6000" "rtt: a hold per instance: N / (k × R), N = 3"
check "$(at redis-lua 0.5 '"\(.model_loopback_per_s | round) \(.model_loopback_ratio)"')" "400 1" \
      "rtt: the model plus 1 / sold/s at 0 ms: 1 / (4 × 0.5 ms + 1 / 2000), and sold / that"
check "$(at redis-lua 0.5 '"\(.app_rtt_added_ms) \(.model_app_per_s * 10 | round)"')" "1 2222" \
      "rtt: +app, the PINGs' growth (1.6 − 0.6 ms) in place of R: 1 / (4 × 1 ms + 1 / 2000)"
check "$(at redis-lua 0.5 '"\(.rtt_in_hold_ms * 1e4 | round) \(.model_hold_per_s | round) \(.model_hold_ratio * 100 | round)"')" \
      "3667 508 79" \
      "rtt: +hold, a round trip in the hold (1500 − 400 us) / 3 in place of R: 1 / (4 × 0.367 ms + 1 / 2000)"
check "$(at mysql-for-update 0.5 .model_hold_per_s)" "null" "rtt: no +hold without a timed hold"
check "$(at none 0.5 .model_per_s) $(at redis-lua 0 .model_per_s)" "null null" \
      "rtt: no model without a hold, nor at 0 ms"
check "$(jq -r '.ranking[1].order | join(",")' "$j")" "none,mysql-update,mysql-for-update,redis-lua" \
      "rtt: the ranking at 0.5 ms, fastest first"
check "$(jq -c '.delay[1].delay | [.packets, .cpu_us_per_packet, .packets_per_s, .cpu_share]' "$j")" \
      "[20000,100,2000,0.2]" "rtt: ll-delay's cost over the point, from its two snapshots"
check "$(jq -c '.delay[0].delay' "$j")" "null" "rtt: no delay at 0 ms"
check "$(grep -c 'the model beside the measured ceiling' "$T/out.txt")" 1 "rtt: the model's table on the terminal"

printf '{"strategies":[{"name":"a","family":"x","exact":true},{"name":"b","family":"y","exact":false}]}' \
    > "$T/locks.json"
check "$("$R" locks "$T/locks.json" | awk -F'\t' '{print $1 ":" $6}' | paste -sd' ')" "a:1 b:0" \
      "locks: the exact column (--rtt's default strategies)"

printf 'report_rtt: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
