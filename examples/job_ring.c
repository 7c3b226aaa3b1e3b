/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_ring: a token goes once around the ranks of a job, each adding its
 * rank, and every rank puts its rank into the next rank's memory.
 *
 *   mpirun -np 4 ./job_ring
 *
 * (as root add --allow-run-as-root; more ranks than cores: --oversubscribe)
 *
 * The launcher (mpirun, prterun, srun --mpi=pmix) starts the processes;
 * rmca_job_join finds the others through it, rmca_job_ep makes the
 * endpoint to a rank on first use (the other side needs no accept), and
 * rmca_job_fence waits for every rank.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <rmca.h>

#define TIMEOUT_MS 30000

static void check(const char *what, int rc)
{
	if (rc) {
		fprintf(stderr, "job_ring: %s: %s\n", what, rmca_strerror(rc));
		exit(1);
	}
}

/* Progress until n more operations have completed, each without error. */
static void wait_n(rmca_context_t *ctx, int n)
{
	struct rmca_completion c;

	while (n > 0) {
		if (rmca_poll(ctx, &c, 1) != 1)
			continue;
		check(c.user_ctx, c.status);
		n--;
	}
}

int main(void)
{
	struct {
		uint64_t slot; /* the previous rank puts its rank here */
		uint64_t token_in, token_out;
		uint64_t mine[2]; /* our slot's address and key, sent */
		uint64_t next[2]; /* the next rank's, received */
		uint64_t rank;
	} m = {.slot = UINT64_MAX};
	rmca_context_t *ctx;
	rmca_ep_t *next, *prev;
	rmca_mr_t *mr;
	uint32_t rank, size;

	check("rmca_init", rmca_init(&ctx));
	check("rmca_job_join (started by mpirun?)",
	      rmca_job_join(ctx, TIMEOUT_MS));
	check("rmca_job_rank", rmca_job_rank(ctx, &rank, &size));
	if (size < 2) {
		fprintf(stderr, "job_ring: run it with at least 2 ranks\n");
		return 1;
	}
	check("rmca_job_ep",
	      rmca_job_ep(ctx, (rank + 1) % size, TIMEOUT_MS, &next));
	check("rmca_job_ep",
	      rmca_job_ep(ctx, (rank + size - 1) % size, TIMEOUT_MS, &prev));
	/* One region for everything: the slot the previous rank writes, and
	 * the buffers of our own messages and put. */
	check("rmca_mr_reg",
	      rmca_mr_reg(ctx, &m, sizeof(m), RMCA_ACCESS_REMOTE_WRITE, &mr));

	/* Tell the previous rank where our slot is; learn the next one's. */
	check("rmca_recv",
	      rmca_recv(next, m.next, sizeof(m.next), mr, "where"));
	m.mine[0] = (uint64_t)(uintptr_t)&m.slot;
	m.mine[1] = rmca_mr_rkey(mr, prev);
	check("rmca_send", rmca_send(prev, m.mine, sizeof(m.mine), mr, "told"));
	wait_n(ctx, 2);

	/* The token: rank 0 starts it, every other rank adds its rank. */
	check("rmca_recv",
	      rmca_recv(prev, &m.token_in, sizeof(m.token_in), mr, "token in"));
	if (rank != 0)
		wait_n(ctx, 1);
	m.token_out = rank ? m.token_in + rank : 0;
	check("rmca_send", rmca_send(next, &m.token_out, sizeof(m.token_out),
				     mr, "token out"));
	wait_n(ctx, 1); /* rank 0: its token out, or the token back */
	if (rank == 0) {
		wait_n(ctx, 1);
		printf("job_ring: the token came back to rank 0 as %" PRIu64
		       " (0 + 1 + ... + %u = %u)\n",
		       m.token_in, size - 1, size * (size - 1) / 2);
		if (m.token_in != (uint64_t)size * (size - 1) / 2)
			return 1;
	}

	/* One-sided: our rank into the next rank's slot, in its memory when
	 * the put completes (RMCA_DELIVERED). */
	m.rank = rank;
	check("rmca_put", rmca_put(next, &m.rank, sizeof(m.rank), mr, m.next[0],
				   m.next[1], RMCA_DELIVERED, "put"));
	wait_n(ctx, 1);
	check("rmca_job_fence", rmca_job_fence(ctx, TIMEOUT_MS));
	if (m.slot != (rank + size - 1) % size) {
		fprintf(stderr,
			"job_ring: rank %u found %" PRIu64 " in its slot\n",
			rank, m.slot);
		return 1;
	}
	printf("job_ring: rank %u of %u: slot holds rank %" PRIu64 "\n", rank,
	       size, m.slot);
	rmca_finalize(ctx);
	return 0;
}
