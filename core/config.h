/* config.h — the server's settings: flags first, LOCKLAB_* environment
 * variables as fallbacks, then defaults. config_parse() validates every
 * value and explains the first bad one; the server refuses to start on it.
 */
#ifndef LOCKLAB_CONFIG_H
#define LOCKLAB_CONFIG_H

#define CONFIG_MAX_SERVERS 16

struct hostport {
    char host[64];
    int  port;
};

struct config {
    const char *listen;          /* address to bind, default 127.0.0.1   */
    int         port;            /* --port, default 8000                 */
    const char *unix_path;       /* --unix: a second listener, or NULL   */
    const char *lock;            /* default strategy for ?lock=          */
    const char *name;            /* instance name in answers and stats   */

    const char *mysql_host;      /* as given                             */
    char        mysql_addr[64];  /* ... resolved at start (unused with a
                                  * socket): what the client connects to */
    int         mysql_port;
    const char *mysql_user;
    const char *mysql_password;
    const char *mysql_db;
    const char *mysql_socket;    /* Unix socket: used instead of host:port */
    const char *mysql_replica;   /* --mysql-replica: a read replica, as given
                                  * (a socket path, or host:port), or NULL */
    struct hostport replica;     /* ... host:port parsed (port 0: a socket) */

    struct hostport redis[CONFIG_MAX_SERVERS];   /* --redis a:p,b:q   */
    int             nredis;
    const char     *redis_sentinel;  /* --redis-sentinel, as given, or NULL */
    struct hostport sentinel[CONFIG_MAX_SERVERS]; /* ... parsed: server 0 is
                                  * the master they name (locks/redis_conn.c) */
    int             nsentinel;
    const char     *redis_cluster;   /* --redis-cluster, as given, or NULL */
    struct hostport cluster[CONFIG_MAX_SERVERS];  /* ... parsed: its seed nodes;
                                  * server 0 is then the cluster (clients/redis_cluster.c) */
    int             ncluster;
    const char     *zk;          /* ZooKeeper connect string, as given   */
    const char     *etcd;        /* etcd endpoints, host:port[,…]        */

    int threads;                 /* worker slots (backend connections)   */
    int max_connections;         /* HTTP connections (threads) at once   */
    int lock_wait_ms;            /* how long a request waits by default  */
    int max_wait_ms;             /* the most ?wait_ms= and ?hold_ms= ask */
    int retry_ms;                /* spin interval of spinning strategies */
    int lease_ms;                /* lease of expiring locks (watchdog)   */
    int zk_session_ms;           /* ZooKeeper session; 0: from lease_ms  */
    int allow_faults;            /* the fault switches are accepted      */
    int ledger;                  /* every sale writes its db_ledger row  */
    const char *admin_token;     /* admin routes need it, unless NULL    */

    char instance_id[37];        /* random UUID, fresh at every start    */
};

/* Fill cfg from argv and the environment. Returns 0, or -1 after writing
 * a one-line reason into err. --help writes the usage and returns 1. */
int config_parse(struct config *cfg, int argc, char **argv,
                 char *err, int errlen);

/* Parse "host:port[,host:port...]" into out[]; returns the count or -1.
 * The hosts stay as written (config_parse() resolves its servers' names
 * to numeric addresses itself: see config.c). */
int config_parse_servers(const char *list, struct hostport *out, int max);

extern const char config_usage[];

#endif /* LOCKLAB_CONFIG_H */
