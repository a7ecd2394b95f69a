/* config.c — flags, LOCKLAB_* fallbacks and their validation.
 *
 * Every option is one row of the table below: its flag, its environment
 * variable, its kind and where it lands in struct config. Parsing walks
 * argv, then fills what is still unset from the environment, then from the
 * defaults, then checks ranges. No getopt: the table is the documentation.
 *
 * Host names are resolved here, once, at start: the servers of --redis,
 * --redis-sentinel, --redis-cluster, --mysql-replica and --mysql-host are
 * kept as numeric addresses (IPv4 first, as hiredis prefers), so that no
 * client looks a name up on the loop, where getaddrinfo() would block every
 * connection for as long as a DNS server takes. The trade-off is nginx's
 * for its upstreams: a backend that moves to another address needs the
 * instance restarted, and a name that does not resolve at start stops it
 * (the reason said). ZooKeeper's and etcd's clients resolve on threads of
 * their own.
 */
#include "config.h"
#include "util.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

enum opt_kind { OPT_STR, OPT_INT, OPT_FLAG, OPT_SERVERS };

struct opt {
    const char   *flag;
    const char   *env;
    enum opt_kind kind;
    size_t        offset;
    const char   *def;
    long long     min, max;
};

#define F(m) offsetof(struct config, m)
static const struct opt opts[] = {
    { "--listen",         "LOCKLAB_LISTEN",         OPT_STR,  F(listen),         "127.0.0.1", 0, 0 },
    { "--port",           "LOCKLAB_PORT",           OPT_INT,  F(port),           "8000", 1, 65535 },
    { "--unix",           "LOCKLAB_UNIX",           OPT_STR,  F(unix_path),      NULL, 0, 0 },
    { "--lock",           "LOCKLAB_LOCK",           OPT_STR,  F(lock),           "none", 0, 0 },
    { "--name",           "LOCKLAB_NAME",           OPT_STR,  F(name),           NULL, 0, 0 },
    { "--mysql-host",     "LOCKLAB_MYSQL_HOST",     OPT_STR,  F(mysql_host),     "127.0.0.1", 0, 0 },
    { "--mysql-port",     "LOCKLAB_MYSQL_PORT",     OPT_INT,  F(mysql_port),     "3306", 1, 65535 },
    { "--mysql-user",     "LOCKLAB_MYSQL_USER",     OPT_STR,  F(mysql_user),     "locklab", 0, 0 },
    { "--mysql-password", "LOCKLAB_MYSQL_PASSWORD", OPT_STR,  F(mysql_password), "locklab", 0, 0 },
    { "--mysql-db",       "LOCKLAB_MYSQL_DB",       OPT_STR,  F(mysql_db),       "locklab", 0, 0 },
    { "--mysql-socket",   "LOCKLAB_MYSQL_SOCKET",   OPT_STR,  F(mysql_socket),   NULL, 0, 0 },
    { "--mysql-replica",  "LOCKLAB_MYSQL_REPLICA",  OPT_STR,  F(mysql_replica),  NULL, 0, 0 },
    { "--redis",          "LOCKLAB_REDIS",          OPT_SERVERS, F(redis),       "127.0.0.1:6379", 0, 0 },
    { "--redis-sentinel", "LOCKLAB_REDIS_SENTINEL", OPT_STR, F(redis_sentinel), NULL, 0, 0 },
    { "--redis-cluster",  "LOCKLAB_REDIS_CLUSTER",  OPT_STR, F(redis_cluster),  NULL, 0, 0 },
    { "--zk",             "LOCKLAB_ZK",             OPT_STR,  F(zk),             "127.0.0.1:2181", 0, 0 },
    { "--etcd",           "LOCKLAB_ETCD",           OPT_STR,  F(etcd),           "127.0.0.1:2379", 0, 0 },
    { "--threads",        "LOCKLAB_THREADS",        OPT_INT,  F(threads),        "16", 1, 1024 },
    { "--max-connections","LOCKLAB_MAX_CONNECTIONS",OPT_INT,  F(max_connections),"1024", 1, 65536 },
    { "--lock-wait-ms",   "LOCKLAB_LOCK_WAIT_MS",   OPT_INT,  F(lock_wait_ms),   "10000", 0, 3600000 },
    { "--max-wait-ms",    "LOCKLAB_MAX_WAIT_MS",    OPT_INT,  F(max_wait_ms),    "20000", 0, 3600000 },
    { "--retry-ms",       "LOCKLAB_RETRY_MS",       OPT_INT,  F(retry_ms),       "2", 0, 10000 },
    { "--lease-ms",       "LOCKLAB_LEASE_MS",       OPT_INT,  F(lease_ms),       "30000", 100, 3600000 },
    { "--zk-session-ms",  "LOCKLAB_ZK_SESSION_MS",  OPT_INT,  F(zk_session_ms),  "0", 0, 60000 },
    { "--allow-faults",   "LOCKLAB_ALLOW_FAULTS",   OPT_FLAG, F(allow_faults),   "0", 0, 1 },
    { "--ledger",         "LOCKLAB_LEDGER",         OPT_FLAG, F(ledger),         "0", 0, 1 },
    { "--admin-token",    "LOCKLAB_ADMIN_TOKEN",    OPT_STR,  F(admin_token),    NULL, 0, 0 },
};
#undef F
#define NOPTS (int)(sizeof opts / sizeof opts[0])

