/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "job_util.h"

FILE *out;
int failures;

void verdict(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		fprintf(out, "ok %s\n", name);
	} else {
		failures++;
		fprintf(out, "not ok %s: ", name);
		va_start(ap, fmt);
		vfprintf(out, fmt, ap);
		va_end(ap);
		fprintf(out, "\n");
	}
	fflush(out);
}


int job_dial(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}
