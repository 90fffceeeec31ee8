/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Static probes (USDT, provider "rpcrdma") for every layer. A probe no
 * tool attached to is one no-op instruction; without <sys/sdt.h>
 * (Debian's systemtap-sdt-dev) the probes compile to nothing. The probes
 * themselves are listed where they fire: fabric/trace.h (work requests
 * and completions), base/fsm.h (state machine moves).
 */
#ifndef RR_BASE_USDT_H
#define RR_BASE_USDT_H

#ifdef RR_HAVE_SDT
#include <sys/sdt.h>
#define RR_TRACE1(n, a)		    DTRACE_PROBE1(rpcrdma, n, a)
#define RR_TRACE2(n, a, b)	    DTRACE_PROBE2(rpcrdma, n, a, b)
#define RR_TRACE3(n, a, b, c)	    DTRACE_PROBE3(rpcrdma, n, a, b, c)
#define RR_TRACE4(n, a, b, c, d)    DTRACE_PROBE4(rpcrdma, n, a, b, c, d)
#define RR_TRACE5(n, a, b, c, d, e) DTRACE_PROBE5(rpcrdma, n, a, b, c, d, e)
#define RR_TRACE6(n, a, b, c, d, e, f)                                         \
	DTRACE_PROBE6(rpcrdma, n, a, b, c, d, e, f)
#else
#define RR_TRACE1(n, a)		       ((void)0)
#define RR_TRACE2(n, a, b)	       ((void)0)
#define RR_TRACE3(n, a, b, c)	       ((void)0)
#define RR_TRACE4(n, a, b, c, d)       ((void)0)
#define RR_TRACE5(n, a, b, c, d, e)    ((void)0)
#define RR_TRACE6(n, a, b, c, d, e, f) ((void)0)
#endif

#endif
