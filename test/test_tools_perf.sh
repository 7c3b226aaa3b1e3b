#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# rmca_perf's output (issue 13, item 5): min, max, stdev and 99.9th
# percentile of latencies; which rows are half and which whole round trips;
# no message rate on latency rows; --csv and --json for scripts, --parsable
# as contrib/bench reads it; a progress line on a terminal only. The numbers
# themselves are not judged (benchmarks are not tests), only their shape
# and order (min <= median <= p99 <= p99.9 <= max). Speaks TAP.

set -u
. "${RMCATEST_SRCDIR:-.}/tools_lib.sh"

echo "1..12"

RMCA_transports=tcp
export RMCA_transports
tests=send_lat,put_lat,atomic_lat,put_bw,atomic_rate

# perf FMT...: one server, one client run with these output options.
perf() {
	if ! serve perf "$tools/rmca_perf" -s; then
		rc=99
		return
	fi
	"$tools/rmca_perf" -t $tests -n 300 -S 64 "$@" "127.0.0.1:$port" \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
	reap "$rc"
}

perf --csv
[ "$rc" -eq 0 ] &&
	head -1 "$tmp/out" | grep -q '^test,bytes,iters,lat,min_us,median_us,mean_us,max_us,stdev_us,p99_us,p999_us,MBps,Mops$' &&
	[ "$(grep -c '^[a-z_]*,[0-9]' "$tmp/out")" -eq 5 ]
ok $? "--csv: a header with every column, one row per test and size"

awk -F, 'NR > 1 && $4 != "-" {
		if (!($5 <= $6 && $6 <= $10 && $10 <= $11 && $11 <= $8 && $5 > 0 && $9 >= 0)) bad = 1
		if ($13 != "") bad = 1
		n++
	} END { exit !(n == 3 && !bad) }' "$tmp/out"
ok $? "--csv latency rows: min <= median <= p99 <= p99.9 <= max, stdev, no Mops"

grep -q '^send_lat,64,[0-9]*,half,' "$tmp/out" &&
	grep -q '^put_lat,64,[0-9]*,whole,' "$tmp/out" &&
	grep -q '^atomic_lat,8,[0-9]*,whole,' "$tmp/out"
ok $? "--csv says send_lat is half a round trip, put_lat and atomic_lat whole ones"

awk -F, '$1 ~ /_bw$|_rate$/ { if ($4 != "-" || $5 != "" || $13 == "") bad = 1; n++ }
	END { exit !(n == 2 && !bad) }' "$tmp/out" &&
	grep -q '^put_bw,64,.*,[0-9.][0-9.]*,[0-9.][0-9.]*$' "$tmp/out"
ok $? "--csv bandwidth and rate rows: MB/s and Mops, no latency columns"

perf --json
[ "$rc" -eq 0 ] && python3 - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["test"]: x for x in d["results"]}
assert d["tool"] == "rmca_perf" and len(d["results"]) == 5, d
assert r["send_lat"]["lat"] == "half_rtt" and r["put_lat"]["lat"] == "rtt"
for t in ("send_lat", "put_lat", "atomic_lat"):
    x = r[t]
    assert x["min_us"] <= x["median_us"] <= x["p99_us"] <= x["p999_us"] <= x["max_us"], x
    assert "stdev_us" in x and "Mops" not in x, x
assert r["put_bw"]["MBps"] > 0 and r["put_bw"]["Mops"] > 0
assert r["atomic_rate"]["Mops"] > 0 and "MBps" not in r["atomic_rate"]
PY
ok $? "--json: one object, the same facts, valid JSON"

perf --parsable
[ "$rc" -eq 0 ]
for u in us_median us_p99 us_mean us_min us_max us_stdev us_p999; do
	grep -q "^put_lat,64,[0-9]*,[0-9.]*,$u\$" "$tmp/out" || rc=1
done
grep -q '^send_lat,64,[0-9]*,half_rtt,lat$' "$tmp/out" || rc=1
grep -q '^put_bw,64,[0-9]*,[0-9.]*,MB/s$' "$tmp/out" || rc=1
grep -q '^put_bw,64,[0-9]*,[0-9.]*,Mops$' "$tmp/out" || rc=1
grep -q '_lat,.*,Mops$' "$tmp/out" && rc=1
[ "$rc" -eq 0 ]
ok $? "--parsable: every statistic as a unit, no Mops for latency tests, what contrib/bench reads"

grep -q "$(printf '\r')" "$tmp/err"
[ $? -ne 0 ]
ok $? "no progress line when stderr is not a terminal"

perf
[ "$rc" -eq 0 ] && has '^# lat: half = half a round trip' &&
	grep -q '^test  *bytes  *iters  *lat  *min_us  *med_us  *avg_us  *max_us  *stdev  *p99_us  *p99.9_us  *MB/s  *Mops$' "$tmp/out" &&
	grep -q '^send_lat  *64  *[0-9]*  *half .* -$' "$tmp/out" &&
	grep -q '^put_bw  *64  *[0-9]*  *- .*[0-9]$' "$tmp/out"
ok $? "the table: every column, half or whole said, '-' where nothing was measured"

for a in "--csv --json" "--parsable --csv"; do
	# shellcheck disable=SC2086
	run rmca_perf $a 127.0.0.1:9
	[ "$rc" -eq 2 ] && err_has 'exclude each other'
	ok $? "rmca_perf $a: refused"
done

# On a terminal (script(1) gives one), a run longer than a second shows a
# progress line on stderr. The run is made far longer than that on any
# machine (20 million round trips) and ended once the line is there, so
# whether the check applies never depends on the machine's speed.
if command -v script >/dev/null 2>&1 && serve perf "$tools/rmca_perf" -s; then
	script -qec "exec '$tools/rmca_perf' -t send_lat -S 8 -n 20000000 -W 1 127.0.0.1:$port >/dev/null" /dev/null >"$tmp/tty.out" 2>&1 &
	cpid=$!
	wait_for "$tmp/tty.out" 'send_lat, 8 bytes: [0-9]* operations in [0-9]* s'
	r=$?
	# the server gone, the client fails on its connection and ends
	stop
	wait "$cpid" 2>/dev/null
	ok $r "a progress line on a terminal"
else
	echo "ok $((n + 1)) # SKIP no script(1)"
	n=$((n + 1))
fi

run rmca_perf --help
has '--csv' && has '--json' && has 'half a round trip'
ok $? "--help lists --csv and --json and explains half and whole"

finish
