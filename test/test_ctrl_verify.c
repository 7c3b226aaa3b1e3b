// SPDX-License-Identifier: BSD-3-Clause
/*
 * Verifications (verify.c) over a real control channel (ctrl.c, a socket
 * pair whose other end is the peer's core, played here frame by frame):
 *
 * - an answer that comes after its verification's deadline passed is
 *   dropped, the channel stays, and the next verification is answered;
 * - an answer to a verification never sent, one answered twice, or one
 *   answered before an older one (the peer answers in the order it read
 *   them) closes the channel with RMCA_ERR_PROTOCOL, also while a later
 *   verification still waits;
 * - and the channel at its bound: a frame that says it is longer than
 *   RMCA_CTRL_MAX closes it with RMCA_ERR_PROTOCOL as soon as its length
 *   is read, rather than leave it waiting for bytes its buffer cannot hold.
 *
 * No clock: a deadline passes because the test sets it in the past.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctrl.h"
#include "ctrl_stub_core.h"
#include "ep.h"
#include "paths.h"

static int lost_status; /* 0 while the channel is up */

/* core_msg.c, for the two kinds here */
int rmca_emul_ctrl_msg(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	switch (m->type) {
	case RMCA_CTRL_VERIFY:
		rmca_verify_serve(ep, m);
		return 0;
	case RMCA_CTRL_VERIFY_RESP:
		return rmca_verify_answered(ep, m);
	}
	return RMCA_ERR_PROTOCOL;
}

void rmca_emul_ctrl_lost(struct rmca_ep *ep, int status)
{
	lost_status = status;
	rmca_verify_lost(ep);
}

