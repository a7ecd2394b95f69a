/* etcd_client.c — etcd's v3 API over its JSON gateway, with libcurl.
 *
 * See etcd_private.h for why the gateway. A call is one POST of a JSON
 * body to the current endpoint on a kept-alive connection; the answer is
 * read whole and parsed with jansson. What can go wrong, and what a call
 * does about it:
 *   - the endpoint does not answer (refused, reset, nothing within
 *     ETCD_CALL_MS): the next endpoint, round the list;
 *   - it answers that the cluster cannot serve now — gRPC codes
 *     Unavailable (no leader, leader changed, request timed out) and
 *     DeadlineExceeded: the next endpoint too, after a short pause, as
 *     etcd's own client retries them;
 *   - any other error answer is etcd's verdict: ETCD_FAIL.
 * Until until_ms; then ETCD_DOWN with the last reason.
 *
 * The watch is the one streamed call: POST /v3/watch with a create_request
 * answers one JSON message a line for as long as the connection stays
 * open. The write callback splits lines and parses each; on the DELETE
 * event it stops the transfer (returning 0 makes libcurl abort it), which
 * closes that connection: the next call opens a new one.
 *
 * libcurl is initialised once (curl_global_init is not thread-safe: a
 * pthread_once); handles never raise signals (CURLOPT_NOSIGNAL), which a
 * threaded server needs.
 */
#include "etcd_private.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_start(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---------------------------------------------------------------- base64 */

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

/* ---------------------------------------------------------------- connection */

int etcd_conn_init(struct etcd_conn *c, const char *endpoints)
{
    memset(c, 0, sizeof *c);
    c->nep = config_parse_servers(endpoints, c->ep, CONFIG_MAX_SERVERS);
    return c->nep > 0 ? 0 : -1;
}

void etcd_conn_free(struct etcd_conn *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    c->curl = NULL;
}

static CURL *conn_handle(struct etcd_conn *c)
{
    if (c->curl == NULL) {
        pthread_once(&curl_once, curl_start);
        c->curl = curl_easy_init();
        if (c->curl == NULL) {
            fprintf(stderr, "locklab: curl_easy_init failed\n");
            abort();
        }
    }
    return c->curl;
}

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

