/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the verbs components ask of the kernel, counted on a real device
 * (rxe0, siw0) inside the VM:
 *  - a ping-pong spinning on rmca_poll reads the rdma_cm event channel only
 *    when it has an event: rdma_get_cm_event is a system call (a command
 *    write() on the ucma fd) whether an event waits or not, and the
 *    channel's fd is in the context's epoll set;
 *  - a caller spinning on rmca_poll while completions keep coming reads the
 *    CQ alone: neither the completion channel's event (ibv_get_cq_event, a
 *    read(), and the arming after it) per completion, nor the epoll set
 *    on every pass (epoll_wait at most once a millisecond), and reads it
 *    no more in a pass once a poll returned fewer completions than asked;
 *  - opening the components on a host whose addresses no RDMA device
 *    serves does not sleep (a network namespace of its own, with a dummy
 *    interface: the answer for that address is ENODEV at once);
 *  - on siw every send-side work request of a page or more is signalled
 *    (siw sends an unsignalled one from the user's pages, its slow path),
 *    on ib such sends and puts follow the stream rule below;
 *  - puts posted one call at a time in a window are signalled once in many
 *    work requests (the completion of a signalled one retires those before
 *    it), and each still completes once, RMCA_OK, with its own context;
 *  - a ping-pong whose sides keep one receive posted reads no count of
 *    receives (an RDMA READ) from inside rmca_send: each reply carries
 *    its sender's count (ib: the immediate; iWARP: rmca's header);
 *  - a stream of sends to a receiver that keeps perftest's 512 receives
 *    posted reads the receiver's count (an RDMA READ) about once per 256
 *    messages;
 *  - on iWARP, replies that come milliseconds after each send confirm it,
 *    without an RDMA READ per send, also after a send whose post returned
 *    only once its reply had come (a reply is timed from the post);
 *  - sends submitted before the peer posts its receives wait for them in
 *    rmca, not on the wire: on rxe the device counts no RNR NAK (each
 *    costs the sender the responder's RNR timer, 655 ms under rdma_cm);
 *  - a ping-pong that keeps many receives posted reposts them in batches:
 *    one ibv_post_recv per several messages, not one per message, and
 *    every message still lands in the receive posted for it;
 *  - on iWARP a ping-pong's send reads the clock before its post (to
 *    time the reply) for one send in several, not for each: the rest of
 *    its book-keeping reads it, if at all, once the message is on its way;
 *  - on iWARP, once a late reply came (its send confirmed by a READ),
 *    the next sends wait for their replies, without a READ each;
 *  - on iWARP a ping-pong spinning on rmca_poll arms no timer for its
 *    held sends (the module's timerfd: a system call after a send, and
 *    an epoll wakeup and a read() at its expiry); a send no reply
 *    confirms still completes, from the caller's passes while it spins,
 *    and from the timer once it sleeps on the wait fd;
 *  - a send a reply confirmed completes RMCA_OK exactly once, also when
 *    the endpoint is closed before the next poll; on iWARP a caller that
 *    spins gets that completion at its next pass, after the reply's;
 *  - a message that carries an immediate (ib: the sender's count of
 *    receives) revokes no key, whatever its immediate: the work
 *    completion keeps imm_data and invalidated_rkey in one word, and a
 *    count that reads as the key of a window bound for the connection
 *    was taken for that key's invalidation (this program's poll_cq makes
 *    one receive's immediate that key).
 *
 * This program's own rdma_get_cm_event, nanosleep and clock_nanosleep, and
 * verbs_interpose.c's ibv_get_cq_event, ibv_open_device (its contexts'
 * post_send, patched here, counts work requests) and epoll_wait come first
 * in the lookup scope (it is linked -rdynamic): the components call these,
 * which count, then the real ones.
 *
 * Device from RMCA_transports (ib or iwarp), address from RMCATEST_HOST.
 */
#define _GNU_SOURCE /* RTLD_NEXT, unshare */
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <unistd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

#include <infiniband/verbs.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "tap_skip.h"
#include "verbs_interpose.h"

struct rdma_event_channel;
struct rdma_cm_event;

/* counted while vi_counting is set (verbs_interpose.h) */
static long cm_reads, sleeps, send_wrs, signalled;
/* messages posted signalled, READs posted */
static long sig_msgs, reads;
/* messages posted, and READs posted after the first and before the last
 * (lastmsg) of them */
static long msgs, reads_mid, lastmsg;
/* late replies (slow_client): READs posted inside rmca_send, and READs
 * posted while a reply was awaited sooner than early_ns after its send */
static bool timing_reads, in_send;
static long long send_ns, early_ns;
static long send_reads, early_reads;

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* send-side WRs of a page or more (data and header), and of them signalled */
static long big_wrs, big_sig;

/* Posts of a SEND that return slow_post_ns late, while slow_posts > 0
 * (as a post does whose caller was descheduled in it). */
static int slow_posts;
static long long slow_post_ns;

static void return_late(const struct ibv_send_wr *wr)
{
	long long end;

	if (slow_posts <= 0)
		return;
	end = now_ns() + slow_post_ns;

	for (; slow_posts > 0 && wr; wr = wr->next)
		if (wr->opcode == IBV_WR_SEND ||
		    wr->opcode == IBV_WR_SEND_WITH_IMM) {
			slow_posts--;
			while (now_ns() < end)
				; /* no sleep: this program counts those */
			return;
		}
}

/* Clock reads (clock_gettime: the components' rmca_now_ns) inside the
 * rmca_send calls of clock_side while clock_in_send, before and after its
 * message's post (clock_msg_posted); this program's own are not counted. */
static bool clock_in_send, clock_msg_posted;
static long clock_before, clock_after;

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);

	if (!real)
		real = (int (*)(clockid_t, struct timespec *))dlsym(
			RTLD_NEXT, "clock_gettime");
	if (clock_in_send) {
		if (clock_msg_posted)
			clock_after++;
		else
			clock_before++;
	}
	return real(clk, ts);
}

static int counted_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			     struct ibv_send_wr **bad)
{
	bool watching = clock_in_send;
	int ret;

	for (const struct ibv_send_wr *w = wr; watching && w; w = w->next)
		if (w->opcode == IBV_WR_SEND ||
		    w->opcode == IBV_WR_SEND_WITH_IMM)
			clock_msg_posted = true;
	clock_in_send = false;

	for (const struct ibv_send_wr *w = wr; vi_counting && w; w = w->next) {
		uint64_t bytes = 0;

		for (int i = 0; i < w->num_sge; i++)
			bytes += w->sg_list[i].length;
		if (bytes >= (uint64_t)sysconf(_SC_PAGESIZE)) {
			big_wrs++;
			big_sig += !!(w->send_flags & IBV_SEND_SIGNALED);
		}
		send_wrs++;
		signalled += !!(w->send_flags & IBV_SEND_SIGNALED);
		if (w->opcode == IBV_WR_SEND ||
		    w->opcode == IBV_WR_SEND_WITH_IMM) {
			msgs++;
			sig_msgs += !!(w->send_flags & IBV_SEND_SIGNALED);
		} else if (w->opcode == IBV_WR_RDMA_READ) {
			reads++;
			reads_mid += msgs && msgs < lastmsg;
			send_reads += timing_reads && in_send;
			early_reads += timing_reads && !in_send &&
				       now_ns() - send_ns < early_ns;
		}
	}
	ret = vi_real_ops(qp->context)->post_send(qp, wr, bad);
	if (!ret)
		return_late(wr);
	clock_in_send = watching;
	return ret;
}

/* ibv_post_recv calls and receive work requests, counted */
static long recv_posts, recv_wrs;

static int counted_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad)
{
	recv_posts += vi_counting;
	for (const struct ibv_recv_wr *w = wr; vi_counting && w; w = w->next)
		recv_wrs++;
	return vi_real_ops(qp->context)->post_recv(qp, wr, bad);
}

/* The next receive completed with an immediate gets this one instead,
 * when set (forged counts those). */
static uint32_t forge_imm;
static int forged;

/* rmca_poll calls of spin_wait so far, and vi_epolls when the last one
 * began; CQ polls made in the same call right after one that returned
 * fewer completions than it asked for, in a call that looked at no fd (a
 * readable channel's callback reads the CQ too, then progress does) */
