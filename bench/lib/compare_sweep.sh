# shellcheck shell=bash
# bench/lib/compare_sweep.sh — bench/compare --sweep PARAM=V1,V2,…, sourced
# by bench/compare once the stack answers: the same comparison at every
# value of one setting, and how sold/s, p99 and oversold move with it.
#
#   --sweep connections=1,4,16,64,256   the load's concurrent connections
#   --sweep instances=1,2,3             how many instances nginx balances
#   --sweep threads=1,8,32,64,128,200   each instance's worker slots (the
#                                       seeds' Tomcat has 200), each slot
#                                       a MariaDB connection of its own
#   --buckets 1,2,4,8                   the hot item's buckets (--sweep buckets=)
#   --deadlock-detect on,off            each point twice: InnoDB's deadlock
#                                       detection on, then off (a threads
#                                       sweep's default; on or off: one)
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
# threads: each point runs `bench/stack up --threads V` first, which
# restarts the instances with V worker slots each (MariaDB's
# max_connections follows: bench/lib/stack_servers.sh), and unless
# --connections says otherwise every point offers the same load, as many
# connections as the instances have slots at the sweep's largest V: a
# point of few slots queues the purchases in its instances' pools, as
# Tomcat's acceptor does past its 200 threads, and one of many lets them
# all through to MariaDB. With --deadlock-detect each value of it is a
# point of its own at each V (`bench/stack up --mysql-deadlock-detect D`,
# a SET GLOBAL on the running server), in RUN/points/PARAM-V-detect-D/,
# its line of points.tsv ending in "<TAB>detect D": ll-report sweep then
# draws a line per strategy and setting. The stack's slots and detection
# are put back at the end.
#
# Every point's runs keep MariaDB's own counters before the load and after
# the last purchase (COMPARE_INNODB=1: raw/NN.innodb-before and -after,
# SHOW GLOBAL STATUS' Innodb_row_lock_waits, Innodb_row_lock_time and
# Innodb_deadlocks), which ll-report sweep sets beside each rate.
#
# The ceilings measured by ll-limits do not depend on the swept value: the
# first point measures them (--limits-seconds), the others reuse its
# limits.json (--limits-from), so every point's efficiency has the same
# yardstick.
# Uses ROOT BUILD REPORT OUT ARGS SWEEP DEADLOCK_DETECT RESTORE
# ALL_INSTANCES and topology_value, stack_answers, given and die from
# bench/compare.

SWEEP_PARAM=${SWEEP%%=*}
IFS=, read -r -a SWEEP_AT <<< "${SWEEP#*=}"
DETECT_AT=("")                  # "": InnoDB's deadlock detection as the stack has it
[ -z "$DEADLOCK_DETECT" ] || IFS=, read -r -a DETECT_AT <<< "$DEADLOCK_DETECT"
SWEEP_RUN=$OUT/$(date -u +%Y%m%d-%H%M%S)-sweep
mkdir -p "$SWEEP_RUN/points"

# The options of every point: this run's, less --sweep, --out and
# --deadlock-detect, and --buckets when it is the sweep's.
sweep_args=()
set -- "${ARGS[@]}"
while [ $# -ge 2 ]; do
    case $1 in
        --sweep|--out|--deadlock-detect) ;;
        --buckets) [ "$SWEEP_PARAM" = buckets ] || sweep_args+=("$1" "$2") ;;
        *) sweep_args+=("$1" "$2") ;;
    esac
    shift 2
done
if [ "$SWEEP_PARAM" = threads ] && ! given --connections; then
    most=0
    for v in "${SWEEP_AT[@]}"; do [ "$v" -le "$most" ] || most=$v; done
    sweep_args+=(--connections $((${#ALL_INSTANCES[@]} * most)))
fi

case $SWEEP_PARAM in
    instances)
        was=$(topology_value INSTANCES)
        RESTORE+=(--instances "${was:-${#ALL_INSTANCES[@]}}") ;;
    threads)
        was=$(topology_value THREADS)
        RESTORE+=(--threads "${was:-0}") ;;         # 0: the instances' own
esac
if [ -n "$DEADLOCK_DETECT" ]; then
    was=$(topology_value MYSQL_DEADLOCK_DETECT)
    RESTORE+=(--mysql-deadlock-detect "${was:-on}")
fi
{
    echo "param=$SWEEP_PARAM"
    echo "values=${SWEEP#*=}"
    echo "started=$(date -u +%FT%TZ)"
    echo "args=${sweep_args[*]}"
    [ -z "$DEADLOCK_DETECT" ] || echo "deadlock_detect=$DEADLOCK_DETECT"
} > "$SWEEP_RUN/sweep.env"
: > "$SWEEP_RUN/points.tsv"
k=0
n=$((${#SWEEP_AT[@]} * ${#DETECT_AT[@]}))
unbound=()
for v in "${SWEEP_AT[@]}"; do
    base=("${sweep_args[@]}")
    case $SWEEP_PARAM in
        connections) base+=(--connections "$v") ;;
        buckets) base+=(--buckets "$v") ;;
        instances | threads)
            "$ROOT/bench/stack" up "--$SWEEP_PARAM" "$v" > /dev/null ||
                die "bench/stack up --$SWEEP_PARAM $v failed"
            stack_answers || die "the stack does not answer with --$SWEEP_PARAM $v"
            ;;
    esac
    for d in "${DETECT_AT[@]}"; do
        k=$((k + 1))
        point=("${base[@]}")
        name=$SWEEP_PARAM-$v${d:+-detect-$d}
        shown="$SWEEP_PARAM=$v${d:+, deadlock detection $d}"
        if [ -n "$d" ]; then
            "$ROOT/bench/stack" up --mysql-deadlock-detect "$d" > /dev/null ||
                die "bench/stack up --mysql-deadlock-detect $d failed"
        fi
        [ "$k" = 1 ] || point+=(--limits-from "$first/raw/limits.json")
        echo "compare: sweep point $k of $n: $shown"
        rc=0
        COMPARE_SHOT=0 COMPARE_INNODB=1 "$ROOT/bench/compare" "${point[@]}" --out "$SWEEP_RUN/points/$name" || rc=$?
        case $rc in
            0) ;;
            3) unbound+=("$shown") ;;    # its ceiling did not bound: go on, fail at the end
            *) die "the point $shown failed" ;;
        esac
        dirs=("$SWEEP_RUN/points/$name"/2*/)
        [ -d "${dirs[0]}" ] || die "the point $shown left no run"
        [ "$k" -gt 1 ] || first=${dirs[0]%/}
        printf '%s\tpoints/%s/%s%s\n' "$v" "$name" "$(basename "${dirs[0]}")" "${d:+$'\t'detect $d}" \
            >> "$SWEEP_RUN/points.tsv"
    done
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
