// SPDX-License-Identifier: BSD-3-Clause
/*
 * Built without PMIx: there is no launcher to talk to, so every job call
 * ends in RMCA_ERR_UNSUPPORTED (job.c checks rmca_pmix_built() first).
 */
#include <stdio.h>

#include "job.h"

bool rmca_pmix_built(void)
{
	return false;
}

int rmca_pmix_open(struct rmca_pmix **out, char *nspace, size_t nspace_len,
		   uint32_t *rank, uint32_t *size, char *why, size_t why_len)
{
	snprintf(why, why_len, "rmca was built without PMIx (libpmix-dev)");
	return RMCA_ERR_UNSUPPORTED;
}

void rmca_pmix_close(struct rmca_pmix *p)
{
}

int rmca_pmix_publish(struct rmca_pmix *p, const char *key, const char *value)
{
	return RMCA_ERR_UNSUPPORTED;
}

int rmca_pmix_lookup(struct rmca_pmix *p, uint32_t rank, const char *key,
		     char *value, size_t value_len)
{
	return RMCA_ERR_UNSUPPORTED;
}

int rmca_pmix_fence_start(struct rmca_pmix *p, bool collect,
			  struct rmca_pmix_fence **out)
{
	return RMCA_ERR_UNSUPPORTED;
}

int rmca_pmix_fence_fd(const struct rmca_pmix_fence *f)
{
	return -1;
}

int rmca_pmix_fence_done(struct rmca_pmix_fence *f, int *status)
{
	*status = RMCA_ERR_UNSUPPORTED;
	return 1;
}

void rmca_pmix_fence_release(struct rmca_pmix_fence *f)
{
}
