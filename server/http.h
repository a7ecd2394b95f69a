/* http.h — the HTTP API on libmicrohttpd. */
#ifndef LOCKLAB_HTTP_H
#define LOCKLAB_HTTP_H

struct config;

/* Start listening; 0 on success, -1 after printing why. */
int  http_start(const struct config *cfg);
void http_stop(void);

#endif /* LOCKLAB_HTTP_H */
