# shellcheck shell=bash
# bench/lib/compare_matrix.sh — bench/compare --scenario matrix, sourced by
# bench/compare once the stack answers: every strategy against every fault
# that can touch it (locks/faults.h, GET /locks), each cell judged from its
# counts and ll-check alone against its strategy's claims (ll-report
# matrix, bench/report/report_matrix.c, says how).
#
# The plan (ll-report matrix-plan) puts the cells of a fault into rounds of
# at most --parallel (28), each cell on a product of its own (5001, 5002,
# …). A round is one application of the fault (mx_round):
#
#   1. every product reset to MX_STOCK units; every instance's counters;
#   2. where the fault is about a holder, the holder A of each cell goes to
#      instance 0 first, with nothing to wait for: ?hold_ms (it holds its
#      lock in its critical section, before its checks: a lease that may
#      have ended must not be written under) or, for pause-late and the
#      faults that take the lock from under a live holder, ?late_ms (after
#      its checks: only a fencing token can refuse its write); the round
#      waits until instance 0 shows every guarded A there (GET /stats
#      "holding" or "late"); a strategy that sells with statements of its
#      own holds no lock outside MariaDB to watch, and its A is only in
#      flight (as in tests/faults.sh);
#   3. each cell's load: ll-load --rate MX_RATE over MX_CONNS connections
#      through nginx, its strategy (with ?fence=1 for the fence variant)
#      on its product, queued behind A, until MX_POLL_S after the fault;
#   4. the fault, from outside, by its bench/fault verb (mx_fault_apply:
#      mx_fault_plan says how long, and when A goes for a failover's lag);
#      0.3 s into it (once it is in place, for those that take the lock
#      away) the contender B of each cell goes to instance 1: it gets the
#      lock when A's lease ends or the fault frees it, and sells while A
#      still holds, so that a late write of A meets B's;
#   5. from the fault's end, MariaDB's and Redis's counts of the products
#      every 0.1 s for MX_POLL_S, which gives each cell the time from the
#      fault's end to its next sale;
#   6. once every answer came and no instance has a purchase in flight
#      (and the Redis stock's streams drained), each cell's GET /stock and
#      ll-check; and the round's own checks: every instance answers, none
#      died (its pid is the one it had, unless the fault killed it), no
#      instance log grew a sanitizer's report or an assertion.
# Each round's times are in raw/round-N.times, the faults' output in
# raw/faults.out.
#
# The stack: a topology the faults need, set for the matrix and put back
# at the end (bench/compare's RESTORE): the ledger, 3 s leases (ZooKeeper
# sessions of 4 s), the fault switches, 5 Redis servers under libfaketime
# with a replica of the first and a Sentinel, a 3-server ZooKeeper
# ensemble, the instances in network namespaces (root) with MX_THREADS
# worker slots; the slot migration runs on a Redis Cluster of 3 (up
# --redis-cluster 3, which the replica and the namespaces exclude), and
# the short ZooKeeper session on a ZooKeeper that grants at most
# MX_ZK_GRANT_MS of the MX_ZK_ASK_MS the instances ask.
#
# Uses ROOT BUILD REPORT STACK_RUN OUT STRATEGIES MX_FAULTS MX_PARALLEL
# RESTORE, topology_value and die from bench/compare.

MX_FAULTS=${MX_FAULTS:-} MX_PARALLEL=${MX_PARALLEL:-28}
# What fails in a round (a fault that cannot be applied, an answer that
# never came, a checker that found anomalies) is the round's finding,
# recorded, not a reason to stop the matrix: errexit is off from here.
set +e
MX_STOCK=1000000
MX_RATE=10              # purchases a second, each cell's load
MX_CONNS=8              # its connections at most: an open loop sends each
                        # purchase due, however late, so a stuck cell's
                        # backlog drains MX_CONNS at a time
MX_LOAD_WAIT_MS=4000    # a load purchase's lock wait: past a 3 s lease
MX_THREADS=64           # worker slots an instance: a round's holders and loads
MX_LEASE_MS=10000       # the lease: long enough for a fault to take a lock
                        # from under a live holder well within it
