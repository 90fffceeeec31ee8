/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The exports file, in the syntax of exports(5) that knfsd's exportfs
 * reads, as far as this server implements it:
 *
 *   # comment (from '#' to the end of the line)
 *   /path  [-defaults]  client[(options)]  client[(options)] ...
 *   "/path with spaces"  client(options)
 *   a line ending in '\' continues on the next
 *
 * client is one of
 *   *                  every client
 *   192.0.2.7          one IPv4 address;   2001:db8::7   one IPv6 address
 *   10.0.0.0/8         a network by prefix length, or 10.0.0.0/255.0.0.0
 *   2001:db8::/32      an IPv6 network
 *   host.example       a host name, resolved when the file is read (each
 *                      of its addresses, at most 8)
 * Not supported, and refused by name: @netgroup, wildcards in host names
 * (*.example), gss/krb5 clients.
 *
 * options (comma-separated; "-defaults" after the path sets them for the
 * clients of that line, each client's own options apply on top):
 *   ro (default)        modifying procedures get NFS3ERR_ROFS
 *   rw                  modifications allowed (as the file modes allow)
 *   root_squash (default)  uid 0 and gid 0 act as anonuid/anongid
 *   no_root_squash      uid 0 is root
 *   all_squash          every uid and gid act as anonuid/anongid
 *   no_all_squash       undoes all_squash (back to root_squash)
 *   anonuid=N anongid=N the anonymous ids (default 65534), 0..4294967294
 *   sec=sys             AUTH_SYS (and AUTH_NONE, anonymous): the only one
 *   sync, no_subtree_check, insecure, wdelay, no_wdelay, hide, nohide
 *                       accepted, no effect (what this server does anyway,
 *                       or nothing to do: one file system per export)
 * The backend (the export's, whichever client's options name it; two
 * clients naming it differently is an error):
 *   backend=local (default)  path is a local directory
 *   backend=cephfs      path is only the name clients mount; the files are
 *                       a CephFS's, through libcephfs:
 *   ceph_conf=FILE      its ceph.conf (default: libcephfs' search)
 *   ceph_id=NAME        the client id (client.NAME; default admin)
 *   ceph_fs=NAME        the file system (default: the cluster's default)
 *   ceph_path=/DIR      the directory of it exported (default /)
 * A ceph_ option without backend=cephfs is an error.
 * Anything else (secure, async, crossmnt, fsid=, sec=krb5...) is an error
 * naming the file, the line and the option, as are a client written
 * "client (options)" with a space (exportfs would read that as every
 * client with those options), a path given twice, and a line with no
 * client.
 *
 * A client that several rules of one export admit gets the most specific
 * one: the longest prefix (a single address is /32 or /128, "*" is /0);
 * on a tie, the first. Bounds: 256 exports, 64 client rules (after host
 * names are resolved) per export, 4096 bytes per logical line.
 */
#include "nfs3/server/exports.h"

#include "base/alloc.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define ANON 65534u

struct parser {
	FILE *f;
	const char *name;
	unsigned line; /* of the logical line being read */
	unsigned next_line;
	char buf[NFSD_LINE_MAX + 2];
	struct rr_nfs3_exports *t;
	uint32_t cap;
	char *err;
	size_t errlen;
};

static int fail(struct parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct parser *p, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	if (!p->err || !p->errlen)
		return -EINVAL;
	snprintf(p->err, p->errlen, "%s:%u: ", p->name, p->line);
	n = strlen(p->err);
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* ------------------------------------------------------------ lines */

/*
 * The next logical line into p->buf, continuations joined, comments cut:
 * 1, 0 at the end of the file, or an error.
 */
static int read_line(struct parser *p)
{
	size_t len = 0;
	char chunk[NFSD_LINE_MAX + 2];

	p->line = p->next_line + 1;
	for (;;) {
		size_t n;

		if (!fgets(chunk, sizeof(chunk), p->f))
			return ferror(p->f) ? -EIO : len ? 1 : 0;
		p->next_line++;
		n = strlen(chunk);
		if (n && chunk[n - 1] == '\n')
			chunk[--n] = '\0';
		else if (!feof(p->f))
			return fail(p, "line longer than %u bytes",
				    NFSD_LINE_MAX);
		if (len + n > NFSD_LINE_MAX)
			return fail(p, "line longer than %u bytes",
				    NFSD_LINE_MAX);
		memcpy(p->buf + len, chunk, n + 1);
		len += n;
		if (!len || p->buf[len - 1] != '\\')
			return 1;
		p->buf[--len] = ' '; /* the continuation: a separator */
		p->buf[len + 1] = '\0';
		len++;
	}
}

/* The next token of *s (quotes group, '#' starts a comment), or NULL. */
static char *next_token(struct parser *p, char **s, int *rc)
{
	char *t, *o;
	bool quoted = false;

	*rc = 0;
	while (isspace((unsigned char)**s))
		(*s)++;
	if (!**s || **s == '#')
		return NULL;
	t = o = *s;
	for (; **s; (*s)++) {
		char ch = **s;

		if (ch == '"') {
			quoted = !quoted;
			continue;
		}
		if (!quoted && (isspace((unsigned char)ch) || ch == '#'))
			break;
		*o++ = ch;
	}
	if (quoted) {
		*rc = fail(p, "unterminated quote");
		return NULL;
	}
	if (**s && **s != '#')
		(*s)++;
	else if (**s == '#')
		**s = '\0'; /* the rest is a comment; o may still be before */
	*o = '\0';
	return t;
}

/* ---------------------------------------------------------- options */

static int id_value(struct parser *p, const char *opt, const char *v,
		    uint32_t *out)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (!*v || *end || errno || n >= UINT32_MAX || *v == '-')
		return fail(p, "bad value in option \"%s\"", opt);
	*out = (uint32_t)n;
	return 0;
}

/* A backend setting: set once, or again to the same value. */
static int be_string(struct parser *p, const char *opt, const char *v,
		     char **slot)
{
	if (!*v || strlen(v) > 1024)
		return fail(p, "bad value in option \"%s\"", opt);
	if (*slot)
		return strcmp(*slot, v)
			       ? fail(p,
				      "option \"%s\": set differently before",
				      opt)
			       : 0;
	*slot = rr_strdup(v);
	return *slot ? 0 : -ENOMEM;
}

static int be_kind(struct parser *p, const char *opt, struct nfsd_be_conf *be)
{
	const char *v = opt + strlen("backend=");
	int kind = !strcmp(v, "local")	  ? NFSD_BE_LOCAL
		   : !strcmp(v, "cephfs") ? NFSD_BE_CEPHFS
					  : -1;

	if (kind < 0)
		return fail(p, "option \"%s\": backends are local and cephfs",
			    opt);
	if (be->kind != NFSD_BE_LOCAL && be->kind != kind)
		return fail(p, "option \"%s\": set differently before", opt);
	be->kind = (uint8_t)kind;
	return 0;
}

/* 1: opt was a backend option (0 or an error in *rc); 0: it was not. */
static int be_option(struct parser *p, const char *opt, struct nfsd_be_conf *be,
		     int *rc)
{
	static const struct {
		const char *name;
		size_t off;
	} str[] = {
		{"ceph_conf=", offsetof(struct nfsd_be_conf, ceph_conf)},
		{"ceph_id=", offsetof(struct nfsd_be_conf, ceph_id)},
		{"ceph_fs=", offsetof(struct nfsd_be_conf, ceph_fs)},
		{"ceph_path=", offsetof(struct nfsd_be_conf, ceph_path)},
	};

	if (!strncmp(opt, "backend=", 8)) {
		*rc = be_kind(p, opt, be);
		return 1;
	}
	for (size_t i = 0; i < sizeof(str) / sizeof(str[0]); i++) {
		size_t n = strlen(str[i].name);

		if (strncmp(opt, str[i].name, n))
			continue;
		*rc = be_string(p, opt, opt + n,
				(char **)((char *)be + str[i].off));
		return 1;
	}
	return 0;
}

static int one_option(struct parser *p, const char *opt,
		      struct nfsd_policy *pol, struct nfsd_be_conf *be)
{
	int rc = 0;

	if (be_option(p, opt, be, &rc))
		return rc;
	static const char *const inert[] = {"sync",	 "no_subtree_check",
					    "insecure",	 "wdelay",
					    "no_wdelay", "hide",
					    "nohide"};

	if (!strcmp(opt, "ro") || !strcmp(opt, "rw"))
		pol->ro = opt[1] == 'o';
	else if (!strcmp(opt, "root_squash") || !strcmp(opt, "no_all_squash"))
		pol->squash = NFSD_SQUASH_ROOT;
	else if (!strcmp(opt, "no_root_squash"))
		pol->squash = NFSD_SQUASH_NONE;
	else if (!strcmp(opt, "all_squash"))
		pol->squash = NFSD_SQUASH_ALL;
	else if (!strncmp(opt, "anonuid=", 8))
		return id_value(p, opt, opt + 8, &pol->anon_uid);
	else if (!strncmp(opt, "anongid=", 8))
		return id_value(p, opt, opt + 8, &pol->anon_gid);
	else if (!strncmp(opt, "sec=", 4) && strcmp(opt + 4, "sys"))
		return fail(p, "option \"%s\": only sec=sys is supported", opt);
	else if (strcmp(opt, "sec=sys")) {
		for (size_t i = 0; i < sizeof(inert) / sizeof(inert[0]); i++)
			if (!strcmp(opt, inert[i]))
				return 0;
		return fail(p, "unknown option \"%s\"", opt);
	}
	return 0;
}

/* opts: "a,b,c" (modified in place) applied onto pol and be. */
static int options(struct parser *p, char *opts, struct nfsd_policy *pol,
		   struct nfsd_be_conf *be)
{
	char *save = NULL;

	for (char *o = strtok_r(opts, ",", &save); o;
	     o = strtok_r(NULL, ",", &save)) {
		int rc = one_option(p, o, pol, be);

		if (rc)
			return rc;
	}
	return 0;
}

/* ---------------------------------------------------------- clients */

static int add_rule(struct parser *p, struct nfsd_export *e,
		    const struct nfsd_rule *r)
{
	struct nfsd_rule *n;

	if (e->nrules >= NFSD_RULES_MAX)
		return fail(p, "more than %u clients for %s", NFSD_RULES_MAX,
			    e->path);
	if (!e->nrules) {
		e->rules = rr_calloc(NFSD_RULES_MAX, sizeof(*e->rules));
		if (!e->rules)
			return -ENOMEM;
	}
	n = &e->rules[e->nrules];
	*n = *r;
	n->spec = rr_strdup(r->spec);
	if (!n->spec)
		return -ENOMEM;
	e->nrules++;
	return 0;
}

/* A dotted netmask (255.255.0.0) as a prefix length, or -1. */
static int mask_bits(const char *s)
{
	struct in_addr m;
	uint32_t v;
	int bits = 0;

	if (inet_pton(AF_INET, s, &m) != 1)
		return -1;
	v = ntohl(m.s_addr);
	while (v & 0x80000000u) {
		bits++;
		v <<= 1;
	}
	return v ? -1 : bits;
}

static int prefix_of(const char *s, int family)
{
	char *end;
	long v;
	int max = family == AF_INET ? 32 : 128;

	if (family == AF_INET && strchr(s, '.'))
		return mask_bits(s);
	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < 0 || v > max || !isdigit(*s))
		return -1;
	return (int)v;
}

/* An address or network; 1: it was one, 0: not an address, or an error. */
static int parse_net(struct parser *p, char *spec, struct nfsd_rule *r)
{
	char *slash = strchr(spec, '/');
	int bits;

	if (slash)
		*slash = '\0';
	r->family = strchr(spec, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(r->family, spec, r->addr) != 1) {
		if (slash)
			*slash = '/';
		return slash || r->family == AF_INET6
			       ? fail(p, "bad address \"%s\"", spec)
			       : 0;
	}
	bits = r->family == AF_INET ? 32 : 128;
	if (slash) {
		*slash = '/';
		bits = prefix_of(slash + 1, r->family);
		if (bits < 0)
			return fail(p, "bad network \"%s\"", spec);
	}
	r->prefix = (unsigned)bits;
	return 1;
}

static int add_host(struct parser *p, struct nfsd_export *e,
		    struct nfsd_rule *r)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	int n = 0, rc = 0;

	if (getaddrinfo(r->spec, NULL, &hints, &res) || !res)
		return fail(p, "host \"%s\" not found", r->spec);
	for (struct addrinfo *a = res; a && !rc && n < NFSD_HOST_ADDRS;
	     a = a->ai_next) {
		const struct sockaddr *sa = a->ai_addr;

		r->family = sa->sa_family;
		if (sa->sa_family == AF_INET) {
			memcpy(r->addr,
			       &((const struct sockaddr_in *)(const void *)sa)
					->sin_addr,
			       4);
			r->prefix = 32;
		} else if (sa->sa_family == AF_INET6) {
			memcpy(r->addr,
			       &((const struct sockaddr_in6 *)(const void *)sa)
					->sin6_addr,
			       16);
			r->prefix = 128;
		} else {
			continue;
		}
		rc = add_rule(p, e, r);
		n++;
	}
	freeaddrinfo(res);
	return rc;
}

static bool host_name_ok(const char *s)
{
	if (!*s || strlen(s) > 253)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '.' &&
		    *s != '_')
			return false;
	return true;
}

