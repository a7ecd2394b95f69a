#!/usr/bin/env bash
# pitfalls.sh — seed 001's pitfalls, each a teaching strategy, against the
# real stack (nginx, three instances, MariaDB):
#
#   mutex-tx              the process-wide lock released before the
#                         transaction commits (@Transactional around a
#                         synchronized method): lost updates on ONE instance
#   mysql-update-noindex  the conditional UPDATE whose WHERE no index
#                         serves: selling product A locks product B's row
#   mysql-share-mode      LOCK IN SHARE MODE, then UPDATE: deadlocks
#                         (MariaDB error 1213), counted, and an exact count
#
# The exact strategies sell S = 200 units to R = 1000 purchases over 64
# connections. The flaws are made certain, not likely: a pause between
# mutex-tx's unlock and its COMMIT (late_ms), a transaction held open after
# the unindexed UPDATE (hold_ms) while InnoDB's own lock tables are read.
# No assertion depends on how fast anything runs.
set -u
T_NAME=pitfalls
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_setup

S=200 R=1000 C=64
APP0=${T_INSTANCES[0]} APP1=${T_INSTANCES[1]}

echo "== exact counts through nginx, three instances"
for lock in mysql-update-noindex mysql-share-mode; do
    t_reset $S
    t_load "lock=$lock" $R $C
    t_exact "$lock"
done

echo "== mysql-share-mode: shared locks deadlock when they both want to write"
deadlocks=$(t_stats_sum mysql-share-mode deadlocks)
retries=$(t_stats_sum mysql-share-mode retries)
t_ok "$deadlocks -gt 0" "mysql-share-mode: $deadlocks deadlocks (1213) in $R purchases, counted in /stats"
t_ok "$retries -ge $deadlocks" "mysql-share-mode: every deadlocked purchase was retried ($retries retries)"
# The exact count above is the other half of the answer: the survivor of
# each deadlock read a value nobody could change under its shared lock.

echo "== mutex-tx: the lock is released before the transaction commits"
# One instance, two purchases: A unlocks, then waits 2.5 s before its COMMIT
# (late_ms); B takes the mutex meanwhile, reads the count A has not
# committed, and writes the same value A wrote. B is sent once A is in the
# instance (its /stats in_flight): A's read, write and unlock are then a
# few milliseconds away, B's whole purchase well inside the 2.5 s.
# shellcheck disable=SC2317 # run through t_until
in_flight() { [ "$(t_curl "$1/stats" | jq -r .in_flight)" -ge "$2" ]; }
t_reset 10
t_curl "$APP0/check/lock?lock=mutex-tx&late_ms=2500" > "$T_ROOT/.run/pitfalls-a.json" &
t_until 30 in_flight "$APP0" 1 || t_log "A never reached app:${APP0##*:}"
b=$(t_jq "$(t_curl "$APP0/check/lock?lock=mutex-tx")" '"\(.result) \(.remaining)"')
wait
a=$(t_jq "$(cat "$T_ROOT/.run/pitfalls-a.json")" '"\(.result) \(.remaining)"')
rm -f "$T_ROOT/.run/pitfalls-a.json"
t_ok "'$a $b $(t_stock)' = 'sold 9 sold 9 9'" "mutex-tx: both sold, both left 9, the stock fell by one: a lost update on one instance (A: $a, B: $b)"
# Under load, with no pause at all, on one instance: mutex is exact there,
# mutex-tx is not (every hand-over of the mutex lands in a COMMIT's window).
t_reset $S
t_load "lock=mutex" $R $C "$APP0"
t_exact "mutex on one instance"
t_reset $S
t_load "lock=mutex-tx" $R $C "$APP0"
t_ok "'$L_lost' != unknown -a '$L_lost' != 0" "mutex-tx on one instance: $L_lost lost updates in $L_sold sales"

echo "== mysql-update-noindex: selling one product locks another's row"
if t_need mariadb -- "InnoDB's lock tables (mariadb client)"; then
    # The stack's admin login (bench/stack: root through the socket, as the
    # user that started it) may read InnoDB's lock tables; locklab may not.
    admin() { mariadb --no-defaults --socket="$LOCKLAB_MYSQL_SOCKET" -u "$(id -un)" -N locklab -e "$1"; }
    id_b=$(admin "SELECT id FROM db_stock WHERE product_code = '1002' AND stock_code = '001'")
    row_lock_waits() { admin "SHOW GLOBAL STATUS LIKE 'Innodb_row_lock_waits'" | awk '{ print $2 }'; }
    # shellcheck disable=SC2317 # run through t_until
    trx_open() { [ "$(admin 'SELECT COUNT(*) FROM information_schema.innodb_trx')" -ge 1 ] 2>/dev/null; }
    waits_for() {   # the rows B's transaction waits for, while A holds
        admin "SELECT l.lock_data FROM information_schema.INNODB_LOCK_WAITS w
               JOIN information_schema.INNODB_LOCKS l ON l.lock_id = w.requested_lock_id"
    }
    # A holds its transaction open 5 s after its UPDATE on 1001; B buys 1002
    # meanwhile with mysql-for-update, whose SELECT … FOR UPDATE takes 1002's
    # row by its primary key. Watched until B answers.
    blocked() {   # A's strategy → SEEN (B waited for its own row) and B's answer
        local file="$T_ROOT/.run/pitfalls-b.json" tries=0
        t_reset 10 1002
        t_reset 10 1001
        t_curl "$APP0/check/lock?lock=$1&product=1001&hold_ms=5000" >/dev/null &
        # B once A's transaction is open (InnoDB lists it), inside its 5 s.
        t_until 30 trx_open || t_log "A's transaction never showed"
        : > "$file"
        w0=$(row_lock_waits)
        t_curl "$APP1/check/lock?lock=mysql-for-update&product=1002" > "$file" &
        SEEN=no
        while [ ! -s "$file" ] && [ $tries -lt 200 ]; do
            waits_for | grep -qx "$id_b" && SEEN=yes
            sleep 0.05
            tries=$((tries + 1))
        done
        # A sample can miss the wait on a loaded machine; InnoDB's count of
        # row lock waits cannot (B is the only one that may wait: A runs
        # alone, nothing else runs), whatever the machine's speed.
        wait
        [ "$(row_lock_waits)" -gt "$w0" ] && SEEN=yes
        B=$(t_jq "$(cat "$file")" .result)
        rm -f "$file"
    }
    blocked mysql-update-noindex
    t_ok "$SEEN = yes" "mysql-update-noindex on 1001 holds 1002's row: B's sale waited for it in InnoDB"
    t_ok "$B = sold -a $(t_stock 1002) = 9" "B sold once A's transaction ended ($B)"
    blocked mysql-for-update
    t_ok "$SEEN = no -a $B = sold" "with the row's own lock (mysql-for-update on 1001) B never waits"
fi

t_done
