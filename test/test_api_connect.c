/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contract: init/finalize, listen/accept/connect, rmca_ep_query.
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

static void init_twice(struct api_peer *p)
{
	rmca_context_t *a = NULL, *b = NULL;

	(void)p;
	API_CHECK_OK(rmca_init(&a));
	API_CHECK(a != NULL);
	/* Separate contexts are independent. */
	API_CHECK_OK(rmca_init(&b));
	API_CHECK(b != NULL && b != a);
	rmca_finalize(a);
	rmca_finalize(b);
	API_CHECK_OK(rmca_init(&a));
	rmca_finalize(a);
}

static void test_init_finalize_twice(void **state)
{
	const struct api_test t = {.server = init_twice, .manual = true};

	(void)state;
	api_run(&t);
}

static void listen_any_port(struct api_peer *p)
{
	rmca_listener_t *l2 = NULL;
	char hp[128];
	int a, b;

	api_server_listen(p, api_host());
	a = rmca_listener_port(p->l);
	API_CHECK_MSG(a > 0 && a < 65536, "rmca_listener_port: %d", a);

	api_host_port(hp, sizeof(hp), api_host(), 0);
	API_CHECK_OK(rmca_listen(p->ctx, hp, &l2));
	b = rmca_listener_port(l2);
	API_CHECK_MSG(b > 0 && b < 65536 && b != a,
		      "second listener on port 0 got %d (first %d)", b, a);
	rmca_listener_close(l2);
	rmca_listener_close(p->l);
}

static void test_listen_on_port_zero_gives_a_port(void **state)
{
	const struct api_test t = {.server = listen_any_port, .manual = true};

	(void)state;
	api_run(&t);
}

/* How often this thread has gone to sleep (not how long it ran, nor how
 * often it was preempted). */
static long thread_sleeps(void)
{
	struct rusage ru;

	API_CHECK(getrusage(RUSAGE_THREAD, &ru) == 0);
	return ru.ru_nvcsw;
}

static void accept_times_out(struct api_peer *p)
{
	rmca_ep_t *ep = NULL;
	long t0, dt, n;

	api_server_listen(p, api_host());

	/* Timeout 0 looks and never waits: counted in sleeps, not timed,
	 * so that a machine that preempts the call for a while passes. */
	n = thread_sleeps();
	API_CHECK_RC(rmca_accept(p->l, 0, &ep), RMCA_ERR_TIMEOUT);
	n = thread_sleeps() - n;
	API_CHECK_MSG(n == 0, "accept with timeout 0 slept %ld times", n);

	t0 = api_now_ms();
	API_CHECK_RC(rmca_accept(p->l, 200, &ep), RMCA_ERR_TIMEOUT);
	dt = api_now_ms() - t0;
	API_CHECK_MSG(dt >= 190 && dt < 1500,
		      "accept with timeout 200 ms returned after %ld ms", dt);
}

static void test_accept_times_out_when_nobody_connects(void **state)
{
	const struct api_test t = {.server = accept_times_out, .manual = true};

	(void)state;
	api_run(&t);
}

/* A port on host where nobody listens (just bound and released). */
static int dead_port(const char *host)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICHOST};
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *ai;
	int fd, port;

	API_CHECK_MSG(getaddrinfo(host, "0", &hints, &ai) == 0,
		      "cannot parse host %s", host);
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	API_CHECK(fd >= 0);
	API_CHECK(bind(fd, ai->ai_addr, ai->ai_addrlen) == 0);
	API_CHECK(getsockname(fd, (struct sockaddr *)&ss, &sl) == 0);
	port = ntohs(ss.ss_family == AF_INET6
			     ? ((struct sockaddr_in6 *)&ss)->sin6_port
			     : ((struct sockaddr_in *)&ss)->sin_port);
	close(fd);
	freeaddrinfo(ai);
	return port;
}

static void connect_nobody(struct api_peer *p)
{
	rmca_ep_t *ep = NULL;
	char hp[128];
	int rc;

	API_CHECK_OK(rmca_init(&p->ctx));
	api_host_port(hp, sizeof(hp), api_host(), dead_port(api_host()));
	rc = rmca_connect(p->ctx, hp, 1000, &ep);
	API_CHECK_MSG(rc == RMCA_ERR_UNREACHABLE || rc == RMCA_ERR_CONNECTION ||
			      rc == RMCA_ERR_TIMEOUT,
		      "connect to %s where nobody listens returned %d (%s)", hp,
		      rc, api_strerror(rc));
}

static void test_connect_where_nobody_listens_fails(void **state)
{
	const struct api_test t = {.server = connect_nobody, .manual = true};

	(void)state;
	api_run(&t);
}

/*
 * IPv6: "::1" on tcp runs; under another transport (RMCATEST_HOST set) the
 * loopback is not on the RDMA device, so RMCATEST_HOST6 must name one.
 */
static const char *host6(void)
{
	const char *h = getenv("RMCATEST_HOST6");

	if (h && *h)
		return h;
	if (getenv("RMCATEST_HOST") && *getenv("RMCATEST_HOST"))
		return NULL;
	return "::1";
}

