// SPDX-License-Identifier: BSD-3-Clause
/*
 * The core's path choices over tcp: every capability mask forces its
 * fallback, rmca_ep_query names it, the results stay exact; the atomic mode
 * is one per context and a peer with another is refused; a local peer is
 * never routed to a module without loopback; RMCA_verbose=1 says why.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "api_util.h"

struct mask_case {
	const char *caps; /* RMCA_tcp_caps, both sides */
	const char *mode; /* RMCA_atomic_mode, both sides */
	enum rmca_path put_delivered, atomic, masked, send_inv;
};

static const struct mask_case *cur;

static void set_env(const struct mask_case *c)
{
	setenv("RMCA_transports", "tcp", 1);
	if (c->caps)
		setenv("RMCA_tcp_caps", c->caps, 1);
	else
		unsetenv("RMCA_tcp_caps");
	if (c->mode)
		setenv("RMCA_atomic_mode", c->mode, 1);
	else
		unsetenv("RMCA_atomic_mode");
}

static void check_attr(rmca_ep_t *ep, const struct mask_case *c)
{
	struct rmca_ep_attr a;

	API_CHECK_OK(rmca_ep_query(ep, &a));
	API_CHECK_MSG(!strcmp(a.transport, "tcp"), "transport %s", a.transport);
	API_CHECK_MSG(a.put_delivered == c->put_delivered, "put_delivered %d",
		      a.put_delivered);
	API_CHECK_MSG(a.atomic == c->atomic, "atomic %d, expected %d", a.atomic,
		      c->atomic);
	API_CHECK_MSG(a.masked_atomic == c->masked, "masked_atomic %d, expected %d",
		      a.masked_atomic, c->masked);
	API_CHECK_MSG(a.send_inv == c->send_inv, "send_inv %d, expected %d",
		      a.send_inv, c->send_inv);
}

#define WORDS 4

/* The server exposes a few words; the client runs every atomic kind on
 * them, a DELIVERED put and a send_inv, and checks each answer. */
static void mask_server(struct api_peer *p)
{
	uint64_t *w = api_alloc(4096);
	char *msg = api_alloc(4096);
	rmca_mr_t *mr, *mmr, *once;
	char *ubuf = api_alloc(4096);
	struct rmca_completion c;
	uint64_t once_key;

	check_attr(p->ep, cur);
	w[0] = 10;
	w[1] = 0x00000001ffffffffull;
	w[2] = 0x1234;
	API_CHECK_OK(rmca_mr_reg(p->ctx, w, 4096,
				 RMCA_ACCESS_REMOTE_ATOMIC | RMCA_ACCESS_REMOTE_WRITE |
					 RMCA_ACCESS_REMOTE_READ,
				 &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, 4096, RMCA_ACCESS_LOCAL, &mmr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, ubuf, 4096,
				 RMCA_ACCESS_REMOTE_WRITE | RMCA_MR_USE_ONCE, &once));
	API_CHECK_OK(rmca_recv(p->ep, msg, 64, mmr, API_CTX(1)));
	api_put_region(p, 0, w, 4096, mr, p->ep);
	/* The key handed out, asked for once: asking again after the
	 * revocation could make a new one. */
	once_key = rmca_mr_rkey(once, p->ep);
	API_CHECK(once_key != 0);
	api_put_region(p, 0, ubuf, 4096, once, p->ep);
	API_CHECK_MSG(rmca_mr_rkey(once, p->ep) == once_key,
		      "the use-once key changed while nothing revoked it");
	/* the client's send_inv revokes exactly that key */
	api_wait(p, API_CTX(1), &c);
	API_CHECK_MSG(c.status == RMCA_OK, "recv: %s", api_strerror(c.status));
	API_CHECK_MSG(c.revoked_rkey == once_key,
		      "revoked_rkey %#llx, the key handed out %#llx",
		      (unsigned long long)c.revoked_rkey,
		      (unsigned long long)once_key);
	api_token(p, 0, API_TOKEN_GO);
	api_expect_token(p, 0, API_TOKEN_GO);
	API_CHECK_MSG(w[0] == 10 + 5, "fadd left %llu", (unsigned long long)w[0]);
	API_CHECK_MSG(w[1] == 0x0000000200000000ull,
		      "masked fadd left %llx", (unsigned long long)w[1]);
	API_CHECK_MSG(w[2] == 0x12ab, "masked cswap left %llx",
		      (unsigned long long)w[2]);
	API_CHECK_MSG(ubuf[0] == 'x', "delivered put missing");
}

