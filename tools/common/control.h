/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A daemon's control socket (nfsrdmad's, a FUSE mount's): a Unix
 * stream socket (mode 0600) that
 * answers one request per connection, "stats" (text) or "stats json",
 * then closes. Served by a thread of its own that never blocks on a
 * client: a client that sends nothing, or does not read, holds only its
 * own connection, until its deadline.
 */
#ifndef RR_TOOL_CONTROL_H
#define RR_TOOL_CONTROL_H

#include <stdbool.h>
#include <stdio.h>

/* Writes the answer to a request into f. */
typedef void (*tool_render_fn)(void *arg, FILE *f, bool json);

struct tool_control;

/*
 * Binds and listens on path (a stale socket there is replaced, a live
 * one is -EADDRINUSE). Call before other threads run: it sets the umask
 * for a moment. Nothing is answered before tool_control_run.
 */
int tool_control_open(const char *path, struct tool_control **out);
/* Starts the thread that answers, with render. */
int tool_control_run(struct tool_control *c, tool_render_fn fn, void *arg);
/* Requests refused (not one of the two, too long, too slow). */
unsigned long tool_control_refused(const struct tool_control *c);
/* Stops the thread, closes every connection, removes the socket. */
void tool_control_close(struct tool_control *c);

#endif
