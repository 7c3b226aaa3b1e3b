/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contract: 64-bit atomics return the old value and leave the exact new
 * one; masked variants keep their fields apart; concurrent adders lose
 * nothing. An op refused with RMCA_ERR_UNSUPPORTED at post time skips the
 * test (a transport without it); any other error fails it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define TOKEN_DONE 0xd0e
#define B32	   ((1ull << 63) | (1ull << 31))
#define B16	   ((1ull << 63) | (1ull << 47) | (1ull << 31) | (1ull << 15))
#define B8	   0x8080808080808080ull

struct step {
	enum rmca_atomic_kind kind;
	uint64_t operand, compare, compare_mask, swap_mask, field_boundary;
	uint64_t want_old; /* *result */
	uint64_t want_new; /* the target word afterwards */
};

struct acase {
	uint64_t init;
	unsigned access; /* the target region's, 0: REMOTE_ATOMIC */
	int want_status; /* of every step */
	int nsteps;
	struct step s[6];
};

/* The word sits between two guard words that no op may touch. */
#define GUARD_WORD 0x6a6a6a6a6a6a6a6aull

static void atomic_server(struct api_peer *p)
{
	const struct acase *ac = p->arg;
	uint64_t *mem = api_alloc(3 * sizeof(uint64_t));
	uint64_t want;
	rmca_mr_t *mr;

	mem[0] = mem[2] = GUARD_WORD;
	mem[1] = ac->init;
	API_CHECK_OK(rmca_mr_reg(
		p->ctx, mem, 3 * sizeof(uint64_t),
		ac->access ? ac->access : RMCA_ACCESS_REMOTE_ATOMIC, &mr));
	api_put_region(p, 0, &mem[1], sizeof(uint64_t), mr, p->ep);
	api_expect_token(p, 0, TOKEN_DONE);
	want = ac->want_status ? ac->init : ac->s[ac->nsteps - 1].want_new;
	API_CHECK_MSG(mem[1] == want, "target word %#llx, expected %#llx",
		      (unsigned long long)mem[1], (unsigned long long)want);
	API_CHECK(mem[0] == GUARD_WORD && mem[2] == GUARD_WORD);
}

static int post_atomic(struct api_peer *p, const struct rmca_atomic *op,
		       uint64_t *res, rmca_mr_t *mr, void *uc)
{
	int rc = API_POST(p, rmca_atomic(p->ep, op, res, mr, uc));

	if (rc == RMCA_ERR_UNSUPPORTED)
		api_skip(p, "atomic kind unsupported on this transport");
	API_CHECK_MSG(rc == RMCA_OK, "rmca_atomic(kind %d) returned %d (%s)",
		      op->kind, rc, api_strerror(rc));
	return rc;
}

static void atomic_client(struct api_peer *p)
{
	const struct acase *ac = p->arg;
	uint64_t *res = api_alloc(3 * sizeof(uint64_t));
	struct api_region r;
	rmca_mr_t *mr;
	int i;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, res, 3 * sizeof(uint64_t),
				 RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < ac->nsteps; i++) {
		const struct step *s = &ac->s[i];
		struct rmca_atomic op = {
			.kind = s->kind,
			.raddr = r.addr,
			.rkey = r.rkey,
			.operand = s->operand,
			.compare = s->compare,
			.compare_mask = s->compare_mask,
			.swap_mask = s->swap_mask,
			.field_boundary = s->field_boundary,
		};
		struct rmca_completion c;

		res[0] = res[2] = GUARD_WORD;
		res[1] = 0x0badc0de0badc0deull;
		post_atomic(p, &op, &res[1], mr, API_CTX(1 + i));
		api_wait(p, API_CTX(1 + i), &c);
		API_CHECK(c.op == RMCA_OP_ATOMIC);
		API_CHECK_MSG(c.status == ac->want_status,
			      "step %d: status %d (%s), expected %d (%s)", i,
			      c.status, api_strerror(c.status), ac->want_status,
			      api_strerror(ac->want_status));
		if (c.status == RMCA_OK)
			API_CHECK_MSG(
				res[1] == s->want_old,
				"step %d: old value %#llx, expected %#llx", i,
				(unsigned long long)res[1],
				(unsigned long long)s->want_old);
		API_CHECK(res[0] == GUARD_WORD && res[2] == GUARD_WORD);
	}
	api_token(p, 0, TOKEN_DONE);
}

