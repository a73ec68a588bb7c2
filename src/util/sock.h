/* sock.h - the few socket calls `sluice serve` makes on its own, beside
 * libmicrohttpd, which owns the connections' sockets (platform wrapper:
 * sock.c on POSIX, sock_win.c with winsock).
 *
 * The server writes an early 413 straight to a connection's socket and
 * shuts sockets (never closes them: the library does) to end a connection
 * that sends its request head too slowly. A socket is passed as sl_sock,
 * wide enough for a POSIX descriptor and a winsock SOCKET alike (what
 * libmicrohttpd's MHD_socket is on either). */
#ifndef SL_UTIL_SOCK_H
#define SL_UTIL_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef intptr_t sl_sock;

/* Writes all len bytes of buf to the connected socket s, which may be
 * non-blocking: waits up to a second at a time for room. Never raises
 * SIGPIPE. False when the peer is gone, the socket fails or stalls. */
bool sl_sock_send_all(sl_sock s, const void *buf, size_t len);

/* Shuts the sending side of s (the peer reads the end of the stream). */
void sl_sock_shut_send(sl_sock s);

/* Shuts both directions of s: the thread that reads it sees the end of
 * input (or an error) and its owner closes it. */
void sl_sock_shut_both(sl_sock s);

#endif
