// SPDX-License-Identifier: BSD-3-Clause
/*
 * Jobs: the ranks of processes that a PMIx launcher started together, and
 * the one endpoint between any two of them, made on first use.
 *
 * rmca_job_join opens a job listener (a bootstrap socket on an ephemeral
 * port), publishes how to reach it (port, host identity, addresses) through
 * the launcher, and fences with data collection. rmca_job_ep(r) dials r's
 * job listener and sends a request naming the job and both ranks; r answers
 * inside whatever rmca call it is in (its listener sits in the context's
 * event loop), and on GO both sides run the ordinary bootstrap handshake on
 * that connection. r keeps the endpoint it made for rank q: its own
 * rmca_job_ep(q) returns it. A rank's endpoint to itself is the core's
 * self endpoint (self.c): nothing is dialled.
 *
 * r serves a request as a listener serves an incoming connection: reading
 * the request, answering it and each step of the handshake that follows
 * (ep.c's handshake set) run from the socket's callback or the progress
 * loop, never waiting, each against its own deadline. A rank that stops
 * halfway holds nothing but its own handshake; the other ranks' requests
 * and the caller of rmca_poll go on meanwhile. What waits is the asking
 * side's rmca_job_ep, the user's own call.
 *
 * Anyone can connect to a job listener; only the job's ranks can read what
 * the launcher hands out. Each rank publishes a random key with its
 * address, and a request must carry the key of the rank it asks: a client
 * that merely found the port (or guessed the job's name) is refused before
 * any handshake starts, and cannot pose as a rank.
 *
 * Two ranks asking each other at once: the connection the lower rank
 * initiated wins. The higher rank serves the lower one's request while it
 * waits; the lower one answers the higher one's MINE ("mine wins, wait for
 * it"), and the higher one takes the endpoint its listener made. A rank
 * serving q's request does not ask q itself until that handshake ended (it
 * takes its endpoint, or asks if it failed), so that a pair never makes two.
 * Since serving never waits, a rank asking another still serves every
 * request that comes meanwhile, and no ring of ranks can wait on itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rmca/support/sockio.h>

#include "bootstrap.h"
#include "ep.h"
#include "job.h"
#include "self.h"

#define JOB_MAGIC     0x4a434d52u /* "RMCJ" little-endian */
#define JOB_VERSION   2
#define JOB_NSLEN     256 /* PMIX_MAX_NSLEN + 1 */
#define JOB_KEYLEN    16  /* bytes of a rank's key */
#define JOB_REQ_LEN   (16 + JOB_KEYLEN + JOB_NSLEN)
#define JOB_ANS_LEN   8
#define JOB_INFO_MAX  2048
#define JOB_MAX_ADDRS 16
/* a rank publishes under this, numbered by the joins of its process */
#define JOB_KEY "rmca.job.v2.%u"
#define JOB_SLICE_MS                                                           \
	5 /* a job wait checks the rest of the context this often */

enum job_kind {
	JOB_REQ = 1,	/* u32 from, u32 to, key of to, nspace */
	JOB_GO = 2,	/* served: the bootstrap handshake follows */
	JOB_MINE = 3,	/* both asked: mine wins, expect my connection */
	JOB_HAVE = 4,	/* I hold a live endpoint to you: retry later */
	JOB_REFUSE = 5, /* not for this job or rank */
};

/* How to reach a rank, as it published it. */
struct job_info {
	bool valid;
	int port;
	char boot_id[40];
	unsigned long long netns;
	int naddrs;
	char addrs[JOB_MAX_ADDRS][INET6_ADDRSTRLEN];
	uint8_t key[JOB_KEYLEN];
};

struct job_peer {
	struct rmca_ep
		*ep; /* checked against ctx->eps: the user may close it */
	uint64_t token;
	struct job_info info;
	bool serving; /* the handshake of its request is on (job->hs) */
	unsigned served_failed; /* such handshakes that made no endpoint */
};

/* An incoming job connection whose request is not answered yet. */
struct job_pending {
	struct rmca_list link; /* job->pending */
	struct rmca_job *job;
	int fd;
	int64_t deadline;
	size_t have;
	uint8_t buf[JOB_REQ_LEN];
	uint32_t from;
};

struct rmca_job {
	struct rmca_context *ctx;
	struct rmca_pmix *pmix;
	char nspace[JOB_NSLEN];
	uint32_t rank, size;
	char key_name[32];	 /* what it publishes under (JOB_KEY) */
	uint8_t key[JOB_KEYLEN]; /* published: a request to us carries it */
	int lfd, port;
	int spare_fd;	    /* given up to shed a peer when out of fds */
	int64_t rest_until; /* out of fds without a spare: lfd unwatched */
	int64_t shed_said;  /* when that may be logged again */
	struct job_peer *peers;
	struct rmca_list pending; /* newest first: the oldest is its last */
	unsigned npending;	  /* at most pending_max() */
	/* the handshakes of requests served: one per rank at most */
	struct rmca_listener *hs;
	int64_t log_window; /* refusal lines: ten a second at most */
	unsigned log_lines;
	/* lines held back this second: refusals, and connections closed
	 * for newer ones */
	unsigned log_refused, log_evicted;
	int64_t active_to; /* rank we ask (dial, await its answer), or -1 */
};

