#!/bin/bash
# contrib/bench/run-vm.sh - rmca_perf next to perftest (ib_send_lat,
# ib_write_bw, ...) on real kernel RDMA devices, rxe0 and siw0, inside the
# project's qemu guest (contrib/vm/run-vm.sh), printed as ratios.
#
#   contrib/bench/run-vm.sh [--build DIR] [-n ITERS] [-S SIZES] [--out DIR]
#                           [--devices "rxe0 siw0"] [--mode wait|spin]
#
# One device at a time, client and server in the same guest on the device's
# own address. --mode spin (default): both busy-poll, as perftest does;
# on two vCPUs that leaves the software devices' kernel threads only the
# next tick, so latencies cluster at multiples of it (doc/bench.md).
# --mode wait: rmca_perf sleeps on its wait fd, perftest on CQ events (-e);
# perftest refuses -e for RDMA WRITE, and rmca hung on siw0 (doc/bench.md). The guest is usually emulated
# (TCG): only the ratios mean something, never the absolute numbers.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/contrib/bench/lib.sh"
build= iters=300 sizes=8,4096,65536 out= devices="rxe0 siw0" mode=spin
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift ;;
	-n) iters=$2; shift ;;
	-S) sizes=$2; shift ;;
	--out) out=$2; shift ;;
	--devices) devices=$2; shift ;;
	--mode) mode=$2; shift ;;
	-h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-vm.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

build=$(bench_build "$build")
[ -x "$build/tools/rmca_perf" ] || { echo "run-vm.sh: no rmca_perf in $build" >&2; exit 1; }
[ -e "$build/components/ib/.libs/rmca_ib.so" ] ||
	echo "run-vm.sh: warning: no ib component in $build (rdma-core missing at configure?)" >&2
command -v ib_send_lat >/dev/null ||
	echo "run-vm.sh: warning: perftest not installed (apt-get install perftest)" >&2
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/rmca-bench-vm.XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)

echo "# host: $(uname -srm); $(nproc) cpus; load average:$(cut -d' ' -f1-3 /proc/loadavg | sed 's/^/ /')"
echo "# rmca $(git -C "$top" describe --always --dirty 2>/dev/null || echo '?'); results in $out"
start=$(date +%s)
BENCH_BUILD=$build BENCH_OUT=$out BENCH_ITERS=$iters BENCH_SIZES=$sizes \
BENCH_DEVICES=$devices BENCH_MODE=$mode \
VM_ENV="BENCH_BUILD BENCH_OUT BENCH_ITERS BENCH_SIZES BENCH_DEVICES BENCH_MODE" \
VM_SHARE="$out $build" VM_TIMEOUT=${VM_TIMEOUT:-420} \
	"$top/contrib/vm/run-vm.sh" bash "$top/contrib/bench/vm-payload.sh" ||
	echo "run-vm.sh: the guest run failed ($?)" >&2
echo "# guest run: $(( $(date +%s) - start )) s; accel: ${VM_ACCEL:-guessed by contrib/vm/run-vm.sh}"

for dev in $devices; do
	[ -f "$out/perftest-$dev.atomic" ] && cat "$out/perftest-$dev.atomic"
	bench_ratios "$out/rmca-$dev.csv" "$out/perftest-$dev.csv" rmca perftest \
		"rmca / perftest on $dev, $mode mode (put_lat: perftest's ib_write_lat doubled, a delivered put is a round trip)" \
		us_median us_p99 MB/s Mops
done
echo
echo "# load average after:$(cut -d' ' -f1-3 /proc/loadavg | sed 's/^/ /')"
