// SPDX-License-Identifier: BSD-3-Clause
/*
 * A peer's REVOKE names the message it rides on (its sequence number):
 * the peer posts that message only once the REVOKE is acknowledged, so a
 * REVOKE for a message already received here is a lie. It is refused
 * (RMCA_ERR_INVALID), revoking nothing: its note would wait for a receive
 * that never comes, for the endpoint's life, one more per key the user
 * hands out. A REVOKE for a message to come revokes the key, and that
 * message's receive carries it.
 *
 * The notes a peer can make wait are bounded per endpoint: twice
 * RMCA_ep_max_core_ops (what an honest peer can have unreceived). A REVOKE
 * past that (one for a message far in the future that never comes, and
 * more) closes the control channel as a protocol error, logged; it revokes
 * nothing and is not acknowledged. A note taken by its receive frees its
 * place.
 *
 * The acks this side's REVOKEs get: one to a REVOKE still in the channel's
 * send buffer (the peer cannot have read it; it guessed the number) breaks
 * the protocol, and holds the send back; once written, the ack lets the
 * send go.
 *
 * revoke_msg.c alone; the rest of the core stubbed, the ack captured.
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
#include "paths.h"
#include "rails.h"

#define KEY (RMCA_KEY_USE_ONCE | 0x4242)

static struct rmca_ctrl_msg acked;
static unsigned nacks, revoked;

/* The channel's send stream: bytes queued, and written to the socket. */
static uint64_t stream_end, stream_written;

int rmca_ctrl_send(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	(void)ep;
	(void)m;
	stream_end += 30; /* a REVOKE with its prefix */
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
	(void)ep;
	acked = *m;
	nacks++;
	return 0;
}

bool rmca_rails_holding(const struct rmca_ep *ep)
{
	(void)ep;
	return false;
}

void rmca_core_work_due(struct rmca_context *ctx)
{
	(void)ctx;
}

static unsigned ndone;

void rmca_req_done(struct rmca_req *r, int status, size_t len,
		   uint64_t revoked_rkey)
{
	(void)r;
	(void)status;
	(void)len;
	(void)revoked_rkey;
	ndone++;
}

static unsigned nlogs;

void rmca_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
	nlogs++;
}

static struct rmca_mr the_mr = {.access = RMCA_ACCESS_REMOTE_WRITE |
					  RMCA_MR_USE_ONCE};

struct rmca_mr *rmca_mr_by_key(struct rmca_ep *ep, uint64_t rkey,
			       struct rmca_module_mr **mmr)
{
	(void)ep;
	*mmr = NULL;
	return rkey == KEY ? &the_mr : NULL;
}

static int revoke_fails; /* what the module's revoke returns */

static int t_revoke(struct rmca_module_mr *mr, struct rmca_conn *c,
		    uint64_t rkey)
{
	(void)mr;
	(void)c;
	assert_int_equal(rkey, KEY);
	if (revoke_fails)
		return revoke_fails;
	revoked++;
	return 0;
}

static unsigned nsends; /* messages posted to the module */

static int t_send(struct rmca_conn *c, const void *buf, size_t len,
		  struct rmca_module_mr *mr, void *req)
{
	(void)c;
	(void)buf;
	(void)len;
	(void)mr;
	(void)req;
	nsends++;
	return 0;
}

static const struct rmca_module_ops t_ops = {.revoke = t_revoke,
					     .send = t_send};
static struct rmca_module t_module = {.ops = &t_ops};
static struct rmca_mod t_mod = {.m = &t_module};

static struct rmca_context the_ctx;

static int setup(void **state)
{
	struct rmca_ep *ep = calloc(1, sizeof(*ep));

	assert_non_null(ep);
	ep->ctx = &the_ctx;
	the_ctx.ep_max_core_ops = 4; /* eight notes at most */
	ep->mod = &t_mod;
	ep->recv_seq = 5; /* five messages received */
	memset(&acked, 0, sizeof(acked));
	nacks = revoked = nlogs = nsends = ndone = 0;
	revoke_fails = 0;
	stream_end = stream_written = 0;
	rmca_list_init(&ep->deferred);
	*state = ep;
	return 0;
}

