// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nfsrdma: read and write files on an NFSv3 server over RPC-over-RDMA (or
 * TCP), from the command line. Every failure is one line on stderr and a
 * non-zero exit: 1 for a failed operation, 2 for a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/rpc.h>

#include "nfsrdma.h"

static const char usage_text[] =
	"usage: nfsrdma [options] COMMAND ARGS\n"
	"  ls [-l] [-R] URL  list a directory (or name one file); -l: mode,\n"
	"                    links, owner, size, time; -R: subdirectories\n"
	"  stat URL          attributes of a file or directory\n"
	"  stat SOCKET       a running nfsrdmad's counters, from its\n"
	"                    control socket [--json]\n"
	"  stat MOUNTPOINT   a mount's transport counters (nfsrdma mount,\n"
	"                    as its user) [--json]\n"
	"  cat URL           write a file to stdout\n"
	"  mkdir URL         make a directory\n"
	"  rm URL            remove a file or an empty directory\n"
	"  df URL            space and files on the export\n"
	"  mv URL NEWPATH    rename (NEWPATH: absolute inside the export,\n"
	"                    or relative to URL's directory, or a URL)\n"
	"  get URL LOCAL     copy a file from the server (LOCAL -: stdout);\n"
	"                    -r: a directory tree, as cp -r\n"
	"  put LOCAL URL     copy a file to the server (LOCAL -: stdin);\n"
	"                    -r: a directory tree, as cp -r\n"
	"  mount URL MOUNTPOINT [-o OPTIONS] [-f]\n"
	"                    serve the export at MOUNTPOINT through FUSE\n"
	"                    (a daemon; -f: in the foreground). OPTIONS:\n"
	"                    actimeo, acregmin, acregmax, acdirmin,\n"
	"                    acdirmax=SECONDS, noac, lookupcache=all|pos|\n"
	"                    none, hard (default), soft,\n"
	"                    timeo=DECISECONDS, retrans=N, rsize, wsize,\n"
	"                    readahead=KIB, threads=N, and FUSE's\n"
	"                    (allow_other, default_permissions, ro, ...)\n"
	"  umount MOUNTPOINT end such a mount\n"
	"  bench URL         --op read|write|randread|randwrite --bs 1M\n"
	"                    --depth N --seconds S [--json]: over RDMA, with\n"
	"                    a TCP baseline to the same server in the same "
	"run\n"
	"options:\n"
	"  --verify          get/put: re-read both ends, compare CRC32C\n"
	"  --partial         get/put: keep a failed transfer's file under its\n"
	"                    final name (by default it is written under a\n"
	"                    temporary name, renamed once complete)\n"
	"  --depth N         READ/WRITE calls in flight (default 16)\n"
	"  --timeout MS      per call (default 60000)\n"
	"  -q, --quiet       no progress bar or summary\n"
	"  -V, --version     print the version and exit\n"
	"  --stats           the RDMA transport's counters on stderr at the\n"
	"                    end, one 'name value' a line\n"
	"  --json            bench, stat SOCKET|MOUNTPOINT: one JSON object\n"
	"  --tcp-nfsport N   bench: the server's NFS/TCP port for the "
	"baseline\n"
	"  --no-baseline     bench: no TCP run\n"
	"  --force           bench --op write: overwrite a file that exists\n"
	"                    (by default it writes only a file it creates)\n"
	"  --fsync           bench --op write: the closing COMMIT inside the\n"
	"                    clock (the rate data is stored at)\n"
	"URL: nfs://host[:port]/export/path[?proto=rdma|tcp&nfsport=N&"
	"mountport=N&provider=iwarp|shm|verbs]\n";

static int usage(void)
{
	fputs(usage_text, stderr);
	return 2;
}

/*
 * Not rr_nfs_error(): what failed may be local, and that text may describe
 * an earlier remote call the command expected to fail (a probe for a
 * directory), so this failure's own errno is what is said.
 */
int cli_fail(const char *what, int err)
{
	if (err < 0)
		err = -err;
	fprintf(stderr, "nfsrdma: %s: %s\n", what, strerror(err));
	return 1;
}

