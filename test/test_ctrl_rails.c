// SPDX-License-Identifier: BSD-3-Clause
/*
 * Rail keys on the control channel (rails.c), the rest of the core and
 * two rail modules stubbed:
 *
 * - a region's keys on the other rails that could not all be told to the
 *   peer (the channel's buffer could not grow) are told again at the next
 *   hand-out of its key, not never (the peer would use rail 0 alone for
 *   that region);
 * - keys the peer told over a channel that is gone are not used: no one
 *   withdraws them any more (a withdrawal comes over that channel), so a
 *   put goes whole on rail 0;
 * - the peer acknowledges the RAIL_KEYs in the order it read them: an ack
 *   naming a key never told, or one ack more than a key's RAIL_KEYs, breaks
 *   the protocol (the channel goes, as for the other answers), and the
 *   sends held for the keys are let go only by the right acks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctrl.h"
#include "ep.h"
#include "rails.h"
#include "registry.h"

#define NRAILS 2
#define KEY    0x5150
#define ADDR   0x100000
#define LEN    (1 << 20)

static unsigned nsent, fail_at; /* fail_at: the nth send fails (0: none) */
static struct rmca_ctrl_msg sent[16];

/* The channel's send stream: bytes queued, and written to the socket
 * (all of it, but where a test says otherwise). */
static uint64_t stream_end, stream_written;

int rmca_ctrl_send(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	(void)ep;
	if (fail_at && nsent + 1 == fail_at) {
		fail_at = 0;
		return RMCA_ERR_AGAIN;
	}
	if (nsent < 16)
		sent[nsent] = *m;
	nsent++;
	stream_end += 38; /* a RAIL_KEY with its prefix */
	return 0;
}

uint64_t rmca_ctrl_sent_end(const struct rmca_ep *ep)
{
	(void)ep;
	return stream_end;
}

bool rmca_ctrl_written(const struct rmca_ep *ep, uint64_t end)
{
	(void)ep;
	return stream_written >= end;
}

int rmca_ctrl_send_owed(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	return rmca_ctrl_send(ep, m);
}

void rmca_core_work_due(struct rmca_context *ctx)
{
	(void)ctx;
}

void rmca_deferred_post(struct rmca_ep *ep)
{
	(void)ep;
}

void rmca_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

const char *rmca_strerror(int status)
{
	(void)status;
	return "";
}

int rmca_registry_made_by(const struct rmca_module *m,
			  const struct rmca_module *made_by, const char *what)
{
	(void)m;
	(void)made_by;
	(void)what;
	return 0;
}

struct rmca_req *rmca_req_alloc_new(struct rmca_context *ctx)
{
	(void)ctx;
	return calloc(1, sizeof(struct rmca_req));
}

void rmca_req_done(struct rmca_req *r, int status, size_t len,
		   uint64_t revoked_rkey)
{
	(void)r;
	(void)status;
	(void)len;
	(void)revoked_rkey;
}

/* ---- the modules: rail 0's and two more ---- */

static struct rmca_module mods[1 + NRAILS];
static struct rmca_conn conns[1 + NRAILS];
static unsigned nputs;
/* The parts the modules took: the core may still read one after its post
 * returns (as a module completes it later), so they are freed at teardown. */
static void *taken[2 * (1 + NRAILS)];
static unsigned ntaken;

static int t_connect(struct rmca_module *m, const struct rmca_conn_args *args,
		     struct rmca_conn **out)
{
	(void)args;
	*out = &conns[m - mods];
	return 0;
}

static uint64_t t_mr_rkey(struct rmca_module_mr *mr, struct rmca_conn *c)
{
	(void)mr;
	return 0x1000 * (uint64_t)(c - conns) + 7;
}

static int t_put(struct rmca_conn *c, const void *buf, size_t len,
		 struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		 void *req)
{
	(void)c;
	(void)buf;
	(void)len;
	(void)mr;
	(void)raddr;
	(void)rkey;
	assert_true(ntaken < sizeof(taken) / sizeof(taken[0]));
	taken[ntaken++] = req; /* taken, and never completed here */
	nputs++;
	return 0;
}

