/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection, for tests only: RMCATEST_FAIL is a comma-separated list
 * of points at which the verbs code behaves as if the step had failed, so
 * that error paths the devices never take (an allocation failing) run in a
 * test on a real device. The points:
 *
 *   verbs_conn_alloc    a connection's control memory is not allocated
 *   verbs_module_alloc  a module's memory is not allocated
 *   verbs_module_init   a module's set-up fails at its listener
 *   verbs_cq_unread     completions are left on the CQ (a process that
 *                       meets a peer's disconnect before the completions
 *                       queued ahead of it: set, progress, unset); only
 *                       where RMCATEST_FAIL was set, if empty, before the
 *                       first completion was polled
 *   verbs_post_refused  ibv_post_send refuses as siw does (ENOTCONN) once
 *                       the peer's TERMINATE took the QP out of RTS; same
 *                       condition on RMCATEST_FAIL as verbs_cq_unread, as
 *                       for all the points below
 *   verbs_post_full     ibv_post_send refuses as for a full send queue
 *                       (ENOMEM), though none of ours is out to free it
 *   verbs_post_invalid  ibv_post_send refuses the WR (EINVAL), the QP in RTS
 *   verbs_post_qp_error the QP goes to error, and ibv_post_send refuses as
 *                       rxe's doorbell does a QP not ready to send (EINVAL)
 *   verbs_recv_invalid  ibv_post_recv refuses (EINVAL), the QP in RTS
 *   verbs_flush_alloc   a flush's op is not allocated
 *
 * Read at each point, so a test may change it between calls. Not a user
 * setting (hence not RMCA_*): unset, nothing changes.
 *
 * rmca_verbs_debug_devs counts the devices the verbs code holds in this
 * process (each probe's, until its last module goes), so that a test sees
 * a device leaked by an error path; a test finds it with dlsym() in the
 * loaded component.
 */
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

__attribute__((visibility("default"))) int rmca_verbs_debug_devs;

bool rmca_verbs_fault(const char *point)
{
	const char *s = getenv("RMCATEST_FAIL");
	size_t n = strlen(point);

	while (s && *s) {
		size_t len = strcspn(s, ",");

		if (len == n && !strncmp(s, point, n))
			return true;
		s += len;
		s += *s == ',';
	}
	return false;
}
