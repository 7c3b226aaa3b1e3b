/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Established tcp connections under attack from a peer that made its
 * endpoint by hand (the bootstrap hello, then the data port's frames) and
 * then lies, stalls or leaves. Each case checks what the listener's side
 * promises: the lie ends that one connection with a logged reason, every
 * operation posted on it completes exactly once with a precise status, and
 * a real client is served afterwards by the same listener.
 * - on the data connection: an answer to no request, a second hello, a
 *   length past the limit, an unknown frame type, a status no answer may
 *   carry, more credits than receives, a header of each type of the data
 *   path (ACK, SEND, PUT, GET, ATOMIC, RESP) that breaks its type's rules
 *   (each type is decoded and acted on by its own copy of the checks), a
 *   header cut short and a message cut short by the peer leaving;
 * - on the data connection, puts, gets and atomics outside the region
 *   their key names (past its end, before it, wrapping, longer than it,
 *   misaligned, under a key that names nothing): each is refused with an
 *   answer, ends that connection, and leaves the region untouched;
 * - a peer that never reads: what can be queued for it is bounded
 *   (RMCA_ERR_AGAIN), rmca_poll keeps returning, other peers are served,
 *   and closing the endpoint ends each queued send once;
 * - on the control channel (the bootstrap socket, once the endpoint is
 *   made): atomics the core executes for the peer at misaligned, outside,
 *   wrapping or unknown addresses are refused without touching memory, and
 *   an answer to a request never made closes that channel;
 * - at the bootstrap listener, hello lengths of 0, one past the limit and
 *   the limit itself (of garbage), and as many silent or one-byte
 *   connections as RMCA_handshake_max: each is closed, and a real client
 *   that comes while they hold every slot is served (the oldest of them
 *   gives way to it, the others go at RMCA_connect_timeout).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "attack_util.h"
#include "ctrl.h"
#include "tcp.h" /* frame.h, TCP_MAX_OPS */

#define ATOMIC_CPU 2 /* RMCA_atomic_mode=cpu, set for both sides below */
#define REGION	   4096

/* An endpoint made by hand: *bfd is the bootstrap socket (the control
 * channel from now on), the data connection is returned. */
static int hand_made(int port, uint64_t token, int *bfd)
{
	struct rmca_hello answer;
	int c;

	*bfd = atk_connect(api_host(), port);
	API_CHECK(
		!atk_hello(*bfd, token, RMCA_ROLE_ACTIVE, ATOMIC_CPU, &answer));
	c = atk_connect(api_host(), atk_data_port(&answer));
	atk_frame_hello(c, token);
	atk_frame_ack(c, token);
	return c;
}

/* ---- lies on the data connection ---- */

enum lie {
	LIE_ORPHAN_RESP,  /* an answer to a request never made */
	LIE_SECOND_HELLO, /* a hello on an established connection */
	LIE_HUGE_LEN,	  /* a SEND past TCP_MAX_PAYLOAD */
	LIE_UNKNOWN_TYPE, /* a frame type that does not exist */
	LIE_RESP_STATUS,  /* an answer's status no answer may carry */
	LIE_CREDITS,	  /* more receives granted than a peer may have */
	LIE_ACK_ID,	  /* an ACK with an id */
	LIE_SEND_KEY,	  /* a SEND's key without its flag */
	LIE_RESERVED_SET, /* a SEND with the reserved byte set */
	LIE_PUT_OPERAND,  /* a PUT with an operand */
	LIE_GET_MASK,	  /* a GET with a mask */
	LIE_ATOMIC_KIND,  /* an ATOMIC of a kind that does not exist */
	LIE_RESP_COMPARE, /* an answer with a compare word */
	LIE_CUT_HEADER,	  /* half a header, then gone */
	LIE_CUT_MESSAGE,  /* a message's first bytes, then gone */
	LIE_MAX,
};

/* What the receive posted on the lying peer's endpoint ends with. */
static int lie_status(enum lie l)
{
	return l == LIE_CUT_HEADER || l == LIE_CUT_MESSAGE ? RMCA_ERR_CONNECTION
							   : RMCA_ERR_PROTOCOL;
}

static void lie_tell(int c, enum lie l)
{
	struct tcp_frame f = {0};
	uint8_t buf[TCP_HDR_LEN];

	switch (l) {
	case LIE_ORPHAN_RESP:
		f = (struct tcp_frame){.type = TCP_F_RESP, .id = 77};
		atk_frame_write(c, &f);
		return;
	case LIE_SECOND_HELLO:
		atk_frame_hello(c, 0x5ec0d);
		return;
	case LIE_HUGE_LEN:
		f = (struct tcp_frame){.type = TCP_F_SEND,
				       .id = 1,
				       .len = TCP_MAX_PAYLOAD + 1};
		atk_frame_write(c, &f);
		return;
	case LIE_UNKNOWN_TYPE:
		f = (struct tcp_frame){.type = TCP_F_ACK};
		rmca_tcp_frame_encode(&f, buf);
		buf[0] = 99;
		atk_write(c, buf, sizeof(buf));
		return;
	case LIE_RESP_STATUS:
		f = (struct tcp_frame){.type = TCP_F_RESP,
				       .id = 1,
				       .status = RMCA_ERR_CONNECTION};
		atk_frame_write(c, &f);
		return;
	case LIE_CREDITS:
		atk_frame_counts(c, 0, TCP_MAX_OPS + 1);
		return;
	case LIE_ACK_ID:
		f = (struct tcp_frame){.type = TCP_F_ACK, .id = 5};
		atk_frame_write(c, &f);
		return;
	case LIE_SEND_KEY:
		f = (struct tcp_frame){
			.type = TCP_F_SEND, .id = 1, .len = 8, .rkey = 0x77};
		atk_frame_write(c, &f);
		atk_write(c, "01234567", 8);
		return;
	case LIE_RESERVED_SET:
		f = (struct tcp_frame){.type = TCP_F_SEND, .id = 1, .len = 8};
		rmca_tcp_frame_encode(&f, buf);
		buf[3] = 1;
		atk_write(c, buf, sizeof(buf));
		atk_write(c, "01234567", 8);
		return;
	case LIE_PUT_OPERAND:
		f = (struct tcp_frame){.type = TCP_F_PUT,
				       .id = 1,
				       .len = 8,
				       .raddr = 0x1000,
				       .rkey = 0x77,
				       .operand = 1};
		atk_frame_write(c, &f);
		atk_write(c, "01234567", 8);
		return;
	case LIE_GET_MASK:
		f = (struct tcp_frame){.type = TCP_F_GET,
				       .id = 1,
				       .len = 8,
				       .raddr = 0x1000,
				       .rkey = 0x77,
				       .mask1 = 1};
		atk_frame_write(c, &f);
		return;
	case LIE_ATOMIC_KIND:
		f = (struct tcp_frame){.type = TCP_F_ATOMIC,
				       .akind = 9,
				       .id = 1,
				       .len = 8,
				       .raddr = 0x1000,
				       .rkey = 0x77,
				       .operand = 1};
		atk_frame_write(c, &f);
		return;
	case LIE_RESP_COMPARE:
		f = (struct tcp_frame){
			.type = TCP_F_RESP, .id = 1, .compare = 1};
		atk_frame_write(c, &f);
		return;
	case LIE_CUT_HEADER:
		f = (struct tcp_frame){.type = TCP_F_SEND, .id = 1, .len = 8};
		rmca_tcp_frame_encode(&f, buf);
		atk_write(c, buf, TCP_HDR_LEN / 2);
		return;
	case LIE_CUT_MESSAGE:
		f = (struct tcp_frame){
			.type = TCP_F_SEND, .id = 1, .len = 1000};
		atk_frame_write(c, &f);
		atk_write(c, "0123456789", 10);
		return;
	case LIE_MAX:
		break;
	}
}

static void liar(struct api_peer *p)
{
	int port = api_client_read_port(p);

	for (int l = 0; l < LIE_MAX; l++) {
		int bfd, c = hand_made(port, 0x11e0000 + (uint64_t)l, &bfd);

		(void)api_get_u64(p, 0); /* its receive is posted */
		lie_tell(c, (enum lie)l);
		if (lie_status((enum lie)l) == RMCA_ERR_PROTOCOL)
			API_CHECK_MSG(atk_closed(c, API_TIMEOUT_MS),
				      "lie %d: the data connection stayed "
				      "open",
				      l);
		close(c);
		(void)api_get_u64(p, 0); /* its endpoint checked */
		close(bfd);
	}
	atk_real_client(p, port, NULL);
}

static void lied_to(struct api_peer *p)
{
	static char buf[4096];
	struct rmca_completion c;
	rmca_mr_t *mr;

	api_server_listen(p, api_host());
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, sizeof(buf), RMCA_ACCESS_LOCAL, &mr));
	for (int l = 0; l < LIE_MAX; l++) {
		void *ctx = API_CTX(0x11e0 + l);
		rmca_ep_t *ep = NULL;

		API_CHECK_OK(rmca_accept(p->l, API_TIMEOUT_MS, &ep));
		API_CHECK_OK(rmca_recv(ep, buf, sizeof(buf), mr, ctx));
		api_put_u64(p, 0, 1);
		api_wait(p, ctx, &c);
		API_CHECK_MSG(c.status == lie_status((enum lie)l),
			      "lie %d: the receive ended %d (%s), not %d", l,
			      c.status, api_strerror(c.status),
			      lie_status((enum lie)l));
		API_CHECK_MSG(c.op == RMCA_OP_RECV && c.ep == ep,
			      "lie %d: not the receive's completion", l);
		rmca_ep_close(ep);
		api_progress_for(p, 20);
		API_CHECK_MSG(!api_take(ctx, &c), "lie %d: a second completion",
			      l);
		api_put_u64(p, 0, 2);
	}
	atk_serve_real(p, 0);
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void test_lies_end_only_their_connection(void **state)
{
	char path[] = "/tmp/rmca-tcp-lies-XXXXXX";
	const struct api_test t = {.server = lied_to,
				   .client = liar,
				   .manual = true,
				   .server_stderr = path};
	static const char *const said[] = {
		"answer to no outstanding request",
		"hello on an established connection",
		"length too large",
		"unknown frame type",
		"unknown response status",
		"more credits than receives",
		"field not used by this frame type is set",
		"SEND key without invalidate flag (or reverse)",
		"reserved byte set",
		"unknown atomic kind",
	};
	char log[65536];
	ssize_t n;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	api_run(&t);
	fd = open(path, 0);
	assert_true(fd >= 0);
	n = read(fd, log, sizeof(log) - 1);
	close(fd);
	unlink(path);
	log[n > 0 ? n : 0] = '\0';
	for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++)
		if (!strstr(log, said[i]))
			fail_msg("the server did not say \"%s\": %s", said[i],
				 log);
}

