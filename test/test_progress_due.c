/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A module that gives the core its word (module op progress_due) has its
 * progress op called only in passes that find the word set; the core
 * zeroes it before each call. Checked here with a module of the test's
 * own in place of the context's: its fd (a pipe) brings work that its fd
 * callback takes in and marks by setting the word, and that its progress
 * op then completes. Work that arrives while the module is idle (its word
 * zero, its op not called) is still completed and seen, by a spinning
 * rmca_poll and by a caller that sleeps on the wait fd; so is work the op
 * leaves for its next pass, and a completion made in a pass outside
 * rmca_poll wakes the wait fd. Idle passes do not call the op. A module
 * that never sets its word never has its op called: the control case,
 * which is what the checks above would see if the word went unset.
 * Each case runs with the fake alone (the core tests its word alone) and
 * with a second module that never has work (the core asks both in turn;
 * the second is never called).
 */
#define _GNU_SOURCE /* pipe2 */
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cmocka.h>

#include <rmca.h>

#include "ep.h"
#include "internal.h"

/* The test's module: what its fd brought, what its op did. */
struct fake {
	struct rmca_module base;
	struct rmca_context *ctx;
	unsigned due;  /* its word (progress_due) */
	bool sets_due; /* its fd callback sets the word (the control: not) */
	int defer;     /* passes its op waits before it completes (held work) */
	int rfd, wfd;  /* the pipe that brings work */
	long work;     /* taken in by the fd callback, not completed yet */
	long calls;    /* progress op calls */
	long completed; /* completions it made */
	struct rmca_mod mods[2], *saved_mods;
	size_t saved_nmods;
};

/* A second module, which never has work: with it the core asks the two
 * in turn (with one, it tests that one's word alone). */
static unsigned quiet_due;
static long quiet_calls;

static int quiet_progress(struct rmca_module *m)
{
	(void)m;
	quiet_calls++;
	return 0;
}

static unsigned *quiet_progress_due(struct rmca_module *m)
{
	(void)m;
	return &quiet_due;
}

static const struct rmca_module_ops quiet_ops = {
	.progress = quiet_progress,
	.progress_due = quiet_progress_due,
};
static struct rmca_module quiet = {.ops = &quiet_ops};

static struct fake *fake_of(struct rmca_module *m)
{
	return rmca_container_of(m, struct fake, base);
}

static void fake_cb(void *arg, uint32_t events)
{
	struct fake *f = arg;
	char buf[64];
	ssize_t n;

	(void)events;
	while ((n = read(f->rfd, buf, sizeof(buf))) > 0)
		f->work += n;
	if (f->work && f->sets_due)
		f->due = 1;
}

/* One completion per byte of work, as a module's complete() would make
 * it; work held for later passes sets the word again. */
static int fake_progress(struct rmca_module *m)
{
	struct fake *f = fake_of(m);

	f->calls++;
	if (!f->work)
		return 0;
	if (f->defer > 0) {
		f->defer--;
		f->due = 1;
		return 0;
	}
	for (; f->work; f->work--) {
		struct rmca_req *r = rmca_req_alloc_new(f->ctx);

		assert_non_null(r);
		r->user_ctx = f;
		r->op = RMCA_OP_RECV;
		r->emitted = true;
		rmca_cq_push(f->ctx, r);
		f->completed++;
	}
	return 0;
}

static unsigned *fake_progress_due(struct rmca_module *m)
{
	return &fake_of(m)->due;
}

static const struct rmca_module_ops fake_ops = {
	.progress = fake_progress,
	.progress_due = fake_progress_due,
};

/* A context whose modules are the fake (and, with nmods 2, the quiet one
 * before it), their words given to the core as the context gives them
 * when a module opens (context.c). */
