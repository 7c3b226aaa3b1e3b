/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Over tcp, through the whole library: the first rmca_poll after a post
 * does not look at the fds (what was posted cannot be answered yet), the wait
 * fd still becomes readable when the answer comes, and a caller that posts
 * before every poll still has every other poll look at the fds. In a
 * request/response exchange of an application that sleeps on the wait fd,
 * neither side makes an epoll_ctl() or an epoll_wait(): the count of a
 * message waits for the answer while the message, read with MSG_PEEK,
 * keeps the wait fd readable, and a woken poll reads the connection found
 * ready last before asking epoll (RMCA_FD_EAGER). When no answer comes the
 * wait fd wakes the receiver all the same, so the count goes and the send
 * completes. A context whose wait fd was never handed out has nothing to
 * keep readable: spinning, it reads each message once, as a plain socket
 * does, and a held count still goes before the library sleeps in a
 * blocking call, or once the wait fd is handed out and slept on. The test
 * counts the library's epoll_wait(), epoll_ctl(), socket reads and writes
 * by defining the functions itself: the executable's definitions are the
 * ones the library and its components bind to.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define TOKEN_DONE 0xd0e

#define ECHO_ROUNDS 64
#define ECHO_WARM   4

static long epoll_waits, epoll_ctls, reads;
/* Reads that returned bytes, reads that peeked or dropped peeked bytes,
 * socket writes; the writes made before the first epoll_wait() that may
 * sleep once sleep_watch is set (-1: none yet). */
static long data_reads, peeks, truncs, writes, writes_at_sleep = -1;
static bool sleep_watch;

int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	epoll_waits++;
	if (timeout && sleep_watch) {
		sleep_watch = false;
		writes_at_sleep = writes;
	}
	return epoll_pwait(epfd, ev, max, timeout, NULL);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	epoll_ctls++;
	return (int)syscall(SYS_epoll_ctl, epfd, op, fd, ev);
}

/* The tcp component reads its sockets with these (the test's pipes with
 * read()). */
static ssize_t counted_read(ssize_t n, int flags)
{
	reads++;
	data_reads += n > 0;
	peeks += (flags & MSG_PEEK) != 0;
	truncs += (flags & MSG_TRUNC) != 0;
	return n;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	return counted_read(
		(ssize_t)syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL),
		flags);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	return counted_read((ssize_t)syscall(SYS_recvmsg, fd, msg, flags),
			    flags);
}

/* reads when a write first found the socket full (-1: not yet) */
static long full_at = -1;

static ssize_t counted_write(ssize_t n)
{
	writes++;
	if (n < 0 && errno == EAGAIN && full_at < 0)
		full_at = reads;
	return n;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	return counted_write((ssize_t)syscall(SYS_sendmsg, fd, msg, flags));
}

/* A small frame is copied whole and written with send(). */
ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	return counted_write(
		(ssize_t)syscall(SYS_sendto, fd, buf, len, flags, NULL, 0));
}

/* The fds were looked at: epoll_wait(), or the eager read of the
 * connection found ready last (RMCA_FD_EAGER). */
static long looks(void)
{
	return epoll_waits + reads;
}

static void target(struct api_peer *p)
{
	uint64_t *tgt = api_alloc(64);
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, tgt, 64, RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_u64(p, 0, (uintptr_t)tgt);
	api_put_u64(p, 0, rmca_mr_rkey(mr, p->ep));
	api_expect_token(p, 0, TOKEN_DONE);
}

/* Poll until the completion of ctx comes; returns the polls it took. */
static int poll_until(struct api_peer *p, void *ctx)
{
	struct rmca_completion c;
	long end = api_now_ms() + API_TIMEOUT_MS;
	int polls = 0;

	for (;;) {
		int n = rmca_poll(p->ctx, &c, 1);

		polls++;
		API_CHECK_MSG(n >= 0, "rmca_poll: %s", api_strerror(n));
		if (n == 1) {
			API_CHECK(c.user_ctx == ctx);
			API_CHECK_RC(c.status, RMCA_OK);
			return polls;
		}
		API_CHECK_MSG(api_now_ms() < end, "no completion");
	}
}