/* ---- accesses outside the region ---- */

enum reach {
	REACH_PUT_PAST_END,
	REACH_PUT_BEFORE,
	REACH_PUT_TOO_LONG,
	REACH_PUT_WRAPS,
	REACH_PUT_NO_KEY,
	REACH_GET_PAST_END,
	REACH_ATOMIC_MISALIGNED,
	REACH_ATOMIC_PAST_END,
	REACH_MAX,
};

static void reach_out(int c, enum reach k, const struct api_region *r)
{
	static uint8_t junk[REGION + 8];
	struct tcp_frame f = {.type = TCP_F_PUT, .id = 1, .rkey = r->rkey};

	memset(junk, 0xee, sizeof(junk));
	switch (k) {
	case REACH_PUT_PAST_END:
		f.raddr = r->addr + r->len - 4;
		f.len = 8;
		break;
	case REACH_PUT_BEFORE:
		f.raddr = r->addr - 8;
		f.len = 8;
		break;
	case REACH_PUT_TOO_LONG:
		f.raddr = r->addr;
		f.len = r->len + 1;
		break;
	case REACH_PUT_WRAPS:
		f.raddr = UINT64_MAX - 3;
		f.len = 8;
		break;
	case REACH_PUT_NO_KEY:
		f.raddr = r->addr;
		f.rkey = r->rkey ^ 1;
		f.len = 8;
		break;
	case REACH_GET_PAST_END:
		f.type = TCP_F_GET;
		f.raddr = r->addr + r->len;
		f.len = 1;
		break;
	case REACH_ATOMIC_MISALIGNED:
	case REACH_ATOMIC_PAST_END:
		f.type = TCP_F_ATOMIC;
		f.akind = RMCA_ATOMIC_FADD;
		f.raddr = k == REACH_ATOMIC_MISALIGNED ? r->addr + 4
						       : r->addr + r->len;
		f.len = 8;
		f.operand = 1;
		break;
	case REACH_MAX:
		break;
	}
	atk_frame_write(c, &f);
	if (f.type == TCP_F_PUT)
		atk_write(c, junk, (size_t)f.len);
}

