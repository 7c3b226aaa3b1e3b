/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The passive side: the module's data port (one listening socket per
 * selected address, opened on first use). Accepted sockets wait
 * here until their hello arrives; the socket is then handed to the connect
 * awaiting its token (tcp_connect.c), or parked under the token until that
 * connect starts: several peers may connect at once, in any order relative
 * to the core's handshakes. What a peer can hold here is bounded: at most
 * TCP_MAX_PENDING sockets, each for at most RMCA_connect_timeout, and their
 * lines in the log are rate-limited. At the bound the socket closed for a
 * new one is the oldest of the peer address that holds the most (the
 * newcomer counted with its own): one address that dials and sends whole
 * hellos as fast as it can pushes out its own sockets, not a peer
 * elsewhere whose connect is about to take its socket. What remains: many
 * addresses can still take every socket between them, and the peers of
 * one address (one host, a NAT, every local peer on 127.0.0.1) share the
 * fate of a flooder among them.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp.h"
#include "tcp_iface.h"

static void pending_cb(void *arg, uint32_t events);

struct tcp_pending {
	struct rmca_list link;
	struct tcp_module *m;
	int fd;
	uint8_t buf[TCP_HDR_LEN];
	size_t got;
	uint64_t token; /* non-zero once a valid hello is in */
	long long deadline;
	uint8_t addr[16]; /* the peer's address, IPv4 as ::ffff:a.b.c.d */
	char peer[80];
};

static void pending_free(struct tcp_pending *p)
{
	const struct rmca_core *core = p->m->base.core;

	core->ops->fd_del(core, p->fd);
	close(p->fd);
	rmca_list_del(&p->link);
	p->m->npending--;
	free(p);
}

void rmca_tcp_pending_free_all(struct tcp_module *m)
{
	struct tcp_pending *p;

	while ((p = rmca_list_first(&m->pending, struct tcp_pending, link)))
		pending_free(p);
}

/* One line a second at most: a peer that churns connections must not fill
 * the log. What was left out is counted in the next line. */
static bool log_allowed(struct tcp_module *m)
{
	long long now = rmca_now_ms();

	if (now < m->log_next_ms) {
		m->log_suppressed++;
		return false;
	}
	if (m->log_suppressed)
		tcp_log(m, RMCA_LOG_ERROR,
			"%u more connections closed in the last second "
			"(one line a second at most)",
			m->log_suppressed);
	m->log_suppressed = 0;
	m->log_next_ms = now + 1000;
	return true;
}

static void pending_reject(struct tcp_pending *p, const char *why)
{
	if (log_allowed(p->m))
		tcp_log(p->m, RMCA_LOG_ERROR, "closing connection from %s: %s",
			p->peer, why);
	pending_free(p);
}

/* Read what there is of the hello; a parked socket must stay silent. */
static void pending_read(struct tcp_pending *p)
{
	struct tcp_module *m = p->m;
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
	if (!f.id) {
		pending_reject(p, "hello without a token");
		return;
	}
	/* A second socket with the same token: the older one is stale. */
	for (struct rmca_list *l = m->pending.next; l != &m->pending;
	     l = l->next) {
		struct tcp_pending *q =
			rmca_list_entry(l, struct tcp_pending, link);

		if (q->token == f.id) {
			pending_reject(q, "superseded by a newer hello");
			break;
		}
	}
	/* The connect awaiting this token takes the socket at once. */
	if (rmca_tcp_connecting_claim(m, f.id, p->fd)) {
		rmca_list_del(&p->link);
		m->npending--;
		free(p);
		return;
	}
	p->token = f.id;
}

static void pending_cb(void *arg, uint32_t events)
{
	pending_read(arg);
}

/* sa's address as 16 bytes, an IPv4 one mapped as on a dual-stack socket
 * (zeros for another family: one source). */
static void peer_addr(const struct sockaddr *sa, socklen_t sl, uint8_t *out)
{
	memset(out, 0, 16);
	if (sa->sa_family == AF_INET6 && sl >= sizeof(struct sockaddr_in6)) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else if (sa->sa_family == AF_INET &&
		   sl >= sizeof(struct sockaddr_in)) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr,
		       4);
	}
}

/* The waiting sockets for fair_victim, the oldest first, by address. */
static const void *pending_next(void *arg, const void *cur,
				struct rmca_fair_entry *e)
{
	const struct tcp_module *m = arg;
	const struct rmca_list *l =
		cur ? ((const struct tcp_pending *)cur)->link.next
		    : m->pending.next;
	const struct tcp_pending *q;

	if (l == &m->pending)
		return NULL;
	q = rmca_list_entry(l, const struct tcp_pending, link);
	*e = (struct rmca_fair_entry){
		.key = q->addr, .len = sizeof(q->addr), .may_go = true};
	return q;
}