/*
 * PMIx keys belong to the process, so each context of a process that joins
 * publishes under its own key, numbered in the order of the joins: the
 * n-th context a rank joins reaches the n-th context of every other rank
 * (joins are collective, made in the same order everywhere).
 */
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned job_joins;

static const struct rmca_core_ops *ops(struct rmca_job *job)
{
	return job->ctx->core.ops;
}

/* ---- the request and its answer ---- */

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void header(uint8_t *p, enum job_kind kind)
{
	put32(p, JOB_MAGIC);
	p[4] = JOB_VERSION;
	p[5] = 0;
	p[6] = (uint8_t)kind;
	p[7] = 0;
}

/* The kind of a message, or -1 when it is no job message of this version. */
static int header_kind(const uint8_t *p)
{
	if (get32(p) != JOB_MAGIC || p[4] != JOB_VERSION || p[5] || p[7])
		return -1;
	return p[6];
}

/* The answer to a request: the first bytes this side sends on the
 * connection, so they fit in its empty send buffer and never wait. */
static int answer(int fd, enum job_kind kind)
{
	uint8_t a[JOB_ANS_LEN];

	header(a, kind);
	return send(fd, a, sizeof(a), MSG_NOSIGNAL | MSG_DONTWAIT) ==
			       (ssize_t)sizeof(a)
		       ? 0
		       : RMCA_ERR_CONNECTION;
}

/* ---- endpoints by rank ---- */

static struct rmca_ep *peer_ep(struct rmca_job *job, uint32_t r)
{
	struct job_peer *p = &job->peers[r];
	struct rmca_list *l;

	if (!p->ep)
		return NULL;
	rmca_list_for_each(l, &job->ctx->eps)
	{
		struct rmca_ep *ep = rmca_list_entry(l, struct rmca_ep, link);

		if (ep == p->ep && ep->token == p->token)
			return ep;
	}
	p->ep = NULL; /* closed by the user: the next use makes a new one */
	return NULL;
}

static void peer_set(struct rmca_job *job, uint32_t r, struct rmca_ep *ep,
		     const char *how)
{
	job->peers[r].ep = ep;
	job->peers[r].token = ep->token;
	rmca_log(1, "job: rank %u <-> rank %u over %s %s (%s)", job->rank, r,
		 ep->attr.transport, ep->attr.device, how);
}

/* ---- the listener side ---- */

/* The job's tick runs every pass while it has something to time: waiting
 * connections, held-back log lines to count, a rest to end. */
static void tick_update(struct rmca_job *job)
{
	bool on = !rmca_list_empty(&job->pending) || job->log_refused ||
		  job->log_evicted || job->rest_until;

	rmca_handshakes_tick(job->hs, on);
}

static void pending_drop(struct rmca_job *job, struct job_pending *pd,
			 bool close_fd)
{
	rmca_list_del(&pd->link);
	job->npending--;
	ops(job)->fd_del(&job->ctx->core, pd->fd);
	if (close_fd)
		close(pd->fd);
	free(pd);
	if (rmca_list_empty(&job->pending))
		tick_update(job);
}

/* The end of a served request's handshake (ep.c, from the event loop). */
static void served(void *owner, uintptr_t tag, int status, struct rmca_ep *ep)
{
	struct rmca_job *job = owner;
	uint32_t from = (uint32_t)tag;

	job->peers[from].serving = false;
	if (!ep) {
		job->peers[from].served_failed++;
		rmca_log(0,
			 "job: rank %u could not connect to this rank (%u): %s",
			 from, job->rank, rmca_strerror(status));
		return;
	}
	peer_set(job, from, ep, "its request");
}

/* GO, and the passive handshake for pd's rank starts: the event loop runs
 * it (served() hears how it ended). */
static void serve(struct rmca_job *job, struct job_pending *pd)
{
	uint32_t from = pd->from;
	int fd = pd->fd, rc;

	if (answer(fd, JOB_GO)) {
		pending_drop(job, pd, true);
		job->peers[from].served_failed++;
		return;
	}
	pending_drop(job, pd, false);
	rc = rmca_handshakes_add(job->hs, fd, from);
	if (rc) {
		job->peers[from].served_failed++;
		rmca_log(0,
			 "job: rank %u could not connect to this rank (%u): %s",
			 from, job->rank, rmca_strerror(rc));
		return;
	}
	job->peers[from].serving = true;
}

/* Compared in full whatever differs: the time taken tells nothing. */
static bool key_equal(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;

	for (int i = 0; i < JOB_KEYLEN; i++)
		d |= a[i] ^ b[i];
	return !d;
}

