#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# rmca_info's output for scripts (issue 13, item 4): why a component has
# no module, --explain as fields (transport, path and reason
# per operation, reason per skipped module), the usage naming every option,
# --param with one parameter's name, bash completion. Speaks TAP.

set -u
. "${RMCATEST_SRCDIR:-.}/tools_lib.sh"

echo "1..17"

plugins=$(cd "${RMCATEST_BUILDDIR:-.}" && pwd)/.libs

run rmca_info --help
opts=$(sed -n 's/^ *\(-[a-zA-Z], \)\{0,1\}\(--[a-z-]*\).*/\2/p' "$tmp/out" | sort -u)
sed -n '/^Usage:/,/^[^ U]/p' "$tmp/out" >"$tmp/usage"
st=0
for o in $opts; do
	grep -q -e "$o" "$tmp/usage" || { echo "# the usage lines lack $o"; st=1; }
done
[ -n "$opts" ] && [ $st -eq 0 ]
ok $? "the usage lines name every option (${opts:-none found})"

# A component with no module says why (the empty test component).
nodev=$tmp/nodev
mkdir "$nodev" && cp "$plugins/rmca_empty.so" "$nodev/" || exit 99
RMCA_component_path=$nodev:${RMCA_component_path:-} run rmca_info --parsable
[ "$rc" -eq 0 ] && has '^component:empty:modules:0$' &&
	has '^component:empty:no_module_reason:no empty device here (a test component)$' &&
	has '^component:empty:status:loaded$'
ok $? "--parsable: a component with no module says why"
RMCA_component_path=$nodev:${RMCA_component_path:-} run rmca_info
has '^  empty  *0.0.1  priority 1  enabled  0 modules (no empty device here (a test component))$'
ok $? "the table: '0 modules (why)'"
RMCA_component_path=$nodev:${RMCA_component_path:-} run rmca_info --json
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = {x["name"]: x for x in d["components"]}
assert c["empty"]["modules"] == 0 and c["empty"]["no_module_reason"].startswith("no empty device"), c
assert c["tcp"]["no_module_reason"] is None, c' "$tmp/out"
ok $? "--json: no_module_reason, null where there are modules"
run rmca_info --parsable
if [ -d /sys/class/infiniband ] || ! has '^component:ib:modules:0$'; then
	echo "ok $((n + 1)) # SKIP this host has RDMA devices, or no ib component"
	n=$((n + 1))
else
	has '^component:ib:no_module_reason:no RDMA device found$' &&
		! has '^component:tcp:no_module_reason:'
	ok $? "ib on a host without RDMA devices: 'no RDMA device found'; tcp, with a module, says nothing"
fi

run rmca_info --parsable --param tcp_port
[ "$rc" -eq 0 ] && has '^param:tcp_port:value:' && ! has '^param:tcp_priority:'
ok $? "--param NAME shows that one parameter"
run rmca_info --parsable --param RMCA_tcp_port
[ "$rc" -eq 0 ] && has '^param:tcp_port:value:' && [ "$(grep -c '^param:[^:]*:value:' "$tmp/out")" -eq 1 ]
ok $? "--param RMCA_NAME too"

# Scripts diff two runs: nothing ephemeral (ports, pids) in the output.
for fmt in --parsable --json; do
	run rmca_info $fmt --param all
	cp "$tmp/out" "$tmp/first"
	run rmca_info $fmt --param all
	[ "$rc" -eq 0 ] && diff "$tmp/first" "$tmp/out" >"$tmp/err"
	ok $? "rmca_info $fmt --param all prints the same twice"
done

# --explain against a live listener. The asking side also has the phantom
# test component, which the listener lacks: its module is skipped, with a
# reason.
# (shm is left out: these facts are about tcp's paths.)
extra=$tmp/plugins
mkdir "$extra" && cp "$plugins/rmca_phantom.so" "$extra/" || exit 99
RMCA_transports=^shm
export RMCA_transports
xplain() {
	RMCA_component_path=$extra:${RMCA_component_path:-} RMCA_tcp_caps=^send_inv \
		run rmca_info "$@" --explain "127.0.0.1:$port"
}
if serve xfer "$tools/rmca_xfer" -s; then
	xplain --parsable
	[ "$rc" -eq 0 ] && has '^explain:status:ok$' && has '^explain:transport:tcp$' &&
		has "^explain:peer:127.0.0.1:$port\$" && has '^explain:peer_local:yes$' &&
		has '^explain:path:put_delivered:native$' &&
		has '^explain:path:send_inv:revoke_msg$' &&
		has '^explain:path_reason:send_inv:..*' &&
		has '^explain:chose:tcp ' && ! has '^explain:note:'
	ok $? "--explain --parsable: transport, peer, path and reason per operation"

	has '^explain:skipped:phantom:phantom0:the passive side has no phantom$'
	ok $? "--explain --parsable: a reason per skipped module"

	xplain --json
	[ "$rc" -eq 0 ] && python3 - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == 0 and d["error"] is None, d
assert d["transport"] == "tcp" and d["peer_local"] is True, d
assert set(d["paths"]) == {"put_delivered", "atomic", "masked_atomic", "send_inv", "get_short"}, d
assert d["paths"]["get_short"]["path"] == "native" and d["paths"]["get_short"]["reason"], d
assert d["paths"]["send_inv"]["path"] == "revoke_msg" and d["paths"]["send_inv"]["reason"], d
assert d["chose"].startswith("tcp "), d
assert any(s["component"] == "phantom" and s["reason"] for s in d["skipped"]), d
assert d["notes"] == [] and "transport tcp" in d["text"], d
PY
	ok $? "--explain --json: the same as fields, and the text"

	"$tools/rmca_xfer" -n 4k -i 1 "127.0.0.1:$port" >/dev/null 2>&1
	reap $?
else
	for i in 1 2 3; do ok 1 "(no listener for --explain)"; done
fi

cport=$(closed_port)
run rmca_info --parsable --explain "127.0.0.1:$cport"
[ "$rc" -eq 1 ] && has '^explain:status:failed$' && has '^explain:error:..*'
ok $? "--explain --parsable to nobody: status failed and the error"
run rmca_info --json --explain "127.0.0.1:$cport"
[ "$rc" -eq 1 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] < 0 and d["error"] and d["transport"] is None, d' "$tmp/out"
ok $? "--explain --json to nobody: a negative status and the error"

# bash completion, as bash-completion would call it
comp=$srcdir/../tools/rmca.bash-completion
complete_words() { # WORDS...: the candidates for the last word
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
		f=$(complete -p "$1" | sed "s/.*-F \([^ ]*\) .*/\1/"); $f;
		printf "%s\n" "${COMPREPLY[@]}"' complete "$comp" "$@"
}
PATH=$tools:$PATH complete_words rmca_info --param tcp_po >"$tmp/out" 2>"$tmp/err"
has '^tcp_port$' && ! has '^tcp_priority$'
ok $? "completion: rmca_info --param completes parameter names"
complete_words rmca_perf -t put_lat,atomic_r >"$tmp/out" 2>"$tmp/err"
has '^put_lat,atomic_rate$'
ok $? "completion: rmca_perf -t completes the last test of a list"
complete_words rmca_xfer --he >"$tmp/out" 2>"$tmp/err"
has '^--help$'
ok $? "completion: options"

finish
