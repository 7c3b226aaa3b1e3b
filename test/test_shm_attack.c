/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A same-host peer against a real shm module whose core is this test: one
 * that writes the connection's shared segment behind the module's back or
 * lies in it, one that floods the module's socket with connections.
 * Whatever a peer does, one progress call of ours does a bounded amount of
 * work and returns, so that the application and its other peers go on;
 * what the peer sent is served on the next calls, nothing is lost; a lie
 * ends that connection, and its operations complete with the reason.
 *
 * The peer acts from inside the progress call it attacks (from the core's
 * completion callback, from accept4), so each case is a count, the same on
 * every run, not a race.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "shm.h"
#include "shm_fake_core.h"

/* ---- a peer that writes requests behind the consumer's back ---- */

/*
 * The peer is side 0 and owns req[0]: it writes one-unit messages, each
 * with the stamp of its position, right behind the module's consumer, as
 * fast as that consumes them, without waiting for the head the module
 * publishes. An honest peer waits for it, and can push one lap of the
 * ring per pass of the module at most; this one could keep one pass going
 * for ever. It stops after LAPS laps, so that the case ends either way.
 * A progress call makes two passes at most: its poll, and the look at the
 * rings right after the side arms for wakeups.
 */
#define LAPS 8

static struct {
	struct shm_seg *seg;
	struct shm_conn *c;
	uint64_t pos;	 /* of the next request the peer writes */
	uint64_t served; /* messages received */
	uint64_t limit;
	struct treq recv;
} fl;

static void peer_send(uint64_t pos)
{
	uint8_t *e = fl.seg->reqbuf[0] + pos % SHM_REQ_BYTES;
	struct shm_req q = {.type = SHM_R_SEND,
			    .flags = SHM_RF_INLINE,
			    .units = 1,
			    .len = 8};

	assert_int_equal(shm_units(SHM_R_SEND, 8), 1);
	memcpy(e, &q, sizeof(q));
	memcpy(e + shm_pl_off(SHM_R_SEND), &pos, 8);
	__atomic_store_n((uint32_t *)(void *)e, shm_stamp(pos),
			 __ATOMIC_RELEASE);
}

/* A message arrived: another receive, and the next message, now. */
static void flood_next(struct treq *r)
{
	assert_int_equal(r->status, RMCA_OK);
	fl.served++;
	if (fl.served >= fl.limit)
		return;
	r->done = 0;
	assert_int_equal(
		rmca_shm_recv(&fl.c->base, r->buf, sizeof(r->buf), NULL, r), 0);
	fl.pos += SHM_UNIT;
	peer_send(fl.pos);
}

static void test_request_flood_ends_each_pass(void **state)
{
	const uint64_t lap = SHM_REQ_BYTES / SHM_UNIT;
	struct shm_conn_parts parts = {.side = 1, .pidfd = -1};
	struct shm_module *m = shm_fake_module();
	uint64_t before;
	int sv[2];

	(void)state;
	memset(&fl, 0, sizeof(fl));
	fl.limit = LAPS * lap;
	fl.c = shm_fake_conn(m, &parts, &fl.seg, sv);
	assert_int_equal(rmca_shm_recv(&fl.c->base, fl.recv.buf,
				       sizeof(fl.recv.buf), NULL, &fl.recv),
			 0);
	shm_fake_on_complete = flood_next;
	peer_send(0);
	rmca_shm_progress(&m->base);
	print_message("# one progress call served %llu messages (%llu a lap)\n",
		      (unsigned long long)fl.served, (unsigned long long)lap);
	assert_false(fl.c->failed);
	assert_true(fl.served > 0);
	assert_true(fl.served <= 2 * lap);
	/* The rest is served by the passes that follow, in order. */
	for (int pass = 0; pass < 2 * LAPS && fl.served < fl.limit; pass++) {
		before = fl.served;
		rmca_shm_progress(&m->base);
		assert_true(fl.served > before &&
			    fl.served - before <= 2 * lap);
	}
	assert_int_equal(fl.served, fl.limit);
	assert_false(fl.c->failed);
	shm_fake_on_complete = NULL;
	rmca_shm_disconnect(&fl.c->base);
	rmca_shm_reap_zombies(m, true);
	close(sv[1]);
	rmca_shm_module_destroy(m);
}

