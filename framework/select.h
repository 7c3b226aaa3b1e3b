/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The selection rule: which pair of modules (one per side) carries an
 * endpoint. Pure: it sees the two module lists of the hellos, the locality
 * of the peer, and a reachability verdict from the caller.
 */
#ifndef RMCA_SELECT_H
#define RMCA_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* 1 if local module li reaches peer module pi; 2 if it does and it is the
 * module of the route the peer was addressed on (why may say so); else 0
 * with why filled. */
typedef int (*rmca_reach_fn)(void *arg, int li, int pi, char *why,
			     size_t why_len);

struct rmca_selection {
	int a, p; /* chosen module of the active and of the passive side, or -1 */
	int rank; /* what reach said of the chosen pair */
	char route[256]; /* and why, when it was 2 */
	char reasons[2048]; /* one line per candidate skipped or chosen */
};

/*
 * Candidates are the pairs of modules of the same component present on both
 * sides (each side lists only what RMCA_transports left it), minus pairs
 * that cannot loop back to a local peer, minus pairs that lack any of
 * required_caps, minus pairs the caller finds unreachable. Rank: the sum of
 * both priorities, then the pair on the addressed route (reach said 2), then
 * component name, then the active's index, then the passive's. The passive
 * side decides; the active side's own answer is only compared with it.
 * local_is_active tells which list is local (for reach). Returns 0 or
 * RMCA_ERR_UNREACHABLE.
 */
int rmca_select(const struct rmca_wire_mod *amods, int na,
		const struct rmca_wire_mod *pmods, int np, int local_is_active,
		int peer_is_local, uint32_t required_caps, rmca_reach_fn reach,
		void *arg, struct rmca_selection *sel);

/*
 * Rails: more pairs of modules to use beside the chosen one (sel, filled
 * by rmca_select): pairs of the chosen pair's component whose priorities
 * sum to the chosen pair's, that pass the same filters, taken in the
 * order of the selection rule so that no module of either side is in two
 * pairs. At most max - 1 pairs, into rail_a[] and rail_p[]; returns how
 * many. Each pair taken is noted in sel->reasons.
 */
int rmca_select_rails(const struct rmca_wire_mod *amods, int na,
		      const struct rmca_wire_mod *pmods, int np,
		      int local_is_active, int peer_is_local,
		      rmca_reach_fn reach, void *arg, int max,
		      struct rmca_selection *sel, uint8_t *rail_a,
		      uint8_t *rail_p);

#endif
