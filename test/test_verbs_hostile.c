/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Issue 7 on a real verbs device (rxe0 or siw0, inside the VM): peers that
 * stall or vanish in the verbs half of a handshake cost the listener one
 * pending handshake each, never its time. The ib and iwarp modules once
 * connected blocking: after answering a hello, the listener waited inside
 * the module's connect, up to RMCA_connect_timeout, for that peer's
 * rdma_cm request, and served nobody meanwhile.
 *
 * The server has one established endpoint (client 0, which keeps doing
 * round trips) when two hostile peers arrive: client 1 says hello and then
 * nothing (no rdma_cm connect at all), client 2 says hello, makes its
 * rdma_cm connection and drops it without the verbs hello (gone mid
 * handshake). Then a good client (3) connects. What must hold, asserted on
 * order only: the good client is served and the established endpoint does
 * all its round trips while the silent peer's handshake is still pending
 * (its bootstrap connection still open: RMCA_connect_timeout is far away),
 * and the server ends the vanished peer's handshake without waiting for
 * its deadline. The server then finalizes with the silent handshake still
 * pending, which releases it.
 *
 * A peer whose connection was made (its verbs hello placed, so that its
 * own rmca_connect has returned) and that left before the listener looked
 * is still accepted: rmca_accept hands out the endpoint, failed, as over
 * tcp and shm. The module reported a connect that failed ("could not
 * connect: connection lost") and the listener accepted nothing, while the
 * peer had its endpoint (test_api_wait_fd's ep_close case, once on siw0).
 *
 * A connection request of another verbs wire version (an earlier rmca's,
 * whose iWARP header read as this one's would confirm sends never placed)
 * is refused at once, and the listener's log names both versions.
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#ifdef HAVE_VERBS
#include <rdma/rdma_cma.h>
#endif

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "attack_util.h"
#include "tap_skip.h"
#include "wire_util.h"

#define TOKEN_DONE     0xd0e
#define TOKEN_ANSWERED 0xa45
#define TOKEN_OPEN     0x09e
#define TOKEN_CLOSED   0xc10
#define ROUNDS	       20
#define SILENT_TOKEN   0x51e47000000001ull
#define GONE_TOKEN     0x90e00000000002ull
#define LEFT_TOKEN     0x1ef700000000003ull
#define TOKEN_EST      0xe57
#define TOKEN_STOPPED  0x5709
#define TOKEN_LEFT     0x1ef7
#define ATOMIC_CPU     2 /* RMCA_atomic_mode=cpu, set for every side below */
#define C_EST	       0
#define C_SILENT       1
#define C_GONE	       2
#define C_LATE	       3

/* The rdma_cm private data of a connection request, by hand. */
struct vpdata {
	uint32_t magic;
	uint32_t ctl_rkey;
	uint64_t token;
	uint64_t ctl_addr;
} __attribute__((packed));

/* 1 while the other side has not closed fd; never waits. */
static int still_open(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char buf[256];
	ssize_t n;

	while (poll(&pfd, 1, 0) > 0) {
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return 0;
		if (n < 0)
			break;
	}
	return 1;
}

/* An active hello offering one module of our transport, whose address
 * names our own host (a port nobody listens on); the answer in *answer. */
static void verbs_hello(int fd, uint64_t token, struct rmca_hello *answer)
{
	static struct rmca_hello h;

	wu_hello(&h, token, RMCA_ROLE_ACTIVE, ATOMIC_CPU, "hostile");
	h.nmods = 1;
	h.mods[0] = atk_verbs_mod(api_transport(), "hostile0", api_host());
	API_CHECK_MSG(!atk_hello_send(fd, &h, answer),
		      "no answer to the hello");
	API_CHECK_MSG(answer->kind == RMCA_WIRE_HELLO, "refused: %s",
		      answer->reason);
	API_CHECK(answer->choice_p < answer->nmods);
	API_CHECK(!strcmp(answer->mods[answer->choice_p].component,
			  api_transport()));
}

/* ---- the server ---- */

/* Echo one message of the established peer, and post the next receive. */
static bool echo_one(struct api_peer *p, rmca_ep_t *ep, uint8_t *buf,
		     rmca_mr_t *mr)
{
	struct rmca_completion c;

	if (!api_take(API_CTX(1), &c))
		return false;
	API_CHECK_MSG(c.status == RMCA_OK, "receive: %s",
		      api_strerror(c.status));
	memcpy(buf + 64, buf, 8);
	API_CHECK_OK(API_POST(p, rmca_send(ep, buf + 64, 8, mr, API_CTX(2))));
	api_wait_status(p, API_CTX(2), RMCA_OK);
	API_CHECK_OK(rmca_recv(ep, buf, 64, mr, API_CTX(1)));
	return true;
}

static void server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(4096);
	long end = api_now_ms() + API_RUN_TIMEOUT_MS;
	rmca_ep_t *est = NULL, *late = NULL;
	int rounds = 0, port, rc;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_init(&p->ctx));
	if (!api_find_module(p->ctx, NULL))
		api_skip(p, "no module of this transport (no device here)");
	api_server_listen(p, api_host());
	port = rmca_listener_port(p->l);
	for (int i = 0; i < p->nclients; i++)
		api_put_u64(p, i, (uint64_t)port);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 4096, RMCA_ACCESS_LOCAL, &mr));

	/* The established endpoint. */
	API_CHECK_OK(rmca_accept(p->l, API_TIMEOUT_MS, &est));
	API_CHECK_OK(rmca_recv(est, buf, 64, mr, API_CTX(1)));

	/* The hostile peers: hellos answered, then silence, or a peer gone
	 * in the middle of the verbs handshake. Their handshakes are
	 * answered while the server waits here (and keeps progressing). */
	api_token(p, C_SILENT, API_TOKEN_GO);
	api_expect_token(p, C_SILENT, TOKEN_ANSWERED);
	api_token(p, C_GONE, API_TOKEN_GO);
	api_expect_token(p, C_GONE, TOKEN_ANSWERED);

	/* Now the good ones: round trips on the established endpoint and a
	 * new client, both while the silent handshake is pending. */
	api_token(p, C_EST, API_TOKEN_GO);
	api_token(p, C_LATE, API_TOKEN_GO);
	while (!late || rounds < ROUNDS) {
		API_CHECK_MSG(api_now_ms() < end,
			      "stalled: %d of %d round trips, new client %s",
			      rounds, ROUNDS, late ? "served" : "not served");
		if (!late) {
			rc = rmca_accept(p->l, 0, &late);
			/* the vanished peer's handshake may end this call */
			API_CHECK_MSG(rc == RMCA_OK || rc == RMCA_ERR_TIMEOUT ||
					      rc == RMCA_ERR_CONNECTION ||
					      rc == RMCA_ERR_PROTOCOL,
				      "rmca_accept returned %d (%s)", rc,
				      api_strerror(rc));
			if (rc)
				late = NULL;
			else
				api_send_wait(p, late,
					      memcpy(buf + 128, "served", 7), 7,
					      mr);
		}
		api_progress(p);
		if (echo_one(p, est, buf, mr))
			rounds++;
	}
	api_expect_token(p, C_LATE, TOKEN_DONE);
	api_expect_token(p, C_EST, TOKEN_DONE);
	api_token(p, C_EST, TOKEN_DONE);
	api_token(p, C_LATE, TOKEN_DONE);

	/* The order the issue asks for: all that happened while the silent
	 * peer's handshake was still pending. */
	api_token(p, C_SILENT, API_TOKEN_GO);
	api_expect_token(p, C_SILENT, TOKEN_OPEN);
	/* The vanished peer's handshake ended long before its deadline. */
	api_token(p, C_GONE, API_TOKEN_GO);
	api_expect_token(p, C_GONE, TOKEN_CLOSED);

	/* Finalize with the silent handshake pending: it is released, once. */
	rmca_ep_close(late);
	rmca_ep_close(est);
	rmca_mr_dereg(mr);
	rmca_listener_close(p->l);
	p->l = NULL;
	rmca_finalize(p->ctx);
	p->ctx = NULL;
	api_token(p, C_SILENT, TOKEN_DONE);
}

