/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Batched reads and writes of the tcp component (tcp_harness.h). Only the
 * connections' own events drive the modules here, never their progress op:
 * that is all a context sleeping on its wait fd gets, so a frame held back
 * for a later write with nothing due to bring the connection back would
 * stall these tests. The modules' sendmsg() is the test's, which can cut
 * a write short.
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

#define NMSG	    300
#define NRECV	    8
#define SEND_TAG(i) ((void *)(uintptr_t)(100000 + (i)))
#define RECV_TAG(i) ((void *)(uintptr_t)(1 + (i)))

/* The next cut_writes writes of the modules (sendmsg() or send()) take at
 * most cut_take bytes each; none (EAGAIN, as from a full socket) when 0. */
static int cut_writes;
static size_t cut_take;
/* Frames written whole with send(), copied (a small frame), and with
 * sendmsg(). */
static long sends, sendmsgs;

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct iovec iov[64];
	struct msghdr m = *msg;
	size_t left = cut_take;

	sendmsgs++;
	if (cut_writes > 0) {
		cut_writes--;
		if (!cut_take) {
			errno = EAGAIN;
			return -1;
		}
		m.msg_iov = iov;
		m.msg_iovlen = 0;
		for (size_t i = 0; i < msg->msg_iovlen && i < 64 && left; i++) {
			iov[i] = msg->msg_iov[i];
			if (iov[i].iov_len > left)
				iov[i].iov_len = left;
			left -= iov[i].iov_len;
			m.msg_iovlen++;
		}
		msg = &m;
	}
	return (ssize_t)syscall(SYS_sendmsg, fd, msg, flags);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	sends++;
	if (cut_writes > 0) {
		cut_writes--;
		if (!cut_take) {
			errno = EAGAIN;
			return -1;
		}
		if (len > cut_take)
			len = cut_take;
	}
	return (ssize_t)syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

static int tag_of(void *req)
{
	return (int)(uintptr_t)req;
}

/* Frames queued on c and not written yet. */
static int queued(const struct tcp_conn *c)
{
	int n = 0;

	for (const struct rmca_list *l = c->outq.next; l != &c->outq;
	     l = l->next)
		n++;
	return n;
}

/*
 * Only one side sends, many more messages than receives are posted, and
 * the receiver posts a new receive for each message it gets: credits held
 * back while the sender still has one and sends held back behind sends in
 * flight all go out, every message arrives once, in order, and every send
 * completes.
 */
static void one_way_stream_through_a_small_window(void **state)
{
	struct tcp_module *a = th_module(), *b = th_module();
	struct tcp_conn *ca, *cb;
	static uint32_t out[NMSG], in[NRECV];
	int sends_done = 0, recvs_done = 0, next_recv = 0, seen = 0;

	th_conn_pair(a, b, &ca, &cb);
	for (int i = 0; i < NRECV; i++, next_recv++)
		assert_int_equal(rmca_tcp_recv(&cb->base, &in[i], sizeof(in[i]),
					       NULL, RECV_TAG(i)),
				 0);
	for (int i = 0; i < NMSG; i++) {
		out[i] = 0xc0de0000u + (uint32_t)i;
		assert_int_equal(rmca_tcp_send(&ca->base, &out[i],
					       sizeof(out[i]), NULL,
					       SEND_TAG(i)),
				 0);
	}
	for (int round = 0; sends_done < NMSG || recvs_done < NMSG; round++) {
		bool any = th_pump();

		for (; seen < th_ndone && seen < TH_MAX_DONE; seen++) {
			int t = tag_of(th_done[seen].req);

			assert_int_equal(th_done[seen].status, 0);
			if (t >= 100000) {
				assert_int_equal(t - 100000, sends_done);
				sends_done++;
				continue;
			}
			/* receive k lands in in[k % NRECV], message k */
			assert_int_equal(t - 1, recvs_done);
			assert_int_equal(th_done[seen].len, sizeof(uint32_t));
			assert_int_equal(in[recvs_done % NRECV],
					 0xc0de0000u + (uint32_t)recvs_done);
			recvs_done++;
			if (next_recv < NMSG) {
				assert_int_equal(
					rmca_tcp_recv(&cb->base,
						      &in[next_recv % NRECV],
						      sizeof(uint32_t), NULL,
						      RECV_TAG(next_recv)),
					0);
				next_recv++;
				any = true;
			}
		}
		assert_true(seen == th_ndone); /* none went unrecorded */
		th_ndone = seen = 0;
		/* Nothing moved and nothing can: stalled. */
		assert_true(any);
		assert_true(round < 100000);
	}
	assert_int_equal(th_nfailed, 0);
	assert_int_equal(queued(ca), 0);
	assert_int_equal(queued(cb), 0);

	rmca_tcp_conn_destroy(ca);
	rmca_tcp_conn_destroy(cb);
	th_module_free(a);
	th_module_free(b);
}

