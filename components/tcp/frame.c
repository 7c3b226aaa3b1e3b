/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Encoding and full validation of the tcp frame header (see frame.h).
 */
#include <endian.h>
#include <string.h>

#include <rmca.h>

#include "frame.h"

struct type_rule {
	const char *name;
	unsigned fields; /* fields that may be non-zero */
	unsigned flags; /* flags that may be set */
};

static const struct type_rule rules[TCP_F_MAX] = {
	[TCP_F_HELLO] = {"HELLO", TCP_HELLO_FIELDS, 0},
	[TCP_F_HELLO_ACK] = {"HELLO_ACK", TCP_HELLO_FIELDS, 0},
	[TCP_F_ACK] = {"ACK", 0, 0},
	[TCP_F_SEND] = {"SEND", TCP_SEND_FIELDS, TCP_FF_INV},
	[TCP_F_PUT] = {"PUT", TCP_RMA_FIELDS, 0},
	[TCP_F_GET] = {"GET", TCP_RMA_FIELDS, 0},
	[TCP_F_ATOMIC] = {"ATOMIC", TCP_ATOMIC_FIELDS, 0},
	[TCP_F_RESP] = {"RESP", TCP_RESP_FIELDS, 0},
};

/* Which of compare, mask1, mask2 each atomic kind uses. */
static const unsigned atomic_fields[] = {
	[RMCA_ATOMIC_FADD] = 0,
	[RMCA_ATOMIC_CSWAP] = TCP_FLD_COMPARE,
	[RMCA_ATOMIC_MASKED_FADD] = TCP_FLD_MASK1,
	[RMCA_ATOMIC_MASKED_CSWAP] =
		TCP_FLD_COMPARE | TCP_FLD_MASK1 | TCP_FLD_MASK2,
};

const char *rmca_tcp_frame_name(unsigned type)
{
	if (type == 0 || type >= TCP_F_MAX)
		return "unknown";
	return rules[type].name;
}

static unsigned present_fields(const struct tcp_frame *f)
{
	return (f->id ? TCP_FLD_ID : 0) | (f->len ? TCP_FLD_LEN : 0) |
	       (f->raddr ? TCP_FLD_RADDR : 0) | (f->rkey ? TCP_FLD_RKEY : 0) |
	       (f->operand ? TCP_FLD_OPERAND : 0) |
	       (f->compare ? TCP_FLD_COMPARE : 0) |
	       (f->mask1 ? TCP_FLD_MASK1 : 0) | (f->mask2 ? TCP_FLD_MASK2 : 0);
}

static int check_type(const struct tcp_frame *f, const char **why)
{
	switch (f->type) {
	case TCP_F_HELLO:
	case TCP_F_HELLO_ACK:
		if (f->operand != TCP_HELLO_WORD) {
			*why = "bad magic or protocol version";
			return RMCA_ERR_PROTOCOL;
		}
		if (!f->id) {
			*why = "zero token";
			return RMCA_ERR_PROTOCOL;
		}
		if (f->acked || f->credits) {
			*why = "counts on a hello";
			return RMCA_ERR_PROTOCOL;
		}
		break;
	case TCP_F_SEND:
		if (!(f->flags & TCP_FF_INV) != !f->rkey) {
			*why = "SEND key without invalidate flag (or reverse)";
			return RMCA_ERR_PROTOCOL;
		}
		break;
	case TCP_F_ATOMIC:
		if (f->akind > RMCA_ATOMIC_MASKED_CSWAP) {
			*why = "unknown atomic kind";
			return RMCA_ERR_PROTOCOL;
		}
		if (f->len != 8) {
			*why = "atomic length is not 8";
			return RMCA_ERR_PROTOCOL;
		}
		if (present_fields(f) & ~atomic_fields[f->akind] &
		    (TCP_FLD_COMPARE | TCP_FLD_MASK1 | TCP_FLD_MASK2)) {
			*why = "atomic operand its kind does not use";
			return RMCA_ERR_PROTOCOL;
		}
		break;
	case TCP_F_RESP:
		if (f->status != RMCA_OK && f->status != RMCA_ERR_REMOTE_ACCESS &&
		    f->status != RMCA_ERR_TRUNCATED) {
			*why = "unknown response status";
			return RMCA_ERR_PROTOCOL;
		}
		if (f->status != RMCA_OK && (f->len || f->operand)) {
			*why = "error response with data";
			return RMCA_ERR_PROTOCOL;
		}
		break;
	default:
		break;
	}
	return 0;
}

/* The checks of the rules one by one, for a header the words say breaks
 * one: its first problem. */
static int check_rules(const uint8_t *buf, const struct tcp_frame *f,
		       const struct type_rule *r, const char **why)
{
	if (buf[3]) {
		*why = "reserved byte set";
		return RMCA_ERR_PROTOCOL;
	}
	if (f->flags & ~r->flags) {
		*why = "flag not allowed for this frame type";
		return RMCA_ERR_PROTOCOL;
	}
	if (f->akind && f->type != TCP_F_ATOMIC) {
		*why = "atomic kind on a non-atomic frame";
		return RMCA_ERR_PROTOCOL;
	}
	if (f->status && f->type != TCP_F_RESP) {
		*why = "status on a request frame";
		return RMCA_ERR_PROTOCOL;
	}
	/* the words found a field set that this type does not use */
	*why = "field not used by this frame type is set";
	return RMCA_ERR_PROTOCOL;
}

int rmca_tcp_frame_decode_full(const uint8_t *buf, size_t len,
			       struct tcp_frame *f, const char **why)
{
	const uint64_t *allowed;
	uint64_t bad = 0;

	if (len < TCP_HDR_LEN) {
		*why = "truncated header";
		return RMCA_ERR_PROTOCOL;
	}
	/* no type 0: an unknown type is allowed nothing */
	allowed = rmca_tcp_frame_may_set[buf[0] < TCP_F_MAX ? buf[0] : 0];
	for (size_t i = 0; i < TCP_HDR_LEN / 8; i++)
		bad |= rmca_tcp_get64(buf + 8 * i) & ~allowed[i];
	rmca_tcp_frame_load(f, buf);
	if (f->type == 0 || f->type >= TCP_F_MAX) {
		*why = "unknown frame type";
		return RMCA_ERR_PROTOCOL;
	}
	if (bad)
		return check_rules(buf, f, &rules[f->type], why);
	if (f->len > TCP_MAX_PAYLOAD) {
		*why = "length too large";
		return RMCA_ERR_PROTOCOL;
	}
	if ((rules[f->type].fields & TCP_FLD_ID) && !f->id) {
		*why = "zero operation id";
		return RMCA_ERR_PROTOCOL;
	}
	return check_type(f, why);
}
