#!/bin/bash
# contrib/bench/run-vm.sh - rmca_perf next to perftest (ib_send_lat,
# ib_write_bw, ...) on real kernel RDMA devices, rxe0 and siw0, inside the
# project's qemu guest (contrib/vm/run-vm.sh), printed as ratios.
#
#   contrib/bench/run-vm.sh [--build DIR] [-n ITERS] [-S SIZES] [--out DIR]
#                           [--devices "rxe0 siw0"] [--mode wait|spin]
#                           [--runs K] [--base DIR] [--count] [-t TESTS]
#                           [-r RX_DEPTH] [--guest-clock tsc|hpet]
#                           [--instructions] [--no-perftest] [--no-strace]
#
# --runs K: K runs in one guest, the tools interleaved; each table cell is
# the median of the K. --base DIR: a second build (another commit) measured
# in the same runs, for before/after tables. --count: instead of timing,
# count per operation (work requests posted, signalled and inline, CQ polls
# that returned entries, CQ armings and completion channel events taken at
# each side, system calls and the doorbell write()s) for rmca,
# the base build and perftest at n and 2n iterations (contrib/bench/
# verbs_count.c, strace -c), in wait mode unless --mode spin is given.
# --no-strace (with --count): no tracer, so that a spinning process runs
# at its own speed; the system calls it makes through libc (write, read,
# timerfd_settime, clock_gettime, epoll_wait, ioctl) are counted by
# verbs_count.c instead, each side (strace -c's slowdown multiplies
# whatever a spinning process does per unit of time: the core's look at
# its fds once a millisecond, a module's timer).
# --instructions: as --count, but each process runs under callgrind, and
# the table gives the user-space instructions per operation (what the
# guest's emulated CPUs spend per message, which the other counts do not
# show) of the calls the program makes into the libraries, inclusive:
# rmca_perf's into librmca, perftest's into libibverbs and the provider,
# each side and both, so that neither program's own work nor its waiting
# counts (column whole: every instruction counted, the program's own too;
# perftest polls while it waits even with -e, so its whole count and its
# poll_cq calls follow time).
# rmca_perf counts inside its test loops only (callgrind's toggle on
# run_*, serve_send_*: its set-up polls for as long as it takes), so the
# server's count is that of send_lat and send_bw. Wait mode only.
# --runs K repeats the count (tools rmca_r2, ...). --no-perftest: rmca
# (and --base) only. out/instr-DEV-calls.txt: the calls per function.
#
# One device at a time, client and server in the same guest on the device's
# own address. --mode spin (default): both busy-poll, as perftest does;
# on two vCPUs that leaves the software devices' kernel threads only the
# next tick, so latencies cluster at multiples of it (doc/bench.md).
# -r: receives rmca_perf's server keeps posted in send_lat and send_bw
# (rmca_perf -r; default 512, perftest's depth).
# --guest-clock: the guest kernel's clock source. tsc (default) boots it
# with clocksource=tsc tsc=reliable, so that clock_gettime is read in user
# space (the vDSO) as on a real machine; hpet is what the guest picks by
# itself under TCG, where every clock_gettime and gettimeofday is a system
# call of about 1.6 us (doc/bench.md).
# --mode wait: rmca_perf sleeps on its wait fd, perftest on CQ events (-e);
# perftest refuses -e for RDMA WRITE, and rmca hung on siw0 (doc/bench.md). The guest is usually emulated
# (TCG): only the ratios mean something, never the absolute numbers.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/contrib/bench/lib.sh"
build= iters=300 sizes=8,4096,65536 out= devices="rxe0 siw0" mode=spin
runs=1 base= count=0 instr=0 perftest=1 tests=all rx=512 mode_set=0 clock=tsc
strace=1
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift ;;
	-n) iters=$2; shift ;;
	-S) sizes=$2; shift ;;
	--out) out=$2; shift ;;
	--devices) devices=$2; shift ;;
	--mode) mode=$2; mode_set=1; shift ;;
	--runs) runs=$2; shift ;;
	--base) base=$2; shift ;;
	--count) count=1 ;;
	--instructions) count=1 instr=1 ;;
	--no-perftest) perftest=0 ;;
	--no-strace) strace=0 ;;
	-t) tests=$2; shift ;;
	-r) rx=$2; shift ;;
	--guest-clock) clock=$2; shift ;;
	-h|--help) sed -n '2,54p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-vm.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

case $clock in
tsc) guest_append="clocksource=tsc tsc=reliable" ;;
hpet) guest_append= ;;
*) echo "run-vm.sh: --guest-clock is tsc or hpet, not $clock" >&2; exit 2 ;;
esac

