/* load.c — ll-load, an exact HTTP/1.1 load generator for loopback.
 *
 * wrk runs for a duration; the test suite and the comparison harness need
 * to send EXACTLY N purchases and count what came back, by HTTP status and
 * by the JSON "result" field of each answer. ll-load does only that:
 *
 *     ll-load [-c CONNECTIONS] [-n REQUESTS] [-d SECONDS] [-m GET|POST]
 *             [-t TIMEOUT_S] [--copies K] [--json] [--progress] [--think-ms MS]
 *             [--rate R [--arrivals uniform|poisson] [--seed N]
 *              [--rate-step S --steps K] [--late-ms MS]] URL [URL…]
 *
 * Two kinds of load. By default a closed loop: C connections each send
 * their next request when the last answer came back, so the load slows
 * down when the server does, and a stall shows as one slow request per
 * connection (coordinated omission). With --rate R, an open loop: the
 * requests leave on a schedule of R a second fixed in advance
 * (load_sched.h: evenly spaced, or --arrivals poisson), and each one's
 * latency runs from the moment it was DUE, not from when a connection was
 * free, so a stall is charged to every request that should have left
 * during it, as real users would have sent them.
 *
 * How it works. A closed loop runs one thread per connection, each keeping
 * one keep-alive TCP connection (TCP_NODELAY, non-blocking, waited on with
 * poll so that every request has a deadline). Before each request a thread
 * takes a ticket from one shared atomic counter, so with -n exactly N
 * requests leave in total; with -d the main thread raises a stop flag when
 * the time is up and requests already in flight finish; with both, N
 * requests at most and for S seconds at most (bench/compare's cap on a
 * slow strategy's run). A thread (re)connects lazily, when it has a ticket
 * and no open connection, and closes after "Connection: close", a
 * close-delimited body, a timeout or any transport failure.
 *
 * Several URLs, and copies. Request t (its ticket, from 0) is copy t mod K
 * of purchase j = t div K (K = --copies, default 1) and goes to URL number
 * (j + copy) mod the number of URLs: with the instances' URLs and K = 2,
 * every purchase goes twice, its two copies to two different instances and
 * one right after the other, so that they race (the retry storm of POST
 * /order). "{n}" in a URL is replaced by j, so that both copies carry the
 * same order number and no other purchase does. A thread keeps one
 * keep-alive connection per URL.
 *
 * A request is never replayed: a purchase must not be sold twice. A request
 * that fails below HTTP — refused connect, reset or EOF before the whole
 * answer, timeout, unparsable answer — is counted as a transport error of
 * its kind and its ticket is spent.
 *
 * Answers are read properly: status line, headers, then a body delimited by
 * Content-Length, by chunked transfer-encoding (nginx may send it) or by
 * EOF. The first BODY_CAP bytes of each body are kept and scanned for
 * "result" : "..." to count answers by result. That reading and counting
 * is load_http.c, apart from the sockets (tests/test_load.c feeds it).
 *
 * Every connection (a thread, or a coroutine of the open loop) counts into
 * its own struct tally (statuses, results, errors, a latency histogram
 * from load_stats.c) and its own struct timeline (the answers, the 200s
 * among them and the transport errors of each second, by the second each
 * request ended in): the hot path takes no lock, and the main thread
 * merges them after joining the threads. Latency runs from the ticket to
 * the last byte of the answer, connect included when one was needed. --json adds the seconds ("per_second": three arrays, one
 * element a second, the last second cut short by the end of the run) and
 * the latency at a fixed list of quantiles ("lat_percentiles": [q, ms]
 * pairs, from 0 (the minimum) to 1 (the maximum)), for the report's charts.
 *
 * Progress (--progress, or stderr a terminal): once a second, the requests
 * done, the 200s among them, the rate over the last second and the time
 * left: what the duration leaves, or with -n the requests still to send at
 * the rate so far (no more than a -d cap leaves). Each worker publishes its two counts with relaxed
 * atomic stores of its own counters; the main thread sums them.
 *
 * --bodies FILE writes every answer's body (its first BODY_CAP bytes), one
 * a line, to FILE, for a checker that reads what was granted (ll-report
 * sync reads the synchronizers' answers so); a body's own newlines become
 * spaces. Only then do the threads share a lock on the hot path.
 *
 * --think-ms MS makes each connection of a closed loop wait MS between an
 * answer and its next request (JMeter's constant timer): one connection
 * with the open loop's spacing pays the same idle wake-ups that an open
 * loop at a low rate does, and is the closed loop to compare it with.
 *
 * The open loop runs on one thread: its event loop (core/loop.h), a
 * coroutine per connection (core/coro.h) running the same request code as
 * a closed loop's thread, whose waits park on the loop instead of polling
 * (core/wait.h), and a coroutine that walks the schedule, the dispatcher.
 * The dispatcher waits until the next request is due (a timer, 1 ns of
 * slack), takes the most recently freed connection (a stack of idle ones,
 * so the run uses as few connections as the rate and the latency need, up
 * to -c, and the others never connect), and hands it the ticket and its
 * due time; the connection sends at once and goes back on the stack with
 * the answer. No request crosses threads, so a request costs the generator
 * a send, a receive and its share of one epoll_wait, as in a closed loop.
 * Under a light load (requests 1 ms apart or more) the dispatcher wakes a
 * little early and, if nothing is in flight, spins to the due time: a
 * timer's wake-up is tens of microseconds late on a virtual machine, and
 * a latency counted from the due time would charge that to the server.
 * When every connection is busy the dispatcher waits for one, and the
 * request leaves late: its latency still runs from its due time, and it
 * counts in late_sends when it left more than --late-ms (1 ms) after it
 * (send_lag_p50_ms, _p99_ms and _max_ms say how late the sends were). -d
 * is the schedule's length (the requests due within it are all sent,
 * however late) and -n caps its requests. With --rate-step S --steps K
 * the run is K steps of -d seconds each, at R, R + S, … requests a second,
 * each step reported on its own (step_<k>_*: its rate asked and achieved,
 * percentiles and late sends): where the latency turns up is the knee. In
 * either loop the output has the process's own CPU time (getrusage): a
 * generator short of CPU sends late, and that is how to tell.
 *
 * Output is key=value lines with names [a-z0-9_] and values free of spaces
 * and quotes, so that a shell can `eval` it, or one JSON object (--json).
 * Exit status: 0 when it ran (whatever the answers), 2 on bad usage, 1 when
 * not a single connection could be opened.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE            /* under -std=c11: getaddrinfo, clock_gettime, SOCK_NONBLOCK */
#endif

#include "load_http.h"
#include "load_sched.h"
#include "../common/cli.h"
#include "../../core/coro.h"
#include "../../core/loop.h"
#include "../../core/util.h"
#include "../../core/wait.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- limits */

#define MAX_CONNS    4096               /* -c upper bound                    */
#define MAX_URLS     16
#define MAX_STEPS    20                 /* --steps upper bound               */
#define STACK_SIZE   (256 * 1024)
#define SPIN_MAX_NS  INT64_C(200000)    /* the open loop's spin to a due time */
#define SPIN_GAP_NS  INT64_C(1000000)   /* ... when the requests are this far apart */
#define NS_PER_S     INT64_C(1000000000)

