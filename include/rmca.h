/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmca.h - one API over InfiniBand/RoCE, iWARP and TCP.
 *
 * The names and semantics of this header are a contract (doc/api.md): every
 * transport keeps them. Additions go at the end of each section.
 */
#ifndef RMCA_H
#define RMCA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is exported, whatever -fvisibility says. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef struct rmca_context rmca_context_t;
typedef struct rmca_listener rmca_listener_t;
typedef struct rmca_ep rmca_ep_t;
typedef struct rmca_mr rmca_mr_t;

enum rmca_access {
	RMCA_ACCESS_LOCAL = 1 << 0, /* implied: every region serves local buffers */
	RMCA_ACCESS_REMOTE_READ = 1 << 1,
	RMCA_ACCESS_REMOTE_WRITE = 1 << 2,
	RMCA_ACCESS_REMOTE_ATOMIC = 1 << 3,
	RMCA_MR_USE_ONCE = 1 << 4, /* its key can be revoked by the peer's send_inv */
};

enum { RMCA_DELIVERED = 1 << 0 }; /* rmca_put flag */

enum rmca_op {
	RMCA_OP_SEND,
	RMCA_OP_RECV,
	RMCA_OP_PUT,
	RMCA_OP_GET,
	RMCA_OP_ATOMIC,
	RMCA_OP_FLUSH,
};

enum rmca_atomic_kind {
	RMCA_ATOMIC_FADD,
	RMCA_ATOMIC_CSWAP,
	RMCA_ATOMIC_MASKED_FADD,
	RMCA_ATOMIC_MASKED_CSWAP,
};

/* 0 on success, a negative enum rmca_status on failure; rmca_strerror() names it. */
enum rmca_status {
	RMCA_OK = 0,
	RMCA_ERR_INVALID = -1,
	RMCA_ERR_NO_MEMORY = -2,
	RMCA_ERR_NOT_FOUND = -3,
	RMCA_ERR_UNREACHABLE = -4,
	RMCA_ERR_AGAIN = -5,
	RMCA_ERR_REMOTE_ACCESS = -6,
	RMCA_ERR_CONNECTION = -7,
	RMCA_ERR_CANCELED = -8,
	RMCA_ERR_PROTOCOL = -9,
	RMCA_ERR_UNSUPPORTED = -10,
	RMCA_ERR_TRUNCATED = -11,
	RMCA_ERR_TIMEOUT = -12,
};

int rmca_init(rmca_context_t **ctx);
void rmca_finalize(rmca_context_t *ctx);

int rmca_listen(rmca_context_t *ctx, const char *host_port, rmca_listener_t **l);
int rmca_listener_port(const rmca_listener_t *l);
int rmca_accept(rmca_listener_t *l, int timeout_ms, rmca_ep_t **ep);
void rmca_listener_close(rmca_listener_t *l);
int rmca_connect(rmca_context_t *ctx, const char *host_port, int timeout_ms,
		 rmca_ep_t **ep);
void rmca_ep_close(rmca_ep_t *ep);

enum rmca_path {
	RMCA_PATH_NONE, /* not available on this endpoint */
	RMCA_PATH_NATIVE, /* the device does it */
	RMCA_PATH_FLUSH, /* put + flush (completion only local on the device) */
	RMCA_PATH_CAS_LOOP, /* masked atomic built on the native compare-and-swap */
	RMCA_PATH_EMULATED, /* executed by the target's core (active message) */
	RMCA_PATH_REVOKE_MSG, /* send + revoke message instead of send-with-invalidate */
};

struct rmca_ep_attr {
	char transport[16]; /* "ib", "iwarp", "tcp", "shm", "self" */
	char device[64]; /* "rxe0", "siw0", "lo", ... */
	int peer_is_local; /* same host and network namespace */
	enum rmca_path put_delivered, atomic, masked_atomic, send_inv;
};
int rmca_ep_query(const rmca_ep_t *ep, struct rmca_ep_attr *attr);

int rmca_mr_reg(rmca_context_t *ctx, void *addr, size_t len, unsigned access,
		rmca_mr_t **mr);
uint64_t rmca_mr_rkey(rmca_mr_t *mr, rmca_ep_t *ep);
int rmca_mr_dereg(rmca_mr_t *mr);

int rmca_send(rmca_ep_t *ep, const void *buf, size_t len, rmca_mr_t *mr,
	      void *user_ctx);
int rmca_send_inv(rmca_ep_t *ep, const void *buf, size_t len, rmca_mr_t *mr,
		  uint64_t rkey_to_revoke, void *user_ctx);
