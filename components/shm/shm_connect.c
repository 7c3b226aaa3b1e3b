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
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"

#define SHM_HELLO_MAGIC 0x4f4c4548u /* "HELO" */
#define SHM_ACK_MAGIC	0x4b434148u /* "HACK" */

struct shm_hello {
	uint32_t magic;
	uint32_t version;
	uint64_t token;
	int32_t status; /* ack: 0, or why the passive side refused */
	uint32_t zero;
};

struct shm_pending {
	struct shm_list link;
	int fd;
	int memfd;
	uint64_t token;
	pid_t pid;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for fd; 1 ready, RMCA_ERR_TIMEOUT past the deadline (-1: never). */
static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = {.fd = fd, .events = events};

	for (;;) {
		int ms = -1, r;

		if (deadline >= 0) {
			long long left = deadline - now_ms();

			if (left <= 0)
				return RMCA_ERR_TIMEOUT;
			ms = left > 1000000 ? 1000000 : (int)left;
		}
		r = poll(&p, 1, ms);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return RMCA_ERR_CONNECTION;
	}
}

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
	shm_list_del(&p->link);
	m->npending--;
	if (p->fd >= 0)
		close(p->fd);
	if (p->memfd >= 0)
		close(p->memfd);
	free(p);
}

void rmca_shm_pending_free_all(struct shm_module *m)
{
	struct shm_pending *p;

	while ((p = shm_first(&m->pending, struct shm_pending, link)))
		pending_free(m, p);
}

static int write_all(int fd, const void *buf, size_t len, long long deadline)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return RMCA_ERR_CONNECTION;
		n = wait_fd(fd, POLLOUT, deadline);
		if (n < 0)
			return (int)n;
	}
	return 0;
}

/* Read one hello (and the descriptor that may come with it). */
static int read_hello(int fd, struct shm_hello *h, int *memfd,
		      long long deadline)
{
	char *p = (char *)h;
	size_t got = 0;

	*memfd = -1;
	while (got < sizeof(*h)) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int))];
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
			r = wait_fd(fd, POLLIN, deadline);
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
			/* One descriptor, once: anything more is closed. */
			for (size_t i = 0;
			     i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			     i++) {
				memcpy(&f, CMSG_DATA(c) + i * sizeof(int),
				       sizeof(f));
				if (*memfd < 0)
					*memfd = f;
				else
					close(f);
			}
		}
		got += (size_t)n;
		continue;
	fail:
		if (*memfd >= 0)
			close(*memfd);
		*memfd = -1;
		return r;
	}
	return 0;
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
		if (deadline >= 0 && now_ms() >= deadline) {
			close(fd);
			return RMCA_ERR_TIMEOUT;
		}
		r = poll(NULL, 0, 1);
		(void)r;
	}
	*out = fd;
	return 0;
}

static int active(struct shm_module *m, const struct rmca_conn_args *a,
		  const struct shm_addr_blob *b, long long deadline,
		  struct rmca_conn **out)
{
	struct shm_hello h = {.magic = SHM_HELLO_MAGIC,
			      .version = SHM_PROTO_VERSION,
			      .token = a->token};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cm.b,
			     .msg_controllen = sizeof(cm.b)};
	struct cmsghdr *c;
	struct shm_seg *s;
	int fd, memfd, junk, r;
	ssize_t n;

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
	s = seg_create(&memfd);
	if (!s) {
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	memset(cm.b, 0, sizeof(cm.b));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &memfd, sizeof(int));
	do {
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	close(memfd);
	r = n == (ssize_t)sizeof(h) ? 0 : RMCA_ERR_CONNECTION;
	if (!r)
		r = read_hello(fd, &h, &junk, deadline);
	if (!r && junk >= 0) {
		close(junk);
		r = RMCA_ERR_PROTOCOL;
	}
	if (!r && (h.magic != SHM_ACK_MAGIC || h.token != a->token))
		r = RMCA_ERR_PROTOCOL;
	if (!r && h.status)
		r = h.status == RMCA_ERR_UNREACHABLE ? RMCA_ERR_UNREACHABLE
						     : RMCA_ERR_PROTOCOL;
	if (!r)
		r = rmca_shm_conn_create(m, fd, s, 0, (pid_t)b->pid, a->cookie,
					 out);
	if (r) {
		shm_log(m, RMCA_LOG_INFO, "connect to pid %u failed (%d)",
			(unsigned)b->pid, r);
		munmap(s, sizeof(*s));
		close(fd);
	}
	return r;
}

