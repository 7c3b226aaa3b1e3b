// SPDX-License-Identifier: BSD-3-Clause
/*
 * What the core holds for an endpoint is bounded like what a module holds:
 * emulated atomics and send_invs over revoke messages stop at 16,384
 * outstanding (RMCA_ep_max_core_ops) with RMCA_ERR_AGAIN, and a refused
 * post posted nothing.
 * Counts, not times: the target does not progress while the initiator
 * fills up, then serves everything, and every count must match.
 *
 * The control channel is bounded at the target too: a peer that floods it
 * with requests and never reads the answers is no longer read (pushback)
 * while the target keeps serving its other peers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "api_util.h"

#define BOUND 16384 /* RMCA_ep_max_core_ops: the modules' own limit */

static long bound = BOUND; /* the bound the test runs against */
#define TOKEN_FULL 0xf011
#define TOKEN_DONE 0xd0e
#define MSG	   8
#define WINDOW	   512 /* receives the target keeps posted */

struct tally {
	long n[RMCA_OP_FLUSH + 1];
	long errors, revoked;
};

/* Poll without keeping completions (more than the api stash holds). */
static void drain(struct api_peer *p, struct tally *t)
{
	struct rmca_completion c[64];
	int n = rmca_poll(p->ctx, c, 64);

	API_CHECK_MSG(n >= 0, "rmca_poll: %s", api_strerror(n));
	for (int i = 0; i < n; i++) {
		API_CHECK_MSG(c[i].status == RMCA_OK, "op %d completed with %s",
			      c[i].op, api_strerror(c[i].status));
		t->n[c[i].op]++;
		if (c[i].revoked_rkey)
			t->revoked++;
	}
}

static void drain_until(struct api_peer *p, struct tally *t, enum rmca_op op,
			long want)
{
	long end = api_now_ms() + API_RUN_TIMEOUT_MS;

	while (t->n[op] < want) {
		struct pollfd pf = {.fd = rmca_wait_fd(p->ctx),
				    .events = POLLIN};

		API_CHECK_MSG(api_now_ms() < end, "%ld of %ld completions",
			      t->n[op], want);
		drain(p, t);
		if (t->n[op] < want)
			poll(&pf, 1, 10);
	}
}

static void set_caps(const char *caps)
{
	setenv("RMCA_transports", "tcp", 1);
	setenv("RMCA_tcp_caps", caps, 1);
}

/* ---- atomics executed by the target's core ---- */

