/* sock_win.c - winsock for sock.h. Winsock is started by libmicrohttpd
 * (its initialiser calls WSAStartup) before any socket reaches here. */
#include "util/sock.h"

#include <winsock2.h>

bool sl_sock_send_all(sl_sock s, const void *buf, size_t len)
{
    const SOCKET sk = (SOCKET)s;
    const char *p = buf;
    while (len) {
        /* send takes an int length: a large buffer goes in pieces */
        int n = len > (1u << 30) ? 1 << 30 : (int)len;
        int w = send(sk, p, n, 0); /* no SIGPIPE on Windows */
        if (w > 0) {
            p += w;
            len -= (size_t)w;
            continue;
        }
        int e = w == SOCKET_ERROR ? WSAGetLastError() : 0;
        if (e == WSAEINTR) continue;
        if (e == WSAEWOULDBLOCK) {
            WSAPOLLFD pf = {.fd = sk, .events = POLLWRNORM};
            if (WSAPoll(&pf, 1, 1000) == 1) continue;
        }
        return false;
    }
    return true;
}

void sl_sock_shut_send(sl_sock s)
{
    shutdown((SOCKET)s, SD_SEND);
}

void sl_sock_shut_both(sl_sock s)
{
    shutdown((SOCKET)s, SD_BOTH);
}
