/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Establishing a connection. Each module listens on an abstract unix socket
 * (named by a random id in its address blob: nothing in the file system,
 * gone with the process). The active side creates the connection's segment
 * as a sealed memfd and hands it over with the token in its hello; the
 * passive side claims the socket that presents its token, checks the
 * kernel's word on who sent it (SO_PEERCRED), the seals and size of the
 * segment, and acknowledges. The memfd is closed on both sides once mapped,
 * so the memory goes away with the last mapping, however a process ends.
 *
 * The hello and its acknowledgement also carry each side's published key
 * table (a second memfd, mapped read-only by the peer; sent only when this
 * side holds a pidfd of the peer, so that it can tell when the peer is
 * gone) and whether that side may attach to the other (SHM_HF_CMA).
 *
 * Anyone on the host can connect to an abstract socket, and a peer whose
 * hello picked shm need not dial it: the passive side never waits on one
 * socket. Its listening socket and the sockets it accepted are read from
 * the core's event loop, each hello as its bytes come; a socket is kept
 * SHM_HELLO_MS for its hello, and at most SHM_MAX_PENDING are kept, so a
 * listener serves its honest peers whatever others hold open. For a new
 * one, the oldest of the user that holds the most goes (the newcomer
 * counted with its own), and of that user's, the oldest of the process
 * that holds the most, as the kernel names them (SO_PEERCRED): one process
 * that dials and sends whole hellos as fast as it can pushes out its own
 * sockets, not a peer whose connect is about to take its socket. What
 * remains: a user's processes (the honest ones of a job among them) share
 * the fate of a flooder of that user, whose processes, many of them, can
 * still take every socket between them.
 * The active side reads the answer to its hello the same way, so that a
 * peer that never answers holds up nothing but that connect.
 */
#define _GNU_SOURCE /* memfd_create, accept4, ucred */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rmca/support/sockio.h>

#include "shm.h"

/* How long an accepted socket may take to send its hello (ms). */
#define SHM_HELLO_MS 1000

/* Who sent a socket, as fair_victim counts: the user first (the wider
 * source), then the process. */
struct shm_source {
	uint32_t uid, pid;
};

struct shm_pending {
	struct rmca_list link;
	struct shm_module *m;
	int fd;
	bool watched; /* fd in the core's set, while its hello comes */
	struct shm_hello h;
	size_t got;		/* bytes of h read */
	int fds[SHM_HELLO_FDS]; /* the segment, the key table */
	int nfds;
	long long deadline; /* of the hello */
	uint64_t token;	    /* non-zero once a valid hello is in */
	struct ucred cred;  /* the kernel's word on its sender */
	struct shm_source src; /* cred's user, then process, as a key */
};

/* A connect. Passive: the socket that presents token, when it comes.
 * Active: the answer to the hello it sent, read as it comes. */
struct shm_connecting {
	struct rmca_connecting base;
	struct shm_module *m;
	bool active;
	struct shm_addr_blob b;
	uint64_t token;
	void *cookie;
	long long deadline;	  /* -1: none */
	int fd;			  /* active: the socket, -1 once handed on */
	bool watched;		  /* fd in the core's set */
	struct shm_conn_parts cp; /* active: the segment, the pidfd */
	uint32_t mine;		  /* active: the flags sent */
	struct shm_hello ack;
	size_t got;
	int fds[SHM_HELLO_FDS]; /* that came with the answer */
	int nfds;
};

static socklen_t sock_name(uint64_t id, struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* sun_path[0] stays 0: the abstract namespace */
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
		     "rmca-shm-%016llx", (unsigned long long)id);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   (size_t)n);
}

int rmca_shm_listen(struct shm_module *m)
{
	struct sockaddr_un sa;
	socklen_t sl = sock_name(m->self.sock_id, &sa);
	int fd;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return RMCA_ERR_NOT_FOUND;
	if (bind(fd, (struct sockaddr *)&sa, sl) || listen(fd, 128)) {
		shm_log(m, RMCA_LOG_ERROR, "cannot listen: %s",
			strerror(errno));
		close(fd);
		return RMCA_ERR_NOT_FOUND;
	}
	m->lfd = fd;
	return 0;
}

