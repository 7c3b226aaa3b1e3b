/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers for the public-contract tests: a server and clients, each a
 * forked process with its own context, talking over rmca and over pipes.
 *
 * Only rmca.h and POSIX are used, so the same tests run over every
 * transport (RMCA_transports=tcp|ib|iwarp, listen host from RMCATEST_HOST).
 *
 * Inside a child, a failed check prints one line to stderr and ends the
 * process with status 1; API_EXIT_SKIP (77) means "not supported here".
 * The parent (a cmocka test) maps those to fail and skip (a failure in any
 * process fails the case; a skip is one only when nobody failed, and its
 * reason is on the TAP stream), and kills children that outlive
 * API_RUN_TIMEOUT_MS so a hang fails the test.
 */
#ifndef RMCA_API_UTIL_H
#define RMCA_API_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rmca.h>

/*
 * The waits are hang detectors, not timing checks: where everything runs
 * many times slower (check-vm's emulated guest on a busy host) they are
 * multiplied by RMCATEST_TIMEOUT_SCALE (a whole number, 1 by default).
 */
int api_timeout_scale(void);
/* any single wait inside a child */
#define API_TIMEOUT_MS (5000 * api_timeout_scale())
/* a whole test, then children are killed */
#define API_RUN_TIMEOUT_MS (20000 * api_timeout_scale())
#define API_EXIT_FAIL	   1
#define API_EXIT_SKIP	   77
#define API_MAX_CLIENTS	   8
#define API_MAX_STASH	   4096

/* Two pipes between the server and one client. */
struct api_link {
	int rd;
	int wr;
};

struct api_peer {
	bool is_server;
	int index; /* client number, 0 for the server */
	int nclients;
	rmca_context_t *ctx;
	rmca_listener_t *l; /* server */
	rmca_ep_t *ep;	    /* client: its endpoint; server: eps[0] */
	rmca_ep_t *eps[API_MAX_CLIENTS]; /* server: eps[i] serves client i */
	struct api_link link[API_MAX_CLIENTS]; /* client: link[0] */
	void *arg;
};

typedef void api_fn(struct api_peer *p);

struct api_test {
	api_fn *server;
	api_fn *client; /* run by each of nclients processes; may be NULL */
	int nclients;	/* 0 means 1 */
	/* Children do rmca_init/listen/accept/connect themselves. */
	bool manual;
	/* No closing handshake (a side that dies on purpose). */
	bool no_barrier;
	/* If set, the server's stderr goes to this file. */
	const char *server_stderr;
	void *arg;
};

/* Parent side: run one test and report through cmocka (fail or skip). */
void api_run(const struct api_test *t);

/*
 * api_run with the server's stderr (the library's log) in a temporary
 * file, whatever t->server_stderr says; returns all the server wrote,
 * NUL-terminated (free it), the file removed. A run that fails leaves
 * the test before this returns: its file stays for api_log_show.
 */
char *api_run_log(const struct api_test *t);
/* The file of the api_run_log under way (its children may read it), or
 * NULL. */
const char *api_log_file(void);
/* A cmocka teardown: the log of a run that did not return, printed on the
 * TAP stream and removed. */
int api_log_show(void **state);

/*
 * Take capabilities away on every component rmca loads here, for the
 * children api_run forks next: caps in the syntax of RMCA_<comp>_caps
 * ("^short_read", "^atomic,masked_atomic"), added to the mask a variable
 * already holds (test_api_matrix.sh sets them), and only for components
 * that exist (a variable for another is an unknown parameter).
 * api_caps_mask_pop puts every variable back as it was; it does nothing
 * when nothing is pushed. One level: a push while pushed (a case failed
 * before its pop) pops first.
 */
void api_caps_mask_push(const char *caps);
void api_caps_mask_pop(void);

/* ---- child side ---- */

__attribute__((noreturn, format(printf, 3, 4))) void
api_die(const char *file, int line, const char *fmt, ...);
__attribute__((noreturn)) void api_skip(struct api_peer *p, const char *why);

