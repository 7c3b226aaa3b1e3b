#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# What make install gives a user (issue 13, items 1, 2 and 7): the library,
# headers, rmca.pc and the CMake package, the manual pages, the examples.
# Installs the build tree under a DESTDIR in a scratch directory, then builds
# the installed examples out of tree with pkg-config (also --static) and with
# CMake's find_package(rmca), and runs what was built against each other.
# Speaks TAP.

set -u
. "${RMCATEST_SRCDIR:-.}/tools_lib.sh"

echo "1..17"

dest=$tmp/dest
# The prefix and libdir this build installs to, as its Makefile says.
mkvar() { sed -n "s|^$1 = ||p" "$top/Makefile" | head -1; }
prefix=$(mkvar prefix)
root=$dest$prefix

${MAKE:-make} -s -C "$top" install DESTDIR="$dest" >"$tmp/install.log" 2>&1
st=$?
cp "$tmp/install.log" "$tmp/err"
: >"$tmp/out"
ok $st "make install DESTDIR=... succeeds"
: >"$tmp/err"

# Where the files went: find them rather than assume lib or lib64.
pc=$(find "$dest" -name rmca.pc | head -1)
cfg=$(find "$dest" -name rmcaConfig.cmake | head -1)
lib=$(find "$dest" -name 'librmca.so' | head -1)
comps=$(find "$dest" -name 'rmca_tcp.so' | head -1)
find "$dest" -type f -o -type l | sed "s|^$dest||" | sort >"$tmp/out"

[ -n "$pc" ] && [ -n "$lib" ] && [ -n "$comps" ] && [ -f "$root/include/rmca.h" ] &&
	[ -f "$root/include/rmca/info.h" ]
ok $? "library, components, headers and rmca.pc are installed"

[ -n "$cfg" ] && [ -f "$(dirname "$cfg")/rmcaConfigVersion.cmake" ] &&
	[ "$(dirname "$(dirname "$cfg")")" = "$(dirname "$(dirname "$pc")")/cmake" ]
ok $? "the CMake package is installed beside the pkg-config file"

mans=$root/share/man
[ -f "$mans/man7/rmca.7" ] && [ -f "$mans/man1/rmca_info.1" ] &&
	[ -f "$mans/man1/rmca_perf.1" ] && [ -f "$mans/man1/rmca_xfer.1" ] &&
	[ -f "$mans/man3/rmca_send.3" ] && grep -qx '.so man3/rmca_send.3' "$mans/man3/rmca_put.3" &&
	MANPATH=$mans man -w rmca_put >/dev/null 2>&1
ok $? "manual pages in sections 1, 3 and 7, each call's name finds its page"

bc=$root/share/bash-completion/completions
[ -f "$bc/rmca_info" ] && [ "$(readlink "$bc/rmca_perf")" = rmca_info ] &&
	[ "$(readlink "$bc/rmca_xfer")" = rmca_info ] &&
	grep -q 'complete -F _rmca_perf rmca_perf' "$bc/rmca_info"
ok $? "bash completion where bash-completion looks, under each tool's name"

exdir=$root/share/doc/rmca/examples
[ -f "$exdir/service.c" ] && [ -f "$exdir/rpc_client.c" ] && [ -f "$exdir/service.h" ]
ok $? "the examples are installed with the documentation"

