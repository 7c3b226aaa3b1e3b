/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A same-host peer that writes the connection's segment by hand, against a
 * real shm module whose core is this test (as test_shm_attack.c), at the
 * bounds of what it may write: a message one byte past its ring entry or
 * one byte longer than the receive, a get asking one byte over a piece,
 * answers that do not fit the request they name, an answer ring's tail
 * short of its answer or a lap ahead, a head that passes a get without
 * its answer, a receive count gone half around. Each is told apart from
 * the honest write next to it: the one is served, the other ends the
 * connection (or is not taken), and every operation completes once, with
 * the reason.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "shm.h"
#include "shm_fake_core.h"

/* The module is side 1; the test is its peer, side 0. */
static struct {
	struct shm_module *m;
	struct shm_seg *seg;
	struct shm_conn *c;
	int sv[2];
} t;

static void open_conn(void)
{
	struct shm_conn_parts parts = {.side = 1, .pidfd = -1};

	memset(&t, 0, sizeof(t));
	shm_fake_on_complete = NULL;
	t.m = shm_fake_module();
	t.c = shm_fake_conn(t.m, &parts, &t.seg, t.sv);
}

static void close_conn(void)
{
	rmca_shm_disconnect(&t.c->base);
	rmca_shm_reap_zombies(t.m, true);
	close(t.sv[1]);
	rmca_shm_module_destroy(t.m); /* the segment went with c */
}

/* The peer's request q at ring position 0, payload pl of pl_len bytes
 * where its type's starts, then its stamp. */
static void peer_request(struct shm_req q, const void *pl, size_t pl_len)
{
	uint8_t *e = t.seg->reqbuf[0];

	memcpy(e, &q, sizeof(q));
	if (pl_len)
		memcpy(e + shm_pl_off(q.type), pl, pl_len);
	__atomic_store_n((uint32_t *)(void *)e, shm_stamp(0), __ATOMIC_RELEASE);
}

/* A message of len bytes inline in one ring unit, into a receive of
 * recv_len bytes: how the receive completes. */
static struct treq one_unit_message(uint64_t len, size_t recv_len)
{
	static struct treq r;
	uint8_t pl[SHM_UNIT];
	struct shm_req q = {.type = SHM_R_SEND,
			    .flags = SHM_RF_INLINE,
			    .units = 1,
			    .len = len};

	memset(&r, 0, sizeof(r));
	memset(pl, 'p', sizeof(pl));
	open_conn();
	assert_int_equal(rmca_shm_recv(&t.c->base, r.buf, recv_len, NULL, &r),
			 0);
	peer_request(q, pl, SHM_UNIT - shm_pl_off(SHM_R_SEND));
	rmca_shm_progress(&t.m->base);
	close_conn();
	assert_int_equal(r.done, 1);
	return r;
}

/* A one-unit entry holds SHM_UNIT less the header's share: that many
 * bytes are a message, one more would be read from past the entry. */
static void message_one_byte_past_its_entry_is_refused(void **state)
{
	const size_t room = SHM_UNIT - shm_pl_off(SHM_R_SEND);
	struct treq r;

	(void)state;
	assert_int_equal(shm_units(SHM_R_SEND, room), 1);
	r = one_unit_message(room, sizeof(r.buf));
	assert_int_equal(r.status, RMCA_OK);
	assert_int_equal(r.len, room);
	r = one_unit_message(room + 1, sizeof(r.buf));
	assert_int_equal(r.status, RMCA_ERR_PROTOCOL);
}

/* A message as long as the receive lands; one byte longer is truncated
 * (its first bytes land, the receive says TRUNCATED). */
static void message_one_byte_over_the_receive_is_truncated(void **state)
{
	struct treq r;

	(void)state;
	r = one_unit_message(8, 8);
	assert_int_equal(r.status, RMCA_OK);
	assert_int_equal(r.len, 8);
	r = one_unit_message(9, 8);
	assert_int_equal(r.status, RMCA_ERR_TRUNCATED);
	assert_int_equal(r.len, 8);
}

/* Our get of len bytes (carried in its answer: no cross-memory attach)
 * answered by the peer with s and its data, the answer ring's tail then
 * set to tail; how it completes. */