/* At the bound, the socket that gives way to one from addr: the oldest of
 * the address that holds the most, the newcomer counted with its own (the
 * core's fair_victim; a core without it: the oldest). */
static struct tcp_pending *pending_victim(struct tcp_module *m,
					  const uint8_t *addr)
{
	const struct rmca_core *core = m->base.core;
	const struct rmca_fair_entry e = {.key = addr, .len = 16};

	if (!core->ops->fair_victim)
		return rmca_list_first(&m->pending, struct tcp_pending, link);
	return (struct tcp_pending *)core->ops->fair_victim(
		core, (size_t)m->npending, pending_next, m, &e);
}

static void accept_one(struct tcp_module *m, int fd, const struct sockaddr *sa,
		       socklen_t sl)
{
	const struct rmca_core *core = m->base.core;
	struct tcp_pending *p;
	uint8_t addr[16];

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
	peer_addr(sa, sl, addr);
	if (m->npending >= TCP_MAX_PENDING)
		pending_reject(pending_victim(m, addr),
			       "too many connections awaiting connect() (the "
			       "most from its address)");
	p = calloc(1, sizeof(*p));
	if (!p || rmca_tcp_sock_setup(m, fd)) {
		free(p);
		close(fd);
		return;
	}
	p->m = m;
	p->fd = fd;
	memcpy(p->addr, addr, sizeof(addr));
	p->deadline = rmca_now_ms() + m->pending_ms;
	if (!m->next_expiry)
		m->next_expiry = p->deadline;
	rmca_tcp_sockname(fd, true, p->peer, sizeof(p->peer));
	if (core->ops->fd_add(core, fd, EPOLLIN, pending_cb, p)) {
		free(p);
		close(fd);
		return;
	}
	rmca_list_add_tail(&m->pending, &p->link);
	m->npending++;
	m->progress_due |= TCP_DUE_PARKED; /* its deadline is watched */
}

/*
 * Out of descriptors, the listening socket stays readable and accept4
 * fails at once: rather than spin, or leave the peers hanging, give up the
 * spare descriptor kept for this, accept and close one peer (it sees a
 * close at once), take the spare back. Without a spare the data port rests
 * for a second (rmca_tcp_pending_expire wakes it).
 */
static bool shed_one(struct tcp_lsock *s)
{
	struct tcp_module *m = s->m;
	const struct rmca_core *core = m->base.core;
	int fd;

	if (log_allowed(m))
		tcp_log(m, RMCA_LOG_ERROR,
			"out of file descriptors (%s): closing new "
			"connections at once",
			strerror(errno));
	if (m->spare_fd >= 0) {
		close(m->spare_fd);
		fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			close(fd);
		m->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			return true;
	}
	for (int i = 0; i < m->nls; i++)
		core->ops->fd_mod(core, m->ls[i].fd, 0);
	m->lfd_rest_until = rmca_now_ms() + 1000;
	m->progress_due |= TCP_DUE_PARKED; /* the op wakes the port */
	return false;
}

/* At most TCP_MAX_PENDING a call: a peer that dials as fast as we accept
 * would otherwise hold this call, and the context's progress call, for as
 * long as it dials. The rest wait in the backlog; the listening socket
 * stays readable for the next call. */
static void accept_all(struct tcp_lsock *s)
{
	int fd;

	for (int budget = TCP_MAX_PENDING; budget; budget--) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);

		fd = accept4(s->fd, (struct sockaddr *)&ss, &sl,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if ((errno == EMFILE || errno == ENFILE ||
			     errno == ENOBUFS || errno == ENOMEM) &&
			    shed_one(s))
				continue;
			return;
		}
		accept_one(s->m, fd, (struct sockaddr *)&ss, sl);
	}
}

static void listen_cb(void *arg, uint32_t events)
{
	accept_all(arg);
}

