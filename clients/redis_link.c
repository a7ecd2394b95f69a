/* redis_link.c — one connection to one Redis server: the ground of the
 * Redis client, below the cluster's map (redis_cluster.c), where a server
 * is (redis_server.c) and the connections that use it (redis.c,
 * redis_shared.c).
 *
 * Every socket is non-blocking and every would-block a wait_fd() with the
 * caller's deadline: a connect (redisConnectNonBlock, then writable, then
 * SO_ERROR), writing hiredis's output buffer out (waiting for writable
 * whenever the socket is full), reading one reply (waiting for readable
 * whenever hiredis's reader has none whole). A thread blocks in poll()
 * meanwhile, a coroutine parks.
 *
 * A link (struct redis_link) is made when first needed (redis_server.c
 * connects it): a failed connect holds off the next one to that server for
 * REDIS_RECONNECT_MS, so a dead server is not hammered; a connection lost
 * later is closed (here) and the next use reconnects at once.
 */
#include "redis_link.h"
#include "../core/util.h"
#include "../core/wait.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---------------------------------------------------------------- sockets */

redisContext *redis_connect_to(const char *host, int port, int64_t deadline_us,
                               char *why, size_t len)
{
    redisContext *c = redisConnectNonBlock(host, port);
    socklen_t elen = sizeof(int);
    int err = 0;

    if (c == NULL) {
        snprintf(why, len, "out of memory");
        return NULL;
    }
    if (c->err) {                       /* refused at once, a bad address */
        snprintf(why, len, "%s", c->errstr);
        redisFree(c);
        return NULL;
    }
    if (wait_fd(c->fd, WAIT_WRITE, deadline_us) == 0)
        err = ETIMEDOUT;
    else if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0)
        err = errno;
    if (err) {
        snprintf(why, len, "%s", strerror(err));
        redisFree(c);
        return NULL;
    }
    redisEnableKeepAlive(c);
    return c;
}

int redis_link_write(redisContext *c, int64_t deadline_us, char *why, size_t len)
{
    int done = 0;

    for (;;) {
        if (redisBufferWrite(c, &done) != REDIS_OK) {
            snprintf(why, len, "%s", c->errstr);
            return -1;
        }
        if (done)
            return 0;
        if (wait_fd(c->fd, WAIT_WRITE, deadline_us) == 0) {
            snprintf(why, len, "the server took no command in time");
            return -1;
        }
    }
}

int redis_link_read(redisContext *c, int64_t deadline_us, redisReply **out,
                    char *why, size_t len)
{
    void *r = NULL;

    for (;;) {
        if (redisGetReplyFromReader(c, &r) != REDIS_OK) {
            snprintf(why, len, "%s", c->errstr);
            return -1;
        }
        if (r) {
            *out = r;
            return 0;
        }
        if (wait_fd(c->fd, WAIT_READ, deadline_us) == 0) {
            snprintf(why, len, "no reply in time");
            return -1;
        }
        if (redisBufferRead(c) != REDIS_OK) {
            snprintf(why, len, "%s", c->errstr);
            return -1;
        }
    }
}

/* ---------------------------------------------------------------- links */

void redis_link_close(struct redis_link *l)
{
    if (l->c)
        redisFree(l->c);
    l->c = NULL;
}

/* The next use reconnects at once: a lost connection (a command timed
 * out, the server restarted) says little about the server; only a failed
 * connect throttles the next one. */
void redis_link_forget(struct redis_link *l, const char *why)
{
    snprintf(l->lasterr, sizeof l->lasterr, "%s",
             why ? why : l->c && l->c->errstr[0] ? l->c->errstr : "connection lost");
    redis_link_close(l);
}
