// SPDX-License-Identifier: BSD-3-Clause
/*
 * Answers to requests the peer never read, on the control channel (ctrl.c,
 * a socket pair whose other end is a hostile peer core, played here frame
 * by frame). Ids go 1, 2, ... so the peer knows the next one without
 * reading it. The peer stops reading until our request is stuck, whole, in
 * the channel's send buffer, then answers it by its guessed id:
 *
 * - an atomic's answer, a get's and a verification's each close the channel
 *   with RMCA_ERR_PROTOCOL; the atomic and the get complete once with that
 *   status, their result untouched; the verification leaves the status of
 *   the access it was about as it was;
 * - the same answers, once the peer has read the request, are taken.
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
#include "rails.h"

static int lost_status; /* 0 while the channel is up */
static unsigned ndone;
static int done_status;

void rmca_req_done(struct rmca_req *r, int status, size_t len,
		   uint64_t revoked_rkey)
{
	(void)r;
	(void)len;
	(void)revoked_rkey;
	ndone++;
	done_status = status;
}

/* No data path here: no puts, so no fence is ever posted. */
int rmca_rails_flush(struct rmca_ep *ep, struct rmca_req *f)
{
	(void)ep;
	(void)f;
	return RMCA_ERR_UNSUPPORTED;
}

struct rmca_req *rmca_req_alloc_new(struct rmca_context *ctx)
{
	(void)ctx;
	return NULL;
}

/* core_msg.c, for the answers here */
int rmca_emul_ctrl_msg(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	switch (m->type) {
	case RMCA_CTRL_ATOMIC_RESP:
		return rmca_atomic_answered(ep, m);
	case RMCA_CTRL_GET_RESP:
		return rmca_get_answered(ep, m);
	case RMCA_CTRL_VERIFY_RESP:
		return rmca_verify_answered(ep, m);
	}
	return RMCA_ERR_PROTOCOL;
}

void rmca_emul_ctrl_lost(struct rmca_ep *ep, int status)
{
	lost_status = status;
	rmca_atomic_lost(ep, status);
	rmca_get_lost(ep, status);
	rmca_verify_lost(ep);
}

#define FORGED	  0xf0f0f0f0f0f0f0f0ull
#define UNTOUCHED 0x5a

