/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The paths the core builds over the ib and iwarp modules on a real device
 * (rxe0, siw0), inside the VM: what rmca_ep_query reports under each forced
 * fallback, where a local peer goes when the iwarp module may not loop back,
 * and one word hammered through different paths at once.
 *
 * Each case sets its own RMCA_* variables (inherited by the forked server
 * and clients) and restores the outer ones after, so the outcome does not
 * depend on the environment check-vm runs it in. Device from
 * RMCA_transports (ib or iwarp), address from RMCATEST_HOST.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "tap_skip.h"

#define TOKEN_DONE 0xd0e

static const char *const knobs[] = { "RMCA_transports", "RMCA_ib_caps",
				     "RMCA_iwarp_caps", "RMCA_atomic_mode",
				     "RMCA_iwarp_loopback" };
#define NKNOBS (sizeof(knobs) / sizeof(knobs[0]))

static char *saved[NKNOBS];
static char dev_transport[16];

static bool on_iwarp(void)
{
	return !strcmp(dev_transport, "iwarp");
}

static int group_setup(void **state)
{
	snprintf(dev_transport, sizeof(dev_transport), "%s", api_transport());
	for (size_t i = 0; i < NKNOBS; i++) {
		const char *v = getenv(knobs[i]);

		saved[i] = v ? strdup(v) : NULL;
	}
	return 0;
}

/* Back to the outer environment, less the knobs a case may set. */
static void env_reset(void)
{
	for (size_t i = 0; i < NKNOBS; i++)
		unsetenv(knobs[i]);
	setenv("RMCA_transports", dev_transport, 1);
}

static int group_teardown(void **state)
{
	for (size_t i = 0; i < NKNOBS; i++) {
		if (saved[i])
			setenv(knobs[i], saved[i], 1);
		else
			unsetenv(knobs[i]);
		free(saved[i]);
	}
	return 0;
}

static const char *path_name(enum rmca_path p)
{
	static const char *const n[] = { "none", "native", "flush",
					 "cas_loop", "emulated", "revoke_msg" };

	return (unsigned)p < sizeof(n) / sizeof(n[0]) ? n[p] : "?";
}

/* ---- rmca_ep_query under each forced fallback ---- */

struct paths {
	const char *name;
	const char *caps; /* RMCA_<transport>_caps, or NULL */
	const char *mode; /* RMCA_atomic_mode, or NULL (auto) */
	enum rmca_path put_delivered, atomic, masked_atomic, send_inv;
};

static void paths_check(struct api_peer *p)
{
	const struct paths *want = p->arg;
	struct rmca_ep_attr a;

	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	API_CHECK_MSG(!strcmp(a.transport, dev_transport),
		      "%s: transport %s", want->name, a.transport);
#define PATH_IS(f)                                                             \
	API_CHECK_MSG(a.f == want->f, "%s: " #f " is %s, expected %s",        \
		      want->name, path_name(a.f), path_name(want->f))
	PATH_IS(put_delivered);
	PATH_IS(atomic);
	PATH_IS(masked_atomic);
	PATH_IS(send_inv);
#undef PATH_IS
}

static const struct paths rxe_paths[] = {
	/* alone in auto mode, rxe's NIC atomics decide: device mode */
	{ "auto", NULL, NULL, RMCA_PATH_NATIVE, RMCA_PATH_NATIVE,
	  RMCA_PATH_CAS_LOOP, RMCA_PATH_NATIVE },
	{ "^send_inv", "^send_inv", NULL, RMCA_PATH_NATIVE, RMCA_PATH_NATIVE,
	  RMCA_PATH_CAS_LOOP, RMCA_PATH_REVOKE_MSG },
	{ "^atomic", "^atomic", NULL, RMCA_PATH_NATIVE, RMCA_PATH_EMULATED,
	  RMCA_PATH_EMULATED, RMCA_PATH_NATIVE },
	{ "device", NULL, "device", RMCA_PATH_NATIVE, RMCA_PATH_NATIVE,
	  RMCA_PATH_CAS_LOOP, RMCA_PATH_NATIVE },
	/* rxe's atomics are not CPU atomics: the target's core runs them */
	{ "cpu", NULL, "cpu", RMCA_PATH_NATIVE, RMCA_PATH_EMULATED,
	  RMCA_PATH_EMULATED, RMCA_PATH_NATIVE },
	{ "^remote_completion", "^remote_completion", NULL, RMCA_PATH_FLUSH,
	  RMCA_PATH_NATIVE, RMCA_PATH_CAS_LOOP, RMCA_PATH_NATIVE },
};

