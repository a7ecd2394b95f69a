/* ledger.c — the ledger's checks (see ledger.h), with no I/O but the
 * sentences it writes.
 *
 * Lost updates and the final count follow the rows in commit order, one
 * pass. Overlaps sort the critical sections by their start and sweep them
 * once, keeping the one that ends last: any section that starts before
 * that one ends overlaps it (each overlap is reported against the
 * longest-running section, which is enough to name two holders at once).
 * Tokens are compared per lock service, in commit order, since a Redis
 * counter and a ZooKeeper zxid are not comparable with each other.
 */
#include "ledger.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int by_id(const void *a, const void *b)
{
    const struct ledger_row *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int by_start(const void *a, const void *b)
{
    const struct ledger_row *x = *(const struct ledger_row *const *)a;
    const struct ledger_row *y = *(const struct ledger_row *const *)b;
    if (x->cs_start_us != y->cs_start_us)
        return (x->cs_start_us > y->cs_start_us) - (x->cs_start_us < y->cs_start_us);
    return (x->id > y->id) - (x->id < y->id);
}

static int is_reset(const struct ledger_row *r)
{
    return strcmp(r->strategy, "reset") == 0;
}

/* "#12 (app-8100 slot 3, redis-lua)" */
static void who(char *buf, size_t n, const struct ledger_row *r)
{
    snprintf(buf, n, "#%lld (%s slot %d, %s)", r->id, r->instance, r->slot, r->strategy);
}

static void say(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(FILE *out, const char *fmt, ...)
{
    va_list ap;

    if (out == NULL)
        return;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
}

/* ---------------------------------------------------------------- order */

static void check_order(const struct ledger_row *rows, size_t n, FILE *out,
                        struct ledger_report *r)
{
    const struct ledger_row *prev = NULL;
    char a[160], b[160];
    size_t i;

    for (i = 0; i < n; i++) {
        const struct ledger_row *s = &rows[i];
        if (is_reset(s)) {
            prev = s;
            continue;
        }
        r->sales++;
        r->units += s->count_read - s->count_written;
        who(a, sizeof a, s);
        if (s->count_read <= 0) {
            r->empty++;
            say(out, "oversold: sale %s sold from a count of %lld: there was nothing left "
                "to sell", a, s->count_read);
        }
        if (prev != NULL && s->count_read != prev->count_written) {
            r->lost++;
            who(b, sizeof b, prev);
            if (is_reset(prev))
                say(out, "lost update: sale %s read %lld, but the stock had just been "
                    "set to %lld", a, s->count_read, prev->count_written);
            else
                say(out, "lost update: sale %s read %lld, but the sale before it, %s, had "
                    "left %lld: %s wrote %lld over a sale it never saw", a, s->count_read, b,
                    prev->count_written, a, s->count_written);
        }
        prev = s;
    }
}

/* ---------------------------------------------------------------- overlaps */

static void check_overlaps(const struct ledger_row *rows, size_t n, FILE *out,
                           struct ledger_report *r)
{
    const struct ledger_row **cs = calloc(n ? n : 1, sizeof *cs), *open = NULL;
    char a[160], b[160];
    size_t i, k = 0;

    if (cs == NULL)
        abort();
    for (i = 0; i < n; i++)
        if (!is_reset(&rows[i]) && (rows[i].cs_start_us || rows[i].cs_end_us))
            cs[k++] = &rows[i];
    qsort(cs, k, sizeof *cs, by_start);
    for (i = 0; i < k; i++) {
        if (open != NULL && cs[i]->cs_start_us < open->cs_end_us) {
            long long from = cs[i]->cs_start_us;
            long long to = cs[i]->cs_end_us < open->cs_end_us ? cs[i]->cs_end_us
                                                               : open->cs_end_us;
            r->overlap++;
            who(a, sizeof a, open);
            who(b, sizeof b, cs[i]);
            say(out, "overlap: sales %s and %s were both in their critical sections for "
                "%lld us (from %lld to %lld us on the monotonic clock): two holders of one "
                "lock at once", a, b, to - from, from, to);
        }
        if (open == NULL || cs[i]->cs_end_us > open->cs_end_us)
            open = cs[i];
    }
    free(cs);
}

/* ---------------------------------------------------------------- tokens */

static void check_tokens(const struct ledger_row *rows, size_t n, FILE *out,
                         struct ledger_report *r)
{
    const struct ledger_row *last[8] = { 0 };
    char a[160], b[160];
    size_t i, k, nsrc = 0;

    for (i = 0; i < n; i++) {
        const struct ledger_row *s = &rows[i];
        if (is_reset(s)) {
            memset(last, 0, sizeof last);   /* a reset starts the fence afresh */
            nsrc = 0;
            continue;
        }
        if (s->token_src[0] == '\0')
            continue;
        for (k = 0; k < nsrc && strcmp(last[k]->token_src, s->token_src) != 0; k++)
            ;
        if (k < nsrc && s->token <= last[k]->token) {
            r->token++;
            who(a, sizeof a, s);
            who(b, sizeof b, last[k]);
            say(out, "token: sale %s wrote with %s token %lld after %s had written with "
                "token %lld: a stale holder's write got past the fence", a, s->token_src,
                s->token, b, last[k]->token);
        }
        if (k == nsrc && nsrc < sizeof last / sizeof last[0])
            nsrc++;
        if (k < nsrc && (last[k] == NULL || s->token > last[k]->token))
            last[k] = s;
    }
}

/* ---------------------------------------------------------------- all */

int ledger_check(struct ledger_row *rows, size_t n, long long initial, long long final,
                 FILE *out, struct ledger_report *r)
{
    const struct ledger_row *end = NULL;
    size_t i;

    memset(r, 0, sizeof *r);
    qsort(rows, n, sizeof *rows, by_id);
    /* Only the last reset and what follows it count: it sets the stock. */
    for (i = n; i > 0 && !is_reset(&rows[i - 1]); i--)
        ;
    if (i > 0) {
        rows += i - 1, n -= i - 1;
        initial = rows[0].count_written;
    }
    r->final = final;
    if (initial < 0) {
        say(out, "final: no reset row and no initial stock given: nothing to compare with");
        r->final_bad = 1;
        return 1;
    }
    r->initial = initial;
    r->final = final;
    check_order(rows, n, out, r);
    check_overlaps(rows, n, out, r);
    check_tokens(rows, n, out, r);
    for (i = 0; i < n; i++)
        if (!is_reset(&rows[i]))
            end = &rows[i];
    if (initial - r->units < final) {
        r->final_bad = 1;
        say(out, "final: the stock ends at %lld, but %lld units less the %lld the ledger "
            "sold leave %lld: the sales took %lld unit(s) more than the stock lost, so "
            "some overwrote others", final, initial, r->units, initial - r->units,
            final - (initial - r->units));
    } else if (initial - r->units > final) {
        r->final_bad = 1;
        say(out, "final: the stock ends at %lld, but %lld units less the %lld the ledger "
            "sold leave %lld: %lld unit(s) went without a sale in the ledger", final, initial,
            r->units, initial - r->units, initial - r->units - final);
    } else if (end != NULL && end->count_written != final) {
        r->final_bad = 1;
        say(out, "final: the stock ends at %lld, but the last sale, #%lld, wrote %lld",
            final, end->id, end->count_written);
    }
    return r->lost + r->overlap + r->token + r->empty + r->final_bad;
}

/* ---------------------------------------------------------------- files */

int ledger_parse(const char *line, struct ledger_row *row)
{
    char src[16];

    memset(row, 0, sizeof *row);
    if (sscanf(line, "%lld\t%63s\t%d\t%63s\t%15s\t%lld\t%lld\t%lld\t%lld\t%lld",
               &row->id, row->instance, &row->slot, row->strategy, src, &row->token,
               &row->count_read, &row->count_written, &row->cs_start_us,
               &row->cs_end_us) != 10)
        return -1;
    if (strcmp(src, "-") != 0)
        snprintf(row->token_src, sizeof row->token_src, "%s", src);
    return 0;
}
