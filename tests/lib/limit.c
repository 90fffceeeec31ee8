// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "limit.h"

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

static const char *volatile g_name;
static const char *volatile g_ctx;
static volatile unsigned g_secs;
static const struct rr_t_limit *g_case; /* the RR_T_LIMITED case running */

static void on_alarm(int sig)
{
	char msg[256];
	int n;

	(void)sig;
	n = snprintf(msg, sizeof(msg),
		     "\n[  FAILED  ] %s%s%s%s: not done in its limit of %u s\n",
		     g_name ? g_name : "?", g_ctx ? " (" : "",
		     g_ctx ? g_ctx : "", g_ctx ? ")" : "", g_secs);
	if (n > 0)
		(void)!write(2, msg, (size_t)n);
	_exit(1); /* a server child follows (PR_SET_PDEATHSIG) */
}

void rr_t_limit_context(const char *ctx)
{
	g_ctx = ctx;
}

void rr_t_limit_start(const char *name, unsigned secs)
{
	struct sigaction sa = {.sa_handler = on_alarm};

	alarm(0);
	g_name = name;
	g_secs = secs;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(secs);
}

void rr_t_limit_end(void)
{
	alarm(0);
}

int rr_t_limited_setup(void **state)
{
	const struct rr_t_limit *l = *state;
	int rc = 0;

	g_case = l;
	rr_t_limit_start(l->name, l->secs);
	*state = NULL;
	if (l->setup)
		rc = l->setup(state);
	if (rc) /* cmocka runs neither the case nor its teardown */
		rr_t_limit_end();
	return rc;
}

int rr_t_limited_teardown(void **state)
{
	int rc = 0;

	if (g_case && g_case->teardown)
		rc = g_case->teardown(state);
	g_case = NULL;
	rr_t_limit_end();
	return rc;
}
