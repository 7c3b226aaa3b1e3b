/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One rank of a job started by mpirun (test_job.sh runs it with 2, 4 and 8
 * ranks). Written against rmca.h only. Each rank writes its verdicts, one
 * "ok NAME" or "not ok NAME: why" per line, to $RMCATEST_JOBDIR/rank.N;
 * the driver checks that every rank reached every verdict.
 *
 *   test_job all NRANKS    endpoints (asked by one side, or by both at
 *                          once), send/recv between every pair, put and
 *                          get into every rank's window, fetch-add on one
 *                          counter at rank 0, fences; ranks 0 and 1
 *                          close their endpoint and make it again. Every
 *                          rank counts itself among the peers: it sends
 *                          to, puts into, gets from and fetch-adds on
 *                          itself through its endpoint to its own rank
 *   test_job race NRANKS   the same, every pair asking each other at once
 *   test_job tcp NRANKS    as all, run with RMCA_transports=tcp: every
 *                          endpoint but the one to itself is a tcp one
 *   test_job two NRANKS    every rank joins two contexts, one after the
 *                          other: each has its own endpoints, to the same
 *                          context of every rank, and does all of the
 *                          above (but reconnect) on its own
 *   test_job kill NRANKS   the last rank dies (SIGKILL) after a fence; the
 *                          others' operations to it complete
 *                          RMCA_ERR_CONNECTION, and nothing hangs
 *
 * Every wait is bounded (WAIT_MS); nothing sleeps.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rmca.h>

#include "job_util.h"

#define WAIT_MS 30000
#define SLOT	64 /* bytes of a rank's window each peer writes */
#define FADDS	50 /* fetch-adds per rank on rank 0's counter */
#define MAXR	64

static uint32_t me, n;

/* What travels in each message: who, and how to reach its window. */
struct note {
	uint32_t from, to;
	uint64_t addr, rkey, magic;
};

struct state {
	uint32_t tag; /* which of the rank's contexts (mode two) */
	rmca_context_t *ctx;
	rmca_ep_t *ep[MAXR];
	uint8_t *win; /* n slots of SLOT bytes, then the counter */
	rmca_mr_t *win_mr;
	struct note peer[MAXR]; /* each peer's window, from its note */
	struct note snd[MAXR], rcv[MAXR];
	rmca_mr_t *snd_mr, *rcv_mr;
	uint8_t buf[MAXR][SLOT];
	rmca_mr_t *buf_mr;
	uint64_t old[FADDS];
	rmca_mr_t *old_mr;
};

/* Poll until want completions arrived; each status into st[] by user_ctx
 * (an index); returns how many arrived. */
static int collect(struct state *s, int want, int *st, int nst)
{
	int64_t deadline = rmca_now_ms() + WAIT_MS;
	int got = 0;

	while (got < want && rmca_now_ms() < deadline) {
		struct rmca_completion c[16];
		int k = rmca_poll(s->ctx, c, 16);

		for (int i = 0; i < k; i++) {
			intptr_t idx = (intptr_t)c[i].user_ctx;

			if (idx >= 0 && idx < nst)
				st[idx] = c[i].status;
			got++;
		}
	}
	return got;
}

static uint8_t pattern(uint32_t from, uint32_t to, int i)
{
	return (uint8_t)(from * 31 + to * 7 + i);
}

static void setup(struct state *s)
{
	int rc;

	REQUIRE(!rmca_init(&s->ctx), "init", "rmca_init failed");
	rc = rmca_job_join(s->ctx, WAIT_MS);
	REQUIRE(!rc, "join", "rmca_job_join: %s", rmca_strerror(rc));
	rc = rmca_job_rank(s->ctx, &me, &n);
	REQUIRE(!rc && me < n && n <= MAXR, "rank",
		"rmca_job_rank: %s, %u of %u", rmca_strerror(rc), me, n);
	s->win = calloc(1, (size_t)n * SLOT + 8);
	REQUIRE(s->win, "setup", "no memory");
	REQUIRE(!rmca_mr_reg(s->ctx, s->win, (size_t)n * SLOT + 8,
			     RMCA_ACCESS_REMOTE_READ |
				     RMCA_ACCESS_REMOTE_WRITE |
				     RMCA_ACCESS_REMOTE_ATOMIC,
			     &s->win_mr),
		"setup", "window registration");
	REQUIRE(!rmca_mr_reg(s->ctx, s->snd, sizeof(s->snd), RMCA_ACCESS_LOCAL,
			     &s->snd_mr) &&
			!rmca_mr_reg(s->ctx, s->rcv, sizeof(s->rcv),
				     RMCA_ACCESS_LOCAL, &s->rcv_mr) &&
			!rmca_mr_reg(s->ctx, s->buf, sizeof(s->buf),
				     RMCA_ACCESS_LOCAL, &s->buf_mr) &&
			!rmca_mr_reg(s->ctx, s->old, sizeof(s->old),
				     RMCA_ACCESS_LOCAL, &s->old_mr),
		"setup", "buffer registration");
}

