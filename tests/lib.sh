# shellcheck shell=bash
# tests/lib.sh — what every integration test shares. Source it, then:
#
#   t_setup [UP-FLAGS]          the stack is up as the test needs it (below),
#                               env loaded
#   t_admin CURL-ARGS           curl with the stack's admin token (POST routes)
#   t_reset S [product]         stock := S, lock state cleared, counters zeroed
#   t_load "QUERY" R C [URL]    R purchases over C connections (ll-load);
#                               sets L_requests L_sold L_sold_out
#                               L_lock_timeout L_unavailable L_errors
#                               L_unknown L_other L_transport L_rps L_final
#                               L_oversold L_lost (definitions below), URL
#                               defaults to nginx
#   t_load_urls LABEL R C URL…  the same over several URLs at once: purchase
#                               j goes to URL j mod their number (ll-load),
#                               so two strategies can sell one product
#   t_stats_sum LOCK COUNTER    /stats's counter of strategy LOCK, added up
#                               over every instance
#   t_exact NAME                sold == S, final == 0, oversold == lost == 0,
#                               every request answered sold or sold_out
#                               (so none unknown)
#   t_product CODE...           each product made in warehouse 001 if it is
#                               not there (t_reset then sets its count):
#                               products of their own let runs go side by
#                               side without sharing a lock or a count
#   t_jq JSON FILTER [ARGS]     jq -r FILTER on the text JSON ("invalid" if
#                               it is not JSON): how a test reads an answer
#   t_until SECONDS CMD...      run CMD every 0.05 s until it succeeds
#                               (status 0) or SECONDS pass (status 1): how
#                               a test waits for what it can observe (a
#                               lock held, a request in flight) instead of
#                               sleeping and hoping
#   t_ok COND MSG               one assertion (COND is a `test` expression)
#   t_skip MSG                  a part that cannot run here: a dependency is
#                               missing (see below)
#   t_need CMD|FILE... -- MSG   t_skip MSG unless every command is on PATH
#                               and every /path exists; its status says which
#   t_done                      "N passed, M failed, K skipped"; exit status
#
# Exit status: 1 when an assertion failed, else 77 when a part was skipped
# (ctest's SKIP_RETURN_CODE: the test shows as "Skipped", not "Passed"),
# else 0. Under CI (CI=true) nothing may be skipped: t_skip is a failure,
# so a missing dependency or a test client that does not build fails CI.
#
# With initial stock S, sold = number of 200 answers and final = the stock
# after the run: oversold = max(0, sold − S), lost = sold − (S − final).
# An answer "unknown" (500: the sale's answer was lost, clients/db.c) may or may
# not have sold: each one can make the true lost one less than L_lost and
# the true oversold one more than L_oversold; t_exact asks for none.
# Tests run with `set -u`; a failed assertion does not stop the script, so
# one run reports every broken case.

