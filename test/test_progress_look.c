/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A caller spinning on one connection reads it eagerly (RMCA_FD_EAGER),
 * and the idle eager reads stand for the look at the other fds, which is
 * owed after a few of them. That look, an epoll_wait(), is taken in the
 * first pass after a post, where the connection cannot hold the answer
 * yet; taken in a pass between eager reads, it finds the answer before
 * the eager read does about every other time: one more system call
 * between the answer's arrival and its read. Checked here with a pipe
 * registered as the eager fd, polls made as a spinning application makes
 * them (a post, then polls), and the test's own epoll_wait() counting the
 * core's: between posts no pass looks, the looks owed are all taken after
 * posts, and a byte on another fd is read within a few rounds; the same
 * after a request served from an eager read, for a target. A context
 * whose wait fd was handed out may sleep on it after the pass that
 * follows a post: that pass still makes no system call.
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

static long epoll_waits;

/* The core's epoll_wait() binds to this definition: counted. */
int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	epoll_waits++;
	return epoll_pwait(epfd, ev, max, timeout, NULL);
}

struct pipe_fd {
	int rfd, wfd;
	long reads; /* callback runs */
	long bytes; /* bytes it read */
};

static void drain_cb(void *arg, uint32_t events)
{
	struct pipe_fd *p = arg;
	char buf[64];
	ssize_t n;

	(void)events;
	p->reads++;
	while ((n = read(p->rfd, buf, sizeof(buf))) > 0)
		p->bytes += n;
}

