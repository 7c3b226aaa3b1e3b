// SPDX-License-Identifier: BSD-3-Clause
/* Control message encoding; the decoder trusts nothing. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctrl.h"

static void le(uint8_t **p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		*(*p)++ = (uint8_t)(v >> (8 * i));
}

static uint64_t get(const uint8_t **p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)*(*p)++ << (8 * i);
	return v;
}

static size_t body_len(uint8_t type)
{
	switch (type) {
	case RMCA_CTRL_ATOMIC_REQ:
		return 8 + 1 + 7 * 8;
	case RMCA_CTRL_ATOMIC_RESP:
		return 8 + 2 + 8;
	case RMCA_CTRL_REVOKE:
		return 8 + 8;
	case RMCA_CTRL_REVOKE_ACK:
	case RMCA_CTRL_VERIFY_RESP:
	case RMCA_CTRL_RAIL_KEY_ACK:
		return 8 + 2;
	case RMCA_CTRL_VERIFY:
	case RMCA_CTRL_RAIL_KEY:
		return 8 + 3 * 8 + 1;
	case RMCA_CTRL_GET_REQ:
		return 8 + 2 * 8 + 1;
	case RMCA_CTRL_GET_RESP:
		return 8 + 2 + 1; /* and the data: frame_len() */
	}
	return 0;
}

/* The body's length, data included; 0 for a message that cannot be. */
static size_t frame_len(const struct rmca_ctrl_msg *m)
{
	size_t n = body_len(m->type);

	if (m->type == RMCA_CTRL_GET_RESP) {
		if (m->len > RMCA_CTRL_GET_MAX)
			return 0;
		n += (size_t)m->len;
	}
	return n;
}

int rmca_ctrl_encode(const struct rmca_ctrl_msg *m, uint8_t *buf, size_t len)
{
	size_t n = frame_len(m);
	uint8_t *p = buf;

	if (!n)
		return RMCA_ERR_INVALID;
	if (len < 4 + 1 + n)
		return RMCA_ERR_NO_MEMORY;
	le(&p, 1 + n, 4);
	*p++ = m->type;
	le(&p, m->id, 8);
	switch (m->type) {
	case RMCA_CTRL_ATOMIC_REQ:
		*p++ = (uint8_t)m->op.kind;
		le(&p, m->op.raddr, 8);
		le(&p, m->op.rkey, 8);
		le(&p, m->op.operand, 8);
		le(&p, m->op.compare, 8);
		le(&p, m->op.compare_mask, 8);
		le(&p, m->op.swap_mask, 8);
		le(&p, m->op.field_boundary, 8);
		break;
	case RMCA_CTRL_ATOMIC_RESP:
		le(&p, (uint16_t)-m->status, 2);
		le(&p, m->old, 8);
		break;
	case RMCA_CTRL_REVOKE:
		le(&p, m->rkey, 8);
		break;
	case RMCA_CTRL_REVOKE_ACK:
	case RMCA_CTRL_VERIFY_RESP:
	case RMCA_CTRL_RAIL_KEY_ACK:
		le(&p, (uint16_t)-m->status, 2);
		break;
	case RMCA_CTRL_VERIFY:
	case RMCA_CTRL_RAIL_KEY:
		le(&p, m->rkey, 8);
		le(&p, m->raddr, 8);
		le(&p, m->len, 8);
		*p++ = m->access;
		break;
	case RMCA_CTRL_GET_REQ:
		le(&p, m->raddr, 8);
		le(&p, m->rkey, 8);
		*p++ = (uint8_t)m->len;
		break;
	case RMCA_CTRL_GET_RESP:
		le(&p, (uint16_t)-m->status, 2);
		*p++ = (uint8_t)m->len;
		memcpy(p, m->data, (size_t)m->len);
		p += m->len;
		break;
	}
	return (int)(p - buf);
}

/*
 * The statuses an answer may carry: those its sender's core can give
 * (atomic_core.c, get_core.c, verify.c: the access refused or not; a rail
 * key's ack: none; a revoke's ack: the revoke's error). The status becomes
 * the completion of an operation here: never RMCA_ERR_AGAIN (a post's
 * answer) nor RMCA_ERR_CANCELED (this side's own cancel, which leaves the
 * endpoint up).
 */