enum exit_code { EXIT_RAN = 0, EXIT_NOCONNECT = 1, EXIT_USAGE = 2 };

/* ---------------------------------------------------------------- types */

/* One URL: where it goes and the request it sends. */
struct target {
    char        authority[256];         /* host[:port] as given, for Host:   */
    struct sockaddr_in addr;
    char       *request;                /* the whole request, built once     */
    size_t      request_len;
    bool        numbered;               /* holds "{n}": built per request    */
};

struct load_opts {
    int         conns;                  /* -c                                */
    uint64_t    requests;               /* -n; 0 in duration mode            */
    int64_t     duration_ns;            /* -d (with -n: a cap); 0: no bound   */
    int64_t     timeout_ns;             /* -t                                */
    const char *method;                 /* "GET" or "POST"                   */
    bool        json, progress;
    int         copies;                 /* --copies                          */
    FILE       *bodies;                 /* --bodies: every answer's body     */
    double      rate;                   /* --rate: an open loop; 0: closed   */
    double      rate_step;              /* --rate-step                       */
    int         steps;                  /* --steps (1 without --rate-step)   */
    bool        stepped;                /* --rate-step: each step reported   */
    enum sched_arrivals arrivals;       /* --arrivals                        */
    uint64_t    seed;                   /* --seed: the Poisson arrivals'     */
    int64_t     late_ns;                /* --late-ms                         */
    int64_t     think_ns;               /* --think-ms: a closed loop's pause  */
    struct target target[MAX_URLS];
    int         ntargets;
};

struct conn {
    int           fd;                   /* -1 when closed                    */
    struct reader in;                   /* what it received, not yet read    */
};

struct worker;

/* What the threads share: the tickets, the stop flag and the gates; in an
 * open loop the schedule and the stack of idle workers too. */
struct load {
    const struct load_opts *opts;
    atomic_uint_fast64_t issued;
    atomic_bool          stop;
    int64_t              start_ns;      /* when the workers were let go      */
    pthread_mutex_t      mu;
    pthread_cond_t       go_cond;       /* main → workers: start             */
    pthread_cond_t       done_cond;     /* workers → main: one finished      */
    bool                 go;
    int                  finished;
    /* the open loop, all of it on one thread's event loop */
    struct sched         sched;
    struct worker       *workers;
    pthread_t            loop_thread;
    struct task         *dispatcher;
    bool                 dispatcher_parked;  /* it waits for an idle worker */
    int                 *idle;          /* idle workers' indexes, a stack    */
    int                  nidle;
    int                  alive;         /* worker coroutines not yet ended   */
};

/* One step of an open loop, as one worker saw it. */
struct step_tally {
    uint64_t    requests;               /* sent (answered or failed)         */
    uint64_t    late;
    int64_t     last_end_ns;            /* when the last of them ended       */
    struct hist latency;                /* from the due times                */
};

struct worker {
    atomic_uint_fast64_t done;          /* requests completed, for progress  */
    atomic_uint_fast64_t sold;          /* 200 answers among them            */
    struct load   *load;
    pthread_t      tid;
    int            connect_errno;       /* first connect failure             */
    struct conn    conn[MAX_URLS];      /* one per URL                       */
    char          *buf;                 /* a numbered request, built here    */
    size_t         buf_cap;
    struct response resp;
    struct tally   tally;
    struct timeline timeline;           /* what each second of the run saw   */
    /* the open loop: the job the dispatcher hands over */
    int            index;
    struct task   *task;                /* its coroutine's                   */
    bool           job_ready;           /* a ticket is waiting for it        */
    uint64_t       job_ticket;
    int64_t        job_due_ns;
    int            job_step;
    bool           job_end;
    bool           used;                /* it sent at least one request      */
    struct step_tally *step;            /* [opts->steps], calloc'ed          */
};

/* ---------------------------------------------------------------- utilities */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static struct timespec ns_to_timespec(int64_t ns)
{
    struct timespec ts = { .tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S };
    return ts;
}

/* ---------------------------------------------------------------- usage */

static const char usage_text[] =
    "usage: ll-load [-c CONNECTIONS] [-n REQUESTS] [-d SECONDS] [-m GET|POST]\n"
    "               [-t TIMEOUT_S] [--copies K] [--json] [--progress] [--think-ms MS]\n"
    "               [--rate R [--arrivals uniform|poisson] [--seed N]\n"
    "                [--rate-step S --steps K] [--late-ms MS]] URL [URL...]\n"
    "\n"
    "  -c, --connections N  keep-alive connections (default 64); an open loop\n"
    "                       opens only as many of them as it needs\n"
    "  -n, --requests N     send exactly N requests in total (default 1000)\n"
    "  -d, --duration S     send requests for S seconds instead of -n; with -n,\n"
    "                       stop after S seconds if the N are not all sent\n"
    "  -m, --method M       GET or POST (default GET)\n"
    "  -t, --timeout S      per-request timeout in seconds (default 30)\n"
    "      --copies K       send every purchase K times, its copies one after the\n"
    "                       other to K different URLs (default 1)\n"
    "      --json           print one JSON object instead of key=value lines, with\n"
    "                       the counts of every second and latency percentiles\n"
    "      --progress       print progress to stderr every second (default:\n"
    "                       only when stderr is a terminal)\n"
    "      --bodies FILE    write every answer's body to FILE, one a line\n"
    "      --think-ms MS    a closed loop: each connection waits MS between an\n"
    "                       answer and its next request (JMeter's constant timer)\n"
    "      --rate R         an open loop: R requests a second on a fixed schedule\n"
    "                       over as many of the -c connections as it takes, each\n"
    "                       request's latency from when it was due; -d is the\n"
    "                       schedule's length, -n caps its requests\n"
    "      --arrivals A     uniform (evenly spaced, default) or poisson\n"
    "      --seed N         the Poisson arrivals' seed (default 1)\n"
    "      --rate-step S    with --steps K: K steps of -d seconds each, at R,\n"
    "                       R + S, ... requests a second, each reported\n"
    "      --late-ms MS     a request sent more than MS after it was due counts\n"
    "                       as late (default 1)\n"
    "  URL                  http://host[:port]/path?query (IPv4 or a name); with\n"
    "                       several, purchase j's copy c goes to URL (j + c) mod\n"
    "                       their number; {n} in a URL is replaced by j\n";

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ll-load: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n\n", stderr);
    fputs(usage_text, stderr);
    va_end(ap);
    exit(EXIT_USAGE);
}

static uint64_t opt_count(const char *arg, const char *what, uint64_t lo, uint64_t hi)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0 || v < lo || v > hi)
        usage_error("%s wants a whole number in %llu..%llu, got '%s'", what,
                    (unsigned long long)lo, (unsigned long long)hi, arg);
    return v;
}

static int64_t opt_seconds(const char *arg, const char *what)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || *end != '\0' || errno != 0 || !(v > 0.0) || v > 1e6)
        usage_error("%s wants a number of seconds > 0, got '%s'", what, arg);
    return (int64_t)(v * (double)NS_PER_S);
}

