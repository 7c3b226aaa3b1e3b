// SPDX-License-Identifier: BSD-3-Clause
/* The hello codec: round trips, and every malformed input refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rmca.h>
#include <rmca/component.h>

#include "ctrl.h"
#include "wire.h"
#include "wire_util.h"

static void sample(struct rmca_hello *h)
{
	wu_hello(h, 0x1122334455667788ull, RMCA_ROLE_ACTIVE, 2,
		 "5b9c8a46-3f0e-4f0a-9d57-2ab0b8f1e6c1");
	h->netns = 4026531840ull;
	h->nmods = 2;
	h->mods[0] =
		wu_mod("ib", "rxe0", RMCA_CAP_ATOMIC | RMCA_CAP_LOOPBACK, 50);
	wu_mod_addr(&h->mods[0], "\x01\x02\x03", 3);
	h->mods[1] = wu_mod("tcp", "lo", 0, -1);
}

static int encode(const struct rmca_hello *h, uint8_t *buf)
{
	int n = rmca_hello_encode(h, buf, RMCA_HELLO_MAX);

	assert_true(n > 0);
	return n;
}

static void hello_round_trip_keeps_every_field(void **state)
{
	struct rmca_hello h, d;
	uint8_t buf[RMCA_HELLO_MAX];
	char why[128];
	int n;

	(void)state;
	sample(&h);
	n = encode(&h, buf);
	assert_int_equal(rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)), 0);
	assert_true(d.token == h.token);
	assert_int_equal(d.role, RMCA_ROLE_ACTIVE);
	assert_int_equal(d.atomic_mode, 2);
	assert_true(d.netns == h.netns);
	assert_string_equal(d.boot_id, h.boot_id);
	assert_int_equal(d.nmods, 2);
	assert_string_equal(d.mods[0].component, "ib");
	assert_string_equal(d.mods[0].device, "rxe0");
	assert_int_equal(d.mods[0].caps, h.mods[0].caps);
	assert_int_equal(d.mods[0].priority, 50);
	assert_int_equal(d.mods[0].addr_len, 3);
	assert_memory_equal(d.mods[0].addr, "\x01\x02\x03", 3);
	assert_int_equal(d.mods[1].priority, -1);
}

/* Since version 2: the active side says how many rails it takes, the passive's
 * answer lists them; a rail naming a module the answer lacks, or more
 * rails than allowed, is refused. */
static void rails_round_trip_and_bad_rails_are_refused(void **state)
{
	struct rmca_hello h, d;
	uint8_t buf[RMCA_HELLO_MAX];
	char why[128];
	int n;

	(void)state;
	sample(&h);
	h.nrails = 3;
	n = encode(&h, buf);
	assert_int_equal(
		rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)), 0);
	assert_int_equal(d.nrails, 3);

	h.role = RMCA_ROLE_PASSIVE;
	h.choice_a = 0;
	h.choice_p = 0;
	h.nrails = 1;
	h.rail_a[0] = 5; /* the active's: checked by the active side */
	h.rail_p[0] = 1;
	n = encode(&h, buf);
	assert_int_equal(
		rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)), 0);
	assert_int_equal(d.nrails, 1);
	assert_int_equal(d.rail_a[0], 5);
	assert_int_equal(d.rail_p[0], 1);

	h.rail_p[0] = 2; /* the answer has two modules */
	n = encode(&h, buf);
	assert_int_equal(
		rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)),
		RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(why, "rail 0 names module 2 of 2"));

	h.rail_p[0] = 1;
	n = encode(&h, buf);
	buf[n - 3] = RMCA_WIRE_MAX_RAILS + 1; /* the rail count */
	assert_int_equal(
		rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)),
		RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(why, "rails, at most"));

	h.nrails = RMCA_WIRE_MAX_RAILS + 1;
	assert_true(rmca_hello_encode(&h, buf, RMCA_HELLO_MAX) < 0);
}

/* Version 3: the active side's reply to an answer that listed rails, the
 * rails it takes. Increasing indexes, at most RMCA_WIRE_MAX_RAILS of them;
 * whether each was listed is the passive side's check (framework/ep.c). */
