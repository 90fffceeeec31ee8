/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Spare buffers of one size: see spares.h. */
#include "rpc/spares.h"
#include "base/alloc.h"

#include <errno.h>
#include <stdlib.h>

int rr__spares_init(struct rr__spares *p, size_t size, uint32_t keep)
{
	*p = (struct rr__spares){.keep = keep, .size = size};
	pthread_mutex_init(&p->mu, NULL);
	if (keep && !(p->spare = rr_calloc(keep, sizeof(*p->spare))))
		return -ENOMEM; /* rr__spares_fini still undoes the rest */
	return 0;
}

void rr__spares_fini(struct rr__spares *p)
{
	if (!p->size)
		return; /* never initialised */
	while (p->n)
		free(p->spare[--p->n]);
	free(p->spare);
	pthread_mutex_destroy(&p->mu);
	p->size = 0;
}

void *rr__spares_take(struct rr__spares *p)
{
	void *buf = NULL;

	pthread_mutex_lock(&p->mu);
	if (p->n)
		buf = p->spare[--p->n];
	pthread_mutex_unlock(&p->mu);
	return buf;
}

bool rr__spares_room(struct rr__spares *p)
{
	bool room;

	pthread_mutex_lock(&p->mu);
	room = p->n < p->keep;
	pthread_mutex_unlock(&p->mu);
	return room;
}

void *rr__spares_get(struct rr__spares *p)
{
	void *buf = rr__spares_take(p);

	return buf ? buf : rr_malloc(p->size);
}

void rr__spares_put(struct rr__spares *p, void *buf)
{
	pthread_mutex_lock(&p->mu);
	if (p->n < p->keep) {
		p->spare[p->n++] = buf;
		buf = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	free(buf);
}
