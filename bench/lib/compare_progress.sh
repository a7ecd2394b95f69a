# shellcheck shell=bash
# bench/lib/compare_progress.sh — the live line of a run, sourced by
# bench/compare: at least once a second the sales so far, the current rate
# and the time left, rewritten in place on a terminal and as plain lines
# otherwise (a log, a pipe, CI).
#
# An ll-load run prints its own progress (--progress: "ll-load: N done,
# S sold, R/s, L s left"), which show_progress turns into the run's line.
# wrk prints nothing until it ends, so for a wrk run watch_stats polls the
# instances' /stats once a second in the background: one curl for all of
# them, `ll-report sample` adding up the strategy's purchases and sales.
# The same polls are the run's seconds: each one appends "T REQUESTS SOLD"
# to raw/NN.series.tsv (T: seconds since the load began), and series_end
# appends the last line once nothing is in flight, so the lines end at the
# run's whole count (report_time.c makes them the report's buckets). A
# poll costs the instances one GET /stats each; wrk's hot path is left
# alone (bench/load/wrk-count.lua says why it cannot count seconds itself).
# Uses TTY STATS_FROM REPORT DURATION from bench/compare.

# progress_line LABEL TEXT: the run's live line.
progress_line() {
    if [ "$TTY" = 1 ]; then printf '\r\033[K%s %s' "$1" "$2"; else printf '%s %s\n' "$1" "$2"; fi
}

# show_progress LABEL: ll-load's progress lines (stderr, through a pipe)
# become the run's live line; anything else it says goes to stderr.
show_progress() {
    local l
    while IFS= read -r l; do
        case $l in
            'll-load: '*) progress_line "$1" "${l#ll-load: }" ;;
            *) printf '%s\n' "$l" >&2 ;;
        esac
    done
    return 0
}

# clock: NOW := the wall clock in microseconds (EPOCHREALTIME always has
# six decimals), without a subshell.
clock() {
    NOW=${EPOCHREALTIME/./}
}

# stats_sample NAME: "REQUESTS SOLD" of NAME over every instance of the run.
stats_sample() {
    curl -s -m 2 -w '\n' "${STATS_FROM[@]/%//stats}" | "$REPORT" sample "$1"
}

# series_add T0_US T_US COUNTS SERIES: the line "T REQUESTS SOLD".
series_add() {
    local t=$(($2 - $1))
    printf '%d.%06d %s\n' $((t / 1000000)) $((t % 1000000)) "$3" >> "$4"
}

# watch_stats T0_US NAME LABEL SERIES: poll once a second until killed,
# the first a second after T0 (the counts were reset before it: 0 0).
watch_stats() {
    local t0=$1 k=0 counts req sold prev=$1 preq=0 rate=0 left wait
    while :; do
        k=$((k + 1))
        clock
        wait=$((t0 + k * 1000000 - NOW))
        if [ "$wait" -gt 0 ]; then sleep "$(printf '%d.%06d' $((wait / 1000000)) $((wait % 1000000)))"; fi
        if counts=$(stats_sample "$2"); then
            clock
            series_add "$t0" "$NOW" "$counts" "$4"
            read -r req sold <<< "$counts"
            [ "$NOW" -gt "$prev" ] && rate=$(((req - preq) * 1000000 / (NOW - prev)))
            left=$((DURATION - (NOW - t0) / 1000000))
            [ "$left" -gt 0 ] || left=0
            progress_line "$3" "$req done, $sold sold, $rate/s, $left s left"
            prev=$NOW preq=$req
        fi
    done
}

# series_end T0_US NAME SERIES: the last line, once nothing is in flight.
series_end() {
    local counts
    if counts=$(stats_sample "$2"); then
        clock
        series_add "$1" "$NOW" "$counts" "$3"
    else
        echo "compare: GET /stats failed: $3 lacks its last line" >&2
    fi
}