static void atomic_server(struct api_peer *p)
{
	uint64_t *w = api_alloc(4096);
	rmca_mr_t *mr;
	struct rmca_ep_attr a;

	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	API_CHECK(a.atomic == RMCA_PATH_EMULATED);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, w, 4096, RMCA_ACCESS_REMOTE_ATOMIC, &mr));
	api_put_region(p, 0, w, 4096, mr, p->ep);
	api_expect_token_deaf(p, 0, TOKEN_FULL);
	api_expect_token(p, 0, TOKEN_DONE); /* serves meanwhile */
	API_CHECK_MSG(w[0] == (uint64_t)bound, "the word is %llu, expected %ld",
		      (unsigned long long)w[0], bound);
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void atomic_client(struct api_peer *p)
{
	uint64_t *res = api_alloc(4096);
	struct tally t = {0};
	struct api_region r;
	struct rmca_atomic op = {.kind = RMCA_ATOMIC_FADD, .operand = 1};
	rmca_mr_t *mr;
	long n;
	int rc = 0;

	api_get_region(p, 0, &r);
	op.raddr = r.addr;
	op.rkey = r.rkey;
	API_CHECK_OK(rmca_mr_reg(p->ctx, res, 4096, RMCA_ACCESS_LOCAL, &mr));
	for (n = 0; n < 2 * bound; n++) {
		rc = rmca_atomic(p->ep, &op, res, mr, API_CTX(1));
		if (rc)
			break;
	}
	API_CHECK_MSG(rc == RMCA_ERR_AGAIN && n == bound,
		      "%ld atomics held, then %s (expected AGAIN at %ld)", n,
		      api_strerror(rc), bound);
	API_CHECK_RC(rmca_atomic(p->ep, &op, res, mr, API_CTX(1)),
		     RMCA_ERR_AGAIN);
	api_token(p, 0, TOKEN_FULL);
	drain_until(p, &t, RMCA_OP_ATOMIC, bound);
	/* the refused posts produced nothing */
	drain(p, &t);
	API_CHECK(t.n[RMCA_OP_ATOMIC] == bound);
	/* and the endpoint takes atomics again */
	API_CHECK_OK(rmca_atomic(p->ep, &op, res, mr, API_CTX(2)));
	api_wait_status(p, API_CTX(2), RMCA_OK);
	API_CHECK(*res == (uint64_t)bound);
	op.operand = (uint64_t)-1; /* leave bound in the word */
	API_CHECK_OK(rmca_atomic(p->ep, &op, res, mr, API_CTX(3)));
	api_wait_status(p, API_CTX(3), RMCA_OK);
	api_token(p, 0, TOKEN_DONE);
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void test_emulated_atomics_stop_at_the_bound(void **state)
{
	const struct api_test t = {.server = atomic_server,
				   .client = atomic_client};

	(void)state;
	set_caps("^atomic,masked_atomic");
	api_run(&t);
}

static void test_the_bound_is_a_parameter(void **state)
{
	const struct api_test t = {.server = atomic_server,
				   .client = atomic_client};

	(void)state;
	set_caps("^atomic,masked_atomic");
	setenv("RMCA_ep_max_core_ops", "1000", 1);
	bound = 1000;
	api_run(&t);
	unsetenv("RMCA_ep_max_core_ops");
	bound = BOUND;
}

/* ---- send with invalidate by revoke message ---- */

static void inv_server(struct api_peer *p)
{
	char *once = api_alloc(4096), *msg = api_alloc(WINDOW * MSG);
	struct tally t = {0};
	struct rmca_ep_attr a;
	rmca_mr_t *mr, *mm;
	long posted = 0;

	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	API_CHECK(a.send_inv == RMCA_PATH_REVOKE_MSG);
	API_CHECK_OK(rmca_mr_reg(p->ctx, once, 4096,
				 RMCA_ACCESS_REMOTE_WRITE | RMCA_MR_USE_ONCE,
				 &mr));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, msg, WINDOW * MSG, RMCA_ACCESS_LOCAL, &mm));
	api_put_region(p, 0, once, 4096, mr, p->ep);
	api_expect_token_deaf(p, 0, TOKEN_FULL);
	/* Receive every message, WINDOW receives posted at a time. */
	while (t.n[RMCA_OP_RECV] < BOUND) {
		while (posted < BOUND && posted - t.n[RMCA_OP_RECV] < WINDOW) {
			API_CHECK_OK(API_POST(
				p, rmca_recv(p->ep, msg + posted % WINDOW * MSG,
					     MSG, mm, API_CTX(1))));
			posted++;
		}
		drain_until(p, &t, RMCA_OP_RECV, t.n[RMCA_OP_RECV] + 1);
	}
	/* The key was revoked once; the other revokes named nothing. */
	API_CHECK_MSG(t.revoked == 1, "%ld receives revoked a key", t.revoked);
	api_expect_token(p, 0, TOKEN_DONE);
	drain(p, &t);
	API_CHECK(t.n[RMCA_OP_RECV] == BOUND);
	API_CHECK_OK(rmca_mr_dereg(mr));
	API_CHECK_OK(rmca_mr_dereg(mm));
}

static void inv_client(struct api_peer *p)
{
	char *buf = api_alloc(4096);
	struct tally t = {0};
	struct api_region r;
	rmca_mr_t *mr;
	long n;
	int rc = 0;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 4096, RMCA_ACCESS_LOCAL, &mr));
	for (n = 0; n < 2 * BOUND; n++) {
		rc = rmca_send_inv(p->ep, buf, MSG, mr, r.rkey, API_CTX(1));
		if (rc)
			break;
	}
	API_CHECK_MSG(rc == RMCA_ERR_AGAIN && n == BOUND,
		      "%ld send_invs held, then %s (expected AGAIN at %d)", n,
		      api_strerror(rc), BOUND);
	/* a plain send behind them is held too, and refused alike */
	API_CHECK_RC(rmca_send(p->ep, buf, MSG, mr, API_CTX(2)),
		     RMCA_ERR_AGAIN);
	api_token(p, 0, TOKEN_FULL);
	drain_until(p, &t, RMCA_OP_SEND, BOUND);
	drain(p, &t);
	API_CHECK(t.n[RMCA_OP_SEND] == BOUND);
	api_token(p, 0, TOKEN_DONE);
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void test_revoke_sends_stop_at_the_bound(void **state)
{
	const struct api_test t = {.server = inv_server, .client = inv_client};

	(void)state;
	set_caps("^send_inv");
	api_run(&t);
}

/* ---- a held send goes once the module has room ---- */

#define TOKEN_ACKED 0xac3

/* Sleep on the wait fd alone; rmca_poll only when it is readable. If the
 * fd stays quiet while work is due, the completion never comes. */
