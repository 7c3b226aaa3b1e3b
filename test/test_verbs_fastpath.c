/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs data path's cheap ways on a real device (rxe0, siw0), inside
 * the VM: more receives than the receive queue holds (posted in batches as
 * it drains), a send queue that wraps many times while most work requests
 * are unsignalled (inline sends, puts, chains posted from the queue of
 * waiting operations), and a connection that breaks with unsignalled work
 * requests on the device: each operation still completes exactly once, and
 * only a prefix of the sends completes RMCA_OK.
 *
 * Device from RMCA_transports (ib or iwarp), address from RMCATEST_HOST.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define SLOT	    64
#define CTX_RECV    0x100000u
#define CTX_SEND    0x200000u
#define CTX_PUT	    0x300000u
#define CTX_KIND(x) ((uintptr_t)(x)&0xf00000u)
#define CTX_NUM(x)  ((uintptr_t)(x)&0xfffffu)

static size_t msg_len(int i)
{
	return 8 + (size_t)(i % 33); /* 8..40 bytes: inline on both devices */
}

static void msg_fill(uint8_t *b, int i)
{
	uint32_t seq = (uint32_t)i;

	memset(b, (int)(i & 0xff), msg_len(i));
	memcpy(b, &seq, sizeof(seq));
}

static void msg_check(const uint8_t *b, size_t len, int i)
{
	uint32_t seq;
	size_t k;

	API_CHECK_MSG(len == msg_len(i), "message %d: %zu bytes, not %zu", i,
		      len, msg_len(i));
	memcpy(&seq, b, sizeof(seq));
	API_CHECK_MSG(seq == (uint32_t)i, "message %d arrived as %u", i, seq);
	for (k = sizeof(seq); k < len; k++)
		API_CHECK_MSG(b[k] == (uint8_t)i, "message %d: byte %zu", i, k);
}

/*
 * Per-context tally of completions: each must come exactly once. Returns
 * the completions taken from the stash into seen[]/status[].
 */
struct tally {
	int n;
	int *seen;
	int *status;
	int got;
};

static void tally_init(struct tally *t, int n)
{
	t->n = n;
	t->seen = calloc((size_t)n, sizeof(int));
	t->status = calloc((size_t)n, sizeof(int));
	t->got = 0;
	API_CHECK(t->seen && t->status);
}

static void tally_free(struct tally *t)
{
	free(t->seen);
	free(t->status);
}

/* Count c, numbered in its user context, into t: once each. */
static void tally_one(struct tally *t, const struct rmca_completion *c)
{
	uintptr_t x = (uintptr_t)c->user_ctx;
	int num = (int)CTX_NUM(x);

	API_CHECK_MSG(num < t->n, "unexpected completion %#lx (status %d)",
		      (unsigned long)x, c->status);
	API_CHECK_MSG(!t->seen[num], "op %#lx completed twice",
		      (unsigned long)x);
	t->seen[num] = 1;
	t->status[num] = c->status;
	t->got++;
}

/* Move the stash into t (completions of kind only; others die). */
static void tally_take(struct tally *t, uintptr_t kind)
{
	int i, k = api_stashed();

	for (i = 0; i < k; i++) {
		const struct rmca_completion *c = api_stash_at(i);
		uintptr_t x = (uintptr_t)c->user_ctx;

		API_CHECK_MSG(CTX_KIND(x) == kind,
			      "unexpected completion %#lx (status %d)",
			      (unsigned long)x, c->status);
		tally_one(t, c);
	}
	api_stash_clear();
}

/* Move the stash into sends (CTX_SEND) and puts (the others; NULL: none
 * may come), every completion RMCA_OK. */
