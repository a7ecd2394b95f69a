#!/usr/bin/env bash
# buckets.sh — a hot item split across K buckets (issue 33, part 4):
# mysql-buckets (K rows of db_stock) and redis-buckets (K Redis stocks,
# each applied to its own row), through nginx with three instances.
#
#   exact         S units in K = 4 buckets, S not divisible by K, more
#                 purchases than units over many connections: sold = S,
#                 the total 0 in every bucket, 0 oversold, 0 lost (for
#                 redis-buckets the three stores of each bucket add up
#                 once the streams are drained)
#   spread        half the units sold: every bucket gave some
#   no false      exactly N purchases for N units, as many at once as
#   sold-out      there are units, in buckets of 2, 1, 1, 1 units or with
#                 one bucket empty from the start (N < K): each answer is
#                 200 sold; then every further purchase is 409 sold_out.
#                 A purchase refused while a unit was left would show here
#                 whatever the timing: nothing else is sold meanwhile
#   reset         buckets=0, 65, x: 400 naming the parameter; buckets=1
#                 brings back the one row (GET /stock without buckets, the
#                 other rows emptied) and mysql-update on it, exact
#
# Nothing asserts how fast anything ran.
set -u
T_NAME=buckets
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_setup

K=4

# reset_b N K: N units in K buckets, through nginx, and every instance's
# counters cleared.
reset_b() {
    local url answer
    T_STOCK=$1 T_PRODUCT=1001
    answer=$(t_admin -X POST "$LOCKLAB_URL/stock/reset?count=$1&buckets=$2")
    [[ $answer == *'"result":"reset"'* ]] || t_log "reset $1 in $2 buckets: $answer"
    for url in "${T_INSTANCES[@]}"; do t_admin -X POST "$url/stats/reset" >/dev/null; done
}

# settle LOCK: for redis-buckets, wait (30 s at most) until the consumers
# have applied every bucket's stream, then take Redis's total as the
# final count and check the stores add up. Sets STOCK_JSON. (The answer
# checked is the one after the first that says drained, t_drained; CI
# once saw rows 49 51 99 99 beside a drained Redis whose total was 200.)
settle() {
    if [ "$1" != redis-buckets ]; then
        STOCK_JSON=$(t_curl "$LOCKLAB_URL/stock")
        return 0
    fi
    STOCK_JSON=$(t_drained "product=${T_PRODUCT:-1001}")
    L_final=$(t_jq "$STOCK_JSON" .redis.count)
    L_oversold=$((L_sold > T_STOCK ? L_sold - T_STOCK : 0))
    L_lost=$((L_sold - (T_STOCK - L_final)))
    t_ok "'$(t_jq "$STOCK_JSON" '"\(.redis.reconciled) \(.redis.drained) \(.redis.mysql.count)"')' = 'true true $(t_jq "$STOCK_JSON" .count)'" \
         "$1: every bucket's stores add up, drained, MariaDB's total = Redis's"
}

# buckets_left: each bucket's count, space-separated.
buckets_left() { t_jq "$STOCK_JSON" '[.buckets[].count] | map(tostring) | join(" ")'; }

for lock in mysql-buckets redis-buckets; do
    echo "== $lock: 401 units in $K buckets, 600 purchases over 32 connections"
    reset_b 401 $K
    STOCK_JSON=$(t_curl "$LOCKLAB_URL/stock")
    t_ok "'$(buckets_left)' = '101 100 100 100'" "401 spread over $K buckets: $(buckets_left)"
    t_load "lock=$lock" 600 32
    settle $lock
    t_exact "$lock"
    t_ok "'$(buckets_left)' = '0 0 0 0'" "$lock: every bucket empty ($(buckets_left))"
    t_ok "$L_sold_out -eq 199" "$lock: the 199 purchases past the stock are sold_out ($L_sold_out)"

    echo "== $lock: half the units sold, from every bucket"
    reset_b 400 $K
    t_load "lock=$lock" 200 16
    settle $lock
    t_ok "$L_sold -eq 200" "$lock: 200 sold ($L_sold)"
    read -r b1 b2 b3 b4 <<< "$(buckets_left)"
    t_ok "$b1 -lt 100 -a $b2 -lt 100 -a $b3 -lt 100 -a $b4 -lt 100 -a $((b1 + b2 + b3 + b4)) -eq 200" \
         "$lock: every bucket sold some ($b1 $b2 $b3 $b4 left of 100 each)"

    for n in 5 3 64; do
        echo "== $lock: exactly $n purchases, all at once, for $n units in $K buckets"
        reset_b $n $K
        t_load "lock=$lock" $n $n
        settle $lock
        t_ok "$L_sold -eq $n -a $L_requests -eq $n" \
             "$lock: all $n answered sold, no false sold-out ($L_sold sold, $L_sold_out sold_out)"
        t_ok "'$L_final $L_oversold $L_lost' = '0 0 0'" "$lock: 0 left, 0 oversold, 0 lost"
        t_load "lock=$lock" 12 12
        settle $lock
        t_ok "$L_sold_out -eq 12 -a $L_sold -eq 0 -a '$L_final' = 0" \
             "$lock: then 12 more, all sold_out ($L_sold_out), still 0 left"
    done
done

echo "== a bad buckets value: 400 naming the parameter"
for bad in 0 65 x; do
    answer=$(t_admin -w '\n%{http_code}' -X POST "$LOCKLAB_URL/stock/reset?count=10&buckets=$bad")
    t_ok "'${answer##*$'\n'} $(t_jq "${answer%$'\n'*}" .parameter)' = '400 buckets'" \
         "buckets=$bad: 400, parameter buckets ($(t_jq "${answer%$'\n'*}" .error))"
done

echo "== back to one bucket: the seeds' row, and mysql-update on it"
reset_b 50 1
STOCK_JSON=$(t_curl "$LOCKLAB_URL/stock")
t_ok "'$(t_jq "$STOCK_JSON" '"\(.count) \(.buckets)"')' = '50 null'" \
     "buckets=1: GET /stock is one row of 50, no buckets"
t_load "lock=mysql-update" 80 16
t_exact "mysql-update after the buckets"
reset_b 50 $K
STOCK_JSON=$(t_curl "$LOCKLAB_URL/stock")
t_ok "'$(buckets_left)' = '13 13 12 12'" "and $K buckets again: $(buckets_left)"
reset_b 5000 1
t_done
