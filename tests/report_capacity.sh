#!/usr/bin/env bash
# report_capacity.sh — ll-report's side of bench/compare --scenario
# capacity (bench/report/report_capacity.c), on runs planted here (no
# stack): the plan of open-loop steps `ll-report capacity-next` names from
# the steps so far, and the verdicts `capacity-step` gives.
#
# A planted strategy answers every step within 10 ms up to a rate and 200
# ms past it. With a closed loop of 1000/s and its knee at 750/s, the plan
# is 200, 400, 600 and 800 (the first past the target ends the fixed
# steps), then two halvings, 700 and 750: capacity 750/s, broken at 800/s.
# One that holds everywhere runs the eight fixed steps, 0.2 to 2.0 of its
# closed loop, and stops. A step whose p99 is fast but whose purchases did
# not sell (lock_timeout answers) does not hold; one without a step that
# held has no capacity and says so.
set -u
BUILD=${LOCKLAB_BUILD_DIR:-$(dirname "$0")/../build}
R=$BUILD/ll-report
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=SCRIPTDIR/lib_check.sh
. "$(dirname "$0")/lib_check.sh"

# load RPS P99 REQUESTS SOLD: an ll-load --json of that much.
load() {
    printf '{"requests":%s,"rps":%s,"status":{"200":%s,"503":%s},"late_sends":0,' \
        "$3" "$1" "$4" $(($3 - $4))
    printf '"lat_percentiles":[[0.5,%s],[0.99,%s]]}\n' "$2" "$2"
}
# scan IDX KNEE SOLD_SHARE: the whole plan against a strategy whose p99 is
# 10 ms up to KNEE/s and 200 past it, selling SOLD_SHARE % of its
# requests; prints the rates asked, one line.
scan() {
    local idx=$1 knee=$2 share=$3 k=0 rate p rates=""
    : > "$T/raw/$idx.capacity.tsv"
    while rate=$("$R" capacity-next "$T/raw" "$idx") && [ -n "$rate" ] && [ $k -lt 20 ]; do
        k=$((k + 1))
        p=10
        [ "$rate" -gt "$knee" ] && p=200
        load "$rate" "$p" $((rate * 3)) $((rate * 3 * share / 100)) \
            > "$T/raw/$idx.c$(printf '%02d' "$k").load.json"
        printf '%s\t%s\n' "$k" "$rate" >> "$T/raw/$idx.capacity.tsv"
        rates+="${rates:+ }$rate"
    done
    echo "$rates"
}

mkdir -p "$T/raw"
printf 'scenario=capacity\nslo_ms=50\nslo_pct=99\nstock=100000000\n' > "$T/raw/settings.env"
load 1000 40 3000 3000 > "$T/raw/01.load.json"
load 1000 40 3000 3000 > "$T/raw/02.load.json"
load 1000 40 3000 3000 > "$T/raw/03.load.json"
load 0 0 0 0 > "$T/raw/04.load.json"

echo "== the knee at 750/s"
check "$(scan 01 750 100)" "200 400 600 800 700 750" "0.2 .. 0.8 of 1000/s, then halvings to 750"
check "$("$R" capacity-step "$T/raw" 01 0)" "capacity at p99 <= 50 ms: 750/s; broke at 800/s" \
    "its capacity, and where it broke"
check "$("$R" capacity-step "$T/raw" 01 4)" \
    "800/s offered, 800/s achieved, p99 200.0 ms: past the target" "step 4's verdict"
check "$("$R" capacity-step "$T/raw" 01 6)" \
    "750/s offered, 750/s achieved, p99 10.0 ms: within the target" "step 6's verdict"

echo "== holding everywhere"
check "$(scan 02 100000 100)" "200 400 600 800 1000 1200 1500 2000" "the eight fixed steps, then done"
check "$("$R" capacity-step "$T/raw" 02 0)" "capacity at p99 <= 50 ms: 2000/s" "capacity: the last step"

echo "== fast, but not selling"
check "$(scan 03 100000 50)" "200 100 50" "a step that sold half its purchases does not hold"
check "$("$R" capacity-step "$T/raw" 03 0)" "no step held p99 <= 50 ms; broke at 50/s" \
    "no capacity, and the lowest step that broke"

echo "== no closed-loop rate"
check "$("$R" capacity-next "$T/raw" 04)" "" "nothing to scale a plan by: no step"

check_done report_capacity
