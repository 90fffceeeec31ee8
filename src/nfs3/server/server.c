/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The server object: the export's root, the file-handle key, the write
 * verifier, and the counters.
 *
 * The key is what makes handles survive a restart: it is kept in
 * state_dir/fh.key (mode 0600, made once from getrandom). The write
 * verifier (RFC 1813 section 3.3.7) is new at every start, so a client
 * holding UNSTABLE writes learns that a restart may have lost them and
 * sends them again.
 */
#include "nfs3/server/nfsd.h"
#include "nfs3/server/backend/local.h"
#include "nfs3/server/backend/lock_table.h"

#include "base/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

/*
 * Files the open-file cache may keep: each holds up to three descriptors,
 * and the transports need theirs, so a sixteenth of the process's limit.
 */
static uint32_t files_max(void)
{
	struct rlimit rl;
	rlim_t n = 1024;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		n = rl.rlim_cur;
	n /= 16;
	return n < 16 ? 16 : n > 4096 ? 4096 : (uint32_t)n;
}

static int random_bytes(void *p, size_t n)
{
	ssize_t got = getrandom(p, n, 0);

	return got == (ssize_t)n ? 0 : -EIO;
}

static int read_key(int dfd, uint8_t key[NFSD_KEY_LEN])
{
	int fd = openat(dfd, "fh.key", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, key, NFSD_KEY_LEN);
	close(fd);
	return n == NFSD_KEY_LEN ? 0 : -EINVAL;
}

static int write_key(int dfd, const uint8_t key[NFSD_KEY_LEN])
{
	int fd = openat(dfd, "fh.key",
			O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			0600);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, key, NFSD_KEY_LEN) != NFSD_KEY_LEN || fsync(fd))
		rc = -EIO;
	close(fd);
	if (rc)
		unlinkat(dfd, "fh.key", 0);
	return rc;
}

static int load_key(const char *dir, uint8_t key[NFSD_KEY_LEN])
{
	int dfd, rc;

	if (!dir)
		return random_bytes(key, NFSD_KEY_LEN);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	rc = read_key(dfd, key);
	if (rc == -ENOENT) {
		rc = random_bytes(key, NFSD_KEY_LEN);
		if (!rc)
			rc = write_key(dfd, key);
		if (rc == -EEXIST) /* another server made it first */
			rc = read_key(dfd, key);
	}
	close(dfd);
	return rc;
}

static int open_root(struct rr_nfs3_server *s)
{
	struct stat st;

	s->export_path = rr_strdup(s->o.export_path);
	/* realpath allocates with malloc: it fails when the injector says so */
	s->export_real =
		RR_ALLOC_FAILS() ? NULL : realpath(s->o.export_path, NULL);
	if (!s->export_path || !s->export_real)
		return s->export_path ? -errno : -ENOMEM;
	s->root_fd = open(s->export_real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->root_fd < 0)
		return -errno;
	if (fstat(s->root_fd, &st))
		return -errno;
	s->root_dev = st.st_dev;
	s->root_ino = st.st_ino;
	return 0;
}

/*
 * A CephFS export has no local directory: its path is only the name
 * clients mount, and the backend opens the file system.
 */
static int open_backend(struct rr_nfs3_server *s, const struct nfsd_be_conf *bc,
			char *err, size_t errlen)
{
	if (!bc || bc->kind == NFSD_BE_LOCAL)
		return open_root(s);
	s->export_path = rr_strdup(s->o.export_path);
	s->export_real = rr_strdup(s->o.export_path);
	if (!s->export_path || !s->export_real)
		return -ENOMEM;
	return rr__nfsd_cephfs_open(s, bc, err, errlen);
}

int rr_nfs3_server_create(const struct rr_nfs3_server_opts *o,
			  struct rr_nfs3_server **out)
{
	return rr__nfsd_server_create_be(o, NULL, out, NULL, 0);
}

int rr__nfsd_server_create_be(const struct rr_nfs3_server_opts *o,
			      const struct nfsd_be_conf *bc,
			      struct rr_nfs3_server **out, char *err,
			      size_t errlen)
{
	struct rr_nfs3_server *s;
	int rc;

	if (!o || !o->export_path || !out)
		return -EINVAL;
	s = rr_calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->root_fd = -1;
	s->be.ops = &rr__nfsd_be_local_ops;
	if (!s->o.anon_uid)
		s->o.anon_uid = NFSD_ANON;
	if (!s->o.anon_gid)
		s->o.anon_gid = NFSD_ANON;
	s->pol = (struct nfsd_policy){
		.ro = o->read_only,
		.squash = o->root_squash ? NFSD_SQUASH_ROOT : NFSD_SQUASH_NONE,
		.anon_uid = s->o.anon_uid,
		.anon_gid = s->o.anon_gid};
	s->as_root = geteuid() == 0;
	s->egid = getegid();
	s->ngroups = getgroups(64, s->groups);
	if (s->ngroups < 0)
		s->ngroups = 0; /* more than 64: act with none, never more */
	pthread_mutex_init(&s->mnt_lock, NULL);
	rc = open_backend(s, bc, err, errlen);
	if (!rc)
		rc = load_key(o->state_dir, s->key);
	if (!rc)
		rc = random_bytes(s->write_verf, sizeof(s->write_verf));
	if (!rc)
		rc = rr__nfsd_cache_create(&s->cache, o->handle_cache_bytes);
	if (!rc)
		rc = rr__nfsd_walk_budget_create(o, &s->walks);
	if (!rc)
		rc = rr__nfsd_fcache_create(&s->files, files_max());
	if (rc) {
		rr_nfs3_server_destroy(s);
		return rc;
	}
	s->o.export_path = s->export_path;
	s->o.state_dir = NULL; /* not kept: the caller's string */
	*out = s;
	return 0;
}

void rr_nfs3_server_destroy(struct rr_nfs3_server *s)
{
	if (!s)
		return;
	rr__nfsd_mounts_free(s);
	if (s->be.ops->destroy)
		s->be.ops->destroy(&s->be);
	rr__nfsd_fcache_destroy(s->files);
	rr__nfsd_locks_free(s);
	rr__nfsd_cache_destroy(s->cache);
	rr__nfsd_walk_budget_destroy(s->walks);
	if (s->root_fd >= 0)
		close(s->root_fd);
	pthread_mutex_destroy(&s->mnt_lock);
	free(s->export_path);
	free(s->export_real);
	free(s);
}

void rr_nfs3_server_stats(struct rr_nfs3_server *s,
			  struct rr_nfs3_server_stats *out)
{
	out->calls = atomic_load(&s->calls);
	out->garbage_args = atomic_load(&s->garbage_args);
	out->bad_handles = atomic_load(&s->bad_handles);
	out->stale_handles = atomic_load(&s->stale_handles);
	out->handle_searches = atomic_load(&s->searches);
	out->walk_dirs = atomic_load(&s->walk_dirs);
	out->walks_refused = atomic_load(&s->walks_refused);
	rr__nfsd_cache_stats(s->cache, &out->handle_cache_entries,
			     &out->handle_cache_bytes,
			     &out->handle_cache_evicted);
	out->kept_opens = out->write_syncs = 0;
	if (s->be.ops->stats)
		s->be.ops->stats(&s->be, out);
}