static void initiator(struct api_peer *p)
{
	uint64_t *src = api_alloc(8);
	uint64_t addr = api_get_u64(p, 0), key = api_get_u64(p, 0);
	struct pollfd pf = {.fd = rmca_wait_fd(p->ctx), .events = POLLIN};
	struct rmca_completion c;
	long before;
	int looked;
	rmca_mr_t *ms;

	API_CHECK_OK(rmca_mr_reg(p->ctx, src, 8, RMCA_ACCESS_LOCAL, &ms));

	/* post, poll: no look; the wait fd wakes the caller, and the next
	 * poll looks and finds the answer */
	API_CHECK_OK(API_POST(
		p, rmca_put(p->ep, src, 8, ms, addr, key, 0, API_CTX(1))));
	before = looks();
	API_CHECK(rmca_poll(p->ctx, &c, 1) == 0);
	API_CHECK_MSG(looks() == before,
		      "the poll right after a post made %ld epoll_wait() or "
		      "read",
		      looks() - before);
	API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
		      "the wait fd stayed silent after a poll that did not "
		      "look");
	poll_until(p, API_CTX(1));
	API_CHECK(looks() > before);

	/* without posts, every poll looks */
	for (int i = 0; i < 3; i++) {
		before = looks();
		API_CHECK(rmca_poll(p->ctx, &c, 1) == 0);
		API_CHECK_MSG(looks() > before, "poll %d did not look", i);
	}

	/* a post before every poll: every other poll still looks */
	looked = 0;
	for (int i = 0; i < 4; i++) {
		API_CHECK_OK(API_POST(p, rmca_put(p->ep, src, 8, ms, addr, key,
						  0, API_CTX(2 + i))));
		before = looks();
		API_CHECK(rmca_poll(p->ctx, &c, 1) >= 0);
		looked += looks() > before;
		if (c.user_ctx)
			memset(&c, 0, sizeof(c));
	}
	API_CHECK_MSG(looked == 2, "4 posts and polls, %d looked", looked);
	api_token(p, 0, TOKEN_DONE);
}

/*
 * Wait as an application that sleeps: one rmca_poll, and poll(2) on the
 * wait fd when it returned nothing, until the completion of ctx comes.
 */
static void sleep_until(struct api_peer *p, void *ctx)
{
	struct pollfd pf = {.fd = rmca_wait_fd(p->ctx), .events = POLLIN};
	struct rmca_completion c;
	long end = api_now_ms() + API_TIMEOUT_MS;

	while (!api_take(ctx, &c)) {
		API_CHECK_MSG(api_now_ms() < end, "no completion");
		if (!api_progress(p))
			API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
				      "the wait fd stayed silent");
	}
	API_CHECK_RC(c.status, RMCA_OK);
}

static void echo_server(struct api_peer *p)
{
	char *buf = api_alloc(64);
	struct pollfd pf = {.fd = rmca_wait_fd(p->ctx), .events = POLLIN};
	long ctls = 0, waits = 0;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_recv(p->ep, buf, 8, mr, API_CTX(1)));
	api_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < ECHO_ROUNDS; i++) {
		if (i == ECHO_WARM) {
			ctls = epoll_ctls;
			waits = epoll_waits;
		}
		sleep_until(p, API_CTX(1));
		API_CHECK_OK(rmca_recv(p->ep, buf, 8, mr, API_CTX(1)));
		API_CHECK_OK(rmca_send(p->ep, buf + 32, 8, mr, API_CTX(2)));
		sleep_until(p, API_CTX(2));
	}
	API_CHECK_MSG(epoll_ctls == ctls && epoll_waits == waits,
		      "%d answered messages, %ld epoll_ctl(), %ld epoll_wait()",
		      ECHO_ROUNDS - ECHO_WARM, epoll_ctls - ctls,
		      epoll_waits - waits);

	/* No answer now: the wait fd still wakes this side, whose next
	 * poll lets the count go and the peer's send complete. */
	sleep_until(p, API_CTX(1));
	API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
		      "the wait fd stayed silent while a count was held");
	API_CHECK(api_progress(p) == 0);
	api_expect_token(p, 0, TOKEN_DONE);
}

