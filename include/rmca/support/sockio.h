/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmca/support/sockio.h - bounded socket I/O: wait for a socket, send or
 * receive exactly len bytes, never past a deadline (rmca/support/clock.h:
 * absolute CLOCK_MONOTONIC milliseconds, negative for none).
 *
 * For handshakes and set-up, not for a data path: each call may wait in
 * poll(). The socket may be blocking or not: every send and receive is
 * made with MSG_DONTWAIT, so only poll() waits, and only until the
 * deadline. An interrupted call (EINTR) is retried, EAGAIN waits, SIGPIPE
 * is never raised (MSG_NOSIGNAL).
 *
 * Results: 0 when done; RMCA_ERR_TIMEOUT when the deadline passed first
 * (part of the bytes may have moved); RMCA_ERR_CONNECTION when the peer
 * closed its end, reset it, or the socket failed.
 */
#ifndef RMCA_SUPPORT_SOCKIO_H
#define RMCA_SUPPORT_SOCKIO_H

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <rmca.h>
#include <rmca/support/clock.h>

/*
 * Wait until fd is ready for events (POLLIN, POLLOUT) or has an error or a
 * hang-up pending (the next send or receive tells which): 1. Else
 * RMCA_ERR_TIMEOUT once the deadline has passed (a ready fd still wins at
 * the deadline), RMCA_ERR_CONNECTION if poll() itself fails.
 */
static inline int rmca_fd_wait(int fd, short events, int64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};
	int r;

	for (;;) {
		r = poll(&p, 1, rmca_ms_left(deadline));
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return RMCA_ERR_CONNECTION;
		if (r == 0 && rmca_ms_left(deadline) == 0)
			return RMCA_ERR_TIMEOUT;
	}
}

/* Send all len bytes of buf on fd by the deadline. */
static inline int rmca_send_full(int fd, const void *buf, size_t len,
				 int64_t deadline)
{
	const char *p = (const char *)buf;
	ssize_t n;
	int r;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return RMCA_ERR_CONNECTION;
		r = rmca_fd_wait(fd, POLLOUT, deadline);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Receive exactly len bytes from fd into buf by the deadline; the peer
 * closing its end before the last one is RMCA_ERR_CONNECTION. */
static inline int rmca_recv_full(int fd, void *buf, size_t len,
				 int64_t deadline)
{
	char *p = (char *)buf;
	ssize_t n;
	int r;

	while (len) {
		n = recv(fd, p, len, MSG_DONTWAIT);
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
		r = rmca_fd_wait(fd, POLLIN, deadline);
		if (r < 0)
			return r;
	}
	return 0;
}

#endif
