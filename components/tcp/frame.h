/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp component's wire format (version 2): every frame starts with the
 * same fixed 80-byte little-endian header; SEND, PUT and RESP (to a GET)
 * frames are followed by len payload bytes. The header is validated in full
 * before any payload is read, so a payload never lands anywhere unchecked.
 *
 *   0 u8  type       12 u32 credits    40 u64 rkey
 *   1 u8  flags      16 u64 id         48 u64 operand
 *   2 u8  akind      24 u64 len        56 u64 compare
 *   3 u8  zero       32 u64 raddr      64 u64 mask1 (compare_mask/field_boundary)
 *   4 s32 status                       72 u64 mask2 (swap_mask)
 *   8 u32 acked
 *
 * Fields a type does not use must be zero.
 *
 * Every frame but a hello carries, in acked and credits, two cumulative
 * counts of its sender (modulo 2^32): the SENDs it delivered into a
 * receive plus the PUTs it placed, and the receives it posted. A SEND or a
 * PUT is answered by that count alone, on whatever frame goes back next,
 * and a SEND goes only while the peer's credits exceed the SENDs already
 * sent. Only GETs and ATOMICs (their data) and refusals (a SEND truncated
 * by its receive, an access denied) get a RESP; a standalone ACK carries
 * the counts when no other frame would soon.
 */
#ifndef RMCA_TCP_FRAME_H
#define RMCA_TCP_FRAME_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TCP_HDR_LEN 80
#define TCP_PROTO_MAGIC 0x52544350u /* "RTCP" */
#define TCP_PROTO_VERSION 2u
#define TCP_HELLO_WORD (((uint64_t)TCP_PROTO_MAGIC << 32) | TCP_PROTO_VERSION)
/* Larger than any region a process can register, small enough that
 * raddr + len never wraps in the checks. */
#define TCP_MAX_PAYLOAD (1ull << 48)

enum tcp_frame_type {
	TCP_F_HELLO = 1, /* active -> passive: id = token, operand = hello word */
	TCP_F_HELLO_ACK, /* passive -> active: id = token, operand = hello word */
	TCP_F_ACK, /* nothing but the counts */
	TCP_F_SEND, /* message of len bytes into the oldest receive */
	TCP_F_PUT, /* len bytes for [raddr, raddr + len) under rkey */
	TCP_F_GET, /* ask for len bytes at raddr under rkey */
	TCP_F_ATOMIC, /* akind on the 8 bytes at raddr */
	TCP_F_RESP, /* answer to GET/ATOMIC id, or refusal of request id */
	TCP_F_MAX,
};

enum tcp_frame_flags {
	TCP_FF_INV = 1 << 0, /* SEND: revoke rkey at the target */
};

/* Laid out as the header, so that a little-endian host decodes and
 * encodes it with one copy (the reserved byte is its padding). */
struct tcp_frame {
	uint8_t type;
	uint8_t flags;
	uint8_t akind; /* enum rmca_atomic_kind, ATOMIC only */
	int32_t status; /* RESP only */
	uint32_t acked; /* SENDs delivered + PUTs placed by the sender */
	uint32_t credits; /* receives posted by the sender */
	uint64_t id;
	uint64_t len;
	uint64_t raddr;
	uint64_t rkey;
	uint64_t operand;
	uint64_t compare;
	uint64_t mask1;
	uint64_t mask2;
};

_Static_assert(offsetof(struct tcp_frame, status) == 4 &&
		       offsetof(struct tcp_frame, acked) == 8 &&
		       offsetof(struct tcp_frame, id) == 16 &&
		       offsetof(struct tcp_frame, mask2) == 72 &&
		       sizeof(struct tcp_frame) == TCP_HDR_LEN,
	       "struct tcp_frame is laid out as the header");

/* Little-endian fields, each one store. Inline: a frame is encoded for
 * every message, mostly from a frame whose zero fields the compiler
 * knows, and its counts stamped as it is written. */
static inline void rmca_tcp_put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void rmca_tcp_put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

/* Stamp the counts into an encoded header, as it is about to be written. */
static inline void rmca_tcp_frame_counts(uint8_t *buf, uint32_t acked,
					 uint32_t credits)
{
	rmca_tcp_put32(buf + 8, acked);
	rmca_tcp_put32(buf + 12, credits);
}

static inline void rmca_tcp_frame_encode(const struct tcp_frame *f,
					 uint8_t *buf)
{
	buf[0] = f->type;
	buf[1] = f->flags;
	buf[2] = f->akind;
	buf[3] = 0;
	rmca_tcp_put32(buf + 4, (uint32_t)f->status);
	rmca_tcp_frame_counts(buf, f->acked, f->credits);
	rmca_tcp_put64(buf + 16, f->id);
	rmca_tcp_put64(buf + 24, f->len);
	rmca_tcp_put64(buf + 32, f->raddr);
	rmca_tcp_put64(buf + 40, f->rkey);
	rmca_tcp_put64(buf + 48, f->operand);
	rmca_tcp_put64(buf + 56, f->compare);
	rmca_tcp_put64(buf + 64, f->mask1);
	rmca_tcp_put64(buf + 72, f->mask2);
}