static void echo_client(struct api_peer *p)
{
	char *buf = api_alloc(64);
	long ctls = 0, waits = 0;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	api_expect_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < ECHO_ROUNDS; i++) {
		if (i == ECHO_WARM) {
			ctls = epoll_ctls;
			waits = epoll_waits;
		}
		API_CHECK_OK(rmca_recv(p->ep, buf, 8, mr, API_CTX(3)));
		API_CHECK_OK(rmca_send(p->ep, buf + 32, 8, mr, API_CTX(4)));
		sleep_until(p, API_CTX(4));
		sleep_until(p, API_CTX(3));
	}
	API_CHECK_MSG(epoll_ctls == ctls && epoll_waits == waits,
		      "%d answered messages, %ld epoll_ctl(), %ld epoll_wait()",
		      ECHO_ROUNDS - ECHO_WARM, epoll_ctls - ctls,
		      epoll_waits - waits);
	API_CHECK_OK(rmca_send(p->ep, buf + 32, 8, mr, API_CTX(5)));
	sleep_until(p, API_CTX(5));
	api_token(p, 0, TOKEN_DONE);
}

static void answered_messages_cost_no_epoll_calls(void **state)
{
	const struct api_test t = {.server = echo_server,
				   .client = echo_client};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	api_run(&t);
}

/*
 * Echoes of every size while peeking: messages read whole into the read
 * buffer, cut across it (larger than it), and read straight into the
 * receive (TCP_RX_DIRECT and up), each answered, arrive byte for byte.
 */
#define ECHO_BUF (96 * 1024)
static const size_t echo_sizes[] = {8, 4096, 20000, 40000, 100, 70000, 1};
#define NSIZES (sizeof(echo_sizes) / sizeof(echo_sizes[0]))

static void size_server(struct api_peer *p)
{
	char *buf = api_alloc(ECHO_BUF);
	struct rmca_completion c;
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, ECHO_BUF, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_recv(p->ep, buf, ECHO_BUF, mr, API_CTX(1)));
	api_token(p, 0, API_TOKEN_GO);
	for (size_t i = 0; i < 4 * NSIZES; i++) {
		api_wait(p, API_CTX(1), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		API_CHECK(c.len == echo_sizes[i % NSIZES]);
		API_CHECK_OK(rmca_send(p->ep, buf, c.len, mr, API_CTX(2)));
		api_wait_status(p, API_CTX(2), RMCA_OK);
		API_CHECK_OK(rmca_recv(p->ep, buf, ECHO_BUF, mr, API_CTX(1)));
	}
	api_expect_token(p, 0, TOKEN_DONE);
}

static void size_client(struct api_peer *p)
{
	char *out = api_alloc(ECHO_BUF), *in = api_alloc(ECHO_BUF);
	struct rmca_completion c;
	rmca_mr_t *mo, *mi;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, out, ECHO_BUF, RMCA_ACCESS_LOCAL, &mo));
	API_CHECK_OK(rmca_mr_reg(p->ctx, in, ECHO_BUF, RMCA_ACCESS_LOCAL, &mi));
	api_expect_token(p, 0, API_TOKEN_GO);
	for (size_t i = 0; i < 4 * NSIZES; i++) {
		size_t len = echo_sizes[i % NSIZES];

		api_pattern(out, len, (unsigned)i);
		memset(in, 0, len);
		API_CHECK_OK(rmca_recv(p->ep, in, ECHO_BUF, mi, API_CTX(3)));
		API_CHECK_OK(rmca_send(p->ep, out, len, mo, API_CTX(4)));
		api_wait_status(p, API_CTX(4), RMCA_OK);
		api_wait(p, API_CTX(3), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		API_CHECK(c.len == len);
		API_CHECK_MSG(api_pattern_check(in, len, (unsigned)i) < 0,
			      "echo %zu of %zu bytes differs at %ld", i, len,
			      api_pattern_check(in, len, (unsigned)i));
	}
	api_token(p, 0, TOKEN_DONE);
}

