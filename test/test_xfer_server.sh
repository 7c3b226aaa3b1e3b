#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# rmca_xfer -s under peers it must refuse: a refused probe and a client
# asking for more than -m bytes are logged, and the server keeps serving
# the next client. Speaks TAP.

set -u

top=${RMCATEST_TOP_BUILDDIR:-..}
xfer=$top/tools/rmca_xfer
info=$top/tools/rmca_info

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmca-xfer-test.XXXXXX") || exit 99
srv=
trap 'if [ -n "$srv" ]; then kill "$srv" 2>/dev/null; fi; rm -rf "$tmp"' \
	EXIT INT TERM

n=0
failed=0
echo "1..3"

ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
		for f in "$tmp"/*; do
			[ -s "$f" ] && sed "s|^|# $(basename "$f"): |" "$f"
		done
	fi
}

"$xfer" -s -l 127.0.0.1:0 -m 1048576 >"$tmp/srv" 2>"$tmp/srv.err" &
srv=$!
port=
for _ in $(seq 50); do
	port=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' "$tmp/srv")
	[ -n "$port" ] && break
	sleep 0.1
done

# A probe the listener refuses (another atomic mode).
RMCA_atomic_mode=device "$info" --explain "127.0.0.1:$port" \
	>"$tmp/probe" 2>&1
grep -q 'atomic mode differs' "$tmp/probe" && kill -0 "$srv" 2>/dev/null
ok $? "a refused probe leaves rmca_xfer -s serving"

# A client that asks for more than -m: refused, logged, nothing allocated.
"$xfer" -n 2097152 -i 1 "127.0.0.1:$port" >"$tmp/big" 2>&1
big=$?
[ "$big" -ne 0 ] && grep -q 'client refused: 2097152 bytes' "$tmp/srv.err" &&
	kill -0 "$srv" 2>/dev/null
ok $? "a client asking for more than -m is refused and the server goes on"

"$xfer" -n 65536 -i 2 "127.0.0.1:$port" >"$tmp/cli" 2>&1
cli=$?
# The server prints its line once the session is checked.
for _ in $(seq 100); do
	grep -q '^server: 2 x 65536 bytes received and checked' "$tmp/srv" &&
		break
	sleep 0.1
done
[ "$cli" -eq 0 ] &&
	grep -q '^server: 2 x 65536 bytes received and checked' "$tmp/srv"
ok $? "the next client is served"

[ "$failed" -eq 0 ]
