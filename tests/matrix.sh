#!/usr/bin/env bash
# matrix.sh — the fault matrix's cells that show what the pause and the
# partition tests showed by hand, judged by the oracle, and the oracle
# itself caught on a false claim.
#
# One run of bench/compare --scenario matrix (bench/lib/compare_matrix.sh)
# on the stack this test sets up as the matrix wants it (so the scenario
# changes nothing and puts nothing back):
#
#   pause-late × every strategy GET /locks calls fenced, with and without
#     ?fence=1: a holder A on instance 0, past its checks (?late_ms), is
#     paused past its lease while B on instance 1 takes the lock and sells
#     (tests/faults.sh did this by hand before). With the fence, no cell
#     loses a unit and every lock service's token refuses a late write at
#     least once (409 fenced); without it the leased locks (redis-lua,
#     redisson, zk-ephemeral, curator, mysql-lock-table) lose updates, and
#     ll-check finds the loss and the overlap in the ledger alone.
#   partition × redisson and curator: A, in its critical section before
#     its checks, is cut off from Redis or ZooKeeper past its lease while it
#     still reaches MariaDB (tests/partition.sh did it by hand before): A
#     refuses to write (lock_lost), B sells, nothing is lost, the cut heals
#     and the instance sells again after it.
#
# The matrix's own verdict must be "every claim held" (exit 0). Then the
# same cells judged as if redis-lua did not list pause-late (ll-report
# matrix --drop-claim, the test-only switch of the judge) must fail it,
# naming the strategy and the fault: a false claim fails the run. Last,
# the lessons of faults from outside (bench/lesson --faults), on the
# stack already in their variants (namespaces, Redis under libfaketime).
set -u
T_NAME=matrix
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
    t_skip "the matrix needs root (network namespaces, a cgroup)"
    t_done
fi
t_need nft ss -- "the matrix's faults (nftables, ss)" || t_done
# The matrix's base topology (bench/lib/compare_matrix.sh, mx_topology):
# its own `up` then finds nothing to do, and puts nothing back.
t_setup --ledger --lease-ms 10000 --redis-faketime --redis 5 --zk 3 --threads 64 --netns \
    --redis-replica --zk-max-session-ms 0
OUT=$(mktemp -d "$T_BUILD/matrix-test.XXXXXX")

STRATS=$(t_curl "$LOCKLAB_URL/locks" | jq -r '[.strategies[] | select(.fenced) | .name] | join(",")')
t_ok "$(tr ',' '\n' <<< "$STRATS" | wc -l) -ge 10" "GET /locks names the fenced strategies ($STRATS)"
echo "== bench/compare --scenario matrix --faults pause-late (the fenced strategies), partition"
# partition's cells: redisson's and curator's; pause-late's: every fenced one.
"$T_ROOT/bench/compare" --scenario matrix --strategies "$STRATS" --faults pause-late --out "$OUT" \
    > "$OUT/pause.log" 2>&1
rc_pause=$?
"$T_ROOT/bench/compare" --scenario matrix --strategies redisson,curator --faults partition --out "$OUT" \
    > "$OUT/partition.log" 2>&1
rc_part=$?
grep -E '^\[round|claims|^- ' "$OUT"/*.log | sed 's/\r.*\x1b\[K/ /' | sed 's/^/      /'
mapfile -t RUNS < <(find "$OUT" -mindepth 1 -maxdepth 1 -type d -name '*-matrix' | sort)
t_ok "${#RUNS[@]} = 2" "both runs left their results (${RUNS[*]##*/})"
PAUSE=${RUNS[0]}/report.json PART=${RUNS[1]}/report.json
t_ok "$rc_pause = 0" "pause-late: every claim held (the matrix's verdict)"
t_ok "$rc_part = 0" "partition: every claim held (the matrix's verdict)"

# cell REPORT STRATEGY VARIANT FAULT FILTER: one value of a cell.
cell() {
    jq -r --arg s "$2" --arg v "$3" --arg f "$4" \
        ".rows[] | select(.strategy == \$s and .variant == \$v) | .cells[] | select(.fault == \$f) | $5" "$1"
}