static long pass_no, pass_epolls, polls_after_short;

static int forging_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	static long short_pass = -1;
	int got = vi_real_ops(cq->context)->poll_cq(cq, n, wc);

	if (vi_counting && short_pass == pass_no && vi_epolls == pass_epolls)
		polls_after_short++;
	short_pass = got > 0 && got < n ? pass_no : -1;

	for (int i = 0; forge_imm && i < got; i++) {
		if (wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].opcode != IBV_WC_RECV ||
		    !(wc[i].wc_flags & IBV_WC_WITH_IMM))
			continue;
		wc[i].imm_data = forge_imm;
		forge_imm = 0;
		forged++;
	}
	return got;
}

void vi_patch_ops(struct ibv_context_ops *ops)
{
	ops->post_send = counted_post_send;
	ops->post_recv = counted_post_recv;
	ops->poll_cq = forging_poll_cq;
}

int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev);
int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	static int (*real)(struct rdma_event_channel *,
			   struct rdma_cm_event **);

	if (!real)
		real = (int (*)(struct rdma_event_channel *,
				struct rdma_cm_event **))
			vi_real_fn("librdmacm.so.1", "rdma_get_cm_event");
	cm_reads += vi_counting;
	return real(ch, ev);
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
	static int (*real)(const struct timespec *, struct timespec *);

	if (!real)
		real = (int (*)(const struct timespec *,
				struct timespec *))dlsym(RTLD_NEXT,
							 "nanosleep");
	sleeps += vi_counting;
	return real(req, rem);
}

int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
		    struct timespec *rem)
{
	static int (*real)(clockid_t, int, const struct timespec *,
			   struct timespec *);

	if (!real)
		real = (int (*)(clockid_t, int, const struct timespec *,
				struct timespec *))dlsym(RTLD_NEXT,
							 "clock_nanosleep");
	sleeps += vi_counting;
	return real(clk, flags, req, rem);
}

/* ---- the rdma_cm channel in a ping-pong ---- */

#define PINGS  200
#define WARMUP 4

/* Spin on rmca_poll (no sleeping) until ctx completes; counts the polls. */
static void spin_wait(struct api_peer *p, void *ctx, long *polls)
{
	struct rmca_completion c;
	long end = api_now_ms() + API_TIMEOUT_MS;

	while (!api_take(ctx, &c)) {
		pass_no++;
		pass_epolls = vi_epolls;
		api_progress(p);
		(*polls)++;
		if (!(*polls & 0xfff))
			API_CHECK_MSG(api_now_ms() < end, "ctx %p never came",
				      ctx);
	}
	API_CHECK_MSG(c.status == RMCA_OK, "ctx %p: %s", ctx,
		      api_strerror(c.status));
}

/*
 * One side of PINGS round trips after WARMUP (the client sends first),
 * each side keeping `ahead` receives posted in rx[] (8 bytes each,
 * contexts 0x100 + i) and reposting one as it takes one: every send
 * finds a receive. counting() runs as the counted round trips begin;
 * each rmca_send runs between before_send() and after_send(); with a
 * tag, message i carries tag + i, checked where it lands.
 */
struct ping_pong {
	uint64_t *msg; /* what each send sends, 8 bytes */
	uint64_t *rx;
	rmca_mr_t *mr;
	int ahead;
	uint64_t tag;
	void (*counting)(void);
	void (*before_send)(void);
	void (*after_send)(void);
};

/* The first `ahead` receives, on the device before the peer sends. */
static void ping_pong_post(struct api_peer *p, const struct ping_pong *pp)
{
	for (int i = 0; i < pp->ahead; i++)
		API_CHECK_OK(rmca_recv(p->ep, pp->rx + i, 8, pp->mr,
				       API_CTX(0x100 + i)));
	api_progress(p);
}

static void ping_pong_run(struct api_peer *p, const struct ping_pong *pp)
{
	long polls = 0;

	for (int i = 0; i < PINGS + WARMUP; i++) {
		bool send_now = !p->is_server;
		uint64_t *slot = pp->rx + i % pp->ahead;

		if (i == WARMUP && pp->counting)
			pp->counting();
		for (int k = 0; k < 2; k++, send_now = !send_now) {
			if (send_now) {
				*pp->msg = pp->tag + (uint64_t)i;
				if (pp->before_send)
					pp->before_send();
				API_CHECK_OK(rmca_send(p->ep, pp->msg, 8,
						       pp->mr, API_CTX(2)));
				if (pp->after_send)
					pp->after_send();
				continue;
			}
			/* message i, in the i-th receive posted */
			spin_wait(p, API_CTX(0x100 + i), &polls);
			API_CHECK_MSG(!pp->tag || *slot == pp->tag + (uint64_t)i,
				      "%s: receive %d holds %#llx",
				      p->is_server ? "server" : "client", i,
				      (unsigned long long)*slot);
			API_CHECK_OK(rmca_recv(p->ep, slot, 8, pp->mr,
					       API_CTX(0x100 + i + pp->ahead)));
		}
		spin_wait(p, API_CTX(2), &polls);
	}
}

/* ping_side checks the completion channel and the epoll set too. */
static bool check_spin;

static void ping_side(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	long polls = 0, t0 = 0, ms;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	if (p->is_server)
		api_token(p, 0, API_TOKEN_GO);
	else
		api_expect_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < PINGS + WARMUP; i++) {
		if (i == WARMUP) {
			cm_reads = vi_cq_event_calls = vi_epolls = 0;
			polls = polls_after_short = 0;
			t0 = api_now_ms();
			vi_counting = true;
		}
		API_CHECK_OK(rmca_recv(p->ep, buf + 32, 8, mr, API_CTX(1)));
		if (!p->is_server)
			API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(2)));
		spin_wait(p, API_CTX(1), &polls);
		if (p->is_server)
			API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(2)));
		spin_wait(p, API_CTX(2), &polls);
	}
	vi_counting = false;
	ms = api_now_ms() - t0;
	/* No connection event comes in a ping-pong: before, every rmca_poll
	 * read the channel once. A few reads are left for an event that
	 * does come (a late one of the set-up). */
	API_CHECK_MSG(cm_reads <= 4,
		      "%s: %ld reads of the rdma_cm channel in %d round trips "
		      "(%ld rmca_poll calls)",
		      p->is_server ? "server" : "client", cm_reads, PINGS,
		      polls);
	if (!check_spin)
		goto done;
	/* A batch shorter than asked for took all the CQ held: the pass
	 * polls no more (before: once more, which found it empty, after each
	 * of the two completions of a round trip). A pass that looked at the
	 * fds is not counted: the channel's callback and progress each read
	 * the CQ there. */
	API_CHECK_MSG(polls_after_short <= PINGS / 10,
		      "%s: %ld CQ polls after a short batch in the same "
		      "rmca_poll, %d round trips (%ld rmca_poll calls)",
		      p->is_server ? "server" : "client", polls_after_short,
		      PINGS, polls);
	/* The module re-arms its completion channel only after a second
	 * without a completion (before: one take per completion, and an
	 * arming after each). A guest starved by a loaded host can stall a
	 * round trip that long, so each elapsed second may hold one take;
	 * one more is left for the warm-up's. */
	API_CHECK_MSG(vi_cq_event_calls <= 1 + ms / 1000,
		      "%s: %ld completion channel events taken in %d round "
		      "trips (%ld rmca_poll calls, %ld ms)",
		      p->is_server ? "server" : "client", vi_cq_event_calls,
		      PINGS, polls, ms);
	/* The core looks at the fds once a millisecond while every endpoint
	 * is on a module that polls (before: on every rmca_poll). */
	API_CHECK_MSG(vi_epolls <= ms + 2,
		      "%s: %ld epoll_wait calls in %ld ms of spinning (%ld "
		      "rmca_poll calls)",
		      p->is_server ? "server" : "client", vi_epolls, ms, polls);
done:
	if (p->is_server)
		api_expect_token(p, 0, API_TOKEN_GO);
	else
		api_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void test_ping_pong_reads_no_idle_cm_channel(void **state)
{
	const struct api_test t = {.server = ping_side, .client = ping_side};

	(void)state;
	api_run(&t);
}

