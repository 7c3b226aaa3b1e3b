// SPDX-License-Identifier: BSD-3-Clause
/*
 * The decoders of what a peer sends before and beside the transports (the
 * hello, the control messages) at their bounds: a field filled to its last
 * byte is taken, one byte more is refused, and no input is read past its
 * end. The last is shown by decoding inputs that end where a page the
 * process may not read begins: a read past the end faults.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include <rmca.h>
#include <rmca/component.h>

#include "ctrl.h"
#include "wire.h"
#include "wire_util.h"

static uint8_t big[2 * RMCA_HELLO_MAX];

/* A hello of one module, into big: its strings of the lengths given (a
 * length of the whole field leaves no NUL, and the encoder writes it
 * whole), its address of addr_len bytes. */
static int hello_of(struct rmca_hello *h, size_t boot_len, size_t comp_len,
		    size_t dev_len, size_t addr_len)
{
	uint8_t addr[RMCA_WIRE_ADDR_MAX];
	int n;

	wu_hello(h, 77, RMCA_ROLE_ACTIVE, 0, "");
	memset(h->boot_id, 'b', boot_len);
	h->nmods = 1;
	h->mods[0] = wu_mod("", "", 0, 1);
	memset(h->mods[0].component, 'c', comp_len);
	memset(h->mods[0].device, 'd', dev_len);
	memset(addr, 0xa5, sizeof(addr));
	wu_mod_addr(&h->mods[0], addr, addr_len);
	n = rmca_hello_encode(h, big, sizeof(big));
	assert_true(n > 0);
	return n;
}

static int decode(size_t len)
{
	struct rmca_hello d;
	char why[128];

	return rmca_hello_decode(big, len, &d, why, sizeof(why));
}

/* A string field holds at most its size less one (the NUL): a peer's
 * string of the whole size would end one byte past the field. */
static void names_filling_their_field_are_refused(void **state)
{
	struct rmca_hello h;
	const size_t boot = sizeof(h.boot_id);
	const size_t comp = sizeof(h.mods[0].component);
	const size_t dev = sizeof(h.mods[0].device);
	struct rmca_hello d;
	char why[128];
	int n;

	(void)state;
	n = hello_of(&h, boot - 1, comp - 1, dev - 1, 0);
	assert_int_equal(
		rmca_hello_decode(big, (size_t)n, &d, why, sizeof(why)), 0);
	assert_int_equal(strlen(d.boot_id), boot - 1);
	assert_int_equal(strlen(d.mods[0].component), comp - 1);
	assert_int_equal(strlen(d.mods[0].device), dev - 1);

	n = hello_of(&h, boot, 1, 1, 0);
	assert_int_equal(decode((size_t)n), RMCA_ERR_PROTOCOL);
	n = hello_of(&h, 1, comp, 1, 0);
	assert_int_equal(decode((size_t)n), RMCA_ERR_PROTOCOL);
	n = hello_of(&h, 1, 1, dev, 0);
	assert_int_equal(decode((size_t)n), RMCA_ERR_PROTOCOL);
}

/* A module's address: RMCA_WIRE_ADDR_MAX bytes are taken, one more (the
 * encoder will not write it: made by hand) is refused. */
static void address_one_byte_over_its_field_is_refused(void **state)
{
	struct rmca_hello h, d;
	char why[128];
	int n;

	(void)state;
	n = hello_of(&h, 1, 1, 1, RMCA_WIRE_ADDR_MAX);
	assert_int_equal(
		rmca_hello_decode(big, (size_t)n, &d, why, sizeof(why)), 0);
	assert_int_equal(d.mods[0].addr_len, RMCA_WIRE_ADDR_MAX);
	/* the hello ends with the address, then the rail count (one byte):
	 * the address grows by one byte and its length says so */
	assert_int_equal(big[n - 1], 0);
	big[n - 1] = 0xa5;
	big[n] = 0;
	big[n - 1 - RMCA_WIRE_ADDR_MAX - 2] = (RMCA_WIRE_ADDR_MAX + 1) & 0xff;
	big[n - 1 - RMCA_WIRE_ADDR_MAX - 1] = (RMCA_WIRE_ADDR_MAX + 1) >> 8;
	assert_int_equal(decode((size_t)n + 1), RMCA_ERR_PROTOCOL);
}

