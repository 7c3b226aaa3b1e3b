/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hostile clients at a job rank's listener (test_job.sh runs this under
 * mpirun with 3 ranks). Rank 1 is the target. Rank 0 reads the address
 * rank 1 published, as anyone who found the port could, and attacks it
 * with raw sockets while rank 1 waits in a fence: bytes that are no
 * request, requests of another job, of this job claiming to be another
 * rank (without that rank's key), to be rank 1 itself, or asking for
 * another rank, an old version, connections that say nothing or half a
 * request, a hundred bogus requests in a row (their log lines are
 * rate-limited), and a flood of silent connections. Each bogus request is
 * answered "refused" and closed; the half-open ones are held open.
 *
 * Then rank 0 holds rank 1's queue of connections waiting for a request
 * full (2 * ranks + 16 of them) with a second flood of silent ones, keeps
 * them open, and asks rank 1 for its endpoint itself, within GIVE_WAY_MS,
 * far below RMCA_connect_timeout (60 s here, so that nothing waiting ends
 * by time meanwhile): rank 1 must serve it, each new connection taking the
 * slot of the oldest waiting one ("served-past-flood"), and exactly the
 * oldest of the second flood must be closed, the 2 * ranks + 15 newest
 * still open ("oldest-give-way"). Before that policy, rank 1 closed every
 * connection past its bound, rank 0's request with them, until the silent
 * ones expired. The three ranks then make their endpoints, exchange
 * messages naming themselves and fence: the job keeps working. Rank 1
 * finally finds a logged reason for each refusal, and for the connections
 * closed for newer ones, in its own stderr.
 *
 * Before all that, rank 0 holds what only a rank can: it sends rank 1 a
 * request with the key rank 1 published, as rank 0, takes the GO, sends
 * the first bytes of a hello and stops. Rank 2 then connects to rank 1,
 * and all fence: the fence ends only once rank 2 has its endpoint, and
 * rank 0's stalled handshake must still be open then (rank 1 closes it at
 * RMCA_connect_timeout): rank 1 served rank 2 while it waited, instead of
 * waiting for the stalled one first.
 *
 * Each rank writes its verdicts to $RMCATEST_JOBDIR/rank.N (as test_job);
 * every wait is bounded (WAIT_MS).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rmca.h>

#include "job_util.h"

#include "job.h"

#define WAIT_MS 30000
#define MAXR	16
#define FLOOD	40  /* more than a listener keeps waiting (2 * ranks + 16) */
#define NOISE	100 /* bogus requests in a row: their lines are rate-limited */

/* The second flood: 8 past the bound of the most ranks; and how long rank
 * 0 waits for its endpoint past it (RMCA_connect_timeout is 60 s). */
#define FLOOD2_MAX  (2 * MAXR + 16 + 8)
#define GIVE_WAY_MS 10000

/* The job request, as framework/job.c frames it (version 2). */
#define J_MAGIC	  0x4a434d52u
#define J_VERSION 2
#define J_NSLEN	  256
#define J_KEYLEN  16
#define J_REQ_LEN (16 + J_KEYLEN + J_NSLEN)
#define J_REQ	  1
#define J_GO	  2
#define J_REFUSE  5
#define J_INFO	  "rmca.job.v2.0" /* the first context a rank joins */

static uint32_t me, n;

/* ---- the raw client ---- */

/* Read up to len bytes until the peer closes or WAIT_MS pass: how many
 * arrived (the peer closed: *closed). */
static size_t read_until_closed(int fd, uint8_t *buf, size_t len, int *closed)
{
	long end = rmca_now_ms() + WAIT_MS;
	size_t got = 0;

	*closed = 0;
	while (rmca_now_ms() < end) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint8_t junk[64];
		ssize_t k;

		if (poll(&p, 1, (int)(end - rmca_now_ms())) <= 0)
			break;
		k = recv(fd, got < len ? buf + got : junk,
			 got < len ? len - got : sizeof(junk), 0);
		if (k <= 0) {
			*closed = 1;
			break;
		}
		if (got < len)
			got += (size_t)k;
	}
	return got;
}

