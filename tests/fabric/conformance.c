/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Fabric conformance suite: two processes on 127.0.0.1 through a provider
 * (RR_PROVIDER, default "iwarp"). Every test forks its own peer.
 *
 * Usage: fabric_conformance [group...]   (a test runs when it belongs to
 * every named group; groups: cm ops errors lifecycle stress crc nocrc)
 *
 * Conventions the assertions rely on (from include/rpcrdma/fabric.h):
 *  - every work request completes exactly once (or is covered by a later
 *    signaled one); a QP in error flushes with RR_WC_WR_FLUSH_ERR;
 *  - iWARP Sends and Writes are not acknowledged on the wire, so a Send or
 *    Write that the peer later refuses may already have completed SUCCESS
 *    when the peer's Terminate arrives. The tests therefore follow such a
 *    request with a signaled "fence" RDMA Read, which cannot complete before
 *    the peer processed the request. The peer's error must then be reported
 *    on the first send-queue request not yet retired (the refused request
 *    itself, or the fence), and everything after it flushes. A refused Read
 *    is always still outstanding: it must carry the error itself.
 *  - a Send larger than the posted receive: the receive completes
 *    RR_WC_LOC_LEN_ERR and the connection ends (QP_ERROR or DISCONNECTED).
 */
#include "suite.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

/* ================================================================ table */

struct h_case {
	const char *groups;
	const char *name;
	CMUnitTestFunction fn;
	struct h_params params;
};

static const size_t pd0 = 0, pd1 = 1, pdmax = PDATA_MAX;
static const struct send_shape send_flat = {1, 1}, send_sgl = {3, 2};

#define AE(op, kind) (&(const struct access_error){op, kind})
#define WRITE	     RR_WR_RDMA_WRITE
#define READ	     RR_WR_RDMA_READ

#define OPS(crc, tag)                                                          \
	{"ops " tag,                                                           \
	 "sends of 0 B to 1 MiB from one SGE into one arrive "                 \
	 "intact (" tag ")",                                                   \
	 test_sends,                                                           \
	 {crc, &send_flat}},                                                   \
		{"ops " tag,                                                   \
		 "sends of 0 B to 1 MiB gathered from 3 SGEs and "             \
		 "scattered into 2 arrive intact (" tag ")",                   \
		 test_sends,                                                   \
		 {crc, &send_sgl}},                                            \
		{"ops " tag,                                                   \
		 "send with invalidate reports the key and the window "        \
		 "then refuses a write (" tag ")",                             \
		 test_send_with_invalidate,                                    \
		 {crc, NULL}},                                                 \
		{"ops " tag,                                                   \
		 "a solicited send sets the solicited flag only on its "       \
		 "receive (" tag ")",                                          \
		 test_solicited,                                               \
		 {crc, NULL}},                                                 \
		{"ops " tag,                                                   \
		 "a CQ wait also watching a descriptor returns for it, and "   \
		 "for a completion first (" tag ")",                           \
		 test_cq_wait_fd,                                              \
		 {crc, NULL}},                                                 \
		{"ops " tag,                                                   \
		 "rdma writes of 0 B to 1 MiB land intact before the "         \
		 "following send (" tag ")",                                   \
		 test_writes,                                                  \
		 {crc, NULL}},                                                 \
		{"ops " tag,                                                   \
		 "rdma reads up to 1 MiB at unaligned offsets return the "     \
		 "peer's bytes (" tag ")",                                     \
		 test_reads,                                                   \
		 {crc, NULL}},                                                 \
		{"ops " tag,                                                   \
		 "a window bound over a sub-range gives remote access to "     \
		 "exactly that range (" tag ")",                               \
		 test_mw_sub_range,                                            \
		 {crc, NULL}},                                                 \
		{"ops " tag,                                                   \
		 "local invalidate makes a later remote read fail (" tag ")",  \
		 test_local_invalidate,                                        \
		 {crc, NULL}},                                                 \
		{"ops " tag,                                                   \
		 "a window's next key, advertised by a send posted with its "  \
		 "bind, opens the window (" tag ")",                           \
		 test_reg_send_one_post,                                       \
		 {crc, NULL}},                                                 \
		{"ops " tag,                                                   \
		 "unsignaled sends are retired by the next signaled "          \
		 "one (" tag ")",                                              \
		 test_unsignaled,                                              \
		 {crc, NULL}},                                                 \
	{                                                                      \
		"stress " tag,                                                 \
			"ten thousand mixed work requests complete once "      \
			"each with intact payloads (" tag ")",                 \
			test_stress,                                           \
		{                                                              \
			crc, NULL                                              \
		}                                                              \
	}

