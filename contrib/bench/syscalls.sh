#!/bin/bash
# contrib/bench/syscalls.sh - system calls per operation over tcp on
# loopback, server and client together, counted with strace -f -c.
#
#   contrib/bench/syscalls.sh [--build DIR] [--mode wait|spin|both] [-n N]
#                             [-S SIZE] [-w WINDOW] [-t TESTS] [--raw]
#                             [--out DIR] [--detail] [--instructions]
#
#   --build DIR  use this build tree (default: build one in $TMPDIR)
#   --mode MODE  wait (default): both sides sleep in poll() when idle; spin
#                counts busy polling too, which is load dependent (with
#                --raw, the plain socket spins on non-blocking recv() as
#                well: the figure to hold rmca's against); both: wait, then
#                spin
#   -n N         iterations of the shorter run (default 2000); the other
#                does 2N, so that set-up and tear-down cancel out
#   -S SIZE      message size (default 8)
#   -w WINDOW    outstanding operations in the *_bw tests (default 64)
#   -t TESTS     default send_lat,put_lat,atomic_lat,send_bw,put_bw
#   --raw        also count rmca_perf --raw (send_lat, send_bw)
#   --detail     the per-call breakdown of every test as well
#   --instructions  count user-space instructions instead (valgrind
#                callgrind, both processes summed). Wait mode: rmca_perf,
#                where every round trip runs the same code. Spin mode:
#                tcp_pingpong.c, both ends in one thread, each polled only
#                until it finds its message (the passes a spinning process
#                makes while it waits depend on the load: "idle" is one),
#                for send_lat, put_lat, atomic_lat and the raw socket;
#                with --detail, where the instructions go, by function
#   --out DIR    keep strace's (or callgrind's) outputs there
#
# Prints, per test, (calls at 2N - calls at N) / N, both processes summed:
# per round trip for the *_lat tests, per message for the *_bw tests. The
# warm-up is fixed (-W 50) so that it is the same in both runs. A count
# does not drift with the machine's load in wait mode.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/contrib/bench/lib.sh"
build= mode=wait n=2000 size=8 window=64 raw=0 detail=0 out= instr=0
tests=send_lat,put_lat,atomic_lat,send_bw,put_bw
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift ;;
	--mode) mode=$2; shift ;;
	-n) n=$2; shift ;;
	-S) size=$2; shift ;;
	-w) window=$2; shift ;;
	-t) tests=$2; shift ;;
	--raw) raw=1 ;;
	--detail) detail=1 ;;
	--out) out=$2; shift ;;
	--instructions) instr=1 ;;
	-h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "syscalls.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
if [ "$instr" = 1 ]; then
	command -v valgrind >/dev/null || { echo "syscalls.sh: valgrind not installed" >&2; exit 1; }
else
	command -v strace >/dev/null || { echo "syscalls.sh: strace not installed" >&2; exit 1; }
fi
case $mode in wait|spin) modes=$mode ;; both) modes="wait spin" ;;
*) echo "syscalls.sh: --mode wait|spin|both" >&2; exit 2 ;; esac

build=$(bench_build "$build")
perf=$build/tools/rmca_perf
[ -x "$perf" ] || { echo "syscalls.sh: no $perf (build first)" >&2; exit 1; }
export RMCA_component_path=$build/components/tcp/.libs
export RMCA_transports=tcp
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/rmca-syscalls.XXXXXX")
mkdir -p "$out"

# Calls per name, "name count" lines: from an strace -c summary (wait
# mode), or from a whole trace (spin mode), where the calls that found
# nothing (an epoll_wait that returned 0, any call that failed EAGAIN) are
# counted apart, under "(nothing)", as well as with their name.
calls_of() {
	if [ "$mode" = wait ]; then
		bench_strace_calls "$1"
		return
	fi
	awk '/^[0-9]+ +[a-z_0-9]+\(/ && !/resumed>/ {
		name = $2; sub(/\(.*/, "", name); n[name]++
		if ((name == "epoll_wait" && / = 0$/) || / = -1 EAGAIN/) idle++
	}
	/resumed>.* = 0$/ && /epoll_wait/ { idle++ }
	/resumed>.* = -1 EAGAIN/ { idle++ }
	END { for (k in n) print k, n[k]; print "(nothing)", idle + 0 }' "$1"
}

