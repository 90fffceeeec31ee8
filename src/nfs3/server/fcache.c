/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Open files by handle. Without it every READ walks a path beneath the
 * root, stats, switches to the caller's identity, opens the file again,
 * closes both and switches back: a dozen system calls around one pread.
 * With it a handle in use finds a descriptor kept from an earlier call,
 * and READ and WRITE decide permissions from the mode bits where that
 * gives the kernel's answer (ident.c, rr__nfsd_mode_decides).
 *
 * An entry is a regular file (fh.c says why only those), keyed by what a
 * handle names (dev, ino, birth). It holds an O_PATH descriptor opened
 * beneath the root, the path that proved it and,
 * made as the server on first use, one descriptor for reading and one for
 * writing. Those descriptors never change while the entry lives: a call
 * holds the entry (a reference) while it uses them, and an entry dropped
 * (forgotten, evicted, idle) is closed when its last holder lets go,
 * never under a call.
 *
 * Whether an entry still stands for its handle is asked on every use
 * (fh.c), with attributes fresh from its descriptor:
 *  - no links left: nothing names the file any more, the handle is STALE;
 *  - type, mode or owner other than when the descriptors were made: the
 *    entry goes and a new one is made by the path, as on a miss;
 *  - ctime other than at the last proof, or that proof older than
 *    reval_ms, or racy: the path is proven again beneath the root and the
 *    ACL looked at again. Renaming, linking or unlinking the file and
 *    changing its ACL all change its ctime; moving a directory above it
 *    out of the export does not, which is what reval_ms bounds.
 *  - A proof is racy when the ctime it saw is too close to when it began:
 *    ctime comes from a coarse clock (and some file systems keep whole
 *    seconds), so a change in the same tick would leave it as it was
 *    (git's index has the same problem and the same answer).
 *
 * Bounded: at most max entries, the least recently used idle ones evicted
 * first; a reaper thread closes entries unused for idle_ms, so that a
 * file removed elsewhere does not keep its blocks for long, and a quiet
 * server holds no files open.
 *
 * Locking: one mutex for the table, the LRU list, references and each
 * entry's proof; the entry's key, descriptors and path are fixed before
 * it is published. No system call is made under the lock.
 */
#include "nfs3/server/nfsd.h"
#include "base/alloc.h"
#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#define FC_BUCKETS	  1024
#define FC_IDLE_MS	  2000
#define FC_REVAL_MS	  1000
#define FC_RACY_NS	  50000000ll   /* several coarse clock ticks */
#define FC_RACY_COARSE_NS 2000000000ll /* whole (or even) seconds */

struct nfsd_file {
	/* fixed while the entry lives */
	uint64_t dev, ino, birth;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	int pfd;
	char *path;
	/* under the cache's lock */
	int rfd, wfd; /* -1 until first needed, then fixed */
	uint32_t refs;
	bool hashed;
	bool trusted; /* the proof was not racy */
	bool acl;
	struct timespec vctime; /* ctime at the last proof */
	uint64_t proven_ms, used_ms;
	struct nfsd_file *hnext, *prev, *next;
};

struct nfsd_fcache {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the reaper's: stop, or new timings */
	pthread_t reaper;
	bool reaping, stop;
	uint32_t max, n, idle_ms, reval_ms;
	struct nfsd_file *b[FC_BUCKETS];
	struct nfsd_file lru; /* lru.next: most recently used */
	struct rr__nfsd_fcache_stats st;
};

/* ----------------------------------------------------------- table */

static size_t fc_bucket(uint64_t dev, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) ^ dev) % FC_BUCKETS;
}

static void lru_unlink(struct nfsd_file *f)
{
	f->prev->next = f->next;
	f->next->prev = f->prev;
}

static void lru_front(struct nfsd_fcache *fc, struct nfsd_file *f)
{
	f->next = fc->lru.next;
	f->prev = &fc->lru;
	fc->lru.next->prev = f;
	fc->lru.next = f;
}

/* Caller holds the lock. */
static struct nfsd_file *find(struct nfsd_fcache *fc, uint64_t dev,
			      uint64_t ino, uint64_t birth)
{
	struct nfsd_file *f = fc->b[fc_bucket(dev, ino)];

	while (f && !(f->dev == dev && f->ino == ino && f->birth == birth))
		f = f->hnext;
	return f;
}

