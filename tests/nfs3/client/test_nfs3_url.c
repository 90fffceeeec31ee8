/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The NFS client's pure parts: nfs:// URLs as libnfs writes them (ports in
 * the authority and in ?nfsport/?mountport, IPv6 in brackets, our proto=
 * and provider=, normalised paths) and the nfsstat3 -> errno table.
 */
#include <rpcrdma/nfs3.h>

#include <errno.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static struct rr_nfs_url parse_ok(const char *s)
{
	struct rr_nfs_url u;
	int rc = rr_nfs_url_parse(s, &u);

	if (rc)
		fail_msg("'%s' refused: %d", s, rc);
	return u;
}

static void plain_url_gets_defaults(void **state)
{
	struct rr_nfs_url u = parse_ok("nfs://server/export/dir/file");

	(void)state;
	assert_string_equal(u.host, "server");
	assert_string_equal(u.path, "/export/dir/file");
	assert_int_equal(u.proto, RR_NFS_PROTO_RDMA);
	assert_int_equal(u.nfsport, 0);
	assert_int_equal(u.mountport, 0);
	assert_null(u.provider);
	assert_true(u.uid == -1 && u.gid == -1);
	rr_nfs_url_free(&u);
}

static void libnfs_port_arguments_are_read(void **state)
{
	struct rr_nfs_url u = parse_ok(
		"nfs://10.0.0.1/srv?nfsport=2050&mountport=635&version=3"
		"&nlmport=4045");

	(void)state;
	assert_string_equal(u.host, "10.0.0.1");
	assert_string_equal(u.path, "/srv");
	assert_int_equal(u.nfsport, 2050);
	assert_int_equal(u.mountport, 635);
	assert_int_equal(u.nlmport, 4045);
	rr_nfs_url_free(&u);
}

static void port_in_authority_is_the_nfs_port(void **state)
{
	struct rr_nfs_url u = parse_ok("nfs://host:20049/e?proto=tcp");

	(void)state;
	assert_int_equal(u.nfsport, 20049);
	assert_int_equal(u.proto, RR_NFS_PROTO_TCP);
	rr_nfs_url_free(&u);
}

static void ipv6_in_brackets(void **state)
{
	struct rr_nfs_url u = parse_ok("nfs://[::1]:2049/export");
	struct rr_nfs_url v = parse_ok("nfs://[2001:db8::1]/x");

	(void)state;
	assert_string_equal(u.host, "::1");
	assert_int_equal(u.nfsport, 2049);
	assert_string_equal(v.host, "2001:db8::1");
	rr_nfs_url_free(&u);
	rr_nfs_url_free(&v);
}

static void servers_to_fail_over_to(void **state)
{
	struct rr_nfs_url u =
		parse_ok("nfs://a:2050,b,[::2]:7,c.example/export?proto=tcp");
	struct rr_nfs_url v = parse_ok("nfs://only/x");

	(void)state;
	assert_string_equal(u.host, "a");
	assert_int_equal(u.nfsport, 2050);
	assert_int_equal(u.nfailover, 3);
	assert_string_equal(u.failover[0].host, "b");
	assert_int_equal(u.failover[0].port, 0);
	assert_string_equal(u.failover[1].host, "::2");
	assert_int_equal(u.failover[1].port, 7);
	assert_string_equal(u.failover[2].host, "c.example");
	assert_string_equal(u.path, "/export");
	assert_int_equal(v.nfailover, 0);
	rr_nfs_url_free(&u);
	rr_nfs_url_free(&v);
}

static void our_arguments_and_identity(void **state)
{
	struct rr_nfs_url u = parse_ok(
		"nfs://h/e?provider=verbs&proto=rdma&uid=1000&gid=100&foo=bar");

	(void)state;
	assert_string_equal(u.provider, "verbs");
	assert_int_equal(u.proto, RR_NFS_PROTO_RDMA);
	assert_int_equal(u.uid, 1000);
	assert_int_equal(u.gid, 100);
	rr_nfs_url_free(&u);
}

static void paths_are_normalised_and_decoded(void **state)
{
	struct rr_nfs_url a = parse_ok("nfs://h//export/./a//b/../c/");
	struct rr_nfs_url b = parse_ok("nfs://h");
	struct rr_nfs_url c = parse_ok("nfs://h/my%20file%2Fx");
	struct rr_nfs_url d = parse_ok("NFS://h/?nfsport=1");

	(void)state;
	assert_string_equal(a.path, "/export/a/c");
	assert_string_equal(b.path, "/");
	assert_string_equal(c.path, "/my file/x");
	assert_string_equal(d.path, "/");
	assert_int_equal(d.nfsport, 1);
	rr_nfs_url_free(&a);
	rr_nfs_url_free(&b);
	rr_nfs_url_free(&c);
	rr_nfs_url_free(&d);
}