/* A number in (0, hi], or [0, hi] when zero_ok, of `unit`. */
static double opt_real(const char *arg, const char *what, bool zero_ok, double hi,
                       const char *unit)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || *end != '\0' || errno != 0 || !(zero_ok ? v >= 0.0 : v > 0.0) || v > hi)
        usage_error("%s wants %s from %s0 up to %g, got '%s'", what, unit,
                    zero_ok ? "" : "above ", hi, arg);
    return v;
}

static enum sched_arrivals opt_arrivals(const char *arg)
{
    if (strcmp(arg, "uniform") == 0)
        return SCHED_UNIFORM;
    if (strcmp(arg, "poisson") == 0)
        return SCHED_POISSON;
    usage_error("--arrivals wants uniform or poisson, got '%s'", arg);
}

static const char *opt_method(const char *arg)
{
    if (strcasecmp(arg, "GET") == 0)
        return "GET";
    if (strcasecmp(arg, "POST") == 0)
        return "POST";
    usage_error("-m wants GET or POST, got '%s'", arg);
}

/* ---------------------------------------------------------------- URL */

/* Resolve host to an IPv4 address, port in host order. */
static void url_resolve(const char *host, int port, struct sockaddr_in *addr)
{
    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || res == NULL)
        usage_error("cannot resolve '%s' to an IPv4 address: %s", host, gai_strerror(rc));
    memcpy(addr, res->ai_addr, sizeof *addr);
    addr->sin_port = htons((uint16_t)port);
    freeaddrinfo(res);
}

/* Split "host[:port]" and resolve it. */
static void url_authority(const char *auth, size_t len, struct target *o)
{
    if (len == 0 || len >= sizeof o->authority)
        usage_error("URL has an empty or overlong host");
    memcpy(o->authority, auth, len);
    o->authority[len] = '\0';
    if (strpbrk(o->authority, "@[]"))
        usage_error("URL host '%s' is not supported (IPv4 or a name only)", o->authority);

    char host[256];
    strcpy(host, o->authority);
    int port = 80;
    char *colon = strchr(host, ':');
    if (colon) {
        *colon = '\0';
        port = (int)opt_count(colon + 1, "the URL port", 1, 65535);
    }
    if (host[0] == '\0')
        usage_error("URL has an empty host");
    url_resolve(host, port, &o->addr);
}

/* Parse http://host[:port]/path?query and build the request once. */
static void url_parse(const char *url, const char *method, struct target *o)
{
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            usage_error("URL must not contain spaces or control characters");
    if (strncasecmp(url, "https://", 8) == 0)
        usage_error("https is not supported (plain http on loopback only)");
    if (strncasecmp(url, "http://", 7) != 0)
        usage_error("URL must start with http://, got '%s'", url);

    const char *auth = url + 7;
    size_t auth_len = strcspn(auth, "/?#");
    url_authority(auth, auth_len, o);

    const char *target = auth + auth_len;
    size_t target_len = strcspn(target, "#");
    const char *slash = (target_len == 0 || target[0] == '?') ? "/" : "";

    const char *extra = strcmp(method, "POST") == 0 ? "Content-Length: 0\r\n" : "";
    const char *fmt = "%s %s%.*s HTTP/1.1\r\nHost: %s\r\nUser-Agent: ll-load\r\n"
                      "Accept: */*\r\n%s\r\n";
    int n = snprintf(NULL, 0, fmt, method, slash, (int)target_len, target,
                     o->authority, extra);
    assert(n > 0);
    o->request = xcalloc((size_t)n + 1, 1);
    snprintf(o->request, (size_t)n + 1, fmt, method, slash, (int)target_len, target,
             o->authority, extra);
    o->request_len = (size_t)n;
    o->numbered = strstr(o->request, "{n}") != NULL;
}

/* The request of target t for purchase j: "{n}" replaced by j. Returns its
 * length; the text is t->request itself when it is not numbered. */
static const char *request_for(const struct target *t, uint64_t j, char **buf, size_t *cap,
                               size_t *len)
{
    char num[24];
    const char *p, *at;
    size_t k, need;

    if (!t->numbered) {
        *len = t->request_len;
        return t->request;
    }
    k = (size_t)snprintf(num, sizeof num, "%llu", (unsigned long long)j);
    need = t->request_len * (k + 1) + 1;        /* every "{n}" at most k long */
    if (*cap < need) {
        free(*buf);
        *buf = xcalloc(need, 1);
        *cap = need;
    }
    *len = 0;
    for (p = t->request; (at = strstr(p, "{n}")) != NULL; p = at + 3) {
        memcpy(*buf + *len, p, (size_t)(at - p));
        *len += (size_t)(at - p);
        memcpy(*buf + *len, num, k);
        *len += k;
    }
    memcpy(*buf + *len, p, strlen(p) + 1);
    *len += strlen(p);
    return *buf;
}

/* ---------------------------------------------------------------- options */

enum { OPT_JSON = 256, OPT_PROGRESS, OPT_COPIES, OPT_BODIES, OPT_RATE, OPT_ARRIVALS, OPT_SEED,
       OPT_RATE_STEP, OPT_STEPS, OPT_LATE, OPT_THINK };

static const struct option long_options[] = {
    { "connections", required_argument, NULL, 'c' },
    { "requests",    required_argument, NULL, 'n' },
    { "duration",    required_argument, NULL, 'd' },
    { "method",      required_argument, NULL, 'm' },
    { "timeout",     required_argument, NULL, 't' },
    { "json",        no_argument,       NULL, OPT_JSON },
    { "progress",    no_argument,       NULL, OPT_PROGRESS },
    { "copies",      required_argument, NULL, OPT_COPIES },
    { "bodies",      required_argument, NULL, OPT_BODIES },
    { "rate",        required_argument, NULL, OPT_RATE },
    { "arrivals",    required_argument, NULL, OPT_ARRIVALS },
    { "seed",        required_argument, NULL, OPT_SEED },
    { "rate-step",   required_argument, NULL, OPT_RATE_STEP },
    { "steps",       required_argument, NULL, OPT_STEPS },
    { "late-ms",     required_argument, NULL, OPT_LATE },
    { "think-ms",    required_argument, NULL, OPT_THINK },
    { "help",        no_argument,       NULL, 'h' },
    { NULL, 0, NULL, 0 }
};

