/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the verbs components ask of the kernel, counted on a real device
 * (rxe0, siw0) inside the VM:
 *  - a ping-pong spinning on rmca_poll reads the rdma_cm event channel only
 *    when it has an event: rdma_get_cm_event is a system call (a command
 *    write() on the ucma fd) whether an event waits or not, and the
 *    channel's fd is in the context's epoll set;
 *  - opening the components on a host whose addresses no RDMA device
 *    serves does not sleep (a network namespace of its own, with a dummy
 *    interface: the answer for that address is ENODEV at once);
 *  - sends submitted before the peer posts its receives wait for them in
 *    rmca, not on the wire: on rxe the device counts no RNR NAK (each
 *    costs the sender the responder's RNR timer, 655 ms under rdma_cm).
 *
 * This program's own rdma_get_cm_event, nanosleep and clock_nanosleep come
 * first in the lookup scope (it is linked -rdynamic): the components call
 * these, which count, then the real ones.
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
#include <unistd.h>
#include <sys/wait.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "tap_skip.h"

struct rdma_event_channel;
struct rdma_cm_event;

static bool counting;
static long cm_reads, sleeps;

int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev);
int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	static int (*real)(struct rdma_event_channel *,
			   struct rdma_cm_event **);

	if (!real) {
		/* librdmacm came with a component, dlopen()ed: not in
		 * RTLD_NEXT's scope */
		void *h = dlopen("librdmacm.so.1", RTLD_NOW | RTLD_NOLOAD);

		real = (int (*)(struct rdma_event_channel *,
				struct rdma_cm_event **))
			dlsym(h ? h : RTLD_NEXT, "rdma_get_cm_event");
		if (!real)
			abort();
	}
	cm_reads += counting;
	return real(ch, ev);
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
	static int (*real)(const struct timespec *, struct timespec *);

	if (!real)
		real = (int (*)(const struct timespec *,
				struct timespec *))dlsym(RTLD_NEXT,
							 "nanosleep");
	sleeps += counting;
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
	sleeps += counting;
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
		api_progress(p);
		(*polls)++;
		if (!(*polls & 0xfff))
			API_CHECK_MSG(api_now_ms() < end, "ctx %p never came",
				      ctx);
	}
	API_CHECK_MSG(c.status == RMCA_OK, "ctx %p: %s", ctx,
		      api_strerror(c.status));
}

static void ping_side(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	long polls = 0;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	if (p->is_server)
		api_token(p, 0, API_TOKEN_GO);
	else
		api_expect_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < PINGS + WARMUP; i++) {
		if (i == WARMUP) {
			cm_reads = 0;
			polls = 0;
			counting = true;
		}
		API_CHECK_OK(rmca_recv(p->ep, buf + 32, 8, mr, API_CTX(1)));
		if (!p->is_server)
			API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(2)));
		spin_wait(p, API_CTX(1), &polls);
		if (p->is_server)
			API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(2)));
		spin_wait(p, API_CTX(2), &polls);
	}
	counting = false;
	/* No connection event comes in a ping-pong: before, every rmca_poll
	 * read the channel once. A few reads are left for an event that
	 * does come (a late one of the set-up). */
	API_CHECK_MSG(cm_reads <= 4,
		      "%s: %ld reads of the rdma_cm channel in %d round trips "
		      "(%ld rmca_poll calls)",
		      p->is_server ? "server" : "client", cm_reads, PINGS,
		      polls);
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

	const char *tr = getenv("RMCA_transports");

	(void)state;
	if (tr && !strcmp(tr, "iwarp"))
		TAP_SKIP("iWARP has no RNR: its sends always waited for "
			 "credits");
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
	counting = true;
	rc = rmca_init(&ctx);
	counting = false;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping_pong_reads_no_idle_cm_channel),
		cmocka_unit_test(test_sends_before_receives_wait_without_rnr),
		cmocka_unit_test(
			test_open_does_not_sleep_on_an_address_without_device),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