static void answered_messages_of_every_size_arrive_whole(void **state)
{
	const struct api_test t = {.server = size_server,
				   .client = size_client};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	api_run(&t);
}

static void first_poll_after_a_post_does_not_look(void **state)
{
	const struct api_test t = {.server = target, .client = initiator};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	api_run(&t);
}

/*
 * A target that sleeps on the wait fd serves each put and fetch-add with
 * the eager read alone: the request makes no completion there, but the
 * module says its fd callback found work (RMCA_PROGRESS_SERVED), so the
 * poll does not go on to an epoll_wait() that would find nothing. An
 * initiator spinning idle on its one connection reads it at every poll,
 * and asks epoll_wait() at most every few polls.
 */
#define SERVE_ROUNDS 64
#define SERVE_WARM   4
#define IDLE_POLLS   64

static void serving_target(struct api_peer *p)
{
	volatile uint64_t *tgt = api_alloc(64);
	struct pollfd pf = {.fd = rmca_wait_fd(p->ctx), .events = POLLIN};
	long end = api_now_ms() + API_TIMEOUT_MS;
	long waits = -1, reads_at = 0, served = 0;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(
		p->ctx, (void *)tgt, 64,
		RMCA_ACCESS_REMOTE_WRITE | RMCA_ACCESS_REMOTE_ATOMIC, &mr));
	api_put_u64(p, 0, (uintptr_t)tgt);
	api_put_u64(p, 0, rmca_mr_rkey(mr, p->ep));
	/* tgt[0]: the puts (each writes its count), tgt[1]: the fetch-adds */
	while (tgt[1] < SERVE_ROUNDS / 2) {
		API_CHECK_MSG(api_now_ms() < end, "the requests stopped");
		if (waits < 0 && tgt[1] >= SERVE_WARM) {
			waits = epoll_waits;
			reads_at = reads;
			served = (long)tgt[0] + (long)tgt[1];
		}
		API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
			      "the wait fd stayed silent");
		API_CHECK(api_progress(p) == 0);
	}
	served = (long)tgt[0] + (long)tgt[1] - served;
	API_CHECK_MSG(epoll_waits == waits,
		      "%ld requests served, %ld epoll_wait() and %ld reads",
		      served, epoll_waits - waits, reads - reads_at);
	api_expect_token(p, 0, TOKEN_DONE);
}

static void requesting_initiator(struct api_peer *p)
{
	uint64_t *src = api_alloc(16);
	uint64_t addr = api_get_u64(p, 0), key = api_get_u64(p, 0);
	struct rmca_atomic op = {.kind = RMCA_ATOMIC_FADD,
				 .raddr = addr + 8,
				 .rkey = key,
				 .operand = 1};
	struct rmca_completion c;
	long waits;
	rmca_mr_t *ms;

	API_CHECK_OK(rmca_mr_reg(p->ctx, src, 16, RMCA_ACCESS_LOCAL, &ms));
	for (uint64_t i = 0; i < SERVE_ROUNDS; i++) {
		if (i % 2 == 0) {
			src[0] = i / 2 + 1;
			API_CHECK_OK(
				API_POST(p, rmca_put(p->ep, src, 8, ms, addr,
						     key, 0, API_CTX(1))));
			api_wait_status(p, API_CTX(1), RMCA_OK);
		} else {
			API_CHECK_OK(
				API_POST(p, rmca_atomic(p->ep, &op, src + 1, ms,
							API_CTX(2))));
			api_wait_status(p, API_CTX(2), RMCA_OK);
			API_CHECK(src[1] == i / 2);
		}
	}

	/* Spinning idle on its one connection, a poll's look at the fds is
	 * mostly the eager read alone (before: and an epoll_wait() each). */
	waits = epoll_waits;
	for (int i = 0; i < IDLE_POLLS; i++)
		API_CHECK(rmca_poll(p->ctx, &c, 1) == 0);
	API_CHECK_MSG((epoll_waits - waits) * 4 <= IDLE_POLLS,
		      "%d idle polls, %ld epoll_wait()", IDLE_POLLS,
		      epoll_waits - waits);
	api_token(p, 0, TOKEN_DONE);
}

