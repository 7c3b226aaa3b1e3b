// SPDX-License-Identifier: BSD-3-Clause
#include <rmca.h>

#include "config.h"

static const char *const rmca_status_names[] = {
	[0] = "success",
	[1] = "invalid argument",
	[2] = "out of memory",
	[3] = "not found",
	[4] = "no enabled transport reaches the peer",
	[5] = "resources exhausted, progress and retry",
	[6] = "remote access refused (key, bounds or permission)",
	[7] = "connection lost",
	[8] = "canceled: endpoint closed",
	[9] = "protocol error: malformed or incompatible peer",
	[10] = "operation not supported",
	[11] = "message truncated: receive buffer too small",
	[12] = "timed out",
};

const char *rmca_strerror(int status)
{
	unsigned idx = status <= 0 ? (unsigned)-status : ~0u;

	if (idx < sizeof(rmca_status_names) / sizeof(rmca_status_names[0]))
		return rmca_status_names[idx];
	return "unknown status";
}

const char *rmca_version(void)
{
	return PACKAGE_VERSION;
}
