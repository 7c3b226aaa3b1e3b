/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control channel: the bootstrap socket stays open after wire-up and
 * carries the core's own messages between the two cores of an endpoint
 * (emulated atomics, revoke messages). Framed like the hello:
 *
 *   u32 length of what follows (1..RMCA_CTRL_MAX)   u8 type   payload
 *
 *   ATOMIC_REQ   u64 id, u8 kind, u64 raddr, rkey, operand, compare,
 *                compare_mask, swap_mask, field_boundary
 *   ATOMIC_RESP  u64 id, u16 -status, u64 old
 *   REVOKE       u64 seq, u64 rkey     (seq: the message that carries it)
 *   REVOKE_ACK   u64 seq, u16 -status
 *   VERIFY       u64 id, u64 rkey, u64 raddr, u64 len, u8 access needed
 *   VERIFY_RESP  u64 id, u16 -status
 *   RAIL_KEY     u64 key, u64 rail's key, u64 addr, u64 len, u8 rail
 *                (rail 0: key names no region any more; see rails.c)
 *   RAIL_KEY_ACK u64 key, u16 -status
 *   GET_REQ      u64 id, u64 raddr, u64 rkey, u8 len (1..RMCA_CTRL_GET_MAX)
 *   GET_RESP     u64 id, u16 -status, u8 len, len bytes (len 0 with an
 *                error status, else the request's)
 *
 * Ids: atomics and gets share one count per endpoint, verifications have
 * their own per channel (1, 2, ...); each kind is answered in the order
 * the peer read it. An answer's status is one its sender's core gives
 * (ctrl_wire.c): 0 or RMCA_ERR_REMOTE_ACCESS for an access, 0 for a rail
 * key's ack, a revoke's error for its ack.
 */
#ifndef RMCA_CTRL_H
#define RMCA_CTRL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rmca.h>

#define RMCA_CTRL_MAX 128
/* The gets the target's core answers (get_core.c): up to the size siw may
 * not answer safely as a READ. */
#define RMCA_CTRL_GET_MAX 32

enum rmca_ctrl_type {
	RMCA_CTRL_ATOMIC_REQ = 1,
	RMCA_CTRL_ATOMIC_RESP = 2,
	RMCA_CTRL_REVOKE = 3,
	RMCA_CTRL_REVOKE_ACK = 4,
	RMCA_CTRL_VERIFY = 5, /* was this access of mine valid at your end? */
	RMCA_CTRL_VERIFY_RESP = 6,
	RMCA_CTRL_RAIL_KEY = 7, /* key's counterpart on another rail */
	RMCA_CTRL_RAIL_KEY_ACK = 8,
	RMCA_CTRL_GET_REQ = 9, /* read these bytes of yours for me */
	RMCA_CTRL_GET_RESP = 10,
};

struct rmca_ctrl_msg {
	uint8_t type;
	uint64_t id; /* ATOMIC_*: request id; REVOKE*: message seq */
	int status; /* *_RESP, *_ACK */
	uint64_t old; /* ATOMIC_RESP */
	uint64_t rkey; /* REVOKE, VERIFY, GET_REQ */
	uint64_t raddr, len; /* VERIFY, GET_REQ; len also GET_RESP */
	uint8_t access;	     /* VERIFY: RMCA_ACCESS_REMOTE_READ or _WRITE;
			      * RAIL_KEY: the rail */
	struct rmca_atomic op; /* ATOMIC_REQ */
	uint8_t data[RMCA_CTRL_GET_MAX]; /* GET_RESP: len of them */
};

/* Encode m with its length prefix; returns the length or a negative status. */
int rmca_ctrl_encode(const struct rmca_ctrl_msg *m, uint8_t *buf, size_t len);
/* Decode one frame body (after the prefix); 0 or RMCA_ERR_PROTOCOL + why. */
int rmca_ctrl_decode(const uint8_t *buf, size_t len, struct rmca_ctrl_msg *m,
		     char *why, size_t why_len);

struct rmca_ep;
/* Take over the bootstrap socket fd for ep (registers it with the loop). */
int rmca_ctrl_open(struct rmca_ep *ep, int fd);
void rmca_ctrl_close(struct rmca_ep *ep);
/* Queue m for the peer; RMCA_ERR_CONNECTION once the channel is gone. */
int rmca_ctrl_send(struct rmca_ep *ep, const struct rmca_ctrl_msg *m);
/*
 * Queue m, a message the peer is owed (an answer it waits for, a key
 * withdrawn): when it cannot be queued, the channel fails (status
 * RMCA_ERR_NO_MEMORY when out of memory) once the message being parsed
 * is done, or at the next event outside a parse, so that the peer sees
 * it close and ends what waited on it, as this side does.
 */
int rmca_ctrl_send_owed(struct rmca_ep *ep, const struct rmca_ctrl_msg *m);
/*
 * VERIFYs (verify.c) are numbered on their channel, 1, 2, ... in the order
 * sent, and the peer answers them in that order: an answer is for the
 * oldest not answered yet, whether this side still waits for it or gave
 * up on it (late: its deadline passed), or the peer breaks the protocol.
 */
/* Send m, a VERIFY, with the next number as its id; as rmca_ctrl_send. */
int rmca_ctrl_send_verify(struct rmca_ep *ep, struct rmca_ctrl_msg *m);
/* Take an answer to VERIFY id: RMCA_ERR_PROTOCOL when it is not the one
 * owed, else the number of late answers on the channel so far. */
long rmca_ctrl_verify_answer(struct rmca_ep *ep, uint64_t id, bool late);
/*
 * Ids go 1, 2, ...: a peer knows the next one without reading it. A
 * request's answer is taken only once the request was written to the
 * socket whole: rmca_ctrl_sent_end, right after it was queued, is where it
 * ends in the channel's send stream; rmca_ctrl_written says whether the
 * writes have got that far (false without a channel).
 */
uint64_t rmca_ctrl_sent_end(const struct rmca_ep *ep);
bool rmca_ctrl_written(const struct rmca_ep *ep, uint64_t end);
/* Bytes queued for the peer and not sent yet (0 without a channel). */
size_t rmca_ctrl_queued_bytes(const struct rmca_ep *ep);

#endif
