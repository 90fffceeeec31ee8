/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Logging to stderr. The level comes from RPCRDMA_LOG (error, warn, info,
 * debug; default warn) and is read once.
 */
#ifndef RR_BASE_LOG_H
#define RR_BASE_LOG_H

enum rr_log_level { RR_LOG_ERROR, RR_LOG_WARN, RR_LOG_INFO, RR_LOG_DEBUG };

/*
 * The NFS shared libraries log through librpcrdma's state (its private
 * version node, cmake/shared.cmake), so what the macros below use is not
 * hidden with the rest.
 */
#define RR__SHARED __attribute__((visibility("default")))
extern RR__SHARED int rr__log_level;
void rr__log_init(void);
RR__SHARED void rr__log(enum rr_log_level lvl, const char *file, int line,
			const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define RR_LOG(lvl, ...)                                                       \
	do {                                                                   \
		if ((int)(lvl) <= rr__log_level)                               \
			rr__log((lvl), __FILE__, __LINE__, __VA_ARGS__);       \
	} while (0)
#define rr_err(...)  RR_LOG(RR_LOG_ERROR, __VA_ARGS__)
#define rr_warn(...) RR_LOG(RR_LOG_WARN, __VA_ARGS__)
#define rr_info(...) RR_LOG(RR_LOG_INFO, __VA_ARGS__)
#define rr_dbg(...)  RR_LOG(RR_LOG_DEBUG, __VA_ARGS__)

/*
 * For lines a peer can trigger: at most RR_LOG_BURST lines per call site
 * in any RR_LOG_WINDOW_MS, so no client can flood the log or spend our
 * CPU on it. The first line after a quiet window says how many were
 * suppressed. The state is per call site and updated atomically (any
 * thread may log).
 */
#define RR_LOG_BURST	 10
#define RR_LOG_WINDOW_MS 5000
struct rr__log_rl {
	_Atomic unsigned long long window_start_ms;
	_Atomic unsigned int in_window;
	_Atomic unsigned int suppressed;
};
/* >= 0: log now, with that many lines suppressed before; < 0: drop. */
RR__SHARED long rr__log_rl_admit(struct rr__log_rl *rl);
#define RR_LOG_RL(lvl, fmt, ...)                                               \
	do {                                                                   \
		static struct rr__log_rl rl_;                                  \
		long sup_;                                                     \
		if ((int)(lvl) > rr__log_level)                                \
			break;                                                 \
		sup_ = rr__log_rl_admit(&rl_);                                 \
		if (sup_ > 0)                                                  \
			rr__log((lvl), __FILE__, __LINE__,                     \
				fmt " (%ld like it suppressed)",               \
				##__VA_ARGS__, sup_);                          \
		else if (sup_ == 0)                                            \
			rr__log((lvl), __FILE__, __LINE__, fmt,                \
				##__VA_ARGS__);                                \
	} while (0)
#define rr_err_rl(...)	RR_LOG_RL(RR_LOG_ERROR, __VA_ARGS__)
#define rr_warn_rl(...) RR_LOG_RL(RR_LOG_WARN, __VA_ARGS__)
#define rr_info_rl(...) RR_LOG_RL(RR_LOG_INFO, __VA_ARGS__)

#endif