/* Read len bytes, or what came before the peer closed or WAIT_MS passed. */
static size_t read_n(int fd, uint8_t *buf, size_t len)
{
	long end = rmca_now_ms() + WAIT_MS;
	size_t got = 0;

	while (got < len && rmca_now_ms() < end) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t k;

		if (poll(&p, 1, (int)(end - rmca_now_ms())) <= 0)
			break;
		k = recv(fd, buf + got, len - got, 0);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	return got;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void request(uint8_t *req, int version, uint32_t from, uint32_t to,
		    const char *nspace)
{
	memset(req, 0, J_REQ_LEN);
	put32(req, J_MAGIC);
	req[4] = (uint8_t)version;
	req[6] = J_REQ;
	put32(req + 8, from);
	put32(req + 12, to);
	for (int i = 0; i < J_KEYLEN; i++) /* a key nobody published */
		req[16 + i] = (uint8_t)(0xa5 ^ i);
	snprintf((char *)req + 16 + J_KEYLEN, J_NSLEN, "%s", nspace);
}

/* Send bytes, expect an answer "refused" (or none) and the close. */
static void refused_quietly(int port, const void *bytes, size_t len,
			    const char *name)
{
	uint8_t ans[8];
	int fd = job_dial(port), closed;
	size_t got;

	REQUIRE(fd >= 0, name, "cannot connect to rank 1's job listener");
	REQUIRE(send(fd, bytes, len, MSG_NOSIGNAL) == (ssize_t)len, name,
		"send: %s", strerror(errno));
	got = read_until_closed(fd, ans, sizeof(ans), &closed);
	close(fd);
	REQUIRE(closed, name, "rank 1 kept the connection open");
	REQUIRE(got == 0 || (got == sizeof(ans) && ans[6] == J_REFUSE), name,
		"rank 1 answered %zu bytes, kind %d (%s)", got,
		got > 6 ? ans[6] : -1,
		got > 6 && ans[6] == J_GO ? "go: served a bogus request"
					  : "not a refusal");
}

static void refused(int port, const void *bytes, size_t len, const char *name)
{
	refused_quietly(port, bytes, len, name);
	verdict(1, name, NULL);
}

/* Many bogus requests in a row; how long they took goes to the target,
 * which bounds the lines it logged by it (ten a second). */
static void noise(int port, const char *dir)
{
	uint8_t junk[J_REQ_LEN];
	char path[4096];
	long start = rmca_now_ms();
	FILE *f;

	memset(junk, 0x3c, sizeof(junk));
	for (int i = 0; i < NOISE; i++)
		refused_quietly(port, junk, sizeof(junk), "log-flood");
	snprintf(path, sizeof(path), "%s/noise.ms", dir);
	f = fopen(path, "w");
	REQUIRE(f, "log-flood", "cannot write %s", path);
	fprintf(f, "%ld\n", (long)(rmca_now_ms() - start));
	fclose(f);
	verdict(1, "log-flood", NULL);
}

/* The port rank r published (what anyone scanning the host finds), and
 * its key (what only the job's ranks can read) into key if not NULL. */
static int published(uint32_t r, uint8_t *key)
{
	struct rmca_pmix *p;
	char ns[J_NSLEN], why[256], info[2048], hex[2 * J_KEYLEN + 1];
	uint32_t rank, size;
	int port = -1;

	if (rmca_pmix_open(&p, ns, sizeof(ns), &rank, &size, why, sizeof(why)))
		return -1;
	/* "2 port boot_id netns key addrs" */
	if (rmca_pmix_lookup(p, r, J_INFO, info, sizeof(info)) ||
	    sscanf(info, "%*u %d %*s %*s %32s", &port, hex) != 2 ||
	    strlen(hex) != 2 * J_KEYLEN)
		port = -1;
	for (int i = 0; key && port > 0 && i < J_KEYLEN; i++) {
		unsigned v = 0;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			port = -1;
		key[i] = (uint8_t)v;
	}
	rmca_pmix_close(p);
	return port;
}

static void attack(int port, int *held, int *nheld)
{
	const char *ns = getenv("PMIX_NAMESPACE");
	uint8_t req[J_REQ_LEN], junk[J_REQ_LEN + 100];
	int fd;

	REQUIRE(ns, "attack", "no PMIX_NAMESPACE");
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 151 + 7);
	refused(port, junk, sizeof(junk), "garbage");
	request(req, J_VERSION, 2, 1, "not-this-job");
	refused(port, req, sizeof(req), "another-job");
	request(req, J_VERSION, 2, 1, ns);
	refused(port, req, sizeof(req), "posing-as-rank");
	request(req, J_VERSION, 1, 1, ns);
	refused(port, req, sizeof(req), "posing-as-itself");
	request(req, J_VERSION, 0, 2, ns);
	refused(port, req, sizeof(req), "wrong-rank");
	request(req, 1, 0, 1, ns);
	refused(port, req, sizeof(req), "old-version");

	/* silent, and half a request: held open while the job works */
	fd = job_dial(port);
	REQUIRE(fd >= 0, "half-open", "connect");
	held[(*nheld)++] = fd;
	fd = job_dial(port);
	REQUIRE(fd >= 0, "half-open", "connect");
	request(req, J_VERSION, 0, 1, ns);
	REQUIRE(send(fd, req, 100, MSG_NOSIGNAL) == 100, "half-open", "send");
	held[(*nheld)++] = fd;
	verdict(1, "half-open", NULL);
}

