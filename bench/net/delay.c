/* delay.c — ll-delay: the wire between hosts, on one machine. Every packet
 * netfilter hands it (`iptables … -j NFQUEUE --queue-num N`) is held for
 * its delay and then let go, in the order it came.
 *
 *     ll-delay --queue N --delay-us D [--jitter-us J] [--netns NAME]...
 *              [--trim-us T] [--max-held M] [--stats FILE] [--rt-prio P]
 *              [--spin-us S]
 *
 * Why. This kernel has no sch_netem (no `tc netem`) and nft has no queue
 * expression, but iptables' NFQUEUE target delivers packets to a userspace
 * listener (libnetfilter_queue), and a queued packet stays in the kernel
 * until the listener gives its verdict. So a delay is a listener that
 * accepts each packet D µs after it arrived. `bench/stack up --netns --rtt
 * MS` (bench/lib/stack_delay.sh) queues every packet between an instance's
 * namespace and a backend, and between the members of an ensemble, once,
 * on its way in to the host that receives it: D is half the round trip.
 *
 * Where. A queue belongs to a network namespace, and so does the netlink
 * socket that listens to it: this process listens to queue N in its own
 * namespace (the machine's, where the backends are) and in each --netns
 * NAME (/run/netns/NAME, an instance's), one socket each.
 *
 * When a packet arrived. Waking this process for a queued packet takes tens
 * of µs on a 2-vCPU VM (more when its CPU has to leave a halt), a good
 * part of a 100 µs delay, so the time the packet is read is not the time
 * it arrived. The kernel stamps a packet as it is received from a device
 * (veth, lo) when some socket asks for receive timestamps, which this
 * process's own does (SO_TIMESTAMPNS), and the queue passes that stamp on
 * (wall clock, µs): a packet is due D after its stamp, so the wake-up's
 * latency is not added to the delay. Packets queued on the input hook all
 * carry one; one without a plausible stamp is due D after it was read.
 * What the stamp cannot cover is the verdict's own way back into the
 * kernel (a netlink message, the lookup, the re-injection): --trim-us T
 * makes every packet due T earlier to make up for it (bench/stack passes
 * what it measured on its machine).
 *
 * How. Each packet becomes an entry (due time, which socket, packet id) in
 * a binary heap of at most M entries (--max-held, default 8192, also each
 * kernel queue's length); the packet stays in the kernel. One timerfd is
 * armed for the earliest due time; when it fires, every packet due by then
 * gets its verdict, NF_ACCEPT. Without jitter every packet waits the same
 * D, and a packet is never due before the one read before it on the same
 * socket, so each socket's packets leave in their order and one batch
 * verdict per socket ("accept every id up to this one") lets a group go.
 * With --jitter-us J each packet waits D + u, u uniform in [−J/2, J/2], so
 * a round trip varies by ±J; but a packet is never due before an earlier
 * one of its flow (same addresses, ports and protocol, one direction),
 * whose last due time a small table keeps by a hash of the flow (two flows
 * sharing a slot only order each other more than needed); then each packet
 * gets a verdict of its own. While it holds packets the process sleeps on
 * the timer alone: a packet that comes meanwhile is due later than the one
 * the timer is set for, so it is read in time at that wake-up, and a
 * wake-up per arrival is saved.
 *
 * Timer lateness. A timer's wake-up is late by the machine's wake-up
 * latency, which on this VM is 20 to 100+ µs (its idle vCPUs halt, and the
 * host has to run them again), as much as a 0.2 ms round trip's half. So
 * the timer is armed `lead` before the due time, lead being what the timer's
 * wake-ups were seen to take (a moving mean plus twice the moving mean
 * deviation, at most --spin-us, default 150), and the rest of the wait
 * is spent awake: reading the queues without blocking, until the packet
 * is due. The timer slack is 1 ns (prctl) and, with --rt-prio P, the
 * process runs SCHED_FIFO at priority P, so that a busy machine does not
 * add its run queue to the delay. That awake wait costs CPU; it is what
 * the wake-ups would cost anyway here (a timer sleep and wake-up uses
 * about as much CPU as it lasts on this VM), and it is counted below.
 *
 * Bounds. Memory is the heap (M × 24 bytes) and the flow table, allocated
 * at start; the packets wait in the kernel, which drops a packet when M are
 * already held on its queue, as a full router buffer does (counted by the
 * kernel: /proc/net/netfilter/nfnetlink_queue). Only the first 64 bytes of
 * a packet are copied here (its headers, for the flow), and GSO packets are
 * queued whole, unsegmented.
 *
 * Its own cost. --stats FILE gets, every second and at exit, one JSON
 * object of counters since start (written to FILE.tmp, then renamed):
 * packets, bytes, verdicts, held now and at most, wake-ups (all, and the
 * timer's), the seconds spent awake waiting, the lead, the lateness (mean,
 * p50, p99, max µs), how long packets waited to be read (mean µs), and the
 * CPU time this process used (getrusage) with the wall time: CPU seconds
 * per packet and packets per second follow. The CPU time includes the
 * kernel's work on each packet let go, done in the verdict's system call.
 * bench/compare --rtt keeps a copy before and after each point to diff.
 *
 * SIGTERM or SIGINT: every held packet is let go at once, the stats are
 * written, and the process exits 0. The rules that feed the queue carry
 * --queue-bypass, so when no process listens the packets pass undelayed
 * instead of being dropped (`bench/stack status` shows whether it runs).
 */