static const struct paths siw_paths[] = {
	/* no NIC atomics: auto is cpu mode */
	{ "auto", NULL, NULL, RMCA_PATH_FLUSH, RMCA_PATH_EMULATED,
	  RMCA_PATH_EMULATED, RMCA_PATH_REVOKE_MSG },
	{ "device", NULL, "device", RMCA_PATH_FLUSH, RMCA_PATH_NONE,
	  RMCA_PATH_NONE, RMCA_PATH_REVOKE_MSG },
};

static void test_ep_query_reports_the_expected_paths(void **state)
{
	const struct paths *tab = on_iwarp() ? siw_paths : rxe_paths;
	size_t n = on_iwarp() ? sizeof(siw_paths) / sizeof(siw_paths[0]) :
				sizeof(rxe_paths) / sizeof(rxe_paths[0]);
	char caps_var[32];

	snprintf(caps_var, sizeof(caps_var), "RMCA_%s_caps", dev_transport);
	for (size_t i = 0; i < n; i++) {
		struct api_test t = { .server = paths_check,
				      .client = paths_check,
				      .arg = (void *)&tab[i] };

		print_message("# %s paths: %s\n", dev_transport, tab[i].name);
		env_reset();
		if (tab[i].caps)
			setenv(caps_var, tab[i].caps, 1);
		if (tab[i].mode)
			setenv("RMCA_atomic_mode", tab[i].mode, 1);
		api_run(&t);
	}
	env_reset();
}

/* ---- where a local peer goes when iwarp may not loop back ---- */

static void transport_check(struct api_peer *p)
{
	const char *want = p->arg;
	struct rmca_ep_attr a;

	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	API_CHECK_MSG(!strcmp(a.transport, want),
		      "endpoint on %s (%s), expected %s", a.transport,
		      a.device, want);
	API_CHECK(a.peer_is_local);
}

static void test_iwarp_loopback_override_sends_local_peers_to_tcp(
	void **state)
{
	struct api_test t = { .server = transport_check,
			      .client = transport_check };

	if (!on_iwarp())
		TAP_SKIP("iwarp only (RMCA_transports is not iwarp)");
	env_reset();
	setenv("RMCA_transports", "iwarp,tcp", 1);
	/* the probe finds that siw reaches its own host: iwarp wins */
	t.arg = "iwarp";
	api_run(&t);
	/* the override takes loopback away: only tcp reaches a local peer */
	setenv("RMCA_iwarp_loopback", "no", 1);
	t.arg = "tcp";
	api_run(&t);
	env_reset();
}

/* ---- one word, several processes, different paths ---- */

#define NCLI 4
#define NADD 100
#define WINDOW 8
#define INIT 1000ull

/* Client i's atomic: how it reaches the word (set before rmca_init). */
struct hammer {
	const char *name;
	const char *server_transports;
	const char *mode;
	const char *client_transports[NCLI];
	enum rmca_atomic_kind kind[NCLI];
	enum rmca_path path[NCLI];
};

static void hammer_server(struct api_peer *p)
{
	const struct hammer *h = p->arg;
	uint64_t *word = api_alloc(sizeof(uint64_t));
	uint64_t want = INIT;
	rmca_mr_t *mr;

	setenv("RMCA_transports", h->server_transports, 1);
	api_server_listen(p, api_host());
	api_server_accept_all(p);
	*word = INIT;
	API_CHECK_OK(rmca_mr_reg(p->ctx, word, sizeof(*word),
				 RMCA_ACCESS_REMOTE_ATOMIC, &mr));
	for (int i = 0; i < p->nclients; i++)
		api_put_region(p, i, word, sizeof(*word), mr, p->eps[i]);
	for (int i = 0; i < p->nclients; i++) {
		api_expect_token(p, i, TOKEN_DONE);
		want += (uint64_t)NADD * (uint64_t)(i + 1);
	}
	API_CHECK_MSG(*word == want, "%s: word %llu, expected %llu", h->name,
		      (unsigned long long)*word, (unsigned long long)want);
	for (int i = 0; i < p->nclients; i++)
		api_token(p, i, TOKEN_DONE);
	rmca_mr_dereg(mr);
}

