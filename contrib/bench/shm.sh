#!/bin/bash
# contrib/bench/shm.sh - rmca over shm next to UCX's shared memory, rmca
# over tcp on loopback and a plain memcpy, in one run, spin mode, both
# processes on this host, pinned to two CPUs.
#
#   contrib/bench/shm.sh [--build DIR] [-n N] [--reps R] [--cpus A,B]
#                        [--out DIR]
#
#   --build DIR  use this build tree (default: build one in $TMPDIR)
#   -n N         8 B ping-pongs per send_lat run (default 20000); puts of
#                1 MiB: 256 per run (64 over tcp)
#   --reps R     alternate rmca and UCX R times (default 3)
#   --cpus A,B   server on CPU A, client on CPU B (default 0,1; "none":
#                not pinned)
#   --out DIR    keep the raw outputs there
#
# Measures, each R times, alternating: rmca_perf --spin send_lat 8 B and
# put_bw 1 MiB over shm (RMCA_transports=shm) and over tcp, and put_bw
# 1 MiB over shm with both sides' buffers from rmca_mem_alloc (--alloc:
# the client maps the server's memory, as UCX maps ucx_perftest's, which
# allocates its buffers through UCX); ucx_perftest
# tag_lat 8 B and ucp_put_bw 1 MiB with UCX_TLS=sm; memcpy and
# process_vm_writev of 1 MiB (shm_copy.c). Then what does not drift with
# the load: the system calls of an 8 B spinning ping-pong, both processes,
# at N and 2N round trips, counted with strace -f -c as syscalls.sh counts
# them for tcp (and with perf stat -e raw_syscalls:sys_enter, which does not
# stop the process at each call); and, under valgrind, the instructions of
# one 8 B round trip (both sides) in shm_pingpong.c, which polls each side
# only until its message is there.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/contrib/bench/lib.sh"
build= n=20000 reps=3 out= cpus=0,1
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift ;;
	-n) n=$2; shift ;;
	--reps) reps=$2; shift ;;
	--cpus) cpus=$2; shift ;;
	--out) out=$2; shift ;;
	-h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "shm.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
build=$(bench_build "$build")
perf=$build/tools/rmca_perf
[ -x "$perf" ] || { echo "shm.sh: no $perf (build first)" >&2; exit 1; }
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/rmca-shm.XXXXXX")
mkdir -p "$out"
export RMCA_component_path=$build/components/shm/.libs:$build/components/tcp/.libs
export RMCA_transports=shm
cc -O2 -o "$out/shm_copy" "$top/contrib/bench/shm_copy.c"
cc -O2 -I"$top/include" -o "$out/shm_pingpong" \
	"$top/contrib/bench/shm_pingpong.c" -L"$build/framework/.libs" \
	-Wl,-rpath,"$build/framework/.libs" -lrmca -lpthread
on_server=() on_client=()
if [ "$cpus" != none ] && command -v taskset >/dev/null; then
	bench_pin "$cpus"
fi

# rmca_perf server and client; the client's options (--alloc: the
# server's too). csv on stdout.
rmca() {
	local alloc=
	[ "$1" = --alloc ] && { alloc=--alloc; shift; }
	bench_perf rmca --spin $alloc -- "$@"
	cat "$out/rmca.csv"
}

ucx() { # test size iters
	local line
	line=$(UCX_TLS=sm bench_ucx "$out/ucx" "$1" "$2" "$3")
	set -- "$1" "$2" "$3" $line
	[ $# -ge 11 ] || return 0
	case $1 in
	tag_lat) echo "ucx_tag_lat,$2,$3,$5,us_median" ;;
	*) awk -v s="$2" -v n="$3" -v mr="${11}" \
		'BEGIN { printf "ucx_put_bw,%s,%s,%.1f,MB/s\n", s, n, mr * s / 1e6 }' ;;
	esac
}

echo "# $(bench_host); pinned: $cpus"
echo "# rmca $(bench_rev); results in $out"
for r in $(seq "$reps"); do
	{
		rmca -t send_lat -S 8 -n "$n" | grep us_median
		rmca -t put_bw -S 1m -n 256 | grep MB/s
		rmca --alloc -t put_bw -S 1m -n 256 |
			sed -n 's/^put_bw,\(.*MB\/s\)$/alloc_put_bw,\1/p'
		RMCA_transports=tcp rmca -t send_lat -S 8 -n "$n" |
			sed -n 's/^send_lat,\(.*us_median\)$/tcp_send_lat,\1/p'
		RMCA_transports=tcp rmca -t put_bw -S 1m -n 64 |
			sed -n 's/^put_bw,\(.*MB\/s\)$/tcp_put_bw,\1/p'
		if command -v ucx_perftest >/dev/null; then
			ucx tag_lat 8 "$n"
			ucx ucp_put_bw 1048576 256
		fi
		"$out/shm_copy" 1048576 1000
	} | sed "s/^/$r,/" | tee -a "$out/all.csv"
