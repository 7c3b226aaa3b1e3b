/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contract: put/get byte for byte, RMCA_DELIVERED, refused accesses touch
 * nothing and fail the endpoint, dereg revokes the key, flush comes last.
 */
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define TOKEN_DONE 0xd0e
#define BIG	   ((1u << 20) + 13)

/* ---- put then get, 1 MiB+ ---- */

/* A small put at an odd offset on top of the big one. */
#define SUB_OFF 1001
#define SUB_LEN 517

static void expected_big(uint8_t *buf)
{
	api_pattern(buf, BIG, 3);
	api_pattern(buf + SUB_OFF, SUB_LEN, 4);
}

static void putget_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(BIG), *want = api_alloc(BIG);
	rmca_mr_t *mr;
	long bad;

	API_CHECK_OK(rmca_mr_reg(
		p->ctx, mem, BIG,
		RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_region(p, 0, mem, BIG, mr, p->ep);
	api_expect_token(p, 0, TOKEN_DONE);
	expected_big(want);
	bad = -1;
	for (size_t i = 0; i < BIG && bad < 0; i++)
		if (mem[i] != want[i])
			bad = (long)i;
	API_CHECK_MSG(bad < 0, "target memory differs at byte %ld", bad);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(mem);
	free(want);
}

static void putget_client(struct api_peer *p)
{
	uint8_t *src = api_alloc(BIG), *dst = api_alloc(BIG);
	uint8_t *sub = api_alloc(SUB_LEN), *want = api_alloc(BIG);
	rmca_mr_t *ms, *md, *mb;
	struct api_region r;
	size_t i;

	api_get_region(p, 0, &r);
	API_CHECK(r.len == BIG);
	API_CHECK_OK(rmca_mr_reg(p->ctx, src, BIG, RMCA_ACCESS_LOCAL, &ms));
	API_CHECK_OK(rmca_mr_reg(p->ctx, dst, BIG, RMCA_ACCESS_LOCAL, &md));
	API_CHECK_OK(rmca_mr_reg(p->ctx, sub, SUB_LEN, RMCA_ACCESS_LOCAL, &mb));
	api_pattern(src, BIG, 3);
	api_pattern(sub, SUB_LEN, 4);

	API_CHECK_OK(API_POST(p, rmca_put(p->ep, src, BIG, ms, r.addr, r.rkey,
					  RMCA_DELIVERED, API_CTX(1))));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	API_CHECK_OK(
		API_POST(p, rmca_put(p->ep, sub, SUB_LEN, mb, r.addr + SUB_OFF,
				     r.rkey, 0, API_CTX(2))));
	api_wait_status(p, API_CTX(2), RMCA_OK);
	API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(3))));
	api_wait_status(p, API_CTX(3), RMCA_OK);

	API_CHECK_OK(API_POST(
		p, rmca_get(p->ep, dst, BIG, md, r.addr, r.rkey, API_CTX(4))));
	api_wait_status(p, API_CTX(4), RMCA_OK);
	expected_big(want);
	for (i = 0; i < BIG; i++)
		API_CHECK_MSG(dst[i] == want[i], "got: byte %zu of %u differs",
			      i, BIG);
	api_token(p, 0, TOKEN_DONE);
	free(src);
	free(dst);
	free(sub);
	free(want);
}

static void test_put_get_1m_byte_for_byte(void **state)
{
	const struct api_test t = {.server = putget_server,
				   .client = putget_client};

	(void)state;
	api_run(&t);
}

/* ---- a delivered put is in the target's memory ---- */

#define DLEN (64 * 1024)

static void delivered_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(DLEN);
	uint32_t note = 0;
	rmca_mr_t *mr, *mn;
	long bad;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, mem, DLEN, RMCA_ACCESS_REMOTE_WRITE, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, &note, sizeof(note), RMCA_ACCESS_LOCAL,
				 &mn));
	API_CHECK_OK(rmca_recv(p->ep, &note, sizeof(note), mn, API_CTX(1)));
	api_put_region(p, 0, mem, DLEN, mr, p->ep);
	api_wait_status(p, API_CTX(1), RMCA_OK);
	API_CHECK(note == 0xd0e);
	/* The message came after the put's completion: the data is here. */
	bad = api_pattern_check(mem, DLEN, 11);
	API_CHECK_MSG(bad < 0, "delivered put: byte %ld not in memory", bad);
}

static void delivered_client(struct api_peer *p)
{
	uint8_t *src = api_alloc(DLEN);
	uint32_t note = 0xd0e;
	rmca_mr_t *ms, *mn;
	struct api_region r;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, src, DLEN, RMCA_ACCESS_LOCAL, &ms));
	API_CHECK_OK(rmca_mr_reg(p->ctx, &note, sizeof(note), RMCA_ACCESS_LOCAL,
				 &mn));
	api_pattern(src, DLEN, 11);
	API_CHECK_OK(API_POST(p, rmca_put(p->ep, src, DLEN, ms, r.addr, r.rkey,
					  RMCA_DELIVERED, API_CTX(1))));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	api_send_wait(p, p->ep, &note, sizeof(note), mn);
}

