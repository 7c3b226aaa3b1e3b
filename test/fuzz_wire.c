// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer target for the parsers that read bytes from the network: the
 * bootstrap hello and the control channel's messages. Not built by make;
 * from a configured build tree:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *     -I$SRC/include -I$SRC/framework -I. $SRC/test/fuzz_wire.c \
 *     $SRC/framework/wire.c $SRC/framework/ctrl_wire.c -o fuzz_wire
 *   ./fuzz_wire -max_total_time=60
 */
#include <stddef.h>
#include <stdint.h>

#include "ctrl.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rmca_hello h;
	struct rmca_ctrl_msg m;
	uint8_t out[RMCA_HELLO_MAX];
	char why[256];

	if (!rmca_hello_decode(data, size, &h, why, sizeof(why))) {
		/* what decodes must encode back to the same bytes */
		int n = rmca_hello_encode(&h, out, sizeof(out));

		if (n != (int)size || __builtin_memcmp(out, data, size))
			__builtin_trap();
	}
	if (!rmca_ctrl_decode(data, size, &m, why, sizeof(why))) {
		/* and a control message too (gets carry their data) */
		int n = rmca_ctrl_encode(&m, out, sizeof(out));

		if (n != (int)size + 4 || __builtin_memcmp(out + 4, data, size))
			__builtin_trap();
	}
	return 0;
}
