/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shm component's own promises, beyond the contract suite (which runs
 * over shm in test_shm_suite.sh):
 * - a peer killed with SIGKILL in the middle of transfers completes every
 *   outstanding op once, with RMCA_ERR_CONNECTION (or OK for what its core
 *   served before it died);
 * - nothing is left in /dev/shm by any exit, clean or killed: the segment
 *   is a memfd, visible only as a mapping while the connection lives;
 * - a use-once key serves only the connection it was handed to;
 * - local peers go to shm by default, elsewhere when told (^shm); one that
 *   cannot be attached to (a non-dumpable process) gets every byte through
 *   the rings, in pieces;
 * - a peer that writes garbage into the shared rings ends that connection
 *   with RMCA_ERR_PROTOCOL, and the target lives on;
 * - large puts and gets are copied by the initiator's core, without the
 *   target's, and still refused for a made-up key, a range outside the
 *   region, a missing permission, a deregistered or a revoked key, with
 *   the target's memory untouched;
 * - a deregistration wins against puts racing with it: once rmca_mr_dereg
 *   returned, not one byte of the region changes;
 * - the same over a target's memory from rmca_mem_alloc, which the
 *   initiator maps (no process_vm_writev/readv at all): puts and gets land
 *   byte for byte, every refusal holds with the mapping in place, a
 *   deregistration still wins against racing puts, a put into a peer
 *   killed a moment before completes RMCA_ERR_CONNECTION, and the mapping
 *   goes once the last key in it is deregistered or the connection ends;
 * - a ping-pong spinning on rmca_poll makes (almost) no system call: the
 *   core looks at its fds once a millisecond, not on every rmca_poll.
 *   Counted against the milliseconds the loop took, not against the
 *   polls: a process descheduled between most of its polls (a loaded
 *   machine) makes few polls per millisecond. It ends in time with both
 *   sides on one CPU, as a loaded machine puts them now and then.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "shm_ring.h"

#define BIG	 (1u << 20)
#define NBIG	 16
#define NRECV	 4
#define TOKEN_GO 0x9011

/* Entries of /dev/shm whose name mentions rmca. */
static int dev_shm_rmca(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += strstr(e->d_name, "rmca") != NULL;
	closedir(d);
	return n;
}

/* Lines of /proc/self/maps naming the memfd called name. */
static int maps_of(const char *name)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, name) != NULL;
	fclose(f);
	return n;
}

/* Lines of /proc/self/maps that are an rmca shm segment. */
static int memfd_maps(void)
{
	return maps_of("/memfd:rmca-shm");
}

/* Lines of /proc/self/maps that are a peer's rmca_mem_alloc memory (the
 * tests' initiators allocate none of their own). */
static int mem_maps(void)
{
	return maps_of("/memfd:rmca-mem");
}

/* The target's memory comes from rmca_mem_alloc: the initiator maps it. */
static bool mapped;

static uint8_t *target_mem(struct api_peer *p, size_t len)
{
	void *m;

	if (!mapped)
		return api_alloc(len);
	API_CHECK_OK(rmca_mem_alloc(p->ctx, len, &m));
	return m;
}

/* This program's process_vm_writev and process_vm_readv come first in the
 * lookup scope (it is linked -rdynamic): counted, then the real ones. */
static long ncma;

#define CMA_COUNTED(name)                                                      \
	ssize_t name(pid_t pid, const struct iovec *l, unsigned long nl,       \
		     const struct iovec *r, unsigned long nr,                  \
		     unsigned long flags)                                      \
	{                                                                      \
		static ssize_t (*real)(pid_t, const struct iovec *,            \
				       unsigned long, const struct iovec *,    \
				       unsigned long, unsigned long);          \
                                                                               \
		if (!real)                                                     \
			real = (ssize_t(*)(                                    \
				pid_t, const struct iovec *, unsigned long,    \
				const struct iovec *, unsigned long,           \
				unsigned long))dlsym(RTLD_NEXT, #name);        \
		ncma++;                                                        \
		return real(pid, l, nl, r, nr, flags);                         \
	}

CMA_COUNTED(process_vm_writev)
CMA_COUNTED(process_vm_readv)

/* Mapped: the initiator's direct accesses so far went through its mapping
 * of the target's memory, none through the kernel. */
static void expect_mapped(void)
{
	if (!mapped)
		return;
	API_CHECK_MSG(ncma == 0, "%ld process_vm_writev/readv calls", ncma);
	API_CHECK_MSG(mem_maps() == 1, "%d mappings of the target's memory",
		      mem_maps());
}

static void expect_shm(struct api_peer *p)
{
	struct rmca_ep_attr a;

	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	API_CHECK_MSG(strcmp(a.transport, "shm") == 0,
		      "endpoint runs over \"%s\", not shm", a.transport);
	API_CHECK(a.peer_is_local);
	API_CHECK_MSG(memfd_maps() > 0,
		      "no memfd segment mapped while connected");
	API_CHECK_MSG(dev_shm_rmca() == 0, "an rmca file is in /dev/shm");
	/* The probe at wire-up read one word by CMA: count from here. */
	ncma = 0;
}

/* ---- SIGKILL mid-transfer ---- */

/* The victim: a target that serves until it is killed. */
static void victim(struct api_peer *p)
{
	uint8_t *mem;

	rmca_mr_t *mr;

	api_server_listen(p, api_host());
	api_server_accept_all(p);
	expect_shm(p);
	mem = target_mem(p, NBIG * BIG);
	API_CHECK_OK(rmca_mr_reg(
		p->ctx, mem, NBIG * BIG,
		RMCA_ACCESS_REMOTE_WRITE | RMCA_ACCESS_REMOTE_READ, &mr));
	api_put_region(p, 0, mem, NBIG * BIG, mr, p->ep);
	api_put_u64(p, 0, (uint64_t)getpid());
	for (;;)
		api_progress(p);
}

static void kill_server(struct api_peer *p)
{
	pid_t pid = fork();
	int st;

	API_CHECK(pid >= 0);
	if (!pid)
		victim(p);
	API_CHECK(waitpid(pid, &st, 0) == pid);
	API_CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		      "the victim was not killed but ended with status %#x",
		      st);
	API_CHECK_MSG(dev_shm_rmca() == 0, "an rmca file is in /dev/shm");
}