static const struct h_case cases[] = {
	{"cm",
	 "connect and accept carry no private data",
	 test_private_data,
	 {0, &pd0}},
	{"cm",
	 "connect and accept carry one byte of private data both ways",
	 test_private_data,
	 {0, &pd1}},
	{"cm",
	 "connect and accept carry max_private_data bytes both ways and "
	 "refuse one more",
	 test_private_data,
	 {0, &pdmax}},
	{"cm",
	 "reject delivers its private data to the connector",
	 test_reject_delivers_private_data,
	 {0, NULL}},
	{"cm",
	 "connect to a port without a listener is unreachable",
	 test_connect_without_listener_is_unreachable,
	 {0, NULL}},
	OPS(0, "nocrc"),
	OPS(RR_QP_CRC, "crc"),
	{"errors",
	 "a send with invalidate of a dead key is refused",
	 test_send_with_invalidate_of_a_dead_key,
	 {0, NULL}},
	{"errors",
	 "a send with invalidate of a region's key is refused",
	 test_send_with_invalidate_of_a_dead_key,
	 {0, "region"}},
	{"errors",
	 "an rdma write to an invalidated window is refused",
	 test_remote_access_error,
	 {0, AE(WRITE, AK_INVALIDATED_MW)}},
	{"errors",
	 "an rdma read from an invalidated window is refused",
	 test_remote_access_error,
	 {0, AE(READ, AK_INVALIDATED_MW)}},
	{"errors",
	 "an rdma write one byte past a window is refused",
	 test_remote_access_error,
	 {0, AE(WRITE, AK_OUT_OF_BOUNDS)}},
	{"errors",
	 "an rdma read one byte past a window is refused",
	 test_remote_access_error,
	 {0, AE(READ, AK_OUT_OF_BOUNDS)}},
	{"errors",
	 "an rdma write to a region of another pd is refused",
	 test_remote_access_error,
	 {0, AE(WRITE, AK_OTHER_PD)}},
	{"errors",
	 "an rdma read from a region of another pd is refused",
	 test_remote_access_error,
	 {0, AE(READ, AK_OTHER_PD)}},
	{"errors",
	 "an rdma write to a region without remote write is refused",
	 test_remote_access_error,
	 {0, AE(WRITE, AK_NO_RIGHTS)}},
	{"errors",
	 "an rdma read from a region without remote read is refused",
	 test_remote_access_error,
	 {0, AE(READ, AK_NO_RIGHTS)}},
	{"errors",
	 "an rdma write to a garbage stag is refused",
	 test_remote_access_error,
	 {0, AE(WRITE, AK_GARBAGE_STAG)}},
	{"errors",
	 "an rdma read from a garbage stag is refused",
	 test_remote_access_error,
	 {0, AE(READ, AK_GARBAGE_STAG)}},
	{"errors",
	 "a send without a posted receive terminates the connection",
	 test_send_without_receive,
	 {0, NULL}},
	{"errors",
	 "a send larger than the posted receive fails that receive with "
	 "LOC_LEN_ERR and ends the connection",
	 test_send_larger_than_receive,
	 {0, NULL}},
	{"lifecycle",
	 "disconnect flushes every posted receive exactly once on both sides",
	 test_disconnect_flushes,
	 {0, NULL}},
	{"lifecycle",
	 "destroying a qp with outstanding work leaves nothing to poll",
	 test_destroy_with_outstanding_work,
	 {0, NULL}},
	{"lifecycle",
	 "posting beyond the queue depth fails until completions are polled",
	 test_queue_depth,
	 {0, NULL}},
	{"lifecycle",
	 "a peer killed mid-stream flushes everything and is reported",
	 test_peer_killed,
	 {0, NULL}},
	{"lifecycle",
	 "a drain after disconnect retires unsignaled sends nothing covered",
	 test_drain_retires_unsignaled,
	 {0, NULL}},
	{"lifecycle",
	 "a reset qp connects again, after a failed or a finished "
	 "connection, and shows nothing of the old one",
	 test_reset_reconnects,
	 {0, NULL}},
	{"lifecycle",
	 "a fenced window refuses its key at once, lets go of its region, "
	 "and binds again under a new key",
	 test_mw_fence,
	 {0, NULL}},
};

static bool in_groups(const char *groups, const char *word)
{
	size_t n = strlen(word);
	const char *p = groups;

	while ((p = strstr(p, word))) {
		if ((p == groups || p[-1] == ' ') && (p[n] == 0 || p[n] == ' '))
			return true;
		p += n;
	}
	return false;
}

/*
 * RR_CONFORMANCE_SKIP: '|'-separated substrings of case names not to run,
 * for what a provider cannot show at all (the caller says why).
 */
static bool skipped(const char *name)
{
	const char *list = getenv("RR_CONFORMANCE_SKIP");
	char pat[128];

	while (list && *list) {
		size_t n = strcspn(list, "|");

		if (n && n < sizeof(pat)) {
			memcpy(pat, list, n);
			pat[n] = 0;
			if (strstr(name, pat)) {
				printf("skipped (RR_CONFORMANCE_SKIP): %s\n",
				       name);
				return true;
			}
		}
		list += n + (list[n] == '|');
	}
	return false;
}

int main(int argc, char **argv)
{
	static struct CMUnitTest tests[sizeof(cases) / sizeof(cases[0])];
	static char group[128] = "conformance";
	size_t n = 0;
	int rc;
	const char *prov = getenv("RR_PROVIDER");

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool all = true;

		for (int a = 1; a < argc; a++)
			all = all && in_groups(cases[i].groups, argv[a]);
		if (!all || skipped(cases[i].name))
			continue;
		tests[n].name = cases[i].name;
		tests[n].test_func = cases[i].fn;
		tests[n].setup_func = h_setup;
		tests[n].teardown_func = h_teardown;
		tests[n].initial_state = (void *)&cases[i].params;
		n++;
	}
	for (int a = 1; a < argc; a++) {
		strncat(group, " ", sizeof(group) - strlen(group) - 1);
		strncat(group, argv[a], sizeof(group) - strlen(group) - 1);
	}
	printf("provider %s\n", prov && *prov ? prov : "iwarp");
	if (!n) {
		fprintf(stderr, "no test matches\n");
		return 1;
	}
	rc = _cmocka_run_group_tests(group, tests, n, NULL, NULL);
	return rc == 0 && h_peer_tsan_reported ? 66 : rc;
}