echo "== pause-late with the fence: nothing lost, every service's token refused a late write"
lost=$(jq '[.rows[] | select(.variant == "fence") | .cells[] | select(.fault == "pause-late") | .lost + .oversold] | add' "$PAUSE")
t_ok "'$lost' = 0" "no unit lost or oversold in any fenced cell"
for svc in redis redisson redisson-all zookeeper mysql etcd; do
    n=$(jq -r --arg svc "$svc" --slurpfile locks "${RUNS[0]}/raw/locks.json" '
        [$locks[0].strategies[] | select(.fence == $svc) | .name] as $names
        | [.rows[] | select(.variant == "fence" and (.strategy as $s | $names | index($s)))
           | .cells[] | select(.fault == "pause-late") | .fenced] | add // 0' "$PAUSE")
    t_ok "$n -ge 1" "a late write was refused by a $svc token ($n)"
done
echo "== pause-late without it: the leased locks lose an update, and ll-check sees it"
for s in redis-lua redisson zk-ephemeral curator mysql-lock-table; do
    idx=$(cell "$PAUSE" "$s" - pause-late .cell)
    t_ok "$(cell "$PAUSE" "$s" - pause-late .lost) -ge 1" "$s: lost updates without the fence (cell $idx, a listed fault)"
    t_ok "'$(jq -r '"\(.lost >= 1) \(.overlap >= 1)"' "${RUNS[0]}/raw/$idx.check.json")' = 'true true'" \
         "$s: ll-check names the lost update and the overlap from the ledger alone"
done

echo "== partition: the cut-off holder refuses, the other instance sells"
for s in redisson curator; do
    idx=$(cell "$PART" "$s" - partition .cell)
    a=$(cut -d' ' -f2- "${RUNS[1]}/raw/$idx.a" | jq -r .result)
    b=$(cut -d' ' -f2- "${RUNS[1]}/raw/$idx.b" | jq -r .result)
    t_ok "'$a $b' = 'lock_lost sold'" "$s: A refused to write (lock_lost), B sold (cell $idx)"
    t_ok "'$(cell "$PART" "$s" - partition '"\(.lost) \(.overlap)"')' = '0 0'" "$s: nothing lost, no overlap in the ledger"
    t_ok "$(cell "$PART" "$s" - partition .next_sale_ms) -ge 0" "$s: sales again after the cut healed"
done
t_ok "'$("$T_ROOT/bench/fault" status | grep -c cut)' = 0" "the cuts healed"

echo "== a false claim fails the matrix"
out=$("$T_BUILD/ll-report" matrix "${RUNS[0]}" --drop-claim redis-lua:pause-late 2>&1)
rc=$?
t_ok "$rc = 1" "judged as if redis-lua did not list pause-late, the matrix fails"
t_ok "$(grep -c '^- redis-lua under pause-late: ' <<< "$out") = 1" "naming the strategy and the fault"
"$T_BUILD/ll-report" matrix "${RUNS[0]}" >/dev/null 2>&1
t_ok "$? = 0" "judged again with its claims, it holds"
rm -rf "$OUT"

echo "== the lessons of faults from outside (bench/lesson --faults)"
"$T_ROOT/bench/lesson" --faults | grep -E '^==|^   [a-z-]+: |NOT SHOWN|FIX FAILED| sold +[0-9]' | sed 's/^/      /'
t_ok "${PIPESTATUS[0]} = 0" "cpu-starvation, asymmetric-partition, clock-jump, session-expired: each failure showed and its fix held"
# The test topology's lease and slots again (t_setup leaves them as they
# are): the suites after this one count on 3 s leases.
"$T_ROOT/bench/stack" up --lease-ms 3000 --threads 0 --no-redis-faketime >/dev/null ||
    t_ok "1 = 0" "bench/stack up --lease-ms 3000 --threads 0 --no-redis-faketime"
t_done