static void a_sleeping_target_serves_requests_without_epoll(void **state)
{
	const struct api_test t = {.server = serving_target,
				   .client = requesting_initiator};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	api_run(&t);
}

/*
 * A ping-pong between two contexts that spin on rmca_poll and never ask
 * for their wait fd, on a connection of their own (the harness's contexts
 * may have handed theirs out while waiting on the pipes).
 */
#define SPIN_ROUNDS 64
#define SPIN_WARM   4

struct spinner {
	struct api_peer q; /* the harness's peer, on the context below */
	rmca_listener_t *l;
	char *buf;
	rmca_mr_t *mr;
	long reads_at, peeks_at, truncs_at;
};

static void spinner_init(struct api_peer *p, struct spinner *s)
{
	char hp[128];

	/* the client has no listener: s->l stays NULL for spinner_fini */
	*s = (struct spinner){.q = *p};
	API_CHECK_OK(rmca_init(&s->q.ctx));
	if (p->is_server) {
		api_host_port(hp, sizeof(hp), api_host(), 0);
		API_CHECK_OK(rmca_listen(s->q.ctx, hp, &s->l));
		api_put_u64(p, 0, (uint64_t)rmca_listener_port(s->l));
		API_CHECK_OK(rmca_accept(s->l, API_TIMEOUT_MS, &s->q.ep));
	} else {
		api_host_port(hp, sizeof(hp), api_host(),
			      (int)api_get_u64(p, 0));
		API_CHECK_OK(
			rmca_connect(s->q.ctx, hp, API_TIMEOUT_MS, &s->q.ep));
	}
	s->buf = api_alloc(64);
	API_CHECK_OK(
		rmca_mr_reg(s->q.ctx, s->buf, 64, RMCA_ACCESS_LOCAL, &s->mr));
}

static void spinner_fini(struct spinner *s)
{
	rmca_ep_close(s->q.ep);
	if (s->l)
		rmca_listener_close(s->l);
	rmca_mr_dereg(s->mr);
	rmca_finalize(s->q.ctx);
}

/* rmca_poll, and nothing else, until the completion of ctx came. */
static void spin_until(struct spinner *s, void *ctx)
{
	struct rmca_completion c;
	long end = api_now_ms() + API_TIMEOUT_MS;

	while (!api_take(ctx, &c)) {
		API_CHECK_MSG(api_now_ms() < end, "no completion");
		api_progress(&s->q);
	}
	API_CHECK_RC(c.status, RMCA_OK);
}

static void count_from_here(struct spinner *s)
{
	s->reads_at = data_reads;
	s->peeks_at = peeks;
	s->truncs_at = truncs;
}

/* Each message of the ping-pong since count_from_here was read once. */
static void check_one_read_each(struct spinner *s)
{
	API_CHECK_MSG(data_reads - s->reads_at == SPIN_ROUNDS - SPIN_WARM &&
			      peeks == s->peeks_at && truncs == s->truncs_at,
		      "%d messages in, %ld reads that returned bytes, %ld "
		      "with MSG_PEEK, %ld with MSG_TRUNC",
		      SPIN_ROUNDS - SPIN_WARM, data_reads - s->reads_at,
		      peeks - s->peeks_at, truncs - s->truncs_at);
}

/* A socket on the loopback that takes connections and never reads: its
 * address in hp. */
static int mute_listener(char *hp, size_t len)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	API_CHECK(fd >= 0);
	API_CHECK(!bind(fd, (struct sockaddr *)&sa, sizeof(sa)));
	API_CHECK(!listen(fd, 4));
	API_CHECK(!getsockname(fd, (struct sockaddr *)&sa, &sl));
	snprintf(hp, len, "127.0.0.1:%d", ntohs(sa.sin_port));
	return fd;
}

