/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The NFS server's codecs alone: errno to nfsstat3, SipHash against the
 * reference vector, and file handles that verify only as they were made.
 */
#include "nfs3/server/nfsd.h"

#include <errno.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static void errno_maps_to_nfsstat3(void **state)
{
	static const struct {
		int err;
		nfsstat3 st;
	} t[] = {
		{0, NFS3_OK},
		{EPERM, NFS3ERR_PERM},
		{ENOENT, NFS3ERR_NOENT},
		{EIO, NFS3ERR_IO},
		{ENXIO, NFS3ERR_NXIO},
		{EACCES, NFS3ERR_ACCES},
		{ELOOP, NFS3ERR_ACCES},
		{EEXIST, NFS3ERR_EXIST},
		{EXDEV, NFS3ERR_XDEV},
		{ENODEV, NFS3ERR_NODEV},
		{ENOTDIR, NFS3ERR_NOTDIR},
		{EISDIR, NFS3ERR_ISDIR},
		{EINVAL, NFS3ERR_INVAL},
		{EFBIG, NFS3ERR_FBIG},
		{ENOSPC, NFS3ERR_NOSPC},
		{EROFS, NFS3ERR_ROFS},
		{EMLINK, NFS3ERR_MLINK},
		{ENAMETOOLONG, NFS3ERR_NAMETOOLONG},
		{ENOTEMPTY, NFS3ERR_NOTEMPTY},
		{EDQUOT, NFS3ERR_DQUOT},
		{ESTALE, NFS3ERR_STALE},
		{EOPNOTSUPP, NFS3ERR_NOTSUPP},
		{EAGAIN, NFS3ERR_JUKEBOX},
		{EBADMSG, NFS3ERR_IO}, /* anything else */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(rr__nfsd_errno(t[i].err), t[i].st);
		assert_int_equal(rr__nfsd_errno(-t[i].err), t[i].st);
	}
}

/* The SipHash paper's test vector (appendix A). */
static void siphash_matches_reference_vector(void **state)
{
	uint8_t key[16], msg[15], out[8];
	static const uint8_t want[8] = {0xe5, 0x45, 0xbe, 0x49,
					0x61, 0xca, 0x29, 0xa1};

	(void)state;
	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 15; i++)
		msg[i] = (uint8_t)i;
	rr__nfsd_siphash(key, msg, sizeof(msg), out);
	assert_memory_equal(out, want, 8);
}

static void handle_verifies_only_as_made(void **state)
{
	uint8_t key[NFSD_KEY_LEN] = "0123456789abcdef";
	uint8_t other[NFSD_KEY_LEN] = "0123456789abcdeF";
	struct stat st = {.st_dev = 0x801, .st_ino = 123456789};
	uint8_t fh[NFSD_FH_LEN], bad[NFSD_FH_LEN];
	uint64_t dev, ino, birth;

	(void)state;
	assert_int_equal(rr__nfsd_fh_encode(key, &st, 42, fh), NFSD_FH_LEN);
	assert_int_equal(
		rr__nfsd_fh_verify(key, fh, sizeof(fh), &dev, &ino, &birth), 0);
	assert_int_equal(dev, 0x801);
	assert_int_equal(ino, 123456789);
	assert_int_equal(birth, 42);
	/* every bit matters */
	for (size_t i = 0; i < sizeof(fh) * 8; i++) {
		memcpy(bad, fh, sizeof(fh));
		bad[i / 8] ^= (uint8_t)(1u << (i % 8));
		assert_int_equal(rr__nfsd_fh_verify(key, bad, sizeof(bad), &dev,
						    &ino, &birth),
				 NFS3ERR_BADHANDLE);
	}
	assert_int_equal(
		rr__nfsd_fh_verify(other, fh, sizeof(fh), &dev, &ino, &birth),
		NFS3ERR_BADHANDLE);
	assert_int_equal(
		rr__nfsd_fh_verify(key, fh, sizeof(fh) - 1, &dev, &ino, &birth),
		NFS3ERR_BADHANDLE);
	assert_int_equal(rr__nfsd_fh_verify(key, fh, 0, &dev, &ino, &birth),
			 NFS3ERR_BADHANDLE);
}

static void client_names_are_checked(void **state)
{
	char longname[NAME_MAX + 2];

	(void)state;
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(rr__nfsd_name_ok("file"), NFS3_OK);
	assert_int_equal(rr__nfsd_name_ok(""), NFS3ERR_INVAL);
	assert_int_equal(rr__nfsd_name_ok("."), NFS3ERR_INVAL);
	assert_int_equal(rr__nfsd_name_ok(".."), NFS3ERR_INVAL);
	assert_int_equal(rr__nfsd_name_ok("a/b"), NFS3ERR_INVAL);
	assert_int_equal(rr__nfsd_name_ok(longname), NFS3ERR_NAMETOOLONG);
}

static void root_squash_maps_identity(void **state)
{
	struct nfsd_policy s = {.squash = NFSD_SQUASH_ROOT,
				.anon_uid = 65534,
				.anon_gid = 65533};
	struct rr_cred cr = {.uid = 0, .gid = 0, .ngids = 2, .gids = {0, 7}};
	struct nfsd_ident id;

	(void)state;
	rr__nfsd_ident_from_cred(&s, &cr, &id);
	assert_int_equal(id.uid, 65534);
	assert_int_equal(id.gid, 65533);
	assert_int_equal(id.ngids, 1);
	assert_int_equal(id.gids[0], 7);
	rr__nfsd_ident_from_cred(&s, NULL, &id); /* AUTH_NONE */
	assert_int_equal(id.uid, 65534);
	s.squash = NFSD_SQUASH_NONE;
	rr__nfsd_ident_from_cred(&s, &cr, &id);
	assert_int_equal(id.uid, 0);
	assert_int_equal(id.ngids, 2);
	s.squash = NFSD_SQUASH_ALL;
	s.ro = true;
	cr.uid = 1000;
	rr__nfsd_ident_from_cred(&s, &cr, &id);
	assert_int_equal(id.uid, 65534);
	assert_int_equal(id.gid, 65533);
	assert_int_equal(id.ngids, 0);
	assert_true(id.ro);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(errno_maps_to_nfsstat3),
		cmocka_unit_test(siphash_matches_reference_vector),
		cmocka_unit_test(handle_verifies_only_as_made),
		cmocka_unit_test(client_names_are_checked),
		cmocka_unit_test(root_squash_maps_identity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
