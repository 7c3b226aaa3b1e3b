/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The job calls of a process that no PMIx launcher started (or of an rmca
 * built without PMIx): rmca_job_join says RMCA_ERR_UNSUPPORTED in one clear
 * line, and the other job calls refuse without a join. TAP.
 *
 *   test_job_nolauncher --built   exit 0 when rmca has job support, 1 if not
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rmca.h>

static int n, failed;

static void check(int ok, const char *what, int rc)
{
	n++;
	if (!ok)
		failed++;
	printf("%sok %d - %s (%s)\n", ok ? "" : "not ", n, what,
	       rmca_strerror(rc));
}

int main(int argc, char **argv)
{
	const char *vars[] = {"PMIX_NAMESPACE",	  "PMIX_RANK",
			      "PMIX_SERVER_URI",  "PMIX_SERVER_URI2",
			      "PMIX_SERVER_URI3", "PMIX_SERVER_URI4",
			      "PMIX_SERVER_URI41"};
	char path[] = "/tmp/rmca-nolauncher.XXXXXX", line[512];
	rmca_context_t *ctx;
	rmca_ep_t *ep = NULL;
	uint32_t rank, size;
	int rc, fd, saved, lines = 0, named = 0, built;
	FILE *f;

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	if (rmca_init(&ctx)) {
		printf("1..0 # SKIP rmca_init failed\n");
		return 0;
	}
	/* before a join: UNSUPPORTED without PMIx, INVALID with it */
	rc = rmca_job_rank(ctx, &rank, &size);
	built = rc != RMCA_ERR_UNSUPPORTED;
	if (argc > 1 && !strcmp(argv[1], "--built")) {
		rmca_finalize(ctx);
		return built ? 0 : 1;
	}
	printf("1..6\n");
	check(rc == (built ? RMCA_ERR_INVALID : RMCA_ERR_UNSUPPORTED),
	      "rmca_job_rank before a join", rc);

	/* the join's log goes to a file we read back */
	fd = mkstemp(path);
	if (fd < 0)
		return 99;
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	rc = rmca_job_join(ctx, 5000);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	check(rc == RMCA_ERR_UNSUPPORTED, "rmca_job_join without a launcher",
	      rc);
	f = fdopen(fd, "r");
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		lines++;
		fprintf(stderr, "logged: %s", line);
		if (strstr(line, built ? "launcher" : "without PMIx"))
			named++;
	}
	fclose(f);
	unlink(path);
	n++;
	printf("%sok %d - one log line that says why (%d lines)\n",
	       lines == 1 && named == 1 ? "" : "not ", n, lines);
	failed += !(lines == 1 && named == 1);

	rc = rmca_job_ep(ctx, 0, 0, &ep);
	check(rc == (built ? RMCA_ERR_INVALID : RMCA_ERR_UNSUPPORTED) && !ep,
	      "rmca_job_ep without a job", rc);
	rc = rmca_job_fence(ctx, 0);
	check(rc == (built ? RMCA_ERR_INVALID : RMCA_ERR_UNSUPPORTED),
	      "rmca_job_fence without a job", rc);
	rc = rmca_job_join(NULL, 0);
	check(rc == (built ? RMCA_ERR_INVALID : RMCA_ERR_UNSUPPORTED) ||
		      rc == RMCA_ERR_INVALID,
	      "rmca_job_join(NULL)", rc);
	rmca_finalize(ctx);
	return failed ? 1 : 0;
}