static void rails_taken_round_trip_and_bad_counts_are_refused(void **state)
{
	struct rmca_hello h = {.version = RMCA_WIRE_VERSION,
			       .kind = RMCA_WIRE_RAILS,
			       .ntaken = 2,
			       .taken = {0, 2}};
	struct rmca_hello d;
	uint8_t buf[64];
	char why[128];
	int n;

	(void)state;
	n = rmca_hello_encode(&h, buf, sizeof(buf));
	assert_int_equal(n, 8 + 1 + 2);
	assert_int_equal(
		rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)), 0);
	assert_int_equal(d.kind, RMCA_WIRE_RAILS);
	assert_int_equal(d.ntaken, 2);
	assert_int_equal(d.taken[0], 0);
	assert_int_equal(d.taken[1], 2);
	for (int len = 0; len < n; len++)
		assert_int_equal(rmca_hello_decode(buf, (size_t)len, &d, why,
						   sizeof(why)),
				 RMCA_ERR_PROTOCOL);

	/* none taken is a reply too */
	h.ntaken = 0;
	n = rmca_hello_encode(&h, buf, sizeof(buf));
	assert_int_equal(
		rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)), 0);
	assert_int_equal(d.ntaken, 0);

	h.ntaken = 2;
	h.taken[1] = 0; /* twice the same */
	n = rmca_hello_encode(&h, buf, sizeof(buf));
	assert_int_equal(
		rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)),
		RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(why, "increasing, once each"));

	h.taken[1] = 1;
	n = rmca_hello_encode(&h, buf, sizeof(buf));
	buf[8] = RMCA_WIRE_MAX_RAILS + 1; /* the count */
	assert_int_equal(
		rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)),
		RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(why, "takes 8 rails, at most 7"));
	buf[8] = 2;
	buf[n++] = 5; /* a byte beyond the count */
	assert_int_equal(
		rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)),
		RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(why, "trailing"));

	h.ntaken = RMCA_WIRE_MAX_RAILS + 1;
	assert_true(rmca_hello_encode(&h, buf, sizeof(buf)) < 0);
}

static void reject_round_trip_keeps_status_and_reason(void **state)
{
	struct rmca_hello h = { .version = RMCA_WIRE_VERSION,
				.kind = RMCA_WIRE_REJECT,
				.status = RMCA_ERR_UNREACHABLE };
	struct rmca_hello d;
	uint8_t buf[512];
	char why[128];
	int n;

	(void)state;
	strcpy(h.reason, "no enabled transport");
	n = rmca_hello_encode(&h, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)), 0);
	assert_int_equal(d.kind, RMCA_WIRE_REJECT);
	assert_int_equal(d.status, RMCA_ERR_UNREACHABLE);
	assert_string_equal(d.reason, "no enabled transport");
}

static void every_truncation_is_refused(void **state)
{
	struct rmca_hello h, d;
	uint8_t buf[RMCA_HELLO_MAX];
	char why[128];
	int n;

	(void)state;
	sample(&h);
	n = encode(&h, buf);
	for (int len = 0; len < n; len++)
		assert_int_equal(rmca_hello_decode(buf, (size_t)len, &d, why,
						   sizeof(why)),
				 RMCA_ERR_PROTOCOL);
}

static void trailing_bytes_are_refused(void **state)
{
	struct rmca_hello h, d;
	uint8_t buf[RMCA_HELLO_MAX];
	char why[128];
	int n;

	(void)state;
	sample(&h);
	n = encode(&h, buf);
	buf[n] = 0;
	assert_int_equal(rmca_hello_decode(buf, (size_t)n + 1, &d, why, sizeof(why)),
			 RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(why, "trailing"));
}

static void other_version_is_refused_and_named(void **state)
{
	struct rmca_hello h, d;
	uint8_t buf[RMCA_HELLO_MAX];
	char why[128];
	int n;

	(void)state;
	sample(&h);
	h.version = RMCA_WIRE_VERSION + 1;
	n = encode(&h, buf);
	assert_int_equal(rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)),
			 RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(why, "version"));
}