MX_ZK_GRANT_MS=4000 MX_ZK_ASK_MS=12000
MX_WAIT_MS=20000        # B's wait: past a lease and the fault's seconds
[ "$(id -u)" = 0 ] || die "--scenario matrix needs root: network namespaces (partition, mysql-reset), a cgroup (cpu)"

# ------------------------------------------------------------------ the faults

# mx_fault_plan FAULT: how a round of FAULT goes.
#   MX_WIN     the holder's window: hold (?hold_ms), late (?late_ms) or
#              none (no holder)
#   MX_A_MS    its length: past the fault's end by 2 s or more for the
#              faults that outlast the lease (A checks once it is over);
#              for those that take the lock from under a live holder,
#              within every lease (the lease alone must never let B in
#              before A writes): 2 s for the faults done at once, within
#              the 3 s that redis-setnx-expire, redis-set-nx-ex and
#              redis-uuid set whatever --lease-ms says (the seeds' EX 3),
#              8 s for those that take seconds (a JVM's start, an election,
#              a failover), which only strategies with a renewed lease or
#              session meet
#   MX_FAULT_MS how long the fault lasts (for those that take --for)
#   MX_B       1: a contender B goes to instance 1 0.3 s into the fault
#   MX_BEFORE  1: the fault begins before the holders are sent (a
#              failover's lag: the holders' locks must miss the replica)
#   MX_SKEW    B's clock ahead by so much (?clock_skew_ms), or 0
#   MX_POLL_S  seconds of load and polls after the fault's end
mx_fault_plan() {
    local past=$((MX_LEASE_MS + 1000))
    MX_WIN=hold MX_A_MS=0 MX_FAULT_MS=0 MX_B=1 MX_BEFORE=0 MX_SKEW=0 MX_POLL_S=5
    case $1 in
        none) MX_WIN=none MX_B=0 ;;
        pause | cpu | partition) MX_FAULT_MS=$past MX_A_MS=$((past + 2000)) ;;
        pause-late) MX_WIN=late MX_FAULT_MS=$past MX_A_MS=$((past + 3000)) ;;
        kill) MX_FAULT_MS=2000 MX_A_MS=$((past + 4000)) MX_POLL_S=$((past / 1000 + 3)) ;;
        redis-reset | mysql-reset | redis-restart) MX_WIN=late MX_A_MS=2000 ;;
        clock-redis) MX_WIN=late MX_A_MS=2000 MX_FAULT_MS=1000 ;;
        etcd-revoke | zk-expire) MX_WIN=late MX_A_MS=$((MX_LEASE_MS - 2000)) ;;
        zk-leader) MX_WIN=late MX_A_MS=$((MX_LEASE_MS - 2000)) MX_FAULT_MS=3000 ;;
        failover) MX_WIN=late MX_A_MS=$((MX_LEASE_MS - 2000)) MX_BEFORE=1 MX_FAULT_MS=4000 ;;
        clock-app) MX_A_MS=1500 MX_SKEW=$((MX_LEASE_MS + 5000)) ;;
        slot-migrate) MX_WIN=none MX_B=0 MX_FAULT_MS=2000 ;;
        zk-short) MX_FAULT_MS=$((MX_ZK_GRANT_MS + 3000)) MX_A_MS=$((MX_ZK_GRANT_MS + 5000)) ;;
        *) die "matrix: no plan for the fault '$1'" ;;
    esac
    # The holder may still hold when such a fault is over: the polls
    # outlast its window by as much as the others' outlast the fault.
    case $1 in
        etcd-revoke | zk-expire | zk-leader | failover) MX_POLL_S=$((MX_A_MS / 1000 + 5)) ;;
    esac
}

# mx_phase FAULT: the topology FAULT runs on (base, cluster, zkshort).
mx_phase() {
    case $1 in
        slot-migrate) echo cluster ;;
        zk-short) echo zkshort ;;
        *) echo base ;;
    esac
}