static void pending_free(struct shm_module *m, struct shm_pending *p)
{
	rmca_list_del(&p->link);
	m->npending--;
	if (p->watched)
		m->base.core->ops->fd_del(m->base.core, p->fd);
	if (p->fd >= 0)
		close(p->fd);
	for (int i = 0; i < p->nfds; i++)
		close(p->fds[i]);
	free(p);
}

void rmca_shm_pending_free_all(struct shm_module *m)
{
	struct shm_pending *p;

	while ((p = rmca_list_first(&m->pending, struct shm_pending, link)))
		pending_free(m, p);
}

void rmca_shm_listen_close(struct shm_module *m)
{
	if (m->lfd < 0)
		return;
	if (m->lfd_watched)
		m->base.core->ops->fd_del(m->base.core, m->lfd);
	m->lfd_watched = false;
	close(m->lfd);
	m->lfd = -1;
}

/*
 * Read what there is of a hello and of the descriptors that may come with
 * it, in order, without waiting: 1 once the hello is whole, 0 while more
 * is to come, or a negative status. *got and *nfds say how far it is.
 */
static int hello_read_some(int fd, struct shm_hello *h, size_t *got,
			   int fds[SHM_HELLO_FDS], int *nfds)
{
	char *p = (char *)h;

	while (*got < sizeof(*h)) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(SHM_HELLO_FDS * sizeof(int))];
		} cm;
		struct iovec iov = {.iov_base = p + *got,
				    .iov_len = sizeof(*h) - *got};
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = cm.b,
				     .msg_controllen = sizeof(cm.b)};
		struct cmsghdr *c;
		ssize_t n;

		n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return RMCA_ERR_CONNECTION;
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			int f;

			if (c->cmsg_level != SOL_SOCKET ||
			    c->cmsg_type != SCM_RIGHTS)
				continue;
			/* What we expect, once: anything more is closed. */
			for (size_t i = 0;
			     i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			     i++) {
				memcpy(&f, CMSG_DATA(c) + i * sizeof(int),
				       sizeof(f));
				if (*nfds < SHM_HELLO_FDS)
					fds[(*nfds)++] = f;
				else
					close(f);
			}
		}
		*got += (size_t)n;
	}
	return 1;
}

/* Send h with the descriptors given (those >= 0). */
static int send_hello(int fd, const struct shm_hello *h, const int *fds,
		      int nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(SHM_HELLO_FDS * sizeof(int))];
	} cm;
	struct iovec iov = {.iov_base = (void *)h, .iov_len = sizeof(*h)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;
	int n = 0;
	ssize_t r;

	memset(cm.b, 0, sizeof(cm.b));
	for (int i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			memcpy(cm.b + CMSG_LEN(0) + n++ * sizeof(int), &fds[i],
			       sizeof(int));
	if (n) {
		msg.msg_control = cm.b;
		msg.msg_controllen = CMSG_SPACE(n * sizeof(int));
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n * sizeof(int));
	}
	do {
		r = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (r < 0 && errno == EINTR);
	return r == (ssize_t)sizeof(*h) ? 0 : RMCA_ERR_CONNECTION;
}

/* A descriptor that tells when pid has exited, or -1. */
static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, pid, 0);

	if (fd >= 0) {
		if (fcntl((int)fd, F_SETFD, FD_CLOEXEC)) {
			close((int)fd);
			return -1;
		}
		return (int)fd;
	}
#else
	(void)pid;
#endif
	return -1;
}

/* The peer's key table, read-only; NULL (and the peer's keys are served by
 * its core) when it is not a sealed table of the right size. */
static const struct shm_keypub *keys_attach(struct shm_module *m, int fd)
{
	struct shm_keypub *k;
	struct stat st;
	int seals;

	if (fd < 0)
		return NULL;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) ||
	    (size_t)st.st_size != sizeof(*k)) {
		shm_log(m, RMCA_LOG_INFO,
			"ignored a peer's key table that "
			"is not a sealed memfd of its size");
		return NULL;
	}
	k = mmap(NULL, sizeof(*k), PROT_READ, MAP_SHARED, fd, 0);
	if (k == MAP_FAILED)
		return NULL;
	if (k->magic != SHM_PUB_MAGIC || k->version != SHM_PROTO_VERSION) {
		munmap(k, sizeof(*k));
		return NULL;
	}
	return k;
}

