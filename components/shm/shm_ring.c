/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Producing into the rings. Consuming is in shm_target.c, where each entry
 * is checked before it is served.
 */
#include <string.h>

#include "shm_ring.h"

void rmca_shm_rings_init(struct shm_rings *r, struct shm_seg *s, int side)
{
	int peer = !side;

	memset(r, 0, sizeof(*r));
	r->me = &s->side[side];
	r->peer = &s->side[peer];
	r->req_out = &s->req[side];
	r->req_in = &s->req[peer];
	r->resp_out = &s->resp[side];
	r->resp_in = &s->resp[peer];
	r->req_out_buf = s->reqbuf[side];
	r->req_in_buf = s->reqbuf[peer];
	r->resp_out_buf = s->respbuf[side];
	r->resp_in_buf = s->respbuf[peer];
}

/* Bytes of the request ring free for us, after reading the consumer's
 * head if the last one read leaves fewer than want. A head behind the one
 * seen or past our tail is the peer's lie: no room, and it is not taken
 * for the head seen, so that the next look at the answers (shm_target.c)
 * finds it out of range and ends the connection. Taken, it would pass
 * every request in flight for served, and leave no room for ever. */
static uint64_t req_room(struct shm_rings *r, uint64_t want)
{
	uint64_t used = r->req_tail - r->req_head_seen, head;

	if (used <= SHM_REQ_BYTES && SHM_REQ_BYTES - used >= want)
		return SHM_REQ_BYTES - used;
	head = shm_load(&r->req_out->head);
	if (head - r->req_head_seen > r->req_tail - r->req_head_seen)
		return 0;
	r->req_head_seen = head;
	used = r->req_tail - head;
	return used > SHM_REQ_BYTES ? 0 : SHM_REQ_BYTES - used;
}

struct shm_req *rmca_shm_req_reserve(struct shm_rings *r, uint32_t units)
{
	size_t need = (size_t)units * SHM_UNIT;
	size_t pos = (size_t)(r->req_tail % SHM_REQ_BYTES);
	size_t to_end = SHM_REQ_BYTES - pos;
	struct shm_req *pad;

	if (need > SHM_REQ_BYTES)
		return NULL;
	if (to_end < need) {
		if (req_room(r, to_end + need) < to_end + need)
			return NULL;
		pad = (struct shm_req *)(void *)(r->req_out_buf + pos);
		memset(pad, 0, sizeof(*pad));
		pad->type = SHM_R_PAD;
		pad->units = (uint16_t)(to_end / SHM_UNIT);
		rmca_shm_req_commit(r, pad, pad->units);
		pos = 0;
	} else if (req_room(r, need) < need) {
		return NULL;
	}
	return (struct shm_req *)(void *)(r->req_out_buf + pos);
}

void rmca_shm_req_commit(struct shm_rings *r, struct shm_req *q, uint32_t units)
{
	__atomic_store_n(&q->stamp, shm_stamp(r->req_tail), __ATOMIC_RELEASE);
	r->req_tail += (uint64_t)units * SHM_UNIT;
}

const uint8_t *rmca_shm_req_peek(const struct shm_rings *r, struct shm_req *h)
{
	const uint8_t *e =
		r->req_in_buf + (size_t)(r->req_in_head % SHM_REQ_BYTES);

	if (__atomic_load_n((const uint32_t *)(const void *)e,
			    __ATOMIC_ACQUIRE) != shm_stamp(r->req_in_head))
		return NULL;
	memcpy(h, e, sizeof(*h));
	return e;
}

void rmca_shm_req_consume(struct shm_rings *r, uint32_t units)
{
	uint8_t *e = r->req_in_buf + (size_t)(r->req_in_head % SHM_REQ_BYTES);

	/* Every unit, not only the header's: a payload's first bytes may
	 * be the stamp of a later lap. */
	for (uint32_t k = 0; k < units; k++)
		__atomic_store_n((uint32_t *)(void *)(e + (size_t)k * SHM_UNIT),
				 0, __ATOMIC_RELAXED);
	r->req_in_head += (uint64_t)units * SHM_UNIT;
}

struct shm_resp *rmca_shm_resp_slot(struct shm_rings *r, uint32_t nslots)
{
	uint64_t used = r->resp_tail - r->resp_head_seen;

	if (used > SHM_RESP_SLOTS || SHM_RESP_SLOTS - used < nslots) {
		r->resp_head_seen = shm_load(&r->resp_out->head);
		used = r->resp_tail - r->resp_head_seen;
	}
	if (used > SHM_RESP_SLOTS || SHM_RESP_SLOTS - used < nslots)
		return NULL;
	return (struct shm_resp *)(void *)(r->resp_out_buf +
					   (r->resp_tail % SHM_RESP_SLOTS) *
						   SHM_RESP_SLOT);
}

/* Data of an answer: the rest of the header's slot, then whole slots,
 * wrapping at the ring's end. */
static uint8_t *data_at(uint8_t *buf, uint64_t at, size_t off)
{
	uint64_t slot = at, pos;

	if (off < SHM_RESP_INLINE)
		return buf + (slot % SHM_RESP_SLOTS) * SHM_RESP_SLOT +
		       sizeof(struct shm_resp) + off;
	off -= SHM_RESP_INLINE;
	slot += 1 + off / SHM_RESP_SLOT;
	pos = off % SHM_RESP_SLOT;
	return buf + (slot % SHM_RESP_SLOTS) * SHM_RESP_SLOT + pos;
}

static size_t run_at(size_t off)
{
	return off < SHM_RESP_INLINE ? SHM_RESP_INLINE - off
				     : SHM_RESP_SLOT - (off - SHM_RESP_INLINE) %
							       SHM_RESP_SLOT;
}

void rmca_shm_resp_put_data(struct shm_rings *r, const void *data, size_t len)
{
	const uint8_t *p = data;

	for (size_t off = 0; off < len;) {
		size_t n = run_at(off);

		if (n > len - off)
			n = len - off;
		memcpy(data_at(r->resp_out_buf, r->resp_tail, off), p + off, n);
		off += n;
	}
}

void rmca_shm_resp_get_data(const struct shm_rings *r, uint64_t at, void *data,
			    size_t len)
{
	uint8_t *p = data;

	for (size_t off = 0; off < len;) {
		size_t n = run_at(off);

		if (n > len - off)
			n = len - off;
		memcpy(p + off, data_at(r->resp_in_buf, at, off), n);
		off += n;
	}
}

void rmca_shm_resp_commit(struct shm_rings *r, uint32_t nslots)
{
	r->resp_tail += nslots;
	shm_store(&r->resp_out->tail, r->resp_tail);
}