/*
 * Puts posted while one is in flight wait, and leave together when its
 * answer comes; all of them complete.
 */
static void puts_behind_one_in_flight_leave_together(void **state)
{
	struct tcp_module *a = th_module(), *b = th_module();
	struct tcp_conn *ca, *cb;
	static char region[64 * 8], src[64 * 8];
	struct rmca_module_mr *mr = NULL;
	uint64_t key;

	th_conn_pair(a, b, &ca, &cb);
	assert_int_equal(rmca_tcp_mr_reg(&b->base, region, sizeof(region),
					 RMCA_ACCESS_REMOTE_WRITE, &mr),
			 0);
	key = rmca_tcp_mr_rkey(mr, &cb->base);
	assert_true(key != 0);
	for (int i = 0; i < 64; i++) {
		memset(src + 8 * i, i + 1, 8);
		assert_int_equal(
			rmca_tcp_put(&ca->base, src + 8 * i, 8, NULL,
				     (uintptr_t)region + 8 * (unsigned)i, key,
				     SEND_TAG(i)),
			0);
	}
	/* The first went out at once, the others wait for its answer. */
	assert_int_equal(queued(ca), 63);
	th_pump_idle();
	assert_int_equal(th_ndone, 64);
	for (int i = 0; i < 64; i++)
		assert_int_equal(th_done[i].status, 0);
	assert_memory_equal(region, src, sizeof(region));
	assert_int_equal(queued(ca), 0);

	rmca_tcp_conn_destroy(ca);
	rmca_tcp_conn_destroy(cb);
	assert_int_equal(rmca_tcp_mr_dereg(mr), 0);
	th_module_free(a);
	th_module_free(b);
}

/*
 * A message longer than its receive, among others sent in one batch: the
 * receive and the send both end RMCA_ERR_TRUNCATED, the messages before it
 * are delivered whole, nothing is written past the receive.
 */
