/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contract: gets of at most 32 bytes. siw (Linux 6.1) may drop the
 * connection over an RDMA READ that short (doc/api.md), so a peer whose
 * device is siw has them answered by its core over the control channel
 * (path get_short: emulated); RMCA_<comp>_caps=^short_read forces that
 * path on any transport. Either way a get returns the target's bytes,
 * sees the puts posted before it, is refused RMCA_ERR_REMOTE_ACCESS where
 * the key does not allow it, and completes exactly once when the peer
 * dies. Which path a get took shows in its rail's count of operations
 * posted on the device (rmca_ep_query_rail): a get the target's core
 * answers is posted on none. And a caller that sleeps on rmca_wait_fd is
 * woken for such a get's answer, and a target for its request, a few
 * times per get, not kept spinning by an fd the core does not read.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rmca/component.h>
#include <rmca/info.h>

#include "api_util.h"

#define TOKEN_DONE   0xd0e
#define TOKEN_POSTED 0x905
#define RLEN	     4096
#define GUARD	     0xee

/* Each case runs once as the transport is (masked: false) and once with
 * short_read masked on every transport (both sides: children inherit),
 * over any mask the caller set. */
static void run_masked(const struct api_test *t, bool masked)
{
	/* a case that failed inside api_run left its mask */
	api_caps_mask_pop();
	if (masked)
		api_caps_mask_push("^short_read");
	api_run(t);
	api_caps_mask_pop();
}

/* Does the peer's core answer this endpoint's short gets? Both sides run
 * the same kind of device here, so the peer's module lacks short_read
 * exactly when this side's does (siw, or masked). */
static bool by_core(struct api_peer *p)
{
	struct rmca_info_module m;
	struct rmca_ep_attr a;

	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	for (int i = 0; !rmca_info_module(p->ctx, i, &m); i++)
		if (!strcmp(m.component, a.transport) &&
		    !strcmp(m.device, a.device))
			return !(m.caps & RMCA_CAP_SHORT_READ);
	/* the self module and others the info does not list: native */
	return false;
}

static uint64_t rail_ops(struct api_peer *p)
{
	struct rmca_ep_rail r;

	API_CHECK_OK(rmca_ep_query_rail(p->ep, 0, &r));
	return r.ops;
}

/* ---- the right bytes, at odd offsets, and the path taken ---- */

struct span {
	size_t roff, len, loff; /* remote offset, length, local offset */
};

static const struct span spans[] = {
	{1, 1, 3},	 {13, 7, 101},	  {4001, 8, 205}, {77, 31, 333},
	{2049, 32, 459}, {4063, 32, 601}, /* the region's last byte */
};
#define NSPANS (sizeof(spans) / sizeof(spans[0]))

static void bytes_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(RLEN);
	rmca_mr_t *mr;

	api_pattern(mem, RLEN, 61);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, mem, RLEN, RMCA_ACCESS_REMOTE_READ, &mr));
	api_put_region(p, 0, mem, RLEN, mr, p->ep);
	api_expect_token(p, 0, TOKEN_DONE);
	API_CHECK(api_pattern_check(mem, RLEN, 61) < 0);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(mem);
}

static void check_span(const uint8_t *dst, const uint8_t *want,
		       const struct span *s)
{
	API_CHECK_MSG(!memcmp(dst + s->loff, want + s->roff, s->len),
		      "get of %zu bytes at offset %zu: wrong bytes", s->len,
		      s->roff);
	API_CHECK_MSG(dst[s->loff - 1] == GUARD &&
			      dst[s->loff + s->len] == GUARD,
		      "get of %zu bytes at offset %zu wrote outside its buffer",
		      s->len, s->roff);
}

