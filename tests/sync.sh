#!/usr/bin/env bash
# sync.sh — the synchronizers (sync/) against the real stack, three
# instances behind nginx: the seeds' timelines, read from the timestamps in
# the answers (wall-clock ms of the one machine), never from sleeps:
#
#   1. Redisson RReadWriteLock, the seeds' /test/read and /test/write: two
#      reads pass together; read-then-write, write-then-write and
#      write-then-read each wait for the first lock's 10 s lease (the three
#      run side by side on three names); unlock=1 frees at once; the keys
#      are Redisson's, and a "foreign Redisson client" (redis-cli writing
#      Redisson's layout and publishing its unlock message) excludes and
#      wakes locklab's readers;
#   2. RSemaphore, /test/semaphore × 10: all ten served, the permits all
#      back, purchases still sell meanwhile (the seeds' waves of 3, 3, 3, 1
#      are `bench/lesson semaphore-leak`'s);
#   3. RCountDownLatch: /test/latch opens at the sixth /test/countdown, not
#      before, on whatever instance the countdowns land;
#   4. RPermitExpirableSemaphore: a leased permit returns by itself, only
#      its id releases it; RedissonMultiLock: all or nothing;
#   5. Curator: concurrent readers, a writer excluded while a reader holds,
#      the downgrade and the refused upgrade, InterProcessSemaphoreMutex not
#      reentrant, SemaphoreV2 never above maxLeases, InterProcessMultiLock,
#      the barrier and the double barrier's enter/leave, SharedCount's
#      versions, and DistributedAtomicLong giving 1000 distinct values to
#      1000 concurrent increments across the three instances;
#   6. requests refused: unknown primitives and parameters, waits past
#      --max-wait-ms, POST /sync/reset without the token;
#   7. bench/compare --scenario sync, short: every synchronizer with a bench
#      operation runs under contention through nginx, has a ceiling, and
#      breaks no invariant (ll-report sync's judgement of the answers);
#   8. Curator's own recipes in Java (tests/CuratorSync.java, built here
#      with Debian's javac and libcurator-recipes-java) on the same paths:
#      a Java writer excludes locklab's readers and the reverse; a Java
#      SemaphoreV2 and locklab's with the same maxLeases never hold more
#      than it together; Java's DistributedAtomicLong and locklab's lose no
#      increment of each other.
#
# The only times asserted are the seeds' own (a 10 s lease, the sixth
# countdown) and orderings of timestamps; "at once" means well within
# the lease. About 2 minutes.
set -u
T_NAME=sync
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_setup

