/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A tcp peer whose frames are each well formed but wrong in sequence: an
 * answer to a request whose frame it cannot have read, a refusal no
 * target gives that request. Ids are numbered 1, 2, ... per connection, so
 * a peer knows the next one without being told. Each lie ends the
 * connection as a protocol error, logged; the op it names completes once,
 * RMCA_ERR_PROTOCOL, and a get's buffer keeps what it had.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "tcp_harness.h"

#define REQ(n)	((void *)(uintptr_t)(n))
#define GET_LEN 16
#define PUT_LEN (8u << 20) /* more than the socket takes at once */

/* The completion of request tag: its status; fails unless it came once. */
static int ended_once(void *tag)
{
	int n = 0, st = 1;

	for (int i = 0; i < th_ndone && i < TH_MAX_DONE; i++)
		if (th_done[i].req == tag) {
			n++;
			st = th_done[i].status;
		}
	assert_int_equal(n, 1);
	return st;
}

/*
 * A get posted behind a put that fills the socket: its frame waits in the
 * queue, unwritten. The peer answers it all the same, with data, by the
 * id that comes next. A request not written cannot have been read: the
 * connection ends, the get with RMCA_ERR_PROTOCOL and its buffer as it
 * was, not RMCA_OK with the peer's bytes (whose frame would then never go
 * out at all).
 */
static void answer_to_a_get_not_written_closes(void **state)
{
	struct th_pair p = th_pair_open();
	char *src = malloc(PUT_LEN), buf[GET_LEN], data[GET_LEN];
	struct tcp_frame f, r = {.type = TCP_F_RESP, .len = GET_LEN};

	(void)state;
	assert_non_null(src);
	memset(src, 1, PUT_LEN);
	memset(buf, 'x', sizeof(buf));
	memset(data, 'd', sizeof(data));
	assert_int_equal(rmca_tcp_put(&p.c->base, src, PUT_LEN, NULL, 0x1000,
				      0x2222, REQ(1)),
			 0);
	assert_int_equal(rmca_tcp_get(&p.c->base, buf, GET_LEN, NULL, 0x1000,
				      0x2222, REQ(2)),
			 0);
	assert_true(th_peer_read_frame(p.peer, &f));
	assert_int_equal(f.type, TCP_F_PUT);
	/* the put's payload is on its way, the get's frame queued behind */
	assert_int_equal(p.c->by_count_out, 0);
	r.id = f.id + 1;
	th_peer_frame(p.peer, &r);
	th_peer_write(p.peer, data, sizeof(data));
	th_pump_idle();
	print_message(
		"# %d completions, the first %d, the get's buffer '%.*s'\n",
		th_ndone, th_ndone ? th_done[0].status : 1, GET_LEN, buf);
	assert_true(th_peer_closed(p.peer));
	assert_int_equal(th_nfailed, 1);
	assert_int_equal(ended_once(REQ(2)), RMCA_ERR_PROTOCOL);
	assert_int_equal(ended_once(REQ(1)), RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(th_last_log, "no outstanding request"));
	for (size_t i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 'x');
	th_pair_close(&p);
	free(src);
}

/*
 * A send, written whole, refused as an access denied: a target refuses a
 * send only when its receive is too small (RMCA_ERR_TRUNCATED); a send
 * touches no region. The refusal does not fit: the send ends
 * RMCA_ERR_PROTOCOL, not with a status no target gives it (as shm's
 * answers are checked).
 */
static void access_refusal_of_a_send_closes(void **state)
{
	struct th_pair p = th_pair_open();
	char msg[16] = "a message";
	struct tcp_frame f, g = {.type = TCP_F_ACK, .credits = 1},
			    r = {.type = TCP_F_RESP,
				 .status = RMCA_ERR_REMOTE_ACCESS,
				 .credits = 1};

	(void)state;
	assert_int_equal(
		rmca_tcp_send(&p.c->base, msg, sizeof(msg), NULL, REQ(1)), 0);
	th_peer_frame(p.peer, &g); /* a receive posted: the send goes */
	th_pump_idle();
	assert_true(th_peer_read_frame(p.peer, &f));
	assert_int_equal(f.type, TCP_F_SEND);
	assert_int_equal(p.c->by_count_out, 1); /* written whole */
	r.id = f.id;
	th_peer_frame(p.peer, &r);
	assert_true(th_peer_closed(p.peer));
	print_message("# the send ended %d: %s\n", ended_once(REQ(1)),
		      th_last_log);
	assert_int_equal(th_nfailed, 1);
	assert_int_equal(ended_once(REQ(1)), RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(th_last_log, "does not fit"));
	th_pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(answer_to_a_get_not_written_closes),
		cmocka_unit_test(access_refusal_of_a_send_closes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
