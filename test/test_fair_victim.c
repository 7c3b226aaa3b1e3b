/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rule every listener follows at its bound (framework/fair.c): the
 * connection that gives way to a newcomer is one of the source that holds
 * the most, the newcomer counted with its own, the wider source first;
 * within it, one that may go, the lowest rank, then the first listed. Each
 * case is a list of waiting connections as a listener describes them
 * (oldest first), and the one expected to go.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fair.h"

/* The allocations fair.c makes (linked with --wrap=calloc). */
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
static unsigned callocs;
static size_t calloc_bytes;

void *__wrap_calloc(size_t n, size_t size)
{
	callocs++;
	calloc_bytes += n * size;
	return __real_calloc(n, size);
}

/* A waiting connection: its source by name, and what the listener says. */
struct conn {
	const char *src; /* "uid/pid" with a wider source, else a host */
	bool busy;	 /* may not go (its handshake is done) */
	unsigned rank;
};

/* clang-format off */
#define C(s)	{.src = (s)}
#define R(s, r)	{.src = (s), .rank = (r)}
#define BUSY(s)	{.src = (s), .busy = true}
/* clang-format on */

struct list {
	const struct conn *c;
	size_t n;
	size_t outer; /* bytes of a wider source in each key */
};

static const void *list_next(void *arg, const void *cur,
			     struct rmca_fair_entry *e)
{
	const struct list *l = arg;
	const struct conn *c = cur ? (const struct conn *)cur + 1 : l->c;

	if (c == l->c + l->n)
		return NULL;
	*e = (struct rmca_fair_entry){.key = c->src,
				      .len = strlen(c->src),
				      .outer = l->outer,
				      .may_go = !c->busy,
				      .rank = c->rank};
	return c;
}

/* The index of the connection that gives way to one from src, or -1. */
static int victim_of(struct rmca_fair *f, const struct conn *c, size_t n,
		     const char *src, size_t outer)
{
	struct list l = {.c = c, .n = n, .outer = outer};
	const struct rmca_fair_entry e = {
		.key = src, .len = strlen(src), .outer = outer};
	const struct conn *v = rmca_fair_victim(f, n, list_next, &l, &e);

	return v ? (int)(v - c) : -1;
}

static int victim(const struct conn *c, size_t n, const char *src)
{
	struct rmca_fair f = {0};
	int i = victim_of(&f, c, n, src, 0);

	rmca_fair_fini(&f);
	return i;
}

/* Sources that hold as many: the first listed of them goes (the oldest),
 * whichever source it is, unless a later one has the lower rank. */
static void tied_sources_give_the_first_listed(void **state)
{
	const struct conn c[] = {C("b"), C("a"), C("b"), C("a"), C("c")};
	const struct conn r[] = {R("b", 1), R("a", 1), R("b", 1), R("a", 0)};

	assert_int_equal(victim(c, 5, "c"), 0);
	assert_int_equal(victim(c, 4, "d"), 0);
	/* a's silent one, though b's oldest is older */
	assert_int_equal(victim(r, 4, "d"), 3);
}

/* The newcomer counts with its own: its source, tied before, now holds
 * the most and gives way, though another's is older. */
static void newcomer_tips_its_own_source(void **state)
{
	const struct conn c[] = {C("a"), C("a"), C("a"),
				 C("b"), C("b"), C("b")};

	assert_int_equal(victim(c, 6, "b"), 3);
	assert_int_equal(victim(c, 6, "a"), 0);
	assert_int_equal(victim(c, 5, "c"), 0);
	assert_int_equal(victim(c, 4, "b"), 0); /* a 3, b 1 + 1 */
	assert_int_equal(victim(c, 5, "b"), 0); /* b 2 + 1 = a 3: first a */
}

/* A connection that may not go counts in its source all the same; a
 * source with none that may go gives nothing. */
static void busy_connections_count_but_stay(void **state)
{
	const struct conn c[] = {BUSY("a"), C("b"), BUSY("a"),
				 C("b"),    C("a"), BUSY("c")};
	const struct conn all[] = {BUSY("a"), BUSY("a"), C("b")};

	assert_int_equal(victim(c, 6, "x"), 4);	  /* a holds 3, b 2 */
	assert_int_equal(victim(c, 6, "b"), 1);	  /* b 3 = a 3: b's is older */
	assert_int_equal(victim(all, 3, "x"), 2); /* only b's may go */
	assert_int_equal(victim(all, 2, "a"), -1);
}

/* Within the source that gives way: the lowest rank, then the first. */
static void order_within_the_source(void **state)
{
	const struct conn c[] = {R("a", 1), R("b", 0), R("a", 2),
				 R("a", 0), R("a", 0), R("a", 1)};
	const struct conn same[] = {C("b"), C("a"), C("a"), C("a")};

	assert_int_equal(victim(c, 6, "x"), 3);
	assert_int_equal(victim(c, 3, "x"), 0); /* a 2: rank 1 before 2 */
	assert_int_equal(victim(same, 4, "x"), 1);
}

