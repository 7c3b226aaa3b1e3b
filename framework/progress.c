// SPDX-License-Identifier: BSD-3-Clause
/*
 * Progress and the completion queue. Completions are queued here by the
 * framework as modules report them and handed out by rmca_poll. The queue
 * links the requests themselves: every posted operation brought its slot,
 * so a completion owed can always be queued, whatever memory is left. An
 * eventfd in the context's epoll set stays readable while the queue holds
 * anything, so rmca_wait_fd() is readable whenever rmca_poll may return
 * something. Completions that arrive inside rmca_poll are handed out by
 * that same call: the eventfd is only told what is left when it returns,
 * so a completion reaped at once costs no eventfd write and read.
 *
 * The first rmca_poll after a post does not look at the fds: what was
 * just posted cannot have been answered yet, and whatever else is ready
 * keeps the wait fd readable, so a caller that sleeps on it next wakes at
 * once, and one that spins finds it at its next call. A caller that posts
 * and then sleeps thus spends no epoll_wait() that finds nothing.
 *
 * Nor does a pass ask epoll_wait() which fd is ready when the answer is
 * likely the fd found ready last (a connection in a request/response
 * exchange): if that fd's owner allows it (RMCA_FD_EAGER), its callback
 * reads it first, and when that produced a completion, or served a peer's
 * request (which completes nothing here: the module's progress op says so
 * with RMCA_PROGRESS_SERVED), the pass is done with the fds, as a plain
 * socket's recv() would have been. Whatever else
 * is ready stays so for the next look, which comes at once when the eager
 * read finds nothing, and after at most EAGER_MAX eager passes in a row.
 *
 * Until rmca_wait_fd() hands the set out, nobody but the core sleeps in
 * it, and a pass that may sleep runs the progress ops before it does: a
 * module may then hold work for its next pass without keeping the set
 * readable (may_sleep), and arm a wakeup only when those progress ops say
 * a sleep follows (will_sleep).
 */
#define _GNU_SOURCE 1 /* dladdr */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rmca/support/clock.h>
#include <rmca/support/syscall.h>

#include "ep.h"
#include "rails.h"

/* Passes in a row that may read the last ready fd instead of looking at
 * all of them: the other fds wait at most this many passes. */
#define EAGER_MAX 256
/* Eager reads that found nothing and stood for the look at the fds, at
 * most this many between two epoll_wait() calls (see idle_skip). */
#define EAGER_IDLE_MAX 8
/* From this many on, the look is owed, and a spinner's first pass after a
 * post or a served request takes it (see quiet_look). */
#define EAGER_IDLE_OWED (EAGER_IDLE_MAX / 2)

void rmca_core_work_due(struct rmca_context *ctx)
{
	ctx->cq->work_due = true;
}

struct rmca_req *rmca_req_alloc_new(struct rmca_context *ctx)
{
	struct rmca_req *r =
		calloc(1, RMCA_REQ_MODULE_OFFSET + ctx->req_module_size);

	/* a request stays in its context's pool: ctx is set once */
	if (r)
		r->ctx = ctx;
	return r;
}

/*
 * libc's epoll_wait() is a cancellation point: in a process that ever had
 * a second thread it switches the thread's cancellation type on and off
 * around the system call, about 30 of the 55 instructions it costs in
 * user space, where a spinning pass's whole look costs 230. A look that
 * does not wait (timeout 0) cannot be where a thread is cancelled, so it
 * is made directly (rmca/support/syscall.h) when epoll_wait is the C
 * library's own; a program that defines its own (a test that counts the
 * looks) still gets them.
 */
static bool epoll_direct_ok(void)
{
#ifdef SYS_epoll_wait
	return rmca_libc_own((void *)epoll_wait);
#else
	return false;
#endif
}

static inline int epoll_look(struct rmca_context *ctx, struct epoll_event *ev,
			     int max, int timeout_ms)
{
#ifdef SYS_epoll_wait
	if (!timeout_ms && ctx->cq->epoll_direct)
		return (int)rmca_sys(SYS_epoll_wait, ctx->epfd, (long)ev, max,
				     0, 0, 0);
#endif
	return epoll_wait(ctx->epfd, ev, max, timeout_ms);
}

