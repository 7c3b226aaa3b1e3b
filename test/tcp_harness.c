/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fake core and the raw peer of tcp_harness.h. Failures end the test
 * through cmocka's assertions.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "fair.h"
#include "tcp_harness.h"

#define TH_MAX_FDS 128 /* a module's 64 pending sockets, and the rest */
#define TH_ROUNDS  100000

struct th_fd {
	int fd; /* -1: free */
	uint32_t events;
	rmca_fd_cb cb;
	void *arg;
};

static struct th_fd fds[TH_MAX_FDS];
static int nfds;

struct th_done th_done[TH_MAX_DONE];
int th_ndone;
int th_nfailed;
long long th_max_pending = 16384;

char th_last_log[512];

static void th_log(const struct rmca_core *core, int level, const char *fmt,
		   ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(th_last_log, sizeof(th_last_log), fmt, ap);
	va_end(ap);
	if (getenv("TH_VERBOSE"))
		fprintf(stderr, "%s\n", th_last_log);
}

static int th_param_register(const struct rmca_core *core,
			     const struct rmca_param_def *def)
{
	return 0;
}

static bool th_param_bool(const struct rmca_core *core, const char *name)
{
	return false;
}

static long long th_param_int(const struct rmca_core *core, const char *name)
{
	if (!strcmp(name, "tcp_max_pending_responses"))
		return th_max_pending;
	return 0;
}

static size_t th_param_size(const struct rmca_core *core, const char *name)
{
	return 0;
}

static const char *th_param_string(const struct rmca_core *core,
				   const char *name)
{
	return "";
}

static int th_param_enum(const struct rmca_core *core, const char *name)
{
	return 0;
}

static int th_list_selects(const char *list, const char *name)
{
	return 1;
}

static struct th_fd *slot_of(int fd)
{
	for (int i = 0; i < nfds; i++)
		if (fds[i].fd == fd)
			return &fds[i];
	return NULL;
}

static int th_fd_add(const struct rmca_core *core, int fd, uint32_t events,
		     rmca_fd_cb cb, void *arg)
{
	struct th_fd *s = slot_of(-1);

	if (!s) {
		assert_true(nfds < TH_MAX_FDS);
		s = &fds[nfds++];
	}
	*s = (struct th_fd){.fd = fd, .events = events, .cb = cb, .arg = arg};
	return 0;
}

static int th_fd_mod(const struct rmca_core *core, int fd, uint32_t events)
{
	struct th_fd *s = slot_of(fd);

	assert_non_null(s);
	s->events = events;
	return 0;
}

static void th_fd_del(const struct rmca_core *core, int fd)
{
	struct th_fd *s = slot_of(fd);

	if (s)
		s->fd = -1;
}

/* A request of the fake core: the test's tag, and the module's bytes. */
struct th_request {
	void *tag;
	struct th_request *next; /* th_reqs */
	_Alignas(RMCA_REQ_ALIGN) char mine[RMCA_COMPONENT_REQ_MAX];
};

static struct th_request *th_reqs; /* every one, freed with the modules */
static int th_modules;		   /* modules not freed yet */

void *th_req(void *tag)
{
	struct th_request *r = malloc(sizeof(*r));

	assert_non_null(r);
	r->tag = tag;
	r->next = th_reqs;
	th_reqs = r;
	return r;
}

static void th_complete(const struct rmca_core *core, void *request, int status,
			size_t len, uint64_t revoked)
{
	void *req = ((struct th_request *)request)->tag;

	if (th_ndone < TH_MAX_DONE)
		th_done[th_ndone] = (struct th_done){req, status, len, revoked};
	th_ndone++;
}

static void th_conn_failed(const struct rmca_core *core, void *cookie,
			   int status)
{
	th_nfailed++;
}

static int th_random(void *buf, size_t len)
{
	return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
}

bool th_sleep_allowed = true;
long th_may_sleep_calls;

static bool th_may_sleep(const struct rmca_core *core)
{
	(void)core;
	th_may_sleep_calls++;
	return th_sleep_allowed;
}

/* The core's own choice at a listener's bound, on counts of the test's. */
static const void *th_fair_victim(const struct rmca_core *core, size_t n,
				  rmca_fair_next next, void *arg,
				  const struct rmca_fair_entry *newcomer)
{
	static struct rmca_fair counts;

	return rmca_fair_victim(&counts, n, next, arg, newcomer);
}