static void test_delivered_put_is_in_target_memory(void **state)
{
	const struct api_test t = {.server = delivered_server,
				   .client = delivered_client};

	(void)state;
	api_run(&t);
}

/* ---- get of what the target wrote ---- */

static void getw_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(BIG);
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, mem, BIG, RMCA_ACCESS_REMOTE_READ, &mr));
	api_pattern(mem, BIG, 21);
	api_put_region(p, 0, mem, BIG, mr, p->ep);
	api_expect_token(p, 0, TOKEN_DONE);
}

static void getw_client(struct api_peer *p)
{
	uint8_t *dst = api_alloc(BIG + 64);
	struct api_region r;
	rmca_mr_t *md;
	long bad;

	api_get_region(p, 0, &r);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, dst, BIG + 64, RMCA_ACCESS_LOCAL, &md));
	API_CHECK_OK(API_POST(
		p, rmca_get(p->ep, dst, BIG, md, r.addr, r.rkey, API_CTX(1))));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	bad = api_pattern_check(dst, BIG, 21);
	API_CHECK_MSG(bad < 0, "get: byte %ld differs", bad);

	/* A piece from the middle lands at the start of the buffer. */
	memset(dst, 0, BIG);
	API_CHECK_OK(API_POST(p, rmca_get(p->ep, dst, 333, md, r.addr + 4097,
					  r.rkey, API_CTX(2))));
	api_wait_status(p, API_CTX(2), RMCA_OK);
	{
		uint8_t *want = api_alloc(BIG);

		api_pattern(want, BIG, 21);
		API_CHECK(memcmp(dst, want + 4097, 333) == 0);
		API_CHECK(dst[333] == 0);
		free(want);
	}
	api_token(p, 0, TOKEN_DONE);
}

static void test_get_reads_what_the_target_wrote(void **state)
{
	const struct api_test t = {.server = getw_server,
				   .client = getw_client};

	(void)state;
	api_run(&t);
}

/* ---- refused accesses ---- */

enum bad_kind {
	BAD_KEY,
	BAD_PAST_END,
	BAD_BEFORE_START,
	BAD_NO_WRITE, /* put into a REMOTE_READ region */
	BAD_NO_READ,  /* get from a REMOTE_WRITE region */
	/* BAD_BEFORE_START, and the device refuses the next post (the flush
	 * READ of a DELIVERED put on iWARP), as siw does once the peer's
	 * TERMINATE took the QP out of RTS before its put's completion was
	 * read: a busy host */
	BAD_FLUSH_REFUSED,
};

#define PAGE	   4096
#define GUARD_SEED 0x5a

/*
 * The region is the middle page of three; all three carry a pattern that a
 * refused access must leave as it is.
 */
static void bad_server(struct api_peer *p)
{
	enum bad_kind k = *(enum bad_kind *)p->arg;
	uint8_t *mem = api_alloc(3 * PAGE);
	unsigned access = RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE;
	rmca_mr_t *mr;
	long bad;

	if (k == BAD_NO_WRITE)
		access = RMCA_ACCESS_REMOTE_READ;
	if (k == BAD_NO_READ)
		access = RMCA_ACCESS_REMOTE_WRITE;
	api_pattern(mem, 3 * PAGE, GUARD_SEED);
	API_CHECK_OK(rmca_mr_reg(p->ctx, mem + PAGE, PAGE, access, &mr));
	api_put_region(p, 0, mem + PAGE, PAGE, mr, p->ep);
	api_expect_token(p, 0, TOKEN_DONE);
	bad = api_pattern_check(mem, 3 * PAGE, GUARD_SEED);
	API_CHECK_MSG(
		bad < 0,
		"refused access wrote byte %ld of the target (region at %d)",
		bad, PAGE);
}

