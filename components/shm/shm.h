/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shm component: the whole rmca ABI between two processes of one host.
 *
 * Each connection shares one sealed memfd segment (handed over a unix socket,
 * so nothing is ever named in /dev/shm) holding, per side, a request ring
 * and a response ring. Messages, atomics and small puts and gets are
 * requests executed by the target's own core: it checks the key in its
 * table, then copies with memcpy (data inline in the ring) or with
 * process_vm_readv/writev (cross-memory attach, CMA). Atomics thus run on
 * the target's CPU, coherent with tcp's and with the core's emulation.
 *
 * Large puts and gets do not wait for the target: the initiator's core
 * checks the key in the table the target publishes (shm_pub.h) and copies
 * with CMA itself, under a protocol that lets revocation win (shm_direct.c).
 *
 * The unix socket stays open for the connection's life: it carries wakeups
 * (one byte, only when the peer said it may sleep) and its hang-up tells a
 * peer's death, however it died.
 */
#ifndef RMCA_SHM_H
#define RMCA_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rmca/component.h>
#include <rmca/support/clock.h>
#include <rmca/support/container.h>
#include <rmca/support/list.h>

#include "shm_pub.h"
#include "shm_ring.h"

#define SHM_PROTO_VERSION 4u
#define SHM_MAX_OPS	  16384 /* outstanding ops per connection, then AGAIN */
#define SHM_MAX_PENDING	  64	/* accepted sockets awaiting their connect() */

/* The hello on a peer's shm socket and its answer (shm_connect.c). */
#define SHM_HELLO_MAGIC 0x4f4c4548u /* "HELO" */
#define SHM_ACK_MAGIC	0x4b434148u /* "HACK" */

enum shm_hello_flags {
	SHM_HF_CMA = 1 << 0,  /* the sender may attach to the receiver */
	SHM_HF_KEYS = 1 << 1, /* the sender's key table comes with it */
};

struct shm_hello {
	uint32_t magic;
	uint32_t version;
	uint64_t token;
	int32_t status; /* ack: 0, or why the passive side refused */
	uint32_t flags;
};

#define SHM_HELLO_FDS 2 /* the segment (hello only), the key table */

/* The addr() blob: what makes two processes able to share memory. */
struct shm_addr_blob {
	uint8_t magic[4]; /* "RSHM" */
	uint8_t version;  /* SHM_PROTO_VERSION */
	uint8_t reserved[3];
	uint8_t boot_id[16];
	uint64_t ns_ipc, ns_mnt, ns_net, ns_pid; /* namespace inodes */
	uint32_t uid, gid; /* cross-memory attach needs both equal */
	uint32_t pid;
	uint32_t dumpable;   /* prctl(PR_GET_DUMPABLE): 1, or others cannot
				attach to this process */
	uint64_t sock_id;    /* abstract unix socket "\0rmca-shm-<hex>" */
	uint64_t probe_addr; /* a word in this process that holds ... */
	uint64_t probe_val;  /* ... this value, read by the peer's probe */
};

struct shm_key; /* shm_keys.c */

/* An allocation of the target's that a published key lies in. */
struct shm_memref {
	uint64_t id;	 /* the memfd's inode; 0: free */
	uint64_t serial; /* pub->mem[] names it so: never reused */
	unsigned refs;	 /* published keys in it */
};

/* A peer's allocation, mapped here (shm_map.c). */
struct shm_map {
	uint64_t serial; /* the peer's pub->mem[] entry; 0: none */
	char *addr;
	size_t len;
};

struct shm_keytab {
	struct shm_key **buckets;
	size_t nbuckets; /* power of two */
	size_t count;
	int (*random)(void *buf, size_t len);
};

