/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cumulative counts of the tcp wire (frame.h), seen from a raw peer
 * (tcp_harness.h): which frames go, how few, and that a count a peer
 * cannot mean (beyond what was sent, going backwards, more credits than
 * receives) ends that one connection with the reason logged.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcp_harness.h"

#define MiB    (1u << 20)
#define REQ(n) ((void *)(uintptr_t)(n))
#define MAXF   64

static void peer_ack(int peer, uint32_t acked, uint32_t credits)
{
	struct tcp_frame f = {
		.type = TCP_F_ACK, .acked = acked, .credits = credits};

	th_peer_frame(peer, &f);
}

/* The peer sends message id of len bytes, granting credits. */
static void peer_send(int peer, uint64_t id, const void *data, uint32_t len,
		      uint32_t credits)
{
	struct tcp_frame s = {
		.type = TCP_F_SEND, .id = id, .len = len, .credits = credits};

	th_peer_frame(peer, &s);
	th_peer_write(peer, data, len);
}

/* The peer's message placed: the first completion, within 100 passes. */
static void pump_until_done(void)
{
	for (int i = 0; i < 100 && !th_ndone; i++)
		th_pump();
	assert_int_equal(th_ndone, 1);
}

/* Every frame the target has written by the time it has nothing more to
 * do, payloads skipped; returns how many (at most MAXF kept in f). */
static int frames_ready(int peer, struct tcp_frame *f)
{
	uint8_t hdr[TCP_HDR_LEN];
	int n = 0;

	th_pump_idle();
	for (;;) {
		struct tcp_frame g;
		char skip[256];
		size_t left;

		if (recv(peer, hdr, sizeof(hdr), MSG_PEEK | MSG_DONTWAIT) <
		    (ssize_t)sizeof(hdr))
			return n;
		assert_true(th_peer_read_frame(peer, &g));
		for (left = g.type == TCP_F_GET ? 0 : (size_t)g.len; left;) {
			size_t k = left < sizeof(skip) ? left : sizeof(skip);

			assert_int_equal(th_peer_read(peer, skip, k), k);
			left -= k;
		}
		if (n < MAXF)
			f[n] = g;
		n++;
	}
}

/* The one frame the target writes by the time it is idle, of type t. */
static struct tcp_frame one_frame(int peer, uint8_t t)
{
	struct tcp_frame f[MAXF];

	assert_int_equal(frames_ready(peer, f), 1);
	assert_int_equal(f[0].type, t);
	return f[0];
}

/*
 * A message the application answers: the answer's header acknowledges it,
 * and nothing else goes (version 1 sent a RESP frame first).
 */
static void reply_carries_the_acknowledgement(void **state)
{
	struct th_pair p = th_pair_open();
	char in[8], out[8] = "pong", ping[8] = "ping";
	struct tcp_frame f;

	assert_int_equal(
		rmca_tcp_recv(&p.c->base, in, sizeof(in), NULL, REQ(1)), 0);
	f = one_frame(p.peer, TCP_F_ACK);
	assert_int_equal(f.credits, 1);

	peer_send(p.peer, 1, ping, sizeof(ping), 1);
	pump_until_done();
	assert_int_equal(th_done[0].status, 0);
	assert_memory_equal(in, ping, 8);
	/* The application answers before the held count would go alone. */
	assert_int_equal(
		rmca_tcp_send(&p.c->base, out, sizeof(out), NULL, REQ(2)), 0);
	f = one_frame(p.peer, TCP_F_SEND);
	assert_int_equal(f.acked, 1);
	assert_int_equal(f.credits, 1);

	/* the peer's count completes the answer */
	peer_ack(p.peer, 1, 1);
	th_pump_idle();
	assert_int_equal(th_ndone, 2);
	assert_ptr_equal(th_done[1].req, REQ(2));
	assert_int_equal(th_done[1].status, 0);
	assert_int_equal(th_nfailed, 0);

	th_pair_close(&p);
}

/*
 * The application answers a message with a send that has no credit to go:
 * the count held for that answer goes alone at once (else the peer, its
 * message unacknowledged and the answer waiting for its credit, waits on
 * a count that never comes).
 */