T_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The stack's folder (bench/stack: .run, or $LOCKLAB_RUN for a second stack).
T_RUN=${LOCKLAB_RUN:-$T_ROOT/.run}
T_BUILD=${LOCKLAB_BUILD_DIR:-$T_ROOT/build}
case $T_BUILD in /*) ;; *) T_BUILD=$T_ROOT/$T_BUILD ;; esac
export LOCKLAB_BUILD_DIR=$T_BUILD
T_PASSED=0
T_FAILED=0
T_SKIPPED=0
T_STOCK=0

t_log() { printf '%s: %s\n' "${T_NAME:-test}" "$*"; }

t_ok() {
    local msg=$2
    # shellcheck disable=SC2086 # COND is split into test's arguments on purpose
    if eval test $1; then
        T_PASSED=$((T_PASSED + 1))
        printf '  ok    %s\n' "$msg"
    else
        T_FAILED=$((T_FAILED + 1))
        printf '  FAIL  %s   [%s]\n' "$msg" "$1"
    fi
}

t_until() {
    local bound=$1 i
    shift
    for ((i = 0; i < bound * 20; i++)); do
        "$@" && return 0
        sleep 0.05
    done
    return 1
}

t_skip() {
    if [ "${CI:-}" = true ]; then
        T_FAILED=$((T_FAILED + 1))
        printf '  FAIL  %s   [skipped, and CI=true runs everything]\n' "$1"
    else
        T_SKIPPED=$((T_SKIPPED + 1))
        printf '  SKIP  %s\n' "$1"
    fi
}

t_need() {
    local need missing=""
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        need=$1
        shift
        case $need in
            /*) [ -e "$need" ] || missing="$missing $need" ;;
            *) command -v "$need" >/dev/null || missing="$missing $need" ;;
        esac
    done
    [ -z "$missing" ] && return 0
    t_skip "${2:-a dependency}: missing$missing"
    return 1
}

t_done() {
    printf '%s: %d passed, %d failed, %d skipped\n' "${T_NAME:-test}" \
        "$T_PASSED" "$T_FAILED" "$T_SKIPPED"
    [ "$T_FAILED" -eq 0 ] || exit 1
    [ "$T_SKIPPED" -eq 0 ] || exit 77
    exit 0
}

t_jq() {
    local json=$1
    shift
    jq -r "$@" <<< "$json" 2>/dev/null || echo invalid
}

# The stack's settings, exported: the tools a test runs (ll-limits,
# ll-check, test_db_pipe, mariadb) find MariaDB's password in their
# environment, never on their command line.
t_env() {
    set -a
    # shellcheck disable=SC1091 # .run/stack.env: written by bench/stack up
    . "$T_RUN/stack.env"
    set +a
    IFS=, read -r -a T_INSTANCES <<< "$LOCKLAB_INSTANCES"
}

# t_setup [UP-FLAGS]: `bench/stack up` (which starts only what is missing
# or changed) as this test needs the stack: the topology of the last `up`
# (the test topology, tests/CMakeLists.txt), the fault switches on, Redis
# server 1's append-only file synced every second, the instances' own
# ZooKeeper sessions (not up --seed-timing's), and none of the
# variants (--ledger, --netns, --redis-replica, --prometheus), unless
# UP-FLAGS ask otherwise (--ledger, --no-faults, ...). A test that needs a
# variant asks for it here and leaves it on when it ends: the next test's
# t_setup turns off what that one does not need, so tests of one variant
# run one after the other (tests/CMakeLists.txt orders them) share one
# restart instead of two each.
# shellcheck disable=SC2120 # most tests need no flags
t_setup() {
    t_need curl jq -- "the integration tests (curl, jq)" || t_done
    "$T_ROOT/bench/stack" up --allow-faults --redis-aof everysec --no-ledger --no-netns \
        --no-redis-replica --redis-cluster 0 --no-read-replica --galera 0 --no-prometheus --zk-session-ms 0 "$@" >/dev/null || { echo "stack up $* failed"; exit 1; }
    t_env
}

t_curl() { curl -s -m 60 "$@"; }

t_product() {
    local p values=""
    for p; do values+="${values:+, }('$p', '001', 0)"; done
    MYSQL_PWD=$LOCKLAB_MYSQL_PASSWORD mariadb -h"$LOCKLAB_MYSQL_HOST" -P"$LOCKLAB_MYSQL_PORT" \
        -u"$LOCKLAB_MYSQL_USER" "$LOCKLAB_MYSQL_DB" \
        -e "INSERT IGNORE INTO db_stock (product_code, stock_code, count) VALUES $values"
}

# The admin token goes in a header read from a 0600 file, never on curl's
# command line (bench/stack writes it).
t_admin() { curl -s -m 60 -H @"$T_RUN/secrets/admin-header" "$@"; }

t_reset() {
    local s=$1 product=${2:-1001} url
    T_STOCK=$s
    T_PRODUCT=$product
    # Through nginx the reset may meet an instance a test has just killed
    # (502): nginx then sends the next try elsewhere. A stock left as it was
    # would read as a lost update.
    # The answers are matched in the shell, and every instance's counters
    # are reset by one curl: a suite resets hundreds of times, and a curl
    # or a jq costs 30-60 ms of CPU on a loaded machine (process accounting
    # during ctest), a match nothing.
    for _ in 1 2 3; do
        [[ $(t_admin -X POST "$LOCKLAB_URL/stock/reset?count=$s&product=$product") == \
            *'"result":"reset"'* ]] && break
    done
    local -a urls=()
    for url in "${T_INSTANCES[@]}"; do urls+=("$url/stats/reset"); done
    t_admin -X POST "${urls[@]}" >/dev/null
}

# The stock's count (nothing when the answer has none).
t_stock() {
    local answer
    answer=$(t_curl "$LOCKLAB_URL/stock?product=${1:-1001}")
    [[ $answer =~ \"count\":(-?[0-9]+) ]] && printf '%s\n' "${BASH_REMATCH[1]}"
    return 0
}

t_load() {
    local query=$1 r=$2 c=$3 base=${4:-$LOCKLAB_URL}
    t_load_urls "$query" "$r" "$c" "$base/check/lock?$query"
}

t_load_urls() {
    local label=$1 r=$2 c=$3 out key val
    shift 3
    out=$("$T_BUILD/ll-load" -c "$c" -n "$r" "$@") || true
    L_requests=0 L_sold=0 L_sold_out=0 L_lock_timeout=0 L_unavailable=0 L_errors=0
    L_transport=0 L_rps=0 L_other=0 L_unknown=0
    while IFS='=' read -r key val; do
        case $key in
            requests) L_requests=$val ;;
            transport_errors) L_transport=$val ;;
            rps) L_rps=$val ;;
            result_sold) L_sold=$val ;;
            result_sold_out) L_sold_out=$val ;;
            result_lock_timeout) L_lock_timeout=$val ;;
            result_unavailable) L_unavailable=$val ;;
            result_error) L_errors=$val ;;
            result_unknown) L_unknown=$val ;;
            result_*) L_other=$((L_other + val)) ;;
        esac
    done <<< "$out"
    L_final=$(t_stock "${T_PRODUCT:-1001}")
    L_final=${L_final:-unknown}
    if [ "$L_final" = unknown ]; then L_lost=unknown; L_oversold=unknown; return; fi
    L_oversold=$((L_sold > T_STOCK ? L_sold - T_STOCK : 0))
    L_lost=$((L_sold - (T_STOCK - L_final)))
    t_log "$label: sold=$L_sold sold_out=$L_sold_out timeouts=$L_lock_timeout" \
          "unavailable=$L_unavailable errors=$L_errors unknown=$L_unknown transport=$L_transport" \
          "final=$L_final oversold=$L_oversold lost=$L_lost rps=$L_rps"
}

# t_drained QUERY [SECONDS]: wait (30 s unless told) until GET /stock?QUERY
# says the Redis stock's streams are drained, then print it once more:
# /stock reads MariaDB's rows before Redis's side, so the
# answer that first says drained may hold rows read before the last batch.
t_drained() {
    local i
    for ((i = 0; i < ${2:-30} * 5; i++)); do
        [ "$(t_jq "$(t_curl "$LOCKLAB_URL/stock?$1")" .redis.drained)" = true ] && break
        sleep 0.2
    done
    t_curl "$LOCKLAB_URL/stock?$1"
}

# Counter $2 of strategy $1 in /stats, added up over every instance.
t_stats_sum() {
    local url n sum=0
    for url in "${T_INSTANCES[@]}"; do
        n=$(t_curl "$url/stats" | jq -r --arg s "$1" --arg k "$2" '.strategies[$s][$k] // 0')
        sum=$((sum + n))
    done
    echo "$sum"
}

# H_holds and H_held_us: the purchases of strategy $1 that held its lock,
# and for how long in all (microseconds), added up over the instances at
# the URLs that follow (default: every instance).
t_held() {
    local lock=$1 url n us
    shift
    H_holds=0 H_held_us=0
    for url in "${@:-${T_INSTANCES[@]}}"; do
        read -r n us <<< "$(t_curl "$url/stats" |
            jq -r --arg s "$lock" '.strategies[$s] | "\(.holds) \(.held_us)"')"
        H_holds=$((H_holds + n)) H_held_us=$((H_held_us + us))
    done
}

# Microseconds since the epoch, for timing a load from outside.
t_now_us() { echo $(($(date +%s%N) / 1000)); }

t_exact() {
    local name=$1
    t_ok "$L_sold -eq $T_STOCK" "$name sells exactly $T_STOCK"
    t_ok "'$L_final' = 0" "$name leaves 0 in stock"
    t_ok "'$L_oversold' = 0 -a '$L_lost' = 0" "$name: 0 oversold, 0 lost updates"
    t_ok "$((L_sold + L_sold_out)) -eq $L_requests" \
         "$name: every request answered sold or sold_out"
}
