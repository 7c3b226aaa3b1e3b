/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The interposers of verbs_interpose.h: the contexts opened with their
 * own ops, and the counting ibv_get_cq_event and epoll_wait.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "verbs_interpose.h"

#define MAX_CTX 16

bool vi_counting;
long vi_cq_event_calls, vi_cq_events, vi_epolls;

static struct {
	const struct ibv_context *ctx;
	struct ibv_context_ops ops;
} opened[MAX_CTX];
static int nopened;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void *vi_real_fn(const char *lib, const char *fn)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	void *f = dlsym(h ? h : RTLD_NEXT, fn);

	if (!f)
		abort();
	return f;
}

const struct ibv_context_ops *vi_real_ops(const struct ibv_context *ctx)
{
	/* entries are written before nopened counts them (under the lock,
	 * the lookup is not: an op is never called on a context before
	 * ibv_open_device returned it) */
	int n = __atomic_load_n(&nopened, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++)
		if (opened[i].ctx == ctx)
			return &opened[i].ops;
	abort();
}

struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	static struct ibv_context *(*real)(struct ibv_device *);
	struct ibv_context *ctx;

	if (!real)
		real = (struct ibv_context * (*)(struct ibv_device *))
			vi_real_fn("libibverbs.so.1", "ibv_open_device");
	ctx = real(dev);
	if (!ctx)
		return NULL;
	pthread_mutex_lock(&lock);
	if (nopened < MAX_CTX) {
		opened[nopened].ctx = ctx;
		opened[nopened].ops = ctx->ops;
		__atomic_store_n(&nopened, nopened + 1, __ATOMIC_RELEASE);
		vi_patch_ops(&ctx->ops);
	}
	pthread_mutex_unlock(&lock);
	return ctx;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq,
		     void **cq_ctx)
{
	static int (*real)(struct ibv_comp_channel *, struct ibv_cq **,
			   void **);
	int r;

	if (!real)
		real = (int (*)(struct ibv_comp_channel *, struct ibv_cq **,
				void **))vi_real_fn("libibverbs.so.1",
						    "ibv_get_cq_event");
	r = real(ch, cq, cq_ctx);
	if (vi_counting) {
		__atomic_add_fetch(&vi_cq_event_calls, 1, __ATOMIC_RELAXED);
		if (!r)
			__atomic_add_fetch(&vi_cq_events, 1, __ATOMIC_RELAXED);
	}
	return r;
}

int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	static int (*real)(int, struct epoll_event *, int, int);

	if (!real)
		real = (int (*)(int, struct epoll_event *, int, int))dlsym(
			RTLD_NEXT, "epoll_wait");
	if (vi_counting)
		__atomic_add_fetch(&vi_epolls, 1, __ATOMIC_RELAXED);
	return real(epfd, ev, max, timeout);
}