static void spin_server(struct api_peer *p)
{
	struct spinner s;
	struct pollfd pf = {.events = POLLIN};
	rmca_ep_t *none = NULL;
	char hp[128];
	long w;
	int rc, mute;

	spinner_init(p, &s);
	API_CHECK_OK(rmca_recv(s.q.ep, s.buf, 8, s.mr, API_CTX(1)));
	for (int i = 0; i < SPIN_ROUNDS; i++) {
		if (i == SPIN_WARM)
			count_from_here(&s);
		spin_until(&s, API_CTX(1));
		if (i)
			spin_until(&s, API_CTX(2));
		API_CHECK_OK(rmca_recv(s.q.ep, s.buf, 8, s.mr, API_CTX(1)));
		API_CHECK_OK(
			rmca_send(s.q.ep, s.buf + 32, 8, s.mr, API_CTX(2)));
	}
	check_one_read_each(&s);
	spin_until(&s, API_CTX(2));

	/* A message not answered, then a call that sleeps in the library
	 * at once (a connect to a socket that never answers the hello): the
	 * held count goes first, and the peer's send completes. */
	spin_until(&s, API_CTX(1));
	API_CHECK_OK(rmca_recv(s.q.ep, s.buf, 8, s.mr, API_CTX(1)));
	mute = mute_listener(hp, sizeof(hp));
	w = writes;
	sleep_watch = true;
	/* long enough that the connect gets as far as waiting for the
	 * hello's answer on a busy machine */
	rc = rmca_connect(s.q.ctx, hp, API_TIMEOUT_MS / 10, &none);
	API_CHECK_RC(rc, RMCA_ERR_TIMEOUT);
	close(mute);
	API_CHECK_MSG(writes_at_sleep > w,
		      "the library slept with a count held (%ld writes "
		      "before it)",
		      writes_at_sleep - w);
	api_token(p, 0, API_TOKEN_GO);

	/* A message not answered, then the wait fd handed out for the
	 * first time and slept on: it wakes the caller, whose next poll
	 * lets the count go. */
	spin_until(&s, API_CTX(1));
	pf.fd = rmca_wait_fd(s.q.ctx);
	API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
		      "the wait fd stayed silent while a count was held");
	w = writes;
	API_CHECK(api_progress(&s.q) == 0);
	API_CHECK_MSG(writes > w, "the woken poll wrote nothing");
	api_expect_token(p, 0, TOKEN_DONE);
	spinner_fini(&s);
}

static void spin_client(struct api_peer *p)
{
	struct spinner s;

	spinner_init(p, &s);
	for (int i = 0; i < SPIN_ROUNDS; i++) {
		if (i == SPIN_WARM)
			count_from_here(&s);
		API_CHECK_OK(rmca_recv(s.q.ep, s.buf, 8, s.mr, API_CTX(3)));
		API_CHECK_OK(
			rmca_send(s.q.ep, s.buf + 32, 8, s.mr, API_CTX(4)));
		spin_until(&s, API_CTX(4));
		spin_until(&s, API_CTX(3));
	}
	check_one_read_each(&s);
	/* one message for each of the server's sleeps */
	API_CHECK_OK(rmca_send(s.q.ep, s.buf + 32, 8, s.mr, API_CTX(5)));
	spin_until(&s, API_CTX(5));
	api_expect_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_send(s.q.ep, s.buf + 32, 8, s.mr, API_CTX(6)));
	spin_until(&s, API_CTX(6));
	api_token(p, 0, TOKEN_DONE);
	spinner_fini(&s);
}

static void spinning_ping_pong_reads_each_message_once(void **state)
{
	const struct api_test t = {.server = spin_server,
				   .client = spin_client};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	api_run(&t);
}

/*
 * A stream of large messages to a peer that stops reading: once the
 * socket is full, the sender's polls write and leave the socket's input
 * to the core's next look at the fds (the peer's acknowledgements can
 * wait), as a plain socket's sender does; before, every poll read it as
 * well. Then the peer reads them all: sizes on both sides of the bytes
 * one write is offered (4 MiB), with small ones between, arrive whole and
 * in order.
 */
