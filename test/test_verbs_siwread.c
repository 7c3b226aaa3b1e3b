/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The peer's control READs while this side's send queue is busy with big
 * messages, on a real device (rxe0, siw0), inside the VM.
 *
 * Both sides stream messages of 4 KiB to 256 KiB at each other at once,
 * one send at a time (siw transmits a send posted to an idle queue inside
 * the caller's ibv_post_send) through a receive window of a few slots, so
 * that each sender keeps running out of credits and reads the peer's credit
 * counter (and, on iwarp, confirms its sends with READs) while the peer's
 * own big sends fill its socket and siw's transmit kthread takes its send
 * queue over from the peer's ibv_post_send. siw (Linux 6.1) answers a READ
 * of at most 32 bytes from user memory with copy_from_user() whenever the
 * QP's "in syscall" flag is set, also from that kthread, where the copy
 * fails: siw drops the connection with IB_EVENT_QP_REQ_ERR. rmca's credit
 * and confirming READs were 8-byte READs (rmca_perf send_lat 64 KiB on
 * siw0 lost its connection that way). Every message must arrive whole, in
 * order, and every send and receive complete with RMCA_OK.
 *
 * The race needs the owner's thread to stall inside ibv_post_send while
 * the kthread runs (a busy host), so the old code does not fail every run;
 * this gives the race NMSG chances each way. Device from RMCA_transports
 * (ib or iwarp), address from RMCATEST_HOST.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define NMSG	   400 /* messages each way */
#define RSLOTS	   3   /* receive window: credits run out often */
#define SSLOTS	   1   /* one send at a time: see above */
#define MAXLEN	   (256 * 1024 + 3)
#define CTX_RECV   0x100
#define CTX_SEND   0x200
#define TOKEN_DONE 0xd0e

static const size_t lens[] = {65536, MAXLEN, 4096, 65536 + 5};

static size_t msg_len(unsigned i)
{
	return lens[i % (sizeof(lens) / sizeof(lens[0]))];
}

/* A message's content: its number and the direction, so that a message
 * that lands in the wrong receive, or comes back, is seen. */
static unsigned msg_seed(const struct api_peer *p, unsigned i, bool mine)
{
	return (i << 1) | (unsigned)(p->is_server == mine);
}

static void stream(struct api_peer *p)
{
	uint8_t *rbuf = api_alloc((size_t)RSLOTS * MAXLEN);
	uint8_t *sbuf = api_alloc((size_t)SSLOTS * MAXLEN);
	unsigned sent = 0, sdone = 0, rdone = 0;
	long end = api_now_ms() + API_RUN_TIMEOUT_MS;
	struct rmca_completion c;
	rmca_mr_t *rmr, *smr;
	int rc;

	API_CHECK_OK(rmca_mr_reg(p->ctx, rbuf, (size_t)RSLOTS * MAXLEN,
				 RMCA_ACCESS_LOCAL, &rmr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, sbuf, (size_t)SSLOTS * MAXLEN,
				 RMCA_ACCESS_LOCAL, &smr));
	for (unsigned s = 0; s < RSLOTS; s++)
		API_CHECK_OK(rmca_recv(p->ep, rbuf + (size_t)s * MAXLEN, MAXLEN,
				       rmr, API_CTX(CTX_RECV + s)));
	/* both sides ready before either streams: no receive is late */
	if (p->is_server) {
		api_token(p, 0, API_TOKEN_GO);
		api_expect_token(p, 0, API_TOKEN_GO);
	} else {
		api_expect_token(p, 0, API_TOKEN_GO);
		api_token(p, 0, API_TOKEN_GO);
	}

	while (sdone < NMSG || rdone < NMSG) {
		API_CHECK_MSG(api_now_ms() < end,
			      "stalled: %u of %d sent, %u of %d received",
			      sdone, NMSG, rdone, NMSG);
		if (sent < NMSG && sent - sdone < SSLOTS) {
			unsigned s = sent % SSLOTS;
			uint8_t *b = sbuf + (size_t)s * MAXLEN;

			api_pattern(b, msg_len(sent), msg_seed(p, sent, true));
			rc = rmca_send(p->ep, b, msg_len(sent), smr,
				       API_CTX(CTX_SEND + s));
			API_CHECK_MSG(rc == RMCA_OK || rc == RMCA_ERR_AGAIN,
				      "send %u: %s", sent, api_strerror(rc));
			if (rc == RMCA_OK)
				sent++;
		}
		api_progress(p);
		/* sends and receives each complete in order */
		while (sdone < sent &&
		       api_take(API_CTX(CTX_SEND + sdone % SSLOTS), &c)) {
			API_CHECK_MSG(c.status == RMCA_OK, "send %u: %s", sdone,
				      api_strerror(c.status));
			sdone++;
		}
		while (rdone < NMSG &&
		       api_take(API_CTX(CTX_RECV + rdone % RSLOTS), &c)) {
			unsigned s = rdone % RSLOTS;
			uint8_t *b = rbuf + (size_t)s * MAXLEN;
			long bad;

			API_CHECK_MSG(c.status == RMCA_OK, "receive %u: %s",
				      rdone, api_strerror(c.status));
			API_CHECK_MSG(c.len == msg_len(rdone),
				      "message %u: %zu bytes, sent %zu", rdone,
				      c.len, msg_len(rdone));
			bad = api_pattern_check(b, c.len,
						msg_seed(p, rdone, false));
			API_CHECK_MSG(bad < 0, "message %u: byte %ld differs",
				      rdone, bad);
			rdone++;
			if (rdone + RSLOTS - 1 < NMSG)
				API_CHECK_OK(rmca_recv(p->ep, b, MAXLEN, rmr,
						       API_CTX(CTX_RECV + s)));
		}
	}
	/* the peer has all of ours (each send completed) and we all of its:
	 * close only once both know */
	if (p->is_server) {
		api_token(p, 0, TOKEN_DONE);
		api_expect_token(p, 0, TOKEN_DONE);
	} else {
		api_expect_token(p, 0, TOKEN_DONE);
		api_token(p, 0, TOKEN_DONE);
	}
	API_CHECK_OK(rmca_mr_dereg(smr));
	API_CHECK_OK(rmca_mr_dereg(rmr));
	free(sbuf);
	free(rbuf);
}

static void test_control_reads_meet_busy_send_queues(void **state)
{
	const struct api_test t = {.server = stream, .client = stream};

	(void)state;
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_control_reads_meet_busy_send_queues),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
