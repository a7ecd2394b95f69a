/* etcd_api.c — etcd's v3 requests (see etcd.h), each one etcd_call() of
 * clients/etcd.c.
 *
 * The requests are the few the etcd strategy, its session keeper and
 * ll-limits make: a lease's grant, keep-alive and revoke; concurrency.Mutex's
 * transaction; the range of the key created just before ours, and of our
 * own; a delete, of a key or of a prefix. Each builds its JSON, calls, and
 * reads the fields it needs out of the answer.
 */
#include "etcd.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- requests */

/* POST req (taken) and hand back the answer. */
static int call_taking(struct etcd_conn *c, const char *path, json_t *req, json_t **resp,
                       int64_t until_ms)
{
    int rc = etcd_call(c, path, req, resp, until_ms);
    json_decref(req);
    return rc;
}

/* POST {"<field>":"<n>"}: the lease requests' one shape. */
static int call_i64(struct etcd_conn *c, const char *path, const char *field, long long n,
                    json_t **resp, int64_t until_ms)
{
    char v[24];

    snprintf(v, sizeof v, "%lld", n);
    return call_taking(c, path, json_pack("{s:s}", field, v), resp, until_ms);
}

int etcd_lease_grant(struct etcd_conn *c, int ttl_s, long long *id, int *granted,
                     int64_t until_ms)
{
    json_t *resp;
    int rc = call_i64(c, "/v3/lease/grant", "TTL", ttl_s, &resp, until_ms);

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
    json_t *resp;
    int rc = call_i64(c, "/v3/lease/keepalive", "ID", id, &resp, until_ms);

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
    json_t *resp;
    int rc = call_i64(c, "/v3/lease/revoke", "ID", id, &resp, until_ms);

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
