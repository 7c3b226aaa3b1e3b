/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp wire format: every frame type survives encode/decode, and every
 * malformed or truncated header is refused before any payload is read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <rmca.h>

#include "frame.h"

static const struct tcp_frame valid[] = {
	{ .type = TCP_F_HELLO, .id = 0x1122334455667788ull,
	  .operand = TCP_HELLO_WORD },
	{ .type = TCP_F_HELLO_ACK, .id = 7, .operand = TCP_HELLO_WORD },
	{ .type = TCP_F_ACK, .acked = 3, .credits = 64 },
	{ .type = TCP_F_ACK },
	{ .type = TCP_F_SEND, .id = 1, .len = 100 },
	{ .type = TCP_F_SEND, .id = 2, .len = 4, .acked = 0xffffffffu,
	  .credits = 0x80000001u },
	{ .type = TCP_F_SEND, .id = 3, .len = 8, .flags = TCP_FF_INV,
	  .rkey = 0x8000000000000001ull },
	{ .type = TCP_F_PUT, .id = 4, .len = 1 << 20, .raddr = 0x7f0000001000,
	  .rkey = 99 },
	{ .type = TCP_F_GET, .id = 5, .len = 16, .raddr = 0x1000, .rkey = 1 },
	{ .type = TCP_F_ATOMIC, .id = 6, .akind = RMCA_ATOMIC_FADD, .len = 8,
	  .raddr = 0x1000, .rkey = 1, .operand = 5 },
	{ .type = TCP_F_ATOMIC, .id = 7, .akind = RMCA_ATOMIC_MASKED_CSWAP,
	  .len = 8, .raddr = 0x1000, .rkey = 1, .operand = 5, .compare = 3,
	  .mask1 = 0xff, .mask2 = 0xff00 },
	{ .type = TCP_F_ATOMIC, .id = 8, .akind = RMCA_ATOMIC_MASKED_FADD,
	  .len = 8, .raddr = 0x1000, .rkey = 1, .operand = 5,
	  .mask1 = 0x8080808080808080ull },
	{ .type = TCP_F_RESP, .id = 9, .len = 16 },
	{ .type = TCP_F_RESP, .id = 10, .operand = 0xdeadbeefull },
	{ .type = TCP_F_RESP, .id = 11, .status = RMCA_ERR_REMOTE_ACCESS },
	{ .type = TCP_F_RESP, .id = 12, .status = RMCA_ERR_TRUNCATED },
};

static void every_frame_type_round_trips(void **state)
{
	uint8_t buf[TCP_HDR_LEN];
	struct tcp_frame f;
	const char *why = NULL;

	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		memset(&f, 0xa5, sizeof(f));
		rmca_tcp_frame_encode(&valid[i], buf);
		assert_int_equal(rmca_tcp_frame_decode(buf, sizeof(buf), &f,
						       &why),
				 0);
		assert_int_equal(f.type, valid[i].type);
		assert_int_equal(f.flags, valid[i].flags);
		assert_int_equal(f.akind, valid[i].akind);
		assert_int_equal(f.status, valid[i].status);
		assert_true(f.id == valid[i].id && f.len == valid[i].len);
		assert_true(f.raddr == valid[i].raddr &&
			    f.rkey == valid[i].rkey);
		assert_true(f.operand == valid[i].operand &&
			    f.compare == valid[i].compare);
		assert_true(f.mask1 == valid[i].mask1 &&
			    f.mask2 == valid[i].mask2);
	}
}

static void header_is_little_endian(void **state)
{
	struct tcp_frame f = { .type = TCP_F_PUT, .id = 0x0102030405060708ull,
			       .len = 1, .raddr = 2, .rkey = 3,
			       .acked = 0x11223344u, .credits = 0x55667788u };
	uint8_t buf[TCP_HDR_LEN];

	assert_int_equal(TCP_HDR_LEN, 80);
	rmca_tcp_frame_encode(&f, buf);
	assert_int_equal(buf[0], TCP_F_PUT);
	assert_int_equal(buf[8], 0x44);
	assert_int_equal(buf[11], 0x11);
	assert_int_equal(buf[12], 0x88);
	assert_int_equal(buf[15], 0x55);
	assert_int_equal(buf[16], 0x08);
	assert_int_equal(buf[23], 0x01);
	assert_int_equal(buf[24], 1);
	assert_int_equal(buf[32], 2);
	assert_int_equal(buf[40], 3);
	/* The counts stamped as a queued header goes out. */
	rmca_tcp_frame_counts(buf, 7, 9);
	assert_int_equal(buf[8], 7);
	assert_int_equal(buf[12], 9);
	assert_int_equal(buf[16], 0x08);
}

static void expect_refused(const uint8_t *buf, size_t len)
{
	struct tcp_frame f;
	const char *why = NULL;

	assert_int_equal(rmca_tcp_frame_decode(buf, len, &f, &why),
			 RMCA_ERR_PROTOCOL);
	assert_non_null(why);
}

static void refuse_frame(const struct tcp_frame *f)
{
	uint8_t buf[TCP_HDR_LEN];

	rmca_tcp_frame_encode(f, buf);
	expect_refused(buf, sizeof(buf));
}

