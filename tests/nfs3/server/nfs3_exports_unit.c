/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The exports file parser (src/nfs3/server/exports.c) alone: what each
 * client form admits and with which rule, options and their defaults,
 * and bad input refused with the line and the option named, lines and
 * tables over their bounds included.
 */
#include "nfs3/server/exports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static char err[512];

static int parse(const char *text, struct rr_nfs3_exports **t)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int rc;

	assert_non_null(f);
	*t = NULL;
	rc = rr__nfsd_exports_parse(f, "exports", t, err, sizeof(err));
	fclose(f);
	return rc;
}

/* Parses text, which must fail with "exports:LINE: ..." naming what. */
static void refused(const char *text, unsigned line, const char *what)
{
	struct rr_nfs3_exports *t;
	char want[32];

	assert_int_equal(parse(text, &t), -EINVAL);
	assert_null(t);
	snprintf(want, sizeof(want), "exports:%u: ", line);
	if (strncmp(err, want, strlen(want)) || !strstr(err, what))
		fail_msg("for \"%.60s\": got \"%s\", want %s...%s", text, err,
			 want, what);
}

static struct sockaddr_storage peer(const char *a)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;

	if (inet_pton(AF_INET, a, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
	} else {
		assert_int_equal(inet_pton(AF_INET6, a, &v6->sin6_addr), 1);
		v6->sin6_family = AF_INET6;
	}
	return ss;
}

static const struct nfsd_rule *match(const struct nfsd_export *e, const char *a)
{
	struct sockaddr_storage ss = peer(a);

	return rr__nfsd_export_match(e, (struct sockaddr *)&ss);
}

static void clients_match_the_most_specific_rule(void **state)
{
	struct rr_nfs3_exports *t;
	const struct nfsd_export *e;
	const struct nfsd_rule *r;

	(void)state;
	assert_int_equal(parse("# a comment\n"
			       "\n"
			       "/srv/a  *(ro) 10.0.0.0/8(rw) 10.1.2.3(rw,"
			       "no_root_squash)   # trailing comment\n"
			       "/srv/b 192.168.0.0/255.255.0.0(rw) "
			       "2001:db8::/32(rw,all_squash,anonuid=7,"
			       "anongid=8)\n",
			       &t),
			 0);
	assert_int_equal(t->n, 2);
	e = &t->ex[0];
	assert_string_equal(e->path, "/srv/a");
	assert_int_equal(e->nrules, 3);
	r = match(e, "10.1.2.3");
	assert_non_null(r);
	assert_string_equal(r->spec, "10.1.2.3");
	assert_false(r->pol.ro);
	assert_int_equal(r->pol.squash, NFSD_SQUASH_NONE);
	r = match(e, "10.9.9.9");
	assert_string_equal(r->spec, "10.0.0.0/8");
	assert_int_equal(r->pol.squash, NFSD_SQUASH_ROOT); /* default */
	r = match(e, "192.0.2.1");
	assert_string_equal(r->spec, "*");
	assert_true(r->pol.ro);
	r = match(e, "::ffff:10.1.2.3"); /* v4-mapped is the v4 client */
	assert_string_equal(r->spec, "10.1.2.3");

	e = &t->ex[1];
	assert_non_null(match(e, "192.168.77.1"));
	assert_null(match(e, "192.169.0.1"));
	assert_null(match(e, "10.1.2.3"));
	r = match(e, "2001:db8:1::5");
	assert_non_null(r);
	assert_int_equal(r->pol.squash, NFSD_SQUASH_ALL);
	assert_int_equal(r->pol.anon_uid, 7);
	assert_int_equal(r->pol.anon_gid, 8);
	assert_null(match(e, "2001:db9::5"));
	rr_nfs3_exports_free(t);
}

static void defaults_quotes_continuations_and_hosts(void **state)
{
	struct rr_nfs3_exports *t;
	const struct nfsd_rule *r;

	(void)state;
	assert_int_equal(parse("\"/srv/with space\" -rw,no_root_squash \\\n"
			       "   10.0.0.1 10.0.0.2(ro) localhost\n"
			       "/plain 127.0.0.1",
			       &t),
			 0); /* no newline at the end of the file */
	assert_int_equal(t->n, 2);
	assert_string_equal(t->ex[0].path, "/srv/with space");
	r = match(&t->ex[0], "10.0.0.1");
	assert_false(r->pol.ro); /* the line's defaults */
	assert_int_equal(r->pol.squash, NFSD_SQUASH_NONE);
	r = match(&t->ex[0], "10.0.0.2");
	assert_true(r->pol.ro); /* its own options on top */
	assert_int_equal(r->pol.squash, NFSD_SQUASH_NONE);
	r = match(&t->ex[0], "127.0.0.1"); /* localhost, resolved */
	assert_non_null(r);
	assert_string_equal(r->spec, "localhost");
	/* exports(5)'s defaults: ro, root_squash, 65534 */
	r = match(&t->ex[1], "127.0.0.1");
	assert_true(r->pol.ro);
	assert_int_equal(r->pol.squash, NFSD_SQUASH_ROOT);
	assert_int_equal(r->pol.anon_uid, 65534);
	assert_null(match(&t->ex[1], "127.0.0.2"));
	rr_nfs3_exports_free(t);
}

