/* sock.h - the few socket calls `sluice serve` makes on its own, beside
 * libmicrohttpd, which owns the connections' sockets (platform wrapper:
 * sock.c on POSIX, sock_win.c with winsock). Declared in sluice.h, with
 * the other helpers front-ends share, because the server includes no
 * header under src/. */
#ifndef SL_UTIL_SOCK_H
#define SL_UTIL_SOCK_H

#include "sluice.h" /* sl_sock, sl_sock_send_all, sl_sock_shut_send, sl_sock_shut_both */

#endif
