/* etcd.c — the transport of etcd's JSON gateway: libcurl's multi-socket
 * API, every wait through core/wait.h (see etcd.h for the gateway).
 *
 * A call is one POST of a JSON body to the current endpoint; the answer is
 * read whole and parsed with jansson. libcurl does the HTTP; we do the
 * waiting. Each conn owns a multi handle with one easy handle, and an
 * epoll set of its own holding the sockets curl asks us to watch
 * (CURLMOPT_SOCKETFUNCTION adds, changes and removes them); curl's timer
 * (CURLMOPT_TIMERFUNCTION) is a deadline. A transfer runs as:
 *
 *     add the easy handle to the multi (curl sets its timer to now)
 *     until curl reports it done:
 *         wait_fd(the epoll set, readable, curl's deadline)
 *         ready sockets: curl_multi_socket_action(socket, what was ready)
 *         the deadline: curl_multi_socket_action(CURL_SOCKET_TIMEOUT)
 *     take the easy handle out (its connection stays in the multi's cache)
 *
 * The epoll set turns any number of sockets (a connect to two addresses
 * of a name, curl's resolver) into one descriptor that the wait layer
 * waits on: a coroutine parks on the loop, a thread blocks in poll(); the
 * socket itself is never read but by curl, and only when it is ready. So
 * nothing here blocks: connects, sends and receives are curl's
 * non-blocking ones. curl's own transfer timeout (CURLOPT_TIMEOUT_MS, the
 * call's time left or ETCD_CALL_MS) ends a transfer that does not finish.
 *
 * What can go wrong, and what a call does about it:
 *   - the endpoint does not answer (refused, reset, nothing within
 *     ETCD_CALL_MS): the next endpoint, round the list;
 *   - it answers that the cluster cannot serve now — gRPC codes
 *     Unavailable (no leader, leader changed, request timed out) and
 *     DeadlineExceeded: the next endpoint too, after a short pause, as
 *     etcd's own client retries them;
 *   - every endpoint failed once more: the same pause before the next
 *     round (a refused connect fails at once: without it a call would
 *     spin on the CPU until its limit);
 *   - any other error answer is etcd's verdict: ETCD_FAIL.
 * Until until_ms; then ETCD_DOWN with the last reason.
 *
 * The watch is the one streamed call: POST /v3/watch with a create_request
 * answers one JSON message a line for as long as the connection stays
 * open. The write callback splits lines and parses each; on the DELETE
 * event it stops the transfer (returning 0 makes libcurl abort it), which
 * closes that connection: the next call opens a new one.
 *
 * The JSON of the wire is here too: base64 for keys, 64-bit integers as
 * decimal strings, the fields every answer has (clients/etcd_api.c builds
 * the requests with them).
 *
 * libcurl is initialised once (curl_global_init is not thread-safe: a
 * pthread_once, in etcd_client_init(), best called at start-up); handles
 * never raise signals (CURLOPT_NOSIGNAL), which a threaded server needs.
 * A conn holds curl's pointers back to itself: it stays where it was made
 * until etcd_conn_free().
 */
#include "etcd.h"
#include "../core/ctx.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define ETCD_PAUSE_US 20000     /* an election's moment, between rounds      */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_start(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void etcd_client_init(void)
{
    pthread_once(&curl_once, curl_start);
}

/* ---------------------------------------------------------------- curl's sockets and timer */

/* CURLMOPT_SOCKETFUNCTION: watch s for what curl wants, or no more. A
 * socket in the set is marked with curl_multi_assign(). */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct etcd_conn *c = userp;
    struct epoll_event ev = { 0 };

    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        if (socketp)            /* fails only if closed already: out anyway */
            epoll_ctl(c->epfd, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    ev.data.fd = s;
    if (socketp != NULL) {
        epoll_ctl(c->epfd, EPOLL_CTL_MOD, s, &ev);
    } else if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, s, &ev) == 0) {
        curl_multi_assign(c->multi, s, c);
    } else {
        /* Not watched: curl's transfer timeout ends the transfer. */
        fprintf(stderr, "locklab: etcd: cannot watch a socket: %s\n", strerror(errno));
    }
    return 0;
}

/* CURLMOPT_TIMERFUNCTION: curl's deadline, -1 for none. */
static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
    struct etcd_conn *c = userp;

    (void)multi;
    c->timer_us = timeout_ms < 0 ? WAIT_FOREVER : now_us() + (int64_t)timeout_ms * 1000;
    c->timer_calls++;
    return 0;
}