/* The kernel's word on the process at the other end of fd (pid -1 when
 * it says nothing). */
static struct ucred peer_cred(int fd)
{
	struct ucred cr;
	socklen_t sl = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl))
		cr = (struct ucred){
			.pid = -1, .uid = (uid_t)-1, .gid = (gid_t)-1};
	return cr;
}

static struct shm_seg *seg_create(int *fdp)
{
	struct shm_seg *s;
	int fd = memfd_create("rmca-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return NULL;
	/* Sealed against shrinking: a peer that could truncate the file
	 * would turn our next access into SIGBUS. */
	if (ftruncate(fd, sizeof(*s)) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		close(fd);
		return NULL;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	s->magic = SHM_SEG_MAGIC;
	s->version = SHM_PROTO_VERSION;
	s->side[0].armed = 1;
	s->side[1].armed = 1;
	*fdp = fd;
	return s;
}

static struct shm_seg *seg_attach(struct shm_module *m, int fd)
{
	struct shm_seg *s;
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) ||
	    (size_t)st.st_size != sizeof(*s)) {
		shm_log(m, RMCA_LOG_ERROR,
			"refused a segment that is not a sealed memfd of %zu "
			"bytes",
			sizeof(*s));
		return NULL;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED)
		return NULL;
	if (s->magic != SHM_SEG_MAGIC || s->version != SHM_PROTO_VERSION) {
		munmap(s, sizeof(*s));
		return NULL;
	}
	return s;
}

/* One try: a full backlog answers RMCA_ERR_AGAIN (try again later). */
static int dial(struct shm_module *m, uint64_t sock_id, int *out)
{
	struct sockaddr_un sa;
	socklen_t sl = sock_name(sock_id, &sa);
	int fd;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return RMCA_ERR_NO_MEMORY;
	while (connect(fd, (struct sockaddr *)&sa, sl)) {
		int err = errno;

		if (err == EINTR)
			continue;
		close(fd);
		if (err == EAGAIN)
			return RMCA_ERR_AGAIN;
		shm_log(m, RMCA_LOG_INFO, "connect to peer socket: %s",
			strerror(err));
		return RMCA_ERR_CONNECTION;
	}
	*out = fd;
	return 0;
}

/* This side's flags for the peer of address b, whose socket the kernel
 * says is cr's, and its key table's fd (or -1), with *pidfd opened for
 * it. The table goes only to a peer that may attach to this process: the
 * user and group that decides it are the kernel's, not the address's. */
static uint32_t our_flags(struct shm_module *m, const struct shm_addr_blob *b,
			  const struct ucred *cr, int *pidfd, int *keyfd)
{
	pid_t pid = (pid_t)b->pid;
	uint32_t f = 0;
	char why[160];

	*pidfd = -1;
	*keyfd = -1;
	if (cr->uid != b->uid || cr->gid != b->gid) {
		shm_log(m, RMCA_LOG_ERROR,
			"pid %d says it is uid %u gid %u, the kernel says uid "
			"%u gid %u: no cross-memory attach, every byte through "
			"the rings",
			(int)pid, (unsigned)b->uid, (unsigned)b->gid,
			(unsigned)cr->uid, (unsigned)cr->gid);
		return 0;
	}
	if (!rmca_shm_may_attach(m, b, why, sizeof(why))) {
		shm_log(m, RMCA_LOG_INFO,
			"pid %d: no cross-memory attach (%s): every byte "
			"through the rings",
			(int)pid, why);
		return 0;
	}
	f = SHM_HF_CMA;
	*pidfd = pidfd_of(pid);
	if (*pidfd >= 0 && m->pub_fd >= 0) {
		f |= SHM_HF_KEYS;
		*keyfd = m->pub_fd;
	}
	return f;
}

/* The connection, from the parts both sides agreed on; on failure every
 * part is released (fd is the caller's). */
