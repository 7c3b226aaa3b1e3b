/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The passive side: one listening socket per module. Accepted sockets wait
 * here until their hello arrives, then stay parked under the token it
 * carries until the connect() that names that token claims them: several
 * peers may connect at once, in any order relative to the core's own
 * rmca_accept() calls.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp.h"
#include "tcp_iface.h"

struct tcp_pending {
	struct tcp_list link;
	struct tcp_module *m;
	int fd;
	uint8_t buf[TCP_HDR_LEN];
	size_t got;
	uint64_t token; /* non-zero once a valid hello is in */
	char peer[80];
};

static void pending_free(struct tcp_pending *p)
{
	const struct rmca_core *core = p->m->base.core;

	core->ops->fd_del(core, p->fd);
	close(p->fd);
	tcp_list_del(&p->link);
	p->m->npending--;
	free(p);
}

void rmca_tcp_pending_free_all(struct tcp_module *m)
{
	struct tcp_pending *p;

	while ((p = tcp_first(&m->pending, struct tcp_pending, link)))
		pending_free(p);
}

static void pending_reject(struct tcp_pending *p, const char *why)
{
	tcp_log(p->m, RMCA_LOG_ERROR, "closing connection from %s: %s",
		p->peer, why);
	pending_free(p);
}

/* Read what there is of the hello; a parked socket must stay silent. */
static void pending_read(struct tcp_pending *p)
{
	struct tcp_frame f;
	const char *why;
	ssize_t n;

	if (p->token) {
		uint8_t b;

		n = recv(p->fd, &b, 1, MSG_PEEK);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		pending_reject(p, n == 0 ? "peer closed before its connect"
					 : "data before the hello was answered");
		return;
	}
	n = recv(p->fd, p->buf + p->got, TCP_HDR_LEN - p->got, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		pending_reject(p, n ? strerror(errno) : "closed during hello");
		return;
	}
	p->got += (size_t)n;
	if (p->got < TCP_HDR_LEN)
		return;
	if (rmca_tcp_frame_decode(p->buf, TCP_HDR_LEN, &f, &why)) {
		pending_reject(p, why);
		return;
	}
	if (f.type != TCP_F_HELLO) {
		pending_reject(p, "first frame is not a hello");
		return;
	}
	/* A second socket with the same token: the older one is stale. */
	for (struct tcp_list *l = p->m->pending.next; l != &p->m->pending;
	     l = l->next) {
		struct tcp_pending *q = tcp_entry(l, struct tcp_pending, link);

		if (q->token == f.id) {
			pending_reject(q, "superseded by a newer hello");
			break;
		}
	}
	p->token = f.id;
}

static void pending_cb(void *arg, uint32_t events)
{
	pending_read(arg);
}

static void accept_one(struct tcp_module *m, int fd)
{
	const struct rmca_core *core = m->base.core;
	struct tcp_pending *p;

	if (m->nladdrs && !rmca_tcp_laddr_match(m->laddrs, m->nladdrs, fd)) {
		char who[80];

		rmca_tcp_sockname(fd, true, who, sizeof(who));
		tcp_log(m, RMCA_LOG_ERROR,
			"closing connection from %s: arrived on an interface "
			"outside tcp_if_include/tcp_if_exclude",
			who);
		close(fd);
		return;
	}
	if (m->npending >= TCP_MAX_PENDING)
		pending_reject(tcp_first(&m->pending, struct tcp_pending, link),
			       "too many connections awaiting connect()");
	p = calloc(1, sizeof(*p));
	if (!p || rmca_tcp_sock_setup(m, fd)) {
		free(p);
		close(fd);
		return;
	}
	p->m = m;
	p->fd = fd;
	rmca_tcp_sockname(fd, true, p->peer, sizeof(p->peer));
	if (core->ops->fd_add(core, fd, EPOLLIN, pending_cb, p)) {
		free(p);
		close(fd);
		return;
	}
	tcp_list_add_tail(&m->pending, &p->link);
	m->npending++;
}

static void accept_all(struct tcp_module *m)
{
	int fd;

	for (;;) {
		fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return; /* EAGAIN, or EMFILE: retried on next wakeup */
		}
		accept_one(m, fd);
	}
}

static void listen_cb(void *arg, uint32_t events)
{
	accept_all(arg);
}

