# SPDX-License-Identifier: BSD-3-Clause
# Shared by the test scripts that run the tools (sourced): TAP output,
# running a tool, and servers on ephemeral ports.

top=${RMCATEST_TOP_BUILDDIR:-..}
srcdir=${RMCATEST_SRCDIR:-.}
tools=$top/tools

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmca-tools-test.XXXXXX") || exit 99
servers=
cleanup() {
	for p in $servers; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

n=0
failed=0

# ok STATUS NAME: one TAP line; on failure, what was seen.
ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
		[ -s "$tmp/out" ] && sed -n '1,30s/^/# out: /p' "$tmp/out"
		[ -s "$tmp/err" ] && sed -n '1,20s/^/# err: /p' "$tmp/err"
		# and what the servers said
		for f in "$tmp"/*.out "$tmp"/*.err; do
			[ -s "$f" ] && sed -n "1,20s|^|# ${f##*/}: |p" "$f"
		done
	fi
	return 0
}

# run TOOL ARGS...: stdout in $tmp/out, stderr in $tmp/err, status in $rc.
run() {
	t=$1
	shift
	"$tools/$t" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

has() { grep -q -e "$1" "$tmp/out"; }
err_has() { grep -q -e "$1" "$tmp/err"; }
err_lines() { wc -l <"$tmp/err" | tr -d ' '; }

# serve NAME CMD...: start a server whose first line is "listening on port
# N" (or "... port N"); sets $port and $pid, output in $tmp/NAME.out.
serve() {
	name=$1
	shift
	# emptied here, not by the child's redirection: else the loop below
	# may read the port of the previous server of that name
	: >"$tmp/$name.out"
	: >"$tmp/$name.err"
	"$@" >>"$tmp/$name.out" 2>>"$tmp/$name.err" &
	pid=$!
	servers="$servers $pid"
	port=
	i=0
	# a bound on waiting for a process to start, not a timed assertion
	while [ $i -lt 300 ]; do
		port=$(sed -n 's/.*port \([0-9][0-9]*\).*/\1/p' "$tmp/$name.out" | head -1)
		[ -n "$port" ] && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	echo "# $name did not start:" >&2
	sed 's/^/# /' "$tmp/$name.err" >&2
	return 1
}

# reap STATUS: after a client that ended with STATUS, the server $pid is
# waited for; a client that failed may have left it waiting for ever, so it
# is stopped first. Sets $src to the server's status.
reap() {
	[ "$1" -eq 0 ] || kill "$pid" 2>/dev/null
	wait "$pid"
	src=$?
	# what the server said when it failed (a sanitizer's report, say)
	[ "$src" -eq 0 ] || sed -n "1,40s/^/# $name: /p" "$tmp/$name.err"
}

# stop: end the server $pid that serves until it is killed, and wait for it.
stop() {
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# wait_for FILE PATTERN: until a line of FILE matches (a server logs it
# after the client is gone); 1 if none did within 10 s, a bound on the wait,
# not a timed assertion.
wait_for() {
	i=0
	while [ $i -lt 100 ]; do
		grep -q -e "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# A TCP port nobody listens on: bound then released by the kernel's choice.
closed_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

finish() {
	echo "# $failed of $n failed"
	[ "$failed" -eq 0 ]
}