static void bytes_client(struct api_peer *p)
{
	uint8_t *dst = api_alloc(RLEN), *want = api_alloc(RLEN);
	bool core = by_core(p);
	struct span big = {3, 33, 901};
	struct api_region r;
	uint64_t ops0, ops1;
	rmca_mr_t *md;

	api_get_region(p, 0, &r);
	api_pattern(want, RLEN, 61);
	memset(dst, GUARD, RLEN);
	API_CHECK_OK(rmca_mr_reg(p->ctx, dst, RLEN, RMCA_ACCESS_LOCAL, &md));
	ops0 = rail_ops(p);
	/* all outstanding at once: answered in order, each into its own
	 * buffer */
	for (size_t i = 0; i < NSPANS; i++)
		API_CHECK_OK(API_POST(p, rmca_get(p->ep, dst + spans[i].loff,
						  spans[i].len, md,
						  r.addr + spans[i].roff,
						  r.rkey, API_CTX(1 + i))));
	for (size_t i = 0; i < NSPANS; i++)
		api_wait_status(p, API_CTX(1 + i), RMCA_OK);
	for (size_t i = 0; i < NSPANS; i++)
		check_span(dst, want, &spans[i]);
	ops1 = rail_ops(p);
	API_CHECK_MSG(ops1 - ops0 == (core ? 0 : NSPANS),
		      "%s path expected: %llu of %zu short gets posted on the "
		      "device",
		      core ? "the target's core" : "native",
		      (unsigned long long)(ops1 - ops0), NSPANS);
	/* 33 bytes: a READ on every device */
	API_CHECK_OK(
		API_POST(p, rmca_get(p->ep, dst + big.loff, big.len, md,
				     r.addr + big.roff, r.rkey, API_CTX(50))));
	api_wait_status(p, API_CTX(50), RMCA_OK);
	check_span(dst, want, &big);
	API_CHECK_MSG(rail_ops(p) - ops1 == 1,
		      "a get of 33 bytes did not go to the device");
	api_token(p, 0, TOKEN_DONE);
	API_CHECK_OK(rmca_mr_dereg(md));
	free(dst);
	free(want);
}

static void run_bytes(bool masked)
{
	const struct api_test t = {.server = bytes_server,
				   .client = bytes_client};

	run_masked(&t, masked);
}

static void test_short_gets_return_the_bytes(void **state)
{
	(void)state;
	run_bytes(false);
}

static void test_short_gets_by_the_core_return_the_bytes(void **state)
{
	(void)state;
	run_bytes(true);
}

/* ---- a get sees the puts posted before it ---- */

#define PLEN  (64 * 1024 + 5) /* long in flight: the get follows fast */
#define NPASS 40

static void order_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(PLEN + RLEN);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(
		p->ctx, mem, PLEN + RLEN,
		RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_region(p, 0, mem, PLEN + RLEN, mr, p->ep);
	api_expect_token(p, 0, TOKEN_DONE);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(mem);
}

static void order_client(struct api_peer *p)
{
	uint8_t *src = api_alloc(PLEN), *dst = api_alloc(RLEN);
	struct api_region r;
	rmca_mr_t *ms, *md;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, src, PLEN, RMCA_ACCESS_LOCAL, &ms));
	API_CHECK_OK(rmca_mr_reg(p->ctx, dst, RLEN, RMCA_ACCESS_LOCAL, &md));
	for (unsigned i = 0; i < NPASS; i++) {
		/* a long put, then at once a short get of its last bytes and
		 * one of a short put's posted right before it */
		size_t glen = 1 + i % 32, off = PLEN - glen;
		struct rmca_completion c;

		api_pattern(src, PLEN, 100 + i);
		API_CHECK_OK(API_POST(p, rmca_put(p->ep, src, PLEN, ms, r.addr,
						  r.rkey, 0, API_CTX(1))));
		API_CHECK_OK(API_POST(p, rmca_put(p->ep, src + 7, glen, ms,
						  r.addr + PLEN + 3, r.rkey, 0,
						  API_CTX(2))));
		memset(dst, GUARD, RLEN);
		API_CHECK_OK(API_POST(p, rmca_get(p->ep, dst + 1, glen, md,
						  r.addr + off, r.rkey,
						  API_CTX(3))));
		API_CHECK_OK(API_POST(p, rmca_get(p->ep, dst + 101, glen, md,
						  r.addr + PLEN + 3, r.rkey,
						  API_CTX(4))));
		for (int k = 1; k <= 4; k++) {
			api_wait(p, API_CTX(k), &c);
			API_CHECK_MSG(c.status == RMCA_OK,
				      "op %d of pass %u: %s", k, i,
				      api_strerror(c.status));
		}
		API_CHECK_MSG(!memcmp(dst + 1, src + off, glen),
			      "pass %u: a get of %zu bytes missed the put "
			      "posted before it",
			      i, glen);
		API_CHECK_MSG(!memcmp(dst + 101, src + 7, glen),
			      "pass %u: a get of %zu bytes missed the short "
			      "put posted before it",
			      i, glen);
	}
	api_token(p, 0, TOKEN_DONE);
	API_CHECK_OK(rmca_mr_dereg(ms));
	API_CHECK_OK(rmca_mr_dereg(md));
	free(src);
	free(dst);
}

