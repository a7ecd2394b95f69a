# shellcheck shell=bash
# tests/lib.sh — what every integration test shares. Source it, then use
# bench/lib/run.sh's calls on the stack (t_env, t_admin, t_reset, t_load,
# t_load_urls, t_stock, t_stats_sum, t_held, t_drained, t_product, t_jq,
# t_until, t_now_us: it lists them) and these:
#
#   t_setup [UP-FLAGS]          the stack is up as the test needs it (below),
#                               env loaded
#   t_exact NAME                sold == S, final == 0, oversold == lost == 0,
#                               every request answered sold or sold_out
#                               (so none unknown)
#   t_ok COND MSG               one assertion (COND is a `test` expression)
#   t_skip MSG                  a part that cannot run here: a dependency is
#                               missing (see below)
#   t_need CMD|FILE... -- MSG   t_skip MSG unless every command is on PATH
#                               and every /path exists; its status says which
#   t_zk_sessions               the session timeouts the ZooKeeper servers
#                               granted their clients (`cons`), each once:
#                               "to=6000", "to=2000 to=6000"
#   t_done                      "N passed, M failed, K skipped"; exit status
#
# Exit status: 1 when an assertion failed, else 77 when a part was skipped
# (ctest's SKIP_RETURN_CODE: the test shows as "Skipped", not "Passed"),
# else 0. Under CI (CI=true) nothing may be skipped: t_skip is a failure,
# so a missing dependency or a test client that does not build fails CI.
#
# t_exact asks for no "unknown" answer (bench/lib/run.sh says how each
# widens the counts). Tests run with `set -u`; a failed assertion does not
# stop the script, so one run reports every broken case.

# shellcheck source=../bench/lib/run.sh
. "$(dirname "${BASH_SOURCE[0]}")/../bench/lib/run.sh"
T_PASSED=0
T_FAILED=0
T_SKIPPED=0

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
    local -a needs=()
    local missing
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        needs+=("$1")
        shift
    done
    missing=$(t_missing "${needs[@]}") && return 0
    t_skip "${2:-a dependency}: missing $missing"
    return 1
}

t_zk_sessions() {
    local hp
    for hp in ${LOCKLAB_ZK//,/ }; do
        exec 3<> "/dev/tcp/${hp%:*}/${hp##*:}" || continue
        printf cons >&3
        grep -o 'to=[0-9]*' <&3
        exec 3<&-
    done | sort -u | paste -sd' '
}

t_done() {
    printf '%s: %d passed, %d failed, %d skipped\n' "${T_NAME:-test}" \
        "$T_PASSED" "$T_FAILED" "$T_SKIPPED"
    [ "$T_FAILED" -eq 0 ] || exit 1
    [ "$T_SKIPPED" -eq 0 ] || exit 77
    exit 0
}

# t_setup [UP-FLAGS]: `bench/stack up` (which starts only what is missing
# or changed) as this test needs the stack: the topology of the last `up`
# (the test topology, tests/CMakeLists.txt), the fault switches on, Redis
# server 1's append-only file synced every second, the instances' own
# ZooKeeper sessions (not up --seed-timing's) granted as asked (not up
# --zk-max-session-ms's), and none of the
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
        --no-redis-replica --redis-cluster 0 --no-read-replica --galera 0 --no-prometheus --zk-session-ms 0 --zk-max-session-ms 0 "$@" >/dev/null || { echo "stack up $* failed"; exit 1; }
    t_env
}

t_exact() {
    local name=$1
    t_ok "$L_sold -eq $T_STOCK" "$name sells exactly $T_STOCK"
    t_ok "'$L_final' = 0" "$name leaves 0 in stock"
    t_ok "'$L_oversold' = 0 -a '$L_lost' = 0" "$name: 0 oversold, 0 lost updates"
    t_ok "$((L_sold + L_sold_out)) -eq $L_requests" \
         "$name: every request answered sold or sold_out"
}
