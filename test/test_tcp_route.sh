#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# tcp keeps to the interfaces RMCA_tcp_if_include selects: a peer whose
# route leaves through another interface is not reachable over tcp, and the
# reason names the interface the route takes; within the selection the
# peer is served. Uses the host's first IPv4 address off lo (every case
# skips, saying so, where there is none). Speaks TAP.

set -u
. "${RMCATEST_SRCDIR:-.}/tools_lib.sh"

echo "1..3"

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

# serve_tcp INCLUDE: rmca_xfer -s on $addr over tcp limited to INCLUDE,
# logging its choices (in $tmp/srv.err); sets $pid and $port.
serve_tcp() {
	serve srv env RMCA_transports=tcp RMCA_tcp_if_include="$1" \
		RMCA_verbose=1 "$tools/rmca_xfer" -s -l "$addr:0"
}

# client INCLUDE: rmca_xfer to the server over tcp limited to INCLUDE.
client() {
	RMCA_transports=tcp RMCA_tcp_if_include=$1 \
		"$tools/rmca_xfer" -n 4096 -i 1 "$addr:$port" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# Both sides keep to lo; the peer's address is $ifc's.
serve_tcp lo
client lo
[ "$rc" -ne 0 ] &&
	grep -q "no enabled transport reaches the peer" "$tmp/out" "$tmp/err" &&
	grep -q "route to $addr leaves through $ifc, outside tcp_if_include=lo" \
		"$tmp/srv.err"
ok $? "a peer routed through $ifc is not reached over tcp limited to lo"
stop

# The connecting side alone keeps to lo: it does not use what the
# listener chose.
serve_tcp ""
client lo
[ "$rc" -ne 0 ] &&
	grep -q "which this side cannot use: route to $addr leaves through $ifc, outside tcp_if_include=lo" \
		"$tmp/out" "$tmp/err"
ok $? "the connecting side keeps to its own tcp_if_include"
stop

# Within the selection the peer is served.
serve_tcp "$ifc"
client "$ifc"
[ "$rc" -eq 0 ] && grep -q "^transport tcp, device $ifc," "$tmp/out"
ok $? "a peer routed through $ifc is served over tcp limited to $ifc"
stop

finish