static void run_case(const struct acase *ac)
{
	const struct api_test t = {.server = atomic_server,
				   .client = atomic_client,
				   .arg = (void *)ac};

	api_run(&t);
}

static void test_fadd_returns_old_and_adds(void **state)
{
	static const struct acase ac = {
		.init = 0x00000001ffffffffull,
		.nsteps = 3,
		.s =
			{
				{.kind = RMCA_ATOMIC_FADD,
				 .operand = 1,
				 .want_old = 0x00000001ffffffffull,
				 .want_new = 0x0000000200000000ull},
				{.kind = RMCA_ATOMIC_FADD,
				 .operand = ~0ull,
				 .want_old = 0x0000000200000000ull,
				 .want_new = 0x00000001ffffffffull},
				{.kind = RMCA_ATOMIC_FADD,
				 .operand = 1ull << 63,
				 .want_old = 0x00000001ffffffffull,
				 .want_new = 0x80000001ffffffffull},
			},
	};

	(void)state;
	run_case(&ac);
}

static void test_cswap_swaps_when_equal(void **state)
{
	static const struct acase ac = {
		.init = 0x1111,
		.nsteps = 1,
		.s =
			{
				{.kind = RMCA_ATOMIC_CSWAP,
				 .compare = 0x1111,
				 .operand = 0xdeadbeefcafef00dull,
				 .want_old = 0x1111,
				 .want_new = 0xdeadbeefcafef00dull},
			},
	};

	(void)state;
	run_case(&ac);
}

static void test_cswap_leaves_value_when_different(void **state)
{
	/* A failed compare is no error: the next one still works. */
	static const struct acase ac = {
		.init = 0x2222,
		.nsteps = 2,
		.s =
			{
				{.kind = RMCA_ATOMIC_CSWAP,
				 .compare = 0x2223,
				 .operand = 0x5555,
				 .want_old = 0x2222,
				 .want_new = 0x2222},
				{.kind = RMCA_ATOMIC_CSWAP,
				 .compare = 0x2222,
				 .operand = 0x3333,
				 .want_old = 0x2222,
				 .want_new = 0x3333},
			},
	};

	(void)state;
	run_case(&ac);
}

static void test_masked_fadd_fields_do_not_carry(void **state)
{
	static const struct acase ac = {
		.init = 0x00000001ffffffffull,
		.nsteps = 5,
		.s =
			{
				/* low field wraps, no carry into the high one
				 */
				{.kind = RMCA_ATOMIC_MASKED_FADD,
				 .operand = 0x0000000100000001ull,
				 .field_boundary = B32,
				 .want_old = 0x00000001ffffffffull,
				 .want_new = 0x0000000200000000ull},
				/* high field -1, low +1 */
				{.kind = RMCA_ATOMIC_MASKED_FADD,
				 .operand = 0xffffffff00000001ull,
				 .field_boundary = B32,
				 .want_old = 0x0000000200000000ull,
				 .want_new = 0x0000000100000001ull},
				/* four 16-bit fields, each -1, no borrow */
				{.kind = RMCA_ATOMIC_MASKED_FADD,
				 .operand = ~0ull,
				 .field_boundary = B16,
				 .want_old = 0x0000000100000001ull,
				 .want_new = 0xffff0000ffff0000ull},
				/* eight bytes, each +1 */
				{.kind = RMCA_ATOMIC_MASKED_FADD,
				 .operand = 0x0101010101010101ull,
				 .field_boundary = B8,
				 .want_old = 0xffff0000ffff0000ull,
				 .want_new = 0x0000010100000101ull},
				/* one 64-bit field: a plain add */
				{.kind = RMCA_ATOMIC_MASKED_FADD,
				 .operand = 1,
				 .field_boundary = 1ull << 63,
				 .want_old = 0x0000010100000101ull,
				 .want_new = 0x0000010100000102ull},
			},
	};

	(void)state;
	run_case(&ac);
}

