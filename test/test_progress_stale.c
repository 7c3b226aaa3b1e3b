/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One epoll_wait() hands the core a batch of events, dispatched one after
 * the other. A callback early in the batch may remove a socket that has an
 * event further on, and the kernel gives its number to the next socket
 * opened, perhaps in the same callback (a handshake served from a
 * callback runs a whole nested progress). The event left in the batch is
 * the old socket's and must not reach the new one: a hang-up meant for a
 * connection that is gone would fail its successor.
 *
 * The two callbacks below each replace the other's pipe by a quiet one of
 * the same number; whichever runs first, the event of the replaced pipe is
 * still in the batch, and the quiet pipe's callback must never run.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cmocka.h>

#include <rmca.h>

#include "ep.h"
#include "internal.h"

struct side {
	struct rmca_context *ctx;
	int rfd, wfd;	       /* the pipe whose read end is registered */
	struct side *other;    /* the one this side's callback replaces */
	int calls;	       /* callback runs on the original pipe */
	int quiet_calls;       /* runs of the replacement's callback */
	uint32_t quiet_events; /* what those runs were told */
	int quiet_wfd;	       /* replacement's write end, kept open */
};

static void quiet_cb(void *arg, uint32_t events)
{
	struct side *s = arg;

	s->quiet_calls++;
	s->quiet_events |= events;
}

/* Replace the other side's pipe by a quiet one under the same number (the
 * new pipe is made first, so that neither of its ends takes that number). */
static void replace(struct side *o)
{
	const struct rmca_core *core = &o->ctx->core;
	int p[2];

	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	core->ops->fd_del(core, o->rfd);
	if (o->wfd >= 0)
		close(o->wfd);
	o->wfd = -1;
	/* closes the old read end and gives its number to the new one */
	assert_int_equal(dup3(p[0], o->rfd, O_CLOEXEC), o->rfd);
	close(p[0]);
	o->quiet_wfd = p[1];
	assert_int_equal(core->ops->fd_add(core, o->rfd, EPOLLIN | EPOLLRDHUP,
					   quiet_cb, o),
			 0);
}

static void first_cb(void *arg, uint32_t events)
{
	struct side *s = arg;

	(void)events;
	if (s->calls++)
		return;
	/* whichever runs first: the other's event is still in the batch */
	if (!s->other->calls)
		replace(s->other);
}

static void stale_event_reaches_no_new_socket(void **state)
{
	struct side a = {.wfd = -1, .quiet_wfd = -1},
		    b = {.wfd = -1, .quiet_wfd = -1};
	rmca_context_t *ctx;
	int p[2];

	(void)state;
	assert_int_equal(rmca_init(&ctx), 0);
	a.ctx = b.ctx = ctx;
	a.other = &b;
	b.other = &a;
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	a.rfd = p[0];
	a.wfd = p[1];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	b.rfd = p[0];
	b.wfd = p[1];
	assert_int_equal(ctx->core.ops->fd_add(&ctx->core, a.rfd,
					       EPOLLIN | EPOLLRDHUP, first_cb,
					       &a),
			 0);
	assert_int_equal(ctx->core.ops->fd_add(&ctx->core, b.rfd,
					       EPOLLIN | EPOLLRDHUP, first_cb,
					       &b),
			 0);
	/* a hangs up, b has a byte: both ready before the core looks */
	close(a.wfd);
	a.wfd = -1;
	assert_int_equal(write(b.wfd, "x", 1), 1);
	/* a timeout: the core asks epoll_wait() for the batch */
	for (int i = 0; i < 3; i++)
		assert_int_equal(rmca_progress(ctx, 10), 0);
	/* one callback ran and replaced the other's pipe */
	assert_int_equal(a.calls + b.calls >= 1, 1);
	assert_true(!a.calls || !b.calls);
	/* the replacement is quiet: nothing may have told it otherwise */
	assert_int_equal(a.quiet_calls + b.quiet_calls, 0);
	assert_int_equal(a.quiet_events | b.quiet_events, 0);
	for (struct side *s = &a; s; s = s == &a ? &b : NULL) {
		ctx->core.ops->fd_del(&ctx->core, s->rfd);
		close(s->rfd);
		if (s->wfd >= 0)
			close(s->wfd);
		if (s->quiet_wfd >= 0)
			close(s->quiet_wfd);
	}
	rmca_finalize(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stale_event_reaches_no_new_socket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