static bool status_ok(uint8_t type, int st)
{
	switch (type) {
	case RMCA_CTRL_ATOMIC_RESP:
	case RMCA_CTRL_GET_RESP:
	case RMCA_CTRL_VERIFY_RESP:
		return !st || st == RMCA_ERR_REMOTE_ACCESS;
	case RMCA_CTRL_REVOKE_ACK:
		return st <= 0 && st >= RMCA_ERR_TIMEOUT &&
		       st != RMCA_ERR_AGAIN && st != RMCA_ERR_CANCELED;
	}
	return !st;
}

int rmca_ctrl_decode(const uint8_t *buf, size_t len, struct rmca_ctrl_msg *m,
		     char *why, size_t why_len)
{
	const uint8_t *p = buf;
	size_t n;

	memset(m, 0, sizeof(*m));
	if (len < 1) {
		snprintf(why, why_len, "empty control message");
		return RMCA_ERR_PROTOCOL;
	}
	m->type = *p++;
	n = body_len(m->type);
	if (!n) {
		snprintf(why, why_len, "unknown control message type %u", m->type);
		return RMCA_ERR_PROTOCOL;
	}
	if (m->type == RMCA_CTRL_GET_RESP && len >= 1 + n)
		n += buf[n]; /* its data: the length byte is the body's last */
	if (len != 1 + n) {
		snprintf(why, why_len,
			 "control message type %u of %zu bytes, expected %zu",
			 m->type, len, 1 + n);
		return RMCA_ERR_PROTOCOL;
	}
	m->id = get(&p, 8);
	switch (m->type) {
	case RMCA_CTRL_ATOMIC_REQ:
		m->op.kind = (enum rmca_atomic_kind)*p++;
		if (m->op.kind > RMCA_ATOMIC_MASKED_CSWAP) {
			snprintf(why, why_len, "unknown atomic kind %u",
				 (unsigned)m->op.kind);
			return RMCA_ERR_PROTOCOL;
		}
		m->op.raddr = get(&p, 8);
		m->op.rkey = get(&p, 8);
		m->op.operand = get(&p, 8);
		m->op.compare = get(&p, 8);
		m->op.compare_mask = get(&p, 8);
		m->op.swap_mask = get(&p, 8);
		m->op.field_boundary = get(&p, 8);
		break;
	case RMCA_CTRL_ATOMIC_RESP:
		m->status = -(int)get(&p, 2);
		m->old = get(&p, 8);
		break;
	case RMCA_CTRL_REVOKE:
		m->rkey = get(&p, 8);
		break;
	case RMCA_CTRL_REVOKE_ACK:
	case RMCA_CTRL_VERIFY_RESP:
	case RMCA_CTRL_RAIL_KEY_ACK:
		m->status = -(int)get(&p, 2);
		break;
	case RMCA_CTRL_RAIL_KEY:
		m->rkey = get(&p, 8);
		m->raddr = get(&p, 8);
		m->len = get(&p, 8);
		m->access = *p++; /* the rail */
		if (!m->id ||
		    (m->access && (!m->len || m->raddr + m->len < m->raddr))) {
			snprintf(why, why_len, "rail key of a bad region");
			return RMCA_ERR_PROTOCOL;
		}
		break;
	case RMCA_CTRL_VERIFY:
		m->rkey = get(&p, 8);
		m->raddr = get(&p, 8);
		m->len = get(&p, 8);
		m->access = *p++;
		if (m->access != RMCA_ACCESS_REMOTE_READ &&
		    m->access != RMCA_ACCESS_REMOTE_WRITE) {
			snprintf(why, why_len, "verify of access 0x%x", m->access);
			return RMCA_ERR_PROTOCOL;
		}
		break;
	case RMCA_CTRL_GET_REQ:
		m->raddr = get(&p, 8);
		m->rkey = get(&p, 8);
		m->len = *p++;
		if (!m->len || m->len > RMCA_CTRL_GET_MAX) {
			snprintf(why, why_len, "get of %u bytes",
				 (unsigned)m->len);
			return RMCA_ERR_PROTOCOL;
		}
		break;
	case RMCA_CTRL_GET_RESP:
		m->status = -(int)get(&p, 2);
		m->len = *p++;
		if (m->len > RMCA_CTRL_GET_MAX || (m->status && m->len)) {
			snprintf(why, why_len, "get answer of %u bytes%s",
				 (unsigned)m->len,
				 m->status ? " with an error" : "");
			return RMCA_ERR_PROTOCOL;
		}
		memcpy(m->data, p, (size_t)m->len);
		break;
	}
	if (!status_ok(m->type, m->status)) {
		snprintf(why, why_len, "control message %u with status %d",
			 m->type, m->status);
		return RMCA_ERR_PROTOCOL;
	}
	return 0;
}