static void bad_magic_kind_role_and_counts_are_refused(void **state)
{
	struct rmca_hello h, d;
	uint8_t buf[RMCA_HELLO_MAX];
	char why[128];
	int n;

	(void)state;
	sample(&h);
	n = encode(&h, buf);
	buf[0] ^= 0xff; /* magic */
	assert_int_equal(rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)),
			 RMCA_ERR_PROTOCOL);
	buf[0] ^= 0xff;
	buf[6] = 9; /* kind */
	assert_int_equal(rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)),
			 RMCA_ERR_PROTOCOL);
	buf[6] = RMCA_WIRE_HELLO;
	buf[16] = 7; /* role */
	assert_int_equal(rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)),
			 RMCA_ERR_PROTOCOL);
	buf[16] = RMCA_ROLE_ACTIVE;
	/* the module count sits after the boot id */
	buf[8 + 8 + 4 + 8 + 1 + strlen(h.boot_id)] = 200;
	assert_int_equal(rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)),
			 RMCA_ERR_PROTOCOL);
}

static void non_printable_names_are_refused(void **state)
{
	struct rmca_hello h, d;
	uint8_t buf[RMCA_HELLO_MAX];
	char why[128];
	int n;

	(void)state;
	sample(&h);
	h.mods[0].device[1] = '\n';
	n = encode(&h, buf);
	assert_int_equal(rmca_hello_decode(buf, (size_t)n, &d, why, sizeof(why)),
			 RMCA_ERR_PROTOCOL);
}

static void random_bytes_never_crash_the_decoder(void **state)
{
	struct rmca_hello h, d;
	uint8_t buf[RMCA_HELLO_MAX];
	char why[128];
	int n;

	(void)state;
	sample(&h);
	n = encode(&h, buf);
	srand(42);
	for (int i = 0; i < 20000; i++) {
		uint8_t m[RMCA_HELLO_MAX];
		int len = rand() % (n + 8);

		memcpy(m, buf, (size_t)n);
		for (int k = 0; k < 4; k++)
			m[rand() % n] = (uint8_t)rand();
		/* Either outcome is fine; reading out of bounds is not
		 * (run under valgrind or ASan to see it). */
		(void)rmca_hello_decode(m, (size_t)len, &d, why, sizeof(why));
	}
}

/* ---- the control channel's messages ---- */

static void ctrl_round_trip(const struct rmca_ctrl_msg *m, struct rmca_ctrl_msg *d)
{
	uint8_t buf[4 + RMCA_CTRL_MAX];
	char why[128];
	int n = rmca_ctrl_encode(m, buf, sizeof(buf));

	assert_true(n > 4);
	assert_int_equal(buf[0] | buf[1] << 8 | buf[2] << 16 | buf[3] << 24,
			 n - 4);
	assert_int_equal(rmca_ctrl_decode(buf + 4, (size_t)n - 4, d, why,
					  sizeof(why)), 0);
}

static void ctrl_messages_round_trip(void **state)
{
	struct rmca_ctrl_msg m = { .type = RMCA_CTRL_ATOMIC_REQ, .id = 77,
				   .op = { .kind = RMCA_ATOMIC_MASKED_CSWAP,
					   .raddr = 0x7fff0008, .rkey = ~0ull,
					   .operand = 1, .compare = 2,
					   .compare_mask = 3, .swap_mask = 4,
					   .field_boundary = 5 } };
	struct rmca_ctrl_msg d;

	(void)state;
	ctrl_round_trip(&m, &d);
	assert_int_equal(d.type, RMCA_CTRL_ATOMIC_REQ);
	assert_true(d.id == 77);
	assert_memory_equal(&d.op, &m.op, sizeof(m.op));

	m = (struct rmca_ctrl_msg){ .type = RMCA_CTRL_ATOMIC_RESP, .id = 9,
				    .status = RMCA_ERR_REMOTE_ACCESS,
				    .old = 0xdeadbeefull };
	ctrl_round_trip(&m, &d);
	assert_int_equal(d.status, RMCA_ERR_REMOTE_ACCESS);
	assert_true(d.old == 0xdeadbeefull);

	m = (struct rmca_ctrl_msg){ .type = RMCA_CTRL_REVOKE, .id = 3,
				    .rkey = RMCA_KEY_USE_ONCE | 42 };
	ctrl_round_trip(&m, &d);
	assert_true(d.rkey == (RMCA_KEY_USE_ONCE | 42));

	m = (struct rmca_ctrl_msg){ .type = RMCA_CTRL_REVOKE_ACK, .id = 3 };
	ctrl_round_trip(&m, &d);
	assert_int_equal(d.status, 0);

	m = (struct rmca_ctrl_msg){.type = RMCA_CTRL_RAIL_KEY,
				   .id = 0x1aa,
				   .rkey = 0x1bb,
				   .raddr = 0x7f0000001000,
				   .len = 4096,
				   .access = 2};
	ctrl_round_trip(&m, &d);
	assert_true(d.id == 0x1aa && d.rkey == 0x1bb &&
		    d.raddr == 0x7f0000001000 && d.len == 4096 &&
		    d.access == 2);
	m = (struct rmca_ctrl_msg){.type = RMCA_CTRL_RAIL_KEY_ACK, .id = 5};
	ctrl_round_trip(&m, &d);
	assert_true(d.id == 5);
}