/* ---- the clients ---- */

static void client_est(struct api_peer *p)
{
	int port = api_client_read_port(p);
	uint8_t *buf = api_alloc(4096);
	char hp[128];
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_init(&p->ctx));
	api_host_port(hp, sizeof(hp), api_host(), port);
	API_CHECK_OK(rmca_connect(p->ctx, hp, API_TIMEOUT_MS, &p->ep));
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 4096, RMCA_ACCESS_LOCAL, &mr));
	api_expect_token(p, 0, API_TOKEN_GO);
	for (uint64_t i = 0; i < ROUNDS; i++) {
		API_CHECK_OK(rmca_recv(p->ep, buf + 64, 64, mr, API_CTX(3)));
		memcpy(buf, &i, 8);
		api_send_wait(p, p->ep, buf, 8, mr);
		api_wait_status(p, API_CTX(3), RMCA_OK);
		API_CHECK(!memcmp(buf + 64, &i, 8));
	}
	api_token(p, 0, TOKEN_DONE);
	/* until the server has its last send back (on iwarp it completes
	 * once confirmed, which needs this side) */
	api_expect_token(p, 0, TOKEN_DONE);
}

static void client_silent(struct api_peer *p)
{
	int port = api_client_read_port(p);
	struct rmca_hello answer;
	int fd;

	api_expect_token(p, 0, API_TOKEN_GO);
	fd = atk_connect(api_host(), port);
	verbs_hello(fd, SILENT_TOKEN, &answer);
	api_token(p, 0, TOKEN_ANSWERED);
	/* ... and nothing more, until asked whether we are still pending */
	api_expect_token(p, 0, API_TOKEN_GO);
	API_CHECK_MSG(still_open(fd),
		      "the silent handshake ended before the others were "
		      "served (they waited for it)");
	api_token(p, 0, TOKEN_OPEN);
	api_expect_token(p, 0, TOKEN_DONE);
	close(fd);
}