static void tally_sort(struct tally *sends, struct tally *puts)
{
	int i, k = api_stashed();

	for (i = 0; i < k; i++) {
		const struct rmca_completion *c = api_stash_at(i);
		bool send = CTX_KIND((uintptr_t)c->user_ctx) == CTX_SEND;

		API_CHECK_MSG(send || puts, "unexpected completion %#lx",
			      (unsigned long)(uintptr_t)c->user_ctx);
		API_CHECK_RC(c->status, RMCA_OK);
		tally_one(send ? sends : puts, c);
	}
	api_stash_clear();
}

/* Progress until t has want of its completions. */
static void tally_wait_for(struct api_peer *p, struct tally *t, uintptr_t kind,
			   int want, const char *what)
{
	long end = api_now_ms() + API_TIMEOUT_MS;

	for (;;) {
		tally_take(t, kind);
		if (t->got >= want)
			return;
		API_CHECK_MSG(api_now_ms() < end, "%s: %d of %d completed",
			      what, t->got, want);
		api_progress(p);
	}
}

/* Progress until t has all its completions. */
static void tally_wait(struct api_peer *p, struct tally *t, uintptr_t kind,
		       const char *what)
{
	tally_wait_for(p, t, kind, t->n, what);
}

/* Progress until the n ops of kind have completed, each once, RMCA_OK. */
static void wait_all_ok(struct api_peer *p, int n, uintptr_t kind,
			const char *what)
{
	struct tally t;

	tally_init(&t, n);
	tally_wait(p, &t, kind, what);
	for (int i = 0; i < n; i++)
		API_CHECK_MSG(t.status[i] == RMCA_OK, "%s: %d: %s", what, i,
			      api_strerror(t.status[i]));
	tally_free(&t);
}

/* Receives [from, to) into their slots of buf, at once. */
static void post_recvs(struct api_peer *p, uint8_t *buf, rmca_mr_t *mr,
		       int from, int to)
{
	for (int i = from; i < to; i++)
		API_CHECK_OK(rmca_recv(p->ep, buf + i * SLOT, SLOT, mr,
				       API_CTX(CTX_RECV + i)));
}

/* ---- more receives than the receive queue holds ---- */

#define NRECV  240 /* the receive queue holds 128 */
#define ROUNDS 2

static void many_recv_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NRECV * SLOT);
	rmca_mr_t *mr;
	int i, r;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NRECV * SLOT, RMCA_ACCESS_LOCAL, &mr));
	for (r = 0; r < ROUNDS; r++) {
		/* all at once, no progress in between: none may be refused */
		post_recvs(p, buf, mr, 0, NRECV);
		api_token(p, 0, API_TOKEN_GO);
		wait_all_ok(p, NRECV, CTX_RECV, "receives");
		/* in order: the i-th receive holds the i-th message */
		for (i = 0; i < NRECV; i++)
			msg_check(buf + i * SLOT, msg_len(i), i);
		memset(buf, 0, NRECV * SLOT);
		api_token(p, 0, API_TOKEN_GO);
	}
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void many_recv_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NRECV * SLOT);
	rmca_mr_t *mr;
	int i, r;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NRECV * SLOT, RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < NRECV; i++)
		msg_fill(buf + i * SLOT, i);
	for (r = 0; r < ROUNDS; r++) {
		api_expect_token(p, 0, API_TOKEN_GO);
		for (i = 0; i < NRECV; i++)
			API_CHECK_OK(API_POST(
				p, rmca_send(p->ep, buf + i * SLOT, msg_len(i),
					     mr, API_CTX(CTX_SEND + i))));
		wait_all_ok(p, NRECV, CTX_SEND, "sends");
		api_expect_token(p, 0, API_TOKEN_GO);
	}
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void test_receives_beyond_the_queue_all_arrive_in_order(void **state)
{
	const struct api_test t = {.server = many_recv_server,
				   .client = many_recv_client};

	(void)state;
	api_run(&t);
}

/* ---- the send queue wraps, most work requests unsignalled ---- */

#define NWRAP	1500 /* sends, and as many puts: the queue holds 128 */
#define NPOSTED 160  /* receives the server keeps posted */