/* The refusal comes (after whatever counts the server sends first). */
static void refusal_read(int c, enum reach k)
{
	uint8_t hdr[TCP_HDR_LEN];
	struct tcp_frame f;
	const char *why;

	do {
		API_CHECK_MSG(!atk_read(c, hdr, sizeof(hdr)),
			      "access %d: closed without a refusal", k);
		API_CHECK_MSG(
			!rmca_tcp_frame_decode(hdr, sizeof(hdr), &f, &why),
			"access %d: %s", k, why);
	} while (f.type == TCP_F_ACK);
	API_CHECK_MSG(f.type == TCP_F_RESP && f.id == 1 &&
			      f.status == RMCA_ERR_REMOTE_ACCESS,
		      "access %d: %s frame, status %d", k,
		      rmca_tcp_frame_name(f.type), f.status);
}

static void reacher(struct api_peer *p)
{
	int port = api_client_read_port(p);

	for (int k = 0; k < REACH_MAX; k++) {
		int bfd, c = hand_made(port, 0x2eac0000 + (uint64_t)k, &bfd);
		struct api_region r;

		api_get_region(p, 0, &r);
		reach_out(c, (enum reach)k, &r);
		refusal_read(c, (enum reach)k);
		API_CHECK_MSG(atk_closed(c, API_TIMEOUT_MS),
			      "access %d: the connection stayed open", k);
		close(c);
		(void)api_get_u64(p, 0); /* the region checked */
		close(bfd);
	}
	atk_real_client(p, port, NULL);
}