/* A flood of silent connections: each is closed by rank 1 (those past what
 * it keeps waiting for newer ones, the others for the second flood's), and
 * the job goes on meanwhile. */
static void flood_open(int port, int *fds)
{
	for (int i = 0; i < FLOOD; i++) {
		fds[i] = job_dial(port);
		REQUIRE(fds[i] >= 0, "flood", "connect %d: %s", i,
			strerror(errno));
	}
}

static void flood_check(int *fds)
{
	for (int i = 0; i < FLOOD; i++) {
		uint8_t b[8];
		int closed;

		read_until_closed(fds[i], b, sizeof(b), &closed);
		REQUIRE(closed, "flood", "connection %d still open after %d ms",
			i, WAIT_MS);
		close(fds[i]);
	}
	verdict(1, "flood", NULL);
}

/* ---- past a full queue of waiting connections ---- */

/* Whether rank 1 closed fd (or it is readable): a look, no wait. */
static bool peer_said_something(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) != 0;
}

/*
 * Rank 0: rank 1 keeps at most 2 * n + 16 connections waiting for their
 * request (framework/job.c), all of them taken by silent ones when more
 * come. The second flood, held open, is 8 past that bound; then rank 0's
 * own request, which rank 1 must serve meanwhile. Rank 1 accepts them in
 * the order they connected (the kernel's backlog), and each takes the slot
 * of the oldest waiting one: the first flood's and the half-open ones,
 * older, go first, then the second flood's oldest, the last of them for
 * rank 0's request. So once rank 1 answered that request, exactly the
 * second flood's first nflood + 1 - (2 * n + 16) are closed, the others
 * open.
 */
static void give_way(rmca_context_t *ctx, int port, int *fds, int *nfds)
{
	int bound = 2 * (int)n + 16, nflood = bound + 8, closed_want;
	long start;
	rmca_ep_t *ep;
	int rc;

	for (int i = 0; i < nflood; i++) {
		fds[i] = job_dial(port);
		REQUIRE(fds[i] >= 0, "served-past-flood", "connect %d: %s", i,
			strerror(errno));
		*nfds = i + 1;
	}
	start = rmca_now_ms();
	rc = rmca_job_ep(ctx, 1, GIVE_WAY_MS, &ep);
	REQUIRE(!rc, "served-past-flood",
		"rmca_job_ep(1) behind %d silent connections: %s after %ld ms "
		"(RMCA_connect_timeout %s ms)",
		nflood, rmca_strerror(rc), rmca_now_ms() - start,
		getenv("RMCA_connect_timeout"));
	verdict(1, "served-past-flood", NULL);

	closed_want = nflood + 1 - bound;
	for (int i = 0; i < nflood; i++) {
		uint8_t b[8];
		int closed = 0;

		if (i < closed_want) {
			read_until_closed(fds[i], b, sizeof(b), &closed);
			REQUIRE(closed, "oldest-give-way",
				"connection %d of %d (one of the %d oldest) "
				"still open after %d ms",
				i, nflood, closed_want, WAIT_MS);
		} else {
			REQUIRE(!peer_said_something(fds[i]), "oldest-give-way",
				"connection %d of %d closed (only the %d "
				"oldest should be)",
				i, nflood, closed_want);
		}
	}
	verdict(1, "oldest-give-way", NULL);
}

/* ---- a rank that stops halfway through its handshake ---- */

