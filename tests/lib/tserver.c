// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "tserver.h"
#include "io.h"
#include "tprog.h"

#include <rpcrdma/faults.h>
#include <rpcrdma/rpc.h>
#include <rpcrdma/rpc_tcp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define ARG0	  "--rr-t-server"
#define READY	  0x52454459u /* "REDY" */
#define CMD_STATS 'S'
#define CMD_CONNS 'C' /* and the capacity, one byte, in one message */
#define CMD_STOP  'Q'

struct ready_msg {
	uint32_t magic;
	uint16_t port;
};

void rr_t_benign_faults(struct rr_fault_plan *p, uint64_t seed)
{
	*p = (struct rr_fault_plan){.seed = seed,
				    .delay_send_cqe_ppm = 200000,
				    .delay_send_cqe_max_ms =
					    RR_T_SEND_CQE_DELAY_MAX_MS,
				    .reorder_ppm = 200000,
				    .dup_cqe_ppm = 50000,
				    .guard_sends = true};
}

/* ============================================================ child */

static struct rr_rpc_svc *child_svc;

static void on_term(int sig)
{
	(void)sig;
	if (child_svc)
		rr_rpc_svc_stop(child_svc);
}

static int make_rdma(const struct rr_t_server_opts *o,
		     const struct sockaddr_in *sin, struct rr_rpc_svc **out)
{
	static struct rr_fault_plan plan;
	static struct rr_device_opts dopts = {.inner = "iwarp",
					      .faults = &plan};
	struct rr_svc_opts so = {.provider = o->provider,
				 .credits = o->credits,
				 .threads = o->threads};
	struct rr_svc *s;
	int rc;

	if (o->faults) {
		so.provider = "faults";
		rr_t_benign_faults(&plan, 0x5eed0000u + (uint64_t)getpid());
		so.dev_opts = &dopts;
	}
	rc = rr_svc_create((const struct sockaddr *)sin, sizeof(*sin), &so, &s);
	if (!rc)
		*out = rr_svc_rpc(s);
	return rc;
}

static int make_tcp(const struct rr_t_server_opts *o,
		    const struct sockaddr_in *sin, struct rr_rpc_svc **out)
{
	struct rr_tcp_svc_opts so = {.threads = o->threads};
	struct rr_tcp_svc *s;
	int rc;

	if (o->nofile) {
		so.max_conns = so.max_per_peer = 4096;
		so.first_call_ms = -1;
	}

	rc = rr_tcp_svc_create((const struct sockaddr *)sin, sizeof(*sin), &so,
			       &s);
	if (!rc)
		*out = rr_tcp_svc_rpc(s);
	return rc;
}

static int child_setup(const struct rr_t_server_opts *o, struct rr_rpc_svc **s,
		       uint16_t *port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(o->port)};
	static const rr_svc_fn v3_procs[] = {rr_t_null};
	static const struct rr_svc_prog v3 = {
		.prog = RR_T_PROG, .vers = 3, .nprocs = 1, .procs = v3_procs};
	const struct rr_svc_prog *prog = rr_t_prog();
	int rc;

	if (!prog)
		return -ENOMEM;
	if (o->xprt == RR_T_TCP)
		rr_t_prog_args_inline();
	if (inet_pton(AF_INET, o->addr ? o->addr : "127.0.0.1",
		      &sin.sin_addr) != 1)
		return -EINVAL;
	rc = o->xprt == RR_T_TCP ? make_tcp(o, &sin, s) : make_rdma(o, &sin, s);
	if (!rc)
		rc = rr_rpc_svc_register(*s, prog);
	if (!rc && o->vers3)
		rc = rr_rpc_svc_register(*s, &v3);
	/* A program registered twice is refused. */
	if (!rc && rr_rpc_svc_register(*s, prog) != -EEXIST)
		rc = -EINVAL;
	if (!rc && o->reg_results)
		rc = rr_rpc_svc_mem_reg(*s, rr_t_prog_pattern(), RR_T_MAX_BULK);
	if (!rc)
		rc = rr_rpc_svc_port(*s, port);
	return rc;
}

/* Answers the parent's commands; a closed socket means stop too. */
/* Pointers mean nothing in the parent: the strings go by value. */
static void child_conns(int fd, uint8_t cap)
{
	struct rr_svc_conn_info v[RR_T_CONNS_MAX];
	struct rr_t_conns cs;

	memset(&cs, 0, sizeof(cs));
	if (cap > RR_T_CONNS_MAX)
		cap = 0;
	cs.rc = rr_rpc_svc_conns(child_svc, v, cap, &cs.shown, &cs.hidden);
	for (uint32_t i = 0; !cs.rc && i < cs.shown; i++) {
		cs.c[i].info = v[i];
		cs.c[i].info.netid = cs.c[i].info.state = NULL;
		snprintf(cs.c[i].netid, sizeof(cs.c[i].netid), "%s",
			 v[i].netid);
		snprintf(cs.c[i].state, sizeof(cs.c[i].state), "%s",
			 v[i].state);
	}
	rr_t_write_or_exit(fd, &cs, sizeof(cs));
}

