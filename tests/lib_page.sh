# shellcheck shell=bash
# tests/lib_page.sh — what the tests ask of a report page, in a real
# browser (headless chromium, bench/lib/page.sh). Source it after lib.sh:
#
#   t_charts HTML   one line per chart of the DOM chromium built from HTML:
#                   "KIND POINTS MARKS": its data-chart, its data-points
#                   and how many elements of class "mark" (a bar, a dot, a
#                   bucket) it holds; nothing when chromium fails
#   t_png FILE      "WIDTH HEIGHT" of a PNG file, "not a PNG" otherwise
#   t_page HTML PNG WHAT
#                   the page WHAT in the browser: its charts (T_CHARTS, as
#                   t_charts prints them, and in the log), at least one,
#                   each with data, and PNG its screenshot 1200 pixels
#                   wide; a skip, and status 1, without chromium
#
# A chart has data when POINTS = MARKS > 0: the page says how many points
# it drew, and the DOM holds that many.
# shellcheck source=../bench/lib/page.sh
. "$T_ROOT/bench/lib/page.sh"

t_charts() {
    page_dom "$1" | awk 'BEGIN { RS = "</svg>" }
        /<svg/ {
            s = substr($0, index($0, "<svg"))
            kind = "?"; points = "?"
            if (match(s, /data-chart="[a-z]*"/)) kind = substr(s, RSTART + 12, RLENGTH - 13)
            if (match(s, /data-points="[0-9]*"/)) points = substr(s, RSTART + 13, RLENGTH - 14)
            print kind, points, gsub(/class="mark"/, "", s)
        }'
}

t_png() {
    if [ "$(head -c 8 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" != 89504e470d0a1a0a ]; then
        echo "not a PNG"
        return
    fi
    od -An -tu1 -j16 -N8 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4,
                                            $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }'
}

t_page() {
    T_CHARTS=""
    t_need chromium -- "headless chromium (apt-get install chromium): $3 in a browser" || return 1
    T_CHARTS=$(t_charts "$1")
    printf '%s\n' "$T_CHARTS" | sed 's/^/    chart: /'
    t_ok "$(grep -c . <<< "$T_CHARTS") -gt 0 -a $(awk '$2 != $3 || $2 == 0' <<< "$T_CHARTS" | wc -l) -eq 0" \
         "$3: every chart has data, as many marks in the DOM as it says it drew ($(grep -c . <<< "$T_CHARTS") charts)"
    t_ok "'$(t_png "$2" | cut -d' ' -f1)' = 1200" "${2##*/} is kept with the run"
}
