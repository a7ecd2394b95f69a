/* load_stats.c — the log-linear latency histogram declared in load_stats.h.
 *
 * Bucket layout: index = group × 32 + sub. Group 0 holds the values 0..31
 * one per bucket. Group g >= 1 holds [32 << (g-1), 64 << (g-1)) in 32
 * buckets of width 1 << (g-1). For v >= 32 with highest set bit b, the
 * shift is s = b - 5, the group s + 1 and the sub-bucket (v >> s) - 32,
 * which is exactly how HdrHistogram finds its buckets, in a few
 * instructions and without floating point.
 */
#include "load_stats.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- buckets */

static unsigned hist_index(uint64_t us)
{
    if (us < HIST_SUB)
        return (unsigned)us;
    if (us > HIST_MAX_US)
        us = HIST_MAX_US;
    unsigned top = 63u - (unsigned)__builtin_clzll(us);   /* >= 5 */
    unsigned shift = top - HIST_SUB_BITS;
    unsigned idx = (shift + 1) * HIST_SUB + (unsigned)((us >> shift) - HIST_SUB);
    assert(idx < HIST_BUCKETS);
    return idx;
}

static uint64_t hist_bucket_low(unsigned idx)
{
    unsigned group = idx / HIST_SUB, sub = idx % HIST_SUB;
    if (group == 0)
        return sub;
    return (uint64_t)(HIST_SUB + sub) << (group - 1);
}

static uint64_t hist_bucket_width(unsigned idx)
{
    unsigned group = idx / HIST_SUB;
    return group == 0 ? 1 : UINT64_C(1) << (group - 1);
}

/* ---------------------------------------------------------------- public */

void hist_init(struct hist *h)
{
    memset(h, 0, sizeof *h);
    h->min_us = UINT64_MAX;
}

void hist_add(struct hist *h, uint64_t us)
{
    h->bucket[hist_index(us)]++;
    h->count++;
    h->sum_us += us;
    if (us < h->min_us)
        h->min_us = us;
    if (us > h->max_us)
        h->max_us = us;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->bucket[i] += src->bucket[i];
    dst->count += src->count;
    dst->sum_us += src->sum_us;
    if (src->min_us < dst->min_us)
        dst->min_us = src->min_us;
    if (src->max_us > dst->max_us)
        dst->max_us = src->max_us;
}

uint64_t hist_count(const struct hist *h)
{
    return h->count;
}

double hist_mean(const struct hist *h)
{
    return h->count ? (double)h->sum_us / (double)h->count : 0.0;
}

uint64_t hist_min(const struct hist *h)
{
    return h->count ? h->min_us : 0;
}

uint64_t hist_max(const struct hist *h)
{
    return h->max_us;
}

uint64_t hist_percentile(const struct hist *h, double q)
{
    if (h->count == 0)
        return 0;
    if (!(q > 0.0))                     /* also catches NaN */
        return h->min_us;
    if (q >= 1.0)
        return h->max_us;

    double want = q * (double)h->count;
    uint64_t rank = (uint64_t)want;
    if ((double)rank < want)
        rank++;                         /* ceil, without libm */
    if (rank == 0)
        rank = 1;

    uint64_t seen = 0;
    unsigned i = 0;
    for (; i < HIST_BUCKETS - 1; i++) {
        seen += h->bucket[i];
        if (seen >= rank)
            break;
    }
    uint64_t mid = hist_bucket_low(i) + (hist_bucket_width(i) - 1) / 2;
    if (mid < h->min_us)
        return h->min_us;
    if (mid > h->max_us)
        return h->max_us;
    return mid;
}

/* ---------------------------------------------------------------- timeline */

void timeline_init(struct timeline *t)
{
    memset(t, 0, sizeof *t);
}

/* Room for seconds 0..second, new ones zero. Out of memory is fatal: a
 * load generator that cannot count has nothing useful left to do. */
static void timeline_reserve(struct timeline *t, uint64_t second)
{
    uint64_t cap = t->cap ? t->cap : 16;

    if (second < t->cap)
        return;
    while (cap <= second)
        cap *= 2;
    t->sec = realloc(t->sec, (size_t)cap * sizeof t->sec[0]);
    if (t->sec == NULL) {
        fputs("timeline: out of memory\n", stderr);
        abort();
    }
    memset(t->sec + t->cap, 0, (size_t)(cap - t->cap) * sizeof t->sec[0]);
    t->cap = cap;
}

void timeline_add(struct timeline *t, uint64_t second, enum tl_kind kind)
{
    assert(kind < TL_KINDS);
    timeline_reserve(t, second);
    t->sec[second][kind]++;
    if (second >= t->n)
        t->n = second + 1;
}

void timeline_merge(struct timeline *dst, const struct timeline *src)
{
    if (src->n == 0)
        return;
    timeline_reserve(dst, src->n - 1);
    for (uint64_t s = 0; s < src->n; s++)
        for (int k = 0; k < TL_KINDS; k++)
            dst->sec[s][k] += src->sec[s][k];
    if (src->n > dst->n)
        dst->n = src->n;
}

uint64_t timeline_seconds(const struct timeline *t)
{
    return t->n;
}

uint64_t timeline_get(const struct timeline *t, uint64_t second, enum tl_kind kind)
{
    return second < t->n && kind < TL_KINDS ? t->sec[second][kind] : 0;
}

void timeline_free(struct timeline *t)
{
    free(t->sec);
    timeline_init(t);
}
