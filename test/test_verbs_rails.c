/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rails (issue 14): where two device pairs of one transport reach a peer
 * at the same priority, the endpoint uses both. Same host: rxe0 and rxe1
 * (or siw0 and siw1) on two subnets; on iwarp also two hosts, two network
 * namespaces joined by two veth pairs, two siw devices each
 * (contrib/vm/two-hosts.sh). Checked on both sides: rmca_ep_query_rail
 * names both pairs; a 4 MiB put and get, whose key the target sent in a
 * message, are split across both rails (each rail's byte count grows)
 * and arrive byte for byte; a small put stays on rail 0; RMCA_max_rails=1
 * makes one rail. A rail whose link goes down mid-run (its netdev set
 * down on both ends) fails the endpoint: every operation outstanding, or
 * posted after, completes once with RMCA_ERR_CONNECTION, and a new
 * endpoint is made of the rail that remains and moves data. Runs in the
 * check-vm guest as root, like test_verbs_route; skips elsewhere.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "multi_dev.h"
#include "tap_skip.h"

#define BIG   (4u << 20)
#define SMALL 4096u

struct want {
	const char *addr; /* the listener's */
	const char *server_ns, *client_ns;
	const char *dev0[2], *dev1[2]; /* rails 0 and 1: server's, client's */
	int rails;		       /* expected */
};

/* The endpoint's rails are the expected pairs, on this side. */
static void check_rails(struct api_peer *p, const struct want *w)
{
	int side = p->is_server ? 0 : 1;
	struct rmca_ep_rail r;

	for (int i = 0; i < w->rails; i++) {
		const char *dev = i ? w->dev1[side] : w->dev0[side];
		const char *peer = i ? w->dev1[!side] : w->dev0[!side];

		API_CHECK_OK(rmca_ep_query_rail(p->ep, i, &r));
		API_CHECK_MSG(!strcmp(r.transport, transport) &&
				      !strcmp(r.device, dev) &&
				      !strcmp(r.peer_device, peer) && r.up,
			      "%s: rail %d is %s %s<->%s (up %d), expected %s "
			      "%s<->%s",
			      p->is_server ? "listener" : "connecting side", i,
			      r.transport, r.device, r.peer_device, r.up,
			      transport, dev, peer);
	}
	API_CHECK_RC(rmca_ep_query_rail(p->ep, w->rails, &r),
		     RMCA_ERR_NOT_FOUND);
	API_CHECK_RC(rmca_ep_query_rail(p->ep, -1, &r), RMCA_ERR_INVALID);
}

static uint64_t rail_bytes(struct api_peer *p, int i)
{
	struct rmca_ep_rail r;

	API_CHECK_OK(rmca_ep_query_rail(p->ep, i, &r));
	return r.bytes;
}

/* The target: a region, its key sent in a message on the endpoint (the
 * way middleware hands keys out), then it checks what was put and serves
 * what is got. */
static void target(struct api_peer *p, const struct want *w)
{
	unsigned char *buf = api_alloc(BIG), *msg = api_alloc(64);
	rmca_mr_t *mr, *mmr;
	uint64_t reg[2];

	API_CHECK_OK(rmca_mr_reg(
		p->ctx, buf, BIG,
		RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, 64, RMCA_ACCESS_LOCAL, &mmr));
	memset(buf, 0, BIG);
	reg[0] = (uint64_t)(uintptr_t)buf;
	reg[1] = rmca_mr_rkey(mr, p->ep);
	API_CHECK(reg[1] != 0);
	memcpy(msg, reg, sizeof(reg));
	api_send_wait(p, p->ep, msg, sizeof(reg), mmr);
	/* the put is flushed: it is all there */
	api_expect_token(p, 0, API_TOKEN_GO);
	API_CHECK_MSG(api_pattern_check(buf, BIG, 21) < 0,
		      "the striped put arrived changed at byte %ld",
		      api_pattern_check(buf, BIG, 21));
	api_pattern(buf, BIG, 22);
	api_token(p, 0, API_TOKEN_GO);
	/* the peer gets it, then a small put; then both close */
	api_expect_token(p, 0, API_TOKEN_GO);
	(void)w;
	API_CHECK_OK(rmca_mr_dereg(mmr));
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(msg);
	free(buf);
}

static void initiator(struct api_peer *p, const struct want *w)
{
	unsigned char *buf = api_alloc(BIG), *msg = api_alloc(64);
	uint64_t reg[2], b0, b1;
	rmca_mr_t *mr, *mmr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, BIG, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, 64, RMCA_ACCESS_LOCAL, &mmr));
	API_CHECK(api_recv_wait(p, p->ep, msg, 64, mmr) == sizeof(reg));
	memcpy(reg, msg, sizeof(reg));
	b0 = rail_bytes(p, 0);
	b1 = w->rails > 1 ? rail_bytes(p, 1) : 0;

	api_pattern(buf, BIG, 21);
	API_CHECK_OK(API_POST(p, rmca_put(p->ep, buf, BIG, mr, reg[0], reg[1],
					  RMCA_DELIVERED, API_CTX(1))));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(2))));
	api_wait_status(p, API_CTX(2), RMCA_OK);
	if (w->rails > 1)
		API_CHECK_MSG(rail_bytes(p, 0) > b0 && rail_bytes(p, 1) > b1 &&
				      rail_bytes(p, 0) - b0 + rail_bytes(p, 1) -
						      b1 ==
					      BIG,
			      "the 4 MiB put was not split: rail 0 carried "
			      "%llu bytes, rail 1 %llu",
			      (unsigned long long)(rail_bytes(p, 0) - b0),
			      (unsigned long long)(rail_bytes(p, 1) - b1));
	else
		API_CHECK(rail_bytes(p, 0) - b0 == BIG);
	api_token(p, 0, API_TOKEN_GO);

	api_expect_token(p, 0, API_TOKEN_GO);
	memset(buf, 0, BIG);
	b0 = rail_bytes(p, 0);
	b1 = w->rails > 1 ? rail_bytes(p, 1) : 0;
	API_CHECK_OK(API_POST(
		p, rmca_get(p->ep, buf, BIG, mr, reg[0], reg[1], API_CTX(3))));
	api_wait_status(p, API_CTX(3), RMCA_OK);
	API_CHECK_MSG(api_pattern_check(buf, BIG, 22) < 0,
		      "the striped get arrived changed at byte %ld",
		      api_pattern_check(buf, BIG, 22));
	if (w->rails > 1)
		API_CHECK_MSG(rail_bytes(p, 0) > b0 && rail_bytes(p, 1) > b1,
			      "the 4 MiB get was not split: rail 0 carried "
			      "%llu bytes, rail 1 %llu",
			      (unsigned long long)(rail_bytes(p, 0) - b0),
			      (unsigned long long)(rail_bytes(p, 1) - b1));

	/* below RMCA_rail_min_size: rail 0 alone */
	b0 = rail_bytes(p, 0);
	b1 = w->rails > 1 ? rail_bytes(p, 1) : 0;
	API_CHECK_OK(API_POST(p, rmca_put(p->ep, buf, SMALL, mr, reg[0], reg[1],
					  0, API_CTX(4))));
	api_wait_status(p, API_CTX(4), RMCA_OK);
	API_CHECK(rail_bytes(p, 0) - b0 == SMALL);
	if (w->rails > 1)
		API_CHECK(rail_bytes(p, 1) == b1);
	API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(5))));
	api_wait_status(p, API_CTX(5), RMCA_OK);
	api_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(mmr));
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(msg);
	free(buf);
}