int rmca_cq_init(struct rmca_context *ctx)
{
	struct rmca_cq *cq = calloc(1, sizeof(*cq));
	struct epoll_event ev = { .events = EPOLLIN };

	if (!cq)
		return RMCA_ERR_NO_MEMORY;
	cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cq->efd < 0) {
		free(cq);
		return RMCA_ERR_NO_MEMORY;
	}
	ev.data.fd = cq->efd;
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, cq->efd, &ev)) {
		close(cq->efd);
		free(cq);
		return RMCA_ERR_NO_MEMORY;
	}
	cq->tailp = &cq->head;
	cq->hot_fd = -1;
	cq->epoll_direct = epoll_direct_ok();
	ctx->cq = cq;
	ctx->core.sleepers = &cq->sleepers;
	return 0;
}

void rmca_progress_mods(struct rmca_context *ctx)
{
	const struct rmca_mod *one = NULL;
	size_t n = 0;

	for (size_t i = 0; i < ctx->nmods; i++) {
		if (!ctx->mods[i].m->ops->progress)
			continue;
		one = &ctx->mods[i];
		n++;
	}
	ctx->cq->one = n == 1 && one->due ? one : NULL;
}

void rmca_progress_fd_gone(struct rmca_context *ctx, int fd)
{
	if (ctx->cq && ctx->cq->hot_fd == fd)
		ctx->cq->hot_fd = -1;
}

void rmca_cq_fini(struct rmca_context *ctx)
{
	if (!ctx->cq)
		return;
	while (ctx->cq->head) {
		struct rmca_req *r = ctx->cq->head;

		ctx->cq->head = r->cq_next;
		r->queued = false;
		rmca_req_release(r);
	}
	while (ctx->req_spare) {
		struct rmca_req *r = ctx->req_spare;

		ctx->req_spare = r->cq_next;
		free(r);
	}
	ctx->req_nspare = 0;
	close(ctx->cq->efd);
	free(ctx->cq);
	ctx->cq = NULL;
	ctx->core.sleepers = NULL;
}

void rmca_cq_signal_set(struct rmca_cq *cq, bool on)
{
	uint64_t v = 1;

	if (on) {
		if (write(cq->efd, &v, sizeof(v)) != sizeof(v))
			return;
	} else if (read(cq->efd, &v, sizeof(v)) != sizeof(v)) {
		return;
	}
	cq->signaled = on;
}

/*
 * The core's own work: delivery flushes owed, and posts a module refused
 * for want of room (RMCA_ERR_AGAIN). Done before reading anything, so the
 * puts posted since the last pass have their flush on the wire first, and
 * again after the completions read made room: nothing else would wake a
 * caller that sleeps on the wait fd once it has taken them.
 */
static __attribute__((noinline)) void core_work_walk(struct rmca_context *ctx)
{
	struct rmca_list *l;
	bool more = false;

	rmca_list_for_each(l, &ctx->eps)
	{
		struct rmca_ep *ep = rmca_list_entry(l, struct rmca_ep, link);

		if (ep->unflushed)
			rmca_ep_flush_delivered(ep);
		if (!rmca_list_empty(&ep->deferred))
			rmca_deferred_post(ep);
		if (ep->verify_wait)
			rmca_verify_expire(ep);
		more |= ep->unflushed || !rmca_list_empty(&ep->deferred) ||
			ep->verify_wait;
		more |= ep->rails && rmca_rails_work(ep);
	}
	ctx->cq->work_due = more;
}

/* Endpoints are walked only while one of them has such work: the test
 * inline, the walk out of line. */
static inline __attribute__((always_inline)) void
core_work(struct rmca_context *ctx)
{
	if (ctx->cq->work_due)
		core_work_walk(ctx);
}

/*
 * A module whose progress op says RMCA_PROGRESS_POLLED moves its data
 * without fds (shm reads its rings). While every
 * endpoint is on such a module, a pass with timeout 0 looks at the fds
 * (listeners, hang-ups, wakeups) once per SPIN_EPOLL_NS instead of every
 * time, so a caller spinning on rmca_poll makes no system call. One that
 * sleeps on rmca_wait_fd is woken as before; what woke it is read by the
 * modules' progress ops, or by the fd callbacks within SPIN_EPOLL_NS. The
 * clock is read every SPIN_CLOCK_EVERY such passes only: where it is a
 * system call (no vDSO clock, as in an emulated guest) it would otherwise
 * be one per pass.
 */
