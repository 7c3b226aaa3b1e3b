// SPDX-License-Identifier: BSD-3-Clause
/*
 * The launcher, through PMIx: who we are, what every rank published, and
 * fences. Fences are non-blocking (PMIx_Fence_nb) so that the caller keeps
 * progressing its context while it waits; their completion arrives on
 * PMIx's own thread and is handed over through an atomic flag and an
 * eventfd, the only state both threads touch.
 */
#include <pmix.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "job.h"

struct rmca_pmix {
	pmix_proc_t me;
};

bool rmca_pmix_built(void)
{
	return true;
}

static int status_of(pmix_status_t rc)
{
	switch (rc) {
	case PMIX_SUCCESS:
		return 0;
	case PMIX_ERR_TIMEOUT:
		return RMCA_ERR_TIMEOUT;
	case PMIX_ERR_NOT_FOUND:
		return RMCA_ERR_NOT_FOUND;
	case PMIX_ERR_NOMEM:
		return RMCA_ERR_NO_MEMORY;
	case PMIX_ERR_BAD_PARAM:
		return RMCA_ERR_INVALID;
	default:
		/* a rank that died, a server gone, a fence that was lost */
		return RMCA_ERR_CONNECTION;
	}
}

int rmca_pmix_open(struct rmca_pmix **out, char *nspace, size_t nspace_len,
		   uint32_t *rank, uint32_t *size, char *why, size_t why_len)
{
	struct rmca_pmix *p;
	pmix_value_t *val = NULL;
	pmix_proc_t wild;
	pmix_status_t rc;

	/* Without a launcher's environment PMIx_Init can only fail; asking
	 * it anyway costs a connection attempt and, in some versions, noise
	 * on stderr. */
	if (!getenv("PMIX_NAMESPACE") || !getenv("PMIX_RANK")) {
		snprintf(why, why_len,
			 "not started by a PMIx launcher (no "
			 "PMIX_NAMESPACE/PMIX_RANK in the environment; use "
			 "mpirun, prterun or srun --mpi=pmix)");
		return RMCA_ERR_UNSUPPORTED;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return RMCA_ERR_NO_MEMORY;
	rc = PMIx_Init(&p->me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		snprintf(why, why_len,
			 "the PMIx launcher cannot be reached: %s",
			 PMIx_Error_string(rc));
		free(p);
		return RMCA_ERR_UNSUPPORTED;
	}
	PMIX_LOAD_PROCID(&wild, p->me.nspace, PMIX_RANK_WILDCARD);
	rc = PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &val);
	if (rc != PMIX_SUCCESS || !val || val->type != PMIX_UINT32) {
		snprintf(why, why_len, "the launcher gave no job size: %s",
			 PMIx_Error_string(rc));
		if (val)
			PMIX_VALUE_RELEASE(val);
		PMIx_Finalize(NULL, 0);
		free(p);
		return RMCA_ERR_PROTOCOL;
	}
	*size = val->data.uint32;
	PMIX_VALUE_RELEASE(val);
	*rank = p->me.rank;
	snprintf(nspace, nspace_len, "%s", p->me.nspace);
	*out = p;
	return 0;
}

void rmca_pmix_close(struct rmca_pmix *p)
{
	if (!p)
		return;
	PMIx_Finalize(NULL, 0);
	free(p);
}

int rmca_pmix_publish(struct rmca_pmix *p, const char *key, const char *value)
{
	pmix_value_t v;
	pmix_status_t rc;

	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_STRING;
	v.data.string = (char *)value;
	rc = PMIx_Put(PMIX_GLOBAL, key, &v);
	if (rc == PMIX_SUCCESS)
		rc = PMIx_Commit();
	return status_of(rc);
}

int rmca_pmix_lookup(struct rmca_pmix *p, uint32_t rank, const char *key,
		     char *value, size_t value_len)
{
	pmix_value_t *val = NULL;
	pmix_info_t info;
	pmix_proc_t proc;
	bool optional = true;
	pmix_status_t rc;
	int ret = 0;

	PMIX_LOAD_PROCID(&proc, p->me.nspace, rank);
	/* After the collecting fence of the join the data is here: never
	 * wait on the server for a rank that published nothing. */
	PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &optional, PMIX_BOOL);
	rc = PMIx_Get(&proc, key, &info, 1, &val);
	PMIX_INFO_DESTRUCT(&info);
	if (rc != PMIX_SUCCESS)
		return status_of(rc);
	if (!val || val->type != PMIX_STRING || !val->data.string ||
	    strlen(val->data.string) >= value_len)
		ret = RMCA_ERR_PROTOCOL;
	else
		snprintf(value, value_len, "%s", val->data.string);
	if (val)
		PMIX_VALUE_RELEASE(val);
	return ret;
}

struct rmca_pmix_fence {
	atomic_int refs; /* the caller's and the completion's */
	atomic_int done;
	int status; /* written before done is set */
	int efd;
	pmix_info_t info;
};

static void fence_put(struct rmca_pmix_fence *f)
{
	if (atomic_fetch_sub(&f->refs, 1) == 1) {
		PMIX_INFO_DESTRUCT(&f->info);
		close(f->efd);
		free(f);
	}
}

/* On PMIx's thread. */
static void fence_cb(pmix_status_t rc, void *arg)
{
	struct rmca_pmix_fence *f = arg;
	uint64_t one = 1;

	f->status = status_of(rc);
	atomic_store(&f->done, 1);
	if (write(f->efd, &one, sizeof(one)) != sizeof(one)) {
		/* the flag alone is enough: the waiter polls in slices */
	}
	fence_put(f);
}

int rmca_pmix_fence_start(struct rmca_pmix *p, bool collect,
			  struct rmca_pmix_fence **out)
{
	struct rmca_pmix_fence *f = calloc(1, sizeof(*f));
	pmix_proc_t wild;
	pmix_status_t rc;

	if (!f)
		return RMCA_ERR_NO_MEMORY;
	f->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (f->efd < 0) {
		free(f);
		return RMCA_ERR_NO_MEMORY;
	}
	atomic_init(&f->refs, 2);
	atomic_init(&f->done, 0);
	PMIX_INFO_LOAD(&f->info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	PMIX_LOAD_PROCID(&wild, p->me.nspace, PMIX_RANK_WILDCARD);
	/* The info must live until the completion: it is part of f. */
	rc = PMIx_Fence_nb(&wild, 1, &f->info, 1, fence_cb, f);
	if (rc == PMIX_OPERATION_SUCCEEDED) {
		/* done at once (a job of one): no completion will come */
		f->status = 0;
		atomic_store(&f->done, 1);
		atomic_store(&f->refs, 1);
		*out = f;
		return 0;
	}
	if (rc != PMIX_SUCCESS) {
		atomic_store(&f->refs, 1);
		fence_put(f);
		return status_of(rc);
	}
	*out = f;
	return 0;
}

int rmca_pmix_fence_fd(const struct rmca_pmix_fence *f)
{
	return f->efd;
}

int rmca_pmix_fence_done(struct rmca_pmix_fence *f, int *status)
{
	if (!atomic_load(&f->done))
		return 0;
	*status = f->status;
	return 1;
}

void rmca_pmix_fence_release(struct rmca_pmix_fence *f)
{
	if (f)
		fence_put(f);
}