static bool have_host6(const char *h)
{
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6};
	int fd, ok;

	if (!h || inet_pton(AF_INET6, h, &sa.sin6_addr) != 1)
		return false;
	fd = socket(AF_INET6, SOCK_STREAM, 0);
	if (fd < 0)
		return false;
	ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

static void ipv6_server(struct api_peer *p)
{
	char buf[32] = "";
	rmca_mr_t *mr;

	if (!have_host6(host6()))
		api_skip(p, "no IPv6 loopback address here");
	api_server_listen(p, host6());
	api_server_accept_all(p);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, sizeof(buf), RMCA_ACCESS_LOCAL, &mr));
	API_CHECK(api_recv_wait(p, p->ep, buf, sizeof(buf), mr) == 5);
	API_CHECK(memcmp(buf, "ping", 5) == 0);
	memcpy(buf, "pong", 5);
	api_send_wait(p, p->ep, buf, 5, mr);
	api_expect_token(p, 0, API_TOKEN_GO);
	rmca_finalize(p->ctx);
	p->ctx = NULL;
}

static void ipv6_client(struct api_peer *p)
{
	static char buf[32] = "ping";
	rmca_mr_t *mr;

	api_client_connect(p, host6());
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, sizeof(buf), RMCA_ACCESS_LOCAL, &mr));
	api_send_wait(p, p->ep, buf, 5, mr);
	memset(buf, 0, sizeof(buf));
	API_CHECK(api_recv_wait(p, p->ep, buf, sizeof(buf), mr) == 5);
	API_CHECK(memcmp(buf, "pong", 5) == 0);
	api_token(p, 0, API_TOKEN_GO);
}

static void test_ipv6_literal_host_port_works(void **state)
{
	const struct api_test t = {
		.server = ipv6_server, .client = ipv6_client, .manual = true};

	(void)state;
	api_run(&t);
}

static void check_ep_attr(rmca_ep_t *ep)
{
	const char *want = getenv("RMCA_transports");
	struct rmca_ep_attr a;

	memset(&a, 0x7f, sizeof(a));
	API_CHECK_OK(rmca_ep_query(ep, &a));
	API_CHECK_MSG(memchr(a.transport, 0, sizeof(a.transport)) &&
			      a.transport[0],
		      "transport name empty or not terminated");
	API_CHECK_MSG(memchr(a.device, 0, sizeof(a.device)) && a.device[0],
		      "device name empty or not terminated");
	/* A single transport asked for is the one that serves. */
	if (want && *want && !strpbrk(want, ",^"))
		API_CHECK_MSG(strcmp(a.transport, want) == 0,
			      "RMCA_transports=%s but transport is \"%s\"",
			      want, a.transport);
	API_CHECK_MSG(a.peer_is_local == 1, "peer_is_local = %d on one host",
		      a.peer_is_local);
	/* Every transport can deliver a put and revoke a key, one way or
	 * another. */
	API_CHECK_MSG(a.put_delivered == RMCA_PATH_NATIVE ||
			      a.put_delivered == RMCA_PATH_FLUSH,
		      "put_delivered path %d", a.put_delivered);
	API_CHECK_MSG(a.send_inv == RMCA_PATH_NATIVE ||
			      a.send_inv == RMCA_PATH_REVOKE_MSG,
		      "send_inv path %d", a.send_inv);
	API_CHECK_RC(rmca_ep_query(NULL, &a), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_ep_query(ep, NULL), RMCA_ERR_INVALID);
}

static void query_server(struct api_peer *p)
{
	check_ep_attr(p->ep);
}

static void query_client(struct api_peer *p)
{
	check_ep_attr(p->ep);
}

static void test_ep_query_names_transport_and_device(void **state)
{
	const struct api_test t = {.server = query_server,
				   .client = query_client};

	(void)state;
	api_run(&t);
}

/* The listener serves one client after the other; each gets its own ep. */
static void several_server(struct api_peer *p)
{
	uint32_t got[API_MAX_CLIENTS] = {0};
	rmca_mr_t *mr;
	int i, j;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, got, sizeof(got), RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < p->nclients; i++) {
		for (j = 0; j < i; j++)
			API_CHECK(p->eps[i] != p->eps[j]);
		API_CHECK(api_recv_wait(p, p->eps[i], &got[i], 4, mr) == 4);
		API_CHECK_MSG(got[i] == 1000u + (unsigned)i,
			      "endpoint %d got the message of client %u", i,
			      got[i] - 1000u);
	}
}

static void several_client(struct api_peer *p)
{
	uint32_t v = 1000u + (unsigned)p->index;
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, &v, sizeof(v), RMCA_ACCESS_LOCAL, &mr));
	api_send_wait(p, p->ep, &v, 4, mr);
}

static void test_listener_serves_several_clients(void **state)
{
	const struct api_test t = {.server = several_server,
				   .client = several_client,
				   .nclients = 3};

	(void)state;
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_finalize_twice),
		cmocka_unit_test(test_listen_on_port_zero_gives_a_port),
		cmocka_unit_test(test_accept_times_out_when_nobody_connects),
		cmocka_unit_test(test_connect_where_nobody_listens_fails),
		cmocka_unit_test(test_ipv6_literal_host_port_works),
		cmocka_unit_test(test_ep_query_names_transport_and_device),
		cmocka_unit_test(test_listener_serves_several_clients),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