static const size_t stream_sizes[] = {
	(1u << 20) - 1,
	8,
	1u << 20,
	(1u << 20) + 1,
	100,
	3u << 20,
	1,
	(4u << 20) - 1,
	65536,
	(4u << 20) + 1,
	17,
	4u << 20,
	4096,
};
#define NSTREAM	   (sizeof(stream_sizes) / sizeof(stream_sizes[0]))
#define STREAM_LEN (24u << 20)
#define FULL_POLLS 64
#define TOKEN_SENT 0x5e47

static size_t stream_off(size_t i)
{
	size_t off = 0;

	for (size_t k = 0; k < i; k++)
		off += stream_sizes[k];
	return off;
}

static void stream_server(struct api_peer *p)
{
	char *buf = api_alloc(STREAM_LEN);
	struct rmca_completion c;
	uint64_t token = 0;
	rmca_mr_t *mr;

	API_CHECK(stream_off(NSTREAM) <= STREAM_LEN);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, STREAM_LEN, RMCA_ACCESS_LOCAL, &mr));
	for (size_t i = 0; i < NSTREAM; i++)
		API_CHECK_OK(rmca_recv(p->ep, buf + stream_off(i),
				       stream_sizes[i], mr, API_CTX(10 + i)));
	api_token(p, 0, API_TOKEN_GO);
	/* Not reading the connection meanwhile (api_expect_token would
	 * progress the context): a blocking read of the pipe. */
	API_CHECK(read(p->link[0].rd, &token, sizeof(token)) == sizeof(token));
	API_CHECK(token == TOKEN_SENT);
	for (size_t i = 0; i < NSTREAM; i++) {
		api_wait(p, API_CTX(10 + i), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		API_CHECK(c.len == stream_sizes[i]);
		API_CHECK_MSG(
			api_pattern_check(buf + stream_off(i), stream_sizes[i],
					  (unsigned)i) < 0,
			"message %zu of %zu bytes differs", i, stream_sizes[i]);
	}
	api_expect_token(p, 0, TOKEN_DONE);
}

static void stream_client(struct api_peer *p)
{
	char *buf = api_alloc(STREAM_LEN);
	struct rmca_completion c;
	long at;
	rmca_mr_t *mr;

	for (size_t i = 0; i < NSTREAM; i++)
		api_pattern(buf + stream_off(i), stream_sizes[i], (unsigned)i);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, STREAM_LEN, RMCA_ACCESS_LOCAL, &mr));
	api_expect_token(p, 0, API_TOKEN_GO);
	full_at = -1;
	for (size_t i = 0; i < NSTREAM; i++)
		API_CHECK_OK(rmca_send(p->ep, buf + stream_off(i),
				       stream_sizes[i], mr, API_CTX(10 + i)));
	while (full_at < 0) {
		API_CHECK(rmca_poll(p->ctx, &c, 1) == 0);
	}
	at = reads;
	for (int i = 0; i < FULL_POLLS; i++)
		API_CHECK(rmca_poll(p->ctx, &c, 1) == 0);
	API_CHECK_MSG((reads - at) * 4 <= FULL_POLLS,
		      "%d polls with the socket full, %ld reads", FULL_POLLS,
		      reads - at);
	api_token(p, 0, TOKEN_SENT);
	for (size_t i = 0; i < NSTREAM; i++)
		api_wait_status(p, API_CTX(10 + i), RMCA_OK);
	api_token(p, 0, TOKEN_DONE);
}

static void a_full_stream_is_written_not_read(void **state)
{
	const struct api_test t = {.server = stream_server,
				   .client = stream_client};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(first_poll_after_a_post_does_not_look),
		cmocka_unit_test(answered_messages_cost_no_epoll_calls),
		cmocka_unit_test(answered_messages_of_every_size_arrive_whole),
		cmocka_unit_test(
			a_sleeping_target_serves_requests_without_epoll),
		cmocka_unit_test(spinning_ping_pong_reads_each_message_once),
		cmocka_unit_test(a_full_stream_is_written_not_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
