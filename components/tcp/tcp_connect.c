/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Establishing a data connection, without blocking. The framework's
 * bootstrap has already agreed on a token; the active side connects to the
 * peer's module port and presents it in a hello, the passive side takes the
 * socket that presents it from those its listening socket accepted
 * (tcp_listen.c), and acknowledges. Each step runs from the socket's
 * callback in the core's event loop, so a listener serves any number of
 * handshakes at once, each against its own deadline.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp.h"

enum tc_state {
	TC_AWAIT, /* passive: no socket has presented the token yet */
	TC_DIAL,  /* active: connect() in progress */
	TC_WRITE, /* writing our frame (active: HELLO, passive: HELLO_ACK) */
	TC_READ,  /* active: reading the HELLO_ACK */
	TC_DONE,  /* usable: connect_poll makes the connection */
	TC_FAILED,
};

struct tcp_connecting {
	struct rmca_connecting base;
	struct rmca_list link; /* m->awaiting while TC_AWAIT */
	struct tcp_module *m;
	enum tc_state state;
	bool active;
	bool registered; /* fd in the core's epoll set */
	int fd;
	int status; /* TC_FAILED: why */
	uint64_t token;
	void *cookie;
	long long deadline; /* -1: none */
	uint8_t buf[TCP_HDR_LEN];
	size_t off;
	char peer[80];
};

static inline struct tcp_connecting *
tcp_connecting_from_base(struct rmca_connecting *h)
{
	return rmca_container_of(h, struct tcp_connecting, base);
}

static inline struct rmca_connecting *
tcp_connecting_base(struct tcp_connecting *h)
{
	return &h->base;
}

static void frame(uint8_t type, uint64_t token, uint8_t *buf)
{
	struct tcp_frame f = {
		.type = type,
		.id = token,
		.operand = TCP_HELLO_WORD,
	};

	rmca_tcp_frame_encode(&f, buf);
}

static void tc_close(struct tcp_connecting *h)
{
	const struct rmca_core *core = h->m->base.core;

	if (h->registered)
		core->ops->fd_del(core, h->fd);
	h->registered = false;
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
}

static void tc_fail(struct tcp_connecting *h, int status, const char *why)
{
	tcp_log(h->m, RMCA_LOG_INFO, "connection %s %s: %s",
		h->active ? "to" : "from", h->peer, why);
	tc_close(h);
	h->state = TC_FAILED;
	h->status = status;
}

static void tc_events(struct tcp_connecting *h, uint32_t ev)
{
	const struct rmca_core *core = h->m->base.core;

	if (h->registered && core->ops->fd_mod(core, h->fd, ev))
		tc_fail(h, RMCA_ERR_NO_MEMORY, "cannot watch the socket");
}

/* Advance h as far as its socket allows. */
static void tc_step(struct tcp_connecting *h)
{
	struct tcp_frame f;
	const char *why;
	socklen_t sl;
	ssize_t n;
	int err;

	switch (h->state) {
	case TC_DIAL:
		err = 0;
		sl = sizeof(err);
		if (getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &err, &sl))
			err = errno;
		if (err) {
			tc_fail(h, RMCA_ERR_CONNECTION, strerror(err));
			return;
		}
		h->state = TC_WRITE;
		/* fall through */
	case TC_WRITE:
		while (h->off < TCP_HDR_LEN) {
			n = send(h->fd, h->buf + h->off, TCP_HDR_LEN - h->off,
				 MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 &&
			    (errno == EAGAIN || errno == EWOULDBLOCK)) {
				tc_events(h, EPOLLOUT);
				return;
			}
			if (n <= 0) {
				tc_fail(h, RMCA_ERR_CONNECTION,
					n ? strerror(errno) : "closed");
				return;
			}
			h->off += (size_t)n;
		}
		h->off = 0;
		if (!h->active) {
			h->state = TC_DONE;
			tc_events(h, 0);
			return;
		}
		h->state = TC_READ;
		tc_events(h, EPOLLIN);
		/* fall through */
	case TC_READ:
		while (h->off < TCP_HDR_LEN) {
			n = recv(h->fd, h->buf + h->off, TCP_HDR_LEN - h->off,
				 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			if (n <= 0) {
				tc_fail(h, RMCA_ERR_CONNECTION,
					n ? strerror(errno)
					  : "closed before its hello answer");
				return;
			}
			h->off += (size_t)n;
		}
		if (rmca_tcp_frame_decode(h->buf, TCP_HDR_LEN, &f, &why) ||
		    f.type != TCP_F_HELLO_ACK || f.id != h->token) {
			tcp_log(h->m, RMCA_LOG_ERROR,
				"closing connection to %s: bad hello answer "
				"(%s)",
				h->peer,
				f.type != TCP_F_HELLO_ACK ? "not a hello ack"
				: f.id != h->token	  ? "wrong token"
							  : why);
			tc_fail(h, RMCA_ERR_PROTOCOL, "bad hello answer");
			return;
		}
		h->state = TC_DONE;
		/* What the peer sends next is the connection's to read. */
		tc_events(h, 0);
		return;
	case TC_AWAIT:
	case TC_DONE:
	case TC_FAILED:
		return;
	}
}

static void tc_cb(void *arg, uint32_t events)
{
	tc_step(arg);
}

static int tc_watch(struct tcp_connecting *h, uint32_t ev)
{
	const struct rmca_core *core = h->m->base.core;
	int r = core->ops->fd_add(core, h->fd, ev, tc_cb, h);

	h->registered = !r;
	return r;
}