static void kill_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(2 * NBIG * BIG + NRECV * 64);
	/* Mapped: one put more, posted once the victim is dead. */
	int n = 2 * NBIG + NRECV + mapped, ok = 0;
	int seen[2 * NBIG + NRECV + 1] = {0};
	struct rmca_completion c;
	struct api_region r;
	rmca_mr_t *mr;
	pid_t pid;
	long end;
	int i, got = 0;

	api_client_connect(p, api_host());
	expect_shm(p);
	api_get_region(p, 0, &r);
	pid = (pid_t)api_get_u64(p, 0);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 2 * NBIG * BIG + NRECV * 64,
				 RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < NRECV; i++)
		API_CHECK_OK(rmca_recv(p->ep, buf + 2 * NBIG * BIG + i * 64, 64,
				       mr, API_CTX(1 + i)));
	for (i = 0; i < NBIG; i++) {
		API_CHECK_OK(API_POST(p, rmca_put(p->ep, buf + i * BIG, BIG, mr,
						  r.addr + i * BIG, r.rkey,
						  RMCA_DELIVERED,
						  API_CTX(1 + NRECV + i))));
		API_CHECK_OK(
			API_POST(p, rmca_get(p->ep, buf + (NBIG + i) * BIG, BIG,
					     mr, r.addr + i * BIG, r.rkey,
					     API_CTX(1 + NRECV + NBIG + i))));
	}
	/* Kill once the target is busy serving. */
	end = api_now_ms() + API_TIMEOUT_MS;
	while (!api_stashed() && api_now_ms() < end)
		api_progress(p);
	if (mapped) {
		long pfd = syscall(SYS_pidfd_open, pid, 0);
		struct pollfd pf = {.fd = (int)pfd, .events = POLLIN};

		expect_mapped();
		API_CHECK(pfd >= 0);
		API_CHECK(kill(pid, SIGKILL) == 0);
		/* Dead, and not a call on the context since: the put copies
		 * into the mapping, which outlives the victim, and must
		 * still not say it was delivered. */
		API_CHECK(poll(&pf, 1, API_TIMEOUT_MS) == 1);
		close((int)pfd);
		API_CHECK_OK(API_POST(p, rmca_put(p->ep, buf, BIG, mr, r.addr,
						  r.rkey, RMCA_DELIVERED,
						  API_CTX(n))));
		API_CHECK_MSG(ncma == 0, "%ld process_vm_writev/readv calls",
			      ncma);
	} else {
		API_CHECK(kill(pid, SIGKILL) == 0);
	}
	end = api_now_ms() + API_TIMEOUT_MS;
	while (got < n) {
		API_CHECK_MSG(api_now_ms() < end,
			      "%d of %d ops never completed after the kill",
			      n - got, n);
		api_progress(p);
		for (i = 0; i < n; i++) {
			if (!api_take(API_CTX(1 + i), &c))
				continue;
			seen[i]++;
			got++;
			API_CHECK_MSG(c.status == RMCA_ERR_CONNECTION ||
					      (i >= NRECV &&
					       i < 2 * NBIG + NRECV &&
					       c.status == RMCA_OK),
				      "op %d ended %d (%s)", i, c.status,
				      api_strerror(c.status));
			ok += c.status == RMCA_OK;
		}
	}
	api_progress_for(p, 100);
	API_CHECK_MSG(api_stashed() == 0, "%d completions too many",
		      api_stashed());
	for (i = 0; i < n; i++)
		API_CHECK_MSG(seen[i] == 1, "op %d completed %d times", i,
			      seen[i]);
	rmca_ep_close(p->ep);
	p->ep = NULL;
	api_progress_for(p, 10);
	api_stash_clear();
	API_CHECK_MSG(memfd_maps() == 0, "segment still mapped after close");
	API_CHECK_MSG(mem_maps() == 0, "the victim's memory still mapped");
	API_CHECK_MSG(dev_shm_rmca() == 0, "an rmca file is in /dev/shm");
}

static void test_kill9_mid_transfer_completes_each_op_once(void **state)
{
	const struct api_test t = {
		.server = kill_server, .client = kill_client, .manual = true};

	(void)state;
	api_run(&t);
	assert_int_equal(dev_shm_rmca(), 0);
	/* The victim's memory from rmca_mem_alloc, mapped by the client. */
	mapped = true;
	api_run(&t);
	mapped = false;
	assert_int_equal(dev_shm_rmca(), 0);
	/* Again with every byte in the rings, pieces in flight. */
	setenv("RMCA_shm_cma", "no", 1);
	api_run(&t);
	unsetenv("RMCA_shm_cma");
	assert_int_equal(dev_shm_rmca(), 0);
}

/* ---- a use-once key is bound to its connection ---- */

static void bound_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(4096);
	rmca_mr_t *mr;

	expect_shm(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, mem, 4096,
				 RMCA_MR_USE_ONCE | RMCA_ACCESS_REMOTE_WRITE,
				 &mr));
	/* Both clients learn the key handed to client 0. */
	api_put_region(p, 0, mem, 4096, mr, p->eps[0]);
	api_put_region(p, 1, mem, 4096, mr, p->eps[0]);
	api_expect_token(p, 1, TOKEN_GO);
	for (int i = 0; i < 4096; i++)
		API_CHECK_MSG(mem[i] == 0, "client 1's put reached byte %d", i);
	api_token(p, 0, TOKEN_GO);
	api_expect_token(p, 0, TOKEN_GO);
	API_CHECK_MSG(api_pattern_check(mem, 4096, 7) < 0,
		      "client 0's put did not land");
}

static void bound_client(struct api_peer *p)
{
	uint8_t *src = api_alloc(4096);
	struct api_region r;
	rmca_mr_t *ms;

	expect_shm(p);
	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, src, 4096, RMCA_ACCESS_LOCAL, &ms));
	api_pattern(src, 4096, 7);
	if (p->index == 1) {
		API_CHECK_OK(API_POST(p, rmca_put(p->ep, src, 4096, ms, r.addr,
						  r.rkey, RMCA_DELIVERED,
						  API_CTX(1))));
		api_wait_status(p, API_CTX(1), RMCA_ERR_REMOTE_ACCESS);
		api_token(p, 0, TOKEN_GO);
		return;
	}
	api_expect_token(p, 0, TOKEN_GO);
	API_CHECK_OK(API_POST(p, rmca_put(p->ep, src, 4096, ms, r.addr, r.rkey,
					  RMCA_DELIVERED, API_CTX(1))));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	api_token(p, 0, TOKEN_GO);
}

static void test_use_once_key_serves_only_its_connection(void **state)
{
	const struct api_test t = {.server = bound_server,
				   .client = bound_client,
				   .nclients = 2,
				   .no_barrier = true};

	(void)state;
	api_run(&t);
}

/* ---- a peer that writes garbage into the shared rings ---- */

enum scribble {
	SCRIBBLE_ZERO_UNITS, /* an entry of no size */
	SCRIBBLE_OVERRUN,    /* an entry running past the ring's end */
	SCRIBBLE_TYPE,	     /* no such request */
	SCRIBBLE_INDEX,	     /* a head far past what the target pushed */
	SCRIBBLE_NO_RECV,    /* a message the target has no receive for */
	SCRIBBLE_RESERVED,   /* a reserved byte set */
	SCRIBBLE_INLINE_LEN, /* inline data longer than its entry */
	SCRIBBLE_ATOMIC,     /* an atomic of no such kind */
	SCRIBBLE_ANSWER,     /* an answer to no request */
	SCRIBBLE_ANSWER_IDX, /* an answer ring's tail far past its head */
	SCRIBBLE_MAX,
};

/* This process's mapping of the connection's segment. */
static struct shm_seg *my_segment(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long start = 0;
	char line[512];

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/memfd:rmca-shm") &&
		    sscanf(line, "%lx-", &start) == 1)
			break;
	fclose(f);
	return (struct shm_seg *)start;
}

