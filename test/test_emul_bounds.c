/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The operations the cores emulate, at their bounds, with the rest of the
 * core played by this test (the control channel is a list of the
 * messages sent, a region is what the key lookup answers):
 *
 * - the target's core (atomic_core.c, get_core.c, verify.c) serves an
 *   access that ends on the region's last byte and refuses the one a
 *   byte longer, refuses an atomic off its 8-byte alignment and any
 *   access its region's flags do not allow;
 * - the initiator's core takes an answer only for the request it waits
 *   for, of the length asked, leaves a refused atomic's result and a
 *   refused get's buffer as they were, and gives back each request it
 *   held;
 * - a get waits behind a fence when puts or gets went before it, and
 *   completes with the first fence's error, never with RMCA_ERR_AGAIN;
 * - the CAS loop guesses 0 first, ends at a failed step, and a step it
 *   cannot post ends it with RMCA_ERR_CONNECTION.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctrl.h"
#include "ep.h"
#include "internal.h"
#include "paths.h"
#include "rails.h"

/* ---- the rest of the core, played here ---- */

#define MAX_SENT 8

static struct rmca_ctrl_msg sent[MAX_SENT]; /* rmca_ctrl_send{,_owed} */
static int nsent;
static int send_rc;			  /* what rmca_ctrl_send returns */
static struct rmca_req *fences[MAX_SENT]; /* rmca_rails_flush */
static int nfences;
static struct rmca_req *done_req; /* the last rmca_req_done */
static int done_status, ndone;
static struct rmca_mr region; /* what every key other than 0 names */
static uint64_t region_key;

void rmca_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

void rmca_core_work_due(struct rmca_context *ctx)
{
	(void)ctx;
}

void rmca_ep_advance(struct rmca_ep *ep)
{
	(void)ep;
}

struct rmca_mr *rmca_mr_by_key(struct rmca_ep *ep, uint64_t rkey,
			       struct rmca_module_mr **mmr)
{
	(void)ep;
	*mmr = NULL;
	return rkey && rkey == region_key ? &region : NULL;
}

static void record(const struct rmca_ctrl_msg *m)
{
	assert_true(nsent < MAX_SENT);
	sent[nsent++] = *m;
}

int rmca_ctrl_send(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	(void)ep;
	if (send_rc)
		return send_rc;
	record(m);
	return 0;
}

int rmca_ctrl_send_owed(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	(void)ep;
	record(m);
	return 0;
}

int rmca_ctrl_send_verify(struct rmca_ep *ep, struct rmca_ctrl_msg *m)
{
	(void)ep;
	m->id = 1;
	record(m);
	return 0;
}

long rmca_ctrl_verify_answer(struct rmca_ep *ep, uint64_t id, bool late)
{
	(void)ep;
	(void)id;
	(void)late;
	return 0;
}

/* Every message here is written as soon as it is queued. */
uint64_t rmca_ctrl_sent_end(const struct rmca_ep *ep)
{
	(void)ep;
	return 0;
}

bool rmca_ctrl_written(const struct rmca_ep *ep, uint64_t end)
{
	(void)ep;
	(void)end;
	return true;
}

int rmca_rails_flush(struct rmca_ep *ep, struct rmca_req *f)
{
	(void)ep;
	assert_true(nfences < MAX_SENT);
	fences[nfences++] = f;
	return 0;
}

struct rmca_req *rmca_req_alloc_new(struct rmca_context *ctx)
{
	struct rmca_req *r = calloc(1, sizeof(*r));

	if (r)
		r->ctx = ctx;
	return r;
}

void rmca_req_done(struct rmca_req *r, int status, size_t len,
		   uint64_t revoked_rkey)
{
	(void)len;
	(void)revoked_rkey;
	done_req = r;
	done_status = status;
	ndone++;
}

/* The module's native CSWAP, for the CAS loop: the ops it was asked. */
static struct rmca_atomic posted[MAX_SENT];
static int nposted, post_rc;

static int t_atomic(struct rmca_conn *c, const struct rmca_atomic *op,
		    uint64_t *result, struct rmca_module_mr *mr, void *req)
{
	(void)c;
	(void)result;
	(void)mr;
	(void)req;
	if (post_rc)
		return post_rc;
	assert_true(nposted < MAX_SENT);
	posted[nposted++] = *op;
	return 0;
}