static bool request_valid(struct rmca_job *job, struct job_pending *pd,
			  char *why, size_t why_len)
{
	const uint8_t *b = pd->buf, *ns = b + 16 + JOB_KEYLEN;
	uint32_t to = get32(b + 12);

	if (header_kind(b) != JOB_REQ) {
		snprintf(why, why_len, "not a job request of version %d",
			 JOB_VERSION);
		return false;
	}
	pd->from = get32(b + 8);
	if (!memchr(ns, '\0', JOB_NSLEN) ||
	    strcmp((const char *)ns, job->nspace)) {
		snprintf(why, why_len, "another job");
		return false;
	}
	if (to != job->rank || pd->from >= job->size) {
		snprintf(why, why_len, "rank %u asked for rank %u", pd->from,
			 to);
		return false;
	}
	if (pd->from == job->rank) {
		snprintf(why, why_len, "claims to be this rank");
		return false;
	}
	if (!key_equal(b + 16, job->key)) {
		snprintf(why, why_len,
			 "claims to be rank %u without this rank's key",
			 pd->from);
		return false;
	}
	return true;
}

/* Lines about refused clients: ten a second at most, so that a client
 * cannot flood the log; how many more is said once the second is over. */
static void refusal_log_window(struct rmca_job *job, int64_t now)
{
	if (now < job->log_window + 1000)
		return;
	if (job->log_refused)
		rmca_log(0,
			 "job: %u more refused connections not logged (ten a "
			 "second at most)",
			 job->log_refused);
	if (job->log_evicted)
		rmca_log(0,
			 "job: %u more connections closed for newer ones not "
			 "logged (ten a second at most)",
			 job->log_evicted);
	job->log_window = now;
	job->log_lines = 0;
	job->log_refused = 0;
	job->log_evicted = 0;
}

/* Whether a line about a refused connection (or one closed for a newer
 * one: evicted) may be logged now. */
static bool refusal_log_allowed(struct rmca_job *job, bool evicted)
{
	refusal_log_window(job, rmca_now_ms());
	if (job->log_lines < 10) {
		job->log_lines++;
		return true;
	}
	if (evicted)
		job->log_evicted++;
	else
		job->log_refused++;
	rmca_handshakes_tick(job->hs, true); /* says their count in time */
	return false;
}

/* A whole request is in: refuse it, answer it or serve it. */
static void decide(struct rmca_job *job, struct job_pending *pd)
{
	char why[128], host[64], who[96];
	struct rmca_ep *ep;

	if (!request_valid(job, pd, why, sizeof(why))) {
		rmca_peer_name(pd->fd, host, sizeof(host), who, sizeof(who));
		if (refusal_log_allowed(job, false))
			rmca_log(0, "job: connection from %s refused: %s", who,
				 why);
		answer(pd->fd, JOB_REFUSE);
		pending_drop(job, pd, true);
		return;
	}
	ep = peer_ep(job, pd->from);
	if (ep && ep->failed) {
		/* The peer lost its side and asks again: the failed endpoint
		 * stays the user's to close, the rank gets a new one. */
		job->peers[pd->from].ep = NULL;
		ep = NULL;
	}
	if (ep) {
		answer(pd->fd, JOB_HAVE);
		pending_drop(job, pd, true);
		return;
	}
	if (job->active_to == pd->from && job->rank < pd->from) {
		rmca_log(2, "job: rank %u asked while this rank asked it: this rank's connection wins",
			 pd->from);
		answer(pd->fd, JOB_MINE);
		pending_drop(job, pd, true);
		return;
	}
	if (job->peers[pd->from].serving) {
		/* A rank asks once at a time: it gave the last handshake up
		 * (or never meant it), this request replaces it. */
		rmca_log(1,
			 "job: rank %u asked again: the handshake of its "
			 "last request is dropped",
			 pd->from);
		rmca_handshakes_cancel(job->hs, pd->from);
		job->peers[pd->from].serving = false;
	}
	serve(job, pd);
}

static void pending_cb(void *arg, uint32_t events)
{
	struct job_pending *pd = arg;
	struct rmca_job *job = pd->job;
	ssize_t n;

	n = recv(pd->fd, pd->buf + pd->have, sizeof(pd->buf) - pd->have,
		 MSG_DONTWAIT);
	if (n < 0 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		if (pd->have)
			rmca_log(1,
				 "job: a connection closed after %zu bytes of "
				 "its request",
				 pd->have);
		pending_drop(job, pd, true);
		return;
	}
	pd->have += (size_t)n;
	if (pd->have == sizeof(pd->buf))
		decide(job, pd);
}

/* Half-sent requests have RMCA_connect_timeout: checked every pass of the
 * event loop while there are some (the handshake set's tick), as is the
 * end of a rest. */
