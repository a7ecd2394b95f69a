# shellcheck shell=bash
# bench/lib/compare_rtt.sh — bench/compare --rtt MS,MS,…, sourced by
# bench/compare once the stack answers: the same comparison at each round
# trip between hosts, and which lock wins at which.
#
# The instances go into network namespaces (bench/stack up --netns, root;
# back at the end if they were not there), and each point sets the round
# trip with `bench/stack rtt MS --jitter 0 --loss 0` (ll-delay holds every
# packet between an instance and a backend, and between ensemble members,
# MS/2 each way: bench/lib/stack_delay.sh), then runs a whole bench/compare
# with this one's options (less --rtt and --out; with --rtt's defaults made
# explicit, and the exact strategies of GET /locks unless --strategies says
# otherwise) into RUN/points/rtt-MS/<timestamp>/; the first point's runs
# warm up (--warmup, 1 s), the later ones' find everything warm already
# unless --warmup was given. ll-delay's counters are
# kept before and after each point (points/rtt-MS/delay-before.json,
# delay-after.json: its CPU time, packets, lateness), 2 s of Redis PINGs
# from instance 0's namespace at its start (points/rtt-MS/ping.txt: the
# round trip as an application sees it), and RUN/holds.tsv is
# the strategies' own count of the round trips they hold the hot item
# (ll-strategies --holds, locks/lock.h hold_rtts). `ll-report rtt RUN`
# reads it all into RUN/rtt.json, rtt.md, rtt.html and the tables on the
# terminal; rtt.png is the page as headless chromium shows it.
#
# The round trip is proven before each point is run: the instances' own
# probes (app/rtt.c: SELECT 1 and PING timed each second on the
# connections they sell with) must see it. 1.2 s after the change their
# windows are cleared (POST /stats/reset), and once each instance has 5
# samples of every backend, MariaDB's and each Redis server's least, on
# every instance, must be within 0.1 ms of what was asked (three rounds at
# most: a busy machine only adds to a sample), or the point is refused
# (the round trip put back, compare exits 1); they are printed
# beside it, and kept in points/rtt-MS/measured.tsv (instance, backend,
# where, least and median ms) for ll-report rtt. ZooKeeper's is printed,
# not judged: its client's hand-offs between threads add a few hundred µs.
#
# The round trip the stack had is put back at the end (or the namespaces
# left, which takes it to 0). Uses ROOT BUILD REPORT OUT ARGS RTT_LIST
# SCENARIO DURATION REQUESTS WARMUP LIMITS_SECONDS STRATEGIES TARGET
# RESTORE and given, topology_value, stack_answers, die and
# page_shot from bench/compare.

RTT_RUN=$OUT/$(date -u +%Y%m%d-%H%M%S)-rtt
IFS=, read -r -a RTT_AT <<< "$RTT_LIST"
mkdir -p "$RTT_RUN/points"

# The options of every point: this run's, less --rtt and --out, then the
# defaults --rtt chose, spelt out (the last of an option given twice wins).
rtt_args=()
set -- "${ARGS[@]}"
while [ $# -ge 2 ]; do
    case $1 in --rtt|--out) ;; *) rtt_args+=("$1" "$2") ;; esac
    shift 2
done
rtt_args+=(--scenario "$SCENARIO" --limits-seconds "$LIMITS_SECONDS")
[ -n "$DURATION" ] && [ -z "$REQUESTS" ] && rtt_args+=(--duration "$DURATION")
if [ -z "$STRATEGIES" ]; then
    curl -sf -m 10 "$TARGET/locks" > "$RTT_RUN/locks.json" || die "GET $TARGET/locks failed"
    exact=$("$REPORT" locks "$RTT_RUN/locks.json" | awk -F'\t' '$6 == 1 {print $1}' | paste -sd, -)
    [ -n "$exact" ] || die "GET /locks names no exact strategy"
    rtt_args+=(--strategies "$exact")
fi

# The namespaces, and what to put back.
was_rtt=$(topology_value RTT) was_jitter=$(topology_value JITTER) was_loss=$(topology_value LOSS)
if [ "$(topology_value NETNS)" != 1 ]; then
    echo "compare: moving the instances into network namespaces (bench/stack up --netns)" >&2
    RESTORE+=(--no-netns)
    "$ROOT/bench/stack" up --netns > /dev/null || die "bench/stack up --netns failed"
    stack_answers || die "the stack does not answer in network namespaces"
    was_rtt=""
fi
rtt_restore() {
    [ -n "$was_rtt" ] || return 0
    "$ROOT/bench/stack" rtt "$was_rtt" --jitter "${was_jitter:-0}" --loss "${was_loss:-0}" \
        > /dev/null || echo "compare: could not put the round trip back to $was_rtt ms" >&2
}

# The round trip an application sees: Redis PINGs from instance 0's
# namespace (its name and the bridge's address as bench/lib/stack_net.sh
# makes them), which beside the wire's delay pay a wake-up of an idle
# process at each end; ll-report rtt models with it too.
net_x=$(( ${LOCKLAB_STACK_OFFSET:-0} / 100 % 200 + 20 ))
ping_ns=ll$net_x-app$(( 8000 + ${LOCKLAB_STACK_OFFSET:-0} ))
ping_at=${LOCKLAB_REDIS%%,*}
app_ping() {    # OUT: "min max avg samples" (ms) of 2 s of PINGs
    timeout 2 ip netns exec "$ping_ns" redis-cli -h "10.77.$net_x.1" -p "${ping_at##*:}" \
        --latency --raw > "$1" 2>/dev/null || true
}