static void hammer_client(struct api_peer *p)
{
	const struct hammer *h = p->arg;
	int me = p->index, posted = 0, done = 0;
	uint64_t *res = api_alloc(NADD * sizeof(uint64_t));
	struct rmca_completion c;
	struct rmca_ep_attr a;
	struct api_region r;
	rmca_mr_t *mr;

	setenv("RMCA_transports", h->client_transports[me], 1);
	api_client_connect(p, api_host());
	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	API_CHECK_MSG((h->kind[me] == RMCA_ATOMIC_FADD ? a.atomic :
							 a.masked_atomic) ==
			      h->path[me],
		      "%s: client %d on %s goes %s/%s", h->name, me,
		      a.transport, path_name(a.atomic),
		      path_name(a.masked_atomic));
	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, res, NADD * sizeof(uint64_t),
				 RMCA_ACCESS_LOCAL, &mr));
	while (done < NADD) {
		while (posted < NADD && posted - done < WINDOW) {
			struct rmca_atomic op = {
				.kind = h->kind[me],
				.raddr = r.addr,
				.rkey = r.rkey,
				.operand = (uint64_t)me + 1,
				/* one 64-bit field: a plain add */
				.field_boundary = 1ull << 63,
			};

			API_CHECK_OK(API_POST(p, rmca_atomic(p->ep, &op,
							     &res[posted], mr,
							     API_CTX(1 + posted))));
			posted++;
		}
		api_wait(p, API_CTX(1 + done), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		done++;
	}
	api_token(p, 0, TOKEN_DONE);
	api_expect_token(p, 0, TOKEN_DONE);
	rmca_mr_dereg(mr);
}

static void hammer(const struct hammer *h)
{
	const struct api_test t = { .server = hammer_server,
				    .client = hammer_client,
				    .nclients = NCLI,
				    .manual = true,
				    .arg = (void *)h };

	print_message("# hammer: %s\n", h->name);
	env_reset();
	setenv("RMCA_atomic_mode", h->mode, 1);
	api_run(&t);
	env_reset();
}

static void test_several_processes_hammer_one_word_through_different_paths(
	void **state)
{
	/* CPU mode: the target's core for the RDMA clients, the tcp
	 * module's own CPU atomics for the others, on the same word */
	struct hammer cpu = {
		.name = "cpu mode: emulated and tcp",
		.mode = "cpu",
		.kind = { RMCA_ATOMIC_FADD, RMCA_ATOMIC_FADD,
			  RMCA_ATOMIC_MASKED_FADD, RMCA_ATOMIC_FADD },
		.path = { RMCA_PATH_EMULATED, RMCA_PATH_NATIVE,
			  RMCA_PATH_EMULATED, RMCA_PATH_NATIVE },
	};
	/* device mode (rxe): the NIC's FADD and CAS loops over its CSWAP */
	const struct hammer dev = {
		.name = "device mode: native and cas loop",
		.server_transports = "ib",
		.mode = "device",
		.client_transports = { "ib", "ib", "ib", "ib" },
		.kind = { RMCA_ATOMIC_FADD, RMCA_ATOMIC_MASKED_FADD,
			  RMCA_ATOMIC_FADD, RMCA_ATOMIC_MASKED_FADD },
		.path = { RMCA_PATH_NATIVE, RMCA_PATH_CAS_LOOP,
			  RMCA_PATH_NATIVE, RMCA_PATH_CAS_LOOP },
	};
	char both[32];

	snprintf(both, sizeof(both), "%s,tcp", dev_transport);
	cpu.server_transports = both;
	cpu.client_transports[0] = dev_transport;
	cpu.client_transports[1] = "tcp";
	cpu.client_transports[2] = dev_transport;
	cpu.client_transports[3] = "tcp";
	hammer(&cpu);
	if (!on_iwarp())
		hammer(&dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ep_query_reports_the_expected_paths),
		cmocka_unit_test(
			test_iwarp_loopback_override_sends_local_peers_to_tcp),
		cmocka_unit_test(
			test_several_processes_hammer_one_word_through_different_paths),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