static void pending_expire(struct rmca_job *job, int64_t now)
{
	struct rmca_list *l, *tmp;

	/* the count of lines held back is said once their second is over */
	if (job->log_refused || job->log_evicted)
		refusal_log_window(job, now);
	if (job->rest_until && now >= job->rest_until &&
	    !ops(job)->fd_mod(&job->ctx->core, job->lfd, EPOLLIN))
		job->rest_until = 0;
	tick_update(job);

	rmca_list_for_each_safe(l, tmp, &job->pending)
	{
		struct job_pending *pd =
			rmca_list_entry(l, struct job_pending, link);

		if (now >= pd->deadline) {
			rmca_log(1,
				 "job: a connection sent no request within %d "
				 "ms (RMCA_connect_timeout)",
				 job->ctx->connect_timeout_ms);
			pending_drop(job, pd, true);
		}
	}
}

/* Connections waiting for their request: every rank asks at most once at
 * a time, so more than twice the ranks (and some) are not all ranks. */
static unsigned pending_max(const struct rmca_job *job)
{
	return 2 * job->size + 16;
}

/*
 * At the bound, the connection that gives way to a new one: the oldest
 * (the list's last), read once more first, so that a request already in
 * its socket is decided, not lost. Every waiting connection has not sent
 * its whole request (a whole one is decided as soon as it is in), so only
 * the silent and the slow give way, as sshd's MaxStartups and a SYN
 * backlog let half-open peers go first. NULL: a slot came free (the one
 * read was decided, or had closed); so the next one need not be read.
 * Not shared with ep.c's listener_victim: that one picks among states
 * (silent first, then half-done handshakes, never endpoints) of its own
 * entries, stepping each its own way; here there is one kind, and the
 * oldest is at hand. A common helper would need those as callbacks to
 * save the three lines this is.
 */
static struct job_pending *pending_victim(struct rmca_job *job)
{
	struct job_pending *pd;
	unsigned n = job->npending;

	if (rmca_list_empty(&job->pending))
		return NULL;
	pd = rmca_list_entry(job->pending.prev, struct job_pending, link);
	pending_cb(pd, EPOLLIN);
	return job->npending < n ? NULL : pd;
}

/* The victim gives way to a connection just accepted: said (rate-limited
 * with the refusals), and its socket closed. */
static void pending_evict(struct rmca_job *job, struct job_pending *pd)
{
	char host[64], who[96];

	if (refusal_log_allowed(job, true)) {
		rmca_peer_name(pd->fd, host, sizeof(host), who, sizeof(who));
		rmca_log(0,
			 "job: no request from %s after %zu bytes, closed for "
			 "a newer connection: all %u request slots taken (2 "
			 "per rank + 16)",
			 who, pd->have, pending_max(job));
	}
	pending_drop(job, pd, true);
}

/* Out of descriptors: shed a waiting peer with the spare (true: try
 * again), or rest a second with lfd unwatched (ep.c's rmca_listen_shed,
 * as any listener). */
static bool job_shed(struct rmca_job *job, int err)
{
	if (rmca_listen_shed(job->lfd, &job->spare_fd, &job->shed_said,
			     "job listener", job->port, err))
		return true;
	if (!ops(job)->fd_mod(&job->ctx->core, job->lfd, 0)) {
		job->rest_until = rmca_now_ms() + 1000;
		tick_update(job);
	}
	return false;
}

/*
 * New connections, each kept until it sent its request. At the bound, one
 * new connection per call (thus per pass of the event loop) takes the slot
 * of a victim, so that clients that connect and say nothing (or drip a
 * request) cannot keep the ranks out until RMCA_connect_timeout: a
 * newcomer outlives pending_max() - 1 later ones before its turn to give
 * way comes, and its request, if in by then, is read first. Bounded still:
 * never more than pending_max() connections, one eviction a pass; the
 * others wait in the kernel's backlog meanwhile. Out of descriptors, as a
 * listener of rmca_listen: each waiting peer is closed with the spare
 * descriptor given up for it, or without one lfd rests a second, so that
 * a socket accept4 cannot empty does not keep the event loop spinning.
 */