static void scribble_server(struct api_peer *p)
{
	bool no_recv = (intptr_t)p->arg == SCRIBBLE_NO_RECV;
	uint8_t *buf = api_alloc(64);
	struct rmca_completion c;
	rmca_mr_t *mr;

	expect_shm(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	if (!no_recv)
		API_CHECK_OK(rmca_recv(p->ep, buf, 64, mr, API_CTX(1)));
	api_token(p, 0, TOKEN_GO);
	api_expect_token(p, 0, TOKEN_GO);
	/* The garbage is in the ring before the token: one more poll reads
	 * it. It ends the connection, and nothing else. */
	api_progress(p);
	if (!no_recv) {
		api_wait(p, API_CTX(1), &c);
		API_CHECK_RC(c.status, RMCA_ERR_PROTOCOL);
	}
	API_CHECK_OK(rmca_recv(p->ep, buf, 64, mr, API_CTX(2)));
	api_wait(p, API_CTX(2), &c);
	API_CHECK_MSG(c.status != RMCA_OK && c.status != RMCA_ERR_CANCELED,
		      "receive on the failed endpoint: %d (%s)", c.status,
		      api_strerror(c.status));
	/* The client stays until now: its hang-up cannot come first. */
	api_token(p, 0, TOKEN_GO);
}

static void scribble_client(struct api_peer *p)
{
	struct shm_seg *s;
	struct shm_req *q;
	uint64_t head;

	expect_shm(p);
	api_expect_token(p, 0, TOKEN_GO);
	s = my_segment();
	API_CHECK(s != NULL);
	/* The client connected: it is side 0, its requests are req[0], and
	 * the server consumed all of them, up to its head. */
	head = __atomic_load_n(&s->req[0].head, __ATOMIC_ACQUIRE);
	q = (struct shm_req *)(void *)(s->reqbuf[0] + head % SHM_REQ_BYTES);
	memset(q, 0, sizeof(*q));
	q->type = SHM_R_PUT;
	q->units = 1;
	q->flags = SHM_RF_INLINE;
	switch ((intptr_t)p->arg) {
	case SCRIBBLE_ZERO_UNITS:
		q->units = 0;
		break;
	case SCRIBBLE_OVERRUN:
		q->units = SHM_REQ_BYTES / SHM_UNIT + 1;
		break;
	case SCRIBBLE_TYPE:
		q->type = 99;
		break;
	case SCRIBBLE_INDEX:
		/* The head of the server's requests, which this side
		 * consumes: past anything the server pushed. */
		__atomic_store_n(&s->req[1].head, 4 * SHM_REQ_BYTES,
				 __ATOMIC_RELEASE);
		api_token(p, 0, TOKEN_GO);
		api_expect_token(p, 0, TOKEN_GO);
		return;
	case SCRIBBLE_NO_RECV:
		q->type = SHM_R_SEND;
		q->len = 8;
		break;
	case SCRIBBLE_RESERVED:
		q->zero[1] = 1;
		break;
	case SCRIBBLE_INLINE_LEN:
		q->len = SHM_UNIT; /* one unit holds less past the header */
		break;
	case SCRIBBLE_ATOMIC:
		q->type = SHM_R_ATOMIC;
		q->flags = 0;
		q->akind = 9;
		q->units = 2;
		break;
	case SCRIBBLE_ANSWER:
	case SCRIBBLE_ANSWER_IDX: {
		/* This side's answers, which the server consumes: one it
		 * never asked for, or a tail no answer count reaches. */
		uint64_t t =
			__atomic_load_n(&s->resp[0].tail, __ATOMIC_ACQUIRE);
		struct shm_resp *r =
			(struct shm_resp *)(void *)(s->respbuf[0] +
						    (t % SHM_RESP_SLOTS) *
							    SHM_RESP_SLOT);

		memset(r, 0, sizeof(*r));
		r->id = 12345;
		__atomic_store_n(&s->resp[0].tail,
				 (intptr_t)p->arg == SCRIBBLE_ANSWER
					 ? t + 1
					 : t + 3 * SHM_RESP_SLOTS,
				 __ATOMIC_RELEASE);
		api_token(p, 0, TOKEN_GO);
		api_expect_token(p, 0, TOKEN_GO);
		return;
	}
	}
	__atomic_store_n(&q->stamp, shm_stamp(head), __ATOMIC_RELEASE);
	api_token(p, 0, TOKEN_GO);
	api_expect_token(p, 0, TOKEN_GO);
}

static void test_garbage_in_the_rings_ends_only_that_connection(void **state)
{
	struct api_test t = {.server = scribble_server,
			     .client = scribble_client,
			     .no_barrier = true};

	(void)state;
	for (intptr_t i = 0; i < SCRIBBLE_MAX; i++) {
		t.arg = (void *)i;
		api_run(&t);
	}
}

/* ---- laps of the request ring ---- */

/* A request says itself that it is there, by the stamp of its position.
 * One lap of the biggest inline messages, whose payloads carry at every
 * unit boundary the stamp that offset will have one lap later; then a lap
 * of one-unit messages, one per round trip, so that the target waits at
 * each of those offsets before the message lands there. A target that
 * read an old payload as a request would end the connection. Then
 * messages of every size around the header's line, and small puts and
 * gets, checked byte for byte. */
#define LAP_BIG	  SHM_INLINE_MAX
#define LAP_SIZES 72
#define LAP_PUTS  48

static uint64_t lap_big_count(void)
{
	return SHM_REQ_BYTES /
	       ((uint64_t)shm_units(SHM_R_SEND, LAP_BIG) * SHM_UNIT);
}

static uint64_t lap_small_count(void)
{
	uint64_t big = (uint64_t)shm_units(SHM_R_SEND, LAP_BIG) * SHM_UNIT;

	/* the rest of the first lap, then all of the second */
	return (SHM_REQ_BYTES - lap_big_count() * big) / SHM_UNIT +
	       SHM_REQ_BYTES / SHM_UNIT;
}

/* Message i of the first lap: it lands at ring position pos. */
static void lap_big(uint8_t *msg, uint64_t i)
{
	uint64_t pos = i * shm_units(SHM_R_SEND, LAP_BIG) * SHM_UNIT;
	uint64_t pl = pos + shm_pl_off(SHM_R_SEND);

	memset(msg, (int)(i & 0x7f), LAP_BIG);
	for (uint64_t u = pos + SHM_UNIT; u + 4 <= pl + LAP_BIG;
	     u += SHM_UNIT) {
		uint32_t st = shm_stamp(u + SHM_REQ_BYTES);

		memcpy(msg + (u - pl), &st, sizeof(st));
	}
}

static void laps_server(struct api_peer *p)
{
	uint8_t *msg = api_alloc(LAP_BIG), *want = api_alloc(LAP_BIG);
	uint8_t *mem = api_alloc(LAP_PUTS * LAP_PUTS), *one = api_alloc(1);
	rmca_mr_t *mr, *mm, *om;

	expect_shm(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, LAP_BIG, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, one, 1, RMCA_ACCESS_LOCAL, &om));
	API_CHECK_OK(rmca_mr_reg(
		p->ctx, mem, LAP_PUTS * LAP_PUTS,
		RMCA_ACCESS_REMOTE_WRITE | RMCA_ACCESS_REMOTE_READ, &mm));
	api_put_region(p, 0, mem, LAP_PUTS * LAP_PUTS, mm, p->ep);
	for (uint64_t i = 0; i < lap_big_count(); i++) {
		API_CHECK(api_recv_wait(p, p->ep, msg, LAP_BIG, mr) == LAP_BIG);
		lap_big(want, i);
		API_CHECK_MSG(!memcmp(msg, want, LAP_BIG),
			      "message %llu of the first lap differs",
			      (unsigned long long)i);
	}
	/* The answer is the client's next message's credit: until it
	 * lands, this side waits at the head. */
	for (uint64_t i = 0; i < lap_small_count(); i++) {
		API_CHECK(api_recv_wait(p, p->ep, msg, 8, mr) == 8);
		API_CHECK_MSG(!memcmp(msg, &i, 8), "small message %llu differs",
			      (unsigned long long)i);
		api_send_wait(p, p->ep, one, 1, om);
	}
	for (size_t n = 0; n <= LAP_SIZES; n++) {
		API_CHECK(api_recv_wait(p, p->ep, msg, LAP_BIG, mr) == n);
		API_CHECK_MSG(api_pattern_check(msg, n, (unsigned)n) < 0,
			      "message of %zu bytes differs at byte %ld", n,
			      api_pattern_check(msg, n, (unsigned)n));
	}
	api_expect_token(p, 0, TOKEN_GO);
	for (size_t n = 1; n <= LAP_PUTS; n++)
		API_CHECK_MSG(api_pattern_check(mem + (n - 1) * LAP_PUTS, n,
						(unsigned)n + 100) < 0,
			      "put of %zu bytes differs", n);
	api_token(p, 0, TOKEN_GO);
}