/*
 * Takes f out of the table; caller holds the lock. Returns whether nobody
 * holds it, in which case it is pushed on *dead for the caller to free
 * once the lock is dropped.
 */
static bool unhash(struct nfsd_fcache *fc, struct nfsd_file *f,
		   struct nfsd_file **dead)
{
	struct nfsd_file **pp = &fc->b[fc_bucket(f->dev, f->ino)];

	while (*pp != f)
		pp = &(*pp)->hnext;
	*pp = f->hnext;
	lru_unlink(f);
	f->hashed = false;
	fc->n--;
	if (f->refs)
		return false;
	f->hnext = *dead;
	*dead = f;
	return true;
}

static void file_free(struct nfsd_file *f)
{
	close(f->pfd);
	if (f->rfd >= 0)
		close(f->rfd);
	if (f->wfd >= 0)
		close(f->wfd);
	free(f->path);
	free(f);
}

static void free_dead(struct nfsd_file *dead)
{
	while (dead) {
		struct nfsd_file *f = dead;

		dead = f->hnext;
		file_free(f);
	}
}

/* Idle entries from the cold end until there is room; caller locks. */
static struct nfsd_file *make_room(struct nfsd_fcache *fc)
{
	struct nfsd_file *dead = NULL, *f = fc->lru.prev;

	while (fc->n >= fc->max && f != &fc->lru) {
		struct nfsd_file *prev = f->prev;

		if (!f->refs && unhash(fc, f, &dead))
			fc->st.evicted++;
		f = prev;
	}
	return dead;
}

/* ----------------------------------------------------------- proofs */

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000ll + t->tv_nsec;
}