static void wrap_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NWRAP * SLOT), *dst = api_alloc(NWRAP * 8);
	rmca_mr_t *mr, *dmr;
	int i, posted = NPOSTED, seen = 0, k;
	long end;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NWRAP * SLOT, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, dst, NWRAP * 8,
				 RMCA_ACCESS_LOCAL | RMCA_ACCESS_REMOTE_WRITE,
				 &dmr));
	post_recvs(p, buf, mr, 0, NPOSTED);
	api_put_region(p, 0, dst, NWRAP * 8, dmr, p->ep);
	end = api_now_ms() + 4 * API_TIMEOUT_MS;
	while (seen < NWRAP) {
		API_CHECK_MSG(api_now_ms() < end, "only %d of %d messages",
			      seen, NWRAP);
		api_progress(p);
		k = api_stashed();
		for (i = 0; i < k; i++) {
			const struct rmca_completion *c = api_stash_at(i);

			API_CHECK_RC(c->status, RMCA_OK);
			API_CHECK_MSG(c->user_ctx == API_CTX(CTX_RECV + seen),
				      "receive %d completed as %#lx", seen,
				      (unsigned long)(uintptr_t)c->user_ctx);
			msg_check(buf + seen * SLOT, c->len, seen);
			seen++;
			/* repost one for each taken: the batch path */
			if (posted < NWRAP) {
				API_CHECK_OK(rmca_recv(
					p->ep, buf + posted * SLOT, SLOT, mr,
					API_CTX(CTX_RECV + posted)));
				posted++;
			}
		}
		api_stash_clear();
	}
	/* the client's puts are all in place once it says so */
	api_expect_token(p, 0, API_TOKEN_GO);
	for (i = 0; i < NWRAP; i++) {
		uint64_t v;

		memcpy(&v, dst + i * 8, 8);
		API_CHECK_MSG(v == 0x1000000ull + (uint64_t)i,
			      "put %d left %#llx", i, (unsigned long long)v);
	}
	API_CHECK_OK(rmca_mr_dereg(mr));
	API_CHECK_OK(rmca_mr_dereg(dmr));
	free(buf);
	free(dst);
}

static void wrap_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NWRAP * SLOT), *src = api_alloc(NWRAP * 8);
	struct api_region r;
	struct tally ts, tp;
	rmca_mr_t *mr, *smr;
	int i;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NWRAP * SLOT, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, src, NWRAP * 8, RMCA_ACCESS_LOCAL, &smr));
	api_get_region(p, 0, &r);
	tally_init(&ts, NWRAP);
	tally_init(&tp, NWRAP);
	for (i = 0; i < NWRAP; i++) {
		uint64_t v = 0x1000000ull + (uint64_t)i;

		msg_fill(buf + i * SLOT, i);
		memcpy(src + i * 8, &v, 8);
	}
	/* everything at once: most of it waits for the send queue and goes
	 * out in chains as completions free it */
	for (i = 0; i < NWRAP; i++) {
		API_CHECK_OK(
			API_POST(p, rmca_send(p->ep, buf + i * SLOT, msg_len(i),
					      mr, API_CTX(CTX_SEND + i))));
		API_CHECK_OK(API_POST(p, rmca_put(p->ep, src + i * 8, 8, smr,
						  r.addr + i * 8, r.rkey, 0,
						  API_CTX(CTX_PUT + i))));
		/* sort the two kinds as they come */
		tally_sort(&ts, &tp);
	}
	{
		long end = api_now_ms() + 4 * API_TIMEOUT_MS;

		while (ts.got < NWRAP || tp.got < NWRAP) {
			API_CHECK_MSG(api_now_ms() < end,
				      "%d sends, %d puts of %d completed",
				      ts.got, tp.got, NWRAP);
			api_progress(p);
			tally_sort(&ts, &tp);
		}
	}
	/* puts without RMCA_DELIVERED: a flush puts them in place */
	API_CHECK_OK(rmca_flush(p->ep, API_CTX(1)));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	api_token(p, 0, API_TOKEN_GO);
	tally_free(&ts);
	tally_free(&tp);
	API_CHECK_OK(rmca_mr_dereg(mr));
	API_CHECK_OK(rmca_mr_dereg(smr));
	free(buf);
	free(src);
}