const char config_usage[] =
"usage: locklab [options]   (every option also reads LOCKLAB_<NAME> from the environment)\n"
"  --listen ADDR          address to bind (127.0.0.1)\n"
"  --port N               HTTP port (8000)\n"
"  --unix PATH            also serve HTTP on this Unix socket, for an nginx on\n"
"                         the same machine (fewer µs a request than TCP)\n"
"  --lock NAME            default strategy when a request names none (none)\n"
"  --name NAME            instance name in answers and stats (app-<port>)\n"
"  --mysql-host H --mysql-port N --mysql-user U --mysql-password P --mysql-db D\n"
"                         (pass the password as LOCKLAB_MYSQL_PASSWORD: a\n"
"                         command line is visible to every user of the machine)\n"
"  --mysql-socket PATH    reach MariaDB on this machine through its Unix socket\n"
"                         instead of host:port (fewer µs a round trip)\n"
"  --mysql-replica PATH|H:P  an asynchronous read replica of that MariaDB (its\n"
"                         socket or host:port, the same account): a purchase\n"
"                         with ?read=replica reads the count there, as read/write\n"
"                         splitting does (off: read=replica answers 400)\n"
"  --redis H:P[,H:P...]   Redis servers; Redlock uses all of them (127.0.0.1:6379)\n"
"  --redis-sentinel H:P[,H:P...]\n"
"                         Sentinels that name the current master of the first\n"
"                         --redis server (master name 'locklab'): every\n"
"                         connection to it asks them first, so a failover is\n"
"                         followed (off: the address given)\n"
"  --redis-cluster H:P[,H:P...]\n"
"                         seed nodes of a Redis Cluster: every Redis strategy\n"
"                         then runs on it (the slot map, MOVED, ASK), --redis\n"
"                         is unused, Redlock refuses (off)\n"
"  --zk H:P[,H:P...]      ZooKeeper connect string (127.0.0.1:2181)\n"
"  --etcd H:P[,H:P...]    etcd endpoints, tried in turn (127.0.0.1:2379)\n"
"  --threads N            worker slots, each with its own backend connections (16)\n"
"  --max-connections N    HTTP connections served at once (1024); past it a\n"
"                         request gets a prompt 503 \"overloaded\" and its\n"
"                         connection is closed\n"
"  --lock-wait-ms MS      how long a request waits for a lock by default (10000)\n"
"  --max-wait-ms MS       the longest wait a request may ask for with ?wait_ms=,\n"
"                         and the longest ?hold_ms= (20000): keep it well under\n"
"                         the proxy's read timeout (the stack's nginx: 60 s)\n"
"  --retry-ms MS          spin interval of the spinning strategies, jittered (2)\n"
"  --lease-ms MS          lease of expiring locks; watchdogs renew at 1/3 (30000)\n"
"  --zk-session-ms MS     ZooKeeper session timeout asked for (0: a fifth of\n"
"                         --lease-ms, within 4..30 s); the server grants it\n"
"                         within its own bounds\n"
"  --allow-faults         accept the fault switches ?hold_ms=N, ?late_ms=N,\n"
"                         ?crash=1 and ?lose_answer=1 (demonstrations, tests;\n"
"                         off by default)\n"
"  --ledger               every sale also writes its row of db_ledger in the\n"
"                         transaction of its stock write, for ll-check (off by\n"
"                         default: it costs a transaction a sale)\n"
"  --admin-token TOKEN    POST /stock/reset and POST /stats/reset then need\n"
"                         'Authorization: Bearer TOKEN' (pass it as\n"
"                         LOCKLAB_ADMIN_TOKEN; without one, they are open)\n";

