/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * File handles and how they find their file again.
 *
 * A handle (RFC 1813 section 2.5 leaves its contents to the server) is
 *   0  'R' 'N' version 0      4 bytes
 *   4  st_dev                 8 bytes, big-endian
 *  12  st_ino                 8
 *  20  birth time in ns       8 (statx btime; 0 where the fs has none)
 *  28  SipHash-2-4 of 0..27   8, keyed with the server's secret
 * The key makes handles unforgeable without the privilege that
 * open_by_handle_at needs; inode plus birth time tells a reused inode
 * apart, so a handle of a removed file is STALE rather than the new file.
 *
 * Handles map to paths below the export through a cache filled by every
 * lookup: each object's directory and name, so that a path is built from
 * names up to the root, as long as the tree is deep. A path so built is
 * only trusted after the object it opens proves to have the handle's
 * inode and birth time. A miss (after a restart, or a rename elsewhere)
 * walks the tree, as far as the walk budget allows (walk_budget.c): a
 * walk it refuses is answered JUKEBOX, and only a walk that read the
 * whole tree makes a handle STALE. All opens go through openat2 with
 * RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS, a path longer than PATH_MAX a
 * piece at a time from the directory the piece before opened: no path we
 * build can leave the export, whatever a client (or a local user) has
 * done to the tree.
 *
 * Not open_by_handle_at: it needs CAP_DAC_READ_SEARCH, which a server
 * run by a user lacks; the kernel's handle would have to be in ours
 * (changing handles clients hold) or kept only in memory (lost on
 * restart, so the walk stays); and whether a file it opens is below the
 * export cannot be asked of the file (no ".." to climb), only of a path.
 *
 * Before all that, the handle of a regular file in use is answered by the
 * open-file cache (fcache.c), whose entries were proven the same way and
 * are proven again when their file may have changed.
 */
#include "nfs3/server/nfsd.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define FH_MAC_OFF    28
#define CACHE_BUCKETS 4096	 /* to start with: they grow with the entries */
#define SEARCH_MAX    (1u << 22) /* directories walked before giving up */
#define NEG_SLOTS     4096	 /* 128 KiB */
/* entries a walk reads that cost as much as one more directory */
#define WALK_ENTRIES_PER_DIR 1024
/* the time a directory is taken to cost (one costs 5-10 us on tmpfs) */
#define WALK_US_PER_DIR 10
#define NEG_TTL_MS	5000

/* ---------------------------------------------------------- SipHash */

static uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void sipround(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = rotl(v[1], 13) ^ v[0];
	v[0] = rotl(v[0], 32);
	v[2] += v[3];
	v[3] = rotl(v[3], 16) ^ v[2];
	v[0] += v[3];
	v[3] = rotl(v[3], 21) ^ v[0];
	v[2] += v[1];
	v[1] = rotl(v[1], 17) ^ v[2];
	v[2] = rotl(v[2], 32);
}

static void sip_absorb(uint64_t v[4], uint64_t m)
{
	v[3] ^= m;
	sipround(v);
	sipround(v);
	v[0] ^= m;
}

/* SipHash-2-4 (Aumasson and Bernstein, 2012), 64-bit output. */
void rr__nfsd_siphash(const uint8_t key[16], const void *data, size_t len,
		      uint8_t out[8])
{
	const uint8_t *p = data;
	uint64_t k0 = le64(key), k1 = le64(key + 8), last;
	uint64_t v[4] = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
			 k0 ^ 0x6c7967656e657261ull,
			 k1 ^ 0x7465646279746573ull};
	size_t i;

	for (i = 0; i + 8 <= len; i += 8)
		sip_absorb(v, le64(p + i));
	last = (uint64_t)(len & 0xff) << 56;
	for (size_t j = 0; i + j < len; j++)
		last |= (uint64_t)p[i + j] << (8 * j);
	sip_absorb(v, last);
	v[2] ^= 0xff;
	for (int r = 0; r < 4; r++)
		sipround(v);
	last = v[0] ^ v[1] ^ v[2] ^ v[3];
	for (int j = 0; j < 8; j++)
		out[j] = (uint8_t)(last >> (8 * j));
}

/* ------------------------------------------------------------ codec */

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

void rr__nfsd_fh_seal(const uint8_t key[NFSD_KEY_LEN], uint8_t v, uint64_t a,
		      uint64_t b, uint64_t c, uint8_t out[NFSD_FH_LEN])
{
	out[0] = 'R';
	out[1] = 'N';
	out[2] = v;
	out[3] = 0;
	put64(out + 4, a);
	put64(out + 12, b);
	put64(out + 20, c);
	rr__nfsd_siphash(key, out, FH_MAC_OFF, out + FH_MAC_OFF);
}

int rr__nfsd_fh_encode(const uint8_t key[NFSD_KEY_LEN], const struct stat *st,
		       uint64_t birth, uint8_t out[NFSD_FH_LEN])
{
	rr__nfsd_fh_seal(key, NFSD_FH_V_LOCAL, (uint64_t)st->st_dev,
			 (uint64_t)st->st_ino, birth, out);
	return NFSD_FH_LEN;
}