#define SPIN_EPOLL_NS	 1000000ll
#define SPIN_CLOCK_EVERY 16

/*
 * Except around the control channel, which is a socket: an answer the
 * core awaits there (a get or atomic the peer's core serves, a revoke's
 * ack), or a peer's next request, would otherwise wait for the next look
 * (up to SPIN_EPOLL_NS here, EAGER_IDLE_MAX passes behind an idle eager
 * fd), where its round trip is tens of microseconds; and a caller that
 * sleeps on rmca_wait_fd, woken by it, would spin until then. So once a
 * channel sent or read a frame, the next CTRL_HOT_PASSES passes look at
 * the fds every time. Counted in passes, not time: a context that sleeps
 * between passes stays attentive however long the peer takes, and one
 * that spins without such traffic goes quiet again after that many
 * system calls.
 */
#define CTRL_HOT_PASSES 1024

void rmca_progress_ctrl_busy(struct rmca_context *ctx)
{
	ctx->cq->ctrl_hot = CTRL_HOT_PASSES;
}

static bool eps_polled(struct rmca_context *ctx)
{
	struct rmca_list *l;

	rmca_list_for_each(l, &ctx->eps)
	{
		struct rmca_ep *ep = rmca_list_entry(l, struct rmca_ep, link);

		if (!ep->mod || ep->mod->index >= 32 ||
		    !(ctx->cq->polled & (1u << ep->mod->index)))
			return false;
	}
	return !rmca_list_empty(&ctx->eps);
}

/* One module's progress op; true when it says RMCA_PROGRESS_SERVED. */
static inline __attribute__((always_inline)) bool
mod_progress(struct rmca_context *ctx, const struct rmca_mod *md)
{
	int r = md->m->ops->progress(md->m);

	if ((r & RMCA_PROGRESS_POLLED) && md->index < 32)
		ctx->cq->polled |= 1u << md->index;
	return r > 0 && (r & RMCA_PROGRESS_SERVED);
}

/* Every module's progress op that has work (a module that gave the core
 * its word, progress_due, says when: a pass with none costs it a load);
 * true when one says RMCA_PROGRESS_SERVED. Inline: it runs at least once
 * a pass, and its loop is short (one module per transport). The context's
 * one module with a progress op, when it gave its word, is asked without
 * the loop. */
static inline __attribute__((always_inline)) bool
mods_progress(struct rmca_context *ctx)
{
	const struct rmca_mod *one = ctx->cq->one;
	bool served = false;

	if (one) {
		if (!*one->due)
			return false;
		*one->due = 0;
		return mod_progress(ctx, one);
	}
	for (size_t i = 0; i < ctx->nmods; i++) {
		const struct rmca_mod *md = &ctx->mods[i];

		if (md->due) {
			/* zeroed before the call: what the op leaves to do,
			 * or what comes while it runs, sets it again */
			if (!*md->due)
				continue;
			*md->due = 0;
		} else if (!md->m->ops->progress) {
			continue;
		}
		served |= mod_progress(ctx, md);
	}
	return served;
}

/*
 * Read the fd found ready last, if that may be enough for this pass:
 * true when it produced a completion, or its module says it served a
 * request (which completes nothing here; *progressed: the progress ops
 * were asked that, and ran for this pass).
 */
static inline __attribute__((always_inline)) bool
eager_read(struct rmca_context *ctx, bool *progressed)
{
	struct rmca_cq *cq = ctx->cq;
	int fd = cq->hot_fd;
	unsigned long before = cq->pushed;

	if (fd < 0 || cq->eager_run >= EAGER_MAX)
		return false;
	ctx->fds[fd].cb(ctx->fds[fd].arg, EPOLLIN | RMCA_FD_EAGER);
	if (cq->pushed == before) {
		*progressed = true;
		if (!mods_progress(ctx))
			return false;
		cq->served = true;
	}
	cq->eager_run++;
	return true;
}