static void run_order(bool masked)
{
	const struct api_test t = {.server = order_server,
				   .client = order_client};

	run_masked(&t, masked);
}

static void test_short_get_sees_earlier_puts(void **state)
{
	(void)state;
	run_order(false);
}

static void test_short_get_by_the_core_sees_earlier_puts(void **state)
{
	(void)state;
	run_order(true);
}

/* ---- refusals: out of range, wrapping, no read permission ---- */

#define NREFUSE 3

static void refuse_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(RLEN), *wo = api_alloc(RLEN);
	rmca_mr_t *mr, *mw;

	api_pattern(mem, RLEN, 62);
	api_pattern(wo, RLEN, 63);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, mem, RLEN, RMCA_ACCESS_REMOTE_READ, &mr));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, wo, RLEN, RMCA_ACCESS_REMOTE_WRITE, &mw));
	for (int i = 0; i < p->nclients; i++) {
		api_put_region(p, i, mem, RLEN, mr, p->eps[i]);
		api_put_region(p, i, wo, RLEN, mw, p->eps[i]);
	}
	for (int i = 0; i < p->nclients; i++)
		api_expect_token(p, i, TOKEN_DONE);
	API_CHECK(api_pattern_check(mem, RLEN, 62) < 0);
	API_CHECK(api_pattern_check(wo, RLEN, 63) < 0);
	API_CHECK_OK(rmca_mr_dereg(mr));
	API_CHECK_OK(rmca_mr_dereg(mw));
	free(mem);
	free(wo);
}

static void refuse_client(struct api_peer *p)
{
	uint8_t *dst = api_alloc(RLEN);
	struct api_region r, w;
	uint64_t raddr, rkey;
	const char *what;
	rmca_mr_t *md;

	api_get_region(p, 0, &r);
	api_get_region(p, 0, &w);
	memset(dst, GUARD, RLEN);
	API_CHECK_OK(rmca_mr_reg(p->ctx, dst, RLEN, RMCA_ACCESS_LOCAL, &md));
	switch (p->index) { /* one per client: a refusal fails the endpoint */
	case 0:
		what = "beyond the region's end";
		raddr = r.addr + r.len - 4;
		rkey = r.rkey;
		break;
	case 1:
		what = "at an address that wraps around";
		raddr = ~0ull - 3;
		rkey = r.rkey;
		break;
	default:
		what = "with a write-only key";
		raddr = w.addr + 8;
		rkey = w.rkey;
		break;
	}
	API_CHECK_OK(API_POST(
		p, rmca_get(p->ep, dst + 8, 8, md, raddr, rkey, API_CTX(1))));
	{
		struct rmca_completion c;

		api_wait(p, API_CTX(1), &c);
		API_CHECK_MSG(c.status == RMCA_ERR_REMOTE_ACCESS,
			      "a get of 8 bytes %s completed %d (%s)", what,
			      c.status, api_strerror(c.status));
	}
	for (size_t i = 0; i < RLEN; i++)
		API_CHECK_MSG(dst[i] == GUARD,
			      "a refused get wrote byte %zu of its buffer", i);
	api_token(p, 0, TOKEN_DONE);
	API_CHECK_OK(rmca_mr_dereg(md));
	free(dst);
}

static void run_refuse(bool masked)
{
	const struct api_test t = {.server = refuse_server,
				   .client = refuse_client,
				   .nclients = NREFUSE};

	run_masked(&t, masked);
}

static void test_short_gets_refused_touch_nothing(void **state)
{
	(void)state;
	run_refuse(false);
}

static void test_short_gets_refused_by_the_core_touch_nothing(void **state)
{
	(void)state;
	run_refuse(true);
}

/* ---- the peer dies with gets outstanding ---- */

#define NDEATH 6

