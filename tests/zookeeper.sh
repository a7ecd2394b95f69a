#!/usr/bin/env bash
# tests/zookeeper.sh — the ZooKeeper strategies against the real stack:
# three locklab instances behind nginx, a three-server ZooKeeper ensemble.
#
#   1. exact counts: 200 units, 1000 purchases, 64 connections, for
#      zk-ephemeral, zk-sequential-poll, zk-sequential and curator;
#   2. re-entry within one request: reentry=3 sells on zk-sequential and
#      curator; the non-reentrant two wait for themselves (lock_timeout);
#   3. a holder that dies in its critical section (?crash=1, and
#      `bench/stack kill app:PORT` during ?hold_ms) keeps the lock only
#      until its session expires; the others go on and the counts stay exact;
#      `bench/stack up` restores the instance; a holder paused past its
#      session timeout (SIGSTOP) does not write when it wakes up;
#   4. a ZooKeeper server killed in the middle of a run — a follower, then
#      the leader — keeps the counts exact; `bench/stack up` restores it;
#   5. a Java client holding Curator's own InterProcessMutex on
#      /locklab/locks/1002 (tests/CuratorLock.java) and locklab's `curator`
#      strategy exclude each other, both ways. Skipped without java and
#      Debian's libcurator-recipes-java.
#
# Nothing here asserts timing. The session timeout is a fifth of
# --lease-ms (6 s by default), which bounds how long a dead holder blocks.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=tests/lib.sh
. "${LOCKLAB_TEST_LIB:-$HERE/lib.sh}"

t_setup
STACK=${LOCKLAB_STACK:-${LOCKLAB_ROOT:-$HERE/..}/bench/stack}

