#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# rmca_xfer -s under peers it must refuse: a refused probe and a client
# asking for more than -m bytes are logged, and the server keeps serving
# the next client. Speaks TAP.

set -u
. "${RMCATEST_SRCDIR:-.}/tools_lib.sh"

echo "1..3"

serve srv "$tools/rmca_xfer" -s -l 127.0.0.1:0 -m 1048576

# A probe the listener refuses (another atomic mode).
RMCA_atomic_mode=device "$tools/rmca_info" --explain "127.0.0.1:$port" \
	>"$tmp/out" 2>"$tmp/err"
grep -q 'atomic mode differs' "$tmp/out" "$tmp/err" && kill -0 "$pid" 2>/dev/null
ok $? "a refused probe leaves rmca_xfer -s serving"

# A client that asks for more than -m: refused, logged, nothing allocated.
run rmca_xfer -n 2097152 -i 1 "127.0.0.1:$port"
[ "$rc" -ne 0 ] && grep -q 'client refused: 2097152 bytes' "$tmp/srv.err" &&
	kill -0 "$pid" 2>/dev/null
ok $? "a client asking for more than -m is refused and the server goes on"

run rmca_xfer -n 65536 -i 2 "127.0.0.1:$port"
# The server prints its line once the session is checked.
[ "$rc" -eq 0 ] &&
	wait_for "$tmp/srv.out" '^server: 2 x 65536 bytes received and checked'
ok $? "the next client is served"

stop
finish
