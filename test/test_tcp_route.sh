#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# tcp keeps to the interfaces RMCA_tcp_if_include selects: a peer whose
# route leaves through another interface is not reachable over tcp, and the
# reason names the interface the route takes; within the selection the
# peer is served. Uses the host's first IPv4 address off lo (every case
# skips, saying so, where there is none). Speaks TAP.

set -u

top=${RMCATEST_TOP_BUILDDIR:-..}
xfer=$top/tools/rmca_xfer

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmca-tcp-route.XXXXXX") || exit 99
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

# The interface and address: "eth0 192.0.2.2".
set -- $(ip -4 -o addr show 2>/dev/null |
	awk '$2 != "lo" { sub("/.*", "", $4); print $2, $4; exit }')
if [ $# -lt 2 ]; then
	for i in 1 2 3; do
		echo "ok $i # SKIP no IPv4 address off lo (or no ip command)"
	done
	exit 0
fi
ifc=$1
addr=$2

# serve INCLUDE: rmca_xfer -s on $addr over tcp limited to INCLUDE, logging
# its choices; sets srv and port.
serve() {
	: >"$tmp/srv"
	RMCA_transports=tcp RMCA_tcp_if_include=$1 RMCA_verbose=1 \
		"$xfer" -s -l "$addr:0" >"$tmp/srv" 2>"$tmp/srv.err" &
	srv=$!
	port=
	for _ in $(seq 100); do
		port=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' "$tmp/srv")
		[ -n "$port" ] && break
		sleep 0.1
	done
}

stop() {
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	srv=
}

# Both sides keep to lo; the peer's address is $ifc's.
serve lo
RMCA_transports=tcp RMCA_tcp_if_include=lo \
	"$xfer" -n 4096 -i 1 "$addr:$port" >"$tmp/cli" 2>&1
cli=$?
[ "$cli" -ne 0 ] &&
	grep -q "no enabled transport reaches the peer" "$tmp/cli" &&
	grep -q "route to $addr leaves through $ifc, outside tcp_if_include=lo" \
		"$tmp/srv.err"
ok $? "a peer routed through $ifc is not reached over tcp limited to lo"
stop

# The connecting side alone keeps to lo: it does not use what the
# listener chose.
serve ""
RMCA_transports=tcp RMCA_tcp_if_include=lo \
	"$xfer" -n 4096 -i 1 "$addr:$port" >"$tmp/cli" 2>&1
cli=$?
[ "$cli" -ne 0 ] &&
	grep -q "which this side cannot use: route to $addr leaves through $ifc, outside tcp_if_include=lo" \
		"$tmp/cli"
ok $? "the connecting side keeps to its own tcp_if_include"
stop

# Within the selection the peer is served.
serve "$ifc"
RMCA_transports=tcp RMCA_tcp_if_include=$ifc \
	"$xfer" -n 4096 -i 1 "$addr:$port" >"$tmp/cli" 2>&1
cli=$?
[ "$cli" -eq 0 ] && grep -q "^transport tcp, device $ifc," "$tmp/cli"
ok $? "a peer routed through $ifc is served over tcp limited to $ifc"
stop

[ "$failed" -eq 0 ]