static void held_count_goes_when_the_answer_cannot(void **state)
{
	struct th_pair p = th_pair_open();
	char in[8], out[8] = "pong", ping[8] = "ping";
	struct tcp_frame f[MAXF];

	assert_int_equal(
		rmca_tcp_recv(&p.c->base, in, sizeof(in), NULL, REQ(1)), 0);
	assert_int_equal(frames_ready(p.peer, f), 1);
	peer_send(p.peer, 1, ping, sizeof(ping), 0); /* no credit granted */
	pump_until_done();
	assert_true(p.c->hold);
	assert_int_equal(
		rmca_tcp_send(&p.c->base, out, sizeof(out), NULL, REQ(2)), 0);
	assert_int_equal(one_frame(p.peer, TCP_F_ACK).acked, 1);
	/* the credit releases the answer */
	peer_ack(p.peer, 0, 1);
	one_frame(p.peer, TCP_F_SEND);
	assert_int_equal(th_nfailed, 0);

	th_pair_close(&p);
}

/* Puts arriving together are acknowledged by one frame of counts. */
static void batch_of_puts_gets_one_ack(void **state)
{
	enum { NPUT = 50 };
	struct th_pair p = th_pair_open();
	static char region[NPUT * 8];
	uint8_t wire[NPUT * (TCP_HDR_LEN + 8)];
	struct rmca_module_mr *mr = NULL;
	uint64_t key;

	assert_int_equal(rmca_tcp_mr_reg(&p.m->base, region, sizeof(region),
					 RMCA_ACCESS_REMOTE_WRITE, &mr),
			 0);
	key = rmca_tcp_mr_rkey(mr, &p.c->base);
	for (int i = 0; i < NPUT; i++) {
		uint8_t *w = wire + (size_t)i * (TCP_HDR_LEN + 8);
		struct tcp_frame put = {.type = TCP_F_PUT,
					.id = (uint64_t)i + 1,
					.len = 8,
					.raddr = (uintptr_t)region + 8 * i,
					.rkey = key};

		rmca_tcp_frame_encode(&put, w);
		memset(w + TCP_HDR_LEN, i + 1, 8);
	}
	assert_int_equal(th_peer_write_some(p.peer, wire, sizeof(wire)),
			 sizeof(wire));
	assert_int_equal(one_frame(p.peer, TCP_F_ACK).acked, NPUT);
	for (int i = 0; i < NPUT; i++)
		assert_int_equal(region[8 * i + 7], i + 1);
	assert_int_equal(th_nfailed, 0);

	rmca_tcp_conn_destroy(p.c);
	close(p.peer);
	assert_int_equal(rmca_tcp_mr_dereg(mr), 0);
	th_module_free(p.m);
}

/*
 * Receives posted one by one are told only when the peer knows of fewer
 * unused ones than are untold: a handful of frames for 64 receives (one
 * each in version 1), the last telling at least half of them.
 */
static void receives_are_told_in_few_frames(void **state)
{
	struct th_pair p = th_pair_open();
	static char in[64][8];
	struct tcp_frame f[MAXF];
	int n;

	for (int i = 0; i < 64; i++)
		assert_int_equal(
			rmca_tcp_recv(&p.c->base, in[i], 8, NULL, REQ(i)), 0);
	n = frames_ready(p.peer, f);
	assert_true(n >= 1 && n <= 7);
	for (int i = 0; i < n; i++) {
		assert_int_equal(f[i].type, TCP_F_ACK);
		assert_true(i == 0 || f[i].credits > f[i - 1].credits);
	}
	assert_true(f[n - 1].credits >= 32 && f[n - 1].credits <= 64);
	assert_int_equal(th_nfailed, 0);

	th_pair_close(&p);
}