static void truncated_header_is_refused(void **state)
{
	uint8_t buf[TCP_HDR_LEN];

	rmca_tcp_frame_encode(&valid[4], buf);
	for (size_t len = 0; len < TCP_HDR_LEN; len++)
		expect_refused(buf, len);
}

static void unknown_type_and_reserved_byte_are_refused(void **state)
{
	uint8_t buf[TCP_HDR_LEN];

	rmca_tcp_frame_encode(&valid[4], buf);
	buf[0] = 0;
	expect_refused(buf, sizeof(buf));
	buf[0] = TCP_F_MAX;
	expect_refused(buf, sizeof(buf));
	buf[0] = 0xff;
	expect_refused(buf, sizeof(buf));

	rmca_tcp_frame_encode(&valid[4], buf);
	buf[3] = 1;
	expect_refused(buf, sizeof(buf));
}

static void field_a_type_does_not_use_is_refused(void **state)
{
	/* Each valid frame with one unused field set. */
	struct tcp_frame f;

	f = valid[2]; /* ACK */
	f.id = 1;
	refuse_frame(&f);
	f = valid[2]; /* ACK: credits are a count, no longer a length */
	f.len = 4096;
	refuse_frame(&f);
	f = valid[4]; /* SEND */
	f.raddr = 0x1000;
	refuse_frame(&f);
	f = valid[7]; /* PUT */
	f.operand = 1;
	refuse_frame(&f);
	f = valid[8]; /* GET */
	f.mask2 = 1;
	refuse_frame(&f);
	f = valid[12]; /* RESP */
	f.rkey = 1;
	refuse_frame(&f);
	f = valid[0]; /* HELLO */
	f.len = 1;
	refuse_frame(&f);
	/* a flag only SEND may carry */
	f = valid[7];
	f.flags = TCP_FF_INV;
	refuse_frame(&f);
	/* status on a request, atomic kind on a non-atomic frame */
	f = valid[7];
	f.status = RMCA_ERR_REMOTE_ACCESS;
	refuse_frame(&f);
	f = valid[8];
	f.akind = RMCA_ATOMIC_CSWAP;
	refuse_frame(&f);
}

static void inconsistent_frames_are_refused(void **state)
{
	struct tcp_frame f;

	f = valid[0]; /* hello with another protocol version */
	f.operand = TCP_HELLO_WORD + 1;
	refuse_frame(&f);
	f = valid[0];
	f.id = 0; /* no token */
	refuse_frame(&f);
	f = valid[4];
	f.id = 0; /* request without id */
	refuse_frame(&f);
	f = valid[6]; /* invalidate flag without key */
	f.rkey = 0;
	refuse_frame(&f);
	f = valid[4]; /* key without invalidate flag */
	f.rkey = 5;
	refuse_frame(&f);
	f = valid[5]; /* the truncation flag of version 1 */
	f.flags = 1 << 1;
	refuse_frame(&f);
	f = valid[5]; /* a full length of version 1 */
	f.operand = 100;
	refuse_frame(&f);
	f = valid[0]; /* a hello carrying counts */
	f.acked = 1;
	refuse_frame(&f);
	f = valid[1];
	f.credits = 1;
	refuse_frame(&f);
	f = valid[7]; /* beyond any region */
	f.len = TCP_MAX_PAYLOAD + 1;
	refuse_frame(&f);
	f = valid[9]; /* atomic on 4 bytes */
	f.len = 4;
	refuse_frame(&f);
	f = valid[9]; /* unknown atomic kind */
	f.akind = RMCA_ATOMIC_MASKED_CSWAP + 1;
	refuse_frame(&f);
	f = valid[9]; /* FADD carrying a compare value */
	f.compare = 1;
	refuse_frame(&f);
	f = valid[11]; /* masked FADD carrying a swap mask */
	f.mask2 = 1;
	refuse_frame(&f);
	f = valid[14]; /* status the protocol never sends */
	f.status = RMCA_ERR_NO_MEMORY;
	refuse_frame(&f);
	f = valid[14]; /* error answer with data */
	f.len = 8;
	refuse_frame(&f);
}

/* The fields (header offsets, 8 bytes each, from 16) each type may set,
 * written out apart from the decoder's tables. */
static bool may_set_field(uint8_t type, size_t off)
{
	switch (type) {
	case TCP_F_HELLO:
	case TCP_F_HELLO_ACK:
		return off == 16 || off == 48; /* id, operand */
	case TCP_F_SEND:
		return off == 16 || off == 24 || off == 40; /* id, len, rkey */
	case TCP_F_PUT:
	case TCP_F_GET:
		return off >= 16 && off < 48; /* id, len, raddr, rkey */
	case TCP_F_ATOMIC:
		return true;
	case TCP_F_RESP:
		return off == 16 || off == 24 ||
		       off == 48; /* id, len, operand */
	default:
		return false; /* ACK */
	}
}

/*
 * One byte a frame's type may not set, set in each valid frame in turn
 * (every bit of it, at every offset): refused, with the first rule it
 * breaks named, as the rules are checked one by one.
 */
