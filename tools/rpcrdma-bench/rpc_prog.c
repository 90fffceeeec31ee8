// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What both transports of "rpcrdma-bench rpc" share: the data pattern and
 * its sample check, XDR over memory buffers with the rpcgen routines, and
 * reading the resident set size.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rpc_bench.h"

#define SAMPLE 8

const char *rpc_proc_name(uint32_t proc)
{
	switch (proc) {
	case BENCHPROC_NULL:
		return "null";
	case BENCHPROC_ECHO:
		return "echo";
	case BENCHPROC_READ:
		return "read";
	case BENCHPROC_WRITE:
		return "write";
	}
	return "?";
}

uint32_t rpc_payload(const struct rpc_opts *o)
{
	return o->proc == BENCHPROC_NULL ? 0 : o->b.size;
}

size_t rpc_xdr_opaque_len(size_t len)
{
	return 4 + ((len + 3) & ~(size_t)3);
}

/* ----------------------------------------------------------- the pattern */

static uint8_t pattern_byte(size_t i)
{
	/* The high bits matter too: a page-sized shift must not match. */
	return (uint8_t)(i * 31 + (i >> 8) * 7 + (i >> 16) + 0x5a);
}

void rpc_pattern_fill(void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern_byte(i);
}

static bool check_range(const uint8_t *p, size_t from, size_t to)
{
	size_t i;

	for (i = from; i < to; i++) {
		if (p[i] != pattern_byte(i))
			return false;
	}
	return true;
}

bool rpc_pattern_check(const void *buf, size_t len)
{
	size_t head = len < SAMPLE ? len : SAMPLE;
	size_t tail = len > SAMPLE ? len - SAMPLE : 0;

	return check_range(buf, 0, head) && check_range(buf, tail, len);
}

void rpc_pattern_spoil(void *buf, size_t len)
{
	uint8_t *p = buf;

	if (!len)
		return;
	p[0] = (uint8_t)~pattern_byte(0);
	p[len - 1] = (uint8_t)~pattern_byte(len - 1);
}

/* ------------------------------------------------------------------- XDR */

/* xdrmem wants a char *, also for decoding, which never writes. */
static void xdr_over(XDR *x, const void *buf, size_t len, enum xdr_op op)
{
	xdrmem_create(x, (char *)(uintptr_t)buf, (u_int)len, op);
}

int rpc_xdr_enc_u32(void *buf, size_t cap, uint32_t v, size_t *len)
{
	u_int u = v;
	XDR x;

	xdr_over(&x, buf, cap, XDR_ENCODE);
	if (!xdr_u_int(&x, &u))
		return -EMSGSIZE;
	*len = xdr_getpos(&x);
	return 0;
}

/* The whole buffer must be the value: trailing bytes are a protocol error. */
int rpc_xdr_dec_u32(const void *buf, size_t len, uint32_t *v)
{
	u_int u;
	XDR x;

	xdr_over(&x, buf, len, XDR_DECODE);
	if (!xdr_u_int(&x, &u) || xdr_getpos(&x) != len)
		return -EPROTO;
	*v = u;
	return 0;
}

int rpc_xdr_enc_data(void *buf, size_t cap, const void *data, uint32_t data_len,
		     size_t *len)
{
	bench_data d = {
		.bench_data_len = data_len,
		.bench_data_val = (char *)(uintptr_t)data,
	};
	XDR x;

	xdr_over(&x, buf, cap, XDR_ENCODE);
	if (!xdr_bench_data(&x, &d))
		return -EMSGSIZE;
	*len = xdr_getpos(&x);
	return 0;
}

int rpc_xdr_dec_data(const void *buf, size_t len, void *out, size_t cap,
		     uint32_t *data_len)
{
	bench_data d = {.bench_data_val = out};
	u_int n;
	XDR x;

	/* xdr_bytes fills a given buffer without knowing its size. */
	xdr_over(&x, buf, len, XDR_DECODE);
	if (!xdr_u_int(&x, &n))
		return -EPROTO;
	if (n > cap)
		return -EMSGSIZE;
	xdr_over(&x, buf, len, XDR_DECODE);
	if (!xdr_bench_data(&x, &d) || xdr_getpos(&x) != len)
		return -EPROTO;
	*data_len = d.bench_data_len;
	return 0;
}

/* ------------------------------------------------------------ the process */

int rpc_rss_bytes(uint64_t *bytes)
{
	unsigned long long kb;
	char line[256];
	FILE *f;
	int err = -ENOENT;

	f = fopen("/proc/self/status", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1) {
			*bytes = kb * 1024;
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

int rpc_read_full(int fd, void *buf, size_t len, int timeout_ms)
{
	char *p = buf;
	ssize_t n;
	int err;

	while (len) {
		err = bench_wait_fd(fd, POLLIN, timeout_ms);
		if (err)
			return err;
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -ECHILD;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