static bool file_exists(const char *path)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	fclose(f);
	return true;
}

/* Rank 0: a request rank 1 serves (its key, as rank 0), the GO, the first
 * bytes of a hello, and silence. Returns the connection, held open. */
static int stall_start(const char *dir)
{
	const char *ns = getenv("PMIX_NAMESPACE");
	uint8_t req[J_REQ_LEN], key[J_KEYLEN], ans[8];
	/* a hello's length prefix (200 bytes) and the first 10 of them */
	uint8_t hello[14] = {200, 0, 0, 0};
	char path[4096];
	int port, fd;
	FILE *f;

	REQUIRE(ns, "stalled-handshake", "no PMIX_NAMESPACE");
	port = published(1, key);
	REQUIRE(port > 0, "stalled-handshake",
		"rank 1 published no port and key");
	request(req, J_VERSION, 0, 1, ns);
	memcpy(req + 16, key, J_KEYLEN);
	fd = job_dial(port);
	REQUIRE(fd >= 0, "stalled-handshake", "connect: %s", strerror(errno));
	REQUIRE(send(fd, req, sizeof(req), MSG_NOSIGNAL) ==
			(ssize_t)sizeof(req),
		"stalled-handshake", "send: %s", strerror(errno));
	REQUIRE(read_n(fd, ans, sizeof(ans)) == sizeof(ans) && ans[6] == J_GO,
		"stalled-handshake",
		"rank 1 did not serve a request with its key");
	REQUIRE(send(fd, hello, sizeof(hello), MSG_NOSIGNAL) ==
			(ssize_t)sizeof(hello),
		"stalled-handshake", "send: %s", strerror(errno));
	/* rank 1 is inside that handshake now: rank 2 may go */
	snprintf(path, sizeof(path), "%s/stalled", dir);
	f = fopen(path, "w");
	REQUIRE(f, "stalled-handshake", "cannot write %s", path);
	fclose(f);
	return fd;
}

/* Rank 0, after the fence that rank 2's endpoint to rank 1 held back:
 * rank 1 has not ended the stalled handshake yet. */
static void stall_check(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	uint8_t b;

	if (poll(&p, 1, 0) == 1) {
		ssize_t k = recv(fd, &b, 1, MSG_DONTWAIT);

		REQUIRE(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK),
			"stalled-handshake",
			"rank 1 ended the stalled handshake (%s) before the "
			"fence after rank 2's connect: it waited for it first",
			k == 0	? "closed"
			: k > 0 ? "answered"
				: strerror(errno));
	}
	close(fd);
	verdict(1, "stalled-handshake", NULL);
}

/* Rank 2: once rank 1 is stuck with rank 0's handshake, its endpoint to
 * rank 1. */
static void beside_stalled(rmca_context_t *ctx, const char *dir)
{
	long end = rmca_now_ms() + WAIT_MS;
	char path[4096];
	rmca_ep_t *ep;
	int rc;

	snprintf(path, sizeof(path), "%s/stalled", dir);
	while (!file_exists(path) && rmca_now_ms() < end) {
		rmca_poll(ctx, NULL, 0);
		poll(NULL, 0, 2);
	}
	REQUIRE(file_exists(path), "served-beside-it",
		"rank 0 did not stall a handshake in %d ms", WAIT_MS);
	rc = rmca_job_ep(ctx, 1, WAIT_MS, &ep);
	REQUIRE(!rc, "served-beside-it", "rmca_job_ep(1): %s",
		rmca_strerror(rc));
	verdict(1, "served-beside-it", NULL);
}

/* ---- the job, afterwards ---- */

struct note {
	uint32_t from, to;
	uint64_t magic;
};

