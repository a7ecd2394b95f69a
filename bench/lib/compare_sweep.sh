# shellcheck shell=bash
# bench/lib/compare_sweep.sh — bench/compare --sweep PARAM=V1,V2,…, sourced
# by bench/compare once the stack answers: the same comparison at every
# value of one setting, and how sold/s, p99 and oversold move with it.
#
#   --sweep connections=1,4,16,64,256   the load's concurrent connections
#   --sweep instances=1,2,3             how many instances nginx balances
#   --buckets 1,2,4,8                   the hot item's buckets (--sweep buckets=)
#
# Each point is a whole bench/compare of its own, with the options this
# one was given (less --sweep and --out) plus the point's value, into
# RUN/points/PARAM-V/<timestamp>/: its own warm-ups, HTTP tier, runs,
# results.json and report, checked and rebuilt like any other. A point
# finds the stack running and leaves it so; this script starts and stops
# it when it was not. `ll-report sweep RUN` then reads RUN/sweep.env and
# RUN/points.tsv ("V<TAB>the point's run") into sweep.json, sweep.md,
# sweep.html (a table, and a line chart per metric against V with a line
# per strategy) and the table on the terminal; sweep.png is the page as
# headless chromium shows it.
#
# instances: each point runs `bench/stack up --instances V` first, which
# stops the instances past V and reloads nginx with V upstreams (a start
# when V grows). Slower than pointing nginx at the first V of three, but
# honest: an instance left idle still runs its threads, its watchdogs, its
# Redis consumers and its ZooKeeper session on the same two cores, so V
# instances of a sweep are V processes and no more. The stack is put back
# to its own count at the end (bench/compare's cleanup).
#
# The ceilings measured by ll-limits do not depend on the swept value: the
# first point measures them (--limits-seconds), the others reuse its
# limits.json (--limits-from), so every point's efficiency has the same
# yardstick.
# Uses ROOT BUILD REPORT OUT ARGS SWEEP STACK_STARTED RESTORE ALL_INSTANCES
# and topology_value, stack_answers and die from bench/compare.

SWEEP_PARAM=${SWEEP%%=*}
IFS=, read -r -a SWEEP_AT <<< "${SWEEP#*=}"
SWEEP_RUN=$OUT/$(date -u +%Y%m%d-%H%M%S)-sweep
mkdir -p "$SWEEP_RUN/points"

# The options of every point: this run's, less --sweep and --out.
sweep_args=()
set -- "${ARGS[@]}"
while [ $# -ge 2 ]; do
    case $1 in --sweep|--out|--buckets) ;; *) sweep_args+=("$1" "$2") ;; esac
    shift 2
done

if [ "$SWEEP_PARAM" = instances ] && [ "$STACK_STARTED" = 0 ]; then
    was=$(topology_value INSTANCES)
    RESTORE+=(--instances "${was:-${#ALL_INSTANCES[@]}}")
fi
{
    echo "param=$SWEEP_PARAM"
    echo "values=${SWEEP#*=}"
    echo "started=$(date -u +%FT%TZ)"
    echo "args=${sweep_args[*]}"
} > "$SWEEP_RUN/sweep.env"
: > "$SWEEP_RUN/points.tsv"
k=0
unbound=()
for v in "${SWEEP_AT[@]}"; do
    k=$((k + 1))
    point=("${sweep_args[@]}")
    case $SWEEP_PARAM in
        connections) point+=(--connections "$v") ;;
        buckets) point+=(--buckets "$v") ;;
        instances)
            "$ROOT/bench/stack" up --instances "$v" > /dev/null ||
                die "bench/stack up --instances $v failed"
            stack_answers || die "the stack does not answer with $v instances"
            ;;
    esac
    if [ "$k" -gt 1 ]; then
        point+=(--limits-from "$first/raw/limits.json")
    fi
    echo "compare: sweep point $k of ${#SWEEP_AT[@]}: $SWEEP_PARAM=$v"
    rc=0
    COMPARE_SHOT=0 "$ROOT/bench/compare" "${point[@]}" --out "$SWEEP_RUN/points/$SWEEP_PARAM-$v" || rc=$?
    case $rc in
        0) ;;
        3) unbound+=("$SWEEP_PARAM=$v") ;;    # its ceiling did not bound: go on, fail at the end
        *) die "the point $SWEEP_PARAM=$v failed" ;;
    esac
    dirs=("$SWEEP_RUN/points/$SWEEP_PARAM-$v"/2*/)
    [ -d "${dirs[0]}" ] || die "the point $SWEEP_PARAM=$v left no run"
    [ "$k" -gt 1 ] || first=${dirs[0]%/}
    printf '%s\tpoints/%s-%s/%s\n' "$v" "$SWEEP_PARAM" "$v" "$(basename "${dirs[0]}")" \
        >> "$SWEEP_RUN/points.tsv"
done

echo
"$REPORT" sweep "$SWEEP_RUN"
page_shot "$SWEEP_RUN/sweep.html" "$SWEEP_RUN/sweep.png" 1600 || true
echo
echo "compare: the sweep in $SWEEP_RUN/ (sweep.json, sweep.md, sweep.html; each point's run in points/)"
if [ ${#unbound[@]} -gt 0 ]; then
    echo "compare: an exact strategy sold above its ceiling at ${unbound[*]} (each point's ll-report bounds)" >&2
    exit 3
fi