static void t_disconnect(struct rmca_conn *c)
{
	(void)c;
}

static const struct rmca_module_ops t_ops = {
	.connect = t_connect,
	.disconnect = t_disconnect,
	.mr_rkey = t_mr_rkey,
	.put = t_put,
};

struct fixture {
	struct rmca_context ctx;
	struct rmca_ep ep;
	struct rmca_mod mod[1 + NRAILS];
	struct rmca_module_mr *mmr[1 + NRAILS];
	struct rmca_module_mr mmr_store[1 + NRAILS];
	struct rmca_mr mr;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct rmca_rail_plan plan = {.n = NRAILS};

	assert_non_null(f);
	nsent = fail_at = nputs = ntaken = 0;
	stream_end = 0;
	stream_written = UINT64_MAX;
	f->ctx.rail_min_size = 64;
	for (int i = 0; i <= NRAILS; i++) {
		mods[i].ops = &t_ops;
		conns[i].module = &mods[i];
		f->mod[i].m = &mods[i];
		f->mod[i].index = i;
		f->mmr[i] = &f->mmr_store[i];
	}
	f->ep.ctx = &f->ctx;
	f->ep.mod = &f->mod[0];
	f->ep.conn = &conns[0];
	f->ep.ctrl = (struct rmca_ctrl *)&f->ctx; /* up: never opened here */
	for (int i = 0; i < NRAILS; i++)
		plan.mod[i] = &f->mod[1 + i];
	assert_int_equal(rmca_rails_new(&f->ep, &plan), 0);
	rmca_rails_connect(&f->ep, 1, 0, "peer", 0);
	f->mr.ctx = &f->ctx;
	f->mr.addr = (void *)(uintptr_t)ADDR;
	f->mr.len = LEN;
	f->mr.mmr = f->mmr;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	f->ep.ctrl = NULL;
	rmca_rails_destroy(&f->ep);
	for (unsigned i = 0; i < ntaken; i++)
		free(taken[i]);
	free(f);
	return 0;
}

static void test_keys_not_told_are_told_at_next_hand_out(void **state)
{
	struct fixture *f = *state;

	fail_at = 2; /* rail 2's RAIL_KEY cannot be queued */
	rmca_rails_announce(&f->mr, &f->ep, KEY);
	assert_int_equal(nsent, 1);
	nsent = 0;
	rmca_rails_announce(&f->mr, &f->ep, KEY);
	assert_int_equal(nsent, NRAILS);
	for (unsigned i = 0; i < NRAILS; i++) {
		assert_int_equal(sent[i].type, RMCA_CTRL_RAIL_KEY);
		assert_int_equal(sent[i].id, KEY);
		assert_int_equal(sent[i].access, i + 1);
	}
	/* all told: the next hand-out tells nothing */
	nsent = 0;
	rmca_rails_announce(&f->mr, &f->ep, KEY);
	assert_int_equal(nsent, 0);
}

/* The peer tells its region's key on each rail. */
static void peer_tells(struct fixture *f)
{
	for (int i = 1; i <= NRAILS; i++) {
		struct rmca_ctrl_msg m = {.type = RMCA_CTRL_RAIL_KEY,
					  .id = KEY,
					  .rkey = 0x900 + (uint64_t)i,
					  .raddr = ADDR,
					  .len = LEN,
					  .access = (uint8_t)i};

		assert_int_equal(rmca_rails_ctrl_msg(&f->ep, &m), 0);
	}
}

static void test_keys_of_a_channel_gone_are_not_used(void **state)
{
	struct fixture *f = *state;
	static char buf[LEN];
	struct rmca_req r = {.ep = &f->ep, .ctx = &f->ctx, .op = RMCA_OP_PUT};

	peer_tells(f);
	/* with the channel, a put is split: one part a rail */
	assert_int_equal(rmca_rails_rma(&f->ep, &r, buf, LEN, f->mmr[0], &f->mr,
					ADDR, KEY),
			 0);
	assert_int_equal(nputs, 1 + NRAILS);
	/* without it, whole on rail 0 (the caller posts it) */
	f->ep.ctrl = NULL;
	nputs = 0;
	assert_int_equal(rmca_rails_rma(&f->ep, &r, buf, LEN, f->mmr[0], &f->mr,
					ADDR, KEY),
			 1);
	assert_int_equal(nputs, 0);
}

