// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer target for what the shm component reads from a peer: the
 * connection's shared segment, which a same-host peer may write anything
 * into. A real module serves a connection whose other side is the input:
 * a script of the peer's writes (requests with their stamps, answers,
 * ring indices, any word of the segment), interleaved with this side's
 * posts and progress passes, and the peer's hang-up. The test plays the
 * module's core. The peer cannot attach to this process (no CMA): every
 * byte goes through the rings, as with a peer of another user.
 *
 * What must hold, whatever the peer writes: no access outside the segment,
 * the region or a posted buffer (the region sits between inaccessible
 * pages, ASan watches the rest); every posted operation completes exactly
 * once (the connection is closed at the end, which completes the rest);
 * a receive never reports more than its buffer; nothing changes in the
 * region after its deregistration returned.
 *
 * Keys are predictable (the core's random source is a counter), see
 * rmca_fuzz_seed() for well-formed scripts. make check replays it
 * (fuzz_shm_replay, with fuzz_replay.c); libFuzzer runs it under
 * `make check-fuzz` (test/fuzz.am).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t rmca_fuzz_seed(unsigned i, uint8_t *buf, size_t cap);

#define FZ_REGION_ADDR 0x5b0000000000ull /* fixed, so inputs can name it */
#define FZ_REGION_LEN  65536
#define FZ_PAGE	       4096
#define FZ_MAX_FDS     8
#define FZ_REQS	       64 /* operations this side may post per input */
#define FZ_BUF	       (3 * SHM_INLINE_MAX)  /* each op's buffer */
#define FZ_KEY	       0x1111111111111000ull /* its slot bits: below */

/* The peer's script: one byte of command, then its arguments. */
enum fz_cmd {
	FZ_REQ,	     /* a request at the peer's tail, stamped */
	FZ_RESP,     /* an answer at the peer's answer tail */
	FZ_HEAD,     /* the peer consumed our requests or answers */
	FZ_WORD,     /* any 8 bytes of the segment */
	FZ_PROGRESS, /* this side's progress pass */
	FZ_POST,     /* this side posts an operation */
	FZ_HANGUP,   /* the peer's socket closes */
	FZ_DEREG,    /* the region is deregistered */
	FZ_NCMD,
};

struct fz_fd {
	int fd;
	uint32_t events;
	rmca_fd_cb cb;
	void *arg;
};

static struct fz_fd fds[FZ_MAX_FDS];
static uint64_t key_seed;
static struct shm_module *mod;
static char *region, *snapshot;
static uint64_t region_key;

/* The requests of the fake core, and how often each completed. */
struct fz_request {
	int done;
	size_t cap; /* a receive's buffer */
	char buf[FZ_BUF];
	uint64_t result;
	_Alignas(RMCA_REQ_ALIGN) char mine[RMCA_COMPONENT_REQ_MAX];
};
static struct fz_request *reqs;
static int nreqs;

/* FUZZ_SHM_LOG=1: the module's log on stderr, to see what a script does. */
static void fz_log(const struct rmca_core *core, int level, const char *fmt,
		   ...)
{
	static int on = -1;
	va_list ap;

	(void)core;
	if (on < 0)
		on = getenv("FUZZ_SHM_LOG") != NULL;
	if (!on)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "[%d] ", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int fz_param_register(const struct rmca_core *core,
			     const struct rmca_param_def *def)
{
	(void)core;
	(void)def;
	return 0;
}

static bool fz_param_bool(const struct rmca_core *core, const char *name)
{
	(void)core;
	(void)name;
	return false; /* shm_cma=no: every byte through the rings */
}

static long long fz_param_int(const struct rmca_core *core, const char *name)
{
	(void)core;
	(void)name;
	return 0;
}

static int fz_fd_add(const struct rmca_core *core, int fd, uint32_t events,
		     rmca_fd_cb cb, void *arg)
{
	(void)core;
	for (int i = 0; i < FZ_MAX_FDS; i++)
		if (!fds[i].cb) {
			fds[i] = (struct fz_fd){fd, events, cb, arg};
			return 0;
		}
	return RMCA_ERR_NO_MEMORY;
}

static int fz_fd_mod(const struct rmca_core *core, int fd, uint32_t events)
{
	(void)core;
	for (int i = 0; i < FZ_MAX_FDS; i++)
		if (fds[i].cb && fds[i].fd == fd)
			fds[i].events = events;
	return 0;
}

static void fz_fd_del(const struct rmca_core *core, int fd)
{
	(void)core;
	for (int i = 0; i < FZ_MAX_FDS; i++)
		if (fds[i].cb && fds[i].fd == fd)
			fds[i] = (struct fz_fd){.fd = -1};
}

static int fz_mem_find(const struct rmca_core *core, const void *addr,
		       size_t len, struct rmca_mem_info *out)
{
	(void)core;
	(void)addr;
	(void)len;
	(void)out;
	return RMCA_ERR_NOT_FOUND;
}

/* Exactly once, and a receive within its buffer. */
static void fz_complete(const struct rmca_core *core, void *request, int status,
			size_t len, uint64_t revoked)
{
	struct fz_request *r = request;

	(void)core;
	if (getenv("FUZZ_SHM_LOG"))
		fprintf(stderr, "op %d: status %d len %zu revoked %llx\n",
			(int)(r - reqs), status, len,
			(unsigned long long)revoked);
	if (r < reqs || r >= reqs + nreqs || r->done++ || len > r->cap)
		__builtin_trap();
}

static void fz_conn_failed(const struct rmca_core *core, void *cookie,
			   int status)
{
	(void)core;
	(void)cookie;
	(void)status;
}

/* Keys 0x0101..01 * n (slot bits aside): found by comparison tracing.
 * Random until then: the module's socket name must not be another
 * process's. */
static int fz_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	if (!key_seed)
		return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
	key_seed++;
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)key_seed;
	return 0;
}