static int conn_make(struct shm_module *m, int fd, struct shm_conn_parts *cp,
		     uint32_t mine, uint32_t theirs, int keyfd, void *cookie,
		     struct shm_conn **out)
{
	int r;

	cp->cma = (mine & SHM_HF_CMA) && (theirs & SHM_HF_CMA);
	cp->peer_keys =
		cp->cma && (theirs & SHM_HF_KEYS) && (mine & SHM_HF_KEYS)
			? keys_attach(m, keyfd)
			: NULL;
	r = rmca_shm_conn_create(m, fd, cp, cookie, out);
	if (r) {
		if (cp->peer_keys)
			munmap((void *)cp->peer_keys, sizeof(*cp->peer_keys));
		if (cp->pidfd >= 0)
			close(cp->pidfd);
	}
	return r;
}

static void active_cb(void *arg, uint32_t events)
{
	/* Nothing to do here: it wakes the loop, connect_poll reads. */
	(void)arg;
	(void)events;
}

/* The active side: dial, present the segment and the token (or
 * RMCA_ERR_AGAIN: the peer's backlog is full, dial again later). The
 * answer is read by connect_poll, as it comes: the context goes on
 * meanwhile. */
static int active_start(struct shm_connecting *h)
{
	struct shm_module *m = h->m;
	const struct rmca_core *core = m->base.core;
	const struct shm_addr_blob *b = &h->b;
	struct shm_hello hello = {.magic = SHM_HELLO_MAGIC,
				  .version = SHM_PROTO_VERSION,
				  .token = h->token};
	int fds[SHM_HELLO_FDS], r;
	struct ucred cr;

	r = dial(m, b->sock_id, &h->fd);
	if (r) {
		h->fd = -1;
		return r;
	}
	cr = peer_cred(h->fd);
	if (cr.pid != (pid_t)b->pid) {
		shm_log(m, RMCA_LOG_ERROR,
			"socket of pid %u is served by another process",
			(unsigned)b->pid);
		return RMCA_ERR_PROTOCOL;
	}
	h->cp.seg = seg_create(&fds[0]);
	if (!h->cp.seg)
		return RMCA_ERR_NO_MEMORY;
	h->mine = our_flags(m, b, &cr, &h->cp.pidfd, &fds[1]);
	hello.flags = h->mine;
	r = send_hello(h->fd, &hello, fds, SHM_HELLO_FDS);
	close(fds[0]);
	if (r)
		return r;
	if (core->ops->fd_add(core, h->fd, EPOLLIN, active_cb, h))
		return RMCA_ERR_NO_MEMORY;
	h->watched = true;
	return 0;
}

/* What an active connect holds goes (what was handed on is no more its). */
static void active_release(struct shm_connecting *h)
{
	const struct rmca_core *core = h->m->base.core;

	if (h->watched)
		core->ops->fd_del(core, h->fd);
	h->watched = false;
	for (int i = 0; i < h->nfds; i++)
		close(h->fds[i]);
	h->nfds = 0;
	if (h->cp.pidfd >= 0)
		close(h->cp.pidfd);
	h->cp.pidfd = -1;
	if (h->cp.seg)
		munmap(h->cp.seg, sizeof(*h->cp.seg));
	h->cp.seg = NULL;
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
}

/* The answer to the active side's hello: 0 with *out, RMCA_ERR_AGAIN
 * while it has not come, or why the connect failed. */
