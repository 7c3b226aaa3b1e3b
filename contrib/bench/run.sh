#!/bin/bash
# contrib/bench/run.sh - rmca over tcp on loopback, side by side in one run
# with a plain TCP socket (rmca_perf --raw), UCX's ucx_perftest (tcp) and
# libfabric's fi_pingpong (tcp provider), printed as ratios. doc/bench.md
# says what each test measures and how to read the numbers.
#
#   contrib/bench/run.sh [--build DIR] [--install] [--mode MODE] [-n ITERS]
#                        [-S SIZES] [-t TESTS] [--out DIR] [--pin] [--runs N]
#   contrib/bench/run.sh --summary DIR...
#
#   --build DIR  use this build tree (default: build one in $TMPDIR)
#   --install    apt-get install ucx-utils and libfabric-bin if missing
#   --mode MODE  wait: rmca and raw sleep in poll() when idle; spin: they
#                busy-poll, as ucx_perftest and fi_pingpong always do (so
#                those run in spin mode only); both (default): wait, then
#                spin with UCX and libfabric
#   -n ITERS     iterations per size (default 5000; fewer for big sizes)
#   -S SIZES     sizes for every sized test (default: rmca_perf's lists)
#   -t TESTS     rmca_perf tests (default all)
#   --out DIR    keep the raw outputs there (default: a temporary directory)
#   --pin        server on CPU 0, client on CPU 1 (taskset), every tool
#   --runs N     the whole comparison N times in a row (rmca, the raw socket,
#                UCX, libfabric, in that order each time; DIR/run-01 ...),
#                then each ratio's N values in run order, their median and
#                quartiles (the ratios also go to DIR/ratios.csv)
#   --summary DIR...  that summary again from earlier runs' DIR/ratios.csv,
#                the runs in the order given (say, two builds alternated)
#
# With gnuplot installed, DIR/tcp.svg plots latency and bandwidth against
# message size (contrib/bench/plot.sh).
#
# Only loopback traffic (127.0.0.1). Each tool runs under a timeout.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/contrib/bench/lib.sh"
build= install=0 mode=both iters=5000 sizes= tests=all out= pin=0 runs=1
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift ;;
	--install) install=1 ;;
	--mode) mode=$2; shift ;;
	-n) iters=$2; shift ;;
	-S) sizes=$2; shift ;;
	-t) tests=$2; shift ;;
	--out) out=$2; shift ;;
	--pin) pin=1 ;;
	--runs) runs=$2; shift ;;
	--summary) shift; bench_runs_summary "$@"; exit ;;
	-h|--help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

case $runs in ''|*[!0-9]*|0) echo "run.sh: --runs N, N >= 1" >&2; exit 2 ;; esac
build=$(bench_build "$build")
perf=$build/tools/rmca_perf
[ -x "$perf" ] || { echo "run.sh: no $perf (build first)" >&2; exit 1; }
export RMCA_component_path=$build/components/tcp/.libs
export RMCA_transports=tcp

if [ "$install" = 1 ]; then
	for p in ucx-utils libfabric-bin; do
		dpkg -s "$p" >/dev/null 2>&1 ||
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$p" >/dev/null
	done
fi

[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/rmca-bench.XXXXXX")
mkdir -p "$out"
top_out=$out
# every ratio printed, as "run,comparison,test,bytes,unit,ratio"
export bench_record=$out/ratios.csv bench_run=1
: >"$bench_record"
case $mode in wait|spin|both) ;; *) echo "run.sh: --mode wait|spin|both" >&2; exit 2 ;; esac
spin=
popt=(-n "$iters" -t "$tests"); [ -n "$sizes" ] && popt+=(-S "$sizes")
# Server and client each on a CPU of their own, when asked.
on_server=() on_client=()
if [ "$pin" = 1 ]; then
	command -v taskset >/dev/null || { echo "run.sh: --pin needs taskset" >&2; exit 1; }
	bench_pin 0,1
fi

