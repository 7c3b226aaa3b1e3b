/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmca/component.h - the ABI between librmca and its transport components.
 *
 * A component is a libtool module (rmca_<name>.so) that exports one symbol,
 * rmca_component, a const struct rmca_component. The core checks abi_version
 * before it touches anything else.
 *
 * Versioning (as libfabric's fi_ops sizes and rdma-core's provider ABI
 * ranges, so that the ops table grows without rebuilding every plugin):
 *  - Every change to a struct below bumps RMCA_COMPONENT_ABI_VERSION. The
 *    core loads components of RMCA_COMPONENT_ABI_MIN to that version and
 *    refuses others with one log line "path: reason".
 *  - A new module op is appended at the end of struct rmca_module_ops and is
 *    optional: that keeps RMCA_COMPONENT_ABI_MIN. A component states the
 *    size of the table it was built with (module_ops_size); the core treats
 *    every op beyond it as NULL (it copies a shorter table into a zero-filled
 *    one of its own size once, when the component opens, and points
 *    module->ops at the copy: same functions, so a module sees no change).
 *  - A new member of struct rmca_core_ops is appended at its end (older
 *    components never read it); struct rmca_component grows at its end and
 *    the core reads a new member only from components that declare it.
 *  - Anything else (a member moved, removed or retyped, a new mandatory op,
 *    a new member of struct rmca_module or of the base objects below, which
 *    the component allocates) raises RMCA_COMPONENT_ABI_MIN to the new
 *    version.
 *  - Mandatory ops: addr, disconnect, flush, get, mr_dereg, mr_reg, mr_rkey,
 *    put, recv, send, and connect or connect_start (with connect_poll and
 *    connect_abort). Every other op is optional. A module that lacks a
 *    mandatory op is refused when its component opens (its component's
 *    modules are closed and it counts as failed to open), and a component
 *    whose module_ops_size stops short of them is refused when it loads.
 *
 * A component never links against librmca: everything it needs from the core
 * comes through struct rmca_core (so a module loads even when librmca itself
 * was opened RTLD_LOCAL by its user).
 * What it needs besides, every component alike (lists, container_of, the
 * monotonic clock, bounded socket I/O, list names), is in the header-only
 * rmca/support/ headers: static inline, compiled into the component.
 *
 * Threading: a context is used by one thread at a time, and every call below
 * happens inside a call on that context. Modules need no locks of their own.
 */
#ifndef RMCA_COMPONENT_H
#define RMCA_COMPONENT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rmca.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 3: rmca_component.module_ops_size.
 * 4: module op reach, core op route.
 * 5: struct rmca_conn, rmca_connecting and rmca_module_mr are base objects
 *    defined here, embedded by the module (before, each component defined
 *    them as it liked): older components are refused.
 * 6: core op mem_find.
 * 7: core op may_sleep.
 * 8: core op will_sleep.
 * 9: rmca_component.req_size and rmca_core.req_offset: bytes of the
 *    module's own in every request.
 * 10: rmca_component.flags (RMCA_COMPONENT_ORDERED).
 * 11: core op fair_victim.
 * 12: module op progress_due.
 * 13: rmca_core.sleepers. */
#define RMCA_COMPONENT_ABI_VERSION 13u
#define RMCA_COMPONENT_ABI_MIN	   5u

/* The symbol every component exports, defined as
 *   RMCA_COMPONENT_EXPORT const struct rmca_component rmca_component = { ... };
 * (components are built with -fvisibility=hidden). */
#define RMCA_COMPONENT_SYMBOL "rmca_component"
#define RMCA_COMPONENT_EXPORT __attribute__((visibility("default")))

/*
 * Capabilities a module declares after probing its device. The core never
 * calls an op whose capability is clear.
 */