struct fixture {
	struct rmca_context ctx;
	struct rmca_ep ep;
	int peer; /* the peer core's end */
	struct rmca_req r;
	uint64_t result;
	uint8_t buf[16];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	lost_status = 0;
	ndone = 0;
	done_status = 1;
	f->ctx.ep_max_core_ops = 16;
	rmca_ep_lists_init(&f->ep);
	/* small buffers: a few KiB fill them */
	f->peer = ctrl_stub_open(&f->ctx, &f->ep, 4096);
	f->r.ep = &f->ep;
	f->r.ctx = &f->ctx;
	f->result = UNTOUCHED;
	memset(f->buf, UNTOUCHED, sizeof(f->buf));
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

/* The peer stops reading: messages it is not owed are queued until the
 * socket takes no more and some wait in the channel's buffer. */
static void stuck(struct fixture *f)
{
	struct rmca_ctrl_msg m = {.type = RMCA_CTRL_REVOKE, .rkey = 1};

	for (int i = 0; !rmca_ctrl_queued_bytes(&f->ep); i++) {
		assert_true(i < 100000);
		m.id = (uint64_t)i + 1;
		assert_int_equal(rmca_ctrl_send(&f->ep, &m), 0);
	}
}

/* The peer reads every byte we wrote, and what was queued goes out. */
static void drain(struct fixture *f)
{
	uint8_t buf[4096];

	while (rmca_ctrl_queued_bytes(&f->ep) ||
	       recv(f->peer, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
		while (recv(f->peer, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
		ctrl_stub_event(EPOLLOUT);
	}
}

/* The peer writes m; the event loop looks at the channel once. */
static void answer(struct fixture *f, const struct rmca_ctrl_msg *m)
{
	uint8_t buf[4 + RMCA_CTRL_MAX];
	int n = rmca_ctrl_encode(m, buf, sizeof(buf));

	assert_true(n > 0);
	assert_int_equal(write(f->peer, buf, (size_t)n), n);
	ctrl_stub_event(EPOLLIN);
}

static void atomic_post(struct fixture *f)
{
	f->r.op = RMCA_OP_ATOMIC;
	f->r.result = &f->result;
	f->r.aop.kind = RMCA_ATOMIC_FADD;
	f->r.aop.raddr = 0x1000;
	f->r.aop.rkey = 0x77;
	f->r.aop.operand = 1;
	assert_int_equal(rmca_atomic_send(&f->ep, &f->r), 0);
}

static void atomic_answer(struct fixture *f)
{
	struct rmca_ctrl_msg m = {.type = RMCA_CTRL_ATOMIC_RESP,
				  .id = 1, /* guessed */
				  .old = FORGED};

	answer(f, &m);
}

static void get_post(struct fixture *f)
{
	f->r.op = RMCA_OP_GET;
	f->r.raddr = 0x1000;
	f->r.rkey = 0x77;
	assert_int_equal(rmca_get_core(&f->ep, &f->r, f->buf, sizeof(f->buf)),
			 0);
}

static void get_answer(struct fixture *f)
{
	struct rmca_ctrl_msg m = {.type = RMCA_CTRL_GET_RESP,
				  .id = 1, /* guessed */
				  .len = sizeof(f->buf)};

	memset(m.data, 0xf0, sizeof(f->buf));
	answer(f, &m);
}

static void assert_untouched(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		assert_int_equal(p[i], UNTOUCHED);
}

static void test_atomic_answered_before_sent_closes(void **state)
{
	struct fixture *f = *state;

	stuck(f);
	atomic_post(f);
	atomic_answer(f);
	assert_int_equal(ndone, 1);
	assert_int_equal(done_status, RMCA_ERR_PROTOCOL);
	assert_int_equal(lost_status, RMCA_ERR_PROTOCOL);
	assert_int_equal(f->result, UNTOUCHED);
	assert_null(f->ep.ctrl);
}

static void test_get_answered_before_sent_closes(void **state)
{
	struct fixture *f = *state;

	stuck(f);
	get_post(f);
	get_answer(f);
	assert_int_equal(ndone, 1);
	assert_int_equal(done_status, RMCA_ERR_PROTOCOL);
	assert_int_equal(lost_status, RMCA_ERR_PROTOCOL);
	assert_untouched(f->buf, sizeof(f->buf));
	assert_null(f->ep.ctrl);
}

static void test_verify_answered_before_sent_closes(void **state)
{
	struct fixture *f = *state;
	struct rmca_ctrl_msg m = {.type = RMCA_CTRL_VERIFY_RESP,
				  .id = 1, /* guessed */
				  .status = RMCA_ERR_REMOTE_ACCESS};

	f->r.op = RMCA_OP_PUT;
	f->r.status = RMCA_ERR_CONNECTION;
	f->r.raddr = 0x1000;
	f->r.rkey = 0x77;
	f->r.rlen = 8;
	stuck(f);
	assert_true(rmca_verify_start(&f->ep, &f->r));
	answer(f, &m);
	assert_int_equal(lost_status, RMCA_ERR_PROTOCOL);
	assert_int_equal(f->r.status, RMCA_ERR_CONNECTION);
	assert_null(f->ep.ctrl);
}

/* The check stops only answers to what was not read. */
static void test_atomic_answered_once_read_is_taken(void **state)
{
	struct fixture *f = *state;

	stuck(f);
	atomic_post(f);
	drain(f);
	atomic_answer(f);
	assert_int_equal(ndone, 1);
	assert_int_equal(done_status, 0);
	assert_int_equal(lost_status, 0);
	assert_true(f->result == FORGED);
}

static void test_get_answered_once_read_is_taken(void **state)
{
	struct fixture *f = *state;

	stuck(f);
	get_post(f);
	drain(f);
	get_answer(f);
	assert_int_equal(ndone, 1);
	assert_int_equal(done_status, 0);
	assert_int_equal(lost_status, 0);
	assert_int_equal(f->buf[0], 0xf0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_atomic_answered_before_sent_closes, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_get_answered_before_sent_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_verify_answered_before_sent_closes, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_atomic_answered_once_read_is_taken, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_get_answered_once_read_is_taken, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