static void test_masked_cswap_compares_and_swaps_under_masks(void **state)
{
	static const struct acase ac = {
		.init = 0x1122334455667788ull,
		.nsteps = 4,
		.s =
			{
				/* low half equal (high half ignored): swap top
				   16 */
				{.kind = RMCA_ATOMIC_MASKED_CSWAP,
				 .compare = 0x0000000055667788ull,
				 .compare_mask = 0x00000000ffffffffull,
				 .operand = 0xaaaa0000000000ffull,
				 .swap_mask = 0xffff000000000000ull,
				 .want_old = 0x1122334455667788ull,
				 .want_new = 0xaaaa334455667788ull},
				/* one compared bit differs: nothing changes */
				{.kind = RMCA_ATOMIC_MASKED_CSWAP,
				 .compare = 0x0000000055667789ull,
				 .compare_mask = 0x00000000ffffffffull,
				 .operand = ~0ull,
				 .swap_mask = ~0ull,
				 .want_old = 0xaaaa334455667788ull,
				 .want_new = 0xaaaa334455667788ull},
				/* nothing compared: always swaps, only the low
				   byte */
				{.kind = RMCA_ATOMIC_MASKED_CSWAP,
				 .compare = 0x1234,
				 .compare_mask = 0,
				 .operand = 0xffffffffffffffffull,
				 .swap_mask = 0xff,
				 .want_old = 0xaaaa334455667788ull,
				 .want_new = 0xaaaa3344556677ffull},
				/* full masks: a plain compare-and-swap */
				{.kind = RMCA_ATOMIC_MASKED_CSWAP,
				 .compare = 0xaaaa3344556677ffull,
				 .compare_mask = ~0ull,
				 .operand = 0x42,
				 .swap_mask = ~0ull,
				 .want_old = 0xaaaa3344556677ffull,
				 .want_new = 0x42},
			},
	};

	(void)state;
	run_case(&ac);
}

static void test_atomic_without_permission_is_refused(void **state)
{
	static const struct acase ac = {
		.init = 77,
		.access = RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE,
		.want_status = RMCA_ERR_REMOTE_ACCESS,
		.nsteps = 1,
		.s = {{.kind = RMCA_ATOMIC_FADD, .operand = 1}},
	};

	(void)state;
	run_case(&ac);
}

/* ---- several clients add to one word ---- */

#define NCLI   4
#define NADD   200
#define WINDOW 8
#define INIT   1000ull

static void hammer_server(struct api_peer *p)
{
	uint64_t *word = api_alloc(sizeof(uint64_t));
	uint64_t want = INIT;
	rmca_mr_t *mr;
	int i;

	*word = INIT;
	API_CHECK_OK(rmca_mr_reg(p->ctx, word, sizeof(*word),
				 RMCA_ACCESS_REMOTE_ATOMIC, &mr));
	for (i = 0; i < p->nclients; i++)
		api_put_region(p, i, word, sizeof(*word), mr, p->eps[i]);
	for (i = 0; i < p->nclients; i++) {
		api_expect_token(p, i, TOKEN_DONE);
		want += (uint64_t)NADD * (uint64_t)(i + 1);
	}
	API_CHECK_MSG(*word == want, "word %llu after all adds, expected %llu",
		      (unsigned long long)*word, (unsigned long long)want);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void hammer_client(struct api_peer *p)
{
	uint64_t *res = api_alloc(NADD * sizeof(uint64_t));
	struct rmca_completion c;
	struct api_region r;
	int posted = 0, done = 0, i;
	rmca_mr_t *mr;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, res, NADD * sizeof(uint64_t),
				 RMCA_ACCESS_LOCAL, &mr));
	while (done < NADD) {
		while (posted < NADD && posted - done < WINDOW) {
			struct rmca_atomic op = {
				.kind = RMCA_ATOMIC_FADD,
				.raddr = r.addr,
				.rkey = r.rkey,
				.operand = (uint64_t)p->index + 1,
			};

			post_atomic(p, &op, &res[posted], mr,
				    API_CTX(1 + posted));
			posted++;
		}
		api_wait(p, API_CTX(1 + done), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		done++;
	}
	/* Each add saw a different old value. */
	qsort(res, NADD, sizeof(uint64_t), cmp_u64);
	for (i = 1; i < NADD; i++)
		API_CHECK_MSG(res[i] > res[i - 1],
			      "two adds returned the same old value %llu",
			      (unsigned long long)res[i]);
	API_CHECK(res[0] >= INIT);
	api_token(p, 0, TOKEN_DONE);
}

static void test_fadd_from_several_clients_is_exact(void **state)
{
	const struct api_test t = {.server = hammer_server,
				   .client = hammer_client,
				   .nclients = NCLI};

	(void)state;
	api_run(&t);
}