/* Sends go only as far as the peer's count of receives allows. */
static void sends_wait_for_credits_counted(void **state)
{
	struct th_pair p = th_pair_open();
	char out[3][8] = {"one", "two", "three"};
	struct tcp_frame f[MAXF];

	for (int i = 0; i < 3; i++)
		assert_int_equal(
			rmca_tcp_send(&p.c->base, out[i], 8, NULL, REQ(i + 1)),
			0);
	assert_int_equal(frames_ready(p.peer, f), 0);
	peer_ack(p.peer, 0, 1);
	one_frame(p.peer, TCP_F_SEND);
	peer_ack(p.peer, 0, 3);
	assert_int_equal(frames_ready(p.peer, f), 2);
	assert_int_equal(f[0].type, TCP_F_SEND);
	assert_int_equal(f[1].type, TCP_F_SEND);
	assert_int_equal(th_ndone, 0);
	/* one count acknowledges the first two, in order */
	peer_ack(p.peer, 2, 3);
	th_pump_idle();
	assert_int_equal(th_ndone, 2);
	assert_ptr_equal(th_done[0].req, REQ(1));
	assert_ptr_equal(th_done[1].req, REQ(2));
	peer_ack(p.peer, 3, 3);
	th_pump_idle();
	assert_int_equal(th_ndone, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(th_done[i].status, 0);
	assert_int_equal(th_nfailed, 0);

	th_pair_close(&p);
}

/*
 * A message longer than its receive: what fits lands, nothing past it; the
 * count leaves the message out and a RESP refuses its send by id, after
 * the message before it was counted; then the connection ends.
 */
static void truncation_reaches_the_sender_by_a_refusal(void **state)
{
	struct th_pair p = th_pair_open();
	char in[2][32], big[64];
	struct tcp_frame f[MAXF];

	memset(in, 0x55, sizeof(in));
	memset(big, 'b', sizeof(big));
	assert_int_equal(rmca_tcp_recv(&p.c->base, in[0], 32, NULL, REQ(1)), 0);
	assert_int_equal(rmca_tcp_recv(&p.c->base, in[1], 16, NULL, REQ(2)), 0);
	assert_true(frames_ready(p.peer, f) >= 1);

	peer_send(p.peer, 1, big, 8, 0);
	peer_send(p.peer, 2, big, 64, 0);
	f[0] = one_frame(p.peer, TCP_F_RESP);
	assert_int_equal(f[0].id, 2);
	assert_int_equal(f[0].status, RMCA_ERR_TRUNCATED);
	assert_int_equal(f[0].acked, 1);
	assert_true(th_peer_closed(p.peer));

	assert_int_equal(th_ndone, 2);
	assert_int_equal(th_done[0].status, 0);
	assert_int_equal(th_done[0].len, 8);
	assert_int_equal(th_done[1].status, RMCA_ERR_TRUNCATED);
	assert_int_equal(th_done[1].len, 16);
	assert_memory_equal(in[1], big, 16);
	for (int k = 16; k < 32; k++)
		assert_int_equal(in[1][k], 0x55);
	assert_int_equal(th_nfailed, 1);

	th_pair_close(&p);
}

/*
 * The initiator's side of a refusal: it names the oldest send not
 * acknowledged, which ends with the status given; a refusal naming
 * anything else is a protocol error.
 */
static void refusal_names_the_oldest_unacknowledged(void **state)
{
	for (int bad = 0; bad < 2; bad++) {
		struct th_pair p = th_pair_open();
		char out[2][8] = {"one", "two"};
		struct tcp_frame f[MAXF], r = {.type = TCP_F_RESP,
					       .status = RMCA_ERR_TRUNCATED,
					       .acked = 1,
					       .credits = 2};

		for (int i = 0; i < 2; i++)
			assert_int_equal(rmca_tcp_send(&p.c->base, out[i], 8,
						       NULL, REQ(i + 1)),
					 0);
		peer_ack(p.peer, 0, 2);
		assert_int_equal(frames_ready(p.peer, f), 2);
		r.id = bad ? f[0].id : f[1].id;
		th_peer_frame(p.peer, &r);
		th_pump_idle();
		assert_int_equal(th_ndone, 2);
		assert_ptr_equal(th_done[0].req, REQ(1));
		assert_ptr_equal(th_done[1].req, REQ(2));
		if (bad) {
			/* the first was acknowledged: nothing to refuse */
			assert_int_equal(th_done[0].status, 0);
			assert_int_equal(th_done[1].status, RMCA_ERR_PROTOCOL);
			assert_non_null(strstr(th_last_log,
					       "answer to no outstanding"));
		} else {
			assert_int_equal(th_done[0].status, 0);
			assert_int_equal(th_done[1].status, RMCA_ERR_TRUNCATED);
		}
		assert_int_equal(th_nfailed, 1);

		th_pair_close(&p);
	}
}

/* A count no peer can mean ends the connection with its reason logged;
 * the op it would have completed ends with RMCA_ERR_PROTOCOL. */
static void expect_refused_count(const struct th_pair *p, const char *why)
{
	assert_true(th_peer_closed(p->peer));
	assert_int_equal(th_nfailed, 1);
	assert_true(p->c->failed);
	assert_non_null(strstr(th_last_log, why));
}

static void ack_beyond_what_was_sent_closes(void **state)
{
	struct th_pair p = th_pair_open();
	char src[8] = "data";
	struct tcp_frame f[MAXF];

	assert_int_equal(
		rmca_tcp_put(&p.c->base, src, 8, NULL, 0x1000, 0x2222, REQ(1)),
		0);
	assert_int_equal(frames_ready(p.peer, f), 1);
	peer_ack(p.peer, 2, 0);
	expect_refused_count(&p, "acknowledges more than was sent");
	assert_int_equal(th_ndone, 1);
	assert_int_equal(th_done[0].status, RMCA_ERR_PROTOCOL);

	th_pair_close(&p);
}

static void ack_going_backwards_closes(void **state)
{
	struct th_pair p = th_pair_open();
	char src[8] = "data";
	struct tcp_frame f[MAXF];

	for (int i = 0; i < 2; i++)
		assert_int_equal(rmca_tcp_put(&p.c->base, src, 8, NULL, 0x1000,
					      0x2222, REQ(i + 1)),
				 0);
	/* the second waited for the pass after the first */
	assert_int_equal(rmca_tcp_progress(&p.m->base), 0);
	assert_int_equal(frames_ready(p.peer, f), 2);
	peer_ack(p.peer, 2, 0);
	th_pump_idle();
	assert_int_equal(th_ndone, 2);
	assert_int_equal(th_done[0].status, 0);
	assert_int_equal(th_done[1].status, 0);
	peer_ack(p.peer, 1, 0);
	expect_refused_count(&p, "went backwards");

	th_pair_close(&p);
}

/*
 * A put still being written from the application's buffer cannot have
 * arrived: its count is refused, and the put does not complete RMCA_OK
 * while its buffer is still read.
 */
static void ack_of_a_put_still_on_its_way_closes(void **state)
{
	struct th_pair p = th_pair_open();
	char *src = malloc(8 * MiB);
	struct tcp_frame f;

	assert_non_null(src);
	memset(src, 1, 8 * MiB);
	assert_int_equal(rmca_tcp_put(&p.c->base, src, 8 * MiB, NULL, 0x1000,
				      0x2222, REQ(1)),
			 0);
	assert_true(th_peer_read_frame(p.peer, &f));
	assert_int_equal(f.type, TCP_F_PUT);
	assert_int_equal(p.c->by_count_out, 0); /* the payload is on its way */
	peer_ack(p.peer, 1, 0);
	expect_refused_count(&p, "acknowledges more than was sent");
	assert_int_equal(th_ndone, 1);
	assert_int_equal(th_done[0].status, RMCA_ERR_PROTOCOL);

	th_pair_close(&p);
	free(src);
}

static void credits_beyond_receives_close(void **state)
{
	struct th_pair p = th_pair_open();

	peer_ack(p.peer, 0, TCP_MAX_OPS + 1);
	expect_refused_count(&p, "more credits than receives");

	th_pair_close(&p);
}

static void credits_going_backwards_close(void **state)
{
	struct th_pair p = th_pair_open();

	peer_ack(p.peer, 0, 5);
	th_pump_idle();
	assert_false(p.c->failed);
	peer_ack(p.peer, 0, 4);
	expect_refused_count(&p, "credit count went backwards");

	th_pair_close(&p);
}

/* Only the connection that lied ends: another one of the module goes on. */
static void a_lying_peer_ends_only_its_connection(void **state)
{
	struct th_pair p = th_pair_open();
	int p2;
	struct tcp_conn *c2 = th_conn(p.m, &p2);
	char src[8] = "data";
	struct tcp_frame f[MAXF];

	peer_ack(p.peer, 1, 0);
	assert_true(th_peer_closed(p.peer));
	assert_true(p.c->failed);
	assert_int_equal(
		rmca_tcp_put(&c2->base, src, 8, NULL, 0x1000, 0x2222, REQ(1)),
		0);
	assert_int_equal(frames_ready(p2, f), 1);
	peer_ack(p2, 1, 0);
	th_pump_idle();
	assert_int_equal(th_ndone, 1);
	assert_int_equal(th_done[0].status, 0);
	assert_false(c2->failed);
	assert_int_equal(th_nfailed, 1);

	rmca_tcp_conn_destroy(c2);
	close(p2);
	th_pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reply_carries_the_acknowledgement),
		cmocka_unit_test(held_count_goes_when_the_answer_cannot),
		cmocka_unit_test(batch_of_puts_gets_one_ack),
		cmocka_unit_test(receives_are_told_in_few_frames),
		cmocka_unit_test(sends_wait_for_credits_counted),
		cmocka_unit_test(truncation_reaches_the_sender_by_a_refusal),
		cmocka_unit_test(refusal_names_the_oldest_unacknowledged),
		cmocka_unit_test(ack_beyond_what_was_sent_closes),
		cmocka_unit_test(ack_going_backwards_closes),
		cmocka_unit_test(ack_of_a_put_still_on_its_way_closes),
		cmocka_unit_test(credits_beyond_receives_close),
		cmocka_unit_test(credits_going_backwards_close),
		cmocka_unit_test(a_lying_peer_ends_only_its_connection),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