static void laps_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(2 * LAP_BIG);
	struct api_region r;
	rmca_mr_t *mr;

	expect_shm(p);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, 2 * LAP_BIG, RMCA_ACCESS_LOCAL, &mr));
	api_get_region(p, 0, &r);
	for (uint64_t i = 0; i < lap_big_count(); i++) {
		lap_big(buf, i);
		api_send_wait(p, p->ep, buf, LAP_BIG, mr);
	}
	for (uint64_t i = 0; i < lap_small_count(); i++) {
		memcpy(buf, &i, 8);
		api_send_wait(p, p->ep, buf, 8, mr);
		API_CHECK(api_recv_wait(p, p->ep, buf + LAP_BIG, 1, mr) == 1);
	}
	for (size_t n = 0; n <= LAP_SIZES; n++) {
		api_pattern(buf, n, (unsigned)n);
		api_send_wait(p, p->ep, buf, n, mr);
	}
	for (size_t n = 1; n <= LAP_PUTS; n++) {
		uint64_t at = r.addr + (n - 1) * LAP_PUTS;

		api_pattern(buf, n, (unsigned)n + 100);
		memset(buf + LAP_BIG, 0, n);
		API_CHECK_OK(API_POST(p, rmca_put(p->ep, buf, n, mr, at, r.rkey,
						  RMCA_DELIVERED, API_CTX(1))));
		API_CHECK_OK(API_POST(p, rmca_get(p->ep, buf + LAP_BIG, n, mr,
						  at, r.rkey, API_CTX(2))));
		api_wait_status(p, API_CTX(1), RMCA_OK);
		api_wait_status(p, API_CTX(2), RMCA_OK);
		API_CHECK_MSG(!memcmp(buf, buf + LAP_BIG, n),
			      "get after a put of %zu bytes differs", n);
	}
	api_token(p, 0, TOKEN_GO);
	api_expect_token(p, 0, TOKEN_GO);
}

static void test_ring_laps_never_take_old_bytes_for_a_request(void **state)
{
	const struct api_test t = {.server = laps_server,
				   .client = laps_client};

	(void)state;
	api_run(&t);
}

/* ---- puts and gets copied by the initiator ---- */

#define DBIG (1u << 20)

/* A token read without progressing rmca: this side's core serves nothing
 * meanwhile. */
static uint64_t quiet_read(struct api_peer *p)
{
	struct pollfd pf = {.fd = p->link[0].rd, .events = POLLIN};
	uint64_t v;
	size_t got = 0;

	while (got < sizeof(v)) {
		ssize_t n;

		API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
			      "nothing from the other side within %d ms",
			      API_TIMEOUT_MS);
		n = read(pf.fd, (char *)&v + got, sizeof(v) - got);
		if (n < 0 && errno == EINTR)
			continue;
		API_CHECK_MSG(n > 0, "the other side ended; see its line");
		got += (size_t)n;
	}
	return v;
}

static void quiet_expect(struct api_peer *p, uint64_t token)
{
	uint64_t v = quiet_read(p);

	API_CHECK_MSG(v == token, "expected token %#llx, got %#llx",
		      (unsigned long long)token, (unsigned long long)v);
}

/* Serves nothing after the key is out: what completes, the client did. */
static void idle_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(2 * DBIG);
	rmca_mr_t *mr;

	expect_shm(p);
	api_pattern(mem, DBIG, 3);
	API_CHECK_OK(rmca_mr_reg(
		p->ctx, mem, 2 * DBIG,
		RMCA_ACCESS_REMOTE_WRITE | RMCA_ACCESS_REMOTE_READ, &mr));
	api_put_region(p, 0, mem, 2 * DBIG, mr, p->ep);
	quiet_expect(p, TOKEN_GO);
	API_CHECK_MSG(api_pattern_check(mem + DBIG, DBIG, 5) < 0,
		      "the put did not land");
	api_token(p, 0, TOKEN_GO);
}

static void idle_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(2 * DBIG);
	struct api_region r;
	rmca_mr_t *mr;

	expect_shm(p);
	api_get_region(p, 0, &r);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, 2 * DBIG, RMCA_ACCESS_LOCAL, &mr));
	api_pattern(buf, DBIG, 5);
	API_CHECK_OK(API_POST(p, rmca_put(p->ep, buf, DBIG, mr, r.addr + DBIG,
					  r.rkey, RMCA_DELIVERED, API_CTX(1))));
	API_CHECK_OK(API_POST(p, rmca_get(p->ep, buf + DBIG, DBIG, mr, r.addr,
					  r.rkey, API_CTX(2))));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	api_wait_status(p, API_CTX(2), RMCA_OK);
	API_CHECK_MSG(api_pattern_check(buf + DBIG, DBIG, 3) < 0,
		      "the get read something else");
	api_token(p, 0, TOKEN_GO);
	api_expect_token(p, 0, TOKEN_GO);
}

static void test_big_put_and_get_need_no_target_core(void **state)
{
	const struct api_test t = {.server = idle_server,
				   .client = idle_client,
				   .no_barrier = true};

	(void)state;
	api_run(&t);
}

/* ---- memory from rmca_mem_alloc: mapped by a same-host initiator ---- */

/* Puts and gets of every size the initiator copies itself, at odd
 * offsets, up to both ends of the region: offset, length, seed. */