/* The endpoint to this rank itself: made at once, the same one when asked
 * again. */
static void self_ep(struct state *s)
{
	struct rmca_ep_attr a;
	rmca_ep_t *again;
	int rc;

	rc = rmca_job_ep(s->ctx, me, 0, &s->ep[me]);
	REQUIRE(!rc, "self", "rmca_job_ep(itself): %s", rmca_strerror(rc));
	rc = rmca_job_ep(s->ctx, me, 0, &again);
	REQUIRE(!rc && again == s->ep[me], "self",
		"itself: a second endpoint (%s)", rmca_strerror(rc));
	REQUIRE(!rmca_ep_query(s->ep[me], &a) && a.peer_is_local, "self",
		"rmca_ep_query of the endpoint to itself");
	verdict(1, "self", NULL);
}

/*
 * Endpoints. Lower ranks are asked first by this rank; after a fence the
 * higher ones must already be there (they asked us while we were inside
 * rmca calls), so asking for them with timeout 0 cannot connect anything.
 * race: every rank asks every rank in the same order at once, so pairs
 * ask each other simultaneously and must still get one endpoint.
 */
static void endpoints(struct state *s, int race)
{
	int rc;

	if (race) {
		for (uint32_t k = 0; k < n; k++) {
			if (k == me)
				continue;
			rc = rmca_job_ep(s->ctx, k, WAIT_MS, &s->ep[k]);
			REQUIRE(!rc, "endpoints", "rmca_job_ep(%u): %s", k,
				rmca_strerror(rc));
		}
	} else {
		for (uint32_t k = me; k-- > 0;) {
			rc = rmca_job_ep(s->ctx, k, WAIT_MS, &s->ep[k]);
			REQUIRE(!rc, "endpoints", "rmca_job_ep(%u): %s", k,
				rmca_strerror(rc));
		}
		rc = rmca_job_fence(s->ctx, WAIT_MS);
		REQUIRE(!rc, "fence", "rmca_job_fence: %s", rmca_strerror(rc));
		for (uint32_t k = me + 1; k < n; k++) {
			rc = rmca_job_ep(s->ctx, k, 0, &s->ep[k]);
			REQUIRE(!rc, "adopted",
				"rank %u's endpoint not made by it: %s", k,
				rmca_strerror(rc));
		}
		verdict(1, "adopted", NULL);
	}
	/* asked again, the same endpoint */
	for (uint32_t k = 0; k < n; k++) {
		rmca_ep_t *again;

		if (k == me)
			continue;
		rc = rmca_job_ep(s->ctx, k, 0, &again);
		REQUIRE(!rc && again == s->ep[k], "endpoints",
			"rank %u: a second endpoint (%s)", k,
			rmca_strerror(rc));
	}
	verdict(1, "endpoints", NULL);
	self_ep(s);
	/* no rank asked twice or was left with a spare: every endpoint of
	 * the context is one of ours (a duplicate would be one more) */
}

/* Which transport serves each endpoint: want, but self for itself. */
static void transports(struct state *s, const char *want)
{
	for (uint32_t k = 0; k < n; k++) {
		struct rmca_ep_attr a;

		REQUIRE(!rmca_ep_query(s->ep[k], &a), "transport",
			"rmca_ep_query(%u)", k);
		REQUIRE(!strcmp(a.transport, k == me ? "self" : want),
			"transport", "rank %u served by %s", k, a.transport);
	}
	verdict(1, "transport", NULL);
}

/* Every rank sends one note to every other: its window's address and the
 * key that peer uses. */