static int active_poll(struct shm_connecting *h, struct shm_conn **out)
{
	struct shm_module *m = h->m;
	const struct shm_hello *a = &h->ack;
	int r;

	if (h->fd < 0) {
		/* The peer's backlog was full: dial again. */
		r = active_start(h);
		if (r == RMCA_ERR_AGAIN)
			r = 0;
	} else {
		r = hello_read_some(h->fd, &h->ack, &h->got, h->fds, &h->nfds);
	}
	if (!r) {
		if (h->deadline < 0 || rmca_now_ms() < h->deadline)
			return RMCA_ERR_AGAIN;
		r = RMCA_ERR_TIMEOUT;
	} else if (r > 0) {
		r = 0;
		if (a->magic != SHM_ACK_MAGIC || a->token != h->token ||
		    h->nfds > 1 || (h->nfds == 1) != !!(a->flags & SHM_HF_KEYS))
			r = RMCA_ERR_PROTOCOL;
		else if (a->status)
			r = a->status == RMCA_ERR_UNREACHABLE
				    ? RMCA_ERR_UNREACHABLE
				    : RMCA_ERR_PROTOCOL;
	}
	if (!r) {
		/* The connection registers the socket anew, for itself. */
		m->base.core->ops->fd_del(m->base.core, h->fd);
		h->watched = false;
		r = conn_make(m, h->fd, &h->cp, h->mine, a->flags,
			      h->nfds ? h->fds[0] : -1, h->cookie, out);
		h->cp.pidfd = -1; /* released either way */
		if (!r) {
			h->cp.seg = NULL; /* the connection's now */
			h->fd = -1;
		}
	}
	if (r)
		shm_log(m, RMCA_LOG_INFO, "connect to pid %u failed (%d)",
			(unsigned)h->b.pid, r);
	active_release(h);
	return r;
}

/* The hello of p is whole: check it, and keep p under its token. */
static void pending_hello(struct shm_module *m, struct shm_pending *p)
{
	const struct shm_hello *h = &p->h;
	struct shm_pending *q;

	if (h->magic != SHM_HELLO_MAGIC || h->version != SHM_PROTO_VERSION ||
	    !h->token || p->nfds < 1 ||
	    (p->nfds > 1) != !!(h->flags & SHM_HF_KEYS)) {
		shm_log(m, RMCA_LOG_ERROR, "closing connection: bad hello");
		pending_free(m, p);
		return;
	}
	/* Silent from now on, until the hello is answered. */
	m->base.core->ops->fd_del(m->base.core, p->fd);
	p->watched = false;
	/* A newer hello with the same token supersedes. */
	for (struct rmca_list *l = m->pending.next; l != &m->pending;
	     l = l->next) {
		q = rmca_list_entry(l, struct shm_pending, link);
		if (q->token == h->token) {
			pending_free(m, q);
			break;
		}
	}
	p->token = h->token;
}

static void pending_read(struct shm_module *m, struct shm_pending *p)
{
	int r = hello_read_some(p->fd, &p->h, &p->got, p->fds, &p->nfds);

	if (!r)
		return;
	if (r < 0) {
		shm_log(m, RMCA_LOG_INFO, "closing connection: no hello");
		pending_free(m, p);
		return;
	}
	pending_hello(m, p);
}

static void pending_cb(void *arg, uint32_t events)
{
	struct shm_pending *p = arg;

	(void)events;
	pending_read(p->m, p);
}

/* Sockets whose hello did not come in time are closed. */
static void pending_expire(struct shm_module *m)
{
	long long now = rmca_now_ms();

	for (struct rmca_list *l = m->pending.next, *n; l != &m->pending;
	     l = n) {
		struct shm_pending *p =
			rmca_list_entry(l, struct shm_pending, link);

		n = l->next;
		if (!p->token && now >= p->deadline) {
			shm_log(m, RMCA_LOG_INFO,
				"closing connection: no hello in %d ms",
				SHM_HELLO_MS);
			pending_free(m, p);
		}
	}
}

static struct shm_source source_of(const struct ucred *cr)
{
	return (struct shm_source){.uid = (uint32_t)cr->uid,
				   .pid = (uint32_t)cr->pid};
}

/* The waiting sockets for fair_victim, the oldest first, by user and then
 * process. */
static const void *pending_next(void *arg, const void *cur,
				struct rmca_fair_entry *e)
{
	const struct shm_module *m = arg;
	const struct rmca_list *l =
		cur ? ((const struct shm_pending *)cur)->link.next
		    : m->pending.next;
	const struct shm_pending *q;

	if (l == &m->pending)
		return NULL;
	q = rmca_list_entry(l, const struct shm_pending, link);
	*e = (struct rmca_fair_entry){.key = &q->src,
				      .len = sizeof(q->src),
				      .outer = sizeof(q->src.uid),
				      .may_go = true};
	return q;
}