/* Each refused, with rr_nfs_error naming the part that is wrong. */
static void bad_urls_are_refused(void **state)
{
	static const struct {
		const char *url, *says;
	} bad[] = {
		{"", "does not start with nfs://"},
		{"http://h/e", "does not start with nfs://"},
		{"nfs:/h/e", "does not start with nfs://"},
		{"nfs:///e", "no host"},
		{"nfs://h:0/e", "port '0' is not a port"},
		{"nfs://h:65536/e", "port '65536' is not a port"},
		{"nfs://h:x/e", "port 'x'"},
		{"nfs://h:/e", "port ''"},
		{"nfs://[::1/e", "host '[::1' lacks its closing ']'"},
		{"nfs://[]/e", "host '[]' is empty"},
		{"nfs://[::1]x/e", "authority '[::1]x'"},
		{"nfs://user@h/e", "has a user"},
		{"nfs://h o/e", "host 'h o'"},
		{"nfs://h/e?nfsport=", "nfsport ''"},
		{"nfs://h/e?nfsport=-1", "nfsport '-1'"},
		{"nfs://h/e?mountport=70000", "mountport '70000'"},
		{"nfs://h/e?nlmport=0", "nlmport '0'"},
		{"nfs://h/e?proto=udp", "proto 'udp' is not rdma or tcp"},
		{"nfs://h/e?version=4", "version '4' is not 3"},
		{"nfs://h/e?provider=", "provider ''"},
		{"nfs://h/e?uid=abc", "uid 'abc'"},
		{"nfs://h/e?=1", "argument '=1'"},
		{"nfs://h/e?nfsport", "argument 'nfsport' is not name=value"},
		{"nfs://h/../e", "path '/../e' goes above the root"},
		{"nfs://h/e/../../x", "path '/e/../../x'"},
		{"nfs://h/a%2", "path escape '%2'"},
		{"nfs://h/a%zz", "path escape '%zz'"},
		{"nfs://h/a%00b", "path escape '%00'"},
		{"nfs://a,/e", "no host"},
		{"nfs://a,b:0/e", "port '0' is not a port"},
		{"nfs://a,b c/e", "host 'b c'"},
		{"nfs://1,2,3,4,5,6,7,8,9/e", "lists more than 8 servers"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rr_nfs_url u;
		int rc = rr_nfs_url_parse(bad[i].url, &u);

		if (rc != -EINVAL)
			fail_msg("'%s' gave %d, want -EINVAL", bad[i].url, rc);
		if (!strstr(rr_nfs_error(), bad[i].says) ||
		    strncmp(rr_nfs_error(), "bad URL: ", 9))
			fail_msg("'%s' said '%s', want '%s'", bad[i].url,
				 rr_nfs_error(), bad[i].says);
		assert_null(u.host);
		assert_null(u.path);
	}
	assert_int_equal(rr_nfs_url_parse(NULL, &(struct rr_nfs_url){0}),
			 -EINVAL);
}

static void nfsstat3_maps_to_errno(void **state)
{
	static const struct {
		uint32_t st;
		int err;
	} m[] = {
		/* RFC 1813 section 2.6: the wire numbers, not Linux's */
		{0, 0},
		{1, -EPERM},
		{2, -ENOENT},
		{5, -EIO},
		{6, -ENXIO},
		{13, -EACCES},
		{17, -EEXIST},
		{18, -EXDEV},
		{19, -ENODEV},
		{20, -ENOTDIR},
		{21, -EISDIR},
		{22, -EINVAL},
		{27, -EFBIG},
		{28, -ENOSPC},
		{30, -EROFS},
		{31, -EMLINK},
		{63, -ENAMETOOLONG},
		{66, -ENOTEMPTY},
		{69, -EDQUOT},
		{70, -ESTALE},
		{71, -EREMOTE},
		{10001, -ESTALE},
		{10002, -EIO},
		{10003, -EINVAL},
		{10004, -EOPNOTSUPP},
		{10005, -EOVERFLOW},
		{10006, -EREMOTEIO},
		{10007, -EINVAL},
		{10008, -EAGAIN},
		{3, -EIO},
		{99999, -EIO},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (rr_nfs_errno(m[i].st) != m[i].err)
			fail_msg("nfsstat3 %u -> %d, want %d", m[i].st,
				 rr_nfs_errno(m[i].st), m[i].err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_url_gets_defaults),
		cmocka_unit_test(libnfs_port_arguments_are_read),
		cmocka_unit_test(port_in_authority_is_the_nfs_port),
		cmocka_unit_test(ipv6_in_brackets),
		cmocka_unit_test(servers_to_fail_over_to),
		cmocka_unit_test(our_arguments_and_identity),
		cmocka_unit_test(paths_are_normalised_and_decoded),
		cmocka_unit_test(bad_urls_are_refused),
		cmocka_unit_test(nfsstat3_maps_to_errno),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
