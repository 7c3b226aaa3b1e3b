#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# tap-run.sh PROGRAM [ARG...]: runs a test program with its TAP stream put
# through tap-cmocka.awk (one counting rule: a skip says why, see there)
# and exits with the program's own status. The LOG_COMPILER of make check;
# the capability matrix and check-vm use it too.

here=$(dirname "$0")
awk=${AM_TAP_AWK:-awk}

# The program's status crosses the pipe on fd 4; its stdout goes through
# the filter to ours (fd 3).
exec 3>&1
status=$({ {
	"$@" 4>&- 3>&-
	echo $? >&4
} | "$awk" -f "$here/tap-cmocka.awk" >&3; } 4>&1)
exec 3>&-
exit "${status:-99}"