static void job_works(rmca_context_t *ctx)
{
	rmca_ep_t *ep[MAXR];
	struct note snd[MAXR], rcv[MAXR];
	rmca_mr_t *smr, *rmr;
	int posted = 0, got = 0, st[2 * MAXR];
	long end;
	int rc;

	for (uint32_t k = 0; k < n; k++) {
		rc = rmca_job_ep(ctx, k, WAIT_MS, &ep[k]);
		REQUIRE(!rc, "endpoints", "rmca_job_ep(%u): %s", k,
			rmca_strerror(rc));
	}
	verdict(1, "endpoints", NULL);
	REQUIRE(!rmca_mr_reg(ctx, snd, sizeof(snd), RMCA_ACCESS_LOCAL, &smr) &&
			!rmca_mr_reg(ctx, rcv, sizeof(rcv), RMCA_ACCESS_LOCAL,
				     &rmr),
		"sendrecv", "registration");
	for (uint32_t k = 0; k < n; k++) {
		st[k] = st[MAXR + k] = 1;
		snd[k] =
			(struct note){.from = me,
				      .to = k,
				      .magic = 0xa77ac4ull << 24 | me << 8 | k};
		REQUIRE(!rmca_recv(ep[k], &rcv[k], sizeof(rcv[k]), rmr,
				   (void *)(intptr_t)k) &&
				!rmca_send(ep[k], &snd[k], sizeof(snd[k]), smr,
					   (void *)(intptr_t)(MAXR + k)),
			"sendrecv", "post to %u", k);
		posted += 2;
	}
	end = rmca_now_ms() + WAIT_MS;
	while (got < posted && rmca_now_ms() < end) {
		struct rmca_completion c[8];
		int k = rmca_poll(ctx, c, 8);

		for (int i = 0; i < k; i++)
			st[(intptr_t)c[i].user_ctx] = c[i].status;
		got += k > 0 ? k : 0;
	}
	REQUIRE(got == posted, "sendrecv", "completions missing");
	for (uint32_t k = 0; k < n; k++)
		REQUIRE(!st[k] && !st[MAXR + k] && rcv[k].from == k &&
				rcv[k].to == me &&
				rcv[k].magic ==
					(0xa77ac4ull << 24 | k << 8 | me),
			"sendrecv", "with rank %u: recv %s, send %s, from %u",
			k, rmca_strerror(st[k]), rmca_strerror(st[MAXR + k]),
			rcv[k].from);
	verdict(1, "sendrecv", NULL);
}

/* Rank 1's own stderr: one reason for each refusal, and no more than ten
 * lines a second of them, the rest counted. The count of a second's lines
 * held back comes once it is over: rank 1 progresses until it did (or
 * every line came), WAIT_MS at most. */
static void logged(rmca_context_t *ctx, const char *path, const char *dir)
{
	static const char *const want[] = {
		"refused: not a job request",
		"refused: another job",
		"refused: claims to be rank 2 without this rank's key",
		"refused: claims to be this rank",
		"refused: rank 0 asked for rank 2",
	};
	char line[1024], noise_path[4096], slots[64];
	bool seen[5], summary, evicted, evicted_held;
	long lines, ms = -1, end = rmca_now_ms() + WAIT_MS;
	FILE *f;

	/* the bound named, as rank 1 has it: 2 * ranks + 16 */
	snprintf(slots, sizeof(slots), "all %u request slots taken",
		 2 * n + 16);
	snprintf(noise_path, sizeof(noise_path), "%s/noise.ms", dir);
	f = fopen(noise_path, "r");
	REQUIRE(f && fscanf(f, "%ld", &ms) == 1 && ms >= 0, "logged", "no %s",
		noise_path);
	fclose(f);
again:
	memset(seen, 0, sizeof(seen));
	summary = evicted = evicted_held = false;
	lines = 0;
	fflush(stderr);
	f = fopen(path, "r");
	REQUIRE(f, "logged", "cannot read %s", path);
	while (fgets(line, sizeof(line), f)) {
		for (int i = 0; i < 5; i++)
			if (strstr(line, want[i]) &&
			    strstr(line, "job: connection from"))
				seen[i] = true;
		lines += strstr(line, "job: connection from") != NULL;
		summary |= strstr(line, "more refused connections not "
					"logged") != NULL;
		evicted |= strstr(line, "job: no request from") &&
			   strstr(line, "closed for a newer connection") &&
			   strstr(line, slots);
		evicted_held |= strstr(line, "more connections closed for "
					     "newer ones not logged") != NULL;
	}
	fclose(f);
	if ((!(lines >= NOISE + 6 || summary) || !(evicted || evicted_held)) &&
	    rmca_now_ms() < end) {
		rmca_poll(ctx, NULL, 0);
		poll(NULL, 0, 5);
		goto again;
	}
	/* the bogus requests of the attack took a few windows at most */
	REQUIRE(lines <= 10 * (ms / 1000 + 4), "logged",
		"%ld refusal lines for %d requests in %ld ms", lines, NOISE + 6,
		ms);
	REQUIRE(lines >= NOISE + 6 || summary, "logged",
		"%ld refusal lines and no count of those held back", lines);
	for (int i = 0; i < 5; i++)
		REQUIRE(seen[i], "logged", "no line \"%s\" in %s", want[i],
			path);
	REQUIRE(evicted || evicted_held, "logged",
		"no line of a connection closed for a newer one in %s", path);
	verdict(1, "logged", NULL);
}