static const struct {
	size_t off, len;
	unsigned seed;
} mput[] = {{DBIG, DBIG, 5},
	    {13, 100003, 6},
	    {2 * DBIG - SHM_INLINE_MAX - 1, SHM_INLINE_MAX + 1, 7}},
  mget[] = {{0, DBIG, 0},
	    {777, 4097, 0},
	    {2 * DBIG - SHM_RESP_INLINE - 1, SHM_RESP_INLINE + 1, 0}};

#define NMAP (sizeof(mput) / sizeof(mput[0]))

static void alloc_server(struct api_peer *p)
{
	bool shm = !p->arg;
	uint8_t *mem, *exp = api_alloc(3 * DBIG), *one = api_alloc(DBIG);
	rmca_mr_t *mr;
	void *junk;

	if (shm)
		expect_shm(p);
	API_CHECK_RC(rmca_mem_alloc(p->ctx, 0, &junk), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_mem_alloc(NULL, 64, &junk), RMCA_ERR_INVALID);
	API_CHECK_OK(rmca_mem_alloc(p->ctx, 3 * DBIG, &junk));
	mem = junk;
	for (size_t i = 0; i < 3 * DBIG; i++)
		API_CHECK_MSG(!mem[i], "byte %zu of new memory is not 0", i);
	api_pattern(mem, 3 * DBIG, 3);
	API_CHECK_OK(rmca_mr_reg(
		p->ctx, mem, 2 * DBIG,
		RMCA_ACCESS_REMOTE_WRITE | RMCA_ACCESS_REMOTE_READ, &mr));
	/* Not while a region in it is registered; not a pointer inside. */
	API_CHECK_RC(rmca_mem_free(p->ctx, mem), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_mem_free(p->ctx, mem + 4096), RMCA_ERR_INVALID);
	api_put_region(p, 0, mem, 2 * DBIG, mr, p->ep);
	api_expect_token(p, 0, TOKEN_GO);
	api_pattern(exp, 3 * DBIG, 3);
	for (size_t i = 0; i < NMAP; i++) {
		api_pattern(one, mput[i].len, mput[i].seed);
		memcpy(exp + mput[i].off, one, mput[i].len);
	}
	for (size_t i = 0; i < 3 * DBIG; i++)
		API_CHECK_MSG(mem[i] == exp[i], "byte %zu is %#x, expected %#x",
			      i, mem[i], exp[i]);
	/* The last key in the allocation goes: the client unmaps it. */
	API_CHECK_OK(rmca_mr_dereg(mr));
	API_CHECK_OK(rmca_mem_free(p->ctx, mem));
	API_CHECK_RC(rmca_mem_free(p->ctx, mem), RMCA_ERR_INVALID);
	api_token(p, 0, TOKEN_GO);
	api_expect_token(p, 0, TOKEN_GO);
}

static void alloc_client(struct api_peer *p)
{
	bool shm = !p->arg;
	uint8_t *buf = api_alloc(DBIG), *exp = api_alloc(2 * DBIG);
	struct api_region r;
	rmca_mr_t *mr;
	long end;

	if (shm)
		expect_shm(p);
	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, DBIG, RMCA_ACCESS_LOCAL, &mr));
	api_pattern(exp, 2 * DBIG, 3);
	for (size_t i = 0; i < NMAP; i++) {
		memset(buf, 0, DBIG);
		API_CHECK_OK(API_POST(p, rmca_get(p->ep, buf, mget[i].len, mr,
						  r.addr + mget[i].off, r.rkey,
						  API_CTX(1))));
		api_wait_status(p, API_CTX(1), RMCA_OK);
		API_CHECK_MSG(!memcmp(buf, exp + mget[i].off, mget[i].len),
			      "get %zu read something else", i);
	}
	for (size_t i = 0; i < NMAP; i++) {
		api_pattern(buf, mput[i].len, mput[i].seed);
		API_CHECK_OK(API_POST(p, rmca_put(p->ep, buf, mput[i].len, mr,
						  r.addr + mput[i].off, r.rkey,
						  RMCA_DELIVERED, API_CTX(2))));
		api_wait_status(p, API_CTX(2), RMCA_OK);
	}
	if (shm) {
		API_CHECK_MSG(ncma == 0, "%ld process_vm_writev/readv calls",
			      ncma);
		API_CHECK_MSG(mem_maps() == 1,
			      "%d mappings of the target's memory", mem_maps());
	}
	api_token(p, 0, TOKEN_GO);
	api_expect_token(p, 0, TOKEN_GO);
	end = api_now_ms() + API_TIMEOUT_MS;
	while (mem_maps() != 0) {
		API_CHECK_MSG(api_now_ms() < end,
			      "the target's memory is still mapped after its "
			      "last region went");
		api_progress(p);
	}
	api_token(p, 0, TOKEN_GO);
}

static void test_mem_alloc_is_mapped_by_the_initiator(void **state)
{
	struct api_test t = {.server = alloc_server,
			     .client = alloc_client,
			     .no_barrier = true};

	(void)state;
	api_run(&t);
	/* Ordinary memory to every other transport. */
	setenv("RMCA_transports", "tcp", 1);
	t.arg = "tcp";
	api_run(&t);
	setenv("RMCA_transports", "shm", 1);
}

enum refusal {
	REFUSE_MADE_UP,	  /* the right slot, another key */
	REFUSE_NO_SLOT,	  /* a slot that holds nothing (or another key) */
	REFUSE_RANGE,	  /* one byte past the region */
	REFUSE_READONLY,  /* a put under a key without remote write */
	REFUSE_WRITEONLY, /* a get under a key without remote read */
	REFUSE_DEREG,	  /* the region was deregistered */
	REFUSE_REVOKED,	  /* a use-once key the client revoked itself */
	REFUSE_MAX,
};