/* The roles are 1 to RMCA_ROLE_PROBE: each is taken, the ones on either
 * side of them are refused (the role byte follows the header and token). */
static void roles_past_either_end_are_refused(void **state)
{
	struct rmca_hello h;
	int n;

	(void)state;
	n = hello_of(&h, 1, 1, 1, 0);
	for (unsigned role = 0; role <= RMCA_ROLE_PROBE + 1; role++) {
		big[8 + 8] = (uint8_t)role;
		assert_int_equal(decode((size_t)n),
				 role >= RMCA_ROLE_ACTIVE &&
						 role <= RMCA_ROLE_PROBE
					 ? 0
					 : RMCA_ERR_PROTOCOL);
	}
}

/* A get asks for 1 to RMCA_CTRL_GET_MAX bytes, and its answer carries no
 * more: RMCA_CTRL_GET_MAX is taken, one byte more refused. */
static void gets_one_byte_over_the_most_are_refused(void **state)
{
	struct rmca_ctrl_msg m = {.type = RMCA_CTRL_GET_REQ,
				  .id = 3,
				  .rkey = 1,
				  .len = RMCA_CTRL_GET_MAX};
	struct rmca_ctrl_msg d;
	uint8_t buf[4 + RMCA_CTRL_MAX];
	char why[128];
	int n;

	(void)state;
	n = rmca_ctrl_encode(&m, buf, sizeof(buf));
	assert_true(n > 4);
	assert_int_equal(
		rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d, why, sizeof(why)),
		0);
	buf[n - 1] = RMCA_CTRL_GET_MAX + 1; /* the length, its last byte */
	assert_int_equal(
		rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d, why, sizeof(why)),
		RMCA_ERR_PROTOCOL);

	m = (struct rmca_ctrl_msg){
		.type = RMCA_CTRL_GET_RESP, .id = 3, .len = RMCA_CTRL_GET_MAX};
	n = rmca_ctrl_encode(&m, buf, sizeof(buf));
	assert_true(n > 4);
	assert_int_equal(
		rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d, why, sizeof(why)),
		0);
	/* its length byte one more, and the byte it says is there */
	buf[4 + 1 + 8 + 2] = RMCA_CTRL_GET_MAX + 1;
	buf[n] = 0;
	assert_int_equal(rmca_ctrl_decode(buf + 4, (size_t)n - 4 + 1, &d, why,
					  sizeof(why)),
			 RMCA_ERR_PROTOCOL);
}

/* len bytes of src, placed so that the byte after them is unreadable. */
struct guarded {
	uint8_t *map;
	size_t page;
};