enum rmca_cap {
	RMCA_CAP_ATOMIC = 1u << 0, /* 64-bit FADD and CSWAP */
	RMCA_CAP_MASKED_ATOMIC = 1u << 1, /* masked FADD and masked CSWAP */
	RMCA_CAP_SEND_INV = 1u << 2, /* send with invalidate of a use-once key */
	RMCA_CAP_LOOPBACK = 1u << 3, /* reaches a peer on its own host */
	RMCA_CAP_REMOTE_COMPLETION = 1u << 4, /* completion => delivered */
	RMCA_CAP_ATOMIC_CPU = 1u << 5, /* atomics run on the target CPU (coherent
					  with the core's emulation) */
	/* The device answers RDMA READs of at most 32 bytes safely, as the
	 * responder. Clear on siw (Linux 6.1), which may drop the connection
	 * over one (components/verbs/verbs.h, RMCA_VERBS_CTL_READ): the
	 * core then sends a peer's gets of that size to this side's core. */
	RMCA_CAP_SHORT_READ = 1u << 6,
};

/*
 * Keys. Every key a module hands out is non-zero, and bit 63 is set exactly
 * when the region was registered RMCA_MR_USE_ONCE: the sender's core tells a
 * bad rmca_send_inv from the key alone, without asking the peer.
 */
#define RMCA_KEY_USE_ONCE (1ull << 63)

/* ---- services the core gives to components ---- */

enum rmca_log_level {
	RMCA_LOG_ERROR = 0, /* always shown */
	RMCA_LOG_WARN = 0, /* always shown */
	RMCA_LOG_INFO = 1, /* RMCA_verbose >= 1 */
	RMCA_LOG_DEBUG = 2, /* RMCA_verbose >= 2 */
};

enum rmca_param_type {
	RMCA_PARAM_BOOL,
	RMCA_PARAM_INT,
	RMCA_PARAM_SIZE, /* bytes; accepts k/m/g suffixes */
	RMCA_PARAM_STRING,
	RMCA_PARAM_ENUM, /* one of values[] */
	RMCA_PARAM_LIST, /* include list "a,b" or exclude list "^a,b" */
};

struct rmca_param_def {
	const char *name; /* without the RMCA_ prefix: "tcp_if_include" */
	enum rmca_param_type type;
	const char *def; /* default, as text; NULL = empty */
	const char *help; /* one line */
	const char *const *values; /* ENUM: NULL-terminated accepted values */
	long long min, max; /* INT: accepted range (min == max: any) */
};

/* A file descriptor callback; events are EPOLLIN/EPOLLOUT/EPOLLERR/EPOLLHUP. */
typedef void (*rmca_fd_cb)(void *arg, uint32_t events);

/*
 * OR-ed into fd_add's events: the core may call the callback with EPOLLIN
 * before it knows the fd is readable, when this fd was the last one found
 * ready, and skip epoll_wait() if that produced a completion (a busy
 * connection is read with one call, as a plain socket is). The callback
 * must then read without blocking and do nothing when nothing is there.
 * Since ABI 7 such a call says so: its events are EPOLLIN | RMCA_FD_EAGER
 * (it may leave the fd alone; the core looks at the fds within a few
 * passes when a pass produced nothing).
 */
#define RMCA_FD_EAGER (1u << 24)

struct rmca_core;

/* An allocation of rmca_mem_alloc, as mem_find describes it. */
struct rmca_mem_info {
	int fd;	     /* the memfd behind it, open in this process */
	void *base;  /* where it is mapped here */
	size_t len;  /* its size, whole pages */
	uint64_t id; /* the memfd's inode: names it to other processes */
};

/*
 * A connection waiting at a listener's bound, as fair_victim sees it. key
 * names its source (an address, a user and a process) and stays where it
 * is until fair_victim returns; of it, at most 255 bytes count.
 */
struct rmca_fair_entry {
	const void *key;
	size_t len;
	/* The first outer bytes of key name a wider source, counted first
	 * (a user, of a user and a process); 0: none. The same for all. */
	size_t outer;
	bool may_go;   /* false: counts in its source, never gives way */
	unsigned rank; /* within the source that gives way, the lowest goes */
};

/* The waiting connection after cur (NULL: the first), described in *e, or
 * NULL after the last. Whatever it returns names that connection to the
 * caller: fair_victim hands one of them back. */
typedef const void *(*rmca_fair_next)(void *arg, const void *cur,
				      struct rmca_fair_entry *e);

