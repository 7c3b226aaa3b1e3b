/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_count.so - counts what a process asks of its verbs devices, the
 * same way for any program (rmca_perf, perftest): LD_PRELOAD it and read
 * one line per process at exit.
 *
 *   LD_PRELOAD=verbs_count.so VERBS_COUNT_OUT=file VERBS_COUNT_TAG=label cmd
 *
 * It wraps ibv_open_device (what librdmacm and perftest call) and puts
 * counting wrappers in front of the context's post_send, post_recv, poll_cq
 * and req_notify_cq, which ibv_post_send() and friends call through, and
 * wraps ibv_get_cq_event (a completion channel's event taken: a read()).
 * The line appended to VERBS_COUNT_OUT is
 *
 *   tag,post_send,send_wrs,signalled,inline,post_recv,recv_wrs,
 *   poll_cq,polls_with_entries,cqes,req_notify,cq_events
 *
 * System calls (the doorbells of rxe and siw are write()s on the device's
 * command fd) are counted with strace -c; see contrib/bench/vm-count.sh.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <infiniband/verbs.h>

#define MAX_CTX 16

struct orig {
	struct ibv_context *ctx;
	struct ibv_context_ops ops;
};

static struct orig origs[MAX_CTX];
static int norig;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned long n_post_send, n_send_wr, n_signalled, n_inline;
static unsigned long n_post_recv, n_recv_wr;
static unsigned long n_poll, n_poll_hit, n_cqe, n_notify, n_event;

static const struct ibv_context_ops *orig_of(struct ibv_context *ctx)
{
	int i;

	for (i = 0; i < norig; i++)
		if (origs[i].ctx == ctx)
			return &origs[i].ops;
	abort(); /* a context we did not open */
}

static int c_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad)
{
	struct ibv_send_wr *w;

	n_post_send++;
	for (w = wr; w; w = w->next) {
		n_send_wr++;
		n_signalled += !!(w->send_flags & IBV_SEND_SIGNALED);
		n_inline += !!(w->send_flags & IBV_SEND_INLINE);
	}
	return orig_of(qp->context)->post_send(qp, wr, bad);
}

static int c_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad)
{
	struct ibv_recv_wr *w;

	n_post_recv++;
	for (w = wr; w; w = w->next)
		n_recv_wr++;
	return orig_of(qp->context)->post_recv(qp, wr, bad);
}

static int c_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	int n = orig_of(cq->context)->poll_cq(cq, num, wc);

	n_poll++;
	if (n > 0) {
		n_poll_hit++;
		n_cqe += (unsigned long)n;
	}
	return n;
}

static int c_req_notify_cq(struct ibv_cq *cq, int solicited)
{
	n_notify++;
	return orig_of(cq->context)->req_notify_cq(cq, solicited);
}

/* rmca loads libibverbs with its components (dlopen, local scope):
 * RTLD_NEXT does not see it there. */
static void *verbs_fn(const char *name)
{
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *f = dlsym(h ? h : RTLD_NEXT, name);

	if (!f)
		abort();
	return f;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq,
		     void **cq_ctx)
{
	static int (*real)(struct ibv_comp_channel *, struct ibv_cq **,
			   void **);
	int r;

	if (!real)
		real = (int (*)(struct ibv_comp_channel *, struct ibv_cq **,
				void **))verbs_fn("ibv_get_cq_event");
	r = real(ch, cq, cq_ctx);
	if (!r)
		__atomic_add_fetch(&n_event, 1, __ATOMIC_RELAXED);
	return r;
}

struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	static struct ibv_context *(*real)(struct ibv_device *);
	struct ibv_context *ctx;

	if (!real)
		real = (struct ibv_context * (*)(struct ibv_device *))
			verbs_fn("ibv_open_device");
	ctx = real(dev);
	if (!ctx)
		return NULL;
	pthread_mutex_lock(&lock);
	if (norig < MAX_CTX) {
		origs[norig].ctx = ctx;
		origs[norig].ops = ctx->ops;
		norig++;
		ctx->ops.post_send = c_post_send;
		ctx->ops.post_recv = c_post_recv;
		ctx->ops.poll_cq = c_poll_cq;
		ctx->ops.req_notify_cq = c_req_notify_cq;
	}
	pthread_mutex_unlock(&lock);
	return ctx;
}

__attribute__((destructor)) static void report(void)
{
	const char *out = getenv("VERBS_COUNT_OUT");
	const char *tag = getenv("VERBS_COUNT_TAG");
	FILE *f;

	if (!out || !n_poll)
		return;
	f = fopen(out, "a");
	if (!f)
		return;
	fprintf(f, "%s,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu\n",
		tag ? tag : "?", n_post_send, n_send_wr, n_signalled, n_inline,
		n_post_recv, n_recv_wr, n_poll, n_poll_hit, n_cqe, n_notify,
		n_event);
	fclose(f);
}