done

echo
echo "== each run, then the median (8 B latency in us; 1 MiB bandwidth in MB/s)"
awk -F, '{ k = $2; v[k] = v[k] " " $5; c[k]++; x[k, c[k]] = $5 + 0 }
	END {
		for (k in v) {
			n = c[k]
			for (i = 2; i <= n; i++) # insertion sort: mawk has no asort
				for (j = i; j > 1 && x[k, j - 1] > x[k, j]; j--) {
					t = x[k, j]; x[k, j] = x[k, j - 1]; x[k, j - 1] = t
				}
			m = n % 2 ? x[k, (n + 1) / 2] : (x[k, n / 2] + x[k, n / 2 + 1]) / 2
			print k ":" v[k] ": median " m
		}
	}' "$out/all.csv" | sort

# The calls of an 8 B spinning ping-pong of N round trips, both processes;
# $1 is the counting wrapper, which writes its count to $out/$2.{srv,cli}.
pingpong() { # name iters wrapper...
	local name=$1 it=$2
	shift 2
	bench_server "$out/server.log" "$@" -o "$out/$name.srv" \
		"${on_server[@]}" "$perf" -s -l 127.0.0.1:0 --spin
	"$@" -o "$out/$name.cli" "${on_client[@]}" "$perf" --spin --parsable \
		-t send_lat -S 8 -n "$it" -W 50 "127.0.0.1:$server_port" >/dev/null 2>&1 || true
	wait "$server_pid" || true
}

if command -v strace >/dev/null; then
	echo
	echo "== system calls per 8 B round trip, spin mode, strace -f -c (both processes)"
	for k in 1 2; do
		pingpong "strace$k" $(( n * k )) strace -f -c
	done
	t1=$(( $(bench_strace_total "$out/strace1.srv") + $(bench_strace_total "$out/strace1.cli") ))
	t2=$(( $(bench_strace_total "$out/strace2.srv") + $(bench_strace_total "$out/strace2.cli") ))
	awk -v a="$t1" -v b="$t2" -v n="$n" 'BEGIN {
		printf "%d calls at N, %d at 2N: %.4f per round trip\n", a, b, (b - a) / n }'
	for k in 1 2; do
		{ bench_strace_calls "$out/strace$k.srv"; bench_strace_calls "$out/strace$k.cli"; } \
			>"$out/strace$k.calls"
	done
	bench_calls_diff "$out/strace1.calls" "$out/strace2.calls" |
		awk '$2 { printf "  %s %+d\n", $1, $2 }'
fi

if command -v perf >/dev/null &&
	perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1; then
	echo
	echo "== system calls per 8 B round trip, spin mode, perf stat (both processes)"
	for k in 1 2; do
		pingpong "perf$k" $(( n * k )) perf stat -x, -e raw_syscalls:sys_enter
	done
	count() { awk -F, '/sys_enter/ { print $1 }' "$out/$1"; }
	c1=$(count perf1.cli) c2=$(count perf2.cli) s1=$(count perf1.srv) s2=$(count perf2.srv)
	awk -v a="$c1" -v b="$c2" -v x="$s1" -v y="$s2" -v n="$n" 'BEGIN {
		printf "client %d -> %d, server %d -> %d: %.4f per round trip\n",
			a, b, x, y, ((b - a) + (y - x)) / n }'
fi

if command -v valgrind >/dev/null; then
	echo
	echo "== instructions per 8 B round trip, both sides (shm_pingpong under callgrind)"
	for k in 1 2; do
		valgrind --tool=callgrind --callgrind-out-file="$out/pp$k.cg" \
			"$out/shm_pingpong" $(( 10000 * k )) 8 >/dev/null 2>&1
	done
	i1=$(bench_callgrind_total "$out/pp1.cg")
	i2=$(bench_callgrind_total "$out/pp2.cg")
	# shm_pingpong warms up with N/10 + 1 round trips more: the two runs
	# differ by 11,000 round trips, not 10,000.
	echo "$(( (i2 - i1) / 11000 )) instructions per round trip"
fi
echo
echo "== one 8 B round trip on one CPU (shm_pingpong: no line moves between cores)"
"${on_client[@]}" "$out/shm_pingpong" 200000 8