#ifdef HAVE_VERBS
static const char *ev_name(enum rdma_cm_event_type e)
{
	return rdma_event_str(e);
}

static void cm_expect(struct rdma_event_channel *ec,
		      enum rdma_cm_event_type want)
{
	struct pollfd pfd = {.fd = ec->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;

	API_CHECK_MSG(poll(&pfd, 1, API_TIMEOUT_MS) == 1,
		      "no rdma_cm event (waiting for %s)", ev_name(want));
	API_CHECK(!rdma_get_cm_event(ec, &ev));
	got = ev->event;
	rdma_ack_cm_event(ev);
	API_CHECK_MSG(got == want, "rdma_cm said %s, expected %s", ev_name(got),
		      ev_name(want));
}

/* A TCP port of our address that no socket holds (siw binds a TCP socket
 * to the id's port: see components/verbs/verbs_port.c). */
static int port_hold(struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	API_CHECK(fd >= 0);
	API_CHECK(!setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	API_CHECK(!bind(fd, (struct sockaddr *)a, sizeof(*a)));
	API_CHECK(!getsockname(fd, (struct sockaddr *)a, &len));
	return fd;
}

/* The private data's magic: "rmc" and the verbs wire version. */
static uint32_t req_magic = 0x726d6332u;

/* A connection request to the module the answer chose, carrying token,
 * by hand: on its own event channel, *ec; from the address from (NULL:
 * the module's own). */
static struct rdma_cm_id *cm_request_from(const struct rmca_hello *answer,
					  uint64_t token,
					  struct rdma_event_channel **ec,
					  const char *from)
{
	struct sockaddr_in dst, src = {.sin_family = AF_INET};
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 4,
					      .max_recv_wr = 4,
					      .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct vpdata pd = {.magic = htole32(req_magic),
			    .token = htole64(token)};
	struct rdma_conn_param cp = {.private_data = &pd,
				     .private_data_len = sizeof(pd),
				     .initiator_depth = 1,
				     .responder_resources = 1,
				     .retry_count = 7,
				     .rnr_retry_count = 7};
	struct rdma_cm_id *id;
	int hold;

	atk_verbs_addr(&answer->mods[answer->choice_p], &dst);
	src.sin_addr = dst.sin_addr;
	if (from)
		API_CHECK(inet_pton(AF_INET, from, &src.sin_addr) == 1);
	*ec = rdma_create_event_channel();
	API_CHECK(*ec);
	API_CHECK(!rdma_create_id(*ec, &id, NULL, RDMA_PS_TCP));
	hold = port_hold(&src);
	/* an address just added gets its device's GID a little later */
	for (long end = api_now_ms() + API_TIMEOUT_MS;
	     rdma_bind_addr(id, (struct sockaddr *)&src);) {
		bool late = errno == ENODEV || errno == EADDRNOTAVAIL;

		API_CHECK_MSG(from && late && api_now_ms() < end,
			      "rdma_bind_addr: %s", strerror(errno));
		usleep(10000);
	}
	API_CHECK(!rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst,
				     API_TIMEOUT_MS));
	cm_expect(*ec, RDMA_CM_EVENT_ADDR_RESOLVED);
	API_CHECK(!rdma_resolve_route(id, API_TIMEOUT_MS));
	cm_expect(*ec, RDMA_CM_EVENT_ROUTE_RESOLVED);
	API_CHECK_MSG(!rdma_create_qp(id, NULL, &qa), "rdma_create_qp: %s",
		      strerror(errno));
	API_CHECK(!rdma_connect(id, &cp));
	close(hold);
	return id;
}

static struct rdma_cm_id *cm_request(const struct rmca_hello *answer,
				     uint64_t token,
				     struct rdma_event_channel **ec)
{
	return cm_request_from(answer, token, ec, NULL);
}

static void cm_close(struct rdma_cm_id *id, struct rdma_event_channel *ec)
{
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ec);
}