# The ensemble: these tests need three servers.
zk_count() { local IFS=,; set -- $LOCKLAB_ZK; echo $#; }
if (($(zk_count) < 3)); then
    "$STACK" up --zk 3 >/dev/null || { echo "not ok - bench/stack up --zk 3"; exit 1; }
    t_setup
fi
IFS=, read -ra INSTANCES <<<"$LOCKLAB_INSTANCES"
ZK_LOCKS=(zk-ephemeral zk-sequential-poll zk-sequential curator)

# Wait until every instance answers and the ensemble has a leader again.
stack_whole() {
    local i
    "$STACK" up >/dev/null 2>&1
    for ((i = 0; i < 120; i++)); do
        "$STACK" zk-leader >/dev/null 2>&1 && all_healthy && return 0
        sleep 0.5
    done
    return 1
}

all_healthy() {
    local u
    for u in "${INSTANCES[@]}"; do
        curl -sf -m 2 "$u/health" >/dev/null || return 1
    done
}

port_of() { local u=${1##*:}; echo "${u%%/*}"; }

# ------------------------------------------------------------ 1. exact counts

for lock in "${ZK_LOCKS[@]}"; do
    t_reset 200
    t_load "lock=$lock" 1000 64
    t_exact "$lock"
    t_ok "((L_sold > 0))" "$lock: sells through nginx"
done

# ------------------------------------------------------------ 2. re-entry

for lock in zk-sequential curator; do
    t_reset 5
    t_load "lock=$lock&reentry=3" 20 4
    t_exact "$lock reentry=3"
    t_ok "((L_sold == 5 && L_lock_timeout == 0))" "$lock: reentry=3 sells within one request"
done
for lock in zk-ephemeral zk-sequential-poll; do
    t_reset 5
    t_load "lock=$lock&reentry=2&wait_ms=300" 2 1
    t_ok "((L_sold == 0 && L_lock_timeout == 2 && L_final == 5))" \
         "$lock: not reentrant, reentry=2 waits for itself until the deadline"
done

# ------------------------------------------------------------ 3. dead holders

# ?crash=1: the holder _exit()s right after acquiring; its node lives on
# until ZooKeeper expires the session, then the queue moves on.
for lock in zk-ephemeral zk-sequential curator; do
    victim=${INSTANCES[1]}
    t_reset 100
    curl -s -m 30 -o /dev/null "$victim/check/lock?lock=$lock&crash=1"
    t_ok "! curl -sf -m 2 -o /dev/null $victim/health" "$lock: the crash=1 holder is dead"
    t_load "lock=$lock" 300 32
    t_exact "$lock after a holder crashed"
    t_ok "((L_sold > 0))" "$lock: the lock came back when the dead holder's session expired"
    t_ok stack_whole "bench/stack up restores app:$(port_of "$victim")"
done

# bench/stack kill app:PORT while a request holds the lock for 3 s.
victim=${INSTANCES[2]}
t_reset 100
curl -s -m 30 -o /dev/null "$victim/check/lock?lock=zk-sequential&hold_ms=3000" &
holder=$!
sleep 1
"$STACK" kill "app:$(port_of "$victim")" >/dev/null
wait "$holder"
t_load "lock=zk-sequential" 300 32
t_exact "zk-sequential after app:$(port_of "$victim") was killed holding the lock"
t_ok "((L_sold > 0))" "zk-sequential: the killed holder's lock was released by its session"
t_ok stack_whole "bench/stack up restores app:$(port_of "$victim")"

# A holder paused (SIGSTOP) in its critical section past the session
# timeout: the others sell meanwhile; on SIGCONT its `check` hook finds
# the session expired and it answers 503 without writing; the instance
# then opens a new session and sells again.
PID_DIR=${LOCKLAB_PID_DIR:-${LOCKLAB_ROOT:-$HERE/..}/.run/pids}
victim=${INSTANCES[0]}
pidfile="$PID_DIR/app-$(port_of "$victim").pid"
if [[ ! -r $pidfile ]]; then
    echo "ok - # SKIP paused holder: no $pidfile"
else
    read -r vpid <"$pidfile"
    for lock in zk-ephemeral curator; do
        t_reset 10
        paused=$(mktemp)
        curl -s -m 60 -o "$paused" "$victim/check/lock?lock=$lock&hold_ms=2000&wait_ms=30000" &
        holder=$!
        sleep 0.5
        kill -STOP "$vpid"
        other=$(curl -s -m 60 "${INSTANCES[1]}/check/lock?lock=$lock&wait_ms=30000")
        kill -CONT "$vpid"
        wait "$holder"
        t_ok "grep -q '\"result\":\"sold\"' <<<'$other'" "$lock: another instance sells while the holder is paused"
        t_ok "grep -q 'lost before the write' '$paused'" "$lock: the paused holder's check finds its session expired (503)"
        t_ok "[[ \$(curl -s $LOCKLAB_URL/stock) == *'\"count\":9'* ]]" "$lock: only the live holder's sale was written"
        t_ok "curl -s '$victim/check/lock?lock=$lock' | grep -q '\"result\":\"sold\"'" \
             "$lock: the paused instance sells again on a new session"
        rm -f "$paused"
    done
fi

# ------------------------------------------------------------ 4. ZooKeeper dies

# kill_zk_later ROLE DELAY: in the background, kill the leader or a
# follower DELAY seconds from now.
kill_zk_later() {
    local role=$1 delay=$2
    (
        sleep "$delay"
        leader=$("$STACK" zk-leader 2>/dev/null) || exit 0
        k=$leader
        [[ $role == follower ]] && k=$((leader % 3 + 1))
        echo "# killing zk:$k ($role)"
        "$STACK" kill "zk:$k" >/dev/null
    ) &
    KILLER=$!
}

for run in "zk-sequential follower" "curator leader" "zk-ephemeral leader"; do
    read -r lock role <<<"$run"
    t_ok stack_whole "the ensemble is whole before killing a $role"
    t_reset 200
    kill_zk_later "$role" 2
    t_load "lock=$lock" 1000 64
    wait "$KILLER"
    t_exact "$lock with the ZooKeeper $role killed mid-run"
    t_ok "((L_sold > 0))" "$lock: sells with two of three ZooKeeper servers"
done
t_ok stack_whole "bench/stack up restores the ZooKeeper server"

# ------------------------------------------------------------ 5. Curator itself

CURATOR_CP=/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar
curator_java() {
    java -Xmx64m -XX:+UseSerialGC -cp "$CURATOR_CP" "$HERE/CuratorLock.java" \
        "$LOCKLAB_ZK" /locklab/locks/1002 "$@" 2>/dev/null
}

if ! command -v java >/dev/null || [[ ! -r /usr/share/java/curator-recipes.jar ]]; then
    echo "ok - # SKIP Curator interoperation: needs java and libcurator-recipes-java"
else
    out=$(mktemp)
    t_reset 10 1002
    curator_java hold 10000 >"$out" &
    java_pid=$!
    for ((i = 0; i < 120; i++)); do
        grep -q '^held' "$out" && break
        sleep 0.5
    done
    echo "# Java: $(head -1 "$out")"
    t_ok "grep -q '^held .*/_c_.*-lock-[0-9]\{10\}' '$out'" "Curator's node is named _c_<uuid>-lock-<sequence>"
    t_load "lock=curator&product=1002&wait_ms=1000" 3 3
    t_ok "((L_sold == 0 && L_lock_timeout == 3))" "locklab waits while Java's Curator holds the lock"
    wait "$java_pid"
    t_load "lock=curator&product=1002" 3 3
    t_ok "((L_sold == 3))" "locklab sells once Curator released it"

    curl -s -m 30 -o /dev/null "${INSTANCES[0]}/check/lock?lock=curator&product=1002&hold_ms=8000" &
    holder=$!
    sleep 1
    t_ok "[[ \$(curator_java try 1000) == busy* ]]" "Java's Curator waits while locklab holds the lock"
    wait "$holder"
    t_ok "[[ \$(curator_java try 5000) == acquired* ]]" "Java's Curator acquires once locklab released it"
    rm -f "$out"
fi

t_done
