#!/bin/bash
# contrib/bench/vm-payload.sh - run inside the guest by run-vm.sh: rmca_perf
# and perftest on the same RDMA device, one device after the other:
# rxe0 (RMCA_transports=ib, 10.0.0.1), siw0 (RMCA_transports=iwarp,
# 10.0.1.1). Writes rmca-DEV.rN.csv and perftest-DEV.rN.csv (run N) into
# $BENCH_OUT, and base-DEV.rN.csv when a second build is given: the runs
# interleave the tools (rmca, base, perftest, then again), so that a slow
# spell of the shared host falls on all of them alike.
#
# Env: BENCH_BUILD (build tree), BENCH_OUT (shared, writable), BENCH_ITERS,
# BENCH_SIZES (comma list), BENCH_DEVICES (default "rxe0 siw0"),
# BENCH_RUNS (1), BENCH_BASE (a second build tree, measured the same way),
# BENCH_COUNT=1 (count instead: see count_all below), BENCH_TESTS (comma
# list of rmca_perf tests, default all), BENCH_RX (receives rmca_perf's
# server keeps posted, rmca_perf -r; perftest's is 512).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
perf=$BENCH_BUILD/tools/rmca_perf
base=${BENCH_BASE:-}
runs=${BENCH_RUNS:-1}
out=$BENCH_OUT
iters=${BENCH_ITERS:-300}
sizes=${BENCH_SIZES:-8,4096,65536}
# wait: rmca_perf sleeps on its wait fd, perftest on CQ events (-e);
# spin: both busy-poll
mode=${BENCH_MODE:-spin}
spin= events=-e
[ "$mode" = spin ] && spin=--spin events=
comps() { # build tree
	echo "$1/components/ib/.libs:$1/components/iwarp/.libs:$1/components/tcp/.libs"
}
port=18515
echo "# guest clock source: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?')"

# The perftest command of both sides, on the port now: sets pt (the
# client adds the address).
pt_cmd() { # dev tool size n extra...
	local dev=$1 tool=$2 s=$3 n=$4
	shift 4
	pt=("$tool" -d "$dev" -i 1 -R -F $events -p "$port" -s "$s" -n "$n" "$@")
}

# perftest: server in the background, then the client; both spin. A line
# whose number is inf or nan (ib_write_lat on rxe sometimes) is a failure.
# Lat output: bytes iters t_min t_max t_typical t_avg t_stdev p99 p99.9
# BW output:  bytes iters BW_peak BW_average MsgRate[Mpps]
perftest() { # dev ip our_test tool size n extra...
	local dev=$1 ip=$2 t=$3 tool=$4 s=$5 n=$6 line spid try
	shift 6
	port=$((port + 1))
	for try in 1 2; do
		pt_cmd "$dev" "$tool" "$s" "$n" "$@"
		timeout 60 "${pt[@]}" >>"$out/perftest-$dev.server" 2>&1 &
		spid=$!
		sleep 1
		line=$(timeout 60 "${pt[@]}" "$ip" 2>>"$out/perftest-$dev.err" |
			tee -a "$out/perftest-$dev.log" |
			awk -v s="$s" '$1 == s && $2 ~ /^[0-9]+$/ &&
				$5 ~ /^[0-9.]+$/' | tail -1)
		[ -n "$line" ] || kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		[ -n "$line" ] && break
		port=$((port + 1))
	done
	[ -n "$line" ] || { echo "$tool -s $s failed on $dev" >>"$out/perftest-$dev.err"; return 0; }
	set -- $line
	case $t in
	put_lat) # ib_write_lat: half a write ping-pong; a delivered put is a whole round trip
		awk -v t="$t" -v s="$s" -v n="$n" -v m="$5" -v p="$8" 'BEGIN {
			printf "%s,%s,%s,%.3f,us_median\n%s,%s,%s,%.3f,us_p99\n", t, s, n, 2 * m, t, s, n, 2 * p }' ;;
	*_lat)
		echo "$t,$s,$n,$5,us_median"
		echo "$t,$s,$n,$8,us_p99" ;;
	*)
		awk -v t="$t" -v s="$s" -v n="$n" -v mr="$5" 'BEGIN {
			printf "%s,%s,%s,%.6f,Mops\n", t, s, n, mr
			if (t != "atomic_rate") printf "%s,%s,%s,%.6g,MB/s\n", t, s, n, mr * s }' ;;
	esac
}

