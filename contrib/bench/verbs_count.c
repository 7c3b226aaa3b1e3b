/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_count.so - counts what a process asks of its verbs devices, the
 * same way for any program (rmca_perf, perftest): LD_PRELOAD it and read
 * one line per process at exit.
 *
 *   LD_PRELOAD=verbs_count.so VERBS_COUNT_OUT=file VERBS_COUNT_TAG=label cmd
 *
 * It is built with the tests' test/verbs_interpose.c, whose ibv_open_device
 * (what librdmacm and perftest call) saves each context's ops and lets this
 * file put counting wrappers in front of post_send, post_recv, poll_cq and
 * req_notify_cq, which ibv_post_send() and friends call through, and whose
 * ibv_get_cq_event counts the completion channel's events taken (a read()).
 * Its epoll_wait counts too; nothing here reports that.
 * The line appended to VERBS_COUNT_OUT is
 *
 *   tag,post_send,send_wrs,signalled,inline,post_recv,recv_wrs,
 *   poll_cq,polls_with_entries,cqes,req_notify,cq_events
 *
 * System calls (the doorbells of rxe and siw are write()s on the device's
 * command fd) are counted with strace -c; see contrib/bench/vm-count.sh.
 */
#include <stdio.h>
#include <stdlib.h>

#include "verbs_interpose.h" /* test/: the contexts, ibv_get_cq_event */

static unsigned long n_post_send, n_send_wr, n_signalled, n_inline;
static unsigned long n_post_recv, n_recv_wr;
static unsigned long n_poll, n_poll_hit, n_cqe, n_notify;

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
	return vi_real_ops(qp->context)->post_send(qp, wr, bad);
}

static int c_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad)
{
	struct ibv_recv_wr *w;

	n_post_recv++;
	for (w = wr; w; w = w->next)
		n_recv_wr++;
	return vi_real_ops(qp->context)->post_recv(qp, wr, bad);
}

static int c_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	int n = vi_real_ops(cq->context)->poll_cq(cq, num, wc);

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
	return vi_real_ops(cq->context)->req_notify_cq(cq, solicited);
}

void vi_patch_ops(struct ibv_context_ops *ops)
{
	ops->post_send = c_post_send;
	ops->post_recv = c_post_recv;
	ops->poll_cq = c_poll_cq;
	ops->req_notify_cq = c_req_notify_cq;
}

/* the whole life of the process is counted */
__attribute__((constructor)) static void start(void)
{
	vi_counting = true;
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
		(unsigned long)vi_cq_events);
	fclose(f);
}
