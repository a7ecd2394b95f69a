#!/usr/bin/env bash
# foundation.sh — the local and MySQL strategies through nginx with three
# instances, bad input, and MariaDB going away in the middle of a run.
#
# S = 200 units, R = 1000 purchases over 64 connections. The races of the
# teaching strategies are made certain, not likely, with the documented
# fault switch ?hold_ms=2 (a 2 ms sleep between the read and the write):
# with 64 concurrent buyers every sale then overlaps another.
set -u
T_NAME=foundation
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_setup

S=200 R=1000 C=64

echo "== exact strategies, three instances behind nginx"
for lock in mysql-update mysql-batch mysql-for-update mysql-optimistic \
            mysql-optimistic-recursive mysql-lock-table; do
    t_reset $S
    t_load "lock=$lock" $R $C
    t_exact "$lock"
done

echo "== mysql-optimistic: races lost to another instance are retried, exactly"
# hold_ms=2 keeps every attempt's read 2 ms from its write, so the three
# instances' attempts overlap and most of them lose: the retries, at once
# with the row read behind the lost write and then after a backoff, must
# still sell every unit once.
t_reset $S
t_load "lock=mysql-optimistic&hold_ms=2" 400 $C
t_exact "mysql-optimistic with hold_ms=2"
retries=0
for url in "${T_INSTANCES[@]}"; do
    retries=$((retries + $(t_curl "$url/stats" | jq -r '.strategies["mysql-optimistic"].retries')))
done
t_ok "$retries -gt 0" "mysql-optimistic with hold_ms=2: lost races were retried ($retries)"

echo "== mysql-batch: batches really form, and the last units sell one by one"
for stock in 1 37 1999; do
    t_reset $stock
    t_load "lock=mysql-batch" 3000 $C
    t_exact "mysql-batch with $stock units"
done
t_reset 5000                 # nothing sells out: every statement sells
t_load "lock=mysql-batch" 3000 $C
ops=0 sold=0
for url in "${T_INSTANCES[@]}"; do
    read -r o s <<< "$(t_curl "$url/stats" | jq -r '.strategies["mysql-batch"] | "\(.backend_ops) \(.sold)"')"
    ops=$((ops + o)) sold=$((sold + s))
done
t_ok "$sold -gt 0 -a $ops -lt $sold" "mysql-batch: fewer statements ($ops) than sales ($sold)"
t_reset $S
t_load "lock=mysql-batch&wait_ms=0" $R $C
t_ok "$L_sold -le $S -a $((L_sold + L_sold_out + L_lock_timeout)) -eq $R" \
     "mysql-batch with no wait: every purchase sold, sold out or timed out in line"
t_ok "'$L_oversold $L_lost' = '0 0'" "mysql-batch with no wait: 0 oversold, 0 lost updates"

echo "== none loses updates"
t_reset $S
t_load "lock=none&hold_ms=2" $R $C
t_ok "$L_lost -gt 0" "none: lost updates ($L_lost)"
t_ok "$L_oversold -gt 0" "none: oversold ($L_oversold)"

echo "== mutex: exact on one instance, broken on three"
t_reset $S
t0=$(t_now_us)
t_load "lock=mutex&hold_ms=2" $R $C "${T_INSTANCES[0]}"
wall=$(($(t_now_us) - t0))
t_exact "mutex on one instance"
# /stats times every hold, acquired to released: each of the S sales held
# the mutex for its 2 ms sleep at least, and one mutex is never held twice
# at once, so the holds add up to no more than the load's wall time (it was
# 95 % of it here; 10 % more is allowed for holds timed from their holder's
# side: a holder preempted between its unlock and its clock still counts).
t_held mutex "${T_INSTANCES[0]}"
t_ok "$H_holds -eq $R" "mutex on one instance: every purchase held the lock once ($H_holds)"
t_ok "$H_held_us -ge $((S * 2000)) -a $H_held_us -le $((wall * 11 / 10))" \
     "mutex on one instance: held ${H_held_us} us in all, at least $S x 2 ms, about the wall time ($wall us) at most"
t_reset $S
t_load "lock=mutex&hold_ms=2" $R $C
t_ok "$L_lost -gt 0" "mutex on three instances: lost updates ($L_lost)"
# Three mutexes, one per instance, are held at once: with nothing selling
# out, the holds add up to more than the wall time, which one lock held by
# one holder at a time cannot do (about three times it: each instance
# holds its own through its third of the load). The hold is 100 ms, so
# that what a sale spends outside it (the hand-over to the next waiter,
# HTTP) is small beside it on any machine: with 2 ms holds the ratio fell
# to 1.2 under a load of 13 on the 2 cores, and the assertion asked 1.5
# of a machine's speed; at 100 ms it takes gaps of 100 ms a sale to fall
# below 1.5. 90 purchases over 64 connections: about 30 an instance, 3 s.
t_reset 100000
t0=$(t_now_us)
t_load "lock=mutex&hold_ms=100" 90 $C
wall=$(($(t_now_us) - t0))
t_held mutex
t_ok "$H_holds -eq 90 -a $H_held_us -gt $((wall * 3 / 2))" \
     "mutex on three instances: held ${H_held_us} us in ${wall} us of wall time, more than one holder at once"

