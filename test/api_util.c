/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fork, pipes and bounded waiting for the public-contract tests.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>
#include <rmca/info.h>
#include <rmca/support/clock.h>

#include "api_util.h"

/* Which process speaks in a diagnostic line. */
static char api_role[32] = "parent";

static struct rmca_completion stash[API_MAX_STASH];
static int nstash;

static const uint64_t api_token_bye = 0xb7eull;

const char *api_strerror(int status)
{
	const char *s = rmca_strerror(status);

	return s ? s : "(null)";
}

void api_die(const char *file, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One write per line: children share the log with each other. */
	dprintf(STDERR_FILENO, "api[%s]: %s:%d: %s\n", api_role, file, line,
		msg);
	_exit(API_EXIT_FAIL);
}

void api_skip(struct api_peer *p, const char *why)
{
	int i, n = p->is_server ? p->nclients : 1;

	dprintf(STDERR_FILENO, "api[%s]: skipped: %s\n", api_role, why);
	/* The reason on the TAP stream, for the parent's skip (tap_skip.h);
	 * one write, so it never interleaves with another child's line. */
	dprintf(STDOUT_FILENO, "# skip: %s: %s\n", api_role, why);
	/* Let the other side know so that it skips rather than fails. */
	for (i = 0; i < n; i++)
		if (p->link[i].wr >= 0) {
			uint64_t t = API_TOKEN_SKIP;

			if (write(p->link[i].wr, &t, sizeof(t)) < 0)
				continue;
		}
	_exit(API_EXIT_SKIP);
}

const char *api_host(void)
{
	const char *h = getenv("RMCATEST_HOST");

	return h && *h ? h : "127.0.0.1";
}

const char *api_transport(void)
{
	const char *t = getenv("RMCA_transports");

	return t && *t ? t : "ib";
}

bool api_find_module(rmca_context_t *ctx, struct rmca_info_module *out)
{
	struct rmca_info_module m;

	for (int i = 0; !rmca_info_module(ctx, i, &m); i++)
		if (!strcmp(m.component, api_transport())) {
			if (out)
				*out = m;
			return true;
		}
	return false;
}

#define API_MAX_COMPS 16

/* The components this process's rmca loads (what rmca_init_inspect finds:
 * children inherit the environment, so they load the same), once. */
static int api_comps(const char ***names)
{
	static const char *comp[API_MAX_COMPS];
	static int ncomp = -1;
	struct rmca_info_component c;
	rmca_context_t *ctx;

	*names = comp;
	if (ncomp >= 0)
		return ncomp;
	ncomp = 0;
	if (rmca_init_inspect(&ctx))
		fail_msg("rmca_init_inspect failed");
	for (int i = 0;
	     ncomp < API_MAX_COMPS && !rmca_info_component(ctx, i, &c); i++) {
		if (!c.name)
			continue;
		comp[ncomp] = strdup(c.name);
		if (!comp[ncomp])
			fail_msg("out of memory");
		ncomp++;
	}
	rmca_finalize(ctx);
	return ncomp;
}

/* What api_caps_mask_push changed: each variable's name and the value it
 * had (NULL: unset). */
static struct {
	char name[64];
	char *old;
} caps_saved[API_MAX_COMPS];
static int ncaps_saved;

void api_caps_mask_push(const char *caps)
{
	const char **comp;
	int n = api_comps(&comp);

	api_caps_mask_pop();
	for (int i = 0; i < n; i++) {
		char *name = caps_saved[i].name, mask[256];
		const char *old;
		int len;

		snprintf(name, sizeof(caps_saved[i].name), "RMCA_%s_caps",
			 comp[i]);
		old = getenv(name);
		caps_saved[i].old = old ? strdup(old) : NULL;
		if (old && !caps_saved[i].old)
			fail_msg("out of memory");
		/* "^a,^b" and "^a,b" say the same (a leading caret applies
		 * to the whole list): the old mask and caps joined */
		len = old && *old
			      ? snprintf(mask, sizeof(mask), "%s,%s", old, caps)
			      : snprintf(mask, sizeof(mask), "%s", caps);
		if (len < 0 || (size_t)len >= sizeof(mask))
			fail_msg("%s: mask too long", name);
		setenv(name, mask, 1);
		ncaps_saved = i + 1;
	}
}

