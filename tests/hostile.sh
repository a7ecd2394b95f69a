#!/usr/bin/env bash
# hostile.sh — what a stranger can send to the stack's nginx, and what comes
# back: every request of the battery below is answered with its 4xx status
# and a JSON body (a HEAD with the status and the JSON content type, since
# HEAD answers carry no body), no purchase is made, no stock changes, and
# the front end stays up.
#
# The instances run as `bench/stack up` starts them by default: without
# --allow-faults. The test topology has the fault switches on, so this
# script turns them off (`up --no-faults` restarts the instances); the
# next test's t_setup turns them on again.
set -u
T_NAME=hostile
. "$(dirname "$0")/lib.sh"
t_setup --no-faults

PRODUCTS=(1001 1002)
declare -A BEFORE
for p in "${PRODUCTS[@]}"; do BEFORE[$p]=$(t_stock "$p"); done
for url in "${T_INSTANCES[@]}"; do t_admin -X POST "$url/stats/reset" >/dev/null; done

# expect CODE WHAT PATH [curl args]: one request through nginx.
BATTERY=0
expect() {
    local want=$1 what=$2 path=$3 out code type body
    shift 3
    BATTERY=$((BATTERY + 1))
    out=$(curl -s -m 30 -o /tmp/locklab-hostile-$$ -w '%{http_code} %{content_type}' \
          "$@" "$LOCKLAB_URL$path")
    code=${out%% *} type=${out#* }
    body=$(cat /tmp/locklab-hostile-$$ 2>/dev/null)
    t_ok "'$code' = '$want'" "$what -> $want"
    case $type in application/json*) ;; *) t_ok "0 = 1" "$what: JSON content type (got '$type')"; return ;; esac
    [ "${HEAD:-0}" = 1 ] && return
    if printf '%s' "$body" | jq -e 'type == "object" and (.result | type == "string")' >/dev/null 2>&1; then
        t_ok "1 = 1" "$what: a JSON body with a result ($(printf '%s' "$body" | jq -r .result))"
    else
        t_ok "0 = 1" "$what: a JSON body with a result (got: ${body:0:100})"
    fi
}

K10=$(head -c 10240 /dev/zero | tr '\0' a)
K09=$(head -c 900 /dev/zero | tr '\0' b)
WRONG=$(mktemp); BAD_SCHEME=$(mktemp); PREFIX=$(mktemp)
printf 'Authorization: Bearer %s\n' "not-the-token" > "$WRONG"
printf 'Authorization: Basic %s\n' "$LOCKLAB_ADMIN_TOKEN" > "$BAD_SCHEME"
printf 'Authorization: Bearer %s\n' "${LOCKLAB_ADMIN_TOKEN:0:10}" > "$PREFIX"

echo "== invalid UTF-8 and NUL bytes, in names and in values"
expect 400 "invalid UTF-8 value"          "/check/lock?lock=%FF"
expect 400 "invalid UTF-8 name"           "/check/lock?%FF=1"
expect 400 "NUL in a value"               "/check/lock?product=1001%00x"
expect 400 "NUL at a value's end"         "/check/lock?lock=mysql-update%00"
expect 400 "NUL as a name"                "/check/lock?%00=1"
expect 400 "overlong NUL (C0 80)"         "/check/lock?lock=%C0%80"
expect 400 "UTF-16 surrogate"             "/check/lock?lock=%ED%A0%80"
expect 400 "past U+10FFFF"                "/check/lock?lock=%F4%90%80%80"
expect 400 "cut-off sequence"             "/check/lock?lock=%E2%82"
expect 400 "escaped percent, unknown lock" "/check/lock?lock=%25FF"
expect 400 "right-to-left override product" "/check/lock?product=%E2%80%AE1001"
for i in 1 2 3; do   # three in a row once took the whole front end down
    expect 400 "invalid UTF-8 again ($i)"  "/check/lock?lock=%FF%FE"
done

echo "== sizes, repeats, missing values"
expect 414 "10 KB value (nginx)"          "/check/lock?lock=$K10"
expect 414 "query over 1 KiB (instance)"  "/check/lock?lock=$K09&product=$K09"
# A browser's headers are not the instances' business: nginx forwards only
# the ones they read, so 3.5 and 7.9 KB of cookies, which would not fit an
# instance's 4 KiB for a request (app/http.c), are no 502.
for n in 3500 7900; do
    code=$(curl -s -m 30 -o /dev/null -w '%{http_code}' -H "Cookie: c=$(head -c "$n" /dev/zero | tr '\0' c)" \
           "$LOCKLAB_URL/health")
    t_ok "'$code' = 200" "a request with $n bytes of cookies -> 200"
