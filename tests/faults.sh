#!/usr/bin/env bash
# faults.sh — the fenced write's second condition, on real processes.
#
# A paused holder's late write against every fenced strategy, with and
# without ?fence=1, is the fault matrix's pause-late column now
# (tests/matrix.sh runs those cells, judged by the strategies' claims).
# What no cell of it makes certain is the window this test drives: a stale
# write that lands between the new holder's read and its write. A
# (redis-lua, fence=1) passes its checks and writes 4 s later, after its
# 3 s lease ran out; B takes the lock at 3 s, reads, holds 2 s and writes
# at 5 s: A's write, its token below B's but above any the row has seen,
# lands in B's window. A token checked on the write alone lets B overwrite
# A's sale; the condition on the count B read makes B read again and write
# again. Timing only sets the stage (a pause longer than the lease); every
# assertion is about counts, answers and the ledger.
set -u
T_NAME=faults
. "$(dirname "$0")/lib.sh"
t_setup --ledger
t_need mariadb -- "the test's product (mariadb client)" || t_done
APP0=${T_INSTANCES[0]} APP1=${T_INSTANCES[1]}

t_product 3020 >/dev/null

# ll-check reaches MariaDB as every bench tool does, from the environment
# (t_env exported the stack's settings).
check_ledger() {   # PRODUCT → sets C_json
    C_json=$("$T_BUILD/ll-check" --product "$1" --json) || true
}

echo "== a stale write between the new holder's read and its write: the count condition"
p=3020
stale=$(mktemp)
t_reset 10 "$p"
t_curl "$APP0/check/lock?lock=redis-lua&fence=1&late_ms=4000&product=$p&wait_ms=20000" > "$stale" &
sleep 0.3
b=$(t_curl "$APP1/check/lock?lock=redis-lua&fence=1&hold_ms=2000&product=$p&wait_ms=20000")
wait
a=$(cat "$stale")
rm -f "$stale"
t_log "A: $a"
t_log "B: $b"
t_ok "'$(t_jq "$a" .result) $(t_jq "$b" .result) $(t_stock "$p")' = 'sold sold 8'" \
     "both sold and the stock fell by two: nothing lost"
t_ok "'$(t_jq "$a" .remaining) $(t_jq "$b" .remaining)' = '9 8'" "B read again after A's write landed (A left 9, B 8)"
check_ledger "$p"
t_ok "'$(jq -r '"\(.lost) \(.token) \(.final_bad)"' <<< "$C_json")' = '0 0 0'" \
     "ll-check: no lost update, no stale token ($(jq .overlap <<< "$C_json") overlap, made harmless)"

t_done