/*
 * An eager read that found nothing may stand for the look at the fds when
 * hot_fd is the context's only eager fd (one connection): what else is
 * there (listeners, the core's own fds) can wait EAGER_IDLE_MAX passes, and
 * a caller spinning on its one connection then spends one system call per
 * idle pass, as on a plain socket, instead of two. With more connections
 * another one may be the one that is ready: the pass looks at once.
 */
static bool idle_skip(struct rmca_context *ctx)
{
	struct rmca_cq *cq = ctx->cq;

	if (ctx->neager != 1 || cq->idle_run >= EAGER_IDLE_MAX)
		return false;
	cq->idle_run++;
	cq->eager_run++;
	return true;
}

/*
 * The look that idle eager reads stood for is taken, once owed, where the
 * hot fd is least likely to hold the next message: in the first pass after
 * a post, which reads nothing (the connection just written to cannot hold
 * the answer yet), or after an eager read that served a peer's request
 * (just answered: the peer's next one comes after it took the answer).
 * Taken later, in a pass whose eager read found nothing, its epoll_wait()
 * finds the message about every other time, when that arrives while the
 * pass is in it: one more system call between the message's arrival and
 * its read. Only for a context whose wait fd was never handed out: one
 * that may sleep on it spends no system call in the pass after a post.
 * The bound stays EAGER_IDLE_MAX idle eager reads.
 */
static inline __attribute__((always_inline)) bool
quiet_look(const struct rmca_cq *cq)
{
	return !(cq->sleepers & RMCA_SLEEPER_APP) &&
	       cq->idle_run >= EAGER_IDLE_OWED;
}

/* The listeners' work, from the first one that has some
 * (rmca_listener_busy): asked inline every pass, where a listener that
 * only waits for connections costs a look, not a call; the one found is
 * not asked again. */
static inline __attribute__((always_inline)) void
listeners_progress(struct rmca_context *ctx)
{
	struct rmca_list *l;

	rmca_list_for_each(l, &ctx->listeners)
	{
		struct rmca_listener *li =
			rmca_list_entry(l, struct rmca_listener, link);

		if (rmca_listener_busy(li)) {
			rmca_listeners_progress(ctx, li);
			return;
		}
	}
}

/* One pass of the event loop: the core's work, fds ready within
 * timeout_ms, every module's progress op, the core's work again. Inline
 * into rmca_poll, where timeout_ms is 0: a spinning caller's pass is one
 * call less, and what only a sleeping pass does is left out of it. */
static inline __attribute__((always_inline)) int
progress_pass(struct rmca_context *ctx, int timeout_ms)
{
	struct rmca_cq *cq = ctx->cq;
	struct epoll_event ev[64];
	long long now = 0;
	/* At most every other pass skips: a caller that posts before each
	 * poll still reads what arrives. */
	bool fresh_post = !timeout_ms && ctx->posted && cq->looked;
	bool look = true;
	bool ctrl_hot = false;
	bool progressed = false;
	bool epoll_now = false;
	int n = 0;

	if (cq->ctrl_hot && !timeout_ms) {
		cq->ctrl_hot--;
		ctrl_hot = true;
	} else if (cq->eps_polled && !timeout_ms) {
		look = false;
		if (++cq->spin_passes >= SPIN_CLOCK_EVERY) {
			cq->spin_passes = 0;
			now = rmca_now_ns();
			look = now - cq->last_epoll >= SPIN_EPOLL_NS;
		}
	}
	ctx->posted = false;
	cq->looked = false;
	core_work(ctx);
	if (timeout_ms) {
		/* The core is about to sleep in the set: what the modules
		 * hold for their next pass goes first (may_sleep). What that
		 * completes keeps the eventfd readable: no sleep then. */
		cq->sleepers |= RMCA_SLEEPER_CORE;
		mods_progress(ctx);
		cq->sleepers &= (uint8_t)~RMCA_SLEEPER_CORE;
		progressed = true;
	}
	if (look) {
		bool served = cq->served;

		cq->served = false;
		if ((fresh_post || served) && quiet_look(cq)) {
			/* no eager read: straight to the look */
			cq->looked = true;
			epoll_now = true;
		} else if (!fresh_post) {
			cq->looked = true;
			epoll_now = timeout_ms || !eager_read(ctx, &progressed);
			epoll_now = epoll_now && (timeout_ms || !progressed ||
						  ctrl_hot || !idle_skip(ctx));
		}
	}
	if (epoll_now) {
		cq->eager_run = 0;
		cq->idle_run = 0;
		n = epoll_look(ctx, ev, 64, timeout_ms);
		/* A hot pass reads no clock (a system call in some guests)
		 * and walks no endpoints: the first pass after the window
		 * looks and does both. */
		if (cq->polled && !ctrl_hot) {
			cq->last_epoll = now ? now : rmca_now_ns();
			cq->eps_polled = eps_polled(ctx);
		}
	}
	for (int i = 0; i < n; i++) {
		int fd = (int)(uint32_t)ev[i].data.u64;

		if (fd == ctx->cq->efd)
			continue;
		/* A callback may remove other fds, and a new fd may have
		 * taken the number since: look each one up anew, and skip an
		 * event of an earlier registration (level-triggered, the new
		 * fd's own readiness comes at the next look). */
		if ((size_t)fd >= ctx->nfds || !ctx->fds[fd].cb ||
		    ctx->fds[fd].gen != (uint32_t)(ev[i].data.u64 >> 32))
			continue;
		if (ctx->fds[fd].eager && (ev[i].events & EPOLLIN))
			cq->hot_fd = fd;
		ctx->fds[fd].cb(ctx->fds[fd].arg, ev[i].events);
	}
	/* Once more only if a callback ran since (or, before a sleep,
	 * ever) */
	if (!progressed || n > 0)
		mods_progress(ctx);
	core_work(ctx);
	listeners_progress(ctx);
	return n < 0 && errno != EINTR ? RMCA_ERR_INVALID : 0;
}