static void reached(struct api_peer *p)
{
	uint8_t *w = api_alloc(REGION);
	static char buf[64];
	struct rmca_completion c;
	rmca_mr_t *mr, *rmr;

	api_server_listen(p, api_host());
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	memset(w, 1, REGION);
	API_CHECK_OK(rmca_mr_reg(p->ctx, w, REGION,
				 RMCA_ACCESS_REMOTE_READ |
					 RMCA_ACCESS_REMOTE_WRITE |
					 RMCA_ACCESS_REMOTE_ATOMIC,
				 &mr));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, sizeof(buf), RMCA_ACCESS_LOCAL, &rmr));
	for (int k = 0; k < REACH_MAX; k++) {
		void *ctx = API_CTX(0x2eac + k);
		rmca_ep_t *ep = NULL;

		API_CHECK_OK(rmca_accept(p->l, API_TIMEOUT_MS, &ep));
		API_CHECK_OK(rmca_recv(ep, buf, sizeof(buf), rmr, ctx));
		api_put_region(p, 0, w, REGION, mr, ep);
		api_wait(p, ctx, &c);
		API_CHECK_MSG(c.status == RMCA_ERR_CONNECTION,
			      "access %d: the receive ended %s", k,
			      api_strerror(c.status));
		for (size_t i = 0; i < REGION; i++)
			API_CHECK_MSG(w[i] == 1,
				      "access %d: byte %zu is now 0x%02x", k, i,
				      w[i]);
		rmca_ep_close(ep);
		api_put_u64(p, 0, 1);
	}
	atk_serve_real(p, 0);
	API_CHECK_OK(rmca_mr_dereg(rmr));
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(w);
}