/* At the bound, the socket that gives way to one from src: the oldest of
 * the user that holds the most, the newcomer counted with its own, and
 * among that user's, of the process that holds the most (the core's
 * fair_victim; a core without it: the oldest). */
static struct shm_pending *pending_victim(struct shm_module *m,
					  const struct shm_source *src)
{
	const struct rmca_core *core = m->base.core;
	const struct rmca_fair_entry e = {
		.key = src, .len = sizeof(*src), .outer = sizeof(src->uid)};

	if (!core->ops->fair_victim)
		return rmca_list_first(&m->pending, struct shm_pending, link);
	return (struct shm_pending *)core->ops->fair_victim(
		core, (size_t)m->npending, pending_next, m, &e);
}

/* Take the sockets waiting on the listening one, and what there is of
 * their hellos; never waits. At most SHM_MAX_PENDING a call: a process
 * that dials as fast as we accept would otherwise hold this call, and the
 * progress call of the whole context, for as long as it dials. The rest
 * wait in the backlog, the listening socket stays readable. */
static void accept_all(struct shm_module *m)
{
	const struct rmca_core *core = m->base.core;
	struct shm_pending *p;
	struct ucred cr;
	int fd;

	for (int budget = SHM_MAX_PENDING; budget; budget--) {
		fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (fd < 0)
			break;
		/* who connected, as the kernel says (at connect) */
		cr = peer_cred(fd);
		if (m->npending >= SHM_MAX_PENDING) {
			struct shm_source src = source_of(&cr);

			p = pending_victim(m, &src);
			shm_log(m, RMCA_LOG_INFO,
				"closing one of %d connections awaiting their "
				"connect: the oldest of pid %d, whose user and "
				"then itself hold the most",
				m->npending, (int)p->cred.pid);
			pending_free(m, p);
		}
		p = calloc(1, sizeof(*p));
		if (!p || core->ops->fd_add(core, fd, EPOLLIN, pending_cb, p)) {
			free(p);
			close(fd);
			continue;
		}
		p->m = m;
		p->fd = fd;
		p->cred = cr;
		p->src = source_of(&cr);
		p->watched = true;
		p->deadline = rmca_now_ms() + SHM_HELLO_MS;
		rmca_list_add_tail(&m->pending, &p->link);
		m->npending++;
		pending_read(m, p);
	}
	pending_expire(m);
}

static void listen_cb(void *arg, uint32_t events)
{
	(void)events;
	accept_all(arg);
}

/* The socket that presented h's token (its hello read), or NULL. */
static struct shm_pending *pending_find(struct shm_module *m, uint64_t token)
{
	for (struct rmca_list *l = m->pending.next; l != &m->pending;
	     l = l->next) {
		struct shm_pending *p =
			rmca_list_entry(l, struct shm_pending, link);

		if (p->token == token)
			return p;
	}
	return NULL;
}

/* Answer the hello of p, the socket that presented h's token. */
static int passive(struct shm_connecting *hc, struct shm_pending *p,
		   struct shm_conn **out)
{
	struct shm_module *m = hc->m;
	const struct shm_addr_blob *b = &hc->b;
	struct shm_hello h = {.magic = SHM_ACK_MAGIC,
			      .version = SHM_PROTO_VERSION,
			      .token = hc->token};
	struct shm_conn_parts cp = {
		.side = 1, .peer_pid = (pid_t)b->pid, .pidfd = -1};
	uint32_t mine = 0, theirs;
	int fd, keyfd = -1, r;

