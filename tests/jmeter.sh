#!/usr/bin/env bash
# jmeter.sh — the seeds' JMeter plan run by Debian's JMeter 2.13 (through
# the XStream shim of bench/jmeter), small: 10 threads × 5 loops on an exact
# strategy with 30 units. JMeter's own results file must account for every
# sample, and the summary must count what an exact strategy does with 50
# purchases of 30 units: 30 sold, 20 sold out, nothing else, final 0,
# nothing oversold or lost. Then its constant-throughput variant
# (jmeter/stock-rate.jmx, bench/jmeter --rate): 10 threads × 10 loops paced
# at 50 a second, 60 units: JMeter's log shows the Constant Throughput Timer
# started with the test, and the counts are as exact (100 samples, 60 sold,
# 40 sold out, final 0). The throughput JMeter achieved is printed beside
# the rate asked, not judged: it is the machine's.
# bench/jmeter installs Debian's jmeter, jmeter-http and javac when root;
# without them and not root, the test is skipped (a failure under CI=true).
set -u
T_NAME=jmeter
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
    t_need jmeter javac /usr/share/jmeter/lib/ext/ApacheJMeter_http.jar -- \
        "JMeter (Debian's jmeter, jmeter-http, default-jdk-headless)" || t_done
fi
t_setup

# jtl_counts LOG: the summary's jtl: line, as shell variables.
jtl_counts() {
    local kv line
    line=$(grep '^jtl:' "$1" || echo "jtl:")
    samples=0 sold=0 sold_out=0 other=0 final=-1 oversold=-1 lost=-1
    for kv in ${line#jtl:}; do
        case ${kv%%=*} in samples|sold|sold_out|other|final|oversold|lost) eval "${kv%%=*}=${kv#*=}" ;; esac
    done
}

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$T_ROOT/bench/jmeter" --lock mysql-update --threads 10 --loops 5 --stock 30 --out "$OUT" \
    > "$OUT/log" 2>&1
rc=$?
sed 's/^/    /' "$OUT/log"
t_ok "$rc -eq 0" "bench/jmeter exits 0"
t_ok "$(grep -c 'ForbiddenClassException' "$OUT/log") -eq 0" "the plan loads (no XStream refusal)"
csvs=("$OUT"/jmeter-*/results.csv)
csv=${csvs[0]}
t_ok "-s '$csv'" "JMeter wrote its CSV results"
[ -s "$csv" ] || csv=/dev/null
t_ok "$(($(wc -l < "$csv") - 1)) -eq 50" "JMeter recorded 50 samples"
jtl_counts "$OUT/log"
t_ok "$samples -eq 50" "the summary counts 50 samples"
t_ok "'$sold $sold_out $other' = '30 20 0'" "30 sold, 20 sold out, no other answer"
t_ok "'$final $oversold $lost' = '0 0 0'" "final 0, nothing oversold or lost"
t_ok "$(grep -c 'GET /check/lock' "$OUT/log") -ge 1" "an aggregate-report row for the sampler"

echo "== at a constant throughput: 50 a second"
"$T_ROOT/bench/jmeter" --lock mysql-update --threads 10 --loops 10 --stock 60 --rate 50 --out "$OUT/rate" \
    > "$OUT/rate.log" 2>&1
rc=$?
sed 's/^/    /' "$OUT/rate.log"
t_ok "$rc -eq 0" "bench/jmeter --rate 50 exits 0"
t_ok "'$(sed -n 's/^rate: //p' "$OUT/rate.log")' = 'asked=50 timer_started=1'" \
     "the plan ran with its Constant Throughput Timer (JMeter's log: the timer's test started)"
jtl_counts "$OUT/rate.log"
t_ok "$samples -eq 100" "the summary counts 100 samples"
t_ok "'$sold $sold_out $other' = '60 40 0'" "60 sold, 40 sold out, no other answer"
t_ok "'$final $oversold $lost' = '0 0 0'" "final 0, nothing oversold or lost"
t_log "JMeter's throughput at 50 a second asked: $(awk '/^GET \/check\/lock/ {print $NF}' "$OUT/rate.log")"
t_done