# counting is in wait mode unless --mode spin says otherwise
[ "$count" = 1 ] && [ "$mode_set" = 0 ] && mode=wait
if [ "${instr:-0}" = 1 ]; then
	[ "$mode" = wait ] || { echo "run-vm.sh: --instructions counts in wait mode only" >&2; exit 2; }
	command -v valgrind >/dev/null || { echo "run-vm.sh: --instructions needs valgrind" >&2; exit 1; }
fi
build=$(bench_build "$build")
[ -x "$build/tools/rmca_perf" ] || { echo "run-vm.sh: no rmca_perf in $build" >&2; exit 1; }
[ -e "$build/components/ib/.libs/rmca_ib.so" ] ||
	echo "run-vm.sh: warning: no ib component in $build (rdma-core missing at configure?)" >&2
command -v ib_send_lat >/dev/null ||
	echo "run-vm.sh: warning: perftest not installed (apt-get install perftest)" >&2
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/rmca-bench-vm.XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)

[ -n "$base" ] && base=$(cd "$base" && pwd)
if [ "$count" = 1 ] && [ "$strace" = 1 ]; then
	command -v strace >/dev/null || { echo "run-vm.sh: --count needs strace (or --no-strace)" >&2; exit 1; }
fi
if [ "$count" = 1 ]; then
	${CC:-cc} -O2 -shared -fPIC -o "$out/verbs_count.so" \
		"$top/contrib/bench/verbs_count.c" \
		"$top/test/verbs_interpose.c" -I"$top/test" -ldl ||
		{ echo "run-vm.sh: cannot build verbs_count.so" >&2; exit 1; }
fi

echo "# host: $(bench_host)"
echo "# rmca $(bench_rev); results in $out"
echo "# guest clock source asked for: $clock"
[ -n "$base" ] && echo "# base: $base ($(git -C "$base/.." describe --always --dirty 2>/dev/null || echo '?'))"
start=$(date +%s)
share="$out $build"
[ -n "$base" ] && share="$share $base"
BENCH_BUILD=$build BENCH_OUT=$out BENCH_ITERS=$iters BENCH_SIZES=$sizes \
BENCH_DEVICES=$devices BENCH_MODE=$mode BENCH_RUNS=$runs BENCH_BASE=$base \
BENCH_COUNT=$count BENCH_TESTS=$tests BENCH_RX=$rx BENCH_INSTR=${instr:-0} \
BENCH_PERFTEST=$perftest BENCH_STRACE=$strace \
VM_ENV="BENCH_BUILD BENCH_OUT BENCH_ITERS BENCH_SIZES BENCH_DEVICES BENCH_MODE BENCH_RUNS BENCH_BASE BENCH_COUNT BENCH_TESTS BENCH_RX BENCH_INSTR BENCH_PERFTEST BENCH_STRACE" \
VM_APPEND="${VM_APPEND:+$VM_APPEND }$guest_append" \
VM_SHARE="$share" VM_TIMEOUT=${VM_TIMEOUT:-$(( (count == 1 ? 1800 : 420) * runs ))} \
	"$top/contrib/vm/run-vm.sh" bash "$top/contrib/bench/vm-payload.sh" ||
	echo "run-vm.sh: the guest run failed ($?)" >&2
echo "# guest run: $(( $(date +%s) - start )) s; accel: ${VM_ACCEL:-guessed by contrib/vm/run-vm.sh}"

# Per operation, from the runs at n and 2n: stdin has "key,n,value..."
# lines, those of one key and n summed (server and client); prints
# "key,value..." for each key measured at two n, each value (at the larger
# n - at the smaller) / (the larger n - the smaller), keys in the order
# first seen.
per_op() {
	awk -F, -v OFS=, -v CONVFMT=%.17g '
		{ k = $1
		  if (!(k in seen)) { seen[k] = 1; keys[++nk] = k; lo[k] = $2 }
		  if ($2 < lo[k]) lo[k] = $2
		  if ($2 > hi[k]) hi[k] = $2
		  if (NF > nf[k]) nf[k] = NF
		  for (i = 3; i <= NF; i++) v[k, $2, i] += $i }
		END {
			for (j = 1; j <= nk; j++) {
				k = keys[j]; a = lo[k]; b = hi[k]; d = b - a
				if (d <= 0) continue
				line = k
				for (i = 3; i <= nf[k]; i++)
					line = line OFS (v[k, b, i] - v[k, a, i]) / d
				print line
			}
		}'
}