static void truncation_reaches_the_sender_in_a_batch(void **state)
{
	struct tcp_module *a = th_module(), *b = th_module();
	struct tcp_conn *ca, *cb;
	static char in[3][32], out[3][64];
	int send_status[3] = {1, 1, 1}, recv_status[3] = {1, 1, 1};
	size_t recv_len[3] = {0};

	th_conn_pair(a, b, &ca, &cb);
	memset(in, 0x55, sizeof(in));
	for (int i = 0; i < 3; i++) {
		memset(out[i], 'a' + i, sizeof(out[i]));
		assert_int_equal(rmca_tcp_recv(&cb->base, in[i],
					       i == 1 ? 16 : 32, NULL,
					       RECV_TAG(i)),
				 0);
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(rmca_tcp_send(&ca->base, out[i],
					       i == 1 ? 64 : 32, NULL,
					       SEND_TAG(i)),
				 0);
	th_pump_idle();
	for (int i = 0; i < th_ndone && i < TH_MAX_DONE; i++) {
		int t = tag_of(th_done[i].req);

		if (t >= 100000) {
			send_status[t - 100000] = th_done[i].status;
		} else {
			recv_status[t - 1] = th_done[i].status;
			recv_len[t - 1] = th_done[i].len;
		}
	}
	assert_int_equal(recv_status[0], 0);
	assert_int_equal(recv_len[0], 32);
	assert_memory_equal(in[0], out[0], 32);
	assert_int_equal(send_status[0], 0);
	assert_int_equal(recv_status[1], RMCA_ERR_TRUNCATED);
	assert_int_equal(send_status[1], RMCA_ERR_TRUNCATED);
	assert_memory_equal(in[1], out[1], 16);
	for (int k = 16; k < 32; k++)
		assert_int_equal(in[1][k], 0x55);
	/* the connection failed there: the third ended with it */
	assert_int_not_equal(send_status[2], 0);
	assert_int_not_equal(send_status[2], 1);
	assert_int_not_equal(recv_status[2], 0);

	rmca_tcp_conn_destroy(ca);
	rmca_tcp_conn_destroy(cb);
	th_module_free(a);
	th_module_free(b);
}

/*
 * Frames as a raw peer may cut them: hundreds in one write, headers and
 * payloads split a byte at a time, a payload large enough to be read
 * straight into the region. Each is placed and answered once, in order.
 */
static void frames_cut_anywhere_are_read_whole(void **state)
{
	struct tcp_module *m = th_module();
	int peer;
	struct tcp_conn *c = th_conn(m, &peer);
	enum { NPUT = 400, BIG = 1 << 20 };
	size_t wire_len = (size_t)NPUT * (TCP_HDR_LEN + 8);
	uint8_t *wire = malloc(wire_len), hdr[TCP_HDR_LEN];
	char *region = calloc(1, BIG), *big = malloc(BIG);
	struct rmca_module_mr *mr = NULL;
	struct tcp_frame f;
	uint64_t key;
	uint64_t id = 1;

	assert_non_null(wire);
	assert_non_null(region);
	assert_non_null(big);
	assert_int_equal(rmca_tcp_mr_reg(&m->base, region, BIG,
					 RMCA_ACCESS_REMOTE_WRITE, &mr),
			 0);
	key = rmca_tcp_mr_rkey(mr, &c->base);
	/* many small puts in one write */
	for (int i = 0; i < NPUT; i++, id++) {
		uint8_t *p = wire + (size_t)i * (TCP_HDR_LEN + 8);

		f = (struct tcp_frame){.type = TCP_F_PUT,
				       .id = id,
				       .len = 8,
				       .raddr = (uintptr_t)region +
						8 * (unsigned)i,
				       .rkey = key};
		rmca_tcp_frame_encode(&f, p);
		memset(p + TCP_HDR_LEN, i & 0xff, 8);
	}
	th_peer_write(peer, wire, wire_len);
	/* one put cut a byte at a time, header and payload */
	f = (struct tcp_frame){.type = TCP_F_PUT,
			       .id = id++,
			       .len = 8,
			       .raddr = (uintptr_t)region + BIG - 8,
			       .rkey = key};
	rmca_tcp_frame_encode(&f, hdr);
	for (size_t k = 0; k < TCP_HDR_LEN; k++) {
		th_peer_write(peer, hdr + k, 1);
		th_pump_idle();
	}
	for (int k = 0; k < 8; k++) {
		th_peer_write(peer, "\x7e", 1);
		th_pump_idle();
	}
	/* a large one, read straight into the region */
	memset(big, 0x42, BIG);
	f = (struct tcp_frame){.type = TCP_F_PUT,
			       .id = id++,
			       .len = BIG / 2,
			       .raddr = (uintptr_t)region + BIG / 4,
			       .rkey = key};
	th_peer_frame(peer, &f);
	th_peer_write(peer, big, BIG / 2);

	/* Acknowledged by the count, which only goes forward, to the last. */
	for (uint32_t seen = 0; seen < id - 1;) {
		assert_true(th_peer_read_frame(peer, &f));
		assert_int_equal(f.type, TCP_F_ACK);
		assert_true(f.acked > seen);
		assert_true(f.acked <= id - 1);
		seen = f.acked;
	}
	for (int i = 0; i < NPUT && 8 * (size_t)i < BIG / 4; i++)
		for (int k = 0; k < 8; k++)
			assert_int_equal((uint8_t)region[8 * i + k],
					 (uint8_t)(i & 0xff));
	for (size_t k = BIG / 4; k < BIG / 4 + BIG / 2; k++)
		assert_int_equal(region[k], 0x42);
	for (int k = 0; k < 8; k++)
		assert_int_equal(region[BIG - 8 + k], 0x7e);
	assert_int_equal(th_nfailed, 0);

	rmca_tcp_conn_destroy(c);
	close(peer);
	assert_int_equal(rmca_tcp_mr_dereg(mr), 0);
	th_module_free(m);
	free(wire);
	free(region);
	free(big);
}

/* Pump until c has completed n operations in all. */
static void pump_until_done(int n)
{
	for (int i = 0; th_ndone < n; i++) {
		assert_true(th_pump());
		assert_true(i < 100000);
	}
}

/*
 * The answer to a message waits for the reply the application posts, and
 * leaves with it in one write; with no reply, it leaves at the next pass
 * all the same (the wakeup it armed comes at once), so the sender never
 * waits on an application that does not answer.
 */
static void answer_rides_on_the_reply_or_goes_alone(void **state)
{
	struct tcp_module *a = th_module(), *b = th_module();
	struct tcp_conn *ca, *cb;
	static char ping[8] = "ping", pong[8] = "pong", ina[8], inb[8];

	th_conn_pair(a, b, &ca, &cb);
	assert_int_equal(rmca_tcp_recv(&ca->base, ina, 8, NULL, RECV_TAG(0)),
			 0);
	assert_int_equal(rmca_tcp_recv(&cb->base, inb, 8, NULL, RECV_TAG(1)),
			 0);
	th_pump_idle(); /* credits */
	th_ndone = 0;

	/* a reply carries the answer */
	assert_int_equal(rmca_tcp_send(&ca->base, ping, 8, NULL, SEND_TAG(0)),
			 0);
	pump_until_done(1);
	assert_ptr_equal(th_done[0].req, RECV_TAG(1));
	assert_true(cb->hold);
	assert_int_equal(queued(cb), 0); /* the count, held ... */
	assert_true(cb->done_told != cb->done_in);
	assert_int_equal(rmca_tcp_send(&cb->base, pong, 8, NULL, SEND_TAG(1)),
			 0);
	assert_int_equal(queued(cb), 0); /* ... went with the reply */
	assert_true(cb->done_told == cb->done_in);
	th_pump_idle();
	assert_int_equal(th_ndone, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(th_done[i].status, 0);
	assert_memory_equal(inb, ping, 8);
	assert_memory_equal(ina, pong, 8);

	/* no reply: the answer goes at the next pass */
	th_ndone = 0;
	assert_int_equal(rmca_tcp_recv(&cb->base, inb, 8, NULL, RECV_TAG(2)),
			 0);
	th_pump_idle();
	th_ndone = 0;
	assert_int_equal(rmca_tcp_send(&ca->base, ping, 8, NULL, SEND_TAG(2)),
			 0);
	pump_until_done(1);
	assert_ptr_equal(th_done[0].req, RECV_TAG(2));
	pump_until_done(2);
	assert_ptr_equal(th_done[1].req, SEND_TAG(2));
	assert_int_equal(th_done[1].status, 0);
	assert_false(cb->hold);
	assert_int_equal(th_nfailed, 0);

	rmca_tcp_conn_destroy(ca);
	rmca_tcp_conn_destroy(cb);
	th_module_free(a);
	th_module_free(b);
}

enum cut_post { CUT_SEND, CUT_PUT, CUT_FADD, CUT_PUT_ACK };

#define NO_CUT ((size_t)-1)

/* The module's next write cut after take bytes (NO_CUT: not cut). */
static void cut_next(size_t take)
{
	cut_writes = take != NO_CUT;
	cut_take = take;
}

/* After a post cut after take bytes: the rest waits in the queue, for
 * room; not cut, the frame went whole. */
static void check_cut(const struct tcp_conn *c, size_t take)
{
	assert_int_equal(cut_writes, 0);
	assert_int_equal(queued(c), take != NO_CUT);
	assert_int_equal(!!(c->events & EPOLLOUT), take != NO_CUT);
}

/* Pump until tag has completed n times; every completion is OK. */
static void pump_until_tag(void *tag, int n)
{
	for (int round = 0;; round++) {
		int seen = 0;

		for (int i = 0; i < th_ndone; i++) {
			assert_int_equal(th_done[i].status, 0);
			seen += th_done[i].req == tag;
		}
		assert_true(seen <= n);
		if (seen == n)
			return;
		assert_true(th_pump());
		assert_true(round < 100000);
	}
}

/*
 * A ping-pong of three rounds whose posts are cut after take bytes, a
 * receive posted ahead and each reposted as it completes: each message and
 * reply arrives whole and every op completes once, OK. The reply ends the
 * hold of the counts it carries; from the second round on the message was
 * read with MSG_PEEK (the fake core lets the application sleep, and the
 * message carried the counts of the reply before), and the reply drops
 * what was peeked, cut or not.
 */
static void ping_pong_cut(struct tcp_conn *ca, struct tcp_conn *cb, size_t take)
{
	static char ping[8] = "request", pong[8] = "answer!", ina[8], inb[8];

	/* a receive posted ahead on each side: a send always has a credit */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(
			rmca_tcp_recv(&cb->base, inb, 8, NULL, RECV_TAG(1)), 0);
		assert_int_equal(
			rmca_tcp_recv(&ca->base, ina, 8, NULL, RECV_TAG(0)), 0);
	}
	th_pump_idle(); /* credits */
	th_ndone = 0;
	for (int round = 0; round < 3; round++) {
		memset(inb, 0, sizeof(inb));
		cut_next(take);
		assert_int_equal(
			rmca_tcp_send(&ca->base, ping, 8, NULL, SEND_TAG(0)),
			0);
		check_cut(ca, take);
		pump_until_tag(RECV_TAG(1), round + 1);
		assert_memory_equal(inb, ping, 8);
		assert_true(cb->hold);
		assert_true(round ? cb->peeked > 0 : !cb->peeked);
		memset(ina, 0, sizeof(ina));
		cut_next(take);
		assert_int_equal(
			rmca_tcp_send(&cb->base, pong, 8, NULL, SEND_TAG(1)),
			0);
		check_cut(cb, take);
		assert_false(cb->hold);
		assert_int_equal(cb->peeked, 0);
		assert_int_equal(
			rmca_tcp_recv(&cb->base, inb, 8, NULL, RECV_TAG(1)), 0);
		/* the reply, and the send it acknowledges */
		pump_until_tag(RECV_TAG(0), round + 1);
		pump_until_tag(SEND_TAG(0), round + 1);
		assert_memory_equal(ina, pong, 8);
		assert_int_equal(
			rmca_tcp_recv(&ca->base, ina, 8, NULL, RECV_TAG(0)), 0);
	}
	th_pump_idle();
	pump_until_tag(SEND_TAG(1), 3);
	assert_int_equal(th_ndone, 12);
	/* the receives posted ahead end with the connection */
}

/*
 * A post with nothing queued writes its frame at once, without the queue;
 * a socket that takes none of it (full) or part of it, header or payload,
 * leaves the rest queued, with EPOLLOUT armed, and it goes from there once
 * there is room: the frame arrives whole, once, and the op (and the
 * receive of a send) completes once, OK. Sends (and replies), puts and
 * fetch-adds, not cut and cut after 0, 1, 37, 80 (the header) and 83
 * bytes (a fetch-add's frame is a header alone: 0, 1 and 37); and the
 * counts a put's target writes alone, at once as well, cut the same way
 * (0, 1 and 37 bytes).
 */
static void post_cut_short_is_finished_from_the_queue(void **state)
{
	static const size_t cuts[] = {NO_CUT, 0,	   1,
				      37,     TCP_HDR_LEN, TCP_HDR_LEN + 3};
	static char src[8] = "request", region[8];
	static uint64_t word, result;

	for (int kind = CUT_SEND; kind <= CUT_PUT_ACK; kind++) {
		for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
			struct rmca_module_mr *rmr = NULL, *wmr = NULL;
			struct rmca_atomic op = {.kind = RMCA_ATOMIC_FADD,
						 .operand = 5};
			struct tcp_module *a, *b;
			struct tcp_conn *ca, *cb;
			uint64_t rkey;
			int rc;

			if ((kind == CUT_FADD || kind == CUT_PUT_ACK) &&
			    cuts[k] >= TCP_HDR_LEN && cuts[k] != NO_CUT)
				continue;
			a = th_module();
			b = th_module();
			th_conn_pair(a, b, &ca, &cb);
			assert_int_equal(
				rmca_tcp_mr_reg(&b->base, region,
						sizeof(region),
						RMCA_ACCESS_REMOTE_WRITE, &rmr),
				0);
			assert_int_equal(
				rmca_tcp_mr_reg(&b->base, &word, sizeof(word),
						RMCA_ACCESS_REMOTE_ATOMIC,
						&wmr),
				0);
			rkey = rmca_tcp_mr_rkey(rmr, &cb->base);
			op.raddr = (uintptr_t)&word;
			op.rkey = rmca_tcp_mr_rkey(wmr, &cb->base);
			word = 10;
			memset(region, 0, sizeof(region));
			th_ndone = 0;

			if (kind == CUT_SEND) {
				ping_pong_cut(ca, cb, cuts[k]);
			} else if (kind == CUT_PUT_ACK) {
				assert_int_equal(
					rmca_tcp_put(&ca->base, src, 8, NULL,
						     (uintptr_t)region, rkey,
						     SEND_TAG(0)),
					0);
				assert_int_equal(queued(ca), 0);
				/* the target's next write, its counts */
				cut_next(cuts[k]);
				for (int i = 0; cut_writes; i++) {
					assert_true(th_pump());
					assert_true(i < 100000);
				}
				check_cut(cb, cuts[k]);
				pump_until_done(1);
				th_pump_idle();
				assert_int_equal(th_ndone, 1);
				assert_ptr_equal(th_done[0].req, SEND_TAG(0));
				assert_int_equal(th_done[0].status, 0);
				assert_memory_equal(region, src, 8);
			} else {
				cut_next(cuts[k]);
				if (kind == CUT_PUT)
					rc = rmca_tcp_put(&ca->base, src, 8,
							  NULL,
							  (uintptr_t)region,
							  rkey, SEND_TAG(0));
				else
					rc = rmca_tcp_atomic(&ca->base, &op,
							     &result, NULL,
							     SEND_TAG(0));
				assert_int_equal(rc, 0);
				check_cut(ca, cuts[k]);
				pump_until_done(1);
				th_pump_idle();
				assert_int_equal(th_ndone, 1);
				assert_ptr_equal(th_done[0].req, SEND_TAG(0));
				assert_int_equal(th_done[0].status, 0);
				if (kind == CUT_PUT)
					assert_memory_equal(region, src, 8);
				else
					assert_true(result == 10 && word == 15);
			}
			assert_int_equal(queued(ca), 0);
			assert_int_equal(queued(cb), 0);
			assert_false(ca->events & EPOLLOUT);
			assert_int_equal(th_nfailed, 0);

			rmca_tcp_conn_destroy(ca);
			rmca_tcp_conn_destroy(cb);
			assert_int_equal(rmca_tcp_mr_dereg(rmr), 0);
			assert_int_equal(rmca_tcp_mr_dereg(wmr), 0);
			th_module_free(a);
			th_module_free(b);
		}
	}
}

