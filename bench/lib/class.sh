# shellcheck shell=bash
# bench/lib/class.sh — the class page's side in the scripts that run
# lessons and comparisons (bench/lesson, bench/compare).
#
# The page is web/class.html, which nginx serves at /class/ of the stack's
# front (nginx/nginx.conf.in). It learns what is running from one small
# file, .run/class/state.json, served beside it at /class/state.json: a
# JSON object with at least the lesson (or "compare"), the phase
# ("failure", "fix", "run"; "done" at the end, with "final" holding the
# numbers shown last), the strategy whose `sold` it adds up over the
# instances, the product and its initial stock S. The rest (seed, what,
# why, rows, note) it shows when present.
#
#   class_url            the page's address on the running stack
#   class_write JSON     the state, replaced whole: written beside and
#                        renamed, so the page never reads half of it
#
# Needs LOCKLAB_URL (.run/stack.env) and STACK_RUN, the stack's folder.

class_url() { printf '%s/class/\n' "$LOCKLAB_URL"; }

class_write() {
    local dir="$STACK_RUN/class"
    [[ -d $dir ]] || mkdir -p "$dir"
    printf '%s\n' "$1" > "$dir/state.json.new" && mv -f "$dir/state.json.new" "$dir/state.json"
}

# json_str VAR S: VAR := S as a JSON string, in this shell (a lesson writes
# the state a few times a run, and a jq costs 30-50 ms of CPU on a loaded
# machine). The scripts' strings hold no control characters but newlines
# and tabs.
json_str() {
    local s=$2
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}
    s=${s//$'\t'/\\t}
    s=${s//$'\r'/\\r}
    printf -v "$1" '"%s"' "$s"
}