static const struct rmca_core_ops fz_ops = {
	.complete = fz_complete,
	.conn_failed = fz_conn_failed,
	.fd_add = fz_fd_add,
	.fd_del = fz_fd_del,
	.fd_mod = fz_fd_mod,
	.log = fz_log,
	.mem_find = fz_mem_find,
	.param_bool = fz_param_bool,
	.param_int = fz_param_int,
	.param_register = fz_param_register,
	.random = fz_random,
};

static const struct rmca_core fz_core = {
	.ops = &fz_ops,
	.req_offset = offsetof(struct fz_request, mine),
};

static void pump(void)
{
	for (int i = 0; i < FZ_MAX_FDS; i++) {
		struct pollfd p = {.fd = fds[i].fd,
				   .events = (short)fds[i].events};

		if (!fds[i].cb || fds[i].fd < 0 || poll(&p, 1, 0) <= 0)
			continue;
		fds[i].cb(fds[i].arg, (uint32_t)p.revents);
	}
}

static void setup(void)
{
	char *map;

	for (int i = 0; i < FZ_MAX_FDS; i++)
		fds[i].fd = -1;
	key_seed = 0;
	if (rmca_shm_module_create(&fz_core, &mod))
		__builtin_trap();
	map = mmap((void *)(uintptr_t)(FZ_REGION_ADDR - FZ_PAGE),
		   FZ_REGION_LEN + 2 * FZ_PAGE, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (map == MAP_FAILED)
		__builtin_trap();
	region = map + FZ_PAGE;
	if (mprotect(region, FZ_REGION_LEN, PROT_READ | PROT_WRITE))
		__builtin_trap();
	snapshot = malloc(FZ_REGION_LEN);
	reqs = calloc(FZ_REQS, sizeof(*reqs));
	if (!snapshot || !reqs)
		__builtin_trap();
}

/* The input, read as it is used; zeros past its end. */
struct fz_in {
	const uint8_t *p;
	size_t left;
};

static uint64_t take(struct fz_in *in, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++) {
		if (!in->left)
			break;
		v |= (uint64_t)*in->p++ << (8 * i);
		in->left--;
	}
	return v;
}

static struct fz_request *new_req(size_t cap)
{
	struct fz_request *r;

	if (nreqs >= FZ_REQS)
		return NULL;
	r = &reqs[nreqs++];
	memset(r, 0, offsetof(struct fz_request, mine));
	r->cap = cap;
	return r;
}

/* This side posts op kind k of len bytes (of its buffer), at off in the
 * region: what the peer answers, or fails to. */