/* One "client(options)" token onto e, with defaults def. */
static int client(struct parser *p, struct nfsd_export *e, char *tok,
		  const struct nfsd_policy *def)
{
	struct nfsd_rule r = {.spec = tok, .pol = *def};
	char *paren = strchr(tok, '(');
	int rc;

	if (tok[0] == '(')
		return fail(p,
			    "options \"%s\" with no client: write "
			    "*(options) with no space",
			    tok);
	if (paren) {
		size_t n = strlen(paren);

		if (n < 2 || paren[n - 1] != ')')
			return fail(p, "bad client \"%s\"", tok);
		paren[n - 1] = '\0';
		*paren = '\0';
		rc = options(p, paren + 1, &r.pol, &e->be);
		if (rc)
			return rc;
	}
	if (!strcmp(tok, "*"))
		return add_rule(p, e, &r); /* family 0: everyone */
	if (tok[0] == '@')
		return fail(p, "netgroup \"%s\" not supported", tok);
	if (strpbrk(tok, "*?[") || !strncmp(tok, "gss/", 4))
		return fail(p, "client \"%s\" not supported (wildcard)", tok);
	rc = parse_net(p, tok, &r);
	if (rc)
		return rc < 0 ? rc : add_rule(p, e, &r);
	if (!host_name_ok(tok))
		return fail(p, "bad client \"%s\"", tok);
	return add_host(p, e, &r);
}