struct rmca_core_ops {
	void (*log)(const struct rmca_core *core, int level, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));

	/* Parameters: register in register_params(), read in open(). A value
	 * that does not parse was already reported when it was read. */
	int (*param_register)(const struct rmca_core *core,
			      const struct rmca_param_def *def);
	bool (*param_bool)(const struct rmca_core *core, const char *name);
	long long (*param_int)(const struct rmca_core *core, const char *name);
	size_t (*param_size)(const struct rmca_core *core, const char *name);
	const char *(*param_string)(const struct rmca_core *core,
				    const char *name); /* also LIST values */
	int (*param_enum)(const struct rmca_core *core, const char *name);
	/* 1 if name is selected by the LIST value list ("" selects all). */
	int (*list_selects)(const char *list, const char *name);

	/* The context's event loop (one epoll set, rmca_wait_fd()). */
	int (*fd_add)(const struct rmca_core *core, int fd, uint32_t events,
		      rmca_fd_cb cb, void *arg);
	int (*fd_mod)(const struct rmca_core *core, int fd, uint32_t events);
	void (*fd_del)(const struct rmca_core *core, int fd);

	/*
	 * Report the end of an operation. req is the cookie the core passed to
	 * the op; every posted op is completed exactly once. len: bytes received
	 * (recv). revoked_rkey: recv of a send-with-invalidate, the key (with
	 * RMCA_KEY_USE_ONCE) now revoked here, else 0. May be called from inside
	 * any module op, including the posting call itself.
	 */
	void (*complete)(const struct rmca_core *core, void *req, int status,
			 size_t len, uint64_t revoked_rkey);

	/* The connection failed (peer gone, fatal error). conn_cookie is
	 * rmca_conn_args.cookie. Outstanding ops are still completed by the
	 * module, each with its own status. */
	void (*conn_failed)(const struct rmca_core *core, void *conn_cookie,
			    int status);

	/* Random bytes for keys and tokens (getrandom). */
	int (*random)(void *buf, size_t len);

	/* Why open() found no usable device, in one line that rmca_info shows
	 * beside "0 modules" ("no RDMA device found", "siw0 is iWARP: the
	 * iwarp component serves it"). Only inside open(), by a component
	 * that returns zero modules; the last call wins. */
	void (*no_module)(const struct rmca_core *core, const char *fmt, ...)
		__attribute__((format(printf, 2, 3)));

	/*
	 * The interface the route to dst (AF_INET or AF_INET6) leaves
	 * through, as the kernel's routing table says (rdma_cm resolves an
	 * address the same way): its index into *ifindex. src, if not NULL,
	 * is the source address the route is for (rules may route by it).
	 * For an address of this host, the interface that owns it. 0, or
	 * RMCA_ERR_UNREACHABLE (no route; why says so), RMCA_ERR_INVALID.
	 */
	int (*route)(const struct rmca_core *core, const struct sockaddr *dst,
		     const struct sockaddr *src, unsigned *ifindex, char *why,
		     size_t why_len);

	/* ABI 6. The allocation of rmca_mem_alloc that holds all of
	 * [addr, addr + len): 0 and *out, or RMCA_ERR_NOT_FOUND. It stays
	 * while a region registered in it does (rmca_mem_free refuses). */
	int (*mem_find)(const struct rmca_core *core, const void *addr,
			size_t len, struct rmca_mem_info *out);

	/* ABI 7. True once the application may sleep on the context's
	 * epoll set (rmca_wait_fd() handed it out). Until then only the core
	 * sleeps in it, and it runs every progress op right before it does
	 * (one that gave progress_due if its word is set): work a module
	 * holds for its next pass then needs nothing to keep the set
	 * readable meanwhile. */
	bool (*may_sleep)(const struct rmca_core *core);

	/* ABI 8. True while the core runs the progress ops right before it
	 * sleeps in the epoll set itself (a blocking rmca_accept or
	 * rmca_connect waiting). While this and may_sleep are both false,
	 * nobody sleeps in the set before the module's next progress op: a
	 * wakeup that costs a system call to arm (a CQ's completion channel)
	 * may stay unarmed meanwhile, if the progress op that sees either
	 * true arms it. */
	bool (*will_sleep)(const struct rmca_core *core);

	/*
	 * ABI 11. At a listener's bound, the waiting connection that gives
	 * way to a newcomer, the same rule for every listener: one of the
	 * source that holds the most, the newcomer counted with its own (with
	 * outer, the wider source first, then within it), so that a source
	 * that floods pushes out its own; among those that may go there, the
	 * lowest rank, then the first next gives. next gives the n waiting
	 * connections (two passes). NULL: none may go. No allocation once the
	 * core's counts are sized for n (they are kept for the next call).
	 */
	const void *(*fair_victim)(const struct rmca_core *core, size_t n,
				   rmca_fair_next next, void *arg,
				   const struct rmca_fair_entry *newcomer);
};