struct shm_module {
	struct rmca_module base;
	struct shm_addr_blob self;
	int lfd;		  /* the abstract listening socket ... */
	bool lfd_watched;	  /* ... in the core's set, from the first
				     passive connect on */
	struct rmca_list pending; /* struct shm_pending */
	int npending;
	struct rmca_list conns; /* struct shm_conn */
	struct shm_keytab keys;
	uint64_t probe_word;
	int yama;		/* kernel.yama.ptrace_scope, 0 when absent */
	int pub_fd;		/* the published key table: its memfd ... */
	struct shm_keypub *pub; /* ... mapped here, the one writer */
	unsigned nfree;		/* free slots of pub, in free_slots */
	uint16_t free_slots[SHM_KEY_SLOTS];
	struct shm_memref mems[SHM_MEM_SLOTS]; /* pub->mem[], this side's */
	uint64_t mem_serial;		       /* the last one handed out */
	/* Closed connections whose peer was copying under a key when they
	 * closed: a deregistration still waits for it. */
	struct rmca_list zombies;
	struct shm_op *spare; /* ops kept for reuse: a post allocates none */
	unsigned nspare;
	long long idle_ns; /* shm_idle_us: busy sides stay disarmed this long */
	/* Readable while copies wait for their confirmation (shm_ops.c), so
	 * that rmca_wait_fd wakes a caller to let them complete; -1 until
	 * the first one. */
	int efd;
	bool efd_on;
	bool cma;	   /* shm_cma: cross-memory attach where allowed */
};

struct shm_mr {
	struct rmca_module_mr base;
	struct shm_module *mod;
	char *addr;
	size_t len;
	unsigned access;
	uint64_t key; /* regions that are not use-once: one key for all */
	struct rmca_mem_info mem; /* the allocation it lies in; id 0: none */
	struct rmca_list once; /* use-once keys, one per connection */
};

enum shm_op_kind {
	SHM_OP_SEND,
	SHM_OP_RECV,
	SHM_OP_PUT,
	SHM_OP_GET,
	SHM_OP_ATOMIC,
	SHM_OP_FLUSH,
};

struct shm_op {
	struct rmca_list link;  /* c->ops in post order, or c->recvs */
	struct shm_op *spare;  /* m->spare, while unused */
	struct rmca_list qlink; /* c->backlog until wholly pushed; then
				 * c->copied if copied into a mapping */
	enum shm_op_kind kind;
	void *req;
	char *buf;
	size_t len;
	uint64_t raddr, rkey;
	uint64_t inv_rkey; /* send_inv */
	uint64_t *result;  /* atomic */
	/* Without CMA, large data goes in pieces, each a request. */
	bool pieced;
	size_t off;		   /* bytes of it pushed */
	size_t done;		   /* bytes of it answered */
	struct rmca_atomic atomic; /* last: op_new sets every member above */
};

/* A request in flight, in the order pushed. */
struct shm_flight {
	struct shm_op *op;
	uint64_t pos, end; /* its place in the request ring */
	uint32_t nslots;   /* of its answer; 0: the head answers it */
};

struct shm_conn {
	struct rmca_conn base;
	struct rmca_list link; /* m->conns */
	struct shm_module *mod;
	int fd; /* the unix socket; -1 once closed */
	void *cookie;
	int side; /* 0: active, 1: passive */
	pid_t peer_pid;
	int pidfd;    /* the peer's: readable once it exited; -1 without */
	bool cma;     /* both sides may attach to each other */
	uint64_t tag; /* our side's shm_side.tag */
	const struct shm_keypub *peer_keys; /* mapped read-only, or NULL */
	struct shm_map *maps; /* the peer's allocations, by pub->mem entry */
	uint64_t mem_gen;     /* the peer's pub->mem_gen as of the last sweep */
	bool nomap;	      /* pidfd_getfd refused: CMA only */
	bool failed;
	int fail_status;
	struct shm_seg *seg;
	struct shm_rings r; /* this side's view of the segment */
	int nops;
	uint64_t sends_pushed; /* against the peer's recvs_posted */
	uint64_t peer_recvs;   /* ... as last read */
	uint64_t recvs_posted;
	uint64_t reqs_pushed, resps_seen;  /* inflight = the difference */
	uint64_t slots_pushed, slots_seen; /* answer slots they take */
	uint64_t rx_off; /* bytes of the message coming in pieces */
	uint64_t rx_pos; /* position of the request being served */
	/* Each request in flight, by request number. */
	struct shm_flight fifo[SHM_RESP_SLOTS];
	uint64_t activity;	  /* entries read from the rings, ever */
	uint64_t activity_seen;	  /* ... as of the last wakeup */
	uint64_t activity_polled; /* ... as of the last progress op */
	long long idle_since;	  /* ns: since when wakeups found nothing new */
	unsigned idle_polls;	  /* quiet passes since the clock was read */
	struct rmca_list ops;	  /* send/put/get/atomic/flush, post order */
	struct rmca_list recvs;	  /* posted receives, oldest first */
	struct rmca_list backlog;  /* waiting for ring room, a credit */
	/* Copied into the peer's mapped allocation, in post order: done once
	 * the peer is seen alive after the copy (rmca_shm_confirm). */
	struct rmca_list copied;
};

