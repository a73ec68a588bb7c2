/* sock.c - POSIX sockets for sock.h. */
#include "util/sock.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

bool sl_sock_send_all(sl_sock s, const void *buf, size_t len)
{
    const int fd = (int)s;
    const char *p = buf;
    while (len) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            len -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            if (poll(&pf, 1, 1000) == 1) continue;
        }
        return false;
    }
    return true;
}

void sl_sock_shut_send(sl_sock s)
{
    shutdown((int)s, SHUT_WR);
}

void sl_sock_shut_both(sl_sock s)
{
    shutdown((int)s, SHUT_RDWR);
}
