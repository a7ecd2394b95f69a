#!/usr/bin/env bash
# report_sync.sh — ll-report's side of bench/compare --scenario sync, on a
# run directory written here (no stack): sync-plan turns GET /sync into the
# runs (query, names to reset), and sync judges the answers of each run by
# its table's bench_check — planted overlaps of permits and of readers with
# a writer, a value answered twice and holds that merely touch (one released
# the microsecond the next is granted, which is no overlap) — and divides
# the rate by the ceilings.
set -u
BUILD=${LOCKLAB_BUILD_DIR:-$(dirname "$0")/../build}
R=$BUILD/ll-report
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
passed=0 failed=0
check() {   # GOT WANT WHAT
    if [ "$1" = "$2" ]; then
        passed=$((passed + 1)); printf '  ok    %s\n' "$3"
    else
        failed=$((failed + 1)); printf '  FAIL  %s\n        got  %s\n        want %s\n' "$3" "$1" "$2"
    fi
}
field() { jq -r --arg p "$1" --arg b "$2" ".runs[] | select(.primitive == \$p and .backend == \$b) | .$3" \
              "$T/run/results-sync.json"; }

mkdir -p "$T/run/raw"
cat > "$T/run/raw/sync.json" <<'JSON'
{"synchronizers":[
 {"primitive":"semaphore","backend":"redisson","library":"Redisson RSemaphore","ceiling":"sync_redisson_semaphore",
  "bench":"acquire?permits=2","bench_check":"holders<=2","invariant":"permits in use never above the permits set"},
 {"primitive":"rwlock","backend":"curator","library":"Curator InterProcessReadWriteLock","ceiling":"sync_curator_rwlock",
  "bench":"mixed","bench_check":"rw","invariant":"no reader alongside a writer"},
 {"primitive":"double-barrier","backend":"curator","library":"Curator DistributedDoubleBarrier","ceiling":"sync_x",
  "bench":null,"bench_check":"","invariant":"-"},
 {"primitive":"atomic-long","backend":"curator","library":"Curator DistributedAtomicLong","ceiling":"sync_curator_atomic_long",
  "bench":"increment","bench_check":"distinct:postValue","invariant":"increments never lost"},
 {"primitive":"multilock","backend":"redisson","library":"RedissonMultiLock","ceiling":"sync_redisson_multilock",
  "bench":"lock?names=a,b&unlock=1","bench_check":"holders<=1","invariant":"one holder"}
]}
JSON
cat > "$T/run/raw/limits.json" <<'JSON'
{"ceilings":{"sync_redisson_semaphore":{"rate":100.0},"sync_curator_rwlock":{"rate":40.0},
 "serial_redis":{"rate":50.0},"serial_zk":{"rate":20.0}}}
JSON
echo "scenario=sync" > "$T/run/raw/settings.env"
: > "$T/run/raw/machine.env"

plan=$("$R" sync-plan "$T/run/raw/sync.json")
check "$(wc -l <<< "$plan")" 4 "sync-plan: one run per synchronizer with a bench operation"
check "$(sed -n 1p <<< "$plan")" \
      "$(printf '01\tsemaphore\tredisson\t/sync/semaphore/acquire?permits=2&name=bench-semaphore&backend=redisson\tbench-semaphore')" \
      "sync-plan: the query adds name and backend to the bench's own"
check "$(sed -n 4p <<< "$plan" | cut -f5)" "bench-multilock,a,b" "sync-plan: the names a multilock takes are reset too"

load() {   # IDX OK ELAPSED
    printf '{"requests":%d,"responses":%d,"transport_errors":0,"elapsed_s":%s,"lat_p99_ms":3.5,"lat_p50_ms":1.0,"result":{"ok":%d}}\n' \
        "$2" "$2" "$3" "$2" > "$T/run/raw/$1.load.json"
}
ok() {     # GRANTED RELEASED [LOCK]
    printf '{"result":"ok","granted_at_us":%s,"released_at_us":%s,"lock":"%s"}\n' "$1" "$2" "${3:-}"
}
# Semaphore of 2: three holders overlap once (at 150); 300-400 touches 200-300.
load 01 5 2.5
{ ok 100 200; ok 120 220; ok 150 170; ok 200 300; ok 300 400; } > "$T/run/raw/01.bodies"
echo '{"result":"lock_timeout","error":"x"}' >> "$T/run/raw/01.bodies"
# Read-write: two readers together are fine; a writer inside a reader and a
# reader inside a writer are one violation each; a writer touching is fine.
load 02 6 1.0
{ ok 10 50 read; ok 20 60 read; ok 60 70 write; ok 65 68 read; ok 80 90 read; ok 85 95 write; } \
    > "$T/run/raw/02.bodies"
# Atomic long: 1, 2, 2, 3 — one value answered twice.
load 03 4 1.0
for v in 1 2 2 3; do printf '{"result":"ok","postValue":%d}\n' "$v"; done > "$T/run/raw/03.bodies"

"$R" sync "$T/run" > "$T/table" || failed=$((failed + 1))
check "$(jq '.runs | length' "$T/run/results-sync.json")" 3 "sync: the runs whose load is there"
check "$(field semaphore redisson violations)" 1 "holders<=2: the third holder at once is a violation"
check "$(field semaphore redisson examined)" 5 "holders<=2: every ok answer is examined, the timeout is not"
check "$(field semaphore redisson rate)" 2 "rate: ok answers per second of the load"
check "$(field semaphore redisson ratio)" 0.02 "ratio: rate ÷ the primitive's own ceiling"
check "$(field semaphore redisson family_ratio)" 0.04 "family ratio: rate ÷ serial_redis"
check "$(field rwlock curator violations)" 2 "rw: a writer among readers and a reader inside a writer, once each"
check "$(field rwlock curator family_ceiling_key)" serial_zk "a Curator synchronizer's family ceiling is serial_zk"
check "$(field atomic-long curator violations)" 1 "distinct:postValue: a value answered twice"
check "$(field atomic-long curator ceiling)" null "no ceiling measured: none given"
check "$(grep -c '^semaphore ' "$T/table")" 1 "the table on stdout has the semaphore's row"
check "$(test -s "$T/run/report-sync.md" && echo yes)" yes "report-sync.md is written"

printf 'report_sync: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