#define _GNU_SOURCE
#include "../common/cli.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <libnetfilter_queue/libnetfilter_queue.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif
#ifndef NETLINK_NO_ENOBUFS
#define NETLINK_NO_ENOBUFS 5
#endif

#define DELAY_MAX_NS      16            /* namespaces listened to           */
#define DELAY_COPY_BYTES  64            /* IPv4 header with options + ports */
#define DELAY_FLOW_SLOTS  4096          /* power of two                      */
#define DELAY_LATE_BINS   2048          /* lateness histogram, 1 µs a bin    */
#define DELAY_RCVBUF      (8 << 20)

/* ---------------------------------------------------------------- state */

struct held {
    int64_t  due_ns;                    /* CLOCK_MONOTONIC                   */
    uint64_t seq;                       /* order read: ties                  */
    uint32_t id;                        /* the kernel's packet id            */
    uint16_t sock;                      /* which listener's queue            */
};

struct delay;

/* One listener: queue N in one namespace. */
struct listener {
    struct delay        *d;
    const char          *ns;            /* NULL: this process's own          */
    struct nfq_handle   *h;
    struct nfq_q_handle *qh;
    int                  fd;
    int64_t              last_due_ns;   /* FIFO without jitter               */
    uint32_t             batch_id;      /* the last id released this round   */
    int                  batch;         /* a batch verdict is pending        */
};

struct delay {
    /* settings */
    int       queue;
    int64_t   delay_ns, jitter_ns, trim_ns;
    uint32_t  max_held;
    const char *stats_path;

    struct listener sock[DELAY_MAX_NS];
    int             nsock;

    /* the held packets: a binary min-heap on (due_ns, seq) */
    struct held *heap;
    uint32_t     n;
    uint64_t     seq;
    int64_t     *flow_due;              /* with jitter: per flow slot        */
    uint64_t     rng;
    int64_t      now_ns;                /* of the message being read         */
    int64_t      real_to_mono_ns;       /* CLOCK_MONOTONIC − CLOCK_REALTIME  */

    /* the timer's lead: its wake-ups' latency, mean and mean deviation */
    int64_t      spin_ns;               /* the most a lead may be            */
    int64_t      lead_ns, wake_mean_ns, wake_dev_ns;
    int64_t      armed_ns;              /* when the timer should fire, or 0
                                         * when that was past already        */

    /* counters since start */
    uint64_t packets, bytes, stamped, verdicts, wakeups, timer_wakeups, held_max;
    double   spin_s;                    /* seconds spent awake waiting       */
    uint64_t late_bins[DELAY_LATE_BINS + 1];
    double   late_sum_us, late_max_us, wait_sum_us;
    int64_t  start_ns;
};

/* Out of memory at start: nothing to do but stop (no packet is held yet). */
static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);

    if (p == NULL) {
        fprintf(stderr, "ll-delay: out of memory\n");
        abort();
    }
    return p;
}

