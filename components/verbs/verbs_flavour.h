/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What differs between the verbs flavours (InfiniBand/RoCE and iWARP), in
 * one const table per flavour instead of transport tests spread over the
 * files. A module's flavour follows from its device's transport.
 */
#ifndef RMCA_VERBS_FLAVOUR_H
#define RMCA_VERBS_FLAVOUR_H

#include <stdbool.h>

#include <infiniband/verbs.h>

struct rmca_verbs_flavour {
	const char *name;
	/* A send goes only when a receive is known to be posted at the
	 * peer, from the peer's counter (credits, verbs_post.c): iWARP has
	 * no RNR retry, and on InfiniBand an RNR NAK stalls the sender for
	 * the responder's RNR timer (rdma_cm's 655 ms on rxe). */
	bool credits;
	/* Sends carry the sender's receive counter (its low 32 bits) as
	 * immediate data: a reply refreshes the peer's credits, no READ. */
	bool credit_imm;
	/* A send's local completion says its data left, not that the peer
	 * placed it: the send is held until the peer confirms it. */
	bool confirm_sends;
	/* Messages carry an 8-byte header: how many messages the sender has
	 * taken from its peer, which confirms the peer's held sends up to
	 * there, and how many receives it has posted, which refreshes the
	 * peer's credits as credit_imm does on ib (verbs_post.c). */
	bool ack_header;
	/* An RDMA READ response is a tagged write into the sink, which must
	 * grant remote write. */
	bool read_sink_remote_write;
	/* siw serves READs from any STag of the PD: rmca keys say whether
	 * their region grants remote read (RMCA_VERBS_KEY_READ) and a get
	 * without it is refused locally (verbs_ops.c). */
	bool read_key_bit;
	/* Only the active side may speak first and its hello can sit unread:
	 * the active connect() confirms the hello with a READ (verbs_cm.c). */
	bool hello_read;
	/* Local ports come from the host's TCP port space (verbs_port.c). */
	bool tcp_ports;
	/* A completed work request was acknowledged by the responder: a
	 * put's completion means its data is placed
	 * (RMCA_CAP_REMOTE_COMPLETION). */
	bool remote_completion;
};

extern const struct rmca_verbs_flavour rmca_verbs_flavour_ib;
extern const struct rmca_verbs_flavour rmca_verbs_flavour_iwarp;

/* The flavour of a device of transport tt (NULL: none rmca serves). */
const struct rmca_verbs_flavour *
rmca_verbs_flavour_of(enum ibv_transport_type tt);

#endif