static const struct rmca_core_ops th_ops = {
	.complete = th_complete,
	.may_sleep = th_may_sleep,
	.conn_failed = th_conn_failed,
	.fd_add = th_fd_add,
	.fd_del = th_fd_del,
	.fd_mod = th_fd_mod,
	.fair_victim = th_fair_victim,
	.list_selects = th_list_selects,
	.log = th_log,
	.param_bool = th_param_bool,
	.param_enum = th_param_enum,
	.param_int = th_param_int,
	.param_register = th_param_register,
	.param_size = th_param_size,
	.param_string = th_param_string,
	.random = th_random,
};

static const struct rmca_core th_core = {
	.ops = &th_ops,
	.req_offset = offsetof(struct th_request, mine),
};

struct tcp_module *th_module(void)
{
	struct tcp_module *m = NULL;

	th_ndone = 0;
	th_nfailed = 0;
	assert_int_equal(rmca_tcp_module_create(&th_core, "lo", &m), 0);
	th_modules++;
	return m;
}

void th_module_free(struct tcp_module *m)
{
	struct th_request *r;

	rmca_tcp_module_destroy(m);
	/* the last one has completed every op */
	if (--th_modules)
		return;
	while ((r = th_reqs)) {
		th_reqs = r->next;
		free(r);
	}
}

struct tcp_conn *th_conn(struct tcp_module *m, int *peer)
{
	struct tcp_conn *c = NULL;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX,
				    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
				    0, sv),
			 0);
	assert_int_equal(rmca_tcp_conn_create(m, sv[0], NULL, &c), 0);
	*peer = sv[1];
	return c;
}

struct th_pair th_pair_open(void)
{
	struct th_pair p = {.m = th_module()};

	p.c = th_conn(p.m, &p.peer);
	return p;
}

void th_pair_close(struct th_pair *p)
{
	rmca_tcp_conn_destroy(p->c);
	close(p->peer);
	th_module_free(p->m);
}

void th_conn_pair(struct tcp_module *a, struct tcp_module *b,
		  struct tcp_conn **ca, struct tcp_conn **cb)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX,
				    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
				    0, sv),
			 0);
	assert_int_equal(rmca_tcp_conn_create(a, sv[0], NULL, ca), 0);
	assert_int_equal(rmca_tcp_conn_create(b, sv[1], NULL, cb), 0);
}

bool th_pump(void)
{
	bool any = false;

	for (int i = 0; i < nfds; i++) {
		struct pollfd p = {.fd = fds[i].fd,
				   .events = (short)fds[i].events};

		if (fds[i].fd < 0 || poll(&p, 1, 0) <= 0)
			continue;
		fds[i].cb(fds[i].arg, (uint32_t)p.revents);
		any = true;
	}
	return any;
}

void th_pump_idle(void)
{
	for (int i = 0; i < TH_ROUNDS && th_pump(); i++)
		;
}

bool th_peer_closed(int fd)
{
	char buf[4096];
	ssize_t r;

	th_pump_idle();
	while ((r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		;
	return r == 0;
}

size_t th_peer_write_some(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, p + done, len - done, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		assert_true(n > 0);
		done += (size_t)n;
	}
	return done;
}

void th_peer_write(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	for (int i = 0; len; i++) {
		size_t n = th_peer_write_some(fd, p, len);

		p += n;
		len -= n;
		/* The target must read for the peer to go on. */
		if (len && !th_pump() && !n)
			assert_true(i < TH_ROUNDS);
	}
}

void th_peer_frame(int fd, const struct tcp_frame *f)
{
	uint8_t hdr[TCP_HDR_LEN];

	rmca_tcp_frame_encode(f, hdr);
	th_peer_write(fd, hdr, sizeof(hdr));
}

size_t th_peer_read(int fd, void *buf, size_t n)
{
	char *p = buf;
	size_t got = 0;
	int idle = 0;

	while (got < n) {
		ssize_t r = recv(fd, p + got, n - got, 0);

		if (r > 0) {
			got += (size_t)r;
			idle = 0;
			continue;
		}
		if (r == 0)
			break;
		if (errno == EINTR)
			continue;
		assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
		/* Nothing from the target, and it has nothing to do: stuck. */
		if (!th_pump())
			assert_true(++idle < TH_ROUNDS);
	}
	return got;
}

bool th_peer_read_frame(int fd, struct tcp_frame *f)
{
	uint8_t hdr[TCP_HDR_LEN];
	const char *why = NULL;
	size_t n = th_peer_read(fd, hdr, sizeof(hdr));

	if (!n)
		return false;
	assert_int_equal(n, sizeof(hdr));
	if (rmca_tcp_frame_decode(hdr, sizeof(hdr), f, &why))
		fail_msg("target sent a bad frame: %s", why);
	return true;
}