struct rmca_core {
	const struct rmca_core_ops *ops;
	void *priv; /* the core's; components leave it alone */
	/* ABI 9. Where a module's own bytes are in each request (see
	 * rmca_component.req_size): at (char *)req + req_offset, aligned to
	 * RMCA_REQ_ALIGN. */
	size_t req_offset;
	/* ABI 13. What the ops may_sleep and will_sleep say, as a word a
	 * module reads without a call (a busy pass asks on every message):
	 * RMCA_SLEEPER_APP set exactly while may_sleep is true,
	 * RMCA_SLEEPER_CORE while will_sleep is. NULL in a core that keeps
	 * no such word: the ops then say it. */
	const uint8_t *sleepers;
};

#define RMCA_SLEEPER_APP  0x1u /* may_sleep */
#define RMCA_SLEEPER_CORE 0x2u /* will_sleep */

/* ---- what a component provides ---- */

struct rmca_module;

/*
 * The objects a module hands to the core: its connection to one peer, a
 * connection being established, its registration of one region. Each is
 * embedded in the module's own object, as struct rmca_module is in its
 * module (struct tcp_conn { struct rmca_conn base; ... }), and the module
 * gets back to that object from the core's pointer with rmca_container_of
 * (rmca/support/container.h): the core's types stay the core's, and no
 * cast breaks silently when the module's object changes.
 *
 * module is the module that made the object; the module sets it before it
 * hands the object out. The core checks it where it receives the object
 * (connect, connect_start, connect_poll, mr_reg) and refuses, with a log
 * line, an object another module made or whose base was left unset. Every
 * other byte of the object is the module's.
 */
struct rmca_conn {
	struct rmca_module *module;
};

struct rmca_connecting {
	struct rmca_module *module;
};

struct rmca_module_mr {
	struct rmca_module *module;
};

struct rmca_conn_args {
	int active; /* 1 on the rmca_connect() side, 0 on rmca_accept()'s */
	const void *peer_addr; /* the peer module's addr() blob, from its hello */
	size_t peer_addr_len;
	uint64_t token; /* equal on both sides; names this connection */
	int timeout_ms; /* connect() returns RMCA_ERR_TIMEOUT past it */
	int peer_is_local; /* same boot id and network namespace */
	/* Numeric address of the peer's end of the bootstrap connection: an
	 * address known to reach the peer ("192.0.2.7", "::1"). */
	char peer_host[64];
	void *cookie; /* passed back in conn_failed() */
};

/* OR-ed into the progress op's result, see there. */
#define RMCA_PROGRESS_POLLED (1 << 30)
#define RMCA_PROGRESS_SERVED (1 << 29)

/* What a module is asked about one module of a peer (reach). */
struct rmca_reach_args {
	const void *peer_addr; /* the peer module's addr() blob */
	size_t peer_addr_len;
	/* Numeric address of the peer's end of the bootstrap connection, the
	 * path the peer was addressed on ("192.0.2.7", "::1"). */
	const char *peer_host;
};

enum rmca_reach {
	RMCA_REACH_NO = 0,
	RMCA_REACH_YES = 1,
	/* reaches it, and the route to peer_host leaves through this module's
	 * device: among pairs of equal priority, this one wins */
	RMCA_REACH_ROUTE = 2,
};

