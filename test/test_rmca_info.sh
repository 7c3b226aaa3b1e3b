#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# rmca_info end to end, against the components of the build tree
# (RMCA_component_path is set by test/Makefile.am). Speaks TAP.
#
# The tcp component must be there: without it these tests fail, they do
# not skip.

set -u

. "${RMCATEST_SRCDIR:-.}/tools_lib.sh"

builddir=${RMCATEST_BUILDDIR:-.}
plugins=$builddir/.libs
echo "1..18"

# info ARGS...: rmca_info, as run does (tools_lib.sh).
info() { run rmca_info "$@"; }

# The broken plugins of test/plugins, and a file that is no ELF at all.
broken=$tmp/broken
mkdir "$broken" &&
	cp "$plugins/rmca_badabi.so" "$plugins/rmca_nosym.so" "$broken/" &&
	echo "not a shared object" >"$broken/rmca_garbage.so" || exit 99

# 1
info
[ "$rc" -eq 0 ] && has '^rmca [0-9]' && has '^Components:' && has '^Modules:'
ok $? "default output names version, components and modules"

# 2
info --parsable
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
RMCA_component_path=$broken:${RMCA_component_path:-} info --parsable
[ "$rc" -eq 0 ] &&
	has '^component:badabi:status:failed:ABI version 14, this core loads 5 to 13$' &&
	has '^component:nosym:status:failed:no symbol rmca_component$' &&
	has '^component:garbage:status:failed:.' &&
	has "^component:badabi:path:$broken/rmca_badabi.so\$" &&
	has '^component:tcp:status:loaded$'
ok $? "broken plugins listed as failed with their reason, tcp still loaded"

# 6
[ "$(grep -c "rmca: $broken/rmca_badabi.so: " "$tmp/err")" -eq 1 ]
ok $? "a broken plugin is logged once with its path"

# 7
RMCA_component_path=$broken:${RMCA_component_path:-} info
[ "$rc" -eq 0 ] && has 'badabi.*failed: ABI version 14, this core loads 5 to 13' &&
	has "$broken/rmca_garbage.so"
ok $? "default output shows a refused plugin and its reason"

# 8
RMCA_component_path=$broken:${RMCA_component_path:-} info --json --param all
[ "$rc" -eq 0 ] && python3 -c '
import json, sys
d = json.load(sys.stdin)
comps = {c["name"]: c for c in d["components"]}
assert comps["tcp"]["status"] == "loaded", comps["tcp"]
assert comps["badabi"]["status"] == "failed"
assert comps["badabi"]["error"] == "ABI version 14, this core loads 5 to 13"
assert any(m["component"] == "tcp" and "loopback" in m["caps"]
           for m in d["modules"]), d["modules"]
assert "pkglibdir" in d["build"] and d["version"]
assert any(p["name"] == "tcp_priority" for p in d["params"])
' <"$tmp/out"
ok $? "--json is one valid object with components, modules and params"

# 9: a value that needs escaping: quote, backslash, tab, newline
weird=$(printf 'a"b\\c\td\ne')
RMCA_tcp_priority=$weird info --json --param tcp
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
RMCA_tcp_priority=7 info --parsable --param tcp
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
RMCA_tcp_priority=abc info --param tcp
[ "$rc" -eq 0 ] && has 'RMCA_tcp_priority' && has 'error:.*abc' &&
	has 'source: *env'
ok $? "a value that does not parse is shown with its error"

# 12
info --parsable --param framework
[ "$rc" -eq 0 ] && has '^param:[^:]*:owner:framework$' &&
	! grep '^param:[^:]*:owner:' "$tmp/out" | grep -qv ':owner:framework$'
ok $? "--param framework shows the framework's parameters only"

# 13
st=0
for args in "--no-such-option" "--param" "--param no_such_component" \
	"extra-argument" "--explain" "--json --parsable"; do
	# shellcheck disable=SC2086 # word splitting wanted
	info $args
	if [ "$rc" -ne 2 ] || ! grep -q "^Try 'rmca_info --help'" "$tmp/err" ||
		[ -s "$tmp/out" ]; then
		echo "# rmca_info $args: exit $rc"
		st=1
	fi
done
[ "$st" -eq 0 ]
ok $? "bad usage: one line and a hint on stderr, exit 2"

# 14
info --help
[ "$rc" -eq 0 ] && has '^Usage: rmca_info' && has '--parsable' &&
	has '--json' && has '--param' && [ ! -s "$tmp/err" ]
ok $? "--help prints usage on stdout and exits 0"

# 15-17: --explain asks a live listener (rmca_xfer -s) and connects nothing
serve srv "$tools/rmca_xfer" -s -l 127.0.0.1:0
# local peers go to shm by default: these ask about tcp
RMCA_transports=tcp info --explain "127.0.0.1:$port"
[ "$rc" -eq 0 ] && has '^  transport tcp' && has '^  atomic: native' &&
	has '^  send_inv: native' && has 'chose tcp'
ok $? "--explain names the transport and the native paths"

RMCA_transports=tcp RMCA_tcp_caps=^atomic,^masked_atomic,^remote_completion \
	info --parsable \
	--explain "127.0.0.1:$port"
[ "$rc" -eq 0 ] && has '^explain:path:atomic:emulated$' &&
	has '^explain:path:masked_atomic:emulated$' &&
	has '^explain:path:put_delivered:flush$' &&
	has '^explain:path_reason:put_delivered:..*' && ! grep -qv '^explain:' "$tmp/out"
ok $? "--explain shows the fallbacks a capability mask forces, and why"

# the probe made no endpoint: the server still waits for its client
kill -0 "$pid" 2>/dev/null && ! grep -q '^transport' "$tmp/srv.out" "$tmp/srv.err"
ok $? "--explain leaves the listener waiting for a real peer"
stop

# 18: ib and iwarp register one definition (verbs_params.c), each under
# its own name and read from its own variable
info --parsable
if ! has '^build:verbs:yes$'; then
	n=$((n + 1))
	echo "ok $n # SKIP no verbs components in this build"
else
	RMCA_ib_idle_us=7 RMCA_iwarp_idle_us=9 info --parsable --param ib \
		--param iwarp
	ib_help=$(sed -n 's/^param:ib_idle_us:help://p' "$tmp/out")
	iwarp_help=$(sed -n 's/^param:iwarp_idle_us:help://p' "$tmp/out")
	[ "$rc" -eq 0 ] && has '^param:ib_idle_us:value:7$' &&
		has '^param:ib_idle_us:source_detail:RMCA_ib_idle_us$' &&
		has '^param:ib_idle_us:owner:ib$' &&
		has '^param:ib_idle_us:default:100$' &&
		has '^param:iwarp_idle_us:value:9$' &&
		has '^param:iwarp_idle_us:source_detail:RMCA_iwarp_idle_us$' &&
		has '^param:iwarp_idle_us:owner:iwarp$' &&
		has '^param:iwarp_idle_us:default:100$' &&
		[ -n "$ib_help" ] && [ "$ib_help" = "$iwarp_help" ]
	ok $? "ib_idle_us and iwarp_idle_us: listed, one help, each its own variable"
fi

finish
