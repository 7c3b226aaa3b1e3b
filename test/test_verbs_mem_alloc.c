/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory from rmca_mem_alloc (a sealed memfd mapped shared, doc/api.md
 * "Memory peers map") on a real device (rxe0, siw0), inside the VM: to ib
 * and iWARP it is ordinary memory, registered with the device like any
 * other. A put into it, a get out of it and a send into a receive in it
 * arrive byte for byte, at odd offsets and lengths, with the source and
 * sink on the other side allocated the same way; rmca_mem_free refuses
 * while a region in the allocation is registered, and frees it after.
 *
 * Device from RMCA_transports (ib or iwarp), address from RMCATEST_HOST.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define SZ	  (64 * 1024 + 512) /* not whole pages */
#define PUT_OFF	  3
#define PUT_LEN	  (SZ - 7)
#define GET_OFF	  SZ /* the target's second third, read back */
#define MSG_LEN	  (9 * 1024 + 5)
#define SEED_PUT  22
#define SEED_GET  21
#define SEED_SEND 23

/* The endpoint runs over the device this run is for, not tcp. */
static void expect_device(struct api_peer *p)
{
	const char *want = getenv("RMCA_transports");
	struct rmca_ep_attr a;

	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	API_CHECK_MSG(want && strcmp(a.transport, want) == 0,
		      "endpoint runs over \"%s\", not \"%s\"", a.transport,
		      want ? want : "(RMCA_transports unset)");
}

static uint8_t *mem_alloc(struct api_peer *p, size_t len)
{
	void *m;

	API_CHECK_OK(rmca_mem_alloc(p->ctx, len, &m));
	return m;
}

/* What api_pattern writes at [0, len) with seed, here. */
static uint8_t *pattern_of(size_t len, unsigned seed)
{
	uint8_t *b = api_alloc(len);

	api_pattern(b, len, seed);
	return b;
}

static void alloc_server(struct api_peer *p)
{
	uint8_t *mem = mem_alloc(p, 3 * SZ), *rbuf = mem_alloc(p, SZ);
	uint8_t *put = pattern_of(PUT_LEN, SEED_PUT);
	uint8_t *got = pattern_of(SZ, SEED_GET);
	uint8_t *msg = pattern_of(MSG_LEN, SEED_SEND);
	struct rmca_completion c;
	rmca_mr_t *mr, *rmr;

	expect_device(p);
	memset(mem, 0x5a, 3 * SZ);
	memcpy(mem + GET_OFF, got, SZ);
	API_CHECK_OK(rmca_mr_reg(
		p->ctx, mem, 3 * SZ,
		RMCA_ACCESS_REMOTE_WRITE | RMCA_ACCESS_REMOTE_READ, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, rbuf, SZ, RMCA_ACCESS_LOCAL, &rmr));
	API_CHECK_RC(rmca_mem_free(p->ctx, mem), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_mem_free(p->ctx, rbuf), RMCA_ERR_INVALID);
	API_CHECK_OK(rmca_recv(p->ep, rbuf + 1, SZ - 1, rmr, API_CTX(1)));
	api_put_region(p, 0, mem, 3 * SZ, mr, p->ep);

	api_wait(p, API_CTX(1), &c);
	API_CHECK_RC(c.status, RMCA_OK);
	API_CHECK_MSG(c.len == MSG_LEN, "the message arrived as %zu bytes",
		      c.len);
	API_CHECK_MSG(!memcmp(rbuf + 1, msg, MSG_LEN),
		      "the message arrived changed");
	/* The client's put and get were done (DELIVERED) before it sent. */
	API_CHECK_MSG(!memcmp(mem + PUT_OFF, put, PUT_LEN),
		      "the put did not land byte for byte");
	for (size_t i = 0; i < 3 * SZ; i++)
		if (i < PUT_OFF || (i >= PUT_OFF + PUT_LEN && i < GET_OFF) ||
		    i >= GET_OFF + SZ)
			API_CHECK_MSG(mem[i] == 0x5a,
				      "byte %zu outside the put changed", i);
	API_CHECK_MSG(!memcmp(mem + GET_OFF, got, SZ),
		      "the get's source changed");

	/* Still refused while one region of the two is registered. */
	API_CHECK_OK(rmca_mr_dereg(rmr));
	API_CHECK_OK(rmca_mem_free(p->ctx, rbuf));
	API_CHECK_RC(rmca_mem_free(p->ctx, mem), RMCA_ERR_INVALID);
	API_CHECK_OK(rmca_mr_dereg(mr));
	API_CHECK_OK(rmca_mem_free(p->ctx, mem));
	API_CHECK_RC(rmca_mem_free(p->ctx, mem), RMCA_ERR_INVALID);
	api_token(p, 0, API_TOKEN_GO);
	free(put);
	free(got);
	free(msg);
}

static void alloc_client(struct api_peer *p)
{
	uint8_t *buf = mem_alloc(p, 3 * SZ);
	uint8_t *got = pattern_of(SZ, SEED_GET);
	struct api_region r;
	rmca_mr_t *mr;

	expect_device(p);
	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 3 * SZ, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_RC(rmca_mem_free(p->ctx, buf), RMCA_ERR_INVALID);

	/* Put from an odd offset of ours to an odd offset of theirs. */
	api_pattern(buf + 1, PUT_LEN, SEED_PUT);
	API_CHECK_OK(API_POST(p, rmca_put(p->ep, buf + 1, PUT_LEN, mr,
					  r.addr + PUT_OFF, r.rkey,
					  RMCA_DELIVERED, API_CTX(1))));
	api_wait_status(p, API_CTX(1), RMCA_OK);

	/* Get their second third into ours, at an odd offset. */
	memset(buf + SZ, 0, 2 * SZ);
	API_CHECK_OK(
		API_POST(p, rmca_get(p->ep, buf + SZ + 5, SZ, mr,
				     r.addr + GET_OFF, r.rkey, API_CTX(2))));
	api_wait_status(p, API_CTX(2), RMCA_OK);
	API_CHECK_MSG(!memcmp(buf + SZ + 5, got, SZ),
		      "the get did not read byte for byte");
	for (size_t i = SZ; i < SZ + 5; i++)
		API_CHECK_MSG(buf[i] == 0, "the get wrote byte %zu before", i);
	for (size_t i = 2 * SZ + 5; i < 3 * SZ; i++)
		API_CHECK_MSG(buf[i] == 0, "the get wrote byte %zu past", i);

	/* A message out of it, into a receive in theirs. */
	api_pattern(buf + 2 * SZ, MSG_LEN, SEED_SEND);
	API_CHECK_OK(API_POST(
		p, rmca_send(p->ep, buf + 2 * SZ, MSG_LEN, mr, API_CTX(3))));
	api_wait_status(p, API_CTX(3), RMCA_OK);

	api_expect_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(mr));
	API_CHECK_OK(rmca_mem_free(p->ctx, buf));
	free(got);
}

static void test_mem_alloc_memory_moves_byte_for_byte(void **state)
{
	const struct api_test t = {.server = alloc_server,
				   .client = alloc_client};

	(void)state;
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mem_alloc_memory_moves_byte_for_byte),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
