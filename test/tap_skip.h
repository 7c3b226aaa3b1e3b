/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A skipped case says why. cmocka's skip() writes no reason, so TAP_SKIP
 * prints "# skip: WHY" on the TAP stream first; tap-cmocka.awk makes the
 * case "ok N - name # SKIP WHY", and fails a skip that gave no reason.
 * Include after <cmocka.h>.
 */
#ifndef RMCA_TAP_SKIP_H
#define RMCA_TAP_SKIP_H

#define TAP_SKIP(...)                                                          \
	do {                                                                   \
		print_message("# skip: " __VA_ARGS__);                         \
		print_message("\n");                                           \
		skip();                                                        \
	} while (0)

#endif
