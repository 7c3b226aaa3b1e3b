/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Jobs: processes started together by a PMIx launcher. job.c keeps the
 * ranks' endpoints and the job listener; job_pmix.c (or job_nopmix.c when
 * rmca is built without PMIx) is the only code that talks to the launcher.
 */
#ifndef RMCA_JOB_H
#define RMCA_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* ---- the launcher (job_pmix.c / job_nopmix.c) ---- */

struct rmca_pmix;

/* Whether this build has PMIx at all. */
bool rmca_pmix_built(void);
/* Connect to the launcher's PMIx server: the job's namespace, this
 * process's rank and the job's size. RMCA_ERR_UNSUPPORTED (why filled) when
 * no launcher started us. */
int rmca_pmix_open(struct rmca_pmix **out, char *nspace, size_t nspace_len,
		   uint32_t *rank, uint32_t *size, char *why, size_t why_len);
void rmca_pmix_close(struct rmca_pmix *p);
/* Publish value under key for every rank (PMIx_Put + PMIx_Commit). */
int rmca_pmix_publish(struct rmca_pmix *p, const char *key, const char *value);
/* Look up what rank published under key (after a collecting fence). */
int rmca_pmix_lookup(struct rmca_pmix *p, uint32_t rank, const char *key,
		     char *value, size_t value_len);

/* A fence in flight. Its completion arrives on the launcher's thread:
 * rmca_pmix_fence_done() is then true and fd (an eventfd) readable. */
struct rmca_pmix_fence;
int rmca_pmix_fence_start(struct rmca_pmix *p, bool collect,
			  struct rmca_pmix_fence **out);
int rmca_pmix_fence_fd(const struct rmca_pmix_fence *f);
/* 1 with *status once done, 0 while in flight. */
int rmca_pmix_fence_done(struct rmca_pmix_fence *f, int *status);
/* Release f; one still in flight is freed by its completion. */
void rmca_pmix_fence_release(struct rmca_pmix_fence *f);

/* ---- the job (job.c) ---- */

/* rmca_finalize: close the job listener and leave the launcher. */
void rmca_job_fini(struct rmca_context *ctx);

#endif
