// SPDX-License-Identifier: BSD-3-Clause
/*
 * The core's route lookup (core op route) on this host's own table: the
 * interface an address is reached through, the owner of a local address
 * (not lo), and refusals of what is no address.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include <rmca.h>

#include "route.h"
#include "tap_skip.h"

static struct sockaddr_in v4(const char *a)
{
	struct sockaddr_in s = {.sin_family = AF_INET};

	assert_int_equal(inet_pton(AF_INET, a, &s.sin_addr), 1);
	return s;
}

static void loopback_is_reached_through_lo(void **state)
{
	struct sockaddr_in d = v4("127.0.0.1");
	struct sockaddr_in6 d6 = {.sin6_family = AF_INET6};
	unsigned idx = 0;
	char why[128];

	(void)state;
	assert_int_equal(rmca_route(NULL, (struct sockaddr *)&d, NULL, &idx,
				    why, sizeof(why)),
			 0);
	assert_int_equal(idx, if_nametoindex("lo"));
	/* an IPv4 peer on a dual-stack socket is looked up as IPv4 */
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &d6.sin6_addr);
	idx = 0;
	assert_int_equal(rmca_route(NULL, (struct sockaddr *)&d6, NULL, &idx,
				    why, sizeof(why)),
			 0);
	assert_int_equal(idx, if_nametoindex("lo"));
}

/* The first IPv4 address off lo, its interface into name; false if none. */
static bool other_address(struct sockaddr_in *a, char *name)
{
	struct ifaddrs *ifs, *i;
	bool found = false;

	if (getifaddrs(&ifs))
		return false;
	for (i = ifs; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    !strcmp(i->ifa_name, "lo") || !(i->ifa_flags & IFF_UP))
			continue;
		memcpy(a, i->ifa_addr, sizeof(*a));
		snprintf(name, IF_NAMESIZE, "%s", i->ifa_name);
		found = true;
	}
	freeifaddrs(ifs);
	return found;
}

static void a_local_address_is_its_owners(void **state)
{
	char name[IF_NAMESIZE], why[128];
	struct sockaddr_in a;
	unsigned idx = 0;

	(void)state;
	if (!other_address(&a, name))
		TAP_SKIP("no IPv4 address off lo on this host");
	/* the kernel's answer is lo; the device is the address's owner */
	assert_int_equal(rmca_route(NULL, (struct sockaddr *)&a, NULL, &idx,
				    why, sizeof(why)),
			 0);
	assert_int_equal(idx, if_nametoindex(name));
	/* from its own address, too */
	idx = 0;
	assert_int_equal(rmca_route(NULL, (struct sockaddr *)&a,
				    (struct sockaddr *)&a, &idx, why,
				    sizeof(why)),
			 0);
	assert_int_equal(idx, if_nametoindex(name));
}

static void what_is_no_address_is_refused(void **state)
{
	struct sockaddr_in d = v4("127.0.0.1");
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	struct sockaddr un = {.sa_family = AF_UNIX};
	unsigned idx = 7;

	(void)state;
	assert_int_equal(rmca_route(NULL, &un, NULL, &idx, NULL, 0),
			 RMCA_ERR_INVALID);
	/* a source of another family than the destination */
	assert_int_equal(rmca_route(NULL, (struct sockaddr *)&d,
				    (struct sockaddr *)&s6, &idx, NULL, 0),
			 RMCA_ERR_INVALID);
	assert_int_equal(rmca_route(NULL, NULL, NULL, &idx, NULL, 0),
			 RMCA_ERR_INVALID);
	assert_int_equal(idx, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loopback_is_reached_through_lo),
		cmocka_unit_test(a_local_address_is_its_owners),
		cmocka_unit_test(what_is_no_address_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