int rmca_progress(struct rmca_context *ctx, int timeout_ms)
{
	return progress_pass(ctx, timeout_ms);
}

int rmca_poll(rmca_context_t *ctx, struct rmca_completion *out, int max)
{
	struct rmca_cq *cq;
	struct rmca_req *r;
	int n = 0;

	/* max within 0..INT_MAX, and 0 without out: one unsigned compare */
	if (!ctx || (unsigned)max > (out ? (unsigned)INT_MAX : 0))
		return RMCA_ERR_INVALID;
	cq = ctx->cq;
	cq->polling = true;
	progress_pass(ctx, 0);
	cq->polling = false;
	r = cq->head;
	if (!r) {
		/* a pass that found nothing: no queue to set */
		rmca_cq_signal(cq, false);
		return 0;
	}
	/* Taken off the queue in a register, the queue set once after */
	while (n < max) {
		/* read before the release reuses it */
		struct rmca_req *next = r->cq_next;

		/* r->ep may be gone: it is only copied, as an identifier.
		 * The request keeps its completion as one (ep.h), copied
		 * whole. */
		memcpy(&out[n++], &r->user_ctx, sizeof(*out));
		/* rmca_req_release(): every request queued was emitted
		 * first, and one freed needs no flag cleared */
		if (!r->flush && !r->uncovered)
			rmca_req_free(ctx, r);
		else
			r->queued = false;
		r = next;
		if (!r) {
			cq->head = NULL;
			cq->tailp = &cq->head;
			rmca_cq_signal(cq, false);
			return n;
		}
	}
	cq->head = r;
	rmca_cq_signal(cq, true);
	return n;
}

/*
 * Handing the set out tells the modules that the application may sleep on
 * it from now on (may_sleep). Work a module held for its next pass until
 * then keeps nothing readable: the eventfd wakes the first sleep once, and
 * the rmca_poll that follows does that work.
 */
int rmca_wait_fd(rmca_context_t *ctx)
{
	if (!ctx)
		return RMCA_ERR_INVALID;
	if (!(ctx->cq->sleepers & RMCA_SLEEPER_APP)) {
		ctx->cq->sleepers |= RMCA_SLEEPER_APP;
		rmca_cq_signal(ctx->cq, true);
	}
	return ctx->epfd;
}

bool rmca_core_may_sleep(const struct rmca_core *core)
{
	return rmca_core_ctx(core)->cq->sleepers & RMCA_SLEEPER_APP;
}

bool rmca_core_will_sleep(const struct rmca_core *core)
{
	return rmca_core_ctx(core)->cq->sleepers & RMCA_SLEEPER_CORE;
}
