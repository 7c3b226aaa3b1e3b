/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the parameter parsers: the params.conf reader and
 * rmca_param_parse / rmca_list_* / rmca_edit_distance.
 *
 * Not built by make (configure has no --enable-fuzz yet). From the top of
 * the source tree:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	-Iinclude -Iframework test/fuzz_params.c \
 *	framework/params.c framework/list.c framework/log.c -o fuzz_params
 *   ./fuzz_params -close_fd_mask=2 -max_total_time=60 CORPUS_DIR
 *
 * (-close_fd_mask=2 silences the log lines every malformed input causes;
 * libFuzzer's own report still shows.)
 *
 * The first input byte picks what is fuzzed: even, the rest is a whole
 * params.conf (read through RMCA_param_file from a memfd); odd, the rest is
 * one value, parsed as the type picked by the byte's upper bits.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create, environ */
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "params.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const modes[] = {"auto", "device", "cpu", NULL};

static const struct rmca_param_def defs[] = {
	{.name = "b", .type = RMCA_PARAM_BOOL, .def = "on"},
	{.name = "i", .type = RMCA_PARAM_INT, .def = "5", .min = 0, .max = 100},
	{.name = "s", .type = RMCA_PARAM_SIZE, .def = "4k"},
	{.name = "str", .type = RMCA_PARAM_STRING},
	{.name = "e", .type = RMCA_PARAM_ENUM, .values = modes},
	{.name = "l", .type = RMCA_PARAM_LIST, .def = "^iwarp"},
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char name[256];
	size_t i = 0;

	/* Only the fuzzed file may feed the parameters. */
	while (environ[i]) {
		const char *eq = strchr(environ[i], '=');
		size_t n = eq ? (size_t)(eq - environ[i]) : 0;

		if (!strncmp(environ[i], "RMCA_", 5) && n < sizeof(name)) {
			memcpy(name, environ[i], n);
			name[n] = '\0';
			unsetenv(name);
			i = 0;
			continue;
		}
		i++;
	}
	setenv("XDG_CONFIG_HOME", "/nonexistent-rmca-fuzz", 1);
	return 0;
}

static void fuzz_file(const uint8_t *data, size_t size)
{
	struct rmca_params *ps;
	char path[64];
	size_t i;
	int fd;

	fd = memfd_create("params.conf", MFD_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	setenv("RMCA_param_file", path, 1);
	if (!rmca_params_create(&ps, NULL)) {
		for (i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
			rmca_params_register(ps, "fuzz", &defs[i]);
		rmca_params_check_unknown(ps);
		for (i = 0; rmca_params_at(ps, i); i++)
			if (!rmca_params_at(ps, i)->text)
				abort();
		rmca_params_destroy(ps);
	}
	unsetenv("RMCA_param_file");
	close(fd);
}

static void fuzz_value(uint8_t sel, const uint8_t *data, size_t size)
{
	const struct rmca_param_def *def;
	struct rmca_param p;
	char err[256], *text, *b;
	size_t half;

	text = malloc(size + 1);
	if (!text)
		return;
	memcpy(text, data, size);
	text[size] = '\0';

	def = &defs[(sel >> 1) % (sizeof(defs) / sizeof(defs[0]))];
	memset(&p, 0, sizeof(p));
	if (rmca_param_parse(def, text, &p, err, sizeof(err)) && !err[0])
		abort(); /* a refusal always says what is accepted */
	if (def->type == RMCA_PARAM_ENUM &&
	    !rmca_param_parse(def, text, &p, NULL, 0) &&
	    (p.v.e < 0 || p.v.e > 2))
		abort();

	/* A list that does not validate selects nothing. */
	if (rmca_list_validate(text, err, sizeof(err)) &&
	    rmca_list_selects(text, "tcp"))
		abort();

	/* Distance between the two halves: symmetric, bounded by length. */
	if (size <= 512) {
		half = strlen(text) / 2;
		b = strdup(text + half);
		if (b) {
			text[half] = '\0';
			if (rmca_edit_distance(text, b) !=
				    rmca_edit_distance(b, text) ||
			    rmca_edit_distance(text, b) >
				    (half > strlen(b) ? half : strlen(b)))
				abort();
			free(b);
		}
	}
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] & 1)
		fuzz_value(data[0], data + 1, size - 1);
	else
		fuzz_file(data + 1, size - 1);
	return 0;
}