static void fd_wait(struct api_peer *p, void *uc, int want)
{
	long end = api_now_ms() + API_TIMEOUT_MS;
	struct rmca_completion c;

	for (;;) {
		struct pollfd pf = {.fd = rmca_wait_fd(p->ctx),
				    .events = POLLIN};
		long left = end - api_now_ms();

		API_CHECK_MSG(left > 0, "the wait fd stayed quiet, ctx %p due",
			      uc);
		if (poll(&pf, 1, (int)left) != 1)
			continue;
		if (rmca_poll(p->ctx, &c, 1) == 1 && c.user_ctx == uc)
			break;
	}
	API_CHECK_MSG(c.status == want, "ctx %p: %s", uc,
		      api_strerror(c.status));
}

static void room_server(struct api_peer *p)
{
	char *once = api_alloc(4096), *msg = api_alloc(4096);
	struct rmca_completion c;
	rmca_mr_t *mr, *mm;

	API_CHECK_OK(rmca_mr_reg(p->ctx, once, 4096,
				 RMCA_ACCESS_REMOTE_WRITE | RMCA_MR_USE_ONCE,
				 &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, 4096, RMCA_ACCESS_LOCAL, &mm));
	API_CHECK_OK(rmca_recv(p->ep, msg, MSG, mm, API_CTX(1)));
	api_put_region(p, 0, once, 4096, mr, p->ep);
	api_expect_token(p, 0, TOKEN_FULL); /* the REVOKE is acked here */
	api_progress_for(p, 100);
	api_token(p, 0, TOKEN_ACKED);
	api_expect_token(p, 0, API_TOKEN_GO);
	/* one message: it frees one of the client's slots */
	API_CHECK_OK(rmca_send(p->ep, msg + 64, MSG, mm, API_CTX(2)));
	api_wait_status(p, API_CTX(2), RMCA_OK);
	api_wait(p, API_CTX(1), &c);
	API_CHECK_RC(c.status, RMCA_OK);
	API_CHECK(c.revoked_rkey != 0); /* the message revoked the key */
	api_expect_token(p, 0, TOKEN_DONE);
	API_CHECK_OK(rmca_mr_dereg(mr));
	API_CHECK_OK(rmca_mr_dereg(mm));
}

static void room_client(struct api_peer *p)
{
	char *buf = api_alloc(4096);
	struct api_region r;
	rmca_mr_t *mr;
	long n = 0;
	int rc;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 4096, RMCA_ACCESS_LOCAL, &mr));
	/* Receives fill the connection: the module takes nothing more. */
	while ((rc = rmca_recv(p->ep, buf + 64, MSG, mr, API_CTX(100 + n))) ==
	       0)
		n++;
	API_CHECK_RC(rc, RMCA_ERR_AGAIN);
	API_CHECK_OK(rmca_send_inv(p->ep, buf, MSG, mr, r.rkey, API_CTX(1)));
	api_token(p, 0, TOKEN_FULL);
	/* The ack comes back: the message is due, the module has no room. */
	api_expect_token(p, 0, TOKEN_ACKED);
	api_progress_for(p, 100);
	API_CHECK(api_stashed() == 0);
	api_token(p, 0, API_TOKEN_GO);
	/* The server's message makes room; the held message must go without
	 * any call but those the wait fd asks for. */
	fd_wait(p, API_CTX(100), RMCA_OK);
	fd_wait(p, API_CTX(1), RMCA_OK);
	api_token(p, 0, TOKEN_DONE);
	/* The other receives end canceled: more than the api stash holds. */
	rmca_ep_close(p->ep);
	p->ep = NULL;
	for (struct rmca_completion c; n > 1;)
		if (rmca_poll(p->ctx, &c, 1) == 1) {
			API_CHECK_RC(c.status, RMCA_ERR_CANCELED);
			n--;
		}
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void test_held_send_goes_when_room_comes(void **state)
{
	const struct api_test t = {.server = room_server,
				   .client = room_client};

	(void)state;
	set_caps("^send_inv");
	api_run(&t);
}

/* ---- a peer that floods the control channel and never reads ---- */

#define FLOOD	    4000000L /* REVOKEs: 84 MB of frames */
#define FRAME	    21	     /* u32 length, u8 type, u64 seq, u64 rkey */
#define BATCH	    3120
#define TOKEN_STUCK 0x57c

/* The control channel is the bootstrap socket: the one to the listener. */
static int ctrl_fd(int port)
{
	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int type, peer_port;
		socklen_t tl = sizeof(type);

		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
		    type != SOCK_STREAM ||
		    getpeername(fd, (struct sockaddr *)&ss, &sl))
			continue;
		if (ss.ss_family == AF_INET)
			peer_port =
				ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			peer_port =
				ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		else
			continue;
		if (peer_port == port)
			return fd;
	}
	return -1;
}

