#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# The manual pages (issue 13, item 1): each built page lints clean (mandoc
# -T lint, and groff's warnings, which man --warnings shows), has no
# placeholder left, every call of rmca.h is named by a page, and every
# option a tool's --help lists is in its page. Speaks TAP.

set -u
. "${RMCATEST_SRCDIR:-.}/tools_lib.sh"

mandir=$top/doc/man
mansrc=$srcdir/../doc/man
pages="rmca.7 rmca_info.1 rmca_perf.1 rmca_xfer.1 rmca_init.3 rmca_connect.3
	rmca_mr_reg.3 rmca_send.3 rmca_poll.3 rmca_job_join.3"

echo "1..21"

have_mandoc=0
command -v mandoc >/dev/null 2>&1 && have_mandoc=1
have_groff=0
command -v groff >/dev/null 2>&1 && have_groff=1

for p in $pages; do
	: >"$tmp/out"
	: >"$tmp/err"
	st=0
	if [ ! -s "$mandir/$p" ]; then
		echo "# $mandir/$p was not built" >"$tmp/err"
		st=1
	else
		grep -n '@[a-zA-Z_]*@' "$mandir/$p" >"$tmp/out" && st=1
		if [ $have_mandoc = 1 ]; then
			mandoc -T lint -W warning "$mandir/$p" >>"$tmp/err" 2>&1 || st=1
		fi
		if [ $have_groff = 1 ]; then
			groff -man -ww -z "$mandir/$p" >>"$tmp/err" 2>&1 || st=1
		fi
		[ -s "$tmp/err" ] && st=1
	fi
	ok $st "$p: built, no placeholder left, lints clean"
done

if [ $have_mandoc = 0 ] && [ $have_groff = 0 ]; then
	echo "# neither mandoc nor groff: the pages were only checked for placeholders"
fi

# Every function rmca.h declares is the name of a page or of a .so alias.
: >"$tmp/out"
sed -n 's/^[a-z].*[ *]\(rmca_[a-z_0-9]*\)(.*/\1/p' "$srcdir/../include/rmca.h" |
	sort -u >"$tmp/calls"
for f in $(cat "$tmp/calls"); do
	# the NAME line(s) of the pages, up to " - "
	if ! awk 'FNR == 1 { on = 0 } /^# NAME/ { on = 1; next }
		on && / - / { sub(/ - .*/, ""); print; on = 0 } on { print }' \
		"$mansrc"/*.3.scd | tr ', ' '\n\n' | grep -qx "$f"; then
		echo "no page names $f" >>"$tmp/out"
	fi
done
[ -s "$tmp/calls" ] && [ ! -s "$tmp/out" ]
ok $? "every call in rmca.h is named by a section 3 page"

grep -q 'rmca_job_join' "$tmp/calls" || echo "# rmca.h has no job calls yet; rmca_job_join(3) documents DESIGN.md's"
ok 0 "rmca_job_join(3) documents the job calls"

# The .so aliases name pages that exist.
: >"$tmp/out"
for a in $(sed -n '/^MAN_ALIASES/,/^$/p' "$mansrc/Makefile.am" | tr ' \t\\' '\n\n\n' | grep ':'); do
	[ -f "$mansrc/${a#*:}.3.scd" ] || echo "alias $a: no page" >>"$tmp/out"
done
[ ! -s "$tmp/out" ]
ok $? "every alias points at a page"

# Every long option of a tool's --help is in its page.
for t in rmca_info rmca_perf rmca_xfer; do
	: >"$tmp/out"
	"$tools/$t" --help | grep -o -e '--[a-z][a-z-]*' | sort -u >"$tmp/opts"
	for o in $(cat "$tmp/opts"); do
		grep -q -e "\*$o\*" -e "\*$o " -e "$o\*" "$mansrc/$t.1.scd" ||
			echo "$t.1 does not document $o" >>"$tmp/out"
	done
	[ -s "$tmp/opts" ] && [ ! -s "$tmp/out" ]
	ok $? "$t(1) documents every option of $t --help"
done

# Installed where man finds them.
for s in 1 3 7; do
	grep -q "^man${s}dir = " "$top/doc/man/Makefile"
	ok $? "section $s has an install directory"
done

rm -f "$tmp/out" "$tmp/err"
[ $have_mandoc = 1 ] || [ $have_groff = 1 ]
ok $? "a linter (mandoc or groff) was there to check the pages"

[ "$(sed -n 's/^\.TH "rmca" "7" "[^"]*" "rmca \([^"]*\)".*/\1/p' "$mandir/rmca.7")" = "$("$tools/rmca_info" --version | sed -n 's/.*(rmca) //p')" ]
ok $? "rmca(7) carries the version of the tools"

finish
