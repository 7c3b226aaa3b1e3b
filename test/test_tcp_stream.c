/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stream of large frames into the tcp component (tcp_harness.h): each
 * payload is read by recv() straight into the posted receive or the put's
 * region, not into the connection's read-ahead buffer to be copied from
 * there. Once a payload was large, the next header is read alone, so the
 * payload after it starts at the front of the next read; small frames
 * after it are read together again, and a large message cut short still
 * tells its sender. The module's reads of its connection are the test's
 * recv() and recvmsg(), which note where each one's bytes went.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcp_harness.h"

#define BIG    (256 * 1024)
#define NBIG   6
#define REQ(i) ((void *)(uintptr_t)(1 + (i)))

/* The module's connection, whose reads are watched (-1: none), and the
 * memory its payloads belong in: bytes read there, bytes read elsewhere
 * (the read-ahead buffer, the drain), reads that returned bytes. */
static int watched = -1;
static const char *dest_lo, *dest_hi;
static size_t direct_bytes, staged_bytes;
static long data_reads;

static void note(const void *buf, size_t n)
{
	const char *p = buf;

	if (p >= dest_lo && p + n <= dest_hi)
		direct_bytes += n;
	else
		staged_bytes += n;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	ssize_t n =
		(ssize_t)syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);

	if (fd == watched && n > 0) {
		data_reads++;
		note(buf, (size_t)n);
	}
	return n;
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	ssize_t n = (ssize_t)syscall(SYS_recvmsg, fd, msg, flags);
	size_t left = n > 0 ? (size_t)n : 0;

	if (fd == watched && n > 0)
		data_reads++;
	for (size_t i = 0; fd == watched && i < msg->msg_iovlen && left; i++) {
		size_t k = msg->msg_iov[i].iov_len < left
				   ? msg->msg_iov[i].iov_len
				   : left;

		note(msg->msg_iov[i].iov_base, k);
		left -= k;
	}
	return n;
}

static void watch(const struct th_pair *p, const char *lo, size_t len)
{
	watched = p->c->fd;
	dest_lo = lo;
	dest_hi = lo + len;
	direct_bytes = staged_bytes = 0;
	data_reads = 0;
}

static char pattern(int msg, size_t i)
{
	return (char)(msg * 31 + (int)(i % 251));
}

/* The peer's frame f and its payload, the bytes of message msg. */
static void peer_frame_of(int peer, const struct tcp_frame *f, int msg)
{
	static char pl[BIG + 64];

	for (size_t i = 0; i < f->len; i++)
		pl[i] = pattern(msg, i);
	th_peer_frame(peer, f);
	th_peer_write(peer, pl, (size_t)f->len);
}

static void pump_until(int done)
{
	for (int i = 0; i < 100000 && th_ndone < done; i++)
		th_pump();
	assert_int_equal(th_ndone, done);
}

/*
 * Six sends of 256 KiB, back to back, to a receiver that spins (one that
 * may sleep peeks at a header it holds a count for, and reads it twice):
 * only the first header's read, made before anything said the stream is
 * large, takes payload into the read-ahead buffer. Before, each header's
 * read took up to 32 KiB of the payload after it there, to be copied
 * again.
 */
static void large_sends_are_read_into_the_receive(void **state)
{
	struct th_pair p = th_pair_open();
	static char in[NBIG][BIG];

	(void)state;
	th_sleep_allowed = false;
	for (int i = 0; i < NBIG; i++)
		assert_int_equal(
			rmca_tcp_recv(&p.c->base, in[i], BIG, NULL, REQ(i)), 0);
	th_pump_idle();
	watch(&p, in[0], sizeof(in));
	for (int i = 0; i < NBIG; i++) {
		struct tcp_frame s = {
			.type = TCP_F_SEND, .id = (uint64_t)i + 1, .len = BIG};

		peer_frame_of(p.peer, &s, i);
	}
	pump_until(NBIG);
	for (int i = 0; i < NBIG; i++) {
		assert_ptr_equal(th_done[i].req, REQ(i));
		assert_int_equal(th_done[i].status, 0);
		assert_int_equal(th_done[i].len, BIG);
		for (size_t k = 0; k < BIG; k++)
			if (in[i][k] != pattern(i, k))
				fail_msg("message %d byte %zu", i, k);
	}
	/* the first read ahead, then the headers alone */
	assert_true(staged_bytes <= TCP_RX_BUF + NBIG * TCP_HDR_LEN);
	assert_int_equal(direct_bytes + staged_bytes,
			 NBIG * (TCP_HDR_LEN + (size_t)BIG));
	assert_int_equal(th_nfailed, 0);
	watched = -1;
	th_pair_close(&p);
}