# mx_fault_apply FAULT ROUND_FILE: the fault, from outside, in the
# foreground (it returns when the fault is over); its cells' lines in
# ROUND_FILE (for the products and backends it needs).
mx_fault_apply() {
    local fault=$1 cells=$2 f=$ROOT/bench/fault pids=() cut product
    case $fault in
        none) return 0 ;;
        pause | pause-late | zk-short) "$f" pause "app:$MX_PORT0" --for "$MX_FAULT_MS" ;;
        kill) "$f" kill "app:$MX_PORT0" --for "$MX_FAULT_MS" ;;
        cpu) "$f" starve "app:$MX_PORT0" --cpu 2 --for "$MX_FAULT_MS" ;;
        redis-reset) "$f" reset "app:$MX_PORT0" redis ;;
        mysql-reset) "$f" reset "app:$MX_PORT0" mysql ;;
        zk-expire) "$f" expire "app:$MX_PORT0" zk ;;
        etcd-revoke)
            while IFS=$'\t' read -r _ _ _ _ _ _ _ _ _ product; do
                "$f" revoke etcd "$product" || return 1
            done < "$cells" ;;
        partition)
            while read -r cut; do
                "$f" partition "app:$MX_PORT0" "$cut" --for "$MX_FAULT_MS" &
                pids+=($!)
            done < <(cut -f9 "$cells" | sort -u)
            for p in "${pids[@]}"; do wait "$p" || return 1; done ;;
        clock-redis) "$f" clock redis --jump 10 --for "$MX_FAULT_MS" ;;
        clock-app) return 0 ;;      # B carries it: ?clock_skew_ms
        redis-restart) "$f" restart redis:1 --alone --empty ;;
        failover) "$f" failover --lag "$MX_FAULT_MS" ;;
        zk-leader) "$f" kill zk:leader --for "$MX_FAULT_MS" ;;
        slot-migrate)
            while IFS=$'\t' read -r _ _ _ _ _ _ _ _ _ product; do
                "$f" migrate "$product" --for "$MX_FAULT_MS" &
                pids+=($!)
            done < "$cells"
            for p in "${pids[@]}"; do wait "$p" || return 1; done ;;
    esac >> "$RAW/faults.out" 2>&1
}

# ------------------------------------------------------------------ the stack

# mx_topology PHASE: bench/stack up's flags for it.
# The cluster's nodes announce 127.0.0.1 in CLUSTER SLOTS, which from an
# instance's namespace is its own loopback: the cluster runs without them.
mx_topology() {
    printf '%s\n' --ledger --allow-faults --lease-ms "$MX_LEASE_MS" --redis-faketime \
        --redis 5 --zk 3 --threads "$MX_THREADS" --instances 3 --no-read-replica --galera 0 \
        --no-prometheus
    case $1 in
        base) printf '%s\n' --netns --redis-replica --redis-cluster 0 --zk-session-ms 0 \
                  --zk-max-session-ms 0 ;;
        cluster) printf '%s\n' --no-netns --no-redis-replica --redis-cluster 3 --zk-session-ms 0 \
                     --zk-max-session-ms 0 ;;
        zkshort) printf '%s\n' --netns --redis-replica --redis-cluster 0 --zk-session-ms "$MX_ZK_ASK_MS" \
                     --zk-max-session-ms "$MX_ZK_GRANT_MS" ;;
    esac
}

# mx_restore_flags: the flags that put back what the matrix changes.
mx_restore_flags() {
    local v
    [ "$(topology_value LEDGER)" = 1 ] || RESTORE+=(--no-ledger)
    [ "$(topology_value NETNS)" = 1 ] || RESTORE+=(--no-netns)
    [ "$(topology_value REDIS_FAKETIME)" = 1 ] || RESTORE+=(--no-redis-faketime)
    [ "$(topology_value REDIS_REPLICA)" = 1 ] || RESTORE+=(--no-redis-replica)
    [ "$(topology_value FAULTS)" = 1 ] || RESTORE+=(--no-faults)
    v=$(topology_value LEASE_MS); RESTORE+=(--lease-ms "${v:-30000}")
    v=$(topology_value ZK_SESSION_MS); RESTORE+=(--zk-session-ms "${v:-0}")
    v=$(topology_value ZK_MAX_SESSION_MS); RESTORE+=(--zk-max-session-ms "${v:-0}")
    v=$(topology_value THREADS); RESTORE+=(--threads "${v:-0}")
    v=$(topology_value REDIS); RESTORE+=(--redis "${v:-1}")
    v=$(topology_value ZK); RESTORE+=(--zk "${v:-1}")
    v=$(topology_value REDIS_CLUSTER); RESTORE+=(--redis-cluster "${v:-0}")
    v=$(topology_value INSTANCES); RESTORE+=(--instances "${v:-3}")
}