static void opts_parse(int argc, char **argv, struct load_opts *o)
{
    bool have_n = false;
    bool have_step = false, have_steps = false, open_only = false;
    *o = (struct load_opts){ .conns = 64, .requests = 1000, .timeout_ns = 30 * NS_PER_S,
                             .method = "GET", .progress = isatty(STDERR_FILENO),
                             .copies = 1, .steps = 1, .seed = 1, .late_ns = NS_PER_S / 1000 };
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":c:n:d:m:t:h", long_options, NULL)) != -1) {
        switch (ch) {
        case 'c': o->conns = (int)opt_count(optarg, "-c", 1, MAX_CONNS); break;
        case 'n':
            o->requests = opt_count(optarg, "-n", 1, UINT64_C(1000000000000));
            have_n = true;
            break;
        case 'd': o->duration_ns = opt_seconds(optarg, "-d"); break;
        case 'm': o->method = opt_method(optarg); break;
        case 't': o->timeout_ns = opt_seconds(optarg, "-t"); break;
        case OPT_JSON: o->json = true; break;
        case OPT_PROGRESS: o->progress = true; break;
        case OPT_COPIES: o->copies = (int)opt_count(optarg, "--copies", 1, MAX_URLS); break;
        case OPT_BODIES:
            if ((o->bodies = fopen(optarg, "w")) == NULL)
                usage_error("--bodies %s: cannot write there", optarg);
            break;
        case OPT_RATE: o->rate = opt_real(optarg, "--rate", false, 1e6, "requests a second"); break;
        case OPT_ARRIVALS: o->arrivals = opt_arrivals(optarg); open_only = true; break;
        case OPT_SEED:
            o->seed = opt_count(optarg, "--seed", 0, UINT64_MAX);
            open_only = true;
            break;
        case OPT_RATE_STEP:
            o->rate_step = opt_real(optarg, "--rate-step", true, 1e6, "requests a second");
            have_step = true;
            break;
        case OPT_STEPS:
            o->steps = (int)opt_count(optarg, "--steps", 1, MAX_STEPS);
            have_steps = true;
            break;
        case OPT_LATE:
            o->late_ns = (int64_t)(opt_real(optarg, "--late-ms", false, 60000, "milliseconds") * 1e6);
            open_only = true;
            break;
        case OPT_THINK:
            o->think_ns = (int64_t)(opt_real(optarg, "--think-ms", false, 60000, "milliseconds") * 1e6);
            break;
        case 'h': fputs(usage_text, stdout); exit(EXIT_RAN);
        case ':': usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt)
                usage_error("unknown option '-%c'", optopt);
            usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (o->duration_ns && !have_n)
        o->requests = 0;
    if ((open_only || have_step || have_steps) && o->rate == 0)
        usage_error("--arrivals, --seed, --rate-step, --steps and --late-ms go with --rate");
    if (o->think_ns && o->rate > 0)
        usage_error("--think-ms is a closed loop's pause: an open loop's schedule has its own");
    if (have_step != have_steps)
        usage_error("--rate-step and --steps go together");
    if (have_step && o->duration_ns == 0)
        usage_error("--rate-step needs -d, each step's length");
    o->stepped = have_step;
    if (optind == argc)
        usage_error("missing URL");
    if (argc - optind > MAX_URLS)
        usage_error("at most %d URLs", MAX_URLS);
    for (; optind < argc; optind++)
        url_parse(argv[optind], o->method, &o->target[o->ntargets++]);
    if (o->copies > o->ntargets)
        usage_error("--copies %d needs as many URLs (%d given): copies go to different ones",
                    o->copies, o->ntargets);
}

/* ---------------------------------------------------------------- connection */

/* Wait until fd is ready for `events` (WAIT_READ, WAIT_WRITE) or the
 * deadline passes: a thread polls, a coroutine of the open loop parks on
 * its loop (wait.h). Readiness includes errors and hang-ups: the following
 * recv/send reports them. */
static int conn_wait(int fd, int events, int64_t deadline)
{
    return wait_fd(fd, events, deadline / 1000) ? IO_OK : IO_TIMEOUT;
}

/* Open a non-blocking TCP_NODELAY connection; 0 or an errno value. */
static int conn_open(struct conn *c, const struct sockaddr_in *addr, int64_t deadline)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    int err = 0;
    if (connect(fd, (const struct sockaddr *)addr, sizeof *addr) != 0) {
        if (errno != EINPROGRESS)
            err = errno;
        else if (conn_wait(fd, WAIT_WRITE, deadline) != IO_OK)
            err = ETIMEDOUT;
        else {
            socklen_t len = sizeof err;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                err = errno;
        }
    }
    if (err) {
        close(fd);
        return err;
    }
    c->fd = fd;
    reader_clear(&c->in);
    return 0;
}

static void conn_close(struct conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    reader_clear(&c->in);
}

/* True when an idle keep-alive connection was closed by the server (or
 * holds bytes nobody asked for): reusing it would lose the next request. */
static bool conn_is_stale(const struct conn *c)
{
    char byte;
    if (reader_pending(&c->in))
        return true;
    ssize_t n = recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

static int conn_send_all(struct conn *c, const char *p, size_t n, int64_t deadline)
{
    while (n > 0) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = conn_wait(c->fd, WAIT_WRITE, deadline);
            if (rc != IO_OK)
                return rc;
        } else if (!(k < 0 && errno == EINTR)) {
            return IO_ERR;
        }
    }
    return IO_OK;
}

/* The reader's source: what recv gives once the socket is readable. */
static int conn_recv(void *src, char *buf, size_t cap, size_t *got, int64_t deadline)
{
    const struct conn *c = src;
    for (;;) {
        int rc = conn_wait(c->fd, WAIT_READ, deadline);
        if (rc != IO_OK)
            return rc;
        ssize_t n = recv(c->fd, buf, cap, 0);
        if (n > 0) {
            *got = (size_t)n;
            return IO_OK;
        }
        if (n == 0)
            return IO_EOF;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return IO_ERR;
    }
}

/* ---------------------------------------------------------------- worker */

static int worker_connect(struct worker *w, int k, int64_t deadline)
{
    struct conn *c = &w->conn[k];
    if (c->fd >= 0 && conn_is_stale(c))
        conn_close(c);
    if (c->fd >= 0)
        return IO_OK;
    int err = conn_open(c, &w->load->opts->target[k].addr, deadline);
    if (err != 0) {
        if (w->connect_errno == 0)
            w->connect_errno = err;
        return IO_CONNECT;
    }
    w->tally.connects++;
    return IO_OK;
}

/* The second of the run a request that ends at `end` counts in. */
static uint64_t worker_second(const struct worker *w, int64_t end)
{
    int64_t ns = end - w->load->start_ns;
    return ns > 0 ? (uint64_t)(ns / NS_PER_S) : 0;
}

/* An open loop's request of step `step` that ended at `end`. */
static void worker_step(struct worker *w, int step, int64_t end, int64_t lag_ns,
                        int64_t latency_ns, bool answered)
{
    struct step_tally *st = &w->step[step];
    st->requests++;
    if (lag_ns > w->load->opts->late_ns)
        st->late++;
    if (end > st->last_end_ns)
        st->last_end_ns = end;
    if (answered)
        hist_add(&st->latency, (uint64_t)((latency_ns + 500) / 1000));
}

static void worker_failed(struct worker *w, int k, int rc)
{
    tally_failure(&w->tally, rc);
    timeline_add(&w->timeline, worker_second(w, now_ns()), TL_ERRORS);
    conn_close(&w->conn[k]);
    /* In duration mode, do not spin on a refused port. */
    if (rc == IO_CONNECT && w->load->opts->duration_ns)
        sleep_us(10 * 1000);
}