/* The multi, easy handle and epoll set, made at the first call: 0, or -1
 * when no descriptor is left for the set. */
static int conn_open(struct etcd_conn *c)
{
    if (c->multi != NULL)
        return 0;
    etcd_client_init();
    if ((c->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return -1;
    c->multi = curl_multi_init();
    c->easy = curl_easy_init();
    if (c->multi == NULL || c->easy == NULL) {
        fprintf(stderr, "locklab: curl_multi_init/curl_easy_init failed\n");
        abort();
    }
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    c->timer_us = WAIT_FOREVER;
    return 0;
}

static int cselect_of(uint32_t events)
{
    if (events & (EPOLLERR | EPOLLHUP))     /* the next read or write says */
        return CURL_CSELECT_IN | CURL_CSELECT_OUT;
    return (events & EPOLLIN ? CURL_CSELECT_IN : 0) | (events & EPOLLOUT ? CURL_CSELECT_OUT : 0);
}

/* One wait for curl's sockets or its deadline, and curl's turn at what
 * came. */
static void conn_step(struct etcd_conn *c)
{
    struct epoll_event ev[8];
    unsigned set;
    int running, n, i;
    long ms;

    if (c->timer_us > now_us() && wait_fd(c->epfd, WAIT_READ, c->timer_us) != 0) {
        n = epoll_wait(c->epfd, ev, 8, 0);
        for (i = 0; i < n; i++)
            curl_multi_socket_action(c->multi, ev[i].data.fd, cselect_of(ev[i].events),
                                     &running);
        if (n > 0)
            return;
    }
    if (now_us() < c->timer_us)
        return;
    set = c->timer_calls;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    /* curl calls the timer back only when its deadline changed: one that
     * came a little early stays due, so ask for it again. */
    if (c->timer_calls == set && curl_multi_timeout(c->multi, &ms) == CURLM_OK)
        c->timer_us = ms < 0 ? WAIT_FOREVER : now_us() + (int64_t)ms * 1000;
}

/* Run the transfer set up on c->easy until curl says it is done. */
static CURLcode conn_run(struct etcd_conn *c)
{
    CURLcode rc = CURLE_OK;
    CURLMsg *msg;
    int left, done = 0;

    curl_multi_add_handle(c->multi, c->easy);
    while (!done) {
        conn_step(c);
        while ((msg = curl_multi_info_read(c->multi, &left)) != NULL)
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == c->easy) {
                rc = msg->data.result;
                done = 1;
            }
    }
    curl_multi_remove_handle(c->multi, c->easy);
    return rc;
}

/* ---------------------------------------------------------------- connection */

int etcd_conn_init(struct etcd_conn *c, const char *endpoints)
{
    memset(c, 0, sizeof *c);
    c->epfd = -1;
    c->timer_us = WAIT_FOREVER;
    snprintf(c->name, sizeof c->name, "etcd %s", endpoints);
    c->nep = config_parse_servers(endpoints, c->ep, CONFIG_MAX_SERVERS);
    return c->nep > 0 ? 0 : -1;
}

void etcd_conn_free(struct etcd_conn *c)
{
    if (c->easy)
        curl_easy_cleanup(c->easy);
    if (c->multi)
        curl_multi_cleanup(c->multi);       /* closes the kept connection */
    if (c->epfd >= 0)
        close(c->epfd);
    c->easy = c->multi = NULL;
    c->epfd = -1;
}

int etcd_error(struct lock_ctx *ctx, const struct etcd_conn *c, int rc, const char *what)
{
    return lock_error(ctx, rc == ETCD_DOWN ? LL_UNAVAILABLE : LL_ERROR, c->name, "%s: %s", what,
                      c->err);
}

/* ---------------------------------------------------------------- JSON */

static const char b64_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void etcd_b64(const char *s, size_t n, char *out, size_t outlen)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i, o = 0;

    for (i = 0; i < n && o + 4 < outlen; i += 3) {
        unsigned v = (unsigned)u[i] << 16 | (i + 1 < n ? (unsigned)u[i + 1] << 8 : 0) |
                     (i + 2 < n ? u[i + 2] : 0);
        out[o++] = b64_chars[v >> 18 & 63];
        out[o++] = b64_chars[v >> 12 & 63];
        out[o++] = i + 1 < n ? b64_chars[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? b64_chars[v & 63] : '=';
    }
    out[o] = '\0';
}

static int b64_value(char ch)
{
    const char *p = ch ? strchr(b64_chars, ch) : NULL;
    return p ? (int)(p - b64_chars) : -1;
}

/* Decode s into out (NUL-terminated); -1 on a character outside base64 or
 * a result that does not fit. */
static int b64_decode(const char *s, char *out, size_t outlen)
{
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0, v;

    for (; *s && *s != '='; s++) {
        if ((v = b64_value(*s)) < 0)
            return -1;
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o + 1 >= outlen)
                return -1;
            out[o++] = (char)(acc >> bits & 0xff);
        }
    }
    out[o] = '\0';
    return 0;
}

