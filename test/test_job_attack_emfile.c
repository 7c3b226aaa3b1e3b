/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank's job listener at the descriptor limit (test_job.sh runs this
 * under mpirun with 1 rank, which connects to its own job listener). Peers
 * wait in the listener's backlog while RLIMIT_NOFILE is lowered so that
 * accept4 fails with EMFILE: the listener must not spin (its socket stays
 * readable for as long as accept4 fails, and a listener that only returns
 * is called again at every pass), and the peers must be closed at once
 * rather than left hanging, as rmca_listen's listener does
 * (test_tcp_emfile). Once descriptors are free again, a request is
 * answered.
 *
 * Spinning is counted, never timed: the calls to accept4 and the wake-ups
 * of rmca_wait_fd over a fixed number of rmca_poll calls ("emfile-no-spin"),
 * each peer's end ("emfile-shed"), the refusal of a bogus request
 * afterwards ("emfile-served"). Verdicts go to $RMCATEST_JOBDIR/rank.N.
 */
#define _GNU_SOURCE /* accept4, counted below */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rmca.h>

#include "job_util.h"

#include "job.h"

#define WAIT_MS	    30000
#define NPEERS	    4		     /* peers in the job listener's backlog */
#define NPOLLS	    100		     /* rmca_poll calls counted */
#define MAX_ACCEPTS (2 * NPEERS + 8) /* a spinning listener: NPOLLS */
#define MAX_WAKES   3		     /* of NPOLLS: a spinning one, all */
#define J_REQ_LEN   (16 + 16 + 256)  /* framework/job.c's request */
#define J_REFUSE    5
#define J_INFO	    "rmca.job.v2.0" /* the first context a rank joins */

static volatile int counting;
static unsigned accepts;

/* Every accept4 of the process (the framework is linked in): counted
 * while counting. The job listener's backlog is the only one with peers
 * in it. */
int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	if (counting)
		accepts++;
	return (int)syscall(SYS_accept4, fd, addr, len, flags);
}

/* The port rank r published, as test_job_attack reads it. */
static int published(uint32_t r)
{
	struct rmca_pmix *p;
	char ns[256], why[256], info[2048];
	uint32_t rank, size;
	int port = -1;

	if (rmca_pmix_open(&p, ns, sizeof(ns), &rank, &size, why, sizeof(why)))
		return -1;
	/* "2 port boot_id netns key addrs" */
	if (rmca_pmix_lookup(p, r, J_INFO, info, sizeof(info)) ||
	    sscanf(info, "%*u %d", &port) != 1)
		port = -1;
	rmca_pmix_close(p);
	return port;
}

/* The highest descriptor open in this process. */
static int highest_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int max = -1;

	REQUIRE(d, "emfile-no-spin", "/proc/self/fd: %s", strerror(errno));
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd != dirfd(d) && fd > max)
			max = fd;
	}
	closedir(d);
	return max;
}

/* Whether the peer closed fd by end (ECONNRESET counts), without
 * progressing ctx unless given. */
