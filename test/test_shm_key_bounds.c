/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shm target's keys at their bounds, against a real shm module whose
 * core is this test (shm_fake_core.h), on two connections whose peers the
 * test plays:
 *
 * - an access that ends on its region's last byte is taken, one a byte
 *   longer refused; so are an access the region's flags do not allow and
 *   an atomic off its 8-byte alignment;
 * - a key names its own region only, a use-once key only on the
 *   connection it was handed to: matched, revoked (by a
 *   send-with-invalidate or by the core's revoke message) there and
 *   nowhere else, and gone with that connection;
 * - the initiator's own copy under a published key (shm_direct.c, here
 *   over CMA into this very process) checks the same: the region's
 *   bounds, its flags, the key in the slot, and the connection a use-once
 *   key was handed to.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "shm.h"
#include "shm_fake_core.h"

#define RW (RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE)

struct tconn {
	struct shm_seg *seg;
	struct shm_conn *c;
	int sv[2];
};

static struct shm_module *m;
static struct tconn a, b;
static _Alignas(64) uint8_t mem[128];

/* A connection of m (side 1); the test is its peer (side 0). */
static void open_conn(struct tconn *t)
{
	struct shm_conn_parts parts = {.side = 1, .pidfd = -1};

	t->c = shm_fake_conn(m, &parts, &t->seg, t->sv);
}

static void close_conn(struct tconn *t)
{
	/* the table it copied under was ours, not a mapping of its own */
	t->c->peer_keys = NULL;
	t->c->cma = false;
	rmca_shm_disconnect(&t->c->base);
	close(t->sv[1]);
}

static int setup(void **state)
{
	(void)state;
	m = shm_fake_module();
	open_conn(&a);
	open_conn(&b);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close_conn(&a);
	close_conn(&b);
	rmca_shm_reap_zombies(m, true);
	rmca_shm_module_destroy(m);
	return 0;
}

static struct rmca_module_mr *reg(void *addr, size_t len, unsigned access)
{
	struct rmca_module_mr *mr = NULL;

	assert_int_equal(rmca_shm_mr_reg(&m->base, addr, len, access, &mr), 0);
	return mr;
}

static uint64_t key_on(struct rmca_module_mr *mr, struct tconn *t)
{
	uint64_t k = rmca_shm_mr_rkey(mr, &t->c->base);

	assert_true(k != 0);
	return k;
}

static int access_at(struct tconn *t, uint64_t key, size_t off, size_t len,
		     unsigned need)
{
	char *p = NULL;
	int rc = rmca_shm_access(t->c, key, (uintptr_t)(mem + off), len, need,
				 &p);

	if (!rc)
		assert_ptr_equal(p, (char *)mem + off);
	return rc;
}

/* [32, 40) of a 40-byte region is taken, [32, 41) refused; a write under
 * a key that only allows reading is refused. */