static void bad_input_names_line_and_option(void **state)
{
	(void)state;
	refused("/a *(rw)\n/b *(rw,bogus)\n", 2, "unknown option \"bogus\"");
	refused("/a *(sec=krb5)\n", 1, "sec=krb5");
	refused("/a *(secure)\n", 1, "\"secure\"");
	refused("/a *(anonuid=-1)\n", 1, "anonuid=-1");
	refused("/a *(anonuid=4294967295)\n", 1, "anonuid");
	refused("/a *(anongid=12x)\n", 1, "anongid=12x");
	refused("/a *(rw\n", 1, "bad client");
	refused("/a (rw)\n", 1, "no client");
	refused("/a\n", 1, "no client");
	refused("relative *(rw)\n", 1, "absolute");
	refused("/a *\n\n/a *\n", 3, "exported twice");
	refused("/a @group(rw)\n", 1, "netgroup");
	refused("/a *.example.com(rw)\n", 1, "wildcard");
	refused("/a 10.0.0.0/33\n", 1, "bad network");
	refused("/a 10.0.0.0/255.0.255.0\n", 1, "bad network");
	refused("/a 10.0.0.300/8\n", 1, "bad address");
	refused("/a 2001:zz::1\n", 1, "bad address");
	refused("/a bad!host\n", 1, "bad client");
	refused("/a no-such-host.invalid\n", 1, "not found");
	refused("\"/a *\n", 1, "unterminated quote");
	refused("# nothing\n\n", 2, "no export");
	refused("", 0, "no export");
}

static void bounds_are_the_parsers_not_the_files(void **state)
{
	size_t big = 2 * NFSD_LINE_MAX;
	char *text = malloc(big + 64);
	size_t n = 0;

	(void)state;
	assert_non_null(text);
	/* one line over the bound, and one made so by continuations */
	memset(text, 'a', big);
	text[0] = '/';
	strcpy(text + big, " *\n");
	refused(text, 1, "line longer");
	n = 0;
	n += (size_t)sprintf(text + n, "/a \\\n");
	while (n < NFSD_LINE_MAX + NFSD_LINE_MAX / 4)
		n += (size_t)sprintf(text + n, "10.0.0.1 \\\n");
	strcpy(text + n, "*\n");
	refused(text, 1, "line longer");
	free(text);

	/* rules per export */
	text = malloc(NFSD_RULES_MAX * 16 + 64);
	assert_non_null(text);
	n = (size_t)sprintf(text, "/a");
	for (int i = 0; i <= NFSD_RULES_MAX; i++)
		n += (size_t)sprintf(text + n, " 10.0.%d.%d", i / 256, i % 256);
	strcpy(text + n, "\n");
	refused(text, 1, "more than");
	free(text);

	/* exports per table */
	text = malloc((NFSD_EXPORTS_MAX + 1) * 16 + 1);
	assert_non_null(text);
	n = 0;
	for (int i = 0; i <= NFSD_EXPORTS_MAX; i++)
		n += (size_t)sprintf(text + n, "/e%d *\n", i);
	refused(text, NFSD_EXPORTS_MAX + 1, "more than");
	free(text);
}

/* The backend options are the export's, whichever client names them. */
static void backend_options_are_the_exports(void **state)
{
	struct rr_nfs3_exports *t;
	const struct nfsd_be_conf *b;

	(void)state;
	assert_int_equal(
		parse("/plain *(rw)\n"
		      "/c -backend=cephfs,ceph_conf=/e/c.conf "
		      "10.0.0.1(rw,ceph_id=nfs,"
		      "ceph_fs=fs1) 10.0.0.2(ceph_path=/x/y,ceph_id=nfs)\n",
		      &t),
		0);
	assert_int_equal(t->ex[0].be.kind, NFSD_BE_LOCAL);
	assert_null(t->ex[0].be.ceph_conf);
	b = &t->ex[1].be;
	assert_int_equal(b->kind, NFSD_BE_CEPHFS);
	assert_string_equal(b->ceph_conf, "/e/c.conf");
	assert_string_equal(b->ceph_id, "nfs");
	assert_string_equal(b->ceph_fs, "fs1");
	assert_string_equal(b->ceph_path, "/x/y");
	rr_nfs3_exports_free(t);

	refused("/c *(backend=nfs)\n", 1, "backend=nfs");
	refused("/c *(ceph_fs=a)\n", 1, "need backend=cephfs");
	refused("/c 10.0.0.1(backend=cephfs,ceph_id=x) 10.0.0.2(ceph_id=y)\n",
		1, "ceph_id=y");
	refused("/c *(backend=cephfs,ceph_path=rel)\n", 1, "ceph_path=rel");
	refused("/c *(backend=cephfs,ceph_conf=)\n", 1, "ceph_conf=");
}

static void a_missing_file_is_named(void **state)
{
	struct rr_nfs3_exports *t = NULL;

	(void)state;
	assert_int_equal(rr_nfs3_exports_load("/nonexistent/exports", &t, err,
					      sizeof(err)),
			 -ENOENT);
	assert_null(t);
	assert_non_null(strstr(err, "/nonexistent/exports"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(clients_match_the_most_specific_rule),
		cmocka_unit_test(defaults_quotes_continuations_and_hosts),
		cmocka_unit_test(bad_input_names_line_and_option),
		cmocka_unit_test(bounds_are_the_parsers_not_the_files),
		cmocka_unit_test(backend_options_are_the_exports),
		cmocka_unit_test(a_missing_file_is_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
