/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfsrdmad: serves a directory over NFSv3, on RPC-over-RDMA and on TCP.
 *
 *   nfsrdmad --export DIR | --exports FILE
 *            [--rdma-port 20049] [--tcp-port 2049]
 *            [--mount-port 20048] [--nlm-port 0] [--nsm-port 0]
 *            [--grace 90]
 *            [--provider iwarp] [--read-only]
 *            [--threads N] [--bulk-bufs N] [--root-squash]
 *            [--state-dir DIR]
 *            [--address A] [--max-conns N] [--max-conns-per-host N]
 *            [--idle-timeout SEC] [--stop-timeout SEC]
 *            [--handle-cache-mb N]
 *            [--walk-dirs-per-sec N] [--walk-dir-us N]
 *            [--control PATH|off]
 *
 * A port of 0 takes an ephemeral one (printed at start); "off" turns that
 * transport off. --export DIR serves DIR to every client, read-write and
 * without root squashing unless --read-only and --root-squash say
 * otherwise; --exports FILE serves what FILE says (exports(5) syntax, see
 * src/nfs3/server/exports.c) and reads it again on SIGHUP.
 */
#include "alloc_count.h"
#include "nfsrdmad.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * libtirpc's xdr_opaque reads every padding into one static scratch
 * buffer, so handlers decoding on several threads write it at once; the
 * bytes are never read. Only a TSan build asks for this. Only race
 * reports with libtirpc in them go (its functions have no symbols to
 * name): ignoring libtirpc altogether (called_from_lib) also hid its
 * close of the rpcbind socket, and a handler's openat2 (which TSan does
 * not see) that got the same descriptor number then "raced" with it.
 */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "race:libtirpc.so.3\n";
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nfsrdmad --export DIR | --exports FILE [options]\n"
		"  --export DIR     serve DIR to every client (read-write,\n"
		"                   no root squashing)\n"
		"  --exports FILE   serve the exports FILE lists, exports(5)\n"
		"                   syntax; SIGHUP reads it again\n"
		"  --rdma-port P    NFS and MOUNT over RPC-over-RDMA (20049)\n"
		"  --tcp-port P     NFS over TCP (2049)\n"
		"  --mount-port P   MOUNT over TCP (20048)\n"
		"  --nlm-port P     NLM v4 (locks) over TCP (0)\n"
		"                   P = 0: any free port; P = off: none\n"
		"  --nsm-port P     NSM v1 (statd: client reboots) over TCP\n"
		"                   (0); off: none (restarts are still told)\n"
		"  --grace S        NLM: after start, only reclaims of locks\n"
		"                   for S seconds (90)\n"
		"  --nlm-locks-per-host N  NLM: ranges one client host may\n"
		"                   hold locked (1024)\n"
		"  --provider NAME  RDMA provider (iwarp; shm: same host)\n"
		"  --address A      IPv4 address to listen on (0.0.0.0)\n"
		"  --threads N      handler threads per transport (4)\n"
		"  --bulk-bufs N    RDMA: registered 1 MiB buffers for READ\n"
		"                   and WRITE data in flight at once (16,\n"
		"                   at most 32)\n"
		"  --read-only      --export: modifying calls get "
		"NFS3ERR_ROFS\n"
		"  --root-squash    --export: uid 0 acts as nobody (65534)\n"
		"  --state-dir DIR  where the file-handle key and NSM's state\n"
		"                   (nsm-state, nsm-hosts) are kept\n"
		"                   (/var/lib/nfsrdmad for root, else\n"
		"                   ~/.local/state/nfsrdmad)\n"
		"  --max-conns N    TCP connections per port (256, fewer\n"
		"                   when RLIMIT_NOFILE is low); when full, "
		"the\n"
		"                   longest idle one makes room\n"
		"  --max-conns-per-host N\n"
		"                   connections from one address (TCP 32,\n"
		"                   RDMA 16)\n"
		"  --idle-timeout S close a TCP connection idle for S seconds\n"
		"                   (360; 0: never)\n"
		"  --stop-timeout S after SIGTERM or SIGINT, exit without the\n"
		"                   calls still running after S seconds, or\n"
		"                   at a second signal (30; 0: wait for them)\n"
		"  --handle-cache-mb N\n"
		"                   memory of the handle-to-path cache (64)\n"
		"  --walk-dirs-per-sec N\n"
		"                   directories walks for unknown handles\n"
		"                   may read per second (20000; a client\n"
		"                   address a quarter)\n"
		"  --walk-dir-us N  a directory a walk takes longer than N\n"
		"                   microseconds to read counts as one per\n"
		"                   N it took (10)\n"
		"  --control PATH   Unix socket that answers \"stats\" and\n"
		"                   \"stats json\" (nfsrdma stat PATH);\n"
		"                   default STATE-DIR/control; off: none\n"
		"  -V, --version    print the version and exit\n");
}