int rmca_tcp_listen(struct tcp_module *m, int port)
{
	const struct rmca_core *core = m->base.core;
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	int fd, zero = 0, one = 1;

	m->family = AF_INET6;
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		m->family = AF_INET;
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    0);
	}
	if (fd < 0)
		return RMCA_ERR_NOT_FOUND;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (m->family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;

		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		s->sin6_family = AF_INET6;
		s->sin6_addr = in6addr_any;
		s->sin6_port = htons((uint16_t)port);
		sl = sizeof(*s);
	} else {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;

		s->sin_family = AF_INET;
		s->sin_addr.s_addr = htonl(INADDR_ANY);
		s->sin_port = htons((uint16_t)port);
		sl = sizeof(*s);
	}
	/* Accepted sockets inherit the buffer sizes (and window scale). */
	if (rmca_tcp_sock_setup(m, fd) || bind(fd, (struct sockaddr *)&ss, sl) ||
	    listen(fd, 128)) {
		tcp_log(m, RMCA_LOG_ERROR, "cannot listen on port %d: %s", port,
			strerror(errno));
		close(fd);
		return RMCA_ERR_NOT_FOUND;
	}
	sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	m->port = ntohs(ss.ss_family == AF_INET6 ?
				((struct sockaddr_in6 *)&ss)->sin6_port :
				((struct sockaddr_in *)&ss)->sin_port);
	m->lfd = fd;
	if (core->ops->fd_add(core, fd, EPOLLIN, listen_cb, m)) {
		close(fd);
		m->lfd = -1;
		return RMCA_ERR_NO_MEMORY;
	}
	return 0;
}

static struct tcp_pending *find_token(struct tcp_module *m, uint64_t token)
{
	for (struct tcp_list *l = m->pending.next; l != &m->pending;
	     l = l->next) {
		struct tcp_pending *p = tcp_entry(l, struct tcp_pending, link);

		if (p->token == token)
			return p;
	}
	return NULL;
}

static struct tcp_pending *find_fd(struct tcp_module *m, int fd)
{
	for (struct tcp_list *l = m->pending.next; l != &m->pending;
	     l = l->next) {
		struct tcp_pending *p = tcp_entry(l, struct tcp_pending, link);

		if (p->fd == fd)
			return p;
	}
	return NULL;
}

/*
 * Wait until a socket presenting token is parked, serving the listening
 * socket and the other hellos meanwhile. On success *fd is the socket, taken
 * out of the core's epoll set.
 */
int rmca_tcp_accept_match(struct tcp_module *m, uint64_t token,
			  long long deadline, int *fd)
{
	struct pollfd pfd[TCP_MAX_PENDING + 1];
	struct tcp_pending *p;
	int n, ms, r;

	for (;;) {
		p = find_token(m, token);
		if (p) {
			const struct rmca_core *core = m->base.core;

			core->ops->fd_del(core, p->fd);
			*fd = p->fd;
			tcp_list_del(&p->link);
			m->npending--;
			free(p);
			return 0;
		}
		ms = -1;
		if (deadline >= 0) {
			long long left = deadline - rmca_tcp_now_ms();

			if (left <= 0)
				return RMCA_ERR_TIMEOUT;
			ms = left > 1000000 ? 1000000 : (int)left;
		}
		n = 0;
		pfd[n].fd = m->lfd;
		pfd[n].events = POLLIN;
		n++;
		for (struct tcp_list *l = m->pending.next;
		     l != &m->pending && n <= TCP_MAX_PENDING; l = l->next) {
			pfd[n].fd = tcp_entry(l, struct tcp_pending, link)->fd;
			pfd[n].events = POLLIN;
			n++;
		}
		r = poll(pfd, (nfds_t)n, ms);
		if (r < 0 && errno != EINTR)
			return RMCA_ERR_CONNECTION;
		if (r <= 0)
			continue;
		/* Reading one may evict another (a newer hello supersedes
		 * it): look each one up anew by its socket. No socket is
		 * opened before the loop ends, so a number is not reused. */
		for (int i = 1; i < n; i++) {
			if (!pfd[i].revents)
				continue;
			p = find_fd(m, pfd[i].fd);
			if (p)
				pending_read(p);
		}
		if (pfd[0].revents)
			accept_all(m);
	}
}