# rmca_perf of build $1 on $dev: client and server, results in $2.
rmca_run() { # build csv [rmca_perf options...]
	local b=$1 csv=$2
	shift 2
	RMCA_component_path=$(comps "$b") RMCA_transports=$comp \
		bench_server "$out/rmca-$dev.server" \
		timeout 150 "$b/tools/rmca_perf" -s $spin -l "$ip:0"
	RMCA_component_path=$(comps "$b") RMCA_transports=$comp \
		timeout 150 "$b/tools/rmca_perf" $spin --parsable "$@" \
		$rx "$ip:$server_port" >"$csv" 2>"$out/rmca-$dev.head" || {
		echo "rmca_perf ($b) failed on $dev:"
		cat "$out/rmca-$dev.head" "$out/rmca-$dev.server"
		kill "$server_pid" 2>/dev/null
	}
	wait "$server_pid"
}

tests=${BENCH_TESTS:-all}
rx=${BENCH_RX:+-r $BENCH_RX}
want() { [ "$tests" = all ] || [[ ",$tests," == *",$1,"* ]]; }

perftest_all() {
	for s in ${sizes//,/ }; do
		nl=$(bench_iters_for "$iters" "$s" lat)
		nb=$(bench_iters_for "$iters" "$s" bw)
		want send_lat && perftest "$dev" "$ip" send_lat ib_send_lat "$s" "$nl"
		want put_lat && perftest "$dev" "$ip" put_lat ib_write_lat "$s" "$nl"
		want get_lat && perftest "$dev" "$ip" get_lat ib_read_lat "$s" "$nl"
		want send_bw && perftest "$dev" "$ip" send_bw ib_send_bw "$s" "$nb" -t 64
		want put_bw && perftest "$dev" "$ip" put_bw ib_write_bw "$s" "$nb" -t 64
		want get_bw && perftest "$dev" "$ip" get_bw ib_read_bw "$s" "$nb" -t 64
	done
	if [ "${atomics:-ATOMIC_NONE}" != ATOMIC_NONE ]; then
		want atomic_lat && perftest "$dev" "$ip" atomic_lat ib_atomic_lat 8 "$iters" -A FETCH_AND_ADD
		want atomic_rate && perftest "$dev" "$ip" atomic_rate ib_atomic_bw 8 "$iters" -A FETCH_AND_ADD -t 64
	fi
	return 0
}

# BENCH_INSTR=1 (with BENCH_COUNT=1): the same runs under callgrind
# instead, counting the instructions each process executes in user space.
# BENCH_PERFTEST=0: rmca (and the base build) only.
#
# Counting (BENCH_COUNT=1): one test at one size, n and 2n iterations, so
# that set-up cancels in the difference, in wait mode by default (rmca_perf
# sleeps on its wait fd, perftest on CQ events, -e). With --mode spin both
# busy-poll: what a spinning pass costs (perftest's: nothing but the CQ
# read; rmca_perf's: its clock, and rmca's look at the fds) then shows per
# operation, scaled by how long each operation took. Each process runs under
# verbs_count.so (work requests, CQ polls) and strace -c (system calls; the
# doorbells of rxe and siw are write()s), or, with BENCH_STRACE=0, under
# verbs_count.so alone (its counts of calls through libc, no tracer's
# slowdown). Lines "tool,test,size,n,side" +
# the shim's counters go to count-DEV.csv, strace summaries to
# strace-DEV-*.txt.
# a server under valgrind takes its time to listen
[ "${BENCH_INSTR:-0}" = 1 ] && export BENCH_SERVER_WAIT=3000
count_wrap() { # tag file cmd...
	local tag=$1 f=$2
	shift 2
	if [ "${BENCH_INSTR:-0}" = 1 ]; then
		# user-space instructions instead (callgrind, every process
		# the command starts; cg_opts: what the tool adds)
		valgrind -q --trace-children=yes --tool=callgrind \
			"${cg_opts[@]}" \
			--callgrind-out-file="${f%.txt}.%p.cg" "$@"
		return
	fi
	if [ "${BENCH_STRACE:-1}" = 0 ]; then
		# no tracer: verbs_count.so counts the calls through libc
		VERBS_COUNT_TAG=$tag VERBS_COUNT_OUT=$out/count-$dev.csv \
		LD_PRELOAD=$out/verbs_count.so "$@"
		return
	fi
	VERBS_COUNT_TAG=$tag VERBS_COUNT_OUT=$out/count-$dev.csv \
	LD_PRELOAD=$out/verbs_count.so \
		strace -f -c -o "$f" "$@"
}

# The device's own counters (rxe: packets, RNR NAKs, retries; siw has
# none), one "name value" pair after the other.
hw_snap() {
	rdma statistic show link "$dev/1" 2>/dev/null |
		awk '{ for (i = 3; i < NF; i += 2) print $i, $(i + 1) }'
}

# Appends "tag,counter,delta" for the run between two snapshots.
hw_diff() { # tag before after
	awk -v tag="$1" 'FNR == NR { b[$1] = $2; next }
		{ printf "%s,%s,%d\n", tag, $1, $2 - b[$1] }' "$2" "$3" \
		>>"$out/hw-$dev.csv"
}

# Under callgrind, rmca_perf counts only inside its test loops (run_*,
# serve_send_*: not its set-up, whose polling follows time, nor its
# teardown), and runs without the libtool wrapper (whose shell and seds
# would run under valgrind too).
count_rmca() { # build tool test size n
	local b=$1 tool=$2 t=$3 s=$4 n=$5 perf=$1/tools/rmca_perf
	local ldp=${LD_LIBRARY_PATH:-}
	cg_opts=(--collect-atstart=no --toggle-collect='run_*'
		--toggle-collect='serve_send_*')
	if [ "${BENCH_INSTR:-0}" = 1 ] && [ -x "$b/tools/.libs/rmca_perf" ]; then
		perf=$b/tools/.libs/rmca_perf
		ldp=$b/framework/.libs${ldp:+:$ldp}
	fi
	LD_LIBRARY_PATH=$ldp RMCA_component_path=$(comps "$b") RMCA_transports=$comp \
		bench_server "$out/rmca-$dev.server" \
		count_wrap "$tool,$t,$s,$n,server" "$out/strace-$dev-$tool-$t-$s-$n-server.txt" \
		timeout 300 "$perf" -s $spin -l "$ip:0"
	hw_snap >"$out/hw.before"
	LD_LIBRARY_PATH=$ldp RMCA_component_path=$(comps "$b") RMCA_transports=$comp \
		count_wrap "$tool,$t,$s,$n,client" "$out/strace-$dev-$tool-$t-$s-$n-client.txt" \
		timeout 300 "$perf" $spin --parsable -t "$t" -S "$s" \
		-n "$n" -W 0 $rx "$ip:$server_port" >/dev/null 2>&1 || echo "count: rmca_perf $t $s $n failed on $dev"
	wait "$server_pid"
	hw_snap >"$out/hw.after"
	hw_diff "$tool,$t,$s,$n" "$out/hw.before" "$out/hw.after"
}

count_perftest() { # test tool size n tag extra...
	local t=$1 tool=$2 s=$3 n=$4 tag=$5 spid
	shift 5
	cg_opts=() # stripped: no names to count between
	port=$((port + 1))
	pt_cmd "$dev" "$tool" "$s" "$n" "$@"
	count_wrap "$tag,$t,$s,$n,server" "$out/strace-$dev-$tag-$t-$s-$n-server.txt" \
		timeout 300 "${pt[@]}" >/dev/null 2>&1 &
	spid=$!
	# perftest's server says nothing when it listens: time to get there
	if [ "${BENCH_INSTR:-0}" = 1 ]; then sleep 30; else sleep 2; fi
	hw_snap >"$out/hw.before"
	count_wrap "$tag,$t,$s,$n,client" "$out/strace-$dev-$tag-$t-$s-$n-client.txt" \
		timeout 300 "${pt[@]}" "$ip" >/dev/null 2>&1 ||
		echo "count: $tool $s $n failed on $dev"
	wait "$spid"
	hw_snap >"$out/hw.after"
	hw_diff "$tag,$t,$s,$n" "$out/hw.before" "$out/hw.after"
}

# perftest's program (and options) for an rmca_perf test, or nothing.
perftest_of() { # test size
	case $1 in
	send_lat) echo ib_send_lat ;;
	send_bw) echo ib_send_bw -t 64 ;;
	put_lat) echo ib_write_lat ;;
	put_bw) echo ib_write_bw -t 64 ;;
	get_lat) echo ib_read_lat ;;
	get_bw) echo ib_read_bw -t 64 ;;
	atomic_lat)
		[ "$2" = 8 ] && [ "${atomics:-ATOMIC_NONE}" != ATOMIC_NONE ] &&
			echo ib_atomic_lat -A FETCH_AND_ADD ;;
	esac
}

