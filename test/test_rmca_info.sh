#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# rmca_info end to end, against the components of the build tree
# (RMCA_component_path is set by test/Makefile.am). Speaks TAP.
#
# The tcp component must be there: without it these tests fail, they do
# not skip.

set -u

top=${RMCATEST_TOP_BUILDDIR:-..}
builddir=${RMCATEST_BUILDDIR:-.}
info=$top/tools/rmca_info
plugins=$builddir/.libs

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmca-info-test.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

n=0
failed=0
echo "1..17"

# ok CONDITION-STATUS NAME: one TAP line; on failure, what was seen.
ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
		if [ -s "$tmp/out" ]; then
			sed -n '1,40s/^/# out: /p' "$tmp/out"
		fi
		if [ -s "$tmp/err" ]; then
			sed -n '1,20s/^/# err: /p' "$tmp/err"
		fi
	fi
}

# run ARGS...: rmca_info with stdout in $tmp/out, stderr in $tmp/err,
# exit status in $rc.
run() {
	"$info" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

has() {
	grep -q -e "$1" "$tmp/out"
}

# The broken plugins of test/plugins, and a file that is no ELF at all.
broken=$tmp/broken
mkdir "$broken" &&
	cp "$plugins/rmca_badabi.so" "$plugins/rmca_nosym.so" "$broken/" &&
	echo "not a shared object" >"$broken/rmca_garbage.so" || exit 99

# 1
run
[ "$rc" -eq 0 ] && has '^rmca [0-9]' && has '^Components:' && has '^Modules:'
ok $? "default output names version, components and modules"

# 2
run --parsable
[ "$rc" -eq 0 ] && has '^component:tcp:status:loaded$' &&
	has '^component:tcp:version:[0-9]' &&
	has '^component:tcp:priority:-\{0,1\}[0-9][0-9]*$' &&
	has '^component:tcp:enabled:yes$' &&
	has '^component:tcp:path:.*/rmca_tcp\.so$'
ok $? "tcp component is loaded and enabled"

# 3 (DESIGN.md, Capabilities: tcp does everything in software)
grep '^module:tcp:[^:]*:caps:' "$tmp/out" >"$tmp/tcpcaps"
[ -s "$tmp/tcpcaps" ] &&
	grep -q 'atomic' "$tmp/tcpcaps" &&
	grep -q 'masked_atomic' "$tmp/tcpcaps" &&
	grep -q 'send_inv' "$tmp/tcpcaps" &&
	grep -q 'loopback' "$tmp/tcpcaps" &&
	grep -q 'remote_completion' "$tmp/tcpcaps"
ok $? "tcp module listed with its capabilities"

# 4
bad=0
while IFS= read -r line; do
	case $line in
	version:* | build:* | component:*:* | module:*:*:* | param:*:*) ;;
	*)
		echo "# unexpected line: $line"
		bad=1
		;;
	esac
done <"$tmp/out"
[ "$bad" -eq 0 ] && has '^version:[0-9][0-9.]*$' &&
	has '^build:pkglibdir:/' && has '^build:prefix:/' &&
	has '^build:verbs:\(yes\|no\)$' && has '^build:components_built:.*tcp'
ok $? "--parsable prints only colon-keyed facts"

# 5
RMCA_component_path=$broken:${RMCA_component_path:-} run --parsable
[ "$rc" -eq 0 ] &&
	has '^component:badabi:status:failed:ABI version 7, this core loads 2 to 4$' &&
	has '^component:nosym:status:failed:no symbol rmca_component$' &&
	has '^component:garbage:status:failed:.' &&
	has "^component:badabi:path:$broken/rmca_badabi.so\$" &&
	has '^component:tcp:status:loaded$'
ok $? "broken plugins listed as failed with their reason, tcp still loaded"

# 6
[ "$(grep -c "rmca: $broken/rmca_badabi.so: " "$tmp/err")" -eq 1 ]
ok $? "a broken plugin is logged once with its path"

# 7
RMCA_component_path=$broken:${RMCA_component_path:-} run
[ "$rc" -eq 0 ] && has 'badabi.*failed: ABI version 7, this core loads 2 to 4' &&
	has "$broken/rmca_garbage.so"
ok $? "default output shows a refused plugin and its reason"

# 8
RMCA_component_path=$broken:${RMCA_component_path:-} run --json --param all
[ "$rc" -eq 0 ] && python3 -c '
import json, sys
d = json.load(sys.stdin)
comps = {c["name"]: c for c in d["components"]}
assert comps["tcp"]["status"] == "loaded", comps["tcp"]
assert comps["badabi"]["status"] == "failed"
assert comps["badabi"]["error"] == "ABI version 7, this core loads 2 to 4"
assert any(m["component"] == "tcp" and "loopback" in m["caps"]
           for m in d["modules"]), d["modules"]