static const struct rmca_module_ops t_mops = {.atomic = t_atomic};
static struct rmca_module t_module = {.ops = &t_mops};
static struct rmca_mod t_mod = {.m = &t_module};

static struct rmca_context ctx;
static struct rmca_ep ep;
static struct rmca_req req;

static int setup(void **state)
{
	(void)state;
	memset(sent, 0, sizeof(sent));
	nsent = send_rc = nfences = ndone = done_status = 0;
	nposted = post_rc = 0;
	done_req = NULL;
	memset(&ctx, 0, sizeof(ctx));
	memset(&ep, 0, sizeof(ep));
	memset(&req, 0, sizeof(req));
	ctx.ep_max_core_ops = 4;
	ctx.req_nspare = RMCA_REQ_SPARE_MAX; /* a fence goes back to free() */
	ep.ctx = &ctx;
	ep.mod = &t_mod;
	ep.ctrl = (struct rmca_ctrl *)&ep; /* up: never looked into here */
	rmca_list_init(&ep.am_wait);
	rmca_list_init(&ep.get_held);
	rmca_list_init(&ep.get_wait);
	rmca_list_init(&ep.get_fences);
	req.ep = &ep;
	req.ctx = &ctx;
	region_key = 0x5eed;
	return 0;
}

/* The region: len bytes at addr, with access. */
static void region_is(void *addr, size_t len, unsigned access)
{
	region.addr = addr;
	region.len = len;
	region.access = access | RMCA_ACCESS_LOCAL;
}

/* ---- the target's core ---- */

static _Alignas(8) uint8_t mem[64];

/* A FADD of 1 at mem + off served: its answer's status. */
static int atomic_at(size_t off)
{
	struct rmca_ctrl_msg m = {.type = RMCA_CTRL_ATOMIC_REQ, .id = 1};

	m.op.kind = RMCA_ATOMIC_FADD;
	m.op.raddr = (uintptr_t)(mem + off);
	m.op.rkey = region_key;
	m.op.operand = 1;
	nsent = 0;
	rmca_atomic_serve(&ep, &m);
	assert_int_equal(nsent, 1);
	assert_int_equal(sent[0].type, RMCA_CTRL_ATOMIC_RESP);
	return sent[0].status;
}

/* A word ending on the region's last byte is served; one ending a byte
 * past it is refused, and the word is left as it was. */