static char resolve_error[160];     /* why the last name did not resolve */

/* host (a name or an address, at most len bytes with its NUL) as a
 * numeric address, in place: the first IPv4 address it has, else its
 * first IPv6 one. 0, or -1 with the reason in resolve_error. */
static int resolve(char *host, size_t len)
{
    static const int families[2] = { AF_INET, AF_UNSPEC };
    struct addrinfo hints, *res = NULL;
    char num[INET6_ADDRSTRLEN];
    int i, rc = EAI_NONAME;

    for (i = 0; i < 2 && rc != 0; i++) {
        memset(&hints, 0, sizeof hints);
        hints.ai_family = families[i];
        hints.ai_socktype = SOCK_STREAM;
        rc = getaddrinfo(host, NULL, &hints, &res);
    }
    if (rc != 0) {
        snprintf(resolve_error, sizeof resolve_error, "'%s' does not resolve: %s", host,
                 gai_strerror(rc));
        return -1;
    }
    rc = getnameinfo(res->ai_addr, res->ai_addrlen, num, sizeof num, NULL, 0, NI_NUMERICHOST);
    freeaddrinfo(res);
    if (rc != 0 || strlen(num) >= len) {
        snprintf(resolve_error, sizeof resolve_error, "'%s': no numeric address", host);
        return -1;
    }
    memcpy(host, num, strlen(num) + 1);
    return 0;
}

/* What parse_servers() did not like in list, for the flag's line. */
static void servers_error(char *err, int errlen, const char *flag, const char *list)
{
    if (resolve_error[0])
        snprintf(err, errlen, "%s: %s", flag, resolve_error);
    else
        snprintf(err, errlen, "%s: '%s' is not host:port[,host:port...] (at most %d)",
                 flag, list, CONFIG_MAX_SERVERS);
}

/* list parsed into out[] (see config_parse_servers()), and each host
 * resolved to a numeric address when `numeric` (config_parse()'s servers;
 * etcd's are curl's to resolve, on its own thread). */
static int parse_servers(const char *list, struct hostport *out, int max, int numeric)
{
    const char *p = list;
    int n = 0;

    resolve_error[0] = '\0';

    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        char portbuf[8];
        long long port;
        size_t hlen;

        if (n == max || colon == NULL)
            return -1;
        hlen = (size_t)(colon - p);
        if (hlen == 0 || hlen >= sizeof out[n].host ||
            len - hlen - 1 == 0 || len - hlen - 1 >= sizeof portbuf)
            return -1;
        memcpy(out[n].host, p, hlen);
        out[n].host[hlen] = '\0';
        memcpy(portbuf, colon + 1, len - hlen - 1);
        portbuf[len - hlen - 1] = '\0';
        if (parse_int(portbuf, 1, 65535, &port) != 0)
            return -1;
        if (numeric && resolve(out[n].host, sizeof out[n].host) != 0)
            return -1;
        out[n++].port = (int)port;
        p += len;
        if (*p == ',')
            p++;
    }
    return n;
}

int config_parse_servers(const char *list, struct hostport *out, int max)
{
    return parse_servers(list, out, max, 0);
}

static int set_value(struct config *cfg, const struct opt *o, const char *v,
                     char *err, int errlen)
{
    char *field = (char *)cfg + o->offset;
    long long n;

    switch (o->kind) {
    case OPT_STR:
        if (*v == '\0') {
            snprintf(err, errlen, "%s: empty value", o->flag);
            return -1;
        }
        *(const char **)field = v;
        return 0;
    case OPT_INT:
    case OPT_FLAG:
        if (parse_int(v, o->min, o->max, &n) != 0) {
            snprintf(err, errlen, "%s: '%s' is not a whole number from %lld to %lld",
                     o->flag, v, o->min, o->max);
            return -1;
        }
        *(int *)field = (int)n;
        return 0;
    case OPT_SERVERS:
        cfg->nredis = parse_servers(v, cfg->redis, CONFIG_MAX_SERVERS, 1);
        if (cfg->nredis <= 0) {
            servers_error(err, errlen, o->flag, v);
            return -1;
        }
        return 0;
    }
    return -1;
}

