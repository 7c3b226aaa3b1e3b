/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp key table and the target's access check: keys are random,
 * non-zero, carry RMCA_KEY_USE_ONCE exactly for use-once regions, and a
 * revoked or out-of-bounds access is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <cmocka.h>

#include "tcp.h"

static int real_random(void *buf, size_t len)
{
	return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
}

static int zero_random(void *buf, size_t len)
{
	memset(buf, 0, len);
	return 0;
}

static int failing_random(void *buf, size_t len)
{
	return -1;
}

#define NKEYS 5000

static void keys_are_nonzero_unique_and_flagged(void **state)
{
	struct tcp_keytab t;
	static uint64_t keys[NKEYS];
	int vals[NKEYS];
	int high = 0;

	assert_int_equal(rmca_tcp_keytab_init(&t, real_random), 0);
	for (int i = 0; i < NKEYS; i++) {
		bool once = i & 1;

		assert_int_equal(rmca_tcp_keytab_add(&t, once, &vals[i],
						     &keys[i]),
				 0);
		assert_true(keys[i] != 0);
		assert_int_equal(!!(keys[i] & RMCA_KEY_USE_ONCE), once);
		/* the other 63 bits are random: some high bits are set */
		high += (keys[i] >> 62) & 1;
	}
	assert_true(high > NKEYS / 4 && high < 3 * NKEYS / 4);
	for (int i = 0; i < NKEYS; i++)
		assert_ptr_equal(rmca_tcp_keytab_find(&t, keys[i]), &vals[i]);
	assert_int_equal(t.count, NKEYS);
	rmca_tcp_keytab_fini(&t);
}

static void removed_key_is_gone_others_stay(void **state)
{
	struct tcp_keytab t;
	uint64_t k[3];
	int v[3];

	assert_int_equal(rmca_tcp_keytab_init(&t, real_random), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rmca_tcp_keytab_add(&t, true, &v[i], &k[i]),
				 0);
	assert_ptr_equal(rmca_tcp_keytab_remove(&t, k[1]), &v[1]);
	assert_null(rmca_tcp_keytab_find(&t, k[1]));
	assert_null(rmca_tcp_keytab_remove(&t, k[1]));
	assert_ptr_equal(rmca_tcp_keytab_find(&t, k[0]), &v[0]);
	assert_ptr_equal(rmca_tcp_keytab_find(&t, k[2]), &v[2]);
	assert_null(rmca_tcp_keytab_find(&t, 0));
	rmca_tcp_keytab_fini(&t);
}

static void zero_key_is_never_handed_out(void **state)
{
	struct tcp_keytab t;
	uint64_t k = 1;
	int v;

	/* a source stuck at zero gives no key rather than key 0 ... */
	assert_int_equal(rmca_tcp_keytab_init(&t, zero_random), 0);
	assert_int_equal(rmca_tcp_keytab_add(&t, false, &v, &k),
			 RMCA_ERR_AGAIN);
	/* ... except the use-once bit alone, which is non-zero */
	assert_int_equal(rmca_tcp_keytab_add(&t, true, &v, &k), 0);
	assert_true(k == RMCA_KEY_USE_ONCE);
	/* and never the same key twice */
	assert_int_equal(rmca_tcp_keytab_add(&t, true, &v, &k),
			 RMCA_ERR_AGAIN);
	rmca_tcp_keytab_fini(&t);

	assert_int_equal(rmca_tcp_keytab_init(&t, failing_random), 0);
	assert_int_equal(rmca_tcp_keytab_add(&t, true, &v, &k),
			 RMCA_ERR_AGAIN);
	rmca_tcp_keytab_fini(&t);
}

/* A region with one key, bound to c if not NULL. */
static struct tcp_mr *reg(struct tcp_module *m, void *addr, size_t len,
			  unsigned access, struct tcp_conn *c, uint64_t *key)
{
	struct tcp_mr *mr = calloc(1, sizeof(*mr));
	struct tcp_rkey *k;

	assert_non_null(mr);
	mr->mod = m;
	mr->addr = addr;
	mr->len = len;
	mr->access = access;
	rmca_list_init(&mr->keys);
	k = rmca_tcp_rkey_new(mr, c);
	assert_non_null(k);
	*key = k->key;
	return mr;
}

static void unreg(struct tcp_mr *mr)
{
	struct tcp_rkey *k;

	while ((k = rmca_list_first(&mr->keys, struct tcp_rkey, mr_link)))
		rmca_tcp_rkey_free(k);
	free(mr);
}

static void conn_init(struct tcp_conn *c)
{
	memset(c, 0, sizeof(*c));
	rmca_list_init(&c->keys);
}