# mx_stack PHASE: the stack as PHASE's faults need it; 1 when it could not
# be made so (twice tried: a port a client happened to hold, …).
MX_PHASE=""
mx_stack() {
    local -a flags
    [ "$MX_PHASE" = "$1" ] && return 0
    mapfile -t flags < <(mx_topology "$1")
    echo "compare: the stack for the $1 faults (bench/stack up ${flags[*]})"
    "$ROOT/bench/stack" up "${flags[@]}" >> "$RAW/stack.out" 2>&1 ||
        "$ROOT/bench/stack" up "${flags[@]}" >> "$RAW/stack.out" 2>&1 || return 1
    stack_answers || return 1
    # The tools (ll-check, the mariadb client) find MariaDB in the environment.
    export LOCKLAB_MYSQL_HOST LOCKLAB_MYSQL_PORT LOCKLAB_MYSQL_USER LOCKLAB_MYSQL_PASSWORD \
           LOCKLAB_MYSQL_DB LOCKLAB_MYSQL_SOCKET
    IFS=, read -r -a MX_APPS <<< "$LOCKLAB_INSTANCES"
    MX_APP0=${MX_APPS[0]} MX_APP1=${MX_APPS[1]} MX_PORT0=${MX_APP0##*:}
    MX_PHASE=$1
}

# ------------------------------------------------------------------ a round

mx_admin() { curl -sf -m 60 -H @"$STACK_RUN/secrets/admin-header" -X POST "$@"; }

mx_sql() {
    MYSQL_PWD=$LOCKLAB_MYSQL_PASSWORD mariadb -h"$LOCKLAB_MYSQL_HOST" -P"$LOCKLAB_MYSQL_PORT" \
        -u"$LOCKLAB_MYSQL_USER" "$LOCKLAB_MYSQL_DB" -N "$@"
}

# mx_stat URL KEY: one number of an instance's GET /stats (0 without).
mx_stat() { curl -sf -m 5 "$1/stats" | "$REPORT" get - "$2" 2>/dev/null || echo 0; }

# mx_wait_window N KEY CELLS: instance 0 shows the N guarded holders of
# CELLS in their window (KEY holding or late), those that answered
# without one (a lock refused: redisson-wait's while its replica lags)
# aside; 20 s at most.
mx_wait_window() {
    local n=$1 key=$2 cells=$3 i idx guarded answered
    for ((i = 0; i < 200; i++)); do
        answered=0
        while IFS=$'\t' read -r _ idx _ _ _ _ _ guarded _; do
            [ "$guarded" = 1 ] && [ -s "$RAW/$idx.a" ] && answered=$((answered + 1))
        done < "$cells"
        [ $(($(mx_stat "$MX_APP0" "$key") + answered)) -ge "$n" ] && return 0
        sleep 0.1
    done
    return 1
}

# mx_settle: no instance has a purchase in flight (60 s at most).
mx_settle() {
    local u i
    for u in "${MX_APPS[@]}"; do
        for ((i = 0; i < 600; i++)); do
            [ "$(mx_stat "$u" in_flight)" = 0 ] && break
            sleep 0.1
        done
    done
}

# mx_redis ARGS...: redis-cli on the Redis that holds the Redis stock now:
# the master the Sentinel names (after a failover, the replica), a node of
# the cluster (-c follows its redirections), or server 1.
mx_redis() {
    local hp
    if [ -n "${LOCKLAB_REDIS_SENTINEL:-}" ]; then
        hp=$(redis-cli -h "${LOCKLAB_REDIS_SENTINEL%:*}" -p "${LOCKLAB_REDIS_SENTINEL##*:}" \
            SENTINEL get-master-addr-by-name locklab 2>/dev/null | tr '\n' ':')
        hp=${hp%:}
    elif [ -n "${LOCKLAB_REDIS_CLUSTER:-}" ]; then
        hp=${LOCKLAB_REDIS_CLUSTER%%,*}
        set -- -c "$@"
    fi
    [ -n "${hp:-}" ] || hp=${LOCKLAB_REDIS%%,*}
    redis-cli -h "${hp%:*}" -p "${hp##*:}" "$@"
}

# mx_poll FILE MYSQL_PRODUCTS REDIS_PRODUCTS: every 0.1 s for MX_POLL_S,
# lines "MS product:count …" of MariaDB's counts (one client for all of
# it) in FILE.mysql and of the Redis stock's in FILE.redis, the
# milliseconds of this machine's clock.
mx_poll() {
    local file=$1 products=$2 redis=$3 n=$((MX_POLL_S * 10)) sql="" i p
    local -a keys=() codes=() counts=()
    for ((i = 0; i < n; i++)); do
        sql+="SELECT ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000), GROUP_CONCAT(CONCAT(product_code, ':', count) SEPARATOR ' ') FROM db_stock WHERE product_code IN ($products) AND stock_code = '001'; DO SLEEP(0.1);"
    done
    mx_sql -e "$sql" > "$file.mysql" 2>/dev/null &
    read -r -a codes <<< "$redis"
    for p in "${codes[@]}"; do keys+=("GET {stock:$p}"); done
    # One GET a key, as one client's input: on a cluster MGET across slots
    # is refused (CROSSSLOT), and redis-cli -c follows each GET's MOVED.
    for ((i = 0; i < n && ${#keys[@]}; i++)); do
        mapfile -t counts < <(printf '%s\n' "${keys[@]}" | mx_redis 2>/dev/null | grep -v '^-> ')
        printf '%s' "$(date +%s%3N)"
        for p in "${!codes[@]}"; do printf ' %s:%s' "${codes[p]}" "${counts[p]:-}"; done
        printf '\n'
        sleep 0.1
    done > "$file.redis"
    wait
}

# mx_next IDX PRODUCT STOCK END_MS POLL: ms from END_MS to the first poll
# whose count of the product is below the first one's, or "-".
mx_next() {
    local idx=$1 product=$2 end=$4 poll=$5.mysql
    [ "$3" = redis ] && poll=$5.redis
    awk -v p="$product" -v end="$end" '
        { v = ""; for (i = 2; i <= NF; i++) { split($i, kv, ":"); if (kv[1] == p) v = kv[2] } }
        v == "" { next }
        first == "" { first = v; next }
        v + 0 < first + 0 { print ($1 > end ? $1 - end : 0); found = 1; exit }
        END { if (!found) print "-" }' "$poll" > "$RAW/$idx.next"
}

# mx_logs_mark: each instance log's size now; mx_logs_check: what they
# grew since that a round must not show.
declare -A MX_LOG_SIZE MX_PIDS
mx_logs_mark() {
    local f
    for f in "$STACK_RUN"/logs/app-*.log; do MX_LOG_SIZE[$f]=$(stat -c %s "$f" 2>/dev/null || echo 0); done
    for f in "$STACK_RUN"/pids/app-*.pid; do MX_PIDS[$f]=$(cat "$f" 2>/dev/null); done
}
mx_logs_check() {
    local fault=$1 f what="" p
    for f in "$STACK_RUN"/logs/app-*.log; do
        p=$(tail -c +"$((${MX_LOG_SIZE[$f]:-0} + 1))" "$f" 2>/dev/null |
            grep -m1 -E 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:|Assertion .* failed|Segmentation fault|stack smashing' || true)
        [ -z "$p" ] || what+="${f##*/}: $p; "
    done
    for f in "$STACK_RUN"/pids/app-*.pid; do
        p=$(cat "$f" 2>/dev/null)
        if [ "$p" != "${MX_PIDS[$f]:-}" ] && { [ "$fault" != kill ] || [ "${f##*/}" != "app-$MX_PORT0.pid" ]; }; then
            what+="${f##*/}: the instance's pid changed (${MX_PIDS[$f]:-none} -> ${p:-none}): it died; "
        fi
    done
    for u in "${MX_APPS[@]}"; do
        curl -sf -m 10 "$u/health" >/dev/null || what+="$u does not answer GET /health; "
    done
    printf '%s' "$what"
}

# mx_answer FILE URL: one answer as "CODE BODY" on one line (CODE 000:
# none came).
mx_answer() {
    local code
    code=$(curl -s -m 90 -o "$1.body" -w '%{http_code}' "$2" || true)
    printf '%s %s\n' "${code:-000}" "$({ tr '\n' ' ' < "$1.body"; } 2>/dev/null)" > "$1"
    rm -f "$1.body"
}

# mx_mark ROUND WHAT: when the round got to WHAT (raw/round-N.times).
mx_mark() { printf '%s %s\n' "$(date +%s%3N)" "$2" >> "$RAW/round-$1.times"; }

# mx_query VAR STRATEGY VARIANT PRODUCT [WAIT_MS]: a purchase's query, in
# VAR (no subshell: a round makes a hundred of them).
mx_query() {
    printf -v "$1" 'lock=%s&product=%s&wait_ms=%s' "$2" "$4" "${5:-$MX_WAIT_MS}"
    [ "$3" = fence ] && printf -v "$1" '%s&fence=1' "${!1}"
    return 0
}

# mx_holders CELLS: each cell's holder A to instance 0, in its window, in
# the background (MX_PIDS_A); then waits until instance 0 shows every
# guarded one there and writes each cell's IDX.held.
mx_holders() {
    local cells=$1 idx strategy variant guarded product q n=0 ok=1
    MX_PIDS_A=()
    while IFS=$'\t' read -r _ idx _ strategy variant _ _ guarded _ product; do
        mx_query q "$strategy" "$variant" "$product"
        if [ "$MX_WIN" = late ] && [ "$guarded" = 1 ]; then q+="&late_ms=$MX_A_MS"
        else q+="&hold_ms=$MX_A_MS"; fi
        [ "$guarded" = 1 ] && n=$((n + 1))
        mx_answer "$RAW/$idx.a" "$MX_APP0/check/lock?$q" &
        MX_PIDS_A+=($!)
    done < "$cells"
    if [ "$n" -gt 0 ]; then
        if [ "$MX_WIN" = late ]; then mx_wait_window "$n" late "$cells" || ok=0
        else mx_wait_window "$n" holding "$cells" || ok=0; fi
    else
        sleep 0.3
    fi
    while IFS=$'\t' read -r _ idx _ _ _ _ _ guarded _; do
        if [ "$guarded" = 1 ]; then echo "$ok"; else echo -; fi > "$RAW/$idx.held"
    done < "$cells"
}

# mx_loads CELLS SECONDS PART: each cell's load through nginx for SECONDS
# (IDX.PART.json), in the background (their pids added to MX_PIDS_LOAD).
mx_loads() {
    local idx strategy variant product q
    while IFS=$'\t' read -r _ idx _ strategy variant _ _ _ _ product; do
        mx_query q "$strategy" "$variant" "$product" "$MX_LOAD_WAIT_MS"
        "$BUILD/ll-load" --rate "$MX_RATE" -c "$MX_CONNS" -d "$2" -n $((MX_RATE * $2)) -t 60 \
            --json "$LOCKLAB_URL/check/lock?$q" > "$RAW/$idx.$3.json" 2>/dev/null &
        MX_PIDS_LOAD+=($!)
    done < "$1"
}

# mx_contenders CELLS: each cell's contender B to instance 1, in the
# background (MX_PIDS_B); clock-app's with a clock ahead.
mx_contenders() {
    local idx strategy variant product q
    MX_PIDS_B=()
    while IFS=$'\t' read -r _ idx _ strategy variant _ _ _ _ product; do
        mx_query q "$strategy" "$variant" "$product"
        ((MX_SKEW)) && q+="&clock_skew_ms=$MX_SKEW"
        mx_answer "$RAW/$idx.b" "$MX_APP1/check/lock?$q" &
        MX_PIDS_B+=($!)
    done < "$1"
}

# mx_collect CELLS FAULT T_END POLL: each cell's stock (once the Redis
# stock's streams are drained, 30 s at most for all of them), its
# ledger's check and its next sale after T_END.
mx_collect() {
    local idx stock product answer deadline=$((SECONDS + 30))
    while IFS=$'\t' read -r _ idx _ _ _ _ stock _ _ product; do
        while :; do
            answer=$(curl -sf -m 10 "$LOCKLAB_URL/stock?product=$product") || break
            { [ "$stock" = redis ] && [ $SECONDS -lt $deadline ]; } || break
            [[ $answer == *'"drained":true'* || $answer == *'"loaded":false'* ]] && break
            sleep 0.2
        done
        if [ -n "$answer" ]; then printf '%s\n' "$answer" > "$RAW/$idx.stock.json"; fi
        if [ "$stock" = mysql ]; then   # 1: it found anomalies, which is its answer
            "$BUILD/ll-check" --product "$product" --json > "$RAW/$idx.check.json" 2>/dev/null || true
        fi
        [ "$2" = none ] || mx_next "$idx" "$product" "$stock" "$3" "$4"
    done < "$1"
}

# mx_round ROUND FILE: the cells of FILE (the plan's lines of one round).
mx_round() {
    local round=$1 cells=$2 fault products="" redis="" broke="" stock product p fault_pid="" t_end
    fault=$(cut -f3 "$cells" | head -1)
    mx_fault_plan "$fault"
    if ! mx_stack "$(mx_phase "$fault")"; then
        printf '%s\t%s\tbroken\t%s\n' "$round" "$fault" \
            "bench/stack up could not make the stack its faults need (raw/stack.out)" >> "$RAW/rounds.tsv"
        cat "$cells" >> "$RAW/cells.tsv"
        printf '[round %d/%d] %-14s: the stack could not be made (raw/stack.out)\n' "$round" "$MX_ROUNDS" "$fault"
        return 0
    fi
    rm -f "$RAW/round-$round.broke" "$RAW/round-$round.times"
    while IFS=$'\t' read -r _ _ _ _ _ _ stock _ _ product; do
        mx_admin "$LOCKLAB_URL/stock/reset?count=$MX_STOCK&product=$product" >/dev/null ||
            die "POST /stock/reset?product=$product failed"
        products+="${products:+,}'$product'"
        [ "$stock" = redis ] && redis+="${redis:+ }$product"
    done < "$cells"
    for u in "${MX_APPS[@]}"; do mx_admin "$u/stats/reset" >/dev/null; done
    mx_logs_mark
    printf '[round %d/%d] %-14s %2d cells …' "$round" "$MX_ROUNDS" "$fault" "$(wc -l < "$cells")"
    mx_mark "$round" start
    if ((MX_BEFORE)); then      # a failover's lag: the holders' locks miss the replica
        { mx_fault_apply "$fault" "$cells" || echo "the fault could not be applied ($fault: raw/faults.out); " \
            > "$RAW/round-$round.broke"; } &
        fault_pid=$!
        sleep 0.3
    fi
    # The holders first, with nothing to wait for, so that each is in its
    # window at once; then the fault at once, and behind it the loads,
    # queued behind the holders, and the contenders.
    MX_PIDS_A=() MX_PIDS_B=() MX_PIDS_LOAD=()
    if [ "$MX_WIN" != none ]; then mx_holders "$cells"; mx_mark "$round" holders; fi
    if ((MX_BEFORE == 0)); then
        mx_mark "$round" fault
        { mx_fault_apply "$fault" "$cells" || echo "the fault could not be applied ($fault: raw/faults.out); " \
            > "$RAW/round-$round.broke"; } &
        fault_pid=$!
    fi
    mx_loads "$cells" $(( (MX_A_MS > MX_FAULT_MS ? MX_A_MS : MX_FAULT_MS) / 1000 + 1 )) load
    if [ "$MX_B" = 1 ]; then
        sleep 0.3
        mx_contenders "$cells"
        mx_mark "$round" contenders
    fi
    [ -z "$fault_pid" ] || wait "$fault_pid" 2>/dev/null
    [ -e "$RAW/round-$round.broke" ] && broke+=$(cat "$RAW/round-$round.broke")
    t_end=$(date +%s%3N)
    mx_mark "$round" "fault over"
    # After the fault: a load again, and the polls that see its first sale.
    mx_loads "$cells" "$MX_POLL_S" after
    [ "$fault" = none ] || mx_poll "$RAW/round-$round.poll" "$products" "$redis"
    for p in "${MX_PIDS_LOAD[@]}" "${MX_PIDS_A[@]}" "${MX_PIDS_B[@]}"; do wait "$p" 2>/dev/null; done
    mx_mark "$round" answered
    mx_settle
    mx_collect "$cells" "$fault" "$t_end" "$RAW/round-$round.poll"
    mx_mark "$round" collected
    broke+=$(mx_logs_check "$fault")
    printf '%s\t%s\t%s\t%s\n' "$round" "$fault" "$([ -n "$broke" ] && echo broken || echo ok)" \
        "${broke:--}" >> "$RAW/rounds.tsv"
    cat "$cells" >> "$RAW/cells.tsv"
    printf '\r\033[K[round %d/%d] %-14s %2d cells: %s (%s s)\n' "$round" "$MX_ROUNDS" "$fault" \
        "$(wc -l < "$cells")" "${broke:-done}" "$(( ($(date +%s%3N) - $(head -1 "$RAW/round-$round.times" | cut -d' ' -f1)) / 1000 ))"
}

# ------------------------------------------------------------------ the run

RUN=$OUT/$(date -u +%Y%m%d-%H%M%S)-matrix
RAW=$RUN/raw
mkdir -p "$RAW"
mx_restore_flags
mx_stack base || die "bench/stack up could not make the matrix's stack (raw/stack.out)"
curl -sf -m 10 "$LOCKLAB_URL/locks" > "$RAW/locks.json" || die "GET /locks failed"
"$REPORT" matrix-plan "$RAW/locks.json" "$STRATEGIES" "$MX_FAULTS" "$MX_PARALLEL" > "$RAW/plan.tsv" ||
    die "ll-report matrix-plan failed"
[ -s "$RAW/plan.tsv" ] || die "no cell to run (--strategies, --faults)"
MX_ROUNDS=$(cut -f1 "$RAW/plan.tsv" | sort -un | wc -l)
# The products the rounds use, made once by the application's own account.
values=""
for ((p = 5001; p <= 5000 + MX_PARALLEL; p++)); do values+="${values:+,}('$p', '001', 0)"; done
mx_sql -e "INSERT IGNORE INTO db_stock (product_code, stock_code, count) VALUES $values" ||
    die "could not make products 5001..$((5000 + MX_PARALLEL)) in db_stock (mariadb client)"
{
    echo "scenario=matrix"
    echo "started=$(date -u +%FT%TZ)"
    echo "stock=$MX_STOCK"
    echo "strategies=$STRATEGIES"
    echo "faults=$MX_FAULTS"
    echo "parallel=$MX_PARALLEL"
    echo "rate=$MX_RATE"
    echo "connections=$MX_CONNS"
    echo "lease_ms=$MX_LEASE_MS"
    echo "command=bench/compare --scenario matrix${STRATEGIES:+ --strategies $STRATEGIES}${MX_FAULTS:+ --faults $MX_FAULTS}$([ "$MX_PARALLEL" = 28 ] || echo " --parallel $MX_PARALLEL")"
} > "$RAW/settings.env"
: > "$RAW/cells.tsv"
: > "$RAW/rounds.tsv"
echo "compare: matrix — $(wc -l < "$RAW/plan.tsv") cells in $MX_ROUNDS rounds ($MX_RATE purchases/s each, through $LOCKLAB_URL)"
t0=$SECONDS
# The phases in turn: the base topology's faults, then the cluster's, then
# the short sessions'.
for phase in base cluster zkshort; do
    while read -r round; do
        awk -F'\t' -v r="$round" '$1 == r' "$RAW/plan.tsv" > "$RAW/round.tsv"
        [ "$(mx_phase "$(cut -f3 "$RAW/round.tsv" | head -1)")" = "$phase" ] || continue
        mx_round "$round" "$RAW/round.tsv" < /dev/null
    done < <(cut -f1 "$RAW/plan.tsv" | sort -un)
done
rm -f "$RAW/round.tsv"
echo "compare: $MX_ROUNDS rounds in $((SECONDS - t0)) s"
echo
drops=()
for d in ${LOCKLAB_MATRIX_DROP_CLAIM:-}; do drops+=(--drop-claim "$d"); done
MX_OK=0
"$REPORT" matrix "$RUN" "${drops[@]}" || MX_OK=1
echo "compare: results in $RUN/ (report.json, report.md, report.html)"
exit "$MX_OK"