static void atomic_ok(struct api_peer *p, struct rmca_atomic *op, uint64_t *res,
		      rmca_mr_t *rmr, uint64_t want_old, int n)
{
	struct rmca_completion c;

	API_CHECK_OK(API_POST(p, rmca_atomic(p->ep, op, res, rmr, API_CTX(n))));
	api_wait(p, API_CTX(n), &c);
	API_CHECK_MSG(c.status == RMCA_OK, "atomic %d: %s", op->kind,
		      api_strerror(c.status));
	API_CHECK_MSG(*res == want_old, "atomic %d returned %llx, expected %llx",
		      op->kind, (unsigned long long)*res,
		      (unsigned long long)want_old);
}

static void mask_client(struct api_peer *p)
{
	struct api_region w, once;
	uint64_t *res = api_alloc(4096);
	char *src = api_alloc(4096);
	rmca_mr_t *rmr, *smr;
	struct rmca_atomic op;
	struct rmca_completion c;

	check_attr(p->ep, cur);
	api_get_region(p, 0, &w);
	api_get_region(p, 0, &once);
	API_CHECK_OK(rmca_mr_reg(p->ctx, res, 4096, RMCA_ACCESS_LOCAL, &rmr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, src, 4096, RMCA_ACCESS_LOCAL, &smr));

	if (cur->atomic != RMCA_PATH_NONE) {
		op = (struct rmca_atomic){ .kind = RMCA_ATOMIC_FADD,
					   .raddr = w.addr, .rkey = w.rkey,
					   .operand = 5 };
		atomic_ok(p, &op, res, rmr, 10, 10);
		op = (struct rmca_atomic){ .kind = RMCA_ATOMIC_CSWAP,
					   .raddr = w.addr + 24, .rkey = w.rkey,
					   .compare = 1, .operand = 9 };
		atomic_ok(p, &op, res, rmr, 0, 11); /* fails: word is 0 */
	} else {
		op = (struct rmca_atomic){ .kind = RMCA_ATOMIC_FADD,
					   .raddr = w.addr, .rkey = w.rkey };
		API_CHECK_RC(rmca_atomic(p->ep, &op, res, rmr, API_CTX(10)),
			     RMCA_ERR_UNSUPPORTED);
	}
	if (cur->masked != RMCA_PATH_NONE) {
		/* two 32-bit fields: the low one wraps, no carry crosses */
		op = (struct rmca_atomic){ .kind = RMCA_ATOMIC_MASKED_FADD,
					   .raddr = w.addr + 8, .rkey = w.rkey,
					   .operand = 0x0000000100000001ull,
					   .field_boundary = 1ull << 31 };
		atomic_ok(p, &op, res, rmr, 0x00000001ffffffffull, 12);
		op = (struct rmca_atomic){ .kind = RMCA_ATOMIC_MASKED_CSWAP,
					   .raddr = w.addr + 16, .rkey = w.rkey,
					   .compare = 0x34, .compare_mask = 0xff,
					   .operand = 0xab, .swap_mask = 0xff };
		atomic_ok(p, &op, res, rmr, 0x1234, 13);
	}
	if (cur->atomic == RMCA_PATH_NONE) {
		/* keep the server's expectations: do the arithmetic by put */
		uint64_t v[3] = { 15, 0x0000000200000000ull, 0x12ab };

		memcpy(src, v, sizeof(v));
		API_CHECK_OK(rmca_put(p->ep, src, sizeof(v), smr, w.addr, w.rkey,
				      RMCA_DELIVERED, API_CTX(14)));
		api_wait_status(p, API_CTX(14), RMCA_OK);
	}
	src[100] = 'x';
	API_CHECK_OK(rmca_put(p->ep, src + 100, 1, smr, once.addr, once.rkey,
			      RMCA_DELIVERED, API_CTX(15)));
	api_wait_status(p, API_CTX(15), RMCA_OK);
	API_CHECK_OK(API_POST(p, rmca_send_inv(p->ep, src, 8, smr, once.rkey,
					       API_CTX(16))));
	api_wait_status(p, API_CTX(16), RMCA_OK);
	api_expect_token(p, 0, API_TOKEN_GO);
	/* revoked: the key touches nothing any more */
	src[0] = 'y';
	API_CHECK_OK(rmca_put(p->ep, src, 1, smr, once.addr, once.rkey,
			      RMCA_DELIVERED, API_CTX(17)));
	api_wait(p, API_CTX(17), &c);
	API_CHECK_MSG(c.status == RMCA_ERR_REMOTE_ACCESS,
		      "put with a revoked key: %s", api_strerror(c.status));
	api_token(p, 0, API_TOKEN_GO);
}