int rr__nfsd_fh_sealed(const uint8_t key[NFSD_KEY_LEN], const void *fh,
		       size_t len)
{
	const uint8_t *p = fh;
	uint8_t mac[8];
	uint8_t diff = 0;

	if (len != NFSD_FH_LEN || p[0] != 'R' || p[1] != 'N' || !p[2] ||
	    p[3] != 0)
		return 0;
	rr__nfsd_siphash(key, p, FH_MAC_OFF, mac);
	/* constant time: a forger learns nothing from how long we took */
	for (int i = 0; i < 8; i++)
		diff |= mac[i] ^ p[FH_MAC_OFF + i];
	return diff ? 0 : p[2];
}

void rr__nfsd_fh_fields(const void *fh, uint64_t *a, uint64_t *b, uint64_t *c)
{
	const uint8_t *p = fh;

	*a = get64(p + 4);
	*b = get64(p + 12);
	*c = get64(p + 20);
}

int rr__nfsd_fh_verify(const uint8_t key[NFSD_KEY_LEN], const void *fh,
		       size_t len, uint64_t *dev, uint64_t *ino,
		       uint64_t *birth)
{
	if (rr__nfsd_fh_sealed(key, fh, len) != NFSD_FH_V_LOCAL)
		return NFS3ERR_BADHANDLE;
	rr__nfsd_fh_fields(fh, dev, ino, birth);
	return 0;
}

/* ------------------------------------------------------ stat, names */

static void stx_to_stat(const struct statx *x, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(x->stx_dev_major, x->stx_dev_minor);
	st->st_ino = x->stx_ino;
	st->st_mode = x->stx_mode;
	st->st_nlink = x->stx_nlink;
	st->st_uid = x->stx_uid;
	st->st_gid = x->stx_gid;
	st->st_rdev = makedev(x->stx_rdev_major, x->stx_rdev_minor);
	st->st_size = (off_t)x->stx_size;
	st->st_blksize = x->stx_blksize;
	st->st_blocks = (blkcnt_t)x->stx_blocks;
	st->st_atim.tv_sec = x->stx_atime.tv_sec;
	st->st_atim.tv_nsec = x->stx_atime.tv_nsec;
	st->st_mtim.tv_sec = x->stx_mtime.tv_sec;
	st->st_mtim.tv_nsec = x->stx_mtime.tv_nsec;
	st->st_ctim.tv_sec = x->stx_ctime.tv_sec;
	st->st_ctim.tv_nsec = x->stx_ctime.tv_nsec;
}

static int stat_x(int dirfd, const char *name, struct statx *x, struct stat *st,
		  uint64_t *birth)
{
	int flags = AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH);

	if (statx(dirfd, name, flags, STATX_BASIC_STATS | STATX_BTIME, x))
		return -errno;
	stx_to_stat(x, st);
	*birth = 0;
	if (x->stx_mask & STATX_BTIME)
		*birth = (uint64_t)x->stx_btime.tv_sec * 1000000000u +
			 x->stx_btime.tv_nsec;
	return 0;
}

int rr__nfsd_stat(int dirfd, const char *name, struct stat *st, uint64_t *birth)
{
	struct statx x;

	return stat_x(dirfd, name, &x, st, birth);
}

/* What fd names, into o: attributes, birth, and the statx flags. */
static int stat_obj(int fd, struct nfsd_obj *o)
{
	struct statx x;
	int rc = stat_x(fd, "", &x, &o->st, &o->birth);

	o->attrs = rc ? 0 : x.stx_attributes;
	o->attrs_mask = rc ? 0 : x.stx_attributes_mask;
	return rc;
}

nfsstat3 rr__nfsd_name_ok(const char *name)
{
	size_t n = strnlen(name, NAME_MAX + 1);

	if (n == 0 || strchr(name, '/'))
		return NFS3ERR_INVAL;
	if (n > NAME_MAX)
		return NFS3ERR_NAMETOOLONG;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return NFS3ERR_INVAL;
	return NFS3_OK;
}

static int open_beneath(int dirfd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, dirfd, *path ? path : ".", &how,
			      sizeof(how));

	if (fd < 0)
		return errno == ELOOP || errno == EXDEV ? -EACCES : -errno;
	return fd;
}

/*
 * A path too long for one openat2 is opened a piece at a time: each piece
 * (cut at a slash, under PATH_MAX) beneath the directory the piece before
 * it opened, so that the whole stays beneath the root although no single
 * call sees it. Returns the directory the rest of *path (advanced to it,
 * now short enough) is below: root_fd itself for a path that fits.
 */
static int open_pieces(struct rr_nfs3_server *s, const char **path)
{
	char piece[PATH_MAX];
	const char *p = *path;
	size_t len = strlen(p);
	int dfd = s->root_fd;

	while (len >= PATH_MAX) {
		size_t cut = PATH_MAX - 1;
		int next;

		while (cut && p[cut] != '/')
			cut--;
		memcpy(piece, p, cut);
		piece[cut] = '\0';
		next = cut ? open_beneath(dfd, piece, O_PATH | O_DIRECTORY)
			   : -ENAMETOOLONG;
		if (dfd != s->root_fd)
			close(dfd);
		if (next < 0)
			return next;
		dfd = next;
		p += cut + 1;
		len -= cut + 1;
	}
	*path = p;
	return dfd;
}

