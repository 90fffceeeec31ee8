// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nfs:// URLs as libnfs writes them (its README: "nfs://server[:port]/path
 * [?arg=val[&arg=val]*]"), plus our proto= and provider= arguments.
 *
 * The path is percent-decoded and normalised lexically: empty and "."
 * components go, ".." removes the one before it, and a ".." above the
 * root is refused rather than silently clamped, because it most likely
 * means the user meant another export.
 */
#include <rpcrdma/nfs3.h>

#include "base/alloc.h"
#include "nfsc.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SCHEME "nfs://"

/* -EINVAL, with rr_nfs_error naming the part of the URL that is wrong. */
static int bad(const char *what, const char *part, size_t len, const char *why)
{
	return rr__nfsc_fail(-EINVAL, "bad URL: %s '%.*s' %s", what,
			     (int)(len > 200 ? 200 : len), part, why);
}

static int parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!len || len > 20)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > max)
			return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_port(const char *what, const char *s, size_t len,
		      uint16_t *out)
{
	uint64_t v;

	if (parse_u64(s, len, 65535, &v) || v == 0)
		return bad(what, s, len, "is not a port (1..65535)");
	*out = (uint16_t)v;
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * Percent-decodes len bytes of s into a new string; a NUL is refused. One
 * byte more than the text needs: an empty path normalises to "/".
 */
static int pct_decode(const char *s, size_t len, char **out)
{
	char *d = rr_malloc(len + 2), *p = d;

	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		int hi, lo;

		if (s[i] != '%') {
			*p++ = s[i];
			continue;
		}
		hi = i + 1 < len ? hexval(s[i + 1]) : -1;
		lo = i + 2 < len ? hexval(s[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(d);
			return bad("path escape", s + i,
				   i + 3 <= len ? 3 : len - i,
				   "is not %XX (or is %00)");
		}
		*p++ = (char)(hi << 4 | lo);
		i += 2;
	}
	*p = '\0';
	*out = d;
	return 0;
}

/* Lexical normalisation in place; -EINVAL for ".." above the root. */
static int normalise(char *path)
{
	char *out = path, *s = path;

	while (*s) {
		char *e;
		size_t n;

		while (*s == '/')
			s++;
		e = strchrnul(s, '/');
		n = (size_t)(e - s);
		if (n == 0 || (n == 1 && s[0] == '.')) {
			s = e;
			continue;
		}
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			if (out == path)
				return -EINVAL;
			while (out > path && *--out != '/')
				;
			s = e;
			continue;
		}
		*out++ = '/';
		memmove(out, s, n);
		out += n;
		s = e;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
	return 0;
}

/* host, host:port, [v6], [v6]:port */
static int parse_server(const char *a, size_t len, char **host, uint16_t *port)
{
	const char *h = a, *colon;
	size_t hlen;

	if (!len)
		return rr__nfsc_fail(-EINVAL, "bad URL: no host after nfs://");
	if (memchr(a, '@', len))
		return bad("authority", a, len, "has a user (no '@' here)");
	if (a[0] == '[') {
		const char *rb = memchr(a, ']', len);

		if (!rb)
			return bad("host", a, len, "lacks its closing ']'");
		if (rb == a + 1)
			return bad("host", a, 2, "is empty");
		h = a + 1;
		hlen = (size_t)(rb - h);
		if (strspn(h, "0123456789abcdefABCDEF:.%") < hlen)
			return bad("host", h, hlen, "is not an IPv6 address");
		colon = rb + 1 < a + len ? rb + 1 : NULL;
		if (colon && *colon != ':')
			return bad("authority", a, len,
				   "has text after ']' that is not ':port'");
	} else {
		colon = memchr(a, ':', len);
		hlen = colon ? (size_t)(colon - a) : len;
		if (!hlen)
			return bad("authority", a, len, "has no host");
		if (strspn(h, "abcdefghijklmnopqrstuvwxyz"
			      "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			      "0123456789-._") < hlen)
			return bad("host", h, hlen,
				   "is not a name or an IPv4 address (IPv6 "
				   "goes in [])");
	}
	if (colon &&
	    parse_port("port", colon + 1, (size_t)(a + len - colon - 1), port))
		return -EINVAL;
	*host = rr_strndup(h, hlen);
	return *host ? 0 : -ENOMEM;
}

/*
 * The server, and after commas those to fail over to (a,b:port,[v6]):
 * a comma never appears in a host name or an IPv6 address.
 */
static int parse_authority(const char *a, size_t len, struct rr_nfs_url *u)
{
	const char *end = a + len, *comma = memchr(a, ',', len);
	int rc = parse_server(a, comma ? (size_t)(comma - a) : len, &u->host,
			      &u->nfsport);

	while (!rc && comma) {
		struct rr_nfs_url_server *s = &u->failover[u->nfailover];
		const char *next = comma + 1;

		if (u->nfailover == RR_NFS_FAILOVER_MAX)
			return bad("authority", a, len,
				   "lists more than 8 servers");
		comma = memchr(next, ',', (size_t)(end - next));
		rc = parse_server(next, (size_t)((comma ? comma : end) - next),
				  &s->host, &s->port);
		if (!rc)
			u->nfailover++;
	}
	return rc;
}

static int set_id(const char *what, const char *v, size_t vlen, int64_t *out)
{
	uint64_t x;

	if (parse_u64(v, vlen, UINT32_MAX, &x))
		return bad(what, v, vlen, "is not a number (0..4294967295)");
	*out = (int64_t)x;
	return 0;
}

static bool key_is(const char *k, size_t klen, const char *name)
{
	return klen == strlen(name) && !memcmp(k, name, klen);
}

static int set_arg(struct rr_nfs_url *u, const char *k, size_t klen,
		   const char *v, size_t vlen)
{
	if (key_is(k, klen, "nfsport"))
		return parse_port("nfsport", v, vlen, &u->nfsport);
	if (key_is(k, klen, "mountport"))
		return parse_port("mountport", v, vlen, &u->mountport);
	if (key_is(k, klen, "nlmport"))
		return parse_port("nlmport", v, vlen, &u->nlmport);
	if (key_is(k, klen, "uid"))
		return set_id("uid", v, vlen, &u->uid);
	if (key_is(k, klen, "gid"))
		return set_id("gid", v, vlen, &u->gid);
	if (key_is(k, klen, "version"))
		return vlen == 1 && v[0] == '3'
			       ? 0
			       : bad("version", v, vlen, "is not 3");
	if (key_is(k, klen, "proto")) {
		if (vlen == 4 && !memcmp(v, "rdma", 4))
			u->proto = RR_NFS_PROTO_RDMA;
		else if (vlen == 3 && !memcmp(v, "tcp", 3))
			u->proto = RR_NFS_PROTO_TCP;
		else
			return bad("proto", v, vlen, "is not rdma or tcp");
		return 0;
	}
	if (key_is(k, klen, "provider")) {
		if (!vlen ||
		    strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_") < vlen)
			return bad(
				"provider", v, vlen,
				"is not a provider name (iwarp, shm, verbs)");
		free(u->provider);
		u->provider = rr_strndup(v, vlen);
		return u->provider ? 0 : -ENOMEM;
	}
	return 0; /* libnfs ignores arguments it does not know */
}

static int parse_query(const char *q, struct rr_nfs_url *u)
{
	while (*q) {
		const char *e = strchrnul(q, '&'), *eq;
		int rc;

		eq = memchr(q, '=', (size_t)(e - q));
		if (e == q) {
			q = *e ? e + 1 : e;
			continue;
		}
		if (!eq || eq == q)
			return bad("argument", q, (size_t)(e - q),
				   "is not name=value");
		rc = set_arg(u, q, (size_t)(eq - q), eq + 1,
			     (size_t)(e - eq - 1));
		if (rc)
			return rc;
		q = *e ? e + 1 : e;
	}
	return 0;
}

static int do_url_parse(const char *url, struct rr_nfs_url *u)
{
	const char *a, *slash, *query;
	size_t plen;
	int rc;

	memset(u, 0, sizeof(*u));
	u->uid = u->gid = -1;
	if (!url || strncasecmp(url, SCHEME, strlen(SCHEME)))
		return rr__nfsc_fail(-EINVAL, "bad URL: it does not start with "
					      "nfs:// (want nfs://host[:port]/"
					      "export/path[?arg=value&...])");
	a = url + strlen(SCHEME);
	query = strchrnul(a, '?');
	slash = memchr(a, '/', (size_t)(query - a));
	if (!slash)
		slash = query; /* nfs://host is the server's root */
	rc = parse_authority(a, (size_t)(slash - a), u);
	if (!rc) {
		plen = (size_t)(query - slash);
		rc = pct_decode(slash, plen, &u->path);
	}
	if (!rc && normalise(u->path))
		rc = bad("path", slash, plen, "goes above the root with '..'");
	if (!rc && *query)
		rc = parse_query(query + 1, u);
	if (rc)
		rr_nfs_url_free(u);
	return rc;
}

int rr_nfs_url_parse(const char *url, struct rr_nfs_url *u)
{
	return NFSC_SAY(do_url_parse(url, u), "bad URL");
}

void rr_nfs_url_free(struct rr_nfs_url *u)
{
	free(u->host);
	free(u->path);
	free(u->provider);
	for (uint32_t i = 0; i < u->nfailover; i++)
		free(u->failover[i].host);
	memset(u, 0, sizeof(*u));
	u->uid = u->gid = -1;
}
