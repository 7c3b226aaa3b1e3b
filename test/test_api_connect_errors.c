/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contract: rmca_connect says why it failed. Nothing listening:
 * RMCA_ERR_CONNECTION; a name that does not resolve, a malformed address or
 * port 0: RMCA_ERR_INVALID; no common transport: RMCA_ERR_UNREACHABLE;
 * atomic modes that differ: RMCA_ERR_PROTOCOL. Each failure logs one line at
 * level 0 naming the address and the reason, and the atomic-mode refusal
 * reads right from the side that prints it.
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rmca.h>
#include <rmca/info.h>

/* stderr of the calls between start and stop, in a file. */
struct capture {
	char path[64];
	int saved;
};

static void capture_start(struct capture *c)
{
	int fd;

	snprintf(c->path, sizeof(c->path), "/tmp/rmca-connect-err-XXXXXX");
	fd = mkstemp(c->path);
	assert_true(fd >= 0);
	fflush(stderr);
	c->saved = dup(STDERR_FILENO);
	assert_true(dup2(fd, STDERR_FILENO) >= 0);
	close(fd);
}

static char *capture_stop(struct capture *c)
{
	static char text[65536];
	FILE *f;
	size_t n;

	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	f = fopen(c->path, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	unlink(c->path);
	fprintf(stderr, "%s", text);
	return text;
}

/* Lines of text naming hp (the listener's own lines, in the threaded
 * cases, name the client instead). */
static int count_lines(const char *text, const char *hp)
{
	int n = 0;

	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		const char *hit = strstr(l, hp);

		n += hit && hit < l + len;
		l += len + (nl ? 1 : 0);
	}
	return n;
}

/* rmca_connect(hp) must return want and log one line naming hp and
 * containing reason. */
static void expect_connect(rmca_context_t *ctx, const char *hp, int want,
			   const char *reason)
{
	struct capture c;
	rmca_ep_t *ep = NULL;
	const char *log;
	int rc;

	capture_start(&c);
	rc = rmca_connect(ctx, hp, 5000, &ep);
	log = capture_stop(&c);
	if (rc != want)
		fail_msg("rmca_connect(%s) returned %d (%s), expected %d (%s)",
			 hp, rc, rmca_strerror(rc), want, rmca_strerror(want));
	assert_null(ep);
	if (count_lines(log, hp) != 1 || !strstr(log, hp) ||
	    !strstr(log, reason))
		fail_msg("rmca_connect(%s): expected one line naming it and "
			 "'%s', logged:\n%s",
			 hp, reason, log);
}

/* A port where nothing listens: bound, never listening. */
static int dead_port(int *fd)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);

	*fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*fd >= 0);
	assert_int_equal(bind(*fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&sa, &sl), 0);
	return ntohs(sa.sin_port);
}

static void test_nothing_listening(void **state)
{
	rmca_context_t *ctx;
	char hp[64];
	int fd, port;

	(void)state;
	port = dead_port(&fd);
	snprintf(hp, sizeof(hp), "127.0.0.1:%d", port);
	assert_int_equal(rmca_init(&ctx), 0);
	expect_connect(ctx, hp, RMCA_ERR_CONNECTION, "nothing listening");
	rmca_finalize(ctx);
	close(fd);
}

static void test_bad_addresses(void **state)
{
	rmca_context_t *ctx;

	(void)state;
	assert_int_equal(rmca_init(&ctx), 0);
	expect_connect(ctx, "no-such-host.invalid:4791", RMCA_ERR_INVALID,
		       "does not resolve");
	expect_connect(ctx, "127.0.0.1:0", RMCA_ERR_INVALID, "port 0");
	expect_connect(ctx, "127.0.0.1", RMCA_ERR_INVALID,
		       "HOST:PORT expected (IPv6 as [addr]:port)");
	expect_connect(ctx, "::1:80", RMCA_ERR_INVALID,
		       "HOST:PORT expected (IPv6 as [addr]:port)");
	rmca_finalize(ctx);
}

static void test_explain_bad_address(void **state)
{
	rmca_context_t *ctx;
	char text[1024];

	(void)state;
	assert_int_equal(rmca_init(&ctx), 0);
	assert_int_equal(
		rmca_info_explain(ctx, "localhost", 1000, text, sizeof(text)),
		RMCA_ERR_INVALID);
	if (!strstr(text, "HOST:PORT expected (IPv6 as [addr]:port)"))
		fail_msg("--explain on a malformed address said: %s", text);
	rmca_finalize(ctx);
}

/* ---- a listener in another thread (contexts are independent) ---- */

struct server {
	rmca_context_t *ctx;
	rmca_listener_t *l;
	volatile int stop;
};

static void *serve(void *arg)
{
	struct server *s = arg;

	while (!s->stop) {
		rmca_ep_t *ep = NULL;

		if (rmca_accept(s->l, 50, &ep) == RMCA_OK)
			rmca_ep_close(ep);
	}
	return NULL;
}

/* Contexts read RMCA_* at rmca_init: each side gets its own. */
static rmca_context_t *init_with(const char *name, const char *value)
{
	rmca_context_t *ctx;

	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
	assert_int_equal(rmca_init(&ctx), 0);
	unsetenv(name);
	return ctx;
}