# Total calls, or instructions (a callgrind output's summary line).
total_of() {
	if [ "$instr" = 1 ]; then
		bench_callgrind_total "$1"
		return
	fi
	calls_of "$1" | awk '$1 != "(nothing)" { s += $2 } END { print s + 0 }'
}
idle_of() { calls_of "$1" | awk '$1 == "(nothing)" { print $2 }'; }

# One counted run: $1 name, $2 iterations, then rmca_perf options.
# Leaves $out/NAME.server.strace and $out/NAME.client.strace.
counted() {
	local name=$1 iters=$2 log
	shift 2
	log=$out/$name.server
	# libtool --mode=execute runs the program itself under strace or
	# valgrind, not libtool's wrapper script: the shell of the wrapper
	# reads its own pipes a varying number of times per run, which the
	# N / 2N difference does not cancel
	local -a st ct lt=("$build/libtool" --mode=execute)
	if [ "$instr" = 1 ]; then
		st=(valgrind -q --trace-children=yes --tool=callgrind --callgrind-out-file="$out/$name.server.strace")
		ct=(valgrind -q --trace-children=yes --tool=callgrind --callgrind-out-file="$out/$name.client.strace")
	else
		st=(strace -f $copt -o "$out/$name.server.strace")
		ct=(strace -f $copt -o "$out/$name.client.strace")
	fi
	bench_server "$log" timeout 300 "${lt[@]}" "${st[@]}" \
		"$perf" -s -l 127.0.0.1:0 $spin "$@"
	if [ -z "$server_port" ]; then
		echo "syscalls.sh: $name: the server did not start" >&2
		cat "$log" >&2
		kill "$server_pid" 2>/dev/null || true
		return 1
	fi
	timeout 300 "${lt[@]}" "${ct[@]}" "$perf" \
		--parsable $spin -n "$iters" -W 50 "$@" "127.0.0.1:$server_port" \
		>"$out/$name.client.out" 2>&1 || {
		echo "syscalls.sh: $name: rmca_perf failed" >&2
		cat "$out/$name.client.out" >&2
		kill "$server_pid" 2>/dev/null || true
		return 1
	}
	wait "$server_pid" || true
}

sum() { echo $(( $(total_of "$out/$1.server.strace") + $(total_of "$out/$1.client.strace") )); }
idle() { echo $(( $(idle_of "$out/$1.server.strace") + $(idle_of "$out/$1.client.strace") )); }

# Per-call difference of both sides between the 2N and the N run.
detail_of() {
	local a=$1 b=$2
	{ calls_of "$out/$a.server.strace"; calls_of "$out/$a.client.strace"; } >"$out/$a.calls"
	{ calls_of "$out/$b.server.strace"; calls_of "$out/$b.client.strace"; } >"$out/$b.calls"
	bench_calls_diff "$out/$a.calls" "$out/$b.calls" |
		awk -v n="$n" '{ d = $2 / n; if (d >= 0.005 || d <= -0.005)
			printf "    %-16s %7.2f\n", $1, d }'
}

