/* strategies.c — ll-strategies: the strategy tables of the README and of
 * docs/strategies.md, written from the registry.
 *
 *     ll-strategies                  print the table (Markdown)
 *     ll-strategies --check FILE     exit 1, with a diff, when FILE's copy differs
 *     ll-strategies --write FILE     replace FILE's copy with the registry's
 *     ll-strategies --brief [--check FILE | --write FILE]
 *                                    the README's shorter table: the flaw,
 *                                    exact and fenced
 *     ll-strategies --sync [--check FILE | --write FILE]
 *                                    the same for the synchronizers' table
 *                                    (sync/, struct sync_ops), between the
 *                                    marks SYNC_BEGIN_MARK and SYNC_END_MARK
 *     ll-strategies --holds          "<name> <hold_rtts>" a line, every
 *                                    strategy: the round trips it holds the
 *                                    hot item for (locks/lock.h), which
 *                                    bench/compare --rtt models
 *
 * The strategies describe themselves once, in their struct lock_ops
 * (one file each under locks/): name, family, summary, flaw and property bits. GET /locks
 * serves those fields; this program prints the same fields as the table
 * README.md shows, so the README cannot drift from the code. The copy in a
 * file is everything between a line holding BEGIN_MARK and a line holding
 * END_MARK; text outside them is never touched. The ctest `readme_strategies`
 * (label unit) runs --brief --check on README.md, `docs_strategies_table`
 * --check on docs/strategies.md, and the build target `readme-strategies`
 * runs --write on both.
 *
 * One row per strategy in lock_all() order: the name, the family, what it
 * fixes (.summary), what it still gets wrong (.flaw, a dash when the
 * registry names none), the faults it is known not to survive (.fails,
 * and after "fence=1:" .fence_fails for a strategy with a fencing service:
 * its claims, which the fault matrix holds it to, locks/faults.h) and one
 * mark per property. --brief, which keeps the README short as the registry
 * grows, has the name, the family, the flaw and the marks exact and fenced. Cells are escaped for
 * Markdown: a `|` would end the cell, and `<token>` would be read as an
 * HTML tag and vanish from the rendered page.
 *
 * The diff of --check is a longest-common-subsequence diff of lines ("-"
 * the file's, "+" the registry's); a table is a few dozen lines, so the
 * quadratic table costs nothing.
 */
#include "../core/util.h"
#include "../locks/lock.h"
#include "../sync/sync.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN_MARK "<!-- strategies:begin -->"
#define END_MARK   "<!-- strategies:end -->"
#define SYNC_BEGIN_MARK "<!-- sync:begin -->"
#define SYNC_END_MARK   "<!-- sync:end -->"

/* The marks of the table being worked on (--sync: the synchronizers'). */
static const char *begin_mark = BEGIN_MARK, *end_mark = END_MARK;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("ll-strategies: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

/* ---------------------------------------------------------------- table */

/* Write s to f with what Markdown would misread escaped. */
static void put_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (strchr("\\|<*_`[]", *s))
            fputc('\\', f);
        fputc(*s, f);
    }
}

static const struct {
    unsigned    bit;
    const char *title;
} props[] = {
    { LOCK_DISTRIBUTED,  "distributed" },
    { LOCK_REENTRANT,    "reentrant" },
    { LOCK_AUTO_RELEASE, "auto-release" },
    { LOCK_FAIR,         "fair" },
    { LOCK_EXACT,        "exact" },
    { LOCK_FENCED,       "fenced" },
};
#define NPROPS (sizeof props / sizeof props[0])

/* The properties the README's brief table shows: the two a user choosing a
 * lock asks first; docs/strategies.md's table shows them all. */
#define BRIEF_PROPS (LOCK_EXACT | LOCK_FENCED)

/* The header row (`first`, then one column per property of shown) and its
 * rule (`rule`, then one centred column per such property). */
static void put_header(FILE *f, const char *first, const char *rule, unsigned shown)
{
    size_t p;

    fputs(first, f);
    for (p = 0; p < NPROPS; p++)
        if (shown & props[p].bit)
            fprintf(f, " %s |", props[p].title);
    fputs(rule, f);
    for (p = 0; p < NPROPS; p++)
        if (shown & props[p].bit)
            fputs(":-:|", f);
    fputc('\n', f);
}

/* The faults of mask (locks/faults.h) by name, ", " between them; "–" for
 * none. */
static void put_faults(FILE *f, unsigned mask)
{
    const char *sep = "";
    int i;

    if (mask == 0) {
        fputs("–", f);
        return;
    }
    for (i = 0; i < LOCK_FAULT_COUNT; i++)
        if (mask & (1u << i)) {
            fputs(sep, f);
            put_cell(f, lock_fault_name(i));
            sep = ", ";
        }
}

/* The claims' cell: the faults it fails without the fence and, for a
 * strategy with a fencing service, those it fails with ?fence=1 ("–" for
 * none). */
static void put_claims(FILE *f, const struct lock_ops *o)
{
    put_faults(f, o->fails);
    if (o->fence) {
        fputs(" · fence=1: ", f);
        put_faults(f, o->fence_fails);
    }
}