static void bad_client(struct api_peer *p)
{
	enum bad_kind k = *(enum bad_kind *)p->arg;
	uint8_t *src = api_alloc(2 * PAGE);
	struct rmca_completion c;
	struct api_region r;
	uint64_t raddr, rkey;
	size_t len = PAGE;
	rmca_mr_t *ms;
	int rc;

	api_get_region(p, 0, &r);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, src, 2 * PAGE, RMCA_ACCESS_LOCAL, &ms));
	api_pattern(src, 2 * PAGE, 1);
	raddr = r.addr;
	rkey = r.rkey;
	switch (k) {
	case BAD_KEY:
		rkey ^= 0x5a5a;
		if (!rkey)
			rkey = r.rkey ^ 0xa5a5;
		break;
	case BAD_PAST_END:
		raddr = r.addr + r.len - 64;
		len = 128;
		break;
	case BAD_BEFORE_START:
	case BAD_FLUSH_REFUSED:
		raddr = r.addr - 64;
		len = 128;
		break;
	default:
		break;
	}
	if (k == BAD_NO_READ)
		rc = API_POST(p, rmca_get(p->ep, src, len, ms, raddr, rkey,
					  API_CTX(1)));
	else
		rc = API_POST(p, rmca_put(p->ep, src, len, ms, raddr, rkey,
					  RMCA_DELIVERED, API_CTX(1)));
	API_CHECK_OK(rc);
	if (k == BAD_FLUSH_REFUSED) {
		/* one pass: the delivery flush goes before the CQ is read */
		setenv("RMCATEST_FAIL", "verbs_post_refused", 1);
		api_progress(p);
		setenv("RMCATEST_FAIL", "", 1);
	}
	api_wait_status(p, API_CTX(1), RMCA_ERR_REMOTE_ACCESS);

	/*
	 * The endpoint is failed now: even a valid get (the region allows
	 * reads except in BAD_NO_READ, where it allows writes) must not
	 * complete OK.
	 */
	if (k == BAD_NO_READ)
		rc = API_POST(p, rmca_put(p->ep, src, 64, ms, r.addr, r.rkey,
					  RMCA_DELIVERED, API_CTX(2)));
	else
		rc = API_POST(p, rmca_get(p->ep, src + PAGE, 64, ms, r.addr,
					  r.rkey, API_CTX(2)));
	API_CHECK_MSG(rc == RMCA_OK,
		      "post on a failed endpoint returned %d (%s); the "
		      "contract says it completes with an error",
		      rc, api_strerror(rc));
	api_wait(p, API_CTX(2), &c);
	API_CHECK_MSG(c.status != RMCA_OK,
		      "an op posted after a remote access error completed OK");
	api_token(p, 0, TOKEN_DONE);
}

static void run_bad(enum bad_kind k)
{
	const struct api_test t = {
		.server = bad_server, .client = bad_client, .arg = &k};

	api_run(&t);
}

static void test_put_with_wrong_key_is_refused(void **state)
{
	(void)state;
	run_bad(BAD_KEY);
}

static void test_put_past_region_end_is_refused(void **state)
{
	(void)state;
	run_bad(BAD_PAST_END);
}

static void test_put_before_region_start_is_refused(void **state)
{
	(void)state;
	run_bad(BAD_BEFORE_START);
}

/* The put's own completion (the data left) read after its delivery flush
 * failed must not make it a success. */
static void test_put_refused_though_its_flush_failed(void **state)
{
	(void)state;
	/* set (and empty) from the start: see verbs_fault.c */
	setenv("RMCATEST_FAIL", "", 1);
	run_bad(BAD_FLUSH_REFUSED);
	unsetenv("RMCATEST_FAIL");
}

static void test_put_without_write_permission_is_refused(void **state)
{
	(void)state;
	run_bad(BAD_NO_WRITE);
}

static void test_get_without_read_permission_is_refused(void **state)
{
	(void)state;
	run_bad(BAD_NO_READ);
}

/* ---- dereg revokes the key ---- */

#define TOKEN_PUT1  0x9071
#define TOKEN_DEREG 0xde9

static void dereg_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(PAGE);
	rmca_mr_t *mr;
	long bad;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, mem, PAGE, RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_region(p, 0, mem, PAGE, mr, p->ep);
	api_expect_token(p, 0, TOKEN_PUT1);
	API_CHECK(api_pattern_check(mem, PAGE, 31) < 0);
	API_CHECK_OK(rmca_mr_dereg(mr));
	api_token(p, 0, TOKEN_DEREG);
	api_expect_token(p, 0, TOKEN_DONE);
	bad = api_pattern_check(mem, PAGE, 31);
	API_CHECK_MSG(bad < 0, "put with a deregistered key wrote byte %ld",
		      bad);
}

static void dereg_client(struct api_peer *p)
{
	uint8_t *src = api_alloc(PAGE);
	struct api_region r;
	rmca_mr_t *ms;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, src, PAGE, RMCA_ACCESS_LOCAL, &ms));
	api_pattern(src, PAGE, 31);
	API_CHECK_OK(API_POST(p, rmca_put(p->ep, src, PAGE, ms, r.addr, r.rkey,
					  RMCA_DELIVERED, API_CTX(1))));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	api_token(p, 0, TOKEN_PUT1);
	api_expect_token(p, 0, TOKEN_DEREG);
	api_pattern(src, PAGE, 32);
	API_CHECK_OK(API_POST(p, rmca_put(p->ep, src, PAGE, ms, r.addr, r.rkey,
					  RMCA_DELIVERED, API_CTX(2))));
	api_wait_status(p, API_CTX(2), RMCA_ERR_REMOTE_ACCESS);
	api_token(p, 0, TOKEN_DONE);
}