static void malformed_ctrl_messages_are_refused(void **state)
{
	struct rmca_ctrl_msg m = { .type = RMCA_CTRL_REVOKE, .id = 1, .rkey = 2 };
	struct rmca_ctrl_msg d;
	uint8_t buf[4 + RMCA_CTRL_MAX];
	char why[128];
	int n;

	(void)state;
	n = rmca_ctrl_encode(&m, buf, sizeof(buf));
	for (int len = 0; len < n - 4; len++)
		assert_int_equal(rmca_ctrl_decode(buf + 4, (size_t)len, &d, why,
						  sizeof(why)),
				 RMCA_ERR_PROTOCOL);
	buf[4] = 99; /* type */
	assert_int_equal(rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d, why,
					  sizeof(why)),
			 RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(why, "type"));
	m = (struct rmca_ctrl_msg){ .type = RMCA_CTRL_ATOMIC_REQ,
				    .op = { .kind = RMCA_ATOMIC_FADD } };
	n = rmca_ctrl_encode(&m, buf, sizeof(buf));
	buf[4 + 1 + 8] = 17; /* atomic kind */
	assert_int_equal(rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d, why,
					  sizeof(why)),
			 RMCA_ERR_PROTOCOL);
	m = (struct rmca_ctrl_msg){ .type = RMCA_CTRL_REVOKE_ACK };
	n = rmca_ctrl_encode(&m, buf, sizeof(buf));
	buf[4 + 1 + 8] = 200; /* status -200: no such status */
	assert_int_equal(rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d, why,
					  sizeof(why)),
			 RMCA_ERR_PROTOCOL);
	/* a rail key of no region, or of one that wraps around */
	m = (struct rmca_ctrl_msg){.type = RMCA_CTRL_RAIL_KEY,
				   .id = 1,
				   .rkey = 2,
				   .raddr = ~0ull - 10,
				   .len = 64,
				   .access = 1};
	n = rmca_ctrl_encode(&m, buf, sizeof(buf));
	assert_int_equal(
		rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d, why, sizeof(why)),
		RMCA_ERR_PROTOCOL);
	m.raddr = 4096;
	m.len = 0;
	n = rmca_ctrl_encode(&m, buf, sizeof(buf));
	assert_int_equal(
		rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d, why, sizeof(why)),
		RMCA_ERR_PROTOCOL);
}

/* Gets the target's core answers: what the wire carries, what it refuses
 * (no length or more than 32 bytes asked, an answer whose length byte
 * disagrees with the frame, data with an error). */