static void death_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(RLEN);
	rmca_mr_t *mr;

	api_pattern(mem, RLEN, 64);
	API_CHECK_OK(rmca_mr_reg(
		p->ctx, mem, RLEN,
		RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_region(p, 0, mem, RLEN, mr, p->ep);
	/* deaf: the gets wait for this core, which never answers them */
	api_expect_token_deaf(p, 0, TOKEN_POSTED);
	_exit(0);
}

/* A get the target's core never answered fails; a device (rxe) may
 * have answered one itself before the peer died, with the right bytes. */
static void death_get_check(bool core, const struct rmca_completion *c, int k,
			    const uint8_t *buf, const uint8_t *want)
{
	size_t len = k < NDEATH ? 1 + (size_t)k : 32;
	size_t off = k < NDEATH ? 3 * (size_t)k : 1024;

	if (!core && c->status == RMCA_OK) {
		API_CHECK_MSG(!memcmp(buf + 64 * k, want + off, len),
			      "get %d answered with the wrong bytes", k);
		return;
	}
	API_CHECK_MSG(c->status == RMCA_ERR_CONNECTION,
		      "get %d after the peer died: %d (%s)", k, c->status,
		      api_strerror(c->status));
}

static void death_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(RLEN);
	long end = api_now_ms() + API_TIMEOUT_MS;
	int count[1 + NDEATH + 1] = {0};
	uint8_t *want = api_alloc(RLEN);
	struct api_region r;
	bool core;
	rmca_mr_t *mr;
	int k;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, RLEN, RMCA_ACCESS_LOCAL, &mr));
	core = by_core(p);
	api_pattern(want, RLEN, 64);
	memset(want + 1024, 0, 64); /* the put's bytes */
	/* sent at once, then one held behind the put's fence */
	for (k = 1; k < NDEATH; k++)
		API_CHECK_OK(rmca_get(p->ep, buf + 64 * k, 1 + k, mr,
				      r.addr + 3 * k, r.rkey, API_CTX(k)));
	API_CHECK_OK(rmca_put(p->ep, buf, 64, mr, r.addr + 1024, r.rkey, 0,
			      API_CTX(NDEATH + 1)));
	API_CHECK_OK(rmca_get(p->ep, buf + 64 * NDEATH, 32, mr, r.addr + 1024,
			      r.rkey, API_CTX(NDEATH)));
	api_token(p, 0, TOKEN_POSTED);
	for (;;) {
		int missing = 0;

		for (k = 1; k <= NDEATH + 1; k++) {
			struct rmca_completion c;

			while (api_take(API_CTX(k), &c)) {
				count[k]++;
				if (k <= NDEATH)
					death_get_check(core, &c, k, buf, want);
			}
			missing += !count[k];
		}
		if (!missing)
			break;
		API_CHECK_MSG(api_now_ms() < end,
			      "%d operations never completed", missing);
		if (!api_progress(p))
			api_sleep_ms(1);
	}
	api_progress_for(p, 200);
	for (k = 1; k <= NDEATH + 1; k++) {
		struct rmca_completion c;

		while (api_take(API_CTX(k), &c))
			count[k]++;
		API_CHECK_MSG(count[k] == 1, "op %d completed %d times", k,
			      count[k]);
	}
	API_CHECK_MSG(api_stashed() == 0, "%d completions nobody asked for",
		      api_stashed());
	/* and a get posted now completes, with an error */
	API_CHECK_OK(rmca_get(p->ep, buf, 8, mr, r.addr, r.rkey, API_CTX(99)));
	{
		struct rmca_completion c;

		api_wait(p, API_CTX(99), &c);
		API_CHECK(c.status == RMCA_ERR_CONNECTION);
	}
	free(buf);
	free(want);
}

static void run_death(bool masked)
{
	const struct api_test t = {.server = death_server,
				   .client = death_client,
				   .no_barrier = true};

	run_masked(&t, masked);
}

static void test_short_gets_outstanding_when_the_peer_dies(void **state)
{
	(void)state;
	run_death(false);
}

static void
test_short_gets_by_the_core_outstanding_when_the_peer_dies(void **state)
{
	(void)state;
	run_death(true);
}

/* ---- sleepers woken by the control channel are not kept spinning ---- */

#define TOKEN_WARM 0x3a3
#define NWAKE	   100
#define WAKE_MAX   4 /* wakeups per get, on average */

/*
 * Sleep in poll(2) on the wait fd (and on the link from the other side,
 * when link >= 0), then one rmca_poll; until the completion of uc (uc
 * set) or a token on the link. Returns the wakeups by the wait fd: each
 * should have brought news. Were the answer or request that woke it left
 * unread (a context whose modules move data without fds looks at its fds
 * only now and then), the fd would stay readable, and the caller would
 * spin through poll(2) until the core next looked.
 */
