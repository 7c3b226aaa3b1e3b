/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp component's wire format: every frame starts with the same fixed
 * 72-byte little-endian header; SEND, PUT and RESP (to a GET) frames are
 * followed by len payload bytes. The header is validated in full before any
 * payload is read, so a payload never lands anywhere unchecked.
 *
 *   0 u8  type        8 u64 id        40 u64 operand
 *   1 u8  flags      16 u64 len       48 u64 compare
 *   2 u8  akind      24 u64 raddr     56 u64 mask1 (compare_mask/field_boundary)
 *   3 u8  zero       32 u64 rkey      64 u64 mask2 (swap_mask)
 *   4 s32 status
 *
 * Fields a type does not use must be zero.
 */
#ifndef RMCA_TCP_FRAME_H
#define RMCA_TCP_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define TCP_HDR_LEN 72
#define TCP_PROTO_MAGIC 0x52544350u /* "RTCP" */
#define TCP_PROTO_VERSION 1u
#define TCP_HELLO_WORD (((uint64_t)TCP_PROTO_MAGIC << 32) | TCP_PROTO_VERSION)
/* Larger than any region a process can register, small enough that
 * raddr + len never wraps in the checks. */
#define TCP_MAX_PAYLOAD (1ull << 48)

enum tcp_frame_type {
	TCP_F_HELLO = 1, /* active -> passive: id = token, operand = hello word */
	TCP_F_HELLO_ACK, /* passive -> active: id = token, operand = hello word */
	TCP_F_CREDIT, /* a receive of len bytes was posted */
	TCP_F_SEND, /* message of len bytes against the oldest credit */
	TCP_F_PUT, /* len bytes for [raddr, raddr + len) under rkey */
	TCP_F_GET, /* ask for len bytes at raddr under rkey */
	TCP_F_ATOMIC, /* akind on the 8 bytes at raddr */
	TCP_F_RESP, /* answer to request id: status, GET payload, atomic old */
	TCP_F_MAX,
};

enum tcp_frame_flags {
	TCP_FF_INV = 1 << 0, /* SEND: revoke rkey at the target */
	TCP_FF_TRUNC = 1 << 1, /* SEND: only a prefix; operand = full length */
};

struct tcp_frame {
	uint8_t type;
	uint8_t flags;
	uint8_t akind; /* enum rmca_atomic_kind, ATOMIC only */
	int32_t status; /* RESP only */
	uint64_t id;
	uint64_t len;
	uint64_t raddr;
	uint64_t rkey;
	uint64_t operand;
	uint64_t compare;
	uint64_t mask1;
	uint64_t mask2;
};

void rmca_tcp_frame_encode(const struct tcp_frame *f, uint8_t *buf);
/* 0, or RMCA_ERR_PROTOCOL with *why naming the first problem found. */
int rmca_tcp_frame_decode(const uint8_t *buf, size_t len, struct tcp_frame *f,
			  const char **why);
const char *rmca_tcp_frame_name(unsigned type);

#endif
