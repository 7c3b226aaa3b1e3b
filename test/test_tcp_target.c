/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp target against a raw peer (tcp_harness.h): once mr_dereg returns
 * no access in flight touches the region; a use-once key serves only the
 * connection it was handed out on; a peer that does not read its answers
 * queues no more than the bound of them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcp_harness.h"

#define MiB    (1u << 20)
#define REQ(n) ((void *)(uintptr_t)(n))

static char *region_alloc(size_t len, int fill)
{
	void *p = NULL;

	assert_int_equal(posix_memalign(&p, 4096, len), 0);
	memset(p, fill, len);
	return p;
}

static struct rmca_module_mr *reg(struct tcp_module *m, void *addr, size_t len,
				  unsigned access)
{
	struct rmca_module_mr *mr = NULL;

	assert_int_equal(rmca_tcp_mr_reg(&m->base, addr, len, access, &mr), 0);
	return mr;
}

static void dereg(struct rmca_module_mr *mr)
{
	assert_int_equal(rmca_tcp_mr_dereg(mr), 0);
}

static uint64_t rkey(struct rmca_module_mr *mr, struct tcp_conn *c)
{
	uint64_t k = rmca_tcp_mr_rkey(mr, &c->base);

	assert_true(k != 0);
	return k;
}

/* Offset of the first byte of buf[0, len) that is not v, or -1. */
static long first_not(const char *buf, size_t len, int v)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != (char)v)
			return (long)i;
	return -1;
}

static void get_frame(int peer, uint64_t id, const void *addr, uint64_t len,
		      uint64_t key)
{
	struct tcp_frame f = {.type = TCP_F_GET,
			      .id = id,
			      .len = len,
			      .raddr = (uintptr_t)addr,
			      .rkey = key};

	th_peer_frame(peer, &f);
}

/* Does any queued frame of c still read from mr's memory? */
static bool queued_from(struct tcp_conn *c, const char *addr, size_t len)
{
	for (struct rmca_list *l = c->outq.next; l != &c->outq; l = l->next) {
		struct tcp_out *o = rmca_list_entry(l, struct tcp_out, link);

		if (o->len && o->payload >= addr && o->payload < addr + len)
			return true;
	}
	return false;
}

/*
 * A put whose header arrived before the dereg: the rest of its payload goes
 * nowhere near the region, and the put is refused.
 */
static void put_in_flight_at_dereg_is_refused(void **state)
{
	struct tcp_module *m = th_module();
	int peer;
	struct tcp_conn *c = th_conn(m, &peer);
	char *region = region_alloc(4 * MiB, 0),
	     *src = region_alloc(4 * MiB, 0x3c);
	struct rmca_module_mr *mr =
		reg(m, region, 4 * MiB, RMCA_ACCESS_REMOTE_WRITE);
	struct tcp_frame f = {.type = TCP_F_PUT,
			      .id = 7,
			      .len = 4 * MiB,
			      .raddr = (uintptr_t)region,
			      .rkey = rkey(mr, c)};

	th_peer_frame(peer, &f);
	th_peer_write(peer, src, 4096);
	th_pump_idle();
	/* The put is under way: its first bytes are in. */
	assert_int_equal(first_not(region, 4096, 0x3c), -1);

	dereg(mr);
	memset(region, 0xa5, 4 * MiB); /* the application's again */
	th_peer_write(peer, src + 4096, 4 * MiB - 4096);
	assert_true(th_peer_read_frame(peer, &f));
	assert_int_equal(first_not(region, 4 * MiB, 0xa5), -1);
	assert_int_equal(f.type, TCP_F_RESP);
	assert_int_equal(f.id, 7);
	assert_int_equal(f.status, RMCA_ERR_REMOTE_ACCESS);
	/* A refused access ends the connection. */
	assert_int_equal(th_nfailed, 1);

	rmca_tcp_conn_destroy(c);
	close(peer);
	th_module_free(m);
	free(region);
	free(src);
}

/*
 * Answers to gets that wait behind a large one (another region's) when the
 * region is deregistered: refused, never read after the dereg; the answer
 * before them is whole.
 */