#define API_CHECK(cond)                                                        \
	do {                                                                   \
		if (!(cond))                                                   \
			api_die(__FILE__, __LINE__, "check failed: %s",        \
				#cond);                                        \
	} while (0)

#define API_CHECK_MSG(cond, ...)                                               \
	do {                                                                   \
		if (!(cond))                                                   \
			api_die(__FILE__, __LINE__, __VA_ARGS__);              \
	} while (0)

/* expr must return want (an rmca status). */
#define API_CHECK_RC(expr, want)                                               \
	do {                                                                   \
		int rc_ = (expr);                                              \
		int want_ = (want);                                            \
		if (rc_ != want_)                                              \
			api_die(__FILE__, __LINE__,                            \
				"%s returned %d (%s), expected %d (%s)",       \
				#expr, rc_, api_strerror(rc_), want_,          \
				api_strerror(want_));                          \
	} while (0)

#define API_CHECK_OK(expr) API_CHECK_RC(expr, RMCA_OK)

/* rmca_strerror, but never NULL (for messages). */
const char *api_strerror(int status);

/* The listen host (RMCATEST_HOST, default 127.0.0.1). */
const char *api_host(void);
/* The transport under test (RMCA_transports, default ib: a verbs test
 * runs once with each) and its first module in ctx, into *out when out is
 * not NULL; false when ctx has none. */
const char *api_transport(void);
struct rmca_info_module;
bool api_find_module(rmca_context_t *ctx, struct rmca_info_module *out);
/* "host:port", with brackets around an IPv6 literal. */
void api_host_port(char *buf, size_t size, const char *host, int port);
long api_now_ms(void);
void api_sleep_ms(int ms);
/* Fill buf with a pattern that depends on seed and offset. */
void api_pattern(void *buf, size_t len, unsigned seed);
/* Offset of the first byte that differs from the pattern, or -1. */
long api_pattern_check(const void *buf, size_t len, unsigned seed);
/* Page-aligned, zeroed; dies on failure. */
void *api_alloc(size_t len);

/* Standard set-up, done by api_run unless the test is manual. */
void api_server_listen(struct api_peer *p, const char *host);
void api_server_accept_all(struct api_peer *p);
int api_client_read_port(struct api_peer *p);
void api_client_connect(struct api_peer *p, const char *host);

/* Pipe messages; the reading side keeps rmca progressing meanwhile. */
void api_put_u64(struct api_peer *p, int client, uint64_t v);
uint64_t api_get_u64(struct api_peer *p, int client);
/* Tokens: a failing side sends none, so the waiter dies on EOF; a side
 * that skips sends API_TOKEN_SKIP so the other one skips too. */
#define API_TOKEN_GO   0x60ull
#define API_TOKEN_SKIP 0x5c1full
void api_token(struct api_peer *p, int client, uint64_t token);
/* Waits for a token; skips (exit 77) on API_TOKEN_SKIP. */
void api_expect_token(struct api_peer *p, int client, uint64_t token);
/* Waits for a token without progressing meanwhile: a target that stays
 * deaf to its peer's operations until then. */
void api_expect_token_deaf(struct api_peer *p, int client, uint64_t token);

struct api_region {
	uint64_t addr;
	uint64_t rkey;
	uint64_t len;
};
void api_put_region(struct api_peer *p, int client, const void *addr,
		    size_t len, rmca_mr_t *mr, rmca_ep_t *ep);
void api_get_region(struct api_peer *p, int client, struct api_region *r);

/* ---- completions ---- */

#define API_CTX(n) ((void *)(uintptr_t)(n))

/* One rmca_poll, completions kept aside; returns how many arrived. */
int api_progress(struct api_peer *p);
/* Keep progressing for ms milliseconds (a target serving its peer). */
void api_progress_for(struct api_peer *p, int ms);
/* Wait for the completion of user_ctx (dies after API_TIMEOUT_MS). */
void api_wait(struct api_peer *p, void *user_ctx, struct rmca_completion *c);
/* Same, and the status must be want. */
void api_wait_status(struct api_peer *p, void *user_ctx, int want);
/* Take a completion already collected; true if there was one. */
bool api_take(void *user_ctx, struct rmca_completion *c);
/* Number of completions collected and not yet taken. */
int api_stashed(void);
/* The i-th collected completion (0 <= i < api_stashed()). */
const struct rmca_completion *api_stash_at(int i);
void api_stash_clear(void);

/* Evaluates a post, retrying (with progress) while it says
 * RMCA_ERR_AGAIN; yields the final status. */
#define API_POST(p, expr)                                                      \
	({                                                                     \
		long t_ = api_now_ms();                                        \
		int r_;                                                        \
		while ((r_ = (expr)) == RMCA_ERR_AGAIN &&                      \
		       api_now_ms() - t_ < API_TIMEOUT_MS)                     \
			api_progress(p);                                       \
		r_;                                                            \
	})

/* Send/recv one buffer and wait for the completion (status must be OK). */
void api_send_wait(struct api_peer *p, rmca_ep_t *ep, const void *buf,
		   size_t len, rmca_mr_t *mr);
size_t api_recv_wait(struct api_peer *p, rmca_ep_t *ep, void *buf, size_t len,
		     rmca_mr_t *mr);

/* The first exchange on a new endpoint: the client sends "hello" and must
 * hear "world"; the server's answer must hear "hello" and answers "world",
 * or returns the status of its receive where it failed (a peer that never
 * talks, closed), having sent nothing. */
void api_hello_world(struct api_peer *p, rmca_ep_t *ep);
int api_hello_world_answer(struct api_peer *p, rmca_ep_t *ep);

#endif
