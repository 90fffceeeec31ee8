/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The server side of the hostile-client and many-clients tests: a test
 * program served by rr_svc in a forked child, driven over a control
 * socket so the parent can read the server's counters at any time.
 *
 * The program (HC_PROG vers 1):
 *   0 NULL
 *   1 ECHO   results = the argument bytes
 *   2 READ   args: size; results: size, then size pattern bytes as the
 *            DDP-eligible item (a write chunk when the client offers one)
 *   3 WRITE  args: length word, then the bytes as the DDP-eligible item
 *            (read chunk or inline); results: length, FNV-1a of the bytes.
 *            Anything else is GARBAGE_ARGS.
 *   4 GATE   tells the parent it runs (a byte on the "entered" pipe), then
 *            waits up to HC_GATE_MS for a byte on the gate pipe: a call
 *            that is certainly in progress while the parent acts.
 *   5 XDR    results = the arguments as one XDR stream (rr_svc_args_xdr):
 *            a DDP-eligible item a read chunk carried, back in place.
 *
 * Control protocol (one requester): 's' -> struct rr_xprt_stats now;
 * 'q' -> the server stops, shuts down (drains) and sends its final stats,
 * then exits 0. Any other exit status means it failed or crashed.
 */
#ifndef RR_TESTS_HC_SERVER_H
#define RR_TESTS_HC_SERVER_H

#include "clock.h"
#include "io.h"
#include "tprog.h" /* the pattern, checksum and byte helpers */

#include <rpcrdma/rpc.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HC_PROG	    0x20000066u
#define HC_VERS	    1u
#define HC_MAX_BULK (1u << 20)
#define HC_GATE_MS  5000
#define HC_WAIT_MS  10000 /* any single wait for the child */

enum { HC_NULL, HC_ECHO, HC_READ, HC_WRITE, HC_GATE, HC_XDR, HC_NPROCS };

/* ------------------------------------------------------ the child */

static uint8_t *hc_srv_pattern;
static int hc_gate_fd = -1, hc_entered_fd = -1;