static void post(struct shm_conn *c, unsigned k, size_t len, uint64_t off)
{
	struct fz_request *r;
	uint64_t raddr = FZ_REGION_ADDR + off;
	struct rmca_atomic a = {.kind = RMCA_ATOMIC_FADD,
				.raddr = raddr & ~7ull,
				.rkey = region_key,
				.operand = 1};
	int rc;

	if (len > FZ_BUF)
		len = FZ_BUF;
	r = new_req(len);
	if (!r)
		return;
	switch (k % 6) {
	case 0:
		rc = rmca_shm_recv(&c->base, r->buf, len, NULL, r);
		break;
	case 1:
		rc = rmca_shm_send(&c->base, r->buf, len, NULL, r);
		break;
	case 2:
		rc = rmca_shm_put(&c->base, r->buf, len, NULL, raddr,
				  region_key, r);
		break;
	case 3:
		rc = rmca_shm_get(&c->base, r->buf, len, NULL, raddr,
				  region_key, r);
		break;
	case 4:
		rc = rmca_shm_atomic(&c->base, &a, &r->result, NULL, r);
		break;
	default:
		rc = rmca_shm_flush(&c->base, r);
		break;
	}
	if (rc) /* not taken: it never completes */
		r->done = 1;
}

/* The peer's request at its tail *tail. */
static void peer_req(struct shm_seg *s, int peer, uint64_t *tail,
		     struct fz_in *in)
{
	uint8_t *ring = s->reqbuf[peer];
	size_t pos = (size_t)(*tail % SHM_REQ_BYTES);
	struct shm_req q = {0};
	uint64_t sel = take(in, 1), payload = take(in, 1);
	uint32_t units;

	q.type = (uint8_t)take(in, 1);
	q.flags = (uint8_t)take(in, 1);
	q.units = (uint16_t)take(in, 2);
	q.credit = (uint32_t)take(in, 1);
	q.akind = (uint8_t)take(in, 1);
	q.len = take(in, 2);
	if (sel & 1)
		q.len = take(in, 8);
	q.rkey = sel & 2 ? take(in, 8) : region_key;
	q.raddr = sel & 4 ? take(in, 8) : FZ_REGION_ADDR + take(in, 2);
	q.laddr = take(in, 8);
	q.operand = take(in, 2);
	q.compare = take(in, 2);
	if (sel & 8) /* the units its type and length need */
		q.units = (uint16_t)shm_units(q.type, q.len);
	units = q.units ? q.units : 1;
	if ((size_t)units * SHM_UNIT > SHM_REQ_BYTES - pos)
		units = (uint32_t)((SHM_REQ_BYTES - pos) / SHM_UNIT);
	/* The payload: a byte pattern, and maybe stamps of a later lap. */
	memset(ring + pos, (int)payload, (size_t)units * SHM_UNIT);
	memcpy(ring + pos, &q, sizeof(q));
	__atomic_store_n((uint32_t *)(void *)(ring + pos), shm_stamp(*tail),
			 __ATOMIC_RELEASE);
	*tail += (uint64_t)units * SHM_UNIT;
}

/* The peer's answer at its answer tail, to our k-th request in flight (or
 * to any position). */
static void peer_resp(struct shm_conn *c, struct shm_seg *s, int peer,
		      struct fz_in *in)
{
	static const int status[] = {0,
				     RMCA_ERR_REMOTE_ACCESS,
				     RMCA_ERR_PROTOCOL,
				     RMCA_ERR_TRUNCATED,
				     RMCA_ERR_INVALID,
				     RMCA_ERR_CONNECTION,
				     -1000,
				     1};
	uint64_t sel = take(in, 1), tail = s->resp[peer].tail;
	struct shm_resp *r =
		(struct shm_resp *)(void *)(s->respbuf[peer] +
					    (tail % SHM_RESP_SLOTS) *
						    SHM_RESP_SLOT);
	uint64_t k = take(in, 1);
	uint32_t n;

	memset(r, 0, sizeof(*r));
	r->id = sel & 1 ? take(in, 8)
			: c->fifo[(c->resps_seen + k) % SHM_RESP_SLOTS].pos;
	r->status = status[(sel >> 1) & 7];
	r->len = (uint32_t)(sel & 16 ? take(in, 4) : take(in, 2));
	r->operand = take(in, 1);
	memset(r->pad, (int)take(in, 1), sizeof(r->pad));
	n = (uint32_t)take(in, 1);
	if (sel & 32)
		n = shm_resp_slots(r->status ? 0 : r->len);
	__atomic_store_n(&s->resp[peer].tail, tail + n, __ATOMIC_RELEASE);
}