int rr__nfsd_open(struct rr_nfs3_server *s, const char *path, int flags,
		  const struct stat *want)
{
	struct stat st;
	int dfd = open_pieces(s, &path), fd;

	if (dfd < 0)
		return dfd;
	fd = open_beneath(dfd, path, flags);
	if (dfd != s->root_fd)
		close(dfd);
	if (fd < 0 || !want)
		return fd;
	if (fstat(fd, &st) || st.st_dev != want->st_dev ||
	    st.st_ino != want->st_ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

bool rr__nfsd_is_root(const struct rr_nfs3_server *s, const struct stat *st)
{
	return st->st_dev == s->root_dev && st->st_ino == s->root_ino;
}

static bool is_root_key(const struct rr_nfs3_server *s, uint64_t dev,
			uint64_t ino)
{
	return dev == (uint64_t)s->root_dev && ino == (uint64_t)s->root_ino;
}

/* A buffer the call frees when it ends (NULL: none, p freed). */
static char *call_keeps(struct nfsd_call *c, char *p)
{
	if (p && c->npaths == (int)(sizeof(c->paths) / sizeof(c->paths[0]))) {
		free(p);
		return NULL;
	}
	if (p)
		c->paths[c->npaths++] = p;
	return p;
}

/* ----------------------------------------------------- handle cache */

/*
 * Where each object was last seen: its directory's (dev, ino) and its
 * name there. An object's path is its directory's path and its name, up
 * to the root, so a path has no length limit, renaming a directory moves
 * everything below it at once, and an entry costs its name, not a path.
 *
 * The cache is bounded by the memory it holds (handle_cache_bytes: its
 * entries as the allocator counts them, and the bucket table): a clock
 * sweeps the buckets, taking entries not used since it last passed, so
 * that what clients use stays (a miss costs a walk). An entry is one
 * allocation, name included, and as small as that allows: devices in 32
 * bits, as the kernel keeps them (an object of a device past that is not
 * cached; the walk finds it), no links but its bucket's.
 */
struct cent {
	uint64_t ino, pino;
	uint32_t dev, pdev;
	struct cent *next; /* in its bucket */
	bool used;	   /* since the clock last passed */
	char name[];
};

/*
 * Handles a whole walk did not find, for a while: clients do ask again
 * about files they removed, and each walk reads the whole export. Only a
 * file moved in from outside the export can make one valid again.
 */
struct negent {
	uint64_t dev, ino, birth, until_ms;
};

struct nfsd_pathcache {
	pthread_mutex_t lock;
	size_t n, bytes, max_bytes;
	size_t nb;   /* buckets, a power of two */
	size_t hand; /* the clock's bucket */
	struct cent **b;
	uint64_t evicted;
	struct negent neg[NEG_SLOTS];
};

int rr__nfsd_cache_create(struct nfsd_pathcache **out, size_t max_bytes)
{
	struct nfsd_pathcache *pc = rr_calloc(1, sizeof(*pc));

	if (!pc)
		return -ENOMEM;
	pc->nb = CACHE_BUCKETS;
	pc->b = rr_calloc(pc->nb, sizeof(*pc->b));
	if (!pc->b) {
		free(pc);
		return -ENOMEM;
	}
	pc->max_bytes = max_bytes ? max_bytes : NFSD_HANDLE_CACHE_BYTES;
	pc->bytes = pc->nb * sizeof(*pc->b);
	pthread_mutex_init(&pc->lock, NULL);
	*out = pc;
	return 0;
}

void rr__nfsd_cache_destroy(struct nfsd_pathcache *pc)
{
	if (!pc)
		return;
	for (size_t i = 0; i < pc->nb; i++) {
		while (pc->b[i]) {
			struct cent *e = pc->b[i];

			pc->b[i] = e->next;
			free(e);
		}
	}
	free(pc->b);
	pthread_mutex_destroy(&pc->lock);
	free(pc);
}

void rr__nfsd_cache_stats(struct nfsd_pathcache *pc, uint64_t *entries,
			  uint64_t *bytes, uint64_t *evicted)
{
	pthread_mutex_lock(&pc->lock);
	*entries = pc->n;
	*bytes = pc->bytes;
	*evicted = pc->evicted;
	pthread_mutex_unlock(&pc->lock);
}

static size_t hash(uint64_t dev, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) ^ dev);
}

/* Caller holds the lock. */
static struct cent **cache_find(struct nfsd_pathcache *pc, uint64_t dev,
				uint64_t ino)
{
	struct cent **pp = &pc->b[hash(dev, ino) & (pc->nb - 1)];

	while (*pp && !((*pp)->dev == dev && (*pp)->ino == ino))
		pp = &(*pp)->next;
	return pp;
}

/* What e costs: its allocation, rounded as malloc does, and its header. */
static size_t cent_bytes(const struct cent *e)
{
	size_t n = offsetof(struct cent, name) + strlen(e->name) + 1 +
		   sizeof(size_t);

	return (n + 15) & ~(size_t)15;
}

/* Takes *pp out and frees it. Caller holds the lock. */
static void cache_drop(struct nfsd_pathcache *pc, struct cent **pp)
{
	struct cent *e = *pp;

	*pp = e->next;
	pc->n--;
	pc->bytes -= cent_bytes(e);
	free(e);
}

/*
 * Twice the buckets, when they are fewer than the entries and the table
 * stays within an eighth of what the cache may hold.
 */