# Instructions of one spinning round trip, without the waiting: the
# tests of tcp_pingpong.c at N and 2N round trips under callgrind, the
# difference divided by the round trips between them
# (bench_pingpong_span).
pingpong_spin() {
	local pp=$out/tcp_pingpong t name i1 i2 d
	bench_pingpong_build "$pp" "$build"
	echo "# $(bench_host)"
	echo "# rmca $(bench_rev); size $size; N $n and $((2 * n)), one thread (tcp_pingpong.c); results in $out"
	printf "%-5s %-8s %-12s %12s  %s\n" mode what test instructions per
	IFS=, read -ra tl <<<"$tests"
	for t in "${tl[@]}" idle raw; do
		case $t in
		send_lat) name=send ;; put_lat) name=put ;;
		atomic_lat) name=fadd ;; idle|raw) name=$t ;;
		*) continue ;;
		esac
		[ "$t" = raw ] && [ "$raw" = 0 ] && continue
		for k in 1 2; do
			valgrind -q --tool=callgrind \
				--callgrind-out-file="$out/spin-$name-$k.cg" \
				"$pp" "$name" $((k * n)) "$size" >/dev/null
		done
		i1=$(bench_callgrind_total "$out/spin-$name-1.cg")
		i2=$(bench_callgrind_total "$out/spin-$name-2.cg")
		d=$(bench_pingpong_span "$n")
		case $t in idle) unit="idle pass" ;; raw) unit="round trip (raw socket)" ;; *) unit="round trip" ;; esac
		printf "%-5s %-8s %-12s %12s  %s\n" spin "$([ "$t" = raw ] && echo raw || echo rmca)" \
			"$([ "$t" = raw ] && echo send_lat || echo "$t")" \
			"$(awk -v a="$i1" -v b="$i2" -v d="$d" 'BEGIN { printf "%.0f", (b - a) / d }')" "$unit"
		[ "$detail" = 1 ] || continue
		bench_callgrind_fns "$out/spin-$name-1.cg" >"$out/spin-$name-1.fn"
		bench_callgrind_fns "$out/spin-$name-2.cg" >"$out/spin-$name-2.fn"
		bench_calls_diff "$out/spin-$name-1.fn" "$out/spin-$name-2.fn" |
			awk -v d="$d" '{ v = $2 / d; if (v >= 10) printf "    %-32s %7.0f\n", $1, v }' |
			sort -k2,2nr
	done
}
if [ "$instr" = 1 ] && [ "$mode" = spin ]; then
	pingpong_spin
	exit 0
fi
[ "$instr" = 1 ] && modes=wait

echo "# $(bench_host)"
echo "# rmca $(bench_rev); size $size; window $window; N $n and $((2 * n)); results in $out"
what_counted=calls
[ "$instr" = 1 ] && what_counted=instructions detail=0
printf "%-5s %-8s %-12s %12s  %s\n" mode what test "$what_counted" per
runs=()
IFS=, read -ra tl <<<"$tests"
for t in "${tl[@]}"; do runs+=("rmca:$t"); done
if [ "$raw" = 1 ]; then
	for t in "${tl[@]}"; do
		case $t in send_lat|send_bw) runs+=("raw:$t") ;; esac
	done
fi
for mode in $modes; do
	spin= copt=-c
	[ "$mode" = spin ] && spin=--spin copt=-qq
	for r in "${runs[@]}"; do
		what=${r%%:*} t=${r#*:} tag=$mode-${r%%:*}-${r#*:}
		opt=(-t "$t" -S "$size" -w "$window")
		[ "$what" = raw ] && opt+=(--raw)
		counted "$tag-1" "$n" "${opt[@]}" || continue
		counted "$tag-2" $((2 * n)) "${opt[@]}" || continue
		per=$(awk -v a="$(sum "$tag-1")" -v b="$(sum "$tag-2")" -v n="$n" \
			'BEGIN { printf "%.2f", (b - a) / n }')
		case $t in *_lat) unit="round trip" ;; *) unit=message ;; esac
		# Spinning, the calls that found nothing depend on the load:
		# the rest is the count to compare.
		[ "$mode" = spin ] && unit="$unit, of which $(awk -v a="$(idle "$tag-1")" \
			-v b="$(idle "$tag-2")" -v n="$n" 'BEGIN { printf "%.2f", (b - a) / n }') found nothing"
		printf "%-5s %-8s %-12s %12s  %s\n" "$mode" "$what" "$t" "$per" "$unit"
		[ "$detail" = 1 ] && detail_of "$tag-1" "$tag-2"
	done
done