static void test_spinning_ping_pong_reads_the_cq_alone(void **state)
{
	const struct api_test t = {.server = ping_side, .client = ping_side};

	(void)state;
	/* busy for a second before the channel is re-armed: longer than
	 * any round trip of a guest that is not starved (ping_side allows
	 * one take per elapsed second for one that is) */
	setenv("RMCA_ib_idle_us", "1000000", 1);
	setenv("RMCA_iwarp_idle_us", "1000000", 1);
	check_spin = true;
	api_run(&t);
	check_spin = false;
	unsetenv("RMCA_ib_idle_us");
	unsetenv("RMCA_iwarp_idle_us");
}

/* ---- the clock in a ping-pong's sends ---- */

/* receives each side keeps posted: every send finds a credit */
#define CLOCK_AHEAD 16

/* messages posted inside rmca_send while counting */
static long in_call;

static void clock_counting(void)
{
	clock_before = clock_after = in_call = 0;
	vi_counting = true;
}

static void clock_before_send(void)
{
	clock_in_send = vi_counting;
	clock_msg_posted = false;
}

static void clock_after_send(void)
{
	clock_in_send = false;
	in_call += clock_msg_posted;
}

static void clock_side(struct api_peer *p)
{
	uint64_t *buf = api_alloc(8 * (CLOCK_AHEAD + 1));
	struct ping_pong pp = {.msg = buf,
			       .rx = buf + 1,
			       .ahead = CLOCK_AHEAD,
			       .counting = clock_counting,
			       .before_send = clock_before_send,
			       .after_send = clock_after_send};

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 8 * (CLOCK_AHEAD + 1),
				 RMCA_ACCESS_LOCAL, &pp.mr));
	ping_pong_post(p, &pp);
	if (p->is_server)
		api_token(p, 0, API_TOKEN_GO);
	else
		api_expect_token(p, 0, API_TOKEN_GO);
	ping_pong_run(p, &pp);
	vi_counting = false;
	fprintf(stderr,
		"# %s: %ld of %d messages posted inside rmca_send, %ld clock "
		"reads there before the post, %ld after it\n",
		p->is_server ? "server" : "client", in_call, PINGS,
		clock_before, clock_after);
	/* every send had a credit (the peer keeps CLOCK_AHEAD receives
	 * posted), so its message went inside rmca_send */
	API_CHECK_MSG(in_call >= PINGS - 2,
		      "%s: %ld of %d messages posted inside rmca_send",
		      p->is_server ? "server" : "client", in_call, PINGS);
	/* iWARP: a reply is timed from before its send's post for one send
	 * in 8 (before: every send of a ping-pong read the clock there, its
	 * held list starting with it); when the held list starts is read
	 * after the post. ib sends read no clock. */
	API_CHECK_MSG(clock_before <= PINGS / 4,
		      "%s: %ld clock reads before the post in %d sends (%ld "
		      "after it)",
		      p->is_server ? "server" : "client", clock_before, PINGS,
		      clock_after);
	if (p->is_server)
		api_expect_token(p, 0, API_TOKEN_GO);
	else
		api_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(pp.mr));
	free(buf);
}

static void test_ping_pong_reads_the_clock_after_the_post(void **state)
{
	const struct api_test t = {.server = clock_side, .client = clock_side};

	(void)state;
	api_run(&t);
}

/* ---- held sends of a spinning ping-pong: no timer ---- */

/* timerfd_settime calls (the verbs module's timer) while vi_counting */
static long timer_arms;

int timerfd_settime(int fd, int flags, const struct itimerspec *v,
		    struct itimerspec *old)
{
	static int (*real)(int, int, const struct itimerspec *,
			   struct itimerspec *);

	if (!real)
		real = (int (*)(int, int, const struct itimerspec *,
				struct itimerspec *))dlsym(RTLD_NEXT,
							   "timerfd_settime");
	timer_arms += vi_counting;
	return real(fd, flags, v, old);
}

/* messages the client sends after the ping-pong that no reply confirms:
 * one while it spins, one while it sleeps on the wait fd */
#define UNANSWERED 2

/* Set-up and teardown without the harness's progressing pipe waits, which
 * take the wait fd (then somebody may sleep, and the timer is armed as
 * before): the server listens, writes its port and accepts (blocking: the
 * core sleeps); the client reads the port before it has a context. */
static char timer_hp[128]; /* client: the server's host:port */

static void timer_setup(struct api_peer *p)
{
	if (p->is_server) {
		api_server_listen(p, api_host());
		api_server_accept_all(p);
		return;
	}
	api_host_port(timer_hp, sizeof(timer_hp), api_host(),
		      api_client_read_port(p));
	API_CHECK_OK(rmca_init(&p->ctx));
	API_CHECK_OK(rmca_connect(p->ctx, timer_hp, API_TIMEOUT_MS, &p->ep));
}

static void timer_finish(struct api_peer *p)
{
	if (p->is_server) {
		api_token(p, 0, API_TOKEN_GO);
		api_expect_token_deaf(p, 0, API_TOKEN_GO);
	} else {
		api_expect_token_deaf(p, 0, API_TOKEN_GO);
		api_token(p, 0, API_TOKEN_GO);
	}
	rmca_ep_close(p->ep);
	if (p->l)
		rmca_listener_close(p->l);
	rmca_finalize(p->ctx);
	p->ctx = NULL;
}

static void timer_counting(void)
{
	timer_arms = 0;
	vi_counting = true;
}

static void timer_side(struct api_peer *p)
{
	uint64_t *buf = api_alloc(8 * (CLOCK_AHEAD + 1));
	const char *side = p->is_server ? "server" : "client";
	struct ping_pong pp = {.msg = buf,
			       .rx = buf + 1,
			       .ahead = CLOCK_AHEAD,
			       .counting = timer_counting};
	struct rmca_completion c;
	long polls = 0, arms, wakes = 0;
	struct pollfd pf;
	rmca_mr_t *mr;

	timer_setup(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 8 * (CLOCK_AHEAD + 1),
				 RMCA_ACCESS_LOCAL, &mr));
	pp.mr = mr;
	ping_pong_post(p, &pp);
	if (p->is_server)
		api_token(p, 0, API_TOKEN_GO);
	else
		api_expect_token_deaf(p, 0, API_TOKEN_GO);
	ping_pong_run(p, &pp);
	arms = timer_arms;
	fprintf(stderr, "# %s: %ld timer arms in %d round trips\n", side, arms,
		PINGS);
	/* Before, on iWARP each send found the timer unarmed once the
	 * last arming had expired (confirm_wait, a millisecond or more)
	 * and armed it; ib has no held sends. */
	API_CHECK_MSG(arms == 0,
		      "%s: %ld timer arms in %d round trips spinning on "
		      "rmca_poll",
		      side, arms, PINGS);
	if (p->is_server) {
		/* the client's last messages, never answered */
		for (int i = 0; i < UNANSWERED; i++)
			spin_wait(p, API_CTX(0x100 + PINGS + WARMUP + i),
				  &polls);
		vi_counting = false;
		goto done;
	}
	/* A send no reply confirms, while the caller spins: its READ goes
	 * from a pass once it waited, without the timer. */
	API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(3)));
	spin_wait(p, API_CTX(3), &polls);
	API_CHECK_MSG(timer_arms == 0,
		      "client: %ld timer arms for a send spun on until its "
		      "READ confirmed it",
		      timer_arms);
	vi_counting = false;
	/* Then asleep on the wait fd: the timer wakes it for the READ. */
	pf = (struct pollfd){.fd = rmca_wait_fd(p->ctx), .events = POLLIN};
	API_CHECK(pf.fd >= 0);
	API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(4)));
	while (!api_take(API_CTX(4), &c)) {
		int n = poll(&pf, 1, API_TIMEOUT_MS);

		wakes++;
		API_CHECK_MSG(n == 1,
			      "client: asleep on the wait fd for %d ms, a "
			      "send no reply confirms never completed (%ld "
			      "wakes)",
			      API_TIMEOUT_MS, wakes);
		api_progress(p);
	}
	API_CHECK_MSG(c.status == RMCA_OK, "client: the unanswered send: %s",
		      api_strerror(c.status));
done:
	API_CHECK_OK(rmca_mr_dereg(mr));
	timer_finish(p);
	free(buf);
}