/* ---------------------------------------------------------- exports */

static struct nfsd_export *new_export(struct parser *p, const char *path,
				      int *rc)
{
	struct rr_nfs3_exports *t = p->t;

	*rc = 0;
	for (uint32_t i = 0; i < t->n; i++)
		if (!strcmp(t->ex[i].path, path)) {
			*rc = fail(p, "%s exported twice", path);
			return NULL;
		}
	if (t->n >= NFSD_EXPORTS_MAX) {
		*rc = fail(p, "more than %u exports", NFSD_EXPORTS_MAX);
		return NULL;
	}
	if (t->n == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 8;
		struct nfsd_export *ex = rr_realloc(t->ex, cap * sizeof(*ex));

		if (!ex) {
			*rc = -ENOMEM;
			return NULL;
		}
		t->ex = ex;
		p->cap = cap;
	}
	t->ex[t->n] = (struct nfsd_export){.path = rr_strdup(path)};
	if (!t->ex[t->n].path) {
		*rc = -ENOMEM;
		return NULL;
	}
	return &t->ex[t->n++];
}

/* ceph_ options belong to backend=cephfs; ceph_path is absolute. */
static int be_check(struct parser *p, const struct nfsd_export *e)
{
	const struct nfsd_be_conf *b = &e->be;
	bool ceph = b->ceph_conf || b->ceph_id || b->ceph_fs || b->ceph_path;

	if (ceph && b->kind != NFSD_BE_CEPHFS)
		return fail(p, "%s: ceph_ options need backend=cephfs",
			    e->path);
	if (b->ceph_path && b->ceph_path[0] != '/')
		return fail(p, "%s: ceph_path=%s: an absolute path", e->path,
			    b->ceph_path);
	return 0;
}

