# shellcheck shell=bash
# bench/lib/run.sh — driving a running stack from a script: what the tools
# (bench/lesson, the class page) and the tests (tests/lib.sh) share.
# Source it, then:
#
#   t_env                       .run/stack.env loaded and exported,
#                               T_INSTANCES the instances' URLs
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
#   t_stock [product]           the stock's count as GET /stock says it
#   t_stats_sum LOCK COUNTER    /stats's counter of strategy LOCK, added up
#                               over every instance
#   t_held LOCK [URL...]        H_holds, H_held_us: the holds of LOCK
#   t_drained QUERY [SECONDS]   GET /stock?QUERY once the Redis stock's
#                               streams are drained
#   t_product CODE...           each product made in warehouse 001 if it is
#                               not there (t_reset then sets its count):
#                               products of their own let runs go side by
#                               side without sharing a lock or a count
#   t_jq JSON FILTER [ARGS]     jq -r FILTER on the text JSON ("invalid" if
#                               it is not JSON)
#   t_until SECONDS CMD...      run CMD every 0.05 s until it succeeds
#                               (status 0) or SECONDS pass (status 1): how
#                               to wait for what can be observed (a lock
#                               held, a request in flight) instead of
#                               sleeping and hoping
#   t_mariadb ARGS...           the mariadb client as the application's
#                               account, on the stack's database
#   t_innodb NAME               a counter of SHOW GLOBAL STATUS (Innodb_…)
#   t_hold SQL                  a MariaDB session of its own begins a
#                               transaction and runs SQL in it (a
#                               SELECT … FOR UPDATE, an UPDATE), then
#                               keeps it open, holding what it locked, so a
#                               purchase certainly finds the row held;
#                               t_hold_end ROLLBACK|COMMIT ends it. One
#                               at a time.
#   t_missing CMD|FILE...       prints the commands not on PATH and the
#                               /paths that do not exist; status 1 if any
#   t_now_us                    microseconds since the epoch
#
# With initial stock S, sold = number of 200 answers and final = the stock
# after the run: oversold = max(0, sold − S), lost = sold − (S − final).
# An answer "unknown" (500: the sale's answer was lost, clients/db.c) may or may
# not have sold: each one can make the true lost one less than L_lost and
# the true oversold one more than L_oversold.

T_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The stack's folder (bench/stack: .run, or $LOCKLAB_RUN for a second stack).
T_RUN=${LOCKLAB_RUN:-$T_ROOT/.run}
T_BUILD=${LOCKLAB_BUILD_DIR:-$T_ROOT/build}
case $T_BUILD in /*) ;; *) T_BUILD=$T_ROOT/$T_BUILD ;; esac
export LOCKLAB_BUILD_DIR=$T_BUILD
T_STOCK=0

t_log() { printf '%s: %s\n' "${T_NAME:-test}" "$*"; }

t_until() {
    local bound=$1 i
    shift
    for ((i = 0; i < bound * 20; i++)); do
        "$@" && return 0
        sleep 0.05
    done
    return 1
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

# shellcheck disable=SC2034 # the L_* are the caller's to read
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

t_mariadb() {
    MYSQL_PWD=$LOCKLAB_MYSQL_PASSWORD mariadb -h"$LOCKLAB_MYSQL_HOST" -P"$LOCKLAB_MYSQL_PORT" \
        -u"$LOCKLAB_MYSQL_USER" "$LOCKLAB_MYSQL_DB" "$@"
}

t_innodb() {
    t_mariadb -N -e "SHOW GLOBAL STATUS LIKE '$1'" | awk '{ print $2 }'
}

# The holding session is a coprocess: the client reads its statements from
# a pipe as they come (--unbuffered: and answers at once), so its
# transaction stays open between them, and its rows stay locked, until
# t_hold_end. It prints "held" once SQL has run: t_hold returns then.
t_hold() {
    local line
    coproc T_HOLD { t_mariadb --batch --skip-column-names --unbuffered 2>&1; }
    printf 'BEGIN;\n%s\nSELECT "held";\n' "$1" >&"${T_HOLD[1]}"
    while read -r -t 60 line <&"${T_HOLD[0]}"; do
        [ "$line" = held ] && return 0
        [[ $line == ERROR* ]] && t_log "t_hold: $line"
    done
    return 1
}

t_hold_end() {
    local in=${T_HOLD[1]} out=${T_HOLD[0]} pid=$T_HOLD_PID
    printf '%s;\n' "$1" >&"$in"
    exec {in}>&- {out}<&-
    wait "$pid"
}

# Microseconds since the epoch, for timing a load from outside.
t_now_us() { echo $(($(date +%s%N) / 1000)); }

t_missing() {
    local need missing=""
    for need; do
        case $need in
            /*) [ -e "$need" ] || missing="$missing $need" ;;
            *) command -v "$need" >/dev/null || missing="$missing $need" ;;
        esac
    done
    [ -z "$missing" ] && return 0
    printf '%s\n' "${missing# }"
    return 1
}
