/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Socket helpers: options every data socket gets, its name for logs, and
 * whether the data path may make its socket calls itself (tcp_io.h).
 */
#define _GNU_SOURCE 1 /* dladdr */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp.h"

int rmca_tcp_sock_setup(struct tcp_module *m, int fd)
{
	int one = 1, v;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return RMCA_ERR_CONNECTION;
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return RMCA_ERR_CONNECTION;
	/* Small control frames (credits, acks) must not wait for Nagle. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (m->sndbuf) {
		v = m->sndbuf > (size_t)1 << 30 ? 1 << 30 : (int)m->sndbuf;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	}
	if (m->rcvbuf) {
		v = m->rcvbuf > (size_t)1 << 30 ? 1 << 30 : (int)m->rcvbuf;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	}
	return 0;
}

void rmca_tcp_sockname(int fd, bool peer, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	int r = peer ? getpeername(fd, (struct sockaddr *)&ss, &sl) :
		       getsockname(fd, (struct sockaddr *)&ss, &sl);

	if (!r && ss.ss_family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
		port = ntohs(s->sin_port);
	} else if (!r && ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
		port = ntohs(s->sin6_port);
	}
	snprintf(buf, len, "%s:%d", host, port);
}

bool rmca_tcp_io_direct_ok(void)
{
	return TCP_IO_DIRECT && rmca_libc_own((void *)recv) &&
	       rmca_libc_own((void *)send) && rmca_libc_own((void *)recvmsg) &&
	       rmca_libc_own((void *)sendmsg);
}