static int start_active(struct tcp_connecting *h,
			const struct rmca_conn_args *a)
{
	struct tcp_module *m = h->m;
	const struct tcp_addr_blob *b = a->peer_addr;
	struct addrinfo hints = {
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
	};
	struct addrinfo *ai;
	char reason[64], service[8];
	int port, r;

	if (!rmca_tcp_addr_check(a->peer_addr, a->peer_addr_len, reason,
				 sizeof(reason))) {
		tcp_log(m, RMCA_LOG_ERROR, "peer address refused: %s", reason);
		return RMCA_ERR_PROTOCOL;
	}
	port = b->port[0] | b->port[1] << 8;
	snprintf(service, sizeof(service), "%d", port);
	snprintf(h->peer, sizeof(h->peer), "[%s]:%d", a->peer_host, port);
	if (getaddrinfo(a->peer_host, service, &hints, &ai)) {
		tcp_log(m, RMCA_LOG_ERROR, "bad peer address '%s'",
			a->peer_host);
		return RMCA_ERR_INVALID;
	}
	h->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->fd < 0 || rmca_tcp_sock_setup(m, h->fd)) {
		freeaddrinfo(ai);
		return RMCA_ERR_NO_MEMORY;
	}
	r = connect(h->fd, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (r && errno != EINPROGRESS) {
		tcp_log(m, RMCA_LOG_INFO, "connect to %s: %s", h->peer,
			strerror(errno));
		return RMCA_ERR_CONNECTION;
	}
	frame(TCP_F_HELLO, h->token, h->buf);
	h->state = r ? TC_DIAL : TC_WRITE;
	if (tc_watch(h, EPOLLOUT))
		return RMCA_ERR_NO_MEMORY;
	return 0;
}

/* The passive side got its socket: acknowledge on it. */
static void passive_go(struct tcp_connecting *h, int fd)
{
	h->fd = fd;
	rmca_tcp_sockname(fd, true, h->peer, sizeof(h->peer));
	frame(TCP_F_HELLO_ACK, h->token, h->buf);
	h->state = TC_WRITE;
	if (tc_watch(h, EPOLLOUT)) {
		tc_fail(h, RMCA_ERR_NO_MEMORY, "cannot watch the socket");
		return;
	}
	tc_step(h);
}

bool rmca_tcp_connecting_claim(struct tcp_module *m, uint64_t token, int fd)
{
	for (struct rmca_list *l = m->awaiting.next; l != &m->awaiting;
	     l = l->next) {
		struct tcp_connecting *h =
			rmca_list_entry(l, struct tcp_connecting, link);

		if (h->token == token) {
			/* Out of the listener's hands, into this one's. */
			m->base.core->ops->fd_del(m->base.core, fd);
			rmca_list_del(&h->link);
			passive_go(h, fd);
			return true;
		}
	}
	return false;
}

int rmca_tcp_connect_start(struct rmca_module *mod,
			   const struct rmca_conn_args *a,
			   struct rmca_connecting **out)
{
	struct tcp_module *m = rmca_container_of(mod, struct tcp_module, base);
	struct tcp_connecting *h;
	int fd, r;

	/* Token 0 is what a socket presents before its hello: never a
	 * connection's name. */
	if (!a->token)
		return RMCA_ERR_INVALID;
	h = calloc(1, sizeof(*h));
	if (!h)
		return RMCA_ERR_NO_MEMORY;
	rmca_list_init(&h->link);
	h->base.module = mod;
	h->m = m;
	h->fd = -1;
	h->active = a->active;
	h->token = a->token;
	h->cookie = a->cookie;
	h->deadline = rmca_deadline_ms(a->timeout_ms);
	if (h->active) {
		r = start_active(h, a);
		if (r) {
			tc_close(h);
			free(h);
			return r;
		}
		*out = tcp_connecting_base(h);
		return 0;
	}
	h->state = TC_AWAIT;
	snprintf(h->peer, sizeof(h->peer), "%s", a->peer_host);
	*out = tcp_connecting_base(h);
	/* The peer's socket may already be parked under the token. */
	fd = rmca_tcp_pending_take(m, h->token);
	if (fd >= 0)
		passive_go(h, fd);
	else
		rmca_list_add_tail(&m->awaiting, &h->link);
	return 0;
}

void rmca_tcp_connect_abort(struct rmca_connecting *base)
{
	struct tcp_connecting *h = tcp_connecting_from_base(base);

	rmca_list_del(&h->link);
	tc_close(h);
	free(h);
}

int rmca_tcp_connect_poll(struct rmca_connecting *base, struct rmca_conn **out)
{
	struct tcp_connecting *h = tcp_connecting_from_base(base);
	struct tcp_conn *c;
	int fd, r;

	if (h->state == TC_FAILED) {
		r = h->status;
		rmca_tcp_connect_abort(&h->base);
		return r;
	}
	if (h->state != TC_DONE) {
		if (h->deadline < 0 || rmca_now_ms() < h->deadline)
			return RMCA_ERR_AGAIN;
		tcp_log(h->m, RMCA_LOG_INFO, "connection %s %s: timed out (%s)",
			h->active ? "to" : "from", h->peer,
			h->state == TC_AWAIT ? "no data connection came"
					     : "no hello exchanged");
		rmca_tcp_connect_abort(&h->base);
		return RMCA_ERR_TIMEOUT;
	}
	/* The connection registers the socket anew, for itself. */
	if (h->registered)
		h->m->base.core->ops->fd_del(h->m->base.core, h->fd);
	h->registered = false;
	fd = h->fd;
	r = rmca_tcp_conn_create(h->m, fd, h->cookie, &c);
	if (r)
		close(fd);
	else
		*out = tcp_conn_base(c);
	h->fd = -1;
	rmca_tcp_connect_abort(&h->base);
	return r;
}
