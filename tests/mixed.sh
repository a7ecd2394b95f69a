#!/usr/bin/env bash
# mixed.sh — two strategies selling one product at once, through nginx:
# what happens when two services guard one item with different locks
# (issue 35).
#
# Each pair shares one ll-load run, purchase j going to the pair's
# strategy j mod 2, so both sell product 1001 at the same time. Whatever
# the pair, no purchase may answer 500: a lock held by another kind of
# client is held (a 503 lock_timeout at worst), never an error.
#
#   redis-lua + redisson      one key, lock:P, in two layouts (a string,
#                             Redisson's hash): each finds the other's
#                             lock held, so they exclude each other —
#                             exact — and redisson counts the meetings
#                             (/stats "foreign"; a string lock's SET NX
#                             cannot tell a hash from its own kind)
#   curator + hybrid          wire-compatible: hybrid's second layer is
#                             Curator's InterProcessMutex on curator's path
#                             (and its first, redisson's hash, meets no
#                             other Redis lock): exact, nothing foreign
#   redisson + redisson-global  one family, two keys (lock:P, lock:all):
#                             no exclusion, lost updates
#   redis-lua + zk-sequential two families: no exclusion, lost updates
#
# ZooKeeper's and etcd's strategies cannot meet another protocol's node:
# each has its own root (/locklab/seq, /locklab/locks …), so they mix
# only as the last two pairs do.
#
# The lost updates are made certain, not likely: every sale pauses 20 ms
# between its read and its write (late_ms, a fault switch), while the
# other strategy's buyers, which its lock does not stop, keep reading and
# writing; the pair's 60 units go in about 70 sales a side, each of
# which overlaps several of the other side's. Nothing asserts how fast
# anything ran, and the waits (wait_ms=20000) outlast the whole run.
set -u
T_NAME=mixed
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_setup

S=60 R=200 C=8
Q="late_ms=20&wait_ms=20000"

# mix A B: R purchases over C connections, alternately strategy A and B.
mix() {
    t_reset $S
    t_load_urls "$1 + $2" $R $C "$LOCKLAB_URL/check/lock?lock=$1&$Q" \
        "$LOCKLAB_URL/check/lock?lock=$2&$Q"
    t_ok "$((L_errors + L_unknown + L_other + L_transport)) -eq 0" \
         "$1 + $2: no 500 and no transport error ($L_errors errors, $L_unknown unknown)"
}

echo "== one key, two layouts: they exclude each other, and the meeting is counted"
mix redis-lua redisson
t_exact "redis-lua + redisson"
met=$(t_stats_sum redisson foreign)
t_ok "$met -gt 0" "redisson met redis-lua's string lock on lock:1001 in $met purchases (/stats foreign)"

echo "== wire-compatible: hybrid queues in curator's own line"
mix curator hybrid
t_exact "curator + hybrid"
met=$(($(t_stats_sum curator foreign) + $(t_stats_sum hybrid foreign)))
t_ok "$met -eq 0" "curator + hybrid: no foreign lock met ($met)"

echo "== two keys of one family, two families: no exclusion, lost updates"
for pair in "redisson redisson-global" "redis-lua zk-sequential"; do
    read -r a b <<< "$pair"
    mix "$a" "$b"
    t_ok "$L_sold -gt $((T_STOCK - L_final))" \
         "$a + $b: sold $L_sold, the stock fell by $((T_STOCK - L_final)): $L_lost lost updates"
    t_ok "$((L_sold + L_sold_out)) -eq $L_requests" "$a + $b: every request answered sold or sold_out"
done

t_done
