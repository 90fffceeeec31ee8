/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Server: memory the application registered, so that a DDP-eligible
 * result it already holds (a cache, a file mapped in) goes to the client
 * by RDMA Write straight from there instead of through a bulk buffer.
 *
 * The registration gives local access only: it is the source of our own
 * Writes and is never named to a peer, so no client can reach it. A
 * region stays registered while a Send whose Writes read from it has not
 * completed (users); until then rr_svc_mem_unreg refuses with -EBUSY.
 */
#include "rpcrdma/svc.h"

#include <errno.h>
#include <stdint.h>

static bool inside(const struct svc_mem *m, const uint8_t *p, size_t len)
{
	return m->addr && p >= m->addr && len <= m->len &&
	       (size_t)(p - m->addr) <= m->len - len;
}

int rr__svc_mem_find(struct rr_svc *s, const void *p, size_t len)
{
	for (int i = 0; i < SVC_MEMS_MAX; i++)
		if (inside(&s->mems[i], p, len))
			return i;
	return -1;
}

void rr__svc_mem_put(struct rr_svc *s, int i)
{
	if (i >= 0 && s->mems[i].users)
		s->mems[i].users--;
}

void rr__svc_mem_fini(struct rr_svc *s)
{
	for (int i = 0; i < SVC_MEMS_MAX; i++)
		if (s->mems[i].addr)
			rr_mr_dereg(s->mems[i].mr);
}

static int mem_reg(struct rr_svc *s, const void *addr, size_t len)
{
	struct svc_mem *m = NULL;
	int rc;

	for (int i = 0; i < SVC_MEMS_MAX; i++) {
		if (s->mems[i].addr == addr)
			return -EEXIST;
		if (!s->mems[i].addr && !m)
			m = &s->mems[i];
	}
	if (!m)
		return -ENOSPC;
	/* Local read only: no access flag at all. */
	rc = rr_mr_reg(s->pd, (void *)(uintptr_t)addr, len, 0, &m->mr);
	if (rc)
		return rc;
	*m = (struct svc_mem){addr, len, m->mr, 0};
	s->st.registered_bytes += len;
	return 0;
}

static int mem_unreg(struct rr_svc *s, const void *addr)
{
	for (int i = 0; i < SVC_MEMS_MAX; i++) {
		struct svc_mem *m = &s->mems[i];
		int rc;

		if (!addr || m->addr != addr)
			continue;
		if (m->users)
			return -EBUSY;
		rc = rr_mr_dereg(m->mr);
		if (rc)
			return rc;
		s->st.registered_bytes -= m->len;
		*m = (struct svc_mem){0};
		return 0;
	}
	return -ENOENT;
}

int rr_svc_mem_reg(struct rr_svc *s, const void *addr, size_t len)
{
	int rc;

	if (!s || !addr || !len)
		return -EINVAL;
	/* A handler run inline holds s->mu: taking it again would hang. */
	if (rr__svc_tl_locked == s)
		return -EDEADLK;
	pthread_mutex_lock(&s->mu);
	rc = mem_reg(s, addr, len);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int rr_svc_mem_unreg(struct rr_svc *s, const void *addr)
{
	int rc;

	if (!s)
		return -EINVAL;
	if (rr__svc_tl_locked == s)
		return -EDEADLK;
	pthread_mutex_lock(&s->mu);
	rc = mem_unreg(s, addr);
	pthread_mutex_unlock(&s->mu);
	return rc;
}
