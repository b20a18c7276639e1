/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types and constants shared by the BPF scheduler (main.bpf.c), the Rust
 * daemon (through bindgen) and the native unit tests of bucket.h.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#ifndef __FAIRQUOTA_INTF_H
#define __FAIRQUOTA_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
#endif

enum consts {
	NSEC_PER_USEC		= 1000ULL,
	NSEC_PER_MSEC		= 1000ULL * 1000,
	NSEC_PER_SEC		= 1000ULL * 1000 * 1000,

	/* Most tasks tracked at once (entries of the task_ctxs map). */
	MAX_TASKS		= 65536,

	/* Custom dispatch queues. */
	FIFO_DSQ		= 0,	/* FIFO class, arrival order */
	RR_DSQ			= 1,	/* RR class, ordered by weighted vtime */
	THROTTLED_DSQ		= 2,	/* over quota, ordered by release time */

	/*
	 * A FIFO task that has waited this long behind another FIFO task
	 * rotates the running one to the tail: FIFO hogs must not starve each
	 * other past the kernel watchdog (timeout_ms below).
	 */
	FIFO_MAX_WAIT_NS	= 1000ULL * 1000 * 1000,

	/* Longest a task stays throttled to pay off overrun (debt cap). */
	MAX_THROTTLE_NS		= 2000ULL * 1000 * 1000,

	/* The release timer runs at least this often. */
	HEARTBEAT_NS		= 10ULL * 1000 * 1000,

	/* Kernel watchdog: a runnable task not run for this long ejects us. */
	WATCHDOG_TIMEOUT_MS	= 10000,
};

/* RR slice modes (fq_config.slice_mode). */
enum slice_mode {
	SLICE_FIXED		= 0,	/* every RR turn is slice_ns */
	SLICE_SPLIT		= 1,	/* slice_ns / (nr_waiting + 1), >= slice_min_ns */
};

/* Scheduling class of a task, derived from its nice value. */
enum task_class {
	CLASS_RR		= 0,
	CLASS_FIFO		= 1,
};

/*
 * Live configuration: the single entry of the "config" map. The daemon
 * writes it at start and whenever it is reconfigured; every BPF callback
 * reads the current values, so a change takes effect at the next decision
 * (and bucket refills use the new quota/period from the next period on).
 */
struct fq_config {
	u64 slice_ns;		/* RR time slice */
	u64 slice_min_ns;	/* lower bound in SLICE_SPLIT mode */
	u64 period_ns;		/* bandwidth period */
	u64 quota_ns;		/* runtime per period per RR task, 0 = no limit */
	u64 guard_ns;		/* starvation guard: max RR wait behind FIFO */
	s32 fifo_below_nice;	/* nice < this => FIFO class */
	u32 slice_mode;		/* enum slice_mode */
	u32 daemon_tgid;	/* the daemon itself is never throttled */
	u32 __pad;
};

/* Global event counters (per-CPU, summed by the daemon). */
enum counter_idx {
	CNT_FIFO_DISPATCH,	/* a FIFO task started running */
	CNT_RR_DISPATCH,	/* an RR task started running */
	CNT_THROTTLE,		/* a task ran out of quota */
	CNT_GUARD,		/* the starvation guard preempted a FIFO task */
	CNT_FIFO_ROTATE,	/* a FIFO hog was rotated behind a FIFO waiter */
	CNT_UNTRACKED,		/* a task got no context (task map full) */
	NR_COUNTERS,
};

struct counters {
	u64 cnt[NR_COUNTERS];
};

/*
 * Bandwidth bucket: quota_ns of runtime per period_ns, refilled lazily at
 * period boundaries. tokens_ns goes negative when a task overruns (the
 * tick notices expiry late); that debt is paid from the next periods so the
 * long-run share is exact. See bucket.h.
 */
struct bw_bucket {
	s64 tokens_ns;		/* runtime left in this period (< 0: debt) */
	u64 period_start_ns;	/* start of the current period, 0 = never */
	u64 last_active_ns;	/* period_start_ns of the last charged period */
	u64 nr_periods;		/* periods in which runtime was charged */
	u64 nr_throttled;	/* times the bucket ran dry */
	u64 throttled_ns;	/* total time spent parked while throttled */
	u64 parked_at_ns;	/* when the task was parked, 0 = not parked */
};

/* Per-task state, one entry of the task_ctxs map keyed by pid. */
struct task_ctx {
	u64 vtime;		/* weighted virtual time (RR order) */
	u64 last_exec_ns;	/* p->se.sum_exec_runtime charged so far */
	u64 enq_at_ns;		/* when the task was last queued */
	u64 runtime_ns;		/* total CPU time under this scheduler */
	struct bw_bucket bw;
	u32 tgid;
	u32 weight;		/* p->scx.weight (nice 0 = 100) */
	s32 nice;
	u32 class;		/* enum task_class */
	u8 limited;		/* subject to the quota right now */
	u8 fifo_to_tail;	/* FIFO task yielded or was rotated */
	u8 __pad[6];
};

#endif /* __FAIRQUOTA_INTF_H */