/* Nothing waits: nothing gives way (the newcomer is never its own
 * victim), and the counts kept serve the next call as new. */
static void empty_list_gives_none(void **state)
{
	struct rmca_fair f = {0};
	const struct conn c[] = {C("a"), C("b"), C("b")};

	assert_int_equal(victim_of(&f, c, 0, "a", 0), -1);
	/* a 1, b 2: the newcomer before does not count now */
	assert_int_equal(victim_of(&f, c, 3, "c", 0), 1);
	assert_int_equal(victim_of(&f, c, 0, "b", 0), -1);
	assert_int_equal(victim_of(&f, c, 1, "b", 0), 0);
	rmca_fair_fini(&f);
}

/* With a wider source (a user, then its processes): the user that holds
 * the most first, then its process that holds the most. */
static void wider_source_counts_first(void **state)
{
	/* keys "uuuu/pppp": 4 bytes of user, then the process */
	const struct conn c[] = {C("0002/0009"), C("0001/0001"), C("0001/0002"),
				 C("0002/0009"), C("0001/0002"), C("0002/0009"),
				 C("0001/0001")};
	struct rmca_fair f = {0};

	/* user 1 holds 4, user 2 3 (its process 3): user 1's first */
	assert_int_equal(victim_of(&f, c, 7, "0003/0001", 4), 1);
	/* user 2 now 4, as user 1: its process, 3 + 1, the most */
	assert_int_equal(victim_of(&f, c, 7, "0002/0009", 4), 0);
	/* user 1 5: its process 2 holds 2 + 1 */
	assert_int_equal(victim_of(&f, c, 7, "0001/0002", 4), 2);
	rmca_fair_fini(&f);
}

/* The counts are kept from call to call: at a bound that does not grow,
 * no allocation after the first, and the answer stays the same. */
static void no_allocation_once_sized(void **state)
{
	enum { N = 65536 };
	struct conn *c = malloc(N * sizeof(*c));
	char(*name)[16] = malloc(N * sizeof(*name));
	struct rmca_fair f = {0};

	assert_non_null(c);
	assert_non_null(name);
	for (int i = 0; i < N; i++) {
		/* every 8th from one flooder, the others all apart */
		snprintf(name[i], sizeof(name[i]), "h%d", i % 8 ? i : -1);
		c[i] = (struct conn){.src = name[i]};
	}
	callocs = 0;
	calloc_bytes = 0;
	assert_int_equal(victim_of(&f, c, N, "x", 0), 0);
	assert_int_equal(callocs, 1);
	print_message("# first call at %d: %u allocation, %zu bytes\n", N,
		      callocs, calloc_bytes);
	for (int i = 0; i < 3; i++)
		assert_int_equal(victim_of(&f, c, N, name[5], 0), 0);
	assert_int_equal(victim_of(&f, c, N / 2, "h5", 0), 0);
	assert_int_equal(callocs, 1);
	c[0].busy = true;
	assert_int_equal(victim_of(&f, c, N, "x", 0), 8);
	assert_int_equal(callocs, 1);
	rmca_fair_fini(&f);
	free(name);
	free(c);
}

/* The reference vectors of SipHash-2-4 (key 00 01 .. 0f, the message the
 * first len bytes of 00 01 02 ..): lengths 0-3, then 15 (a word and a
 * tail of 7). */
static void hash_is_siphash_2_4(void **state)
{
	static const struct {
		size_t len;
		uint64_t h;
	} v[] = {{0, 0x726fdb47dd0e0e31ull},
		 {1, 0x74f839c593dc67fdull},
		 {2, 0x0d6c8009d9a94f5aull},
		 {3, 0x85676696d7fb7e2dull},
		 {15, 0xa129ca6149be45e5ull}};
	const uint64_t k[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
	uint8_t msg[16];

	(void)state;
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		assert_true(rmca_fair_hash(k, msg, v[i].len) == v[i].h);
}

/* An attacker picks its addresses: with a hash it can compute, it picks
 * ones that share a run of slots. Each table's key is drawn anew. */
static void each_table_draws_its_key(void **state)
{
	struct rmca_fair a = {0}, b = {0};
	struct conn c[] = {C("h1"), C("h2")};

	(void)state;
	assert_int_equal(victim_of(&a, c, 2, "h1", 0), 0);
	assert_int_equal(victim_of(&b, c, 2, "h1", 0), 0);
	assert_true(a.key[0] || a.key[1]);
	assert_true(a.key[0] != b.key[0] || a.key[1] != b.key[1]);
	rmca_fair_fini(&a);
	rmca_fair_fini(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tied_sources_give_the_first_listed),
		cmocka_unit_test(newcomer_tips_its_own_source),
		cmocka_unit_test(busy_connections_count_but_stay),
		cmocka_unit_test(order_within_the_source),
		cmocka_unit_test(empty_list_gives_none),
		cmocka_unit_test(wider_source_counts_first),
		cmocka_unit_test(no_allocation_once_sized),
		cmocka_unit_test(hash_is_siphash_2_4),
		cmocka_unit_test(each_table_draws_its_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
