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
 * endpoint is made of the rail that remains and moves data.
 *
 * A pair the listener lists but the connecting side cannot use (its own
 * route check refuses it) is not waited for: the connecting side says
 * which listed rails it takes, and the listener makes the endpoint of
 * those at once. A peer whose say names rails that were not listed, or
 * too many, or is no such message, has its handshake ended with the
 * reason logged, and an honest peer after it gets both rails. Runs in the
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
#include "attack_util.h"
#include "multi_dev.h"
#include "wire_util.h"

#define BIG   (4u << 20)
#define SMALL 4096u

struct want {
	const char *addr; /* the listener's */
	const char *server_ns, *client_ns;
	const char *dev0[2], *dev1[2]; /* rails 0 and 1: server's, client's */
	int rails;		       /* expected */
	/* listed after them but not taken by the connecting side (rail 1's
	 * pair, dev1): not up, no device of this side */
	int refused;
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
	for (int i = w->rails; i < w->rails + w->refused; i++) {
		const char *peer = w->dev1[!side];

		API_CHECK_OK(rmca_ep_query_rail(p->ep, i, &r));
		API_CHECK_MSG(!r.up && !r.device[0] &&
				      !strcmp(r.peer_device, peer),
			      "%s: rail %d is %s<->%s (up %d), expected the "
			      "pair with %s, not taken",
			      p->is_server ? "listener" : "connecting side", i,
			      r.device, r.peer_device, r.up, peer);
	}
	API_CHECK_RC(rmca_ep_query_rail(p->ep, w->rails + w->refused, &r),
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

	md_meet(p, w->addr, w->server_ns, w->client_ns);
	check_rails(p, w);
	if (p->is_server)
		target(p, w);
	else
		initiator(p, w);
}

static void run(const struct want *w)
{
	md_run(both, both, w);
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
	need_two_hosts();
	run(&w);
}

/* ---- a listed pair the connecting side refuses ---- */

/* Host a's route to siwb0 (10.5.0.2) leaves through va1, not va0 */
#define SKEW_ROUTE "ip -n rmca-a route %s 10.5.0.2/32 dev va1"

static bool skewed;

static int unskew(void **state)
{
	char cmd[128];

	(void)state;
	if (skewed) {
		snprintf(cmd, sizeof(cmd), SKEW_ROUTE, "del");
		if (system(cmd))
			print_error("'%s' failed\n", cmd);
	}
	skewed = false;
	unsetenv("RMCA_connect_timeout");
	return 0;
}

/*
 * Two hosts, addressed on 10.5.1.0/24. Host a routes 10.5.0.2 through va1,
 * so its route check refuses siwa0<->siwb0, which the listener (its routes
 * plain) lists as rail 1. Both sides make the endpoint of rail 0 alone,
 * report rail 1 not taken, and move a 4 MiB put and get on rail 0.
 * RMCA_connect_timeout is an hour: a listener that waits for the refused
 * rail until then (as it did before the connecting side said which rails
 * it takes) does not hand out the endpoint within rmca_accept's timeout,
 * and the test fails there.
 */
static void test_two_hosts_refused_rail_is_not_waited_for(void **state)
{
	const struct want w = {.addr = "10.5.1.2",
			       .server_ns = "rmca-b",
			       .client_ns = "rmca-a",
			       .dev0 = {"siwb1", "siwa1"},
			       .dev1 = {"siwb0", "siwa0"},
			       .rails = 1,
			       .refused = 1};
	char cmd[128];

	(void)state;
	/* not on one host: its two processes share their routes */
	need_two_hosts();
	snprintf(cmd, sizeof(cmd), SKEW_ROUTE, "add");
	API_CHECK_MSG(system(cmd) == 0, "'%s' failed", cmd);
	skewed = true;
	setenv("RMCA_connect_timeout", "3600000", 1);
	run(&w);
}

/* ---- a peer that lies about the rails it takes ---- */

#define ATOMIC_CPU 2 /* RMCA_atomic_mode=cpu, set for the listener */
#define LIARS	   4

/* A message by hand (framework/wire.h), length-prefixed: the header with
 * this kind, then the payload bytes as given. */
static void send_raw(int fd, uint8_t kind, const uint8_t *pl, size_t n)
{
	static const uint8_t magic[4] = {'R', 'M', 'C', 'A'};
	uint8_t buf[64] = {(uint8_t)(8 + n)};

	memcpy(buf + 4, magic, 4);
	buf[8] = RMCA_WIRE_VERSION; /* u16, little-endian */
	buf[10] = kind;
	memcpy(buf + 12, pl, n);
	atk_write(fd, buf, 12 + n);
}

/* A hello, length-prefixed, where no hello belongs. */
static void send_hello(int fd, const struct rmca_hello *h)
{
	static uint8_t buf[4 + RMCA_HELLO_MAX];
	int n = rmca_hello_encode(h, buf + 4, RMCA_HELLO_MAX);

	API_CHECK(n > 0);
	for (int i = 0; i < 4; i++)
		buf[i] = (uint8_t)((unsigned)n >> (8 * i));
	atk_write(fd, buf, 4 + (size_t)n);
}

static void liar_server(struct api_peer *p)
{
	const struct want *w = p->arg;
	rmca_ep_t *ep = NULL;
	int rc;

	md_listen(p, w->addr);
	/* one liar at a time: its refusal ends this call */
	for (int i = 0; i < LIARS; i++) {
		api_token(p, 0, API_TOKEN_GO);
		rc = rmca_accept(p->l, API_TIMEOUT_MS, &ep);
		API_CHECK_MSG(rc == RMCA_ERR_PROTOCOL,
			      "lie %d: rmca_accept returned %s, expected the "
			      "refusal",
			      i, api_strerror(rc));
	}
	/* then an honest peer: its endpoint is whole, as if no liar had
	 * come before it */
	api_token(p, 0, API_TOKEN_GO);
	rc = rmca_accept(p->l, API_TIMEOUT_MS, &p->ep);
	API_CHECK_MSG(rc == RMCA_OK,
		      "the honest peer after the lies: rmca_accept returned %s",
		      api_strerror(rc));
	check_rails(p, w);
	target(p, w);
}

static void liar_client(struct api_peer *p)
{
	const struct want *w = p->arg;
	static const struct {
		uint8_t kind, n, pl[3];
	} lies[LIARS] = {
		{RMCA_WIRE_RAILS, 2, {1, 1}},	 /* rail 2 of 1 */
		{RMCA_WIRE_RAILS, 3, {2, 0, 1}}, /* 2 rails of 1 */
		{RMCA_WIRE_RAILS, 1, {200}},	 /* 200 rails */
		{RMCA_WIRE_HELLO, 0, {0}},	 /* another hello */
	};
	int port = api_client_read_port(p);
	struct rmca_hello *h = api_alloc(sizeof(*h)), answer;
	char hp[128];

	for (int i = 0; i < LIARS; i++) {
		int fd;

		api_expect_token(p, 0, API_TOKEN_GO);
		fd = atk_connect(w->addr, port);

		wu_hello(h, 0x11a40000001ull + (uint64_t)i, RMCA_ROLE_ACTIVE,
			 ATOMIC_CPU, "liar");
		h->nmods = 2;
		h->mods[0] = atk_verbs_mod(transport, first.name, first.addr);
		h->mods[1] = atk_verbs_mod(transport, second.name, second.addr);
		h->nrails = 1;
		API_CHECK_MSG(!atk_hello_send(fd, h, &answer),
			      "no answer to the hello");
		API_CHECK_MSG(answer.kind == RMCA_WIRE_HELLO &&
				      answer.nrails == 1,
			      "the answer is kind %u with %u rails (%s), "
			      "expected a choice and one rail",
			      answer.kind, answer.nrails, answer.reason);
		if (lies[i].kind == RMCA_WIRE_HELLO)
			send_hello(fd, h);
		else
			send_raw(fd, lies[i].kind, lies[i].pl, lies[i].n);
		API_CHECK_MSG(atk_closed(fd, API_TIMEOUT_MS),
			      "lie %d: the listener kept the handshake open",
			      i);
		close(fd);
	}
	free(h);
	/* The honest peer moves data, and so stays until the listener has
	 * its endpoint: one that left as soon as its own side was up would
	 * have the listener's closed by the peer before rmca_accept. */
	api_expect_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_init(&p->ctx));
	api_host_port(hp, sizeof(hp), w->addr, port);
	API_CHECK_OK(rmca_connect(p->ctx, hp, API_TIMEOUT_MS, &p->ep));
	check_rails(p, w);
	initiator(p, w);
}

