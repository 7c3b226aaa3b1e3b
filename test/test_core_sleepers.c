/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The core's word rmca_core.sleepers (ABI 13) says what the ops may_sleep
 * and will_sleep say, at every moment a module can look: a module's
 * progress op reads it in a spinning pass (nobody may sleep), after
 * rmca_wait_fd handed the set out (the application may), and in the pass
 * the core makes right before it sleeps itself (the core will). Checked
 * with a module of the test's own in place of the context's, whose op
 * records the word and the ops' answers at each call: the verbs module
 * trusts the word alone to arm its CQ and timer, so a word that lagged
 * the ops would leave a sleeper without its wakeup.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <rmca.h>

#include "ep.h"
#include "internal.h"

struct probe {
	struct rmca_module base;
	struct rmca_context *ctx;
	long calls;
	unsigned word;	/* *core->sleepers at the pass's first call */
	bool may, will; /* the ops' answers then */
	struct rmca_mod mod, *saved_mods;
	size_t saved_nmods;
};

static struct probe *probe_of(struct rmca_module *m)
{
	return rmca_container_of(m, struct probe, base);
}

static int probe_progress(struct rmca_module *m)
{
	struct probe *p = probe_of(m);
	const struct rmca_core *core = m->core;

	/* the pass's first call: in the core's sleeping pass, the one
	 * right before the sleep (a wakeup may call it again after) */
	if (p->calls++)
		return 0;
	p->word = *core->sleepers;
	p->may = core->ops->may_sleep(core);
	p->will = core->ops->will_sleep(core);
	return 0;
}

static const struct rmca_module_ops probe_ops = {
	.progress = probe_progress,
};

static void probe_open(struct probe *p)
{
	memset(p, 0, sizeof(*p));
	assert_int_equal(rmca_init(&p->ctx), 0);
	p->base.ops = &probe_ops;
	p->base.core = &p->ctx->core;
	p->mod.m = &p->base;
	p->saved_mods = p->ctx->mods;
	p->saved_nmods = p->ctx->nmods;
	p->ctx->mods = &p->mod;
	p->ctx->nmods = 1;
	rmca_progress_mods(p->ctx);
}

static void probe_close(struct probe *p)
{
	p->ctx->mods = p->saved_mods;
	p->ctx->nmods = p->saved_nmods;
	rmca_progress_mods(p->ctx);
	rmca_finalize(p->ctx);
}

/* The pass just made called the probe, and the word it saw agrees with
 * the ops' answers and is want. */
static void saw(struct probe *p, unsigned want)
{
	assert_true(p->calls > 0);
	assert_int_equal(p->word, want);
	assert_int_equal(p->may, !!(want & RMCA_SLEEPER_APP));
	assert_int_equal(p->will, !!(want & RMCA_SLEEPER_CORE));
	p->calls = 0;
}

static void test_spinning_pass_sees_no_sleeper(void **state)
{
	struct probe p;
	struct rmca_completion c;

	(void)state;
	probe_open(&p);
	assert_non_null(p.ctx->core.sleepers);
	assert_int_equal(rmca_poll(p.ctx, &c, 1), 0);
	saw(&p, 0);
	probe_close(&p);
}

static void test_wait_fd_makes_the_application_a_sleeper(void **state)
{
	struct probe p;
	struct rmca_completion c;

	(void)state;
	probe_open(&p);
	assert_true(rmca_wait_fd(p.ctx) >= 0);
	assert_int_equal(rmca_poll(p.ctx, &c, 1), 0);
	saw(&p, RMCA_SLEEPER_APP);
	probe_close(&p);
}

/* The core's own sleep (a blocking accept or connect does the same):
 * the pass right before it sees the core as a sleeper, the next spinning
 * pass no longer does. */
static void test_core_sleeps_only_in_its_own_pass(void **state)
{
	struct probe p;
	struct rmca_completion c;

	(void)state;
	probe_open(&p);
	assert_int_equal(rmca_progress(p.ctx, 1), 0);
	saw(&p, RMCA_SLEEPER_CORE);
	assert_int_equal(rmca_poll(p.ctx, &c, 1), 0);
	saw(&p, 0);
	assert_true(rmca_wait_fd(p.ctx) >= 0);
	assert_int_equal(rmca_progress(p.ctx, 1), 0);
	saw(&p, RMCA_SLEEPER_APP | RMCA_SLEEPER_CORE);
	assert_int_equal(rmca_poll(p.ctx, &c, 1), 0);
	saw(&p, RMCA_SLEEPER_APP);
	probe_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spinning_pass_sees_no_sleeper),
		cmocka_unit_test(test_wait_fd_makes_the_application_a_sleeper),
		cmocka_unit_test(test_core_sleeps_only_in_its_own_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