static void test_spinning_ping_pong_arms_no_timer(void **state)
{
	const struct api_test t = {
		.server = timer_side, .client = timer_side, .manual = true};

	(void)state;
	api_run(&t);
}

/* ---- receives reposted in a ping-pong ---- */

/* receives each side keeps posted: more than the module posts at once
 * (RMCA_VERBS_RECV_HOLD, 32) */
#define REPOST_AHEAD 64

static void repost_counting(void)
{
	recv_posts = recv_wrs = 0;
	vi_counting = true;
}

static void repost_side(struct api_peer *p)
{
	uint64_t *buf = api_alloc(8 * (REPOST_AHEAD + 1));
	struct ping_pong pp = {.msg = buf,
			       .rx = buf + 1,
			       .ahead = REPOST_AHEAD,
			       .tag = 0x7000u,
			       .counting = repost_counting};

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 8 * (REPOST_AHEAD + 1),
				 RMCA_ACCESS_LOCAL, &pp.mr));
	ping_pong_post(p, &pp);
	if (p->is_server)
		api_token(p, 0, API_TOKEN_GO);
	else
		api_expect_token(p, 0, API_TOKEN_GO);
	ping_pong_run(p, &pp);
	vi_counting = false;
	fprintf(stderr,
		"# %s: %ld ibv_post_recv calls, %ld receive work requests, "
		"for %d receives reposted\n",
		p->is_server ? "server" : "client", recv_posts, recv_wrs,
		PINGS);
	/* Before, each receive went to the device alone at the next pass:
	 * one call per message. Now one per batch of 16, while at least 32
	 * wait on the queue; all but the last batch's reach the device. */
	API_CHECK_MSG(recv_posts <= PINGS / 8,
		      "%s: %ld ibv_post_recv calls for %d receives",
		      p->is_server ? "server" : "client", recv_posts, PINGS);
	API_CHECK_MSG(recv_wrs >= PINGS - 16,
		      "%s: %ld of %d receives reached the device",
		      p->is_server ? "server" : "client", recv_wrs, PINGS);
	if (p->is_server)
		api_expect_token(p, 0, API_TOKEN_GO);
	else
		api_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(pp.mr));
	free(buf);
}

static void test_ping_pong_reposts_receives_in_batches(void **state)
{
	const struct api_test t = {.server = repost_side,
				   .client = repost_side};

	(void)state;
	api_run(&t);
}

/* ---- puts posted one call at a time ---- */

#define NPUT	   600
#define PUT_WINDOW 64

/* n 8-byte ops from src, rmca_put into r (or rmca_send when r is NULL),
 * posted one call at a time with at most PUT_WINDOW out (contexts
 * 0x100 + i); each completes once, RMCA_OK. what names them. */
static void post_windowed(struct api_peer *p, const uint64_t *src, int n,
			  rmca_mr_t *mr, const struct api_region *r,
			  const char *what)
{
	bool *seen = calloc((size_t)n, sizeof(*seen));
	int posted = 0, done = 0;
	long end = api_now_ms() + 4 * API_TIMEOUT_MS;

	API_CHECK(seen != NULL);
	while (done < n) {
		int k;

		API_CHECK_MSG(api_now_ms() < end, "%d of %d %ss completed",
			      done, n, what);
		if (posted < n && posted - done < PUT_WINDOW) {
			void *ctx = API_CTX(0x100 + posted);

			API_CHECK_OK(API_POST(
				p, r ? rmca_put(p->ep, src + posted, 8, mr,
						r->addr + (uint64_t)posted * 8,
						r->rkey, 0, ctx)
				     : rmca_send(p->ep, src + posted, 8, mr,
						 ctx)));
			posted++;
			continue;
		}
		api_progress(p);
		k = api_stashed();
		for (int i = 0; i < k; i++) {
			const struct rmca_completion *c = api_stash_at(i);
			long j = (long)(uintptr_t)c->user_ctx - 0x100;

			API_CHECK_MSG(j >= 0 && j < posted && !seen[j],
				      "completion of %p: not one of the %ss "
				      "out, or twice",
				      c->user_ctx, what);
			API_CHECK_MSG(c->status == RMCA_OK, "%s %ld: %s", what,
				      j, api_strerror(c->status));
			seen[j] = true;
			done++;
		}
		api_stash_clear();
	}
	free(seen);
}

static void put_server(struct api_peer *p)
{
	uint64_t *dst = api_alloc(NPUT * 8);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, dst, NPUT * 8,
				 RMCA_ACCESS_LOCAL | RMCA_ACCESS_REMOTE_WRITE,
				 &mr));
	api_put_region(p, 0, dst, NPUT * 8, mr, p->ep);
	api_expect_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < NPUT; i++)
		API_CHECK_MSG(dst[i] == 0x5000ull + (uint64_t)i,
			      "put %d left %#llx", i,
			      (unsigned long long)dst[i]);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(dst);
}

static void put_client(struct api_peer *p)
{
	uint64_t *src = api_alloc(NPUT * 8);
	struct api_region r;
	rmca_mr_t *mr;

	for (int i = 0; i < NPUT; i++)
		src[i] = 0x5000ull + (uint64_t)i;
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, src, NPUT * 8, RMCA_ACCESS_LOCAL, &mr));
	api_get_region(p, 0, &r);
	send_wrs = signalled = 0;
	vi_counting = true;
	post_windowed(p, src, NPUT, mr, &r, "put");
	vi_counting = false;
	/* puts without RMCA_DELIVERED: a flush puts them in place */
	API_CHECK_OK(rmca_flush(p->ep, API_CTX(1)));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	api_token(p, 0, API_TOKEN_GO);
	/* Before, every one of them was signalled: nothing later was known
	 * to be. Now once per 32 work requests, or where the stream paused
	 * with no signalled one out (a READ then retires the rest). */
	API_CHECK_MSG(send_wrs >= NPUT && signalled <= NPUT / 8,
		      "%d puts: %ld work requests posted, %ld signalled", NPUT,
		      send_wrs, signalled);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(src);
}

static void test_put_stream_is_signalled_once_in_many(void **state)
{
	const struct api_test t = {.server = put_server, .client = put_client};

	(void)state;
	api_run(&t);
}

/* ---- page-sized work requests: signalled on siw ---- */

/*
 * siw (Linux 6.1) transmits an unsignalled WR of a page or more straight
 * from the user's pages, which in the guest took a 4 KiB message 2.5x as
 * long as one siw copies; rmca signals those on siw (the only iWARP device
 * here), and on ib they stay in the usual stream rule (once in many).
 */
#define NBIG	48
#define BIG	4096
#define BIG_WIN 8

static void big_server(struct api_peer *p)
{
	char *msg = api_alloc((size_t)NBIG * BIG);
	char *dst = api_alloc((size_t)NBIG * BIG);
	rmca_mr_t *mmr, *dmr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, (size_t)NBIG * BIG,
				 RMCA_ACCESS_LOCAL, &mmr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, dst, (size_t)NBIG * BIG,
				 RMCA_ACCESS_LOCAL | RMCA_ACCESS_REMOTE_WRITE,
				 &dmr));
	api_put_region(p, 0, dst, (size_t)NBIG * BIG, dmr, p->ep);
	for (int i = 0; i < NBIG; i++)
		API_CHECK_OK(
			API_POST(p, rmca_recv(p->ep, msg + (size_t)i * BIG, BIG,
					      mmr, API_CTX(0x100 + i))));
	api_progress(p);
	api_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < NBIG; i++) {
		struct rmca_completion c;

		api_wait(p, API_CTX(0x100 + i), &c);
		API_CHECK_MSG(c.status == RMCA_OK && c.len == BIG,
			      "message %d: %s, %zu bytes", i,
			      api_strerror(c.status), c.len);
		API_CHECK_MSG(api_pattern_check(msg + (size_t)i * BIG, BIG,
						(unsigned)i) < 0,
			      "message %d arrived changed", i);
	}
	api_expect_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < NBIG; i++)
		API_CHECK_MSG(api_pattern_check(dst + (size_t)i * BIG, BIG,
						(unsigned)(NBIG + i)) < 0,
			      "put %d arrived changed", i);
	API_CHECK_OK(rmca_mr_dereg(mmr));
	API_CHECK_OK(rmca_mr_dereg(dmr));
	free(msg);
	free(dst);
}