static int64_t clock_ns(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

/* xorshift64*: the jitter needs speed, not quality. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* ----------------------------------------------------------------- heap */

static int held_before(const struct held *a, const struct held *b)
{
    return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void heap_push(struct delay *d, struct held e)
{
    uint32_t i = d->n++;

    while (i > 0) {
        uint32_t parent = (i - 1) / 2;

        if (!held_before(&e, &d->heap[parent]))
            break;
        d->heap[i] = d->heap[parent];
        i = parent;
    }
    d->heap[i] = e;
}

static struct held heap_pop(struct delay *d)
{
    struct held top = d->heap[0], last = d->heap[--d->n];
    uint32_t i = 0;

    for (;;) {
        uint32_t child = 2 * i + 1;

        if (child >= d->n)
            break;
        if (child + 1 < d->n && held_before(&d->heap[child + 1], &d->heap[child]))
            child++;
        if (!held_before(&d->heap[child], &last))
            break;
        d->heap[i] = d->heap[child];
        i = child;
    }
    if (d->n > 0)
        d->heap[i] = last;
    return top;
}

/* ---------------------------------------------------------------- flows */

/* The slot of the packet's flow: IPv4 addresses, protocol and, for TCP and
 * UDP, the ports; 0 for what cannot be read (all such packets one flow). */
static uint32_t flow_slot(const unsigned char *p, int len)
{
    uint64_t k = 0;
    int ihl;

    if (p == NULL || len < 20 || (p[0] >> 4) != 4)
        return 0;
    ihl = (p[0] & 0x0f) * 4;
    memcpy(&k, p + 12, 8);                          /* saddr, daddr */
    k ^= (uint64_t)p[9] << 56;                      /* protocol */
    if ((p[9] == 6 || p[9] == 17) && len >= ihl + 4) {
        uint32_t ports;

        memcpy(&ports, p + ihl, 4);
        k ^= (uint64_t)ports * 0x9E3779B97F4A7C15ULL;
    }
    k ^= k >> 33;                                   /* murmur3's finaliser */
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (uint32_t)(k & (DELAY_FLOW_SLOTS - 1));
}

/* ------------------------------------------------------------- arrivals */

/* When the packet arrived, on CLOCK_MONOTONIC: its receive stamp, or the
 * time it was read when it has none, or one that cannot be right (later
 * than now, or more than a second ago). */
static int64_t arrival_ns(struct delay *d, struct nfq_data *nfa)
{
    struct timeval tv;
    int64_t at;

    if (nfq_get_timestamp(nfa, &tv) != 0)
        return d->now_ns;
    at = ((int64_t)tv.tv_sec * 1000000 + tv.tv_usec) * 1000 + d->real_to_mono_ns;
    if (at > d->now_ns || at < d->now_ns - 1000000000)
        return d->now_ns;
    d->stamped++;
    d->wait_sum_us += (d->now_ns - at) / 1e3;
    return at;
}

/* nfq_handle_packet's callback: one packet queued on listener `arg`. */
static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *arg)
{
    struct listener *l = arg;
    struct delay *d = l->d;
    struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
    unsigned char *payload = NULL;
    struct held e;
    int len;

    (void)msg;
    if (ph == NULL)
        return 0;
    e.id = ntohl(ph->packet_id);
    e.sock = (uint16_t)(l - d->sock);
    len = nfq_get_payload(nfa, &payload);
    d->packets++;
    d->bytes += (uint64_t)(len > 0 ? len : 0);
    if (d->n >= d->max_held) {              /* cannot happen: the kernel's */
        nfq_set_verdict(qh, e.id, NF_DROP, 0, NULL);    /* queue is as long */
        return 0;
    }
    e.seq = d->seq++;
    e.due_ns = arrival_ns(d, nfa) + d->delay_ns - d->trim_ns;
    if (d->jitter_ns == 0) {
        if (e.due_ns < l->last_due_ns)      /* never before the one read before */
            e.due_ns = l->last_due_ns;
        l->last_due_ns = e.due_ns;
    } else {
        uint32_t slot = flow_slot(payload, len);
        int64_t u = (int64_t)(rng_next(&d->rng) % (uint64_t)(d->jitter_ns + 1)) - d->jitter_ns / 2;

        e.due_ns += u;
        if (e.due_ns < d->flow_due[slot])   /* never before its flow's last */
            e.due_ns = d->flow_due[slot];
        d->flow_due[slot] = e.due_ns;
    }
    heap_push(d, e);
    if (d->n > d->held_max)
        d->held_max = d->n;
    return 0;
}

/* ------------------------------------------------------------- verdicts */

static void record_lateness(struct delay *d, int64_t late_ns)
{
    double us = late_ns / 1e3;
    long bin = us < 0 ? 0 : (long)us;

    d->late_bins[bin > DELAY_LATE_BINS ? DELAY_LATE_BINS : bin]++;
    d->late_sum_us += us;
    if (us > d->late_max_us)
        d->late_max_us = us;
}

/* The timer fired `late_ns` after it was armed for: the lead follows the
 * wake-ups' latency, mean + 2 × mean deviation (moving, 1/16 a sample),
 * so that most wake-ups come before the due time; at most --spin-us. */
static void record_wakeup(struct delay *d, int64_t late_ns)
{
    int64_t dev = late_ns - d->wake_mean_ns;

    d->timer_wakeups++;
    d->wake_mean_ns += dev / 16;
    d->wake_dev_ns += ((dev < 0 ? -dev : dev) - d->wake_dev_ns) / 16;
    d->lead_ns = d->wake_mean_ns + 2 * d->wake_dev_ns;
    if (d->lead_ns < 0)
        d->lead_ns = 0;
    if (d->lead_ns > d->spin_ns)
        d->lead_ns = d->spin_ns;
}

/* Let every packet due by `until` go. */
static void release_due(struct delay *d, int64_t until)
{
    int64_t now = mono_ns();
    int i;

    while (d->n > 0 && d->heap[0].due_ns <= until) {
        struct held e = heap_pop(d);
        struct listener *l = &d->sock[e.sock];

        record_lateness(d, now - e.due_ns);
        if (d->jitter_ns == 0) {            /* each socket a FIFO: batches */
            l->batch_id = e.id;
            l->batch = 1;
        } else if (nfq_set_verdict(l->qh, e.id, NF_ACCEPT, 0, NULL) < 0) {
            fprintf(stderr, "ll-delay: verdict on packet %u: %s\n", e.id, strerror(errno));
        } else {
            d->verdicts++;
        }
    }
    for (i = 0; i < d->nsock; i++) {
        struct listener *l = &d->sock[i];

        if (!l->batch)
            continue;
        l->batch = 0;
        if (nfq_set_verdict_batch(l->qh, l->batch_id, NF_ACCEPT) < 0)
            fprintf(stderr, "ll-delay: batch verdict up to %u: %s\n", l->batch_id, strerror(errno));
        else
            d->verdicts++;
    }
}

/* ---------------------------------------------------------------- stats */

static double late_percentile(const struct delay *d, uint64_t total, double q)
{
    uint64_t seen = 0;
    long i;

    for (i = 0; i <= DELAY_LATE_BINS && total > 0; i++) {
        seen += d->late_bins[i];
        if ((double)seen >= q * (double)total)
            return (double)i + 0.5;
    }
    return total > 0 ? DELAY_LATE_BINS : 0;
}

static void write_stats(const struct delay *d)
{
    struct rusage ru;
    char tmp[4096];
    double cpu, elapsed;
    uint64_t released = 0;
    FILE *f;
    long i;

    if (d->stats_path == NULL)
        return;
    getrusage(RUSAGE_SELF, &ru);
    cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    elapsed = (mono_ns() - d->start_ns) / 1e9;
    for (i = 0; i <= DELAY_LATE_BINS; i++)
        released += d->late_bins[i];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", d->stats_path) >= sizeof tmp)
        return;
    f = fopen(tmp, "w");
    if (f == NULL)
        return;
    fprintf(f, "{\"queue\":%d,\"delay_us\":%.1f,\"jitter_us\":%.1f,\"trim_us\":%.1f,\"max_held\":%u,"
               "\"namespaces\":%d,\"pid\":%ld,\"elapsed_s\":%.3f,\"cpu_s\":%.3f,"
               "\"packets\":%llu,\"bytes\":%llu,\"released\":%llu,\"stamped\":%llu,"
               "\"verdicts\":%llu,\"wakeups\":%llu,\"timer_wakeups\":%llu,"
               "\"held\":%u,\"held_max\":%llu,\"spin_s\":%.3f,"
               "\"lead_us\":%.1f,\"timer_late_us_mean\":%.1f,\"wait_us_mean\":%.1f,\"late_us_mean\":%.1f,"
               "\"late_us_p50\":%.1f,\"late_us_p99\":%.1f,\"late_us_max\":%.1f,"
               "\"cpu_us_per_packet\":%.2f,\"packets_per_s\":%.1f}\n",
            d->queue, d->delay_ns / 1e3, d->jitter_ns / 1e3, d->trim_ns / 1e3, d->max_held, d->nsock,
            (long)getpid(), elapsed, cpu, (unsigned long long)d->packets,
            (unsigned long long)d->bytes, (unsigned long long)released,
            (unsigned long long)d->stamped, (unsigned long long)d->verdicts,
            (unsigned long long)d->wakeups, (unsigned long long)d->timer_wakeups, d->n,
            (unsigned long long)d->held_max, d->spin_s, d->lead_ns / 1e3, d->wake_mean_ns / 1e3,
            d->stamped ? d->wait_sum_us / (double)d->stamped : 0.0,
            released ? d->late_sum_us / (double)released : 0.0,
            late_percentile(d, released, 0.5), late_percentile(d, released, 0.99),
            d->late_max_us, d->packets ? cpu * 1e6 / (double)d->packets : 0.0,
            elapsed > 0 ? (double)d->packets / elapsed : 0.0);
    if (fclose(f) == 0)
        rename(tmp, d->stats_path);
}

/* ---------------------------------------------------------------- setup */

static void usage(void)
{
    fprintf(stderr, "usage: ll-delay --queue N --delay-us D [--jitter-us J] [--netns NAME]...\n"
                    "                [--trim-us T] [--max-held M] [--stats FILE] [--rt-prio P]\n"
                    "                [--spin-us S]\n");
    exit(2);
}

static long number(const char *text, long lo, long hi)
{
    long long v;

    if (cli_number(text, lo, hi, &v) != 0) {
        fprintf(stderr, "ll-delay: '%s' is not a number in [%ld, %ld]\n", text, lo, hi);
        exit(2);
    }
    return (long)v;
}

static void parse_args(struct delay *d, int argc, char **argv, int *rt_prio)
{
    int i, have_queue = 0, have_delay = 0;

    d->sock[d->nsock++].ns = NULL;          /* our own namespace first */
    for (i = 1; i < argc; i++) {
        const char *opt = argv[i];

        if (i + 1 >= argc)
            usage();
        if (strcmp(opt, "--queue") == 0) {
            d->queue = (int)number(argv[++i], 0, 65535);
            have_queue = 1;
        } else if (strcmp(opt, "--delay-us") == 0) {
            d->delay_ns = number(argv[++i], 0, 10000000) * 1000;
            have_delay = 1;
        } else if (strcmp(opt, "--jitter-us") == 0) {
            d->jitter_ns = number(argv[++i], 0, 10000000) * 1000;
        } else if (strcmp(opt, "--netns") == 0) {
            if (d->nsock == DELAY_MAX_NS) {
                fprintf(stderr, "ll-delay: at most %d namespaces\n", DELAY_MAX_NS - 1);
                exit(2);
            }
            d->sock[d->nsock++].ns = argv[++i];
        } else if (strcmp(opt, "--max-held") == 0) {
            d->max_held = (uint32_t)number(argv[++i], 16, 1 << 20);
        } else if (strcmp(opt, "--stats") == 0) {
            d->stats_path = argv[++i];
        } else if (strcmp(opt, "--trim-us") == 0) {
            d->trim_ns = number(argv[++i], 0, 1000) * 1000;
        } else if (strcmp(opt, "--spin-us") == 0) {
            d->spin_ns = number(argv[++i], 0, 10000) * 1000;
        } else if (strcmp(opt, "--rt-prio") == 0) {
            *rt_prio = (int)number(argv[++i], 0, 99);
        } else {
            usage();
        }
    }
    if (!have_queue || !have_delay)
        usage();
}

/* Listen to the queue in l->ns: enter that namespace, open the netlink
 * socket there (it stays in it), and come back. */
static void listen_queue(struct delay *d, struct listener *l)
{
    char path[256], what[300];
    int one = 1, self = -1, ns = -1;

    l->d = d;
    if (l->ns != NULL) {
        snprintf(path, sizeof path, "%s%s", strchr(l->ns, '/') ? "" : "/run/netns/", l->ns);
        self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        ns = open(path, O_RDONLY | O_CLOEXEC);
        if (self < 0 || ns < 0 || setns(ns, CLONE_NEWNET) != 0) {
            snprintf(what, sizeof what, "entering the network namespace %s", path);
            die_errno(what);
        }
    }
    l->h = nfq_open();
    if (l->h == NULL)
        die_errno("nfq_open (needs root)");
    l->qh = nfq_create_queue(l->h, (uint16_t)d->queue, on_packet, l);
    if (l->qh == NULL)
        die_errno("nfq_create_queue (another listener on this queue?)");
    if (nfq_set_mode(l->qh, NFQNL_COPY_PACKET, DELAY_COPY_BYTES) < 0)
        die_errno("nfq_set_mode");
    if (nfq_set_queue_maxlen(l->qh, d->max_held) < 0)
        die_errno("nfq_set_queue_maxlen");
    /* GSO packets queued whole: nothing here changes a packet. */
    if (nfq_set_queue_flags(l->qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO) < 0)
        fprintf(stderr, "ll-delay: the kernel queues GSO packets segmented\n");
    nfnl_rcvbufsiz(nfq_nfnlh(l->h), DELAY_RCVBUF);
    l->fd = nfq_fd(l->h);
    /* A full socket buffer drops packets (the kernel counts them); it must
     * not make recv() fail. */
    setsockopt(l->fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);
    if (self >= 0) {
        if (setns(self, CLONE_NEWNET) != 0)
            die_errno("returning to our network namespace");
        close(self);
        close(ns);
    }
}

/* Ask the kernel to stamp every packet it receives from a device (a global
 * switch: on while any socket wants receive timestamps). Kept open. */
static void want_stamps(void)
{
    int one = 1, fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) != 0)
        fprintf(stderr, "ll-delay: no receive timestamps (%s): delays count from the read\n",
                strerror(errno));
}