static void listener_cb(void *arg, uint32_t events)
{
	struct rmca_job *job = arg;
	bool evicted = false;

	pending_expire(job, rmca_now_ms());
	for (;;) {
		struct job_pending *pd, *victim = NULL;
		int fd, one = 1;

		if (job->npending >= pending_max(job)) {
			if (evicted)
				return; /* still readable: the next pass */
			victim = pending_victim(job);
		}
		fd = accept4(job->lfd, NULL, NULL,
			     SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if ((errno == EMFILE || errno == ENFILE ||
			     errno == ENOBUFS || errno == ENOMEM) &&
			    job_shed(job, errno))
				continue;
			return;
		}
		pd = calloc(1, sizeof(*pd));
		if (!pd) {
			rmca_log(1, "job: out of memory, a connection refused");
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pd->job = job;
		pd->fd = fd;
		pd->deadline = rmca_now_ms() + job->ctx->connect_timeout_ms;
		if (ops(job)->fd_add(&job->ctx->core, fd, EPOLLIN, pending_cb,
				     pd)) {
			close(fd);
			free(pd);
			continue;
		}
		if (victim) {
			pending_evict(job, victim);
			evicted = true;
		}
		rmca_list_add(&job->pending, &pd->link);
		job->npending++;
		rmca_handshakes_tick(job->hs, true);
	}
}

static void pending_tick(void *owner, int64_t now)
{
	pending_expire(owner, now);
}

/*
 * Wait until fd has events or the deadline passes, progressing the
 * context: 1 ready, 0 not. With fd < 0, one slice (1 unless the deadline
 * has passed). The job's own sockets (requests, the bootstrap sockets of
 * the handshakes it serves) wake us at once; the
 * rest of the context is progressed every JOB_SLICE_MS (its epoll set also
 * holds the completion queue, readable for as long as the user has not
 * polled, which would make waiting on it a busy loop).
 */
static int job_wait(struct rmca_job *job, int fd, short events,
		    int64_t deadline)
{
	for (;;) {
		struct pollfd pfd[64];
		struct rmca_list *l;
		int n = 0, slice, ready = 0;

		if (fd >= 0)
			pfd[n++] = (struct pollfd){.fd = fd, .events = events};
		/* resting, lfd is readable and must wait */
		if (!job->rest_until)
			pfd[n++] = (struct pollfd){.fd = job->lfd,
						   .events = POLLIN};
		n += rmca_handshakes_pollfds(job->hs, pfd + n, 64 - n);
		rmca_list_for_each(l, &job->pending)
		{
			struct job_pending *pd =
				rmca_list_entry(l, struct job_pending, link);

			if (n == 64)
				break;
			pfd[n++] =
				(struct pollfd){.fd = pd->fd, .events = POLLIN};
		}
		slice = rmca_ms_left(deadline);
		poll(pfd, (nfds_t)n,
		     slice < JOB_SLICE_MS ? slice : JOB_SLICE_MS);
		if (fd >= 0 && pfd[0].revents)
			ready = 1;
		rmca_progress(job->ctx, 0);
		if (ready)
			return 1;
		if (rmca_now_ms() >= deadline)
			return 0;
		if (fd < 0)
			return 1;
	}
}

/* Progress until the time given. */
static void job_idle(struct rmca_job *job, int64_t until)
{
	while (job_wait(job, -1, 0, until))
		;
}

/* ---- the connecting side ---- */

static int key_parse(const char *hex, uint8_t *key)
{
	if (strlen(hex) != 2 * JOB_KEYLEN)
		return RMCA_ERR_PROTOCOL;
	for (int i = 0; i < JOB_KEYLEN; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return RMCA_ERR_PROTOCOL;
		key[i] = (uint8_t)v;
	}
	return 0;
}

static int info_parse(const char *s, struct job_info *in)
{
	char addrs[JOB_INFO_MAX], key[2 * JOB_KEYLEN + 1], *save = NULL, *a;
	unsigned version;
	int n = 0;

	memset(in, 0, sizeof(*in));
	if (strlen(s) >= sizeof(addrs) ||
	    sscanf(s, "%u %d %39s %llu %32s %2047s%n", &version, &in->port,
		   in->boot_id, &in->netns, key, addrs, &n) != 6 ||
	    version != 2 || s[n] || in->port <= 0 || in->port > 65535 ||
	    key_parse(key, in->key))
		return RMCA_ERR_PROTOCOL;
	if (!strcmp(in->boot_id, "-"))
		in->boot_id[0] = '\0';
	for (a = strtok_r(addrs, ",", &save); a && in->naddrs < JOB_MAX_ADDRS;
	     a = strtok_r(NULL, ",", &save)) {
		struct in6_addr tmp;

		if (strlen(a) < INET6_ADDRSTRLEN &&
		    (inet_pton(AF_INET, a, &tmp) == 1 ||
		     inet_pton(AF_INET6, a, &tmp) == 1))
			snprintf(in->addrs[in->naddrs++], INET6_ADDRSTRLEN,
				 "%s", a);
	}
	in->valid = true;
	return 0;
}

static int peer_info(struct rmca_job *job, uint32_t r, struct job_info **out)
{
	struct job_info *in = &job->peers[r].info;
	char s[JOB_INFO_MAX];
	int rc;

	if (!in->valid) {
		rc = rmca_pmix_lookup(job->pmix, r, job->key_name, s,
				      sizeof(s));
		if (!rc)
			rc = info_parse(s, in);
		if (rc) {
			rmca_log(0,
				 "job: rank %u published no usable address "
				 "(%s): has it joined?",
				 r, rmca_strerror(rc));
			return rc == RMCA_ERR_NOT_FOUND ? RMCA_ERR_UNREACHABLE
							: rc;
		}
	}
	*out = in;
	return 0;
}

/* Connect to one address by the deadline, progressing while waiting. */
static int dial_one(struct rmca_job *job, const char *addr, int port,
		    int64_t deadline, int *out)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
	struct addrinfo *ai;
	char service[8];
	socklen_t el;
	int fd, err = 0, one = 1;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(addr, service, &hints, &ai))
		return RMCA_ERR_UNREACHABLE;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return RMCA_ERR_NO_MEMORY;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		err = errno;
	freeaddrinfo(ai);
	if (!err) {
		if (!job_wait(job, fd, POLLOUT, deadline)) {
			close(fd);
			return RMCA_ERR_TIMEOUT;
		}
		el = sizeof(err);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el))
			err = errno;
	}
	if (err) {
		rmca_log(1, "job: connect [%s]:%d: %s", addr, port,
			 strerror(err));
		close(fd);
		return err == ECONNREFUSED || err == ECONNRESET
			       ? RMCA_ERR_CONNECTION
			       : RMCA_ERR_UNREACHABLE;
	}
	*out = fd;
	return 0;
}