/*
 * A fetch-add's answer, and a short GET's, is written at once from where
 * it is built when it is the next frame anyway (nothing queued, held or
 * peeked, nothing more read): no frame is taken for it, from the spares or
 * allocated. A target whose write is cut after 0 (EAGAIN), 1 or 37 bytes
 * queues what is left, counted as an answer, and it arrives whole: every
 * op completes once, with the right result.
 */
static void answers_written_at_once_take_no_frame(void **state)
{
	static const size_t cuts[] = {NO_CUT, 0, 1, 37, TCP_HDR_LEN + 3};
	static char region[8] = "getme!!", got[8];
	static uint64_t word, result;
	struct rmca_module_mr *rmr = NULL, *wmr = NULL;
	struct rmca_atomic op = {.kind = RMCA_ATOMIC_FADD, .operand = 5};
	struct tcp_module *a = th_module(), *b = th_module();
	struct tcp_conn *ca, *cb;
	uint64_t rkey, expect = 10;

	(void)state;
	th_conn_pair(a, b, &ca, &cb);
	assert_int_equal(rmca_tcp_mr_reg(&b->base, region, sizeof(region),
					 RMCA_ACCESS_REMOTE_READ, &rmr),
			 0);
	assert_int_equal(rmca_tcp_mr_reg(&b->base, &word, sizeof(word),
					 RMCA_ACCESS_REMOTE_ATOMIC, &wmr),
			 0);
	rkey = rmca_tcp_mr_rkey(rmr, &cb->base);
	op.raddr = (uintptr_t)&word;
	op.rkey = rmca_tcp_mr_rkey(wmr, &cb->base);
	word = 10;
	for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
		for (int get = 0; get < 2; get++) {
			/* a fetch-add's answer is a header alone */
			if (!get && cuts[k] != NO_CUT && cuts[k] >= TCP_HDR_LEN)
				continue;
			th_ndone = 0;
			memset(got, 0, sizeof(got));
			assert_int_equal(
				get ? rmca_tcp_get(&ca->base, got, 8, NULL,
						   (uintptr_t)region, rkey,
						   SEND_TAG(0))
				    : rmca_tcp_atomic(&ca->base, &op, &result,
						      NULL, SEND_TAG(0)),
				0);
			/* the target's next write, its answer */
			cut_next(cuts[k]);
			pump_until_done(1);
			assert_int_equal(cut_writes, 0);
			th_pump_idle();
			assert_int_equal(th_ndone, 1);
			assert_ptr_equal(th_done[0].req, SEND_TAG(0));
			assert_int_equal(th_done[0].status, 0);
			if (get) {
				assert_memory_equal(got, region, 8);
			} else {
				assert_true(result == expect);
				expect += 5;
				assert_true(word == expect);
			}
			assert_int_equal(queued(cb), 0);
			assert_int_equal(cb->nanswers, 0);
			assert_false(cb->events & EPOLLOUT);
			/* not cut, or cut before anything went: nothing was
			 * ever queued, so no frame was taken */
			if (cuts[k] == NO_CUT)
				assert_int_equal(b->nspare_outs, 0);
		}
	}
	assert_int_equal(th_nfailed, 0);
	rmca_tcp_conn_destroy(ca);
	rmca_tcp_conn_destroy(cb);
	assert_int_equal(rmca_tcp_mr_dereg(rmr), 0);
	assert_int_equal(rmca_tcp_mr_dereg(wmr), 0);
	th_module_free(a);
	th_module_free(b);
}