static int port_arg(const char *s, int *out)
{
	char *end;
	long v;

	if (!strcmp(s, "off")) {
		*out = -1;
		return 0;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > 65535)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int count_arg(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !*s || v < lo || v > hi)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static const char *default_state_dir(char *buf, size_t len)
{
	const char *home = getenv("HOME");
	const char *xdg = getenv("XDG_STATE_HOME");

	if (geteuid() == 0)
		return "/var/lib/nfsrdmad";
	if (xdg && *xdg)
		snprintf(buf, len, "%s/nfsrdmad", xdg);
	else if (home && *home)
		snprintf(buf, len, "%s/.local/state/nfsrdmad", home);
	else
		return NULL;
	return buf;
}

enum {
	O_RDMA = 256,
	O_TCP,
	O_MOUNT,
	O_PROV,
	O_RO,
	O_THR,
	O_SQ,
	O_ST,
	O_ADDR,
	O_BULK,
	O_MAXC,
	O_PERH,
	O_IDLE,
	O_STOP,
	O_HCMB,
	O_WALK,
	O_WALKUS,
	O_EXPORTS,
	O_CONTROL,
	O_NLM,
	O_GRACE,
	O_NLMH,
	O_NSM
};

static const struct option longopts[] = {
	{"export", required_argument, NULL, 'e'},
	{"exports", required_argument, NULL, O_EXPORTS},
	{"rdma-port", required_argument, NULL, O_RDMA},
	{"tcp-port", required_argument, NULL, O_TCP},
	{"mount-port", required_argument, NULL, O_MOUNT},
	{"nlm-port", required_argument, NULL, O_NLM},
	{"nsm-port", required_argument, NULL, O_NSM},
	{"grace", required_argument, NULL, O_GRACE},
	{"nlm-locks-per-host", required_argument, NULL, O_NLMH},
	{"provider", required_argument, NULL, O_PROV},
	{"read-only", no_argument, NULL, O_RO},
	{"threads", required_argument, NULL, O_THR},
	{"bulk-bufs", required_argument, NULL, O_BULK},
	{"root-squash", no_argument, NULL, O_SQ},
	{"state-dir", required_argument, NULL, O_ST},
	{"address", required_argument, NULL, O_ADDR},
	{"max-conns", required_argument, NULL, O_MAXC},
	{"max-conns-per-host", required_argument, NULL, O_PERH},
	{"idle-timeout", required_argument, NULL, O_IDLE},
	{"stop-timeout", required_argument, NULL, O_STOP},
	{"handle-cache-mb", required_argument, NULL, O_HCMB},
	{"walk-dirs-per-sec", required_argument, NULL, O_WALK},
	{"walk-dir-us", required_argument, NULL, O_WALKUS},
	{"control", required_argument, NULL, O_CONTROL},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static int parse_one(int c, const char *arg, struct nfsrdmad_opts *o)
{
	char *end;

	switch (c) {
	case 'e':
		o->export_path = arg;
		return 0;
	case O_EXPORTS:
		o->exports_file = arg;
		return 0;
	case O_CONTROL:
		o->control_path = arg;
		return 0;
	case O_RDMA:
		return port_arg(arg, &o->rdma_port);
	case O_TCP:
		return port_arg(arg, &o->tcp_port);
	case O_MOUNT:
		return port_arg(arg, &o->mount_port);
	case O_NLM:
		return port_arg(arg, &o->nlm_port);
	case O_NSM:
		return port_arg(arg, &o->nsm_port);
	case O_GRACE:
		return count_arg(arg, 0, 3600, &o->grace_s);
	case O_NLMH:
		return count_arg(arg, 1, 65536, &o->nlm_locks_per_host);
	case O_PROV:
		o->provider = arg;
		return 0;
	case O_RO:
		o->read_only = true;
		return 0;
	case O_THR:
		o->threads = (uint32_t)strtoul(arg, &end, 10);
		return *end || o->threads > 256 ? -EINVAL : 0;
	case O_BULK:
		o->bulk_bufs = (uint32_t)strtoul(arg, &end, 10);
		return *end || !o->bulk_bufs || o->bulk_bufs > 32 ? -EINVAL : 0;
	case O_SQ:
		o->root_squash = true;
		return 0;
	case O_ST:
		o->state_dir = arg;
		return 0;
	case O_ADDR:
		o->address = arg;
		return 0;
	case O_MAXC:
		return count_arg(arg, 1, 65536, &o->max_conns);
	case O_PERH:
		return count_arg(arg, 1, 65536, &o->max_per_host);
	case O_HCMB:
		return count_arg(arg, 1, 1u << 20, &o->handle_cache_mb);
	case O_WALK:
		return count_arg(arg, 1, 1u << 30, &o->walk_dirs_per_s);
	case O_WALKUS:
		return count_arg(arg, 1, 1u << 30, &o->walk_dir_us);
	case O_STOP:
		return count_arg(arg, 0, 86400, &o->stop_timeout_s);
	case O_IDLE: {
		uint32_t sec;

		if (count_arg(arg, 0, 86400, &sec))
			return -EINVAL;
		o->idle_s = sec ? (int)sec : -1;
		return 0;
	}
	default:
		return -EINVAL;
	}
}

/*
 * An option getopt did not know, or one missing its value: getopt_long
 * then sets optopt to the option's value, 0 for an unknown long option.
 */
static void bad_option(char **argv)
{
	const char *arg = argv[optind - 1];

	for (const struct option *lo = longopts; optopt && lo->name; lo++)
		if (lo->val == optopt && lo->has_arg == required_argument) {
			fprintf(stderr, "nfsrdmad: option %s needs a value\n",
				arg);
			return;
		}
	fprintf(stderr, "nfsrdmad: unknown option %s (see --help)\n", arg);
}

static const char *value_hint(int c)
{
	switch (c) {
	case O_RDMA:
	case O_TCP:
	case O_MOUNT:
	case O_NLM:
	case O_NSM:
		return "a port, 0-65535, or off";
	case O_GRACE:
		return "seconds, 0-3600";
	case O_THR:
		return "a count, 0-256";
	case O_BULK:
		return "a count, 1-32";
	case O_MAXC:
	case O_PERH:
	case O_NLMH:
		return "a count, 1-65536";
	case O_IDLE:
	case O_STOP:
		return "seconds, 0-86400";
	case O_HCMB:
		return "MiB, 1-1048576";
	case O_WALK:
		return "a count, 1-1073741824";
	case O_WALKUS:
		return "microseconds, 1-1073741824";
	default:
		return "see --help";
	}
}

static void bad_value(int c, int idx, const char *arg)
{
	const char *name = "?";

	for (const struct option *lo = longopts; lo->name; lo++)
		if (lo->val == c && (idx < 0 || lo == &longopts[idx]))
			name = lo->name;
	fprintf(stderr, "nfsrdmad: --%s: bad value \"%s\" (%s)\n", name,
		arg ? arg : "", value_hint(c));
}

int main(int argc, char **argv)
{
	struct nfsrdmad_opts o = {.rdma_port = 20049,
				  .tcp_port = 2049,
				  .mount_port = 20048,
				  .grace_s = 90,
				  .stop_timeout_s = 30,
				  .threads = 4,
				  .address = "0.0.0.0"};
	char sdir[4096];
	int c, idx = -1;

	opterr = 0; /* we say what is wrong, naming the option */
	while ((c = getopt_long(argc, argv, "e:hV", longopts, &idx)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == 'V') {
			printf("nfsrdmad %s\n", RR_VERSION);
			return 0;
		}
		if (c == '?') {
			bad_option(argv);
			return 2;
		}
		if (parse_one(c, optarg, &o)) {
			bad_value(c, idx, optarg);
			return 2;
		}
		idx = -1;
	}
	if (optind != argc) {
		fprintf(stderr, "nfsrdmad: unexpected argument \"%s\"\n",
			argv[optind]);
		return 2;
	}
	if (!o.export_path == !o.exports_file) {
		fprintf(stderr, "nfsrdmad: give one of --export DIR and "
				"--exports FILE\n");
		usage(stderr);
		return 2;
	}
	if (o.exports_file && (o.read_only || o.root_squash)) {
		fprintf(stderr, "nfsrdmad: --read-only and --root-squash are "
				"for --export; with --exports FILE, write ro "
				"and root_squash in FILE\n");
		return 2;
	}
	if (!o.state_dir)
		o.state_dir = default_state_dir(sdir, sizeof(sdir));
	o.count_allocs = tool_count_allocs(); /* from before the first */
	return nfsrdmad_serve(&o);
}