static int teardown(void **state)
{
	struct rmca_ep *ep = *state;

	while (ep->revokes) {
		struct rmca_revoke_note *n = ep->revokes;

		ep->revokes = n->next;
		free(n);
	}
	free(ep);
	return 0;
}

static void serve(struct rmca_ep *ep, uint64_t seq)
{
	struct rmca_ctrl_msg m = {
		.type = RMCA_CTRL_REVOKE, .id = seq, .rkey = KEY};

	rmca_revoke_serve(ep, &m);
	assert_int_equal(nacks, 1);
	assert_int_equal(acked.type, RMCA_CTRL_REVOKE_ACK);
	assert_int_equal(acked.id, seq);
}

static void test_revoke_for_a_message_received_is_refused(void **state)
{
	struct rmca_ep *ep = *state;

	for (uint64_t seq = 0; seq <= 5; seq++) {
		nacks = 0;
		serve(ep, seq);
		assert_int_equal(acked.status, RMCA_ERR_INVALID);
	}
	assert_int_equal(revoked, 0);
	assert_null(ep->revokes);
}

static void test_revoke_for_the_next_message_is_carried(void **state)
{
	struct rmca_ep *ep = *state;
	struct rmca_req r = {.op = RMCA_OP_RECV};

	serve(ep, 6);
	assert_int_equal(acked.status, RMCA_OK);
	assert_int_equal(revoked, 1);
	assert_non_null(ep->revokes);
	rmca_recv_revoked(ep, &r);
	assert_int_equal(ep->recv_seq, 6);
	assert_int_equal(r.revoked_rkey, KEY);
	assert_null(ep->revokes);
}

/* The peer's REVOKE of KEY for message seq: what the core made of it. */
static int serve_rc(struct rmca_ep *ep, uint64_t seq)
{
	struct rmca_ctrl_msg m = {
		.type = RMCA_CTRL_REVOKE, .id = seq, .rkey = KEY};

	nacks = 0;
	return rmca_revoke_serve(ep, &m);
}

static void
test_revokes_far_ahead_past_the_bound_break_the_protocol(void **state)
{
	struct rmca_ep *ep = *state;

	/* messages far in the future, never sent */
	for (uint64_t i = 0; i < 8; i++) {
		assert_int_equal(serve_rc(ep, (1ull << 40) + i), 0);
		assert_int_equal(nacks, 1);
		assert_int_equal(acked.status, RMCA_OK);
	}
	assert_int_equal(revoked, 8);
	assert_int_equal(nlogs, 0);
	assert_int_equal(serve_rc(ep, (1ull << 40) + 8), RMCA_ERR_PROTOCOL);
	assert_int_equal(nacks, 0);   /* the channel goes: no ack */
	assert_int_equal(revoked, 8); /* nothing revoked */
	assert_int_equal(nlogs, 1);
}

static void test_a_note_received_frees_its_place(void **state)
{
	struct rmca_ep *ep = *state;
	struct rmca_req r = {.op = RMCA_OP_RECV};

	for (uint64_t seq = 6; seq < 6 + 8; seq++)
		assert_int_equal(serve_rc(ep, seq), 0);
	rmca_recv_revoked(ep, &r); /* message 6 */
	assert_int_equal(r.revoked_rkey, KEY);
	assert_int_equal(serve_rc(ep, 6 + 8), 0);
	assert_int_equal(acked.status, RMCA_OK);
	assert_int_equal(serve_rc(ep, 6 + 9), RMCA_ERR_PROTOCOL);
}

