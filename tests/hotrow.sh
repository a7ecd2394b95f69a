#!/usr/bin/env bash
# hotrow.sh — the hot row as the database sees it (issue 52): the seeds'
# FOR UPDATE with no queue (mysql-for-update-naive), FOR UPDATE NOWAIT
# (mysql-nowait) and FOR UPDATE SKIP LOCKED over K buckets
# (mysql-skip-locked), through nginx with three instances.
#
#   exact          each sells exactly S of S units to more purchases over
#                  many connections: 0 oversold, 0 lost, every answer sold
#                  or sold_out; mysql-skip-locked from S in K = 4 uneven
#                  buckets too, every bucket emptied
#   naive waits    with the row held by a session of the test's own
#                  (t_hold), a naive purchase waits for it in InnoDB
#                  (Innodb_row_lock_current_waits), and sells once the
#                  session rolls back
#   nowait         with the row held, a purchase is refused at once and
#                  retries until its deadline: lock_timeout with retries
#                  counted, nothing sold, nothing left held; once free, it
#                  sells
#   skip locked    with bucket 1 held, purchases take the other buckets
#                  (buyers spread: two held at once); then, with bucket 1
#                  holding the last unit under an uncommitted sale and the
#                  others empty, a purchase is NOT answered sold_out (the
#                  holder may roll back: lock_timeout after its retries);
#                  the holder rolls back and the next purchase sells that
#                  unit: exactly N sold from uneven buckets, no false
#                  sold-out; then sold_out, exactly
#   no orders      mysql-skip-locked refuses POST /order (one unit a
#                  purchase): 400
#
# Every race is made certain by the test's own session holding the row,
# never by timing. Nothing asserts how fast anything ran.
set -u
T_NAME=hotrow
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_setup
t_need mariadb -- "the test's own session on the hot row (mariadb client)" || t_done

P=4001              # a product of its own: nothing else sells it
t_product "$P"

# reset_b N K: N units of P in K buckets, through nginx, counters cleared.
reset_b() {
    local answer url
    T_STOCK=$1 T_PRODUCT=$P
    answer=$(t_admin -X POST "$LOCKLAB_URL/stock/reset?count=$1&product=$P&buckets=$2")
    [[ $answer == *'"result":"reset"'* ]] || t_log "reset $1 in $2 buckets: $answer"
    for url in "${T_INSTANCES[@]}"; do t_admin -X POST "$url/stats/reset" >/dev/null; done
}

# buckets_left: each bucket's count, space-separated.
buckets_left() { t_jq "$(t_curl "$LOCKLAB_URL/stock?product=$P")" '[.buckets[].count] | map(tostring) | join(" ")'; }

# buy LOCK [QUERY]: one purchase of P through nginx; its answer.
buy() { t_curl "$LOCKLAB_URL/check/lock?lock=$1&product=$P${2:+&$2}"; }

# row_waits N: at least N transactions wait for a row lock inside InnoDB.
# shellcheck disable=SC2317 # run through t_until
row_waits() { [ "$(t_innodb Innodb_row_lock_current_waits)" -ge "$1" ]; }

# held_sql WAREHOUSE: lock P's row of that warehouse, as a sale would.
held_sql() {
    printf "SELECT count FROM db_stock WHERE product_code = '%s' AND stock_code = '%s' FOR UPDATE;" \
        "$P" "$1"
}

for lock in mysql-for-update-naive mysql-nowait mysql-skip-locked; do
    echo "== $lock: 500 units, 800 purchases over 64 connections"
    t_reset 500 "$P"
    t_load "lock=$lock&product=$P" 800 64
    t_exact "$lock"
    t_ok "$L_sold_out -eq 300" "$lock: the 300 purchases past the stock are sold_out ($L_sold_out)"
done

echo "== mysql-skip-locked: 401 units in 4 uneven buckets, 600 purchases over 32 connections"
reset_b 401 4
t_ok "'$(buckets_left)' = '101 100 100 100'" "401 over 4 buckets: $(buckets_left)"
t_load "lock=mysql-skip-locked&product=$P" 600 32
t_exact "mysql-skip-locked from 4 buckets"
t_ok "'$(buckets_left)' = '0 0 0 0'" "every bucket emptied ($(buckets_left))"
for n in 5 3; do
    echo "== mysql-skip-locked: exactly $n purchases at once for $n units in 4 buckets"
    reset_b "$n" 4
    t_load "lock=mysql-skip-locked&product=$P" "$n" "$n"
    t_ok "$L_sold -eq $n -a $L_requests -eq $n" \
         "all $n answered sold, no false sold-out ($L_sold sold, $L_sold_out sold_out, $L_lock_timeout timeouts)"
    t_ok "'$L_final $L_oversold $L_lost' = '0 0 0'" "0 left, 0 oversold, 0 lost"
done