static void set_priority(int rt_prio)
{
    struct sched_param sp;

    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (rt_prio <= 0)
        return;
    memset(&sp, 0, sizeof sp);
    sp.sched_priority = rt_prio;
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
        fprintf(stderr, "ll-delay: SCHED_FIFO %d refused (%s): timing at the machine's mercy\n",
                rt_prio, strerror(errno));
}

static int signal_fd(void)
{
    sigset_t set;
    int fd;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
        die_errno("sigprocmask");
    fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0)
        die_errno("signalfd");
    return fd;
}

/* ---------------------------------------------------------------- loop */

/* Arm the timer for the earliest held packet, its lead earlier (or
 * disarm it when none is held). */
static void arm(struct delay *d, int tfd)
{
    struct itimerspec its;
    int64_t at = 0;

    memset(&its, 0, sizeof its);
    if (d->n > 0) {
        at = d->heap[0].due_ns - d->lead_ns;
        if (at < 1)
            at = 1;
        its.it_value.tv_sec = at / 1000000000;
        its.it_value.tv_nsec = at % 1000000000;
    }
    /* A time already past fires at once: no wake-up latency to learn. */
    d->armed_ns = at > mono_ns() ? at : 0;
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Read every packet queued to listener l; 0, or -1 on a socket error. */
static int read_packets(struct delay *d, struct listener *l)
{
    static char buf[65536] __attribute__((aligned));
    ssize_t r;

    for (;;) {
        r = recv(l->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
        d->now_ns = mono_ns();
        d->real_to_mono_ns = d->now_ns - clock_ns(CLOCK_REALTIME);
        nfq_handle_packet(l->h, buf, (int)r);
    }
}

static int read_ready(struct delay *d, struct pollfd *pfd)
{
    int i;

    for (i = 0; i < d->nsock; i++)
        if ((pfd[i].revents & POLLIN) && read_packets(d, &d->sock[i]) < 0)
            return -1;
    return 0;
}

/* Release what is due; while the next packet is due within the lead, stay
 * awake for it, reading the queues without blocking meanwhile. */
static void release_awake(struct delay *d, struct pollfd *pfd)
{
    int64_t t0 = mono_ns(), now = t0;

    for (;;) {
        release_due(d, now);
        if (d->n == 0 || d->heap[0].due_ns - now > d->lead_ns)
            break;
        if (poll(pfd, (nfds_t)d->nsock, 0) > 0 && read_ready(d, pfd) < 0)
            die_errno("recv from a queue");
        now = mono_ns();
    }
    d->spin_s += (now - t0) / 1e9;
}

int main(int argc, char **argv)
{
    static struct delay d;
    struct pollfd pfd[DELAY_MAX_NS + 2];
    int64_t next_stats;
    int rt_prio = 0, tfd, sfd, running = 1, i, n;

    cli_init("ll-delay", 1);
    d.max_held = 8192;
    d.spin_ns = 150000;
    parse_args(&d, argc, argv, &rt_prio);
    d.lead_ns = d.wake_mean_ns = d.spin_ns / 2;     /* until it has learnt */
    d.heap = xcalloc(d.max_held * (size_t)d.nsock, sizeof *d.heap);
    d.max_held *= (uint32_t)d.nsock;        /* M per queue, all of them held */
    d.flow_due = xcalloc(DELAY_FLOW_SLOTS, sizeof *d.flow_due);
    d.rng = (uint64_t)mono_ns() ^ ((uint64_t)getpid() << 32) ^ 0x2545F4914F6CDD1DULL;
    d.start_ns = mono_ns();
    for (i = 0; i < d.nsock; i++)
        listen_queue(&d, &d.sock[i]);
    want_stamps();
    set_priority(rt_prio);
    sfd = signal_fd();
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (tfd < 0)
        die_errno("timerfd_create");
    n = d.nsock;
    for (i = 0; i < d.nsock; i++)
        pfd[i].fd = d.sock[i].fd;
    pfd[n].fd = tfd;
    pfd[n + 1].fd = sfd;
    for (i = 0; i < n + 2; i++)
        pfd[i].events = POLLIN;
    fprintf(stderr, "ll-delay: queue %d in %d namespace(s), %.1f us each way, jitter %.1f us\n",
            d.queue, d.nsock, d.delay_ns / 1e3, d.jitter_ns / 1e3);
    write_stats(&d);
    next_stats = mono_ns() + 1000000000;
    while (running) {
        int timeout = (int)((next_stats - mono_ns()) / 1000000) + 1;
        struct pollfd *watch = pfd;
        nfds_t nwatch = (nfds_t)(n + 2);

        /* Holding packets, sleep on the timer only: a packet that comes
         * meanwhile is due D after its stamp, later than the one the timer
         * is set for, so it is read in time at that wake-up, and a wake-up
         * per arrival is saved (each one costs tens of µs of CPU here). */
        arm(&d, tfd);
        if (d.n > 0) {
            watch = &pfd[n];
            nwatch = 2;
        }
        for (i = 0; i < n + 2; i++)
            pfd[i].revents = 0;
        if (poll(watch, nwatch, timeout < 0 ? 0 : timeout) < 0 && errno != EINTR)
            die_errno("poll");
        d.wakeups++;
        if (pfd[n].revents & POLLIN) {
            uint64_t expirations;

            if (d.armed_ns > 0)
                record_wakeup(&d, mono_ns() - d.armed_ns);
            if (read(tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
                die_errno("read timerfd");
        }
        if (pfd[n + 1].revents & POLLIN)
            running = 0;
        if (watch != pfd && poll(pfd, (nfds_t)n, 0) < 0 && errno != EINTR)
            die_errno("poll");
        if (read_ready(&d, pfd) < 0)
            die_errno("recv from a queue");
        release_awake(&d, pfd);
        if (mono_ns() >= next_stats) {
            write_stats(&d);
            next_stats = mono_ns() + 1000000000;
        }
    }
    release_due(&d, INT64_MAX);
    write_stats(&d);
    for (i = 0; i < d.nsock; i++) {
        nfq_destroy_queue(d.sock[i].qh);
        nfq_close(d.sock[i].h);
    }
    return 0;
}
