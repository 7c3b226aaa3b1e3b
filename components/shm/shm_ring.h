/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared segment of one connection and its single-producer,
 * single-consumer rings. Each side produces requests into its request ring
 * and answers the peer's requests in its response ring; each index has one
 * writer, published with release and read with acquire, so the fast path
 * is loads and stores only.
 *
 * A request says itself that it is there: the producer writes its stamp
 * (from its position) last, and the consumer watches the stamp at its head,
 * so a message costs the consumer the lines of the entry and nothing else;
 * a message of up to 32 bytes is one line. The consumer zeroes the stamp
 * word of every unit it consumed before it gives the room back, so no old
 * entry or payload can pass for a new one. Requests that succeed without
 * data to return are answered by the consumer's head alone; the response
 * ring carries only data (gets, atomics) and errors.
 *
 * The peer can write anything into the segment at any time: a consumer
 * copies a header out before it checks it, and every length it acts on was
 * checked on that copy.
 */
#ifndef RMCA_SHM_RING_H
#define RMCA_SHM_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHM_CL	       64
#define SHM_UNIT       64 /* request ring granule: a header is one unit */
#define SHM_REQ_BYTES  (256u * 1024) /* per side */
#define SHM_RESP_SLOTS 1024u /* per side: bounds the requests in flight */
#define SHM_RESP_SLOT  256u
#define SHM_INLINE_MAX 8192u	   /* send/put payload carried in the ring */
#define SHM_GET_PIECE  8192u	   /* get data in one answer, without CMA */
#define SHM_SEG_MAGIC  0x4d485352u /* "RSHM" */

enum shm_req_type {
	SHM_R_PAD = 1, /* skip to the ring's end */
	SHM_R_SEND,    /* len bytes for the oldest receive */
	SHM_R_PUT,     /* len bytes for [raddr, raddr + len) under rkey */
	SHM_R_GET,     /* len bytes at raddr under rkey, to laddr */
	SHM_R_ATOMIC,  /* akind on the word at raddr; masks in unit 2 */
};

enum shm_req_flags {
	SHM_RF_INLINE = 1 << 0, /* payload follows the header; GET: the
				   answer carries the data */
	SHM_RF_INV = 1 << 1,	/* SEND: revoke rkey at the target */
	SHM_RF_MORE = 1 << 2,	/* SEND: a piece, more of the message follows */
};

struct shm_req {
	uint32_t stamp; /* shm_stamp(position), written last */
	uint8_t type;
	uint8_t flags;
	uint16_t units;	 /* of the whole entry, header included */
	uint32_t credit; /* the producer's receives ever posted (low bits) */
	uint8_t akind;
	uint8_t zero[3];
	uint64_t len;
	uint64_t rkey;
	uint64_t raddr; /* a SEND's inline payload starts here */
	uint64_t laddr; /* the initiator's buffer (cross-memory attach); a
			   PUT's inline payload starts here */
	uint64_t operand;
	uint64_t compare;
};

/* The stamp of the entry at ring position pos (a multiple of SHM_UNIT):
 * never 0, which is what the consumer leaves behind. */
static inline uint32_t shm_stamp(uint64_t pos)
{
	return (uint32_t)(pos / SHM_UNIT) << 1 | 1;
}

/* Where the payload of an entry of this type starts: a small SEND or PUT
 * shares the header's line. */
static inline size_t shm_pl_off(unsigned type)
{
	return type == SHM_R_SEND  ? offsetof(struct shm_req, raddr)
	       : type == SHM_R_PUT ? offsetof(struct shm_req, laddr)
				   : sizeof(struct shm_req);
}

struct shm_resp {
	uint64_t id;
	int32_t status;
	uint32_t len;	  /* inline GET bytes after the header */
	uint64_t operand; /* atomic: the old value */
	uint8_t pad[40];
};

#define SHM_RESP_INLINE (SHM_RESP_SLOT - sizeof(struct shm_resp))

/* Slots of an answer with len data bytes: the header's slot, then as many
 * whole slots as the rest of the data needs. */