static void run_against(struct server *s, rmca_context_t *client, int want,
			const char *reason)
{
	pthread_t t;
	char hp[64];

	assert_int_equal(rmca_listen(s->ctx, "127.0.0.1:0", &s->l), 0);
	snprintf(hp, sizeof(hp), "127.0.0.1:%d", rmca_listener_port(s->l));
	s->stop = 0;
	assert_int_equal(pthread_create(&t, NULL, serve, s), 0);
	expect_connect(client, hp, want, reason);
	s->stop = 1;
	pthread_join(t, NULL);
	rmca_listener_close(s->l);
}

static void test_atomic_mode_differs(void **state)
{
	struct server s;
	rmca_context_t *client;

	(void)state;
	s.ctx = init_with("RMCA_atomic_mode", "cpu");
	client = init_with("RMCA_atomic_mode", "device");
	/* Read from the client: it is the connecting side, in device mode. */
	run_against(&s, client, RMCA_ERR_PROTOCOL,
		    "listener cpu, connecting side device");
	rmca_finalize(client);
	rmca_finalize(s.ctx);
}

static void test_no_common_transport(void **state)
{
	struct server s;
	rmca_context_t *client;

	(void)state;
	s.ctx = init_with("RMCA_tcp_caps", NULL);
	/* The client offers nothing loopback can use: tcp without loopback. */
	client = init_with("RMCA_tcp_caps", "^loopback");
	run_against(&s, client, RMCA_ERR_UNREACHABLE,
		    "no enabled transport reaches the peer");
	rmca_finalize(client);
	rmca_finalize(s.ctx);
}

/* ---- log lines name what happened ---- */

struct closer {
	rmca_context_t *ctx;
	rmca_listener_t *l;
	const char *log; /* the file stderr goes to */
};

static bool file_has(const char *path, const char *what)
{
	static char text[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return strstr(text, what) != NULL;
}

/* Accept, then keep progressing (no operation posted: the close is seen
 * by the endpoint alone) until a line about the peer's end is out. */
static void *serve_until_closed(void *arg)
{
	struct closer *c = arg;
	struct rmca_completion comp;
	rmca_ep_t *ep = NULL;

	if (rmca_accept(c->l, 5000, &ep))
		return NULL;
	for (int i = 0; i < 5000; i++) {
		rmca_poll(c->ctx, &comp, 1);
		fflush(stderr);
		if (file_has(c->log, "closed by the peer") ||
		    file_has(c->log, "connection failed"))
			break;
		usleep(1000);
	}
	rmca_ep_close(ep);
	return NULL;
}

/* Issue 8.5: a peer's rmca_ep_close is logged as a close, not as a failed
 * connection. */
static void test_normal_close_is_no_failure(void **state)
{
	struct closer c;
	rmca_context_t *client;
	rmca_ep_t *ep;
	struct capture cap;
	const char *log;
	pthread_t t;
	char hp[64];

	(void)state;
	/* The level is the process's: the last rmca_init sets it. */
	client = init_with("RMCA_verbose", NULL);
	c.ctx = init_with("RMCA_verbose", "1");
	assert_int_equal(rmca_listen(c.ctx, "127.0.0.1:0", &c.l), 0);
	snprintf(hp, sizeof(hp), "127.0.0.1:%d", rmca_listener_port(c.l));
	capture_start(&cap);
	c.log = cap.path;
	assert_int_equal(pthread_create(&t, NULL, serve_until_closed, &c), 0);
	if (rmca_connect(client, hp, 5000, &ep) == RMCA_OK)
		rmca_ep_close(ep);
	pthread_join(t, NULL);
	log = capture_stop(&cap);
	if (strstr(log, "connection failed") ||
	    !strstr(log, "closed by the peer"))
		fail_msg("a normal close was logged as:\n%s", log);
	rmca_finalize(client);
	rmca_finalize(c.ctx);
}

static void *accept_for_a_while(void *arg)
{
	struct server *s = arg;

	for (int i = 0; i < 40 && !s->stop; i++) {
		rmca_ep_t *ep = NULL;

		if (rmca_accept(s->l, 50, &ep) == RMCA_OK)
			rmca_ep_close(ep);
	}
	return NULL;
}

/* Issue 8.5: a peer that is gone by the time its line is written is still
 * named (it was "?:?"). */
static void test_departed_peer_is_named(void **state)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	struct capture cap;
	struct server s;
	const char *log;
	pthread_t t;
	int fd;

	(void)state;
	s.ctx = init_with("RMCA_verbose", NULL);
	s.stop = 0;
	assert_int_equal(rmca_listen(s.ctx, "127.0.0.1:0", &s.l), 0);
	sa.sin_port = htons((uint16_t)rmca_listener_port(s.l));
	capture_start(&cap);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, "\x10\x00", 2), 2);
	/* Gone with a reset: the listener can no longer ask who it was. */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
	assert_int_equal(pthread_create(&t, NULL, accept_for_a_while, &s), 0);
	pthread_join(t, NULL);
	log = capture_stop(&cap);
	if (strstr(log, "?:?") || !strstr(log, "bootstrap from 127.0.0.1:"))
		fail_msg("the departed peer was logged as:\n%s", log);
	rmca_listener_close(s.l);
	rmca_finalize(s.ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_listening),
		cmocka_unit_test(test_bad_addresses),
		cmocka_unit_test(test_explain_bad_address),
		cmocka_unit_test(test_atomic_mode_differs),
		cmocka_unit_test(test_no_common_transport),
		cmocka_unit_test(test_normal_close_is_no_failure),
		cmocka_unit_test(test_departed_peer_is_named),
	};

	setenv("RMCA_transports", "tcp", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
