/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The framework's own view of a context. Never included by components.
 */
#ifndef RMCA_INTERNAL_H
#define RMCA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rmca.h>
#include <rmca/component.h>
#include <rmca/support/container.h>
#include <rmca/support/list.h>

#include "fair.h"
#include "log.h"
#include "params.h"
#include "registry.h"

#define RMCA_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum rmca_atomic_mode {
	RMCA_ATOMIC_MODE_AUTO,
	RMCA_ATOMIC_MODE_DEVICE,
	RMCA_ATOMIC_MODE_CPU,
};

/* One loaded component within a context. */
struct rmca_comp {
	const struct rmca_component *comp;
	const struct rmca_component_entry *entry;
	struct rmca_module **modules;
	int nmodules;
	int priority; /* RMCA_<name>_priority */
	uint32_t caps_mask; /* caps RMCA_<name>_caps takes away */
	bool enabled; /* selected by RMCA_transports */
	int open_status; /* what open() returned */
	char why_none[160]; /* open() found no module: why, if it said */
};

/* One module as the framework sees it. */
struct rmca_mod {
	struct rmca_module *m;
	struct rmca_comp *comp;
	uint32_t caps; /* m->caps less the mask */
	int index; /* position in ctx->mods, stable for the context's life */
	/* Its component says RMCA_COMPONENT_ORDERED: a flush completes after
	 * every operation posted before it on the connection, so the core
	 * need not keep the others in post order itself (ops.c). */
	bool ordered;
	/* The module's word that says its progress op has work
	 * (progress_due), or NULL: the op, if any, runs every pass. */
	unsigned *due;
};

struct rmca_fd_slot {
	rmca_fd_cb cb;
	void *arg;
	bool eager; /* RMCA_FD_EAGER */
	/* Which registration of this number: kept across fd_del, so that an
	 * event of an fd removed within a batch (its number perhaps given to
	 * a new one since) is told from the new fd's (rmca_fd_event). */
	uint32_t gen;
};

/* What epoll carries for an fd the core watches: its number and the
 * registration it was added under. */
static inline uint64_t rmca_fd_event(int fd, uint32_t gen)
{
	return (uint64_t)gen << 32 | (uint32_t)fd;
}

struct rmca_context {
	struct rmca_core core; /* core.priv == this */
	struct rmca_params *params;
	struct rmca_registry reg;
	struct rmca_comp *comps;
	size_t ncomps;
	struct rmca_mod *mods;
	size_t nmods;

	int epfd;
	struct rmca_fd_slot *fds; /* indexed by fd */
	size_t nfds;
	unsigned neager; /* fds added with RMCA_FD_EAGER */

	/* framework parameters */
	const char *transports;
	int connect_timeout_ms;
	unsigned ep_max_core_ops; /* RMCA_ep_max_core_ops */
	size_t ctrl_max_queued; /* RMCA_ctrl_max_queued */
	int handshake_max; /* incoming handshakes per listener, at once */
	int max_rails;	   /* RMCA_max_rails: pairs an endpoint uses at most */
	size_t rail_min_size; /* RMCA_rail_min_size: split from this size */
	const char *rail_transports;	   /* RMCA_rail_transports */
	enum rmca_atomic_mode atomic_mode; /* as set */
	enum rmca_atomic_mode atomic_resolved; /* device or cpu */

	/* host identity for loopback detection */
	char boot_id[40];
	uint64_t netns;

	struct rmca_cq *cq; /* completions not yet returned by rmca_poll */
	/* Requests kept for reuse, linked through cq_next (ep.h,
	 * rmca_req_alloc), and how many; posted: one was taken since the
	 * last pass of the event loop (progress.c). */
	struct rmca_req *req_spare;
	unsigned req_nspare;
	bool posted;
	/* Bytes every request holds for the module it is posted to, at
	 * RMCA_REQ_MODULE_OFFSET (ep.h): the largest req_size of the
	 * components with modules. Set before any request exists. */
	size_t req_module_size;
	struct rmca_list eps; /* open endpoints (struct rmca_ep) */
	struct rmca_list mrs; /* registered regions (struct rmca_mr) */
	struct rmca_list mems; /* rmca_mem_alloc's (struct rmca_mem, mem.c) */
	struct rmca_list listeners; /* struct rmca_listener */
	struct rmca_fair fair;	    /* fair_victim's counts, kept (fair.c) */
	struct rmca_job *job; /* rmca_job_join (job.c) */
	const char *registering; /* component whose parameters are registered */
	struct rmca_comp *opening; /* component whose open() runs now */
	bool inspect; /* rmca_info: keep going past bad parameters */
	int init_error; /* first error met during init (inspect mode) */
};

/* mem.c */
int rmca_mem_find(const struct rmca_core *core, const void *addr, size_t len,
		  struct rmca_mem_info *out);
void rmca_mem_free_all(struct rmca_context *ctx);

/* ep.c: core op fair_victim, on the context's counts */
const void *rmca_core_fair_victim(const struct rmca_core *core, size_t n,
				  rmca_fair_next next, void *arg,
				  const struct rmca_fair_entry *newcomer);

static inline struct rmca_context *rmca_core_ctx(const struct rmca_core *core)
{
	return core->priv;
}

#endif
