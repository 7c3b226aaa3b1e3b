/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp target's keys against a raw peer (tcp_harness.h), at the edge
 * of what each allows:
 *
 * - a put, a get and an atomic are each checked for their own access
 *   flag: under a key whose region has every other flag but that one,
 *   refused, the memory untouched; with it, served;
 * - a use-once key names its region only on the connection it was handed
 *   out on, and goes when that connection goes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcp_harness.h"

#define RW  (RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE)
#define ALL (RW | RMCA_ACCESS_REMOTE_ATOMIC)

static _Alignas(64) uint8_t mem[64];

static struct rmca_module_mr *reg(struct tcp_module *m, unsigned access)
{
	struct rmca_module_mr *mr = NULL;

	assert_int_equal(
		rmca_tcp_mr_reg(&m->base, mem, sizeof(mem), access, &mr), 0);
	return mr;
}

/*
 * The peer sends f (type, and for a put its 8 bytes of payload) under a
 * key of mem registered with access: the answer's status. A refusal ends
 * the connection; the memory is checked by the caller.
 */
static int served(struct tcp_frame f, unsigned access)
{
	struct th_pair p = th_pair_open();
	struct rmca_module_mr *mr = reg(p.m, access);
	uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[8];
	struct tcp_frame r;

	memset(mem, 0, sizeof(mem));
	f.id = 9;
	f.raddr = (uintptr_t)mem + 8;
	f.rkey = rmca_tcp_mr_rkey(mr, &p.c->base);
	f.len = sizeof(data); /* an atomic's word, too */
	th_peer_frame(p.peer, &f);
	if (f.type == TCP_F_PUT)
		th_peer_write(p.peer, data, sizeof(data));
	th_pump_idle();
	if (f.type == TCP_F_PUT && !th_nfailed) {
		/* a put that was placed is not answered: the memory says */
		assert_memory_equal(mem + 8, data, sizeof(data));
		r.status = 0;
	} else {
		assert_true(th_peer_read_frame(p.peer, &r));
		assert_int_equal(r.type, TCP_F_RESP);
		assert_int_equal(r.id, 9);
		if (f.type == TCP_F_GET && !r.status) {
			assert_int_equal(r.len, sizeof(got));
			assert_int_equal(th_peer_read(p.peer, got, sizeof(got)),
					 sizeof(got));
		}
	}
	assert_int_equal(rmca_tcp_mr_dereg(mr), 0);
	th_pair_close(&p);
	return r.status;
}

static const uint8_t zero[sizeof(mem)];

static void put_needs_remote_write(void **state)
{
	struct tcp_frame f = {.type = TCP_F_PUT};

	(void)state;
	assert_int_equal(served(f, ALL & ~RMCA_ACCESS_REMOTE_WRITE),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_memory_equal(mem, zero, sizeof(mem));
	assert_int_equal(served(f, RMCA_ACCESS_REMOTE_WRITE), 0);
}

static void get_needs_remote_read(void **state)
{
	struct tcp_frame f = {.type = TCP_F_GET};

	(void)state;
	assert_int_equal(served(f, ALL & ~RMCA_ACCESS_REMOTE_READ),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(served(f, RMCA_ACCESS_REMOTE_READ), 0);
}

static void atomic_needs_remote_atomic(void **state)
{
	struct tcp_frame f = {
		.type = TCP_F_ATOMIC, .akind = RMCA_ATOMIC_FADD, .operand = 5};

	(void)state;
	assert_int_equal(served(f, RW), RMCA_ERR_REMOTE_ACCESS);
	assert_memory_equal(mem, zero, sizeof(mem));
	assert_int_equal(served(f, RMCA_ACCESS_REMOTE_ATOMIC), 0);
	assert_int_equal(mem[8], 5);
}

/* A use-once key handed out on a: the core's lookup (key_match) finds its
 * region through it on a only; once a is gone, so is the key. */
static void use_once_key_lives_on_its_connection(void **state)
{
	struct tcp_module *m = th_module();
	int pa, pb;
	struct tcp_conn *a = th_conn(m, &pa), *b = th_conn(m, &pb);
	struct rmca_module_mr *once = reg(m, RW | RMCA_MR_USE_ONCE),
			      *plain = reg(m, RW);
	uint64_t k = rmca_tcp_mr_rkey(once, &a->base);
	size_t n = m->keys.count;

	(void)state;
	assert_true(k != 0);
	assert_true(m->base.ops->key_match(once, &a->base, k));
	assert_false(m->base.ops->key_match(once, &b->base, k));
	assert_false(m->base.ops->key_match(plain, &a->base, k));
	rmca_tcp_conn_destroy(a);
	close(pa);
	assert_int_equal(m->keys.count, n - 1);
	assert_null(rmca_tcp_keytab_find(&m->keys, k));
	assert_int_equal(rmca_tcp_mr_dereg(once), 0);
	assert_int_equal(rmca_tcp_mr_dereg(plain), 0);
	rmca_tcp_conn_destroy(b);
	close(pb);
	th_module_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(put_needs_remote_write),
		cmocka_unit_test(get_needs_remote_read),
		cmocka_unit_test(atomic_needs_remote_atomic),
		cmocka_unit_test(use_once_key_lives_on_its_connection),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