static void *control_main(void *arg)
{
	int fd = *(int *)arg;
	struct rr_xprt_stats st;
	char cmd[2]; /* SOCK_SEQPACKET: a command is one message */
	ssize_t n;

	while ((n = read(fd, cmd, sizeof(cmd))) >= 1 &&
	       (cmd[0] == CMD_STATS || cmd[0] == CMD_CONNS)) {
		if (cmd[0] == CMD_CONNS) {
			child_conns(fd, n == 2 ? (uint8_t)cmd[1] : 0);
			continue;
		}
		memset(&st, 0, sizeof(st));
		rr_rpc_svc_stats(child_svc, &st);
		rr_t_write_or_exit(fd, &st, sizeof(st));
	}
	rr_rpc_svc_stop(child_svc);
	return NULL;
}

static void child_serve(int fd, const struct rr_t_server_opts *o)
{
	struct sigaction sa = {.sa_handler = on_term};
	struct ready_msg m = {.magic = READY};
	struct rr_xprt_stats st;
	struct rr_rpc_svc *s;
	pthread_t t;
	int rc;

	rc = child_setup(o, &s, &m.port);
	if (rc) {
		fprintf(stderr, "test server: setup failed: %d\n", rc);
		_exit(5);
	}
	child_svc = s;
	sigaction(SIGTERM, &sa, NULL);
	if (pthread_create(&t, NULL, control_main, &fd))
		_exit(6);
	rr_t_write_or_exit(fd, &m, sizeof(m));
	rc = rr_rpc_svc_run(s);
	rr_rpc_svc_shutdown(s);
	memset(&st, 0, sizeof(st));
	rr_rpc_svc_stats(s, &st);
	rr_t_write_or_exit(fd, &st, sizeof(st));
	/* Stopped by SIGTERM, the control thread still reads: end that. */
	shutdown(fd, SHUT_RD);
	pthread_join(t, NULL);
	if (rr_rpc_svc_destroy(s))
		_exit(7);
	_exit(rc ? 8 : 0);
}

void rr_t_server_main(int argc, char **argv)
{
	struct rr_t_server_opts o = {0};
	pid_t parent;
	int fd;

	if (argc != 14 || strcmp(argv[1], ARG0))
		return;
	parent = (pid_t)atoi(argv[2]);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(3);
	fd = atoi(argv[3]);
	o.xprt = strcmp(argv[4], "tcp") ? RR_T_RDMA : RR_T_TCP;
	o.provider = *argv[5] ? argv[5] : NULL;
	o.threads = (uint32_t)atoi(argv[6]);
	o.credits = (uint32_t)atoi(argv[7]);
	o.port = (uint16_t)atoi(argv[8]);
	o.addr = argv[9];
	o.faults = !strcmp(argv[10], "faults");
	o.nofile = (uint32_t)atoi(argv[11]);
	o.vers3 = !strcmp(argv[12], "vers3");
	o.reg_results = !strcmp(argv[13], "reg");
	signal(SIGPIPE, SIG_IGN);
	if (o.nofile) {
		struct rlimit rl = {.rlim_cur = o.nofile, .rlim_max = o.nofile};

		if (setrlimit(RLIMIT_NOFILE, &rl))
			_exit(4);
	}
	child_serve(fd, &o);
}

/* =========================================================== parent */

static void exec_child(const struct rr_t_server_opts *o, pid_t parent, int fd)
{
	char a[6][16];

	snprintf(a[0], sizeof(a[0]), "%d", (int)parent);
	snprintf(a[1], sizeof(a[1]), "%d", fd);
	snprintf(a[2], sizeof(a[2]), "%u", o->threads);
	snprintf(a[3], sizeof(a[3]), "%u", o->credits);
	snprintf(a[4], sizeof(a[4]), "%u", o->port);
	snprintf(a[5], sizeof(a[5]), "%u", o->nofile);
	execl("/proc/self/exe", "rr-t-server", ARG0, a[0], a[1],
	      o->xprt == RR_T_TCP ? "tcp" : "rdma",
	      o->provider ? o->provider : "", a[2], a[3], a[4],
	      o->addr ? o->addr : "127.0.0.1", o->faults ? "faults" : "-", a[5],
	      o->vers3 ? "vers3" : "-", o->reg_results ? "reg" : "-",
	      (char *)NULL);
	_exit(127);
}

static void reap(struct rr_t_server *sv, int *status)
{
	if (sv->pid > 0)
		waitpid(sv->pid, status, 0);
	sv->pid = 0;
	if (sv->ctl >= 0)
		close(sv->ctl);
	sv->ctl = -1;
}