/* ---- a consumer's head past everything we pushed ---- */

/*
 * The peer, the consumer of our requests, says it took more than we ever
 * pushed. Whoever reads that head first, the producer looking for room or
 * the look at the answers, ends the connection with RMCA_ERR_PROTOCOL: no
 * request of ours passes for served on its word, none waits for room for
 * ever on a connection that stays up.
 */
#define LIE_PUTS 40

static void test_head_past_our_tail_ends_the_connection(void **state)
{
	static struct treq puts[LIE_PUTS];
	static char data[SHM_INLINE_MAX];
	struct shm_conn_parts parts = {.side = 1, .pidfd = -1};
	struct shm_module *m = shm_fake_module();
	struct shm_conn *c;
	struct shm_seg *seg;
	int sv[2], ok = 0, proto = 0, open = 0;

	(void)state;
	memset(puts, 0, sizeof(puts));
	c = shm_fake_conn(m, &parts, &seg, sv);
	/* We are side 1: our requests are req[1], the peer moves its head. */
	__atomic_store_n(&seg->req[1].head, 4 * SHM_REQ_BYTES,
			 __ATOMIC_RELEASE);
	/* More than the ring holds: the producer reads the head for room. */
	for (int i = 0; i < LIE_PUTS; i++)
		assert_int_equal(rmca_shm_put(&c->base, data, sizeof(data),
					      NULL, 0x1000, 0x1, &puts[i]),
				 0);
	rmca_shm_progress(&m->base);
	for (int i = 0; i < LIE_PUTS; i++) {
		assert_true(puts[i].done <= 1);
		ok += puts[i].done && puts[i].status == RMCA_OK;
		proto += puts[i].done && puts[i].status == RMCA_ERR_PROTOCOL;
		open += !puts[i].done;
	}
	print_message("# %d puts: %d ok, %d protocol error, %d outstanding\n",
		      LIE_PUTS, ok, proto, open);
	assert_true(c->failed);
	assert_int_equal(proto, LIE_PUTS);
	rmca_shm_disconnect(&c->base);
	rmca_shm_reap_zombies(m, true);
	close(sv[1]);
	rmca_shm_module_destroy(m);
}

/* ---- a message whose pieces add up past 2^64 bytes ---- */

/*
 * A message comes in pieces (SHM_RF_MORE), each inline, and its last piece
 * may name its data in the sender's memory (cross-memory attach). The
 * peer's first piece is 8 bytes; its last claims 2^64 - 8 more: 2^64 in
 * all, which is no length. Added up in 64 bits it is 0, within any
 * receive, and the receive (whose 64 bytes were all written) would end
 * RMCA_OK with 0 bytes. It is a lie: the connection ends, the receive with
 * RMCA_ERR_PROTOCOL, once.
 */