static void exchange(struct state *s)
{
	int st[2 * MAXR], posted = 0;

	for (int i = 0; i < 2 * MAXR; i++)
		st[i] = 1;
	for (uint32_t k = 0; k < n; k++) {
		REQUIRE(!rmca_recv(s->ep[k], &s->rcv[k], sizeof(s->rcv[k]),
				   s->rcv_mr, (void *)(intptr_t)k),
			"sendrecv", "recv from %u", k);
		posted++;
	}
	for (uint32_t k = 0; k < n; k++) {
		s->snd[k] = (struct note){
			.from = me,
			.to = k,
			.addr = (uint64_t)(uintptr_t)s->win,
			.rkey = rmca_mr_rkey(s->win_mr, s->ep[k]),
			.magic =
				(0x6a6f62ull + s->tag) << 32 | (me * 1000u + k),
		};
		REQUIRE(!rmca_send(s->ep[k], &s->snd[k], sizeof(s->snd[k]),
				   s->snd_mr, (void *)(intptr_t)(MAXR + k)),
			"sendrecv", "send to %u", k);
		posted++;
	}
	REQUIRE(collect(s, posted, st, 2 * MAXR) == posted, "sendrecv",
		"completions missing after %d ms", WAIT_MS);
	for (uint32_t k = 0; k < n; k++) {
		const struct note *r = &s->rcv[k];

		REQUIRE(!st[k] && !st[MAXR + k], "sendrecv",
			"with rank %u: recv %s, send %s", k,
			rmca_strerror(st[k]), rmca_strerror(st[MAXR + k]));
		REQUIRE(r->from == k && r->to == me &&
				r->magic == ((0x6a6f62ull + s->tag) << 32 |
					     (k * 1000u + me)),
			"sendrecv", "from rank %u: got from %u to %u", k,
			r->from, r->to);
		s->peer[k] = *r;
	}
	verdict(1, "sendrecv", NULL);
}

/* Put a pattern into our slot of every rank's window, get it back. */
static void rma(struct state *s)
{
	int st[MAXR], posted = 0, rc;

	for (uint32_t k = 0; k < n; k++) {
		for (int i = 0; i < SLOT; i++)
			s->buf[k][i] = pattern(me, k, i);
		st[k] = 1;
		REQUIRE(!rmca_put(s->ep[k], s->buf[k], SLOT, s->buf_mr,
				  s->peer[k].addr + (uint64_t)me * SLOT,
				  s->peer[k].rkey, RMCA_DELIVERED,
				  (void *)(intptr_t)k),
			"put", "put to %u", k);
		posted++;
	}
	REQUIRE(collect(s, posted, st, MAXR) == posted, "put",
		"completions missing");
	for (uint32_t k = 0; k < n; k++)
		REQUIRE(!st[k], "put", "to rank %u: %s", k,
			rmca_strerror(st[k]));
	verdict(1, "put", NULL);

	memset(s->buf, 0, sizeof(s->buf));
	for (uint32_t k = 0; k < n; k++) {
		st[k] = 1;
		REQUIRE(!rmca_get(s->ep[k], s->buf[k], SLOT, s->buf_mr,
				  s->peer[k].addr + (uint64_t)me * SLOT,
				  s->peer[k].rkey, (void *)(intptr_t)k),
			"get", "get from %u", k);
	}
	REQUIRE(collect(s, posted, st, MAXR) == posted, "get",
		"completions missing");
	for (uint32_t k = 0; k < n; k++) {
		REQUIRE(!st[k], "get", "from rank %u: %s", k,
			rmca_strerror(st[k]));
		for (int i = 0; i < SLOT; i++)
			REQUIRE(s->buf[k][i] == pattern(me, k, i), "get",
				"from rank %u byte %d: %u", k, i, s->buf[k][i]);
	}
	verdict(1, "get", NULL);

	/* after a fence every peer's put is in our window */
	rc = rmca_job_fence(s->ctx, WAIT_MS);
	REQUIRE(!rc, "fence", "rmca_job_fence: %s", rmca_strerror(rc));
	for (uint32_t k = 0; k < n; k++) {
		for (int i = 0; i < SLOT; i++)
			REQUIRE(s->win[k * SLOT + i] == pattern(k, me, i),
				"window", "slot of rank %u byte %d: %u", k, i,
				s->win[k * SLOT + i]);
	}
	verdict(1, "window", NULL);
}

/* Every rank adds 1 FADDS times to rank 0's counter (rank 0 through its
 * endpoint to itself). */