# rtt_round MS OUT: one round of the instances' own round trips once MS
# is set (see above) into OUT; prints them and fails when one is more
# than 0.1 ms off.
rtt_round() {
    local ms=$1 out=$2 u deadline
    local -a apps
    IFS=, read -r -a apps <<< "$LOCKLAB_INSTANCES"
    for u in "${apps[@]}"; do
        curl -sf -m 10 -H @"$STACK_RUN/secrets/admin-header" -X POST "$u/stats/reset" >/dev/null ||
            die "POST $u/stats/reset failed"
    done
    deadline=$((SECONDS + 30))
    for u in "${apps[@]}"; do
        until curl -sf -m 10 "$u/stats" | jq -e '[.rtt.backends[].samples] | min >= 5' >/dev/null; do
            [ $SECONDS -lt $deadline ] || break
            sleep 0.5
        done
    done
    for u in "${apps[@]}"; do
        curl -sf -m 10 "$u/stats" | jq -r --arg u "$u" \
            '.rtt.backends[] | [$u, .backend, .where, (.min_ms // "none"), (.median_ms // "none")] | @tsv'
    done > "$out"
    awk -F'\t' -v ms="$ms" '
        { k = $2; lo[k] = (k in lo && lo[k] < $4) ? lo[k] : $4; hi[k] = (k in hi && hi[k] > $4) ? hi[k] : $4
          if (k != "zookeeper" && ($4 == "none" || $4 - ms > 0.1 || ms - $4 > 0.1)) {
              bad = bad sprintf("\n  %s: %s (%s) at %s ms", $1, k, $3, $4) } }
        END { line = ""
              for (k in lo) line = line sprintf("%s%s %s%s", line ? ", " : "", k, lo[k],
                                                lo[k] == hi[k] ? "" : "-" hi[k])
              printf "compare: %s ms asked; the instances measure %s ms (the least of 5 on their own connections%s)\n",
                     ms, line, ("zookeeper" in lo) ? "; zookeeper not judged" : ""
              if (bad != "") { printf "compare: more than 0.1 ms from %s ms:%s\n", ms, bad; exit 1 } }' "$out"
}

# rtt_measured MS OUT: up to three rounds, 1.2 s after the change (a busy
# machine only adds to a sample, so a round off by more than 0.1 ms is
# measured again); fails when the last is off too.
rtt_measured() {
    local round
    sleep 1.2
    for round in 1 2 3; do
        rtt_round "$1" "$2" && return 0
        [ "$round" = 3 ] || echo "compare: measuring the round trip again (round $((round + 1)) of 3)"
    done
    return 1
}

"$BUILD/ll-strategies" --holds > "$RTT_RUN/holds.tsv" || die "ll-strategies --holds failed"
{
    echo "values=$RTT_LIST"
    echo "started=$(date -u +%FT%TZ)"
    echo "args=${rtt_args[*]}"
    echo "zk_servers=$(tr ',' '\n' <<< "$LOCKLAB_ZK" | grep -c .)"
    echo "etcd_servers=$(tr ',' '\n' <<< "${LOCKLAB_ETCD:-}" | grep -c .)"
} > "$RTT_RUN/rtt.env"
: > "$RTT_RUN/points.tsv"
stats=$STACK_RUN/delay/stats.json
k=0
for v in "${RTT_AT[@]}"; do
    k=$((k + 1))
    point=$RTT_RUN/points/rtt-$v
    mkdir -p "$point"
    "$ROOT/bench/stack" rtt "$v" --jitter 0 --loss 0 > /dev/null ||
        { rtt_restore; die "bench/stack rtt $v failed"; }
    echo "compare: round trip point $k of ${#RTT_AT[@]}: $v ms between hosts"
    rtt_measured "$v" "$point/measured.tsv" ||
        { rtt_restore; die "the point $v ms is refused: the instances do not sell across the round trip asked"; }
    app_ping "$point/ping.txt"
    if [ "$(topology_value RTT)" != 0 ] && [ -r "$stats" ]; then cp "$stats" "$point/delay-before.json"; fi
    # The warm-up (ZooKeeper's JIT, the instances' threads and connections)
    # is the first point's: the later ones find it all warm, unless --warmup
    # asks for one at every point.
    warm=$WARMUP
    [ "$k" -gt 1 ] && ! given --warmup && warm=0
    "$ROOT/bench/compare" "${rtt_args[@]}" --warmup "$warm" --out "$point" ||
        { rtt_restore; die "the point $v ms failed"; }
    if [ -e "$point/delay-before.json" ]; then cp "$stats" "$point/delay-after.json"; fi
    dirs=("$point"/2*/)
    [ -d "${dirs[0]}" ] || { rtt_restore; die "the point $v ms left no run"; }
    printf '%s\tpoints/rtt-%s/%s\n' "$v" "$v" "$(basename "${dirs[0]}")" >> "$RTT_RUN/points.tsv"
done
rtt_restore

echo
"$REPORT" rtt "$RTT_RUN"
page_shot "$RTT_RUN/rtt.html" "$RTT_RUN/rtt.png" 2400 || true
echo
echo "compare: the round trips in $RTT_RUN/ (rtt.json, rtt.md, rtt.html; each point's run in points/)"