/* One mark per property of shown, and the end of the row. */
static void put_marks(FILE *f, unsigned bits, unsigned shown)
{
    size_t p;

    for (p = 0; p < NPROPS; p++)
        if (shown & props[p].bit)
            fputs(bits & props[p].bit ? " ✓ |" : " – |", f);
    fputc('\n', f);
}

/* The whole table, one line per row, as a malloc'ed string; brief: without
 * the summaries and the claims, and only the BRIEF_PROPS marks. */
static char *table(int brief)
{
    const struct lock_ops *const *all;
    char *buf = NULL;
    size_t len = 0;
    int i, n;
    unsigned shown = brief ? BRIEF_PROPS : ~0u;
    FILE *f = open_memstream(&buf, &len);

    if (f == NULL)
        die("open_memstream: %s", strerror(errno));
    if (brief)
        put_header(f, "| strategy | family | what it still gets wrong |", "\n|---|---|---|",
                   shown);
    else
        put_header(f, "| strategy | family | what it fixes | what it still gets wrong | "
                   "faults it fails |", "\n|---|---|---|---|---|", shown);

    all = lock_all(&n);
    for (i = 0; i < n; i++) {
        const struct lock_ops *o = all[i];

        fprintf(f, "| `%s` | ", o->name);
        put_cell(f, o->family);
        fputs(" | ", f);
        if (!brief) {
            put_cell(f, o->summary);
            fputs(" | ", f);
        }
        put_cell(f, o->flaw ? o->flaw : "–");
        fputs(" |", f);
        if (!brief) {
            fputc(' ', f);
            put_claims(f, o);
            fputs(" |", f);
        }
        put_marks(f, o->props, shown);
    }
    if (fclose(f) != 0)
        die("writing the table: %s", strerror(errno));
    return buf;
}

/* The synchronizers' table: one row per struct sync_ops in sync_all()
 * order — primitive, library, what it does, what it still gets wrong, the
 * keys or znodes another client joins, its operations, and the marks. */
static char *sync_table(void)
{
    const struct sync_ops *const *all;
    const struct sync_op *op;
    char *buf = NULL;
    size_t len = 0;
    int i, n;
    FILE *f = open_memstream(&buf, &len);

    if (f == NULL)
        die("open_memstream: %s", strerror(errno));
    put_header(f, "| primitive | library | what it does | what it still gets wrong | names "
               "other clients join | operations |", "\n|---|---|---|---|---|---|", ~0u);
    all = sync_all(&n);
    for (i = 0; i < n; i++) {
        const struct sync_ops *o = all[i];

        fprintf(f, "| `%s` (%s) | ", o->primitive, o->backend);
        put_cell(f, o->library);
        fputs(" | ", f);
        put_cell(f, o->summary);
        fputs(" | ", f);
        put_cell(f, o->flaw ? o->flaw : "–");
        fputs(" | ", f);
        put_cell(f, o->where);
        fputs(" |", f);
        for (op = o->ops; op->name; op++)
            fprintf(f, "%s`%s`", op == o->ops ? " " : ", ", op->name);
        fputs(" |", f);
        put_marks(f, o->props, ~0u);
    }
    if (fclose(f) != 0)
        die("writing the table: %s", strerror(errno));
    return buf;
}

/* ---------------------------------------------------------------- file */

struct doc {
    char  *text;            /* the whole file, NUL-terminated */
    size_t begin, end;      /* the copy: text[begin .. end)   */
};

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    size_t len = 0, cap = 65536, got;
    char *text;

    if (f == NULL)
        die("%s: cannot open", path);
    text = xmalloc(cap);
    while ((got = fread(text + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            char *bigger = xmalloc(cap * 2);
            memcpy(bigger, text, len);
            free(text);
            text = bigger;
            cap *= 2;
        }
    }
    if (ferror(f))
        die("%s: read error", path);
    fclose(f);
    text[len] = '\0';
    return text;
}

/* The offset of the line after the first line holding mark at or after
 * from (or of that line itself when after is 0); -1 when there is none. */
static long find_line(const char *text, size_t from, const char *mark, int after)
{
    const char *hit = strstr(text + from, mark), *line;

    if (hit == NULL)
        return -1;
    if (!after) {
        for (line = hit; line > text && line[-1] != '\n'; line--)
            ;
        return line - text;
    }
    line = strchr(hit, '\n');
    return line ? line + 1 - text : (long)strlen(text);
}

static struct doc doc_read(const char *path)
{
    struct doc d;
    long b, e;

    d.text = slurp(path);
    b = find_line(d.text, 0, begin_mark, 1);
    if (b < 0)
        die("no line with %s in %s", begin_mark, path);
    e = find_line(d.text, (size_t)b, end_mark, 0);
    if (e < 0)
        die("no line with %s after the begin mark in %s", end_mark, path);
    d.begin = (size_t)b;
    d.end = (size_t)e;
    return d;
}

