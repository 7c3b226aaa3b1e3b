// SPDX-License-Identifier: BSD-3-Clause
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <rmca.h>
#include <rmca/component.h>

#include "select.h"

#define RMCA_ARRAY_LEN(x) (sizeof(x) / sizeof((x)[0]))

static void note(struct rmca_selection *sel, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note(struct rmca_selection *sel, const char *fmt, ...)
{
	size_t used = strlen(sel->reasons);
	va_list ap;

	if (used + 2 >= sizeof(sel->reasons))
		return;
	va_start(ap, fmt);
	vsnprintf(sel->reasons + used, sizeof(sel->reasons) - used, fmt, ap);
	va_end(ap);
	used = strlen(sel->reasons);
	if (used + 1 < sizeof(sel->reasons)) {
		sel->reasons[used] = '\n';
		sel->reasons[used + 1] = '\0';
	}
}

/* Is (a, p), reached at rank r, better than the best so far? */
static int better(const struct rmca_wire_mod *amods,
		  const struct rmca_wire_mod *pmods, int a, int p, int r,
		  const struct rmca_selection *sel)
{
	long long s = (long long)amods[a].priority + pmods[p].priority;
	long long bs =
		(long long)amods[sel->a].priority + pmods[sel->p].priority;
	int c;

	if (s != bs)
		return s > bs;
	/* the pair on the route the peer was addressed on */
	if (r != sel->rank)
		return r > sel->rank;
	c = strcmp(amods[a].component, amods[sel->a].component);
	if (c)
		return c < 0;
	if (a != sel->a)
		return a < sel->a;
	return p < sel->p;
}

int rmca_select(const struct rmca_wire_mod *amods, int na,
		const struct rmca_wire_mod *pmods, int np, int local_is_active,
		int peer_is_local, uint32_t required_caps, rmca_reach_fn reach,
		void *arg, struct rmca_selection *sel)
{
	sel->a = sel->p = -1;
	sel->rank = 0;
	sel->route[0] = '\0';
	sel->reasons[0] = '\0';

	for (int a = 0; a < na; a++) {
		int paired = 0;

		for (int p = 0; p < np; p++) {
			const struct rmca_wire_mod *am = &amods[a], *pm = &pmods[p];
			uint32_t both = am->caps & pm->caps;
			char why[256] = "";
			int r = 1;

			if (strcmp(am->component, pm->component))
				continue;
			paired = 1;
			if (peer_is_local && !(both & RMCA_CAP_LOOPBACK)) {
				note(sel,
				     "skip %s %s<->%s: peer is on this host and %s cannot loop back",
				     am->component, am->device, pm->device,
				     (am->caps & RMCA_CAP_LOOPBACK) ? pm->device :
								      am->device);
				continue;
			}
			if ((both & required_caps) != required_caps) {
				note(sel,
				     "skip %s %s<->%s: lacks a required capability (0x%x)",
				     am->component, am->device, pm->device,
				     required_caps & ~both);
				continue;
			}
			if (reach)
				r = reach(arg, local_is_active ? a : p,
					  local_is_active ? p : a, why,
					  sizeof(why));
			if (r <= 0) {
				note(sel, "skip %s %s<->%s: unreachable: %s",
				     am->component, am->device, pm->device, why);
				continue;
			}
			if (sel->a < 0 || better(amods, pmods, a, p, r, sel)) {
				sel->a = a;
				sel->p = p;
				sel->rank = r;
				snprintf(sel->route, sizeof(sel->route), "%s",
					 r > 1 ? why : "");
			}
		}
		if (!paired)
			note(sel, "skip %s %s: the passive side has no %s",
			     amods[a].component, amods[a].device,
			     amods[a].component);
	}
	for (int p = 0; p < np; p++) {
		int paired = 0;

		for (int a = 0; a < na && !paired; a++)
			paired = !strcmp(amods[a].component, pmods[p].component);
		if (!paired)
			note(sel, "skip %s %s: the active side has no %s",
			     pmods[p].component, pmods[p].device,
			     pmods[p].component);
	}
	if (sel->a < 0) {
		note(sel, "no transport reaches the peer");
		return RMCA_ERR_UNREACHABLE;
	}
	note(sel, "chose %s %s<->%s (priority %d+%d%s%s)",
	     amods[sel->a].component, amods[sel->a].device,
	     pmods[sel->p].device, amods[sel->a].priority,
	     pmods[sel->p].priority, sel->route[0] ? "; " : "", sel->route);
	return 0;
}

/* A candidate pair for a rail, before pairs are taken. */
struct rail_cand {
	int a, p, r;
};

int rmca_select_rails(const struct rmca_wire_mod *amods, int na,
		      const struct rmca_wire_mod *pmods, int np,
		      int local_is_active, int peer_is_local,
		      rmca_reach_fn reach, void *arg, int max,
		      struct rmca_selection *sel, uint8_t *rail_a,
		      uint8_t *rail_p)
{
	struct rail_cand cand[64];
	long long want;
	int ncand = 0, n = 0;

	if (sel->a < 0 || max <= 1)
		return 0;
	want = (long long)amods[sel->a].priority + pmods[sel->p].priority;
	for (int a = 0; a < na; a++) {
		for (int p = 0; p < np; p++) {
			const struct rmca_wire_mod *am = &amods[a],
						   *pm = &pmods[p];
			uint32_t both = am->caps & pm->caps;
			char why[256] = "";
			int r, i;

			if (a == sel->a || p == sel->p ||
			    strcmp(am->component, amods[sel->a].component) ||
			    strcmp(pm->component, am->component) ||
			    (long long)am->priority + pm->priority != want ||
			    (peer_is_local && !(both & RMCA_CAP_LOOPBACK)))
				continue;
			r = reach ? reach(arg, local_is_active ? a : p,
					  local_is_active ? p : a, why,
					  sizeof(why))
				  : 1;
			if (r <= 0)
				continue;
			/* kept in the order of the rule; the worst falls
			 * off when there are more than can be used */
			for (i = ncand; i > 0; i--) {
				struct rmca_selection s = {
					.a = cand[i - 1].a,
					.p = cand[i - 1].p,
					.rank = cand[i - 1].r};

				if (!better(amods, pmods, a, p, r, &s))
					break;
				if (i < (int)RMCA_ARRAY_LEN(cand))
					cand[i] = cand[i - 1];
			}
			if (i < (int)RMCA_ARRAY_LEN(cand)) {
				cand[i] = (struct rail_cand){a, p, r};
				if (ncand < (int)RMCA_ARRAY_LEN(cand))
					ncand++;
			}
		}
	}
	for (int i = 0; i < ncand && n < max - 1; i++) {
		bool used = false;

		for (int j = 0; j < n; j++)
			used |= rail_a[j] == cand[i].a ||
				rail_p[j] == cand[i].p;
		if (used)
			continue;
		rail_a[n] = (uint8_t)cand[i].a;
		rail_p[n] = (uint8_t)cand[i].p;
		n++;
		note(sel, "rail %d: %s %s<->%s beside the chosen pair", n,
		     amods[cand[i].a].component, amods[cand[i].a].device,
		     pmods[cand[i].p].device);
	}
	return n;
}