static void test_send_queue_wraps_with_unsignalled_requests(void **state)
{
	const struct api_test t = {.server = wrap_server,
				   .client = wrap_client};

	(void)state;
	api_run(&t);
}

/* ---- the connection breaks with unsignalled requests outstanding ---- */

#define NBREAK                                                                 \
	250	  /* sends: more than the send queue holds, fewer than twice   \
		   */
#define STEP  32  /* receives the server posts at a time */
#define TAKEN 160 /* messages the server takes before it closes */

static void break_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(TAKEN * SLOT);
	struct tally t;
	rmca_mr_t *mr;
	int i, done = 0;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, TAKEN * SLOT, RMCA_ACCESS_LOCAL, &mr));
	api_expect_token(p, 0, API_TOKEN_GO); /* the client posted all */
	tally_init(&t, TAKEN);
	/* receives in steps: the client's completions come in bursts, and
	 * what waits goes out in chains behind them */
	while (done < TAKEN) {
		post_recvs(p, buf, mr, done, done + STEP);
		tally_wait_for(p, &t, CTX_RECV, done + STEP, "messages");
		done += STEP;
	}
	for (i = 0; i < TAKEN; i++) {
		API_CHECK_RC(t.status[i], RMCA_OK);
		msg_check(buf + i * SLOT, msg_len(i), i);
	}
	tally_free(&t);
	/* gone with sends of the client still on its device */
	rmca_ep_close(p->ep);
	p->ep = NULL;
	api_put_u64(p, 0, TAKEN);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void break_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NBREAK * SLOT);
	struct tally t;
	rmca_mr_t *mr;
	int i, ok = 0;
	uint64_t taken;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, NBREAK * SLOT, RMCA_ACCESS_LOCAL,
				 &mr));
	for (i = 0; i < NBREAK; i++) {
		msg_fill(buf + i * SLOT, i);
		API_CHECK_OK(rmca_send(p->ep, buf + i * SLOT, msg_len(i), mr,
				       API_CTX(CTX_SEND + i)));
	}
	api_token(p, 0, API_TOKEN_GO);
	tally_init(&t, NBREAK);
	taken = api_get_u64(p, 0);
	tally_wait(p, &t, CTX_SEND, "sends after the peer left");
	/* exactly once each (tally), and RMCA_OK only on a prefix of what
	 * the peer took: in order, nothing reported done that was not */
	for (i = 0; i < NBREAK && t.status[i] == RMCA_OK; i++)
		ok++;
	for (; i < NBREAK; i++)
		API_CHECK_MSG(t.status[i] != RMCA_OK,
			      "send %d completed RMCA_OK after send %d failed",
			      i, ok);
	API_CHECK_MSG((uint64_t)ok <= taken,
		      "%d sends completed RMCA_OK, the peer took %llu", ok,
		      (unsigned long long)taken);
	tally_free(&t);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void
test_unsignalled_requests_complete_once_when_the_peer_leaves(void **state)
{
	const struct api_test t = {.server = break_server,
				   .client = break_client};

	(void)state;
	api_run(&t);
}

/* ---- replies confirm sends; a truncated message still fails its send ---- */

#define NPING 200