/* --bodies: the answer's body as one line (under the load's lock). */
static void body_write(struct load *l, const struct response *r)
{
    size_t i;

    pthread_mutex_lock(&l->mu);
    for (i = 0; i < r->body_len; i++)
        fputc(r->body[i] == '\n' || r->body[i] == '\r' ? ' ' : r->body[i], l->opts->bodies);
    fputc('\n', l->opts->bodies);
    pthread_mutex_unlock(&l->mu);
}

/* One ticket: (re)connect if needed, send, read the whole answer. Ticket t
 * is copy t mod K of purchase t div K, sent to its URL (see the top). In
 * an open loop (step >= 0) it was due at `due` and its latency runs from
 * then; in a closed loop from now. */
static void worker_request(struct worker *w, uint64_t ticket, int64_t due, int step)
{
    const struct load_opts *o = w->load->opts;
    uint64_t j = ticket / (uint64_t)o->copies, copy = ticket % (uint64_t)o->copies;
    int k = (int)((j + copy) % (uint64_t)o->ntargets);
    int64_t start = now_ns();
    int64_t deadline = start + o->timeout_ns;
    if (step < 0)
        due = start;
    else
        tally_sent(&w->tally, start - due, o->late_ns);
    size_t len;
    const char *req = request_for(&o->target[k], j, &w->buf, &w->buf_cap, &len);

    int rc = worker_connect(w, k, deadline);
    if (rc == IO_OK)
        rc = conn_send_all(&w->conn[k], req, len, deadline);
    if (rc == IO_OK)
        rc = resp_read(&w->conn[k].in, &w->resp, deadline);
    if (rc != IO_OK) {
        if (step >= 0)
            worker_step(w, step, now_ns(), start - due, 0, false);
        worker_failed(w, k, rc);
        return;
    }
    int64_t end = now_ns();
    uint64_t second = worker_second(w, end);
    tally_answer(&w->tally, &w->resp, end - due);
    if (step >= 0)
        worker_step(w, step, end, start - due, end - due, true);
    timeline_add(&w->timeline, second, TL_ANSWERS);
    if (w->resp.status == 200) {
        timeline_add(&w->timeline, second, TL_SOLD);
        /* Only this thread writes it: a relaxed load and store suffice. */
        atomic_store_explicit(&w->sold, atomic_load_explicit(&w->sold, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    }
    if (o->bodies)
        body_write(w->load, &w->resp);
    if (w->resp.close)
        conn_close(&w->conn[k]);
}

static bool load_take_ticket(struct load *l, uint64_t *ticket)
{
    if (atomic_load_explicit(&l->stop, memory_order_relaxed))
        return false;
    *ticket = atomic_fetch_add_explicit(&l->issued, 1, memory_order_relaxed);
    return l->opts->requests == 0 || *ticket < l->opts->requests;  /* 0: duration mode */
}

static void load_wait_go(struct load *l)
{
    pthread_mutex_lock(&l->mu);
    while (!l->go)
        pthread_cond_wait(&l->go_cond, &l->mu);
    pthread_mutex_unlock(&l->mu);
}

/* A worker is done: its connections closed, its buffer freed. */
static void worker_end(struct worker *w)
{
    for (int k = 0; k < w->load->opts->ntargets; k++)
        conn_close(&w->conn[k]);
    free(w->buf);
    w->buf = NULL;
}

/* n more workers have finished: the main thread is told. */
static void load_finished(struct load *l, int n)
{
    pthread_mutex_lock(&l->mu);
    l->finished += n;
    pthread_cond_signal(&l->done_cond);
    pthread_mutex_unlock(&l->mu);
}

/* A closed loop's thread: tickets until there are none left. */
static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct load *l = w->load;
    uint64_t done = 0, ticket;

    load_wait_go(l);
    while (load_take_ticket(l, &ticket)) {
        worker_request(w, ticket, 0, -1);
        atomic_store_explicit(&w->done, ++done, memory_order_relaxed);
        if (l->opts->think_ns)
            sleep_us(l->opts->think_ns / 1000);
    }
    worker_end(w);
    load_finished(l, 1);
    return NULL;
}

/* ---------------------------------------------------------------- the open loop */

/* An open loop's worker, a coroutine on the loop: the dispatcher's tickets
 * until it says the end; after each, back on the idle stack, waking the
 * dispatcher if it waits for one. The last worker to end stops the loop. */
static void worker_open(void *arg)
{
    struct worker *w = arg;
    struct load *l = w->load;
    uint64_t done = 0;

    for (;;) {
        while (!w->job_ready && !w->job_end)
            task_park(WAIT_FOREVER);
        if (w->job_end)
            break;
        w->job_ready = false;
        w->used = true;
        worker_request(w, w->job_ticket, w->job_due_ns, w->job_step);
        atomic_store_explicit(&w->done, ++done, memory_order_relaxed);
        l->idle[l->nidle++] = w->index;
        if (l->dispatcher_parked) {
            l->dispatcher_parked = false;
            task_wake(l->dispatcher);
        }
    }
    worker_end(w);
    if (--l->alive == 0)
        loop_stop();
}

/* The dispatcher waits until a request `gap` after the last one is due.
 * A timer's wake-up is late by tens of microseconds on a virtual machine,
 * which a latency counted from the due time would charge to the server.
 * So under a light load (a gap of SPIN_GAP_NS or more) it wakes a little
 * early, and if no request is in flight then (nothing else for the loop to
 * serve) it spins to the due time: a tenth of the gap, SPIN_MAX_NS at
 * most, so the spinning costs at most a tenth of one CPU. */
static void load_wait_due(struct load *l, int64_t due, int64_t gap)
{
    int64_t spin = gap / 10 < SPIN_MAX_NS ? gap / 10 : SPIN_MAX_NS;

    if (gap >= SPIN_GAP_NS) {
        wait_until((due - spin) / 1000);
        if (l->nidle == l->opts->conns) {
            while (now_ns() < due)
                ;
            return;
        }
    }
    wait_until((due + 999) / 1000);
}

/* The dispatcher waits until `n` workers are idle. */
static void load_wait_idle(struct load *l, int n)
{
    while (l->nidle < n) {
        l->dispatcher_parked = true;
        task_park(WAIT_FOREVER);
    }
}

/* The dispatcher, a coroutine on the loop: each request of the schedule,
 * when it is due, to the most recently freed worker (the top of the idle
 * stack: its connection is the warmest), waiting for one when none is
 * idle; then, once every worker is back, the end to all of them. */
static void dispatcher_main(void *arg)
{
    struct load *l = arg;
    int64_t at;
    int step;
    uint64_t ticket = 0;

    load_wait_go(l);            /* the workers have all parked by now */
    int64_t last_due = l->start_ns;

    while (sched_next(&l->sched, &at, &step)) {
        int64_t due = l->start_ns + at;
        load_wait_due(l, due, due - last_due);
        last_due = due;
        load_wait_idle(l, 1);
        struct worker *w = &l->workers[l->idle[--l->nidle]];
        w->job_ticket = ticket++;
        w->job_due_ns = due;
        w->job_step = step;
        w->job_ready = true;
        task_wake(w->task);
    }
    atomic_store(&l->issued, ticket);
    load_wait_idle(l, l->opts->conns);
    for (int i = 0; i < l->opts->conns; i++) {
        l->workers[i].job_end = true;
        task_wake(l->workers[i].task);
    }
}

/* The open loop's thread: its event loop, a coroutine per worker and the
 * dispatcher's, until the last worker ends. They start before the run
 * does: the dispatcher, the last of them, waits for the go (blocking the
 * loop, which has nothing else to do yet). */
static void *open_main(void *arg)
{
    struct load *l = arg;

    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);     /* wake when asked      */
    if (loop_init() != 0)
        die("cannot start the open loop's event loop (libevent)");
    l->alive = l->opts->conns;
    for (int i = 0; i < l->opts->conns; i++)
        l->workers[i].task = task_spawn(worker_open, &l->workers[i]);
    l->dispatcher = task_spawn(dispatcher_main, l);
    loop_run();
    loop_free();
    coro_pool_free();
    load_finished(l, l->opts->conns);
    return NULL;
}