int main(int argc, char **argv)
{
	const char *dir = getenv("RMCATEST_JOBDIR");
	char path[4096], logpath[4096];
	int held[4], nheld = 0, flood[FLOOD], port = -1, stalled = -1, rc;
	int flood2[FLOOD2_MAX], nflood2 = 0;
	rmca_context_t *ctx;
	int rank_env;

	(void)argv;
	if (argc != 1 || !dir) {
		fprintf(stderr, "usage: RMCATEST_JOBDIR=dir test_job_attack "
				"(under mpirun, 3 ranks or more)\n");
		return 2;
	}
	rank_env = getenv("PMIX_RANK") ? atoi(getenv("PMIX_RANK")) : -1;
	snprintf(path, sizeof(path), "%s/rank.%d", dir, rank_env);
	out = fopen(path, "w");
	if (!out)
		return 2;
	/* the target keeps what rmca logs, to check the reasons */
	snprintf(logpath, sizeof(logpath), "%s/stderr.%d", dir, rank_env);
	if (rank_env == 1 && !freopen(logpath, "w", stderr))
		return 2;
	/* nothing waiting at rank 1 ends by time while rank 0 asks it past
	 * the second flood (GIVE_WAY_MS) */
	setenv("RMCA_connect_timeout", "60000", 1);
	REQUIRE(!rmca_init(&ctx), "join", "rmca_init failed");
	rc = rmca_job_join(ctx, WAIT_MS);
	REQUIRE(!rc, "join", "rmca_job_join: %s", rmca_strerror(rc));
	REQUIRE(!rmca_job_rank(ctx, &me, &n) && n >= 3 && n <= MAXR, "join",
		"rank %u of %u (3 to %d wanted)", me, n, MAXR);
	verdict(1, "join", NULL);

	/* First, before the flood fills rank 1's queue of requests: rank 1
	 * serves rank 2 from inside this fence, rank 0's stalled handshake
	 * open. */
	if (me == 0)
		stalled = stall_start(dir);
	if (me == 2)
		beside_stalled(ctx, dir);
	rc = rmca_job_fence(ctx, WAIT_MS);
	REQUIRE(!rc, "fence", "rmca_job_fence: %s", rmca_strerror(rc));
	if (me == 0)
		stall_check(stalled);

	if (me == 0) {
		port = published(1, NULL);
		REQUIRE(port > 0, "attack", "rank 1 published no port");
		attack(port, held, &nheld);
		noise(port, dir);
		flood_open(port, flood);
	}
	/* rank 1 answers all of it from inside this fence */
	rc = rmca_job_fence(ctx, WAIT_MS);
	REQUIRE(!rc, "fence", "rmca_job_fence: %s", rmca_strerror(rc));
	/* and serves rank 0 past the second flood from inside this one */
	if (me == 0)
		give_way(ctx, port, flood2, &nflood2);
	rc = rmca_job_fence(ctx, WAIT_MS);
	REQUIRE(!rc, "fence", "rmca_job_fence: %s", rmca_strerror(rc));
	while (nflood2)
		close(flood2[--nflood2]);
	job_works(ctx);
	rc = rmca_job_fence(ctx, WAIT_MS);
	REQUIRE(!rc, "fence", "rmca_job_fence: %s", rmca_strerror(rc));
	verdict(1, "fence", NULL);
	if (me == 0) {
		flood_check(flood);
		while (nheld)
			close(held[--nheld]);
	}
	rc = rmca_job_fence(ctx, WAIT_MS);
	REQUIRE(!rc, "fence", "rmca_job_fence: %s", rmca_strerror(rc));
	if (me == 1)
		logged(ctx, logpath, dir);
	rmca_finalize(ctx);
	verdict(1, "finalize", NULL);
	fclose(out);
	return failures ? 1 : 0;
}
