/* server_web.h - `sluice serve`'s own page and its telemetry stream.
 *
 * server_web.c    GET /: the page (app/server/web/ui.html, built into the binary)
 * server_events.c GET /api/events: server-sent events for the page's
 *                 telemetry panel (and for curl -N): first the memory plan,
 *                 then one tick per interval with the rates of that interval
 *
 * Neither needs libmicrohttpd: server_http.c makes the responses. */
#ifndef SL_APP_SERVER_WEB_H
#define SL_APP_SERVER_WEB_H

#include <stddef.h>

#include "server.h"

/* The page's bytes (static, *len of them; UTF-8 HTML with its CSS and
 * script inline). */
const char *srv_web_page(size_t *len);

/* One client's telemetry stream. */
typedef struct srv_events srv_events;

/* Opens a stream on s (ready: the model and the slots are up). interval
 * is the ?interval_ms= text (NULL: 500 ms; 50 to 10000 allowed). Returns
 * the stream, or NULL with *refusal set: a 400 for a bad interval, a 500
 * when out of memory. */
srv_events *srv_events_open(srv *s, const char *interval, srv_reply *refusal);

/* Copies up to max bytes of the stream into buf: the plan event first,
 * then a tick event each interval (waiting for it). Returns the count;
 * 0 once the server is stopping (the stream ends) or out of memory. */
size_t srv_events_read(srv_events *e, char *buf, size_t max);

/* Frees a stream (any time after open; NULL is ignored). */
void srv_events_close(srv_events *e);

#endif