done
expect 400 "repeated lock"                "/check/lock?lock=none&lock=none"
expect 400 "repeated product"             "/check/lock?product=1001&product=1002"
expect 400 "empty value"                  "/check/lock?lock="
expect 400 "no value"                     "/check/lock?lock"
expect 400 "unknown parameter"            "/check/lock?x=1"
expect 400 "parameter of another route"   "/stock?lock=none"
expect 400 "unknown strategy"             "/check/lock?lock=NONE"
expect 400 "unknown product"              "/check/lock?product=nosuch"
expect 400 "path-like product"            "/check/lock?product=..%2F..%2Fetc"
expect 400 "33-character product"         "/check/lock?product=$(head -c 33 /dev/zero | tr '\0' 1)"

echo "== absurd numbers"
expect 400 "reentry past 64 bits"         "/check/lock?reentry=99999999999999999999999"
expect 400 "negative reentry"             "/check/lock?reentry=-1"
expect 400 "hex reentry"                  "/check/lock?reentry=0x2"
expect 400 "float wait"                   "/check/lock?wait_ms=1e9"
expect 400 "wait past --max-wait-ms"      "/check/lock?wait_ms=600000"
expect 400 "re-entry of a non-reentrant lock" "/check/lock?lock=redis-lua&reentry=2"
expect 400 "re-entry of zk-sequential-poll"   "/check/lock?lock=zk-sequential-poll&reentry=2"

echo "== fault switches on a server started without --allow-faults"
expect 400 "hold_ms"                      "/check/lock?lock=mysql-for-update&hold_ms=600000"
expect 400 "hold_ms=0"                    "/check/lock?hold_ms=0"
expect 400 "crash"                        "/check/lock?lock=mysql-lock-table&crash=1"
expect 400 "lose_answer"                  "/check/lock?lock=mysql-update&lose_answer=1"
expect 400 "read_pause_ms on GET /stock"  "/stock?read_pause_ms=10"

echo "== every method on the purchase; admin routes"
HEAD=1 expect 405 "HEAD /check/lock"      "/check/lock?lock=mysql-update" -I
for m in POST PUT DELETE PATCH OPTIONS FOO; do
    expect 405 "$m /check/lock"          "/check/lock?lock=mysql-update" -X "$m"
done
expect 405 "TRACE /check/lock (nginx)"    "/check/lock" -X TRACE
allow=$(curl -s -m 10 -o /dev/null -D - -X PUT "$LOCKLAB_URL/check/lock" | tr -d '\r' |
        sed -n 's/^[Aa]llow: //p')
t_ok "'$allow' = GET" "405 on /check/lock says Allow: GET"
expect 405 "GET /stock/reset"             "/stock/reset?count=5"
expect 405 "GET /stats/reset"             "/stats/reset"
expect 401 "reset without a token"        "/stock/reset?count=5" -X POST
expect 401 "reset with a wrong token"     "/stock/reset?count=5" -X POST -H @"$WRONG"
expect 401 "reset with the token's start" "/stock/reset?count=5" -X POST -H @"$PREFIX"
expect 401 "reset with another scheme"    "/stock/reset?count=5" -X POST -H @"$BAD_SCHEME"
expect 401 "stats reset without a token"  "/stats/reset" -X POST
expect 413 "a body (nginx)"               "/stock/reset?count=5" -X POST --data-binary "$K10"
rm -f "$WRONG" "$BAD_SCHEME" "$PREFIX"

echo "== path tricks"
expect 404 "double slash"                 "//check/lock"
expect 404 "trailing slash"               "/check/lock/"
expect 404 "dot segments"                 "/check/lock/../stock"
expect 404 "upper case"                   "/CHECK/LOCK"
expect 404 "path parameter"               "/check/lock;x=1"
expect 400 "NUL in the path (nginx)"      "/check/lock%00"
expect 400 "bad escape in the path (nginx)" "/check/lock%ZZ"
expect 404 "nginx's error locations are internal" "/.locklab/502"
t_ok "$BATTERY -ge 40" "the battery had $BATTERY requests"

echo "== the front end is still up and nothing was sold"
ok=0
for i in 1 2 3; do
    [ "$(t_curl -o /dev/null -w '%{http_code}' "$LOCKLAB_URL/health")" = 200 ] && ok=$((ok + 1))
done
t_ok "$ok = 3" "GET /health through nginx: 200 three times in a row"
for p in "${PRODUCTS[@]}"; do
    t_ok "'$(t_stock "$p")' = '${BEFORE[$p]}'" "product $p's stock unchanged (${BEFORE[$p]})"
done
sold=0
for url in "${T_INSTANCES[@]}"; do
    sold=$((sold + $(t_curl "$url/stats" | jq '[.strategies[].sold] | add')))
done
t_ok "$sold = 0" "no instance counted a sale"
rm -f /tmp/locklab-hostile-$$
t_done