static void test_out_of_region_access_is_refused_untouched(void **state)
{
	const struct api_test t = {
		.server = reached, .client = reacher, .manual = true};

	(void)state;
	api_run(&t);
}

/* ---- a peer that never reads ---- */

#define STALL_LEN   65536
#define STALL_POSTS 100000 /* far more than any bound */
#define STALL_CTX   0x5a000000

static void never_reads(struct api_peer *p)
{
	int port = api_client_read_port(p);
	int bfd, c = hand_made(port, 0x57a11, &bfd);

	/* As many receives as a peer may have: sends may go. */
	atk_frame_counts(c, 0, TCP_MAX_OPS);
	api_put_u64(p, 0, 1);
	(void)api_get_u64(p, 0); /* the server is stuck posting */
	atk_real_client(p, port, NULL);
	(void)api_get_u64(p, 0); /* its endpoint closed and checked */
	close(c);
	close(bfd);
}

static void stuck_server(struct api_peer *p)
{
	static unsigned char seen[STALL_POSTS];
	char *buf = api_alloc(STALL_LEN);
	struct rmca_completion c[64];
	int posted = 0, again = 0, done = 0;
	rmca_ep_t *ep = NULL;
	rmca_mr_t *mr;
	long end;

	api_server_listen(p, api_host());
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, STALL_LEN, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_accept(p->l, API_TIMEOUT_MS, &ep));
	(void)api_get_u64(p, 0); /* its credits are sent */
	/* Post until the endpoint says no more, polling between refusals:
	 * each rmca_poll returns though nothing can move. */
	while (posted < STALL_POSTS && again < 100) {
		int rc = rmca_send(ep, buf, STALL_LEN, mr,
				   API_CTX(STALL_CTX + posted));

		if (rc == RMCA_ERR_AGAIN) {
			again++;
			API_CHECK(rmca_poll(p->ctx, c, 64) == 0);
			continue;
		}
		API_CHECK_MSG(!rc, "send %d: %s", posted, api_strerror(rc));
		posted++;
		again = 0;
	}
	API_CHECK_MSG(posted < STALL_POSTS,
		      "%d sends queued for a peer that never reads", posted);
	fprintf(stderr, "# %d sends of %d bytes queued, then RMCA_ERR_AGAIN\n",
		posted, STALL_LEN);
	/* The listener serves others meanwhile. */
	api_put_u64(p, 0, 2);
	atk_serve_real(p, 0);
	rmca_ep_close(ep);
	end = api_now_ms() + API_TIMEOUT_MS;
	while (done < posted && api_now_ms() < end) {
		int k = rmca_poll(p->ctx, c, 64);

		for (int i = 0; i < k; i++) {
			uintptr_t x = (uintptr_t)c[i].user_ctx - STALL_CTX;

			API_CHECK_MSG(x < (uintptr_t)posted && !seen[x],
				      "completion %zu unknown or twice",
				      (size_t)x);
			API_CHECK_MSG(c[i].status == RMCA_ERR_CANCELED ||
					      c[i].status == RMCA_OK,
				      "send %zu ended %s", (size_t)x,
				      api_strerror(c[i].status));
			seen[x] = 1;
			done++;
		}
	}
	API_CHECK_MSG(done == posted, "%d of %d sends completed", done, posted);
	api_progress_for(p, 20);
	API_CHECK(rmca_poll(p->ctx, c, 64) == 0);
	api_put_u64(p, 0, 3);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void test_peer_that_never_reads_is_bounded(void **state)
{
	const struct api_test t = {
		.server = stuck_server, .client = never_reads, .manual = true};

	(void)state;
	api_run(&t);
}

/* ---- the control channel ---- */

static void ctrl_write(int fd, const struct rmca_ctrl_msg *m)
{
	uint8_t buf[4 + RMCA_CTRL_MAX];
	int n = rmca_ctrl_encode(m, buf, sizeof(buf));

	API_CHECK(n > 0);
	atk_write(fd, buf, (size_t)n);
}