static void refuse_server(struct api_peer *p)
{
	enum refusal how = (enum refusal)(intptr_t)p->arg;
	unsigned access =
		how == REFUSE_READONLY ? RMCA_ACCESS_REMOTE_READ
		: how == REFUSE_WRITEONLY
			? RMCA_ACCESS_REMOTE_WRITE
			: RMCA_ACCESS_REMOTE_WRITE | RMCA_ACCESS_REMOTE_READ;
	uint8_t *mem = target_mem(p, 2 * DBIG + 4096), *msg = api_alloc(64);
	struct rmca_completion c;
	rmca_mr_t *mr, *mm, *warm;

	expect_shm(p);
	api_pattern(mem, 2 * DBIG, 9);
	if (how == REFUSE_REVOKED)
		access |= RMCA_MR_USE_ONCE;
	API_CHECK_OK(rmca_mr_reg(p->ctx, mem, DBIG, access, &mr));
	api_put_region(p, 0, mem, DBIG, mr, p->ep);
	/* Past what is checked, in the same allocation: a region whose get
	 * makes the client map it before it tries the refused access. */
	API_CHECK_OK(rmca_mr_reg(p->ctx, mem + 2 * DBIG, 4096,
				 RMCA_ACCESS_REMOTE_READ, &warm));
	api_put_region(p, 0, mem + 2 * DBIG, 4096, warm, p->ep);
	if (how == REFUSE_DEREG)
		API_CHECK_OK(rmca_mr_dereg(mr));
	if (how == REFUSE_REVOKED) {
		API_CHECK_OK(
			rmca_mr_reg(p->ctx, msg, 64, RMCA_ACCESS_LOCAL, &mm));
		API_CHECK_OK(rmca_recv(p->ep, msg, 64, mm, API_CTX(1)));
		api_wait(p, API_CTX(1), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		API_CHECK(c.revoked_rkey == rmca_mr_rkey(mr, p->ep) ||
			  c.revoked_rkey != 0);
	}
	api_token(p, 0, TOKEN_GO);
	/* The client's attempts run while this core serves nothing. */
	quiet_expect(p, TOKEN_GO);
	API_CHECK_MSG(api_pattern_check(mem, 2 * DBIG, 9) < 0,
		      "a refused access changed byte %ld",
		      api_pattern_check(mem, 2 * DBIG, 9));
	api_token(p, 0, TOKEN_GO);
}

static void refuse_client(struct api_peer *p)
{
	enum refusal how = (enum refusal)(intptr_t)p->arg;
	uint8_t *buf = api_alloc(DBIG + 4096);
	uint64_t key, addr;
	struct api_region r, w;
	rmca_mr_t *mr;

	expect_shm(p);
	api_get_region(p, 0, &r);
	api_get_region(p, 0, &w);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, DBIG + 4096, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(API_POST(p, rmca_get(p->ep, buf + DBIG, 4096, mr, w.addr,
					  w.rkey, API_CTX(2))));
	api_wait_status(p, API_CTX(2), RMCA_OK);
	expect_mapped();
	if (how == REFUSE_REVOKED) {
		API_CHECK_OK(API_POST(p, rmca_send_inv(p->ep, buf, 8, mr,
						       r.rkey, API_CTX(3))));
		api_wait_status(p, API_CTX(3), RMCA_OK);
	}
	api_expect_token(p, 0, TOKEN_GO);
	key = r.rkey;
	addr = r.addr;
	if (how == REFUSE_MADE_UP)
		key ^= 1ull << 40;
	if (how == REFUSE_NO_SLOT) /* another slot, never 0 (not published) */
		key ^= (key & 3) == 2 ? 1 : 2;
	if (how == REFUSE_RANGE)
		addr += 1;
	api_pattern(buf, DBIG, 4);
	if (how == REFUSE_WRITEONLY)
		API_CHECK_OK(API_POST(p, rmca_get(p->ep, buf, 64 * 1024, mr,
						  addr, key, API_CTX(1))));
	else
		API_CHECK_OK(
			API_POST(p, rmca_put(p->ep, buf, DBIG, mr, addr, key,
					     RMCA_DELIVERED, API_CTX(1))));
	api_wait_status(p, API_CTX(1), RMCA_ERR_REMOTE_ACCESS);
	if (how == REFUSE_WRITEONLY)
		API_CHECK_MSG(api_pattern_check(buf, DBIG, 4) < 0,
			      "a refused get wrote into its buffer");
	if (mapped)
		API_CHECK_MSG(ncma == 0, "%ld process_vm_writev/readv calls",
			      ncma);
	api_token(p, 0, TOKEN_GO);
	api_expect_token(p, 0, TOKEN_GO);
}

static void test_direct_access_is_refused_untouched(void **state)
{
	struct api_test t = {.server = refuse_server,
			     .client = refuse_client,
			     .no_barrier = true};

	(void)state;
	for (intptr_t i = 0; i < REFUSE_MAX; i++) {
		t.arg = (void *)i;
		api_run(&t);
	}
	/* Again with the client holding a mapping of the region's pages. */
	mapped = true;
	for (intptr_t i = 0; i < REFUSE_MAX; i++) {
		t.arg = (void *)i;
		api_run(&t);
	}
	mapped = false;
}

/* The region, filled with this after the dereg, must stay so. */
#define CANARY 0xa5

static void race_server(struct api_peer *p)
{
	uint8_t *mem = target_mem(p, 4 * DBIG);
	rmca_mr_t *mr;

	expect_shm(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, mem, 4 * DBIG,
				 RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_region(p, 0, mem, 4 * DBIG, mr, p->ep);
	quiet_expect(p, TOKEN_GO);
	/* Puts are streaming in: wait a little, differently each round. */
	usleep((useconds_t)(200 + 150 * (intptr_t)p->arg));
	API_CHECK_OK(rmca_mr_dereg(mr));
	memset(mem, CANARY, 4 * DBIG);
	quiet_expect(p, TOKEN_GO);
	for (size_t i = 0; i < 4 * DBIG; i++)
		API_CHECK_MSG(mem[i] == CANARY,
			      "byte %zu changed after rmca_mr_dereg returned",
			      i);
	api_token(p, 0, TOKEN_GO);
}

static void race_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(DBIG);
	struct rmca_completion c;
	struct api_region r;
	rmca_mr_t *mr;
	int n = 0;

	expect_shm(p);
	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, DBIG, RMCA_ACCESS_LOCAL, &mr));
	memset(buf, 0x11, DBIG);
	api_token(p, 0, TOKEN_GO);
	for (;; n++) {
		API_CHECK_OK(API_POST(
			p, rmca_put(p->ep, buf, DBIG, mr,
				    r.addr + (uint64_t)(n % 4) * DBIG, r.rkey,
				    RMCA_DELIVERED, API_CTX(1 + n))));
		api_wait(p, API_CTX(1 + n), &c);
		if (c.status)
			break;
	}
	API_CHECK_RC(c.status, RMCA_ERR_REMOTE_ACCESS);
	if (mapped)
		API_CHECK_MSG(ncma == 0, "%d puts, %ld process_vm_writev calls",
			      n, ncma);
	api_token(p, 0, TOKEN_GO);
	api_expect_token(p, 0, TOKEN_GO);
}

static void test_dereg_wins_against_racing_puts(void **state)
{
	struct api_test t = {.server = race_server,
			     .client = race_client,
			     .no_barrier = true};

	(void)state;
	for (intptr_t i = 0; i < 12; i++) {
		t.arg = (void *)i;
		api_run(&t);
	}
	/* Into the client's mapping: a memcpy per chunk, no system call
	 * between two checks of the key. */
	mapped = true;
	for (intptr_t i = 0; i < 12; i++) {
		t.arg = (void *)i;
		api_run(&t);
	}
	mapped = false;
}

/* ---- copies into a mapping: the peer asked after, once for many ---- */

/* poll() with timeout 0 is how rmca asks whether the peer exited (its
 * pidfd); the tests' own waits sleep. Counted, then the real one. */
static long npidpoll;

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	static int (*real)(struct pollfd *, nfds_t, int);

	if (!real)
		real = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT,
								    "poll");
	npidpoll += !timeout;
	return real(fds, n, timeout);
}

#define NWIN  32
#define WSIZE (64 * 1024)

