/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * init_time - what rmca_init + rmca_finalize cost, N times in a row, with
 * the components RMCA_transports selects. Prints the minimum, median and
 * maximum in microseconds, and the modules the context had:
 *
 *   init_time [N]
 *
 * N = 0: one rmca_init + rmca_finalize only (for counting its system calls
 * under strace).
 *
 * A benchmark (contrib/bench/init-vm.sh runs it in the VM), never a test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rmca.h>
#include <rmca/info.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	struct rmca_info_module m;
	rmca_context_t *ctx;
	double *t;

	if (n < 0 || !(t = calloc((size_t)n + 1, sizeof(*t))))
		return 2;
	/* once, to name the modules (and to warm the loader's caches) */
	if (rmca_init(&ctx)) {
		fprintf(stderr, "init_time: rmca_init failed\n");
		return 1;
	}
	printf("modules:");
	for (int i = 0; !rmca_info_module(ctx, i, &m); i++)
		printf(" %s/%s", m.component, m.device);
	printf("\n");
	rmca_finalize(ctx);
	if (!n)
		return 0;
	for (int i = 0; i < n; i++) {
		double t0 = now_us();

		if (rmca_init(&ctx))
			return 1;
		rmca_finalize(ctx);
		t[i] = now_us() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("init+finalize us: min %.0f median %.0f max %.0f (n=%d)\n", t[0],
	       t[n / 2], t[n - 1], n);
	free(t);
	return 0;
}