echo "== re-entry within one request"
t_reset 10
for lock in mutex mysql-lock-table; do
    code=$(t_curl -o /dev/null -w '%{http_code}' "$LOCKLAB_URL/check/lock?lock=$lock&reentry=3")
    t_ok "$code = 200" "$lock re-enters three deep"
done
t_ok "$(t_stock) -eq 8" "two re-entrant sales took two units"
rows=$(MYSQL_PWD=$LOCKLAB_MYSQL_PASSWORD mariadb -h127.0.0.1 -P"$LOCKLAB_MYSQL_PORT" \
       -u"$LOCKLAB_MYSQL_USER" "$LOCKLAB_MYSQL_DB" -N -e 'SELECT COUNT(*) FROM db_lock')
t_ok "$rows -eq 0" "every db_lock row was released"

echo "== bad input: 4xx, JSON reason, stock untouched"
t_reset 50
check() {   # expected-code description url [curl args]
    local want=$1 what=$2 url=$3 body code
    shift 3
    body=$(t_curl -w '\n%{http_code}' "$@" "$url")
    code=${body##*$'\n'}
    body=${body%$'\n'*}
    t_ok "$code = $want" "$what -> $want"
    t_ok "'$(t_jq "$body" '.error | type')' = string" "$what: a JSON reason (got: ${body:0:80})"
}
long=$(head -c 3000 /dev/zero | tr '\0' a)
check 400 "unknown strategy"   "$LOCKLAB_URL/check/lock?lock=nope"
check 400 "unknown product"    "$LOCKLAB_URL/check/lock?product=424242"
check 400 "SQL-looking product" "$LOCKLAB_URL/check/lock?product=1001%27%20OR%20%271%27=%271"
check 400 "SQL-looking product 2" "$LOCKLAB_URL/check/lock?product=1001;DROP%20TABLE%20db_stock"
check 400 "unknown parameter"  "$LOCKLAB_URL/check/lock?lokc=none"
check 400 "malformed reentry"  "$LOCKLAB_URL/check/lock?reentry=x"
check 400 "reentry too deep"   "$LOCKLAB_URL/check/lock?reentry=99"
check 400 "parameter twice"    "$LOCKLAB_URL/check/lock?lock=none&lock=mutex"
check 414 "over-long query"    "$LOCKLAB_URL/check/lock?lock=$long"
AUTH=(-H @"$T_RUN/secrets/admin-header")
check 400 "negative count"     "$LOCKLAB_URL/stock/reset?count=-5" -X POST "${AUTH[@]}"
check 400 "non-numeric count"  "$LOCKLAB_URL/stock/reset?count=12abc" -X POST "${AUTH[@]}"
check 400 "missing count"      "$LOCKLAB_URL/stock/reset" -X POST "${AUTH[@]}"
check 401 "reset without the admin token" "$LOCKLAB_URL/stock/reset?count=1" -X POST
check 405 "GET on reset"       "$LOCKLAB_URL/stock/reset?count=1"
check 404 "unknown path"       "$LOCKLAB_URL/nothing/here"
t_ok "$(t_stock) -eq 50" "stock untouched by bad requests"

echo "== a sale whose answer is lost is unknown, and is never made twice"
# ?lose_answer=1 shuts the read side of the instance's MariaDB socket just
# before the statement that sells leaves (clients/db.c): it reaches MariaDB and
# runs there, and its answer never arrives. The purchase must be answered
# 500 "unknown", not 503 "unavailable"; where the statement commits by
# itself (autocommit) the unit is gone; and the connection made afterwards
# must not send it again.
for lock in mysql-update mysql-batch mysql-optimistic none mysql-for-update; do
    t_reset 10
    body=$(t_curl -w '\n%{http_code}' "${T_INSTANCES[0]}/check/lock?lock=$lock&lose_answer=1")
    code=${body##*$'\n'} body=${body%$'\n'*}
    t_ok "'$code $(jq -r .result <<< "$body")' = '500 unknown'" "$lock: a lost answer is 500 unknown (got $code: ${body:0:90})"
    after=$(t_stock)
    case $lock in
        mysql-for-update) t_ok "$after -ge 9 -a $after -le 10" "$lock: the COMMIT's fate shows in the stock ($after)" ;;
        *) t_ok "$after -eq 9" "$lock: the statement ran in autocommit, the unit is gone ($after)" ;;
    esac
    unknown=$(t_curl "${T_INSTANCES[0]}/stats" | jq -r --arg s "$lock" '.strategies[$s] | "\(.unknown) \(.sold)"')
    t_ok "'$unknown' = '1 0'" "$lock: /stats counts it unknown, not sold ($unknown)"
    sleep 0.3   # the slot waits DB_RETRY_MS (200 ms) before it connects again
    body=$(t_curl "${T_INSTANCES[0]}/check/lock?lock=$lock")
    t_ok "'$(jq -r .result <<< "$body")' = sold" "$lock: the next purchase, on a new connection, sells"
    t_ok "$(t_stock) -eq $((after - 1))" "$lock: it took one unit: nothing was sold twice"