static void fadd(struct state *s)
{
	uint64_t *counter = (uint64_t *)(s->win + (size_t)n * SLOT);
	int rc;

	for (int i = 0; i < FADDS; i++) {
		struct rmca_atomic op = {
			.kind = RMCA_ATOMIC_FADD,
			.raddr = s->peer[0].addr + (uint64_t)n * SLOT,
			.rkey = s->peer[0].rkey,
			.operand = 1,
		};
		int st = 1;

		REQUIRE(!rmca_atomic(s->ep[0], &op, &s->old[i], s->old_mr, 0),
			"fadd", "post %d", i);
		REQUIRE(collect(s, 1, &st, 1) == 1 && !st, "fadd",
			"fetch-add %d: %s", i, rmca_strerror(st));
		REQUIRE(s->old[i] < (uint64_t)n * FADDS &&
				(!i || s->old[i] > s->old[i - 1]),
			"fadd", "fetch-add %d returned %" PRIu64, i, s->old[i]);
	}
	rc = rmca_job_fence(s->ctx, WAIT_MS);
	REQUIRE(!rc, "fence", "rmca_job_fence: %s", rmca_strerror(rc));
	if (!me)
		REQUIRE(*counter == (uint64_t)n * FADDS, "fadd",
			"counter %" PRIu64 ", expected %u", *counter,
			n * FADDS);
	verdict(1, "fadd", NULL);
}

static void fences(struct state *s)
{
	for (int i = 0; i < 5; i++) {
		int rc = rmca_job_fence(s->ctx, WAIT_MS);

		REQUIRE(!rc, "fence", "fence %d: %s", i, rmca_strerror(rc));
	}
	verdict(1, "fence", NULL);
}

/*
 * Ranks 0 and 1 make their endpoint again: rank 0 closes its side and asks
 * anew; rank 1 sees its side fail, closes it and asks too. Each gets a new
 * endpoint, and a message crosses it both ways.
 */
static void reconnect(struct state *s)
{
	uint32_t peer = 1 - me;
	int st[2] = {1, 1}, rc;
	rmca_ep_t *ep;

	if (me > 1 || n < 2) {
		verdict(1, "reconnect", NULL);
		return;
	}
	if (me == 1) {
		/* a receive on the old endpoint ends when rank 0 closes it */
		rc = rmca_recv(s->ep[peer], &s->rcv[peer], sizeof(s->rcv[peer]),
			       s->rcv_mr, (void *)(intptr_t)0);
		if (!rc)
			REQUIRE(collect(s, 1, st, 2) == 1 && st[0] != 0,
				"reconnect", "old endpoint: %s",
				rmca_strerror(st[0]));
	}
	rmca_ep_close(s->ep[peer]);
	rc = rmca_job_ep(s->ctx, peer, WAIT_MS, &ep);
	REQUIRE(!rc, "reconnect", "rmca_job_ep(%u) again: %s", peer,
		rmca_strerror(rc));
	st[0] = st[1] = 1;
	s->snd[peer].magic = 0x7265ull << 32 | me;
	REQUIRE(!rmca_recv(ep, &s->rcv[peer], sizeof(s->rcv[peer]), s->rcv_mr,
			   (void *)(intptr_t)0) &&
			!rmca_send(ep, &s->snd[peer], sizeof(s->snd[peer]),
				   s->snd_mr, (void *)(intptr_t)1),
		"reconnect", "post on the new endpoint");
	REQUIRE(collect(s, 2, st, 2) == 2 && !st[0] && !st[1], "reconnect",
		"new endpoint: recv %s, send %s", rmca_strerror(st[0]),
		rmca_strerror(st[1]));
	REQUIRE(s->rcv[peer].magic == (0x7265ull << 32 | peer), "reconnect",
		"wrong message on the new endpoint");
	s->ep[peer] = ep;
	verdict(1, "reconnect", NULL);
}

/*
 * The last rank dies after a fence, without another rmca call. Even ranks
 * hold an endpoint to it from before; odd ranks ask for one after. Either
 * way the operations complete RMCA_ERR_CONNECTION within WAIT_MS.
 */