static void every_byte_a_type_may_not_set_is_refused(void **state)
{
	uint8_t buf[TCP_HDR_LEN];
	struct tcp_frame f;
	const char *why;

	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		uint8_t type = valid[i].type;

		for (size_t off = 1; off < TCP_HDR_LEN; off++) {
			const char *want = NULL;

			if (off == 1)
				want = "flag not allowed for this frame type";
			else if (off == 2 && type != TCP_F_ATOMIC)
				want = "atomic kind on a non-atomic frame";
			else if (off == 3)
				want = "reserved byte set";
			else if (off >= 4 && off < 8 && type != TCP_F_RESP)
				want = "status on a request frame";
			else if (off >= 16 &&
				 !may_set_field(type, off & ~(size_t)7))
				want = "field not used by this frame type is "
				       "set";
			if (!want)
				continue;
			for (unsigned bit = 0; bit < 8; bit++) {
				rmca_tcp_frame_encode(&valid[i], buf);
				if (off == 1 && type == TCP_F_SEND &&
				    (1u << bit) == TCP_FF_INV)
					continue; /* SEND may set it */
				buf[off] ^= (uint8_t)(1u << bit);
				why = NULL;
				assert_int_equal(
					rmca_tcp_frame_decode(buf, sizeof(buf),
							      &f, &why),
					RMCA_ERR_PROTOCOL);
				assert_string_equal(why, want);
			}
		}
	}
}

/* A header of random bytes (xorshift64 from *x), mostly zero so that some
 * are close to valid, of a type that exists. */
static void random_header(uint8_t buf[TCP_HDR_LEN], uint64_t *x)
{
	for (int j = 0; j < TCP_HDR_LEN; j++) {
		*x ^= *x << 13;
		*x ^= *x >> 7;
		*x ^= *x << 17;
		buf[j] = (*x & 7) ? 0 : (uint8_t)(*x >> 8);
	}
	buf[0] = (uint8_t)(*x % (TCP_F_MAX + 1));
}

static void random_headers_never_crash_the_decoder(void **state)
{
	uint8_t buf[TCP_HDR_LEN];
	struct tcp_frame f;
	const char *why;
	uint64_t x = 88172645463325252ull;
	int accepted = 0;

	for (int i = 0; i < 200000; i++) {
		random_header(buf, &x);
		if (!rmca_tcp_frame_decode(buf, sizeof(buf), &f, &why)) {
			uint8_t again[TCP_HDR_LEN];

			/* whatever passes re-encodes to the same bytes */
			rmca_tcp_frame_encode(&f, again);
			assert_memory_equal(buf, again, sizeof(buf));
			accepted++;
		}
	}
	assert_true(accepted > 0);
}

/* One header through the inline decoder and through the full checks:
 * the same verdict, the same reason, the same fields. */
static void decoders_agree(const uint8_t *buf, size_t len)
{
	struct tcp_frame a, b;
	const char *why_a = NULL, *why_b = NULL;
	int ra, rb;

	memset(&a, 0x5a, sizeof(a));
	memset(&b, 0x5a, sizeof(b));
	ra = rmca_tcp_frame_decode(buf, len, &a, &why_a);
	rb = rmca_tcp_frame_decode_full(buf, len, &b, &why_b);
	assert_int_equal(ra, rb);
	if (ra)
		assert_string_equal(why_a, why_b);
	else
		assert_memory_equal(&a, &b, sizeof(a));
}

/*
 * The decoder every frame read goes through takes the data path's frames
 * itself and leaves the rest to the full checks: it accepts exactly what
 * they accept, and refuses with their reason, for every valid frame, each
 * of them with any one byte changed, and random headers.
 */
static void inline_decoder_agrees_with_the_full_checks(void **state)
{
	static const uint8_t values[] = {0, 1, 2, 3, 4, 7, 8, 0x80, 0xff};
	uint8_t buf[TCP_HDR_LEN];
	uint64_t x = 88172645463325252ull;

	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		rmca_tcp_frame_encode(&valid[i], buf);
		decoders_agree(buf, sizeof(buf));
		decoders_agree(buf, sizeof(buf) - 1);
		for (size_t off = 0; off < TCP_HDR_LEN; off++) {
			for (size_t v = 0; v < sizeof(values); v++) {
				uint8_t old = buf[off];

				buf[off] = values[v];
				decoders_agree(buf, sizeof(buf));
				buf[off] = old;
			}
		}
	}
	for (int i = 0; i < 200000; i++) {
		random_header(buf, &x);
		decoders_agree(buf, sizeof(buf));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_frame_type_round_trips),
		cmocka_unit_test(header_is_little_endian),
		cmocka_unit_test(truncated_header_is_refused),
		cmocka_unit_test(unknown_type_and_reserved_byte_are_refused),
		cmocka_unit_test(field_a_type_does_not_use_is_refused),
		cmocka_unit_test(inconsistent_frames_are_refused),
		cmocka_unit_test(every_byte_a_type_may_not_set_is_refused),
		cmocka_unit_test(random_headers_never_crash_the_decoder),
		cmocka_unit_test(inline_decoder_agrees_with_the_full_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