struct fixture {
	struct rmca_context ctx;
	struct rmca_ep ep;
	int peer; /* the peer core's end */
	struct rmca_req r[3];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	lost_status = 0;
	ctrl_stub_advanced = 0;
	f->peer = ctrl_stub_open(&f->ctx, &f->ep, 0);
	for (int i = 0; i < 3; i++) {
		struct rmca_req *r = &f->r[i];

		r->ep = &f->ep;
		r->ctx = &f->ctx;
		r->op = RMCA_OP_PUT;
		r->kind = RMCA_REQ_USER;
		r->status = RMCA_ERR_CONNECTION;
		r->raddr = 0x1000 * (uint64_t)(i + 1);
		r->rkey = 0x77;
		r->rlen = 8;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	rmca_ctrl_close(&f->ep);
	close(f->peer);
	free(f);
	return 0;
}

/* The event loop looks at the channel once. */
static void event(void)
{
	ctrl_stub_event(EPOLLIN);
}

/* r's verification is sent: the VERIFY the peer reads; its id. */
static uint64_t start(struct fixture *f, struct rmca_req *r)
{
	uint8_t buf[4 + RMCA_CTRL_MAX];
	struct rmca_ctrl_msg m;
	char why[160];
	ssize_t n;
	size_t len;

	assert_true(rmca_verify_start(&f->ep, r));
	r->verifying = true;
	n = recv(f->peer, buf, sizeof(buf), MSG_DONTWAIT);
	assert_true(n >= 5);
	len = buf[0] | buf[1] << 8 | buf[2] << 16 | (size_t)buf[3] << 24;
	assert_int_equal(len + 4, (size_t)n);
	assert_int_equal(rmca_ctrl_decode(buf + 4, len, &m, why, sizeof(why)),
			 0);
	assert_int_equal(m.type, RMCA_CTRL_VERIFY);
	assert_int_equal(m.raddr, r->raddr);
	return m.id;
}

/* The peer answers id with status; the event loop reads it. */
static void answer(struct fixture *f, uint64_t id, int status)
{
	struct rmca_ctrl_msg m = {
		.type = RMCA_CTRL_VERIFY_RESP, .id = id, .status = status};
	uint8_t buf[4 + RMCA_CTRL_MAX];
	int n = rmca_ctrl_encode(&m, buf, sizeof(buf));

	assert_true(n > 0);
	assert_int_equal(send(f->peer, buf, (size_t)n, MSG_NOSIGNAL), n);
	event();
}

/* r's deadline passes. */
static void expire(struct fixture *f, struct rmca_req *r)
{
	r->verify_deadline = 0;
	rmca_verify_expire(&f->ep);
	assert_true(r->verified);
	assert_false(r->verifying);
}

static void test_late_answer_is_dropped(void **state)
{
	struct fixture *f = *state;
	uint64_t id = start(f, &f->r[0]);

	expire(f, &f->r[0]);
	answer(f, id, RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(lost_status, 0);
	assert_non_null(f->ep.ctrl);
	/* the status stood when the deadline passed */
	assert_int_equal(f->r[0].status, RMCA_ERR_CONNECTION);
	/* the next one is answered in time */
	id = start(f, &f->r[1]);
	answer(f, id, RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(lost_status, 0);
	assert_true(f->r[1].verified);
	assert_int_equal(f->r[1].status, RMCA_ERR_REMOTE_ACCESS);
}

static void test_late_answers_behind_one_waited_for(void **state)
{
	struct fixture *f = *state;
	uint64_t a = start(f, &f->r[0]), b = start(f, &f->r[1]);
	uint64_t c = start(f, &f->r[2]);

	/* the two oldest give up, the third still waits */
	f->r[0].verify_deadline = 0;
	f->r[1].verify_deadline = 0;
	rmca_verify_expire(&f->ep);
	assert_true(f->r[0].verified && f->r[1].verified);
	assert_false(f->r[2].verified);
	answer(f, a, 0);
	answer(f, b, RMCA_ERR_REMOTE_ACCESS);
	answer(f, c, RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(lost_status, 0);
	assert_int_equal(f->r[1].status, RMCA_ERR_CONNECTION);
	assert_true(f->r[2].verified);
	assert_int_equal(f->r[2].status, RMCA_ERR_REMOTE_ACCESS);
}

static void test_answer_never_asked_for_is_protocol_error(void **state)
{
	struct fixture *f = *state;

	answer(f, 1, 0);
	assert_int_equal(lost_status, RMCA_ERR_PROTOCOL);
	assert_null(f->ep.ctrl);
}

static void test_answer_past_the_last_sent_is_protocol_error(void **state)
{
	struct fixture *f = *state;
	uint64_t id = start(f, &f->r[0]);

	expire(f, &f->r[0]);
	answer(f, id + 1, 0);
	assert_int_equal(lost_status, RMCA_ERR_PROTOCOL);
	assert_null(f->ep.ctrl);
}

static void test_second_answer_is_protocol_error(void **state)
{
	struct fixture *f = *state;
	uint64_t id = start(f, &f->r[0]);

	expire(f, &f->r[0]);
	answer(f, id, 0);
	assert_int_equal(lost_status, 0);
	answer(f, id, 0);
	assert_int_equal(lost_status, RMCA_ERR_PROTOCOL);
	assert_null(f->ep.ctrl);
}

static void test_answer_out_of_order_is_protocol_error(void **state)
{
	struct fixture *f = *state;
	uint64_t a = start(f, &f->r[0]), b = start(f, &f->r[1]);

	(void)a;
	answer(f, b, RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(lost_status, RMCA_ERR_PROTOCOL);
	assert_null(f->ep.ctrl);
	/* both end as they were, once */
	assert_true(f->r[0].verified && f->r[1].verified);
	assert_int_equal(f->r[1].status, RMCA_ERR_CONNECTION);
	assert_null(f->ep.verify_wait);
}

static void test_frame_longer_than_the_most_closes(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[4 + RMCA_CTRL_MAX + 1];
	const size_t n = RMCA_CTRL_MAX + 1;

	memset(buf, 0, sizeof(buf));
	buf[0] = (uint8_t)n;
	buf[1] = (uint8_t)(n >> 8);
	buf[4] = RMCA_CTRL_REVOKE;
	assert_int_equal(send(f->peer, buf, sizeof(buf), MSG_NOSIGNAL),
			 (ssize_t)sizeof(buf));
	event();
	event();
	assert_int_equal(lost_status, RMCA_ERR_PROTOCOL);
	assert_null(f->ep.ctrl);
}

static void test_answer_given_twice_closes_while_another_waits(void **state)
{
	struct fixture *f = *state;
	uint64_t a = start(f, &f->r[0]), b = start(f, &f->r[1]);

	answer(f, a, 0);
	assert_int_equal(lost_status, 0);
	assert_true(f->r[0].verified);
	assert_false(f->r[1].verified);
	answer(f, a, 0);
	assert_int_equal(lost_status, RMCA_ERR_PROTOCOL);
	assert_null(f->ep.ctrl);
	/* the one that waited ends once, as it was */
	assert_true(f->r[1].verified);
	assert_int_equal(f->r[1].status, RMCA_ERR_CONNECTION);
	(void)b;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_late_answer_is_dropped,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_late_answers_behind_one_waited_for, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_answer_never_asked_for_is_protocol_error, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_answer_past_the_last_sent_is_protocol_error, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_second_answer_is_protocol_error, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_answer_out_of_order_is_protocol_error, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_frame_longer_than_the_most_closes, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_answer_given_twice_closes_while_another_waits,
			setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