int rmca_recv(rmca_ep_t *ep, void *buf, size_t len, rmca_mr_t *mr,
	      void *user_ctx);
int rmca_put(rmca_ep_t *ep, const void *buf, size_t len, rmca_mr_t *mr,
	     uint64_t raddr, uint64_t rkey, unsigned flags, void *user_ctx);
int rmca_get(rmca_ep_t *ep, void *buf, size_t len, rmca_mr_t *mr,
	     uint64_t raddr, uint64_t rkey, void *user_ctx);

struct rmca_atomic {
	enum rmca_atomic_kind kind;
	uint64_t raddr; /* 8-byte aligned, inside a region with REMOTE_ATOMIC */
	uint64_t rkey;
	uint64_t operand; /* the value added, or the value swapped in */
	uint64_t compare; /* CSWAP, MASKED_CSWAP */
	uint64_t compare_mask; /* MASKED_CSWAP: swap if ((old ^ compare) & compare_mask) == 0 */
	uint64_t swap_mask; /* MASKED_CSWAP: new = (old & ~swap_mask) | (operand & swap_mask) */
	uint64_t field_boundary; /* MASKED_FADD: bit i set = bit i is the top of a field */
};
int rmca_atomic(rmca_ep_t *ep, const struct rmca_atomic *op, uint64_t *result,
		rmca_mr_t *result_mr, void *user_ctx);
int rmca_flush(rmca_ep_t *ep, void *user_ctx);

struct rmca_completion {
	void *user_ctx;
	int status; /* RMCA_OK or a negative rmca_status */
	enum rmca_op op;
	size_t len; /* bytes received, for RMCA_OP_RECV */
	rmca_ep_t *ep;
	uint64_t revoked_rkey; /* RECV of a send_inv: the key now revoked here */
};
int rmca_poll(rmca_context_t *ctx, struct rmca_completion *out, int max);
int rmca_wait_fd(rmca_context_t *ctx);
const char *rmca_strerror(int status);

/* ---- jobs: processes started together by a PMIx launcher ---- */

/* Publish this context's addresses through PMIx and fence with the job.
 * RMCA_ERR_UNSUPPORTED when no PMIx launcher started this process or rmca
 * was built without PMIx. One context per process joins. */
int rmca_job_join(rmca_context_t *ctx, int timeout_ms);
int rmca_job_rank(rmca_context_t *ctx, uint32_t *rank, uint32_t *size);
/* The one endpoint to that rank (itself too), made on first use by either
 * side; the peer's side appears inside its rmca calls, no accept needed. */
int rmca_job_ep(rmca_context_t *ctx, uint32_t rank, int timeout_ms,
		rmca_ep_t **ep);
/* Returns once every rank has entered it; progresses ctx while waiting. */
int rmca_job_fence(rmca_context_t *ctx, int timeout_ms);

/* ---- additions beyond the contract ---- */

/* The library's version string ("0.1.0"). */
const char *rmca_version(void);

/* One rail of an endpoint: a pair of devices of one transport that carries
 * its operations beside the others (RMCA_max_rails). Rail 0 is the pair
 * rmca_ep_query names; it carries messages, atomics and every operation
 * that is not split. */
struct rmca_ep_rail {
	char transport[16];   /* "ib", "iwarp", ... */
	char device[64];      /* this side's device */
	char peer_device[64]; /* the peer's */
	int up;		      /* connected; 0: it failed to connect or failed */
	uint64_t bytes;	      /* bytes of puts and gets posted on it */
	uint64_t ops; /* puts and gets, or parts of them, posted on it */
};
/* Fills *rail for rail index (0 first). RMCA_ERR_NOT_FOUND past the last
 * rail of ep: an endpoint on one pair has rail 0 only. */
int rmca_ep_query_rail(const rmca_ep_t *ep, int index,
		       struct rmca_ep_rail *rail);

/* Memory the library can share: len bytes (rounded up to whole pages),
 * page-aligned and zero-filled, in *addr until rmca_mem_free or
 * rmca_finalize. Register it with rmca_mr_reg like any memory; a
 * same-host peer's puts and gets into it then copy straight into the
 * pages (shm maps them) instead of through the kernel. Every other
 * transport treats it as ordinary memory. */
int rmca_mem_alloc(rmca_context_t *ctx, size_t len, void **addr);
/* addr as rmca_mem_alloc returned it. RMCA_ERR_INVALID, freeing nothing,
 * if it is not, or while a region registered in it is not deregistered. */
int rmca_mem_free(rmca_context_t *ctx, void *addr);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* RMCA_H */