/* Ops appear in name order up to send_inv; ops added later go after it, in
 * the order they were added (see "Versioning" above). */
struct rmca_module_ops {
	/* Address blob sent in the hello (at most 256 bytes). */
	int (*addr)(struct rmca_module *m, void *buf, size_t *len);
	int (*atomic)(struct rmca_conn *c, const struct rmca_atomic *op,
		      uint64_t *result, struct rmca_module_mr *mr, void *req);
	/* Establish the data connection; blocks at most args->timeout_ms.
	 * Used only where connect_start is NULL (one of the two is given). */
	int (*connect)(struct rmca_module *m, const struct rmca_conn_args *args,
		       struct rmca_conn **out);
	/* Optional with connect_poll and connect_start: give up on h (no
	 * callback follows). */
	void (*connect_abort)(struct rmca_connecting *h);
	/* 0 with *out once h's connection is usable, RMCA_ERR_AGAIN while it
	 * is not, or the error that ended it (RMCA_ERR_TIMEOUT past
	 * args->timeout_ms). Except on AGAIN, h is gone. Never blocks. */
	int (*connect_poll)(struct rmca_connecting *h, struct rmca_conn **out);
	/*
	 * Optional: establish the data connection without blocking, so that a
	 * listener serves many handshakes at once. Begins what connect does
	 * (args, which the module copies, are valid during the call only) and
	 * returns 0 with *out; the module advances it from its fd callbacks
	 * and progress op, and the core asks connect_poll after each pass of
	 * its event loop.
	 */
	int (*connect_start)(struct rmca_module *m,
			     const struct rmca_conn_args *args,
			     struct rmca_connecting **out);
	/* Completes every outstanding op RMCA_ERR_CANCELED (before it returns)
	 * and frees c. */
	void (*disconnect)(struct rmca_conn *c);
	/* Completes when every earlier op on c is delivered at the target. */
	int (*flush)(struct rmca_conn *c, void *req);
	int (*get)(struct rmca_conn *c, void *buf, size_t len,
		   struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		   void *req);
	/* Optional: 1 if rkey is a live key of mr as handed out on c, else 0;
	 * no side effects (unlike mr_rkey, which may bind or register). The
	 * core asks it when its own code serves a remote access (emulated
	 * atomics, revoke messages, access checks). NULL: mr_rkey compares. */
	int (*key_match)(struct rmca_module_mr *mr, struct rmca_conn *c,
			 uint64_t rkey);
	int (*mr_dereg)(struct rmca_module_mr *mr);
	int (*mr_reg)(struct rmca_module *m, void *addr, size_t len,
		      unsigned access, struct rmca_module_mr **out);
	uint64_t (*mr_rkey)(struct rmca_module_mr *mr, struct rmca_conn *c);
	/* Optional: polled by rmca_poll() besides the fd callbacks. Returns
	 * >= 0; a module whose data moves without its fds (shm polls shared
	 * memory) ORs in RMCA_PROGRESS_POLLED when it found work, so that
	 * while every endpoint is on such modules a spinning rmca_poll looks
	 * at the fds once a millisecond only. It ORs in RMCA_PROGRESS_SERVED
	 * when its fd callbacks read input since its last call (a peer's
	 * request served makes no completion here): after an eager read
	 * (RMCA_FD_EAGER) that did, the core does not go on to epoll_wait.
	 * A module that gives progress_due is called only when it says it
	 * has work (see there). */
	int (*progress)(struct rmca_module *m);
	int (*put)(struct rmca_conn *c, const void *buf, size_t len,
		   struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		   void *req);
	/* Optional: 1 if this module may reach the peer whose addr() blob is
	 * given; on 0, why holds a short reason. NULL: always. */
	int (*reachable)(struct rmca_module *m, const void *peer_addr,
			 size_t len, char *why, size_t why_len);
	int (*recv)(struct rmca_conn *c, void *buf, size_t len,
		    struct rmca_module_mr *mr, void *req);
	/* Optional: make rkey (a use-once key of mr handed out on c) fail
	 * every later remote access; mr_rkey() hands out a fresh key after it.
	 * The core calls it where send-with-invalidate is not native (the
	 * revoke message path). NULL: that path is unavailable. */
	int (*revoke)(struct rmca_module_mr *mr, struct rmca_conn *c,
		      uint64_t rkey);
	int (*send)(struct rmca_conn *c, const void *buf, size_t len,
		    struct rmca_module_mr *mr, void *req);
	int (*send_inv)(struct rmca_conn *c, const void *buf, size_t len,
			struct rmca_module_mr *mr, uint64_t rkey, void *req);
	/* ABI 4. Optional, asked instead of reachable when given: an enum
	 * rmca_reach; on RMCA_REACH_NO why holds a short reason, on
	 * RMCA_REACH_ROUTE it may say which route ("rxe1 carries the route to
	 * 10.0.2.1"). */
	int (*reach)(struct rmca_module *m, const struct rmca_reach_args *a,
		     char *why, size_t why_len);
	/*
	 * ABI 12. Optional, with progress: where the module says its progress
	 * op has work. The core asks it once, when the module opens, and from
	 * then on calls progress only in a pass that finds the word non-zero,
	 * zeroing it right before the call. The module sets it, on any path
	 * (its fd callbacks, its posts, its progress op itself), whenever its
	 * progress op must run: work held for the next pass, input read that
	 * it reports as RMCA_PROGRESS_SERVED, a deadline it watches. A pass
	 * with none then costs a load, not a call. The word stays where it is
	 * until the module closes. NULL, or no op: progress runs every pass.
	 */
	unsigned *(*progress_due)(struct rmca_module *m);
};