static void get_messages_round_trip_and_bad_ones_are_refused(void **state)
{
	struct rmca_ctrl_msg m = {.type = RMCA_CTRL_GET_REQ,
				  .id = 12,
				  .raddr = 0x1234567,
				  .rkey = 0xfeed,
				  .len = RMCA_CTRL_GET_MAX};
	struct rmca_ctrl_msg d;
	uint8_t buf[4 + RMCA_CTRL_MAX];
	char why[128];
	int n;

	(void)state;
	ctrl_round_trip(&m, &d);
	assert_true(d.id == 12 && d.raddr == 0x1234567 && d.rkey == 0xfeed &&
		    d.len == RMCA_CTRL_GET_MAX);
	for (unsigned len = 0; len <= 255; len += 255 - RMCA_CTRL_GET_MAX) {
		/* 0 and 223: neither is a get */
		n = rmca_ctrl_encode(&m, buf, sizeof(buf));
		buf[n - 1] = (uint8_t)len;
		assert_int_equal(rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d,
						  why, sizeof(why)),
				 RMCA_ERR_PROTOCOL);
		assert_non_null(strstr(why, "get of"));
	}

	m = (struct rmca_ctrl_msg){
		.type = RMCA_CTRL_GET_RESP, .id = 12, .len = 7};
	memcpy(m.data, "rmcaget", 7);
	ctrl_round_trip(&m, &d);
	assert_true(d.id == 12 && d.status == 0 && d.len == 7 &&
		    !memcmp(d.data, "rmcaget", 7));
	n = rmca_ctrl_encode(&m, buf, sizeof(buf));
	assert_int_equal(n, 4 + 1 + 8 + 2 + 1 + 7);
	/* the length byte says one more or one less than the frame holds */
	buf[4 + 1 + 8 + 2] = 8;
	assert_int_equal(
		rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d, why, sizeof(why)),
		RMCA_ERR_PROTOCOL);
	buf[4 + 1 + 8 + 2] = 6;
	assert_int_equal(
		rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d, why, sizeof(why)),
		RMCA_ERR_PROTOCOL);
	/* more than a get may ask, in a frame that holds it */
	m.len = RMCA_CTRL_GET_MAX;
	n = rmca_ctrl_encode(&m, buf, sizeof(buf));
	buf[n] = 0;
	buf[4 + 1 + 8 + 2] = RMCA_CTRL_GET_MAX + 1;
	assert_int_equal(
		rmca_ctrl_decode(buf + 4, (size_t)n - 3, &d, why, sizeof(why)),
		RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(why, "get answer of 33 bytes"));
	/* an encoder does not make one either */
	m.len = RMCA_CTRL_GET_MAX + 1;
	assert_int_equal(rmca_ctrl_encode(&m, buf, sizeof(buf)),
			 RMCA_ERR_INVALID);
	/* a refusal carries no data */
	m = (struct rmca_ctrl_msg){.type = RMCA_CTRL_GET_RESP,
				   .id = 3,
				   .status = RMCA_ERR_REMOTE_ACCESS};
	ctrl_round_trip(&m, &d);
	assert_int_equal(d.status, RMCA_ERR_REMOTE_ACCESS);
	m.len = 1;
	n = rmca_ctrl_encode(&m, buf, sizeof(buf));
	assert_int_equal(
		rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d, why, sizeof(why)),
		RMCA_ERR_PROTOCOL);
	assert_non_null(strstr(why, "with an error"));
	/* every truncation of an answer is refused */
	m = (struct rmca_ctrl_msg){.type = RMCA_CTRL_GET_RESP, .len = 32};
	n = rmca_ctrl_encode(&m, buf, sizeof(buf));
	for (int len = 0; len < n - 4; len++)
		assert_int_equal(rmca_ctrl_decode(buf + 4, (size_t)len, &d, why,
						  sizeof(why)),
				 RMCA_ERR_PROTOCOL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hello_round_trip_keeps_every_field),
		cmocka_unit_test(reject_round_trip_keeps_status_and_reason),
		cmocka_unit_test(rails_round_trip_and_bad_rails_are_refused),
		cmocka_unit_test(
			rails_taken_round_trip_and_bad_counts_are_refused),
		cmocka_unit_test(every_truncation_is_refused),
		cmocka_unit_test(trailing_bytes_are_refused),
		cmocka_unit_test(other_version_is_refused_and_named),
		cmocka_unit_test(bad_magic_kind_role_and_counts_are_refused),
		cmocka_unit_test(non_printable_names_are_refused),
		cmocka_unit_test(random_bytes_never_crash_the_decoder),
		cmocka_unit_test(ctrl_messages_round_trip),
		cmocka_unit_test(malformed_ctrl_messages_are_refused),
		cmocka_unit_test(
			get_messages_round_trip_and_bad_ones_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