void api_caps_mask_pop(void)
{
	for (int i = 0; i < ncaps_saved; i++) {
		if (caps_saved[i].old)
			setenv(caps_saved[i].name, caps_saved[i].old, 1);
		else
			unsetenv(caps_saved[i].name);
		free(caps_saved[i].old);
		caps_saved[i].old = NULL;
	}
	ncaps_saved = 0;
}

void api_host_port(char *buf, size_t size, const char *host, int port)
{
	if (strchr(host, ':') && host[0] != '[')
		snprintf(buf, size, "[%s]:%d", host, port);
	else
		snprintf(buf, size, "%s:%d", host, port);
}

int api_timeout_scale(void)
{
	const char *s = getenv("RMCATEST_TIMEOUT_SCALE");
	int v = s ? atoi(s) : 1;

	return v >= 1 && v <= 100 ? v : 1;
}

long api_now_ms(void)
{
	return (long)rmca_now_ms();
}

void api_sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000,
			      .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static uint8_t pattern_byte(size_t i, unsigned seed)
{
	uint32_t x = (uint32_t)i * 2654435761u + seed * 40503u + seed;

	return (uint8_t)(x ^ (x >> 13) ^ (i >> 8));
}

void api_pattern(void *buf, size_t len, unsigned seed)
{
	uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = pattern_byte(i, seed);
}

long api_pattern_check(const void *buf, size_t len, unsigned seed)
{
	const uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != pattern_byte(i, seed))
			return (long)i;
	return -1;
}

void *api_alloc(size_t len)
{
	void *p = NULL;

	API_CHECK_MSG(posix_memalign(&p, 4096, len ? len : 1) == 0,
		      "out of memory for %zu bytes", len);
	memset(p, 0, len);
	return p;
}

/* ---- completions ---- */

int api_progress(struct api_peer *p)
{
	struct rmca_completion c[16];
	int i, n;

	memset(c, 0, sizeof(c));
	n = rmca_poll(p->ctx, c, 16);
	API_CHECK_MSG(n >= 0 && n <= 16, "rmca_poll returned %d (%s)", n,
		      n < 0 ? api_strerror(n) : "more than max");
	for (i = 0; i < n; i++) {
		/* The contract: only the RECV of a send_inv revokes. */
		API_CHECK_MSG(
			c[i].op == RMCA_OP_RECV || !c[i].revoked_rkey,
			"completion of op %d (ctx %p) has revoked_rkey %#llx",
			c[i].op, c[i].user_ctx,
			(unsigned long long)c[i].revoked_rkey);
		API_CHECK_MSG(nstash < API_MAX_STASH, "too many completions");
		stash[nstash++] = c[i];
	}
	return n;
}

/* Sleep until the context may have something, at most ms. */
static void api_idle(struct api_peer *p, int extra_fd, int ms)
{
	struct pollfd pf[2];
	int n = 0;
	int wfd = p->ctx ? rmca_wait_fd(p->ctx) : -1;

	if (extra_fd >= 0)
		pf[n++] = (struct pollfd){.fd = extra_fd, .events = POLLIN};
	if (wfd >= 0)
		pf[n++] = (struct pollfd){.fd = wfd, .events = POLLIN};
	if (n)
		poll(pf, n, ms);
	else
		api_sleep_ms(ms);
}

void api_progress_for(struct api_peer *p, int ms)
{
	long end = api_now_ms() + ms;

	while (api_now_ms() < end) {
		if (!api_progress(p))
			api_idle(p, -1, 1);
	}
}