#define GET_LEN 8

static struct treq get_answered_at(size_t len, struct shm_resp s, uint64_t tail)
{
	static struct treq r;
	static char buf[2 * SHM_RESP_SLOT];
	uint8_t *ring;

	memset(&r, 0, sizeof(r));
	memset(buf, 'x', sizeof(buf));
	assert_true(len <= sizeof(buf));
	open_conn();
	assert_int_equal(
		rmca_shm_get(&t.c->base, buf, len, NULL, 0x1000, 0x2222, &r),
		0);
	rmca_shm_progress(&t.m->base);
	assert_int_equal(r.done, 0);
	/* the module's get is the first of its requests: position 0; every
	 * data byte the answer's slots can hold is 'd' */
	ring = t.seg->respbuf[0];
	memset(ring, 'd', (size_t)shm_resp_slots(len) * SHM_RESP_SLOT);
	s.id = 0;
	memcpy(ring, &s, sizeof(s));
	__atomic_store_n(&t.seg->resp[0].tail, tail, __ATOMIC_RELEASE);
	rmca_shm_progress(&t.m->base);
	close_conn();
	assert_int_equal(r.done, 1);
	memcpy(r.buf, buf, sizeof(r.buf));
	return r;
}

static struct treq get_answered(struct shm_resp s)
{
	return get_answered_at(GET_LEN, s, 1);
}

static void answer_that_fits_completes_the_get(void **state)
{
	struct treq r;

	(void)state;
	r = get_answered((struct shm_resp){.len = GET_LEN});
	assert_int_equal(r.status, RMCA_OK);
	assert_memory_equal(r.buf, "dddddddd", GET_LEN);
}

static void get_answer_of_other_length_is_refused(void **state)
{
	struct treq r;

	(void)state;
	r = get_answered((struct shm_resp){.len = GET_LEN - 1});
	assert_int_equal(r.status, RMCA_ERR_PROTOCOL);
	assert_memory_equal(r.buf, "xxxxxxxx", GET_LEN);
}

static void get_answer_with_an_operand_is_refused(void **state)
{
	struct treq r;

	(void)state;
	r = get_answered((struct shm_resp){.len = GET_LEN, .operand = 1});
	assert_int_equal(r.status, RMCA_ERR_PROTOCOL);
	assert_memory_equal(r.buf, "xxxxxxxx", GET_LEN);
}

/* Only a send is truncated; a refused get is refused access. */
static void truncation_of_a_get_is_refused(void **state)
{
	struct treq r;

	(void)state;
	r = get_answered((struct shm_resp){.status = RMCA_ERR_TRUNCATED});
	assert_int_equal(r.status, RMCA_ERR_PROTOCOL);
	r = get_answered((struct shm_resp){.status = RMCA_ERR_REMOTE_ACCESS});
	assert_int_equal(r.status, RMCA_ERR_REMOTE_ACCESS);
}

/* An answer of three slots whose tail says one: refused, not read from
 * slots the peer did not publish. */
static void answer_past_the_published_tail_is_refused(void **state)
{
	const size_t len = 2 * SHM_RESP_INLINE;
	const uint64_t slots = shm_resp_slots(len);
	struct treq r;

	(void)state;
	assert_true(len <= SHM_GET_PIECE && slots > 1);
	r = get_answered_at(len, (struct shm_resp){.len = (uint32_t)len},
			    slots);
	assert_int_equal(r.status, RMCA_OK);
	r = get_answered_at(len, (struct shm_resp){.len = (uint32_t)len}, 1);
	assert_int_equal(r.status, RMCA_ERR_PROTOCOL);
	assert_memory_equal(r.buf, "xxxxxxxx", 8);
}

/* A tail more than one lap of the answer ring ahead: the connection ends
 * before any answer in it is taken. */
static void tail_past_a_lap_is_refused(void **state)
{
	struct treq r;

	(void)state;
	r = get_answered_at(GET_LEN, (struct shm_resp){.len = GET_LEN},
			    SHM_RESP_SLOTS + 1);
	assert_int_equal(r.status, RMCA_ERR_PROTOCOL);
	assert_memory_equal(r.buf, "xxxxxxxx", GET_LEN);
}

