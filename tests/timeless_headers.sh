#!/usr/bin/env bash
# tests/timeless_headers.sh — a file's header states the design and its
# trade-off, timelessly (STYLE.md §5): numbers measured on a day belong in
# docs/journal.md, and the server's old design is no design of today's.
#
#   tests/timeless_headers.sh [ROOT]       (default: the tree's root)
#
# A header is a C file's first comment, /* to the first */, read as one
# line (as tests/lock_headers.sh reads it), of every .c and .h file git
# knows outside tests/. One fails when
#   - it holds a date, 20YY-MM-DD;
#   - a sentence of it says measured (measure, measured, measuring) and
#     holds a figure with a unit of rate or of time: /s (sales/s, sold/s,
#     req/s …), per second, ms, µs, us;
#   - in the product's floors (core/ clients/ store/ locks/ sync/ app/), it
#     names the thread-per-connection design the server no longer has:
#     "thread-per-connection", "thread per (HTTP) connection", "the thread
#     build", "a thread each".
# Then, so that the check cannot rot into one that passes everything, it
# must find each kind in headers written here. Exit 0 when no header fails,
# 1 with one line per header and what it holds.
set -u
ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

DATE='20[0-9][0-9]-[0-1][0-9]-[0-3][0-9]'
RATE='[0-9][0-9.,]*k?( ?(-|–|->|→|to) ?[0-9][0-9.,]*k?)? ?([a-z]+/s|/s|per second|ms|µs|us)\b'
THREADS='thread-per-connection|thread per (http )?connection|the thread build|a thread each'

# The header comment of file $1, one line.
header() {
    awk 'NR == 1 && !/^\/\*/ { exit } { print } /\*\// { exit }' "$1" |
        sed -e 's|^/\*||' -e 's|^ *\*/*||' -e 's|\*/||' | tr '\n' ' ' | tr -s ' '
}

# What the header of file $1 (named $2 in the tree) holds that it should
# not, one finding a line.
findings() {
    local h
    h=$(header "$1")
    grep -oE "$DATE" <<< "$h" | sed 's/^/a date: /'
    # One sentence a line: a measurement is a "measured" and a figure in one.
    awk '{ gsub(/[.;:] /, "&\n"); print }' <<< "$h" | grep -iE 'measur' | grep -oiE "$RATE" |
        sed 's/^/a measured figure: /'
    case $2 in
    core/*|clients/*|store/*|locks/*|sync/*|app/*)
        grep -oiE "$THREADS" <<< "$h" | sed 's/^/the thread-per-connection design: /' ;;
    esac
}

# The checker must see each kind.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat > "$T/dated.c" <<'EOF'
/* dated.c — a header with a date: quiet, alternated (2026-11-28). */
EOF
cat > "$T/rate.c" <<'EOF'
/* rate.c — a figure measured: through nginx it measured 4.4-4.8k ->
 * 4.9-5.3k sales/s. */
EOF
cat > "$T/threads.c" <<'EOF'
/* threads.c — the waiting room, as the thread build had it. */
EOF
cat > "$T/true.c" <<'EOF'
/* true.c — a lease measured from when its renewal was sent; 3 s by
 * default, renewed every lease/3. */
EOF
self=0
[ "$(findings "$T/dated.c" bench/dated.c | grep -c '^a date')" = 1 ] || self=1
[ "$(findings "$T/rate.c" bench/rate.c | grep -c '^a measured figure')" -ge 1 ] || self=1
[ "$(findings "$T/threads.c" locks/threads.c | grep -c '^the thread')" = 1 ] || self=1
[ "$(findings "$T/threads.c" bench/threads.c | wc -l)" = 0 ] || self=1
[ "$(findings "$T/true.c" locks/true.c | wc -l)" = 0 ] || self=1
if [ "$self" != 0 ]; then
    echo "timeless_headers: the check itself fails on its own examples"
    exit 1
fi

bad=0 n=0
cd "$ROOT" || exit 1
while IFS= read -r f; do
    n=$((n + 1))
    while IFS= read -r what; do
        [ -n "$what" ] || continue
        echo "$f: $what"
        bad=$((bad + 1))
    done <<< "$(findings "$f" "$f")"
done < <(git ls-files '*.c' '*.h' | grep -v '^tests/')
if [ "$n" -lt 100 ]; then
    echo "timeless_headers: read only $n files (not a checkout?)"
    exit 1
fi
[ "$bad" = 0 ] && echo "timeless_headers: $n headers, none dated or of the old design"
[ "$bad" = 0 ]