	if (p->cred.pid != (pid_t)b->pid) {
		shm_log(m, RMCA_LOG_ERROR,
			"closing connection: pid %d presented the token of "
			"pid %u",
			(int)p->cred.pid, (unsigned)b->pid);
		h.status = RMCA_ERR_PROTOCOL;
	} else {
		cp.seg = seg_attach(m, p->fds[0]);
		if (!cp.seg)
			h.status = RMCA_ERR_PROTOCOL;
	}
	if (!h.status)
		mine = our_flags(m, b, &p->cred, &cp.pidfd, &keyfd);
	h.flags = mine;
	theirs = p->h.flags;
	fd = p->fd;
	p->fd = -1; /* ours now */
	r = send_hello(fd, &h, &keyfd, 1);
	if (!r && h.status)
		r = h.status;
	if (!r) {
		r = conn_make(m, fd, &cp, mine, theirs,
			      p->nfds > 1 ? p->fds[1] : -1, hc->cookie, out);
		cp.pidfd = -1; /* released either way */
	}
	pending_free(m, p);
	if (!r)
		return 0;
	close(fd);
	if (cp.pidfd >= 0)
		close(cp.pidfd);
	if (cp.seg)
		munmap(cp.seg, sizeof(*cp.seg));
	return h.status ? h.status : RMCA_ERR_CONNECTION;
}

static inline struct shm_connecting *
shm_connecting_from_base(struct rmca_connecting *h)
{
	return rmca_container_of(h, struct shm_connecting, base);
}

int rmca_shm_connect_start(struct rmca_module *mod,
			   const struct rmca_conn_args *a,
			   struct rmca_connecting **out)
{
	struct shm_module *m = rmca_container_of(mod, struct shm_module, base);
	const struct rmca_core *core = m->base.core;
	struct shm_connecting *h;
	char why[128];
	int r;

	if (!a->token)
		return RMCA_ERR_INVALID;
	if (!rmca_shm_addr_check(mod, a->peer_addr, a->peer_addr_len, why,
				 sizeof(why))) {
		shm_log(m, RMCA_LOG_ERROR, "peer address refused: %s", why);
		return RMCA_ERR_UNREACHABLE;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return RMCA_ERR_NO_MEMORY;
	h->base.module = mod;
	h->m = m;
	h->active = a->active;
	memcpy(&h->b, a->peer_addr, sizeof(h->b));
	h->token = a->token;
	h->cookie = a->cookie;
	h->deadline = a->timeout_ms >= 0 ? rmca_now_ms() + a->timeout_ms : -1;
	h->fd = -1;
	h->cp = (struct shm_conn_parts){.side = a->active ? 0 : 1,
					.peer_pid = (pid_t)h->b.pid,
					.pidfd = -1};
	if (a->active) {
		r = active_start(h);
		if (r && r != RMCA_ERR_AGAIN) {
			shm_log(m, RMCA_LOG_INFO,
				"connect to pid %u failed (%d)",
				(unsigned)h->b.pid, r);
			active_release(h);
			free(h);
			return r;
		}
	} else if (!m->lfd_watched) {
		/* From now on the listening socket is served by the core's
		 * loop; what waits on it already is taken now. */
		if (core->ops->fd_add(core, m->lfd, EPOLLIN, listen_cb, m)) {
			free(h);
			return RMCA_ERR_NO_MEMORY;
		}
		m->lfd_watched = true;
		accept_all(m);
	}
	*out = &h->base;
	return 0;
}

int rmca_shm_connect_poll(struct rmca_connecting *base, struct rmca_conn **out)
{
	struct shm_connecting *h = shm_connecting_from_base(base);
	struct shm_module *m = h->m;
	struct shm_pending *p;
	struct shm_conn *c;
	int r;

	if (h->active) {
		r = active_poll(h, &c);
		if (r == RMCA_ERR_AGAIN)
			return r;
		free(h);
		if (!r)
			*out = shm_conn_base(c);
		return r;
	}
	p = pending_find(m, h->token);
	if (!p) {
		pending_expire(m);
		if (h->deadline < 0 || rmca_now_ms() < h->deadline)
			return RMCA_ERR_AGAIN;
		shm_log(m, RMCA_LOG_INFO,
			"connection from pid %u: timed out (its socket never "
			"came)",
			(unsigned)h->b.pid);
		free(h);
		return RMCA_ERR_TIMEOUT;
	}
	r = passive(h, p, &c);
	free(h);
	if (!r)
		*out = shm_conn_base(c);
	return r;
}

void rmca_shm_connect_abort(struct rmca_connecting *base)
{
	struct shm_connecting *h = shm_connecting_from_base(base);

	active_release(h);
	free(h);
}
