/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Sets a file's POSIX access ACL on a CephFS directly through libcephfs,
 * as another client of the cluster would: NFSv3 has no ACL operation of
 * ours to do it with. The ACL is user::rw-, one r-- entry per uid given,
 * group::r--, mask::r--, other::---, so a file of mode 0640 keeps its
 * mode whatever uids are named: only its ctime says that the ACL moved.
 *
 * usage: ceph_acl CEPH_CONF PATH [UID...]   (PATH from the file system's
 * root). Exit 0, or 1 saying what failed.
 */
#define _FILE_OFFSET_BITS 64 /* libcephfs.h insists */
#include <cephfs/libcephfs.h>

#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The Linux xattr form of an ACL (posix_acl_xattr.h), little-endian. */
#define ACL_XATTR_VERSION 2
#define TAG_USER_OBJ	  0x01
#define TAG_USER	  0x02
#define TAG_GROUP_OBJ	  0x04
#define TAG_MASK	  0x10
#define TAG_OTHER	  0x20
#define NO_ID		  0xffffffffu
#define MAX_UIDS	  8

struct acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};

static size_t put(struct acl_entry *e, uint16_t tag, uint16_t perm, uint32_t id)
{
	e->tag = htole16(tag);
	e->perm = htole16(perm);
	e->id = htole32(id);
	return 1;
}

/* Entries in the order the kernel and Ceph require: by tag, then id. */
static size_t build(struct acl_entry *e, char **uids, int n)
{
	size_t k = 0;

	k += put(&e[k], TAG_USER_OBJ, 6, NO_ID);
	for (int i = 0; i < n; i++)
		k += put(&e[k], TAG_USER, 4,
			 (uint32_t)strtoul(uids[i], NULL, 10));
	k += put(&e[k], TAG_GROUP_OBJ, 4, NO_ID);
	k += put(&e[k], TAG_MASK, 4, NO_ID);
	k += put(&e[k], TAG_OTHER, 0, NO_ID);
	return k;
}

static int set_acl(struct ceph_mount_info *cm, const char *path, char **uids,
		   int n)
{
	struct {
		uint32_t version;
		struct acl_entry e[MAX_UIDS + 4];
	} acl = {.version = htole32(ACL_XATTR_VERSION)};
	size_t k = build(acl.e, uids, n);

	return ceph_setxattr(cm, path, "system.posix_acl_access", &acl,
			     sizeof(acl.version) + k * sizeof(acl.e[0]), 0);
}

static int failed(const char *step, int rc)
{
	fprintf(stderr, "ceph_acl: %s: %s\n", step, strerror(-rc));
	return 1;
}

int main(int argc, char **argv)
{
	struct ceph_mount_info *cm;
	int rc;

	if (argc < 3 || argc - 3 > MAX_UIDS) {
		fprintf(stderr,
			"usage: %s CEPH_CONF PATH [UID...] (at most %d)\n",
			argv[0], MAX_UIDS);
		return 2;
	}
	rc = ceph_create(&cm, NULL);
	if (rc)
		return failed("ceph_create", rc);
	rc = ceph_conf_read_file(cm, argv[1]);
	/* without it libcephfs refuses the ACL xattr */
	if (!rc)
		rc = ceph_conf_set(cm, "client_acl_type", "posix_acl");
	if (rc) {
		ceph_release(cm);
		return failed("configuration", rc);
	}
	rc = ceph_mount(cm, "/");
	if (rc) {
		ceph_release(cm);
		return failed("ceph_mount", rc);
	}
	rc = set_acl(cm, argv[2], argv + 3, argc - 3);
	ceph_shutdown(cm);
	return rc ? failed("ceph_setxattr", rc) : 0;
}