static void queued_answers_are_refused_at_dereg(void **state)
{
	struct tcp_module *m = th_module();
	int peer;
	struct tcp_conn *c = th_conn(m, &peer);
	char *big = region_alloc(8 * MiB, 0x22),
	     *region = region_alloc(4096, 0x11);
	char *buf = region_alloc(8 * MiB, 0);
	struct rmca_module_mr *mbig =
		reg(m, big, 8 * MiB, RMCA_ACCESS_REMOTE_READ);
	struct rmca_module_mr *mr =
		reg(m, region, 4096, RMCA_ACCESS_REMOTE_READ);
	uint64_t kbig = rkey(mbig, c), key = rkey(mr, c);
	struct tcp_frame f;

	/* 8 MiB do not fit in the socket buffers: the rest waits. */
	get_frame(peer, 1, big, 8 * MiB, kbig);
	for (uint64_t id = 2; id <= 100; id++)
		get_frame(peer, id, region, 4096, key);
	th_pump_idle();
	assert_true(queued_from(c, region, 4096));

	dereg(mr);
	memset(region, 0xee, 4096); /* a secret, written after the dereg */

	assert_true(th_peer_read_frame(peer, &f));
	assert_int_equal(f.id, 1);
	assert_int_equal(f.status, 0);
	assert_int_equal(th_peer_read(peer, buf, 8 * MiB), 8 * MiB);
	assert_int_equal(first_not(buf, 8 * MiB, 0x22), -1);
	/* the first answer behind it is the refusal, then the stream ends */
	assert_true(th_peer_read_frame(peer, &f));
	assert_int_equal(f.type, TCP_F_RESP);
	assert_int_equal(f.id, 2);
	assert_int_equal(f.status, RMCA_ERR_REMOTE_ACCESS);
	assert_false(th_peer_read_frame(peer, &f));

	dereg(mbig);
	rmca_tcp_conn_destroy(c);
	close(peer);
	th_module_free(m);
	free(big);
	free(region);
	free(buf);
}

/*
 * An answer partly on the wire when its region is deregistered: the stream
 * is cut there; no byte written after the dereg goes out.
 */
static void answer_on_the_wire_is_cut_at_dereg(void **state)
{
	struct tcp_module *m = th_module();
	int peer;
	struct tcp_conn *c = th_conn(m, &peer);
	char *region = region_alloc(8 * MiB, 0x11),
	     *buf = region_alloc(8 * MiB, 0);
	struct rmca_module_mr *mr =
		reg(m, region, 8 * MiB, RMCA_ACCESS_REMOTE_READ);
	uint64_t key = rkey(mr, c);
	struct tcp_frame f;
	size_t got;

	for (uint64_t id = 1; id <= 4; id++)
		get_frame(peer, id, region, 8 * MiB, key);
	th_pump_idle();
	assert_true(queued_from(c, region, 8 * MiB));

	dereg(mr);
	memset(region, 0xee, 8 * MiB);

	assert_true(th_peer_read_frame(peer, &f));
	assert_int_equal(f.id, 1);
	got = th_peer_read(peer, buf, 8 * MiB);
	assert_int_equal(first_not(buf, got, 0x11), -1);
	assert_true(got < 8 * MiB);
	assert_int_equal(th_nfailed, 1);

	rmca_tcp_conn_destroy(c);
	close(peer);
	th_module_free(m);
	free(region);
	free(buf);
}

static void put_frame(int peer, uint64_t id, const void *addr, uint64_t len,
		      uint64_t key, const void *payload)
{
	struct tcp_frame f = {.type = TCP_F_PUT,
			      .id = id,
			      .len = len,
			      .raddr = (uintptr_t)addr,
			      .rkey = key};

	th_peer_frame(peer, &f);
	th_peer_write(peer, payload, len);
}

/* The status of the next answer the peer reads. */
static int answer(int peer, uint64_t id)
{
	struct tcp_frame f;

	assert_true(th_peer_read_frame(peer, &f));
	assert_int_equal(f.type, TCP_F_RESP);
	assert_int_equal(f.id, id);
	return f.status;
}

/* The next frame the peer reads is an ACK: its count of sends and puts. */
static uint32_t acked_count(int peer)
{
	struct tcp_frame f;

	assert_true(th_peer_read_frame(peer, &f));
	assert_int_equal(f.type, TCP_F_ACK);
	return f.acked;
}

/*
 * A use-once key handed out on one connection neither works nor can be
 * revoked through another one, by a send-with-invalidate or by the core's
 * revoke message path.
 */
