#!/bin/bash
# contrib/bench/plot.sh - latency and bandwidth against message size, from
# the results run.sh left in DIR, drawn with gnuplot (Debian: gnuplot-nox).
#
#   contrib/bench/plot.sh DIR [OUT.svg]
#
# One SVG (default DIR/tcp.svg) with two graphs: send_lat (median half round
# trip, µs; libfabric's is its mean) and send_bw (MB/s), for every tool
# whose results are in DIR: rmca and the raw socket in wait and spin mode,
# UCX (tag_lat/tag_bw) and libfabric (fi_pingpong, latency only).
set -euo pipefail

dir=${1:?usage: plot.sh DIR [OUT.svg]}
svg=${2:-$dir/tcp.svg}
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not installed" >&2; exit 1; }

# "size value" lines of one test and unit in a csv, by size.
series() { # file test unit out
	: >"$4"
	[ -s "$1" ] || return 0
	awk -F, -v t="$2" -v u="$3" '$1 == t && $5 == u { print $2, $4 }' \
		"$1" | sort -n >"$4"
}

lat=() bw=()
add() { # name csv lat_unit
	local f=$dir/$2.csv
	series "$f" send_lat "$3" "$dir/plot-$2.lat"
	series "$f" send_bw MB/s "$dir/plot-$2.bw"
	[ -s "$dir/plot-$2.lat" ] && lat+=("'$dir/plot-$2.lat' using 1:2 with linespoints title '$1'")
	[ -s "$dir/plot-$2.bw" ] && bw+=("'$dir/plot-$2.bw' using 1:2 with linespoints title '$1'")
	return 0
}
add "rmca, wait" rmca-wait us_median
add "raw socket, wait" raw-wait us_median
add "rmca, spin" rmca-spin us_median
add "raw socket, spin" raw-spin us_median
add "UCX tag (spin)" ucx us_median
add "libfabric fi\\_pingpong (spin, mean)" fi us_mean
[ ${#lat[@]} -gt 0 ] || { echo "plot.sh: no send_lat results in $dir" >&2; exit 1; }

join_plots() { local IFS=,; echo "$*"; }
{
	echo "set terminal svg size 900,900 dynamic font 'sans,11'"
	echo "set output '$svg'"
	echo "set multiplot layout 2,1 title 'rmca over tcp on loopback, one run.sh run'"
	echo "set logscale xy 2"
	echo "set format x '%.0b %BB'"
	echo "set key left top"
	echo "set grid"
	echo "set xlabel 'message size'"
	echo "set ylabel 'send\\_lat: half round trip (µs)'"
	echo "plot $(join_plots "${lat[@]}")"
	if [ ${#bw[@]} -gt 0 ]; then
		echo "set logscale y 10"
		echo "set ylabel 'send\\_bw (MB/s, 10^6 bytes)'"
		echo "plot $(join_plots "${bw[@]}")"
	fi
	echo "unset multiplot"
} | gnuplot
rm -f "$dir"/plot-*.lat "$dir"/plot-*.bw
echo "$svg"