# BENCH_TESTS selects the tests counted (send_lat and send_bw by default).
count_all() {
	local n=$iters t s m pt r=1 sfx=
	local list=send_lat,send_bw
	[ "$tests" = all ] || list=$tests
	# BENCH_RUNS > 1: the whole count again, the tools named rmca_r2...
	for r in $(seq "$runs"); do
	[ "$r" = 1 ] || sfx=_r$r
	for s in ${sizes//,/ }; do
		for m in $n $((2 * n)); do
			for t in ${list//,/ }; do
				[ "$t" = atomic_lat ] && [ "$s" != 8 ] && continue
				count_rmca "$BENCH_BUILD" "rmca$sfx" "$t" "$s" "$m"
				[ -n "$base" ] && count_rmca "$base" "base$sfx" "$t" "$s" "$m"
				[ "${BENCH_PERFTEST:-1}" = 1 ] || continue
				pt=$(perftest_of "$t" "$s")
				[ -n "$pt" ] || continue
				# shellcheck disable=SC2086
				set -- $pt
				count_perftest "$t" "$1" "$s" "$m" "perftest$sfx" "${@:2}"
			done
		done
	done
	done
}

for spec in ${BENCH_DEVICES:-rxe0 siw0}; do
	case $spec in
	rxe0) comp=ib ip=10.0.0.1 ;;
	siw0) comp=iwarp ip=10.0.1.1 ;;
	*) echo "vm-payload: unknown device $spec"; continue ;;
	esac
	dev=$spec
	atomics=$(ibv_devinfo -v -d "$dev" 2>/dev/null | sed -n 's/.*atomic_cap:[[:space:]]*\([A-Z_]*\).*/\1/p')
	echo "# $dev: atomic_cap ${atomics:-?}" >"$out/perftest-$dev.atomic"
	if [ "${BENCH_COUNT:-0}" = 1 ]; then
		echo "== $dev ($comp, $ip), counting, $mode mode"
		: >"$out/count-$dev.csv"
		: >"$out/hw-$dev.csv"
		count_all
		continue
	fi
	for r in $(seq "$runs"); do
		echo "== $dev ($comp, $ip), $mode mode, run $r of $runs"
		rmca_run "$BENCH_BUILD" "$out/rmca-$dev.r$r.csv" -n "$iters" -S "$sizes" -t "$tests"
		[ "$r" = 1 ] && cat "$out/rmca-$dev.head"
		[ -n "$base" ] &&
			rmca_run "$base" "$out/base-$dev.r$r.csv" -n "$iters" -S "$sizes" -t "$tests"
		perftest_all >"$out/perftest-$dev.r$r.csv"
	done
done