static bool closed_by(rmca_context_t *ctx, int fd, long end)
{
	while (rmca_now_ms() < end) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint8_t b[64];
		ssize_t k;

		if (ctx)
			rmca_poll(ctx, NULL, 0);
		if (poll(&p, 1, ctx ? 5 : (int)(end - rmca_now_ms())) <= 0)
			continue;
		k = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno == ECONNRESET))
			return true;
		if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR)
			return false;
	}
	return false;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("RMCATEST_JOBDIR");
	int peers[NPEERS], fill[1024], nfill = 0, wakes = 0, port, wfd, fd;
	uint8_t junk[J_REQ_LEN];
	struct rlimit old, low;
	rmca_context_t *ctx;
	char path[4096];
	uint32_t me, n;
	long end;
	int rc;

	(void)argv;
	if (argc != 1 || !dir) {
		fprintf(stderr, "usage: RMCATEST_JOBDIR=dir "
				"test_job_attack_emfile (under mpirun)\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/rank.%s", dir,
		 getenv("PMIX_RANK") ? getenv("PMIX_RANK") : "x");
	out = fopen(path, "w");
	if (!out)
		return 2;
	REQUIRE(!rmca_init(&ctx), "join", "rmca_init failed");
	rc = rmca_job_join(ctx, WAIT_MS);
	REQUIRE(!rc, "join", "rmca_job_join: %s", rmca_strerror(rc));
	REQUIRE(!rmca_job_rank(ctx, &me, &n), "join", "no rank");
	port = published(me);
	REQUIRE(port > 0, "join", "this rank published no port");
	wfd = rmca_wait_fd(ctx);
	REQUIRE(wfd >= 0, "join", "rmca_wait_fd: %d", wfd);
	verdict(1, "join", NULL);

	/* Peers in the backlog, not accepted yet: no rmca call runs until
	 * the limit is lowered. */
	for (int i = 0; i < NPEERS; i++) {
		peers[i] = job_dial(port);
		REQUIRE(peers[i] >= 0, "emfile-no-spin", "connect: %s",
			strerror(errno));
	}
	/* No descriptor left: the limit just above the highest one, the
	 * holes below it filled. */
	REQUIRE(!getrlimit(RLIMIT_NOFILE, &old), "emfile-no-spin", "getrlimit");
	low = old;
	low.rlim_cur = (rlim_t)highest_fd() + 1;
	REQUIRE(!setrlimit(RLIMIT_NOFILE, &low), "emfile-no-spin",
		"setrlimit: %s", strerror(errno));
	while ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0) {
		REQUIRE(nfill < (int)(sizeof(fill) / sizeof(fill[0])),
			"emfile-no-spin", "more than %zu holes",
			sizeof(fill) / sizeof(fill[0]));
		fill[nfill++] = fd;
	}
	REQUIRE(errno == EMFILE, "emfile-no-spin", "open: %s", strerror(errno));

	/* Each pass may handle the job listener; afterwards the context
	 * must have nothing ready. */
	counting = 1;
	for (int i = 0; i < NPOLLS; i++) {
		struct rmca_completion c[8];
		struct pollfd pf = {.fd = wfd, .events = POLLIN};
		int k = rmca_poll(ctx, c, 8);

		REQUIRE(k == 0, "emfile-no-spin", "rmca_poll: %d", k);
		if (poll(&pf, 1, 0) > 0)
			wakes++;
	}
	counting = 0;
	fprintf(out, "# %u accept4 calls, %d wake-ups in %d rmca_poll calls\n",
		accepts, wakes, NPOLLS);
	verdict(accepts <= MAX_ACCEPTS && wakes <= MAX_WAKES, "emfile-no-spin",
		"out of descriptors, %u accept4 calls and %d wake-ups in %d "
		"rmca_poll calls with %d peers waiting: the job listener "
		"spins",
		accepts, wakes, NPOLLS, NPEERS);

	/* Nobody left hanging: each peer sees its connection end, without
	 * more rmca calls. */
	end = rmca_now_ms() + 10000;
	for (int i = 0; i < NPEERS; i++) {
		bool closed = closed_by(NULL, peers[i], end);

		close(peers[i]);
		if (!closed) {
			verdict(0, "emfile-shed",
				"peer %d of %d still open with the job "
				"listener out of descriptors",
				i, NPEERS);
			break;
		}
		if (i == NPEERS - 1)
			verdict(1, "emfile-shed", NULL);
	}

	/* Descriptors free again: a bogus request is answered "refused". */
	while (nfill)
		close(fill[--nfill]);
	REQUIRE(!setrlimit(RLIMIT_NOFILE, &old), "emfile-served",
		"setrlimit: %s", strerror(errno));
	memset(junk, 0x3c, sizeof(junk));
	fd = job_dial(port);
	REQUIRE(fd >= 0, "emfile-served", "connect: %s", strerror(errno));
	REQUIRE(send(fd, junk, sizeof(junk), MSG_NOSIGNAL) ==
			(ssize_t)sizeof(junk),
		"emfile-served", "send: %s", strerror(errno));
	end = rmca_now_ms() + WAIT_MS;
	for (size_t got = 0; got < 8 && rmca_now_ms() < end;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t k;

		rmca_poll(ctx, NULL, 0);
		if (poll(&p, 1, 5) <= 0)
			continue;
		k = recv(fd, junk + got, 8 - got, MSG_DONTWAIT);
		REQUIRE(k > 0 || (k < 0 && errno == EAGAIN), "emfile-served",
			"closed after %zu bytes of the answer", got);
		got += k > 0 ? (size_t)k : 0;
	}
	verdict(junk[6] == J_REFUSE && closed_by(ctx, fd, end), "emfile-served",
		"no refusal (kind %d) and close", junk[6]);
	close(fd);

	rmca_finalize(ctx);
	verdict(1, "finalize", NULL);
	fclose(out);
	return failures ? 1 : 0;
}