/*
 * A frame of at most TCP_TX_COPY payload bytes is copied whole and
 * written with one send(), not with sendmsg() from header and payload
 * (which costs the kernel the message header's and the iovec's copy);
 * a larger one is written from where it is, with sendmsg(). Either way the
 * messages arrive whole and in order.
 */
static void small_frames_go_with_one_send(void **state)
{
	static char big[TCP_TX_COPY + 1], bigin[TCP_TX_COPY + 1];
	static char small[8] = "smallmsg", in[8];
	struct tcp_module *a = th_module(), *b = th_module();
	struct tcp_conn *ca, *cb;
	long s0, m0;

	(void)state;
	th_conn_pair(a, b, &ca, &cb);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7 + 1);
	assert_int_equal(rmca_tcp_recv(&cb->base, in, 8, NULL, RECV_TAG(0)),
			 0);
	assert_int_equal(rmca_tcp_recv(&cb->base, bigin, sizeof(bigin), NULL,
				       RECV_TAG(1)),
			 0);
	th_pump_idle(); /* credits */
	th_ndone = 0;
	s0 = sends;
	m0 = sendmsgs;
	assert_int_equal(rmca_tcp_send(&ca->base, small, 8, NULL, SEND_TAG(0)),
			 0);
	assert_int_equal(sends - s0, 1);
	assert_int_equal(sendmsgs - m0, 0);
	pump_until_done(2); /* its receive, then the count's send */
	th_pump_idle();
	assert_memory_equal(in, small, 8);
	th_ndone = 0;
	s0 = sends;
	m0 = sendmsgs;
	assert_int_equal(rmca_tcp_send(&ca->base, big, sizeof(big), NULL,
				       SEND_TAG(1)),
			 0);
	assert_int_equal(sends - s0, 0);
	assert_int_equal(sendmsgs - m0, 1);
	pump_until_done(2);
	th_pump_idle();
	assert_memory_equal(bigin, big, sizeof(big));
	assert_int_equal(th_nfailed, 0);
	rmca_tcp_conn_destroy(ca);
	rmca_tcp_conn_destroy(cb);
	th_module_free(a);
	th_module_free(b);
}