/* Accept one socket and read its hello into the pending list. */
static int accept_one(struct shm_module *m, long long deadline)
{
	struct shm_pending *p, *q;
	struct shm_hello h;
	int fd, memfd, r;

	r = wait_fd(m->lfd, POLLIN, deadline);
	if (r < 0)
		return r;
	fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return 0;
	/* A hello follows the connect at once; a silent socket gets a
	 * second at most. */
	r = read_hello(fd, &h, &memfd,
		       deadline >= 0 && deadline < now_ms() + 1000
			       ? deadline
			       : now_ms() + 1000);
	if (r || h.magic != SHM_HELLO_MAGIC || h.version != SHM_PROTO_VERSION ||
	    !h.token || memfd < 0) {
		shm_log(m, RMCA_LOG_ERROR, "closing connection: %s",
			r ? "no hello" : "bad hello");
		if (memfd >= 0)
			close(memfd);
		close(fd);
		return 0;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(memfd);
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	p->fd = fd;
	p->memfd = memfd;
	p->token = h.token;
	p->pid = peer_pid(fd);
	/* A newer hello with the same token supersedes; the oldest goes
	 * when too many wait. */
	for (struct shm_list *l = m->pending.next; l != &m->pending;
	     l = l->next) {
		q = shm_entry(l, struct shm_pending, link);
		if (q->token == h.token) {
			pending_free(m, q);
			break;
		}
	}
	if (m->npending >= SHM_MAX_PENDING)
		pending_free(m,
			     shm_first(&m->pending, struct shm_pending, link));
	shm_list_add_tail(&m->pending, &p->link);
	m->npending++;
	return 0;
}

static int passive(struct shm_module *m, const struct rmca_conn_args *a,
		   const struct shm_addr_blob *b, long long deadline,
		   struct rmca_conn **out)
{
	struct shm_hello h = {.magic = SHM_ACK_MAGIC,
			      .version = SHM_PROTO_VERSION,
			      .token = a->token};
	struct shm_pending *p = NULL;
	struct shm_seg *s = NULL;
	int fd, r;

	while (!p) {
		for (struct shm_list *l = m->pending.next; l != &m->pending;
		     l = l->next) {
			struct shm_pending *q =
				shm_entry(l, struct shm_pending, link);

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
		s = seg_attach(m, p->memfd);
		if (!s)
			h.status = RMCA_ERR_PROTOCOL;
	}
	fd = p->fd;
	p->fd = -1; /* ours now */
	pending_free(m, p);
	r = write_all(fd, &h, sizeof(h), deadline);
	if (!r && h.status)
		r = h.status;
	if (!r)
		r = rmca_shm_conn_create(m, fd, s, 1, (pid_t)b->pid, a->cookie,
					 out);
	if (!r)
		return 0;
	close(fd);
	if (s)
		munmap(s, sizeof(*s));
	return h.status ? h.status : RMCA_ERR_CONNECTION;
}

int rmca_shm_connect(struct rmca_module *mod, const struct rmca_conn_args *a,
		     struct rmca_conn **out)
{
	struct shm_module *m = shm_entry(mod, struct shm_module, base);
	struct shm_addr_blob b;
	long long deadline = -1;
	char why[128];

	if (!a->token)
		return RMCA_ERR_INVALID;
	if (!rmca_shm_addr_check(m, a->peer_addr, a->peer_addr_len, why,
				 sizeof(why))) {
		shm_log(m, RMCA_LOG_ERROR, "peer address refused: %s", why);
		return RMCA_ERR_UNREACHABLE;
	}
	memcpy(&b, a->peer_addr, sizeof(b));
	if (a->timeout_ms >= 0)
		deadline = now_ms() + a->timeout_ms;
	return a->active ? active(m, a, &b, deadline, out)
			 : passive(m, a, &b, deadline, out);
}