/* The rank's listener: over loopback when it is on this host (same boot
 * and network namespace), else at the addresses it published, in order. */
static int dial(struct rmca_job *job, uint32_t r, const struct job_info *in,
		int64_t deadline, int *out)
{
	bool local = in->boot_id[0] &&
		     !strcmp(in->boot_id, job->ctx->boot_id) &&
		     in->netns == job->ctx->netns;
	int rc = RMCA_ERR_UNREACHABLE, first = RMCA_ERR_UNREACHABLE;

	if (local) {
		rc = dial_one(job, "127.0.0.1", in->port, deadline, out);
		if (rc && rc != RMCA_ERR_TIMEOUT)
			rc = dial_one(job, "::1", in->port, deadline, out);
		if (!rc || rc == RMCA_ERR_TIMEOUT)
			return rc;
		first = rc;
	}
	for (int i = 0; i < in->naddrs; i++) {
		rc = dial_one(job, in->addrs[i], in->port, deadline, out);
		if (!rc || rc == RMCA_ERR_TIMEOUT)
			return rc;
		if (first == RMCA_ERR_UNREACHABLE)
			first = rc;
	}
	/* refused everywhere: nobody listens there any more */
	rmca_log(0, "job: rank %u cannot be reached: %s", r,
		 rmca_strerror(first));
	return first;
}

/*
 * Wait for the endpoint r's request makes: this rank serves it already, or
 * r said its connection wins. RMCA_ERR_AGAIN when a handshake of r's that
 * this rank served ends without one meanwhile: then this rank asks.
 */
static int await_peer(struct rmca_job *job, uint32_t r, int64_t deadline,
		      struct rmca_ep **out)
{
	unsigned failed = job->peers[r].served_failed;

	while (!(*out = peer_ep(job, r))) {
		if (job->peers[r].served_failed != failed)
			return RMCA_ERR_AGAIN;
		if (!job_wait(job, -1, 0, deadline) &&
		    !(*out = peer_ep(job, r))) {
			rmca_log(0,
				 "job: rank %u connects to this rank, and did "
				 "not in time",
				 r);
			return RMCA_ERR_TIMEOUT;
		}
	}
	return 0;
}

static int job_connect(struct rmca_job *job, uint32_t r, int64_t deadline,
		       struct rmca_ep **out)
{
	struct job_info *in;
	uint8_t req[JOB_REQ_LEN], ans[JOB_ANS_LEN];
	int rc;

	rc = peer_info(job, r, &in);
	if (rc)
		return rc;
	memset(req, 0, sizeof(req));
	header(req, JOB_REQ);
	put32(req + 8, job->rank);
	put32(req + 12, r);
	memcpy(req + 16, in->key, JOB_KEYLEN);
	snprintf((char *)req + 16 + JOB_KEYLEN, JOB_NSLEN, "%s", job->nspace);
	for (;;) {
		size_t got = 0;
		int fd;

		if ((*out = peer_ep(job, r)))
			return 0;
		if (job->peers[r].serving) {
			/* r asked first: its handshake makes the endpoint */
			rc = await_peer(job, r, deadline, out);
			if (rc != RMCA_ERR_AGAIN)
				return rc;
			continue;
		}
		/* Asking from the dial on: a request of r's that comes while
		 * we dial is told ours wins (if we are the lower rank), not
		 * served, so that r does not also serve ours. */
		job->active_to = r;
		rc = dial(job, r, in, deadline, &fd);
		if (rc)
			return rc;
		if (peer_ep(job, r) || job->peers[r].serving) {
			/* its request came while we dialled: it is served */
			close(fd);
			job->active_to = -1;
			continue;
		}
		rc = rmca_send_full(fd, req, sizeof(req), deadline);
		while (!rc && got < sizeof(ans)) {
			ssize_t n;

			/* its request was served while ours waited */
			if ((*out = peer_ep(job, r))) {
				close(fd);
				job->active_to = -1;
				return 0;
			}
			if (!job_wait(job, fd, POLLIN, deadline)) {
				rc = RMCA_ERR_TIMEOUT;
				break;
			}
			n = recv(fd, ans + got, sizeof(ans) - got,
				 MSG_DONTWAIT);
			if (n > 0)
				got += (size_t)n;
			else if (n == 0 || (errno != EAGAIN && errno != EINTR &&
					    errno != EWOULDBLOCK))
				rc = RMCA_ERR_CONNECTION;
		}
		if (rc == RMCA_ERR_TIMEOUT) {
			close(fd);
			job->active_to = -1;
			rmca_log(0,
				 "job: rank %u did not answer in time (is it "
				 "calling rmca?)",
				 r);
			return rc;
		}
		if (rc) {
			/* closed before answering: dropped, or the rank died
			 * (the next dial tells) */
			close(fd);
			job->active_to = -1;
			job_idle(job, rmca_now_ms() + 10);
			if (rmca_now_ms() >= deadline)
				return RMCA_ERR_TIMEOUT;
			continue;
		}
		switch (header_kind(ans)) {
		case JOB_GO:
			rc = rmca_ep_connect_fd(job->ctx, fd,
						rmca_ms_left(deadline), out);
			job->active_to = -1;
			if (!rc)
				peer_set(job, r, *out, "this rank's request");
			return rc;
		case JOB_MINE:
			close(fd);
			job->active_to = -1;
			rc = await_peer(job, r, deadline, out);
			if (rc != RMCA_ERR_AGAIN)
				return rc;
			continue;
		case JOB_HAVE:
			/* its endpoint to us has not noticed ours is gone */
			close(fd);
			job->active_to = -1;
			job_idle(job, rmca_now_ms() + 20);
			if (rmca_now_ms() >= deadline)
				return RMCA_ERR_TIMEOUT;
			continue;
		default:
			close(fd);
			job->active_to = -1;
			rmca_log(0,
				 "job: rank %u refused this rank's request "
				 "(another job?)",
				 r);
			return RMCA_ERR_PROTOCOL;
		}
	}
}