static void atomic_at_the_regions_end(void **state)
{
	(void)state;
	memset(mem, 0, sizeof(mem));
	region_is(mem, 16, RMCA_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(atomic_at(8), 0);
	assert_int_equal(mem[8], 1);
	region_is(mem, 15, RMCA_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(atomic_at(8), RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(mem[8], 1);
	assert_int_equal(atomic_at(0), 0);
	assert_int_equal(mem[0], 1);
}

/* Off its 8-byte alignment, or on a region without remote atomics: the
 * atomic is refused, the memory untouched. */
static void atomic_misaligned_or_not_allowed(void **state)
{
	static const uint8_t zero[sizeof(mem)];

	(void)state;
	memset(mem, 0, sizeof(mem));
	region_is(mem, sizeof(mem), RMCA_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(atomic_at(4), RMCA_ERR_REMOTE_ACCESS);
	region_is(mem, sizeof(mem),
		  RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE);
	assert_int_equal(atomic_at(8), RMCA_ERR_REMOTE_ACCESS);
	assert_memory_equal(mem, zero, sizeof(mem));
}

static int get_at(size_t off, uint64_t len)
{
	struct rmca_ctrl_msg m = {.type = RMCA_CTRL_GET_REQ,
				  .id = 1,
				  .raddr = (uintptr_t)(mem + off),
				  .rkey = region_key,
				  .len = len};

	nsent = 0;
	rmca_get_serve(&ep, &m);
	assert_int_equal(nsent, 1);
	assert_int_equal(sent[0].type, RMCA_CTRL_GET_RESP);
	return sent[0].status;
}

/* A get of the region's last 8 bytes is answered with them; 9 bytes from
 * the same place, or any get of a region without remote read, are
 * refused. */
static void get_at_the_regions_end(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)i;
	region_is(mem, 40, RMCA_ACCESS_REMOTE_READ);
	assert_int_equal(get_at(32, 8), 0);
	assert_int_equal(sent[0].len, 8);
	assert_memory_equal(sent[0].data, mem + 32, 8);
	assert_int_equal(get_at(32, 9), RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(sent[0].len, 0);
	region_is(mem, 40, RMCA_ACCESS_REMOTE_WRITE);
	assert_int_equal(get_at(0, 8), RMCA_ERR_REMOTE_ACCESS);
}

static int verify_at(size_t off, uint64_t len, uint8_t access)
{
	struct rmca_ctrl_msg m = {.type = RMCA_CTRL_VERIFY,
				  .id = 1,
				  .raddr = (uintptr_t)(mem + off),
				  .rkey = region_key,
				  .len = len,
				  .access = access};

	nsent = 0;
	rmca_verify_serve(&ep, &m);
	assert_int_equal(nsent, 1);
	assert_int_equal(sent[0].type, RMCA_CTRL_VERIFY_RESP);
	return sent[0].status;
}

/* A verification answers as the access would have been served: up to the
 * region's last byte and no further, and only with the access asked. */
static void verify_at_the_regions_end(void **state)
{
	(void)state;
	region_is(mem, 40, RMCA_ACCESS_REMOTE_WRITE);
	assert_int_equal(verify_at(32, 8, RMCA_ACCESS_REMOTE_WRITE), 0);
	assert_int_equal(verify_at(32, 9, RMCA_ACCESS_REMOTE_WRITE),
			 RMCA_ERR_REMOTE_ACCESS);
	assert_int_equal(verify_at(0, 8, RMCA_ACCESS_REMOTE_READ),
			 RMCA_ERR_REMOTE_ACCESS);
}

/* The verification of a failed put asks about writing, of a get about
 * reading. */
static void verify_asks_for_the_access_made(void **state)
{
	(void)state;
	req.op = RMCA_OP_PUT;
	req.rkey = region_key;
	req.raddr = 0x1000;
	req.rlen = 8;
	assert_true(rmca_verify_start(&ep, &req));
	assert_int_equal(sent[0].type, RMCA_CTRL_VERIFY);
	assert_int_equal(sent[0].access, RMCA_ACCESS_REMOTE_WRITE);
	ep.verify_wait = NULL;
	req.op = RMCA_OP_GET;
	assert_true(rmca_verify_start(&ep, &req));
	assert_int_equal(sent[1].access, RMCA_ACCESS_REMOTE_READ);
	ep.verify_wait = NULL;
}

/* ---- the initiator's core: answers ---- */

/* req, an atomic sent with id 7 and held, its result word holding v. */
static uint64_t result;

static void atomic_waiting(uint64_t v)
{
	result = v;
	req.op = RMCA_OP_ATOMIC;
	req.result = &result;
	req.am_id = 7;
	rmca_core_add(&ep.am_wait, &req);
	ep.nheld = 1;
}

/* A refusal leaves the result word as the native paths do: as it was. A
 * value is taken only with success, and each answer gives its hold back. */
static void refused_atomic_leaves_its_result(void **state)
{
	struct rmca_ctrl_msg a = {.type = RMCA_CTRL_ATOMIC_RESP,
				  .id = 7,
				  .status = RMCA_ERR_REMOTE_ACCESS};

	(void)state;
	atomic_waiting(0x5a5a);
	assert_int_equal(rmca_atomic_answered(&ep, &a), 0);
	assert_int_equal(ndone, 1);
	assert_int_equal(done_status, RMCA_ERR_REMOTE_ACCESS);
	assert_true(result == 0x5a5a);
	assert_int_equal(ep.nheld, 0);

	atomic_waiting(0x5a5a);
	a.status = 0;
	a.old = 0x1234;
	assert_int_equal(rmca_atomic_answered(&ep, &a), 0);
	assert_int_equal(done_status, 0);
	assert_true(result == 0x1234);
	assert_int_equal(ep.nheld, 0);
}

/* An answer naming another atomic than the oldest waiting breaks the
 * protocol; the atomic still waits, its result untouched. */
static void atomic_answer_for_another_id_is_refused(void **state)
{
	struct rmca_ctrl_msg a = {
		.type = RMCA_CTRL_ATOMIC_RESP, .id = 8, .old = 0x1234};

	(void)state;
	atomic_waiting(0x5a5a);
	assert_int_equal(rmca_atomic_answered(&ep, &a), RMCA_ERR_PROTOCOL);
	assert_int_equal(ndone, 0);
	assert_true(result == 0x5a5a);
	assert_ptr_equal(rmca_core_first(&ep.am_wait), &req);
	assert_int_equal(ep.nheld, 1);
}

static uint8_t getbuf[16];

static void get_waiting(size_t len)
{
	memset(getbuf, 'x', sizeof(getbuf));
	req.op = RMCA_OP_GET;
	req.get_buf = getbuf;
	req.rlen = len;
	req.am_id = 7;
	rmca_core_add(&ep.get_wait, &req);
	ep.nheld = 1;
}

/* An answer of another length than asked breaks the protocol, the buffer
 * untouched; a refusal leaves the buffer as it was. */
static void get_answer_of_other_length_or_refused(void **state)
{
	struct rmca_ctrl_msg a = {
		.type = RMCA_CTRL_GET_RESP, .id = 7, .len = 4};

	(void)state;
	memset(a.data, 'd', sizeof(a.data));
	get_waiting(8);
	assert_int_equal(rmca_get_answered(&ep, &a), RMCA_ERR_PROTOCOL);
	assert_int_equal(ndone, 0);
	assert_int_equal(getbuf[0], 'x');
	rmca_list_del(&req.core_link);

	get_waiting(8);
	a.len = 0;
	a.status = RMCA_ERR_REMOTE_ACCESS;
	assert_int_equal(rmca_get_answered(&ep, &a), 0);
	assert_int_equal(done_status, RMCA_ERR_REMOTE_ACCESS);
	for (size_t i = 0; i < sizeof(getbuf); i++)
		assert_int_equal(getbuf[i], 'x');
	assert_int_equal(ep.nheld, 0);
}

/* ---- order, and the bound of held requests ---- */

/* After a put, a get waits for a fence before it is sent; once the
 * fence completes it goes. */
static void get_after_a_put_waits_for_a_fence(void **state)
{
	(void)state;
	ep.rma_ops = 1;
	assert_int_equal(rmca_get_core(&ep, &req, getbuf, 8), 0);
	assert_int_equal(nfences, 1);
	assert_int_equal(nsent, 0);
	rmca_get_fence_done(fences[0], 0);
	assert_int_equal(nsent, 1);
	assert_int_equal(sent[0].type, RMCA_CTRL_GET_REQ);
	assert_int_equal(sent[0].len, 8);
	assert_int_equal(ndone, 0);
}

/* A held get whose channel cannot take its request ends with
 * RMCA_ERR_NO_MEMORY: RMCA_ERR_AGAIN is no status for a completion. */
static void held_get_not_sent_ends_without_again(void **state)
{
	(void)state;
	ep.rma_ops = 1;
	assert_int_equal(rmca_get_core(&ep, &req, getbuf, 8), 0);
	send_rc = RMCA_ERR_AGAIN;
	rmca_get_fence_done(fences[0], 0);
	assert_int_equal(ndone, 1);
	assert_int_equal(done_status, RMCA_ERR_NO_MEMORY);
	assert_int_equal(ep.nheld, 0);
}

/* Two fences fail: the held get ends with the first one's error. */
static void held_get_ends_with_the_first_fence_error(void **state)
{
	struct rmca_req r2 = {.ep = &ep, .ctx = &ctx};

	(void)state;
	ep.rma_ops = 1;
	assert_int_equal(rmca_get_core(&ep, &req, getbuf, 8), 0);
	ep.rma_ops = 2;
	assert_int_equal(rmca_get_core(&ep, &r2, getbuf, 8), 0);
	assert_int_equal(nfences, 2);
	rmca_get_fence_done(fences[0], RMCA_ERR_CONNECTION);
	assert_int_equal(ndone, 1);
	assert_ptr_equal(done_req, &req);
	assert_int_equal(done_status, RMCA_ERR_CONNECTION);
	rmca_get_fence_done(fences[1], RMCA_ERR_TIMEOUT);
	assert_int_equal(ndone, 2);
	assert_ptr_equal(done_req, &r2);
	assert_int_equal(done_status, RMCA_ERR_CONNECTION);
}

/* ep_max_core_ops requests held, and no more: the next is AGAIN. */
static void held_requests_stop_at_the_bound(void **state)
{
	(void)state;
	ep.nheld = ctx.ep_max_core_ops - 1;
	assert_int_equal(rmca_get_core(&ep, &req, getbuf, 8), 0);
	assert_int_equal(ep.nheld, ctx.ep_max_core_ops);
	assert_int_equal(rmca_get_core(&ep, &req, getbuf, 8), RMCA_ERR_AGAIN);
	req.op = RMCA_OP_ATOMIC;
	assert_int_equal(rmca_emul_atomic(&ep, &req), RMCA_ERR_AGAIN);
	assert_int_equal(nsent, 1);
}

/* ---- the CAS loop ---- */

static void cas_waiting(uint64_t v)
{
	result = v;
	req.op = RMCA_OP_ATOMIC;
	req.path = RMCA_PATH_CAS_LOOP;
	req.result = &result;
	req.aop.kind = RMCA_ATOMIC_FADD;
	req.aop.operand = 1;
	req.aop.rkey = region_key;
}

/* On a word that is 0 the loop's first guess is right: one CSWAP. */
static void cas_loop_guesses_zero_first(void **state)
{
	(void)state;
	cas_waiting(0);
	assert_int_equal(rmca_cas_start(&ep, &req), 0);
	assert_int_equal(nposted, 1);
	assert_int_equal(posted[0].kind, RMCA_ATOMIC_CSWAP);
	assert_true(posted[0].compare == 0 && posted[0].operand == 1);
	/* the CSWAP found 0: done */
	assert_false(rmca_cas_step_done(&req, 0));
	assert_int_equal(nposted, 1);
}

/* A step that failed ends the loop with its status, whatever the result
 * word holds: nothing more is posted. */
static void cas_loop_ends_at_a_failed_step(void **state)
{
	(void)state;
	cas_waiting(0);
	assert_int_equal(rmca_cas_start(&ep, &req), 0);
	result = 0x77; /* not the guess: a loop that read it would go on */
	assert_false(rmca_cas_step_done(&req, RMCA_ERR_REMOTE_ACCESS));
	assert_int_equal(nposted, 1);
	assert_int_equal(ndone, 0);
}

/* A guess that was wrong is posted again; a step the module cannot take
 * ends the loop with RMCA_ERR_CONNECTION, never RMCA_ERR_AGAIN. */
static void cas_loop_step_not_posted_ends_without_again(void **state)
{
	(void)state;
	cas_waiting(0);
	assert_int_equal(rmca_cas_start(&ep, &req), 0);
	result = 0x77;
	post_rc = RMCA_ERR_AGAIN;
	assert_true(rmca_cas_step_done(&req, 0));
	assert_int_equal(ndone, 1);
	assert_int_equal(done_status, RMCA_ERR_CONNECTION);
	assert_int_equal(req.path, RMCA_PATH_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(atomic_at_the_regions_end, setup),
		cmocka_unit_test_setup(atomic_misaligned_or_not_allowed, setup),
		cmocka_unit_test_setup(get_at_the_regions_end, setup),
		cmocka_unit_test_setup(verify_at_the_regions_end, setup),
		cmocka_unit_test_setup(verify_asks_for_the_access_made, setup),
		cmocka_unit_test_setup(refused_atomic_leaves_its_result, setup),
		cmocka_unit_test_setup(atomic_answer_for_another_id_is_refused,
				       setup),
		cmocka_unit_test_setup(get_answer_of_other_length_or_refused,
				       setup),
		cmocka_unit_test_setup(get_after_a_put_waits_for_a_fence,
				       setup),
		cmocka_unit_test_setup(held_get_not_sent_ends_without_again,
				       setup),
		cmocka_unit_test_setup(held_get_ends_with_the_first_fence_error,
				       setup),
		cmocka_unit_test_setup(held_requests_stop_at_the_bound, setup),
		cmocka_unit_test_setup(cas_loop_guesses_zero_first, setup),
		cmocka_unit_test_setup(cas_loop_ends_at_a_failed_step, setup),
		cmocka_unit_test_setup(
			cas_loop_step_not_posted_ends_without_again, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