/* n ops of BIG bytes from src, at most BIG_WIN out; puts when r is set. */
static void big_stream(struct api_peer *p, char *src, rmca_mr_t *mr,
		       const struct api_region *r, unsigned seed0)
{
	int posted = 0, done = 0;

	while (done < NBIG) {
		if (posted < NBIG && posted - done < BIG_WIN) {
			char *b = src + (size_t)posted * BIG;
			void *ctx = API_CTX(0x100 + posted);

			api_pattern(b, BIG, seed0 + (unsigned)posted);
			API_CHECK_OK(API_POST(
				p,
				r ? rmca_put(p->ep, b, BIG, mr,
					     r->addr + (uint64_t)posted * BIG,
					     r->rkey, 0, ctx)
				  : rmca_send(p->ep, b, BIG, mr, ctx)));
			posted++;
			continue;
		}
		api_wait_status(p, API_CTX(0x100 + done), RMCA_OK);
		done++;
	}
}

static void big_client(struct api_peer *p)
{
	char *src = api_alloc((size_t)NBIG * BIG);
	bool siw = !strcmp(api_transport(), "iwarp");
	struct api_region r;
	rmca_mr_t *mr;
	long sends, puts;

	API_CHECK_OK(rmca_mr_reg(p->ctx, src, (size_t)NBIG * BIG,
				 RMCA_ACCESS_LOCAL, &mr));
	api_get_region(p, 0, &r);
	api_expect_token(p, 0, API_TOKEN_GO);
	big_wrs = big_sig = 0;
	vi_counting = true;
	big_stream(p, src, mr, NULL, 0);
	vi_counting = false;
	sends = big_sig;
	API_CHECK_MSG(big_wrs == NBIG,
		      "%d sends of %d bytes: %ld WRs of a "
		      "page or more",
		      NBIG, BIG, big_wrs);
	big_wrs = big_sig = 0;
	vi_counting = true;
	big_stream(p, src, mr, &r, NBIG);
	vi_counting = false;
	puts = big_sig;
	API_CHECK_MSG(big_wrs == NBIG,
		      "%d puts of %d bytes: %ld WRs of a "
		      "page or more",
		      NBIG, BIG, big_wrs);
	API_CHECK_OK(rmca_flush(p->ep, API_CTX(1)));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	api_token(p, 0, API_TOKEN_GO);
	fprintf(stderr,
		"# %d sends, %d puts of %d bytes: %ld and %ld "
		"signalled\n",
		NBIG, NBIG, BIG, sends, puts);
	if (siw)
		API_CHECK_MSG(sends == NBIG && puts == NBIG,
			      "siw: %ld of %d sends and %ld of %d puts of a "
			      "page signalled, not every one",
			      sends, NBIG, puts, NBIG);
	else
		API_CHECK_MSG(sends < NBIG / 2 && puts < NBIG / 2,
			      "%s: %ld of %d sends and %ld of %d puts of a "
			      "page signalled: the stream rule holds there",
			      api_transport(), sends, NBIG, puts, NBIG);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(src);
}

static void test_page_sized_wrs_are_signalled_on_siw_only(void **state)
{
	const struct api_test t = {.server = big_server, .client = big_client};

	(void)state;
	api_run(&t);
}

/* ---- a stream of sends to a receiver 512 receives ahead ---- */

/* perftest's receive depth (ib_send_bw -r): posted before the first message
 * arrives, and kept posted, each receive posted again as its message is
 * checked (whole, in order). */
#define RECV_AHEAD 512
#define NSEND	   1200

static void msg_server(struct api_peer *p)
{
	uint64_t *dst = api_alloc(NSEND * 8);
	int posted = 0, done = 0;
	rmca_mr_t *mr;
	long end;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, dst, NSEND * 8, RMCA_ACCESS_LOCAL, &mr));
	/* before: the 257th said RMCA_ERR_AGAIN until the test gave up (a
	 * receive queue of 128, as many again waiting) */
	for (; posted < RECV_AHEAD; posted++)
		API_CHECK_OK(API_POST(p, rmca_recv(p->ep, dst + posted, 8, mr,
						   API_CTX(0x100 + posted))));
	api_progress(p);
	api_token(p, 0, API_TOKEN_GO);
	end = api_now_ms() + 4 * API_TIMEOUT_MS;
	while (done < NSEND) {
		struct rmca_completion c;

		API_CHECK_MSG(api_now_ms() < end, "%d of %d messages came",
			      done, NSEND);
		if (!api_take(API_CTX(0x100 + done), &c)) {
			api_progress(p);
			continue;
		}
		API_CHECK_MSG(c.status == RMCA_OK && c.len == 8,
			      "receive %d: %s, %zu bytes", done,
			      api_strerror(c.status), c.len);
		API_CHECK_MSG(dst[done] == 0x9000ull + (uint64_t)done,
			      "message %d arrived as %#llx", done,
			      (unsigned long long)dst[done]);
		done++;
		if (posted < NSEND) {
			API_CHECK_OK(API_POST(
				p, rmca_recv(p->ep, dst + posted, 8, mr,
					     API_CTX(0x100 + posted))));
			posted++;
		}
	}
	api_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(dst);
}

static void msg_client(struct api_peer *p)
{
	uint64_t *src = api_alloc(NSEND * 8);
	rmca_mr_t *mr;

	for (int i = 0; i < NSEND; i++)
		src[i] = 0x9000ull + (uint64_t)i;
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, src, NSEND * 8, RMCA_ACCESS_LOCAL, &mr));
	api_expect_token(p, 0, API_TOKEN_GO);
	msgs = sig_msgs = reads = 0;
	lastmsg = 0;
	vi_counting = true;
	post_windowed(p, src, NSEND, mr, NULL, "send");
	vi_counting = false;
	api_expect_token(p, 0, API_TOKEN_GO);
	/* The peer's counter is read when half of what the last READ found
	 * is used: about once per 256 messages here. On ib a READ of it also
	 * retires unsignalled sends where the window filled behind the last
	 * signalled one; on iWARP one confirms each CONFIRM_BATCH (32) sends
	 * no reply confirms (before, one went behind the next send whenever
	 * none was out: about one per round trip). */
	fprintf(stderr, "# %d sends: %ld signalled, %ld READs\n", NSEND,
		sig_msgs, reads);
	API_CHECK_MSG(msgs == NSEND && reads <= NSEND / 16,
		      "%d sends in a window of %d: %ld messages posted, %ld "
		      "signalled, %ld READs",
		      NSEND, PUT_WINDOW, msgs, sig_msgs, reads);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(src);
}

static void test_send_stream_reads_the_count_seldom(void **state)
{
	const struct api_test t = {.server = msg_server, .client = msg_client};

	(void)state;
	api_run(&t);
}

/* ---- replies later than a millisecond confirm the sends ---- */

#define NSLOW	40
#define SLOW_MS 4

/* Answers each message SLOW_MS after it came, as a peer that works
 * before it replies (or a qemu guest's scheduler) does. */
static void slow_server(struct api_peer *p)
{
	uint64_t *buf = api_alloc(8 * (NSLOW + 1));
	const struct timespec d = {.tv_nsec = SLOW_MS * 1000000L};
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 8 * (NSLOW + 1),
				 RMCA_ACCESS_LOCAL, &mr));
	/* all the receives first: no send waits for a credit */
	for (int i = 0; i < NSLOW; i++)
		API_CHECK_OK(rmca_recv(p->ep, buf + 1 + i, 8, mr,
				       API_CTX(0x100 + i)));
	api_progress(p);
	api_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < NSLOW; i++) {
		struct timespec left = d;

		api_wait_status(p, API_CTX(0x100 + i), RMCA_OK);
		/* never sooner: slow_client counts on it */
		while (nanosleep(&left, &left))
			;
		API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(2)));
		api_wait_status(p, API_CTX(2), RMCA_OK);
	}
	api_expect_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

/* How many prefetching READs n credits take at most: the next goes when
 * half of what the last one found is left, and the peer posts no more
 * (n/2, n/4, ... 1). */
static int halvings(int n)
{
	int k = 0;

	for (n /= 2; n; n /= 2)
		k++;
	return k;
}