/* Any change after t0 will show in ctime: see "racy" above. */
static bool settled(const struct timespec *ctime, const struct timespec *t0)
{
	int64_t margin = ctime->tv_nsec ? FC_RACY_NS : FC_RACY_COARSE_NS;

	return ts_ns(ctime) + margin <= ts_ns(t0);
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

bool rr__nfsd_has_acl(int fd)
{
	char p[32];

	rr__nfsd_fd_path(fd, p);
	if (getxattr(p, "system.posix_acl_access", NULL, 0) >= 0)
		return true;
	return errno != ENODATA && errno != EOPNOTSUPP;
}

int rr__nfsd_file_current(struct nfsd_fcache *fc, struct nfsd_file *f,
			  const struct stat *st, uint64_t now_ms, bool *acl)
{
	int ok;

	if (st->st_mode != f->mode || st->st_uid != f->uid ||
	    st->st_gid != f->gid)
		return -1;
	pthread_mutex_lock(&fc->lock);
	/* signed: another call may have proven it since now_ms was read */
	ok = f->trusted && same_time(&st->st_ctim, &f->vctime) &&
	     (int64_t)(now_ms - f->proven_ms) < (int64_t)fc->reval_ms;
	*acl = f->acl;
	pthread_mutex_unlock(&fc->lock);
	return ok;
}

void rr__nfsd_file_proven(struct nfsd_fcache *fc, struct nfsd_file *f,
			  const struct stat *st, const struct timespec *t0,
			  bool acl)
{
	uint64_t now = rr_coarse_ms();

	pthread_mutex_lock(&fc->lock);
	f->vctime = st->st_ctim;
	f->trusted = settled(&st->st_ctim, t0);
	f->acl = acl;
	f->proven_ms = now;
	pthread_mutex_unlock(&fc->lock);
}

int rr__nfsd_file_pfd(const struct nfsd_file *f)
{
	return f->pfd;
}

const char *rr__nfsd_file_path(const struct nfsd_file *f)
{
	return f->path;
}

int rr__nfsd_file_fd_made(struct nfsd_fcache *fc, struct nfsd_file *f,
			  int flags)
{
	int fd;

	pthread_mutex_lock(&fc->lock);
	fd = flags == O_RDONLY ? f->rfd : f->wfd;
	pthread_mutex_unlock(&fc->lock);
	return fd >= 0 ? fd : -EAGAIN;
}

int rr__nfsd_file_fd(struct nfsd_fcache *fc, struct nfsd_file *f, int flags)
{
	int *slot = flags == O_RDONLY ? &f->rfd : &f->wfd;
	int fd, mine;

	pthread_mutex_lock(&fc->lock);
	fd = *slot;
	pthread_mutex_unlock(&fc->lock);
	if (fd >= 0)
		return fd;
	mine = rr__nfsd_reopen(f->pfd, flags);
	if (mine < 0)
		return mine;
	pthread_mutex_lock(&fc->lock);
	if (*slot < 0) {
		*slot = mine; /* another call may have raced us here */
		mine = -1;
	}
	fd = *slot;
	pthread_mutex_unlock(&fc->lock);
	if (mine >= 0)
		close(mine);
	return fd;
}

/* ------------------------------------------------------ get and put */

struct nfsd_file *rr__nfsd_fcache_get(struct nfsd_fcache *fc, uint64_t dev,
				      uint64_t ino, uint64_t birth)
{
	uint64_t now = rr_coarse_ms();
	struct nfsd_file *f;

	pthread_mutex_lock(&fc->lock);
	f = find(fc, dev, ino, birth);
	if (f) {
		f->refs++;
		f->used_ms = now;
		lru_unlink(f);
		lru_front(fc, f);
		fc->st.hits++;
	} else {
		fc->st.misses++;
	}
	pthread_mutex_unlock(&fc->lock);
	return f;
}

static struct nfsd_file *file_new(const struct nfsd_obj *o,
				  const struct timespec *t0)
{
	struct nfsd_file *f = rr_calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->path = rr_strdup(o->path);
	if (!f->path) {
		free(f);
		return NULL;
	}
	f->dev = (uint64_t)o->st.st_dev;
	f->ino = (uint64_t)o->st.st_ino;
	f->birth = o->birth;
	f->mode = o->st.st_mode;
	f->uid = o->st.st_uid;
	f->gid = o->st.st_gid;
	f->pfd = o->fd;
	f->rfd = f->wfd = -1;
	f->refs = 1;
	f->hashed = true;
	f->acl = o->acl;
	f->vctime = o->st.st_ctim;
	f->trusted = settled(&o->st.st_ctim, t0);
	f->proven_ms = f->used_ms = rr_coarse_ms();
	return f;
}

struct nfsd_file *rr__nfsd_fcache_add(struct nfsd_fcache *fc,
				      const struct nfsd_obj *o,
				      const struct timespec *t0)
{
	struct nfsd_file *f = file_new(o, t0), *old, *dead = NULL;
	size_t h;

	if (!f)
		return NULL;
	pthread_mutex_lock(&fc->lock);
	old = find(fc, f->dev, f->ino, f->birth);
	if (old) {
		/* another call entered it first: use that one, drop ours */
		old->refs++;
		old->used_ms = f->used_ms;
		pthread_mutex_unlock(&fc->lock);
		file_free(f);
		return old;
	}
	dead = make_room(fc);
	h = fc_bucket(f->dev, f->ino);
	f->hnext = fc->b[h];
	fc->b[h] = f;
	lru_front(fc, f);
	fc->n++;
	pthread_mutex_unlock(&fc->lock);
	free_dead(dead);
	return f;
}

void rr__nfsd_fcache_put(struct nfsd_fcache *fc, struct nfsd_file *f)
{
	bool last;

	pthread_mutex_lock(&fc->lock);
	last = --f->refs == 0 && !f->hashed;
	pthread_mutex_unlock(&fc->lock);
	if (last)
		file_free(f);
}

void rr__nfsd_fcache_forget(struct nfsd_fcache *fc, uint64_t dev, uint64_t ino)
{
	struct nfsd_file *dead = NULL, *f, *next;

	pthread_mutex_lock(&fc->lock);
	for (f = fc->b[fc_bucket(dev, ino)]; f; f = next) {
		next = f->hnext; /* unhash may reuse hnext */
		if (f->dev == dev && f->ino == ino) {
			unhash(fc, f, &dead);
			fc->st.forgotten++;
		}
	}
	pthread_mutex_unlock(&fc->lock);
	free_dead(dead);
}

void rr__nfsd_fcache_sweep(struct nfsd_fcache *fc, uint64_t now_ms)
{
	struct nfsd_file *dead = NULL, *f;

	pthread_mutex_lock(&fc->lock);
	/* the list runs from most to least recently used */
	for (f = fc->lru.prev; f != &fc->lru;) {
		struct nfsd_file *prev = f->prev;

		/* signed: a call may have used it since now_ms was read */
		if ((int64_t)(now_ms - f->used_ms) < (int64_t)fc->idle_ms)
			break;
		if (!f->refs && unhash(fc, f, &dead))
			fc->st.swept++;
		f = prev;
	}
	pthread_mutex_unlock(&fc->lock);
	free_dead(dead);
}

void rr__nfsd_fcache_stats(struct nfsd_fcache *fc,
			   struct rr__nfsd_fcache_stats *out)
{
	pthread_mutex_lock(&fc->lock);
	*out = fc->st;
	out->open = fc->n;
	pthread_mutex_unlock(&fc->lock);
}

/* ------------------------------------------------------- lifetime */

static uint32_t period_ms(const struct nfsd_fcache *fc)
{
	uint32_t p = fc->idle_ms / 2;

	return p < 10 ? 10 : p > 1000 ? 1000 : p;
}

static void deadline(struct timespec *ts, uint32_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* A timer, not a synchronisation: sweeps every period until stopped. */
static void *reaper(void *arg)
{
	struct nfsd_fcache *fc = arg;
	struct timespec ts;

	pthread_setname_np(pthread_self(), "rr-fcache");

	pthread_mutex_lock(&fc->lock);
	while (!fc->stop) {
		deadline(&ts, period_ms(fc));
		if (pthread_cond_timedwait(&fc->wake, &fc->lock, &ts) !=
		    ETIMEDOUT)
			continue; /* stopped, or new timings */
		pthread_mutex_unlock(&fc->lock);
		rr__nfsd_fcache_sweep(fc, rr_coarse_ms());
		pthread_mutex_lock(&fc->lock);
	}
	pthread_mutex_unlock(&fc->lock);
	return NULL;
}

/* The reaper takes no signals: they are the daemon's threads' to take. */
static int reaper_start(struct nfsd_fcache *fc)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&fc->reaper, NULL, reaper, fc);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	fc->reaping = rc == 0;
	return -rc;
}