bool api_take(void *user_ctx, struct rmca_completion *c)
{
	int i;

	for (i = 0; i < nstash; i++) {
		if (stash[i].user_ctx != user_ctx)
			continue;
		if (c)
			*c = stash[i];
		memmove(&stash[i], &stash[i + 1],
			(size_t)(nstash - i - 1) * sizeof(stash[0]));
		nstash--;
		return true;
	}
	return false;
}

int api_stashed(void)
{
	return nstash;
}

const struct rmca_completion *api_stash_at(int i)
{
	return &stash[i];
}

void api_stash_clear(void)
{
	nstash = 0;
}

void api_wait(struct api_peer *p, void *user_ctx, struct rmca_completion *c)
{
	long end = api_now_ms() + API_TIMEOUT_MS;

	for (;;) {
		if (api_take(user_ctx, c))
			return;
		if (api_progress(p))
			continue;
		API_CHECK_MSG(api_now_ms() < end,
			      "no completion for ctx %p within %d ms", user_ctx,
			      API_TIMEOUT_MS);
		api_idle(p, -1, 1);
	}
}

void api_wait_status(struct api_peer *p, void *user_ctx, int want)
{
	struct rmca_completion c;

	api_wait(p, user_ctx, &c);
	API_CHECK_MSG(c.status == want,
		      "completion of ctx %p (op %d): status %d (%s), expected "
		      "%d (%s)",
		      user_ctx, c.op, c.status, api_strerror(c.status), want,
		      api_strerror(want));
}

void api_send_wait(struct api_peer *p, rmca_ep_t *ep, const void *buf,
		   size_t len, rmca_mr_t *mr)
{
	void *uc = API_CTX(0x5e4d);
	struct rmca_completion c;

	API_CHECK_OK(API_POST(p, rmca_send(ep, buf, len, mr, uc)));
	api_wait(p, uc, &c);
	API_CHECK_RC(c.status, RMCA_OK);
	API_CHECK(c.op == RMCA_OP_SEND);
}

size_t api_recv_wait(struct api_peer *p, rmca_ep_t *ep, void *buf, size_t len,
		     rmca_mr_t *mr)
{
	void *uc = API_CTX(0x7ec5);
	struct rmca_completion c;

	API_CHECK_OK(API_POST(p, rmca_recv(ep, buf, len, mr, uc)));
	api_wait(p, uc, &c);
	API_CHECK_RC(c.status, RMCA_OK);
	API_CHECK(c.op == RMCA_OP_RECV);
	API_CHECK(c.revoked_rkey == 0);
	return c.len;
}

/* ---- the first exchange: "hello", answered "world" ---- */

void api_hello_world(struct api_peer *p, rmca_ep_t *ep)
{
	uint8_t *buf = api_alloc(64);
	void *uc = API_CTX(0x4e11);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	/* the answer's receive first: it may come before the send completes */
	API_CHECK_OK(rmca_recv(ep, buf + 32, 32, mr, uc));
	memcpy(buf, "hello", 6);
	api_send_wait(p, ep, buf, 6, mr);
	api_wait_status(p, uc, RMCA_OK);
	API_CHECK(memcmp(buf + 32, "world", 6) == 0);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

int api_hello_world_answer(struct api_peer *p, rmca_ep_t *ep)
{
	uint8_t *buf = api_alloc(64);
	void *uc = API_CTX(0x4e12);
	struct rmca_completion c;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_recv(ep, buf, 64, mr, uc));
	api_wait(p, uc, &c);
	if (!c.status) {
		API_CHECK(c.op == RMCA_OP_RECV && c.revoked_rkey == 0);
		API_CHECK(c.len == 6 && !memcmp(buf, "hello", 6));
		memcpy(buf, "world", 6);
		api_send_wait(p, ep, buf, 6, mr);
	}
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
	return c.status;
}

/* ---- pipes ---- */

