#!/usr/bin/env bash
# zookeeper.sh — the ZooKeeper strategies against the real stack: three
# locklab instances behind nginx and a three-server ZooKeeper ensemble.
#
#   1. exact counts: 200 units, 1000 purchases, 64 connections, for
#      zk-sequential and curator; the two slow teaching strategies,
#      zk-ephemeral and zk-sequential-poll, sell as fast as their polls let
#      them (25 and 50-70 sales/s, however fast the machine), so they get
#      60 units and 120 purchases over the 64 connections (60 of them sold
#      out), and ?wait_ms=25000 so that their
#      unfairness is not mistaken for inexactness;
#   2. re-entry within one request: reentry=3 sells on zk-sequential and
#      curator; the non-reentrant two wait for themselves (lock_timeout);
#   3. a holder that dies in its critical section (?crash=1, and
#      `bench/stack kill app:PORT` during ?hold_ms) keeps its lock only until
#      its session expires; the others go on, counts stay exact, and
#      `bench/stack up` restores the instance. A holder paused (SIGSTOP)
#      past its session timeout does not write when it wakes up: its `check`
#      hook answers 503;
#   4. a ZooKeeper server killed in the middle of a run — a follower, then
#      the leader — keeps the counts exact; `bench/stack up` restores it;
#   5. ll-limits' ZooKeeper ceiling loses its quorum in the middle of a
#      trial: the trial runs again and the ceiling is still the best of 3;
#   6. a Java client holding Curator's own InterProcessMutex on
#      /locklab/locks/1002 (tests/CuratorLock.java) and locklab's `curator`
#      strategy exclude each other, both ways. Skipped without javac and
#      Debian's libcurator-recipes-java (a failure under CI=true); a
#      CuratorLock.java that does not compile is a failure everywhere.
#
# Fault runs answer some requests 503 or 502 on purpose, so they assert
# "no unit oversold, no update lost" rather than t_exact's "every request
# sold or sold out". Nothing here asserts timing. The session timeout is a
# fifth of --lease-ms, at least 4 s: that bounds how long a dead holder
# blocks the others.
set -u
T_NAME=zookeeper
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_setup

STACK=$T_ROOT/bench/stack
PID_DIR=$T_RUN/pids
HERE=$T_ROOT/tests

# These tests need an ensemble of three.
IFS=, read -r -a ZK_SERVERS <<< "$LOCKLAB_ZK"
if [ "${#ZK_SERVERS[@]}" -lt 3 ]; then
    "$T_ROOT/bench/stack" up --zk 3 >/dev/null || { echo "stack up --zk 3 failed"; exit 1; }
    t_env
fi

S=200 R=1000 C=64