static void test_message_pieces_past_2_64_end_the_connection(void **state)
{
	static char src[64];
	struct shm_conn_parts parts = {
		.side = 1, .pidfd = -1, .cma = true, .peer_pid = getpid()};
	struct shm_module *m = shm_fake_module();
	struct shm_req q = {.type = SHM_R_SEND,
			    .flags = SHM_RF_INLINE | SHM_RF_MORE,
			    .units = 1,
			    .len = 8};
	struct treq recv;
	struct shm_conn *c;
	struct shm_seg *seg;
	uint8_t *ring;
	int sv[2];

	(void)state;
	memset(&recv, 0, sizeof(recv));
	memset(src, 0x5a, sizeof(src));
	c = shm_fake_conn(m, &parts, &seg, sv);
	assert_int_equal(rmca_shm_recv(&c->base, recv.buf, sizeof(recv.buf),
				       NULL, &recv),
			 0);
	/* The peer is side 0: its requests are req[0]. */
	ring = seg->reqbuf[0];
	memcpy(ring, &q, sizeof(q));
	memset(ring + shm_pl_off(SHM_R_SEND), 0x11, 8);
	__atomic_store_n((uint32_t *)(void *)ring, shm_stamp(0),
			 __ATOMIC_RELEASE);
	q = (struct shm_req){.type = SHM_R_SEND,
			     .units = 1,
			     .len = UINT64_MAX - 7,
			     .laddr = (uint64_t)(uintptr_t)src};
	memcpy(ring + SHM_UNIT, &q, sizeof(q));
	__atomic_store_n((uint32_t *)(void *)(ring + SHM_UNIT),
			 shm_stamp(SHM_UNIT), __ATOMIC_RELEASE);
	rmca_shm_progress(&m->base);
	print_message("# the receive ended %d with %zu bytes\n", recv.status,
		      recv.len);
	assert_int_equal(recv.done, 1);
	assert_int_equal(recv.status, RMCA_ERR_PROTOCOL);
	assert_true(c->failed);
	rmca_shm_disconnect(&c->base);
	rmca_shm_reap_zombies(m, true);
	assert_int_equal(recv.done, 1);
	close(sv[1]);
	rmca_shm_module_destroy(m);
}

/* ---- a flood of connections on the module's socket ---- */

/*
 * accept4 of this program: while flooding, each call of the module's
 * first dials the module's socket once more (and hangs up), so that there
 * is always one more connection waiting, up to FLOOD of them.
 */
#define FLOOD 2000

static struct {
	bool on;
	struct sockaddr_un sa;
	socklen_t sl;
	int accepts, dialed;
} cf;

int accept4(int fd, struct sockaddr *sa, socklen_t *sl, int flags)
{
	static int (*real)(int, struct sockaddr *, socklen_t *, int);

	if (!real)
		real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(
			RTLD_NEXT, "accept4");
	if (cf.on) {
		cf.accepts++;
		if (cf.dialed < FLOOD) {
			int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

			if (s >= 0 &&
			    !connect(s, (struct sockaddr *)&cf.sa, cf.sl))
				cf.dialed++;
			if (s >= 0)
				close(s);
		}
	}
	return real(fd, sa, sl, flags);
}

static void test_connection_flood_ends_each_pass(void **state)
{
	struct shm_module *m = shm_fake_module();
	struct rmca_conn_args a = {.active = 0,
				   .peer_addr = &m->self,
				   .peer_addr_len = sizeof(m->self),
				   .token = 0x5eed,
				   .timeout_ms = -1};
	struct rmca_connecting *h;
	struct shm_fake_fd *lis = NULL;
	int n;

	(void)state;
	memset(&cf, 0, sizeof(cf));
	cf.sa.sun_family = AF_UNIX;
	n = snprintf(cf.sa.sun_path + 1, sizeof(cf.sa.sun_path) - 1,
		     "rmca-shm-%016llx", (unsigned long long)m->self.sock_id);
	cf.sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			    (size_t)n);
	/* A passive connect: the module's socket is served from now on. */
	assert_int_equal(rmca_shm_connect_start(&m->base, &a, &h), 0);
	for (int i = 0; i < SHM_FAKE_MAX_FDS; i++)
		if (shm_fake_fds[i].cb && shm_fake_fds[i].fd == m->lfd)
			lis = &shm_fake_fds[i];
	assert_non_null(lis);
	cf.on = true;
	lis->cb(lis->arg, EPOLLIN);
	cf.on = false;
	print_message("# one call accepted %d times, %d dialed\n", cf.accepts,
		      cf.dialed);
	assert_true(cf.accepts <= 2 * SHM_MAX_PENDING);
	assert_true(m->npending <= SHM_MAX_PENDING);
	rmca_shm_connect_abort(h);
	rmca_shm_module_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_flood_ends_each_pass),
		cmocka_unit_test(test_head_past_our_tail_ends_the_connection),
		cmocka_unit_test(
			test_message_pieces_past_2_64_end_the_connection),
		cmocka_unit_test(test_connection_flood_ends_each_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
