/* server_deadline.h - `sluice serve`'s header deadline: a connection must
 * send a whole request head within a time limit of opening, or of its
 * previous reply, else it is shut.
 *
 * libmicrohttpd's timeout counts inactivity only, so a client that sends
 * one header byte a second (slowloris) would keep its connection, and its
 * thread, for ever. One watcher thread checks every open connection that
 * is waiting for a request head, and shuts the socket (shutdown(), never
 * close(): the library owns the descriptor) of one that has waited longer
 * than the limit; the library then sees the end of input and closes it.
 * The library's callbacks keep the table: a connection is added when it
 * opens and removed before its descriptor is closed, under the table's
 * lock, so the watcher never touches a descriptor that was reused. */
#ifndef SL_APP_SERVER_DEADLINE_H
#define SL_APP_SERVER_DEADLINE_H

#include "sluice.h" /* sl_sock */

typedef struct srv_deadline srv_deadline;

/* Starts the watcher for a limit of seconds (> 0). NULL when out of memory
 * or the thread cannot start (the caller runs without a deadline). */
srv_deadline *srv_deadline_start(unsigned seconds);

/* A connection on socket fd opened: *ctx (the library's socket context)
 * receives its entry (NULL when out of memory: not watched). Its head is
 * awaited from now. */
void srv_deadline_opened(srv_deadline *d, sl_sock fd, void **ctx);

/* The connection of ctx (may be NULL) has its request head: not watched
 * until srv_deadline_rearm. */
void srv_deadline_head_done(srv_deadline *d, void *ctx);

/* The connection of ctx (may be NULL) finished a request: its next head is
 * awaited from now. */
void srv_deadline_rearm(srv_deadline *d, void *ctx);

/* The connection of *ctx closes (its descriptor is still open): forgets it
 * and frees its entry; *ctx becomes NULL. */
void srv_deadline_closed(srv_deadline *d, void **ctx);

/* Stops the watcher thread (connections may still close afterwards:
 * srv_deadline_closed stays valid until srv_deadline_free). */
void srv_deadline_halt(srv_deadline *d);

/* Frees d (NULL: nothing) once no connection is left. */
void srv_deadline_free(srv_deadline *d);

#endif