static void cache_grow(struct nfsd_pathcache *pc)
{
	size_t nb = pc->nb * 2, more = pc->nb * sizeof(*pc->b);
	struct cent **b;

	if (pc->n < pc->nb || nb * sizeof(*b) > pc->max_bytes / 8)
		return;
	b = rr_calloc(nb, sizeof(*b));
	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < pc->nb; i++) {
		while (pc->b[i]) {
			struct cent *e = pc->b[i];
			size_t k = hash(e->dev, e->ino) & (nb - 1);

			pc->b[i] = e->next;
			e->next = b[k];
			b[k] = e;
		}
	}
	free(pc->b);
	pc->b = b;
	pc->nb = nb;
	pc->hand = 0;
	pc->bytes += more;
}

/* One bucket under the clock: the unused go, the others lose their mark. */
static void clock_bucket(struct nfsd_pathcache *pc, struct cent **pp,
			 size_t need)
{
	while (*pp && pc->bytes + need > pc->max_bytes) {
		if ((*pp)->used) {
			(*pp)->used = false;
			pp = &(*pp)->next;
			continue;
		}
		cache_drop(pc, pp);
		pc->evicted++;
	}
}

/*
 * Room for need more bytes. Twice round the clock at most: the first
 * turn may only take marks away. Caller holds the lock.
 */
static void cache_make_room(struct nfsd_pathcache *pc, size_t need)
{
	for (size_t k = 0;
	     k < 2 * pc->nb && pc->n && pc->bytes + need > pc->max_bytes; k++) {
		clock_bucket(pc, &pc->b[pc->hand], need);
		if (pc->bytes + need > pc->max_bytes)
			pc->hand = (pc->hand + 1) & (pc->nb - 1);
	}
}

static bool same_place(const struct cent *e, uint64_t pdev, uint64_t pino,
		       const char *name)
{
	return e && e->pdev == pdev && e->pino == pino &&
	       !strcmp(e->name, name);
}

/*
 * The cache learns (dev, ino)'s place; used: by a client's call (what a
 * walk only saw is the first to go).
 */
static void place_put(struct rr_nfs3_server *s, uint64_t dev, uint64_t ino,
		      uint64_t pdev, uint64_t pino, const char *name, bool used)
{
	struct nfsd_pathcache *pc = s->cache;
	size_t len = strlen(name) + 1;
	struct cent *e, **pp;
	bool known;

	if (is_root_key(s, dev, ino))
		return; /* the root has no place: it is where paths start */
	if (dev > UINT32_MAX || pdev > UINT32_MAX)
		return; /* see struct cent */
	pthread_mutex_lock(&pc->lock);
	e = *cache_find(pc, dev, ino);
	known = same_place(e, pdev, pino, name);
	if (known && used)
		e->used = true;
	pthread_mutex_unlock(&pc->lock);
	if (known)
		return; /* what LOOKUP and READDIRPLUS mostly find */
	/* not sizeof: the name begins in the padding after used */
	e = rr_malloc(offsetof(struct cent, name) + len);
	if (!e)
		return; /* a cache: the tree walk still finds it */
	e->ino = ino;
	e->pino = pino;
	e->dev = (uint32_t)dev;
	e->pdev = (uint32_t)pdev;
	e->used = used;
	memcpy(e->name, name, len);
	pthread_mutex_lock(&pc->lock);
	pp = cache_find(pc, dev, ino);
	if (*pp)
		cache_drop(pc, pp);
	cache_make_room(pc, cent_bytes(e));
	pp = cache_find(pc, dev, ino);
	e->next = *pp;
	*pp = e;
	pc->n++;
	pc->bytes += cent_bytes(e);
	cache_grow(pc);
	pthread_mutex_unlock(&pc->lock);
}

void rr__nfsd_cache_put(struct rr_nfs3_server *s, const struct stat *st,
			uint64_t pdev, uint64_t pino, const char *name)
{
	place_put(s, (uint64_t)st->st_dev, (uint64_t)st->st_ino, pdev, pino,
		  name, true);
}

/*
 * The length of (dev, ino)'s path as the cache knows it, plus one; 0 when
 * a directory on the way is not known, or the chain is longer than any
 * path we build (then it loops: entries made while others renamed
 * directories around us can). Caller holds the lock.
 */
static size_t chain_len(struct rr_nfs3_server *s, uint64_t dev, uint64_t ino)
{
	struct nfsd_pathcache *pc = s->cache;
	size_t len = 0;

	while (!is_root_key(s, dev, ino)) {
		struct cent *e = *cache_find(pc, dev, ino);

		if (!e)
			return 0;
		e->used = true;
		len += strlen(e->name) + 1;
		if (len > NFSD_PATH_CAP)
			return 0;
		dev = e->pdev;
		ino = e->pino;
	}
	return len ? len : 1;
}

/*
 * Puts part before p[pos] (and a slash before it unless it starts the
 * path): paths are written from their end, as names are found upwards.
 */
static size_t prepend(char *p, size_t pos, const char *part)
{
	size_t n = strlen(part);

	pos -= n;
	memcpy(p + pos, part, n);
	if (pos)
		p[--pos] = '/';
	return pos;
}

/* Writes the path chain_len measured, from its end; caller locks. */
static void chain_write(struct rr_nfs3_server *s, uint64_t dev, uint64_t ino,
			char *p, size_t len)
{
	size_t pos = len - 1;

	p[pos] = '\0';
	while (!is_root_key(s, dev, ino)) {
		struct cent *e = *cache_find(s->cache, dev, ino);

		pos = prepend(p, pos, e->name);
		dev = e->pdev;
		ino = e->pino;
	}
}