static void doc_write(const struct doc *d, const char *path, const char *copy)
{
    size_t plen = strlen(path) + 5;
    char *tmp = xmalloc(plen);
    FILE *f;

    snprintf(tmp, plen, "%s.new", path);
    f = fopen(tmp, "wb");
    if (f == NULL)
        die("%s: cannot create", tmp);
    fwrite(d->text, 1, d->begin, f);
    fputs(copy, f);
    fputs(d->text + d->end, f);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        die("%s: cannot write", path);
    free(tmp);
}

/* ---------------------------------------------------------------- diff */

struct lines {
    char **at;
    int    n;
};

/* Split s (modified in place) at newlines; a final newline ends the last line. */
static struct lines split(char *s)
{
    struct lines l = { NULL, 0 };
    int cap = 0;

    while (*s) {
        char *nl = strchr(s, '\n');

        if (l.n == cap) {
            char **bigger = xmalloc(sizeof *bigger * (size_t)(cap = cap ? cap * 2 : 64));
            if (l.n)
                memcpy(bigger, l.at, sizeof *bigger * (size_t)l.n);
            free(l.at);
            l.at = bigger;
        }
        l.at[l.n++] = s;
        if (nl == NULL)
            break;
        *nl = '\0';
        s = nl + 1;
    }
    return l;
}

/* Print the lines of a missing from b as "-", those of b missing from a as
 * "+", in order, with the common lines left out. */
static void diff(const struct lines *a, const struct lines *b)
{
    int w = b->n + 1, i, j;
    int *lcs = xcalloc((size_t)(a->n + 1) * (size_t)w, sizeof *lcs);

    /* lcs[i*w+j]: the longest common subsequence of a[i..] and b[j..]. */
    for (i = a->n - 1; i >= 0; i--)
        for (j = b->n - 1; j >= 0; j--)
            lcs[i * w + j] = strcmp(a->at[i], b->at[j]) == 0
                ? lcs[(i + 1) * w + j + 1] + 1
                : lcs[(i + 1) * w + j] > lcs[i * w + j + 1]
                    ? lcs[(i + 1) * w + j] : lcs[i * w + j + 1];
    for (i = j = 0; i < a->n || j < b->n;) {
        if (i < a->n && j < b->n && strcmp(a->at[i], b->at[j]) == 0) {
            i++, j++;
        } else if (j == b->n || (i < a->n && lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
            printf("-%s\n", a->at[i++]);
        } else {
            printf("+%s\n", b->at[j++]);
        }
    }
    free(lcs);
}

/* 0 when the file's copy is the registry's; else 1, after saying how they differ. */
static int check(const char *path, char *want)
{
    struct doc d = doc_read(path);
    struct lines have, need;
    char *copy;

    d.text[d.end] = '\0';
    copy = d.text + d.begin;
    if (strcmp(copy, want) == 0) {
        free(d.text);
        return 0;
    }
    if (strcmp(begin_mark, BEGIN_MARK) == 0)
        printf("%s: the strategy table differs from the registry (locks/).\n"
               "The table is generated: change the strategy's struct lock_ops, then run\n"
               "  cmake --build build --target readme-strategies\n"
               "(- is %s's line, + the registry's)\n", path, path);
    else
        printf("%s: the synchronizer table differs from the registry (sync/).\n"
               "The table is generated: change the primitive's struct sync_ops, then run\n"
               "  cmake --build build --target docs-sync-table\n"
               "(- is %s's line, + the registry's)\n", path, path);
    have = split(copy);
    need = split(want);
    diff(&have, &need);
    free(have.at);
    free(need.at);
    free(d.text);
    return 1;
}

/* --holds: the model of bench/compare --rtt, a strategy a line. */
static int print_holds(void)
{
    const struct lock_ops *const *all;
    int n, i;

    all = lock_all(&n);
    for (i = 0; i < n; i++)
        printf("%s %d\n", all[i]->name, all[i]->hold_rtts);
    return 0;
}

int main(int argc, char **argv)
{
    char *want;
    int rc = 0;

    if (argc == 2 && strcmp(argv[1], "--holds") == 0)
        return print_holds();
    if (argc > 1 && strcmp(argv[1], "--sync") == 0) {
        begin_mark = SYNC_BEGIN_MARK;
        end_mark = SYNC_END_MARK;
        argc--, argv++;
        want = sync_table();
    } else if (argc > 1 && strcmp(argv[1], "--brief") == 0) {
        argc--, argv++;
        want = table(1);
    } else {
        want = table(0);
    }

    if (argc == 1) {
        fputs(want, stdout);
    } else if (argc == 3 && strcmp(argv[1], "--check") == 0) {
        rc = check(argv[2], want);
    } else if (argc == 3 && strcmp(argv[1], "--write") == 0) {
        struct doc d = doc_read(argv[2]);
        doc_write(&d, argv[2], want);
        free(d.text);
    } else {
        fprintf(stderr, "usage: ll-strategies [--sync | --brief] [--check FILE | --write FILE]\n"
                        "       ll-strategies --holds\n");
        rc = 2;
    }
    free(want);
    return rc;
}
