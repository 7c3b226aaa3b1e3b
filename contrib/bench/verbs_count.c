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
 * Its epoll_wait counts too (vi_epolls).
 * The line appended to VERBS_COUNT_OUT is
 *
 *   tag,post_send,send_wrs,signalled,inline,post_recv,recv_wrs,
 *   poll_cq,polls_with_entries,cqes,req_notify,cq_events,
 *   read_wrs,write_wrs,atomic_wrs,sig_sends,recv_cqes,
 *   write,read,timerfd_settime,clock_gettime,epoll_wait,ioctl
 *
 * send WRs by opcode (the rest of send_wrs are SENDs, with or without
 * immediate or invalidation; sig_sends: of those, signalled), receive
 * completions among cqes, and the calls the process makes through libc's
 * write, read, timerfd_settime, clock_gettime (a system call only where
 * the vDSO cannot read the clock source: check the guest's), epoll_wait
 * and ioctl, counted here without a tracer, so that a spinning process
 * runs at its own speed and what it does per unit of time (the core's
 * look at its fds, the module's timer) is counted as it is. All system
 * calls by name, with the tracer's slowdown, come from strace -c
 * (contrib/bench/run-vm.sh --count without --no-strace).
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "verbs_interpose.h" /* test/: the contexts, ibv_get_cq_event */

static unsigned long n_post_send, n_send_wr, n_signalled, n_inline;
static unsigned long n_post_recv, n_recv_wr;
static unsigned long n_poll, n_poll_hit, n_cqe, n_notify;
static unsigned long n_read_wr, n_write_wr, n_atomic_wr, n_sig_send;
static unsigned long n_recv_cqe;
static unsigned long n_write, n_read, n_timerfd, n_clock, n_ioctl;

/* libc's fn, looked up once into *slot */
static void *libc(void **slot, const char *fn)
{
	if (!*slot)
		*slot = dlsym(RTLD_NEXT, fn);
	return *slot;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	static void *fn;
	ssize_t (*real)(int, const void *, size_t) = libc(&fn, "write");

	__atomic_add_fetch(&n_write, 1, __ATOMIC_RELAXED);
	return real(fd, buf, len);
}

ssize_t read(int fd, void *buf, size_t len)
{
	static void *fn;
	ssize_t (*real)(int, void *, size_t) = libc(&fn, "read");

	__atomic_add_fetch(&n_read, 1, __ATOMIC_RELAXED);
	return real(fd, buf, len);
}

int timerfd_settime(int fd, int flags, const struct itimerspec *v,
		    struct itimerspec *old)
{
	static void *fn;
	int (*real)(int, int, const struct itimerspec *, struct itimerspec *) =
		libc(&fn, "timerfd_settime");

	__atomic_add_fetch(&n_timerfd, 1, __ATOMIC_RELAXED);
	return real(fd, flags, v, old);
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	static void *fn;
	int (*real)(clockid_t, struct timespec *) = libc(&fn, "clock_gettime");

	__atomic_add_fetch(&n_clock, 1, __ATOMIC_RELAXED);
	return real(clk, ts);
}

int ioctl(int fd, unsigned long req, ...)
{
	static void *fn;
	int (*real)(int, unsigned long, void *) = libc(&fn, "ioctl");
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	__atomic_add_fetch(&n_ioctl, 1, __ATOMIC_RELAXED);
	return real(fd, req, arg);
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
		switch (w->opcode) {
		case IBV_WR_RDMA_READ:
			n_read_wr++;
			break;
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			n_write_wr++;
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			n_atomic_wr++;
			break;
		default:
			n_sig_send += !!(w->send_flags & IBV_SEND_SIGNALED);
			break;
		}
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
		for (int i = 0; i < n; i++)
			n_recv_cqe += !!(wc[i].opcode & IBV_WC_RECV);
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
	fprintf(f,
		"%s,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,"
		"%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu\n",
		tag ? tag : "?", n_post_send, n_send_wr, n_signalled, n_inline,
		n_post_recv, n_recv_wr, n_poll, n_poll_hit, n_cqe, n_notify,
		(unsigned long)vi_cq_events, n_read_wr, n_write_wr, n_atomic_wr,
		n_sig_send, n_recv_cqe, n_write, n_read, n_timerfd, n_clock,
		(unsigned long)vi_epolls, n_ioctl);
	fclose(f);
}