static void peer_head(struct shm_conn *c, struct shm_seg *s, int peer,
		      struct fz_in *in)
{
	uint64_t sel = take(in, 1), k = take(in, 1);

	switch (sel % 4) {
	case 0: /* every request of ours consumed */
		__atomic_store_n(&s->req[!peer].head, c->r.req_tail,
				 __ATOMIC_RELEASE);
		break;
	case 1: /* up to the end of our k-th in flight */
		__atomic_store_n(
			&s->req[!peer].head,
			c->fifo[(c->resps_seen + k) % SHM_RESP_SLOTS].end,
			__ATOMIC_RELEASE);
		break;
	case 2: /* every answer of ours consumed */
		__atomic_store_n(&s->resp[!peer].head, c->r.resp_tail,
				 __ATOMIC_RELEASE);
		break;
	default:
		__atomic_store_n(&s->req[!peer].head, take(in, 8),
				 __ATOMIC_RELEASE);
		break;
	}
}

static void progress(void)
{
	rmca_shm_progress(&mod->base);
	pump();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = {data, size};
	struct rmca_module_mr *mr;
	struct shm_conn_parts parts = {.pidfd = -1};
	struct shm_conn *c;
	struct shm_seg *s;
	uint64_t ptail = 0;
	bool dereg = false;
	int sv[2], peer;

	if (!mod)
		setup();
	nreqs = 0;
	key_seed = 0x10;
	if (rmca_shm_mr_reg(&mod->base, region, FZ_REGION_LEN,
			    RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE |
				    RMCA_ACCESS_REMOTE_ATOMIC,
			    &mr))
		__builtin_trap();
	region_key = rmca_shm_mr_rkey(mr, NULL);
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED)
		__builtin_trap();
	s->magic = SHM_SEG_MAGIC;
	s->version = SHM_PROTO_VERSION;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sv))
		__builtin_trap();
	parts.seg = s;
	parts.side = (int)(take(&in, 1) & 1);
	parts.peer_pid = 0;
	peer = !parts.side;
	if (rmca_shm_conn_create(mod, sv[0], &parts, NULL, &c))
		__builtin_trap();

	/* What this side has outstanding when the peer starts. */
	post(c, 0, 64, 0);
	post(c, 0, 2 * SHM_INLINE_MAX, 0);
	post(c, 3, 32, 64);
	post(c, 3, 600, 128);
	post(c, 2, 64, 1024);
	post(c, 2, 2 * SHM_INLINE_MAX + 5, 2048);
	post(c, 4, 8, 8);
	post(c, 5, 0, 0);

	while (in.left && !c->failed) {
		switch (take(&in, 1) % FZ_NCMD) {
		case FZ_REQ:
			peer_req(s, peer, &ptail, &in);
			break;
		case FZ_RESP:
			peer_resp(c, s, peer, &in);
			break;
		case FZ_HEAD:
			peer_head(c, s, peer, &in);
			break;
		case FZ_WORD: {
			size_t at = (size_t)take(&in, 3) % sizeof(*s) & ~7ul;

			__atomic_store_n((uint64_t *)(void *)((char *)s + at),
					 take(&in, 8), __ATOMIC_RELAXED);
			break;
		}
		case FZ_PROGRESS:
			progress();
			break;
		case FZ_POST: {
			unsigned k = (unsigned)take(&in, 1);
			size_t len = (size_t)take(&in, 2);

			post(c, k, len, take(&in, 2));
			break;
		}
		case FZ_HANGUP:
			if (sv[1] >= 0)
				close(sv[1]);
			sv[1] = -1;
			progress();
			break;
		default:
			if (!dereg) {
				rmca_shm_mr_dereg(mr);
				memcpy(snapshot, region, FZ_REGION_LEN);
				dereg = true;
			}
			break;
		}
	}
	progress();
	if (dereg && memcmp(snapshot, region, FZ_REGION_LEN))
		__builtin_trap();
	/* The endpoint closes: what is left completes, CANCELED. */
	rmca_shm_disconnect(&c->base);
	rmca_shm_reap_zombies(mod, true);
	for (int i = 0; i < nreqs; i++)
		if (reqs[i].done != 1)
			__builtin_trap();
	if (sv[1] >= 0)
		close(sv[1]);
	if (!dereg)
		rmca_shm_mr_dereg(mr);
	memset(region, 0, FZ_REGION_LEN);
	return 0;
}