int cli_failf(const char *fmt, ...)
{
	va_list ap;

	fputs("nfsrdma: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

int cli_mount(const struct cli *c, const char *url, struct rr_nfs **out)
{
	int rc = rr_nfs_mount(url, &c->o, out);

	if (rc) {
		const char *why = rr_nfs_error();

		fprintf(stderr, "nfsrdma: %s: %s\n", url,
			why[0] ? why : strerror(-rc));
	}
	return rc;
}

/*
 * Every counter, zeros too, one "name value" a line: a script asserts on
 * a counter that stayed 0 (bad_remote_invs) as on one that moved.
 */
static void print_stats(const struct rr_nfs *n)
{
	struct rr_xprt_stats s;
	int rc = rr_nfs_xprt_stats(n, &s);

	fflush(stdout); /* with 2>&1, after the command's output, not inside */
	if (rc) {
		fprintf(stderr, "nfsrdma: --stats: %s\n",
			rc == -ENOTSUP ? "no RDMA transport (proto=tcp)"
				       : strerror(-rc));
		return;
	}
#define X(name) fprintf(stderr, "%s %llu\n", #name, (unsigned long long)s.name);
	RR_XPRT_STATS_FIELDS(X)
#undef X
}

void cli_umount(const struct cli *c, struct rr_nfs *n)
{
	if (c->stats)
		print_stats(n);
	rr_nfs_umount(n);
}

/* 4096, 4K, 1M, 2G (binary units). */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

enum {
	O_VERIFY = 256,
	O_DEPTH,
	O_TIMEOUT,
	O_RW,
	O_SIZE,
	O_SECONDS,
	O_JSON,
	O_TCP_PORT,
	O_NO_BASELINE,
	O_STATS,
	O_PARTIAL,
	O_FORCE,
	O_COMMIT_TIMED,
};

static const struct option longopts[] = {
	{"verify", no_argument, NULL, O_VERIFY},
	{"depth", required_argument, NULL, O_DEPTH},
	{"timeout", required_argument, NULL, O_TIMEOUT},
	{"rw", required_argument, NULL, O_RW},
	{"op", required_argument, NULL, O_RW},
	{"size", required_argument, NULL, O_SIZE},
	{"bs", required_argument, NULL, O_SIZE},
	{"tcp-nfsport", required_argument, NULL, O_TCP_PORT},
	{"no-baseline", no_argument, NULL, O_NO_BASELINE},
	{"stats", no_argument, NULL, O_STATS},
	{"partial", no_argument, NULL, O_PARTIAL},
	{"force", no_argument, NULL, O_FORCE},
	{"fsync", no_argument, NULL, O_COMMIT_TIMED},
	{"seconds", required_argument, NULL, O_SECONDS},
	{"json", no_argument, NULL, O_JSON},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static int parse_opt(struct cli *c, int opt, const char *arg)
{
	long v;

	switch (opt) {
	case O_VERIFY:
		c->verify = true;
		return 0;
	case 'q':
		c->quiet = true;
		return 0;
	case 'o':
		c->mount_opts = arg;
		return 0;
	case 'f':
		c->foreground = true;
		return 0;
	case 'l':
		c->long_list = true;
		return 0;
	case 'R':
	case 'r':
		c->recursive = true;
		return 0;
	case O_JSON:
		c->json = true;
		return 0;
	case O_RW:
		c->rw = arg;
		return 0;
	case O_NO_BASELINE:
		c->no_baseline = true;
		return 0;
	case O_STATS:
		c->stats = true;
		return 0;
	case O_PARTIAL:
		c->partial = true;
		return 0;
	case O_FORCE:
		c->force = true;
		return 0;
	case O_COMMIT_TIMED:
		c->fsync = true;
		return 0;
	case O_TCP_PORT:
		if (parse_int(arg, 1, 65535, &v))
			return cli_failf(
				"--tcp-nfsport: want 1..65535, not '%s'", arg);
		c->tcp_nfsport = (uint16_t)v;
		return 0;
	case O_DEPTH:
		if (parse_int(arg, 1, 1024, &v))
			return cli_failf("--depth: want 1..1024, not '%s'",
					 arg);
		c->o.depth = (uint32_t)v;
		return 0;
	case O_TIMEOUT:
		if (parse_int(arg, 1, 3600000, &v))
			return cli_failf(
				"--timeout: want milliseconds, not '%s'", arg);
		c->o.timeout_ms = (int)v;
		return 0;
	case O_SIZE:
		if (parse_size(arg, &c->size) || !c->size)
			return cli_failf("--bs: want e.g. 4K or 1M, not '%s'",
					 arg);
		return 0;
	case O_SECONDS:
		if (parse_int(arg, 1, 3600, &v))
			return cli_failf("--seconds: want 1..3600, not '%s'",
					 arg);
		c->seconds = (double)v;
		return 0;
	default:
		return -1;
	}
}

struct command {
	const char *name;
	int nargs;
	int (*fn)(struct cli *c);
};

static const struct command commands[] = {
	{"ls", 1, cmd_ls},	 {"stat", 1, cmd_stat_any},
	{"cat", 1, cmd_cat},	 {"mkdir", 1, cmd_mkdir},
	{"rm", 1, cmd_rm},	 {"df", 1, cmd_df},
	{"mv", 2, cmd_mv},	 {"get", 2, cmd_get},
	{"put", 2, cmd_put},	 {"bench", 1, cmd_bench},
	{"mount", 2, cmd_mount}, {"umount", 1, cmd_umount},
};

int main(int argc, char **argv)
{
	struct cli c = {.rw = "read", .size = 1 << 20, .seconds = 5};
	int opt;

	if (mount_helper_called(argc, argv))
		return mount_helper(argc, argv);
	while ((opt = getopt_long(argc, argv, "qhVlRro:f", longopts, NULL)) !=
	       -1) {
		if (opt == 'h') {
			fputs(usage_text, stdout);
			return 0;
		}
		if (opt == 'V') {
			printf("nfsrdma %s\n", RR_VERSION);
			return 0;
		}
		if (opt == '?' || parse_opt(&c, opt, optarg))
			return 2;
	}
	if (optind >= argc)
		return usage();
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *cmd = &commands[i];

		if (strcmp(argv[optind], cmd->name))
			continue;
		c.argc = argc - optind - 1;
		c.argv = argv + optind + 1;
		if (c.argc != cmd->nargs) {
			cli_failf("%s: want %d argument%s (see --help)",
				  cmd->name, cmd->nargs,
				  cmd->nargs > 1 ? "s" : "");
			return 2;
		}
		return cmd->fn(&c);
	}
	cli_failf("unknown command '%s' (see --help)", argv[optind]);
	return 2;
}
