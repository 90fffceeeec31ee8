/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What WRITEs gave libcephfs and the OSDs have not yet stored: bounded.
 *
 * An UNSTABLE WRITE returns once libcephfs has copied it into its object
 * cacher, which sends dirty data to the OSDs in the background. The
 * cacher stops a writer while client_oc_max_dirty bytes wait to be sent,
 * but not for what was sent and is not yet stored: a write over data
 * being sent makes it dirty again, and it is sent again while the first
 * copy is still in flight. libcephfs 16.2's objecter counts those bytes
 * against objecter_inflight_op_bytes (100 MiB) but never waits on the
 * count (it "takes" budget; only a client that asks for a balanced
 * budget waits, and libcephfs' does not). One client rewriting a 64 MiB
 * file at depth 4 had 3.3 GB in flight after 12 s, all of it in
 * nfsrdmad's memory, and growing for as long as it wrote.
 *
 * So the backend counts the bytes UNSTABLE WRITEs gave libcephfs since
 * the last sync began. The WRITE that takes the count to the bound
 * (client_oc_max_dirty, at least WB_FLOOR) syncs the mount (ceph_sync_fs:
 * everything written before it is stored when it returns) before it
 * answers, and WRITEs that reach the bound meanwhile wait for that sync.
 * In flight is then at most twice the bound and a WRITE per worker: the
 * dirty-page throttling a kernel server gets from its page cache. The
 * WRITE's own result stands whatever the sync says; a failed sync leaves
 * the count, so the next WRITE tries again, and COMMIT reports the error.
 */
#include "nfs3/server/backend/cephfs.h"
#include "base/log.h"

#include <stdlib.h>
#include <string.h>

#define WB_FLOOR (8ull << 20)

void rr__nfsd_ceph_wb_init(struct ceph_writeback *wb)
{
	pthread_mutex_init(&wb->mu, NULL);
	atomic_init(&wb->unsynced, 0);
	atomic_init(&wb->syncs, 0);
	wb->bound = WB_FLOOR;
}

void rr__nfsd_ceph_wb_configure(struct ceph_writeback *wb,
				struct ceph_mount_info *cm)
{
	char v[64];
	unsigned long long n;

	if (ceph_conf_get(cm, "client_oc_max_dirty", v, sizeof(v)))
		return;
	n = strtoull(v, NULL, 10);
	wb->bound = n > WB_FLOOR ? n : WB_FLOOR;
}

void rr__nfsd_ceph_wb_destroy(struct ceph_writeback *wb)
{
	pthread_mutex_destroy(&wb->mu);
}

void rr__nfsd_ceph_wb_wrote(struct ceph_writeback *wb,
			    struct ceph_mount_info *cm, uint64_t n)
{
	uint64_t taken;
	int rc;

	if (atomic_fetch_add(&wb->unsynced, n) + n < wb->bound)
		return;
	pthread_mutex_lock(&wb->mu);
	if (atomic_load(&wb->unsynced) >= wb->bound) {
		taken = atomic_exchange(&wb->unsynced, 0);
		rc = ceph_sync_fs(cm);
		if (rc) {
			atomic_fetch_add(&wb->unsynced, taken);
			rr_warn_rl("cephfs: sync at the write bound: %s (a "
				   "COMMIT will say so to its client)",
				   strerror(-rc));
		}
		atomic_fetch_add(&wb->syncs, 1);
	}
	pthread_mutex_unlock(&wb->mu);
}

uint64_t rr__nfsd_ceph_wb_syncs(struct ceph_writeback *wb)
{
	return atomic_load(&wb->syncs);
}