static void both(struct api_peer *p)
{
	const struct want *w = p->arg;

	enter(p->is_server ? w->server_ns : w->client_ns);
	if (p->is_server) {
		api_server_listen(p, w->addr);
		api_server_accept_all(p);
	} else {
		api_client_connect(p, w->addr);
	}
	check_rails(p, w);
	if (p->is_server)
		target(p, w);
	else
		initiator(p, w);
}

static void run(const struct want *w)
{
	struct api_test t = {.server = both,
			     .client = both,
			     .manual = true,
			     .arg = (void *)w};

	api_run(&t);
}

/* Same host, addressed on the second subnet: rail 0 is the second
 * device's pair (the route), rail 1 the first's. */
static void test_same_host_two_rails(void **state)
{
	struct want w = {.addr = second.addr, .rails = 2};

	(void)state;
	need_devices();
	w.dev0[0] = w.dev0[1] = second.name;
	w.dev1[0] = w.dev1[1] = first.name;
	run(&w);
}

static void test_max_rails_1_makes_one_rail(void **state)
{
	struct want w = {.addr = second.addr, .rails = 1};

	(void)state;
	need_devices();
	w.dev0[0] = w.dev0[1] = second.name;
	setenv("RMCA_max_rails", "1", 1);
	run(&w);
	unsetenv("RMCA_max_rails");
}