/* Scripts to start from: the peer serves this side's requests (answers
 * the gets and the atomic, then consumes everything), then makes its own:
 * a put, a get, an atomic under the region's key, and messages; seeds 2
 * and 3 hang up halfway, or deregister the region. */
struct fz_seed {
	uint8_t *p, *end;
};

static void put_bytes(struct fz_seed *sd, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n && sd->p < sd->end; i++)
		*sd->p++ = (uint8_t)(v >> (8 * i));
}

static void seed_resp(struct fz_seed *sd, unsigned k, unsigned len,
		      uint64_t old)
{
	put_bytes(sd, FZ_RESP, 1);
	put_bytes(sd, 32, 1); /* status 0, slots as the length needs */
	put_bytes(sd, k, 1);
	put_bytes(sd, len, 2);
	put_bytes(sd, old, 1);
	put_bytes(sd, 0, 1); /* pad */
	put_bytes(sd, 0, 1); /* slots: computed */
	put_bytes(sd, FZ_PROGRESS, 1);
}

static void seed_req(struct fz_seed *sd, unsigned type, unsigned flags,
		     unsigned len, unsigned off)
{
	put_bytes(sd, FZ_REQ, 1);
	put_bytes(sd, 8, 1);	/* units from the length, the region's key */
	put_bytes(sd, 0x6b, 1); /* payload */
	put_bytes(sd, type, 1);
	put_bytes(sd, flags, 1);
	put_bytes(sd, 0, 2); /* units: computed */
	put_bytes(sd, 0, 1); /* credit */
	put_bytes(sd, RMCA_ATOMIC_FADD, 1);
	put_bytes(sd, len, 2);
	put_bytes(sd, off, 2);
	put_bytes(sd, 0, 8); /* laddr */
	put_bytes(sd, 1, 2); /* operand */
	put_bytes(sd, 0, 2); /* compare */
}

size_t rmca_fuzz_seed(unsigned i, uint8_t *buf, size_t cap)
{
	struct fz_seed sd = {buf, buf + cap};

	if (i >= 4 || cap < 512)
		return 0;
	put_bytes(&sd, i & 1, 1); /* which side this one is */
	/* gets of 32 and 600 bytes, two puts (one in three pieces), then
	 * the atomic: its answer passes the puts */
	seed_resp(&sd, 0, 32, 0);
	seed_resp(&sd, 0, 600, 0);
	seed_resp(&sd, 4, 0, 7);
	put_bytes(&sd, FZ_HEAD, 1);
	put_bytes(&sd, 0, 2);
	put_bytes(&sd, FZ_HEAD, 1);
	put_bytes(&sd, 2, 2);
	put_bytes(&sd, FZ_PROGRESS, 1);
	if (i == 2) {
		put_bytes(&sd, FZ_HANGUP, 1);
		return (size_t)(sd.p - buf);
	}
	if (i == 3)
		put_bytes(&sd, FZ_DEREG, 1);
	seed_req(&sd, SHM_R_PUT, SHM_RF_INLINE, 64, 256);
	seed_req(&sd, SHM_R_GET, 0, 32, 256);
	seed_req(&sd, SHM_R_GET, SHM_RF_INLINE, 1000, 0);
	seed_req(&sd, SHM_R_ATOMIC, 0, 8, 512);
	seed_req(&sd, SHM_R_SEND, SHM_RF_INLINE, 16, 0);
	seed_req(&sd, SHM_R_SEND, SHM_RF_INLINE | SHM_RF_MORE, 100, 0);
	seed_req(&sd, SHM_R_SEND, SHM_RF_INLINE | SHM_RF_INV, 100, 0);
	put_bytes(&sd, FZ_PROGRESS, 1);
	put_bytes(&sd, FZ_POST, 1);
	put_bytes(&sd, 1, 1); /* a send */
	put_bytes(&sd, 40, 2);
	put_bytes(&sd, 0, 2);
	put_bytes(&sd, FZ_PROGRESS, 1);
	return (size_t)(sd.p - buf);
}
