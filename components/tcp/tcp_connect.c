/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Establishing a data connection. The framework's bootstrap has already
 * agreed on a token; the active side connects to the peer's module port and
 * presents it in a hello, the passive side picks the socket that presents it
 * out of those its listening socket accepted, and acknowledges.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp.h"

static void hello(uint8_t type, uint64_t token, uint8_t *buf)
{
	struct tcp_frame f = {
		.type = type,
		.id = token,
		.operand = TCP_HELLO_WORD,
	};

	rmca_tcp_frame_encode(&f, buf);
}

static int dial(struct tcp_module *m, const char *host, int port,
		long long deadline, int *out)
{
	struct addrinfo hints = {
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
	};
	struct addrinfo *ai;
	char service[8];
	socklen_t sl;
	int fd, err, r;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &ai)) {
		tcp_log(m, RMCA_LOG_ERROR, "bad peer address '%s'", host);
		return RMCA_ERR_INVALID;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || rmca_tcp_sock_setup(m, fd)) {
		freeaddrinfo(ai);
		if (fd >= 0)
			close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	r = connect(fd, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (r && errno != EINPROGRESS) {
		err = errno;
		goto fail;
	}
	if (r) {
		r = rmca_tcp_wait_fd(fd, POLLOUT, deadline);
		if (r <= 0) {
			close(fd);
			return r ? r : RMCA_ERR_TIMEOUT;
		}
		sl = sizeof(err);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl))
			err = errno;
		if (err)
			goto fail;
	}
	*out = fd;
	return 0;
fail:
	tcp_log(m, RMCA_LOG_INFO, "connect to [%s]:%d: %s", host, port,
		strerror(err));
	close(fd);
	return RMCA_ERR_CONNECTION;
}

static int active(struct tcp_module *m, const struct rmca_conn_args *a,
		  long long deadline, int *out)
{
	const struct tcp_addr_blob *b = a->peer_addr;
	uint8_t buf[TCP_HDR_LEN];
	struct tcp_frame f;
	const char *why;
	char reason[64];
	int fd, r;

	if (!rmca_tcp_addr_check(a->peer_addr, a->peer_addr_len, reason,
				 sizeof(reason))) {
		tcp_log(m, RMCA_LOG_ERROR, "peer address refused: %s", reason);
		return RMCA_ERR_PROTOCOL;
	}
	r = dial(m, a->peer_host, b->port[0] | b->port[1] << 8, deadline, &fd);
	if (r)
		return r;
	hello(TCP_F_HELLO, a->token, buf);
	r = rmca_tcp_write_all(fd, buf, sizeof(buf), deadline);
	if (!r)
		r = rmca_tcp_read_all(fd, buf, sizeof(buf), deadline);
	if (r) {
		close(fd);
		return r;
	}
	if (rmca_tcp_frame_decode(buf, sizeof(buf), &f, &why) ||
	    f.type != TCP_F_HELLO_ACK || f.id != a->token) {
		tcp_log(m, RMCA_LOG_ERROR,
			"closing connection to %s: bad hello answer (%s)",
			a->peer_host,
			f.type != TCP_F_HELLO_ACK ? "not a hello ack" :
			f.id != a->token	  ? "wrong token" :
						    why);
		close(fd);
		return RMCA_ERR_PROTOCOL;
	}
	*out = fd;
	return 0;
}

static int passive(struct tcp_module *m, const struct rmca_conn_args *a,
		   long long deadline, int *out)
{
	uint8_t buf[TCP_HDR_LEN];
	int fd, r;

	r = rmca_tcp_accept_match(m, a->token, deadline, &fd);
	if (r)
		return r;
	hello(TCP_F_HELLO_ACK, a->token, buf);
	r = rmca_tcp_write_all(fd, buf, sizeof(buf), deadline);
	if (r) {
		close(fd);
		return r;
	}
	*out = fd;
	return 0;
}

int rmca_tcp_connect(struct rmca_module *mod, const struct rmca_conn_args *a,
		     struct rmca_conn **out)
{
	struct tcp_module *m = tcp_entry(mod, struct tcp_module, base);
	long long deadline = -1;
	int fd, r;

	if (!a->token)
		return RMCA_ERR_INVALID;
	if (a->timeout_ms >= 0)
		deadline = rmca_tcp_now_ms() + a->timeout_ms;
	r = a->active ? active(m, a, deadline, &fd) :
			passive(m, a, deadline, &fd);
	if (r)
		return r;
	r = rmca_tcp_conn_create(m, fd, a->cookie, out);
	if (r)
		close(fd);
	return r;
}