static void pipe_open(struct rmca_context *ctx, struct pipe_fd *p,
		      uint32_t flags)
{
	int fds[2];

	memset(p, 0, sizeof(*p));
	assert_int_equal(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
	p->rfd = fds[0];
	p->wfd = fds[1];
	assert_int_equal(ctx->core.ops->fd_add(&ctx->core, p->rfd,
					       EPOLLIN | flags, drain_cb, p),
			 0);
}

static void pipe_close(struct rmca_context *ctx, struct pipe_fd *p)
{
	ctx->core.ops->fd_del(&ctx->core, p->rfd);
	close(p->rfd);
	close(p->wfd);
}

/* A context with the eager pipe found ready last (the core's hot fd) and
 * a second, plain one. */
static void setup(rmca_context_t **ctxp, struct pipe_fd *hot,
		  struct pipe_fd *other)
{
	assert_int_equal(rmca_init(ctxp), 0);
	pipe_open(*ctxp, hot, RMCA_FD_EAGER);
	pipe_open(*ctxp, other, 0);
	assert_int_equal((*ctxp)->neager, 1);
	assert_int_equal(write(hot->wfd, "x", 1), 1);
	for (int i = 0; i < 4 && !hot->bytes; i++)
		assert_int_equal(rmca_poll(*ctxp, NULL, 0), 0);
	assert_int_equal(hot->bytes, 1);
	assert_int_equal((*ctxp)->cq->hot_fd, hot->rfd);
}

#define ROUNDS	    64
#define IDLE_POLLS  2 /* per round, after the post's */
#define OTHER_ROUND 20

static void owed_looks_are_taken_after_posts(void **state)
{
	struct pipe_fd hot, other;
	rmca_context_t *ctx;
	long post_looks = 0, idle_looks = 0, hot_reads;
	int other_seen = -1;

	(void)state;
	setup(&ctx, &hot, &other);
	hot_reads = hot.reads;
	for (int r = 0; r < ROUNDS; r++) {
		long w;

		if (r == OTHER_ROUND)
			assert_int_equal(write(other.wfd, "y", 1), 1);
		/* what every post does (ep.h) */
		ctx->posted = true;
		w = epoll_waits;
		assert_int_equal(rmca_poll(ctx, NULL, 0), 0);
		post_looks += epoll_waits - w;
		w = epoll_waits;
		for (int i = 0; i < IDLE_POLLS; i++)
			assert_int_equal(rmca_poll(ctx, NULL, 0), 0);
		idle_looks += epoll_waits - w;
		if (other.bytes && other_seen < 0)
			other_seen = r;
	}
	/* the polls between posts read the hot pipe and look nowhere else */
	assert_int_equal(hot.reads - hot_reads, ROUNDS * IDLE_POLLS);
	if (idle_looks)
		fail_msg("%d rounds of a post and %d idle polls: %ld looks "
			 "between posts, %ld after them",
			 ROUNDS, IDLE_POLLS, idle_looks, post_looks);
	/* the look owed is not dropped: every few rounds, after a post */
	assert_true(post_looks * 4 >= ROUNDS);
	/* and the other fd's byte is read at the next one */
	assert_int_equal(other.bytes, 1);
	assert_true(other_seen >= OTHER_ROUND && other_seen <= OTHER_ROUND + 2);
	pipe_close(ctx, &hot);
	pipe_close(ctx, &other);
	rmca_finalize(ctx);
}

/* Without posts, the idle eager reads stand for the look at most
 * EAGER_IDLE_MAX (8) times in a row, as before. */
static void spinning_without_posts_still_looks(void **state)
{
	struct pipe_fd hot, other;
	rmca_context_t *ctx;
	long w;
	int polls = 0;

	(void)state;
	setup(&ctx, &hot, &other);
	assert_int_equal(write(other.wfd, "y", 1), 1);
	w = epoll_waits;
	while (!other.bytes && polls < 64) {
		assert_int_equal(rmca_poll(ctx, NULL, 0), 0);
		polls++;
	}
	assert_int_equal(other.bytes, 1);
	assert_true(polls <= 9);
	assert_true(epoll_waits - w == 1);
	pipe_close(ctx, &hot);
	pipe_close(ctx, &other);
	rmca_finalize(ctx);
}

/*
 * A target serves a peer's requests from its eager reads: its module says
 * so (RMCA_PROGRESS_SERVED) and no completion is made. Here a module of
 * the test's own, in place of the context's, says it whenever the hot
 * pipe's callback read a byte (a request) since its last call. The pass
 * after a served request is taken for the look owed, as the one after a
 * post is.
 */
static struct pipe_fd *served_pipe;
static long served_at;

static int serving_progress(struct rmca_module *m)
{
	(void)m;
	if (served_pipe->bytes == served_at)
		return 0;
	served_at = served_pipe->bytes;
	return RMCA_PROGRESS_SERVED;
}

static const struct rmca_module_ops serving_ops = {
	.progress = serving_progress,
};

static void owed_looks_are_taken_after_served_requests(void **state)
{
	struct pipe_fd hot, other;
	struct rmca_module fake = {.ops = &serving_ops};
	struct rmca_mod mod = {.m = &fake, .index = 0};
	struct rmca_mod *mods;
	rmca_context_t *ctx;
	long after_looks = 0, idle_looks = 0;
	size_t nmods;

	(void)state;
	setup(&ctx, &hot, &other);
	mods = ctx->mods;
	nmods = ctx->nmods;
	ctx->mods = &mod;
	ctx->nmods = 1;
	rmca_progress_mods(ctx);
	served_pipe = &hot;
	served_at = hot.bytes;
	for (int r = 0; r < ROUNDS; r++) {
		long w, b = hot.bytes;

		/* a request comes and is served by the eager read */
		assert_int_equal(write(hot.wfd, "r", 1), 1);
		w = epoll_waits;
		assert_int_equal(rmca_poll(ctx, NULL, 0), 0);
		assert_int_equal(hot.bytes, b + 1);
		idle_looks += epoll_waits - w;
		/* the pass after it, then idle ones */
		w = epoll_waits;
		assert_int_equal(rmca_poll(ctx, NULL, 0), 0);
		after_looks += epoll_waits - w;
		w = epoll_waits;
		for (int i = 0; i < IDLE_POLLS; i++)
			assert_int_equal(rmca_poll(ctx, NULL, 0), 0);
		idle_looks += epoll_waits - w;
	}
	ctx->mods = mods;
	ctx->nmods = nmods;
	rmca_progress_mods(ctx);
	if (idle_looks)
		fail_msg("%d served requests: %ld looks in other passes, %ld "
			 "in the pass after one",
			 ROUNDS, idle_looks, after_looks);
	assert_true(after_looks * 4 >= ROUNDS);
	pipe_close(ctx, &hot);
	pipe_close(ctx, &other);
	rmca_finalize(ctx);
}

/* A context whose wait fd was handed out: the pass right after a post
 * makes no system call, owed look or not (its caller may sleep next). */
static void a_sleeper_spends_no_call_after_a_post(void **state)
{
	struct pipe_fd hot, other;
	rmca_context_t *ctx;
	long post_looks = 0, post_reads = 0;

	(void)state;
	setup(&ctx, &hot, &other);
	assert_true(rmca_wait_fd(ctx) >= 0);
	for (int r = 0; r < ROUNDS; r++) {
		long w = epoll_waits, rd = hot.reads;

		ctx->posted = true;
		assert_int_equal(rmca_poll(ctx, NULL, 0), 0);
		post_looks += epoll_waits - w;
		post_reads += hot.reads - rd;
		for (int i = 0; i < IDLE_POLLS; i++)
			assert_int_equal(rmca_poll(ctx, NULL, 0), 0);
	}
	assert_int_equal(post_looks, 0);
	assert_int_equal(post_reads, 0);
	pipe_close(ctx, &hot);
	pipe_close(ctx, &other);
	rmca_finalize(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(owed_looks_are_taken_after_posts),
		cmocka_unit_test(owed_looks_are_taken_after_served_requests),
		cmocka_unit_test(spinning_without_posts_still_looks),
		cmocka_unit_test(a_sleeper_spends_no_call_after_a_post),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
