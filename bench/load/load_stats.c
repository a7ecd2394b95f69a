/* load_stats.c — the histogram and the timeline declared in load_stats.h.
 *
 * Bucket layout, as HdrHistogram's with a unit of 1 µs and 2048 sub-buckets:
 * index = ((g + 1) << 10) + (v >> g) − 1024, where g, the value's group,
 * is 0 below 2048 and otherwise the shift that brings v into [1024, 2048).
 * So indexes 0..2047 are the values 0..2047 themselves, and each later
 * group of 1024 indexes covers one power of two. The group is found from
 * the highest set bit of v | 2047 (HdrHistogram's get_bucket_index), in a
 * few instructions and without floating point.
 */
#include "load_stats.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- buckets */

#define HIST_SUB_MASK ((UINT64_C(1) << HIST_SUB_BITS) - 1)

unsigned hist_index(uint64_t us)
{
    if (us > HIST_MAX_US)
        us = HIST_MAX_US;
    unsigned top = 64u - (unsigned)__builtin_clzll(us | HIST_SUB_MASK);   /* >= 11 */
    unsigned group = top - HIST_SUB_BITS;
    unsigned idx = ((group + 1) << HIST_HALF_BITS) + (unsigned)(us >> group) -
                   (1u << HIST_HALF_BITS);
    assert(idx < HIST_BUCKETS);
    return idx;
}

uint64_t hist_bucket_low(unsigned idx)
{
    unsigned group = idx >> HIST_HALF_BITS;
    if (group <= 1)                     /* 0..2047: one value each          */
        return idx;
    uint64_t sub = (idx & ((1u << HIST_HALF_BITS) - 1)) + (1u << HIST_HALF_BITS);
    return sub << (group - 1);
}

uint64_t hist_bucket_width(unsigned idx)
{
    unsigned group = idx >> HIST_HALF_BITS;
    return group <= 1 ? 1 : UINT64_C(1) << (group - 1);
}

/* ---------------------------------------------------------------- public */

void hist_init(struct hist *h)
{
    memset(h, 0, sizeof *h);
}

void hist_add(struct hist *h, uint64_t us)
{
    h->bucket[hist_index(us)]++;
    if (h->count == 0 || us < h->min_us)
        h->min_us = us;
    if (us > h->max_us)
        h->max_us = us;
    h->count++;
    h->sum_us += us;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
    if (src->count == 0)
        return;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->bucket[i] += src->bucket[i];
    if (dst->count == 0 || src->min_us < dst->min_us)
        dst->min_us = src->min_us;
    if (src->max_us > dst->max_us)
        dst->max_us = src->max_us;
    dst->count += src->count;
    dst->sum_us += src->sum_us;
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
    uint64_t high = hist_bucket_low(i) + hist_bucket_width(i) - 1;
    if (high < h->min_us)
        return h->min_us;
    if (high > h->max_us)
        return h->max_us;
    return high;
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