static void target_checks_key_bounds_and_permission(void **state)
{
	static uint64_t buf[64];
	struct tcp_module m = { 0 };
	struct tcp_mr *rw, *ro;
	uint64_t base = (uintptr_t)buf, rwk, rok;
	struct tcp_conn c;
	char *p;

	conn_init(&c);
	assert_int_equal(rmca_tcp_keytab_init(&m.keys, real_random), 0);
	rw = reg(&m, buf, sizeof(buf),
		 RMCA_ACCESS_REMOTE_WRITE | RMCA_ACCESS_REMOTE_ATOMIC, NULL,
		 &rwk);
	ro = reg(&m, buf, 64, RMCA_ACCESS_REMOTE_READ, NULL, &rok);

	assert_int_equal(rmca_tcp_access(&m, &c, rwk, base + 8, 16,
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 0);
	assert_ptr_equal(p, (char *)buf + 8);
	/* the whole region, and an empty access at its very end */
	assert_int_equal(rmca_tcp_access(&m, &c, rwk, base, sizeof(buf),
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 0);
	assert_int_equal(rmca_tcp_access(&m, &c, rwk, base + sizeof(buf), 0,
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 0);
	/* one byte past either end */
	assert_int_equal(rmca_tcp_access(&m, &c, rwk, base + 1, sizeof(buf),
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(rmca_tcp_access(&m, &c, rwk, base - 1, 1,
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 RMCA_ERR_REMOTE_ACCESS);
	/* a length that wraps raddr + len */
	assert_int_equal(rmca_tcp_access(&m, &c, rwk, base + 8, ~0ull - 4,
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 RMCA_ERR_REMOTE_ACCESS);
	/* permission */
	assert_int_equal(rmca_tcp_access(&m, &c, rwk, base, 8,
					 RMCA_ACCESS_REMOTE_READ, &p, NULL),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(rmca_tcp_access(&m, &c, rok, base, 8,
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(rmca_tcp_access(&m, &c, rok, base, 8,
					 RMCA_ACCESS_REMOTE_ATOMIC, &p, NULL),
			 RMCA_ERR_REMOTE_ACCESS);
	/* atomics: aligned only */
	assert_int_equal(rmca_tcp_access(&m, &c, rwk, base + 8, 8,
					 RMCA_ACCESS_REMOTE_ATOMIC, &p, NULL),
			 0);
	assert_int_equal(rmca_tcp_access(&m, &c, rwk, base + 4, 8,
					 RMCA_ACCESS_REMOTE_ATOMIC, &p, NULL),
			 RMCA_ERR_REMOTE_ACCESS);
	/* unknown key */
	assert_int_equal(rmca_tcp_access(&m, &c, rwk ^ 1, base, 8,
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 RMCA_ERR_REMOTE_ACCESS);
	unreg(rw);
	unreg(ro);
	assert_int_equal(m.keys.count, 0);
	rmca_tcp_keytab_fini(&m.keys);
}

static void send_inv_revokes_use_once_keys_only(void **state)
{
	static uint64_t buf[8];
	struct tcp_module m = { 0 };
	struct tcp_mr *once, *plain;
	uint64_t ok, pk;
	struct tcp_conn c;
	char *p;

	conn_init(&c);
	assert_int_equal(rmca_tcp_keytab_init(&m.keys, real_random), 0);
	once = reg(&m, buf, sizeof(buf),
		   RMCA_ACCESS_REMOTE_WRITE | RMCA_MR_USE_ONCE, &c, &ok);
	plain = reg(&m, buf, sizeof(buf), RMCA_ACCESS_REMOTE_WRITE, NULL, &pk);

	assert_true(rmca_tcp_revoke(&m, &c, ok) == ok);
	assert_true(rmca_list_empty(&once->keys));
	assert_true(rmca_list_empty(&c.keys));
	assert_int_equal(rmca_tcp_access(&m, &c, ok, (uintptr_t)buf, 8,
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 RMCA_ERR_REMOTE_ACCESS);
	/* revoking again revokes nothing: the receive reports 0 */
	assert_true(rmca_tcp_revoke(&m, &c, ok) == 0);
	/* a key without the use-once bit is never revoked */
	assert_true(rmca_tcp_revoke(&m, &c, pk) == 0);
	assert_int_equal(rmca_tcp_access(&m, &c, pk, (uintptr_t)buf, 8,
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 0);
	unreg(once);
	unreg(plain);
	rmca_tcp_keytab_fini(&m.keys);
}

/* A use-once key names its region only on the connection it was bound to;
 * plain keys serve every connection of the module. */
static void use_once_key_is_bound_to_its_connection(void **state)
{
	static uint64_t buf[8];
	struct tcp_module m = { 0 };
	struct tcp_mr *once, *plain;
	struct tcp_conn a, b;
	uint64_t ok, pk;
	char *p;

	conn_init(&a);
	conn_init(&b);
	assert_int_equal(rmca_tcp_keytab_init(&m.keys, real_random), 0);
	once = reg(&m, buf, sizeof(buf),
		   RMCA_ACCESS_REMOTE_WRITE | RMCA_MR_USE_ONCE, &a, &ok);
	plain = reg(&m, buf, sizeof(buf), RMCA_ACCESS_REMOTE_WRITE, NULL, &pk);

	assert_int_equal(rmca_tcp_access(&m, &b, ok, (uintptr_t)buf, 8,
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_true(rmca_tcp_revoke(&m, &b, ok) == 0);
	assert_int_equal(rmca_tcp_access(&m, &a, ok, (uintptr_t)buf, 8,
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 0);
	assert_int_equal(rmca_tcp_access(&m, &b, pk, (uintptr_t)buf, 8,
					 RMCA_ACCESS_REMOTE_WRITE, &p, NULL),
			 0);
	unreg(once);
	assert_true(rmca_list_empty(&a.keys));
	unreg(plain);
	rmca_tcp_keytab_fini(&m.keys);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(keys_are_nonzero_unique_and_flagged),
		cmocka_unit_test(removed_key_is_gone_others_stay),
		cmocka_unit_test(zero_key_is_never_handed_out),
		cmocka_unit_test(target_checks_key_bounds_and_permission),
		cmocka_unit_test(send_inv_revokes_use_once_keys_only),
		cmocka_unit_test(use_once_key_is_bound_to_its_connection),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