static void test_a_refused_revoke_takes_no_place(void **state)
{
	struct rmca_ep *ep = *state;

	for (uint64_t seq = 6; seq < 6 + 8; seq++)
		assert_int_equal(serve_rc(ep, seq), 0);
	/* one for a message received is refused as before, the channel up */
	assert_int_equal(serve_rc(ep, 5), 0);
	assert_int_equal(nacks, 1);
	assert_int_equal(acked.status, RMCA_ERR_INVALID);
}

/*
 * A REVOKE refused for a message to come: its sender never sends that
 * message, numbered all the same, so the message received next is the
 * one after it, and a key revoked for that one is carried by it (it was
 * carried by the receive after, or by none).
 */
static void test_message_of_a_refused_revoke_is_skipped(void **state)
{
	struct rmca_ep *ep = *state;
	struct rmca_req r7 = {.op = RMCA_OP_RECV}, r8 = {.op = RMCA_OP_RECV};

	revoke_fails = RMCA_ERR_NO_MEMORY;
	assert_int_equal(serve_rc(ep, 6), 0);
	assert_int_equal(acked.status, RMCA_ERR_NO_MEMORY);
	revoke_fails = 0;
	assert_int_equal(serve_rc(ep, 7), 0);
	assert_int_equal(acked.status, RMCA_OK);
	rmca_recv_revoked(ep, &r7); /* message 6 never came: this is 7 */
	assert_int_equal(ep->recv_seq, 7);
	assert_int_equal(r7.revoked_rkey, KEY);
	rmca_recv_revoked(ep, &r8);
	assert_int_equal(ep->recv_seq, 8);
	assert_int_equal(r8.revoked_rkey, 0);
	assert_null(ep->revokes);
}

/* A key refused for the use-once bit it lacks: the same. */
static void test_refused_key_leaves_its_message_skipped(void **state)
{
	struct rmca_ep *ep = *state;
	struct rmca_ctrl_msg m = {
		.type = RMCA_CTRL_REVOKE, .id = 6, .rkey = 0x4242};
	struct rmca_req r = {.op = RMCA_OP_RECV};

	assert_int_equal(rmca_revoke_serve(ep, &m), 0);
	assert_int_equal(acked.status, RMCA_ERR_INVALID);
	rmca_recv_revoked(ep, &r);
	assert_int_equal(ep->recv_seq, 7);
	assert_null(ep->revokes);
}

/*
 * A REVOKE names a message after the one the REVOKE before named: its
 * sender numbers messages as it posts them and sends their REVOKEs in that
 * order. Naming one again, or an earlier one, breaks the protocol: logged,
 * nothing revoked, no ack, the notes as they were.
 */
static void test_revoke_out_of_order_breaks_the_protocol(void **state)
{
	struct rmca_ep *ep = *state;
	struct rmca_req r = {.op = RMCA_OP_RECV};

	assert_int_equal(serve_rc(ep, 10), 0);
	assert_int_equal(acked.status, RMCA_OK);
	assert_int_equal(serve_rc(ep, 10), RMCA_ERR_PROTOCOL);
	assert_int_equal(nacks, 0);
	assert_int_equal(serve_rc(ep, 8), RMCA_ERR_PROTOCOL);
	assert_int_equal(nacks, 0);
	assert_int_equal(revoked, 1);
	assert_int_equal(nlogs, 2);
	assert_int_equal(ep->nrevokes, 1);
	for (uint64_t seq = 6; seq <= 10; seq++) {
		r.revoked_rkey = 0;
		rmca_recv_revoked(ep, &r);
		assert_int_equal(ep->recv_seq, seq);
		assert_int_equal(r.revoked_rkey, seq == 10 ? KEY : 0);
	}
	assert_null(ep->revokes);
	assert_int_equal(ep->nrevokes, 0);
}

/*
 * A send_inv by revoke message: its REVOKE (message 1) is stuck in the
 * channel's send buffer, the peer not reading. The peer acks message 1 all
 * the same: a REVOKE it cannot have read. That breaks the protocol,
 * logged; the send stays held, not posted before its key is revoked. The
 * same ack once the REVOKE is written lets the send go.
 */