static int export_line(struct parser *p, char *s, char *path)
{
	struct nfsd_policy def = {.ro = true,
				  .squash = NFSD_SQUASH_ROOT,
				  .anon_uid = ANON,
				  .anon_gid = ANON};
	struct nfsd_export *e;
	char *tok;
	int rc;

	if (path[0] != '/')
		return fail(p, "\"%s\": an export is an absolute path", path);
	if (strlen(path) >= 4096)
		return fail(p, "path too long");
	e = new_export(p, path, &rc);
	if (!e)
		return rc;
	while ((tok = next_token(p, &s, &rc))) {
		if (tok[0] == '-' && !e->nrules) {
			rc = options(p, tok + 1, &def, &e->be);
			if (rc)
				return rc;
			continue;
		}
		rc = client(p, e, tok, &def);
		if (rc)
			return rc;
	}
	if (!rc && !e->nrules)
		return fail(p,
			    "%s: no client (write *(options) for every "
			    "client)",
			    path);
	return rc ? rc : be_check(p, e);
}

void rr_nfs3_exports_free(struct rr_nfs3_exports *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->n; i++) {
		for (uint32_t j = 0; j < t->ex[i].nrules; j++)
			free(t->ex[i].rules[j].spec);
		free(t->ex[i].rules);
		free(t->ex[i].path);
		free(t->ex[i].be.ceph_conf);
		free(t->ex[i].be.ceph_id);
		free(t->ex[i].be.ceph_fs);
		free(t->ex[i].be.ceph_path);
	}
	free(t->ex);
	free(t);
}