static void guard_open(struct guarded *g)
{
	g->page = (size_t)sysconf(_SC_PAGESIZE);
	g->map = mmap(NULL, 2 * g->page, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(g->map != MAP_FAILED);
	assert_int_equal(mprotect(g->map + g->page, g->page, PROT_NONE), 0);
}

static const uint8_t *guard_put(struct guarded *g, const uint8_t *src,
				size_t len)
{
	uint8_t *at = g->map + g->page - len;

	assert_true(len <= g->page);
	memcpy(at, src, len);
	return at;
}

static void guard_close(struct guarded *g)
{
	munmap(g->map, 2 * g->page);
}

/* Every prefix of a hello of each kind ends right before a page that may
 * not be read: each is refused, and none is read past its end. */
static void truncated_hellos_are_not_read_past_their_end(void **state)
{
	struct rmca_hello h, d;
	struct guarded g;
	uint8_t buf[RMCA_HELLO_MAX];
	char why[128];
	int n;

	(void)state;
	guard_open(&g);
	for (int kind = 0; kind < 3; kind++) {
		wu_hello(&h, 5, RMCA_ROLE_PASSIVE, 0, "boot");
		h.nmods = 1;
		h.mods[0] = wu_mod("tcp", "lo", 0, 1);
		wu_mod_addr(&h.mods[0], "\x01\x02\x03\x04", 4);
		h.choice_a = h.choice_p = 0;
		h.nrails = 1;
		if (kind == 1) {
			h.kind = RMCA_WIRE_REJECT;
			h.status = RMCA_ERR_UNREACHABLE;
			strcpy(h.reason, "no");
		} else if (kind == 2) {
			h.kind = RMCA_WIRE_RAILS;
			h.ntaken = 2;
			h.taken[0] = 0;
			h.taken[1] = 1;
		}
		n = rmca_hello_encode(&h, buf, sizeof(buf));
		assert_true(n > 0);
		assert_int_equal(
			rmca_hello_decode(guard_put(&g, buf, (size_t)n),
					  (size_t)n, &d, why, sizeof(why)),
			0);
		for (int len = 0; len < n; len++)
			assert_int_equal(
				rmca_hello_decode(
					guard_put(&g, buf, (size_t)len),
					(size_t)len, &d, why, sizeof(why)),
				RMCA_ERR_PROTOCOL);
	}
	guard_close(&g);
}

/* Every prefix of every control message, the same way. */
static void truncated_ctrl_messages_are_not_read_past_their_end(void **state)
{
	const struct rmca_ctrl_msg msgs[] = {
		{.type = RMCA_CTRL_ATOMIC_REQ, .id = 1},
		{.type = RMCA_CTRL_ATOMIC_RESP, .id = 1, .old = 9},
		{.type = RMCA_CTRL_REVOKE, .id = 1, .rkey = 3},
		{.type = RMCA_CTRL_REVOKE_ACK, .id = 1},
		{.type = RMCA_CTRL_VERIFY,
		 .id = 1,
		 .access = RMCA_ACCESS_REMOTE_READ},
		{.type = RMCA_CTRL_VERIFY_RESP, .id = 1},
		{.type = RMCA_CTRL_RAIL_KEY, .id = 1},
		{.type = RMCA_CTRL_RAIL_KEY_ACK, .id = 1},
		{.type = RMCA_CTRL_GET_REQ, .id = 1, .len = 4},
		{.type = RMCA_CTRL_GET_RESP, .id = 1, .len = RMCA_CTRL_GET_MAX},
	};
	struct rmca_ctrl_msg d;
	uint8_t buf[4 + RMCA_CTRL_MAX];
	struct guarded g;
	char why[128];

	(void)state;
	guard_open(&g);
	for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		int n = rmca_ctrl_encode(&msgs[i], buf, sizeof(buf));

		assert_true(n > 4);
		assert_int_equal(
			rmca_ctrl_decode(guard_put(&g, buf + 4, (size_t)n - 4),
					 (size_t)n - 4, &d, why, sizeof(why)),
			0);
		for (int len = 0; len < n - 4; len++)
			assert_int_equal(
				rmca_ctrl_decode(
					guard_put(&g, buf + 4, (size_t)len),
					(size_t)len, &d, why, sizeof(why)),
				RMCA_ERR_PROTOCOL);
	}
	guard_close(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_filling_their_field_are_refused),
		cmocka_unit_test(address_one_byte_over_its_field_is_refused),
		cmocka_unit_test(roles_past_either_end_are_refused),
		cmocka_unit_test(gets_one_byte_over_the_most_are_refused),
		cmocka_unit_test(truncated_hellos_are_not_read_past_their_end),
		cmocka_unit_test(
			truncated_ctrl_messages_are_not_read_past_their_end),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