static int liar_teardown(void **state)
{
	unsetenv("RMCA_connect_timeout");
	unsetenv("RMCA_atomic_mode");
	/* the listener's log, if the run failed first */
	return api_log_show(state);
}

static void test_rails_lies_end_their_handshake(void **state)
{
	struct want w = {.addr = first.addr, .rails = 2};
	const struct api_test t = {.server = liar_server,
				   .client = liar_client,
				   .manual = true,
				   .arg = &w};
	static const char *const why[LIARS] = {
		"refused: takes rail 2, 1 listed",
		"refused: takes 2 rails, 1 listed",
		"refused: takes 200 rails, at most 7",
		"refused: message kind 1 where the rails taken belong",
	};
	char *log;

	(void)state;
	need_devices();
	w.dev0[0] = w.dev0[1] = first.name;
	w.dev1[0] = w.dev1[1] = second.name;
	/* an hour: a handshake that ends did not time out */
	setenv("RMCA_connect_timeout", "3600000", 1);
	setenv("RMCA_atomic_mode", "cpu", 1);
	log = api_run_log(&t);
	for (int i = 0; i < LIARS; i++)
		if (!strstr(log, why[i]))
			fail_msg("the listener did not say '%s': %s", why[i],
				 log);
	free(log);
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

	md_meet(p, f->w.addr, f->w.server_ns, f->w.client_ns);
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

	md_meet(p, f->w.addr, f->w.server_ns, f->w.client_ns);
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
	md_run(fault_server, fault_client, f);
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
	need_two_hosts();
	run_fault(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_host_two_rails),
		cmocka_unit_test(test_max_rails_1_makes_one_rail),
		cmocka_unit_test(test_two_hosts_two_rails),
		cmocka_unit_test_teardown(
			test_two_hosts_refused_rail_is_not_waited_for, unskew),
		cmocka_unit_test_teardown(test_rails_lies_end_their_handshake,
					  liar_teardown),
		/* last: after its link went down and up, the second device
		 * does not always carry new connections at once (rxe1: its
		 * rail timed out in a later test, 3 runs of 4) */
		cmocka_unit_test(test_same_host_rail_link_down),
		cmocka_unit_test(test_two_hosts_rail_link_down),
	};

	return cmocka_run_group_tests(tests, multi_dev_setup,
				      multi_dev_teardown);
}
