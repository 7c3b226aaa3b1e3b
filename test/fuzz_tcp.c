// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer target for what the tcp component reads from a peer: the frame
 * header decoder, and a whole byte stream arriving on a data connection of
 * a real module (the target of puts, gets, atomics and sends, and the
 * initiator of a get, a put, an atomic and two sends waiting for their
 * answers, counts and credits, and of a flush behind them), the test
 * playing its core. Every op posted completes exactly once, by the
 * connection's end at the latest. Regions sit between inaccessible pages,
 * so an access outside them faults even without ASan.
 *
 * Input: byte 0 holds flags (bit 0: the region is deregistered halfway
 * through the stream, and must not change after that); the rest is the
 * stream. Keys are predictable (the core's random source is a counter), so
 * the fuzzer can find them: see fuzz_tcp_seed() for well-formed frames.
 *
 * make check replays it (fuzz_tcp_replay, with fuzz_replay.c); libFuzzer
 * runs it under `make check-fuzz` (test/fuzz.am).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t rmca_fuzz_seed(unsigned i, uint8_t *buf, size_t cap);

#define FZ_REGION_ADDR 0x5a0000000000ull /* fixed, so inputs can name it */
#define FZ_REGION_LEN  65536
#define FZ_PAGE	       4096
#define FZ_MAX_FDS     8
#define FZ_ROUNDS      4096

struct fz_fd {
	int fd;
	uint32_t events;
	rmca_fd_cb cb;
	void *arg;
};

static struct fz_fd fds[FZ_MAX_FDS];
static uint64_t key_seed;
static struct tcp_module *mod;
static char *region;
static char *snapshot;
static char recv_buf[4][256];
static char get_buf[128];
static char put_src[64];
static char send_src[2][48];
static uint64_t atomic_result;
static struct tcp_conn *conn; /* the data connection under test */
static char put_tag, recv_tag;

/* The requests of the fake core: the tag each completion reports, and the
 * module's bytes (component.h, req_size). One per op posted below. */
struct fz_request {
	void *tag;
	unsigned done; /* completions reported: exactly one by the end */
	_Alignas(RMCA_REQ_ALIGN) char mine[RMCA_COMPONENT_REQ_MAX];
};
#define FZ_NREQS 10
static struct fz_request fz_reqs[FZ_NREQS];

static void *fz_req(int i, void *tag)
{
	fz_reqs[i].tag = tag;
	fz_reqs[i].done = 0;
	return &fz_reqs[i];
}

static void fz_log(const struct rmca_core *core, int level, const char *fmt,
		   ...)
{
}

static int fz_param_register(const struct rmca_core *core,
			     const struct rmca_param_def *def)
{
	return 0;
}

static bool fz_param_bool(const struct rmca_core *core, const char *name)
{
	return false;
}

static long long fz_param_int(const struct rmca_core *core, const char *name)
{
	return 0;
}

static size_t fz_param_size(const struct rmca_core *core, const char *name)
{
	return 0;
}

static const char *fz_param_string(const struct rmca_core *core,
				   const char *name)
{
	return "";
}

static int fz_param_enum(const struct rmca_core *core, const char *name)
{
	return 0;
}

static int fz_list_selects(const char *list, const char *name)
{
	return 1;
}

static int fz_fd_add(const struct rmca_core *core, int fd, uint32_t events,
		     rmca_fd_cb cb, void *arg)
{
	for (int i = 0; i < FZ_MAX_FDS; i++)
		if (!fds[i].cb) {
			fds[i] = (struct fz_fd){fd, events, cb, arg};
			return 0;
		}
	return RMCA_ERR_NO_MEMORY;
}

static int fz_fd_mod(const struct rmca_core *core, int fd, uint32_t events)
{
	for (int i = 0; i < FZ_MAX_FDS; i++)
		if (fds[i].cb && fds[i].fd == fd)
			fds[i].events = events;
	return 0;
}

static void fz_fd_del(const struct rmca_core *core, int fd)
{
	for (int i = 0; i < FZ_MAX_FDS; i++)
		if (fds[i].cb && fds[i].fd == fd)
			fds[i] = (struct fz_fd){.fd = -1};
}

/* Whatever the peer says, the target's put ends RMCA_OK only once it is on
 * the wire whole, and a receive never reports more than its buffer. */
static void fz_complete(const struct rmca_core *core, void *request, int status,
			size_t len, uint64_t revoked)
{
	struct fz_request *r = request;
	void *req = r->tag;

	/* a request of this input's, completed once */
	if (r < fz_reqs || r >= fz_reqs + FZ_NREQS || r->done++)
		__builtin_trap();
	if (req == &put_tag && !status && conn && !conn->by_count_out)
		__builtin_trap();
	if (req == &recv_tag && len > sizeof(recv_buf[0]))
		__builtin_trap();
}

static void fz_conn_failed(const struct rmca_core *core, void *cookie,
			   int status)
{
}

/* Keys 0x0101..01 * n: a fuzzer finds them by comparison tracing. */
static int fz_random(void *buf, size_t len)
{
	uint8_t *p = buf;

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
	.list_selects = fz_list_selects,
	.log = fz_log,
	.param_bool = fz_param_bool,
	.param_enum = fz_param_enum,
	.param_int = fz_param_int,
	.param_register = fz_param_register,
	.param_size = fz_param_size,
	.param_string = fz_param_string,
	.random = fz_random,
};

static const struct rmca_core fz_core = {
	.ops = &fz_ops,
	.req_offset = offsetof(struct fz_request, mine),
};

static bool pump(void)
{
	bool any = false;

	for (int i = 0; i < FZ_MAX_FDS; i++) {
		struct pollfd p = {.fd = fds[i].fd,
				   .events = (short)fds[i].events};

		if (!fds[i].cb || fds[i].fd < 0 || poll(&p, 1, 0) <= 0)
			continue;
		fds[i].cb(fds[i].arg, (uint32_t)p.revents);
		any = true;
	}
	return any;
}

/* The peer reads and drops what the target sends; false at its end. */
static bool drain(int peer)
{
	char buf[4096];
	ssize_t n;

	while ((n = recv(peer, buf, sizeof(buf), 0)) > 0)
		;
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static void feed(int peer, const uint8_t *p, size_t len)
{
	for (int round = 0; len && round < FZ_ROUNDS; round++) {
		ssize_t n = send(peer, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			return; /* the target closed */
		}
		pump();
		if (!drain(peer))
			return;
	}
}

static struct rmca_module_mr *region_reg(void)
{
	struct rmca_module_mr *mr = NULL;

	key_seed = 0x10; /* non-use-once key 0x1111111111111111 & ~bit 63 */
	if (rmca_tcp_mr_reg(&mod->base, region, FZ_REGION_LEN,
			    RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE |
				    RMCA_ACCESS_REMOTE_ATOMIC,
			    &mr))
		__builtin_trap();
	return mr;
}

static void setup(void)
{
	char *map;

	for (int i = 0; i < FZ_MAX_FDS; i++)
		fds[i].fd = -1;
	if (rmca_tcp_module_create(&fz_core, "lo", &mod))
		__builtin_trap();
	/* guard page, region, guard page */
	map = mmap((void *)(uintptr_t)(FZ_REGION_ADDR - FZ_PAGE),
		   FZ_REGION_LEN + 2 * FZ_PAGE, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (map == MAP_FAILED)
		__builtin_trap();
	region = map + FZ_PAGE;
	if (mprotect(region, FZ_REGION_LEN, PROT_READ | PROT_WRITE))
		__builtin_trap();
	snapshot = malloc(FZ_REGION_LEN);
	if (!snapshot)
		__builtin_trap();
}

/* What decodes encodes back to the same bytes, and is within bounds. */
static void check_decoder(const uint8_t *data, size_t size)
{
	uint8_t out[TCP_HDR_LEN];
	struct tcp_frame f;
	const char *why;

	if (rmca_tcp_frame_decode(data, size, &f, &why))
		return;
	if (size < TCP_HDR_LEN || f.type == 0 || f.type >= TCP_F_MAX ||
	    f.len > TCP_MAX_PAYLOAD)
		__builtin_trap();
	rmca_tcp_frame_encode(&f, out);
	if (memcmp(out, data, TCP_HDR_LEN))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rmca_module_mr *mr, *once;
	struct tcp_conn *c;
	bool dereg_mid;
	size_t half;
	int sv[2];

	check_decoder(data, size);
	if (!mod)
		setup();
	if (!size)
		return 0;
	dereg_mid = data[0] & 1;
	data++;
	size--;

	mr = region_reg();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sv))
		__builtin_trap();
	if (rmca_tcp_conn_create(mod, sv[0], NULL, &c))
		__builtin_trap();
	conn = c;
	/* A use-once region bound to c: key 0xa222..22 */
	key_seed = 0x21;
	if (rmca_tcp_mr_reg(&mod->base, region + FZ_REGION_LEN / 2, 64,
			    RMCA_ACCESS_REMOTE_WRITE | RMCA_MR_USE_ONCE,
			    &once) ||
	    !rmca_tcp_mr_rkey(once, &c->base))
		__builtin_trap();
	/* The target also waits for answers (ids 1, 2) and has receives. */
	if (rmca_tcp_get(&c->base, get_buf, sizeof(get_buf), NULL, 0x1000,
			 0x2222, fz_req(0, NULL)) ||
	    rmca_tcp_put(&c->base, put_src, sizeof(put_src), NULL, 0x1000,
			 0x2222, fz_req(1, &put_tag)))
		__builtin_trap();
	for (int i = 0; i < 4; i++)
		if (rmca_tcp_recv(&c->base, recv_buf[i], sizeof(recv_buf[i]),
				  NULL, fz_req(2 + i, &recv_tag)))
			__builtin_trap();
	/* And is the initiator of an atomic (id 7), two sends that wait for
	 * the peer's credits (ids 8, 9) and a flush behind them all: what
	 * the peer's counts, credits and answers end, each once. */
	if (rmca_tcp_atomic(&c->base,
			    &(struct rmca_atomic){.kind = RMCA_ATOMIC_FADD,
						  .raddr = 0x1008,
						  .rkey = 0x2222,
						  .operand = 1},
			    &atomic_result, NULL, fz_req(6, NULL)) ||
	    rmca_tcp_send(&c->base, send_src[0], sizeof(send_src[0]), NULL,
			  fz_req(7, NULL)) ||
	    rmca_tcp_send(&c->base, send_src[1], sizeof(send_src[1]), NULL,
			  fz_req(8, NULL)) ||
	    rmca_tcp_flush(&c->base, fz_req(9, NULL)))
		__builtin_trap();

	half = dereg_mid ? size / 2 : size;
	feed(sv[1], data, half);
	if (dereg_mid) {
		rmca_tcp_mr_dereg(mr);
		mr = NULL;
		memcpy(snapshot, region, FZ_REGION_LEN);
		feed(sv[1], data + half, size - half);
	}
	shutdown(sv[1], SHUT_WR);
	for (int round = 0; round < FZ_ROUNDS && c->fd >= 0; round++) {
		bool any = pump();

		if (!drain(sv[1]) || !any)
			break;
	}
	/* Nothing written after mr_dereg returned (but in the use-once
	 * region inside it, still registered). */
	if (dereg_mid &&
	    (memcmp(snapshot, region, FZ_REGION_LEN / 2) ||
	     memcmp(snapshot + FZ_REGION_LEN / 2 + 64,
		    region + FZ_REGION_LEN / 2 + 64, FZ_REGION_LEN / 2 - 64)))
		__builtin_trap();

	rmca_tcp_conn_destroy(c);
	conn = NULL;
	/* Every op posted completed exactly once, CANCELED at the latest. */
	for (int i = 0; i < FZ_NREQS; i++)
		if (fz_reqs[i].done != 1)
			__builtin_trap();
	close(sv[1]);
	rmca_tcp_mr_dereg(once);
	if (mr)
		rmca_tcp_mr_dereg(mr);
	memset(region, 0, FZ_REGION_LEN);
	return 0;
}

static void seed_frame(uint8_t **p, const struct tcp_frame *f, size_t payload)
{
	rmca_tcp_frame_encode(f, *p);
	*p += TCP_HDR_LEN;
	memset(*p, 0x6b, payload);
	*p += payload;
}

/* Well-formed streams to start from: one of each request; then the
 * answers to the target's own get, put (by the count), atomic and sends
 * (by the count, with credits), one send refused; then counts that go
 * beyond what was sent, or backwards. */
size_t rmca_fuzz_seed(unsigned i, uint8_t *buf, size_t cap)
{
	const uint64_t key = 0x1111111111111111ull, base = FZ_REGION_ADDR;
	uint8_t *p = buf;

	if (i >= 6 || cap < 1 + 12 * (TCP_HDR_LEN + 64) + sizeof(get_buf))
		return 0;
	*p++ = (uint8_t)(i & 1);
	seed_frame(&p,
		   &(struct tcp_frame){.type = TCP_F_PUT,
				       .id = 1,
				       .len = 64,
				       .raddr = base + 8,
				       .rkey = key},
		   64);
	seed_frame(&p,
		   &(struct tcp_frame){.type = TCP_F_GET,
				       .id = 2,
				       .len = 32,
				       .raddr = base,
				       .rkey = key},
		   0);
	seed_frame(&p,
		   &(struct tcp_frame){.type = TCP_F_ATOMIC,
				       .akind = RMCA_ATOMIC_CSWAP,
				       .id = 3,
				       .len = 8,
				       .raddr = base + 16,
				       .rkey = key,
				       .operand = 5,
				       .compare = 0},
		   0);
	seed_frame(&p,
		   &(struct tcp_frame){.type = TCP_F_SEND,
				       .flags = TCP_FF_INV,
				       .id = 4,
				       .len = 16,
				       .rkey = 0xa222222222222222ull},
		   16);
	if (i >= 2) {
		seed_frame(&p,
			   &(struct tcp_frame){.type = TCP_F_RESP,
					       .id = 1,
					       .len = sizeof(get_buf)},
			   sizeof(get_buf));
		seed_frame(&p,
			   &(struct tcp_frame){
				   .type = TCP_F_ACK, .acked = 1, .credits = 1},
			   0);
		/* the atomic's answer; the first send acknowledged, a
		 * credit for the second, which is refused in seed 3 */
		seed_frame(&p,
			   &(struct tcp_frame){
				   .type = TCP_F_RESP, .id = 7, .operand = 41},
			   0);
		seed_frame(&p,
			   &(struct tcp_frame){
				   .type = TCP_F_ACK, .acked = 2, .credits = 2},
			   0);
		if (i == 3)
			seed_frame(&p,
				   &(struct tcp_frame){
					   .type = TCP_F_RESP,
					   .id = 9,
					   .status = RMCA_ERR_TRUNCATED},
				   0);
	}
	if (i >= 4)
		seed_frame(&p,
			   &(struct tcp_frame){.type = TCP_F_ACK,
					       .acked = i == 4 ? 2 : 0,
					       .credits = i == 4 ? 1 : 0},
			   0);
	return (size_t)(p - buf);
}