static void run_mask(const struct mask_case *c)
{
	struct api_test t = { .server = mask_server, .client = mask_client,
			      .no_barrier = true };

	cur = c;
	set_env(c);
	api_run(&t);
	unsetenv("RMCA_tcp_caps");
	unsetenv("RMCA_atomic_mode");
}

static void native_paths_on_tcp(void **state)
{
	static const struct mask_case c = { NULL, NULL, RMCA_PATH_NATIVE,
					    RMCA_PATH_NATIVE, RMCA_PATH_NATIVE,
					    RMCA_PATH_NATIVE };
	(void)state;
	run_mask(&c);
}

static void masking_atomic_makes_the_target_core_execute(void **state)
{
	static const struct mask_case c = { "^atomic", NULL, RMCA_PATH_NATIVE,
					    RMCA_PATH_EMULATED, RMCA_PATH_NATIVE,
					    RMCA_PATH_NATIVE };
	(void)state;
	run_mask(&c);
}

static void masking_masked_atomic_builds_a_cas_loop(void **state)
{
	static const struct mask_case c = { "^masked_atomic", NULL,
					    RMCA_PATH_NATIVE, RMCA_PATH_NATIVE,
					    RMCA_PATH_CAS_LOOP, RMCA_PATH_NATIVE };
	(void)state;
	run_mask(&c);
}

static void masking_every_atomic_emulates_both_kinds(void **state)
{
	static const struct mask_case c = { "^atomic,masked_atomic", NULL,
					    RMCA_PATH_NATIVE, RMCA_PATH_EMULATED,
					    RMCA_PATH_EMULATED, RMCA_PATH_NATIVE };
	(void)state;
	run_mask(&c);
}

static void masking_send_inv_sends_a_revoke_message(void **state)
{
	static const struct mask_case c = { "^send_inv", NULL, RMCA_PATH_NATIVE,
					    RMCA_PATH_NATIVE, RMCA_PATH_NATIVE,
					    RMCA_PATH_REVOKE_MSG };
	(void)state;
	run_mask(&c);
}

static void masking_remote_completion_flushes_delivered_puts(void **state)
{
	static const struct mask_case c = { "^remote_completion", NULL,
					    RMCA_PATH_FLUSH, RMCA_PATH_NATIVE,
					    RMCA_PATH_NATIVE, RMCA_PATH_NATIVE };
	(void)state;
	run_mask(&c);
}