/* The rdma_cm half of the handshake, by hand, up to ESTABLISHED, and
 * then gone: the verbs hello is never sent. */
static void cm_connect_and_vanish(const struct rmca_hello *answer,
				  uint64_t token)
{
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id = cm_request(answer, token, &ec);

	cm_expect(ec, RDMA_CM_EVENT_ESTABLISHED);
	/* gone, as a process that dies here would be */
	cm_close(id, ec);
}

/* The request was refused (rejected; iwarp may say so as an error). */
static void cm_expect_refused(struct rdma_event_channel *ec, const char *what)
{
	struct pollfd pfd = {.fd = ec->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;

	API_CHECK_MSG(poll(&pfd, 1, API_TIMEOUT_MS) == 1,
		      "%s: still waiting, never refused", what);
	API_CHECK(!rdma_get_cm_event(ec, &ev));
	got = ev->event;
	rdma_ack_cm_event(ev);
	API_CHECK_MSG(got == RDMA_CM_EVENT_REJECTED ||
			      got == RDMA_CM_EVENT_CONNECT_ERROR ||
			      got == RDMA_CM_EVENT_UNREACHABLE,
		      "%s: rdma_cm said %s", what, ev_name(got));
}

/* 1 when no event is there for ec now (the request still waits). */
static int cm_quiet(struct rdma_event_channel *ec)
{
	struct pollfd pfd = {.fd = ec->fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 0;
}
#endif

static void client_gone(struct api_peer *p)
{
	int port = api_client_read_port(p);
	struct rmca_hello answer;
	int fd;

	api_expect_token(p, 0, API_TOKEN_GO);
	fd = atk_connect(api_host(), port);
	verbs_hello(fd, GONE_TOKEN, &answer);
#ifdef HAVE_VERBS
	cm_connect_and_vanish(&answer, GONE_TOKEN);
#endif
	api_token(p, 0, TOKEN_ANSWERED);
	api_expect_token(p, 0, API_TOKEN_GO);
	/* The server learnt from rdma_cm that we left: it closed our
	 * bootstrap connection (a hang detector bounds the wait; the
	 * deadline, RMCA_connect_timeout, is far beyond it). */
	API_CHECK_MSG(atk_closed(fd, API_TIMEOUT_MS),
		      "the server kept the handshake of a peer that left");
	api_token(p, 0, TOKEN_CLOSED);
	close(fd);
}

/*
 * rdma_cm requests that no handshake names wait (parked) for one that may
 * come; a peer sends them at will, so at most RMCA_handshake_max wait and
 * each at most RMCA_connect_timeout. Both were unbounded (60 s each).
 */
static void park_server(struct api_peer *p)
{
	API_CHECK_OK(rmca_init(&p->ctx));
	if (!api_find_module(p->ctx, NULL))
		api_skip(p, "no module of this transport (no device here)");
	api_server_listen(p, api_host());
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	/* progresses meanwhile */
	api_expect_token(p, 0, TOKEN_DONE);
}

#define PARK_N 3 /* with RMCA_handshake_max=2 */

static void client_park_bound(struct api_peer *p)
{
	int port = api_client_read_port(p);
#ifdef HAVE_VERBS
	struct rdma_event_channel *ec[PARK_N];
	struct rdma_cm_id *id[PARK_N];
	struct rmca_hello answer;
	int fd, i, refused = -1;

	fd = atk_connect(api_host(), port);
	verbs_hello(fd, SILENT_TOKEN, &answer);
	for (i = 0; i < PARK_N; i++)
		id[i] = cm_request(&answer, GONE_TOKEN + 1 + i, &ec[i]);
	/* one of them (the oldest to arrive) is refused for the newest... */
	{
		struct pollfd pfd[PARK_N];

		for (i = 0; i < PARK_N; i++)
			pfd[i] = (struct pollfd){.fd = ec[i]->fd,
						 .events = POLLIN};
		API_CHECK_MSG(poll(pfd, PARK_N, API_TIMEOUT_MS) > 0,
			      "%d requests wait: no bound", PARK_N);
		for (i = 0; i < PARK_N && refused < 0; i++)
			if (pfd[i].revents)
				refused = i;
	}
	cm_expect_refused(ec[refused], "the request over the bound");
	/* ...and the others still wait */
	for (i = 0; i < PARK_N; i++)
		API_CHECK_MSG(i == refused || cm_quiet(ec[i]),
			      "request %d was refused too", i);
	for (i = 0; i < PARK_N; i++)
		cm_close(id[i], ec[i]);
	close(fd);
#endif
	api_token(p, 0, TOKEN_DONE);
}

/* One request carrying token, after a hello with SILENT_TOKEN; it must
 * be refused (what: why, for the failure's message). */
static void client_one_refused(struct api_peer *p, uint64_t token,
			       const char *what)
{
	int port = api_client_read_port(p);
#ifdef HAVE_VERBS
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id;
	struct rmca_hello answer;
	int fd;

	fd = atk_connect(api_host(), port);
	verbs_hello(fd, SILENT_TOKEN, &answer);
	id = cm_request(&answer, token, &ec);
	cm_expect_refused(ec, what);
	cm_close(id, ec);
	close(fd);
#else
	(void)token;
	(void)what;
#endif
	api_token(p, 0, TOKEN_DONE);
}

static void client_park_expires(struct api_peer *p)
{
	/* refused at its deadline, RMCA_connect_timeout, well within the
	 * hang detector */
	client_one_refused(p, GONE_TOKEN + 1,
			   "a parked request past its deadline");
}

/* A request of wire version 1, the rest of it as a current peer's: the
 * token the handshake waits for, accepted if the version were not
 * looked at. */
static void client_old_version(struct api_peer *p)
{
	req_magic = 0x726d6331u;
	client_one_refused(p, SILENT_TOKEN, "a request of wire version 1");
}

static void test_other_wire_version_is_refused(void **state)
{
	const struct api_test t = {.server = park_server,
				   .client = client_old_version,
				   .manual = true};
	char *log;

	(void)state;
	setenv("RMCA_atomic_mode", "cpu", 1);
	log = api_run_log(&t);
	unsetenv("RMCA_atomic_mode");
	if (!strstr(log, "connection refused: the peer speaks verbs wire "
			 "version 1, this side 2"))
		fail_msg("no refusal naming the versions in the log: %s", log);
	free(log);
}

static void test_parked_requests_are_bounded(void **state)
{
	const struct api_test t = {.server = park_server,
				   .client = client_park_bound,
				   .manual = true};

	(void)state;
	setenv("RMCA_handshake_max", "2", 1);
	setenv("RMCA_atomic_mode", "cpu", 1);
	api_run(&t);
	unsetenv("RMCA_handshake_max");
	unsetenv("RMCA_atomic_mode");
}

static void test_parked_requests_expire(void **state)
{
	const struct api_test t = {.server = park_server,
				   .client = client_park_expires,
				   .manual = true};

	(void)state;
	setenv("RMCA_connect_timeout", "1000", 1);
	setenv("RMCA_atomic_mode", "cpu", 1);
	api_run(&t);
	unsetenv("RMCA_connect_timeout");
	unsetenv("RMCA_atomic_mode");
}

/*
 * At the bound, the request that gives way is the oldest of the address
 * that parks the most, the newcomer counted with its own: a flooder from a
 * second address of the guest pushes out its own requests, not the one an
 * honest peer sent first (it went first: the oldest). FAIR_MAX places, one
 * request from the module's own address, then FAIR_FLOOD from the second:
 * the flooder's FAIR_FLOOD - FAIR_MAX + 1 are refused, the rest wait.
 */
#define FAIR_MAX   4
#define FAIR_FLOOD 8

/* the flooder's address, added for the case, and where while it is */
static const char *second_addr, *second_netdev;

static void client_park_fair(struct api_peer *p)
{
	int port = api_client_read_port(p);
#ifdef HAVE_VERBS
	struct rdma_event_channel *hec, *ec[FAIR_FLOOD];
	struct rdma_cm_id *honest, *id[FAIR_FLOOD];
	bool gone[FAIR_FLOOD] = {false};
	struct rmca_hello answer;
	struct sockaddr_in *local;
	int fd, i, nrefused = 0;

	fd = atk_connect(api_host(), port);
	verbs_hello(fd, SILENT_TOKEN, &answer);
	honest = cm_request(&answer, GONE_TOKEN + 1, &hec);
	for (i = 0; i < FAIR_FLOOD; i++) {
		id[i] = cm_request_from(&answer, GONE_TOKEN + 2 + i, &ec[i],
					second_addr);
		local = (struct sockaddr_in *)rdma_get_local_addr(id[i]);
		API_CHECK(local->sin_family == AF_INET &&
			  local->sin_addr.s_addr == inet_addr(second_addr));
	}
	while (nrefused < FAIR_FLOOD - FAIR_MAX + 1) {
		struct pollfd pfd[FAIR_FLOOD + 1];

		for (i = 0; i < FAIR_FLOOD; i++)
			pfd[i] = (struct pollfd){.fd = gone[i] ? -1 : ec[i]->fd,
						 .events = POLLIN};
		pfd[FAIR_FLOOD] =
			(struct pollfd){.fd = hec->fd, .events = POLLIN};
		API_CHECK_MSG(poll(pfd, FAIR_FLOOD + 1, API_TIMEOUT_MS) > 0,
			      "%d of the flooder's requests refused, %d "
			      "expected",
			      nrefused, FAIR_FLOOD - FAIR_MAX + 1);
		API_CHECK_MSG(!pfd[FAIR_FLOOD].revents,
			      "the first request, from elsewhere, was refused "
			      "for the flooder's");
		for (i = 0; i < FAIR_FLOOD; i++) {
			if (!pfd[i].revents)
				continue;
			cm_expect_refused(ec[i], "a flooder's request");
			gone[i] = true;
			nrefused++;
		}
	}
	API_CHECK_MSG(cm_quiet(hec), "the first request was refused");
	for (i = 0; i < FAIR_FLOOD; i++)
		API_CHECK_MSG(gone[i] || cm_quiet(ec[i]),
			      "more of the flooder's requests refused");
	cm_close(honest, hec);
	for (i = 0; i < FAIR_FLOOD; i++)
		cm_close(id[i], ec[i]);
	close(fd);
#endif
	api_token(p, 0, TOKEN_DONE);
}

static int sh(const char *fmt, const char *a, const char *b)
{
	char cmd[256];
	int st;

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_parked_flooder_gives_way_to_others(void **state)
{
	const struct api_test t = {.server = park_server,
				   .client = client_park_fair,
				   .manual = true};
	const char *dev = NULL, *netdev = NULL;
	char sys[64], ms[32];

	(void)state;
	if (!strcmp(api_transport(), "ib")) {
		dev = "rxe0", netdev = "dummy0", second_addr = "10.0.0.2";
	} else if (!strcmp(api_transport(), "iwarp")) {
		dev = "siw0", netdev = "dummy1", second_addr = "10.0.1.2";
	} else {
		TAP_SKIP("RMCA_transports=%s: ib or iwarp only",
			 api_transport());
	}
	snprintf(sys, sizeof(sys), "/sys/class/infiniband/%s", dev);
	if (access(sys, F_OK))
		TAP_SKIP("no %s here (the check-vm guest has one)", dev);
	if (geteuid() != 0)
		TAP_SKIP("a second address for the flooder needs root");
	if (sh("ip addr add %s/24 dev %s", second_addr, netdev))
		TAP_SKIP("no second address on %s here", netdev);
	second_netdev = netdev;
	/* far beyond any wait of the test: no request waits out its time */
	snprintf(ms, sizeof(ms), "%d", 10 * API_RUN_TIMEOUT_MS);
	setenv("RMCA_connect_timeout", ms, 1);
	setenv("RMCA_handshake_max", "4", 1); /* FAIR_MAX */
	setenv("RMCA_atomic_mode", "cpu", 1);
	api_run(&t);
	unsetenv("RMCA_connect_timeout");
	unsetenv("RMCA_handshake_max");
	unsetenv("RMCA_atomic_mode");
}

/* The guest as it was for the other tests, pass or fail. */
static int second_addr_del(void **state)
{
	(void)state;
	if (second_netdev)
		sh("ip addr del %s/24 dev %s", second_addr, second_netdev);
	second_netdev = NULL;
	return 0;
}

/* ---- a peer made and gone before the listener looked ---- */

#ifdef HAVE_VERBS
/* ESTABLISHED, with the passive side's private data in *pd. */
static void cm_established(struct rdma_event_channel *ec, struct vpdata *pd)
{
	struct pollfd pfd = {.fd = ec->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;
	bool have;

	API_CHECK_MSG(poll(&pfd, 1, API_TIMEOUT_MS) == 1,
		      "no rdma_cm event (waiting for ESTABLISHED)");
	API_CHECK(!rdma_get_cm_event(ec, &ev));
	got = ev->event;
	have = ev->param.conn.private_data &&
	       ev->param.conn.private_data_len >= sizeof(*pd);
	if (have)
		memcpy(pd, ev->param.conn.private_data, sizeof(*pd));
	rdma_ack_cm_event(ev);
	API_CHECK_MSG(got == RDMA_CM_EVENT_ESTABLISHED,
		      "rdma_cm said %s, expected ESTABLISHED", ev_name(got));
	API_CHECK_MSG(have, "no private data with ESTABLISHED");
}

/* The verbs hello, and a READ of the peer's control word behind it: RDMAP
 * and IB answer a READ only once the messages before it were placed. */
static void hello_placed(struct rdma_cm_id *id, const struct vpdata *pd)
{
	static uint64_t words[2];
	struct ibv_mr *mr =
		ibv_reg_mr(id->qp->pd, words, sizeof(words),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_sge hello = {.addr = (uintptr_t)&words[0], .length = 8},
		       rd = {.addr = (uintptr_t)&words[1], .length = 8};
	struct ibv_send_wr w[2] = {
		{.wr_id = 1,
		 .sg_list = &hello,
		 .num_sge = 1,
		 .opcode = IBV_WR_SEND,
		 .next = &w[1]},
		{.wr_id = 2,
		 .sg_list = &rd,
		 .num_sge = 1,
		 .opcode = IBV_WR_RDMA_READ,
		 .send_flags = IBV_SEND_SIGNALED,
		 .wr.rdma = {.remote_addr = le64toh(pd->ctl_addr),
			     .rkey = le32toh(pd->ctl_rkey)}}};
	struct ibv_send_wr *bad;
	long end = api_now_ms() + API_TIMEOUT_MS;
	struct ibv_wc wc;
	int n;

	API_CHECK(mr);
	hello.lkey = rd.lkey = mr->lkey;
	words[0] = LEFT_TOKEN;
	API_CHECK_MSG(!ibv_post_send(id->qp, w, &bad), "post: %s",
		      strerror(errno));
	while (!(n = ibv_poll_cq(id->qp->send_cq, 1, &wc)))
		API_CHECK_MSG(api_now_ms() < end, "the READ never came back");
	API_CHECK(n == 1 && wc.wr_id == 2);
	API_CHECK_MSG(wc.status == IBV_WC_SUCCESS, "READ: %s",
		      ibv_wc_status_str(wc.status));
	ibv_dereg_mr(mr);
}
#endif

/* Made (hello placed), then gone, while the server makes no call. */
static void client_made_and_gone(struct api_peer *p)
{
	int port = api_client_read_port(p);
#ifdef HAVE_VERBS
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id;
	struct rmca_hello answer;
	struct vpdata pd;
	int fd;

	fd = atk_connect(api_host(), port);
	verbs_hello(fd, LEFT_TOKEN, &answer);
	id = cm_request(&answer, LEFT_TOKEN, &ec);
	cm_established(ec, &pd);
	api_token(p, 0, TOKEN_EST);
	api_expect_token(p, 0, TOKEN_STOPPED);
	hello_placed(id, &pd);
	API_CHECK(!rdma_disconnect(id));
	/* On iwarp ours ends once the server's side has closed, its event
	 * queued; ib's waits for the server's answer, which it gives only
	 * when it looks (its event comes with the request, at once). */
	if (!strcmp(api_transport(), "iwarp"))
		cm_expect(ec, RDMA_CM_EVENT_DISCONNECTED);
	cm_close(id, ec);
	api_token(p, 0, TOKEN_LEFT);
	api_expect_token(p, 0, TOKEN_DONE);
	close(fd);
#else
	api_token(p, 0, TOKEN_DONE);
#endif
}

static void made_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	rmca_ep_t *ep = NULL;
	rmca_mr_t *mr;
	uint64_t v;

	API_CHECK_OK(rmca_init(&p->ctx));
	if (!api_find_module(p->ctx, NULL))
		api_skip(p, "no module of this transport (no device here)");
	api_server_listen(p, api_host());
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	/* progresses meanwhile: the hello answered, the request accepted */
	api_expect_token(p, 0, TOKEN_EST);
	/* From here no call on the context until the peer has gone: the
	 * next pass finds its hello and its disconnect together. */
	api_token(p, 0, TOKEN_STOPPED);
	API_CHECK(read(p->link[0].rd, &v, sizeof(v)) == sizeof(v) &&
		  v == TOKEN_LEFT);
	API_CHECK_OK(rmca_accept(p->l, API_TIMEOUT_MS, &ep));
	API_CHECK_OK(rmca_recv(ep, buf, 64, mr, API_CTX(1)));
	api_wait_status(p, API_CTX(1), RMCA_ERR_CONNECTION);
	rmca_ep_close(ep);
	api_token(p, 0, TOKEN_DONE);
}

static void test_peer_made_and_gone_is_accepted(void **state)
{
	const struct api_test t = {.server = made_server,
				   .client = client_made_and_gone,
				   .manual = true};

	(void)state;
	setenv("RMCA_atomic_mode", "cpu", 1);
	api_run(&t);
	unsetenv("RMCA_atomic_mode");
}

static void client_late(struct api_peer *p)
{
	int port = api_client_read_port(p);
	uint8_t *buf = api_alloc(64);
	char hp[128];
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_init(&p->ctx));
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	api_expect_token(p, 0, API_TOKEN_GO);
	api_host_port(hp, sizeof(hp), api_host(), port);
	API_CHECK_OK(rmca_connect(p->ctx, hp, API_TIMEOUT_MS, &p->ep));
	API_CHECK(api_recv_wait(p, p->ep, buf, 64, mr) == 7);
	API_CHECK(!strcmp((char *)buf, "served"));
	api_token(p, 0, TOKEN_DONE);
	api_expect_token(p, 0, TOKEN_DONE); /* as client_est */
}

static void client(struct api_peer *p)
{
	static api_fn *const role[] = {
		[C_EST] = client_est,
		[C_SILENT] = client_silent,
		[C_GONE] = client_gone,
		[C_LATE] = client_late,
	};

	role[p->index](p);
}

static void test_silent_and_vanished_peers_do_not_block(void **state)
{
	const struct api_test t = {.server = server,
				   .client = client,
				   .nclients = 4,
				   .manual = true};
	char ms[32];

	(void)state;
	/* far beyond any wait of the test: the silent handshake stays
	 * pending while the others are served */
	snprintf(ms, sizeof(ms), "%d", 10 * API_RUN_TIMEOUT_MS);
	setenv("RMCA_connect_timeout", ms, 1);
	setenv("RMCA_atomic_mode", "cpu", 1);
	api_run(&t);
	unsetenv("RMCA_connect_timeout");
	unsetenv("RMCA_atomic_mode");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_silent_and_vanished_peers_do_not_block),
		cmocka_unit_test(test_parked_requests_are_bounded),
		cmocka_unit_test(test_parked_requests_expire),
		cmocka_unit_test(test_peer_made_and_gone_is_accepted),
		cmocka_unit_test_teardown(test_other_wire_version_is_refused,
					  api_log_show),
		cmocka_unit_test_teardown(
			test_parked_flooder_gives_way_to_others,
			second_addr_del),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