static void test_two_hosts_two_rails(void **state)
{
	const struct want w = {.addr = "10.5.1.2",
			       .server_ns = "rmca-b",
			       .client_ns = "rmca-a",
			       .dev0 = {"siwb1", "siwa1"},
			       .dev1 = {"siwb0", "siwa0"},
			       .rails = 2};

	(void)state;
	need_devices();
	if (!hosts_added)
		TAP_SKIP("iwarp only: rxe's rdma_cm does not cross network "
			 "namespaces");
	run(&w);
}

/* ---- a rail's link goes down ---- */

#define NPUT 4

struct fault {
	struct want w;	       /* two rails; rail 1's link goes down */
	const char *down, *up; /* shell commands */
	/* Ops posted right after the link went down are still outstanding
	 * when the port's failure is read (siw: 2 MiB cannot leave through a
	 * link that is down); rxe on one host loops back without the link,
	 * so there the failure is waited for first. */
	bool outstanding;
	struct want after; /* the endpoint made after it */
};

static void sh(const char *cmd)
{
	API_CHECK_MSG(system(cmd) == 0, "'%s' failed", cmd);
}

static void fault_server(struct api_peer *p)
{
	const struct fault *f = p->arg;
	unsigned char *buf = api_alloc(BIG), *msg = api_alloc(64);
	rmca_mr_t *mr, *mmr;
	uint64_t reg[2];

	enter(f->w.server_ns);
	api_server_listen(p, f->w.addr);
	api_server_accept_all(p);
	check_rails(p, &f->w);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, BIG, RMCA_ACCESS_REMOTE_WRITE, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, 64, RMCA_ACCESS_LOCAL, &mmr));
	reg[0] = (uint64_t)(uintptr_t)buf;
	reg[1] = rmca_mr_rkey(mr, p->ep);
	memcpy(msg, reg, sizeof(reg));
	api_send_wait(p, p->ep, msg, sizeof(reg), mmr);
	/* the client saw its operations fail and closed its endpoint */
	api_expect_token(p, 0, API_TOKEN_GO);
	rmca_ep_close(p->ep);
	API_CHECK_OK(rmca_mr_dereg(mmr));
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(msg);
	free(buf);
	/* the next endpoint: the rail that remains */
	api_server_accept_all(p);
	check_rails(p, &f->after);
	target(p, &f->after);
}

