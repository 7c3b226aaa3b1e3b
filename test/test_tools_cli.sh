#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# The command line of every tool (issue 13, items 3 and 6): --help and
# --version, one-line errors with a hint for bad values, size suffixes,
# rmca_info's "--param all all", messages that say what was being done.
# Speaks TAP.

set -u
. "${RMCATEST_SRCDIR:-.}/tools_lib.sh"

echo "1..25"

for t in rmca_info rmca_perf rmca_xfer; do
	run $t --help
	[ "$rc" -eq 0 ] && has "^Usage: $t" && has '--version' && [ ! -s "$tmp/err" ]
	ok $? "$t --help: usage on stdout, status 0"

	run $t --version
	[ "$rc" -eq 0 ] && has "^$t (rmca) [0-9][0-9.]*$" && [ ! -s "$tmp/err" ]
	ok $? "$t --version"

	run $t --no-such-option
	[ "$rc" -eq 2 ] && [ "$(err_lines)" -eq 2 ] && err_has "Try '$t --help'" &&
		! err_has '^Usage'
	ok $? "$t: an unknown option gets getopt's line and a hint, not the usage"
done

# bad values: one line naming option, value and what is accepted, then a hint
bad() { # TOOL OPTION VALUE WHAT [more args]
	t=$1 opt=$2 val=$3 what=$4
	shift 4
	run "$t" "$opt" "$val" "$@"
	[ "$rc" -eq 2 ] && [ "$(err_lines)" -eq 2 ] &&
		head -1 "$tmp/err" | grep -q -e "^$t: $opt '$val': .*$what" &&
		err_has "^Try '$t --help' for more information.$"
	ok $? "$t $opt $val: says which value and why"
}
bad rmca_xfer -n 100x 'not a size' 127.0.0.1:9
bad rmca_xfer -n 0 'at least one byte' 127.0.0.1:9
bad rmca_xfer -i -3 'whole number' 127.0.0.1:9
bad rmca_perf -n 10x 'whole number' 127.0.0.1:9
bad rmca_perf -w 0 'whole number from 1' 127.0.0.1:9
bad rmca_perf -r 0 'whole number from 1' 127.0.0.1:9
bad rmca_perf -S 8,1q 'not a size' 127.0.0.1:9
bad rmca_perf -t send_latt "no test 'send_latt'" 127.0.0.1:9

run rmca_xfer
[ "$rc" -eq 2 ] && [ "$(err_lines)" -eq 2 ] && err_has 'missing HOST:PORT'
ok $? "rmca_xfer without HOST:PORT says what is missing"

# sizes with suffixes are bytes times 1024^k: 3k moves 3072 bytes
if serve xfer "$tools/rmca_xfer" -s; then
	run rmca_xfer -n 3k -i 2 "127.0.0.1:$port"
	reap "$rc"
	[ "$rc" -eq 0 ] && [ "$src" -eq 0 ] &&
		grep -q '^server: 2 x 3072 bytes received and checked$' "$tmp/xfer.out" &&
		has '^client: 2 x 3072 bytes'
	ok $? "rmca_xfer -n 3k moves 3072 bytes"
else
	ok 1 "rmca_xfer -n 3k moves 3072 bytes"
fi

if serve perf "$tools/rmca_perf" -s; then
	run rmca_perf --parsable -t put_lat -n 20 -S 2k "127.0.0.1:$port"
	reap "$rc"
	[ "$rc" -eq 0 ] && [ "$src" -eq 0 ] && has '^put_lat,2048,' && ! has '^put_lat,2,'
	ok $? "rmca_perf -S 2k measures 2048 bytes"
else
	ok 1 "rmca_perf -S 2k measures 2048 bytes"
fi

# ompi_info's habit
run rmca_info --parsable --param all
grep '^param:' "$tmp/out" >"$tmp/all"
run rmca_info --parsable --param all all
grep '^param:' "$tmp/out" >"$tmp/allall"
[ "$rc" -eq 0 ] && has '^param:tcp_priority:' && has '^param:verbose:' &&
	cmp -s "$tmp/allall" "$tmp/all"
ok $? "rmca_info --param all all is --param all"

run rmca_info --parsable --param all tcp
[ "$rc" -eq 0 ] && has '^param:tcp_priority:' && ! has '^param:verbose:'
ok $? "rmca_info --param all tcp is --param tcp"

run rmca_info --param tcp extra
[ "$rc" -eq 2 ] && err_has "rmca_info --param tcp" && err_has "Try 'rmca_info --help'"
ok $? "rmca_info --param tcp extra: answered with what to type"

# messages say what was being done and to which address, never source text
cport=$(closed_port)
for t in rmca_xfer rmca_perf; do
	run $t "127.0.0.1:$cport"
	[ "$rc" -eq 1 ] && err_has "^$t: connecting to 127.0.0.1:$cport: " &&
		! err_has '&\|->\|ctx,'
	ok $? "$t: a failed connect names the address, not the call"
done

finish