# rmca_perf as server and client; the client's --parsable lines to
# $out/$1.csv.
run_perf() { # name [option...]
	local name=$1
	shift
	bench_perf "$name" $spin "$@" -- "${popt[@]}"
}

iters_for() { bench_iters_for "$iters" "$@"; }

# The sizes rmca_perf measured for one test.
sizes_of() { awk -F, -v t="$1" '$1 == t && !s[$2]++ { print $2 }' "$out/rmca-spin.csv"; }

free_port() { echo $(( 20000 + RANDOM % 20000 )); }

# ucx_perftest over UCX's tcp transport on lo; prints our csv lines.
run_ucx() { # our_test ucx_test size iters
	local line
	line=$(UCX_TLS=tcp UCX_NET_DEVICES=lo bench_ucx "$out/ucx" "$2" "$3" "$4")
	set -- "$1" "$2" "$3" "$4" $line
	# a result line is numbers; a server that could not bind its port
	# leaves its error line instead
	case $# in [0-9]|1[01]) set -- "$1" "$2" "$3" "$4" x ;; esac
	case $6 in
	''|*[!0-9.]*) echo "ucx_perftest $2 -s $3 failed" >>"$out/ucx.err"; return 0 ;;
	esac
	case $1 in
	*_lat) echo "$1,$3,$4,$6,us_median" ;;
	*) awk -v t="$1" -v s="$3" -v n="$4" -v mr="${12}" 'BEGIN {
		printf "%s,%s,%s,%.6f,Mops\n", t, s, n, mr / 1e6
		if (t != "atomic_rate")
			printf "%s,%s,%s,%.6g,MB/s\n", t, s, n, mr * s / 1e6 }' ;;
	esac
}