int rr__nfsd_exports_parse(FILE *f, const char *name,
			   struct rr_nfs3_exports **out, char *err,
			   size_t errlen)
{
	struct parser p = {.f = f, .name = name, .err = err, .errlen = errlen};
	int rc;

	if (err && errlen)
		err[0] = '\0';
	p.t = rr_calloc(1, sizeof(*p.t));
	if (!p.t)
		return -ENOMEM;
	while ((rc = read_line(&p)) > 0) {
		char *s = p.buf, *path = next_token(&p, &s, &rc);

		if (path)
			rc = export_line(&p, s, path);
		if (rc)
			break;
	}
	if (!rc && !p.t->n) {
		p.line = p.next_line;
		rc = fail(&p, "no export");
	}
	if (rc) {
		rr_nfs3_exports_free(p.t);
		return rc;
	}
	*out = p.t;
	return 0;
}

int rr_nfs3_exports_load(const char *file, struct rr_nfs3_exports **out,
			 char *err, size_t errlen)
{
	FILE *f = fopen(file, "re");
	int rc;

	if (!f) {
		rc = -errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", file, strerror(-rc));
		return rc;
	}
	rc = rr__nfsd_exports_parse(f, file, out, err, errlen);
	if (rc == -EIO && err && errlen)
		snprintf(err, errlen, "%s: read error", file);
	fclose(f);
	return rc;
}

int rr_nfs3_exports_one(const char *dir, bool read_only, bool root_squash,
			struct rr_nfs3_exports **out)
{
	struct parser p = {.name = "--export"};
	struct nfsd_rule r = {.spec = "*",
			      .pol = {.ro = read_only,
				      .squash = root_squash ? NFSD_SQUASH_ROOT
							    : NFSD_SQUASH_NONE,
				      .anon_uid = ANON,
				      .anon_gid = ANON}};
	struct nfsd_export *e;
	int rc;

	p.t = rr_calloc(1, sizeof(*p.t));
	if (!p.t)
		return -ENOMEM;
	e = new_export(&p, dir, &rc);
	if (e)
		rc = add_rule(&p, e, &r);
	if (rc) {
		rr_nfs3_exports_free(p.t);
		return rc;
	}
	*out = p.t;
	return 0;
}

/* ---------------------------------------------------------- matching */

static bool prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned bytes = bits / 8, rest = bits % 8;

	if (memcmp(a, b, bytes))
		return false;
	return !rest || !((a[bytes] ^ b[bytes]) & (0xffu << (8 - rest)));
}

/* peer's address as (family, bytes); a v4-mapped IPv6 address as IPv4. */
static int peer_addr(const struct sockaddr *sa, uint8_t out[16])
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff};

	if (sa && sa->sa_family == AF_INET) {
		memcpy(out,
		       &((const struct sockaddr_in *)(const void *)sa)
				->sin_addr,
		       4);
		return AF_INET;
	}
	if (sa && sa->sa_family == AF_INET6) {
		const uint8_t *a =
			((const struct sockaddr_in6 *)(const void *)sa)
				->sin6_addr.s6_addr;

		if (!memcmp(a, mapped, 12)) {
			memcpy(out, a + 12, 4);
			return AF_INET;
		}
		memcpy(out, a, 16);
		return AF_INET6;
	}
	return 0;
}

const struct nfsd_rule *rr__nfsd_export_match(const struct nfsd_export *e,
					      const struct sockaddr *peer)
{
	uint8_t a[16];
	int fam = peer_addr(peer, a);
	const struct nfsd_rule *best = NULL;

	for (uint32_t i = 0; i < e->nrules; i++) {
		const struct nfsd_rule *r = &e->rules[i];

		if (r->family &&
		    (r->family != fam || !prefix_eq(r->addr, a, r->prefix)))
			continue;
		if (!best ||
		    (r->family && (!best->family || r->prefix > best->prefix)))
			best = r;
	}
	return best;
}