static void fake_open(struct fake *f, bool sets_due, size_t nmods)
{
	struct rmca_mod *fm = &f->mods[nmods - 1];
	int fds[2];

	memset(f, 0, sizeof(*f));
	assert_int_equal(rmca_init(&f->ctx), 0);
	f->base.ops = &fake_ops;
	f->base.core = &f->ctx->core;
	f->sets_due = sets_due;
	fm->m = &f->base;
	fm->due = fake_ops.progress_due(&f->base);
	fm->index = (int)nmods - 1;
	if (nmods == 2) {
		f->mods[0].m = &quiet;
		f->mods[0].due = quiet_ops.progress_due(&quiet);
	}
	quiet_due = 0;
	quiet_calls = 0;
	f->saved_mods = f->ctx->mods;
	f->saved_nmods = f->ctx->nmods;
	f->ctx->mods = f->mods;
	f->ctx->nmods = nmods;
	rmca_progress_mods(f->ctx);
	assert_int_equal(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
	f->rfd = fds[0];
	f->wfd = fds[1];
	assert_int_equal(f->ctx->core.ops->fd_add(&f->ctx->core, f->rfd,
						  EPOLLIN, fake_cb, f),
			 0);
}

static void fake_close(struct fake *f)
{
	struct rmca_completion c[4];

	/* what is queued goes back to the pool */
	while (rmca_poll(f->ctx, c, 4) > 0)
		;
	f->ctx->core.ops->fd_del(&f->ctx->core, f->rfd);
	close(f->rfd);
	close(f->wfd);
	assert_int_equal(quiet_calls, 0);
	f->ctx->mods = f->saved_mods;
	f->ctx->nmods = f->saved_nmods;
	rmca_progress_mods(f->ctx);
	rmca_finalize(f->ctx);
}

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Polls until one completion comes, at most max of them: how many. */
static int polls_to_complete(struct fake *f, int max)
{
	struct rmca_completion c;

	for (int i = 1; i <= max; i++) {
		int n = rmca_poll(f->ctx, &c, 1);

		assert_true(n >= 0);
		if (n == 1) {
			assert_ptr_equal(c.user_ctx, f);
			assert_int_equal(c.status, RMCA_OK);
			return i;
		}
	}
	return 0;
}

#define IDLE_POLLS 32

/* Idle passes do not call the op; work that arrives then is completed in
 * the pass that reads it, and the op goes quiet again. */
static void work_arriving_while_idle_is_seen_by_poll(void **state)
{
	struct fake f;
	int polls;

	fake_open(&f, true, *(size_t *)*state);
	for (int i = 0; i < IDLE_POLLS; i++)
		assert_int_equal(rmca_poll(f.ctx, NULL, 0), 0);
	assert_int_equal(f.calls, 0);
	assert_int_equal(write(f.wfd, "w", 1), 1);
	polls = polls_to_complete(&f, 4);
	if (!polls)
		fail_msg("work taken in by the fd callback never completed: "
			 "%ld progress calls, %ld completed",
			 f.calls, f.completed);
	assert_int_equal(polls, 1);
	assert_int_equal(f.calls, 1);
	for (int i = 0; i < IDLE_POLLS; i++)
		assert_int_equal(rmca_poll(f.ctx, NULL, 0), 0);
	assert_int_equal(f.calls, 1);
	assert_int_equal(f.due, 0);
	fake_close(&f);
}

/* A caller that sleeps on the wait fd: the work wakes it, and the poll
 * after the wakeup hands the completion out; then nothing is readable. */
static void work_arriving_while_idle_wakes_the_wait_fd(void **state)
{
	struct fake f;
	int wfd;

	fake_open(&f, true, *(size_t *)*state);
	wfd = rmca_wait_fd(f.ctx);
	assert_true(wfd >= 0);
	/* the first wakeup after the hand-out finds nothing */
	while (readable(wfd))
		assert_int_equal(rmca_poll(f.ctx, NULL, 0), 0);
	assert_int_equal(f.calls, 0);
	assert_int_equal(write(f.wfd, "w", 1), 1);
	assert_true(readable(wfd));
	assert_int_equal(polls_to_complete(&f, 1), 1);
	assert_false(readable(wfd));
	assert_int_equal(f.calls, 1);
	fake_close(&f);
}

/* Work the op holds for later passes sets the word again: it is done
 * without more input. */
static void work_held_for_later_passes_is_done(void **state)
{
	struct fake f;

	fake_open(&f, true, *(size_t *)*state);
	f.defer = 2;
	assert_int_equal(write(f.wfd, "w", 1), 1);
	assert_int_equal(polls_to_complete(&f, 8), 3);
	assert_int_equal(f.calls, 3);
	fake_close(&f);
}

/* A pass outside rmca_poll (a blocking call's) that completes the work
 * makes the wait fd readable: the completion is not left unsignalled. */
static void completion_outside_poll_wakes_the_wait_fd(void **state)
{
	struct fake f;
	int wfd;

	fake_open(&f, true, *(size_t *)*state);
	wfd = rmca_wait_fd(f.ctx);
	while (readable(wfd))
		assert_int_equal(rmca_poll(f.ctx, NULL, 0), 0);
	assert_int_equal(write(f.wfd, "w", 1), 1);
	assert_int_equal(rmca_progress(f.ctx, 0), 0);
	assert_int_equal(f.completed, 1);
	/* the pipe is drained: the eventfd alone is readable now */
	assert_false(readable(f.rfd));
	assert_true(readable(wfd));
	assert_int_equal(polls_to_complete(&f, 1), 1);
	assert_false(readable(wfd));
	fake_close(&f);
}

/* The control: a module that never sets its word never has its op
 * called, and its work is never completed, however long it is polled.
 * The checks above tell a module that sets it from one that does not. */
static void a_word_never_set_never_calls_the_op(void **state)
{
	struct fake f;

	fake_open(&f, false, *(size_t *)*state);
	assert_int_equal(write(f.wfd, "w", 1), 1);
	assert_int_equal(polls_to_complete(&f, IDLE_POLLS), 0);
	assert_int_equal(f.work, 1);
	assert_int_equal(f.calls, 0);
	/* setting it is all that was missing */
	f.due = 1;
	assert_int_equal(polls_to_complete(&f, 1), 1);
	assert_int_equal(f.calls, 1);
	fake_close(&f);
}

int main(void)
{
	static size_t one = 1, two = 2;
	const struct CMUnitTest tests[] = {
#define BOTH(fn)                                                               \
	{#fn, fn, NULL, NULL, &one},                                           \
		{#fn " (two modules)", fn, NULL, NULL, &two}
		BOTH(work_arriving_while_idle_is_seen_by_poll),
		BOTH(work_arriving_while_idle_wakes_the_wait_fd),
		BOTH(work_held_for_later_passes_is_done),
		BOTH(completion_outside_poll_wakes_the_wait_fd),
		BOTH(a_word_never_set_never_calls_the_op),
#undef BOTH
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