enum {
	TCP_FLD_ID = 1 << 0,
	TCP_FLD_LEN = 1 << 1,
	TCP_FLD_RADDR = 1 << 2,
	TCP_FLD_RKEY = 1 << 3,
	TCP_FLD_OPERAND = 1 << 4,
	TCP_FLD_COMPARE = 1 << 5,
	TCP_FLD_MASK1 = 1 << 6,
	TCP_FLD_MASK2 = 1 << 7,
};

/* The fields each type may set. */
#define TCP_HELLO_FIELDS (TCP_FLD_ID | TCP_FLD_OPERAND)
#define TCP_SEND_FIELDS	 (TCP_FLD_ID | TCP_FLD_LEN | TCP_FLD_RKEY)
#define TCP_RMA_FIELDS	 (TCP_FLD_ID | TCP_FLD_LEN | TCP_FLD_RADDR | TCP_FLD_RKEY)
#define TCP_ATOMIC_FIELDS                                                      \
	(TCP_FLD_ID | TCP_FLD_LEN | TCP_FLD_RADDR | TCP_FLD_RKEY |             \
	 TCP_FLD_OPERAND | TCP_FLD_COMPARE | TCP_FLD_MASK1 | TCP_FLD_MASK2)
#define TCP_RESP_FIELDS (TCP_FLD_ID | TCP_FLD_LEN | TCP_FLD_OPERAND)

/*
 * The rules of each type as the bits each of the header's ten 64-bit words
 * may have set (read little-endian): every frame is checked against them
 * with ten ANDs, and only one that fails goes through the checks one by
 * one, which name its first problem. Word 0 holds type, flags, akind, the
 * reserved byte and status; word 1 the counts, which every type carries
 * (a hello's are checked apart); words 2 to 9 one field each. Here, not
 * in frame.c: where the type is known, the compiler folds its words, and
 * the checks of the words that may hold anything go.
 */
#define TCP_W_FIELD(fields, fld) (((fields) & (fld)) ? UINT64_MAX : 0)
#define TCP_W_RULE(fields, flags, akind, status)                               \
	{                                                                      \
		0xffull | (uint64_t)(flags) << 8 |                             \
			((akind) ? 0xffull << 16 : 0) |                        \
			((status) ? 0xffffffffull << 32 : 0),                  \
			UINT64_MAX, TCP_W_FIELD(fields, TCP_FLD_ID),           \
			TCP_W_FIELD(fields, TCP_FLD_LEN),                      \
			TCP_W_FIELD(fields, TCP_FLD_RADDR),                    \
			TCP_W_FIELD(fields, TCP_FLD_RKEY),                     \
			TCP_W_FIELD(fields, TCP_FLD_OPERAND),                  \
			TCP_W_FIELD(fields, TCP_FLD_COMPARE),                  \
			TCP_W_FIELD(fields, TCP_FLD_MASK1),                    \
			TCP_W_FIELD(fields, TCP_FLD_MASK2),                    \
	}

static const uint64_t rmca_tcp_frame_may_set[TCP_F_MAX][TCP_HDR_LEN / 8] = {
	[TCP_F_HELLO] = TCP_W_RULE(TCP_HELLO_FIELDS, 0, 0, 0),
	[TCP_F_HELLO_ACK] = TCP_W_RULE(TCP_HELLO_FIELDS, 0, 0, 0),
	[TCP_F_ACK] = TCP_W_RULE(0, 0, 0, 0),
	[TCP_F_SEND] = TCP_W_RULE(TCP_SEND_FIELDS, TCP_FF_INV, 0, 0),
	[TCP_F_PUT] = TCP_W_RULE(TCP_RMA_FIELDS, 0, 0, 0),
	[TCP_F_GET] = TCP_W_RULE(TCP_RMA_FIELDS, 0, 0, 0),
	[TCP_F_ATOMIC] = TCP_W_RULE(TCP_ATOMIC_FIELDS, 0, 1, 0),
	[TCP_F_RESP] = TCP_W_RULE(TCP_RESP_FIELDS, 0, 0, 1),
};

/* rmca_tcp_frame_decode() with every check made one by one. */
int rmca_tcp_frame_decode_full(const uint8_t *buf, size_t len,
			       struct tcp_frame *f, const char **why);

static inline uint64_t rmca_tcp_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* The header's fields into f. Where the host is little-endian, struct
 * tcp_frame is laid out as the header: one copy. */
