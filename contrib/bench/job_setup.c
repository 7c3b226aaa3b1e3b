/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_setup: what joining a job and making its endpoints cost, one rank of
 * a job that mpirun starts (contrib/bench/job.sh). Each rank prints
 *
 *   job_setup RANK SIZE JOIN_MS RING_MS ALL_MS
 *
 * JOIN_MS: rmca_job_join (publish, fence with data collection);
 * RING_MS: after a fence, the endpoint to the next rank only (what a rank
 *          pays when it talks to one peer), or 0 with "all";
 * ALL_MS:  after another fence, the endpoints to every other rank, each
 *          rank starting with the rank after it (all-to-all); with "ring"
 *          the neighbour's endpoint exists already.
 *
 *   job_setup ring|all
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rmca.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void check(const char *what, int rc)
{
	if (rc) {
		fprintf(stderr, "job_setup: %s: %s\n", what, rmca_strerror(rc));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	int ring_first = argc < 2 || strcmp(argv[1], "all");
	rmca_context_t *ctx;
	rmca_ep_t *ep;
	uint32_t rank, size;
	double t0, join, ring, all;

	check("rmca_init", rmca_init(&ctx));
	t0 = now_ms();
	check("rmca_job_join", rmca_job_join(ctx, 120000));
	join = now_ms() - t0;
	check("rmca_job_rank", rmca_job_rank(ctx, &rank, &size));
	check("rmca_job_fence", rmca_job_fence(ctx, 120000));
	t0 = now_ms();
	if (ring_first)
		check("rmca_job_ep",
		      rmca_job_ep(ctx, (rank + 1) % size, 120000, &ep));
	ring = ring_first ? now_ms() - t0 : 0;
	check("rmca_job_fence", rmca_job_fence(ctx, 120000));
	t0 = now_ms();
	for (uint32_t k = 1; k < size; k++)
		check("rmca_job_ep",
		      rmca_job_ep(ctx, (rank + k) % size, 120000, &ep));
	all = now_ms() - t0;
	check("rmca_job_fence", rmca_job_fence(ctx, 120000));
	printf("job_setup %u %u %.2f %.2f %.2f\n", rank, size, join, ring, all);
	rmca_finalize(ctx);
	return 0;
}
