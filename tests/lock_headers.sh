#!/usr/bin/env bash
# tests/lock_headers.sh — each strategy's header comment agrees with its
# struct lock_ops .props on re-entry and fencing.
#
#   tests/lock_headers.sh [LOCKS-DIR]      (default: the tree's locks/)
#
# A file's header is its first comment, /* to the first */ (STYLE.md §5),
# read as one line of lower case. Some phrases the headers use are claims;
# each claim must match the .props of every struct lock_ops the file
# defines:
#
#   claim                                    the props must
#   "not reentrant", "non-reentrant"         lack LOCK_REENTRANT
#   "reentrant per", "re-entry count",       have LOCK_REENTRANT
#   "re-entry is counted"
#   "no fencing token", "cannot issue a      lack LOCK_FENCED
#   fencing token", "fencing token does
#   not save it"
#   "?fence=1"                               have LOCK_FENCED
#
# A header that says none of them is not checked. The phrases are the
# headers' own words (grep them before adding a strategy that says it
# differently). Then, so that the check itself cannot rot into one that
# passes everything: it must have read at least MIN_CLAIMS claims, and on a
# copy of redis_lua.c given LOCK_REENTRANT (its header says "not
# reentrant") it must fail. Exit 0 when all agree, 1 with one line per
# disagreement.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MIN_CLAIMS=15

# The claims: phrases (an extended regular expression) | has or lacks | bit.
CLAIM_RULES=(
    "not reentrant|non-reentrant|lacks|LOCK_REENTRANT"
    "reentrant per |re-entry count|re-entry is counted|has|LOCK_REENTRANT"
    "no fencing token|cannot issue a fencing token|fencing token does not save it|lacks|LOCK_FENCED"
    "[?]fence=1|has|LOCK_FENCED"
)

# The header comment of file $1, one lower-case line.
header() {
    awk 'NR == 1 && !/^\/\*/ { exit } { print } /\*\// { exit }' "$1" |
        sed -e 's|^/\*||' -e 's|^ *\*/*||' -e 's|\*/||' |
        tr '\n' ' ' | tr -s ' ' | tr '[:upper:]' '[:lower:]'
}

# "name props" for each struct lock_ops defined in file $1: its lines from
# "const struct lock_ops lock_x = {" to "};", and in them .props up to its
# comma (a summary may hold braces, a value of .props no comma).
props() {
    awk '/^const struct lock_ops lock_[a-z0-9_]* *= *[{]/ { name = $4; body = ""; on = 1 }
         on { body = body " " $0 }
         on && /^[}];/ { on = 0
                         if (match(body, /[.]props *= *[^,]*,/)) {
                             p = substr(body, RSTART, RLENGTH - 1)
                             sub(/[.]props *= */, "", p); gsub(/ +/, " ", p)
                             print name, p
                         } else
                             print name, "?" }' "$1"
}

CLAIMS=0
# check FILE: print each disagreement; 1 when any.
check() {
    local f=$1 h name p bad=0 rule bit want phrases said has
    h=$(header "$f")
    while read -r name p; do
        [ -n "$name" ] || continue
        [ "$p" != "?" ] || { echo "$f: $name: no .props read"; bad=1; continue; }
        for rule in "${CLAIM_RULES[@]}"; do
            bit=${rule##*|} rule=${rule%|*}
            want=${rule##*|} phrases=${rule%|*}
            [[ $h =~ ($phrases) ]] || continue
            said=${BASH_REMATCH[1]}
            CLAIMS=$((CLAIMS + 1))
            if [[ $p == *"$bit"* ]]; then has=has; else has=lacks; fi
            [ "$has" = "$want" ] ||
                { echo "$f: $name: the header says \"$said\", .props $has $bit"; bad=1; }
        done
    done < <(props "$f")
    return $bad
}

check_dir() {
    local f bad=0
    CLAIMS=0
    for f in "$1"/*.c; do
        check "$f" || bad=1
    done
    return $bad
}

dir=${1:-$ROOT/locks}
if ! check_dir "$dir"; then
    echo "lock_headers: headers and .props disagree (above)"
    exit 1
fi
if [ "$CLAIMS" -lt $MIN_CLAIMS ]; then
    echo "lock_headers: only $CLAIMS claims read in $dir/*.c headers (at least $MIN_CLAIMS expected): the header or .props parsing is broken"
    exit 1
fi
echo "lock_headers: $CLAIMS claims in $dir/*.c headers, all agree with .props"

# The check must fail where a header and .props really disagree.
[ $# -eq 0 ] || exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/\(\.props *= *LOCK_DISTRIBUTED\)/\1 | LOCK_REENTRANT/' "$ROOT/locks/redis_lua.c" > "$tmp/redis_lua.c"
if check_dir "$tmp" >/dev/null; then
    echo "lock_headers: redis_lua.c given LOCK_REENTRANT against its \"not reentrant\" passed: the check cannot fail"
    exit 1
fi
echo "lock_headers: and redis_lua.c given LOCK_REENTRANT fails it, as it must"
