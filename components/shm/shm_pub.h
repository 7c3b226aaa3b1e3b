/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The key table a target publishes to its peers, so that an initiator's
 * core can check a key itself and then copy straight into or out of the
 * target's memory with process_vm_writev/readv, without the target's core.
 *
 * The table is a sealed memfd owned by the target, mapped read-only by
 * each peer. A key names its slot in its low SHM_SLOT_BITS (0: not
 * published, the target serves that key itself). A slot is a seqlock: the
 * target makes seq odd, rewrites the slot, makes it even again; a reader
 * that sees an odd or changed seq refuses.
 *
 * Revocation must win against an access racing with it. Each side of a
 * connection announces, in the connection's segment, the slot its core is
 * copying under at that moment (shm_side.access), and only then reads the
 * slot; the target first clears the slot, then reads every peer's
 * announcement. Both with a full fence between their store and their load
 * (Dekker): either the initiator sees the cleared slot and refuses, or the
 * target sees the announcement and waits until it is withdrawn (or the
 * peer has exited: its pidfd is readable only once its memory is gone).
 * An initiator checks the slot again after every chunk of SHM_DIRECT_CHUNK
 * bytes, so a deregistration waits for one chunk at most. When
 * rmca_mr_dereg returns no peer is inside the region, and none can enter.
 *
 * A region that lies in an allocation of rmca_mem_alloc (a memfd) names it
 * in its slot: the memfd's number in the target, its inode, where it is
 * mapped there and its size. The initiator fetches that descriptor with
 * pidfd_getfd (the same ptrace permission as CMA), checks it is the memfd
 * named (inode, seals, size), maps it once per connection and copies with
 * memcpy, under the same announce-check-copy-recheck protocol. mem[] lists
 * the allocations some published key lies in, each by a serial the target
 * never reuses (an inode number may come back); the target clears an
 * entry when the last such key goes and bumps mem_gen, so that initiators
 * unmap what no key reaches any more, and a mapping is reused only for the
 * serial it was made for.
 *
 * This guards against a peer's mistakes, not against a hostile peer: a
 * process that may attach to another (same user, ptrace allowed) can write
 * its memory with or without rmca. Peers that cannot attach use the rings,
 * where the target's core checks and copies every byte.
 */
#ifndef RMCA_SHM_PUB_H
#define RMCA_SHM_PUB_H

#include <stdint.h>

#define SHM_SLOT_BITS	 12
#define SHM_KEY_SLOTS	 (1u << SHM_SLOT_BITS) /* slot 0 is never used */
#define SHM_SLOT_MASK	 ((uint64_t)SHM_KEY_SLOTS - 1)
#define SHM_PUB_MAGIC	 0x59454b52u /* "RKEY" */
#define SHM_DIRECT_CHUNK (1u << 20)
#define SHM_MEM_SLOTS	 256u /* allocations published at once; 0 unused */

struct shm_kslot {
	uint64_t seq; /* odd while the target rewrites the slot */
	uint64_t key; /* 0: nothing */
	uint64_t addr;
	uint64_t len;
	uint64_t tag;	 /* use-once: the connection's tag (shm_side.tag) */
	uint64_t access; /* RMCA_ACCESS_REMOTE_* */
	/* The allocation the region lies in; mem 0: none (CMA). */
	uint64_t mem;	   /* its entry in shm_keypub.mem */
	uint64_t mem_id;   /* the memfd's inode */
	uint64_t mem_fd;   /* its descriptor in the target */
	uint64_t mem_base; /* its address in the target */
	uint64_t mem_len;
	uint64_t mem_serial; /* as in shm_keypub.mem[mem] */
	uint64_t pad[4];
};

struct shm_keypub {
	uint32_t magic;
	uint32_t version;
	uint64_t mem_gen; /* bumped when an entry of mem[] is cleared */
	uint8_t pad[48];
	uint64_t mem[SHM_MEM_SLOTS]; /* serials; 0: free */
	struct shm_kslot slot[SHM_KEY_SLOTS];
};

static inline unsigned shm_key_slot(uint64_t key)
{
	return (unsigned)(key & SHM_SLOT_MASK);
}

#endif
