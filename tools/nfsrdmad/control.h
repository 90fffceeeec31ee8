/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfsrdmad's control socket: a Unix stream socket (mode 0600) that
 * answers one request per connection, "stats" (text) or "stats json",
 * then closes. Served by a thread of its own that never blocks on a
 * client: a client that sends nothing, or does not read, holds only its
 * own connection, until its deadline.
 */
#ifndef NFSRDMAD_CONTROL_H
#define NFSRDMAD_CONTROL_H

#include <stdbool.h>
#include <stdio.h>

/* Writes the answer to a request into f. */
typedef void (*nfsrdmad_render_fn)(void *arg, FILE *f, bool json);

struct nfsrdmad_control;

/*
 * Binds and listens on path (a stale socket there is replaced, a live
 * one is -EADDRINUSE). Call before other threads run: it sets the umask
 * for a moment. Nothing is answered before nfsrdmad_control_run.
 */
int nfsrdmad_control_open(const char *path, struct nfsrdmad_control **out);
/* Starts the thread that answers, with render. */
int nfsrdmad_control_run(struct nfsrdmad_control *c, nfsrdmad_render_fn fn,
			 void *arg);
/* Requests refused (not one of the two, too long, too slow). */
unsigned long nfsrdmad_control_refused(const struct nfsrdmad_control *c);
/* Stops the thread, closes every connection, removes the socket. */
void nfsrdmad_control_close(struct nfsrdmad_control *c);

#endif