static void ctrl_read(int fd, struct rmca_ctrl_msg *m)
{
	uint8_t buf[RMCA_CTRL_MAX];
	char why[128];
	uint32_t n;

	API_CHECK_MSG(!atk_read(fd, buf, 4), "no answer on the channel");
	n = buf[0] | buf[1] << 8 | buf[2] << 16 | (uint32_t)buf[3] << 24;
	API_CHECK(n >= 1 && n <= RMCA_CTRL_MAX);
	API_CHECK(!atk_read(fd, buf, n));
	API_CHECK_MSG(!rmca_ctrl_decode(buf, n, m, why, sizeof(why)), "%s",
		      why);
}

static void ctrl_liar(struct api_peer *p)
{
	int port = api_client_read_port(p);
	int bfd, c = hand_made(port, 0xc7a1, &bfd);
	struct api_region r;
	struct rmca_ctrl_msg m, a;
	struct {
		uint64_t raddr, rkey;
	} bad[7];

	api_get_region(p, 0, &r);
	bad[0].raddr = r.addr + 1; /* misaligned */
	bad[1].raddr = r.addr + 4;
	bad[2].raddr = r.addr - 8;     /* before */
	bad[3].raddr = r.addr + r.len; /* just past the end */
	bad[4].raddr = r.addr + r.len - 8 + (1ull << 63); /* far out */
	bad[5].raddr = UINT64_MAX - 7;			  /* wraps */
	bad[6].raddr = r.addr;				  /* an unknown key */
	for (int i = 0; i < 7; i++)
		bad[i].rkey = i == 6 ? r.rkey ^ 0x10000 : r.rkey;
	for (int i = 0; i < 7; i++) {
		m = (struct rmca_ctrl_msg){.type = RMCA_CTRL_ATOMIC_REQ,
					   .id = 100 + (uint64_t)i};
		m.op.kind = RMCA_ATOMIC_FADD;
		m.op.raddr = bad[i].raddr;
		m.op.rkey = bad[i].rkey;
		m.op.operand = 1;
		ctrl_write(bfd, &m);
		ctrl_read(bfd, &a);
		API_CHECK_MSG(a.type == RMCA_CTRL_ATOMIC_RESP && a.id == m.id &&
				      a.status == RMCA_ERR_REMOTE_ACCESS,
			      "atomic %d: answer %u id %llu status %d", i,
			      a.type, (unsigned long long)a.id, a.status);
	}
	/* The one good one: the first word gets 5, its old value comes. */
	m = (struct rmca_ctrl_msg){.type = RMCA_CTRL_ATOMIC_REQ, .id = 200};
	m.op.kind = RMCA_ATOMIC_FADD;
	m.op.raddr = r.addr;
	m.op.rkey = r.rkey;
	m.op.operand = 5;
	ctrl_write(bfd, &m);
	ctrl_read(bfd, &a);
	API_CHECK_MSG(a.type == RMCA_CTRL_ATOMIC_RESP && a.id == 200 &&
			      a.status == RMCA_OK &&
			      a.old == 0x0101010101010101ull,
		      "the good atomic: status %d old %llx", a.status,
		      (unsigned long long)a.old);
	api_put_u64(p, 0, 1);
	(void)api_get_u64(p, 0); /* the region checked */
	/* An answer to nothing asked: the channel closes. */
	m = (struct rmca_ctrl_msg){.type = RMCA_CTRL_VERIFY_RESP, .id = 999};
	ctrl_write(bfd, &m);
	API_CHECK_MSG(atk_closed(bfd, API_TIMEOUT_MS),
		      "the control channel stayed open after a lie");
	close(bfd);
	close(c);
	atk_real_client(p, port, NULL);
}