/* One POST to the current endpoint. CURLcode, and the HTTP status. */
static CURLcode post(struct etcd_conn *c, const char *path, const char *json, struct body *b,
                     long timeout_ms, long *status)
{
    char url[160];
    CURL *h = conn_handle(c);
    struct curl_slist hdr = { "Content-Type: application/json", NULL };
    CURLcode rc;

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
    rc = curl_easy_perform(h);
    *status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
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

int etcd_call(struct etcd_conn *c, const char *path, json_t *req, json_t **resp,
              int64_t until_ms)
{
    char *json = json_dumps(req, JSON_COMPACT);
    int tries = 0, rc = ETCD_DOWN;

    *resp = NULL;
    for (;;) {
        struct body b = { 0 };
        int64_t left = until_ms - now_ms();
        long status = 0;
        CURLcode cc;

        if (left <= 0 && tries > 0)
            break;
        tries++;
        cc = post(c, path, json, &b, left < ETCD_CALL_MS ? (long)left : ETCD_CALL_MS, &status);
        if (cc != CURLE_OK) {
            snprintf(c->err, sizeof c->err, "%s:%d%s: %s", c->ep[c->cur].host,
                     c->ep[c->cur].port, path, curl_easy_strerror(cc));
            next_endpoint(c);
        } else {
            json_t *r = json_loadb(b.buf ? b.buf : "", b.len, 0, NULL);
            if (status == 200 && json_is_object(r)) {
                *resp = r;
                rc = ETCD_OK;
            } else {
                const char *why = json_string_value(json_object_get(r, "error"));
                snprintf(c->err, sizeof c->err, "%s:%d%s: HTTP %ld: %s", c->ep[c->cur].host,
                         c->ep[c->cur].port, path, status, why ? why : "no JSON answer");
                if (!not_now(r, status))
                    rc = ETCD_FAIL;
                json_decref(r);
                next_endpoint(c);
                if (rc == ETCD_DOWN)      /* an election: give it a moment */
                    sleep_us(20000);
            }
        }
        free(b.buf);
        if (rc != ETCD_DOWN)
            break;
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

/* ---------------------------------------------------------------- requests */

/* POST req (taken) and hand back the answer. */
static int call_taking(struct etcd_conn *c, const char *path, json_t *req, json_t **resp,
                       int64_t until_ms)
{
    int rc = etcd_call(c, path, req, resp, until_ms);
    json_decref(req);
    return rc;
}

int etcd_lease_grant(struct etcd_conn *c, int ttl_s, long long *id, int *granted,
                     int64_t until_ms)
{
    char ttl[16];
    json_t *resp;
    int rc;

    snprintf(ttl, sizeof ttl, "%d", ttl_s);
    rc = call_taking(c, "/v3/lease/grant", json_pack("{s:s}", "TTL", ttl), &resp, until_ms);
    if (rc != ETCD_OK)
        return rc;
    *id = etcd_i64(resp, "ID");
    *granted = (int)etcd_i64(resp, "TTL");
    json_decref(resp);
    if (*id == 0 || *granted <= 0) {
        snprintf(c->err, sizeof c->err, "lease grant: no lease in the answer");
        return ETCD_FAIL;
    }
    return ETCD_OK;
}

int etcd_lease_keepalive(struct etcd_conn *c, long long id, int *ttl, int64_t until_ms)
{
    char ids[24];
    json_t *resp;
    int rc;

    snprintf(ids, sizeof ids, "%lld", id);
    rc = call_taking(c, "/v3/lease/keepalive", json_pack("{s:s}", "ID", ids), &resp, until_ms);
    if (rc != ETCD_OK)
        return rc;
    /* A stream of answers, of which one came: {"result":{"ID":…,"TTL":…}};
     * no TTL means the lease is gone. */
    *ttl = (int)etcd_i64(json_object_get(resp, "result"), "TTL");
    json_decref(resp);
    return ETCD_OK;
}

int etcd_lease_revoke(struct etcd_conn *c, long long id, int64_t until_ms)
{
    char ids[24];
    json_t *resp;
    int rc;

    snprintf(ids, sizeof ids, "%lld", id);
    rc = call_taking(c, "/v3/lease/revoke", json_pack("{s:s}", "ID", ids), &resp, until_ms);
    if (rc == ETCD_OK)
        json_decref(resp);
    else if (rc == ETCD_FAIL && strstr(c->err, "not found"))
        rc = ETCD_OK;           /* gone already */
    return rc;
}

/* A range request object for the prefix's first (ascend) or last (descend)
 * key by create revision, optionally below max_rev. */
static json_t *range_by_create(const char *prefix, const char *order, long long max_rev)
{
    char p64[2 * ETCD_KEY_MAX], end[ETCD_KEY_MAX], e64[2 * ETCD_KEY_MAX], maxs[24];
    json_t *r;

    etcd_prefix_end(prefix, end, sizeof end);
    etcd_b64(prefix, strlen(prefix), p64, sizeof p64);
    etcd_b64(end, strlen(end), e64, sizeof e64);
    r = json_pack("{s:s,s:s,s:s,s:s,s:s}", "key", p64, "range_end", e64, "sort_order", order,
                  "sort_target", "CREATE", "limit", "1");
    if (max_rev > 0) {
        snprintf(maxs, sizeof maxs, "%lld", max_rev);
        json_object_set_new(r, "max_create_revision", json_string(maxs));
    }
    return r;
}

/* The first KeyValue of a range answer, or NULL. */
static json_t *first_kv(json_t *range)
{
    return json_array_get(json_object_get(range, "kvs"), 0);
}

int etcd_mutex_txn(struct etcd_conn *c, const char *prefix, const char *key, long long lease,
                   long long *my_rev, long long *owner_rev, int64_t until_ms)
{
    char k64[2 * ETCD_KEY_MAX], leases[24];
    json_t *req, *resp, *rs;
    int rc;

    etcd_b64(key, strlen(key), k64, sizeof k64);
    snprintf(leases, sizeof leases, "%lld", lease);
    req = json_pack("{s:[{s:s,s:s,s:s,s:s}],s:[{s:{s:s,s:s,s:s}},{s:o}],s:[{s:{s:s}},{s:o}]}",
                    "compare", "target", "CREATE", "key", k64, "result", "EQUAL",
                    "create_revision", "0",
                    "success", "request_put", "key", k64, "value", "", "lease", leases,
                    "request_range", range_by_create(prefix, "ASCEND", 0),
                    "failure", "request_range", "key", k64,
                    "request_range", range_by_create(prefix, "ASCEND", 0));
    rc = call_taking(c, "/v3/kv/txn", req, &resp, until_ms);
    if (rc != ETCD_OK)
        return rc;
    rs = json_object_get(resp, "responses");
    if (json_is_true(json_object_get(resp, "succeeded")))
        *my_rev = etcd_revision(resp);
    else
        *my_rev = etcd_i64(first_kv(json_object_get(json_array_get(rs, 0), "response_range")),
                           "create_revision");
    *owner_rev = etcd_i64(first_kv(json_object_get(json_array_get(rs, 1), "response_range")),
                          "create_revision");
    json_decref(resp);
    if (*my_rev <= 0) {
        snprintf(c->err, sizeof c->err, "txn on %s: no create revision in the answer", key);
        return ETCD_FAIL;
    }
    return ETCD_OK;
}

int etcd_last_before(struct etcd_conn *c, const char *prefix, long long max_rev,
                     char *out, size_t outlen, long long *rev, int64_t until_ms)
{
    json_t *resp, *kv;
    int rc;

    out[0] = '\0';
    rc = call_taking(c, "/v3/kv/range", range_by_create(prefix, "DESCEND", max_rev), &resp,
                     until_ms);
    if (rc != ETCD_OK)
        return rc;
    *rev = etcd_revision(resp);
    if ((kv = first_kv(resp)) != NULL && etcd_key_of(kv, out, outlen) != 0) {
        snprintf(c->err, sizeof c->err, "range of %s: a key that is not base64", prefix);
        rc = ETCD_FAIL;
    }
    json_decref(resp);
    return rc;
}

int etcd_create_rev(struct etcd_conn *c, const char *key, long long *create_rev,
                    int64_t until_ms)
{
    char k64[2 * ETCD_KEY_MAX];
    json_t *resp;
    int rc;

    etcd_b64(key, strlen(key), k64, sizeof k64);
    rc = call_taking(c, "/v3/kv/range", json_pack("{s:s}", "key", k64), &resp, until_ms);
    if (rc != ETCD_OK)
        return rc;
    *create_rev = etcd_i64(first_kv(resp), "create_revision");
    json_decref(resp);
    return ETCD_OK;
}

int etcd_delete(struct etcd_conn *c, const char *key, int prefix, int64_t until_ms)
{
    char k64[2 * ETCD_KEY_MAX], end[ETCD_KEY_MAX], e64[2 * ETCD_KEY_MAX];
    json_t *req, *resp;
    int rc;

    etcd_b64(key, strlen(key), k64, sizeof k64);
    req = json_pack("{s:s}", "key", k64);
    if (prefix) {
        etcd_prefix_end(key, end, sizeof end);
        etcd_b64(end, strlen(end), e64, sizeof e64);
        json_object_set_new(req, "range_end", json_string(e64));
    }
    rc = call_taking(c, "/v3/kv/deleterange", req, &resp, until_ms);
    if (rc == ETCD_OK)
        json_decref(resp);
    return rc;
}
