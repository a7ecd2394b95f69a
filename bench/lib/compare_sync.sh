# shellcheck shell=bash
# bench/lib/compare_sync.sh — bench/compare --scenario sync, sourced by
# bench/compare once the stack answers and RUN/raw/ holds machine.env and
# settings.env: every synchronizer of GET /sync under contention, through
# TARGET (nginx → three instances), against its ceiling.
#
# For each synchronizer with a bench operation (ll-report sync-plan, from
# GET /sync): POST /sync/reset of the names it uses, then ll-load -c CONNS
# for SYNC_SECONDS (--duration, 5 by default) on
# /sync/<primitive>/<bench>?…&name=bench-<primitive>&backend=…, every
# answer kept (ll-load --bodies) for ll-report to check the invariant from
# what each one says it was granted. The ceilings come first: ll-limits
# --only sync runs each bench operation from one client, in-process, on
# the same Redis and ZooKeeper; serial_redis and serial_zk, the lock
# families' ceilings, are measured beside them for the second ratio. CONNS defaults to 12: synchronizer
# operations take at most half an instance's worker slots at once (8 of 16
# in the stack; a caller past that waits for a place within its wait_ms),
# and nginx's round robin gives a slow instance more than its third.
# Uses ROOT BUILD REPORT RAW RUN TARGET CONNS DURATION LIMITS_SECONDS
# ALL_INSTANCES from bench/compare.

SYNC_SECONDS=${DURATION:-5}
SYNC_WAIT_MS=20000
n_sync=$(curl -sf -m 10 "$TARGET/sync" | tee "$RAW/sync.json" | "$REPORT" sync-plan - | wc -l) ||
    die "GET $TARGET/sync failed"
[ "$n_sync" -gt 0 ] || die "GET $TARGET/sync lists no synchronizer with a bench operation"

if [ "$(echo "$LIMITS_SECONDS" | tr -d '0.')" != "" ]; then    # not zero
    printf 'compare: measuring the synchronizers'"'"' ceilings with ll-limits (%d × %s s) … ' \
        "$((n_sync + 2))" "$LIMITS_SECONDS"
    "$BUILD/ll-limits" --only sync,serial_redis,serial_zk --seconds "$LIMITS_SECONDS" \
        > "$RAW/limits.json" || die "ll-limits failed"
    echo "done"
else
    echo '{"ceilings":{}}' > "$RAW/limits.json"
fi

echo "compare: sync — $n_sync synchronizers × ${SYNC_SECONDS} s over $CONNS connections to $TARGET"
while IFS=$'\t' read -r idx primitive backend query names; do
    label=$(printf '[%s/%02d] %-16s %-8s' "$idx" "$n_sync" "$primitive" "$backend")
    IFS=, read -r -a reset <<< "$names"
    for name in "${reset[@]}"; do
        curl -sf -m 60 -H @"$STACK_RUN/secrets/admin-header" -X POST \
            "$TARGET/sync/reset?name=$name" > /dev/null || die "POST $TARGET/sync/reset failed"
    done
    "$BUILD/ll-load" -c "$CONNS" -d "$SYNC_SECONDS" --json --bodies "$RAW/$idx.bodies" \
        "$TARGET$query&wait_ms=$SYNC_WAIT_MS" > "$RAW/$idx.load.json" 2>/dev/null ||
        die "ll-load could not reach $TARGET"
    printf '%s %s ok over %s s\n' "$label" "$("$REPORT" get "$RAW/$idx.load.json" result.ok 2>/dev/null || echo 0)" \
        "$("$REPORT" get "$RAW/$idx.load.json" elapsed_s)"
done < <("$REPORT" sync-plan "$RAW/sync.json")

echo
"$REPORT" sync "$RUN"
echo
echo "compare: results in $RUN/ (results-sync.json, report-sync.md)"