/*
 * Where nobody may sleep on the wait fd (a spinning application), the
 * counts of a delivered message are held on the module's held list for
 * the reply; the reply's post ends the hold and carries them, and the
 * next message is read out, not peeked, without asking the core again:
 * one may_sleep() per message, from the hold. Every round's messages
 * arrive and every op completes once.
 */
static void spinning_hold_asks_may_sleep_once(void **state)
{
	static char ping[8] = "request", pong[8] = "answer!", ina[8], inb[8];
	struct tcp_module *a = th_module(), *b = th_module();
	struct tcp_conn *ca, *cb;
	long asked;

	(void)state;
	th_sleep_allowed = false;
	th_conn_pair(a, b, &ca, &cb);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(
			rmca_tcp_recv(&cb->base, inb, 8, NULL, RECV_TAG(1)), 0);
		assert_int_equal(
			rmca_tcp_recv(&ca->base, ina, 8, NULL, RECV_TAG(0)), 0);
	}
	th_pump_idle(); /* credits */
	th_ndone = 0;
	for (int round = 0; round < 5; round++) {
		assert_int_equal(
			rmca_tcp_send(&ca->base, ping, 8, NULL, SEND_TAG(0)),
			0);
		asked = th_may_sleep_calls;
		pump_until_tag(RECV_TAG(1), round + 1);
		assert_true(cb->hold);
		assert_true(rmca_list_linked(&cb->held_link));
		assert_int_equal(cb->peeked, 0);
		assert_int_equal(
			rmca_tcp_send(&cb->base, pong, 8, NULL, SEND_TAG(1)),
			0);
		assert_false(cb->hold);
		assert_false(rmca_list_linked(&cb->held_link));
		assert_false(cb->peek);
		assert_int_equal(th_may_sleep_calls - asked, 1);
		assert_int_equal(
			rmca_tcp_recv(&cb->base, inb, 8, NULL, RECV_TAG(1)), 0);
		pump_until_tag(RECV_TAG(0), round + 1);
		pump_until_tag(SEND_TAG(0), round + 1);
		assert_memory_equal(inb, ping, 8);
		assert_memory_equal(ina, pong, 8);
		assert_int_equal(
			rmca_tcp_recv(&ca->base, ina, 8, NULL, RECV_TAG(0)), 0);
	}
	th_sleep_allowed = true;
	assert_int_equal(th_nfailed, 0);
	rmca_tcp_conn_destroy(ca);
	rmca_tcp_conn_destroy(cb);
	th_module_free(a);
	th_module_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_way_stream_through_a_small_window),
		cmocka_unit_test(puts_behind_one_in_flight_leave_together),
		cmocka_unit_test(truncation_reaches_the_sender_in_a_batch),
		cmocka_unit_test(frames_cut_anywhere_are_read_whole),
		cmocka_unit_test(answer_rides_on_the_reply_or_goes_alone),
		cmocka_unit_test(post_cut_short_is_finished_from_the_queue),
		cmocka_unit_test(answers_written_at_once_take_no_frame),
		cmocka_unit_test(small_frames_go_with_one_send),
		cmocka_unit_test(spinning_hold_asks_may_sleep_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
