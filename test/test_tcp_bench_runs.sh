#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# contrib/bench/run.sh --runs and --summary, on made-up results (no
# benchmark runs here, nothing is timed): every ratio printed is recorded
# with its run, and the summary gives each ratio's values in run order,
# their median and quartiles, numbering runs on through the directories
# given. Speaks TAP.

set -u
. "${RMCATEST_SRCDIR:-.}/tools_lib.sh"

echo "1..7"

bench=$srcdir/../contrib/bench
if ! command -v bash >/dev/null 2>&1; then
	for i in 1 2 3 4 5 6 7; do echo "ok $i # SKIP no bash"; done
	exit 0
fi

# Two result files as rmca_perf --parsable writes them, and the ratios
# lib.sh's bench_ratios records of them.
mkdir -p "$tmp/a" "$tmp/b" "$tmp/c"
printf '%s\n' send_lat,8,100,6.0,us_median send_lat,8,100,9.0,us_p99 \
	send_bw,8,100,3.0,MB/s >"$tmp/x.csv"
printf '%s\n' send_lat,8,100,4.0,us_median send_lat,8,100,3.0,us_p99 \
	send_bw,8,100,6.0,MB/s >"$tmp/y.csv"
bash -c '. "$1/lib.sh"; bench_record=$2 bench_run=3
	bench_ratios "$3" "$4" rx ry title us_median MB/s' sh "$bench" \
	"$tmp/rec.csv" "$tmp/x.csv" "$tmp/y.csv" >"$tmp/out" 2>"$tmp/err"
[ "$(cat "$tmp/rec.csv")" = "3,rx/ry,send_lat,8,us_median,1.5000
3,rx/ry,send_bw,8,MB/s,0.5000" ] && grep -q '^send_lat .* 1\.50$' "$tmp/out"
ok $? "bench_ratios records each ratio it prints, with its run, and only those"

# Three runs in one directory, two in another; ucx failed in run 2.
cat >"$tmp/a/ratios.csv" <<EOF
1,rmca-spin/raw-spin,send_lat,8,us_median,1.55
1,rmca-spin/ucx,send_lat,8,us_median,0.88
2,rmca-spin/raw-spin,send_lat,8,us_median,0.92
3,rmca-spin/raw-spin,send_lat,8,us_median,1.10
3,rmca-spin/ucx,send_lat,8,us_median,0.61
EOF
cat >"$tmp/b/ratios.csv" <<EOF
1,rmca-spin/raw-spin,send_lat,8,us_median,1.00
1,rmca-spin/ucx,send_lat,8,us_median,0.98
2,rmca-spin/raw-spin,send_lat,8,us_median,1.15
2,rmca-spin/ucx,send_lat,8,us_median,0.94
EOF
bash "$bench/run.sh" --summary "$tmp/a" "$tmp/b" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && has '^== ratios over 5 runs'
ok $? "--summary numbers runs on through the directories"

raw=$(awk '/^-- rmca-spin\/raw-spin$/ { getline; getline; print; exit }' "$tmp/out")
echo "$raw" | grep -q '^send_lat  *8 us_median  *5  *1\.10  *1\.00  *1\.15  *1\.55 0\.92 1\.10 1\.00 1\.15$'
ok $? "each ratio's values in run order, median 1.10 and quartiles 1.00, 1.15 of five"

ucx=$(awk '/^-- rmca-spin\/ucx$/ { getline; getline; print; exit }' "$tmp/out")
echo "$ucx" | grep -q '^send_lat  *8 us_median  *4  *0\.91  *0\.81  *0\.95  *0\.88 0\.61 0\.98 0\.94$'
ok $? "a run without a ratio is left out of it: four values, median the mean of the middle two"

cp "$tmp/a/ratios.csv" "$tmp/c/ratios.csv"
bash "$bench/run.sh" --summary "$tmp/c" >"$tmp/out" 2>"$tmp/err"
[ "$?" -eq 0 ] && has '^== ratios over 3 runs' &&
	has '^send_lat  *8 us_median  *3  *1\.10  *1\.01  *1\.33 '
ok $? "one directory: its three runs alone"

bash "$bench/run.sh" --summary "$tmp/a" "$tmp/none" >"$tmp/out" 2>"$tmp/err"
[ "$?" -ne 0 ] && err_has 'no .*none/ratios.csv'
ok $? "--summary of a directory without ratios.csv fails, naming it"

bad=0
for r in 0 x ''; do
	bash "$bench/run.sh" --runs "$r" >"$tmp/out" 2>"$tmp/err"
	[ "$?" -eq 2 ] && err_has -- '--runs N' || bad=1
done
[ "$bad" -eq 0 ]
ok $? "--runs 0, x or nothing is refused before anything is built"

finish
