/* http.h — the HTTP API on libmicrohttpd, on the instance's loop. */
#ifndef LOCKLAB_HTTP_H
#define LOCKLAB_HTTP_H

struct config;

/* Start listening; 0 on success, -1 after printing why. */
int  http_start(const struct config *cfg);
/* Stop taking connections and wait for the requests in flight to end
 * (from a coroutine on the loop). */
void http_quiesce(void);
void http_stop(void);

#endif /* LOCKLAB_HTTP_H */
