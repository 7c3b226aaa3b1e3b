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
 */
#define _GNU_SOURCE /* memfd_create, accept4, ucred */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rmca/support/sockio.h>

#include "shm.h"

#define SHM_HELLO_MAGIC 0x4f4c4548u /* "HELO" */
#define SHM_ACK_MAGIC	0x4b434148u /* "HACK" */

enum shm_hello_flags {
	SHM_HF_CMA = 1 << 0,  /* the sender may attach to the receiver */
	SHM_HF_KEYS = 1 << 1, /* the sender's key table comes with it */
};

struct shm_hello {
	uint32_t magic;
	uint32_t version;
	uint64_t token;
	int32_t status; /* ack: 0, or why the passive side refused */
	uint32_t flags;
};

#define SHM_HELLO_FDS 2 /* the segment (hello only), the key table */

struct shm_pending {
	struct rmca_list link;
	int fd;
	int memfd;
	int keyfd;
	uint32_t flags;
	uint64_t token;
	pid_t pid;
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
	if (p->fd >= 0)
		close(p->fd);
	if (p->memfd >= 0)
		close(p->memfd);
	if (p->keyfd >= 0)
		close(p->keyfd);
	free(p);
}

void rmca_shm_pending_free_all(struct shm_module *m)
{
	struct shm_pending *p;

	while ((p = rmca_list_first(&m->pending, struct shm_pending, link)))
		pending_free(m, p);
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

/* Read one hello and the descriptors that may come with it, in order. */
static int read_hello(int fd, struct shm_hello *h, int fds[SHM_HELLO_FDS],
		      long long deadline)
{
	char *p = (char *)h;
	size_t got = 0;
	int nfds = 0;

	for (int i = 0; i < SHM_HELLO_FDS; i++)
		fds[i] = -1;
	while (got < sizeof(*h)) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(SHM_HELLO_FDS * sizeof(int))];
		} cm;
		struct iovec iov = {.iov_base = p + got,
				    .iov_len = sizeof(*h) - got};
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = cm.b,
				     .msg_controllen = sizeof(cm.b)};
		struct cmsghdr *c;
		ssize_t n;
		int r;

		n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			r = rmca_fd_wait(fd, POLLIN, deadline);
			if (r < 0)
				goto fail;
			continue;
		}
		if (n <= 0) {
			r = RMCA_ERR_CONNECTION;
			goto fail;
		}
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
				if (nfds < SHM_HELLO_FDS)
					fds[nfds++] = f;
				else
					close(f);
			}
		}
		got += (size_t)n;
		continue;
	fail:
		close_fds(fds, SHM_HELLO_FDS);
		return r;
	}
	return 0;
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

static pid_t peer_pid(int fd)
{
	struct ucred cr;
	socklen_t sl = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl))
		return -1;
	return cr.pid;
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

static int dial(struct shm_module *m, uint64_t sock_id, long long deadline,
		int *out)
{
	struct sockaddr_un sa;
	socklen_t sl = sock_name(sock_id, &sa);
	int fd, r;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return RMCA_ERR_NO_MEMORY;
	/* A full backlog answers EAGAIN at once: retry until the deadline. */
	while (connect(fd, (struct sockaddr *)&sa, sl)) {
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			shm_log(m, RMCA_LOG_INFO, "connect to peer socket: %s",
				strerror(errno));
			close(fd);
			return RMCA_ERR_CONNECTION;
		}
		if (deadline >= 0 && rmca_now_ms() >= deadline) {
			close(fd);
			return RMCA_ERR_TIMEOUT;
		}
		r = poll(NULL, 0, 1);
		(void)r;
	}
	*out = fd;
	return 0;
}

/* This side's flags for the peer of pid, and its key table's fd (or -1),
 * with *pidfd opened for it. */