/*
 * The core holds a connection and a region by the base each embeds
 * (component.h). The entry points the ops table names take the core's
 * types and go from the base to shm's own object and back through these
 * helpers, first thing; below them shm sees its own objects only. NULL
 * stays NULL (a send without a region, mr_rkey without a connection); with
 * the base first that costs no branch.
 */
static inline struct shm_conn *shm_conn_from_base(struct rmca_conn *c)
{
	return c ? rmca_container_of(c, struct shm_conn, base) : NULL;
}

static inline struct rmca_conn *shm_conn_base(struct shm_conn *c)
{
	return c ? &c->base : NULL;
}

static inline struct shm_mr *shm_mr_from_base(struct rmca_module_mr *mr)
{
	return mr ? rmca_container_of(mr, struct shm_mr, base) : NULL;
}

static inline struct rmca_module_mr *shm_mr_base(struct shm_mr *mr)
{
	return mr ? &mr->base : NULL;
}

/* shm_module.c */
int rmca_shm_module_create(const struct rmca_core *core,
			   struct shm_module **out);
void rmca_shm_module_destroy(struct shm_module *m);
/* 1 if the peer whose blob is given shares this host's memory, else 0 and
 * why (the reachable op). */
int rmca_shm_addr_check(struct rmca_module *mod, const void *addr, size_t len,
			char *why, size_t why_len);
/* This side's core may copy between the two processes (CMA); if not,
 * why. */
bool rmca_shm_may_attach(const struct shm_module *m,
			 const struct shm_addr_blob *b, char *why,
			 size_t why_len);

/* shm_keys.c */
int rmca_shm_keytab_init(struct shm_keytab *t,
			 int (*random)(void *buf, size_t len));
void rmca_shm_keytab_fini(struct shm_keytab *t);
int rmca_shm_mr_reg(struct rmca_module *mod, void *addr, size_t len,
		    unsigned access, struct rmca_module_mr **out);
int rmca_shm_mr_dereg(struct rmca_module_mr *mr);
uint64_t rmca_shm_mr_rkey(struct rmca_module_mr *mr, struct rmca_conn *c);
int rmca_shm_key_match(struct rmca_module_mr *mr, struct rmca_conn *c,
		       uint64_t rkey);
int rmca_shm_revoke(struct rmca_module_mr *mr, struct rmca_conn *c,
		    uint64_t rkey);
/* The target's check of a remote access arriving on c: 0 and *ptr, or
 * RMCA_ERR_REMOTE_ACCESS. */
int rmca_shm_access(struct shm_conn *c, uint64_t rkey, uint64_t raddr,
		    uint64_t len, unsigned need, char **ptr);
/* A send-with-invalidate arrived on c: revoke rkey if it is a use-once key
 * handed out on c; returns it, or 0 when it revoked nothing. */
uint64_t rmca_shm_revoke_inv(struct shm_conn *c, uint64_t rkey);
/* c goes away: the use-once keys bound to it die with it. */
void rmca_shm_keys_drop_conn(struct shm_module *m, struct shm_conn *c);
int rmca_shm_pub_create(struct shm_module *m);
void rmca_shm_pub_destroy(struct shm_module *m);

/* shm_direct.c: the initiator's own copy under the peer's published key.
 * 0 done; SHM_COPIED done into the peer's allocation mapped here, the
 * peer's being alive after it still to be confirmed (rmca_shm_confirm);
 * RMCA_ERR_REMOTE_ACCESS refused, nothing copied from then on;
 * RMCA_ERR_CONNECTION the peer is gone or closed; SHM_NOT_DIRECT the key
 * is not published (or c cannot attach): the target must serve it. */
#define SHM_NOT_DIRECT 1
#define SHM_COPIED     2
int rmca_shm_direct(struct shm_conn *c, bool to_peer, char *local,
		    uint64_t raddr, uint64_t rkey, size_t len);
/* The peer exited (its pidfd is readable), or c has no pidfd. */
bool rmca_shm_peer_gone(const struct shm_conn *c);
/* The target withdrew slot: wait until no peer is copying under it. */
void rmca_shm_wait_accessors(struct shm_module *m, unsigned slot);
/* Closed connections whose peer copies under no key any more (or all):
 * freed. */
void rmca_shm_reap_zombies(struct shm_module *m, bool all);

