// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A process killed while its request waits on a hard mount. Once FUSE
 * has handed a request to us, the kernel waits for our answer even
 * through SIGKILL, so without this a dead server leaves its callers
 * unkillable. The kernel NFS client's hard mounts let fatal signals
 * interrupt a call (nfs(5)), and so do we: FUSE sends an INTERRUPT when
 * the waiting thread gets a signal, and a call of that request waiting
 * on the server is cancelled if the thread is dying. Other signals leave
 * it waiting, as on the kernel client; a SIGKILL after one of them comes
 * with no second INTERRUPT, which is why the check goes on asking while
 * the call waits (rr_nfs_set_thread_abort) rather than once.
 *
 * Every call also ends once the session is ending (SIGTERM, SIGINT):
 * libfuse joins its workers before the daemon exits, and one waiting
 * for a server that is gone would hold the daemon up for good.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>

#include "fpriv.h"

struct fintr {
	atomic_bool hit; /* an INTERRUPT came for the request */
	bool armed;	 /* the request is not answered yet */
	pid_t tid;	 /* the thread that made it */
	struct fuse_session *se;
};

static __thread struct fintr intr;

static void on_interrupt(fuse_req_t req, void *data)
{
	struct fintr *x = data;

	(void)req;
	atomic_store(&x->hit, true);
}

/*
 * A fatal signal pending for tid: the kernel puts SIGKILL in the pending
 * set of every thread of a process a fatal signal is ending.
 */
bool rr__fuse_dying(pid_t tid)
{
	char path[48], line[128];
	bool fatal = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return true; /* gone: nobody waits for the answer */
	while (fgets(line, sizeof(line), f)) {
		unsigned long long m;

		if (sscanf(line, "SigPnd: %llx", &m) == 1 ||
		    sscanf(line, "ShdPnd: %llx", &m) == 1)
			fatal |= (m & (1ull << (SIGKILL - 1))) != 0;
	}
	fclose(f);
	return fatal;
}

static bool aborted(void *arg)
{
	struct fintr *x = arg;

	if (x->se && fuse_session_exited(x->se))
		return true;
	return x->armed && atomic_load(&x->hit) && rr__fuse_dying(x->tid);
}

void rr__fuse_intr_arm(fuse_req_t req)
{
	struct rrf *f = fuse_req_userdata(req);

	atomic_store(&intr.hit, false);
	intr.armed = true;
	intr.tid = fuse_req_ctx(req)->pid;
	intr.se = f->se;
	rr_nfs_set_thread_abort(aborted, &intr);
	fuse_req_interrupt_func(req, on_interrupt, &intr);
}

void rr__fuse_intr_disarm(struct rrf *f)
{
	intr.armed = false;
	intr.se = f->se;
	rr_nfs_set_thread_abort(aborted, &intr);
}