static void link_write(struct api_peer *p, int client, const void *buf,
		       size_t len)
{
	int fd = p->link[client].wr;
	const char *b = buf;

	while (len) {
		ssize_t n = write(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		API_CHECK_MSG(n > 0, "pipe write: %s", strerror(errno));
		b += n;
		len -= (size_t)n;
	}
}

static void link_read(struct api_peer *p, int client, void *buf, size_t len)
{
	int fd = p->link[client].rd;
	long end = api_now_ms() + API_TIMEOUT_MS;
	char *b = buf;

	while (len) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};

		if (poll(&pf, 1, 0) > 0) {
			ssize_t n = read(fd, b, len);

			if (n < 0 && errno == EINTR)
				continue;
			API_CHECK_MSG(
				n > 0,
				"the other side ended (pipe %s); see its line",
				n ? strerror(errno) : "closed");
			b += n;
			len -= (size_t)n;
			continue;
		}
		API_CHECK_MSG(api_now_ms() < end,
			      "nothing from the other side within %d ms",
			      API_TIMEOUT_MS);
		/* A target keeps progressing while it waits. */
		if (p->ctx && api_progress(p))
			continue;
		api_idle(p, fd, 2);
	}
}

void api_put_u64(struct api_peer *p, int client, uint64_t v)
{
	link_write(p, client, &v, sizeof(v));
}

uint64_t api_get_u64(struct api_peer *p, int client)
{
	uint64_t v;

	link_read(p, client, &v, sizeof(v));
	if (v == API_TOKEN_SKIP) {
		dprintf(STDERR_FILENO, "api[%s]: the other side skipped\n",
			api_role);
		_exit(API_EXIT_SKIP);
	}
	return v;
}

void api_token(struct api_peer *p, int client, uint64_t token)
{
	api_put_u64(p, client, token);
}

void api_expect_token(struct api_peer *p, int client, uint64_t token)
{
	uint64_t v = api_get_u64(p, client);

	API_CHECK_MSG(v == token, "expected token %#llx, got %#llx",
		      (unsigned long long)token, (unsigned long long)v);
}

void api_expect_token_deaf(struct api_peer *p, int client, uint64_t token)
{
	struct pollfd pf = {.fd = p->link[client].rd, .events = POLLIN};
	uint64_t v;

	API_CHECK_MSG(poll(&pf, 1, API_RUN_TIMEOUT_MS) == 1,
		      "no token from the client");
	API_CHECK(read(p->link[client].rd, &v, sizeof(v)) == sizeof(v));
	API_CHECK_MSG(v == token, "token %#llx", (unsigned long long)v);
}

void api_put_region(struct api_peer *p, int client, const void *addr,
		    size_t len, rmca_mr_t *mr, rmca_ep_t *ep)
{
	struct api_region r = {
		.addr = (uint64_t)(uintptr_t)addr,
		.rkey = rmca_mr_rkey(mr, ep),
		.len = len,
	};

	API_CHECK_MSG(r.rkey != 0, "rmca_mr_rkey returned 0");
	link_write(p, client, &r, sizeof(r));
}

void api_get_region(struct api_peer *p, int client, struct api_region *r)
{
	r->addr = api_get_u64(p, client);
	r->rkey = api_get_u64(p, client);
	r->len = api_get_u64(p, client);
}

/* ---- set-up ---- */

void api_server_listen(struct api_peer *p, const char *host)
{
	char hp[128];

	if (!p->ctx)
		API_CHECK_OK(rmca_init(&p->ctx));
	API_CHECK(p->ctx != NULL);
	api_host_port(hp, sizeof(hp), host, 0);
	API_CHECK_OK(rmca_listen(p->ctx, hp, &p->l));
	API_CHECK(p->l != NULL);
}

void api_server_accept_all(struct api_peer *p)
{
	int port = rmca_listener_port(p->l);
	int i;

	API_CHECK_MSG(port > 0 && port < 65536, "rmca_listener_port: %d", port);
	/* One client at a time, so that eps[i] is client i's endpoint. */
	for (i = 0; i < p->nclients; i++) {
		api_put_u64(p, i, (uint64_t)port);
		API_CHECK_OK(rmca_accept(p->l, API_TIMEOUT_MS, &p->eps[i]));
		API_CHECK(p->eps[i] != NULL);
	}
	p->ep = p->eps[0];
}

