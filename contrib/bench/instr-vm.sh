#!/bin/bash
# contrib/bench/instr-vm.sh - the user-space instructions of one spinning
# send_lat round trip over verbs, rxe0 and siw0, without the waiting:
# tcp_pingpong.c's send test (both ends in one thread, 8-byte messages,
# receives posted 64 ahead) with both contexts on the device's address,
# under callgrind in the project's guest, at N and 2N round trips.
#
#   contrib/bench/instr-vm.sh [--build DIR] [-n N] [-S SIZE]
#                             [--devices "rxe0 siw0"] [--out DIR]
#
# A device completes a message on its own time, so the send test's waits
# make passes that find nothing; tcp_pingpong counts them, and each is
# taken out at the cost of the idle test's pass (one rmca_poll on a
# connected endpoint with nothing to find), measured the same way. What is
# left is what a spinning ping-pong executes for its messages: both sides'
# posts, the passes that find something and the passes that follow a
# post, in librmca, the component and the provider. Unlike the wait-mode
# counts of run-vm.sh --instructions, it does not move with the time a
# round trip takes (timers, wakeups). By function: DIR/DEV-send.fn.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/contrib/bench/lib.sh"
build= n=300 size=8 devices="rxe0 siw0" out=
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift ;;
	-n) n=$2; shift ;;
	-S) size=$2; shift ;;
	--devices) devices=$2; shift ;;
	--out) out=$2; shift ;;
	-h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "instr-vm.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
command -v valgrind >/dev/null || { echo "instr-vm.sh: needs valgrind" >&2; exit 1; }
build=$(bench_build "$build")
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/rmca-instr.XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)
pp=$out/tcp_pingpong
bench_pingpong_build "$pp" "$build" ||
	{ echo "instr-vm.sh: cannot build tcp_pingpong" >&2; exit 1; }
comps="$build/components/ib/.libs:$build/components/iwarp/.libs"

cat >"$out/guest.sh" <<GUEST
#!/bin/bash
for dev in $devices; do
	case \$dev in
	rxe0) ip=10.0.0.1 comp=ib ;;
	siw0) ip=10.0.1.1 comp=iwarp ;;
	*) continue ;;
	esac
	for t in send idle; do
		for k in 1 2; do
			PINGPONG_ADDR=\$ip RMCA_transports=\$comp \\
			RMCA_component_path=$comps \\
				timeout 900 valgrind -q --tool=callgrind \\
				--callgrind-out-file=$out/\$dev-\$t-\$k.cg \\
				$pp \$t \$((k * $n)) $size >$out/\$dev-\$t-\$k.out ||
				echo "\$dev \$t \$k failed"
		done
	done
done 2>$out/errors.txt
GUEST
echo "# host: $(bench_host)"
echo "# rmca $(bench_rev); size $size; N $n and $((2 * n)); results in $out"
VM_SHARE="$out $build" VM_TIMEOUT=${VM_TIMEOUT:-3600} \
	"$top/contrib/vm/run-vm.sh" bash "$out/guest.sh" ||
	echo "instr-vm.sh: the guest run failed ($?)" >&2

# Per round trip: the round trips between the runs at N and 2N.
d=$(bench_pingpong_span "$n")
idle() { sed -n 's/^idle_passes,//p' "$1"; }
printf "%-6s %12s %12s %12s %12s\n" device instructions "idle/rt" "idle pass" "raw/rt"
for dev in $devices; do
	f=$out/$dev
	if ! [ -s "$f-send-2.cg" ] || ! [ -s "$f-idle-2.cg" ]; then
		echo "$dev: no result (see $out/errors.txt)"
		continue
	fi
	awk -v s1="$(bench_callgrind_total "$f-send-1.cg")" \
	    -v s2="$(bench_callgrind_total "$f-send-2.cg")" \
	    -v i1="$(bench_callgrind_total "$f-idle-1.cg")" \
	    -v i2="$(bench_callgrind_total "$f-idle-2.cg")" \
	    -v p1="$(idle "$f-send-1.out")" -v p2="$(idle "$f-send-2.out")" \
	    -v d="$d" -v dev="$dev" 'BEGIN {
		raw = (s2 - s1) / d; pass = (i2 - i1) / d; ir = (p2 - p1) / d
		printf "%-6s %12.0f %12.2f %12.0f %12.0f\n", dev, raw - ir * pass, ir, pass, raw }'
	bench_callgrind_fns "$f-send-1.cg" >"$f-send-1.fn"
	bench_callgrind_fns "$f-send-2.cg" >"$f-send-2.fn"
	bench_calls_diff "$f-send-1.fn" "$f-send-2.fn" |
		awk -v d="$d" '{ v = $2 / d; if (v >= 10) printf "%-32s %7.0f\n", $1, v }' |
		sort -k2,2nr >"$f-send.fn"
done
echo "(instructions: per round trip, both sides, the idle passes taken out;"
echo " idle/rt: passes that found nothing, per round trip; idle pass: the"
echo " cost of one; raw/rt: before the idle passes were taken out;"
echo " by function, idle passes included: $out/DEV-send.fn)"
echo "# load average after: $(bench_load)"