static void access_at_the_regions_end(void **state)
{
	struct rmca_module_mr *mr = reg(mem, 40, RMCA_ACCESS_REMOTE_READ);
	uint64_t k = key_on(mr, &a);

	(void)state;
	assert_int_equal(access_at(&a, k, 32, 8, RMCA_ACCESS_REMOTE_READ), 0);
	assert_int_equal(access_at(&a, k, 32, 9, RMCA_ACCESS_REMOTE_READ),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(access_at(&a, k, 0, 8, RMCA_ACCESS_REMOTE_WRITE),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(rmca_shm_mr_dereg(mr), 0);
}

/* An atomic on a word 8-byte aligned is taken; 4 bytes off, refused. */
static void atomic_off_its_alignment(void **state)
{
	struct rmca_module_mr *mr =
		reg(mem, sizeof(mem), RMCA_ACCESS_REMOTE_ATOMIC);
	uint64_t k = key_on(mr, &a);

	(void)state;
	assert_int_equal(access_at(&a, k, 8, 8, RMCA_ACCESS_REMOTE_ATOMIC), 0);
	assert_int_equal(access_at(&a, k, 4, 8, RMCA_ACCESS_REMOTE_ATOMIC),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(rmca_shm_mr_dereg(mr), 0);
}

/* The core looks a key up region by region (rmca_mr_by_key): a key
 * matches its own region only, and a use-once key only on the connection
 * it was handed to. */
static void key_matches_its_region_on_its_connection(void **state)
{
	struct rmca_module_mr *one = reg(mem, 64, RW),
			      *two = reg(mem + 64, 64, RW),
			      *once = reg(mem, 64, RW | RMCA_MR_USE_ONCE);
	uint64_t k1 = key_on(one, &a), ko = key_on(once, &a);

	(void)state;
	assert_true(rmca_shm_key_match(one, &a.c->base, k1));
	assert_true(rmca_shm_key_match(one, &b.c->base, k1));
	assert_false(rmca_shm_key_match(two, &a.c->base, k1));
	assert_true(rmca_shm_key_match(once, &a.c->base, ko));
	assert_false(rmca_shm_key_match(once, &b.c->base, ko));
	assert_int_equal(rmca_shm_mr_dereg(one), 0);
	assert_int_equal(rmca_shm_mr_dereg(two), 0);
	assert_int_equal(rmca_shm_mr_dereg(once), 0);
}

/* A use-once key handed out on a: a send-with-invalidate or a revoke
 * message arriving on b revokes nothing; on a, it revokes it. */
static void use_once_key_is_revoked_on_its_connection_only(void **state)
{
	struct rmca_module_mr *once = reg(mem, 64, RW | RMCA_MR_USE_ONCE);
	uint64_t k = key_on(once, &a);

	(void)state;
	assert_int_equal(access_at(&b, k, 0, 8, RMCA_ACCESS_REMOTE_WRITE),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_true(rmca_shm_revoke_inv(b.c, k) == 0);
	assert_int_equal(access_at(&a, k, 0, 8, RMCA_ACCESS_REMOTE_WRITE), 0);
	assert_int_equal(rmca_shm_revoke(once, &b.c->base, k), 0);
	assert_int_equal(access_at(&a, k, 0, 8, RMCA_ACCESS_REMOTE_WRITE), 0);
	assert_true(rmca_shm_revoke_inv(a.c, k) == k);
	assert_int_equal(access_at(&a, k, 0, 8, RMCA_ACCESS_REMOTE_WRITE),
			 RMCA_ERR_REMOTE_ACCESS);
	k = key_on(once, &a);
	assert_int_equal(rmca_shm_revoke(once, &a.c->base, k), 0);
	assert_int_equal(access_at(&a, k, 0, 8, RMCA_ACCESS_REMOTE_WRITE),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(rmca_shm_mr_dereg(once), 0);
}

/* The use-once keys handed out on a connection go with it; the others
 * stay. */
static void use_once_keys_go_with_their_connection(void **state)
{
	struct rmca_module_mr *once = reg(mem, 64, RW | RMCA_MR_USE_ONCE),
			      *plain = reg(mem, 64, RW);
	uint64_t ko = key_on(once, &a), kp = key_on(plain, &a);
	size_t n = m->keys.count;

	(void)state;
	rmca_shm_keys_drop_conn(m, a.c);
	assert_int_equal(m->keys.count, n - 1);
	assert_int_equal(access_at(&a, ko, 0, 8, RMCA_ACCESS_REMOTE_WRITE),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(access_at(&a, kp, 0, 8, RMCA_ACCESS_REMOTE_WRITE), 0);
	assert_int_equal(rmca_shm_mr_dereg(once), 0);
	assert_int_equal(rmca_shm_mr_dereg(plain), 0);
}

/* ---- the initiator's own copy ---- */

/* a copies under the module's own table, as a peer in this process
 * would: CMA to ourselves; its peer's side says tag. */
static void direct_on(struct tconn *t, uint64_t tag)
{
	t->c->cma = true;
	t->c->peer_keys = m->pub;
	t->c->peer_pid = getpid();
	t->c->r.peer->tag = tag;
}

static int direct_read(uint64_t key, size_t off, size_t len, char *dst)
{
	return rmca_shm_direct(a.c, false, dst, (uintptr_t)(mem + off), key,
			       len);
}

/* The region's last 8 bytes are read; 9 from the same place are refused,
 * nothing copied. */
static void direct_copy_at_the_regions_end(void **state)
{
	struct rmca_module_mr *mr = reg(mem, 40, RMCA_ACCESS_REMOTE_READ);
	uint64_t k = key_on(mr, &a);
	char dst[16];

	(void)state;
	assert_true(shm_key_slot(k) != 0);
	direct_on(&a, 0);
	for (size_t i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)i;
	memset(dst, 'x', sizeof(dst));
	assert_int_equal(direct_read(k, 32, 8, dst), 0);
	assert_memory_equal(dst, mem + 32, 8);
	memset(dst, 'x', sizeof(dst));
	assert_int_equal(direct_read(k, 32, 9, dst), RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(dst[0], 'x');
	assert_int_equal(rmca_shm_mr_dereg(mr), 0);
}

/* A write under a key that allows reading only, a key other than the
 * slot's (its slot bits the same), a use-once key handed to another
 * connection than the one copying: refused, nothing copied. */
static void direct_copy_under_a_key_that_does_not_allow_it(void **state)
{
	struct rmca_module_mr *ro = reg(mem, 64, RMCA_ACCESS_REMOTE_READ),
			      *once = reg(mem + 64, 64, RW | RMCA_MR_USE_ONCE);
	uint64_t k = key_on(ro, &a), ko = key_on(once, &a);
	char src[8] = "abcdefg", src2[8] = "ABCDEFG", dst[8];

	(void)state;
	memset(mem, 0, sizeof(mem));
	direct_on(&a, a.c->tag);
	assert_int_equal(rmca_shm_direct(a.c, true, src, (uintptr_t)mem, k, 8),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(mem[0], 0);
	assert_int_equal(direct_read(k ^ (SHM_SLOT_MASK + 1), 0, 8, dst),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(
		rmca_shm_direct(a.c, true, src, (uintptr_t)(mem + 64), ko, 8),
		0);
	assert_int_equal(mem[64], 'a');
	direct_on(&a, b.c->tag);
	assert_int_equal(
		rmca_shm_direct(a.c, true, src2, (uintptr_t)(mem + 64), ko, 8),
		RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(mem[64], 'a');
	assert_int_equal(rmca_shm_mr_dereg(ro), 0);
	assert_int_equal(rmca_shm_mr_dereg(once), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(access_at_the_regions_end),
		T(atomic_off_its_alignment),
		T(key_matches_its_region_on_its_connection),
		T(use_once_key_is_revoked_on_its_connection_only),
		T(use_once_keys_go_with_their_connection),
		T(direct_copy_at_the_regions_end),
		T(direct_copy_under_a_key_that_does_not_allow_it),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