int api_client_read_port(struct api_peer *p)
{
	uint64_t port = api_get_u64(p, 0);

	API_CHECK_MSG(port > 0 && port < 65536, "port %llu",
		      (unsigned long long)port);
	return (int)port;
}

void api_client_connect(struct api_peer *p, const char *host)
{
	char hp[128];
	int port;

	if (!p->ctx)
		API_CHECK_OK(rmca_init(&p->ctx));
	port = api_client_read_port(p);
	api_host_port(hp, sizeof(hp), host, port);
	API_CHECK_OK(rmca_connect(p->ctx, hp, API_TIMEOUT_MS, &p->ep));
	API_CHECK(p->ep != NULL);
}

/* ---- parent ---- */

static void child_signals(void)
{
	static const int sigs[] = {SIGSEGV, SIGILL,  SIGFPE, SIGBUS,
				   SIGSYS,  SIGABRT, SIGALRM};
	size_t i;

	/* cmocka's handlers would resume the test runner inside the child. */
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
}

static void run_child(const struct api_test *t, struct api_peer *p)
{
	bool barrier = !t->manual && !t->no_barrier;
	int i;

	child_signals();
	if (!p->is_server && !t->client)
		_exit(0);
	if (p->is_server) {
		if (!t->manual) {
			api_server_listen(p, api_host());
			api_server_accept_all(p);
		}
		t->server(p);
		if (barrier) {
			for (i = 0; i < p->nclients; i++)
				api_expect_token(p, i, api_token_bye);
			for (i = 0; i < p->nclients; i++)
				api_token(p, i, api_token_bye);
		}
	} else {
		if (!t->manual)
			api_client_connect(p, api_host());
		t->client(p);
		if (barrier) {
			api_token(p, 0, api_token_bye);
			api_expect_token(p, 0, api_token_bye);
		}
	}
	if (p->ctx)
		rmca_finalize(p->ctx);
	_exit(0);
}

struct child {
	pid_t pid;
	char name[16];
	int status;
	bool done;
};

static void describe(char *buf, size_t size, const struct child *c)
{
	size_t n = strlen(buf);

	if (!c->done)
		snprintf(buf + n, size - n, " %s: hung, killed after %d ms;",
			 c->name, API_RUN_TIMEOUT_MS);
	else if (WIFSIGNALED(c->status))
		snprintf(buf + n, size - n, " %s: killed by signal %d (%s);",
			 c->name, WTERMSIG(c->status),
			 strsignal(WTERMSIG(c->status)));
	else if (WEXITSTATUS(c->status) != 0 &&
		 WEXITSTATUS(c->status) != API_EXIT_SKIP)
		snprintf(buf + n, size - n, " %s: exit %d;", c->name,
			 WEXITSTATUS(c->status));
}