/*
 * An atomic sees the put posted before it on the endpoint, as a device
 * atomic behind a WRITE on one queue pair does. Where the target's core
 * executes atomics, they go on the control channel, another connection
 * than the put's data: before, a fetch-add right behind a 4 MiB put over
 * tcp overtook it and returned the word the put had not yet written.
 * Each pass runs as the transport is, then with the device atomics masked
 * (RMCA_<comp>_caps=^atomic,masked_atomic on every transport, over the
 * masks a caller set, which are restored after).
 */
#define ORDER_LEN    (32u << 20)
#define ORDER_PASSES 4

static void order_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(ORDER_LEN);
	rmca_mr_t *mr;
	uint64_t w;

	API_CHECK_OK(rmca_mr_reg(
		p->ctx, mem, ORDER_LEN,
		RMCA_ACCESS_REMOTE_WRITE | RMCA_ACCESS_REMOTE_ATOMIC, &mr));
	api_put_region(p, 0, mem, ORDER_LEN, mr, p->ep);
	for (unsigned i = 0; i < ORDER_PASSES; i++) {
		api_expect_token(p, 0, TOKEN_DONE + 1 + i);
		memcpy(&w, mem + ORDER_LEN - 8, 8);
		/* the put's bytes but the last word, which the add changed */
		API_CHECK_MSG(api_pattern_check(mem, ORDER_LEN - 8, 77 + i) < 0,
			      "pass %u: the put's bytes were not all there", i);
		api_put_u64(p, 0, w);
	}
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(mem);
}

static void order_client(struct api_peer *p)
{
	uint8_t *src = api_alloc(ORDER_LEN);
	uint64_t *res = api_alloc(8);
	struct rmca_ep_attr a;
	struct api_region r;
	rmca_mr_t *smr, *rmr;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	fprintf(stderr, "# %s: atomics by path %d\n", a.transport, a.atomic);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, src, ORDER_LEN, RMCA_ACCESS_LOCAL, &smr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, res, 8, RMCA_ACCESS_LOCAL, &rmr));
	for (unsigned i = 0; i < ORDER_PASSES; i++) {
		struct rmca_atomic op = {.kind = RMCA_ATOMIC_FADD,
					 .raddr = r.addr + ORDER_LEN - 8,
					 .rkey = r.rkey,
					 .operand = 1};
		struct rmca_completion c;
		uint64_t last, now;

		api_pattern(src, ORDER_LEN, 77 + i);
		memcpy(&last, src + ORDER_LEN - 8, 8);
		*res = 0;
		API_CHECK_OK(
			API_POST(p, rmca_put(p->ep, src, ORDER_LEN, smr, r.addr,
					     r.rkey, 0, API_CTX(0x10 + i))));
		post_atomic(p, &op, res, rmr, API_CTX(0x20 + i));
		api_wait_status(p, API_CTX(0x10 + i), RMCA_OK);
		api_wait(p, API_CTX(0x20 + i), &c);
		API_CHECK_MSG(c.status == RMCA_OK, "pass %u: add: %s", i,
			      api_strerror(c.status));
		API_CHECK_MSG(*res == last,
			      "pass %u: the add behind the put read %#llx, not "
			      "the put's %#llx",
			      i, (unsigned long long)*res,
			      (unsigned long long)last);
		api_token(p, 0, TOKEN_DONE + 1 + i);
		now = api_get_u64(p, 0);
		API_CHECK_MSG(now == last + 1,
			      "pass %u: the word is %#llx, not the put's "
			      "%#llx plus one",
			      i, (unsigned long long)now,
			      (unsigned long long)last);
	}
	API_CHECK_OK(rmca_mr_dereg(smr));
	API_CHECK_OK(rmca_mr_dereg(rmr));
	free(src);
	free(res);
}

static void test_fadd_sees_the_put_posted_before_it(void **state)
{
	const struct api_test t = {.server = order_server,
				   .client = order_client};

	(void)state;
	api_run(&t);
	api_caps_mask_push("^atomic,masked_atomic");
	api_run(&t);
	api_caps_mask_pop();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fadd_returns_old_and_adds),
		cmocka_unit_test(test_cswap_swaps_when_equal),
		cmocka_unit_test(test_cswap_leaves_value_when_different),
		cmocka_unit_test(test_masked_fadd_fields_do_not_carry),
		cmocka_unit_test(
			test_masked_cswap_compares_and_swaps_under_masks),
		cmocka_unit_test(test_atomic_without_permission_is_refused),
		cmocka_unit_test(test_fadd_from_several_clients_is_exact),
		cmocka_unit_test(test_fadd_sees_the_put_posted_before_it),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