assert "pkglibdir" in d["build"] and d["version"]
assert any(p["name"] == "tcp_priority" for p in d["params"])
' <"$tmp/out"
ok $? "--json is one valid object with components, modules and params"

# 9: a value that needs escaping: quote, backslash, tab, newline
weird=$(printf 'a"b\\c\td\ne')
RMCA_tcp_priority=$weird run --json --param tcp
[ "$rc" -eq 0 ] && WEIRD=$weird python3 -c '
import json, os, sys
d = json.load(sys.stdin)
p = [p for p in d["params"] if p["name"] == "tcp_priority"][0]
assert p["error"] and os.environ["WEIRD"] in p["error"], p
assert p["source"] == "env", p
assert all(q["owner"] == "tcp" for q in d["params"]), d["params"]
' <"$tmp/out"
ok $? "--json escapes strings (a bad value with quotes and newlines)"

# 10
RMCA_tcp_priority=7 run --parsable --param tcp
[ "$rc" -eq 0 ] && has '^param:tcp_priority:value:7$' &&
	has '^param:tcp_priority:source:env$' &&
	has '^param:tcp_priority:source_detail:RMCA_tcp_priority$' &&
	has '^param:tcp_priority:type:int$' &&
	has '^param:tcp_priority:default:' &&
	has '^param:tcp_priority:owner:tcp$' &&
	has '^component:tcp:priority:7$' &&
	! has '^param:tcp_priority:error:' &&
	! grep '^param:[^:]*:owner:' "$tmp/out" | grep -qv ':owner:tcp$'
ok $? "--param tcp shows tcp_priority from the environment"

# 11
RMCA_tcp_priority=abc run --param tcp
[ "$rc" -eq 0 ] && has 'RMCA_tcp_priority' && has 'error:.*abc' &&
	has 'source: *env'
ok $? "a value that does not parse is shown with its error"

# 12
run --parsable --param framework
[ "$rc" -eq 0 ] && has '^param:[^:]*:owner:framework$' &&
	! grep '^param:[^:]*:owner:' "$tmp/out" | grep -qv ':owner:framework$'
ok $? "--param framework shows the framework's parameters only"

# 13
st=0
for args in "--no-such-option" "--param" "--param no_such_component" \
	"extra-argument" "--explain" "--json --parsable"; do
	# shellcheck disable=SC2086 # word splitting wanted
	run $args
	if [ "$rc" -ne 2 ] || ! grep -q "^Try 'rmca_info --help'" "$tmp/err" ||
		[ -s "$tmp/out" ]; then
		echo "# rmca_info $args: exit $rc"
		st=1
	fi
done
[ "$st" -eq 0 ]
ok $? "bad usage: one line and a hint on stderr, exit 2"

# 14
run --help
[ "$rc" -eq 0 ] && has '^Usage: rmca_info' && has '--parsable' &&
	has '--json' && has '--param' && [ ! -s "$tmp/err" ]
ok $? "--help prints usage on stdout and exits 0"

# 15-17: --explain asks a live listener (rmca_xfer -s) and connects nothing
xfer=$top/tools/rmca_xfer
"$xfer" -s -l 127.0.0.1:0 >"$tmp/srv" 2>&1 &
srv=$!
port=
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	port=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' "$tmp/srv")
	[ -n "$port" ] && break
	sleep 0.1
done
# local peers go to shm by default: these ask about tcp
RMCA_transports=tcp run --explain "127.0.0.1:$port"
[ "$rc" -eq 0 ] && has '^  transport tcp' && has '^  atomic: native' &&
	has '^  send_inv: native' && has 'chose tcp'
ok $? "--explain names the transport and the native paths"

RMCA_transports=tcp RMCA_tcp_caps=^atomic,^masked_atomic,^remote_completion \
	run --parsable \
	--explain "127.0.0.1:$port"
[ "$rc" -eq 0 ] && has '^explain:path:atomic:emulated$' &&
	has '^explain:path:masked_atomic:emulated$' &&
	has '^explain:path:put_delivered:flush$' &&
	has '^explain:path_reason:put_delivered:..*' && ! grep -qv '^explain:' "$tmp/out"
ok $? "--explain shows the fallbacks a capability mask forces, and why"

# the probe made no endpoint: the server still waits for its client
kill -0 "$srv" 2>/dev/null && ! grep -q '^transport' "$tmp/srv"
ok $? "--explain leaves the listener waiting for a real peer"
kill "$srv" 2>/dev/null
wait "$srv" 2>/dev/null

[ "$failed" -eq 0 ]