/* (dev, ino)'s path below the root from the cache, kept by the call. */
static char *cache_path(struct nfsd_call *c, uint64_t dev, uint64_t ino)
{
	struct nfsd_pathcache *pc = c->s->cache;
	char *p = NULL;
	size_t len;

	pthread_mutex_lock(&pc->lock);
	len = chain_len(c->s, dev, ino);
	if (len)
		p = rr_malloc(len);
	if (p)
		chain_write(c->s, dev, ino, p, len);
	pthread_mutex_unlock(&pc->lock);
	return call_keeps(c, p);
}

/* ---------------------------------------------------------- resolve */

struct want {
	uint64_t dev, ino, birth;
};

static struct negent *neg_slot(struct nfsd_pathcache *pc, const struct want *w)
{
	return &pc->neg[hash(w->dev, w->ino ^ w->birth) % NEG_SLOTS];
}

static bool neg_hit(struct rr_nfs3_server *s, const struct want *w)
{
	struct nfsd_pathcache *pc = s->cache;
	struct negent *e;
	bool hit;

	pthread_mutex_lock(&pc->lock);
	e = neg_slot(pc, w);
	hit = e->dev == w->dev && e->ino == w->ino && e->birth == w->birth &&
	      e->until_ms > rr_coarse_ms();
	pthread_mutex_unlock(&pc->lock);
	return hit;
}

static void neg_put(struct rr_nfs3_server *s, const struct want *w)
{
	struct nfsd_pathcache *pc = s->cache;

	pthread_mutex_lock(&pc->lock);
	*neg_slot(pc, w) = (struct negent){w->dev, w->ino, w->birth,
					   rr_coarse_ms() + NEG_TTL_MS};
	pthread_mutex_unlock(&pc->lock);
}

/* Does path (below the root) name the wanted object? Fills o when so. */
static bool try_path(struct rr_nfs3_server *s, const char *path,
		     const struct want *w, struct nfsd_obj *o)
{
	int fd = rr__nfsd_open(s, path, O_PATH | O_NOFOLLOW, NULL);
	bool ok;

	if (fd < 0)
		return false;
	ok = stat_obj(fd, o) == 0 && (uint64_t)o->st.st_dev == w->dev &&
	     (uint64_t)o->st.st_ino == w->ino && o->birth == w->birth;
	if (!ok) {
		close(fd);
		return false;
	}
	o->path = path;
	o->name = NULL;
	o->fd = fd; /* the object itself: later opens need no path walk */
	return true;
}

/*
 * The walk: breadth first from the root, each directory a node that
 * knows its directory's node and its name, so that paths of any length
 * are built from names (and what it finds can enter the handle cache with
 * every directory on the way).
 */
struct wnode {
	uint64_t dev, ino; /* once read */
	size_t up;	   /* its directory's node; the root's is 0, itself */
	char *name;	   /* NULL: the root */
};

struct walk {
	struct wnode *v;
	size_t head, n, cap;
	size_t seen; /* entries read */
};

static int walk_push(struct walk *q, size_t up, const char *name)
{
	char *dup = NULL;

	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 64;
		struct wnode *v = rr_realloc(q->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		q->v = v;
		q->cap = cap;
	}
	if (name && !(dup = rr_strdup(name)))
		return -ENOMEM;
	q->v[q->n++] = (struct wnode){.up = up, .name = dup};
	return 0;
}

static void walk_free(struct walk *q)
{
	for (size_t i = 0; i < q->n; i++)
		free(q->v[i].name);
	free(q->v);
}

/* Node i's path below the root, then "/name" when name is given. */
static char *walk_path(const struct walk *q, size_t i, const char *name)
{
	size_t len = name ? strlen(name) + 1 : 0, pos;
	char *p;

	for (size_t k = i; k; k = q->v[k].up)
		len += strlen(q->v[k].name) + 1;
	if (len > NFSD_PATH_CAP)
		return NULL;
	p = rr_malloc(len + 1);
	if (!p)
		return NULL;
	pos = len ? len - 1 : 0;
	p[pos] = '\0';
	if (name)
		pos = prepend(p, pos, name);
	for (size_t k = i; k; k = q->v[k].up)
		pos = prepend(p, pos, q->v[k].name);
	return p;
}

/* Node i and every directory above it, into the handle cache. */
static void walk_remember(struct rr_nfs3_server *s, const struct walk *q,
			  size_t i)
{
	for (; i; i = q->v[i].up) {
		const struct wnode *d = &q->v[i], *up = &q->v[d->up];

		place_put(s, d->dev, d->ino, up->dev, up->ino, d->name, true);
	}
}

/* Is name in node i's directory (dirfd) the wanted object? Fills o. */
static bool walk_found(struct nfsd_call *c, const struct walk *q, size_t i,
		       int dirfd, const char *name, const struct want *w,
		       struct nfsd_obj *o)
{
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	char *path;

	if (fd < 0)
		return false;
	if (stat_obj(fd, o) || (uint64_t)o->st.st_dev != w->dev ||
	    (uint64_t)o->st.st_ino != w->ino || o->birth != w->birth ||
	    !(path = call_keeps(c, walk_path(q, i, name)))) {
		close(fd);
		return false;
	}
	walk_remember(c->s, q, i);
	place_put(c->s, w->dev, w->ino, q->v[i].dev, q->v[i].ino, name, true);
	o->path = path;
	o->name = NULL;
	o->fd = fd;
	return true;
}