/* The peer's head passes our get, which waits for an answer, without
 * writing one: a protocol error, not a get done with no data. */
static void get_passed_without_its_answer_is_refused(void **state)
{
	static struct treq r;
	static char buf[GET_LEN];

	(void)state;
	memset(&r, 0, sizeof(r));
	memset(buf, 'x', sizeof(buf));
	open_conn();
	assert_int_equal(rmca_shm_get(&t.c->base, buf, GET_LEN, NULL, 0x1000,
				      0x2222, &r),
			 0);
	rmca_shm_progress(&t.m->base);
	assert_int_equal(r.done, 0);
	assert_int_equal(t.c->r.req_tail, SHM_UNIT);
	__atomic_store_n(&t.seg->req[1].head, SHM_UNIT, __ATOMIC_RELEASE);
	rmca_shm_progress(&t.m->base);
	close_conn();
	assert_int_equal(r.done, 1);
	assert_int_equal(r.status, RMCA_ERR_PROTOCOL);
	assert_memory_equal(buf, "xxxxxxxx", GET_LEN);
}

/* A get carried in its answer asks one piece at most: one byte more is
 * refused before any key is looked at (the key here is unknown: were it
 * looked at, the refusal would be of the access). */
static void inline_get_over_a_piece_is_refused(void **state)
{
	struct shm_req q = {.type = SHM_R_GET,
			    .flags = SHM_RF_INLINE,
			    .units = 1,
			    .rkey = 0x2222,
			    .raddr = 0x1000};
	static struct treq r;

	(void)state;
	for (int over = 0; over < 2; over++) {
		memset(&r, 0, sizeof(r));
		open_conn();
		assert_int_equal(rmca_shm_recv(&t.c->base, r.buf, sizeof(r.buf),
					       NULL, &r),
				 0);
		q.len = SHM_GET_PIECE + (uint64_t)over;
		peer_request(q, NULL, 0);
		rmca_shm_progress(&t.m->base);
		close_conn();
		assert_int_equal(r.done, 1);
		assert_int_equal(r.status, over ? RMCA_ERR_PROTOCOL
						: RMCA_ERR_CONNECTION);
	}
}

/* The count of receives a request carries goes forward by less than half
 * the counter's range, or it is not taken: a count of 2^31 more does not
 * let our message go to a peer that posted no receive. */
static void receive_count_gone_half_around_is_not_taken(void **state)
{
	const uint32_t counts[] = {1, 1u << 31};
	struct shm_req q = {.type = SHM_R_PAD, .units = 1};
	static struct treq s;
	static char msg[8] = "message";

	(void)state;
	for (int i = 0; i < 2; i++) {
		memset(&s, 0, sizeof(s));
		open_conn();
		q.credit = counts[i];
		peer_request(q, NULL, 0);
		rmca_shm_progress(&t.m->base);
		assert_false(t.c->failed);
		assert_int_equal(
			rmca_shm_send(&t.c->base, msg, sizeof(msg), NULL, &s),
			0);
		rmca_shm_progress(&t.m->base);
		/* pushed into our request ring, or held for a receive */
		assert_int_equal(t.c->r.req_tail, i ? 0 : SHM_UNIT);
		close_conn();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(message_one_byte_past_its_entry_is_refused),
		cmocka_unit_test(
			message_one_byte_over_the_receive_is_truncated),
		cmocka_unit_test(answer_that_fits_completes_the_get),
		cmocka_unit_test(get_answer_of_other_length_is_refused),
		cmocka_unit_test(get_answer_with_an_operand_is_refused),
		cmocka_unit_test(truncation_of_a_get_is_refused),
		cmocka_unit_test(answer_past_the_published_tail_is_refused),
		cmocka_unit_test(tail_past_a_lap_is_refused),
		cmocka_unit_test(get_passed_without_its_answer_is_refused),
		cmocka_unit_test(inline_get_over_a_piece_is_refused),
		cmocka_unit_test(receive_count_gone_half_around_is_not_taken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
