#!/usr/bin/env bash
# rtt.sh — the round trip between hosts (`bench/stack up --netns --rtt MS`,
# bench/lib/stack_delay.sh, bench/net/delay.c) is real, and the exact
# strategies stay exact across it.
#
#   1. From instance 0's namespace, the TCP round trip to every backend
#      (MariaDB, each Redis, ZooKeeper and etcd server) at 0.2, 1 and 0.5
#      ms, less the same with no delay, is within ±10 % of what was asked;
#      at 0.5 ms again while a run of purchases goes on (64 connections
#      through nginx), which is when the delay has the most packets to hold
#      and the machine the least CPU to give it. The queues drop nothing.
#   2. The ensembles' own links wait too: ZooKeeper's election ports, etcd's
#      peer ports, and Redis server 1 as its replica and the Sentinel reach
#      it (at NET_HOST, over lo), probed from the machine's namespace.
#   3. At 0.5 ms every exact strategy (GET /locks) sells exactly, all of
#      them at once, each its own product: 10 units to 20 purchases through
#      nginx to three instances, 10 sold, 0 left, 0 lost, every answer
#      sold, sold_out or (busy) lock_timeout.
#   4. The round trip on the instances' own connections, however the stack
#      got to 0.5 ms: set on the running stack (`bench/stack rtt`), one
#      instance restarted, `down` then `up --netns --rtt 0.5`, and `up
#      --rtt 0.5` over a running stack at 0. After each, every instance's
#      own probe (app/rtt.c: SELECT 1 on a worker slot's MariaDB
#      connection, PING on each Redis server's shared connection, timed
#      each second, the least of a burst of three) must see 0.5 ± 0.1 ms
#      over what the same probe sees with no delay: the least of 5 samples
#      at least 0.4 ms (a missing delay leaves tens of µs), and at most 0.6
#      ms plus that instance's own least to that backend at 0 ms, measured
#      first (the call's cost at both ends, which an ASan build on a loaded
#      machine makes a tenth of a millisecond or more); a round outside is
#      measured again, up to three times, each backend keeping its least.
#      And each reaches MariaDB over TCP. Each `bench/stack` call runs, as every call
#      of this test does, with .run/stack.env in its environment (t_env),
#      as a shell that sourced it, or bench/compare, runs it: with
#      LOCKLAB_MYSQL_SOCKET there, an instance started in a namespace took
#      MariaDB's Unix socket from it and sold undelayed (issue 51). Its
#      ZooKeeper probe is logged, not judged: the client's hand-offs
#      between its threads and the loop add a few hundred µs to the wire.
#
# What is measured, and why the margin holds on a 2-vCPU machine. ll-probe
# takes the kernel's own round trip of each connect (SYN out to SYN-ACK in,
# TCP_INFO), stamped as the packets pass, so how fast this machine wakes a
# process does not enter it. Each target's least round trip of 30
# connects is compared with the least of 30 to a path with no delay on it,
# probed in turn with the targets, connect by connect, so both see the same
# moments of the machine: ll-probe's own server on NET_HOST (--serve) from
# a namespace, Redis's client port at 127.0.0.1 on lo. ll-delay holds a
# packet until D after the kernel received it (that stamp too), less the
# queue's own few µs (--trim-us); it wakes before the due time by what its
# wake-ups have been taking and waits the rest awake, at SCHED_FIFO, so a
# busy run queue does not lengthen the wait either. What is left on a quiet
# machine is a few µs a round trip (the margin at 0.2 ms is 20 µs). A
# loaded machine adds scheduling delay to the kernel's own packet work
# (softirqs deferred to ksoftirqd, a thread like any other, before the
# packet reaches the queue) and to ll-delay's first wake-up after an idle
# spell, and that only ever adds: with other stacks' loads on the two vCPUs
# (run queue 8–13) the medians at 0.2 ms came out 15–50 µs high, round
# after round, while the least of each 30 was within a few µs of D. So the
# least is what is judged: every packet waits the same D (no jitter here),
# so a delay that is short shows in it, and one that is long for every
# packet does too; the medians are logged beside it. Once, in a suite run
# on a quiet machine, a loaded round's least at 0.5 ms came out 449 µs
# (the median 501): some packet of the 30 left about 50 µs early, so the
# noise does not only add. A round outside ±10 % is therefore measured
# again, up to three times, each target keeping the round that came
# closest to what was asked, and a delay really more than 10 % off fails
# all three. Nothing depends on how fast the purchases run.
#
# Needs root (namespaces, iptables). Under ctest the `netns` fixture has
# moved the stack into namespaces (tests/CMakeLists.txt); run alone, the
# test moves it there and back itself. It leaves the round trip at 0.
set -u
T_NAME=rtt
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need curl jq mariadb -- "the test's requests, its JSON and the exact strategies' products" || t_done
if [ "$(id -u)" != 0 ]; then
    t_skip "network namespaces and iptables need root"
    t_done