int etcd_key_of(json_t *kv, char *out, size_t outlen)
{
    const char *k = json_string_value(json_object_get(kv, "key"));
    return k ? b64_decode(k, out, outlen) : -1;
}

long long etcd_i64(json_t *obj, const char *field)
{
    json_t *v = json_object_get(obj, field);

    if (json_is_integer(v))
        return (long long)json_integer_value(v);
    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    return 0;
}

long long etcd_revision(json_t *resp)
{
    return etcd_i64(json_object_get(resp, "header"), "revision");
}

void etcd_prefix_end(const char *prefix, char *out, size_t outlen)
{
    size_t n = strlcopy(out, prefix, outlen);

    /* Every key of ours is printable ASCII, so the last byte + 1 is enough. */
    if (n > 0 && n < outlen)
        out[n - 1]++;
}

/* ---------------------------------------------------------------- answers */

/* An answer being read: the whole body, or for the watch, lines. */
struct body {
    char  *buf;
    size_t len, cap;
    /* watch only */
    int    watch, deleted, cancelled;
};

static void body_add(struct body *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        char *grown;
        while (cap < b->len + n + 1)
            cap *= 2;
        grown = xmalloc(cap);
        if (b->len)
            memcpy(grown, b->buf, b->len);
        free(b->buf);
        b->buf = grown;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, p, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

/* One message of the watch stream: a DELETE event, or a cancelled watch. */
static void watch_message(struct body *b, const char *line, size_t n)
{
    json_t *m = json_loadb(line, n, 0, NULL), *res, *ev;
    size_t i;

    res = json_object_get(m, "result");
    if (res == NULL) {
        if (json_object_get(m, "error"))
            b->cancelled = 1;
    } else if (json_is_true(json_object_get(res, "canceled"))) {
        b->cancelled = 1;
    } else {
        json_array_foreach(json_object_get(res, "events"), i, ev) {
            const char *type = json_string_value(json_object_get(ev, "type"));
            if (type && strcmp(type, "DELETE") == 0)
                b->deleted = 1;
        }
    }
    json_decref(m);
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
    struct body *b = arg;
    size_t n = size * nmemb;
    char *nl;

    body_add(b, p, n);
    if (!b->watch)
        return n;
    while ((nl = memchr(b->buf, '\n', b->len)) != NULL) {
        size_t line = (size_t)(nl - b->buf);
        if (line > 0)
            watch_message(b, b->buf, line);
        memmove(b->buf, nl + 1, b->len - line - 1);
        b->len -= line + 1;
        b->buf[b->len] = '\0';
    }
    return b->deleted || b->cancelled ? 0 : n;    /* 0: enough, stop */
}

/* ---------------------------------------------------------------- calls */

/* One POST to the current endpoint. CURLcode, and the HTTP status. */
static CURLcode post(struct etcd_conn *c, const char *path, const char *json, struct body *b,
                     long timeout_ms, long *status)
{
    char url[160];
    struct curl_slist hdr = { "Content-Type: application/json", NULL };
    long connects = 0;
    CURL *h;
    CURLcode rc;

    *status = 0;
    if (conn_open(c) != 0)
        return CURLE_FAILED_INIT;       /* no descriptor for the epoll set */
    h = c->easy;
    snprintf(url, sizeof url, "http://%s:%d%s", c->ep[c->cur].host, c->ep[c->cur].port, path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, &hdr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)ETCD_CONNECT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms < 1 ? 1L : timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    c->calls++;
    rc = conn_run(c);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    if (curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects > 0)
        c->connects += (unsigned)connects;
    return rc;
}

static void next_endpoint(struct etcd_conn *c)
{
    c->cur = (c->cur + 1) % c->nep;
}

/* Is an error answer the cluster's "not now" (gRPC Unavailable 14,
 * DeadlineExceeded 4, or the gateway's 503/504 for them)? */
static int not_now(json_t *resp, long status)
{
    long long code = etcd_i64(resp, "code");
    return code == 14 || code == 4 || status == 503 || status == 504;
}

/* One attempt at the current endpoint: ETCD_OK with *resp, ETCD_FAIL, or
 * ETCD_DOWN (then *pause: worth a moment before the next). */
static int attempt(struct etcd_conn *c, const char *path, const char *json, json_t **resp,
                   int64_t until_ms, int *pause)
{
    struct body b = { 0 };
    int64_t left = until_ms - now_ms();
    long status = 0;
    CURLcode cc;
    json_t *r;
    const char *why;
    int rc = ETCD_DOWN;

    cc = post(c, path, json, &b, left < ETCD_CALL_MS ? (long)left : ETCD_CALL_MS, &status);
    if (cc != CURLE_OK) {
        snprintf(c->err, sizeof c->err, "%s:%d%s: %s", c->ep[c->cur].host, c->ep[c->cur].port,
                 path, curl_easy_strerror(cc));
        free(b.buf);
        return ETCD_DOWN;
    }
    r = json_loadb(b.buf ? b.buf : "", b.len, 0, NULL);
    free(b.buf);
    if (status == 200 && json_is_object(r)) {
        *resp = r;
        return ETCD_OK;
    }
    why = json_string_value(json_object_get(r, "error"));
    snprintf(c->err, sizeof c->err, "%s:%d%s: HTTP %ld: %s", c->ep[c->cur].host,
             c->ep[c->cur].port, path, status, why ? why : "no JSON answer");
    if (!not_now(r, status))
        rc = ETCD_FAIL;
    *pause = 1;                 /* an election: give it a moment */
    json_decref(r);
    return rc;
}

int etcd_call(struct etcd_conn *c, const char *path, json_t *req, json_t **resp,
              int64_t until_ms)
{
    char *json = json_dumps(req, JSON_COMPACT);
    int tries = 0, rc = ETCD_DOWN, first = c->cur;

    *resp = NULL;
    for (;;) {
        int pause = 0;
        int64_t left = until_ms - now_ms();

        if (left <= 0 && tries > 0)
            break;
        tries++;
        rc = attempt(c, path, json, resp, until_ms, &pause);
        if (rc != ETCD_DOWN)
            break;
        next_endpoint(c);
        if (pause || c->cur == first) {
            left = until_ms - now_ms();
            sleep_us(left * 1000 < ETCD_PAUSE_US ? left * 1000 : ETCD_PAUSE_US);
        }
    }
    free(json);
    return rc;
}

int etcd_watch_delete(struct etcd_conn *c, const char *key, long long rev, int64_t until_ms,
                      int *timed_out)
{
    char k64[2 * ETCD_KEY_MAX], revs[24], *json;
    struct body b = { .watch = 1 };
    int64_t left = until_ms - now_ms();
    long status = 0;
    json_t *req;
    CURLcode cc;

    *timed_out = 0;
    if (left <= 0) {
        *timed_out = 1;
        snprintf(c->err, sizeof c->err, "timed out waiting for the deletion of %s", key);
        return ETCD_DOWN;
    }
    etcd_b64(key, strlen(key), k64, sizeof k64);
    snprintf(revs, sizeof revs, "%lld", rev);
    req = json_pack("{s:{s:s,s:s}}", "create_request", "key", k64, "start_revision", revs);
    json = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    cc = post(c, "/v3/watch", json, &b, (long)left, &status);
    free(json);
    free(b.buf);
    if (b.deleted || b.cancelled)
        return ETCD_OK;
    if (cc == CURLE_OPERATION_TIMEDOUT && now_ms() >= until_ms) {
        *timed_out = 1;
        snprintf(c->err, sizeof c->err, "timed out waiting for the deletion of %s", key);
    } else {
        snprintf(c->err, sizeof c->err, "%s:%d/v3/watch %s: %s (HTTP %ld)", c->ep[c->cur].host,
                 c->ep[c->cur].port, key, curl_easy_strerror(cc), status);
        next_endpoint(c);
    }
    return ETCD_DOWN;
}