static inline uint32_t shm_resp_slots(uint64_t len)
{
	return len <= SHM_RESP_INLINE
		       ? 1
		       : (uint32_t)(1 + (len - SHM_RESP_INLINE + SHM_RESP_SLOT -
					 1) / SHM_RESP_SLOT);
}

struct shm_idx {
	_Alignas(SHM_CL) uint64_t tail; /* producer's (responses only) */
	_Alignas(SHM_CL) uint64_t head; /* consumer's */
};

struct shm_side {
	/* Set by its side before it may sleep; a peer that takes it back
	 * to 0 owes that side a wake byte on the socket. */
	_Alignas(SHM_CL) uint64_t armed;
	_Alignas(SHM_CL) uint64_t recvs_posted; /* receives ever posted */
	/* As an initiator: the slot of the peer's key table (shm_pub.h) this
	 * side's core is copying under right now, 0 when none. */
	_Alignas(SHM_CL) uint64_t access;
	/* As a target: set when it closed the connection, so that the peer
	 * starts no copy into its memory any more; and the tag that marks
	 * the use-once keys it handed out on this connection. */
	_Alignas(SHM_CL) uint64_t closed;
	uint64_t tag;
};

struct shm_seg {
	uint32_t magic;
	uint32_t version;
	struct shm_side side[2]; /* 0: active, 1: passive */
	struct shm_idx req[2];	 /* req[i]: requests produced by side i */
	struct shm_idx resp[2];	 /* resp[i]: answers produced by side i */
	_Alignas(SHM_CL) uint8_t reqbuf[2][SHM_REQ_BYTES];
	uint8_t respbuf[2][SHM_RESP_SLOTS * SHM_RESP_SLOT];
};

/* One side's view of the segment. */
struct shm_rings {
	struct shm_side *me, *peer;
	struct shm_idx *req_out, *req_in, *resp_out, *resp_in;
	uint8_t *req_out_buf, *req_in_buf, *resp_out_buf, *resp_in_buf;
	uint64_t req_tail; /* ours to write, mirrored locally */
	uint64_t req_in_head;
	uint64_t resp_tail;
	uint64_t resp_in_head;
	/* The consumers' heads as last read: the producer reads the peer's
	 * line again only when these leave too little room. */
	uint64_t req_head_seen;
	uint64_t resp_head_seen;
};

static inline uint64_t shm_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void shm_store(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

void rmca_shm_rings_init(struct shm_rings *r, struct shm_seg *s, int side);
/* Room for an entry of units units, contiguous: its header, at position
 * r->req_tail, or NULL. */
struct shm_req *rmca_shm_req_reserve(struct shm_rings *r, uint32_t units);
/* The entry q, written: published. */
void rmca_shm_req_commit(struct shm_rings *r, struct shm_req *q,
			 uint32_t units);
/* The request at the consumer's head, once its stamp is there: its header
 * copied into h, or NULL. */
const uint8_t *rmca_shm_req_peek(const struct shm_rings *r, struct shm_req *h);
/* The request of units units at the head consumed: stamps zeroed. The
 * head is published by the caller. */
void rmca_shm_req_consume(struct shm_rings *r, uint32_t units);
/* The slot for the next answer of nslots slots (the initiator keeps them
 * free for each request in flight, so a full ring means a broken peer):
 * NULL then. */
struct shm_resp *rmca_shm_resp_slot(struct shm_rings *r, uint32_t nslots);
/* The answer's data after its header, len bytes, across slots. */
void rmca_shm_resp_put_data(struct shm_rings *r, const void *data, size_t len);
void rmca_shm_resp_commit(struct shm_rings *r, uint32_t nslots);
/* Read len data bytes of the answer whose header is at slot index at. */
void rmca_shm_resp_get_data(const struct shm_rings *r, uint64_t at, void *data,
			    size_t len);

/* Units of an entry of this type with payload bytes inline. */
static inline uint32_t shm_units(unsigned type, uint64_t payload)
{
	return (uint32_t)((shm_pl_off(type) + payload + SHM_UNIT - 1) /
			  SHM_UNIT);
}

#endif