struct rmca_module {
	const struct rmca_module_ops *ops;
	const struct rmca_core *core;
	char device[64]; /* "rxe0", "siw0", "lo" */
	uint32_t caps; /* enum rmca_cap, as probed */
	/* One line per probed fact, for rmca_info ("atomic_cap=HCA", ...). */
	char detail[256];
};

struct rmca_component {
	uint32_t abi_version; /* RMCA_COMPONENT_ABI_VERSION */
	const char *name; /* "tcp" */
	const char *version; /* "0.1.0" */
	const char *description; /* one line */
	int priority; /* default of RMCA_<name>_priority */

	/* Register the component's own parameters. The core registers
	 * <name>_priority and <name>_caps for it. */
	int (*register_params)(const struct rmca_core *core);
	/* Probe: *modules receives a malloc'ed array of zero or more modules,
	 * one per usable device or port. */
	int (*open)(const struct rmca_core *core, struct rmca_module ***modules,
		    int *count);
	/* Release every module open() returned (and the array). */
	void (*close)(const struct rmca_core *core, struct rmca_module **modules,
		      int count);

	/* ABI 3: sizeof(struct rmca_module_ops) as built; the ops tables of
	 * every module of this component have this size. */
	size_t module_ops_size;

	/*
	 * ABI 9: bytes (at most RMCA_COMPONENT_REQ_MAX) of the module's own
	 * in every request the core passes to an op (the void *req cookie),
	 * at (char *)req + core->req_offset: the module keeps its record of
	 * the operation there instead of allocating one, from the post
	 * until it completes the op. Not cleared; the core never reads
	 * them. A post the module refuses leaves nothing there that it
	 * uses later. 0: it keeps none there.
	 */
	size_t req_size;

	/* ABI 10: enum rmca_component_flags. */
	unsigned flags;
};

enum rmca_component_flags {
	/*
	 * Its modules complete a flush only after every op posted on the
	 * connection before the flush has completed (its complete() call
	 * returned), on every path, failures and disconnect included. The
	 * core then keeps no order of its own for the ops it hands such a
	 * module whole: it reports each one as the module completes it, and
	 * the flushes as the module completes them.
	 */
	RMCA_COMPONENT_ORDERED = 1u << 0,
};

/* The alignment of a module's bytes in a request, and their largest size. */
#define RMCA_REQ_ALIGN	       16u
#define RMCA_COMPONENT_REQ_MAX 1024u

#ifdef __cplusplus
}
#endif
#endif /* RMCA_COMPONENT_H */