U=$LOCKLAB_URL
R0=${LOCKLAB_REDIS%%,*}
RPORT=${R0##*:}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

rcli() { redis-cli -p "$RPORT" "$@"; }
# A request that holds in the background is waited on, not slept on: the
# one that must find it held is sent once its keys or znodes are there.
# shellcheck disable=SC2317 # both run through t_until
redis_has() { [ "$(rcli EXISTS "$1")" = 1 ]; }
# shellcheck disable=SC2317
in_semaphore() { [ "$(rcli GET semaphore)" = 0 ]; }   # its 3 permits taken
# shellcheck disable=SC2317
zk_has() {    # an ephemeral znode under $1, as the leader's `dump` lists them
    local z
    for z in ${LOCKLAB_ZK//,/ }; do
        # shellcheck disable=SC2016 # $1 and $2 expand in the inner bash
        timeout 3 bash -c 'exec 3<>"/dev/tcp/${1%:*}/${1#*:}" && printf dump >&3 && cat <&3' _ "$z" \
            2>/dev/null | grep -q "^	*$1/" && return 0
    done
    return 1
}
get() { t_curl "$U$1"; }
# The value of FILTER in the JSON answer kept in file $1.
jf() { t_jq "$(cat "$1")" "$2"; }
sync_reset() { t_admin -X POST "$U/sync/reset?name=$1" >/dev/null; }
# The most holders at once among the answers in the files given: each one's
# [granted_at_us, released_at_us), releases first at one instant.
most_at_once() {
    local f
    for f; do
        printf '%s 1\n%s -1\n' "$(jf "$f" .granted_at_us)" "$(jf "$f" .released_at_us)"
    done | sort -k1,1n -k2,2n | awk '{ n += $2; if (n > m) m = n } END { print m }'
}

t_need redis-cli -- "Redisson key layout checks (redis-cli)" || t_done

echo "== Redisson RReadWriteLock: the seeds' /test/read and /test/write"
sync_reset rwLock
get /test/read > "$WORK/r1" &
get /test/read > "$WORK/r2" &
wait
# The keys are read first, while the reads' 10 s lease runs (a loaded
# machine once spent 20 s on the checks before them): three redis-cli and
# one jq after the answers, against 10 s.
holder=$(jf "$WORK/r1" .holder)
mode=$(rcli HGET rwLock mode) count=$(rcli HGET rwLock "$holder")
pttl=$(rcli PTTL "{rwLock}:$holder:rwlock_timeout:1")
t_ok "'$(jf "$WORK/r1" .result)$(jf "$WORK/r2" .result)' = okok" "two /test/read both granted"
t_ok "$(jf "$WORK/r1" .waited_ms) -lt 5000 -a $(jf "$WORK/r2" .waited_ms) -lt 5000" \
     "two reads pass at once (waited $(jf "$WORK/r1" .waited_ms) and $(jf "$WORK/r2" .waited_ms) ms of a 10 s lease)"
t_ok "'$mode' = read -a '$count' = 1" \
     "Redisson's layout: hash rwLock {mode: read, <uuid>:<thread>: 1}"
t_ok "$pttl -gt 0 -a $pttl -le 10000" "the read entry's own lease key {rwLock}:<holder>:rwlock_timeout:1 ($pttl ms)"
sync_reset rwLock

# Three timelines side by side: write-write on the seeds' rwLock, read-write
# and write-read on names of their own, each lease 10 s and never unlocked.
( get /test/write > "$WORK/ww1"; get /test/write > "$WORK/ww2" ) &
( get "/sync/rwlock/read?name=rw-a&lease_ms=10000" > "$WORK/rw1"
  get "/sync/rwlock/write?name=rw-a&lease_ms=10000&wait_ms=30000" > "$WORK/rw2" ) &
( get "/sync/rwlock/write?name=rw-b&lease_ms=10000" > "$WORK/wr1"
  get "/sync/rwlock/read?name=rw-b&lease_ms=10000&wait_ms=30000" > "$WORK/wr2" ) &
wait
for pair in "ww write-then-write" "rw read-then-write" "wr write-then-read"; do
    read -r f what <<< "$pair"
    first=$(jf "$WORK/${f}1" .granted_at_ms) second=$(jf "$WORK/${f}2" .granted_at_ms)
    gap=$((second - first))
    t_ok "'$(jf "$WORK/${f}2" .result)' = ok -a $gap -ge 9500" \
         "$what: the second waits for the first's 10 s lease (granted $gap ms later)"
done
t_ok "'$(rcli HGET rwLock "$(jf "$WORK/ww2" .holder):write")' = 1" \
     "a write holder is the field <uuid>:<thread>:write"
sync_reset rwLock
get "/test/write?hold_ms=500&unlock=1" > "$WORK/u1"
get "/test/write" > "$WORK/u2"
t_ok "$(jf "$WORK/u2" .granted_at_ms) -ge $(jf "$WORK/u1" .released_at_ms) -a $(jf "$WORK/u2" .waited_ms) -lt 5000" \
     "hold_ms=500&unlock=1 releases explicitly: the next write is granted at once"
sync_reset rwLock

# A foreign Redisson client: Redisson's write lock written by hand, then its
# unlock (DEL, PUBLISH "1" on redisson_rwlock:{rwLock}) wakes our reader.
rcli HSET rwLock mode write "java-uuid:1:write" 1 >/dev/null
rcli PEXPIRE rwLock 20000 >/dev/null
t_ok "'$(t_jq "$(get "/test/read?wait_ms=500")" .result)' = lock_timeout" \
     "a Redisson writer's hash (mode write) keeps locklab's reader out"
get "/test/read?wait_ms=15000" > "$WORK/fr" &
reader=$!
sleep 1
rcli DEL rwLock >/dev/null
rcli PUBLISH "redisson_rwlock:{rwLock}" 1 >/dev/null
wait "$reader"
t_ok "'$(jf "$WORK/fr" .result)' = ok -a $(jf "$WORK/fr" .waited_ms) -lt 10000" \
     "its unlock message on redisson_rwlock:{rwLock} wakes the reader ($(jf "$WORK/fr" .waited_ms) ms of a 20 s lease)"
sync_reset rwLock

echo "== Redisson RSemaphore: /test/semaphore, ten at once"
sync_reset semaphore
t_reset 1000
# The ten at once from one ll-load, ten connections; its --bodies keeps
# each answer, one a line. The seeds' waves of 3, 3, 3, 1 (and of 2 once a
# holder died with its permit) are `bench/lesson semaphore-leak`'s.
"$T_BUILD/ll-load" -c 10 -n 10 -t 120 --bodies "$WORK/sem" "$U/test/semaphore?hold_ms=1000" > /dev/null &
sems=$!
t_until 30 in_semaphore || t_log "no semaphore caller seen at work"
sold=$(t_jq "$(get "/check/lock?lock=none")" .result)
wait "$sems"
t_ok "'$sold' = sold" "a purchase sells while ten semaphore callers hold their slots"
ok=$(jq -s '[.[] | select(.result == "ok")] | length' "$WORK/sem")
t_ok "$ok -eq 10" "all ten acquire, work 1 s and release ($ok)"
t_ok "'$(rcli GET semaphore)' = 3" "all three permits back in the string semaphore"

echo "== Redisson RCountDownLatch: the seeds' /test/latch and /test/countdown"
sync_reset latch
get /test/latch > "$WORK/latch" &
latch=$!
sleep 0.5
for i in 1 2 3 4 5; do get /test/countdown > "$WORK/cd.$i"; done
sleep 0.5
open_early=no
[ -s "$WORK/latch" ] && open_early=yes
t_ok "$open_early = no" "the latch is still closed after five countdowns"
get /test/countdown > "$WORK/cd.6"
wait "$latch"
t_ok "'$(jf "$WORK/latch" .result)' = ok -a '$(jf "$WORK/cd.6" .count_after)' = 0" \
     "the sixth countdown opens it (count $(jf "$WORK/cd.6" .count_before) -> 0)"
t_ok "$(jf "$WORK/latch" .granted_at_ms) -ge $(jf "$WORK/cd.6" .counted_at_ms)" \
     "the waiter is answered at the sixth countdown, not before"
instances=$(for i in 1 2 3 4 5 6; do jf "$WORK/cd.$i" .instance; done | sort -u | wc -l)
t_ok "$instances -ge 2" "the countdowns landed on $instances instances"

echo "== Redisson RPermitExpirableSemaphore and RedissonMultiLock"
sync_reset pse
get "/sync/permit-semaphore/acquire?name=pse&permits=1&lease_ms=1500" > "$WORK/p1"
get "/sync/permit-semaphore/acquire?name=pse&wait_ms=10000" > "$WORK/p2"
t_ok "$(jf "$WORK/p2" .granted_at_ms) -ge $(jf "$WORK/p1" .expires_at_ms)" \
     "a leased permit returns by itself when its lease ends"
t_ok "$(t_curl -o /dev/null -w '%{http_code}' "$U/sync/permit-semaphore/release?name=pse&permit=$(jf "$WORK/p1" .permit)") -eq 400" \
     "the expired permit's id releases nothing"
t_ok "'$(t_jq "$(get "/sync/permit-semaphore/release?name=pse&permit=$(jf "$WORK/p2" .permit)")" .result)' = ok" \
     "a live permit is released by its id"
t_ok "$(t_jq "$(get "/sync/permit-semaphore/available?name=pse")" .available) -eq 1" "and is available again"
for n in ma mb mc; do sync_reset $n; done
get "/sync/multilock/lock?names=ma,mb&hold_ms=4000&unlock=1" > "$WORK/ml1" &
t_until 30 redis_has mb || t_log "the multilock never held mb"
t_ok "'$(t_jq "$(get "/sync/multilock/lock?names=mc,mb&wait_ms=500")" .result)' = lock_timeout" \
     "RedissonMultiLock: mb is held, so mc,mb is not obtained"
t_ok "'$(rcli EXISTS mc)' = 0" "and mc, taken first, was given back"
wait
t_ok "'$(t_jq "$(get "/sync/multilock/lock?names=mc,mb&unlock=1")" .result)' = ok" "all of them once free"

echo "== Curator recipes"
for n in cr cs csm cml1 cml2 b1 db sc al; do sync_reset $n; done
get "/sync/rwlock/read?backend=curator&name=cr&hold_ms=1500" > "$WORK/cr1" &
get "/sync/rwlock/read?backend=curator&name=cr&hold_ms=1500" > "$WORK/cr2" &
wait
t_ok "$(jf "$WORK/cr1" .granted_at_ms) -lt $(jf "$WORK/cr2" .released_at_ms) -a $(jf "$WORK/cr2" .granted_at_ms) -lt $(jf "$WORK/cr1" .released_at_ms)" \
     "InterProcessReadWriteLock: two readers hold at the same time"
get "/sync/rwlock/read?backend=curator&name=cr&hold_ms=4000" > /dev/null &
t_until 30 zk_has /locklab/sync/rwlock/cr || t_log "the reader never held cr"
t_ok "'$(t_jq "$(get "/sync/rwlock/write?backend=curator&name=cr&wait_ms=500")" .result)' = lock_timeout" \
     "a writer is excluded while a reader holds"
wait
t_ok "'$(t_jq "$(get "/sync/rwlock/write-read?backend=curator&name=cr")" .read_granted_while_writing)' = true" \
     "the write lock may take the read lock (downgrade)"
t_ok "'$(t_jq "$(get "/sync/rwlock/read-write?backend=curator&name=cr&wait_ms=500")" '.result + " " + (.write_granted_while_reading | tostring)')' = 'lock_timeout false'" \
     "the read lock may not take the write lock"
t_ok "'$(t_jq "$(get "/sync/semaphore-mutex/reenter?name=csm&wait_ms=500")" '.result + " " + (.reentered | tostring)')' = 'lock_timeout false'" \
     "InterProcessSemaphoreMutex: a second acquire by its holder waits (not reentrant)"
for i in 1 2 3 4 5 6; do
    get "/sync/semaphore/acquire?backend=curator&name=cs&permits=2&hold_ms=700" > "$WORK/cs.$i" &
done
wait
ok=0
for i in 1 2 3 4 5 6; do [ "$(jf "$WORK/cs.$i" .result)" = ok ] && ok=$((ok + 1)); done
most=$(most_at_once "$WORK"/cs.*)
t_ok "$ok -eq 6 -a $most -eq 2" "InterProcessSemaphoreV2 (maxLeases 2): six holders, at most $most at once"
get "/sync/multilock/lock?backend=curator&names=cml1&hold_ms=4000" > /dev/null &
t_until 30 zk_has /locklab/sync/lock/cml1 || t_log "the multilock never held cml1"
t_ok "'$(t_jq "$(get "/sync/multilock/lock?backend=curator&names=cml2,cml1&wait_ms=500")" .result)' = lock_timeout" \
     "InterProcessMultiLock: one name held, none obtained"
wait
t_ok "'$(t_jq "$(get "/sync/multilock/lock?backend=curator&names=cml2,cml1")" .result)' = ok" "all once free"

get "/sync/barrier/set?name=b1" > /dev/null
get "/sync/barrier/wait?name=b1&wait_ms=10000" > "$WORK/bw" &
sleep 1
get "/sync/barrier/remove?name=b1" > "$WORK/br"
wait
t_ok "'$(jf "$WORK/bw" .result)' = ok -a $(jf "$WORK/bw" .granted_at_ms) -ge $(jf "$WORK/br" .asked_at_ms)" \
     "DistributedBarrier: the waiter passes when the barrier is removed, not before"
for m in m1 m2; do get "/sync/double-barrier/enter?name=db&members=3&member=$m&wait_ms=15000" > "$WORK/de.$m" & done
sleep 1
early=$(cat "$WORK/de.m1" "$WORK/de.m2")
get "/sync/double-barrier/enter?name=db&members=3&member=m3" > "$WORK/de.m3"
wait
t_ok "-z '$early'" "DistributedDoubleBarrier: two of three members wait in enter"
t_ok "$(jf "$WORK/de.m1" .granted_at_ms) -ge $(jf "$WORK/de.m3" .asked_at_ms) -a $(jf "$WORK/de.m2" .granted_at_ms) -ge $(jf "$WORK/de.m3" .asked_at_ms)" \
     "all enter when the third does"
for m in m1 m2; do get "/sync/double-barrier/leave?name=db&members=3&member=$m&wait_ms=15000" > "$WORK/dl.$m" & done
sleep 1
early=$(cat "$WORK/dl.m1" "$WORK/dl.m2")
get "/sync/double-barrier/leave?name=db&members=3&member=m3" > "$WORK/dl.m3"
wait
t_ok "-z '$early' -a '$(jf "$WORK/dl.m1" .result)$(jf "$WORK/dl.m2" .result)$(jf "$WORK/dl.m3" .result)' = okokok" \
     "leave waits until all three have left"
t_ok "$(jf "$WORK/dl.m1" .granted_at_ms) -ge $(jf "$WORK/dl.m3" .asked_at_ms)" "and no one leaves before the last"

get "/sync/shared-count/set?name=sc&count=5" > /dev/null
v=$(t_jq "$(get "/sync/shared-count/get?name=sc")" .version)
t_ok "'$(t_jq "$(get "/sync/shared-count/try-set?name=sc&count=6&version=$v")" .succeeded)' = true" \
     "SharedCount: trySetCount at the version read succeeds"
t_ok "'$(t_jq "$(get "/sync/shared-count/try-set?name=sc&count=9&version=$v")" '(.succeeded | tostring) + " " + (.count | tostring)')' = 'false 6'" \
     "and at a stale version does not overwrite the newer count"

# From one ll-load over 32 connections (a curl process each would spend
# most of the time starting 1000 processes); --bodies keeps each answer.
"$T_BUILD/ll-load" -c 32 -n 1000 -t 60 --bodies "$WORK/al" \
    "$U/sync/atomic-long/increment?name=al&wait_ms=30000" > /dev/null
good=$(jq -r 'select(.succeeded == true) | .postValue' "$WORK/al" | sort -n | uniq | wc -l)
t_ok "$good -eq 1000" "DistributedAtomicLong: 1000 concurrent increments, 1000 distinct postValues ($good)"
t_ok "$(t_jq "$(get "/sync/atomic-long/get?name=al")" .postValue) -eq 1000" "and the counter is 1000"
t_log "increments: $(jq -s '{promoted: map(select(.promoted_tries > 0)) | length, instances: (map(.instance) | unique | length)}' -c "$WORK/al")"

echo "== requests refused"
code() { t_curl -o /dev/null -w '%{http_code}' "$@"; }
t_ok "$(code "$U/sync/nope/x?name=a") -eq 404" "an unknown primitive is 404"
t_ok "$(code "$U/sync/latch/nope?name=a") -eq 404" "an unknown operation is 404"
t_ok "$(code "$U/sync/latch/await?name=a&hold_ms=5") -eq 400" "a parameter the operation does not take is 400"
t_ok "$(code "$U/sync/latch/await?name=a&wait_ms=999999") -eq 400" "a wait past --max-wait-ms is 400"
t_ok "$(code "$U/sync/latch/await?name=a/b") -eq 400" "a name with a slash is 400"
t_ok "$(code "$U/sync/rwlock/read?name=a&backend=etcd") -eq 400" "an unknown backend is 400"
t_ok "$(code -X POST "$U/sync/reset?name=a") -eq 401" "POST /sync/reset needs the admin token"
t_ok "$(code -X POST "$U/test/read") -eq 405" "POST /test/read is 405"

echo "== bench/compare --scenario sync, short"
out=$WORK/compare
if "$T_ROOT/bench/compare" --scenario sync --duration 1 --limits-seconds 0.6 --out "$out" \
        > "$WORK/compare.log" 2>&1; then
    res=$(find "$out" -name results-sync.json | head -1)
    t_ok "-n '$res'" "it writes results-sync.json"
    if [ -n "$res" ]; then
        planned=$(t_curl "$U/sync" | jq '[.synchronizers[] | select(.bench != null)] | length')
        t_ok "$(jq '.runs | length' "$res") -eq $planned" "every synchronizer with a bench operation ran ($planned)"
        t_ok "$(jq '[.runs[] | select(.ok > 0)] | length' "$res") -eq $planned" "each one answered ok under contention"
        t_ok "$(jq '[.runs[] | select(.ceiling > 0)] | length' "$res") -eq $planned" "each one has its ceiling"
        t_ok "$(jq '[.runs[].violations] | add' "$res") -eq 0" "no invariant broken (permits, readers and writers, values)"
    fi
else
    t_ok "1 -eq 0" "bench/compare --scenario sync runs ($(tail -3 "$WORK/compare.log" | tr '\n' ' '))"
fi

echo "== Curator's own recipes in Java on the same paths"
CURATOR_CP=/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar
CLASSES=$WORK/classes
mkdir -p "$CLASSES"
cj() { java -Xmx64m -XX:+UseSerialGC -cp "$CLASSES:$CURATOR_CP" CuratorSync "$LOCKLAB_ZK" "$@" 2>/dev/null; }
built=no
if t_need javac java /usr/share/java/curator-recipes.jar /usr/share/java/slf4j-nop.jar -- \
          "Curator interoperation (javac, libcurator-recipes-java, libslf4j-java)"; then
    if javac -encoding UTF-8 -cp "$CURATOR_CP" -d "$CLASSES" "$T_ROOT/tests/CuratorSync.java" > "$WORK/javac.log" 2>&1
    then built=yes
    else sed 's/^/    javac: /' "$WORK/javac.log" | head -20
    fi
    t_ok "$built = yes" "tests/CuratorSync.java compiles against Debian's Curator"
fi
if [ $built = yes ]; then
    for n in jrw jsem jal; do sync_reset $n; done
    cj rw-write /locklab/sync/rwlock/jrw 6000 > "$WORK/jw" &
    java_pid=$!
    for ((i = 0; i < 60; i++)); do grep -q '^held' "$WORK/jw" && break; sleep 0.5; done
    t_ok "'$(t_jq "$(get "/sync/rwlock/read?backend=curator&name=jrw&wait_ms=1000")" .result)' = lock_timeout" \
         "a Curator writer in Java keeps locklab's readers out"
    wait "$java_pid"
    t_ok "'$(t_jq "$(get "/sync/rwlock/read?backend=curator&name=jrw&wait_ms=5000")" .result)' = ok" \
         "locklab reads once Java released"
    get "/sync/rwlock/read?backend=curator&name=jrw&hold_ms=15000" > /dev/null &
    holder=$!
    t_until 30 zk_has /locklab/sync/rwlock/jrw || t_log "the reader never held jrw"
    t_ok "'$(cj rw-try /locklab/sync/rwlock/jrw write 1000)' = busy" "locklab's reader keeps a Java writer out"
    t_ok "'$(cj rw-try /locklab/sync/rwlock/jrw read 1000)' = acquired" "but not a Java reader"
    wait "$holder"

    # maxLeases 2 shared: Java's two threads and locklab's callers together.
    cj sem-run /locklab/sync/semaphore/jsem 2 2 8 150 > "$WORK/js" &
    java_pid=$!
    for i in $(seq 12); do
        get "/sync/semaphore/acquire?backend=curator&name=jsem&permits=2&hold_ms=150&wait_ms=30000" > "$WORK/ls.$i" &
        sleep 0.1
    done
    wait
    {
        awk '$1 == "lease" { print $2, 1; print $3, -1 }' "$WORK/js"
        for i in $(seq 12); do
            printf '%s 1\n%s -1\n' "$(jf "$WORK/ls.$i" .granted_at_ms)" "$(jf "$WORK/ls.$i" .released_at_ms)"
        done
    } | sort -k1,1n -k2,2n > "$WORK/leases"
    most=$(awk '{ n += $2; if (n > m) m = n } END { print m }' "$WORK/leases")
    jl=$(grep -c '^lease' "$WORK/js")
    ll=$(cat "$WORK"/ls.* | jq -s 'map(select(.result == "ok")) | length')
    t_ok "$jl -eq 16 -a $ll -eq 12" "Java took 16 leases and locklab 12 on one InterProcessSemaphoreV2"
    t_ok "$most -le 2" "never more than maxLeases = 2 held together ($most)"

    cj atomic /locklab/sync/atomic-long/jal /locklab/sync/atomic-long-lock/jal 4 50 > "$WORK/ja" &
    java_pid=$!
    seq 200 | xargs -P 8 -I{} curl -s -m 60 "$U/sync/atomic-long/increment?name=jal&wait_ms=30000" > "$WORK/la"
    wait "$java_pid"
    values=$( { awk '$1 == "value" { print $2 }' "$WORK/ja"; jq -r 'select(.succeeded == true) | .postValue' "$WORK/la"; } |
              sort -n | uniq | wc -l)
    t_ok "$values -eq 400" "Java's DistributedAtomicLong and locklab's: 400 increments, 400 distinct values ($values)"
    t_ok "$(t_jq "$(get "/sync/atomic-long/get?name=jal")" .postValue) -eq 400" "and the counter is 400: none lost"

    # A value near the limit, as a Java client stores it (8 bytes, big
    # endian): an add or an increment past it is refused, not wrapped (nor,
    # in the sanitized build, an abort: signed overflow). The values are
    # read with the shell (jq's numbers are doubles).
    post_value() { [[ $1 =~ \"postValue\":(-?[0-9]+) ]] && printf '%s' "${BASH_REMATCH[1]}"; }
    near=$((0x7fffffffffffffff - 5))
    t_ok "'$(cj atomic-set /locklab/sync/atomic-long/jal /locklab/sync/atomic-long-lock/jal "$near")' = 'set $near'" \
         "Java's forceSet stores $near"
    for op in "add&delta=10" "add&delta=5" increment; do
        j=$(t_curl -w ' %{http_code}' "$U/sync/atomic-long/${op%%&*}?name=jal${op#"${op%%&*}"}&wait_ms=5000")
        case $op in
            "add&delta=5") want="200 true $((near + 5))" ;;
            *) want="400 false" ;;
        esac
        got="${j##* } $(t_jq "${j% *}" .succeeded) $(post_value "${j% *}")"
        t_ok "'${got% }' = '$want'" "atomic-long $op at $near (or after): $want (${j% *})"
    done
    t_ok "'$(post_value "$(get "/sync/atomic-long/get?name=jal")")' = $((near + 5))" \
         "the counter holds the last value written"
fi

t_done