static uint32_t our_flags(struct shm_module *m, const struct shm_addr_blob *b,
			  int *pidfd, int *keyfd)
{
	pid_t pid = (pid_t)b->pid;
	uint32_t f = 0;
	char why[160];

	*pidfd = -1;
	*keyfd = -1;
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

static int active(struct shm_module *m, const struct rmca_conn_args *a,
		  const struct shm_addr_blob *b, long long deadline,
		  struct shm_conn **out)
{
	struct shm_hello h = {.magic = SHM_HELLO_MAGIC,
			      .version = SHM_PROTO_VERSION,
			      .token = a->token};
	struct shm_conn_parts cp = {.side = 0, .peer_pid = (pid_t)b->pid};
	int fd, fds[SHM_HELLO_FDS], got[SHM_HELLO_FDS] = {-1, -1}, r;
	uint32_t mine;

	r = dial(m, b->sock_id, deadline, &fd);
	if (r)
		return r;
	if (peer_pid(fd) != (pid_t)b->pid) {
		shm_log(m, RMCA_LOG_ERROR,
			"socket of pid %u is served by another process",
			(unsigned)b->pid);
		close(fd);
		return RMCA_ERR_PROTOCOL;
	}
	cp.seg = seg_create(&fds[0]);
	if (!cp.seg) {
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	mine = our_flags(m, b, &cp.pidfd, &fds[1]);
	h.flags = mine;
	r = send_hello(fd, &h, fds, SHM_HELLO_FDS);
	close(fds[0]);
	if (!r)
		r = read_hello(fd, &h, got, deadline);
	if (!r && (h.magic != SHM_ACK_MAGIC || h.token != a->token ||
		   got[1] >= 0 || (got[0] >= 0) != !!(h.flags & SHM_HF_KEYS)))
		r = RMCA_ERR_PROTOCOL;
	if (!r && h.status)
		r = h.status == RMCA_ERR_UNREACHABLE ? RMCA_ERR_UNREACHABLE
						     : RMCA_ERR_PROTOCOL;
	if (!r) {
		r = conn_make(m, fd, &cp, mine, h.flags, got[0], a->cookie,
			      out);
		cp.pidfd = -1; /* released either way */
	}
	if (!r)
		close_fds(got, SHM_HELLO_FDS);
	if (r) {
		shm_log(m, RMCA_LOG_INFO, "connect to pid %u failed (%d)",
			(unsigned)b->pid, r);
		close_fds(got, SHM_HELLO_FDS);
		if (cp.pidfd >= 0)
			close(cp.pidfd);
		munmap(cp.seg, sizeof(*cp.seg));
		close(fd);
	}
	return r;
}

/* Accept one socket and read its hello into the pending list. */
static int accept_one(struct shm_module *m, long long deadline)
{
	struct shm_pending *p, *q;
	struct shm_hello h;
	int fd, fds[SHM_HELLO_FDS], r;

	r = rmca_fd_wait(m->lfd, POLLIN, deadline);
	if (r < 0)
		return r;
	fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return 0;
	/* A hello follows the connect at once; a silent socket gets a
	 * second at most. */
	r = read_hello(fd, &h, fds,
		       deadline >= 0 && deadline < rmca_now_ms() + 1000
			       ? deadline
			       : rmca_now_ms() + 1000);
	if (r || h.magic != SHM_HELLO_MAGIC || h.version != SHM_PROTO_VERSION ||
	    !h.token || fds[0] < 0 ||
	    (fds[1] >= 0) != !!(h.flags & SHM_HF_KEYS)) {
		shm_log(m, RMCA_LOG_ERROR, "closing connection: %s",
			r ? "no hello" : "bad hello");
		close_fds(fds, SHM_HELLO_FDS);
		close(fd);
		return 0;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		close_fds(fds, SHM_HELLO_FDS);
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	p->fd = fd;
	p->memfd = fds[0];
	p->keyfd = fds[1];
	p->flags = h.flags;
	p->token = h.token;
	p->pid = peer_pid(fd);
	/* A newer hello with the same token supersedes; the oldest goes
	 * when too many wait. */
	for (struct rmca_list *l = m->pending.next; l != &m->pending;
	     l = l->next) {
		q = rmca_list_entry(l, struct shm_pending, link);
		if (q->token == h.token) {
			pending_free(m, q);
			break;
		}
	}
	if (m->npending >= SHM_MAX_PENDING)
		pending_free(m, rmca_list_first(&m->pending, struct shm_pending,
						link));
	rmca_list_add_tail(&m->pending, &p->link);
	m->npending++;
	return 0;
}

static int passive(struct shm_module *m, const struct rmca_conn_args *a,
		   const struct shm_addr_blob *b, long long deadline,
		   struct shm_conn **out)
{
	struct shm_hello h = {.magic = SHM_ACK_MAGIC,
			      .version = SHM_PROTO_VERSION,
			      .token = a->token};
	struct shm_conn_parts cp = {
		.side = 1, .peer_pid = (pid_t)b->pid, .pidfd = -1};
	struct shm_pending *p = NULL;
	uint32_t mine = 0, theirs;
	int fd, keyfd = -1, r;

	while (!p) {
		for (struct rmca_list *l = m->pending.next; l != &m->pending;
		     l = l->next) {
			struct shm_pending *q =
				rmca_list_entry(l, struct shm_pending, link);

			if (q->token == a->token) {
				p = q;
				break;
			}
		}
		if (p)
			break;
		r = accept_one(m, deadline);
		if (r)
			return r;
	}
	if (p->pid != (pid_t)b->pid) {
		shm_log(m, RMCA_LOG_ERROR,
			"closing connection: pid %d presented the token of "
			"pid %u",
			(int)p->pid, (unsigned)b->pid);
		h.status = RMCA_ERR_PROTOCOL;
	} else {
		cp.seg = seg_attach(m, p->memfd);
		if (!cp.seg)
			h.status = RMCA_ERR_PROTOCOL;
	}
	if (!h.status)
		mine = our_flags(m, b, &cp.pidfd, &keyfd);
	h.flags = mine;
	theirs = p->flags;
	fd = p->fd;
	p->fd = -1; /* ours now */
	r = send_hello(fd, &h, &keyfd, 1);
	if (!r && h.status)
		r = h.status;
	if (!r) {
		r = conn_make(m, fd, &cp, mine, theirs, p->keyfd, a->cookie,
			      out);
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

int rmca_shm_connect(struct rmca_module *mod, const struct rmca_conn_args *a,
		     struct rmca_conn **out)
{
	struct shm_module *m = rmca_container_of(mod, struct shm_module, base);
	struct shm_addr_blob b;
	long long deadline = -1;
	struct shm_conn *c;
	char why[128];
	int r;

	if (!a->token)
		return RMCA_ERR_INVALID;
	if (!rmca_shm_addr_check(mod, a->peer_addr, a->peer_addr_len, why,
				 sizeof(why))) {
		shm_log(m, RMCA_LOG_ERROR, "peer address refused: %s", why);
		return RMCA_ERR_UNREACHABLE;
	}
	memcpy(&b, a->peer_addr, sizeof(b));
	if (a->timeout_ms >= 0)
		deadline = rmca_now_ms() + a->timeout_ms;
	r = a->active ? active(m, a, &b, deadline, &c)
		      : passive(m, a, &b, deadline, &c);
	if (!r)
		*out = shm_conn_base(c);
	return r;
}