static void test_dereg_revokes_the_key(void **state)
{
	const struct api_test t = {.server = dereg_server,
				   .client = dereg_client};

	(void)state;
	api_run(&t);
}

/* ---- flush comes after every earlier op ---- */

#define NPUT 8

static void flush_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(NPUT * PAGE);
	uint8_t *msg = api_alloc(4 * 64);
	rmca_mr_t *mr, *mm;
	int i;

	API_CHECK_OK(rmca_mr_reg(p->ctx, mem, NPUT * PAGE,
				 RMCA_ACCESS_REMOTE_WRITE, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, 4 * 64, RMCA_ACCESS_LOCAL, &mm));
	for (i = 0; i < 4; i++)
		API_CHECK_OK(rmca_recv(p->ep, msg + i * 64, 64, mm,
				       API_CTX(50 + i)));
	api_put_region(p, 0, mem, NPUT * PAGE, mr, p->ep);
	api_expect_token(p, 0, TOKEN_DONE);
	/* The flush's completion said: everything before it is delivered. */
	for (i = 0; i < NPUT; i++)
		API_CHECK_MSG(api_pattern_check(mem + i * PAGE, PAGE,
						(unsigned)i) < 0,
			      "put %d not in memory after the flush", i);
	for (i = 0; i < 4; i++)
		api_wait_status(p, API_CTX(50 + i), RMCA_OK);
}

/* Progress until ctx `last` has completed; every ctx in first..first+n-1
 * must have been reported before it. */
static void expect_last(struct api_peer *p, int first, int n, int last)
{
	long end = api_now_ms() + API_TIMEOUT_MS;
	int i, j, at = -1;

	while (at < 0) {
		API_CHECK_MSG(api_now_ms() < end, "flush never completed");
		api_progress(p);
		for (i = 0; i < api_stashed(); i++)
			if (api_stash_at(i)->user_ctx == API_CTX(last))
				at = i;
	}
	API_CHECK_RC(api_stash_at(at)->status, RMCA_OK);
	API_CHECK(api_stash_at(at)->op == RMCA_OP_FLUSH);
	for (j = first; j < first + n; j++) {
		for (i = 0; i < at; i++)
			if (api_stash_at(i)->user_ctx == API_CTX(j))
				break;
		API_CHECK_MSG(i < at, "op %d was not reported before the flush",
			      j);
		API_CHECK_RC(api_stash_at(i)->status, RMCA_OK);
	}
	api_stash_clear();
}

static void flush_client(struct api_peer *p)
{
	uint8_t *src = api_alloc(NPUT * PAGE);
	struct api_region r;
	rmca_mr_t *ms;
	int i;

	api_get_region(p, 0, &r);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, src, NPUT * PAGE, RMCA_ACCESS_LOCAL, &ms));

	/* An idle endpoint flushes at once. */
	API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(99))));
	api_wait_status(p, API_CTX(99), RMCA_OK);

	for (i = 0; i < NPUT; i++) {
		api_pattern(src + i * PAGE, PAGE, (unsigned)i);
		API_CHECK_OK(API_POST(p, rmca_put(p->ep, src + i * PAGE, PAGE,
						  ms, r.addr + i * PAGE, r.rkey,
						  0, API_CTX(1 + i))));
	}
	API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(100))));
	expect_last(p, 1, NPUT, 100);

	/* Messages too. */
	for (i = 0; i < 4; i++)
		API_CHECK_OK(API_POST(p, rmca_send(p->ep, src + i * 64, 64, ms,
						   API_CTX(200 + i))));
	API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(300))));
	expect_last(p, 200, 4, 300);
	api_token(p, 0, TOKEN_DONE);
}

static void test_flush_completes_after_earlier_ops(void **state)
{
	const struct api_test t = {.server = flush_server,
				   .client = flush_client};

	(void)state;
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get_1m_byte_for_byte),
		cmocka_unit_test(test_delivered_put_is_in_target_memory),
		cmocka_unit_test(test_get_reads_what_the_target_wrote),
		cmocka_unit_test(test_put_with_wrong_key_is_refused),
		cmocka_unit_test(test_put_past_region_end_is_refused),
		cmocka_unit_test(test_put_before_region_start_is_refused),
		cmocka_unit_test(test_put_refused_though_its_flush_failed),
		cmocka_unit_test(test_put_without_write_permission_is_refused),
		cmocka_unit_test(test_get_without_read_permission_is_refused),
		cmocka_unit_test(test_dereg_revokes_the_key),
		cmocka_unit_test(test_flush_completes_after_earlier_ops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