static void window_server(struct api_peer *p)
{
	uint8_t *mem = target_mem(p, NWIN * WSIZE), *exp = api_alloc(WSIZE);
	rmca_mr_t *mr;

	expect_shm(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, mem, NWIN * WSIZE,
				 RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_region(p, 0, mem, NWIN * WSIZE, mr, p->ep);
	quiet_expect(p, TOKEN_GO);
	for (int i = 0; i < NWIN; i++) {
		api_pattern(exp, WSIZE, 100 + i);
		API_CHECK_MSG(!memcmp(mem + i * WSIZE, exp, WSIZE),
			      "put %d did not land byte for byte", i);
	}
	api_token(p, 0, TOKEN_GO);
}

static void window_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NWIN * WSIZE);
	struct pollfd wfd = {.fd = rmca_wait_fd(p->ctx), .events = POLLIN};
	struct api_region r;
	rmca_mr_t *mr;
	long asked;

	expect_shm(p);
	api_get_region(p, 0, &r);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NWIN * WSIZE, RMCA_ACCESS_LOCAL, &mr));
	for (int i = 0; i < NWIN; i++)
		api_pattern(buf + i * WSIZE, WSIZE, 100 + i);
	/* The first put maps the target's memory. */
	API_CHECK_OK(API_POST(p, rmca_put(p->ep, buf, WSIZE, mr, r.addr, r.rkey,
					  0, API_CTX(1))));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	expect_mapped();
	npidpoll = 0;
	for (int i = 0; i < NWIN; i++)
		API_CHECK_OK(rmca_put(p->ep, buf + i * WSIZE, WSIZE, mr,
				      r.addr + (uint64_t)i * WSIZE, r.rkey,
				      RMCA_DELIVERED, API_CTX(2 + i)));
	asked = npidpoll;
	/* Nothing polled since: a caller that sleeps now still wakes. */
	API_CHECK_MSG(poll(&wfd, 1, API_TIMEOUT_MS) == 1,
		      "the wait fd slept on %d copied puts", NWIN);
	for (int i = 0; i < NWIN; i++)
		api_wait_status(p, API_CTX(2 + i), RMCA_OK);
	API_CHECK_MSG(asked == 0 && npidpoll <= 2,
		      "%d puts asked whether the peer lives %ld times while "
		      "posted, %ld in all",
		      NWIN, asked, npidpoll);
	API_CHECK_MSG(ncma == 0, "%ld process_vm_writev calls", ncma);
	api_token(p, 0, TOKEN_GO);
	api_expect_token(p, 0, TOKEN_GO);
}

/* A window of puts into the target's rmca_mem_alloc memory asks whether
 * the target still lives once, after the last copy, not once per put (a
 * system call each); each still completes RMCA_OK only after that
 * (test_kill9_mid_transfer_completes_each_op_once: not into a dead one). */
static void test_mapped_puts_ask_after_the_peer_once(void **state)
{
	struct api_test t = {.server = window_server,
			     .client = window_client,
			     .no_barrier = true};

	(void)state;
	mapped = true;
	api_run(&t);
	mapped = false;
}

/* ---- which transport serves a local peer ---- */

static void transport_is(struct api_peer *p)
{
	const char *want = p->arg;
	struct rmca_ep_attr a;

	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	API_CHECK_MSG(strcmp(a.transport, want) == 0,
		      "local peer served by \"%s\", expected \"%s\"",
		      a.transport, want);
	API_CHECK(a.peer_is_local);
}

/* Cross-memory attach refused by one side: still shm, through the rings
 * (test_rings_carry_everything_without_cma). */
static void undumpable_server(struct api_peer *p)
{
	API_CHECK(prctl(PR_SET_DUMPABLE, 0) == 0);
	api_server_listen(p, api_host());
	api_server_accept_all(p);
	transport_is(p);
}

static void manual_client(struct api_peer *p)
{
	api_client_connect(p, api_host());
	transport_is(p);
}

static void test_local_peer_transport_choice(void **state)
{
	struct api_test t = {.server = transport_is, .client = transport_is};

	(void)state;
	unsetenv("RMCA_transports");
	t.arg = "shm";
	api_run(&t);
	setenv("RMCA_transports", "^shm", 1);
	t.arg = "tcp";
	api_run(&t);
	unsetenv("RMCA_transports");
	t = (struct api_test){.server = undumpable_server,
			      .client = manual_client,
			      .manual = true,
			      .arg = "shm"};
	api_run(&t);
	setenv("RMCA_transports", "shm", 1);
}

/* ---- without cross-memory attach ---- */

#define RBIG (DBIG + 4099) /* pieces, and a last one that is not whole */

/* The kernel refuses to attach to this process: only the rings can
 * carry what arrives. */
static void rings_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(2 * RBIG), *msg = api_alloc(RBIG);
	rmca_mr_t *mr, *mm;

	API_CHECK(prctl(PR_SET_DUMPABLE, 0) == 0);
	api_server_listen(p, api_host());
	api_server_accept_all(p);
	transport_is(p);
	api_pattern(mem, RBIG, 21);
	API_CHECK_OK(rmca_mr_reg(
		p->ctx, mem, 2 * RBIG,
		RMCA_ACCESS_REMOTE_WRITE | RMCA_ACCESS_REMOTE_READ, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, RBIG, RMCA_ACCESS_LOCAL, &mm));
	API_CHECK_MSG(api_recv_wait(p, p->ep, msg, RBIG, mm) == RBIG,
		      "message of the wrong length");
	API_CHECK_MSG(api_pattern_check(msg, RBIG, 22) < 0,
		      "message differs at byte %ld",
		      api_pattern_check(msg, RBIG, 22));
	api_put_region(p, 0, mem, 2 * RBIG, mr, p->ep);
	api_expect_token(p, 0, TOKEN_GO);
	API_CHECK_MSG(api_pattern_check(mem + RBIG, RBIG, 23) < 0,
		      "put differs at byte %ld",
		      api_pattern_check(mem + RBIG, RBIG, 23));
	api_token(p, 0, TOKEN_GO);
}

static void rings_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(3 * RBIG);
	struct api_region r;
	rmca_mr_t *mr;

	api_client_connect(p, api_host());
	transport_is(p);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, 3 * RBIG, RMCA_ACCESS_LOCAL, &mr));
	api_pattern(buf, RBIG, 22);
	api_send_wait(p, p->ep, buf, RBIG, mr);
	api_get_region(p, 0, &r);
	api_pattern(buf + RBIG, RBIG, 23);
	API_CHECK_OK(
		API_POST(p, rmca_put(p->ep, buf + RBIG, RBIG, mr, r.addr + RBIG,
				     r.rkey, RMCA_DELIVERED, API_CTX(1))));
	API_CHECK_OK(API_POST(p, rmca_get(p->ep, buf + 2 * RBIG, RBIG, mr,
					  r.addr, r.rkey, API_CTX(2))));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	api_wait_status(p, API_CTX(2), RMCA_OK);
	API_CHECK_MSG(api_pattern_check(buf + 2 * RBIG, RBIG, 21) < 0,
		      "get differs at byte %ld",
		      api_pattern_check(buf + 2 * RBIG, RBIG, 21));
	api_token(p, 0, TOKEN_GO);
	api_expect_token(p, 0, TOKEN_GO);
}

