# shellcheck shell=bash
# bench/lib/page.sh — a page as a person sees it, in Debian's chromium,
# headless. page_shot HTML PNG HEIGHT renders HTML into a PNG 1200 pixels
# wide and HEIGHT high (bench/compare keeps report.png beside report.html);
# page_dom HTML prints the DOM chromium built from it, which is what a
# test reads to see that every chart has data (the charts are inline SVG
# and the page has no script, so the DOM is the page as drawn). Each call
# gets a profile directory of its own, removed after: chromium refuses to
# share one, and other checkouts may render at the same time. As root,
# chromium needs --no-sandbox. Its chatter (no D-Bus, no GPU) goes to
# PAGE_LOG, /dev/null unless set; PAGE_TIMEOUT bounds one chromium (120 s
# unless set). Sourced by bench/compare and the tests.
#
# A live page (web/class.html, served by the stack) runs its scripts:
# page_live URL MS [PNG WIDTH HEIGHT] prints its DOM after MS ms of the
# page's own time, and takes its screenshot then into PNG if given. That
# time is chromium's virtual time (--virtual-time-budget): timers fire at
# once, but the clock stops while a fetch is in flight, so a page polling
# every P ms has polled about MS / P times, each answered, however slow
# the machine.

# page_browser: the chromium on PATH, if any.
page_browser() {
    command -v chromium || command -v chromium-browser
}

# page_run ARGS…: one headless chromium, at most PAGE_TIMEOUT s.
page_run() {
    local browser profile rc=0
    browser=$(page_browser) || return 127
    profile=$(mktemp -d)
    timeout "${PAGE_TIMEOUT:-120}" "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --no-first-run --user-data-dir="$profile" "$@" 2>>"${PAGE_LOG:-/dev/null}" || rc=$?
    rm -rf "$profile"
    return "$rc"
}

page_shot() {
    if ! page_browser > /dev/null; then
        echo "compare: chromium is not installed (apt-get install chromium): no ${2##*/}" >&2
        return 1
    fi
    rm -f "$2"
    page_run --window-size="1200,$3" --screenshot="$2" "file://$1" > /dev/null || true
    [ -s "$2" ] || { echo "compare: chromium could not render $1" >&2; return 1; }
}

page_dom() {
    page_run --dump-dom "file://$1"
}

page_live() {
    local url=$1 ms=$2 shot=()
    if [ -n "${3:-}" ]; then
        rm -f "$3"
        shot=(--window-size="$4,$5" --screenshot="$3")
    fi
    page_run --virtual-time-budget="$ms" "${shot[@]}" --dump-dom "$url"
}