/* ---------------------------------------------------------------- run */

static void load_init(struct load *l, const struct load_opts *o)
{
    memset(l, 0, sizeof *l);
    l->opts = o;
    atomic_init(&l->issued, 0);
    atomic_init(&l->stop, false);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->go_cond, NULL);

    pthread_condattr_t attr;            /* done_cond waits on CLOCK_MONOTONIC */
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&l->done_cond, &attr);
    pthread_condattr_destroy(&attr);

    sched_init(&l->sched, o->rate, o->rate_step, o->steps, o->duration_ns, o->requests,
               o->arrivals, o->seed);
}

/* Each connection needs a descriptor: raise the soft limit if it is low. */
static void load_raise_nofile(int conns)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= (rlim_t)conns + 64)
        return;
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

/* The workers (their tallies are calloc'ed zeros: empty, and their
 * histograms' pages untouched until used): a thread each in a closed loop;
 * in an open loop the idle stack, worker 0 on top, and the one thread
 * whose loop runs them all. */
static struct worker *load_spawn(struct load *l)
{
    int n = l->opts->conns;
    bool open = l->opts->rate > 0;
    struct worker *w = xcalloc((size_t)n, sizeof *w);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, STACK_SIZE);
    l->workers = w;
    if (open) {
        l->idle = xcalloc((size_t)n, sizeof *l->idle);
        for (int i = 0; i < n; i++)
            l->idle[i] = n - 1 - i;
        l->nidle = n;
    }
    for (int i = 0; i < n; i++) {
        w[i].load = l;
        w[i].index = i;
        if (open)
            w[i].step = xcalloc((size_t)l->opts->steps, sizeof *w[i].step);
        for (int k = 0; k < MAX_URLS; k++) {
            w[i].conn[k].fd = -1;
            reader_init(&w[i].conn[k].in, conn_recv, &w[i].conn[k]);
        }
        atomic_init(&w[i].done, 0);
        atomic_init(&w[i].sold, 0);
        timeline_init(&w[i].timeline);
        int rc = open ? 0 : pthread_create(&w[i].tid, &attr, worker_main, &w[i]);
        if (rc != 0)
            die("cannot start thread %d of %d: %s (try a smaller -c)", i + 1, n, strerror(rc));
    }
    if (open) {
        int rc = pthread_create(&l->loop_thread, &attr, open_main, l);
        if (rc != 0)
            die("cannot start the open loop's thread: %s", strerror(rc));
    }
    pthread_attr_destroy(&attr);
    return w;
}

static uint64_t load_done(const struct worker *w, int n, uint64_t *sold)
{
    uint64_t sum = 0;
    *sold = 0;
    for (int i = 0; i < n; i++) {
        sum += atomic_load_explicit(&w[i].done, memory_order_relaxed);
        *sold += atomic_load_explicit(&w[i].sold, memory_order_relaxed);
    }
    return sum;
}

/* Seconds left at `now`: what the duration leaves (0 once it is up and
 * the last requests finish), or with -n the requests not yet done at the
 * rate so far; -1 when nothing is done yet to tell. */
static double load_left(const struct load *l, int64_t now, uint64_t done)
{
    const struct load_opts *o = l->opts;
    double ran = (double)(now - l->start_ns) / (double)NS_PER_S;

    double cap = -1, left;

    if (o->rate > 0) {                  /* the schedule's end                */
        int64_t end = sched_end_ns(&l->sched);
        if (end == INT64_MAX)
            return -1;
        left = (double)(l->start_ns + end - now) / (double)NS_PER_S;
        return left > 0 ? left : 0;
    }
    if (o->duration_ns) {
        cap = (double)o->duration_ns / (double)NS_PER_S - ran;
        if (cap < 0)
            cap = 0;
        if (o->requests == 0)
            return cap;
    }
    if (done == 0 || ran <= 0)
        return cap;
    left = done >= o->requests ? 0 : (double)(o->requests - done) * ran / (double)done;
    return cap >= 0 && cap < left ? cap : left;
}

/* The progress line: overwritten in place on a terminal, one per second
 * otherwise, e.g. "ll-load: 2140 done, 2100 sold, 3810/s, 4 s left". */
static void load_progress(const struct load *l, const struct worker *w, int64_t now,
                          int64_t *last_ns, uint64_t *last_done)
{
    uint64_t sold, done = load_done(w, l->opts->conns, &sold);
    double rate = (double)(done - *last_done) * (double)NS_PER_S / (double)(now - *last_ns);
    double left = load_left(l, now, done);
    bool tty = isatty(STDERR_FILENO);
    char when[32] = "? s left";

    if (left >= 0)
        snprintf(when, sizeof when, "%.0f s left", left);
    fprintf(stderr, "%sll-load: %llu done, %llu sold, %.0f/s, %s%s", tty ? "\r" : "",
            (unsigned long long)done, (unsigned long long)sold, rate, when,
            tty ? "\033[K" : "\n");
    fflush(stderr);
    *last_ns = now;
    *last_done = done;
}

/* Release the workers, stop them when the duration is up, print progress,
 * and return the elapsed time once every worker has finished. */
static int64_t load_supervise(struct load *l, const struct worker *w)
{
    const struct load_opts *o = l->opts;
    pthread_mutex_lock(&l->mu);
    int64_t start = now_ns(), last_ns = start;
    l->start_ns = start;                /* the workers read it after go      */
    /* An open loop's schedule ends it; a closed loop's -d, the stop flag. */
    int64_t stop_at = o->duration_ns && o->rate == 0 ? start + o->duration_ns : INT64_MAX;
    int64_t tick_at = o->progress ? start + NS_PER_S : INT64_MAX;
    uint64_t last_done = 0;
    bool printed = false;
    l->go = true;
    pthread_cond_broadcast(&l->go_cond);

    while (l->finished < o->conns) {
        int64_t wake = stop_at < tick_at ? stop_at : tick_at;
        struct timespec ts = ns_to_timespec(wake);
        if (wake == INT64_MAX)
            pthread_cond_wait(&l->done_cond, &l->mu);
        else
            pthread_cond_timedwait(&l->done_cond, &l->mu, &ts);
        int64_t now = now_ns();
        if (now >= stop_at) {
            atomic_store(&l->stop, true);
            stop_at = INT64_MAX;
        }
        if (now >= tick_at && l->finished < o->conns) {
            load_progress(l, w, now, &last_ns, &last_done);
            printed = true;
            tick_at += NS_PER_S;
        }
    }
    int64_t elapsed = now_ns() - start;
    pthread_mutex_unlock(&l->mu);
    if (printed && isatty(STDERR_FILENO))
        fputc('\n', stderr);
    return elapsed;
}