done

echo "== a crashed db_lock holder is taken over after its lease"
t_reset 20
# The crash's answer is the connection closing as the instance dies, its
# db_lock row already committed: the next purchase is sent at once, and
# must find the row within its 3 s lease (a request of 300 ms, whose
# sending takes milliseconds; nothing else comes between).
t_curl -o /dev/null "${T_INSTANCES[1]}/check/lock?lock=mysql-lock-table&crash=1"
code=$(t_curl -o /dev/null -w '%{http_code}' "${T_INSTANCES[0]}/check/lock?lock=mysql-lock-table&wait_ms=300")
t_ok "$code = 503" "while the dead holder's lease runs, others time out"
code=$(t_curl -o /dev/null -w '%{http_code}' "${T_INSTANCES[0]}/check/lock?lock=mysql-lock-table&wait_ms=20000")
t_ok "$code = 200" "after the lease the row is taken over and the sale goes on"
"$T_ROOT/bench/stack" up >/dev/null   # the crashed instance back before nginx is asked
t_ok "'$(t_stock)' = 19" "one unit sold"

# nginx reaches the instances on their Unix sockets (bench/stack, app_sock);
# the instance that crashed above left its socket file behind, and the new
# one must have taken its place.
echo "== nginx reaches every instance on its Unix socket, the restarted one's too"
for url in "${T_INSTANCES[@]}"; do
    port=${url##*:}
    sock="$T_RUN/apps/app-$port.sock"
    if [ ${#sock} -gt 107 ]; then      # too long for a Unix socket: the stack uses TCP
        t_ok "$(grep -c "server 127.0.0.1:$port;" "$T_RUN/nginx/nginx.conf") = 1" \
             "nginx lists app-$port by TCP ($sock is ${#sock} bytes, longer than a socket's 107)"
        continue
    fi
    t_ok "$(grep -c "server unix:$sock " "$T_RUN/nginx/nginx.conf") = 1" "nginx lists app-$port by $sock"
    body=$(curl -s -m 5 --unix-socket "$sock" http://localhost/health)
    ok=$(t_jq "$body" ".status == \"ok\" and .instance == \"app-$port\"")
    t_ok "$ok = true" "app-$port answers on its socket (got: ${body:0:80})"
done
if [ ${#sock} -le 107 ]; then      # a second server on a live socket is refused
    out=$(timeout 5 "$T_BUILD/locklab" --port $((port + 50)) --unix "$sock" 2>&1); rc=$?
    case $out in *'another server answers there'*) ok=1 ;; *) ok=0 ;; esac
    t_ok "$rc != 0 -a $ok = 1" "a second server on app-$port's socket is refused (got: ${out:0:80})"
    body=$(curl -s -m 5 --unix-socket "$sock" http://localhost/health)
    t_ok "$(t_jq "$body" ".instance == \"app-$port\"") = true" "app-$port still answers on it"
fi

echo "== MariaDB stopped in the middle of a run"
# Three loads at once: mysql-update's one statement, mysql-for-update's
# transactions begun behind the last one's COMMIT and mysql-optimistic's
# reads behind its writes (both pipelined, clients/db_pipe.c) all lose the
# server mid-exchange.
t_reset 100000
loaders=()
for lock in mysql-update mysql-for-update mysql-optimistic; do
    "$T_BUILD/ll-load" -c 12 -n 20000 "$LOCKLAB_URL/check/lock?lock=$lock" > "/tmp/locklab-t-$$-$lock" &
    loaders+=($!)
done
sleep 1
"$T_ROOT/bench/stack" stop mysql >/dev/null
body=$(t_curl "$LOCKLAB_URL/check/lock?lock=mysql-for-update")
t_ok "'${body//[ \']/}' != ''" "an answer while MariaDB is down"
t_ok "'$(t_jq "$body" '.result + " " + .backend')' = 'unavailable mysql'" \
     "503 unavailable naming mysql (got: ${body:0:120})"
wait "${loaders[@]}"
for lock in mysql-update mysql-for-update mysql-optimistic; do
    grep -q '^result_unavailable=' "/tmp/locklab-t-$$-$lock"
    t_ok "$? -eq 0" "the $lock run saw unavailable answers"
    rm -f "/tmp/locklab-t-$$-$lock"
done
for url in "${T_INSTANCES[@]}"; do
    code=$(t_curl -o /dev/null -w '%{http_code}' "$url/health")
    t_ok "$code = 200" "$url survived"
done
"$T_ROOT/bench/stack" up >/dev/null
for _ in $(seq 1 50); do     # the slots reconnect on their next use
    [ "$(t_curl -o /dev/null -w '%{http_code}' "$LOCKLAB_URL/stock")" = 200 ] && break
    sleep 0.2
done
for lock in mysql-update mysql-for-update mysql-optimistic; do
    t_reset $S
    t_load "lock=$lock" $R $C
    t_exact "$lock after MariaDB came back"
done

echo "== MariaDB restarted while idle: no request pays for a stale connection"
"$T_ROOT/bench/stack" stop mysql >/dev/null
"$T_ROOT/bench/stack" up >/dev/null
t_reset $S
t_load "lock=mysql-for-update" $R $C
t_exact "mysql-for-update after an idle restart"

# bench/stack starts the backends at a lower nice value than the HTTP tier,
# their sessions too (autogroup weighs sessions, not threads); a restart
# goes through the same path. Lowering a nice value needs root (or
# CAP_SYS_NICE): without it the stack starts them at 0, and says so.
echo "== the restarted MariaDB runs before the HTTP tier"
want=${LOCKLAB_STACK_BACKEND_NICE:--10}
read -r pid < "$T_RUN/pids/mysql.pid"
if [ "$(nice -n "$want" nice 2>/dev/null)" = "$want" ]; then
    t_ok "'$(ps -o ni= -p "$pid" | tr -d ' ')' = '$want'" "MariaDB at nice $want"
    for f in "$T_RUN"/pids/app-*.pid; do read -r app < "$f"; break; done
    t_ok "'$(ps -o ni= -p "$app" | tr -d ' ')' = 0" "an instance at nice 0"
    if [ -r "/proc/$pid/autogroup" ]; then
        t_ok "'$(sed 's/.*nice //' "/proc/$pid/autogroup")' = '$want'" "MariaDB's session at nice $want"
        t_ok "'$(sed 's/.*nice //' "/proc/$app/autogroup")' = 0" "an instance's session at nice 0"
    fi
else
    t_ok "'$(ps -o ni= -p "$pid" | tr -d ' ')' = 0" "MariaDB at nice 0: this user may not lower it to $want"
fi

# The transaction's row lock dies with the server. A client that reconnected
# and ran its UPDATE anyway would write the value it read before the restart
# over the sale made since: a lost update behind a 200.
echo "== MariaDB restarted inside a mysql-for-update transaction"
t_reset 10
# The stop waits until the transaction is open (InnoDB lists it; asked as
# the stack's admin over the socket), then has the rest of the 8 s hold.
# shellcheck disable=SC2317 # run through t_until
trx_open() {
    [ "$(mariadb --no-defaults --socket="$LOCKLAB_MYSQL_SOCKET" -u "$(id -un)" -N \
        -e 'SELECT COUNT(*) FROM information_schema.innodb_trx' 2>/dev/null)" -ge 1 ] 2>/dev/null
}
t_curl "${T_INSTANCES[0]}/check/lock?lock=mysql-for-update&hold_ms=8000" > /tmp/locklab-t-$$ &
held=$!
t_until 30 trx_open || t_log "the transaction never showed in information_schema.innodb_trx"
"$T_ROOT/bench/stack" stop mysql >/dev/null
"$T_ROOT/bench/stack" up >/dev/null
for _ in $(seq 1 25); do     # a slot may find the server still starting
    code=$(t_curl -o /dev/null -w '%{http_code}' "${T_INSTANCES[1]}/check/lock?lock=mysql-update")
    [ "$code" = 200 ] && break
    sleep 0.2
done
t_ok "$code = 200" "a sale by another instance while the transaction waits"
wait $held
body=$(cat /tmp/locklab-t-$$); rm -f /tmp/locklab-t-$$
ok=$(t_jq "$body" '.result == "unavailable" and (.error | contains("inside a transaction"))')
t_ok "$ok = true" "the transaction's sale is refused with 503 (got: ${body:0:100})"
t_ok "'$(t_stock)' = 9" "one unit sold, none lost"

t_done