static void slow_client(struct api_peer *p)
{
	uint64_t *buf = api_alloc(8 * (NSLOW + 1));
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 8 * (NSLOW + 1),
				 RMCA_ACCESS_LOCAL, &mr));
	for (int i = 0; i < NSLOW; i++)
		API_CHECK_OK(rmca_recv(p->ep, buf + 1 + i, 8, mr,
				       API_CTX(0x100 + i)));
	api_progress(p);
	api_expect_token(p, 0, API_TOKEN_GO);
	msgs = reads = send_reads = early_reads = 0;
	lastmsg = 0;
	/* the first send's post returns after its reply came (before: that
	 * reply was timed from the post's return, as taking nearly no time,
	 * and the next sends got 1 ms before a READ confirmed each) */
	slow_posts = 1;
	slow_post_ns = 3 * SLOW_MS * 1000000LL;
	timing_reads = vi_counting = true;
	for (int i = 0; i < NSLOW; i++) {
		/* the first reply tells how long replies take */
		early_ns = i ? 2 * SLOW_MS * 1000000LL : 0;
		send_ns = now_ns();
		in_send = true;
		API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(2)));
		in_send = false;
		api_wait_status(p, API_CTX(0x100 + i), RMCA_OK);
		api_wait_status(p, API_CTX(2), RMCA_OK);
	}
	timing_reads = vi_counting = false;
	slow_posts = 0;
	api_token(p, 0, API_TOKEN_GO);
	fprintf(stderr,
		"# %d round trips: %ld READs, %ld of them with a send, %ld "
		"sooner than %d ms after one\n",
		NSLOW, reads, send_reads, early_reads, 2 * SLOW_MS);
	/*
	 * iWARP: each reply confirms the send before it once the sender has
	 * seen how long replies take: a READ confirms a send only when its
	 * reply is later than twice what replies took lately, and no reply
	 * comes sooner than SLOW_MS. So no READ goes while a reply is
	 * awaited sooner than 2 * SLOW_MS after its send (before: 1 ms
	 * after each send); a starved guest makes replies later, and the
	 * READs it causes then are right, so they are not counted. ib sends
	 * complete by themselves.
	 * Both: the READs that go with a send are for credits: the first
	 * send finds none known, and the peer's count (NSLOW receives) never
	 * grows, so a READ goes each time half of what the last found is
	 * used (the READs above read the count too, and only halve it
	 * sooner).
	 */
	API_CHECK_MSG(msgs == NSLOW && early_reads == 0 &&
			      send_reads <= 1 + halvings(NSLOW),
		      "%d round trips with replies %d ms late: %ld messages "
		      "posted, %ld READs, %ld of them sooner than %d ms after "
		      "a send, %ld with a send (at most %d)",
		      NSLOW, SLOW_MS, msgs, reads, early_reads, 2 * SLOW_MS,
		      send_reads, 1 + halvings(NSLOW));
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void test_late_replies_confirm_sends_without_reads(void **state)
{
	const struct api_test t = {.server = slow_server,
				   .client = slow_client};

	(void)state;
	api_run(&t);
}

/* ---- after a late reply, the next sends wait for their replies ---- */

#define NLATE_RT   80
#define LATE_EVERY 8
#define LATE_AT	   3 /* its send is not one timed for its reply (seq 4) */
#define LATE_MS	   40

/* Answers every message at once but one in LATE_EVERY, which it answers
 * LATE_MS later: later than a confirming READ of its send. */
static void late_server(struct api_peer *p)
{
	uint64_t *buf = api_alloc(8 * (NLATE_RT + 1));
	const struct timespec d = {.tv_nsec = LATE_MS * 1000000L};
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 8 * (NLATE_RT + 1),
				 RMCA_ACCESS_LOCAL, &mr));
	/* all the receives first: no send waits for a credit */
	for (int i = 0; i < NLATE_RT; i++)
		API_CHECK_OK(rmca_recv(p->ep, buf + 1 + i, 8, mr,
				       API_CTX(0x100 + i)));
	api_progress(p);
	api_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < NLATE_RT; i++) {
		struct timespec left = d;
		long polls = 0;

		spin_wait(p, API_CTX(0x100 + i), &polls);
		while (i % LATE_EVERY == LATE_AT && nanosleep(&left, &left))
			;
		API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(2)));
		spin_wait(p, API_CTX(2), &polls);
	}
	api_expect_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void late_client(struct api_peer *p)
{
	uint64_t *buf = api_alloc(8 * (NLATE_RT + 1));
	long polls = 0;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 8 * (NLATE_RT + 1),
				 RMCA_ACCESS_LOCAL, &mr));
	for (int i = 0; i < NLATE_RT; i++)
		API_CHECK_OK(rmca_recv(p->ep, buf + 1 + i, 8, mr,
				       API_CTX(0x100 + i)));
	api_progress(p);
	api_expect_token(p, 0, API_TOKEN_GO);
	msgs = reads = send_reads = early_reads = 0;
	lastmsg = 0;
	/* a READ sooner than this after a send went at once (at the next
	 * empty poll); one for a late reply waits confirm_wait, 1 ms or
	 * more */
	early_ns = 1000000LL;
	timing_reads = vi_counting = true;
	for (int i = 0; i < NLATE_RT; i++) {
		send_ns = now_ns();
		in_send = true;
		API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(2)));
		in_send = false;
		spin_wait(p, API_CTX(0x100 + i), &polls);
		spin_wait(p, API_CTX(2), &polls);
	}
	timing_reads = vi_counting = false;
	api_token(p, 0, API_TOKEN_GO);
	fprintf(stderr,
		"# %d round trips, %d replies %d ms late: %ld READs, %ld "
		"sooner than 1 ms after a send, %ld with a send\n",
		NLATE_RT, NLATE_RT / LATE_EVERY, LATE_MS, reads, early_reads,
		send_reads);
	/*
	 * iWARP: a late reply's send is confirmed by a READ (after
	 * confirm_wait), and the reply, when it comes, covers every send:
	 * the next sends wait for their replies again. Before, the READ
	 * left the connection "late" until a timed send's reply came (one
	 * in 8), and each send until then took a READ at the caller's next
	 * empty poll: on siw a READ's response goes from the peer's kernel
	 * thread, and the peer's next message waits behind it. ib sends
	 * complete by themselves.
	 */
	API_CHECK_MSG(early_reads <= NLATE_RT / LATE_EVERY / 5,
		      "%d round trips, %d replies %d ms late: %ld READs "
		      "sooner than 1 ms after a send (%ld in all)",
		      NLATE_RT, NLATE_RT / LATE_EVERY, LATE_MS, early_reads,
		      reads);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void test_after_a_late_reply_sends_wait_for_replies(void **state)
{
	const struct api_test t = {.server = late_server,
				   .client = late_client};

	(void)state;
	api_run(&t);
}

/* ---- sends before the peer's receives: no RNR NAK ---- */

#define NMSG 8

/* The device's count of RNR NAKs received (rxe has the counter). */
static long rnr_naks(struct api_peer *p)
{
	struct rmca_ep_attr a;
	char path[160];
	long v = -1;
	FILE *f;

	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/rcvd_rnr_err",
		 a.device);
	f = fopen(path, "r");
	API_CHECK_MSG(f, "%s: no RNR counter", path);
	API_CHECK_MSG(fscanf(f, "%ld", &v) == 1, "%s: not a number", path);
	fclose(f);
	return v;
}

static void early_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NMSG * 8);
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NMSG * 8, RMCA_ACCESS_LOCAL, &mr));
	api_expect_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < NMSG; i++)
		API_CHECK_OK(
			rmca_recv(p->ep, buf + 8 * i, 8, mr, API_CTX(1 + i)));
	for (int i = 0; i < NMSG; i++) {
		uint64_t v;

		api_wait_status(p, API_CTX(1 + i), RMCA_OK);
		memcpy(&v, buf + 8 * i, 8);
		API_CHECK_MSG(v == (uint64_t)i, "message %d arrived as %llu", i,
			      (unsigned long long)v);
	}
	api_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void early_client(struct api_peer *p)
{
	uint64_t *buf = api_alloc(NMSG * 8);
	long before = rnr_naks(p), after;
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NMSG * 8, RMCA_ACCESS_LOCAL, &mr));
	for (int i = 0; i < NMSG; i++) {
		buf[i] = (uint64_t)i;
		API_CHECK_OK(rmca_send(p->ep, buf + i, 8, mr, API_CTX(1 + i)));
	}
	/* time for a send posted now to reach the peer's empty receive
	 * queue (not a timed assertion: nothing below depends on it) */
	api_progress_for(p, 200);
	api_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < NMSG; i++)
		api_wait_status(p, API_CTX(1 + i), RMCA_OK);
	api_expect_token(p, 0, API_TOKEN_GO);
	after = rnr_naks(p);
	API_CHECK_MSG(after == before,
		      "%ld RNR NAKs: a send went before the peer had a "
		      "receive posted",
		      after - before);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void test_sends_before_receives_wait_without_rnr(void **state)
{
	const struct api_test t = {.server = early_server,
				   .client = early_client};

	(void)state;
	if (!strcmp(api_transport(), "iwarp"))
		TAP_SKIP("iWARP has no RNR: its sends always waited for "
			 "credits");
	api_run(&t);
}