int config_parse(struct config *cfg, int argc, char **argv, char *err, int errlen)
{
    int given[NOPTS] = { 0 };
    int i, k;

    memset(cfg, 0, sizeof *cfg);
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL, *eq;
        size_t flen;

        if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
            return 1;
        eq = strchr(arg, '=');
        flen = eq ? (size_t)(eq - arg) : strlen(arg);
        for (k = 0; k < NOPTS; k++)
            if (strlen(opts[k].flag) == flen && !strncmp(arg, opts[k].flag, flen))
                break;
        if (k == NOPTS) {
            snprintf(err, errlen, "unknown option '%s' (try --help)", arg);
            return -1;
        }
        if (opts[k].kind == OPT_FLAG && eq == NULL)
            val = "1";
        else if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else {
            snprintf(err, errlen, "%s needs a value", opts[k].flag);
            return -1;
        }
        if (set_value(cfg, &opts[k], val, err, errlen) != 0)
            return -1;
        given[k] = 1;
    }
    for (k = 0; k < NOPTS; k++) {
        const char *v;
        if (given[k])
            continue;
        v = getenv(opts[k].env);
        if (v != NULL && *v != '\0') {
            if (set_value(cfg, &opts[k], v, err, errlen) != 0) {
                size_t used = strlen(err);
                snprintf(err + used, errlen - used, " (from %s)", opts[k].env);
                return -1;
            }
        } else if (opts[k].def != NULL &&
                   set_value(cfg, &opts[k], opts[k].def, err, errlen) != 0) {
            return -1;
        }
    }
    if (cfg->lock_wait_ms > cfg->max_wait_ms) {
        snprintf(err, errlen, "--lock-wait-ms %d is above --max-wait-ms %d",
                 cfg->lock_wait_ms, cfg->max_wait_ms);
        return -1;
    }
    if (cfg->redis_sentinel &&
        (cfg->nsentinel = parse_servers(cfg->redis_sentinel, cfg->sentinel,
                                        CONFIG_MAX_SERVERS, 1)) <= 0) {
        servers_error(err, errlen, "--redis-sentinel", cfg->redis_sentinel);
        return -1;
    }
    if (cfg->mysql_replica && cfg->mysql_replica[0] == '\0')
        cfg->mysql_replica = NULL;      /* empty: none (docker-compose.yml's default) */
    if (cfg->mysql_replica && cfg->mysql_replica[0] != '/' &&
        parse_servers(cfg->mysql_replica, &cfg->replica, 1, 1) != 1) {
        if (resolve_error[0])
            snprintf(err, errlen, "--mysql-replica: %s", resolve_error);
        else
            snprintf(err, errlen, "--mysql-replica: '%s' is neither a socket path nor "
                     "host:port", cfg->mysql_replica);
        return -1;
    }
    snprintf(cfg->mysql_addr, sizeof cfg->mysql_addr, "%s", cfg->mysql_host);
    if (cfg->mysql_socket == NULL && resolve(cfg->mysql_addr, sizeof cfg->mysql_addr) != 0) {
        snprintf(err, errlen, "--mysql-host: %s", resolve_error);
        return -1;
    }
    if (cfg->redis_cluster && cfg->redis_cluster[0] == '\0')
        cfg->redis_cluster = NULL;      /* empty: none (docker-compose.yml's default) */
    if (cfg->redis_cluster) {
        if ((cfg->ncluster = parse_servers(cfg->redis_cluster, cfg->cluster,
                                           CONFIG_MAX_SERVERS, 1)) <= 0) {
            servers_error(err, errlen, "--redis-cluster", cfg->redis_cluster);
            return -1;
        }
        if (cfg->nsentinel) {
            snprintf(err, errlen, "--redis-cluster and --redis-sentinel: one or the other");
            return -1;
        }
        cfg->redis[0] = cfg->cluster[0];    /* server 0 is the cluster */
        cfg->nredis = 1;
    }
    if (config_parse_servers(cfg->etcd, (struct hostport[CONFIG_MAX_SERVERS]){ 0 },
                             CONFIG_MAX_SERVERS) <= 0) {
        snprintf(err, errlen, "--etcd: '%s' is not host:port[,host:port...] (at most %d)",
                 cfg->etcd, CONFIG_MAX_SERVERS);
        return -1;
    }
    if (cfg->name == NULL) {
        static char defname[32];
        snprintf(defname, sizeof defname, "app-%d", cfg->port);
        cfg->name = defname;
    }
    if (strlen(cfg->name) > 48) {
        snprintf(err, errlen, "--name: longer than 48 characters");
        return -1;
    }
    uuid4(cfg->instance_id);
    return 0;
}
