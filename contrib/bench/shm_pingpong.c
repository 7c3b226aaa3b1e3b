/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_pingpong - the work of an 8 B ping-pong over rmca, without the
 * waiting: one thread, two contexts of this process connected to each
 * other, each side polled in turn only until its message is there. Every
 * poll then finds what it polls for, so the instructions a round trip
 * takes (run under valgrind --tool=callgrind, at N and 2N) are the same
 * from run to run, whatever the machine's load; and the time it prints is
 * a round trip on one CPU, where no cache line ever moves between cores.
 *
 *   shm_pingpong [N [SIZE]]   prints "pingpong,SIZE,N,NS,ns_per_round_trip"
 *
 * Transports as for any rmca program (contrib/bench/shm.sh sets
 * RMCA_transports=shm).
 */
#define PINGPONG_NAME "shm_pingpong"
#include "pingpong.h"

/* Poll ctx until a receive completes; every completion must be OK. */
static void wait_recv(rmca_context_t *ctx)
{
	struct rmca_completion c[4];

	for (;;) {
		int n = rmca_poll(ctx, c, 4);

		if (n < 0)
			die("poll", n);
		for (int i = 0; i < n; i++) {
			if (c[i].status)
				die("completion", c[i].status);
			if (c[i].op == RMCA_OP_RECV)
				return;
		}
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000, warmup;
	size_t size = argc > 2 ? strtoul(argv[2], NULL, 0) : 8;
	static char buf[4][4096];
	rmca_context_t *a, *b;
	rmca_mr_t *mr[4];
	rmca_ep_t *ea, *eb;
	double t0 = 0;
	int rc;

	if (n < 1 || size > sizeof(buf[0]))
		return 2;
	warmup = n / 10 + 1;
	pingpong_pair(&a, &b, &ea, &eb);
	for (int i = 0; i < 4; i++)
		if ((rc = rmca_mr_reg(i < 2 ? a : b, buf[i], sizeof(buf[i]),
				      RMCA_ACCESS_LOCAL, &mr[i])))
			die("mr_reg", rc);
	for (long i = 0; i < warmup + n; i++) {
		if (i == warmup)
			t0 = now_ns();
		if ((rc = rmca_recv(eb, buf[2], size, mr[2], NULL)) ||
		    (rc = rmca_recv(ea, buf[0], size, mr[0], NULL)) ||
		    (rc = rmca_send(ea, buf[1], size, mr[1], NULL)))
			die("post", rc);
		wait_recv(b);
		if ((rc = rmca_send(eb, buf[3], size, mr[3], NULL)))
			die("send", rc);
		wait_recv(a);
	}
	printf("pingpong,%zu,%ld,%.1f,ns_per_round_trip\n", size, n,
	       (now_ns() - t0) / (double)n);
	pingpong_unpair(a, b, ea, eb);
	return 0;
}
