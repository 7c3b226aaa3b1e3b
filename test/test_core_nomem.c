// SPDX-License-Identifier: BSD-3-Clause
/*
 * A completion owed is never lost for want of memory: every posted
 * operation brought its completion's slot, so reporting allocates nothing.
 * The client posts its operations while the target does not progress,
 * then every allocation in the process fails (malloc is interposed here)
 * while the target serves them: every completion must still come.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "api_util.h"
#include "nomem.h"
#include "tap_skip.h"

#define NPUT	   2000 /* well past any first guess of a queue's size */
#define MSG	   8
#define TOKEN_FULL 0xf011

static void server(struct api_peer *p)
{
	char *mem = api_alloc(NPUT * MSG);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, mem, NPUT * MSG,
				 RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_region(p, 0, mem, NPUT * MSG, mr, p->ep);
	/* Deaf while the client posts: every put stays outstanding. */
	api_expect_token_deaf(p, 0, TOKEN_FULL);
	api_expect_token(p, 0, API_TOKEN_GO); /* serves meanwhile */
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void client(struct api_peer *p)
{
	char *buf = api_alloc(MSG);
	struct rmca_completion c[64];
	long end = api_now_ms() + API_RUN_TIMEOUT_MS;
	struct api_region r;
	rmca_mr_t *mr;
	int i, n, done = 0, bad = 0;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, MSG, RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < NPUT; i++)
		API_CHECK_OK(rmca_put(p->ep, buf, MSG, mr, r.addr + i * MSG,
				      r.rkey, 0, API_CTX(2)));
	/* From here on every allocation fails; the answers come. */
	no_memory = 1;
	api_token(p, 0, TOKEN_FULL);
	while (done < NPUT && api_now_ms() < end) {
		n = rmca_poll(p->ctx, c, 64);
		if (n < 0)
			break;
		for (i = 0; i < n; i++)
			bad += c[i].status != RMCA_OK;
		done += n;
	}
	no_memory = 0;
	API_CHECK_MSG(done == NPUT && !bad, "%d completions, %d failed", done,
		      bad);
	api_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void test_completions_need_no_memory(void **state)
{
	const struct api_test t = {.server = server, .client = client};

	(void)state;
#ifdef __SANITIZE_ADDRESS__
	TAP_SKIP("malloc cannot be interposed under AddressSanitizer");
#endif
	setenv("RMCA_transports", "tcp", 1);
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_completions_need_no_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