static uint32_t hc_h_null(struct rr_svc_req *r, void *arg)
{
	(void)arg;
	return rr_svc_set_res(r, 0, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

static uint32_t hc_h_echo(struct rr_svc_req *r, void *arg)
{
	size_t len, cap;
	const void *a = rr_svc_args(r, &len);
	void *res = rr_svc_res_buf(r, &cap);

	(void)arg;
	if (len > cap)
		return RR_GARBAGE_ARGS;
	if (len)
		memcpy(res, a, len);
	return rr_svc_set_res(r, len, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

static uint32_t hc_h_xdr(struct rr_svc_req *r, void *arg)
{
	size_t len, cap;
	const void *a = rr_svc_args_xdr(r, &len);
	void *res = rr_svc_res_buf(r, &cap);

	(void)arg;
	if (len > cap)
		return RR_GARBAGE_ARGS;
	if (len)
		memcpy(res, a, len);
	return rr_svc_set_res(r, len, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

static uint32_t hc_h_read(struct rr_svc_req *r, void *arg)
{
	size_t len, cap;
	const uint8_t *a = rr_svc_args(r, &len);
	uint8_t *res = rr_svc_res_buf(r, &cap);
	uint32_t size;

	(void)arg;
	if (len != 4 || (size = rr_t_get32(a)) > HC_MAX_BULK)
		return RR_GARBAGE_ARGS;
	rr_t_put32(res, size);
	return rr_svc_set_res(r, 4, hc_srv_pattern, size) ? RR_SYSTEM_ERR
							  : RR_SUCCESS;
}

static uint32_t hc_h_write(struct rr_svc_req *r, void *arg)
{
	size_t len, blen, cap;
	const uint8_t *a = rr_svc_args(r, &len);
	const uint8_t *bulk = rr_svc_arg_bulk(r, &blen);
	uint8_t *res = rr_svc_res_buf(r, &cap);
	const uint8_t *data;
	uint32_t n;

	(void)arg;
	if (len < 4)
		return RR_GARBAGE_ARGS;
	n = rr_t_get32(a);
	if (bulk) {
		if (blen != n || len != 4)
			return RR_GARBAGE_ARGS;
		data = bulk;
	} else {
		if (len - 4 < n || len - 4 - n > 3)
			return RR_GARBAGE_ARGS;
		data = a + 4;
	}
	rr_t_put32(res, n);
	rr_t_put32(res + 4, rr_t_fnv1a(data, n));
	return rr_svc_set_res(r, 8, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

static uint32_t hc_h_gate(struct rr_svc_req *r, void *arg)
{
	struct pollfd pfd = {.fd = hc_gate_fd, .events = POLLIN};
	char c = 'e';

	(void)arg;
	if (!rr_t_write_all(hc_entered_fd, &c, 1))
		return RR_SYSTEM_ERR;
	if (poll(&pfd, 1, HC_GATE_MS) != 1 || read(hc_gate_fd, &c, 1) != 1)
		return RR_SYSTEM_ERR;
	return rr_svc_set_res(r, 0, NULL, 0) ? RR_SYSTEM_ERR : RR_SUCCESS;
}

static const rr_svc_fn hc_procs[HC_NPROCS] = {
	[HC_NULL] = hc_h_null,	 [HC_ECHO] = hc_h_echo, [HC_READ] = hc_h_read,
	[HC_WRITE] = hc_h_write, [HC_GATE] = hc_h_gate, [HC_XDR] = hc_h_xdr,
};

struct hc_ctl {
	struct rr_svc *s;
	int fd;
};

/* Answers stats requests until told to quit. */
static void *hc_ctl_main(void *arg)
{
	struct hc_ctl *c = arg;
	struct rr_xprt_stats st;
	char cmd;

	while (read(c->fd, &cmd, 1) == 1) {
		if (cmd == 's') {
			rr_svc_stats(c->s, &st);
			if (!rr_t_write_all(c->fd, &st, sizeof(st)))
				break;
		} else if (cmd == 'q') {
			break;
		}
	}
	rr_svc_stop(c->s);
	return NULL;
}

static void hc_child(int fd, const struct rr_svc_opts *o)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rr_svc_prog prog = {.prog = HC_PROG,
				   .vers = HC_VERS,
				   .nprocs = HC_NPROCS,
				   .procs = hc_procs};
	struct hc_ctl ctl = {.fd = fd};
	struct rr_xprt_stats st;
	pthread_t th;
	uint16_t port = 0;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGPIPE, SIG_IGN);
	hc_srv_pattern = malloc(HC_MAX_BULK);
	if (!hc_srv_pattern)
		_exit(4);
	for (size_t i = 0; i < HC_MAX_BULK; i++)
		hc_srv_pattern[i] = rr_t_pat(i);
	rc = rr_svc_create((struct sockaddr *)&sin, sizeof(sin), o, &ctl.s);
	if (!rc)
		rc = rr_svc_register(ctl.s, &prog);
	if (!rc)
		rc = rr_svc_port(ctl.s, &port);
	if (rc || !rr_t_write_all(fd, &port, sizeof(port)))
		_exit(5);
	if (pthread_create(&th, NULL, hc_ctl_main, &ctl))
		_exit(6);
	rc = rr_svc_run(ctl.s);
	pthread_join(th, NULL);
	rr_svc_shutdown(ctl.s);
	rr_svc_stats(ctl.s, &st);
	if (!rr_t_write_all(fd, &st, sizeof(st)))
		_exit(7);
	if (rr_svc_destroy(ctl.s))
		_exit(8);
	free(hc_srv_pattern);
	_exit(rc ? 9 : 0);
}

/* ----------------------------------------------------- the parent */

struct hc_server {
	pid_t pid;
	int ctl;
	int gate_w;    /* a byte here lets one GATE call return */
	int entered_r; /* a byte here: a GATE call is running */
	uint16_t port;
};

static inline int hc_server_start(struct hc_server *sv,
				  const struct rr_svc_opts *o)
{
	int sp[2], gate[2], ent[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) || pipe(gate) || pipe(ent))
		return -errno;
	sv->pid = fork();
	if (sv->pid < 0)
		return -errno;
	if (sv->pid == 0) {
		close(sp[0]);
		close(gate[1]);
		close(ent[0]);
		hc_gate_fd = gate[0];
		hc_entered_fd = ent[1];
		hc_child(sp[1], o);
	}
	close(sp[1]);
	close(gate[0]);
	close(ent[1]);
	sv->ctl = sp[0];
	sv->gate_w = gate[1];
	sv->entered_r = ent[0];
	if (!rr_t_read_within(sv->ctl, &sv->port, sizeof(sv->port), HC_WAIT_MS))
		return -EIO;
	return 0;
}

static inline int hc_server_stats(struct hc_server *sv,
				  struct rr_xprt_stats *st)
{
	char c = 's';

	if (!rr_t_write_all(sv->ctl, &c, 1) ||
	    !rr_t_read_within(sv->ctl, st, sizeof(*st), HC_WAIT_MS))
		return -EIO;
	return 0;
}

/*
 * Stops the child and reaps it: 0 when it drained and exited cleanly,
 * with its final counters in *st.
 */
static inline int hc_server_stop(struct hc_server *sv, struct rr_xprt_stats *st)
{
	char c = 'q';
	int status = 0;
	bool got;

	got = rr_t_write_all(sv->ctl, &c, 1) &&
	      rr_t_read_within(sv->ctl, st, sizeof(*st), HC_WAIT_MS);
	if (!got)
		kill(sv->pid, SIGKILL);
	waitpid(sv->pid, &status, 0);
	close(sv->ctl);
	close(sv->gate_w);
	close(sv->entered_r);
	if (!got || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "server child: %s, status 0x%x\n",
			got ? "exited badly" : "no final stats", status);
		return -EIO;
	}
	return 0;
}

/* A "Key:  N kB" line of /proc/PID/status, in KiB; 0 if absent. */
static inline unsigned long hc_proc_kib(pid_t pid, const char *key)
{
	char path[64], line[256];
	unsigned long v = 0;
	size_t klen = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':')
			v = strtoul(line + klen + 1, NULL, 10);
	fclose(f);
	return v;
}

#endif