static void ctrl_target(struct api_peer *p)
{
	uint64_t *w = api_alloc(REGION);
	rmca_ep_t *ep = NULL;
	rmca_mr_t *mr;

	api_server_listen(p, api_host());
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	memset(w, 1, REGION);
	API_CHECK_OK(rmca_mr_reg(p->ctx, w, REGION,
				 RMCA_ACCESS_REMOTE_ATOMIC |
					 RMCA_ACCESS_REMOTE_READ |
					 RMCA_ACCESS_REMOTE_WRITE,
				 &mr));
	API_CHECK_OK(rmca_accept(p->l, API_TIMEOUT_MS, &ep));
	api_put_region(p, 0, w, REGION, mr, ep);
	(void)api_get_u64(p, 0); /* its atomics are done */
	API_CHECK_MSG(w[0] == 0x0101010101010101ull + 5, "first word %llx",
		      (unsigned long long)w[0]);
	for (size_t i = 1; i < REGION / 8; i++)
		API_CHECK_MSG(w[i] == 0x0101010101010101ull,
			      "word %zu changed to %llx", i,
			      (unsigned long long)w[i]);
	api_put_u64(p, 0, 2);
	atk_serve_real(p, 0);
	rmca_ep_close(ep);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(w);
}

static void test_control_channel_lies_are_refused(void **state)
{
	const struct api_test t = {
		.server = ctrl_target, .client = ctrl_liar, .manual = true};

	(void)state;
	api_run(&t);
}

/* ---- the bootstrap listener ---- */

#define HOLD 4 /* RMCA_handshake_max below */

/* A hello length prefix of n, then n bytes of garbage: closed. */
static void hello_of(int port, uint32_t n)
{
	static uint8_t junk[4 + RMCA_HELLO_MAX];
	int fd = atk_connect(api_host(), port);

	junk[0] = (uint8_t)n;
	junk[1] = (uint8_t)(n >> 8);
	junk[2] = (uint8_t)(n >> 16);
	junk[3] = (uint8_t)(n >> 24);
	for (size_t i = 4; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 131 + 17);
	atk_write(fd, junk, 4 + (n <= RMCA_HELLO_MAX ? n : 0));
	API_CHECK_MSG(atk_closed(fd, API_TIMEOUT_MS),
		      "a hello of %u bytes left its connection open", n);
	close(fd);
}

static void holder(struct api_peer *p)
{
	int port = api_client_read_port(p);
	int fds[HOLD];

	hello_of(port, 0);
	hello_of(port, RMCA_HELLO_MAX + 1);
	hello_of(port, RMCA_HELLO_MAX);
	/* Every slot taken: two say nothing, two one byte of a length. */
	for (int i = 0; i < HOLD; i++) {
		fds[i] = atk_connect(api_host(), port);
		if (i & 1)
			atk_write(fds[i], "\x10", 1);
	}
	/* The real client takes the oldest one's slot (the rest go at
	 * RMCA_connect_timeout). */
	atk_real_client(p, port, NULL);
	for (int i = 0; i < HOLD; i++) {
		API_CHECK_MSG(atk_closed(fds[i], API_TIMEOUT_MS),
			      "stalled connection %d still open", i);
		close(fds[i]);
	}
}

static void held_server(struct api_peer *p)
{
	api_server_listen(p, api_host());
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	/* The refusals end rmca_accept calls with their status. */
	atk_serve_real(p, ATK_PASS_REFUSED);
}

static void test_stalled_bootstrap_peers_are_bounded(void **state)
{
	const struct api_test t = {
		.server = held_server, .client = holder, .manual = true};

	(void)state;
	setenv("RMCA_handshake_max", "4", 1);
	atk_run_connect_timeout(&t, "1000");
	unsetenv("RMCA_handshake_max");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lies_end_only_their_connection),
		cmocka_unit_test(
			test_out_of_region_access_is_refused_untouched),
		cmocka_unit_test(test_peer_that_never_reads_is_bounded),
		cmocka_unit_test(test_control_channel_lies_are_refused),
		cmocka_unit_test(test_stalled_bootstrap_peers_are_bounded),
	};

	setenv("RMCA_transports", "tcp", 1);
	setenv("RMCA_atomic_mode", "cpu", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
