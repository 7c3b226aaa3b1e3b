#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# The capability-mask matrix (test_api_matrix.sh) over shm: with each
# native capability masked (RMCA_shm_caps), the core's fallbacks over shm
# must give the results of the native paths.
RMCATEST_TRANSPORT=shm
export RMCATEST_TRANSPORT
exec "${RMCATEST_SRCDIR:-.}/test_api_matrix.sh"
