#!/bin/bash
# contrib/bench/vm-payload.sh - run inside the guest by run-vm.sh: rmca_perf
# and perftest on the same RDMA device, one device after the other:
# rxe0 (RMCA_transports=ib, 10.0.0.1), siw0 (RMCA_transports=iwarp,
# 10.0.1.1). Writes rmca-DEV.csv and perftest-DEV.csv into $BENCH_OUT.
#
# Env: BENCH_BUILD (build tree), BENCH_OUT (shared, writable), BENCH_ITERS,
# BENCH_SIZES (comma list), BENCH_DEVICES (default "rxe0 siw0").
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
perf=$BENCH_BUILD/tools/rmca_perf
out=$BENCH_OUT
iters=${BENCH_ITERS:-300}
sizes=${BENCH_SIZES:-8,4096,65536}
# wait: rmca_perf sleeps on its wait fd, perftest on CQ events (-e);
# spin: both busy-poll
mode=${BENCH_MODE:-spin}
spin= events=-e
[ "$mode" = spin ] && spin=--spin events=
export RMCA_component_path=$BENCH_BUILD/components/ib/.libs:$BENCH_BUILD/components/iwarp/.libs:$BENCH_BUILD/components/tcp/.libs
port=18515

# perftest: server in the background, then the client; both spin. A line
# whose number is inf or nan (ib_write_lat on rxe sometimes) is a failure.
# Lat output: bytes iters t_min t_max t_typical t_avg t_stdev p99 p99.9
# BW output:  bytes iters BW_peak BW_average MsgRate[Mpps]
perftest() { # dev ip our_test tool size n extra...
	local dev=$1 ip=$2 t=$3 tool=$4 s=$5 n=$6 line spid try
	shift 6
	port=$((port + 1))
	for try in 1 2; do
		timeout 60 "$tool" -d "$dev" -i 1 -R -F $events -p "$port" \
			-s "$s" -n "$n" "$@" >>"$out/perftest-$dev.server" 2>&1 &
		spid=$!
		sleep 1
		line=$(timeout 60 "$tool" -d "$dev" -i 1 -R -F $events \
			-p "$port" -s "$s" -n "$n" "$@" "$ip" \
			2>>"$out/perftest-$dev.err" |
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

for spec in ${BENCH_DEVICES:-rxe0 siw0}; do
	case $spec in
	rxe0) comp=ib ip=10.0.0.1 ;;
	siw0) comp=iwarp ip=10.0.1.1 ;;
	*) echo "vm-payload: unknown device $spec"; continue ;;
	esac
	dev=$spec
	echo "== $dev ($comp, $ip), $mode mode"
	: >"$out/rmca-$dev.csv"
	: >"$out/perftest-$dev.csv"
	RMCA_transports=$comp timeout 150 "$perf" -s $spin -l "$ip:0" \
		>"$out/rmca-$dev.server" 2>&1 &
	spid=$!
	for _ in $(seq 100); do
		grep -q '^listening on port' "$out/rmca-$dev.server" && break
		sleep 0.1
	done
	p=$(sed -n 's/^listening on port //p' "$out/rmca-$dev.server")
	RMCA_transports=$comp timeout 150 "$perf" $spin --parsable \
		-n "$iters" -S "$sizes" "$ip:$p" >"$out/rmca-$dev.csv" \
		2>"$out/rmca-$dev.head" || {
		echo "rmca_perf failed on $dev:"
		cat "$out/rmca-$dev.head" "$out/rmca-$dev.server"
		kill "$spid" 2>/dev/null
	}
	wait "$spid"
	cat "$out/rmca-$dev.head"

	atomics=$(ibv_devinfo -v -d "$dev" 2>/dev/null | sed -n 's/.*atomic_cap:[[:space:]]*\([A-Z_]*\).*/\1/p')
	for s in ${sizes//,/ }; do
		nl=$(bench_iters_for "$iters" "$s" lat)
		nb=$(bench_iters_for "$iters" "$s" bw)
		perftest "$dev" "$ip" send_lat ib_send_lat "$s" "$nl"
		perftest "$dev" "$ip" put_lat ib_write_lat "$s" "$nl"
		perftest "$dev" "$ip" get_lat ib_read_lat "$s" "$nl"
		perftest "$dev" "$ip" send_bw ib_send_bw "$s" "$nb" -t 64
		perftest "$dev" "$ip" put_bw ib_write_bw "$s" "$nb" -t 64
		perftest "$dev" "$ip" get_bw ib_read_bw "$s" "$nb" -t 64
	done >>"$out/perftest-$dev.csv"
	if [ "${atomics:-ATOMIC_NONE}" != ATOMIC_NONE ]; then
		perftest "$dev" "$ip" atomic_lat ib_atomic_lat 8 "$iters" -A FETCH_AND_ADD
		perftest "$dev" "$ip" atomic_rate ib_atomic_bw 8 "$iters" -A FETCH_AND_ADD -t 64
	fi >>"$out/perftest-$dev.csv"
	echo "# $dev: atomic_cap ${atomics:-?}" >"$out/perftest-$dev.atomic"
done
