#!/bin/bash
# demo.sh - from a fresh Debian 12 machine (as root) to a running demo:
# install what the build needs, build rmca in _build/, show what rmca_info
# finds, then move 1 MiB between two processes and check every byte.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash contrib/install-deps.sh
[ -x configure ] || autoreconf -fi >/dev/null
mkdir -p _build && cd _build
[ -f Makefile ] || ../configure -q
make -s -j"$(nproc)" >/dev/null
# run from the build tree: the components are found through RMCA_component_path
export RMCA_component_path=$PWD/components/tcp/.libs:$PWD/components/shm/.libs:$PWD/components/ib/.libs:$PWD/components/iwarp/.libs
echo "== rmca_info"
./tools/rmca_info
echo
# xfer WHAT: one checked transfer between two processes of this host
xfer() {
	echo "== rmca_xfer: 4 x 1 MiB, put (delivered) + get + messages, $1"
	out=$(mktemp)
	./tools/rmca_xfer -s -l 127.0.0.1:0 >"$out" 2>&1 &
	server=$!
	for _ in $(seq 50); do grep -q 'port' "$out" && break; sleep 0.1; done
	port=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' "$out")
	[ -n "$port" ] || { cat "$out"; exit 1; }
	./tools/rmca_xfer -n 1048576 -i 4 "127.0.0.1:$port"
	wait "$server"
	cat "$out"
	rm -f "$out"
}
# local peers go to shared memory by default; tcp when told
xfer "between two local processes"
echo
RMCA_transports=tcp xfer "over tcp loopback (RMCA_transports=tcp)"