/* ---------------------------------------------------------------- output */

#define FIELDS_MAX 256

/* One scalar of the summary, already formatted: both outputs share them. */
struct field {
    char name[40];
    char value[32];
};

struct summary {
    struct field field[FIELDS_MAX];
    int          nfields;
    struct tally total;
    struct timeline seconds;            /* every worker's, merged            */
};

/* The quantiles of --json's "lat_percentiles", denser towards the tail, as
 * a latency-by-percentile chart draws them (0: the minimum, 1: the max). */
static const double lat_quantiles[] = {
    0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.96, 0.97,
    0.98, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999, 1,
};

static void summary_add(struct summary *s, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void summary_add(struct summary *s, const char *name, const char *fmt, ...)
{
    assert(s->nfields < FIELDS_MAX);
    struct field *f = &s->field[s->nfields++];
    snprintf(f->name, sizeof f->name, "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->value, sizeof f->value, fmt, ap);
    va_end(ap);
}

static void summary_latency(struct summary *s)
{
    static const struct { const char *name; double q; } pct[] = {
        { "lat_p50_ms", 0.50 }, { "lat_p90_ms", 0.90 }, { "lat_p95_ms", 0.95 },
        { "lat_p99_ms", 0.99 }, { "lat_p999_ms", 0.999 }, { "lat_p9999_ms", 0.9999 },
    };
    const struct hist *h = &s->total.latency;
    summary_add(s, "lat_mean_ms", "%.3f", hist_mean(h) / 1000.0);
    summary_add(s, "lat_min_ms", "%.3f", (double)hist_min(h) / 1000.0);
    for (size_t i = 0; i < sizeof pct / sizeof pct[0]; i++)
        summary_add(s, pct[i].name, "%.3f", (double)hist_percentile(h, pct[i].q) / 1000.0);
    summary_add(s, "lat_max_ms", "%.3f", (double)hist_max(h) / 1000.0);
}

static int result_cmp(const void *a, const void *b)
{
    return strcmp(((const struct result_count *)a)->name, ((const struct result_count *)b)->name);
}

/* The process's CPU time (every thread's, the dispatcher's too). */
static void summary_cpu(struct summary *s, uint64_t requests)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    double sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    summary_add(s, "cpu_user_s", "%.3f", user);
    summary_add(s, "cpu_sys_s", "%.3f", sys);
    summary_add(s, "cpu_us_per_request", "%.1f",
                requests ? (user + sys) * 1e6 / (double)requests : 0.0);
}

/* Step k of an open loop, every worker's part of it added up. */
static void summary_step(struct summary *s, const struct load *l, const struct worker *w, int k)
{
    static struct step_tally sum;       /* 136 KB: not on the stack          */
    const struct load_opts *o = l->opts;
    char name[40];

    memset(&sum, 0, sizeof sum);
    for (int i = 0; i < o->conns; i++) {
        sum.requests += w[i].step[k].requests;
        sum.late += w[i].step[k].late;
        if (w[i].step[k].last_end_ns > sum.last_end_ns)
            sum.last_end_ns = w[i].step[k].last_end_ns;
        hist_merge(&sum.latency, &w[i].step[k].latency);
    }
    double ran = (double)(sum.last_end_ns - l->start_ns - (int64_t)k * o->duration_ns) / 1e9;
#define STEP_FIELD(suffix, ...) \
    (snprintf(name, sizeof name, "step_%d_" suffix, k), summary_add(s, name, __VA_ARGS__))
    STEP_FIELD("rate", "%.1f", sched_rate(&l->sched, k));
    STEP_FIELD("requests", "%llu", (unsigned long long)sum.requests);
    STEP_FIELD("rps", "%.1f", sum.requests && ran > 0 ? (double)sum.requests / ran : 0.0);
    STEP_FIELD("late", "%llu", (unsigned long long)sum.late);
    STEP_FIELD("p50_ms", "%.3f", (double)hist_percentile(&sum.latency, 0.50) / 1000.0);
    STEP_FIELD("p99_ms", "%.3f", (double)hist_percentile(&sum.latency, 0.99) / 1000.0);
    STEP_FIELD("p999_ms", "%.3f", (double)hist_percentile(&sum.latency, 0.999) / 1000.0);
    STEP_FIELD("max_ms", "%.3f", (double)hist_max(&sum.latency) / 1000.0);
#undef STEP_FIELD
}

/* What only an open loop has: the rate asked, the late sends, how many
 * connections it took, and each step. */
static void summary_open(struct summary *s, const struct load *l, const struct worker *w)
{
    const struct load_opts *o = l->opts;
    int used = 0;

    for (int i = 0; i < o->conns; i++)
        used += w[i].used;
    summary_add(s, "open_loop", "1");
    summary_add(s, "rate_asked", "%.1f", o->rate);
    summary_add(s, "poisson", "%d", o->arrivals == SCHED_POISSON);
    summary_add(s, "late_sends", "%llu", (unsigned long long)s->total.late);
    summary_add(s, "send_lag_p50_ms", "%.3f", (double)hist_percentile(&s->total.lag, 0.5) / 1000.0);
    summary_add(s, "send_lag_p99_ms", "%.3f", (double)hist_percentile(&s->total.lag, 0.99) / 1000.0);
    summary_add(s, "send_lag_max_ms", "%.3f", (double)hist_max(&s->total.lag) / 1000.0);
    summary_add(s, "connections_used", "%d", used);
    if (o->stepped) {
        summary_add(s, "steps", "%d", o->steps);
        for (int k = 0; k < o->steps; k++)
            summary_step(s, l, w, k);
    }
}

static void summary_build(struct summary *s, const struct load *l, const struct worker *w, int n,
                          int64_t elapsed_ns)
{
    memset(s, 0, sizeof *s);
    tally_init(&s->total);
    for (int i = 0; i < n; i++) {
        tally_merge(&s->total, &w[i].tally);
        timeline_merge(&s->seconds, &w[i].timeline);
    }
    qsort(s->total.result, s->total.nresults, sizeof s->total.result[0], result_cmp);

    const struct tally *t = &s->total;
    uint64_t answers = hist_count(&t->latency), errors = tally_errors(t);
    double elapsed = (double)elapsed_ns / (double)NS_PER_S;
    char name[24];

    summary_add(s, "requests", "%llu", (unsigned long long)(answers + errors));
    summary_add(s, "responses", "%llu", (unsigned long long)answers);
    summary_add(s, "transport_errors", "%llu", (unsigned long long)errors);
    for (int i = 0; i < ERR_KINDS; i++) {
        snprintf(name, sizeof name, "err_%s", err_names[i]);
        summary_add(s, name, "%llu", (unsigned long long)t->errors[i]);
    }
    summary_add(s, "connections", "%d", n);
    summary_add(s, "tcp_connects", "%llu", (unsigned long long)t->connects);
    summary_add(s, "elapsed_s", "%.3f", elapsed);
    summary_add(s, "rps", "%.1f", elapsed > 0 ? (double)(answers + errors) / elapsed : 0.0);
    summary_latency(s);
    summary_add(s, "results_missing", "%llu", (unsigned long long)t->missing);
    summary_cpu(s, answers + errors);
    if (l->opts->rate > 0)
        summary_open(s, l, w);
}

/* Result names as shell-safe key suffixes: [a-z0-9_], anything else '_'. */
static void kv_name(const char *in, char *out)
{
    for (; *in; in++, out++) {
        char ch = *in;
        *out = ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) ? ch : '_';
    }
    *out = '\0';
}