/* The same for puts: their payloads are read into the target region. */
static void large_puts_are_read_into_the_region(void **state)
{
	struct th_pair p = th_pair_open();
	static char region[NBIG][BIG];
	struct rmca_module_mr *mr = NULL;
	uint64_t key;

	(void)state;
	assert_int_equal(rmca_tcp_mr_reg(&p.m->base, region, sizeof(region),
					 RMCA_ACCESS_REMOTE_WRITE, &mr),
			 0);
	key = rmca_tcp_mr_rkey(mr, &p.c->base);
	watch(&p, region[0], sizeof(region));
	for (int i = 0; i < NBIG; i++) {
		struct tcp_frame put = {.type = TCP_F_PUT,
					.id = (uint64_t)i + 1,
					.len = BIG,
					.raddr = (uintptr_t)region[i],
					.rkey = key};

		peer_frame_of(p.peer, &put, i);
	}
	th_pump_idle();
	for (int i = 0; i < NBIG; i++)
		for (size_t k = 0; k < BIG; k++)
			if (region[i][k] != pattern(i, k))
				fail_msg("put %d byte %zu", i, k);
	assert_true(staged_bytes <= TCP_RX_BUF + NBIG * TCP_HDR_LEN);
	assert_int_equal(direct_bytes + staged_bytes,
			 NBIG * (TCP_HDR_LEN + (size_t)BIG));
	assert_int_equal(th_nfailed, 0);
	watched = -1;
	rmca_tcp_conn_destroy(p.c);
	close(p.peer);
	assert_int_equal(rmca_tcp_mr_dereg(mr), 0);
	th_module_free(p.m);
}

/*
 * After a large message, 32 small ones written together are read with a
 * few reads (the header alone, then the rest at once), not one or two
 * each: reading headers alone ends with the first small payload.
 */
static void small_frames_after_a_large_one_are_read_together(void **state)
{
	enum { NSMALL = 32 };
	struct th_pair p = th_pair_open();
	static char big[BIG], small[NSMALL][8];
	uint8_t wire[NSMALL * (TCP_HDR_LEN + 8)];

	(void)state;
	assert_int_equal(rmca_tcp_recv(&p.c->base, big, BIG, NULL, REQ(0)), 0);
	for (int i = 0; i < NSMALL; i++)
		assert_int_equal(rmca_tcp_recv(&p.c->base, small[i], 8, NULL,
					       REQ(i + 1)),
				 0);
	th_pump_idle();
	{
		struct tcp_frame s = {.type = TCP_F_SEND, .id = 1, .len = BIG};

		peer_frame_of(p.peer, &s, 0);
	}
	pump_until(1);
	for (int i = 0; i < NSMALL; i++) {
		uint8_t *w = wire + (size_t)i * (TCP_HDR_LEN + 8);
		struct tcp_frame s = {
			.type = TCP_F_SEND, .id = (uint64_t)i + 2, .len = 8};

		rmca_tcp_frame_encode(&s, w);
		memset(w + TCP_HDR_LEN, i + 1, 8);
	}
	watch(&p, small[0], sizeof(small));
	assert_int_equal(th_peer_write_some(p.peer, wire, sizeof(wire)),
			 sizeof(wire));
	pump_until(1 + NSMALL);
	for (int i = 0; i < NSMALL; i++) {
		assert_int_equal(th_done[i + 1].status, 0);
		assert_int_equal(th_done[i + 1].len, 8);
		assert_int_equal(small[i][7], i + 1);
	}
	assert_true(data_reads <= 3);
	assert_int_equal(th_nfailed, 0);
	watched = -1;
	th_pair_close(&p);
}