/* ---- join, fence, rank ---- */

static int job_fence(struct rmca_job *job, bool collect, int timeout_ms)
{
	int64_t deadline =
		timeout_ms < 0 ? INT64_MAX : rmca_now_ms() + timeout_ms;
	struct rmca_pmix_fence *f;
	int rc, status;

	rc = rmca_pmix_fence_start(job->pmix, collect, &f);
	if (rc)
		return rc;
	while (!rmca_pmix_fence_done(f, &status)) {
		if (rmca_now_ms() >= deadline) {
			rmca_pmix_fence_release(f);
			rmca_log(0, "job: fence not complete within %d ms",
				 timeout_ms);
			return RMCA_ERR_TIMEOUT;
		}
		job_wait(job, rmca_pmix_fence_fd(f), POLLIN, deadline);
	}
	rmca_pmix_fence_release(f);
	if (status)
		rmca_log(0, "job: fence failed: %s", rmca_strerror(status));
	return status;
}

/* "2 port boot_id netns key addr,addr,...": what a peer needs to reach
 * us. */
static void info_make(struct rmca_job *job, char *s, size_t len, bool with_key)
{
	struct ifaddrs *ifa = NULL;
	size_t used;
	int n = 0;

	used = (size_t)snprintf(s, len, "2 %d %s %llu ", job->port,
				job->ctx->boot_id[0] ? job->ctx->boot_id : "-",
				(unsigned long long)job->ctx->netns);
	for (int i = 0; i < JOB_KEYLEN && with_key; i++)
		used += (size_t)snprintf(s + used, len - used, "%02x",
					 job->key[i]);
	used += (size_t)snprintf(s + used, len - used, with_key ? " " : "- ");
	if (!getifaddrs(&ifa)) {
		for (struct ifaddrs *i = ifa; i && n < JOB_MAX_ADDRS;
		     i = i->ifa_next) {
			char a[INET6_ADDRSTRLEN];
			const void *src;

			if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) ||
			    (i->ifa_flags & IFF_LOOPBACK))
				continue;
			if (i->ifa_addr->sa_family == AF_INET) {
				src = &((struct sockaddr_in *)i->ifa_addr)
					       ->sin_addr;
			} else if (i->ifa_addr->sa_family == AF_INET6) {
				const struct in6_addr *a6 =
					&((struct sockaddr_in6 *)i->ifa_addr)
						 ->sin6_addr;

				/* link-local needs a scope the peer lacks */
				if (IN6_IS_ADDR_LINKLOCAL(a6))
					continue;
				src = a6;
			} else {
				continue;
			}
			if (!inet_ntop(i->ifa_addr->sa_family, src, a,
				       sizeof(a)) ||
			    used + strlen(a) + 2 >= len)
				continue;
			used += (size_t)snprintf(s + used, len - used, "%s%s",
						 n ? "," : "", a);
			n++;
		}
		freeifaddrs(ifa);
	}
	if (!n)
		snprintf(s + used, len - used, "-");
}

static void job_free(struct rmca_job *job)
{
	while (!rmca_list_empty(&job->pending))
		pending_drop(job,
			     rmca_list_first(&job->pending, struct job_pending,
					     link),
			     true);
	if (job->hs)
		rmca_listener_close(job->hs); /* its handshakes end untold */
	if (job->lfd >= 0) {
		ops(job)->fd_del(&job->ctx->core, job->lfd);
		close(job->lfd);
	}
	if (job->spare_fd >= 0)
		close(job->spare_fd);
	rmca_pmix_close(job->pmix);
	free(job->peers);
	free(job);
}

