/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bootstrap hello: what two contexts tell each other before they pick a
 * transport. Length-prefixed, versioned, little-endian, and decoded by a
 * parser that trusts nothing (it also reads bytes from whoever connects).
 *
 *   u32 length of what follows (<= RMCA_HELLO_MAX)
 *   u32 magic "RMCA"   u16 version   u8 kind   u8 reserved
 *   kind HELLO:  u64 token, u8 role, u8 atomic_mode, u8 choice_a, u8 choice_p,
 *                u64 netns, str boot_id, u8 nmods, nmods x module,
 *                u8 nrails, nrails x rail
 *       module:  str component, str device, u32 caps, i32 priority,
 *                u16 addr_len, addr bytes
 *       rail:    u8 active's module, u8 passive's module
 *       (nrails in an active or probe hello is how many pairs it takes
 *       beside the choice, and no rail follows; the passive's answer
 *       lists that many at most, framework/rails.c)
 *   kind REJECT: u16 status (negated rmca_status), str reason
 *   kind RAILS:  u8 ntaken, ntaken x u8 rail (increasing)
 *       (version 3: the active side's reply to an answer that listed
 *       rails, and to no other: which of them it takes, as indexes into
 *       the answer's list; a pair its own route check refuses is left out,
 *       so the passive side connects the taken ones and waits for no
 *       other. Version 2 had no such message: its passive side waited
 *       RMCA_connect_timeout for a rail that would never come. A peer of
 *       another version is refused by name both ways; no rail is guessed.)
 *   (version 4: control messages GET_REQ and GET_RESP, framework/ctrl.h,
 *   and cap short_read; a version-3 peer declares no short_read and does
 *   not know the messages its gets of at most 32 bytes would then become.)
 *   str: u8 length, bytes (no NUL)
 */
#ifndef RMCA_WIRE_H
#define RMCA_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define RMCA_WIRE_MAGIC 0x41434d52u /* "RMCA" little-endian */
#define RMCA_WIRE_VERSION   4
#define RMCA_HELLO_MAX 16384
#define RMCA_HELLO_MAX_MODS 32
#define RMCA_WIRE_ADDR_MAX 256
#define RMCA_WIRE_NO_CHOICE 0xff
/* pairs beside the chosen one: RMCA_max_rails is at most 1 + this */
#define RMCA_WIRE_MAX_RAILS 7

enum rmca_wire_kind {
	RMCA_WIRE_HELLO = 1,
	RMCA_WIRE_REJECT = 2,
	RMCA_WIRE_RAILS = 3,
};

enum rmca_wire_role {
	RMCA_ROLE_ACTIVE = 1, /* the rmca_connect() side */
	RMCA_ROLE_PASSIVE = 2,
	RMCA_ROLE_PROBE = 3, /* rmca_info --explain: answer, make no endpoint */
};

struct rmca_wire_mod {
	char component[32];
	char device[64];
	uint32_t caps;
	int32_t priority;
	uint16_t addr_len;
	uint8_t addr[RMCA_WIRE_ADDR_MAX];
};

struct rmca_hello {
	uint16_t version;
	uint8_t kind;
	/* HELLO */
	uint64_t token;
	uint8_t role;
	uint8_t atomic_mode;
	uint8_t choice_a, choice_p; /* passive's choice: module indexes */
	uint64_t netns;
	char boot_id[40];
	uint8_t nmods;
	struct rmca_wire_mod mods[RMCA_HELLO_MAX_MODS];
	/* active: how many more pairs it takes beside the choice; passive's
	 * answer: those pairs, used together with the choice (rails) */
	uint8_t nrails;
	uint8_t rail_a[RMCA_WIRE_MAX_RAILS], rail_p[RMCA_WIRE_MAX_RAILS];
	/* RAILS: the listed rails the active side takes (indexes into the
	 * answer's rail_a/rail_p, increasing) */
	uint8_t ntaken;
	uint8_t taken[RMCA_WIRE_MAX_RAILS];
	/* REJECT */
	int status;
	char reason[256];
};

/* Encode h (without the length prefix) into buf; returns the length or a
 * negative status when it does not fit. */
int rmca_hello_encode(const struct rmca_hello *h, uint8_t *buf, size_t len);

/*
 * Decode a message body (what followed the length prefix). Returns 0, or
 * RMCA_ERR_PROTOCOL with why filled ("bad magic", "version 2, expected 1",
 * "truncated module 3", ...).
 */
int rmca_hello_decode(const uint8_t *buf, size_t len, struct rmca_hello *h,
		      char *why, size_t why_len);

#endif