/* ---- a ping-pong's replies carry the credits ---- */

/*
 * Each side keeps one receive posted, reposted before its answer: every
 * send needs the receive the peer posted since its last message. The
 * reply that follows that repost says so (ib: its immediate; iWARP: the
 * header's count of receives), so no send waits for a READ of the peer's
 * count. Before, iWARP messages carried no count and every send of this
 * ping-pong read it from inside rmca_send (on siw the READ's response
 * leaves from the peer's kernel thread, ahead of its next message). The
 * READs a late reply brings (a confirmation, from a later pass) are not
 * counted: only those posted inside rmca_send.
 */
static void credit_counting(void)
{
	reads = send_reads = 0;
	timing_reads = vi_counting = true;
	early_ns = 0;
}

static void credit_before_send(void)
{
	in_send = true;
}

static void credit_after_send(void)
{
	in_send = false;
}

static void credit_side(struct api_peer *p)
{
	uint64_t *buf = api_alloc(16);
	const char *side = p->is_server ? "server" : "client";
	struct ping_pong pp = {.msg = buf,
			       .rx = buf + 1,
			       .ahead = 1,
			       .tag = 0x5000u,
			       .counting = credit_counting,
			       .before_send = credit_before_send,
			       .after_send = credit_after_send};

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 16, RMCA_ACCESS_LOCAL, &pp.mr));
	ping_pong_post(p, &pp);
	if (p->is_server)
		api_token(p, 0, API_TOKEN_GO);
	else
		api_expect_token(p, 0, API_TOKEN_GO);
	ping_pong_run(p, &pp);
	timing_reads = vi_counting = false;
	fprintf(stderr,
		"# %s: %d round trips, one receive posted: %ld READs inside "
		"rmca_send (%ld in all)\n",
		side, PINGS, send_reads, reads);
	API_CHECK_MSG(send_reads == 0,
		      "%s: %ld of %d sends read the peer's count of receives",
		      side, send_reads, PINGS);
	if (p->is_server)
		api_expect_token(p, 0, API_TOKEN_GO);
	else
		api_token(p, 0, API_TOKEN_GO);
	/* the last receive posted, never filled */
	API_CHECK_OK(rmca_mr_dereg(pp.mr));
	free(buf);
}

static void test_ping_pong_replies_carry_the_credits(void **state)
{
	const struct api_test t = {.server = credit_side,
				   .client = credit_side};

	(void)state;
	api_run(&t);
}

/* ---- a send a reply confirmed completes RMCA_OK, once ---- */

/* round trips the client may make before one shows what it checks */
#define CONFIRM_ROUNDS 20

/* Answers each message with its value + 1 until the client closes. */
static void confirmed_server(struct api_peer *p)
{
	uint64_t *buf = api_alloc(8 * (CONFIRM_ROUNDS + 1));
	struct rmca_completion c;
	int i, sent = 0;
	rmca_mr_t *mr;

	timer_setup(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 8 * (CONFIRM_ROUNDS + 1),
				 RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < CONFIRM_ROUNDS; i++)
		API_CHECK_OK(rmca_recv(p->ep, buf + 1 + i, 8, mr,
				       API_CTX(0x100 + i)));
	api_progress(p);
	api_token(p, 0, API_TOKEN_GO);
	for (i = 0; i < CONFIRM_ROUNDS; i++) {
		while (!api_take(API_CTX(0x100 + i), &c))
			api_progress(p);
		if (c.status != RMCA_OK)
			break; /* the client closed */
		buf[0] = buf[1 + i] + 1;
		API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(0x300)));
		sent++;
		/* one reply at a time: buf[0] is its source. Whether the last
		 * was confirmed before the client closed is not said (an
		 * error may still have been delivered) */
		while (!api_take(API_CTX(0x300), &c))
			api_progress(p);
	}
	/* what is left after the close completes, whatever its status */
	for (i++; i < CONFIRM_ROUNDS; i++)
		while (!api_take(API_CTX(0x100 + i), &c))
			api_progress(p);
	API_CHECK(sent > 0);
	API_CHECK_OK(rmca_mr_dereg(mr));
	timer_finish(p);
	free(buf);
}

/*
 * The reply's header confirms the client's send. A client that spins
 * gets the send's completion at its next pass, after the reply's (on
 * iWARP: off the path from the reply's arrival to the answer's doorbell),
 * unless a READ confirmed the send first (the reply took longer than
 * confirm_wait: the interposer counts the READs). Closing the endpoint
 * before that pass still completes the send RMCA_OK, once: it was
 * delivered, and the close cancels only what was not.
 */
static void confirmed_client(struct api_peer *p)
{
	uint64_t *buf = api_alloc(8 * (CONFIRM_ROUNDS + 1));
	bool iwarp = !strcmp(api_transport(), "iwarp"), early = true;
	struct rmca_completion c = {0};
	long polls = 0;
	int i, read_rounds = 0;
	rmca_mr_t *mr;

	/* a context whose wait fd nobody asked for (timer_setup): nobody
	 * may sleep, the caller spins */
	timer_setup(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 8 * (CONFIRM_ROUNDS + 1),
				 RMCA_ACCESS_LOCAL, &mr));
	api_expect_token_deaf(p, 0, API_TOKEN_GO);
	for (i = 0; i < CONFIRM_ROUNDS && early; i++) {
		API_CHECK_OK(rmca_recv(p->ep, buf + 1 + i, 8, mr,
				       API_CTX(0x100 + i)));
		buf[0] = 0x5e90 + (uint64_t)i;
		reads = 0;
		vi_counting = true;
		API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(0x200 + i)));
		spin_wait(p, API_CTX(0x100 + i), &polls);
		vi_counting = false;
		API_CHECK_MSG(buf[1 + i] == 0x5e91 + (uint64_t)i,
			      "reply %d says %#llx", i,
			      (unsigned long long)buf[1 + i]);
		early = api_take(API_CTX(0x200 + i), &c);
		read_rounds += reads > 0;
		/* ib: the device completes the send on the peer's
		 * acknowledgement, which may come before or after the
		 * reply */
		if (iwarp && !reads)
			API_CHECK_MSG(!early, "round trip %d: the send "
					      "completed in the pass of its "
					      "reply, ahead of the answer",
				      i);
		if (early)
			API_CHECK_MSG(c.status == RMCA_OK, "send %d: %s", i,
				      api_strerror(c.status));
	}
	fprintf(stderr, "# %d round trips, %d with a READ\n", i, read_rounds);
	/* iWARP: every round trip had its send confirmed by a READ ahead
	 * of the reply, and none showed the completion after the reply */
	API_CHECK_MSG(!iwarp || !early,
		      "%d round trips, each with a READ ahead of its reply",
		      i);
	rmca_ep_close(p->ep);
	p->ep = NULL;
	if (!early) {
		while (!api_take(API_CTX(0x200 + i - 1), &c))
			api_progress(p);
		API_CHECK_MSG(c.status == RMCA_OK,
			      "the send the reply confirmed completed %s",
			      api_strerror(c.status));
	}
	for (int k = 0; k < 100; k++)
		api_progress(p);
	API_CHECK_MSG(!api_take(API_CTX(0x200 + i - 1), &c),
		      "the send completed twice, the second time %s",
		      api_strerror(c.status));
	API_CHECK_OK(rmca_mr_dereg(mr));
	timer_finish(p);
	free(buf);
}