static void test_rings_carry_everything_without_cma(void **state)
{
	const struct api_test t = {.server = rings_server,
				   .client = rings_client,
				   .manual = true,
				   .arg = "shm"};

	(void)state;
	api_run(&t);
}

/* ---- system calls of a spinning ping-pong ---- */

/* This program's own epoll_wait, send and recv come first in the lookup
 * scope (it is linked -rdynamic): librmca and rmca_shm.so call these,
 * which count while asked to, then the real ones. */
static bool counting;
static long ncalls, nby[3];

#define COUNTED(k, ret, name, params, args)                                    \
	ret name params                                                        \
	{                                                                      \
		static ret(*real) params;                                      \
                                                                               \
		if (!real)                                                     \
			real = (ret(*) params)dlsym(RTLD_NEXT, #name);         \
		ncalls += counting;                                            \
		nby[k] += counting;                                            \
		return real args;                                              \
	}

COUNTED(0, int, epoll_wait,
	(int epfd, struct epoll_event *ev, int max, int timeout),
	(epfd, ev, max, timeout))
COUNTED(1, ssize_t, send, (int fd, const void *buf, size_t len, int flags),
	(fd, buf, len, flags))
COUNTED(2, ssize_t, recv, (int fd, void *buf, size_t len, int flags),
	(fd, buf, len, flags))

#define PINGS  5000
#define WARMUP 10
/* Counted round trips stop after PINGS or this long, whichever first. */
#define PING_BUDGET_MS 2000

/* Spin on rmca_poll until user_ctx completed (seen[ctx] counts what
 * completed, ctx 1 and 2); counts the polls. A poll that found nothing
 * yields the CPU (sched_yield is not counted: it is this loop's, not
 * rmca's): on a loaded machine both sides may share one CPU, and a side
 * that spun on would hand the CPU to its peer only when the scheduler
 * preempts it, one message per time slice (10,020 of them, longer than
 * the run's time limit). */
static void spin_for(struct api_peer *p, int want, int seen[3], long *polls)
{
	struct rmca_completion c[4];
	long end = api_now_ms() + API_TIMEOUT_MS;

	while (!seen[want]) {
		int n = rmca_poll(p->ctx, c, 4);

		(*polls)++;
		API_CHECK_MSG(n >= 0, "rmca_poll: %d", n);
		if (!n)
			sched_yield();
		for (int i = 0; i < n; i++) {
			uintptr_t k = (uintptr_t)c[i].user_ctx;

			API_CHECK_RC(c[i].status, RMCA_OK);
			API_CHECK(k == 1 || k == 2);
			seen[k]++;
		}
		if (!(*polls & 0xffff))
			API_CHECK_MSG(api_now_ms() < end, "a ping was lost");
	}
	seen[want]--;
}

/* This process on the first CPU it may use: both sides then share it. */
static void first_cpu_only(void)
{
	cpu_set_t set, one;
	int cpu = 0;

	API_CHECK(sched_getaffinity(0, sizeof(set), &set) == 0);
	while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
		cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	API_CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
}

static void ping_side(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	long polls = 0, calls, t0 = 0, ms;
	int seen[3] = {0}, done = 0;
	bool last = false;
	rmca_mr_t *mr;

	if (p->arg)
		first_cpu_only();
	expect_shm(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	if (p->is_server)
		api_token(p, 0, TOKEN_GO);
	else
		api_expect_token(p, 0, TOKEN_GO);
	/* The first round trips tell the core that shm moves data without
	 * fds (before that it looks at them on every pass): not counted.
	 * Each round trip hands the CPU to the other side at least twice,
	 * which a loaded machine makes a time slice each: the client ends
	 * the counted ones after PINGS or PING_BUDGET_MS (its ping's first
	 * byte says which is the last), so that the run's time limit stays
	 * a hang detector. */
	for (int i = 0; !last; i++) {
		if (i == WARMUP) {
			t0 = api_now_ms();
			counting = true;
		}
		API_CHECK_OK(rmca_recv(p->ep, buf + 32, 8, mr, API_CTX(1)));
		if (!p->is_server) {
			last = i == PINGS + WARMUP - 1 ||
			       (i >= WARMUP &&
				api_now_ms() - t0 >= PING_BUDGET_MS);
			buf[0] = last;
			API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(2)));
		}
		spin_for(p, 1, seen, &polls);
		if (p->is_server) {
			last = buf[32];
			API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(2)));
		}
		spin_for(p, 2, seen, &polls);
		done += i >= WARMUP;
	}
	counting = false;
	calls = ncalls;
	ms = api_now_ms() - t0;
	/* One call per rmca_poll before; now at most one epoll_wait per
	 * millisecond, however many polls the scheduler let run in it, and
	 * the wakeup of the first message. */
	API_CHECK_MSG(calls <= ms + 8,
		      "%ld system calls (epoll_wait %ld, send %ld, recv %ld) "
		      "in %ld ms, %ld rmca_poll calls, %d round trips",
		      calls, nby[0], nby[1], nby[2], ms, polls, done);
	if (p->is_server)
		api_expect_token(p, 0, TOKEN_GO);
	else
		api_token(p, 0, TOKEN_GO);
}

static void ping_pong(bool one_cpu)
{
	static int one;
	const struct api_test t = {.server = ping_side,
				   .client = ping_side,
				   .no_barrier = true,
				   .arg = one_cpu ? &one : NULL};

	/* A side that idles arms itself, and its peer's next message then
	 * costs a wakeup: not in this test, whatever the machine's load. */
	setenv("RMCA_shm_idle_us", "1000000", 1);
	api_run(&t);
	unsetenv("RMCA_shm_idle_us");
}

static void test_spinning_ping_pong_makes_no_system_call(void **state)
{
	(void)state;
	ping_pong(false);
}

/* What a loaded machine does now and then for a while: both sides on one
 * CPU. The ping-pong ends within the run's time limit all the same. */
static void test_spinning_ping_pong_on_one_cpu(void **state)
{
	(void)state;
	ping_pong(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_kill9_mid_transfer_completes_each_op_once),
		cmocka_unit_test(test_use_once_key_serves_only_its_connection),
		cmocka_unit_test(test_local_peer_transport_choice),
		cmocka_unit_test(
			test_garbage_in_the_rings_ends_only_that_connection),
		cmocka_unit_test(test_big_put_and_get_need_no_target_core),
		cmocka_unit_test(test_mem_alloc_is_mapped_by_the_initiator),
		cmocka_unit_test(test_direct_access_is_refused_untouched),
		cmocka_unit_test(test_dereg_wins_against_racing_puts),
		cmocka_unit_test(test_mapped_puts_ask_after_the_peer_once),
		cmocka_unit_test(test_rings_carry_everything_without_cma),
		cmocka_unit_test(
			test_ring_laps_never_take_old_bytes_for_a_request),
		cmocka_unit_test(test_spinning_ping_pong_makes_no_system_call),
		cmocka_unit_test(test_spinning_ping_pong_on_one_cpu),
	};

	/* Local peers over shm, whatever the default priorities say. */
	setenv("RMCA_transports", "shm", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
