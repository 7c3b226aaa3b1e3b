/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint of a context to itself (rmca_job_ep to one's own rank), in
 * one process and without a launcher: the core's self endpoint is made
 * directly and driven through the public calls, as any endpoint is.
 *
 * Its sends land in the receives posted on it, in order, and wait for one;
 * a receive too small is truncated and fails it; puts, gets and atomics act
 * on this context's registered memory through the key checks a peer meets
 * (unknown, revoked or deregistered key, missing permission, out of bounds:
 * RMCA_ERR_REMOTE_ACCESS, memory untouched, endpoint failed); a use-once key
 * is revoked by send_inv before the receive reports it; a flush waits for
 * the sends before it; a close cancels what is outstanding. test_job.sh
 * covers the same endpoint under mpirun (every rank to itself).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rmca.h>
#include <rmca/support/clock.h>

#include "ep.h"
#include "self.h"

#define WAIT_MS 10000
#define NC	32

struct fix {
	rmca_context_t *ctx;
	rmca_ep_t *ep;
	uint8_t *win; /* remote-accessible window */
	rmca_mr_t *win_mr;
	uint8_t *buf; /* local buffers */
	rmca_mr_t *buf_mr;
	struct rmca_completion c[NC];
	int nc;
};

#define WIN 4096
#define BUF 4096

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(rmca_init(&f->ctx), 0);
	f->win = aligned_alloc(4096, WIN);
	f->buf = aligned_alloc(4096, BUF);
	assert_non_null(f->win);
	assert_non_null(f->buf);
	memset(f->win, 0, WIN);
	memset(f->buf, 0, BUF);
	assert_int_equal(rmca_mr_reg(f->ctx, f->win, WIN,
				     RMCA_ACCESS_REMOTE_READ |
					     RMCA_ACCESS_REMOTE_WRITE |
					     RMCA_ACCESS_REMOTE_ATOMIC,
				     &f->win_mr),
			 0);
	assert_int_equal(
		rmca_mr_reg(f->ctx, f->buf, BUF, RMCA_ACCESS_LOCAL, &f->buf_mr),
		0);
	assert_int_equal(rmca_ep_self(f->ctx, &f->ep), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	rmca_finalize(f->ctx);
	free(f->win);
	free(f->buf);
	free(f);
	return 0;
}

/* Collect completions until want of them are kept (in arrival order). */
static void drain(struct fix *f, int want)
{
	long deadline = rmca_now_ms() + WAIT_MS;

	while (f->nc < want && rmca_now_ms() < deadline) {
		int k = rmca_poll(f->ctx, f->c + f->nc, NC - f->nc);

		assert_true(k >= 0);
		f->nc += k;
	}
	assert_int_equal(f->nc, want);
}

/* Nothing more arrives from what is posted now. */
static void quiet(struct fix *f)
{
	struct rmca_completion c[4];

	for (int i = 0; i < 20; i++)
		assert_int_equal(rmca_poll(f->ctx, c, 4), 0);
}

static const struct rmca_completion *of(struct fix *f, uintptr_t id)
{
	for (int i = 0; i < f->nc; i++)
		if ((uintptr_t)f->c[i].user_ctx == id)
			return &f->c[i];
	fail_msg("no completion for %lu", (unsigned long)id);
	return NULL;
}

#define ID(n) ((void *)(uintptr_t)(n))

static void what_it_is(void **state)
{
	struct fix *f = *state;
	struct rmca_ep_attr a;

	assert_int_equal(rmca_ep_query(f->ep, &a), 0);
	assert_string_equal(a.transport, "self");
	assert_int_equal(a.peer_is_local, 1);
	assert_int_equal(a.put_delivered, RMCA_PATH_NATIVE);
	assert_int_equal(a.send_inv, RMCA_PATH_NATIVE);
	assert_int_equal(a.atomic, RMCA_PATH_NATIVE);
	assert_int_equal(a.masked_atomic, RMCA_PATH_NATIVE);
	assert_int_not_equal(rmca_mr_rkey(f->win_mr, f->ep), 0);
}

/* Messages land in the receives posted on the endpoint, in order; a send
 * without a receive waits for one. */
static void messages_in_order(void **state)
{
	struct fix *f = *state;
	uint8_t *in = f->buf, *out = f->buf + 2048;

	for (int i = 0; i < 3; i++) {
		memset(out + i * 100, 'a' + i, 10 + i);
		assert_int_equal(rmca_send(f->ep, out + i * 100, 10 + (size_t)i,
					   f->buf_mr, ID(10 + i)),
				 0);
	}
	quiet(f); /* no receive yet: the sends wait */
	for (int i = 0; i < 3; i++)
		assert_int_equal(rmca_recv(f->ep, in + i * 100, 64, f->buf_mr,
					   ID(20 + i)),
				 0);
	drain(f, 6);
	for (int i = 0; i < 3; i++) {
		const struct rmca_completion *r = of(f, 20 + (uintptr_t)i);

		assert_int_equal(of(f, 10 + (uintptr_t)i)->status, 0);
		assert_int_equal(r->status, 0);
		assert_int_equal(r->op, RMCA_OP_RECV);
		assert_ptr_equal(r->ep, f->ep);
		assert_int_equal(r->len, 10 + i);
		assert_int_equal(r->revoked_rkey, 0);
		for (int k = 0; k < 10 + i; k++)
			assert_int_equal(in[i * 100 + k], 'a' + i);
	}
	/* a receive posted first takes the next message at once */
	f->nc = 0;
	assert_int_equal(rmca_recv(f->ep, in, 64, f->buf_mr, ID(1)), 0);
	quiet(f);
	assert_int_equal(rmca_send(f->ep, out, 0, f->buf_mr, ID(2)), 0);
	drain(f, 2);
	assert_int_equal(of(f, 1)->len, 0);
}

/* Sends waiting for receives are bounded: past the bound a send is
 * refused with RMCA_ERR_AGAIN and posts nothing; receives drain them. */
static void waiting_sends_are_bounded(void **state)
{
	struct fix *f = *state;
	int posted = 0, rc;

	while ((rc = rmca_send(f->ep, f->buf, 8, f->buf_mr, ID(posted))) == 0)
		assert_true(++posted <= 100000);
	assert_int_equal(rc, RMCA_ERR_AGAIN);
	assert_true(posted >= 64);
	quiet(f);
	for (int i = 0; i < posted; i++) {
		int k;

		assert_int_equal(
			rmca_recv(f->ep, f->buf + 64, 64, f->buf_mr, ID(i)), 0);
		/* two completions each; kept only as a count */
		k = 0;
		for (int tries = 0; k < 2; tries++) {
			struct rmca_completion c[2];
			int got = rmca_poll(f->ctx, c, 2 - k);

			assert_true(got >= 0 && tries < 1000);
			for (int j = 0; j < got; j++)
				assert_int_equal(c[j].status, 0);
			k += got;
		}
	}
	quiet(f);
	/* room again */
	assert_int_equal(rmca_send(f->ep, f->buf, 8, f->buf_mr, ID(1)), 0);
}

/* A receive smaller than the message: truncated, nothing written past it,
 * the endpoint failed. */
static void truncation_fails_the_endpoint(void **state)
{
	struct fix *f = *state;
	uint8_t *in = f->buf, *out = f->buf + 2048;

	memset(in, 0xee, 64);
	memset(out, 0x11, 32);
	assert_int_equal(rmca_recv(f->ep, in, 16, f->buf_mr, ID(1)), 0);
	assert_int_equal(rmca_send(f->ep, out, 32, f->buf_mr, ID(2)), 0);
	drain(f, 2);
	assert_int_equal(of(f, 1)->status, RMCA_ERR_TRUNCATED);
	assert_int_not_equal(of(f, 2)->status, 0);
	for (int i = 16; i < 64; i++)
		assert_int_equal(in[i], 0xee);
	/* failed: later posts complete with an error */
	assert_int_equal(rmca_recv(f->ep, in, 16, f->buf_mr, ID(3)), 0);
	assert_int_equal(rmca_flush(f->ep, ID(4)), 0);
	drain(f, 4);
	assert_int_equal(of(f, 3)->status, RMCA_ERR_CONNECTION);
	assert_int_equal(of(f, 4)->status, RMCA_ERR_CONNECTION);
}

static void put_get_own_memory(void **state)
{
	struct fix *f = *state;
	uint64_t key = rmca_mr_rkey(f->win_mr, f->ep);
	uint64_t base = (uint64_t)(uintptr_t)f->win;

	for (int i = 0; i < 256; i++)
		f->buf[i] = (uint8_t)(i * 7);
	assert_int_equal(rmca_put(f->ep, f->buf, 256, f->buf_mr, base + 100,
				  key, RMCA_DELIVERED, ID(1)),
			 0);
	drain(f, 1);
	assert_int_equal(of(f, 1)->status, 0);
	assert_memory_equal(f->win + 100, f->buf, 256);
	memset(f->buf + 1024, 0, 256);
	assert_int_equal(rmca_get(f->ep, f->buf + 1024, 256, f->buf_mr,
				  base + 100, key, ID(2)),
			 0);
	assert_int_equal(rmca_flush(f->ep, ID(3)), 0);
	drain(f, 3);
	assert_int_equal(of(f, 2)->status, 0);
	assert_int_equal(of(f, 3)->status, 0);
	assert_memory_equal(f->buf + 1024, f->buf, 256);
	/* the last byte of the window, and no further */
	assert_int_equal(rmca_put(f->ep, f->buf, 1, f->buf_mr, base + WIN - 1,
				  key, 0, ID(4)),
			 0);
	drain(f, 4);
	assert_int_equal(of(f, 4)->status, 0);
}

/* One refused access: REMOTE_ACCESS, nothing touched, endpoint failed. */
static void refused_put(struct fix *f, uint64_t raddr, uint64_t key, size_t len)
{
	uint8_t before[WIN];

	memcpy(before, f->win, WIN);
	memset(f->buf, 0x5a, len);
	assert_int_equal(rmca_put(f->ep, f->buf, len, f->buf_mr, raddr, key,
				  RMCA_DELIVERED, ID(1)),
			 0);
	drain(f, 1);
	assert_int_equal(of(f, 1)->status, RMCA_ERR_REMOTE_ACCESS);
	assert_memory_equal(before, f->win, WIN);
	assert_int_equal(rmca_get(f->ep, f->buf, 8, f->buf_mr,
				  (uint64_t)(uintptr_t)f->win,
				  rmca_mr_rkey(f->win_mr, f->ep), ID(2)),
			 0);
	drain(f, 2);
	assert_int_equal(of(f, 2)->status, RMCA_ERR_CONNECTION);
}

static void put_out_of_bounds(void **state)
{
	struct fix *f = *state;

	refused_put(f, (uint64_t)(uintptr_t)f->win + WIN - 8,
		    rmca_mr_rkey(f->win_mr, f->ep), 16);
}

static void put_with_unknown_key(void **state)
{
	struct fix *f = *state;

	refused_put(f, (uint64_t)(uintptr_t)f->win,
		    rmca_mr_rkey(f->win_mr, f->ep) ^ 0x40, 8);
}

static void put_without_permission(void **state)
{
	struct fix *f = *state;
	uint8_t ro[64] = {0};
	rmca_mr_t *mr;
	uint8_t was[64];

	assert_int_equal(rmca_mr_reg(f->ctx, ro, sizeof(ro),
				     RMCA_ACCESS_REMOTE_READ, &mr),
			 0);
	memcpy(was, ro, sizeof(ro));
	assert_int_equal(rmca_put(f->ep, f->buf, 8, f->buf_mr,
				  (uint64_t)(uintptr_t)ro,
				  rmca_mr_rkey(mr, f->ep), 0, ID(1)),
			 0);
	drain(f, 1);
	assert_int_equal(of(f, 1)->status, RMCA_ERR_REMOTE_ACCESS);
	assert_memory_equal(was, ro, sizeof(ro));
	rmca_mr_dereg(mr);
}

static void put_after_dereg(void **state)
{
	struct fix *f = *state;
	uint8_t *w = aligned_alloc(64, 64);
	uint64_t key;
	rmca_mr_t *mr;

	assert_non_null(w);
	memset(w, 0, 64);
	assert_int_equal(
		rmca_mr_reg(f->ctx, w, 64, RMCA_ACCESS_REMOTE_WRITE, &mr), 0);
	key = rmca_mr_rkey(mr, f->ep);
	assert_int_equal(rmca_mr_dereg(mr), 0);
	memset(f->buf, 1, 8);
	assert_int_equal(rmca_put(f->ep, f->buf, 8, f->buf_mr,
				  (uint64_t)(uintptr_t)w, key, 0, ID(1)),
			 0);
	drain(f, 1);
	assert_int_equal(of(f, 1)->status, RMCA_ERR_REMOTE_ACCESS);
	for (int i = 0; i < 64; i++)
		assert_int_equal(w[i], 0);
	free(w);
}

static void atomics(void **state)
{
	struct fix *f = *state;
	uint64_t *word = (uint64_t *)(void *)(f->win + 64);
	uint64_t *old = (uint64_t *)(void *)f->buf;
	struct rmca_atomic op = {
		.raddr = (uint64_t)(uintptr_t)word,
		.rkey = rmca_mr_rkey(f->win_mr, f->ep),
	};

	*word = 40;
	op.kind = RMCA_ATOMIC_FADD;
	op.operand = 2;
	assert_int_equal(rmca_atomic(f->ep, &op, &old[0], f->buf_mr, ID(1)), 0);
	op.kind = RMCA_ATOMIC_CSWAP;
	op.compare = 42;
	op.operand = 0x0f0f;
	assert_int_equal(rmca_atomic(f->ep, &op, &old[1], f->buf_mr, ID(2)), 0);
	op.compare = 1; /* fails: the word keeps its value */
	op.operand = 7;
	assert_int_equal(rmca_atomic(f->ep, &op, &old[2], f->buf_mr, ID(3)), 0);
	op.kind = RMCA_ATOMIC_MASKED_FADD; /* two 32-bit fields */
	op.operand = 0x00000001ffffffffull;
	op.field_boundary = 1ull << 31;
	assert_int_equal(rmca_atomic(f->ep, &op, &old[3], f->buf_mr, ID(4)), 0);
	drain(f, 4);
	for (int i = 1; i <= 4; i++)
		assert_int_equal(of(f, (uintptr_t)i)->status, 0);
	assert_int_equal(old[0], 40);
	assert_int_equal(old[1], 42);
	assert_int_equal(old[2], 0x0f0f);
	assert_int_equal(old[3], 0x0f0f);
	/* low field 0x0f0f + 0xffffffff wraps to 0x0f0e, no carry up */
	assert_int_equal(*word, 0x0000000100000f0eull);
	f->nc = 0;
	op.kind = RMCA_ATOMIC_MASKED_CSWAP;
	op.compare = 0x0e;
	op.compare_mask = 0xff;
	op.operand = 0xab00;
	op.swap_mask = 0xff00;
	assert_int_equal(rmca_atomic(f->ep, &op, &old[4], f->buf_mr, ID(5)), 0);
	drain(f, 1);
	assert_int_equal(old[4], 0x0000000100000f0eull);
	assert_int_equal(*word, 0x000000010000ab0eull);
}

static void atomic_without_permission(void **state)
{
	struct fix *f = *state;
	uint64_t w[1] = {5}, *old = (uint64_t *)(void *)f->buf;
	rmca_mr_t *mr;
	struct rmca_atomic op = {.kind = RMCA_ATOMIC_FADD, .operand = 1};

	assert_int_equal(
		rmca_mr_reg(f->ctx, w, sizeof(w),
			    RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE,
			    &mr),
		0);
	op.raddr = (uint64_t)(uintptr_t)w;
	op.rkey = rmca_mr_rkey(mr, f->ep);
	assert_int_equal(rmca_atomic(f->ep, &op, old, f->buf_mr, ID(1)), 0);
	drain(f, 1);
	assert_int_equal(of(f, 1)->status, RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(w[0], 5);
	rmca_mr_dereg(mr);
}

/* send_inv revokes the use-once key before the receive reports it. */
static void use_once_key(void **state)
{
	struct fix *f = *state;
	uint8_t *w = aligned_alloc(64, 64);
	uint64_t key, again;
	rmca_mr_t *mr;

	assert_non_null(w);
	memset(w, 0, 64);
	assert_int_equal(
		rmca_mr_reg(f->ctx, w, 64,
			    RMCA_ACCESS_REMOTE_WRITE | RMCA_MR_USE_ONCE, &mr),
		0);
	key = rmca_mr_rkey(mr, f->ep);
	assert_true(key & (1ull << 63));
	memset(f->buf, 3, 8);
	assert_int_equal(rmca_put(f->ep, f->buf, 8, f->buf_mr,
				  (uint64_t)(uintptr_t)w, key, 0, ID(1)),
			 0);
	assert_int_equal(rmca_recv(f->ep, f->buf + 64, 64, f->buf_mr, ID(2)),
			 0);
	assert_int_equal(rmca_send_inv(f->ep, f->buf, 4, f->buf_mr, key, ID(3)),
			 0);
	drain(f, 3);
	assert_int_equal(w[0], 3);
	assert_int_equal(of(f, 2)->status, 0);
	assert_int_equal(of(f, 2)->revoked_rkey, key);
	assert_int_equal(of(f, 3)->status, 0);
	again = rmca_mr_rkey(mr, f->ep);
	assert_int_not_equal(again, 0);
	assert_int_not_equal(again, key);
	/* the old key is dead */
	memset(f->buf, 9, 8);
	assert_int_equal(rmca_put(f->ep, f->buf, 8, f->buf_mr,
				  (uint64_t)(uintptr_t)w, key, 0, ID(4)),
			 0);
	drain(f, 4);
	assert_int_equal(of(f, 4)->status, RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(w[0], 3);
	rmca_mr_dereg(mr);
	free(w);
}

/* A flush is reported after the sends before it, which wait for receives;
 * receives never hold it back. */
static void flush_after_waiting_sends(void **state)
{
	struct fix *f = *state;

	assert_int_equal(rmca_recv(f->ep, f->buf + 512, 64, f->buf_mr, ID(9)),
			 0);
	drain(f, 0);
	assert_int_equal(rmca_send(f->ep, f->buf, 8, f->buf_mr, ID(1)), 0);
	assert_int_equal(rmca_send(f->ep, f->buf, 8, f->buf_mr, ID(2)), 0);
	assert_int_equal(rmca_flush(f->ep, ID(3)), 0);
	drain(f, 2); /* the first send met the receive */
	quiet(f);    /* the second waits, and the flush behind it */
	assert_int_equal(rmca_recv(f->ep, f->buf + 512, 64, f->buf_mr, ID(4)),
			 0);
	drain(f, 5);
	assert_ptr_equal(f->c[4].user_ctx, ID(3));
	assert_int_equal(f->c[4].status, 0);
	/* with nothing before it, at once; a receive does not hold it */
	f->nc = 0;
	assert_int_equal(rmca_recv(f->ep, f->buf + 512, 64, f->buf_mr, ID(5)),
			 0);
	assert_int_equal(rmca_flush(f->ep, ID(6)), 0);
	drain(f, 1);
	assert_ptr_equal(f->c[0].user_ctx, ID(6));
}

static void close_cancels(void **state)
{
	struct fix *f = *state;
	rmca_ep_t *ep = f->ep;

	assert_int_equal(rmca_send(ep, f->buf, 8, f->buf_mr, ID(1)), 0);
	assert_int_equal(rmca_send(ep, f->buf, 8, f->buf_mr, ID(2)), 0);
	assert_int_equal(rmca_recv(ep, f->buf + 64, 64, f->buf_mr, ID(3)), 0);
	drain(f, 2);
	rmca_ep_close(ep);
	drain(f, 3);
	assert_int_equal(of(f, 2)->status, RMCA_ERR_CANCELED);
	assert_ptr_equal(of(f, 2)->ep, ep);
	/* a new one works */
	f->nc = 0;
	assert_int_equal(rmca_ep_self(f->ctx, &f->ep), 0);
	assert_int_equal(rmca_recv(f->ep, f->buf + 64, 64, f->buf_mr, ID(4)),
			 0);
	assert_int_equal(rmca_recv(f->ep, f->buf + 128, 64, f->buf_mr, ID(5)),
			 0);
	rmca_ep_close(f->ep);
	drain(f, 2);
	assert_int_equal(of(f, 4)->status, RMCA_ERR_CANCELED);
	assert_int_equal(of(f, 5)->status, RMCA_ERR_CANCELED);
	f->ep = NULL;
}

/* Atomic mode device: only the NIC may touch a word, and the self
 * endpoint's atomics are the CPU's, so it has none. */
static void device_mode_has_no_atomics(void **state)
{
	rmca_context_t *ctx;
	rmca_ep_t *ep;
	struct rmca_ep_attr a;
	uint64_t w = 0, old;
	rmca_mr_t *mr;
	struct rmca_atomic op = {.kind = RMCA_ATOMIC_FADD, .operand = 1};

	(void)state;
	setenv("RMCA_atomic_mode", "device", 1);
	assert_int_equal(rmca_init(&ctx), 0);
	unsetenv("RMCA_atomic_mode");
	assert_int_equal(rmca_ep_self(ctx, &ep), 0);
	assert_int_equal(rmca_ep_query(ep, &a), 0);
	assert_int_equal(a.atomic, RMCA_PATH_NONE);
	assert_int_equal(a.masked_atomic, RMCA_PATH_NONE);
	assert_int_equal(
		rmca_mr_reg(ctx, &w, sizeof(w), RMCA_ACCESS_REMOTE_ATOMIC, &mr),
		0);
	op.raddr = (uint64_t)(uintptr_t)&w;
	op.rkey = rmca_mr_rkey(mr, ep);
	old = 0;
	{
		rmca_mr_t *omr;

		assert_int_equal(rmca_mr_reg(ctx, &old, sizeof(old),
					     RMCA_ACCESS_LOCAL, &omr),
				 0);
		assert_int_equal(rmca_atomic(ep, &op, &old, omr, ID(1)),
				 RMCA_ERR_UNSUPPORTED);
	}
	assert_int_equal(w, 0);
	rmca_finalize(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(what_it_is, setup, teardown),
		cmocka_unit_test_setup_teardown(messages_in_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(waiting_sends_are_bounded,
						setup, teardown),
		cmocka_unit_test_setup_teardown(truncation_fails_the_endpoint,
						setup, teardown),
		cmocka_unit_test_setup_teardown(put_get_own_memory, setup,
						teardown),
		cmocka_unit_test_setup_teardown(put_out_of_bounds, setup,
						teardown),
		cmocka_unit_test_setup_teardown(put_with_unknown_key, setup,
						teardown),
		cmocka_unit_test_setup_teardown(put_without_permission, setup,
						teardown),
		cmocka_unit_test_setup_teardown(put_after_dereg, setup,
						teardown),
		cmocka_unit_test_setup_teardown(atomics, setup, teardown),
		cmocka_unit_test_setup_teardown(atomic_without_permission,
						setup, teardown),
		cmocka_unit_test_setup_teardown(use_once_key, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_after_waiting_sends,
						setup, teardown),
		cmocka_unit_test_setup_teardown(close_cancels, setup, teardown),
		cmocka_unit_test(device_mode_has_no_atomics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