# Instructions per operation (n to 2n) from the callgrind outputs
# strace-DEV-tool-test-size-n-side.PID.cg: "calls", those of the calls the
# program makes into the libraries (rmca_perf into librmca, perftest into
# libibverbs and the provider), inclusive, each side and both; "whole",
# every instruction counted in both processes, the program's own included
# (rmca_perf: inside its test loops; perftest: all of it, with the polls
# it makes while it waits even with -e, a count that follows time).
# instr-DEV-calls.txt breaks "calls" down by function.
instr_table() { # dev
	local dev=$1 f prog
	prog='/(\.libs/(lt-)?rmca_perf|ib_[a-z_]+)$'
	for f in "$out"/strace-"$dev"-*.cg; do
		[ -f "$f" ] || continue
		set -- $(basename "$f" .cg | tr '.-' '  ')
		bench_callgrind_calls "$f" "$prog" |
			awk -v k="$3 $4 $5 $7" -v n="$6" -v w="$(bench_callgrind_total "$f")" '
				{ c += $(NF - 1); i += $NF
				  printf "%s %s,%s,0,0,0,%s,%s\n", k, $2, n, $(NF - 1), $NF }
				END { printf "%s *,%s,%s,%s,%s,0,0\n", k, n, i + 0, c + 0, w }'
	done | per_op >"$out/instr-$dev.csv"
	# breakdown: per side, the functions called, calls and instructions per op
	awk -F, '$1 !~ / \*$/ && ($5 != 0 || $6 != 0) { split($1, f, " ")
		printf "%-8s %-9s %6s %-6s %-24s %7.2f %9.0f\n", f[1], f[2], f[3], f[4], f[5], $5, $6 }' \
		"$out/instr-$dev.csv" >"$out/instr-$dev-calls.txt"
	echo
	echo "== $dev: user-space instructions per operation (n to 2n), $mode mode"
	printf "%-10s %-9s %6s %10s %10s %10s %8s %12s\n" tool test bytes \
		client server both libcalls whole
	awk -F, '$1 ~ / \*$/ { split($1, f, " "); k = f[1] " " f[2] " " f[3]
		if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
		v[k, f[4]] = $2; c[k] += $3; w[k] += $4 }
		END { for (i = 1; i <= n; i++) { k = keys[i]; split(k, f, " ")
			printf "%-10s %-9s %6s %10.0f %10.0f %10.0f %8.2f %12.0f\n", f[1], f[2], f[3],
				v[k, "client"], v[k, "server"],
				v[k, "client"] + v[k, "server"], c[k], w[k] } }' "$out/instr-$dev.csv"
	echo "(client, server, both: the instructions of rmca_perf's calls into"
	echo " librmca, or of perftest's into libibverbs and the provider;"
	echo " libcalls: how many such calls, both sides; whole: every instruction"
	echo " counted, the program's own too; by function: $out/instr-$dev-calls.txt)"
}