void api_run(const struct api_test *t)
{
	int n = t->nclients ? t->nclients : 1;
	struct child ch[1 + API_MAX_CLIENTS];
	int s2c[API_MAX_CLIENTS][2], c2s[API_MAX_CLIENTS][2];
	char msg[1024] = "";
	bool failed = false, skipped = false;
	long end;
	int i, j, left;

	assert_true(n <= API_MAX_CLIENTS);
	for (i = 0; i < n; i++) {
		assert_int_equal(pipe(s2c[i]), 0);
		assert_int_equal(pipe(c2s[i]), 0);
	}
	/* Nothing buffered may be written twice by the children. */
	fflush(stdout);
	fflush(stderr);

	for (i = 0; i <= n; i++) {
		struct api_peer p = {
			.is_server = i == 0,
			.index = i ? i - 1 : 0,
			.nclients = n,
			.arg = t->arg,
		};

		for (j = 0; j < API_MAX_CLIENTS; j++)
			p.link[j] = (struct api_link){-1, -1};
		snprintf(ch[i].name, sizeof(ch[i].name),
			 i ? "client%d" : "server", i - 1);
		ch[i].done = false;
		ch[i].pid = fork();
		assert_true(ch[i].pid >= 0);
		if (ch[i].pid)
			continue;

		snprintf(api_role, sizeof(api_role), "%s", ch[i].name);
		for (j = 0; j < n; j++) {
			if (i == 0) {
				p.link[j] =
					(struct api_link){c2s[j][0], s2c[j][1]};
				close(s2c[j][0]);
				close(c2s[j][1]);
			} else if (j == i - 1) {
				p.link[0] =
					(struct api_link){s2c[j][0], c2s[j][1]};
				close(s2c[j][1]);
				close(c2s[j][0]);
			} else {
				close(s2c[j][0]);
				close(s2c[j][1]);
				close(c2s[j][0]);
				close(c2s[j][1]);
			}
		}
		if (i == 0 && t->server_stderr) {
			int fd = open(t->server_stderr,
				      O_WRONLY | O_CREAT | O_TRUNC, 0600);

			if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
				_exit(API_EXIT_FAIL);
			close(fd);
		}
		run_child(t, &p);
	}
	for (i = 0; i < n; i++) {
		close(s2c[i][0]);
		close(s2c[i][1]);
		close(c2s[i][0]);
		close(c2s[i][1]);
	}

	end = api_now_ms() + API_RUN_TIMEOUT_MS;
	do {
		left = 0;
		for (i = 0; i <= n; i++) {
			if (ch[i].done)
				continue;
			if (waitpid(ch[i].pid, &ch[i].status, WNOHANG) ==
			    ch[i].pid)
				ch[i].done = true;
			else
				left++;
		}
		if (left)
			api_sleep_ms(5);
	} while (left && api_now_ms() < end);

	for (i = 0; i <= n; i++) {
		if (!ch[i].done) {
			kill(ch[i].pid, SIGKILL);
			waitpid(ch[i].pid, NULL, 0);
			failed = true;
		} else if (!WIFEXITED(ch[i].status) ||
			   (WEXITSTATUS(ch[i].status) != 0 &&
			    WEXITSTATUS(ch[i].status) != API_EXIT_SKIP)) {
			failed = true;
		} else if (WEXITSTATUS(ch[i].status) == API_EXIT_SKIP) {
			skipped = true;
		}
		describe(msg, sizeof(msg), &ch[i]);
	}
	/*
	 * One rule: a failure anywhere fails the case, whoever skipped. A side
	 * that skips tells the others (API_TOKEN_SKIP), so they skip too and
	 * never fail for it. The reason is on the TAP stream already
	 * (api_skip).
	 */
	if (failed)
		fail_msg("%s", msg);
	if (skipped)
		skip();
}

/* The file of the api_run_log under way, or "". */
static char log_path[64];

char *api_run_log(const struct api_test *t)
{
	struct api_test lt = *t;
	char *log;
	long len;
	FILE *f;
	int fd;

	snprintf(log_path, sizeof(log_path), "/tmp/rmca-api-log-XXXXXX");
	fd = mkstemp(log_path);
	assert_true(fd >= 0);
	close(fd);
	lt.server_stderr = log_path;
	api_run(&lt);
	f = fopen(log_path, "r");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len >= 0);
	rewind(f);
	log = malloc((size_t)len + 1);
	assert_non_null(log);
	log[fread(log, 1, (size_t)len, f)] = '\0';
	fclose(f);
	unlink(log_path);
	log_path[0] = '\0';
	return log;
}

const char *api_log_file(void)
{
	return log_path[0] ? log_path : NULL;
}

int api_log_show(void **state)
{
	char line[512];
	FILE *f;

	(void)state;
	if (!log_path[0])
		return 0;
	f = fopen(log_path, "r");
	while (f && fgets(line, sizeof(line), f))
		print_message("# server: %s", line);
	if (f)
		fclose(f);
	unlink(log_path);
	log_path[0] = '\0';
	return 0;
}