static void everything_masked_still_gives_the_same_results(void **state)
{
	static const struct mask_case c = {
		"^atomic,masked_atomic,send_inv,remote_completion", NULL,
		RMCA_PATH_FLUSH, RMCA_PATH_EMULATED, RMCA_PATH_EMULATED,
		RMCA_PATH_REVOKE_MSG
	};
	(void)state;
	run_mask(&c);
}

static void device_mode_refuses_cpu_atomics(void **state)
{
	/* tcp's atomics run on the target CPU: never mixed with a NIC's */
	static const struct mask_case c = { NULL, "device", RMCA_PATH_NATIVE,
					    RMCA_PATH_NONE, RMCA_PATH_NONE,
					    RMCA_PATH_NATIVE };
	(void)state;
	run_mask(&c);
}

/* ---- refusals: atomic mode, loopback ---- */

static const char *server_mode, *client_mode, *both_caps;
static int want_connect;

static void refuse_server(struct api_peer *p)
{
	rmca_ep_t *ep = NULL;
	int rc;

	if (server_mode)
		setenv("RMCA_atomic_mode", server_mode, 1);
	api_server_listen(p, api_host());
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	rc = rmca_accept(p->l, API_TIMEOUT_MS, &ep);
	API_CHECK_MSG(rc == want_connect, "accept: %s", api_strerror(rc));
	api_expect_token(p, 0, API_TOKEN_GO);
}

static void refuse_client(struct api_peer *p)
{
	char hp[128];
	rmca_ep_t *ep = NULL;
	int rc;

	if (client_mode)
		setenv("RMCA_atomic_mode", client_mode, 1);
	API_CHECK_OK(rmca_init(&p->ctx));
	api_host_port(hp, sizeof(hp), api_host(), api_client_read_port(p));
	rc = rmca_connect(p->ctx, hp, API_TIMEOUT_MS, &ep);
	API_CHECK_MSG(rc == want_connect, "connect: %s", api_strerror(rc));
	api_token(p, 0, API_TOKEN_GO);
}

/* The server's log of one run (free it). */
static char *run_refusal(void)
{
	struct api_test t = { .server = refuse_server, .client = refuse_client,
			      .manual = true };
	char *log;

	setenv("RMCA_transports", "tcp", 1);
	setenv("RMCA_verbose", "1", 1);
	if (both_caps)
		setenv("RMCA_tcp_caps", both_caps, 1);
	log = api_run_log(&t);
	unsetenv("RMCA_verbose");
	unsetenv("RMCA_tcp_caps");
	return log;
}

static void peer_with_another_atomic_mode_is_refused(void **state)
{
	char *log;

	(void)state;
	server_mode = "cpu";
	client_mode = "device";
	both_caps = NULL;
	want_connect = RMCA_ERR_PROTOCOL;
	log = run_refusal();
	if (!strstr(log, "atomic mode differs"))
		fail_msg("no reason logged:\n%s", log);
	free(log);
}

static void local_peer_is_never_routed_to_a_module_without_loopback(void **state)
{
	char *log;

	(void)state;
	server_mode = client_mode = NULL;
	both_caps = "^loopback";
	want_connect = RMCA_ERR_UNREACHABLE;
	log = run_refusal();
	if (!strstr(log, "cannot loop back"))
		fail_msg("no reason logged:\n%s", log);
	free(log);
}

static void verbose_logs_the_choice_and_each_path(void **state)
{
	char *log;

	(void)state;
	server_mode = client_mode = NULL;
	both_caps = "^send_inv";
	want_connect = RMCA_OK;
	log = run_refusal();
	if (!strstr(log, "chose tcp") ||
	    !strstr(log, "send_inv: revoke_msg (") ||
	    !strstr(log, "atomic: native ("))
		fail_msg("choice or paths not logged:\n%s", log);
	free(log);
}

/* ---- one word, several paths at once ---- */