/*
 * A large message after a large one, too long for its receive: what fits
 * lands, the receive ends truncated, and the sender is told, read from a
 * header read alone.
 */
static void large_message_cut_short_after_a_large_one(void **state)
{
	struct th_pair p = th_pair_open();
	static char in[2][BIG];
	struct tcp_frame f;

	(void)state;
	assert_int_equal(rmca_tcp_recv(&p.c->base, in[0], BIG, NULL, REQ(0)),
			 0);
	assert_int_equal(
		rmca_tcp_recv(&p.c->base, in[1], BIG / 2, NULL, REQ(1)), 0);
	th_pump_idle();
	for (int i = 0; i < 2; i++) {
		struct tcp_frame s = {
			.type = TCP_F_SEND, .id = (uint64_t)i + 1, .len = BIG};

		peer_frame_of(p.peer, &s, i);
	}
	pump_until(2);
	assert_int_equal(th_done[0].status, 0);
	assert_int_equal(th_done[1].status, RMCA_ERR_TRUNCATED);
	for (size_t k = 0; k < BIG / 2; k++)
		if (in[1][k] != pattern(1, k))
			fail_msg("byte %zu", k);
	/* the counts of the first, then the refusal of the second */
	do
		assert_true(th_peer_read_frame(p.peer, &f));
	while (f.type == TCP_F_ACK);
	assert_int_equal(f.type, TCP_F_RESP);
	assert_int_equal(f.id, 2);
	assert_int_equal(f.status, RMCA_ERR_TRUNCATED);
	th_pair_close(&p);
}

/*
 * A message too long for a small receive, its header read before its
 * payload came: the bytes that fit land first, then the rest is dropped.
 * Before, once the part to drop was TCP_RX_DIRECT or more, it was read
 * first, and the receive kept none of the message.
 */
static void message_cut_short_keeps_what_fits(void **state)
{
	enum { SMALL = 100, LEN = 24 * 1024 };
	struct th_pair p = th_pair_open();
	static char in[SMALL], pl[LEN];
	struct tcp_frame s = {.type = TCP_F_SEND, .id = 1, .len = LEN};
	struct tcp_frame f;

	(void)state;
	assert_int_equal(rmca_tcp_recv(&p.c->base, in, SMALL, NULL, REQ(0)), 0);
	th_pump_idle();
	th_peer_frame(p.peer, &s);
	th_pump_idle(); /* the header alone is read */
	for (size_t i = 0; i < LEN; i++)
		pl[i] = pattern(0, i);
	th_peer_write(p.peer, pl, LEN);
	pump_until(1);
	assert_int_equal(th_done[0].status, RMCA_ERR_TRUNCATED);
	for (size_t k = 0; k < SMALL; k++)
		if (in[k] != pattern(0, k))
			fail_msg("byte %zu", k);
	do
		assert_true(th_peer_read_frame(p.peer, &f));
	while (f.type == TCP_F_ACK);
	assert_int_equal(f.type, TCP_F_RESP);
	assert_int_equal(f.status, RMCA_ERR_TRUNCATED);
	th_pair_close(&p);
}

/* What a case that failed midway may have left set. */
static int reset(void **state)
{
	(void)state;
	watched = -1;
	th_sleep_allowed = true;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(large_sends_are_read_into_the_receive,
					  reset),
		cmocka_unit_test_teardown(large_puts_are_read_into_the_region,
					  reset),
		cmocka_unit_test_teardown(
			small_frames_after_a_large_one_are_read_together,
			reset),
		cmocka_unit_test_teardown(
			large_message_cut_short_after_a_large_one, reset),
		cmocka_unit_test_teardown(message_cut_short_keeps_what_fits,
					  reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
