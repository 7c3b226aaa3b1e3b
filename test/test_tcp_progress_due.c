/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp module's word for the core (module op progress_due): the core
 * calls its progress op only in passes that find the word set, zeroing it
 * first. Here the test is the core (tcp_harness.h) and drives the modules
 * as the core does: the connections' own events, then the progress op of
 * each module whose word is set. Work only the progress op does sets the
 * word where it is made: counts held for a reply that does not come (a
 * spinning application), a post's frame left for the next pass, input
 * read (RMCA_PROGRESS_SERVED); so the held count goes and the peer's send
 * completes, and the deferred frame leaves. With nothing left, the word
 * stays zero and the op is not called.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tcp_harness.h"

#define SEND_TAG(i) ((void *)(uintptr_t)(100000 + (i)))
#define RECV_TAG(i) ((void *)(uintptr_t)(1 + (i)))
#define PASSES	    64

static long op_calls;

/* Did the op tagged tag complete, and how many times. */
static int done(void *tag)
{
	int n = 0;

	for (int i = 0; i < th_ndone && i < TH_MAX_DONE; i++)
		if (th_done[i].req == tag) {
			assert_int_equal(th_done[i].status, RMCA_OK);
			n++;
		}
	return n;
}

/* The module's progress op, as the core calls it: only when its word is
 * set, zeroed first. */
static int gated_progress(struct tcp_module *m)
{
	unsigned *due = rmca_tcp_progress_due(&m->base);
	int r;

	assert_ptr_equal(due, &m->progress_due);
	if (!*due)
		return 0;
	*due = 0;
	op_calls++;
	r = rmca_tcp_progress(&m->base);
	assert_true(r >= 0);
	return r;
}

/* One pass of the core: the events, then the ops that have work. */
static void gated_pass(struct tcp_module *a, struct tcp_module *b)
{
	th_pump();
	gated_progress(a);
	gated_progress(b);
}

/* Passes until tag completed, at most PASSES: how many. */
static int passes_until(struct tcp_module *a, struct tcp_module *b, void *tag)
{
	for (int i = 1; i <= PASSES; i++) {
		gated_pass(a, b);
		if (done(tag))
			return i;
	}
	return 0;
}

static void pair_open(struct tcp_module **a, struct tcp_module **b,
		      struct tcp_conn **ca, struct tcp_conn **cb, char *ina,
		      char *inb)
{
	*a = th_module();
	*b = th_module();
	th_conn_pair(*a, *b, ca, cb);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(
			rmca_tcp_recv(&(*cb)->base, inb, 8, NULL, RECV_TAG(1)),
			0);
		assert_int_equal(
			rmca_tcp_recv(&(*ca)->base, ina, 8, NULL, RECV_TAG(0)),
			0);
	}
	th_pump_idle(); /* credits */
	/* what set-up left for the op, done */
	for (int i = 0; i < 4; i++)
		gated_pass(*a, *b);
	th_ndone = 0;
	op_calls = 0;
}

static void pair_close(struct tcp_module *a, struct tcp_module *b,
		       struct tcp_conn *ca, struct tcp_conn *cb)
{
	assert_int_equal(th_nfailed, 0);
	rmca_tcp_conn_destroy(ca);
	rmca_tcp_conn_destroy(cb);
	th_module_free(a);
	th_module_free(b);
}

/*
 * A spinning receiver (nobody may sleep on the wait fd) holds the count
 * of a message for its reply, on the module's held list, where nothing
 * but its progress op ends the hold: the word says so, the hold ends in
 * the pass after the next, the count goes and the sender's send
 * completes. Then both modules are idle: no word set, no op called.
 */
static void a_held_count_goes_by_the_op_it_asks_for(void **state)
{
	static char ping[8] = "request", ina[8], inb[8];
	struct tcp_module *a, *b;
	struct tcp_conn *ca, *cb;
	int passes;

	(void)state;
	th_sleep_allowed = false;
	pair_open(&a, &b, &ca, &cb, ina, inb);
	assert_int_equal(a->progress_due, 0);
	assert_int_equal(b->progress_due, 0);
	assert_int_equal(rmca_tcp_send(&ca->base, ping, 8, NULL, SEND_TAG(0)),
			 0);
	assert_int_equal(passes_until(a, b, RECV_TAG(1)), 1);
	assert_memory_equal(inb, ping, 8);
	assert_true(cb->hold);
	assert_true(rmca_list_linked(&cb->held_link));
	assert_true(b->progress_due);
	assert_int_equal(done(SEND_TAG(0)), 0);
	passes = passes_until(a, b, SEND_TAG(0));
	if (!passes)
		fail_msg("the count held for a reply never went: %ld progress "
			 "calls in %d passes",
			 op_calls, PASSES);
	assert_true(passes <= 2);
	assert_false(cb->hold);
	assert_int_equal(done(SEND_TAG(0)), 1);
	/* idle: nothing asks for the op */
	for (int i = 0; i < 4; i++)
		gated_pass(a, b);
	op_calls = 0;
	for (int i = 0; i < PASSES; i++)
		gated_pass(a, b);
	assert_int_equal(op_calls, 0);
	assert_int_equal(a->progress_due, 0);
	assert_int_equal(b->progress_due, 0);
	th_sleep_allowed = true;
	pair_close(a, b, ca, cb);
}

/* A send posted behind one still in flight waits for the next pass, and
 * the word asks for it: one pass of the op, with no event, writes it. */
static void a_deferred_post_leaves_at_the_pass_it_asks_for(void **state)
{
	static char ping[8] = "request", ina[8], inb[8];
	struct tcp_module *a, *b;
	struct tcp_conn *ca, *cb;

	(void)state;
	pair_open(&a, &b, &ca, &cb, ina, inb);
	assert_int_equal(rmca_tcp_send(&ca->base, ping, 8, NULL, SEND_TAG(0)),
			 0);
	assert_int_equal(rmca_tcp_send(&ca->base, ping, 8, NULL, SEND_TAG(1)),
			 0);
	assert_false(rmca_list_empty(&ca->outq));
	assert_true(rmca_list_linked(&ca->dirty_link));
	assert_true(a->progress_due);
	gated_progress(a);
	assert_true(rmca_list_empty(&ca->outq));
	assert_int_equal(passes_until(a, b, SEND_TAG(1)) > 0, 1);
	assert_int_equal(done(RECV_TAG(1)), 2);
	pair_close(a, b, ca, cb);
}

/* Input read sets the word: the op's next call says
 * RMCA_PROGRESS_SERVED, and the one after it does not. */
static void input_read_asks_for_the_op_that_says_served(void **state)
{
	static char ping[8] = "request", ina[8], inb[8];
	struct tcp_module *a, *b;
	struct tcp_conn *ca, *cb;

	(void)state;
	pair_open(&a, &b, &ca, &cb, ina, inb);
	assert_int_equal(rmca_tcp_send(&ca->base, ping, 8, NULL, SEND_TAG(0)),
			 0);
	for (int i = 0; i < PASSES && !done(RECV_TAG(1)); i++)
		th_pump();
	assert_int_equal(done(RECV_TAG(1)), 1);
	assert_true(b->progress_due);
	assert_true(gated_progress(b) & RMCA_PROGRESS_SERVED);
	assert_false(gated_progress(b) & RMCA_PROGRESS_SERVED);
	pair_close(a, b, ca, cb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_held_count_goes_by_the_op_it_asks_for),
		cmocka_unit_test(
			a_deferred_post_leaves_at_the_pass_it_asks_for),
		cmocka_unit_test(input_read_asks_for_the_op_that_says_served),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