# Per operation: (count at 2n - count at n) / n, server and client together.
count_table() { # dev
	local dev=$1
	[ -s "$out/count-$dev.csv" ] || { echo "(no counts for $dev)"; return; }
	: >"$out/syscalls-$dev.csv"
	for f in "$out"/strace-"$dev"-*.txt; do
		[ -f "$f" ] || continue
		set -- $(basename "$f" .txt | tr '-' ' ')
		# strace-DEV-tool-test-size-n-side
		echo "$3,$4,$5,$6,$7,$(( $(bench_strace_total "$f") + 0 )),$(
			bench_strace_calls "$f" | awk '$1 == "write" { w = $2 }
				END { print w + 0 }')"
	done >"$out/syscalls-$dev.csv"
	echo
	echo "== $dev: per operation (n to 2n), server + client, $mode mode"
	printf "%-8s %-9s %6s %7s %7s %7s %7s %7s %7s %7s %7s\n" tool test bytes \
		wr/op sig/op inl/op post/op rwr/op rpost/op hits/op cqe/op
	# the shim's columns from 6: post_send wrs sig inline post_recv
	# recv_wrs poll hit cqe notify
	awk -F, '{ print $1 " " $2 " " $3 "," $4 "," $7 "," $8 "," $9 "," $6 "," \
		$11 "," $10 "," $13 "," $14 }' "$out/count-$dev.csv" | per_op |
		awk -F, '{ split($1, f, " "); printf "%-8s %-9s %6s", f[1], f[2], f[3]
			for (c = 2; c <= NF; c++) printf " %7.2f", $c
			printf "\n" }'
	echo
	echo "completion channel per operation, each side: CQ armings"
	echo "(ibv_req_notify_cq) and events taken (ibv_get_cq_event)"
	printf "%-8s %-9s %6s %-7s %7s %7s\n" tool test bytes side arms/op events/op
	# columns 15 and 16: notify, events (empty from an older shim: 0)
	awk -F, '{ print $1 " " $2 " " $3 " " $5 "," $4 "," $15 + 0 "," $16 + 0 }' \
		"$out/count-$dev.csv" | per_op |
		awk -F, '{ split($1, f, " ")
			printf "%-8s %-9s %6s %-7s %7.2f %7.2f\n", f[1], f[2], f[3], f[4], $2, $3 }'
	echo
	echo "send work requests by opcode, signalled sends, receive completions"
	printf "%-8s %-9s %6s %7s %7s %7s %7s %7s %7s\n" tool test bytes \
		send/op read/op write/op atom/op sigsnd/op rcqe/op
	# columns 17-21: read_wrs write_wrs atomic_wrs sig_sends recv_cqes
	# (empty from an older shim: 0)
	awk -F, '{ print $1 " " $2 " " $3 "," $4 "," $7 - $17 - $18 - $19 "," \
		$17 + 0 "," $18 + 0 "," $19 + 0 "," $20 + 0 "," $21 + 0 }' \
		"$out/count-$dev.csv" | per_op |
		awk -F, '{ split($1, f, " "); printf "%-8s %-9s %6s", f[1], f[2], f[3]
			for (c = 2; c <= NF; c++) printf " %7.2f", $c
			printf "\n" }'
	echo
	echo "calls through libc per operation, each side (no tracer: their own speed"
	echo "with --no-strace); clock_gettime counts the program's own reads too"
	printf "%-8s %-9s %6s %-7s %7s %7s %8s %7s %7s %7s\n" tool test bytes side \
		write read timerfd clock epoll ioctl
	# columns 22-27: write read timerfd_settime clock_gettime epoll_wait ioctl
	awk -F, 'NF >= 27 { print $1 " " $2 " " $3 " " $5 "," $4 "," $22 "," $23 "," \
		$24 "," $25 "," $26 "," $27 }' "$out/count-$dev.csv" | per_op |
		awk -F, '{ split($1, f, " ")
			printf "%-8s %-9s %6s %-7s %7.2f %7.2f %8.2f %7.2f %7.2f %7.2f\n",
				f[1], f[2], f[3], f[4], $2, $3, $4, $5, $6, $7 }'
	if [ -s "$out/syscalls-$dev.csv" ]; then
		echo
		printf "%-8s %-9s %6s %10s %10s\n" tool test bytes syscalls/op writes/op
		awk -F, '{ print $1 " " $2 " " $3 "," $4 "," $6 "," $7 }' \
			"$out/syscalls-$dev.csv" | per_op |
			awk -F, '{ split($1, f, " ")
				printf "%-8s %-9s %6s %10.2f %10.2f\n", f[1], f[2], f[3], $2, $3 }'
		echo
		echo "system calls by name per operation (strace -c), server + client:"
		for f in "$out"/strace-"$dev"-*.txt; do
			set -- $(basename "$f" .txt | tr '-' ' ')
			bench_strace_calls "$f" | awk -v k="$3 $4 $5" -v n="$6" -v OFS=, \
				'{ print k " " $1, n, $2 }'
		done | per_op | awk -F, '$2 > 0.005 || $2 < -0.005 { split($1, f, " ")
			printf "%-8s %-9s %6s %-18s %8.2f\n", f[1], f[2], f[3], f[4], $2 }'
	fi
	[ -s "$out/hw-$dev.csv" ] || return 0
	echo
	echo "device counters per operation (n to 2n; rxe only), nonzero ones:"
	awk -F, '{ print $1 " " $2 " " $3 " " $5 "," $4 "," $6 }' "$out/hw-$dev.csv" |
		per_op | awk -F, '$2 != 0 { split($1, f, " ")
			printf "%-8s %-9s %6s %-22s %8.2f\n", f[1], f[2], f[3], f[4], $2 }'
}

# The median over the runs of each (test, size, unit).
median_csv() { # prefix dev
	cat "$out/$1-$2".r*.csv 2>/dev/null | bench_median 4 >"$out/$1-$2.csv"
}

for dev in $devices; do
	if [ "${instr:-0}" = 1 ]; then
		instr_table "$dev"
		continue
	fi
	if [ "$count" = 1 ]; then
		count_table "$dev"
		continue
	fi
	[ -f "$out/perftest-$dev.atomic" ] && cat "$out/perftest-$dev.atomic"
	median_csv rmca "$dev"
	median_csv perftest "$dev"
	what="$mode mode, median of $runs run(s)"
	bench_ratios "$out/rmca-$dev.csv" "$out/perftest-$dev.csv" rmca perftest \
		"rmca / perftest on $dev, $what (put_lat: perftest's ib_write_lat doubled, a delivered put is a round trip)" \
		us_median us_p99 MB/s Mops
	if [ -n "$base" ]; then
		median_csv base "$dev"
		bench_ratios "$out/base-$dev.csv" "$out/perftest-$dev.csv" base perftest \
			"base / perftest on $dev, $what" us_median MB/s Mops
		bench_ratios "$out/rmca-$dev.csv" "$out/base-$dev.csv" rmca base \
			"rmca / base on $dev, $what" us_median MB/s Mops
	fi
done
echo
echo "# load average after: $(bench_load)"