/* shm_map.c: the peer's allocation of entry mem, mapped here, or NULL
 * (then CMA). Called with the key announced and its slot checked. */
char *rmca_shm_map(struct shm_conn *c, unsigned mem, uint64_t serial,
		   uint64_t id, int fd, uint64_t len);
/* Mappings of allocations no key of the peer reaches any more: gone. */
void rmca_shm_map_sweep(struct shm_conn *c);
void rmca_shm_map_release(struct shm_conn *c);

/* shm_connect.c */
int rmca_shm_listen(struct shm_module *m);
void rmca_shm_listen_close(struct shm_module *m);
void rmca_shm_pending_free_all(struct shm_module *m);
/* The connect_* ops, which never wait on a peer: the passive side looks
 * for the socket that presents its token among those the listening socket
 * accepts from the core's event loop; the active side reads the answer to
 * its hello as it comes. */
int rmca_shm_connect_start(struct rmca_module *mod,
			   const struct rmca_conn_args *a,
			   struct rmca_connecting **out);
int rmca_shm_connect_poll(struct rmca_connecting *h, struct rmca_conn **out);
void rmca_shm_connect_abort(struct rmca_connecting *h);

/* shm_conn.c */
struct shm_conn_parts {
	struct shm_seg *seg;
	int side;
	pid_t peer_pid;
	int pidfd;
	bool cma;
	const struct shm_keypub *peer_keys;
};
/* On success c owns the parts and fd. */
int rmca_shm_conn_create(struct shm_module *m, int fd,
			 const struct shm_conn_parts *p, void *cookie,
			 struct shm_conn **out);
void rmca_shm_conn_fail(struct shm_conn *c, int status);
void rmca_shm_wake_peer(struct shm_conn *c);
void rmca_shm_conn_poll(struct shm_conn *c);
void rmca_shm_disconnect(struct rmca_conn *c);
/* The segment, the peer's key table and pidfd of c: gone. */
void rmca_shm_conn_unmap(struct shm_conn *c);
int rmca_shm_progress(struct rmca_module *mod);

/* shm_ops.c: posting */
void rmca_shm_ops_free_spare(struct shm_module *m);
void rmca_shm_op_done(struct shm_conn *c, struct shm_op *op, int status,
		      size_t len, uint64_t revoked);
void rmca_shm_complete_all(struct shm_conn *c, int status);
void rmca_shm_pump(struct shm_conn *c);
/* The peer has a receive for one more message of ours. */
bool rmca_shm_credit(struct shm_conn *c);
/* The bytes of op's request (or piece) that starts at off. */
size_t rmca_shm_piece(const struct shm_op *op, size_t off);
/* The posting ops (mr unused: shm needs no local registration). */
int rmca_shm_send(struct rmca_conn *c, const void *buf, size_t len,
		  struct rmca_module_mr *mr, void *req);
int rmca_shm_send_inv(struct rmca_conn *c, const void *buf, size_t len,
		      struct rmca_module_mr *mr, uint64_t rkey, void *req);
int rmca_shm_recv(struct rmca_conn *c, void *buf, size_t len,
		  struct rmca_module_mr *mr, void *req);
int rmca_shm_put(struct rmca_conn *c, const void *buf, size_t len,
		 struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		 void *req);
int rmca_shm_get(struct rmca_conn *c, void *buf, size_t len,
		 struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		 void *req);
int rmca_shm_atomic(struct rmca_conn *c, const struct rmca_atomic *op,
		    uint64_t *result, struct rmca_module_mr *mr, void *req);
int rmca_shm_flush(struct rmca_conn *c, void *req);
/* The copies of c waiting for confirmation complete: RMCA_OK if the peer
 * is still there, else RMCA_ERR_CONNECTION and c fails. */
void rmca_shm_confirm(struct shm_conn *c);
/* Every connection's copies confirmed, the module's eventfd read. */
void rmca_shm_confirm_all(struct shm_module *m);

/* shm_target.c: what arrives */
/* Serve every request and response in the rings; false once c failed. */
bool rmca_shm_rx(struct shm_conn *c);
/* Only the answers: a peer that is gone gets its requests served no more. */
void rmca_shm_rx_answers(struct shm_conn *c);

#define shm_log(m, lvl, fmt, ...)                                              \
	(m)->base.core->ops->log((m)->base.core, (lvl), "shm: " fmt,           \
				 ##__VA_ARGS__)

#endif
