#!/usr/bin/env bash
# tests/docs_links.sh — every relative link of README.md and docs/*.md
# leads somewhere: the file exists, and a link into a Markdown page's
# section (`](docs/stack.md#the-tests)`, `](scale.md#redis-cluster)`,
# `](#layout)`) names a heading that page has.
#
#   tests/docs_links.sh [ROOT]      (default: the tree this script is in)
#
# A heading's anchor is GitHub's: the heading as it reads (code spans,
# links and emphasis reduced to their text), in lower case, every
# character but letters, digits, `_`, `-` and spaces dropped, each space a
# `-`; the second heading of the same anchor gets `-1`, the third `-2`.
# Links inside code blocks and code spans are text, not links, and web
# addresses (http:, https:, mailto:) are not checked. Then, so that the
# check cannot rot into one that passes everything: it must have checked
# at least MIN_ANCHORS anchors, and on a copy of README.md given a link to
# a section that does not exist it must fail. Exit 0 when every link
# resolves, 1 with one line per broken link.
set -u
ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
MIN_ANCHORS=20

# check DIR: the links of DIR/README.md and DIR/docs/*.md; prints one line
# per broken link and "checked N anchors" last; exits 1 if any is broken.
check() {
    python3 - "$1" <<'EOF'
import os, re, sys

root = sys.argv[1]
pages = [os.path.join(root, "README.md")] + sorted(
    os.path.join(root, "docs", f) for f in os.listdir(os.path.join(root, "docs"))
    if f.endswith(".md"))

def text_of(md):
    md = re.sub(r"`([^`]*)`", r"\1", md)
    md = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", md)
    return re.sub(r"[*]+|(?<!\w)_+|_+(?!\w)", "", md)

def slug(heading):
    s = re.sub(r"[^\w\- ]", "", text_of(heading).strip().lower())
    return s.replace(" ", "-")

def lines_outside_code(path):
    fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = re.match(r"\s*(```+|~~~+)", line)
            if m:
                if fence is None:
                    fence = m.group(1)[:3]
                elif m.group(1).startswith(fence):
                    fence = None
                continue
            if fence is None:
                yield number, line

anchors = {}
def anchors_of(path):
    if path not in anchors:
        seen, found = {}, set()
        for _, line in lines_outside_code(path):
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            a = slug(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            found.add(a if n == 0 else f"{a}-{n}")
        anchors[path] = found
    return anchors[path]

broken = checked = 0
for page in pages:
    here = os.path.relpath(page, root)
    for number, line in lines_outside_code(page):
        line = re.sub(r"`[^`]*`", "", line)
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
            where = f"{here}:{number}: ({target})"
            if not os.path.exists(dest):
                print(f"{where}: no file {os.path.relpath(dest, root)}")
                broken += 1
            elif anchor:
                checked += 1
                if not dest.endswith(".md"):
                    print(f"{where}: an anchor into a file that is not Markdown")
                    broken += 1
                elif anchor not in anchors_of(dest):
                    print(f"{where}: {os.path.relpath(dest, root)} has no heading #{anchor}")
                    broken += 1
print(f"checked {checked} anchors")
sys.exit(1 if broken else 0)
EOF
}

out=$(check "$ROOT")
rc=$?
printf '%s\n' "$out"
anchors=$(printf '%s\n' "$out" | sed -n 's/^checked \([0-9]*\) anchors$/\1/p')
if ((rc == 0 && ${anchors:-0} < MIN_ANCHORS)); then
    echo "FAIL: only ${anchors:-0} anchors checked (at least $MIN_ANCHORS expected): is the parser broken?"
    rc=1
fi

# The check must fail on a broken anchor: a copy of the pages, README.md
# given one link to a section docs/stack.md does not have.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/docs"
cp "$ROOT"/docs/*.md "$tmp/docs/"
{ cat "$ROOT/README.md"; echo "[broken](docs/stack.md#no-such-section-here)"; } >"$tmp/README.md"
if planted=$(check "$tmp"); then
    echo "FAIL: a link to docs/stack.md#no-such-section-here was not reported"
    rc=1
elif ! grep -q 'docs/stack.md has no heading #no-such-section-here' <<<"$planted"; then
    echo "FAIL: the planted broken link was not the one reported:"
    printf '%s\n' "$planted"
    rc=1
fi
exit "$rc"
