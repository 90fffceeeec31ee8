// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Opening a device by provider name: NULL is the fabric's default, so the
 * RPC-over-RDMA layer above never has to name a provider itself.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <rpcrdma/fabric.h>

static void null_opens_the_default(void **state)
{
	struct rr_device_attr attr;
	struct rr_device *dev = NULL;

	(void)state;
	assert_string_equal(rr_fabric_default_provider(), "iwarp");
	assert_int_equal(rr_device_open(NULL, NULL, &dev), 0);
	assert_int_equal(rr_device_query(dev, &attr), 0);
	assert_string_equal(attr.provider, rr_fabric_default_provider());
	assert_int_equal(rr_device_close(dev), 0);
}

static void faults_wraps_the_default(void **state)
{
	struct rr_device_opts o = {.inner = NULL};
	struct rr_device_attr attr;
	struct rr_device *dev = NULL;

	(void)state;
	assert_int_equal(rr_device_open("faults", &o, &dev), 0);
	assert_int_equal(rr_device_query(dev, &attr), 0);
	assert_string_equal(attr.provider, "faults");
	assert_int_equal(rr_device_close(dev), 0);
}

static void bad_names_and_arguments(void **state)
{
	struct rr_device *dev = NULL;

	(void)state;
	assert_int_equal(rr_device_open("no-such-provider", NULL, &dev),
			 -ENODEV);
	assert_null(dev);
	assert_int_equal(rr_device_open(NULL, NULL, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(null_opens_the_default),
		cmocka_unit_test(faults_wraps_the_default),
		cmocka_unit_test(bad_names_and_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
