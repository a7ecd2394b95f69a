/* metrics.h — GET /metrics: the instance's figures in Prometheus's text
 * exposition format (version 0.0.4), for a Prometheus server to scrape.
 *
 * It shows what /stats shows, named as Prometheus's conventions ask (base
 * units, _total on counters, one family per meaning, labels for the
 * dimensions; docs/metrics.md lists them): per strategy and result the
 * answers, the units sold, retries, backend round trips and wake-ups as
 * counters, the purchases' latency and the locks' hold times as histograms
 * over METRICS_LE_N fixed bounds, the purchases in flight and the
 * connections as gauges; and the stock of each product this instance has
 * served, read from MariaDB when a scrape asks.
 *
 * Nothing here runs on the sale path. A sale adds to stats.c's relaxed
 * atomics (one more for its latency's bucket, one for its hold's, one for
 * its units); a scrape reads them and writes the text.
 *
 * The stock is read by a background task of the instance's loop (a
 * coroutine, core/wait.h task_background) over a MariaDB connection of its
 * own, not a worker slot's: a scrape asks it for a fresh read and waits at
 * most METRICS_STOCK_WAIT_MS for it. A MariaDB that is paused or down (a
 * statement may wait 30 s for its answer) costs the scrape its stock gauges,
 * never the scrape itself: Prometheus keeps seeing the counters.
 */
#ifndef LOCKLAB_METRICS_H
#define LOCKLAB_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct config;

/* ---------------------------------------------------------------- buckets */

/* The histograms' bounds, microseconds: 1, 2.5, 5 per decade from 10 µs to
 * 10 s, and 30 s (the longest wait). Bucket METRICS_LE_N is +Inf. */
#define METRICS_LE_N 20
extern const int64_t metrics_le_us[METRICS_LE_N];

/* The bucket of a value in microseconds: the first bound >= us, or
 * METRICS_LE_N past the last. */
int metrics_bucket(int64_t us);

/* ---------------------------------------------------------------- the text */

struct metrics;     /* the exposition being written */

struct metrics *metrics_new(void);

/* A family's "# HELP" and "# TYPE" lines; its samples follow at once (the
 * format wants a family's samples together). help holds no '\' or newline. */
void metrics_family(struct metrics *m, const char *name, const char *type,
                    const char *help);

/* One sample: name{labels} value, a counter's or a gauge's (every figure
 * here is a whole number). labels is `k="v",…` with values already safe
 * (metrics_label_value()), or NULL for none. */
void metrics_int(struct metrics *m, const char *name, const char *labels, uint64_t v);
void metrics_gauge(struct metrics *m, const char *name, const char *labels, long long v);
/* A gauge of seconds given in microseconds, written exactly. */
void metrics_seconds(struct metrics *m, const char *name, const char *labels, int64_t us);

/* A histogram of seconds (name_bucket{…,le="…"} cumulative, name_sum,
 * name_count) from per-bucket counts: bucket[METRICS_LE_N + 1], the last
 * +Inf; the sum given in microseconds, written exactly in seconds. _count
 * is the buckets' total, so it equals the +Inf bucket whatever a
 * concurrent sale did meanwhile. */
void metrics_histogram(struct metrics *m, const char *name, const char *labels,
                       const uint64_t *bucket, uint64_t sum_us);

/* Copy v into dst (size bytes, always terminated) as a label value: '\',
 * '"' and newline escaped, what does not fit cut off. Returns dst. */
char *metrics_label_value(char *dst, size_t size, const char *v);

/* The text written so far; m is freed. The caller frees the text. */
char *metrics_text(struct metrics *m, size_t *len);

/* ---------------------------------------------------------------- the instance */

/* locklab_instance_info: the instance's name, id and default strategy. */
void metrics_instance(struct metrics *m, const struct config *cfg);

/* locklab_stock_units{product}: the stock read now, for the seeds' product
 * and every product this instance has found (stock.c's cache). */
#define METRICS_STOCK_WAIT_MS 250
#define METRICS_STOCK_MAX     16
void metrics_stock(struct metrics *m);

/* The stock reader's thread and connection: started with the server,
 * stopped before the MariaDB library ends. */
void metrics_start(const struct config *cfg);
void metrics_stop(void);

#endif /* LOCKLAB_METRICS_H */
