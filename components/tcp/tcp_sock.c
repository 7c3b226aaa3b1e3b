/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Socket helpers: options every data socket gets, and the bounded waits
 * connect() uses while it owns the thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tcp.h"

long long rmca_tcp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

/* 1 when ready, 0 past the deadline (-1: none), RMCA_ERR_CONNECTION. */
int rmca_tcp_wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int ms, r;

	for (;;) {
		ms = -1;
		if (deadline >= 0) {
			long long left = deadline - rmca_tcp_now_ms();

			if (left <= 0)
				return 0;
			ms = left > 1000000 ? 1000000 : (int)left;
		}
		r = poll(&p, 1, ms);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return RMCA_ERR_CONNECTION;
	}
}

int rmca_tcp_write_all(int fd, const void *buf, size_t len,
		       long long deadline)
{
	const char *p = buf;
	ssize_t n;
	int r;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return RMCA_ERR_CONNECTION;
		r = rmca_tcp_wait_fd(fd, POLLOUT, deadline);
		if (r <= 0)
			return r ? r : RMCA_ERR_TIMEOUT;
	}
	return 0;
}

int rmca_tcp_read_all(int fd, void *buf, size_t len, long long deadline)
{
	char *p = buf;
	ssize_t n;
	int r;

	while (len) {
		n = recv(fd, p, len, 0);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return RMCA_ERR_CONNECTION;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return RMCA_ERR_CONNECTION;
		r = rmca_tcp_wait_fd(fd, POLLIN, deadline);
		if (r <= 0)
			return r ? r : RMCA_ERR_TIMEOUT;
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