fi
STACK=$T_ROOT/bench/stack
topo() { sed -n "s/^$1=//p" "$T_RUN/topology" 2>/dev/null | tail -1; }
# Under ctest the netns fixture has just run `bench/stack up --netns`,
# which checked every server: a second `up` (t_setup's) would check them
# all again, 40 s of this test's 2 minutes on the 2-vCPU machine. A dead
# backend fails the probes below by name all the same.
restore=(rtt 0)
if [ "$(topo NETNS)" != 1 ] || [ ! -r "$T_RUN/stack.env" ]; then
    "$STACK" up --netns >/dev/null || { echo "stack up --netns failed"; exit 1; }
    restore=(up --no-netns)
fi
trap '"$STACK" "${restore[@]}" >/dev/null' EXIT
t_env
t_curl -f "$LOCKLAB_URL/locks" >/dev/null || { echo "the stack does not answer at $LOCKLAB_URL"; exit 1; }
OFFSET=${LOCKLAB_STACK_OFFSET:-0}
NET_HOST=10.77.$((OFFSET / 100 % 200 + 20)).1
NS0=ll$((OFFSET / 100 % 200 + 20))-app$((8000 + OFFSET))
QUEUE=$((7700 + OFFSET / 100 % 200 + 20))

# The backends as instance 0 reaches them, and the ensembles' links as the
# members reach each other (ports from .run/stack.env and bench/lib/stack_servers.sh).
BACKENDS=("$NET_HOST:$LOCKLAB_MYSQL_PORT")
for hp in ${LOCKLAB_REDIS//,/ } ${LOCKLAB_ZK//,/ } ${LOCKLAB_ETCD//,/ }; do
    BACKENDS+=("$NET_HOST:${hp##*:}")
done
MEMBERS=("$NET_HOST:$((16379 + OFFSET))")            # Redis server 1, as its replica reaches it
if [ "$(topo ZK)" -gt 1 ]; then                      # an ensemble's election ports
    for ((k = 0; k < $(topo ZK); k++)); do MEMBERS+=("127.0.0.1:$((13888 + OFFSET + k))"); done
fi
for ((k = 0; k < $(topo ETCD); k++)); do MEMBERS+=("127.0.0.1:$((12679 + OFFSET + k))"); done

# probe NS TARGET...: "least median" round trip to each target in µs, one
# a line (ll-probe inside the namespace NS, or "" for the machine's).
probe() {
    local ns=$1 json
    local -a in=()
    shift
    [ -n "$ns" ] && in=(ip netns exec "$ns")
    json=$("${in[@]}" "$T_BUILD/ll-probe" --count 30 --interval-ms 2 --json "$@") || true
    jq -r '.targets[] | "\(.rtt_min_us) \(.rtt_p50_us)"' <<< "$json" 2>/dev/null
}

# check_rtt WHAT US BASE NS TARGET...: a round probes, from the namespace
# NS, BASE (a path with no delay on it) and every TARGET in turn: a
# TARGET's least less BASE's is what the delay added. Over up to three
# rounds each TARGET keeps what it added in the round closest to US, and
# the rounds stop once every one is within ±10 % of US (see above).
check_rtt() {
    local what=$1 us=$2 base_at=$3 ns=$4 round i ok add
    local -a got least med d base mid
    shift 4
    for round in 1 2 3; do
        mapfile -t got < <(probe "$ns" "$base_at" "$@")
        least=("${got[@]%% *}") med=("${got[@]##* }")
        ok=1
        for ((i = 0; i < $#; i++)); do
            add=$(( ${least[i + 1]:-0} - ${least[0]:-0} ))
            if [ -z "${d[i]:-}" ] || [ $(((add - us) ** 2)) -lt $(((d[i] - us) ** 2)) ]; then
                d[i]=$add base[i]=${least[0]:-0} mid[i]=$(( ${med[i + 1]:-0} - ${med[0]:-0} ))
            fi
            [ $((10 * d[i])) -ge $((9 * us)) ] && [ $((10 * d[i])) -le $((11 * us)) ] || ok=0
        done
        [ $ok = 1 ] && break
        t_log "$what, round $round: ${least[*]:1} us at least, ${least[0]} us without delay; outside ±10 % of $us, measured again"
    done
    for ((i = 0; i < $#; i++)); do
        t_ok "$((10 * d[i])) -ge $((9 * us)) -a $((10 * d[i])) -le $((11 * us))" \
             "$what: ${*:i+1:1} adds ${d[i]} us over ${base[i]} us at least, ${mid[i]} us by medians ($us asked)"
    done
}

# queue_drops: packets the kernel dropped from our queue, full or unread.
queue_drops() {
    awk -v q="$QUEUE" '$1 == q {n += $6 + $7} END {print n + 0}' /proc/net/netfilter/nfnetlink_queue
}

# The paths with no delay on them, probed in turn with the delayed ones:
# from a namespace, a server of ll-probe's own on NET_HOST (a port no rule
# names); on lo, Redis's client port at 127.0.0.1.
ref_port=/tmp/locklab-rtt-ref-$$
"$T_BUILD/ll-probe" --serve "$NET_HOST:0" > "$ref_port" &
ref=$!
trap 'kill "$ref" 2>/dev/null; rm -f "$ref_port"; "$STACK" "${restore[@]}" >/dev/null' EXIT
for _ in $(seq 50); do [ -s "$ref_port" ] && break; sleep 0.1; done
REF=$NET_HOST:$(cat "$ref_port")
REDIS_LO=127.0.0.1:$((16379 + OFFSET))

echo "== the base: no delay"
t0=$SECONDS
if [ "$(topo RTT)" != 0 ] || [ "$(topo LOSS)" != 0 ]; then         # 5 s: only when needed
    "$STACK" rtt 0 --jitter 0 --loss 0 >/dev/null || { echo "bench/stack rtt 0 failed"; exit 1; }
fi
seen=$(probe "$NS0" "$REF" "${BACKENDS[@]}" | cut -d' ' -f1 | xargs)
t_log "round trips with no delay (us): $seen (the reference first, then the backends)"
t_ok "$(wc -w <<< "$seen") -eq $((1 + ${#BACKENDS[@]}))" "the reference and every backend answer from instance 0's namespace"
seen=$(probe "" "$REDIS_LO" "${MEMBERS[@]}" | cut -d' ' -f1 | xargs)
t_log "and on lo: $seen (Redis's client port, then the ensembles' links)"
t_ok "$(wc -w <<< "$seen") -eq $((1 + ${#MEMBERS[@]}))" "every ensemble link answers"

for ms in 0.2 1 0.5; do
    echo "== $ms ms"
    us=$(awk -v m="$ms" 'BEGIN {printf "%d", m * 1000}')
    "$STACK" rtt "$ms" --jitter 0 --loss 0 >/dev/null || { t_ok "1 = 0" "bench/stack rtt $ms"; continue; }
    check_rtt "$ms ms, idle" "$us" "$REF" "$NS0" "${BACKENDS[@]}"
done
# The ensembles' links at 0.5 ms (still set).
check_rtt "0.5 ms, ensemble link" 500 "$REDIS_LO" "" "${MEMBERS[@]}"
t_log "idle round trips checked in $((SECONDS - t0)) s"

echo "== 0.5 ms while a run goes on"
t0=$SECONDS
t_reset 100000000
"$T_BUILD/ll-load" -c 64 -d 8 "$LOCKLAB_URL/check/lock?lock=mysql-for-update&product=1001" \
    > /tmp/locklab-rtt-load-$$ 2>&1 &
load=$!
sleep 1.5                  # the run's connections are open and busy
stats0=$(cat "$T_RUN/delay/stats.json")
check_rtt "0.5 ms, loaded" 500 "$REF" "$NS0" "${BACKENDS[@]}"
stats1=$(cat "$T_RUN/delay/stats.json")
wait "$load"
rps=$(sed -n 's/^rps=//p' /tmp/locklab-rtt-load-$$)
rm -f /tmp/locklab-rtt-load-$$
read -r pkts cpu el <<< "$(jq -rn --argjson a "$stats0" --argjson b "$stats1" \
    '"\($b.packets - $a.packets) \($b.cpu_s - $a.cpu_s) \($b.elapsed_s - $a.elapsed_s)"')"
t_log "during the run ($rps purchases/s): ll-delay held $pkts packets in ${el%.???*} s," \
      "$(jq -rn "$cpu / $el * 100 | floor") % of a CPU," \
      "$(jq -rn "if $pkts > 0 then $cpu * 1e6 / $pkts | floor else 0 end") us of CPU a packet"
t_ok "${pkts:-0} -gt 0" "ll-delay held the run's packets"
t_ok "$(queue_drops) -eq 0" "the queue dropped no packet (held at most $(jq -r .held_max "$T_RUN/delay/stats.json"))"
t_log "loaded round trips checked in $((SECONDS - t0)) s"

echo "== 0.5 ms: every exact strategy sells exactly, all of them at once"
# Each strategy sells its own product, 2001 and on (made in db_stock if
# missing): S units to R purchases, and the purchases of 16 strategies at a
# time are interleaved in one run (ll-load sends purchase j to URL j mod
# 16) over 2 connections a strategy through nginx, so each strategy meets
# the others' traffic on the same instances and backends, and a run lasts
# about as long as its slowest strategy's R purchases. Each answer's body
# names its lock. Waiting behind the others' traffic, a purchase may give
# up on its lock (10 s, lock_timeout: busy is not an error); with R = 2 S
# there are purchases to spare, and the strategy must still sell exactly S.
t0=$SECONDS
S=10 R=20
mapfile -t EXACT < <(t_curl "$LOCKLAB_URL/locks" | jq -r '.strategies[] | select(.exact) | "\(.name) \(.stock)"')
N=${#EXACT[@]}
values="" urls=()
for ((k = 0; k < N; k++)); do values+="${values:+,}('$((2001 + k))', '001', 0)"; done
MYSQL_PWD=$LOCKLAB_MYSQL_PASSWORD mariadb -h127.0.0.1 -P"$LOCKLAB_MYSQL_PORT" -u"$LOCKLAB_MYSQL_USER" \
    "$LOCKLAB_MYSQL_DB" -e "INSERT IGNORE INTO db_stock (product_code, stock_code, count) VALUES $values"
for ((k = 0; k < N; k++)); do
    t_admin -X POST "$LOCKLAB_URL/stock/reset?count=$S&product=$((2001 + k))" >/dev/null
    urls+=("$LOCKLAB_URL/check/lock?lock=${EXACT[k]% *}&product=$((2001 + k))")
done
bodies=/tmp/locklab-rtt-bodies-$$
: > "$bodies"
for ((k = 0; k < N; k += 16)); do       # ll-load takes 16 URLs at most
    batch=("${urls[@]:k:16}")
    "$T_BUILD/ll-load" -c $((2 * ${#batch[@]})) -n $((R * ${#batch[@]})) --bodies "$bodies.part" \
        "${batch[@]}" >/dev/null || true
    cat "$bodies.part" >> "$bodies"
done
counts=$(jq -rs 'group_by(.lock)[] | [.[0].lock, length, (map(select(.result == "sold")) | length),
                 (map(select(.result == "sold_out")) | length), (map(select(.result == "lock_timeout")) | length)]
                 | map(tostring) | join(" ")' "$bodies" 2>/dev/null)
rm -f "$bodies" "$bodies.part"
# final_count P STOCK: what is left of product P in the store it sells from
# (Redis's, once the consumers have applied its sales stream: 60 s at most).
final_count() {
    local j i
    for ((i = 0; i < 300; i++)); do
        j=$(t_curl "$LOCKLAB_URL/stock?product=$1")
        [ "$2" != redis ] || [ "$(t_jq "$j" .redis.drained)" = true ] && break
        sleep 0.2
    done
    if [ "$2" = redis ]; then t_jq "$j" .redis.count; else t_jq "$j" .count; fi
}
for ((k = 0; k < N; k++)); do
    lock=${EXACT[k]% *}
    read -r _ n sold so busy <<< "$(grep "^$lock " <<< "$counts")"
    final=$(final_count $((2001 + k)) "${EXACT[k]#* }")
    n=${n:-0} sold=${sold:-0} so=${so:-0} busy=${busy:-0}
    lost=$((sold - (S - ${final:-0})))
    t_log "$lock (product $((2001 + k))): $n answers, sold $sold, sold out $so, lock timeouts $busy," \
          "final $final, lost $lost"
    t_ok "$sold -eq $S -a '$final' = 0 -a $lost -eq 0" "$lock at 0.5 ms sells exactly $S: 0 oversold, 0 lost"
    t_ok "$n -eq $R -a $((sold + so + busy)) -eq $R" \
         "$lock at 0.5 ms: every one of $R requests answered sold, sold_out or lock_timeout"
done
t_log "the exact strategies ran in $((SECONDS - t0)) s"
t_ok "$(queue_drops) -eq 0" "the queue dropped no packet"

echo "== 0.5 ms on the instances' own connections, however the stack got there"
# instances_least HOW: every instance's probe since a POST /stats/reset (1.2 s
# after the change, so no round straddles it), once each has 5 samples of
# every backend: lines "URL INDEX BACKEND WHERE LEAST_MS".
instances_least() {
    local u
    sleep 1.2
    for u in "${T_INSTANCES[@]}"; do t_admin -X POST "$u/stats/reset" >/dev/null; done
    for u in "${T_INSTANCES[@]}"; do
        t_until 30 sh -c "curl -s -m 5 '$u/stats' | jq -e '[.rtt.backends[].samples] | min >= 5' >/dev/null" ||
            t_log "$1: $u has not 5 samples of every backend after 30 s"
    done
    for u in "${T_INSTANCES[@]}"; do
        t_curl -m 5 "$u/stats" | jq -r --arg u "$u" '.rtt.backends | to_entries[] |
            [$u, .key, .value.backend, .value.where, (.value.min_ms // "none")] | @tsv'
    done
}

# The probe's own cost, each instance to each backend, with no delay on
# the path: the least at 0 ms (BASE, by "URL INDEX").
declare -A BASE=()
"$STACK" rtt 0 >/dev/null
while IFS=$'\t' read -r u i b w min; do
    BASE["$u $i"]=$min
    t_log "at 0 ms: $u's own round trip to $b $w: $min ms at least"
done < <(instances_least "at 0 ms")
"$STACK" rtt 0.5 >/dev/null

# rtt_fits LEAST BASE: 0 when LEAST is 0.5 ± 0.1 ms over BASE as the
# header says (at least 0.4, at most 0.6 + BASE).
rtt_fits() {
    awk -v m="$1" -v b="${2:-0}" 'BEGIN { if (b == "none") b = 0
        exit !(m != "none" && m >= 0.4 && m <= 0.6 + b) }'
}

# instances_rtt HOW: the instances' own round trips at 0.5 ms, judged by
# rtt_fits against BASE; ZooKeeper's logged. A loaded machine only adds to
# a sample (the wake-ups at both ends), so a round with one outside is
# measured again, up to three times, each backend keeping its least.
instances_rtt() {
    local how=$1 u i b w min round key t1 ok
    local -A best=() where=()
    t1=$SECONDS
    for round in 1 2 3; do
        ok=1
        while IFS=$'\t' read -r u i b w min; do
            key="$u $i"
            where[$key]="$b $w"
            best[$key]=$(awk -v a="${best[$key]:-none}" -v b="$min" 'BEGIN {
                if (a == "none") { print b; exit }
                if (b == "none") { print a; exit }
                print (b < a) ? b : a }')
            [ "$b" = zookeeper ] && continue
            rtt_fits "${best[$key]}" "${BASE[$key]:-0}" || ok=0
        done < <(instances_least "$how")
        [ $ok = 1 ] && break
        t_log "$how, round $round: a backend's least outside 0.5 ± 0.1 ms over its own at 0, measured again"
    done
    for key in "${!best[@]}"; do
        u=${key% *} b=${where[$key]%% *} w=${where[$key]#* }
        if [ "$b" = zookeeper ]; then
            t_log "$how: $u: $w, least ${best[$key]} ms (logged)"
            continue
        fi
        t_ok "$(rtt_fits "${best[$key]}" "${BASE[$key]:-0}"; echo $?) -eq 0" \
             "$how: $u's own round trip to $w: ${best[$key]} ms at least (0.4 to 0.6 + ${BASE[$key]:-0} at 0)"
        [ "$b" = mysql ] && t_ok "'${w#mysql socket}' = '$w'" "$how: $u reaches MariaDB over TCP ($w)"
    done
    t_log "$how: checked in $((SECONDS - t1)) s"
}
instances_rtt "bench/stack rtt 0.5 on the running stack"
"$STACK" stop "app:${T_INSTANCES[0]##*:}" >/dev/null
"$STACK" up >/dev/null || t_ok "1 = 0" "bench/stack up after stopping instance 0"
instances_rtt "instance 0 restarted"
"$STACK" down >/dev/null
"$STACK" up --netns --rtt 0.5 >/dev/null || t_ok "1 = 0" "bench/stack up --netns --rtt 0.5 after down"
t_env
instances_rtt "down, then up --netns --rtt 0.5"
"$STACK" rtt 0 >/dev/null
"$STACK" up --rtt 0.5 >/dev/null || t_ok "1 = 0" "bench/stack up --rtt 0.5 over a running stack"
instances_rtt "up --rtt 0.5 over a running stack at 0"
t_done