static long sleep_on_fd(struct api_peer *p, int link, void *uc)
{
	int fd = rmca_wait_fd(p->ctx);
	long end = api_now_ms() + API_TIMEOUT_MS, wakeups = 0;

	API_CHECK_MSG(fd >= 0, "rmca_wait_fd: %d", fd);
	for (;;) {
		struct pollfd pf[2] = {{.fd = fd, .events = POLLIN},
				       {.fd = link, .events = POLLIN}};
		struct rmca_completion c;
		int n;

		API_CHECK_MSG(api_now_ms() < end, "%s never came",
			      uc ? "a get's completion" : "the token");
		if (poll(pf, link >= 0 ? 2 : 1, 100) <= 0)
			continue;
		if (link >= 0 && (pf[1].revents & POLLIN))
			return wakeups;
		wakeups++;
		n = rmca_poll(p->ctx, &c, 1);
		API_CHECK(n >= 0);
		if (n == 0)
			continue;
		API_CHECK_MSG(c.user_ctx == uc, "completion of %p, expected %p",
			      c.user_ctx, uc);
		API_CHECK_MSG(c.status == RMCA_OK, "get: %d (%s)", c.status,
			      api_strerror(c.status));
		return wakeups;
	}
}

static void wake_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(RLEN);
	long wakeups;
	rmca_mr_t *mr;

	api_pattern(mem, RLEN, 65);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, mem, RLEN, RMCA_ACCESS_REMOTE_READ, &mr));
	api_put_region(p, 0, mem, RLEN, mr, p->ep);
	/* data moved on the device: a module that moves it without fds
	 * (shm, verbs) says so, and the core then spares its fd looks */
	API_CHECK_OK(api_hello_world_answer(p, p->ep));
	/* the first request may find this core not looking yet */
	sleep_on_fd(p, p->link[0].rd, NULL);
	api_expect_token(p, 0, TOKEN_WARM);
	wakeups = sleep_on_fd(p, p->link[0].rd, NULL);
	API_CHECK_MSG(wakeups <= NWAKE * WAKE_MAX,
		      "woken %ld times for the requests of %d gets", wakeups,
		      NWAKE);
	api_expect_token(p, 0, TOKEN_DONE);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(mem);
}

static void wake_client(struct api_peer *p)
{
	uint8_t *dst = api_alloc(RLEN), *want = api_alloc(RLEN);
	struct api_region r;
	long wakeups = 0;
	rmca_mr_t *md;

	api_get_region(p, 0, &r);
	api_pattern(want, RLEN, 65);
	API_CHECK_OK(rmca_mr_reg(p->ctx, dst, RLEN, RMCA_ACCESS_LOCAL, &md));
	API_CHECK_MSG(by_core(p), "short gets not answered by the core");
	api_hello_world(p, p->ep);
	for (int i = 0; i <= NWAKE; i++) {
		size_t len = 1 + (size_t)i % 32, off = (size_t)i * 37 % 4000;
		long w;

		API_CHECK_OK(rmca_get(p->ep, dst, len, md, r.addr + off,
				      r.rkey, API_CTX(1 + i)));
		w = sleep_on_fd(p, -1, API_CTX(1 + i));
		API_CHECK_MSG(!memcmp(dst, want + off, len),
			      "get %d: wrong bytes", i);
		if (i == 0)
			api_token(p, 0, TOKEN_WARM); /* the rest is counted */
		else
			wakeups += w;
	}
	api_token(p, 0, TOKEN_DONE);
	API_CHECK_MSG(wakeups <= NWAKE * WAKE_MAX,
		      "woken %ld times for the answers to %d gets", wakeups,
		      NWAKE);
	API_CHECK_OK(rmca_mr_dereg(md));
	free(dst);
	free(want);
}

static void test_sleepers_woken_by_short_gets_do_not_spin(void **state)
{
	const struct api_test t = {.server = wake_server,
				   .client = wake_client};

	(void)state;
	run_masked(&t, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_gets_return_the_bytes),
		cmocka_unit_test(test_short_gets_by_the_core_return_the_bytes),
		cmocka_unit_test(test_short_get_sees_earlier_puts),
		cmocka_unit_test(test_short_get_by_the_core_sees_earlier_puts),
		cmocka_unit_test(test_short_gets_refused_touch_nothing),
		cmocka_unit_test(
			test_short_gets_refused_by_the_core_touch_nothing),
		cmocka_unit_test(
			test_short_gets_outstanding_when_the_peer_dies),
		cmocka_unit_test(
			test_short_gets_by_the_core_outstanding_when_the_peer_dies),
		cmocka_unit_test(test_sleepers_woken_by_short_gets_do_not_spin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
