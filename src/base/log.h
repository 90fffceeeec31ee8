/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Logging to stderr. The level comes from RPCRDMA_LOG (error, warn, info,
 * debug; default warn) and is read once.
 */
#ifndef RR_BASE_LOG_H
#define RR_BASE_LOG_H

enum rr_log_level { RR_LOG_ERROR, RR_LOG_WARN, RR_LOG_INFO, RR_LOG_DEBUG };

extern int rr__log_level;
void rr__log_init(void);
void rr__log(enum rr_log_level lvl, const char *file, int line, const char *fmt,
	     ...) __attribute__((format(printf, 4, 5)));

#define RR_LOG(lvl, ...)                                                       \
	do {                                                                   \
		if ((int)(lvl) <= rr__log_level)                               \
			rr__log((lvl), __FILE__, __LINE__, __VA_ARGS__);       \
	} while (0)
#define rr_err(...)  RR_LOG(RR_LOG_ERROR, __VA_ARGS__)
#define rr_warn(...) RR_LOG(RR_LOG_WARN, __VA_ARGS__)
#define rr_info(...) RR_LOG(RR_LOG_INFO, __VA_ARGS__)
#define rr_dbg(...)  RR_LOG(RR_LOG_DEBUG, __VA_ARGS__)

#endif