# Out of tree: a copy of the installed examples, nothing from the build.
work=$tmp/user
mkdir -p "$work" && cp "$exdir"/*.c "$exdir"/*.h "$work/"
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
pkgc() { pkg-config --define-prefix "$@" rmca; }
CC=${CC:-cc}
# The flags the library was built with: a user links an instrumented
# library (configure CFLAGS=-fsanitize=...) with the same instrumentation.
ucflags=$(mkvar CFLAGS)
uldflags=$(mkvar LDFLAGS)

[ "$(pkgc --modversion)" = "$("$tools/rmca_info" --version | sed -n 's/.*(rmca) //p')" ]
ok $? "pkg-config --modversion rmca is the version built"

# shellcheck disable=SC2046
$CC $ucflags -o "$work/service" "$work/service.c" $uldflags $(pkgc --cflags --libs) >"$tmp/err" 2>&1 &&
	$CC $ucflags -o "$work/rpc_client" "$work/rpc_client.c" $uldflags $(pkgc --cflags --libs) >>"$tmp/err" 2>&1
ok $? "the examples build with pkg-config --cflags --libs rmca"

# A component out of tree: the ABI and the support headers, installed,
# are all it needs (-fsyntax-only: a component is a plugin, not a program).
cat >"$work/comp.c" <<'C'
#define _GNU_SOURCE 1
#include <sys/socket.h>
#include <rmca/component.h>
#include <rmca/support/clock.h>
#include <rmca/support/container.h>
#include <rmca/support/list.h>
#include <rmca/support/names.h>
#include <rmca/support/sockio.h>
#include <rmca/support/syscall.h>
struct my_module {
	struct rmca_list link;
	struct rmca_module base;
};
int my_check(struct rmca_module *m, int fd);
int my_check(struct rmca_module *m, int fd)
{
	struct my_module *mm = rmca_container_of(m, struct my_module, base);
	char b[4];

	return rmca_list_linked(&mm->link) && rmca_names_has("a,b", "a") &&
	       !rmca_recv_full(fd, b, sizeof(b), rmca_now_ms() + 1000) &&
	       rmca_libc_own((void *)send) &&
	       rmca_sys(SYS_getpid, 0, 0, 0, 0, 0, 0) > 0;
}
C
# shellcheck disable=SC2046
$CC $ucflags -Wall -Wextra -Werror -fsyntax-only "$work/comp.c" $(pkgc --cflags) >"$tmp/err" 2>&1
ok $? "a component builds on the installed rmca/component.h and rmca/support/ headers"

# shellcheck disable=SC2046
$CC $ucflags -o "$work/use_once_client" "$work/use_once_client.c" $uldflags $(pkgc --static --cflags --libs) \
	>"$tmp/err" 2>&1 && pkgc --static --libs | grep -q -e '-lltdl'
ok $? "pkg-config --static gives a line that links (with librmca's own dependencies)"

if [ -f "$(dirname "$lib")/librmca.a" ]; then
	# shellcheck disable=SC2046
	$CC $ucflags -o "$work/rma_static" "$work/rma_client.c" $uldflags $(pkgc --static --cflags) \
		"$(dirname "$lib")/librmca.a" $(pkgc --static --libs-only-other --libs-only-l | sed 's/-lrmca//') \
		>"$tmp/err" 2>&1 && ! ldd "$work/rma_static" | grep -q librmca
	ok $? "the static archive links with pkg-config --static's libraries"
else
	echo "ok $((n + 1)) # SKIP no librmca.a (configure --enable-static builds one)"
	n=$((n + 1))
fi

# CMake: find_package(rmca), the imported target rmca::rmca.
if command -v cmake >/dev/null 2>&1; then
	mkdir -p "$work/cm" && cat >"$work/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.13)
project(rmca_user C)
find_package(rmca 0.1 REQUIRED)
add_executable(rma_client ../rma_client.c)
target_link_libraries(rma_client PRIVATE rmca::rmca)
CM
	(cd "$work/cm" && cmake -S . -B build -DCMAKE_PREFIX_PATH="$root" \
		-DCMAKE_C_FLAGS="$ucflags" -DCMAKE_EXE_LINKER_FLAGS="$uldflags" &&
		cmake --build build) >"$tmp/err" 2>&1
	ok $? "a CMake project builds with find_package(rmca) and rmca::rmca"

	mkdir -p "$work/cm2" && sed 's/find_package(rmca 0.1 REQUIRED)/find_package(rmca 9.0 REQUIRED)/' \
		"$work/cm/CMakeLists.txt" >"$work/cm2/CMakeLists.txt"
	(cd "$work/cm2" && cmake -S . -B build -DCMAKE_PREFIX_PATH="$root") >"$tmp/out" 2>&1
	[ $? -ne 0 ] && grep -q 'compatible' "$tmp/out" && grep -q 'requested version "9.0"' "$tmp/out"
	ok $? "find_package(rmca 9.0) is refused by the version file"
	: >"$tmp/out"
else
	for i in 1 2; do
		echo "ok $((n + 1)) # SKIP no cmake"
		n=$((n + 1))
	done
fi

# Run what was built against the installed library and components only.
LD_LIBRARY_PATH=$(dirname "$lib")
RMCA_component_path=$(dirname "$comps")
RMCA_transports=tcp
export LD_LIBRARY_PATH RMCA_component_path RMCA_transports
if serve svc "$work/service" -c 3; then
	cfail=0 # a client that failed may leave the service waiting for it
	"$work/rpc_client" "127.0.0.1:$port" 200 >"$tmp/out" 2>"$tmp/err"
	c=$?
	cfail=$((cfail + c))
	[ $c -eq 0 ] && ldd "$work/rpc_client" | grep -q "$dest" && has '^200 requests answered'
	ok $? "the pkg-config build runs against the installed library"
	"$work/use_once_client" "127.0.0.1:$port" 2 >"$tmp/out" 2>"$tmp/err"
	c=$?
	cfail=$((cfail + c))
	ok $c "the --static build runs"
	if command -v cmake >/dev/null 2>&1; then
		"$work/cm/build/rma_client" "127.0.0.1:$port" >"$tmp/out" 2>"$tmp/err"
		c=$?
		cfail=$((cfail + c))
		[ $c -eq 0 ] && has 'read back: equal'
		ok $? "the CMake build runs"
	else
		# the service waits for three clients
		"$work/rpc_client" "127.0.0.1:$port" 10 >/dev/null 2>&1
		echo "ok $((n + 1)) # SKIP no cmake"
		n=$((n + 1))
	fi
	reap "$cfail"
	ok $src "the service served them and exited"
else
	for i in 1 2 3 4; do ok 1 "(the installed service did not start)"; done
fi

finish