port_of() { local p=${1##*:}; echo "${p%%/*}"; }

all_healthy() {
    local url
    for url in "${T_INSTANCES[@]}"; do
        curl -sf -m 2 "$url/health" >/dev/null || return 1
    done
}

# The whole stack again: every instance answers, the ensemble has a leader.
stack_whole() {
    local i
    "$STACK" up >/dev/null 2>&1
    for ((i = 0; i < 120; i++)); do
        "$STACK" zk-leader >/dev/null 2>&1 && all_healthy && { echo yes; return; }
        sleep 0.5
    done
    echo no
}

# Exactness for runs with faults: nothing oversold, nothing lost, and the
# lock still works (something sold).
counts_exact() {
    t_ok "'$L_oversold' = 0 -a '$L_lost' = 0" "$1: 0 oversold, 0 lost updates"
    t_ok "$L_sold -gt 0" "$1: sells ($L_sold)"
}

# "yes" when the answer in $1 (a JSON text) says result $2.
result_is() { if [ "$(t_jq "$1" .result)" = "$2" ]; then echo yes; else echo no; fi; }

echo "== exact counts, three instances behind nginx"
for lock in zk-ephemeral zk-sequential-poll zk-sequential curator; do
    wait="" r=$R
    s=$S
    case $lock in zk-ephemeral | zk-sequential-poll) wait="&wait_ms=25000" s=60 r=120 ;; esac
    t_reset $s
    t_load "lock=$lock$wait" $r $C
    t_exact "$lock"
done

echo "== re-entry within one request"
for lock in zk-sequential curator; do
    t_reset 5
    t_load "lock=$lock&reentry=3" 20 4
    t_ok "$L_sold -eq 5 -a $L_lock_timeout -eq 0 -a $L_final -eq 0" \
         "$lock: reentry=3 sells within one request"
done
for lock in zk-ephemeral zk-sequential-poll; do
    t_reset 5
    t_load "lock=$lock&reentry=2&wait_ms=300" 2 1
    t_ok "$L_sold -eq 0 -a $L_other -eq 2 -a $L_final -eq 5" \
         "$lock: not reentrant, reentry=2 is refused (400) instead of waiting for itself"
done

echo "== a holder dies in its critical section"
victim=${T_INSTANCES[1]}
for lock in zk-ephemeral zk-sequential curator; do
    t_reset 100
    t_curl -o /dev/null "$victim/check/lock?lock=$lock&crash=1"
    alive=$(curl -sf -m 2 -o /dev/null "$victim/health" && echo yes || echo no)
    t_ok "$alive = no" "$lock: the crash=1 holder is dead"
    t_load "lock=$lock" 300 32
    counts_exact "$lock after its holder crashed"
    t_ok "$(stack_whole) = yes" "bench/stack up restores app:$(port_of "$victim")"
done

victim=${T_INSTANCES[2]}
t_reset 100
t_curl -o /dev/null "$victim/check/lock?lock=zk-sequential&hold_ms=3000" &
holder=$!
sleep 1
"$STACK" kill "app:$(port_of "$victim")" >/dev/null
wait "$holder"
t_load "lock=zk-sequential" 300 32
counts_exact "zk-sequential after app:$(port_of "$victim") was killed holding the lock"
t_ok "$(stack_whole) = yes" "bench/stack up restores app:$(port_of "$victim")"

echo "== a holder paused past its session timeout does not write"
victim=${T_INSTANCES[0]}
pidfile=$PID_DIR/app-$(port_of "$victim").pid
t_ok "-r '$pidfile'" "bench/stack keeps app:$(port_of "$victim")'s pid in $pidfile"
if [ -r "$pidfile" ]; then
    read -r vpid < "$pidfile"
    for lock in zk-ephemeral curator; do
        t_reset 10
        paused=$(mktemp)
        t_curl -o "$paused" "$victim/check/lock?lock=$lock&hold_ms=2000&wait_ms=30000" &
        holder=$!
        sleep 0.5
        kill -STOP "$vpid"
        # This waits until ZooKeeper expires the paused holder's session.
        other=$(t_curl "${T_INSTANCES[1]}/check/lock?lock=$lock&wait_ms=30000")
        kill -CONT "$vpid"
        wait "$holder"
        t_ok "$(result_is "$other" sold) = yes" "$lock: another instance sells while the holder is paused"
        lost=$(t_jq "$(cat "$paused")" '.result == "lock_lost" and (.error | contains("lost before the write"))')
        t_ok "$lost = true" "$lock: the woken holder finds its session expired and answers 503"
        t_ok "$(t_stock) -eq 9" "$lock: only the live holder's sale was written"
        t_ok "$(result_is "$(t_curl "$victim/check/lock?lock=$lock")" sold) = yes" \
             "$lock: the paused instance sells again on a new session"
        rm -f "$paused"
    done
fi

echo "== a ZooKeeper server dies in the middle of a run"
# kill_zk_later ROLE DELAY: in the background, kill the leader or a
# follower DELAY seconds from now.
kill_zk_later() {
    local role=$1 delay=$2
    (
        sleep "$delay"
        leader=$("$STACK" zk-leader 2>/dev/null) || exit 0
        k=$leader
        [ "$role" = follower ] && k=$((leader % 3 + 1))
        t_log "killing zk:$k ($role)"
        "$STACK" kill "zk:$k" >/dev/null
    ) &
    KILLER=$!
}

for run in "zk-sequential follower" "curator leader" "zk-ephemeral leader"; do
    read -r lock role <<< "$run"
    t_ok "$(stack_whole) = yes" "the ensemble is whole before killing a $role"
    t_reset $S
    kill_zk_later "$role" 2
    t_load "lock=$lock" $R $C
    wait "$KILLER"
    counts_exact "$lock with the ZooKeeper $role killed mid-run"
done
t_ok "$(stack_whole) = yes" "bench/stack up restores the ZooKeeper server"

echo "== ll-limits: a quorum lost in the middle of a trial costs a rerun, not the ceiling"
# --seconds 15 --trials 3: a warm-up trial and three kept ones of 5 s each.
# Two servers are killed at once (SIGKILL from their pid files: `bench/stack
# kill` takes the stack's lock, one server at a time) as soon as ll-limits
# says its first kept trial measures (--progress), its session up: that
# trial fails with whichever server it talks to, the third one stopping to
# serve without a quorum (its links to the two close with their processes;
# within syncLimit, 2.5 s, at the latest: inside the 5 s). ll-limits runs
# the product's ZooKeeper client, which rides out a loss shorter than its
# own waits, so the two stay down until ll-limits says a trial failed
# (--progress; within a session timeout or the call's deadline).
# `bench/stack up` then brings the two back; until they serve, ll-limits's
# reruns cannot reach ZooKeeper and wait for it uncounted, for up to 90 s
# (bench/limits/limits.c, RECOVER_S: as long as bench/stack waits for a server),
# however long two JVMs take to start on this machine. Nothing here
# depends on the machine's speed but those bounds.
lim=$(mktemp) limerr=$(mktemp)
limits() {
    "$T_BUILD/ll-limits" --only serial_zk --zk "$LOCKLAB_ZK" \
        --mysql-port "$LOCKLAB_MYSQL_PORT" --mysql-socket "$LOCKLAB_MYSQL_SOCKET" "$@"
}
limits --seconds 15 --trials 3 --progress >"$lim" 2>"$limerr" &
lim_pid=$!
for ((i = 0; i < 1200; i++)); do
    grep -q 'serial_zk: trial 1 of 3: measuring' "$limerr" && break
    kill -0 "$lim_pid" 2>/dev/null || break
    sleep 0.1
done
t_log "$(grep -m1 'trial 1 of 3' "$limerr" || echo "ll-limits never started its first kept trial")"
kill -KILL "$(cat "$PID_DIR/zk-1.pid")" "$(cat "$PID_DIR/zk-2.pid")"
t_log "killed zk:1 and zk:2"
for ((i = 0; i < 1200; i++)); do
    grep -q 'serial_zk: .*: failed: ' "$limerr" && break
    kill -0 "$lim_pid" 2>/dev/null || break
    sleep 0.1
done
t_log "$(grep -m1 ': failed: ' "$limerr" || echo "ll-limits saw no trial fail")"
"$STACK" up >/dev/null 2>&1
wait "$lim_pid"
kept=$(jq -r '.ceilings.serial_zk.trials | length' "$lim")
failed=$(jq -r '.ceilings.serial_zk.failed_trials | length' "$lim")
t_log "ll-limits: $(jq -c '.ceilings.serial_zk | {trials, failed_trials, error}' "$lim")"
t_ok "$kept -eq 3 -a $failed -ge 1" "serial_zk: 3 trials kept, $failed failed and ran again"
rm -f "$lim" "$limerr"
t_ok "$(stack_whole) = yes" "bench/stack up restores the ensemble"

echo "== Curator's own InterProcessMutex and locklab exclude each other"
CURATOR_CP=/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar
CLASSES=$(mktemp -d)
curator_java() {
    java -Xmx64m -XX:+UseSerialGC -cp "$CLASSES:$CURATOR_CP" CuratorLock \
        "$LOCKLAB_ZK" /locklab/locks/1002 "$@" 2>/dev/null
}

built=no
if t_need javac java /usr/share/java/curator-recipes.jar /usr/share/java/slf4j-nop.jar -- \
          "Curator interoperation (javac, libcurator-recipes-java, libslf4j-java)"; then
    if javac -encoding UTF-8 -cp "$CURATOR_CP" -d "$CLASSES" "$HERE/CuratorLock.java" > "$CLASSES/javac.log" 2>&1
    then built=yes
    else sed 's/^/    javac: /' "$CLASSES/javac.log" | head -20
    fi
    t_ok "$built = yes" "tests/CuratorLock.java compiles against Debian's Curator"
fi
if [ $built = yes ]; then
    # Each side acts on what it sees of the other, whatever a JVM takes to
    # start: Java holds until told to release (its stdin), and tries once
    # it sees locklab's node (try-held).
    out=$(mktemp)
    fifo=$CLASSES/release
    mkfifo "$fifo"
    t_reset 10 1002
    curator_java hold 60000 < "$fifo" > "$out" &
    java_pid=$!
    exec {java_in}> "$fifo"
    t_until 60 grep -q '^held' "$out" || t_log "Java never held the lock"
    t_log "Java: $(head -1 "$out")"
    named=$(grep -q '^held .*/_c_.*-lock-[0-9]\{10\}' "$out" && echo yes || echo no)
    t_ok "$named = yes" "Curator's node is named _c_<uuid>-lock-<sequence>, like ours"
    t_load "lock=curator&product=1002&wait_ms=1000" 3 3
    t_ok "$L_sold -eq 0 -a $L_lock_timeout -eq 3" "locklab waits while Java's Curator holds the lock"
    echo release >&"$java_in"
    exec {java_in}>&-
    wait "$java_pid"
    t_load "lock=curator&product=1002" 3 3
    t_ok "$L_sold -eq 3" "locklab sells once Curator released it"

    # locklab holds for 10 s: Java tries 1 s, as soon as it sees the node.
    curator_java try-held 1000 > "$out" &
    java_pid=$!
    t_until 60 grep -q '^ready' "$out" || t_log "Java never connected"
    t_curl -o /dev/null "${T_INSTANCES[0]}/check/lock?lock=curator&product=1002&hold_ms=10000" &
    holder=$!
    wait "$java_pid"
    got=$(grep -v '^ready' "$out" | head -1)
    t_ok "'$got' = busy" "Java's Curator waits while locklab holds the lock"
    wait "$holder"
    got=$(curator_java try 5000 | head -1)
    t_ok "'$got' = acquired" "Java's Curator acquires once locklab released it"
    rm -f "$out"
fi
rm -rf "$CLASSES"

t_done