static inline void rmca_tcp_frame_load(struct tcp_frame *f, const uint8_t *buf)
{
#if __BYTE_ORDER == __LITTLE_ENDIAN
	memcpy(f, buf, TCP_HDR_LEN);
#else
	f->type = buf[0];
	f->flags = buf[1];
	f->akind = buf[2];
	f->status = (int32_t)(uint32_t)(rmca_tcp_get64(buf) >> 32);
	f->acked = (uint32_t)rmca_tcp_get64(buf + 8);
	f->credits = (uint32_t)(rmca_tcp_get64(buf + 8) >> 32);
	f->id = rmca_tcp_get64(buf + 16);
	f->len = rmca_tcp_get64(buf + 24);
	f->raddr = rmca_tcp_get64(buf + 32);
	f->rkey = rmca_tcp_get64(buf + 40);
	f->operand = rmca_tcp_get64(buf + 48);
	f->compare = rmca_tcp_get64(buf + 56);
	f->mask1 = rmca_tcp_get64(buf + 64);
	f->mask2 = rmca_tcp_get64(buf + 72);
#endif
}

/* The words of buf that type t's rules forbid bits of, or-ed: 0 when it
 * sets none. Written out word by word rather than as a loop, so that
 * where t is a constant each word its type may fill with anything costs
 * nothing. */
static inline __attribute__((always_inline)) uint64_t
rmca_tcp_frame_bad_bits(const uint8_t *buf, unsigned t)
{
	const uint64_t *a = rmca_tcp_frame_may_set[t];

#define TCP_W_BAD(i) (rmca_tcp_get64(buf + 8 * (i)) & ~a[i])
	return TCP_W_BAD(0) | TCP_W_BAD(1) | TCP_W_BAD(2) | TCP_W_BAD(3) |
	       TCP_W_BAD(4) | TCP_W_BAD(5) | TCP_W_BAD(6) | TCP_W_BAD(7) |
	       TCP_W_BAD(8) | TCP_W_BAD(9);
#undef TCP_W_BAD
}

/* rmca_tcp_frame_decode() of a header of type t (a constant where it is
 * inlined): the data path's frames that set no bit their type may not,
 * and need nothing else but an id, a length in bounds and a SEND's key
 * with its flag, are taken here; the rest goes through
 * rmca_tcp_frame_decode_full(), which accepts the same frames and names
 * the first problem of the others. */
static inline __attribute__((always_inline)) int
rmca_tcp_frame_decode_as(const uint8_t *buf, struct tcp_frame *f,
			 const char **why, unsigned t)
{
	if (rmca_tcp_frame_bad_bits(buf, t))
		return rmca_tcp_frame_decode_full(buf, TCP_HDR_LEN, f, why);
	rmca_tcp_frame_load(f, buf);
	if (f->len > TCP_MAX_PAYLOAD || (!f->id && t != TCP_F_ACK))
		return rmca_tcp_frame_decode_full(buf, TCP_HDR_LEN, f, why);
	switch (t) {
	case TCP_F_SEND:
		if (!(f->flags & TCP_FF_INV) != !f->rkey)
			return rmca_tcp_frame_decode_full(buf, TCP_HDR_LEN, f,
							  why);
		break;
	case TCP_F_ATOMIC:
		if (f->akind || f->len != 8 || f->compare || f->mask1 ||
		    f->mask2)
			return rmca_tcp_frame_decode_full(buf, TCP_HDR_LEN, f,
							  why);
		break;
	case TCP_F_RESP:
		if (f->status)
			return rmca_tcp_frame_decode_full(buf, TCP_HDR_LEN, f,
							  why);
		break;
	default:
		break;
	}
	return 0;
}

/*
 * 0, or RMCA_ERR_PROTOCOL with *why naming the first problem found.
 * Inline, with one copy of the checks for each type of the data path
 * (ACK, SEND, PUT, GET, ATOMIC, a RESP), its rules folded in:
 * rmca_tcp_frame_decode_as(). Every other frame goes through
 * rmca_tcp_frame_decode_full(). A data connection's receive (tcp_rx.c)
 * makes the same choice itself, so as to act on each type in its copy.
 */
static inline int rmca_tcp_frame_decode(const uint8_t *buf, size_t len,
					struct tcp_frame *f, const char **why)
{
	switch (len >= TCP_HDR_LEN ? buf[0] : 0) {
	case TCP_F_SEND:
		return rmca_tcp_frame_decode_as(buf, f, why, TCP_F_SEND);
	case TCP_F_ACK:
		return rmca_tcp_frame_decode_as(buf, f, why, TCP_F_ACK);
	case TCP_F_PUT:
		return rmca_tcp_frame_decode_as(buf, f, why, TCP_F_PUT);
	case TCP_F_GET:
		return rmca_tcp_frame_decode_as(buf, f, why, TCP_F_GET);
	case TCP_F_ATOMIC:
		return rmca_tcp_frame_decode_as(buf, f, why, TCP_F_ATOMIC);
	case TCP_F_RESP:
		return rmca_tcp_frame_decode_as(buf, f, why, TCP_F_RESP);
	default:
		return rmca_tcp_frame_decode_full(buf, len, f, why);
	}
}
const char *rmca_tcp_frame_name(unsigned type);

#endif