# fi_pingpong, tcp provider, msg endpoints; usec/xfer is the mean half
# round trip.
run_fi() { # size iters
	local port line
	port=$(free_port)
	timeout 120 "${on_server[@]}" fi_pingpong -p tcp -e msg -B "$port" -I "$2" -S "$1" \
		>"$out/fi.server" 2>&1 &
	local spid=$!
	sleep 0.3
	line=$(timeout 120 "${on_client[@]}" fi_pingpong -p tcp -e msg -P "$port" -I "$2" \
		-S "$1" 127.0.0.1 2>>"$out/fi.err" | tail -1) || true
	wait "$spid" 2>/dev/null || true
	set -- "$1" "$2" $line
	[ $# -ge 9 ] || { echo "fi_pingpong -S $1 failed" >>"$out/fi.err"; return 0; }
	echo "send_lat,$1,$2,$9,us_mean"
}

ratios() { # a b title units...
	local a=$1 b=$2
	shift 2
	bench_ratios "$out/$a.csv" "$out/$b.csv" "$a" "$b" "$@"
}

# rmca's whole round trips of up to 16 B (put_lat, get_lat, atomic_lat)
# against the raw socket's 16 B request/response: twice its send_lat half
# round trip at 16 B, measured in the same run (issue 10's goal for
# delivered puts and fetch-adds).
round_trips() { # a b mode
	echo
	echo "== rmca round trip / raw TCP socket 16 B request-response (2 x its send_lat at 16 B), $3 mode, medians"
	awk -F, -v rec="${bench_record:-}" -v run="${bench_run:-1}" -v cmp="$1/$2-16B-rt" '
		FNR == NR { if ($1 == "send_lat" && $2 == 16 && $5 == "us_median") rt = 2 * $4; next }
		$1 ~ /^(put|get|atomic)_lat$/ && $2 <= 16 && $5 == "us_median" { row[++n] = $0 }
		END {
			if (!rt) { print "(raw send_lat at 16 B not measured: add 16 to -S)"; exit }
			if (!n) { print "(no put_lat, get_lat or atomic_lat measured)"; exit }
			printf "%-12s %8s %12s %12s %8s\n", "test", "bytes", "rmca_us", "raw_16B_rt", "ratio"
			for (i = 1; i <= n; i++) {
				split(row[i], f, ",")
				printf "%-12s %8s %12.4g %12.4g %8.2f\n", f[1], f[2], f[4], rt, f[4] / rt
				if (rec != "")
					printf "%s,%s,%s,%s,%s,%.4f\n", run, cmp, f[1], f[2], f[5], f[4] / rt >>rec
			}
		}' "$out/$2.csv" "$out/$1.csv"
}

# rmca and raw in one progress mode, and their ratios.
pair() { # wait|spin
	spin=; [ "$1" = spin ] && spin=--spin
	run_perf "rmca-$1"
	[ "$1" = spin ] || cat "$out/rmca-$1.head"
	run_perf "raw-$1" --raw
	ratios "rmca-$1" "raw-$1" "rmca (tcp) / raw TCP socket, same code, $1 mode: latency >1 and bandwidth <1 mean rmca is slower" \
		us_median us_p99 MB/s Mops
	round_trips "rmca-$1" "raw-$1" "$1"
}

echo "# $(bench_host)"
echo "# rmca $(bench_rev); progress mode: $mode; results in $out"

# One comparison: rmca and the raw socket, then UCX and libfabric.
one_run() {
	[ "$mode" = spin ] || pair wait
	[ "$mode" = wait ] || pair spin

	if [ "$mode" != wait ]; then
		: >"$out/ucx.csv"
		if command -v ucx_perftest >/dev/null; then
			ucxver=$(ucx_info -v 2>/dev/null | sed -n 's/^# Version //p' | head -1)
			for m in send_lat:tag_lat send_bw:tag_bw put_bw:ucp_put_bw \
				 get_bw:ucp_get atomic_rate:ucp_fadd; do
				t=${m%%:*} u=${m#*:}
				for s in $(sizes_of "$t"); do
					case $t in *_lat) k=lat ;; *) k=bw ;; esac
					n=$(iters_for "$s" $k)
					# UCX's get and fadd over tcp wait on its ~1 ms
					# progress timer: fewer of them keep the run short
					case $u in ucp_get|ucp_fadd) [ "$n" -gt 500 ] && n=500 ;; esac
					run_ucx "$t" "$u" "$s" "$n" >>"$out/ucx.csv"
				done
			done
			ratios rmca-spin ucx "rmca (tcp) / UCX ${ucxver:-?} ucx_perftest (UCX_TLS=tcp): tag_lat, tag_bw, ucp_put_bw, ucp_get, ucp_fadd" \
				us_median MB/s Mops
		else
			echo; echo "== UCX: ucx_perftest not installed (apt-get install ucx-utils, or --install)"
		fi

		: >"$out/fi.csv"
		if command -v fi_pingpong >/dev/null; then
			for s in $(sizes_of send_lat); do
				run_fi "$s" "$(iters_for "$s" lat)" >>"$out/fi.csv"
			done
			ratios rmca-spin fi "rmca (tcp) / libfabric $(fi_info --version 2>/dev/null | sed -n 's/^libfabric: //p') fi_pingpong (tcp, msg ep): mean half round trip" \
				us_mean
		else
			echo; echo "== libfabric: fi_pingpong not installed (apt-get install libfabric-bin, or --install)"
		fi
	else
		echo
		echo "== UCX and libfabric left out: their tools spin; run with --mode spin or both"
	fi
}

for bench_run in $(seq "$runs"); do
	if [ "$runs" -gt 1 ]; then
		out=$top_out/run-$(printf %02d "$bench_run")
		mkdir -p "$out"
		echo
		echo "### run $bench_run of $runs, load average: $(bench_load)"
	fi
	one_run
done
if [ "$runs" -gt 1 ]; then
	echo
	bench_runs_summary "$top_out"
fi
if command -v gnuplot >/dev/null; then
	echo
	echo "# plot: $("$top/contrib/bench/plot.sh" "$out")"
fi
echo
echo "# load average after: $(bench_load)"