static int key_ack(struct fixture *f, uint64_t key)
{
	struct rmca_ctrl_msg m = {.type = RMCA_CTRL_RAIL_KEY_ACK, .id = key};

	return rmca_rails_ctrl_msg(&f->ep, &m);
}

static void test_key_ack_of_a_key_never_told_breaks_the_protocol(void **state)
{
	struct fixture *f = *state;

	rmca_rails_announce(&f->mr, &f->ep, KEY);
	assert_int_equal(nsent, NRAILS);
	assert_true(rmca_rails_holding(&f->ep));
	assert_int_equal(key_ack(f, KEY + 1), RMCA_ERR_PROTOCOL);
}

static void test_key_ack_once_too_often_breaks_the_protocol(void **state)
{
	struct fixture *f = *state;
	struct rmca_mr mr2 = f->mr;

	mr2.addr = (void *)(uintptr_t)(2 * ADDR);
	rmca_rails_announce(&f->mr, &f->ep, KEY);
	rmca_rails_announce(&mr2, &f->ep, KEY + 1);
	assert_int_equal(nsent, 2 * NRAILS);
	for (int i = 0; i < NRAILS; i++)
		assert_int_equal(key_ack(f, KEY), 0);
	assert_true(rmca_rails_holding(&f->ep));
	/* KEY's RAIL_KEYs are all acknowledged: the next ack is KEY + 1's */
	assert_int_equal(key_ack(f, KEY), RMCA_ERR_PROTOCOL);
}

static void test_key_acks_in_order_let_the_sends_go(void **state)
{
	struct fixture *f = *state;
	struct rmca_mr mr2 = f->mr;

	mr2.addr = (void *)(uintptr_t)(2 * ADDR);
	rmca_rails_announce(&f->mr, &f->ep, KEY);
	rmca_rails_announce(&mr2, &f->ep, KEY + 1);
	for (int i = 0; i < NRAILS; i++)
		assert_int_equal(key_ack(f, KEY), 0);
	for (int i = 0; i < NRAILS; i++) {
		assert_true(rmca_rails_holding(&f->ep));
		assert_int_equal(key_ack(f, KEY + 1), 0);
	}
	assert_false(rmca_rails_holding(&f->ep));
	/* nothing left to acknowledge */
	assert_int_equal(key_ack(f, KEY + 1), RMCA_ERR_PROTOCOL);
}

/*
 * The first RAIL_KEY of a hand-out is written, the second still in the
 * channel's send buffer (the peer not reading): a second ack is for a
 * RAIL_KEY the peer cannot have read, and breaks the protocol; the sends
 * stay held. Once it is written, the same ack is taken.
 */
static void test_ack_of_a_rail_key_not_sent_breaks_the_protocol(void **state)
{
	struct fixture *f = *state;

	stream_written = 0;
	rmca_rails_announce(&f->mr, &f->ep, KEY);
	assert_int_equal(nsent, NRAILS);
	stream_written = stream_end / NRAILS; /* the first one */
	assert_int_equal(key_ack(f, KEY), 0);
	assert_int_equal(key_ack(f, KEY), RMCA_ERR_PROTOCOL);
	assert_true(rmca_rails_holding(&f->ep));
	stream_written = stream_end;
	for (int i = 1; i < NRAILS; i++)
		assert_int_equal(key_ack(f, KEY), 0);
	assert_false(rmca_rails_holding(&f->ep));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_keys_not_told_are_told_at_next_hand_out, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_keys_of_a_channel_gone_are_not_used, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_key_ack_of_a_key_never_told_breaks_the_protocol,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_key_ack_once_too_often_breaks_the_protocol, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_key_acks_in_order_let_the_sends_go, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_ack_of_a_rail_key_not_sent_breaks_the_protocol,
			setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