static void test_ack_of_a_revoke_not_sent_breaks_the_protocol(void **state)
{
	struct rmca_ep *ep = *state;
	struct rmca_req r = {.op = RMCA_OP_SEND, .inv_rkey = KEY};
	struct rmca_ctrl_msg ack = {.type = RMCA_CTRL_REVOKE_ACK, .id = 1};

	assert_int_equal(rmca_deferred_add(ep, &r), 0);
	assert_int_equal(r.seq, 1);
	stream_written = stream_end - 1; /* all but its last byte */
	assert_int_equal(rmca_revoke_acked(ep, &ack), RMCA_ERR_PROTOCOL);
	assert_int_equal(nlogs, 1);
	assert_false(r.acked);
	assert_ptr_equal(ep->unacked, &r);
	assert_int_equal(nsends, 0);
	assert_int_equal(ndone, 0);

	stream_written = stream_end;
	assert_int_equal(rmca_revoke_acked(ep, &ack), 0);
	assert_true(r.acked);
	assert_null(ep->unacked);
	assert_int_equal(nsends, 1);
	assert_int_equal(ndone, 0);
}

extern unsigned long rmca_revoke_steps; /* revoke_msg.c, for tests */

/*
 * A peer holding the most notes it may (twice RMCA_ep_max_core_ops at its
 * default, 16,384) costs each receive a look at one or two notes, not a
 * walk through all of them: counted, notes looked at per receive.
 */
static void test_a_receive_looks_at_the_oldest_note_alone(void **state)
{
	struct rmca_ep *ep = *state;
	const unsigned max = 2 * 16384, far = 1000;
	struct rmca_req r = {.op = RMCA_OP_RECV};

	the_ctx.ep_max_core_ops = 16384;
	for (unsigned i = 0; i < max; i++) {
		/* every other message never comes */
		revoke_fails = i % 2 ? 0 : RMCA_ERR_NO_MEMORY;
		assert_int_equal(serve_rc(ep, 6 + far + i), 0);
	}
	revoke_fails = 0;
	assert_int_equal(ep->nrevokes, max);
	assert_int_equal(serve_rc(ep, 6 + far + max), RMCA_ERR_PROTOCOL);

	/* messages before the first noted: two looks each (no note that
	 * never comes, no key) */
	rmca_revoke_steps = 0;
	for (unsigned i = 0; i < far; i++)
		rmca_recv_revoked(ep, &r);
	assert_int_equal(ep->recv_seq, 5 + far);
	assert_int_equal(r.revoked_rkey, 0);
	assert_int_equal(rmca_revoke_steps, 2 * far);

	/* then each receive skips the one that never comes and takes its
	 * own: three looks */
	rmca_revoke_steps = 0;
	for (unsigned i = 0; i < max / 2; i++) {
		r.revoked_rkey = 0;
		rmca_recv_revoked(ep, &r);
		assert_int_equal(ep->recv_seq, 5 + far + 2 * (i + 1));
		assert_int_equal(r.revoked_rkey, KEY);
	}
	assert_int_equal(rmca_revoke_steps, 3 * (max / 2));
	assert_null(ep->revokes);
	assert_int_equal(ep->nrevokes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_revoke_for_a_message_received_is_refused, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_revoke_for_the_next_message_is_carried, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_revokes_far_ahead_past_the_bound_break_the_protocol,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_a_note_received_frees_its_place, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_a_refused_revoke_takes_no_place, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_message_of_a_refused_revoke_is_skipped, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_refused_key_leaves_its_message_skipped, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_revoke_out_of_order_breaks_the_protocol, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_a_receive_looks_at_the_oldest_note_alone, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_ack_of_a_revoke_not_sent_breaks_the_protocol,
			setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