static void ping_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc((NPING + 1) * SLOT), *out = api_alloc(SLOT);
	struct rmca_completion c;
	rmca_mr_t *mr, *omr;
	int i;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, (NPING + 1) * SLOT,
				 RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, out, SLOT, RMCA_ACCESS_LOCAL, &omr));
	API_CHECK_OK(rmca_recv(p->ep, buf, SLOT, mr, API_CTX(CTX_RECV)));
	api_token(p, 0, API_TOKEN_GO);
	for (i = 0; i < NPING; i++) {
		api_wait(p, API_CTX(CTX_RECV + i), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		msg_check(buf + i * SLOT, c.len, i);
		/* the next receive first (the last one too small for what
		 * comes after the ping-pong), then the reply, which carries
		 * what this side took */
		API_CHECK_OK(rmca_recv(p->ep, buf + (i + 1) * SLOT,
				       i + 1 < NPING ? SLOT : 16, mr,
				       API_CTX(CTX_RECV + i + 1)));
		msg_fill(out, i);
		API_CHECK_OK(API_POST(p, rmca_send(p->ep, out, msg_len(i), omr,
						   API_CTX(CTX_SEND + i))));
		api_wait_status(p, API_CTX(CTX_SEND + i), RMCA_OK);
	}
	api_token(p, 0, API_TOKEN_GO);
	api_wait(p, API_CTX(CTX_RECV + NPING), &c);
	API_CHECK_RC(c.status, RMCA_ERR_TRUNCATED);
	API_CHECK_OK(rmca_mr_dereg(mr));
	API_CHECK_OK(rmca_mr_dereg(omr));
	free(buf);
	free(out);
}

static void ping_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NPING * SLOT), *in = api_alloc(NPING * SLOT);
	struct rmca_completion c;
	struct tally t;
	rmca_mr_t *mr, *imr;
	int i;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NPING * SLOT, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, in, NPING * SLOT, RMCA_ACCESS_LOCAL, &imr));
	tally_init(&t, NPING + 1);
	api_expect_token(p, 0, API_TOKEN_GO);
	for (i = 0; i < NPING; i++) {
		API_CHECK_OK(
			API_POST(p, rmca_recv(p->ep, in + i * SLOT, SLOT, imr,
					      API_CTX(CTX_RECV + i))));
		msg_fill(buf + i * SLOT, i);
		API_CHECK_OK(
			API_POST(p, rmca_send(p->ep, buf + i * SLOT, msg_len(i),
					      mr, API_CTX(CTX_SEND + i))));
		api_wait(p, API_CTX(CTX_RECV + i), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		msg_check(in + i * SLOT, c.len, i);
		/* sends completed so far, each once and RMCA_OK */
		tally_sort(&t, NULL);
	}
	/* a message the peer's receive cannot hold fails its send */
	api_expect_token(p, 0, API_TOKEN_GO);
	memset(buf, 0x5a, SLOT);
	API_CHECK_OK(
		rmca_send(p->ep, buf, SLOT, mr, API_CTX(CTX_SEND + NPING)));
	tally_wait(p, &t, CTX_SEND, "sends");
	for (i = 0; i < NPING; i++)
		API_CHECK_MSG(t.status[i] == RMCA_OK, "send %d: %s", i,
			      api_strerror(t.status[i]));
	API_CHECK_MSG(t.status[NPING] != RMCA_OK,
		      "a truncated message's send completed RMCA_OK");
	tally_free(&t);
	API_CHECK_OK(rmca_mr_dereg(mr));
	API_CHECK_OK(rmca_mr_dereg(imr));
	free(buf);
	free(in);
}

static void
test_replies_confirm_sends_and_truncation_still_fails_one(void **state)
{
	const struct api_test t = {.server = ping_server,
				   .client = ping_client,
				   .no_barrier = true};

	(void)state;
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_receives_beyond_the_queue_all_arrive_in_order),
		cmocka_unit_test(
			test_send_queue_wraps_with_unsignalled_requests),
		cmocka_unit_test(
			test_unsignalled_requests_complete_once_when_the_peer_leaves),
		cmocka_unit_test(
			test_replies_confirm_sends_and_truncation_still_fails_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