int rr_t_server_start(struct rr_t_server *sv, const struct rr_t_server_opts *o)
{
	pid_t parent = getpid();
	struct ready_msg m;
	int sp[2];

	memset(sv, 0, sizeof(*sv));
	sv->o = *o;
	sv->ctl = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp))
		return -errno;
	sv->pid = fork();
	if (sv->pid < 0) {
		close(sp[0]);
		close(sp[1]);
		return -errno;
	}
	if (sv->pid == 0) {
		close(sp[0]);
		exec_child(o, parent, sp[1]);
	}
	close(sp[1]);
	sv->ctl = sp[0];
	if (!rr_t_read_within(sv->ctl, &m, sizeof(m), RR_T_SERVER_TMO_MS) ||
	    m.magic != READY) {
		fprintf(stderr, "test server sent no port\n");
		kill(sv->pid, SIGKILL);
		reap(sv, NULL);
		return -EIO;
	}
	sv->port = m.port;
	return 0;
}

int rr_t_server_restart(struct rr_t_server *sv)
{
	struct rr_t_server_opts o = sv->o;

	if (sv->pid)
		return -EBUSY;
	if (sv->ctl >= 0)
		close(sv->ctl);
	o.port = sv->port;
	return rr_t_server_start(sv, &o);
}

int rr_t_server_stats(struct rr_t_server *sv, struct rr_xprt_stats *out)
{
	char cmd = CMD_STATS;

	if (!sv->pid || !rr_t_write_all(sv->ctl, &cmd, 1) ||
	    !rr_t_read_within(sv->ctl, out, sizeof(*out), RR_T_SERVER_TMO_MS))
		return -EIO;
	return 0;
}

int rr_t_server_conns(struct rr_t_server *sv, uint8_t cap,
		      struct rr_t_conns *out)
{
	char cmd[2] = {CMD_CONNS, (char)cap};

	if (!sv->pid || !rr_t_write_all(sv->ctl, cmd, sizeof(cmd)) ||
	    !rr_t_read_within(sv->ctl, out, sizeof(*out), RR_T_SERVER_TMO_MS))
		return -EIO;
	for (uint32_t i = 0; i < out->shown && i < RR_T_CONNS_MAX; i++) {
		out->c[i].info.netid = out->c[i].netid;
		out->c[i].info.state = out->c[i].state;
	}
	return 0;
}

int rr_t_server_stop(struct rr_t_server *sv)
{
	char cmd = CMD_STOP;
	int status = 0, rc = 0;

	if (!sv->pid) {
		reap(sv, NULL);
		return 0;
	}
	kill(sv->pid, SIGCONT);
	sv->have_stats = rr_t_write_all(sv->ctl, &cmd, 1) &&
			 rr_t_read_within(sv->ctl, &sv->st, sizeof(sv->st),
					  RR_T_SERVER_TMO_MS);
	if (!sv->have_stats) {
		fprintf(stderr, "test server did not stop in %d ms\n",
			RR_T_SERVER_TMO_MS);
		kill(sv->pid, SIGKILL);
		rc = -1;
	}
	reap(sv, &status);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "test server ended with status %#x\n", status);
		rc = -1;
	}
	if (sv->have_stats && sv->st.state_violations) { /* base/fsm.h */
		fprintf(stderr, "test server's state machine moved where it "
				"may not\n");
		rc = -1;
	}
	if (sv->have_stats && sv->st.teardown_unbalanced) {
		fprintf(stderr,
			"test server tore down %llu connections "
			"undrained\n",
			(unsigned long long)sv->st.teardown_unbalanced);
		rc = -1;
	}
	return rc;
}

static int signal_and_wait(struct rr_t_server *sv, int sig, int flag)
{
	int status;

	if (!sv->pid || kill(sv->pid, sig) ||
	    waitpid(sv->pid, &status, flag) != sv->pid)
		return -1;
	if (flag == WUNTRACED)
		return WIFSTOPPED(status) ? 0 : -1;
	if (flag == WCONTINUED)
		return WIFCONTINUED(status) ? 0 : -1;
	sv->pid = 0;
	return WIFSIGNALED(status) ? 0 : -1;
}

int rr_t_server_freeze(struct rr_t_server *sv)
{
	return signal_and_wait(sv, SIGSTOP, WUNTRACED);
}

int rr_t_server_thaw(struct rr_t_server *sv)
{
	return signal_and_wait(sv, SIGCONT, WCONTINUED);
}

int rr_t_server_kill(struct rr_t_server *sv)
{
	int rc = signal_and_wait(sv, SIGKILL, 0);

	if (sv->ctl >= 0)
		close(sv->ctl);
	sv->ctl = -1;
	return rc;
}