static void fault_client(struct api_peer *p)
{
	const struct fault *f = p->arg;
	unsigned char *buf = api_alloc(BIG), *msg = api_alloc(64);
	struct rmca_completion c;
	struct rmca_ep_rail r;
	rmca_mr_t *mr, *mmr;
	uint64_t reg[2];
	long t0;
	int i;

	enter(f->w.client_ns);
	api_client_connect(p, f->w.addr);
	check_rails(p, &f->w);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, BIG, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, 64, RMCA_ACCESS_LOCAL, &mmr));
	API_CHECK(api_recv_wait(p, p->ep, msg, 64, mmr) == sizeof(reg));
	memcpy(reg, msg, sizeof(reg));

	sh(f->down);
	if (!f->outstanding) {
		t0 = api_now_ms();
		do {
			api_progress(p);
			API_CHECK_OK(rmca_ep_query_rail(p->ep, 1, &r));
		} while (r.up && api_now_ms() - t0 < API_TIMEOUT_MS);
		API_CHECK_MSG(!r.up,
			      "rail 1 still up after its link went down");
	}
	/* no progress between: these are outstanding when the port's
	 * failure is read */
	for (i = 0; i < NPUT; i++)
		API_CHECK_OK(rmca_put(p->ep, buf, BIG, mr, reg[0], reg[1], 0,
				      API_CTX(10 + i)));
	API_CHECK_OK(rmca_flush(p->ep, API_CTX(10 + NPUT)));
	for (i = 0; i <= NPUT; i++) {
		api_wait(p, API_CTX(10 + i), &c);
		API_CHECK_MSG(c.status == RMCA_ERR_CONNECTION,
			      "operation %d completed %s, expected "
			      "RMCA_ERR_CONNECTION",
			      i, api_strerror(c.status));
	}
	/* exactly once each */
	api_progress_for(p, 200);
	API_CHECK_MSG(api_stashed() == 0, "%d more completions", api_stashed());
	API_CHECK_OK(rmca_ep_query_rail(p->ep, 1, &r));
	API_CHECK(!r.up);
	rmca_ep_close(p->ep);
	p->ep = NULL;
	API_CHECK_OK(rmca_mr_dereg(mmr));
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(msg);
	free(buf);
	api_token(p, 0, API_TOKEN_GO);

	api_client_connect(p, f->after.addr);
	check_rails(p, &f->after);
	initiator(p, &f->after);
}

static void run_fault(const struct fault *f)
{
	struct api_test t = {.server = fault_server,
			     .client = fault_client,
			     .manual = true,
			     .arg = (void *)f};

	api_run(&t);
	sh(f->up);
}

/* Same host, addressed on the first subnet: rail 1 is the second
 * device's pair; its netdev goes down. */
static void test_same_host_rail_link_down(void **state)
{
	struct fault f = {.w = {.addr = first.addr, .rails = 2},
			  .after = {.addr = first.addr, .rails = 1}};
	bool ib;

	(void)state;
	need_devices();
	ib = !strcmp(transport, "ib");
	f.w.dev0[0] = f.w.dev0[1] = first.name;
	f.w.dev1[0] = f.w.dev1[1] = second.name;
	f.after.dev0[0] = f.after.dev0[1] = first.name;
	f.down = ib ? "ip link set dummy2 down" : "ip link set dummy3 down";
	f.up = ib ? "ip link set dummy2 up" : "ip link set dummy3 up";
	f.outstanding = false;
	run_fault(&f);
}

/* Two hosts, addressed on 10.5.1.0/24: rail 1 is siwa0<->siwb0, on the
 * veth pair va0/vb0, set down on both ends. */
static void test_two_hosts_rail_link_down(void **state)
{
	const struct fault f = {.w = {.addr = "10.5.1.2",
				      .server_ns = "rmca-b",
				      .client_ns = "rmca-a",
				      .dev0 = {"siwb1", "siwa1"},
				      .dev1 = {"siwb0", "siwa0"},
				      .rails = 2},
				.down = "ip -n rmca-a link set va0 down && "
					"ip -n rmca-b link set vb0 down",
				.up = "ip -n rmca-a link set va0 up && "
				      "ip -n rmca-b link set vb0 up",
				.outstanding = true,
				.after = {.addr = "10.5.1.2",
					  .server_ns = "rmca-b",
					  .client_ns = "rmca-a",
					  .dev0 = {"siwb1", "siwa1"},
					  .rails = 1}};

	(void)state;
	need_devices();
	if (!hosts_added)
		TAP_SKIP("iwarp only: rxe's rdma_cm does not cross network "
			 "namespaces");
	run_fault(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_host_two_rails),
		cmocka_unit_test(test_max_rails_1_makes_one_rail),
		cmocka_unit_test(test_two_hosts_two_rails),
		cmocka_unit_test(test_same_host_rail_link_down),
		cmocka_unit_test(test_two_hosts_rail_link_down),
	};

	return cmocka_run_group_tests(tests, multi_dev_setup,
				      multi_dev_teardown);
}
