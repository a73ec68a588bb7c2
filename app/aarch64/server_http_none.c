/* server_http_none.c - the HTTP layer of `sluice serve` for builds without
 * libmicrohttpd (the aarch64 cross build, see the Makefile): the same three
 * functions as server_http.c; starting the server says why it cannot. */
#include <stdarg.h>
#include <stdio.h>

#include "server.h"

srv_reply srv_error(srv_api api, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    (void)api;
    json_t *body = json_pack("{s:{s:s, s:i}}", "error", "message", msg, "code", status);
    return (srv_reply){status, body, NULL};
}

int srv_http_start(srv *s, const char *host, int port, const srv_http_limits *lim,
                   int *bound_port)
{
    (void)s;
    (void)lim;
    (void)bound_port;
    fprintf(stderr, "sluice serve: this binary was built without libmicrohttpd (cannot listen "
            "on %s port %d)\n", host, port);
    return 1;
}

void srv_http_stop(srv *s) { (void)s; }