int rr__nfsd_fcache_create(struct nfsd_fcache **out, uint32_t max)
{
	struct nfsd_fcache *fc = rr_calloc(1, sizeof(*fc));
	int rc;

	if (!fc)
		return -ENOMEM;
	fc->max = max ? max : 1;
	fc->idle_ms = FC_IDLE_MS;
	fc->reval_ms = FC_REVAL_MS;
	fc->lru.next = fc->lru.prev = &fc->lru;
	pthread_mutex_init(&fc->lock, NULL);
	rr_cond_init_mono(&fc->wake);
	rc = reaper_start(fc);
	if (rc) {
		rr__nfsd_fcache_destroy(fc);
		return rc;
	}
	*out = fc;
	return 0;
}

void rr__nfsd_fcache_tune(struct nfsd_fcache *fc, uint32_t idle_ms,
			  uint32_t reval_ms)
{
	pthread_mutex_lock(&fc->lock);
	fc->idle_ms = idle_ms;
	fc->reval_ms = reval_ms;
	pthread_cond_signal(&fc->wake);
	pthread_mutex_unlock(&fc->lock);
}

void rr__nfsd_fcache_destroy(struct nfsd_fcache *fc)
{
	struct nfsd_file *dead = NULL;

	if (!fc)
		return;
	if (fc->reaping) {
		pthread_mutex_lock(&fc->lock);
		fc->stop = true;
		pthread_cond_signal(&fc->wake);
		pthread_mutex_unlock(&fc->lock);
		pthread_join(fc->reaper, NULL);
	}
	/* ORDER: no call runs any more, so nothing is held */
	while (fc->lru.next != &fc->lru)
		unhash(fc, fc->lru.next, &dead);
	free_dead(dead);
	pthread_cond_destroy(&fc->wake);
	pthread_mutex_destroy(&fc->lock);
	free(fc);
}
