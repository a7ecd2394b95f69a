# shellcheck shell=bash
# bench/lib/compare_capacity.sh — bench/compare --scenario capacity, sourced
# by bench/compare before its runs: how many purchases a second each
# strategy takes before its latency passes a target.
#
# A closed loop answers how fast a strategy goes when C clients wait for
# each other's answers; a user choosing a lock asks how many purchases a
# second it can take before its p99 passes their target, which only an
# open loop answers (requests sent on a schedule, each timed from when it
# was due: bench/load/load.c). So each strategy's run is bench/compare's
# usual one, a closed loop (--connections, --duration), and then its
# steps: capacity_scan IDX NAME URL runs ll-load --rate R for --duration
# seconds, over as many connections as it takes up to CAPACITY_CONNS
# (512), at the rates `ll-report capacity-next` names one after the other
# from what the steps so far gave (report_capacity.c holds the plan and the
# verdicts): 0.2, 0.4, 0.6, 0.8, 1.0 and 1.2 of the closed loop's rate, on
# to 1.5 and 2.0 while every step holds, and stopping at the first that
# does not; then two halvings between the highest step that held and the
# lowest that did not. A step holds when its --slo-pct latency is within
# --slo-ms and at least that share of its requests sold. The plan's eight
# or nine steps of 3 s and their checks take about 40 s a strategy.
#
# Each step is a run of its own, checked as every run is: the stock reset
# (10^8, nothing sells out) and the instances' counters, the load, a wait
# until nothing is in flight, the Redis stock drained, GET /stock and each
# instance's GET /stats into RAW/IDX.cKK.*, ll-report line's counts
# (sold, oversold, lost) beside the step's verdict. RAW/IDX.capacity.tsv
# lists the steps (K, rate); `ll-report build` reads them into the run's
# "capacity" (results.json), the capacity column of the main table, the
# capacity table and, on the page, each strategy's latency against the
# offered load.
#
# Uses BUILD REPORT RAW TARGET STACK_RUN STATS_FROM STOCK TOTAL_STOCK
# DURATION STOCK_OF BUCKETS_Q PRODUCT TTY, and settle, drain and die,
# from bench/compare.

CAPACITY_CONNS=512

# capacity_step IDX K RATE NAME URL: step K of run IDX at RATE a second.
capacity_step() {
    local idx=$1 k=$2 rate=$3 name=$4 url=$5 s i u
    s=$idx.c$(printf '%02d' "$k")
    curl -sf -m 60 -H @"$STACK_RUN/secrets/admin-header" -X POST \
        "$TARGET/stock/reset?count=$STOCK&product=$PRODUCT$BUCKETS_Q" >/dev/null ||
        die "POST $TARGET/stock/reset failed"
    for u in "${STATS_FROM[@]}"; do
        curl -sf -m 10 -H @"$STACK_RUN/secrets/admin-header" -X POST "$u/stats/reset" >/dev/null ||
            die "POST $u/stats/reset failed"
    done
    # -t 10: past the knee a backlog grows; a request it leaves waiting
    # that long has failed the target anyway.
    "$BUILD/ll-load" -c "$CAPACITY_CONNS" --rate "$rate" -d "$DURATION" -t 10 --json "$url" \
        > "$RAW/$s.load.json" 2>/dev/null || die "ll-load could not reach $TARGET (capacity step)"
    settle
    drain "$name"
    curl -sf -m 10 "$TARGET/stock?product=$PRODUCT" > "$RAW/$s.stock.json" ||
        die "GET $TARGET/stock failed"
    i=0
    for u in "${STATS_FROM[@]}"; do
        curl -sf -m 10 "$u/stats" > "$RAW/$s.stats-$i.json" || die "GET $u/stats failed"
        i=$((i + 1))
    done
    printf '%s\t%s\n' "$k" "$rate" >> "$RAW/$idx.capacity.tsv"
}

# capacity_scan IDX NAME URL LABEL: every step of run IDX's strategy NAME,
# each on a line that begins with the run's LABEL.
capacity_scan() {
    local idx=$1 name=$2 url=$3 label=$4 k=0 rate s counts
    local -a redis_flag=()
    [ "${STOCK_OF[$name]:-mysql}" = redis ] && redis_flag=(--redis)
    : > "$RAW/$idx.capacity.tsv"
    while rate=$("$REPORT" capacity-next "$RAW" "$idx") && [ -n "$rate" ]; do
        k=$((k + 1))
        s=$idx.c$(printf '%02d' "$k")
        printf '%s step %d: %s/s offered …' "$label" "$k" "$rate"
        if [ "$TTY" = 1 ]; then printf '\r\033[K'; else echo; fi
        capacity_step "$idx" "$k" "$rate" "$name" "$url"
        counts=$("$REPORT" line "$TOTAL_STOCK" "$RAW/$s.load.json" "$RAW/$s.stock.json" \
                 "${redis_flag[@]}" "$name" "$RAW/$s".stats-*.json)
        printf '%s step %d: %s; %s\n' "$label" "$k" \
            "$("$REPORT" capacity-step "$RAW" "$idx" "$k")" "$counts"
    done
    echo "$label $("$REPORT" capacity-step "$RAW" "$idx" 0)"
}