static bool unsupported(void)
{
	return !rmca_pmix_built();
}

int rmca_job_join(rmca_context_t *ctx, int timeout_ms)
{
	struct rmca_job *job;
	char why[256], info[JOB_INFO_MAX];
	int rc;

	if (!ctx)
		return RMCA_ERR_INVALID;
	if (ctx->job) {
		rmca_log(0, "rmca_job_join: this context has joined already");
		return RMCA_ERR_INVALID;
	}
	job = calloc(1, sizeof(*job));
	if (!job)
		return RMCA_ERR_NO_MEMORY;
	job->ctx = ctx;
	job->lfd = -1;
	job->spare_fd = -1;
	rmca_list_init(&job->pending);
	job->active_to = -1;
	rc = rmca_pmix_open(&job->pmix, job->nspace, sizeof(job->nspace),
			    &job->rank, &job->size, why, sizeof(why));
	if (rc) {
		rmca_log(0, "rmca_job_join: %s", why);
		free(job);
		return rc;
	}
	job->peers = calloc(job->size ? job->size : 1, sizeof(*job->peers));
	job->hs = rmca_handshakes_open(ctx, served, pending_tick, job);
	if (!job->peers || !job->hs) {
		rc = RMCA_ERR_NO_MEMORY;
		goto fail;
	}
	job->lfd = rmca_tcp_listen("", "0", &job->port);
	if (job->lfd < 0) {
		rc = job->lfd;
		rmca_log(0, "rmca_job_join: no job listener: %s",
			 rmca_strerror(rc));
		goto fail;
	}
	rc = ops(job)->fd_add(&ctx->core, job->lfd, EPOLLIN, listener_cb, job);
	if (rc) {
		close(job->lfd);
		job->lfd = -1;
		goto fail;
	}
	job->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	rc = ops(job)->random(job->key, sizeof(job->key));
	if (rc)
		goto fail;
	info_make(job, info, sizeof(info), true);
	pthread_mutex_lock(&job_lock);
	snprintf(job->key_name, sizeof(job->key_name), JOB_KEY, job_joins++);
	pthread_mutex_unlock(&job_lock);
	rc = rmca_pmix_publish(job->pmix, job->key_name, info);
	if (rc) {
		rmca_log(0, "rmca_job_join: publishing the address failed: %s",
			 rmca_strerror(rc));
		goto fail;
	}
	rc = job_fence(job, true, timeout_ms);
	if (rc)
		goto fail;
	ctx->job = job;
	info_make(job, info, sizeof(info), false); /* the key stays unsaid */
	rmca_log(1, "job %s: rank %u of %u, job listener on port %d (%s, %s)",
		 job->nspace, job->rank, job->size, job->port, info,
		 job->key_name);
	return 0;
fail:
	job_free(job);
	return rc;
}

static int joined(rmca_context_t *ctx, const char *what)
{
	if (unsupported())
		return RMCA_ERR_UNSUPPORTED;
	if (!ctx)
		return RMCA_ERR_INVALID;
	if (!ctx->job) {
		rmca_log(0,
			 "%s: the context has not joined a job (rmca_job_join)",
			 what);
		return RMCA_ERR_INVALID;
	}
	return 0;
}

int rmca_job_rank(rmca_context_t *ctx, uint32_t *rank, uint32_t *size)
{
	int rc = joined(ctx, "rmca_job_rank");

	if (rc)
		return rc;
	if (rank)
		*rank = ctx->job->rank;
	if (size)
		*size = ctx->job->size;
	return 0;
}

int rmca_job_ep(rmca_context_t *ctx, uint32_t rank, int timeout_ms,
		rmca_ep_t **ep)
{
	struct rmca_job *job;
	int64_t deadline;
	int rc = joined(ctx, "rmca_job_ep");

	if (rc)
		return rc;
	job = ctx->job;
	if (!ep || rank >= job->size)
		return RMCA_ERR_INVALID;
	if ((*ep = peer_ep(job, rank)))
		return 0;
	if (rank == job->rank) {
		/* no connection: the core's endpoint to itself (self.c) */
		rc = rmca_ep_self(ctx, ep);
		if (!rc)
			peer_set(job, rank, *ep, "itself");
		return rc;
	}
	deadline = timeout_ms < 0 ? INT64_MAX : rmca_now_ms() + timeout_ms;
	rc = job_connect(job, rank, deadline, ep);
	job->active_to = -1;
	return rc;
}

int rmca_job_fence(rmca_context_t *ctx, int timeout_ms)
{
	int rc = joined(ctx, "rmca_job_fence");

	return rc ? rc : job_fence(ctx->job, false, timeout_ms);
}

void rmca_job_fini(struct rmca_context *ctx)
{
	if (ctx->job) {
		job_free(ctx->job);
		ctx->job = NULL;
	}
}
