/* arpa/inet.h for the Windows build: winsock's declarations of what the server's
 * portable code names (sockaddr_in and sockaddr_in6, inet_pton, htons,
 * ntohl, IN6_IS_ADDR_LOOPBACK). The calls that differ in behaviour
 * (send, shutdown, poll) go through util/sock.h instead. */
#ifndef SL_COMPAT_ARPA_INET_H
#define SL_COMPAT_ARPA_INET_H

#include <winsock2.h>
#include <ws2tcpip.h>

#endif
