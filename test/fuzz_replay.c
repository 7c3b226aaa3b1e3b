// SPDX-License-Identifier: BSD-3-Clause
/*
 * Runs a libFuzzer target without libFuzzer, so that make check exercises
 * it with any compiler: every file named on the command line, then
 * FUZZ_REPLAY_RUNS (default 3000) inputs made from the target's seeds
 * (rmca_fuzz_seed, if it has any) by a fixed-seed sequence of mutations,
 * the same on every run. A crash or trap fails the test. Speaks TAP.
 *
 *   fuzz_X_replay [FILE]...     replay files, then the mutations
 *   fuzz_X_replay --seeds DIR   write the seeds into DIR (a libFuzzer corpus)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t rmca_fuzz_seed(unsigned i, uint8_t *buf, size_t cap)
	__attribute__((weak));

#define MAX_INPUT 4096

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t seed(unsigned i, uint8_t *buf)
{
	return rmca_fuzz_seed ? rmca_fuzz_seed(i, buf, MAX_INPUT) : 0;
}

/* A few edits of the kinds libFuzzer makes. */
static size_t mutate(uint8_t *buf, size_t len)
{
	static const uint64_t values[] = {0,	1,     0x7f,	   0x80,
					  0xff, ~0ull, 1ull << 48, 1ull << 63};
	int edits = 1 + (int)(next() % 4);

	for (int e = 0; e < edits; e++) {
		size_t at = len ? next() % len : 0;
		uint64_t v = values[next() % 8];

		switch (next() % 6) {
		case 0: /* flip a bit */
			if (len)
				buf[at] ^= (uint8_t)(1u << (next() % 8));
			break;
		case 1: /* a random byte */
			if (len)
				buf[at] = (uint8_t)next();
			break;
		case 2: /* an interesting 64-bit value */
			if (len >= 8) {
				at = next() % (len - 7);
				memcpy(buf + at, &v, 8);
			}
			break;
		case 3: /* cut the tail */
			len = at;
			break;
		case 4: /* duplicate a chunk at the end */
			if (len && len < MAX_INPUT) {
				size_t n = 1 + next() % (len - at);

				if (n > MAX_INPUT - len)
					n = MAX_INPUT - len;
				memmove(buf + len, buf + at, n);
				len += n;
			}
			break;
		default: /* random bytes appended */
			for (int i = (int)(next() % 80); i && len < MAX_INPUT;
			     i--)
				buf[len++] = (uint8_t)next();
			break;
		}
	}
	return len;
}

static int write_seeds(const char *dir)
{
	uint8_t buf[MAX_INPUT];
	size_t len;

	for (unsigned i = 0; (len = seed(i, buf)); i++) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/seed-%u", dir, i);
		f = fopen(path, "wb");
		if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
			perror(path);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static uint8_t buf[MAX_INPUT];
	const char *env = getenv("FUZZ_REPLAY_RUNS");
	long runs = env ? atol(env) : 3000;
	unsigned nseeds = 0;
	int files = 0;

	if (argc == 3 && !strcmp(argv[1], "--seeds"))
		return write_seeds(argv[2]);
	printf("1..2\n");
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		size_t len;

		if (!f) {
			perror(argv[i]);
			printf("not ok 1 - replay of the files given\n");
			return 1;
		}
		len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, len);
		files++;
	}
	printf("ok 1 - %d file(s) replayed\n", files);
	while (seed(nseeds, buf))
		nseeds++;
	for (long r = 0; r < runs; r++) {
		size_t len;

		if (nseeds) {
			len = seed((unsigned)(next() % nseeds), buf);
		} else {
			len = next() % 256;
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)next();
		}
		if (r >= nseeds) /* each seed once as it is */
			len = mutate(buf, len);
		LLVMFuzzerTestOneInput(buf, len);
	}
	printf("ok 2 - %ld mutated inputs from %u seed(s)\n", runs, nseeds);
	return 0;
}