static void use_once_key_works_only_where_handed_out(void **state)
{
	struct tcp_module *m = th_module();
	const struct rmca_module_ops *ops = m->base.ops;
	int p1, p2;
	struct tcp_conn *c1 = th_conn(m, &p1), *c2 = th_conn(m, &p2);
	char *region = region_alloc(4096, 0), *rbuf = region_alloc(64, 0);
	char data[8] = "written", msg[4] = "inv";
	struct rmca_module_mr *mr = reg(
		m, region, 4096, RMCA_ACCESS_REMOTE_WRITE | RMCA_MR_USE_ONCE);
	uint64_t k1 = rkey(mr, c1);
	struct tcp_frame f;

	assert_true(k1 & RMCA_KEY_USE_ONCE);
	assert_int_equal(ops->key_match(mr, tcp_conn_base(c1), k1), 1);
	assert_int_equal(ops->key_match(mr, tcp_conn_base(c2), k1), 0);

	/* send-with-invalidate of k1 arriving on c2 revokes nothing */
	assert_int_equal(rmca_tcp_recv(&c2->base, rbuf, 64, NULL, rbuf), 0);
	assert_true(th_peer_read_frame(p2, &f));
	assert_int_equal(f.type, TCP_F_ACK);
	assert_int_equal(f.credits, 1);
	f = (struct tcp_frame){.type = TCP_F_SEND,
			       .flags = TCP_FF_INV,
			       .id = 1,
			       .len = sizeof(msg),
			       .rkey = k1};
	th_peer_frame(p2, &f);
	th_peer_write(p2, msg, sizeof(msg));
	assert_int_equal(acked_count(p2), 1);
	assert_int_equal(th_ndone, 1);
	assert_ptr_equal(th_done[0].req, rbuf);
	assert_int_equal(th_done[0].status, 0);
	assert_true(th_done[0].revoked == 0);

	/* nor does the core's revoke message path asked through c2 */
	assert_int_equal(ops->revoke(mr, tcp_conn_base(c2), k1), 0);
	assert_int_equal(ops->key_match(mr, tcp_conn_base(c1), k1), 1);

	/* the key still works where it was handed out ... */
	put_frame(p1, 2, region, sizeof(data), k1, data);
	assert_int_equal(acked_count(p1), 1);
	assert_memory_equal(region, data, sizeof(data));

	/* ... and names nothing anywhere else */
	memset(region, 0, 4096);
	put_frame(p2, 3, region, sizeof(data), k1, data);
	assert_int_equal(answer(p2, 3), RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(first_not(region, 4096, 0), -1);

	/* c2 has its own key for the same region */
	assert_true(rkey(mr, c2) != k1);

	dereg(mr);
	rmca_tcp_conn_destroy(c1);
	rmca_tcp_conn_destroy(c2);
	close(p1);
	close(p2);
	th_module_free(m);
	free(region);
	free(rbuf);
}

/* Answers queued on c, unsent (counted by walking the queue). */
static int answers_queued(struct tcp_conn *c)
{
	int n = 0;

	for (struct rmca_list *l = c->outq.next; l != &c->outq; l = l->next)
		n += rmca_list_entry(l, struct tcp_out, link)->owned;
	return n;
}

#define FLOOD 100000

/*
 * A peer that floods gets and never reads its answers: the target queues
 * answers up to RMCA_tcp_max_pending_responses, then stops reading from it
 * (its requests wait in the socket, TCP pushes back), serves another peer
 * meanwhile, and answers every request once the peer reads.
 */
static void flood_of_unread_gets_is_bounded(void **state)
{
	struct tcp_module *m = th_module();
	int p1, p2;
	struct tcp_conn *c1 = th_conn(m, &p1), *c2 = th_conn(m, &p2);
	char *region = region_alloc(4096, 0x5a), *one = region_alloc(1, 0);
	struct rmca_module_mr *mr =
		reg(m, region, 4096,
		    RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE);
	uint64_t key = rkey(mr, c1);
	uint8_t *gets = calloc(FLOOD, TCP_HDR_LEN);
	size_t len = (size_t)FLOOD * TCP_HDR_LEN, sent = 0, n;
	struct tcp_frame f;
	char data[8] = "other";
	int bound = m->max_answers;
	bool pumped;

	assert_non_null(gets);
	assert_int_equal(bound, 16384);
	for (int i = 0; i < FLOOD; i++) {
		f = (struct tcp_frame){.type = TCP_F_GET,
				       .id = (uint64_t)i + 1,
				       .len = 1,
				       .raddr = (uintptr_t)region + (i & 4095),
				       .rkey = key};
		rmca_tcp_frame_encode(&f, gets + (size_t)i * TCP_HDR_LEN);
	}
	/* Write until neither side can go on. */
	do {
		n = th_peer_write_some(p1, gets + sent, len - sent);
		sent += n;
		pumped = th_pump();
		assert_true(answers_queued(c1) <= bound);
	} while (sent < len && (n || pumped));
	assert_true(sent < len); /* pushed back: the rest cannot be sent */
	assert_int_equal(answers_queued(c1), bound);
	assert_int_equal(c1->nanswers, bound);

	/* another peer is served meanwhile */
	put_frame(p2, 1, region, sizeof(data), rkey(mr, c2), data);
	assert_int_equal(acked_count(p2), 1);
	assert_memory_equal(region, data, sizeof(data));
	memset(region, 0x5a, 4096);

	/* once the peer reads, every request is answered, in order */
	for (int i = 0; i < FLOOD; i++) {
		if (sent < len)
			sent += th_peer_write_some(p1, gets + sent, len - sent);
		assert_true(th_peer_read_frame(p1, &f));
		assert_int_equal(f.type, TCP_F_RESP);
		assert_int_equal(f.status, 0);
		assert_int_equal(f.id, (uint64_t)i + 1);
		assert_int_equal(f.len, 1);
		assert_int_equal(th_peer_read(p1, one, 1), 1);
		assert_int_equal(*one, 0x5a);
		assert_true(answers_queued(c1) <= bound);
	}
	assert_int_equal(sent, len);
	assert_int_equal(th_nfailed, 0);

	dereg(mr);
	rmca_tcp_conn_destroy(c1);
	rmca_tcp_conn_destroy(c2);
	close(p1);
	close(p2);
	th_module_free(m);
	free(region);
	free(one);
	free(gets);
}

/* The peer sends, whether or not the target still listens. */
static void peer_send_blind(int peer, const void *buf, size_t len)
{
	while (len) {
		ssize_t n = send(peer, buf, len, MSG_NOSIGNAL);

		if (n <= 0)
			return;
		buf = (const char *)buf + n;
		len -= (size_t)n;
	}
}

/*
 * The target's own operations on a region deregistered under them: the
 * connection fails there and they end; a message or an answer arriving
 * later lands nowhere.
 */
static void own_ops_on_deregistered_region_end(void **state)
{
	struct tcp_module *m = th_module();
	int peer;
	struct tcp_conn *c = th_conn(m, &peer);
	char *region = region_alloc(4096, 0), *data = region_alloc(1024, 0x3c);
	struct rmca_module_mr *mr = reg(m, region, 4096, RMCA_ACCESS_LOCAL);
	struct tcp_frame credit, get, f;
	uint8_t hdr[TCP_HDR_LEN];

	assert_int_equal(rmca_tcp_recv(&c->base, region, 1024, mr, REQ(1)), 0);
	assert_int_equal(rmca_tcp_get(&c->base, region + 2048, 1024, mr, 0x1000,
				      0x2222, REQ(2)),
			 0);
	assert_true(th_peer_read_frame(peer, &credit));
	assert_int_equal(credit.type, TCP_F_ACK);
	assert_int_equal(credit.credits, 1);
	assert_true(th_peer_read_frame(peer, &get));
	assert_int_equal(get.type, TCP_F_GET);

	dereg(mr);
	memset(region, 0xa5, 4096);
	f = (struct tcp_frame){.type = TCP_F_SEND, .id = 1, .len = 1024};
	rmca_tcp_frame_encode(&f, hdr);
	peer_send_blind(peer, hdr, sizeof(hdr));
	peer_send_blind(peer, data, 1024);
	f = (struct tcp_frame){.type = TCP_F_RESP, .id = get.id, .len = 1024};
	rmca_tcp_frame_encode(&f, hdr);
	peer_send_blind(peer, hdr, sizeof(hdr));
	peer_send_blind(peer, data, 1024);
	th_pump_idle();

	assert_int_equal(first_not(region, 4096, 0xa5), -1);
	assert_int_equal(th_ndone, 2);
	assert_int_equal(th_done[0].status, RMCA_ERR_CONNECTION);
	assert_int_equal(th_done[1].status, RMCA_ERR_CONNECTION);
	assert_int_equal(th_nfailed, 1);

	rmca_tcp_conn_destroy(c);
	close(peer);
	th_module_free(m);
	free(region);
	free(data);
}

/*
 * Two modules flooding each other with gets, each at the most it may have
 * outstanding: neither holds the other back for good, every get ends. (A
 * bound on queued answers below that limit deadlocks here: both stop
 * reading, each waiting for the other; hence its least value.)
 */
static void peers_at_their_limit_both_finish(void **state)
{
	struct tcp_module *a = th_module(), *b = th_module();
	struct tcp_conn *ca, *cb;
	char *ra = region_alloc(4096, 0x0a), *rb = region_alloc(4096, 0x0b);
	char *into = region_alloc(4096, 0);
	struct rmca_module_mr *ma = reg(a, ra, 4096, RMCA_ACCESS_REMOTE_READ);
	struct rmca_module_mr *mb = reg(b, rb, 4096, RMCA_ACCESS_REMOTE_READ);
	uint64_t ka, kb;

	th_conn_pair(a, b, &ca, &cb);
	ka = rkey(ma, cb);
	kb = rkey(mb, ca);
	for (int i = 0; i < TCP_MAX_OPS; i++) {
		assert_int_equal(rmca_tcp_get(&ca->base, into, 4096, NULL,
					      (uintptr_t)rb, kb, REQ(1)),
				 0);
		assert_int_equal(rmca_tcp_get(&cb->base, into, 4096, NULL,
					      (uintptr_t)ra, ka, REQ(2)),
				 0);
	}
	th_pump_idle();
	assert_int_equal(th_nfailed, 0);
	assert_int_equal(th_ndone, 2 * TCP_MAX_OPS);
	for (int i = 0; i < TH_MAX_DONE; i++)
		assert_int_equal(th_done[i].status, 0);

	rmca_tcp_conn_destroy(ca);
	rmca_tcp_conn_destroy(cb);
	dereg(ma);
	dereg(mb);
	th_module_free(a);
	th_module_free(b);
	free(ra);
	free(rb);
	free(into);
}

/*
 * A refused access behind answers still queued: they go out first, so the
 * peer's earlier operations end with their own status, then the refusal.
 */
static void refusal_follows_the_answers_before_it(void **state)
{
	struct tcp_module *m = th_module();
	int peer;
	struct tcp_conn *c = th_conn(m, &peer);
	char *big = region_alloc(8 * MiB, 0x22),
	     *buf = region_alloc(8 * MiB, 0);
	struct rmca_module_mr *mbig =
		reg(m, big, 8 * MiB, RMCA_ACCESS_REMOTE_READ);
	uint64_t key = rkey(mbig, c);
	char data[8] = "refused";
	struct tcp_frame f;

	get_frame(peer, 1, big, 8 * MiB, key);
	get_frame(peer, 2, big, 64, key);
	put_frame(peer, 3, big, sizeof(data), key, data); /* read only */
	th_pump_idle();

	assert_true(th_peer_read_frame(peer, &f));
	assert_int_equal(f.id, 1);
	assert_int_equal(f.status, 0);
	assert_int_equal(th_peer_read(peer, buf, 8 * MiB), 8 * MiB);
	assert_true(th_peer_read_frame(peer, &f));
	assert_int_equal(f.id, 2);
	assert_int_equal(f.status, 0);
	assert_int_equal(th_peer_read(peer, buf, 64), 64);
	assert_int_equal(first_not(buf, 64, 0x22), -1);
	assert_int_equal(answer(peer, 3), RMCA_ERR_REMOTE_ACCESS);
	assert_false(th_peer_read_frame(peer, &f));
	assert_int_equal(first_not(big, 8 * MiB, 0x22), -1);

	dereg(mbig);
	rmca_tcp_conn_destroy(c);
	close(peer);
	th_module_free(m);
	free(big);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(put_in_flight_at_dereg_is_refused),
		cmocka_unit_test(queued_answers_are_refused_at_dereg),
		cmocka_unit_test(answer_on_the_wire_is_cut_at_dereg),
		cmocka_unit_test(own_ops_on_deregistered_region_end),
		cmocka_unit_test(refusal_follows_the_answers_before_it),
		cmocka_unit_test(use_once_key_works_only_where_handed_out),
		cmocka_unit_test(flood_of_unread_gets_is_bounded),
		cmocka_unit_test(peers_at_their_limit_both_finish),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
