/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer's answer that does not fit what was asked: to a get, fewer bytes
 * than asked, an operand only an atomic's answer has, a truncation only a
 * send can get; a refusal of a put not yet written. Each ends the
 * connection as a protocol error: the op completes once,
 * RMCA_ERR_PROTOCOL, and a get's buffer keeps what it had. A refusal that
 * fits completes its get once, with that refusal. And a message one
 * byte longer than the receive is truncated, not written past it.
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

#define REQ(n)	((void *)(uintptr_t)(n))
#define GET_LEN 16
#define PUT_LEN (8u << 20) /* more than the socket takes at once */

/* A get of GET_LEN bytes into buf posted, and its frame read by the peer:
 * its id. */
static uint64_t get_posted(struct th_pair *p, char *buf)
{
	struct tcp_frame g;

	memset(buf, 'x', GET_LEN);
	assert_int_equal(rmca_tcp_get(&p->c->base, buf, GET_LEN, NULL, 0x1000,
				      0x2222, REQ(1)),
			 0);
	th_pump_idle();
	assert_true(th_peer_read_frame(p->peer, &g));
	assert_int_equal(g.type, TCP_F_GET);
	assert_int_equal(g.len, GET_LEN);
	return g.id;
}

/* The peer answers with r (and len bytes of data): the connection ends
 * as a protocol error, the get completes once with it, untouched. */
static void answer_is_refused(struct tcp_frame *r, size_t len)
{
	struct th_pair p = th_pair_open();
	char buf[GET_LEN], data[GET_LEN];

	r->type = TCP_F_RESP;
	r->id = get_posted(&p, buf);
	memset(data, 'd', sizeof(data));
	th_peer_frame(p.peer, r);
	if (len)
		th_peer_write(p.peer, data, len);
	assert_true(th_peer_closed(p.peer));
	assert_int_equal(th_nfailed, 1);
	assert_int_equal(th_ndone, 1);
	assert_int_equal(th_done[0].status, RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(th_last_log, "does not fit"));
	for (size_t i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 'x');
	th_pair_close(&p);
}

static void short_answer_to_a_get_closes(void **state)
{
	struct tcp_frame r = {.len = GET_LEN / 2};

	(void)state;
	answer_is_refused(&r, GET_LEN / 2);
}

static void operand_on_a_get_answer_closes(void **state)
{
	struct tcp_frame r = {.len = GET_LEN, .operand = 5};

	(void)state;
	answer_is_refused(&r, GET_LEN);
}

static void truncation_of_a_get_closes(void **state)
{
	struct tcp_frame r = {.status = RMCA_ERR_TRUNCATED};

	(void)state;
	answer_is_refused(&r, 0);
}

/* The honest answer, for contrast: the same get completes with the data. */
static void answer_that_fits_completes_the_get(void **state)
{
	struct th_pair p = th_pair_open();
	char buf[GET_LEN], data[GET_LEN];
	struct tcp_frame r = {.type = TCP_F_RESP, .len = GET_LEN};

	(void)state;
	r.id = get_posted(&p, buf);
	memset(data, 'd', sizeof(data));
	th_peer_frame(p.peer, &r);
	th_peer_write(p.peer, data, sizeof(data));
	th_pump_idle();
	assert_int_equal(th_nfailed, 0);
	assert_int_equal(th_ndone, 1);
	assert_int_equal(th_done[0].status, RMCA_OK);
	assert_memory_equal(buf, data, sizeof(data));
	th_pair_close(&p);
}

/* A refusal that fits: the get completes once, with the refusal itself
 * (not the connection's end that follows it). */
static void refused_get_completes_once_with_the_refusal(void **state)
{
	struct th_pair p = th_pair_open();
	char buf[GET_LEN];
	struct tcp_frame r = {.type = TCP_F_RESP,
			      .status = RMCA_ERR_REMOTE_ACCESS};

	(void)state;
	r.id = get_posted(&p, buf);
	th_peer_frame(p.peer, &r);
	assert_true(th_peer_closed(p.peer));
	assert_int_equal(th_nfailed, 1);
	assert_int_equal(th_ndone, 1);
	assert_int_equal(th_done[0].status, RMCA_ERR_REMOTE_ACCESS);
	th_pair_close(&p);
}

/* A put still being written from the application's buffer cannot have
 * arrived, so cannot have been refused: a refusal naming it ends the
 * connection as a protocol error, and the put does not end with the
 * peer's status while its buffer is still read. */
static void refusal_of_a_put_still_on_its_way_closes(void **state)
{
	struct th_pair p = th_pair_open();
	char *src = malloc(PUT_LEN);
	struct tcp_frame f,
		r = {.type = TCP_F_RESP, .status = RMCA_ERR_REMOTE_ACCESS};

	(void)state;
	assert_non_null(src);
	memset(src, 1, PUT_LEN);
	assert_int_equal(rmca_tcp_put(&p.c->base, src, PUT_LEN, NULL, 0x1000,
				      0x2222, REQ(1)),
			 0);
	assert_true(th_peer_read_frame(p.peer, &f));
	assert_int_equal(f.type, TCP_F_PUT);
	assert_int_equal(p.c->by_count_out, 0); /* the payload is on its way */
	r.id = f.id;
	th_peer_frame(p.peer, &r);
	assert_true(th_peer_closed(p.peer));
	assert_int_equal(th_nfailed, 1);
	assert_int_equal(th_ndone, 1);
	assert_int_equal(th_done[0].status, RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(th_last_log, "no outstanding request"));
	th_pair_close(&p);
	free(src);
}

/* A message as long as the receive lands; one byte longer is truncated:
 * what fits lands, not a byte past the receive's buffer. */
static void message_one_byte_over_the_receive_is_truncated(void **state)
{
	(void)state;
	for (uint32_t len = 8; len <= 9; len++) {
		struct th_pair p = th_pair_open();
		char buf[16], data[16];
		struct tcp_frame s = {.type = TCP_F_SEND, .id = 1, .len = len};

		th_ndone = 0;
		memset(buf, 'x', sizeof(buf));
		memset(data, 'd', sizeof(data));
		assert_int_equal(
			rmca_tcp_recv(&p.c->base, buf, 8, NULL, REQ(1)), 0);
		th_pump_idle();
		th_peer_frame(p.peer, &s);
		th_peer_write(p.peer, data, len);
		th_pump_idle();
		assert_int_equal(th_ndone, 1);
		assert_int_equal(th_done[0].status,
				 len == 8 ? RMCA_OK : RMCA_ERR_TRUNCATED);
		assert_int_equal(th_done[0].len, 8);
		assert_memory_equal(buf, "dddddddd", 8);
		assert_memory_equal(buf + 8, "xxxxxxxx", 8);
		th_pair_close(&p);
	}
}

static int reset(void **state)
{
	(void)state;
	th_ndone = 0;
	th_nfailed = 0;
	th_last_log[0] = '\0';
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(answer_that_fits_completes_the_get,
				       reset),
		cmocka_unit_test_setup(
			refused_get_completes_once_with_the_refusal, reset),
		cmocka_unit_test_setup(short_answer_to_a_get_closes, reset),
		cmocka_unit_test_setup(operand_on_a_get_answer_closes, reset),
		cmocka_unit_test_setup(truncation_of_a_get_closes, reset),
		cmocka_unit_test_setup(refusal_of_a_put_still_on_its_way_closes,
				       reset),
		cmocka_unit_test_setup(
			message_one_byte_over_the_receive_is_truncated, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