/* Results, with names made shell-safe; names that become equal add up. */
static void kv_results(const struct tally *t)
{
    struct result_count safe[RESULT_MAX];
    for (unsigned i = 0; i < t->nresults; i++) {
        kv_name(t->result[i].name, safe[i].name);
        safe[i].n = t->result[i].n;
    }
    qsort(safe, t->nresults, sizeof safe[0], result_cmp);
    for (unsigned i = 0; i < t->nresults; i++) {
        uint64_t n = safe[i].n;
        while (i + 1 < t->nresults && strcmp(safe[i].name, safe[i + 1].name) == 0)
            n += safe[++i].n;
        printf("result_%s=%llu\n", safe[i].name, (unsigned long long)n);
    }
}

static void print_kv(const struct summary *s)
{
    for (int i = 0; i < s->nfields; i++)
        printf("%s=%s\n", s->field[i].name, s->field[i].value);
    for (int code = 0; code < STATUS_MAX; code++)
        if (s->total.status[code])
            printf("status_%d=%llu\n", code, (unsigned long long)s->total.status[code]);
    kv_results(&s->total);
}

/* Length of the valid UTF-8 sequence starting at p (a byte >= 0x80), or 0
 * when it is not one: overlongs, surrogates and values past U+10FFFF fail. */
static size_t utf8_len(const unsigned char *p)
{
    size_t n = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc2 ? 2 : 0;
    if (n == 0 || *p > 0xf4)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
        return 0;
    return n;
}

/* A JSON string. Valid UTF-8 passes through; a stray byte becomes \u00XX,
 * so the output is valid JSON whatever the server sent. */
static void json_string(const char *str)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        size_t n = *p >= 0x80 ? utf8_len(p) : 0;
        if (n > 0) {
            fwrite(p, 1, n, stdout);
            p += n - 1;
        } else if (*p == '"' || *p == '\\') {
            printf("\\%c", *p);
        } else if (*p < 0x20 || *p >= 0x7f) {
            printf("\\u%04x", *p);
        } else {
            putchar(*p);
        }
    }
    putchar('"');
}

/* "per_second": {"answers": [...], "sold": [...], "errors": [...]}. */
static void print_json_seconds(const struct timeline *t)
{
    static const char *const kind_names[TL_KINDS] = {
        [TL_ANSWERS] = "answers", [TL_SOLD] = "sold", [TL_ERRORS] = "errors",
    };
    printf("\"per_second\":{");
    for (int k = 0; k < TL_KINDS; k++) {
        printf("%s\"%s\":[", k ? "," : "", kind_names[k]);
        for (uint64_t sec = 0; sec < timeline_seconds(t); sec++)
            printf("%s%llu", sec ? "," : "",
                   (unsigned long long)timeline_get(t, sec, (enum tl_kind)k));
        putchar(']');
    }
    putchar('}');
}

static void print_json(const struct summary *s)
{
    const struct tally *t = &s->total;
    putchar('{');
    for (int i = 0; i < s->nfields; i++)
        printf("\"%s\":%s,", s->field[i].name, s->field[i].value);
    printf("\"status\":{");
    const char *sep = "";
    for (int code = 0; code < STATUS_MAX; code++) {
        if (t->status[code]) {
            printf("%s\"%d\":%llu", sep, code, (unsigned long long)t->status[code]);
            sep = ",";
        }
    }
    printf("},\"result\":{");
    for (unsigned i = 0; i < t->nresults; i++) {
        printf("%s", i ? "," : "");
        json_string(t->result[i].name);
        printf(":%llu", (unsigned long long)t->result[i].n);
    }
    printf("},");
    print_json_seconds(&s->seconds);
    printf(",\"lat_percentiles\":[");
    for (size_t i = 0; i < sizeof lat_quantiles / sizeof lat_quantiles[0]; i++)
        printf("%s[%g,%.3f]", i ? "," : "", lat_quantiles[i],
               (double)hist_percentile(&t->latency, lat_quantiles[i]) / 1000.0);
    printf("]}\n");
}

/* ---------------------------------------------------------------- main */

/* The first connect error any worker saw, 0 if one connection opened. */
static int load_connect_failure(const struct worker *w, int n, const struct tally *total)
{
    if (total->connects > 0)
        return 0;
    for (int i = 0; i < n; i++)
        if (w[i].connect_errno)
            return w[i].connect_errno;
    return 0;
}

int main(int argc, char **argv)
{
    static struct load_opts opts;
    static struct load load;
    static struct summary summary;

    cli_init("ll-load", EXIT_NOCONNECT);
    opts_parse(argc, argv, &opts);
    load_raise_nofile(opts.conns * opts.ntargets);
    load_init(&load, &opts);

    struct worker *w = load_spawn(&load);
    int64_t elapsed = load_supervise(&load, w);
    if (opts.rate > 0)
        pthread_join(load.loop_thread, NULL);
    else
        for (int i = 0; i < opts.conns; i++)
            pthread_join(w[i].tid, NULL);
    summary_build(&summary, &load, w, opts.conns, elapsed);
    if (opts.json)
        print_json(&summary);
    else
        print_kv(&summary);
    fflush(stdout);
    if (opts.bodies && fclose(opts.bodies) != 0)
        fprintf(stderr, "ll-load: --bodies: %s\n", strerror(errno));

    int err = load_connect_failure(w, opts.conns, &summary.total);
    for (int i = 0; i < opts.conns; i++) {
        timeline_free(&w[i].timeline);
        free(w[i].step);
    }
    free(load.idle);
    timeline_free(&summary.seconds);
    free(w);
    for (int k = 0; k < opts.ntargets; k++)
        free(opts.target[k].request);
    if (err) {
        fprintf(stderr, "ll-load: could not connect to %s%s: %s\n", opts.target[0].authority,
                opts.ntargets > 1 ? " and the others" : "", strerror(err));
        return EXIT_NOCONNECT;
    }
    return EXIT_RAN;
}