static void kill_test(struct state *s)
{
	uint32_t victim = n - 1;
	int rc, st[3] = {1, 1, 1}, posted = 0;
	rmca_ep_t *ep = NULL;

	for (uint32_t k = 0; k < n; k++) {
		if (k == me || (k == victim && me % 2) ||
		    (me == victim && k % 2))
			continue;
		rc = rmca_job_ep(s->ctx, k, WAIT_MS, &s->ep[k]);
		REQUIRE(!rc, "endpoints", "rmca_job_ep(%u): %s", k,
			rmca_strerror(rc));
	}
	verdict(1, "endpoints", NULL);
	rc = rmca_job_fence(s->ctx, WAIT_MS);
	REQUIRE(!rc, "fence", "rmca_job_fence: %s", rmca_strerror(rc));
	verdict(1, "fence", NULL);
	if (me == victim) {
		verdict(1, "dies", NULL);
		fclose(out);
		raise(SIGKILL);
	}
	if (me % 2) {
		rc = rmca_job_ep(s->ctx, victim, WAIT_MS, &ep);
		if (rc) {
			verdict(rc == RMCA_ERR_CONNECTION, "dead-ep",
				"rmca_job_ep to the dead rank: %s",
				rmca_strerror(rc));
			verdict(1, "dead-ops", NULL);
			return;
		}
		/* reached it while it was still in its fence: its death
		 * fails what follows */
		verdict(1, "dead-ep", NULL);
	} else {
		ep = s->ep[victim];
		verdict(1, "dead-ep", NULL);
	}
	/* It never posts a receive nor sends: a message to it, one from it
	 * and a flush behind the first can only end with its death (an
	 * operation its core would answer could still be served while it
	 * waits in its last fence). */
	REQUIRE(!rmca_recv(ep, s->rcv, sizeof(s->rcv[0]), s->rcv_mr,
			   (void *)(intptr_t)0),
		"dead-ops", "recv posted");
	posted++;
	rc = rmca_send(ep, s->snd, sizeof(s->snd[0]), s->snd_mr,
		       (void *)(intptr_t)1);
	REQUIRE(!rc || rc == RMCA_ERR_CONNECTION, "dead-ops", "send: %s",
		rmca_strerror(rc));
	if (!rc)
		posted++;
	else
		st[1] = rc;
	/* the flush waits for the send, which no receive takes */
	rc = rmca_flush(ep, (void *)(intptr_t)2);
	REQUIRE(!rc || rc == RMCA_ERR_CONNECTION, "dead-ops", "flush: %s",
		rmca_strerror(rc));
	if (!rc)
		posted++;
	else
		st[2] = rc;
	REQUIRE(collect(s, posted, st, 3) == posted, "dead-ops",
		"an operation to the dead rank did not complete in %d ms",
		WAIT_MS);
	for (int i = 0; i < 3; i++)
		REQUIRE(st[i] == RMCA_ERR_CONNECTION, "dead-ops",
			"operation %d completed %s, expected %s", i,
			rmca_strerror(st[i]),
			rmca_strerror(RMCA_ERR_CONNECTION));
	verdict(1, "dead-ops", NULL);
}

int main(int argc, char **argv)
{
	const char *dir = getenv("RMCATEST_JOBDIR");
	char path[4096];
	struct state *s;
	int rank_env;

	if (argc != 3 || !dir) {
		fprintf(stderr,
			"usage: RMCATEST_JOBDIR=dir test_job "
			"all|race|tcp|two|kill NRANKS (under mpirun)\n");
		return 2;
	}
	/* our own file, named before we know our rank from rmca */
	rank_env = getenv("PMIX_RANK") ? atoi(getenv("PMIX_RANK")) : -1;
	snprintf(path, sizeof(path), "%s/rank.%d", dir, rank_env);
	out = fopen(path, "w");
	if (!out)
		return 2;
	s = calloc(1, sizeof(*s));
	REQUIRE(s, "setup", "no memory");
	setup(s);
	REQUIRE(n == (uint32_t)atoi(argv[2]), "rank",
		"job of %u ranks, expected %s", n, argv[2]);
	verdict(1, "join", NULL);
	if (!strcmp(argv[1], "kill")) {
		kill_test(s);
	} else if (!strcmp(argv[1], "two")) {
		struct state *s2 = calloc(1, sizeof(*s2));

		/* the second context of the process joins the same job */
		REQUIRE(s2, "second", "no memory");
		s2->tag = 1;
		setup(s2);
		verdict(1, "second", NULL);
		endpoints(s, 0);
		endpoints(s2, 0);
		exchange(s);
		exchange(s2);
		rma(s);
		rma(s2);
		fadd(s);
		fadd(s2);
		fences(s2);
		rmca_finalize(s2->ctx);
	} else {
		endpoints(s, !strcmp(argv[1], "race"));
		if (!strcmp(argv[1], "tcp"))
			transports(s, "tcp");
		exchange(s);
		rma(s);
		fadd(s);
		fences(s);
		reconnect(s);
	}
	rmca_finalize(s->ctx);
	verdict(1, "finalize", NULL);
	fclose(out);
	return failures ? 1 : 0;
}