/* One listening socket on addr (NULL: every address) and port. */
static int listen_one(struct tcp_module *m, const struct tcp_laddr *addr,
		      int port)
{
	const struct rmca_core *core = m->base.core;
	struct sockaddr_storage ss = { 0 };
	struct tcp_lsock *s = &m->ls[m->nls];
	int fd, zero = 0, one = 1, family;
	socklen_t sl;

	family = addr ? addr->family : AF_INET6;
	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 && !addr) {
		family = AF_INET;
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    0);
	}
	if (fd < 0)
		return RMCA_ERR_NOT_FOUND;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		/* Every address: IPv4 too. One address: that one only. */
		if (!addr)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero,
				   sizeof(zero));
		else
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				   sizeof(one));
		a->sin6_family = AF_INET6;
		if (addr)
			memcpy(&a->sin6_addr, addr->addr, 16);
		else
			a->sin6_addr = in6addr_any;
		a->sin6_port = htons((uint16_t)port);
		sl = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		if (addr)
			memcpy(&a->sin_addr, addr->addr, 4);
		else
			a->sin_addr.s_addr = htonl(INADDR_ANY);
		a->sin_port = htons((uint16_t)port);
		sl = sizeof(*a);
	}
	/* Accepted sockets inherit the buffer sizes (and window scale). */
	if (rmca_tcp_sock_setup(m, fd) || bind(fd, (struct sockaddr *)&ss, sl) ||
	    listen(fd, 128)) {
		int err = errno;

		close(fd);
		return err == EADDRINUSE ? RMCA_ERR_AGAIN : RMCA_ERR_NOT_FOUND;
	}
	sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	m->port = ntohs(ss.ss_family == AF_INET6 ?
				((struct sockaddr_in6 *)&ss)->sin6_port :
				((struct sockaddr_in *)&ss)->sin_port);
	s->m = m;
	s->fd = fd;
	if (core->ops->fd_add(core, fd, EPOLLIN, listen_cb, s)) {
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	m->nls++;
	return 0;
}

void rmca_tcp_listen_close(struct tcp_module *m)
{
	const struct rmca_core *core = m->base.core;

	while (m->nls) {
		struct tcp_lsock *s = &m->ls[--m->nls];

		core->ops->fd_del(core, s->fd);
		close(s->fd);
	}
}

/* Link-local IPv6 addresses need a scope to bind, and no peer dials them
 * from a bootstrap address: left out. */
static bool bindable(const struct tcp_laddr *a)
{
	return a->family == AF_INET ||
	       !(a->addr[0] == 0xfe && (a->addr[1] & 0xc0) == 0x80);
}

int rmca_tcp_listen(struct tcp_module *m)
{
	int r = 0;

	if (m->nls)
		return 0;
	if (!m->nladdrs) {
		r = listen_one(m, NULL, m->want_port);
	} else {
		/* Every selected address on one port: the first picks it
		 * (tcp_port 0), the others follow; a port taken on one of
		 * them means another try. */
		for (int attempt = 0; attempt < 8; attempt++) {
			int port = m->want_port;

			r = RMCA_ERR_NOT_FOUND;
			for (int i = 0;
			     i < m->nladdrs && m->nls < TCP_MAX_LISTEN; i++) {
				if (!bindable(&m->laddrs[i]))
					continue;
				r = listen_one(m, &m->laddrs[i], port);
				if (r)
					break;
				port = m->port;
			}
			if (!r && m->nls)
				break;
			rmca_tcp_listen_close(m);
			if (r != RMCA_ERR_AGAIN || m->want_port)
				break;
		}
	}
	if (r || !m->nls) {
		tcp_log(m, RMCA_LOG_ERROR, "cannot open the data port %d: %s",
			m->want_port, strerror(errno));
		rmca_tcp_listen_close(m);
		return r ? r : RMCA_ERR_NOT_FOUND;
	}
	if (m->spare_fd < 0)
		m->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return 0;
}

int rmca_tcp_pending_take(struct tcp_module *m, uint64_t token)
{
	const struct rmca_core *core = m->base.core;

	for (struct rmca_list *l = m->pending.next; l != &m->pending;
	     l = l->next) {
		struct tcp_pending *p =
			rmca_list_entry(l, struct tcp_pending, link);
		int fd = p->fd;

		if (p->token != token)
			continue;
		core->ops->fd_del(core, fd);
		rmca_list_del(&p->link);
		m->npending--;
		free(p);
		return fd;
	}
	return -1;
}

int rmca_tcp_pending_expire(struct rmca_module *mod)
{
	struct tcp_module *m = rmca_container_of(mod, struct tcp_module, base);
	const struct rmca_core *core = m->base.core;
	long long now;

	/* No clock read while nothing is parked: this runs every pass. */
	if (!m->npending)
		m->next_expiry = 0;
	if (!m->next_expiry && !m->lfd_rest_until)
		return 0;
	now = rmca_now_ms();
	if (m->lfd_rest_until && now >= m->lfd_rest_until) {
		for (int i = 0; i < m->nls; i++)
			core->ops->fd_mod(core, m->ls[i].fd, EPOLLIN);
		m->lfd_rest_until = 0;
	}
	if (!m->next_expiry || now < m->next_expiry)
		return 0;
	m->next_expiry = 0;
	for (struct rmca_list *l = m->pending.next, *n; l != &m->pending;
	     l = n) {
		struct tcp_pending *p =
			rmca_list_entry(l, struct tcp_pending, link);

		n = l->next;
		if (now >= p->deadline)
			pending_reject(p, p->token ? "its connect never came"
						   : "no hello in time");
		else if (!m->next_expiry || p->deadline < m->next_expiry)
			m->next_expiry = p->deadline;
	}
	return 0;
}
