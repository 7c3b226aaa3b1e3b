#!/bin/bash
# contrib/bench/init-vm.sh - what rmca_init + rmca_finalize cost with tcp,
# with rxe0 (ib), with siw0 (iwarp) and with all of them, inside the
# project's qemu guest (contrib/vm/run-vm.sh). doc/bench.md ("Context set-up
# and teardown") has the numbers.
#
#   contrib/bench/init-vm.sh BUILD_DIR [N] [OTHER_DIR]
#
# N runs of each (20). Where strace is installed, the waits of one
# rmca_init + rmca_finalize are counted too: poll() calls, how many of them
# ended by their timeout rather than an event, and sleeps (these counts
# depend little on the load, the times a lot). OTHER_DIR: a directory with the rmca_ib.so and
# rmca_iwarp.so of another build (say, before a change), measured in the
# same boot, one after the other, for a before/after comparison.
#
# The guest is usually emulated (TCG): compare runs of one boot, not
# absolute numbers with a real machine.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/contrib/bench/lib.sh"
build=${1:?usage: init-vm.sh BUILD_DIR [N] [OTHER_DIR]}
build=$(cd "$build" && pwd)
n=${2:-20}
other=${3:+$(cd "$3" && pwd)}
tmp=$(mktemp -d "$build/init-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 -I"$top/include" -o "$tmp/init_time" "$top/contrib/bench/init_time.c" \
	-L"$build/framework/.libs" -Wl,-rpath,"$build/framework/.libs" -lrmca
cat >"$tmp/payload.sh" <<PAYLOAD
run() {
	for t in tcp ib iwarp tcp,ib,iwarp; do
		echo "# \$1 RMCA_transports=\$t"
		RMCA_component_path=\$2 RMCA_transports=\$t "$tmp/init_time" $n
		command -v strace >/dev/null || continue
		RMCA_component_path=\$2 RMCA_transports=\$t strace -f -qq \\
			-e trace=poll,ppoll,nanosleep,clock_nanosleep \\
			-o "$tmp/trace" "$tmp/init_time" 0 >/dev/null
		awk '/poll\(/ { p++ } /poll\(.*= 0 \(Timeout\)/ { t++ }
		     /nanosleep\(/ { s++ }
		     END { printf "waits: %d poll, %d of them ended by their timeout; %d sleeps\n", p, t, s }' "$tmp/trace"
	done
}
run "$build" "$build/components/tcp/.libs:$build/components/ib/.libs:$build/components/iwarp/.libs"
[ -z "$other" ] || run "$other" "$build/components/tcp/.libs:$other"
PAYLOAD
echo "# host: $(bench_host)"
echo "# rmca $(bench_rev)"
VM_SHARE="$build${other:+ $other}" "$top/contrib/vm/run-vm.sh" -f "$tmp/payload.sh"