static void test_send_a_reply_confirmed_completes_once_ok(void **state)
{
	const struct api_test t = {.server = confirmed_server,
				   .client = confirmed_client,
				   .manual = true};

	(void)state;
	api_run(&t);
}

/* ---- a stream of sends reads credits before they run out ---- */

#define NSTREAM 64

static void stream_server(struct api_peer *p)
{
	uint64_t *buf = api_alloc(NSTREAM * 8);
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NSTREAM * 8, RMCA_ACCESS_LOCAL, &mr));
	for (int i = 0; i < NSTREAM; i++)
		API_CHECK_OK(rmca_recv(p->ep, buf + i, 8, mr, API_CTX(1 + i)));
	/* the receives batched behind the first ones reach the device */
	api_progress(p);
	api_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < NSTREAM; i++) {
		api_wait_status(p, API_CTX(1 + i), RMCA_OK);
		API_CHECK_MSG(buf[i] == 0x700ull + (uint64_t)i,
			      "message %d arrived as %#llx", i,
			      (unsigned long long)buf[i]);
	}
	api_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void stream_client(struct api_peer *p)
{
	uint64_t *buf = api_alloc(NSTREAM * 8);
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NSTREAM * 8, RMCA_ACCESS_LOCAL, &mr));
	api_expect_token(p, 0, API_TOKEN_GO);
	msgs = reads_mid = 0;
	lastmsg = NSTREAM;
	vi_counting = true;
	/* The first send finds no credit known: it and all behind it wait
	 * for a READ of the peer's count, which says NSTREAM. */
	for (int i = 0; i < NSTREAM; i++) {
		buf[i] = 0x700ull + (uint64_t)i;
		API_CHECK_OK(rmca_send(p->ep, buf + i, 8, mr, API_CTX(1 + i)));
	}
	for (int i = 0; i < NSTREAM; i++)
		api_wait_status(p, API_CTX(1 + i), RMCA_OK);
	vi_counting = false;
	api_expect_token(p, 0, API_TOKEN_GO);
	/* Sends had to wait for that READ: the next goes once half the
	 * credits are used, while the rest are sent (before: only when the
	 * next send found none left, and it waited a round trip). */
	API_CHECK_MSG(msgs == NSTREAM && reads_mid >= 1,
		      "%ld messages posted, %ld READs among them", msgs,
		      reads_mid);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void test_send_stream_reads_credits_before_they_run_out(void **state)
{
	const struct api_test t = {.server = stream_server,
				   .client = stream_client};

	(void)state;
	api_run(&t);
}

/* ---- module open on addresses no device serves ---- */

static int sh(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* In a child: a network namespace whose one address (on a dummy
 * interface) no RDMA device serves; rmca_init there with the device's
 * component. Exit 0 when it did not sleep, 1 when it did, 77 when the
 * namespace cannot be made here. */
static int open_without_device(void)
{
	rmca_context_t *ctx = NULL;
	int rc;

	if (unshare(CLONE_NEWNET))
		return API_EXIT_SKIP;
	if (sh("ip link add rmcat0 type dummy && "
	       "ip addr add 10.77.0.1/24 dev rmcat0 && "
	       "ip link set rmcat0 up"))
		return API_EXIT_SKIP;
	sleeps = 0;
	vi_counting = true;
	rc = rmca_init(&ctx);
	vi_counting = false;
	if (!rc)
		rmca_finalize(ctx);
	if (sleeps) {
		fprintf(stderr,
			"rmca_init slept %ld times on an address no device "
			"serves\n",
			sleeps);
		return 1;
	}
	return 0;
}

static void test_open_does_not_sleep_on_an_address_without_device(void **state)
{
	int st;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		TAP_SKIP("a network namespace needs root");
	fflush(NULL);
	pid = fork();
	API_CHECK(pid >= 0);
	if (!pid)
		_exit(open_without_device());
	API_CHECK(waitpid(pid, &st, 0) == pid);
	API_CHECK_MSG(WIFEXITED(st), "the child died (status %#x)", st);
	if (WEXITSTATUS(st) == API_EXIT_SKIP)
		TAP_SKIP("no network namespace with a dummy interface here");
	API_CHECK_MSG(WEXITSTATUS(st) == 0,
		      "module open slept on an address without a device");
}

/* ---- an immediate is no invalidated key ---- */

#define TOKEN_IMM  0x1a1
#define TOKEN_DONE 0xd0e

static void imm_server(struct api_peer *p)
{
	uint64_t *win = api_alloc(4096), *buf = api_alloc(64);
	struct rmca_completion c;
	rmca_mr_t *mw, *mr;
	uint64_t key;

	API_CHECK_OK(rmca_mr_reg(p->ctx, win, 4096,
				 RMCA_ACCESS_REMOTE_WRITE | RMCA_MR_USE_ONCE,
				 &mw));
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	key = rmca_mr_rkey(mw, p->ep); /* a window bound for this endpoint */
	API_CHECK_MSG(key != 0, "rmca_mr_rkey returned 0");
	API_CHECK_OK(rmca_recv(p->ep, buf, 64, mr, API_CTX(1)));
	/* the raw word, as the work completion holds either */
	forge_imm = (uint32_t)key;
	api_token(p, 0, TOKEN_IMM);
	api_wait(p, API_CTX(1), &c);
	API_CHECK_MSG(c.status == RMCA_OK, "receive: %s",
		      api_strerror(c.status));
	API_CHECK_MSG(forged == 1, "%d receives with an immediate seen",
		      forged);
	API_CHECK_MSG(c.revoked_rkey == 0,
		      "a message with an immediate revoked key %#llx (the "
		      "window's: %#llx)",
		      (unsigned long long)c.revoked_rkey,
		      (unsigned long long)key);
	/* the window is still the peer's to write */
	api_put_region(p, 0, win, 4096, mw, p->ep);
	api_expect_token(p, 0, TOKEN_DONE);
	API_CHECK_MSG(win[3] == 0x5eed, "the put through the window did not "
					"land");
	API_CHECK_OK(rmca_mr_dereg(mw));
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(win);
	free(buf);
}

static void imm_client(struct api_peer *p)
{
	uint64_t *buf = api_alloc(64);
	struct api_region r;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	api_expect_token(p, 0, TOKEN_IMM);
	buf[0] = 0xabc;
	api_send_wait(p, p->ep, buf, 8, mr);
	api_get_region(p, 0, &r);
	buf[1] = 0x5eed;
	API_CHECK_OK(rmca_put(p->ep, buf + 1, 8, mr, r.addr + 24, r.rkey,
			      RMCA_DELIVERED, API_CTX(2)));
	api_wait_status(p, API_CTX(2), RMCA_OK);
	api_token(p, 0, TOKEN_DONE);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void test_immediate_revokes_no_key(void **state)
{
	const struct api_test t = {.server = imm_server, .client = imm_client};

	(void)state;
	if (!strcmp(api_transport(), "iwarp"))
		TAP_SKIP("iWARP messages carry no immediate");
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping_pong_reads_no_idle_cm_channel),
		cmocka_unit_test(test_spinning_ping_pong_reads_the_cq_alone),
		cmocka_unit_test(test_ping_pong_reads_the_clock_after_the_post),
		cmocka_unit_test(test_spinning_ping_pong_arms_no_timer),
		cmocka_unit_test(test_ping_pong_reposts_receives_in_batches),
		cmocka_unit_test(test_put_stream_is_signalled_once_in_many),
		cmocka_unit_test(test_page_sized_wrs_are_signalled_on_siw_only),
		cmocka_unit_test(test_send_stream_reads_the_count_seldom),
		cmocka_unit_test(test_ping_pong_replies_carry_the_credits),
		cmocka_unit_test(test_send_a_reply_confirmed_completes_once_ok),
		cmocka_unit_test(test_late_replies_confirm_sends_without_reads),
		cmocka_unit_test(
			test_after_a_late_reply_sends_wait_for_replies),
		cmocka_unit_test(test_sends_before_receives_wait_without_rnr),
		cmocka_unit_test(
			test_send_stream_reads_credits_before_they_run_out),
		cmocka_unit_test(
			test_open_does_not_sleep_on_an_address_without_device),
		cmocka_unit_test(test_immediate_revokes_no_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