echo "== mysql-for-update-naive: the row held, a purchase waits for it inside InnoDB"
t_reset 10 "$P"
t_hold "$(held_sql 001)" || t_log "the test's session did not get the row"
out=$(mktemp)
buy mysql-for-update-naive > "$out" &
waiter=$!
waits=0
t_until 20 row_waits 1 && waits=1
t_ok "$waits = 1" "the purchase waits for the held row inside InnoDB (a row lock wait)"
t_hold_end ROLLBACK
wait "$waiter"
t_ok "'$(t_jq "$(cat "$out")" .result) $(t_stock "$P")' = 'sold 9'" \
     "the session rolled back: the purchase sold (9 left)"
rm -f "$out"

echo "== mysql-nowait: the row held, refused at once and retried until the deadline"
t_reset 10 "$P"
t_hold "$(held_sql 001)" || t_log "the test's session did not get the row"
answer=$(buy mysql-nowait wait_ms=600)
t_ok "'$(t_jq "$answer" .result)' = lock_timeout" "held: lock_timeout within its 600 ms wait ($(t_jq "$answer" .error))"
retries=$(t_stats_sum mysql-nowait retries)
t_ok "$retries -ge 1" "the refused tries were retried, counted in /stats as the strategy's retries ($retries)"
t_ok "$(t_innodb Innodb_row_lock_current_waits) = 0" "no transaction waits inside InnoDB (NOWAIT)"
t_hold_end ROLLBACK
answer=$(buy mysql-nowait)
t_ok "'$(t_jq "$answer" .result) $(t_stock "$P")' = 'sold 9'" \
     "once free: sold, and the refused tries left nothing held or changed (9 left)"

# free_of FROM TO N: N of P's buckets FROM..TO (warehouses) have stock
# and nobody holds them (a probe of its own: SKIP LOCKED, in autocommit).
# shellcheck disable=SC2317 # run through t_until
free_of() {
    [ "$(t_mariadb -N -e "SELECT COUNT(*) FROM db_stock WHERE product_code = '$P' AND stock_code BETWEEN '$1' AND '$2' AND count >= 1 FOR UPDATE SKIP LOCKED")" = "$3" ]
}

echo "== mysql-skip-locked: bucket 1 held, two buyers at once spread over the others"
reset_b 6 3                         # 2 2 2
t_hold "$(held_sql 001)" || t_log "the test's session did not get bucket 1"
out=$(mktemp)
buy mysql-skip-locked hold_ms=8000 > "$out" &
first=$!
t_until 20 free_of 002 003 1 || t_log "the first buyer never held bucket 2 or 3"
b=$(buy mysql-skip-locked)
t_ok "'$(t_jq "$b" .result)' = sold" "the second buyer sold while the first held its bucket"
t_ok "'$(kill -0 "$first" 2>/dev/null && echo holding)' = holding" "... and the first still held it"
wait "$first"
t_ok "'$(t_jq "$(cat "$out")" .result) $(buckets_left)' = 'sold 2 1 1'" \
     "two sales at once, bucket 1 held: one from each other bucket ($(buckets_left))"
rm -f "$out"
t_hold_end ROLLBACK

echo "== mysql-skip-locked: the last unit under a sale that may roll back is not sold out"
reset_b 2 3                         # 1 1 0: uneven, one bucket empty from the start
t_ok "'$(buckets_left)' = '1 1 0'" "2 units over 3 buckets: $(buckets_left)"
t_hold "$(held_sql 001) UPDATE db_stock SET count = 0 WHERE product_code = '$P' AND stock_code = '001';" ||
    t_log "the test's session did not get bucket 1"
a=$(buy mysql-skip-locked)
t_ok "'$(t_jq "$a" .result)' = sold" "bucket 2's unit sold beside the held bucket 1"
c=$(buy mysql-skip-locked wait_ms=600)
t_ok "'$(t_jq "$c" .result)' = lock_timeout" \
     "bucket 1 held, its sale uncommitted, the others empty: not sold_out but lock_timeout ($(t_jq "$c" .result): $(t_jq "$c" .error))"
retries=$(t_stats_sum mysql-skip-locked retries)
t_ok "$retries -ge 1" "it read the committed counts and tried again ($retries retries)"
t_hold_end ROLLBACK                 # the holder's sale rolls back: the unit is there
d=$(buy mysql-skip-locked)
t_ok "'$(t_jq "$d" .result) $(buckets_left)' = 'sold 0 0 0'" \
     "the holder rolled back: the next purchase sold bucket 1's unit ($(buckets_left))"
e=$(buy mysql-skip-locked)
t_ok "'$(t_jq "$e" .result)' = sold_out" "then sold_out: every committed count 0"
sold=$(t_stats_sum mysql-skip-locked sold)
t_ok "$sold = 2" "exactly the 2 units sold, from uneven buckets ($sold)"

echo "== mysql-skip-locked: an order of several units is refused"
answer=$(t_curl -w '\n%{http_code}' -X POST "$LOCKLAB_URL/order?lock=mysql-skip-locked&product=$P&order_no=hotrow-1&qty=2")
t_ok "'${answer##*$'\n'}' = 400" "POST /order with qty=2: 400 ($(t_jq "${answer%$'\n'*}" .error | cut -c1-80))"

reset_b 10 1
t_done