/* Progress until a token comes on link 0, however long the flood takes
 * (the harness still ends a test that hangs). */
static void serve_until_token(struct api_peer *p, uint64_t token)
{
	struct pollfd pf[2] = {
		{.fd = p->link[0].rd, .events = POLLIN},
		{.fd = rmca_wait_fd(p->ctx), .events = POLLIN},
	};
	uint64_t v;

	while (poll(pf, 2, 100) >= 0 && !(pf[0].revents & (POLLIN | POLLHUP)))
		api_progress(p);
	API_CHECK(read(p->link[0].rd, &v, sizeof(v)) == sizeof(v));
	API_CHECK_MSG(v == token, "token %#llx", (unsigned long long)v);
}

static void flood_server(struct api_peer *p)
{
	char *msg = api_alloc(4096);
	rmca_mr_t *mm;

	API_CHECK(p->nclients == 2);
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, 4096, RMCA_ACCESS_LOCAL, &mm));
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	serve_until_token(p, TOKEN_STUCK);
	/* The flooder is pushed back; everybody else is still served. */
	api_token(p, 1, API_TOKEN_GO);
	API_CHECK(api_recv_wait(p, p->eps[1], msg, 4096, mm) == 6);
	API_CHECK(!memcmp(msg, "hello", 6));
	API_CHECK_OK(rmca_mr_dereg(mm));
	api_token(p, 0, TOKEN_DONE);
	api_token(p, 1, TOKEN_DONE);
}

static void flood(struct api_peer *p)
{
	static uint8_t buf[BATCH * FRAME];
	int fd = ctrl_fd((int)api_get_u64(p, 0));
	long sent = 0, frames;
	size_t off = 0;

	API_CHECK_MSG(fd >= 0, "no control channel socket");
	/* Small buffers here: what the kernels hold stays well below FLOOD
	 * (the target's own buffers: at most 32 MB of frames and 4 MB of
	 * answers on common settings, about 1.9 M frames). */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int){65536}, sizeof(int));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){65536}, sizeof(int));
	for (int i = 0; i < BATCH; i++) {
		uint8_t *f = buf + i * FRAME;

		memset(f, 0, FRAME);
		f[0] = FRAME - 4; /* length, little-endian */
		f[4] = 3;	  /* REVOKE; seq 0, rkey 0: refused, answered */
	}
	/* Write until everything went, or the target stopped reading: no
	 * room for seconds while it progresses. */
	while (sent < FLOOD * FRAME) {
		ssize_t n = send(fd, buf + off, sizeof(buf) - off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		struct pollfd pf = {.fd = fd, .events = POLLOUT};

		if (n > 0) {
			sent += n;
			off = (off + (size_t)n) % sizeof(buf);
			continue;
		}
		API_CHECK_MSG(n < 0 && errno == EAGAIN, "send: %s",
			      strerror(errno));
		if (poll(&pf, 1, 2000) == 0)
			break;
	}
	frames = sent / FRAME;
	API_CHECK_MSG(frames < FLOOD,
		      "the target read all %ld REVOKEs and queued their acks",
		      frames);
	api_token(p, 0, TOKEN_STUCK);
	api_expect_token_deaf(p, 0, TOKEN_DONE);
	_exit(0); /* never reading: rmca would find acks for nothing */
}

static void flood_client(struct api_peer *p)
{
	char *msg = api_alloc(4096);
	rmca_mr_t *mm;

	if (p->index == 0)
		flood(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, 4096, RMCA_ACCESS_LOCAL, &mm));
	memcpy(msg, "hello", 6);
	serve_until_token(p, API_TOKEN_GO); /* the flood can take a while */
	api_send_wait(p, p->ep, msg, 6, mm);
	api_expect_token(p, 0, TOKEN_DONE);
	API_CHECK_OK(rmca_mr_dereg(mm));
}

static void test_control_flood_is_pushed_back(void **state)
{
	const struct api_test t = {.server = flood_server,
				   .client = flood_client,
				   .nclients = 2,
				   .no_barrier = true};

	(void)state;
	set_caps("^send_inv"); /* any mask: the channel is always there */
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_emulated_atomics_stop_at_the_bound),
		cmocka_unit_test(test_the_bound_is_a_parameter),
		cmocka_unit_test(test_revoke_sends_stop_at_the_bound),
		cmocka_unit_test(test_held_send_goes_when_room_comes),
		cmocka_unit_test(test_control_flood_is_pushed_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