/* One directory of the walk: 1 found, 0 not here, <0 error. */
static int walk_dir(struct nfsd_call *c, struct walk *q, size_t i,
		    const struct want *w, struct nfsd_obj *o)
{
	char *path = walk_path(q, i, NULL);
	int fd = path ? rr__nfsd_open(c->s, path, O_RDONLY | O_DIRECTORY, NULL)
		      : -ENOMEM;
	struct dirent *d;
	struct stat st;
	int rc = 0;
	DIR *dp;

	free(path);
	if (fd < 0)
		return fd == -ENOMEM ? fd : 0; /* unreadable or gone */
	if (fstat(fd, &st)) {
		close(fd);
		return 0;
	}
	/* Out of memory is not "gone": a walk that skipped it proves nothing.
	 */
	dp = RR_ALLOC_FAILS() ? NULL : fdopendir(fd);
	if (!dp) {
		close(fd);
		return -ENOMEM;
	}
	q->v[i].dev = (uint64_t)st.st_dev;
	q->v[i].ino = (uint64_t)st.st_ino;
	while (rc == 0 && (d = readdir(dp))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		/*
		 * Every entry read enters the cache (its inode as the
		 * directory tells it, proven when used): after a restart
		 * one walk finds the handles of all that it passed.
		 */
		q->seen++;
		place_put(c->s, st.st_dev, d->d_ino, st.st_dev, st.st_ino,
			  d->d_name, false);
		if (d->d_ino == w->ino &&
		    walk_found(c, q, i, dirfd(dp), d->d_name, w, o))
			rc = 1;
		else if (d->d_type == DT_DIR || d->d_type == DT_UNKNOWN)
			rc = walk_push(q, i, d->d_name);
	}
	closedir(dp);
	return rc;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * What reading one directory costs the budget, in directories: one, and
 * one for each WALK_ENTRIES_PER_DIR entries, or the time it took in
 * units of us_per_dir (the server's walk_dir_us) when more (a slow disk,
 * a slow machine): the budget then bounds the walks' share of the CPU
 * whatever a directory costs.
 */
static uint32_t walk_cost(size_t entries, uint64_t ns, uint32_t us_per_dir)
{
	uint64_t by_size = 1 + entries / WALK_ENTRIES_PER_DIR;
	uint64_t by_time = ns / ((uint64_t)us_per_dir * 1000);
	uint64_t n = by_time > by_size ? by_time : by_size;

	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/*
 * Walks the export for w, paid from the walk budget (walk_budget.c):
 * 1 found (o filled), 0 not in the export, -EAGAIN not known (refused by
 * the budget, cut at SEARCH_MAX, or out of memory): the client asks again.
 */
static int search(struct nfsd_call *c, const struct want *w, struct nfsd_obj *o)
{
	struct rr_nfs3_server *s = c->s;
	struct walk q = {0};
	size_t slot, max = s->o.walk_dirs_max ? s->o.walk_dirs_max : SEARCH_MAX;
	uint32_t us = s->o.walk_dir_us ? s->o.walk_dir_us : WALK_US_PER_DIR;
	int rc;

	if (rr__nfsd_walk_begin(s, c->req ? rr_svc_req_peer(c->req) : NULL,
				&slot))
		return -EAGAIN;
	rc = walk_push(&q, 0, NULL);
	while (rc == 0 && q.head < q.n && q.head < max) {
		size_t seen = q.seen;
		uint64_t t0 = mono_ns();

		rc = walk_dir(c, &q, q.head++, w, o);
		rr__nfsd_walk_pay(s, slot,
				  walk_cost(q.seen - seen, mono_ns() - t0, us));
	}
	atomic_fetch_add(&s->walk_dirs, q.head);
	rr__nfsd_walk_end(s);
	if (rc == 0 && q.head < q.n)
		rc = -EAGAIN; /* cut short: not proven absent */
	walk_free(&q);
	if (rc < 0)
		atomic_fetch_add(&s->walks_refused, 1);
	return rc < 0 ? -EAGAIN : rc;
}

/* Does path (below the root) still name the wanted object? */
static bool path_names(struct rr_nfs3_server *s, const char *path,
		       const struct want *w)
{
	struct nfsd_obj scratch;

	if (!try_path(s, path, w, &scratch))
		return false;
	close(scratch.fd);
	return true;
}

static nfsstat3 stale(struct rr_nfs3_server *s, const struct want *w)
{
	neg_put(s, w);
	atomic_fetch_add(&s->stale_handles, 1);
	return NFS3ERR_STALE;
}

#define HELD_MAX                                                               \
	(int)(sizeof(((struct nfsd_call *)0)->held) /                          \
	      sizeof(((struct nfsd_call *)0)->held[0]))

/* HIT_DEFER: not HIT_OK, and finding out more might block (c->nowait). */
enum hit { HIT_OK, HIT_STALE, HIT_AGAIN, HIT_DEFER };

/*
 * Does the cached f still stand for the handle (fcache.c says when to
 * prove it again)? Fills o from it when so. HIT_AGAIN: it does not
 * prove itself any more; resolve by the path as on a miss.
 */
static enum hit hit(struct nfsd_call *c, struct nfsd_file *f,
		    const struct want *w, struct nfsd_obj *o)
{
	struct rr_nfs3_server *s = c->s;
	int fd = rr__nfsd_file_pfd(f), cur;
	struct timespec t0;
	bool acl;

	if (stat_obj(fd, o))
		return c->nowait ? HIT_DEFER : HIT_AGAIN;
	if (o->st.st_nlink == 0)
		return c->nowait ? HIT_DEFER : HIT_STALE; /* unlinked */
	cur = rr__nfsd_file_current(s->files, f, &o->st, rr_coarse_ms(), &acl);
	if (cur <= 0 && c->nowait)
		return HIT_DEFER; /* proving walks the path */
	if (cur < 0)
		return HIT_AGAIN;
	if (cur == 0) {
		/* ORDER: t0 before the proof, see fcache.c on racy proofs */
		clock_gettime(CLOCK_REALTIME, &t0);
		if (!path_names(s, rr__nfsd_file_path(f), w))
			return HIT_AGAIN;
		acl = rr__nfsd_has_acl(fd);
		rr__nfsd_file_proven(s->files, f, &o->st, &t0, acl);
	}
	o->path = rr__nfsd_file_path(f); /* fixed while the call holds f */
	o->name = NULL;
	o->birth = w->birth;
	o->acl = acl;
	o->fd = fd;
	o->file = f;
	return HIT_OK;
}

/* The cache's answer for w, when it has one (true: *st is the answer). */
static bool cached(struct nfsd_call *c, const struct want *w,
		   struct nfsd_obj *o, nfsstat3 *st)
{
	struct rr_nfs3_server *s = c->s;
	struct nfsd_file *f;
	enum hit h;

	if (c->nheld == HELD_MAX)
		return false;
	f = rr__nfsd_fcache_get(s->files, w->dev, w->ino, w->birth);
	if (!f)
		return false;
	h = hit(c, f, w, o);
	if (h == HIT_OK) {
		c->held[c->nheld++] = f;
		*st = NFS3_OK;
		return true;
	}
	if (h == HIT_DEFER) {
		rr__nfsd_fcache_put(s->files, f);
		*st = rr__nfsd_errno(rr__nfsd_defer(c));
		return true;
	}
	rr__nfsd_fcache_forget(s->files, w->dev, w->ino);
	rr__nfsd_fcache_put(s->files, f);
	o->fd = -1;
	o->file = NULL;
	if (h == HIT_AGAIN)
		return false;
	*st = stale(s, w);
	return true;
}

/* Keeps what a path just proved (from t0 on) open for the next calls. */
static void remember(struct nfsd_call *c, struct nfsd_obj *o,
		     const struct timespec *t0)
{
	struct nfsd_file *f;

	/*
	 * Regular files only: what they are used for goes through their
	 * descriptors. Operations on a directory also build paths from the
	 * directory's (LOOKUP, "..", READDIRPLUS), which must be proven
	 * every time, as resolving by the path does.
	 */
	if (o->fd < 0 || !o->path || !S_ISREG(o->st.st_mode) ||
	    c->nheld == HELD_MAX)
		return;
	o->acl = rr__nfsd_has_acl(o->fd);
	f = rr__nfsd_fcache_add(c->s->files, o, t0);
	if (!f)
		return; /* o->fd is still the call's */
	c->held[c->nheld++] = f;
	o->fd = rr__nfsd_file_pfd(f);
	o->file = f;
}

/*
 * By the path the handle cache knows, else by walking the tree (which
 * enters what it finds, and the directories above, in the cache): 1
 * found, 0 not in the export, -EAGAIN not known now (search).
 */
static int by_path(struct nfsd_call *c, const struct want *w,
		   struct nfsd_obj *o)
{
	struct rr_nfs3_server *s = c->s;
	const char *path;

	if (is_root_key(s, w->dev, w->ino))
		return try_path(s, "", w, o);
	path = cache_path(c, w->dev, w->ino);
	if (path && try_path(s, path, w, o))
		return 1;
	return neg_hit(s, w) ? 0 : search(c, w, o);
}

static nfsstat3 resolve(struct nfsd_call *c, const nfs_fh3 *fh,
			struct nfsd_obj *o)
{
	struct rr_nfs3_server *s = c->s;
	struct timespec t0;
	struct want w;
	nfsstat3 st;
	int rc;

	if (rr__nfsd_fh_verify(s->key, fh->data.data_val, fh->data.data_len,
			       &w.dev, &w.ino, &w.birth)) {
		char host[INET6_ADDRSTRLEN];

		/* RENAME or LINK into another export: as Linux's nfsd says */
		if (c->ex && rr__nfsd_ex_owns_fh(c->ex, fh->data.data_val,
						 fh->data.data_len))
			return NFS3ERR_XDEV;
		atomic_fetch_add(&s->bad_handles, 1);
		rr__nfsd_host_of(c, host);
		rr_warn_rl("nfs3: %s: a handle this server did not make: "
			   "BADHANDLE",
			   host);
		return NFS3ERR_BADHANDLE;
	}
	if (cached(c, &w, o, &st))
		return st;
	if (c->nowait) /* resolving by the path walks directories */
		return rr__nfsd_errno(rr__nfsd_defer(c));
	clock_gettime(CLOCK_REALTIME, &t0);
	rc = by_path(c, &w, o);
	if (rc < 0)
		return NFS3ERR_JUKEBOX; /* never STALE: that is final */
	if (rc == 0)
		return stale(s, &w);
	remember(c, o, &t0);
	return NFS3_OK;
}

/* Switches to the server's identity; whether the call was the caller. */
static bool as_server(struct nfsd_call *c)
{
	bool was = c->as_caller;

	if (was)
		rr__nfsd_ident_leave(c->s);
	c->as_caller = false;
	return was;
}

int rr__nfsd_defer(struct nfsd_call *c)
{
	c->defer = true;
	return -EAGAIN;
}

/*
 * From here on the kernel checks the caller's rights; 0 or -EACCES. Never
 * under c->nowait: credentials change only in a worker (a thread that
 * receives calls may have to post replies as the server, svc.c).
 */
static int as_caller(struct nfsd_call *c)
{
	if (c->as_caller)
		return 0;
	if (c->nowait) {
		rr__nfsd_defer(c);
		return -EACCES;
	}
	if (rr__nfsd_ident_enter(c->s, &c->id))
		return -EACCES;
	c->as_caller = true;
	return 0;
}

/* The call closes fd when it ends; -EMFILE (fd closed) when full. */
int rr__nfsd_track(struct nfsd_call *c, int fd)
{
	if (c->nfds == (int)(sizeof(c->fds) / sizeof(c->fds[0]))) {
		close(fd);
		return -EMFILE;
	}
	c->fds[c->nfds++] = fd;
	return 0;
}

/*
 * Resolving runs as the server: a handle names its object whatever the
 * caller may search on the way there (RFC 1813 checks the object itself).
 * A call that already acts as the caller goes back to that afterwards.
 */
nfsstat3 rr__nfsd_local_resolve(struct nfsd_call *c, const nfs_fh3 *fh,
				struct nfsd_obj *o)
{
	nfsstat3 st;

	bool was = as_server(c);

	o->fd = -1;
	o->file = NULL;
	o->acl = true;
	o->path = NULL;
	o->name = NULL;
	if (c->denied) {
		atomic_fetch_add(&c->s->stale_handles, 1);
		return NFS3ERR_STALE;
	}
	st = resolve(c, fh, o);
	if (was && as_caller(c))
		st = NFS3ERR_ACCES;
	if (o->fd >= 0 && !o->file && rr__nfsd_track(c, o->fd))
		o->fd = -1;
	return st;
}

int rr__nfsd_obj_fd(struct nfsd_call *c, struct nfsd_obj *o)
{
	int fd = o->fd;

	if (fd < 0 && c->nowait)
		return rr__nfsd_defer(c); /* opening walks the path */
	if (fd < 0) {
		as_server(c); /* and the caller right after, in any case */
		fd = o->path ? rr__nfsd_open(c->s, o->path, O_PATH | O_NOFOLLOW,
					     &o->st)
			     : -ESTALE;
		if (fd >= 0 && rr__nfsd_track(c, fd))
			fd = -EMFILE;
		o->fd = fd < 0 ? -1 : fd;
	}
	if (fd >= 0 && as_caller(c))
		return -EACCES;
	return fd;
}

void rr__nfsd_call_close(struct nfsd_call *c)
{
	if (c->s && c->s->be.ops->call_end)
		c->s->be.ops->call_end(c);
	as_server(c);
	while (c->nfds)
		close(c->fds[--c->nfds]);
	while (c->nheld)
		rr__nfsd_fcache_put(c->s->files, c->held[--c->nheld]);
	while (c->npaths)
		free(c->paths[--c->npaths]);
}

void rr__nfsd_as_server(struct nfsd_call *c)
{
	as_server(c);
}

void rr__nfsd_fd_path(int fd, char out[32])
{
	snprintf(out, 32, "/proc/self/fd/%d", fd);
}

int rr__nfsd_reopen(int fd, int flags)
{
	char p[32];
	int nfd;

	rr__nfsd_fd_path(fd, p);
	nfd = open(p, flags | O_CLOEXEC | O_NOCTTY);
	return nfd < 0 ? -errno : nfd;
}

int rr__nfsd_obj_at(struct nfsd_call *c, const char *path, struct nfsd_obj *o)
{
	bool was = as_server(c);
	int fd, rc;

	o->fd = -1;
	o->file = NULL;
	o->acl = true;
	o->name = NULL;
	o->path = NULL;
	fd = rr__nfsd_open(c->s, path, O_PATH | O_NOFOLLOW, NULL);
	rc = fd < 0 ? fd : rr__nfsd_stat(fd, "", &o->st, &o->birth);
	if (fd >= 0)
		close(fd);
	if (rc == 0)
		o->path = path;
	if (was && as_caller(c))
		return -EACCES;
	return rc;
}

int rr__nfsd_obj_parent(struct nfsd_call *c, const struct nfsd_obj *dir,
			struct nfsd_obj *o)
{
	const char *slash;
	char *up;

	if (rr__nfsd_is_root(c->s, &dir->st)) {
		*o = *dir;
		o->name = NULL;
		return 0;
	}
	if (!dir->path)
		return -ESTALE; /* only regular files resolve without one */
	slash = strrchr(dir->path, '/');
	up = call_keeps(c,
			rr_strndup(dir->path, slash ? slash - dir->path : 0));
	return up ? rr__nfsd_obj_at(c, up, o) : -ENOMEM;
}

void rr__nfsd_obj_place(struct nfsd_obj *o, const struct nfsd_obj *dir,
			const char *name)
{
	o->path = NULL;
	o->pdev = (uint64_t)dir->st.st_dev;
	o->pino = (uint64_t)dir->st.st_ino;
	o->name = name;
	o->fd = -1;
	o->file = NULL;
}