#define HAMMER_CLIENTS 4
#define HAMMER_OPS 100

static const char *const hammer_caps[HAMMER_CLIENTS] = {
	"", "^atomic", "^masked_atomic", "^atomic,masked_atomic",
};

static void hammer_server(struct api_peer *p)
{
	uint64_t *w = api_alloc(4096);
	rmca_mr_t *mr;
	int i;

	api_server_listen(p, api_host());
	api_server_accept_all(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, w, 4096,
				 RMCA_ACCESS_REMOTE_ATOMIC, &mr));
	for (i = 0; i < p->nclients; i++)
		api_put_region(p, i, w, 4096, mr, p->eps[i]);
	for (i = 0; i < p->nclients; i++)
		api_expect_token(p, i, API_TOKEN_GO);
	/* each client: HAMMER_OPS FADD of 1 and HAMMER_OPS masked FADD of 1
	 * in the high 32-bit field */
	API_CHECK_MSG(w[0] == (uint64_t)HAMMER_CLIENTS * HAMMER_OPS *
				      (1 + (1ull << 32)),
		      "word is %llx", (unsigned long long)w[0]);
	for (i = 0; i < p->nclients; i++)
		api_token(p, i, API_TOKEN_GO);
}

static void hammer_client(struct api_peer *p)
{
	uint64_t *res = api_alloc(4096);
	struct api_region w;
	struct rmca_ep_attr a;
	rmca_mr_t *rmr;

	setenv("RMCA_tcp_caps", hammer_caps[p->index], 1);
	api_client_connect(p, api_host());
	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	api_get_region(p, 0, &w);
	API_CHECK_OK(rmca_mr_reg(p->ctx, res, 4096, RMCA_ACCESS_LOCAL, &rmr));
	for (int i = 0; i < HAMMER_OPS; i++) {
		struct rmca_atomic add = { .kind = RMCA_ATOMIC_FADD,
					   .raddr = w.addr, .rkey = w.rkey,
					   .operand = 1 };
		struct rmca_atomic madd = { .kind = RMCA_ATOMIC_MASKED_FADD,
					    .raddr = w.addr, .rkey = w.rkey,
					    .operand = 1ull << 32,
					    .field_boundary = 1ull << 31 };

		API_CHECK_OK(API_POST(p, rmca_atomic(p->ep, &add, res, rmr,
						     API_CTX(1))));
		api_wait_status(p, API_CTX(1), RMCA_OK);
		API_CHECK_OK(API_POST(p, rmca_atomic(p->ep, &madd, res, rmr,
						     API_CTX(2))));
		api_wait_status(p, API_CTX(2), RMCA_OK);
	}
	api_token(p, 0, API_TOKEN_GO);
	api_expect_token(p, 0, API_TOKEN_GO);
}

static void peers_on_every_path_hammer_one_word_exactly(void **state)
{
	struct api_test t = { .server = hammer_server, .client = hammer_client,
			      .nclients = HAMMER_CLIENTS, .manual = true };

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(native_paths_on_tcp),
		cmocka_unit_test(masking_atomic_makes_the_target_core_execute),
		cmocka_unit_test(masking_masked_atomic_builds_a_cas_loop),
		cmocka_unit_test(masking_every_atomic_emulates_both_kinds),
		cmocka_unit_test(masking_send_inv_sends_a_revoke_message),
		cmocka_unit_test(masking_remote_completion_flushes_delivered_puts),
		cmocka_unit_test(everything_masked_still_gives_the_same_results),
		cmocka_unit_test(device_mode_refuses_cpu_atomics),
		cmocka_unit_test(peer_with_another_atomic_mode_is_refused),
		cmocka_unit_test(local_peer_is_never_routed_to_a_module_without_loopback),
		cmocka_unit_test(verbose_logs_the_choice_and_each_path),
		cmocka_unit_test(peers_on_every_path_hammer_one_word_exactly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
