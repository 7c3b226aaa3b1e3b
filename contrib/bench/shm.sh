#!/bin/bash
# contrib/bench/shm.sh - rmca over shm next to UCX's shared memory and a
# plain memcpy, in one run, spin mode, both processes on this host.
#
#   contrib/bench/shm.sh [--build DIR] [-n N] [--reps R] [--out DIR]
#
#   --build DIR  use this build tree (default: build one in $TMPDIR)
#   -n N         8 B ping-pongs per send_lat run (default 20000); puts of
#                1 MiB: 256 per run
#   --reps R     alternate rmca and UCX R times (default 3)
#   --out DIR    keep the raw outputs there
#
# Measures, each R times, alternating: rmca_perf --spin send_lat 8 B and
# put_bw 1 MiB (RMCA_transports=shm); ucx_perftest tag_lat 8 B and
# ucp_put_bw 1 MiB with UCX_TLS=sm; memcpy and process_vm_writev of 1 MiB
# (shm_copy.c). Then the system calls of an 8 B spinning ping-pong, both
# processes, at N and 2N round trips (perf stat -e raw_syscalls:sys_enter,
# which counts without slowing the process, unlike strace): the difference
# divided by N is the calls per round trip.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/contrib/bench/lib.sh"
build= n=20000 reps=3 out=
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift ;;
	-n) n=$2; shift ;;
	--reps) reps=$2; shift ;;
	--out) out=$2; shift ;;
	-h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "shm.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
build=$(bench_build "$build")
perf=$build/tools/rmca_perf
[ -x "$perf" ] || { echo "shm.sh: no $perf (build first)" >&2; exit 1; }
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/rmca-shm.XXXXXX")
mkdir -p "$out"
export RMCA_component_path=$build/components/shm/.libs
export RMCA_transports=shm
cc -O2 -o "$out/shm_copy" "$top/contrib/bench/shm_copy.c"

# rmca_perf server and client; the client's options. csv on stdout.
rmca() {
	local log=$out/server.log port= spid
	rm -f "$log"
	"$perf" -s -l 127.0.0.1:0 --spin >"$log" 2>&1 &
	spid=$!
	for _ in $(seq 200); do
		port=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' "$log" 2>/dev/null)
		[ -n "$port" ] && break
		sleep 0.05
	done
	[ -n "$port" ] || { kill "$spid"; echo "shm.sh: no server" >&2; return 1; }
	timeout 300 "$perf" --spin --parsable "$@" "127.0.0.1:$port" 2>/dev/null || true
	wait "$spid" || true
}

ucx() { # test size iters
	local port=$(( 20000 + RANDOM % 20000 )) line spid
	UCX_TLS=sm timeout 120 ucx_perftest -p "$port" >/dev/null 2>&1 &
	spid=$!
	sleep 0.5
	line=$(UCX_TLS=sm timeout 120 ucx_perftest 127.0.0.1 -p "$port" -t "$1" \
		-s "$2" -n "$3" -w $(( $3 / 10 + 1 )) -f 2>/dev/null | tail -1) || true
	wait "$spid" 2>/dev/null || true
	set -- "$1" "$2" "$3" $line
	[ $# -ge 11 ] || return 0
	case $1 in
	tag_lat) echo "ucx_tag_lat,$2,$3,$5,us_median" ;;
	*) awk -v s="$2" -v n="$3" -v mr="${11}" \
		'BEGIN { printf "ucx_put_bw,%s,%s,%.1f,MB/s\n", s, n, mr * s / 1e6 }' ;;
	esac
}

echo "# $(uname -srm); $(nproc) cpus; load average:$(cut -d' ' -f1-3 /proc/loadavg | sed 's/^/ /')"
echo "# rmca $(git -C "$top" describe --always --dirty 2>/dev/null || echo '?'); results in $out"
for r in $(seq "$reps"); do
	{
		rmca -t send_lat -S 8 -n "$n" | grep us_median
		rmca -t put_bw -S 1m -n 256 | grep MB/s
		if command -v ucx_perftest >/dev/null; then
			ucx tag_lat 8 "$n"
			ucx ucp_put_bw 1048576 256
		fi
		"$out/shm_copy" 1048576 1000
	} | sed "s/^/$r,/" | tee -a "$out/all.csv"
done

echo
echo "== medians over the runs (8 B latency in us; 1 MiB bandwidth in MB/s)"
awk -F, '{ k = $2; v[k] = v[k] " " $5 }
	END { for (k in v) print k ":" v[k] }' "$out/all.csv" | sort

if command -v perf >/dev/null &&
	perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1; then
	echo
	echo "== system calls per 8 B round trip, spin mode (both processes)"
	for k in 1 2; do
		it=$(( n * k ))
		log=$out/server.log
		rm -f "$log"
		perf stat -x, -e raw_syscalls:sys_enter -o "$out/srv.$k" \
			"$perf" -s -l 127.0.0.1:0 --spin >"$log" 2>&1 &
		spid=$!
		port=
		for _ in $(seq 200); do
			port=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' "$log" 2>/dev/null)
			[ -n "$port" ] && break
			sleep 0.05
		done
		perf stat -x, -e raw_syscalls:sys_enter -o "$out/cli.$k" \
			"$perf" --spin --parsable -t send_lat -S 8 -n "$it" -W 50 \
			"127.0.0.1:$port" >/dev/null 2>&1 || true
		wait "$spid" || true
	done
	for f in cli.1 cli.2 srv.1 srv.2; do
		[ -s "$out/$f" ] || { echo "shm.sh: no count in $out/$f" >&2; exit 1; }
	done
	c1=$(awk -F, '/sys_enter/ { print $1 }' "$out/cli.1")
	c2=$(awk -F, '/sys_enter/ { print $1 }' "$out/cli.2")
	s1=$(awk -F, '/sys_enter/ { print $1 }' "$out/srv.1")
	s2=$(awk -F, '/sys_enter/ { print $1 }' "$out/srv.2")
	awk -v a="$c1" -v b="$c2" -v x="$s1" -v y="$s2" -v n="$n" 'BEGIN {
		printf "client %d -> %d, server %d -> %d: %.3f per round trip\n",
			a, b, x, y, ((b - a) + (y - x)) / n }'
fi
