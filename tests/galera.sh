#!/usr/bin/env bash
# galera.sh — the MySQL strategies on a 3-node MariaDB Galera cluster
# (bench/stack up --galera 3), each instance on its own node, through nginx.
#
#   1. row locks do not exclude across nodes: node 1 holds SELECT … FOR
#      UPDATE on the row, node 2's SELECT … FOR UPDATE, UPDATE and COMMIT
#      go through at once, and node 1's transaction ends in 1213 (the
#      brute-force abort, which also cuts its SLEEP(30) short: on one
#      server node 2 would wait for the row and give up after 1 s): one
#      update, none lost;
#   2. the MySQL strategies (and redisson, whose guarded sale reads the
#      count on its instance's node) sell exactly: each certification
#      failure rolls the sale back and runs it again (cert_failures in
#      /stats, shown, not asserted: how many depends on the machine);
#   3. a node killed mid-run (bench/stack kill galera:3): nothing lost. The
#      accounting: the stock fell by at least the units answered sold and
#      at most those plus the answers `500 unknown` (a sale whose answer
#      died with the node's connection may or may not have committed);
#      `bench/stack up` brings the node back (a state transfer), exact again.
set -u
T_NAME=galera
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need mariadb /usr/lib/galera/libgalera_smm.so rsync -- "Galera (galera-4, rsync)" || t_done
t_setup --galera 3
STACK=$T_ROOT/bench/stack
t_ok "'${LOCKLAB_GALERA:-}' != ''" "the stack names its nodes (LOCKLAB_GALERA=${LOCKLAB_GALERA:-})"
# The nodes' folders: .run/galera, or the folder its file `home` names
# (bench/lib/stack_galera.sh: where the account mysql cannot enter .run).
GALERA_HOME=$T_RUN/galera
[[ -r $T_RUN/galera/home ]] && read -r GALERA_HOME <"$T_RUN/galera/home"
node() { mariadb --no-defaults --socket="$GALERA_HOME/$1/mysqld.sock" -u root locklab "${@:2}"; }

echo "== SELECT … FOR UPDATE on two nodes: no exclusion, the loser aborted (1213)"
# Node 1's own session must hold the row before node 2 starts: its
# transaction, found by its thread, has the row locked and its statement
# is the SLEEP. Seen on a loaded machine (CI, and beside it): node 1's
# session sleeping after its SELECT … FOR UPDATE with no transaction of
# its own left in InnoDB, as if rolled back at once, and then committing
# its UPDATE on its own (in about half the tries just after the suite's
# start, never when tried by hand). Why is not known; such a try is
# started again (ten at most), and the demonstration runs on one that
# holds the row.
# shellcheck disable=SC2317 # run through t_until
held() {
    [[ $(node 1 -N -e "SELECT COUNT(*) FROM information_schema.innodb_trx t
        JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id
        WHERE t.trx_rows_locked > 0 AND p.info LIKE 'SELECT SLEEP%'") -ge 1 ]]
}
holding=0
for try in $(seq 10); do
    t_reset 100
    id=$(node 1 -N -e "SELECT id FROM db_stock WHERE product_code = '1001' AND stock_code = '001'")
    node 1 -e "SET SESSION innodb_lock_wait_timeout = 1; BEGIN;
        SELECT count FROM db_stock WHERE id = $id FOR UPDATE; SELECT SLEEP(30);
        UPDATE db_stock SET count = count - 1 WHERE id = $id; COMMIT;" >/tmp/galera1.$$ 2>&1 &
    n1=$!
    t_until 5 held && { holding=1; break; }
    echo "  try $try: node 1's session does not hold the row; again"
    sed 's/^/    node 1: /' /tmp/galera1.$$
    sid=$(node 1 -N -e "SELECT id FROM information_schema.processlist WHERE info LIKE 'SELECT SLEEP%' LIMIT 1")
    [ -n "$sid" ] && node 1 -e "KILL $sid" 2>/dev/null
    kill "$n1" 2>/dev/null
    wait "$n1" 2>/dev/null
done
t_ok "$holding = 1" "node 1 holds the row (SELECT … FOR UPDATE) and sleeps in its transaction (try $try)"
out2=$(node 2 -N -e "SET SESSION innodb_lock_wait_timeout = 1; BEGIN;
    SELECT count FROM db_stock WHERE id = $id FOR UPDATE;
    UPDATE db_stock SET count = count - 1 WHERE id = $id; COMMIT; SELECT 'committed'" 2>&1)
t_ok "'$(tail -n 1 <<<"$out2")' = committed" "node 2 locked, wrote and committed while node 1 held the row"
wait "$n1"
t_ok "-n \"\$(grep -s 1213 /tmp/galera1.$$)\"" "node 1's transaction ended in 1213: $(grep -s ERROR /tmp/galera1.$$ | head -n 1)"
rm -f /tmp/galera1.$$
t_ok "'$(node 1 -N -e "SELECT count FROM db_stock WHERE id = $id")' = 99" "one update, none lost (99 left)"

echo "== the MySQL strategies through nginx on three nodes: exact"
S=200 R=300 C=16
for lock in mysql-update mysql-batch mysql-for-update mysql-share-mode mysql-optimistic \
    mysql-lock-table redisson; do
    t_reset $S
    t_load "lock=$lock" $R $C
    t_exact "$lock on Galera"
    t_log "$lock: $(t_stats_sum "$lock" cert_failures) certification failures for $L_sold sales"
done

echo "== galera:3 killed mid-run: nothing lost"
S=3000
t_reset $S
"$T_BUILD/ll-load" -c 32 -n $S "$LOCKLAB_URL/check/lock?lock=mysql-update" >/tmp/galera_load.$$ &
load=$!
# shellcheck disable=SC2317 # run through t_until
selling() { local c; c=$(t_stock); [[ -n $c && $c -le $((S - 300)) ]]; }
t_until 30 selling
"$STACK" kill galera:3 >/dev/null
wait "$load"
sold=$(sed -n 's/^result_sold=//p' /tmp/galera_load.$$) unknown=$(sed -n 's/^result_unknown=//p' /tmp/galera_load.$$)
sold=${sold:-0} unknown=${unknown:-0}
rm -f /tmp/galera_load.$$
final=$(node 1 -N -e "SELECT count FROM db_stock WHERE id = $id")    # instance 3's node is down
fell=$((S - final))
t_log "killed mid-run: sold=$sold unknown=$unknown, the stock fell by $fell"
t_ok "$fell -ge $sold -a $fell -le $((sold + unknown))" \
    "the stock fell by $fell: at least the $sold sold, at most those and the $unknown unknown"
t_ok "$sold -gt 0" "sales went on ($sold)"
"$STACK" up >/dev/null || { echo "stack up after the kill failed"; exit 1; }
t_reset 200
t_load "lock=mysql-update" 300 16
t_exact "mysql-update after galera:3 rejoined"
t_done
