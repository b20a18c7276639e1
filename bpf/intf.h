/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types and constants shared by the BPF scheduler (main.bpf.c and the
 * headers it includes), the Rust daemon (through bindgen) and the native
 * unit tests of bucket.h.
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

	/* Most CPU ids and LLCs the scheduler handles (checked at load). */
	MAX_CPUS		= 4096,
	MAX_LLCS		= 256,

	/*
	 * A FIFO task that has waited this long (behind a FIFO hog, or
	 * behind urgent work) becomes urgent: FIFO hogs take turns of about
	 * this length instead of starving each other.
	 */
	FIFO_MAX_WAIT_NS	= 1000ULL * 1000 * 1000,
	/*
	 * Longest wait the guard allows a queued RR task whose turn is not
	 * next in its queue's deadline order (age_queue() in guard.bpf.h),
	 * or guard_ns if that is longer.
	 */
	RR_GUARD_MAX_NS		= 1000ULL * 1000 * 1000,
	/*
	 * Longest wait the guard allows a queued kernel thread of either
	 * class, or guard_ns if that is shorter: the kernel's own work
	 * (workqueues, RCU's kthreads) is not held a whole --guard-ms behind
	 * FIFO hogs, since every task waiting on it waits too (grace periods
	 * of 3.1 s at --guard-ms 1000). A kernel thread that stays busy so
	 * takes one turn per 50 ms behind FIFO work, a few % of a CPU.
	 */
	KTHREAD_MAX_WAIT_NS	= 50ULL * 1000 * 1000,
	/*
	 * RR budget of a CPU that runs FIFO work (rr_budget_turn() and
	 * rr_budget_ask() in budget.bpf.h): an RR task that wakes there runs
	 * at once, and the RR queue's head at a tick, on up to RR_BUDGET_NS
	 * of RR time per RR_BUDGET_WINDOW_NS (5%, as the kernel's fair
	 * server leaves fair tasks), not behind the FIFO task until the
	 * guard. A turn is not started on less than RR_BUDGET_MIN_NS.
	 */
	/*
	 * A FIFO task within its D turn, or cut at a tick in the kernel
	 * (tick_cut()), that would wait behind queued work goes to the head
	 * of the urgent queue (dsleep_head() in queues.bpf.h), at most
	 * DHEAD_PER_CPU times per CPU of its LLC per DHEAD_WINDOW_NS: each
	 * such turn ends at the next tick that finds urgent work, so they
	 * take at most 20% of the LLC's CPU time at HZ 250 (50% at HZ 100),
	 * or 60% where every one of them is found in the kernel for
	 * KERNEL_DEFER_NS, and the guard's backlog the rest.
	 */
	/*
	 * A tick that would end a turn for urgent work or an RR budget turn
	 * but finds the running task in the kernel (tick_cut()) leaves its
	 * turn on for up to KERNEL_DEFER_NS.
	 */
	KERNEL_DEFER_NS		= 8ULL * 1000 * 1000,
	DHEAD_WINDOW_NS		= 100ULL * 1000 * 1000,
	DHEAD_PER_CPU		= 5,
	RR_BUDGET_WINDOW_NS	= 100ULL * 1000 * 1000,
	RR_BUDGET_NS		= 5ULL * 1000 * 1000,
	RR_BUDGET_MIN_NS	= 50ULL * 1000,

	/* Longest a task stays throttled to pay off overrun (debt cap). */
	MAX_THROTTLE_NS		= 2000ULL * 1000 * 1000,
	/*
	 * A task parked this long by its cgroup is released even if the
	 * group is still throttled, to run for a moment (a zero slice): with
	 * more runnable tasks in a group than its quota has turns for, this
	 * keeps every one of them clear of the kernel watchdog (30 s). Each
	 * such turn costs a context switch charged to the group, so it comes
	 * as late as the watchdog safely allows: a released task waits at most
	 * about 2 s for its turn (the guard), which leaves 10 s of margin.
	 * The park time is kept until the task runs (bw_park()), so being
	 * released and parked again does not restart it.
	 */
	PARK_FORCE_MS		= 20000,
	/* Bytes of the trace ring buffer (trace.bpf.h). */
	TRACE_RB_BYTES		= 8 << 20,

	/*
	 * Runtime a CPU may hold uncharged for a limited cgroup (cgroups.bpf.h):
	 * at most CFS's default bandwidth slice; below the minimum it charges
	 * at once.
	 */
	CG_SLICE_MAX_NS		= 5000ULL * 1000,
	CG_SLICE_MIN_NS		= 50ULL * 1000,

	/*
	 * Longest tail of a turn (its stop to the kernel's switch, see
	 * fq_charge_stop()) taken as one: 18-40 us under emulation, a few
	 * natively, but the emulator's vCPUs take turns on one host thread
	 * and some last milliseconds (a cap of 1 ms left a 1 ms/10 ms group
	 * beside three others 0.5-1.4% over its limit, 0.1-0.6% so).
	 */
	SWITCH_TAIL_MAX_NS	= 50ULL * 1000 * 1000,

	/* Smallest quota of a smooth-mode sub-period (see bw_smooth()). */
	BW_MIN_SUB_QUOTA_NS	= 500ULL * 1000,

	/*
	 * A timer deadline closer than this may be firing already, its
	 * callback past the queue a caller is parking a task on (the task
	 * lands there only after ops.enqueue() returns): timer_arm() then
	 * re-arms for this far ahead instead of trusting it.
	 */
	TIMER_RACE_NS		= 1000ULL * 1000,
	/* Limited cgroups' release timers are checked this often (one LLC timer). */
	CG_SWEEP_NS		= 1000ULL * 1000 * 1000,
	/*
	 * A timer deadline this far past with tasks still waiting on it was
	 * lost (cg_sweep(), fq_llc_sweep()).
	 */
	SWEEP_LATE_NS		= 50ULL * 1000 * 1000,
	/* The LLC timers are checked this often (fq_llc_sweep()). */
	LLC_SWEEP_NS		= 100ULL * 1000 * 1000,
	/*
	 * How long a cgroup that left the cpu controller keeps its DSQ after
	 * the last task left it, for a park that had already seen the group
	 * ready (ops.enqueue() inserts after it returns).
	 */
	CG_DYING_GRACE_NS	= 100ULL * 1000 * 1000,

	/* Bounds of the per-LLC housekeeping timer's interval. */
	SCAN_MIN_NS		= 2ULL * 1000 * 1000,
	SCAN_MAX_NS		= 20ULL * 1000 * 1000,
	/* ... while the LLC is quiet (a backstop; a busy tick re-arms it). */
	SCAN_QUIET_NS		= 1000ULL * 1000 * 1000,
	/*
	 * The most queued tasks a walk from an LLC timer looks at: the
	 * guard's of a class queue (age_queue(), which also walks all of it
	 * once every AGE_FULL_NS) and the balance's (pull_rr_work()), so a
	 * run costs O(1) whatever the queues' lengths.
	 */
	WALK_TASKS		= 64,
	AGE_FULL_NS		= 250ULL * 1000 * 1000,

	/*
	 * Kernel watchdog: a runnable task not run for this long ejects the
	 * scheduler. Our own bounds (guard, FIFO turns, throttling) keep
	 * every wait near or below 2 s; the watchdog is only the last resort
	 * against a bug, so it gets the kernel's maximum and a TCG guest's
	 * slow moments never eject us needlessly.
	 */
	WATCHDOG_TIMEOUT_MS	= 30000,

	/*
	 * A turn may end this long after its slice when a tick ends it
	 * rather than the slice timer (see slice_needs_timer()): the
	 * issue's "RR slices honored within 1 ms".
	 */
	SLICE_TICK_SLACK_NS	= 1000ULL * 1000,
	/*
	 * A slice timer that fires this long past its deadline is counted
	 * late (slice_late): the kernel's timers, not the scheduler, then
	 * stretched the turn past the slack above.
	 */
	SLICE_LATE_NS		= 1000ULL * 1000,
	/*
	 * A slice timer chained from the callback that ended the last turn
	 * (slice_timer_take()) serves the next if it ends it within this
	 * much of its slice, either way; the kick's lag it adds is taken as
	 * at most CHAIN_LAG_MAX_NS.
	 */
	CHAIN_SLACK_NS		= 250ULL * 1000,
	CHAIN_LAG_MAX_NS	= 250ULL * 1000,
	/* Jiffies are counted over this long to learn the tick period. */
	TICK_LEARN_NS		= 2000ULL * 1000 * 1000,

	/*
	 * CPUs of its LLC a wakeup looks at for a turn to preempt, when its
	 * own CPU's turn may not be preempted and no CPU is idle. Each is a
	 * cpu_ctx that its CPU writes at every switch (likely a cache miss on
	 * a real host): 64 of them, by estimate 3-6 us per wakeup (not measured).
	 * With half the LLC's turns preemptible, 16 samples miss them all
	 * once in 65,536 wakeups.
	 */
	PREEMPT_SCAN_CPUS	= 16,
	/*
	 * Credit a waking RR task keeps for its sleep, in slices (rr_wake()):
	 * 2, as EEVDF clamps a lag to 2 slices. At 4, a process that woke
	 * from its start-up's I/O ran 4 slices on end beside another on one
	 * CPU (longest gap 7.7 ms, default scheduler 4.4; 2: 5.4-6.0 ms).
	 */
	SLEEP_CREDIT_SLICES	= 2,
	/* Lag a queued RR task keeps while it stays runnable (rr_requeue()). */
	RUNNABLE_LAG_SLICES	= 32,
	/* Queued tasks rr_keep_prev() reads for one that may run here. */
	KEEP_SCAN_TASKS		= 16,
	/*
	 * Fixed point of llc_ctx.load_avg and cap_avg. A 1/8 fold truncates,
	 * so an average of readings 0 stops at 7 units: at a shift of 4 that
	 * was 7/16 of a CPU, room enough in an LLC whose every CPU runs FIFO
	 * work to keep its last RR task there (pull_rr_work()).
	 */
	LOAD_AVG_SHIFT		= 10,
	LOAD_AVG_DECAY		= 3,	/* each reading weighs 1/8 */
	LOAD_AVG_MAX		= 1 << 30,	/* readings are capped here */

	/* Most cgroups with a limit (checked by the daemon, a clear error). */
	MAX_LIMITED_CGROUPS	= 4096,
	/* Most limited cgroups on one task's path (innermost first). */
	MAX_TASK_CGROUPS	= 4,
	/* Deepest cgroup level searched for limits. */
	MAX_CGROUP_DEPTH	= 32,
};

/*
 * Dispatch queues: one set per LLC, DSQ id = (llc << 2) | kind. See the
 * design comment at the top of main.bpf.c.
 */
enum dsq_kind {
	DSQ_URGENT		= 0,	/* waited past its bound, FIFO order */
	DSQ_FIFO		= 1,	/* FIFO class, arrival order */
	DSQ_RR			= 2,	/* RR class, weighted vtime order */
	DSQ_THROTTLED		= 3,	/* out of quota, release time order */
	NR_DSQ_KINDS		= 4,
};

/* RR slice modes (fq_config.slice_mode). */
enum slice_mode {
	SLICE_FIXED		= 0,	/* every RR turn is slice_ns */
	SLICE_SPLIT		= 1,	/* slice_ns / (waiting per CPU + 1) */
};

/* Scheduling class of a task, derived from its nice value. */
enum task_class {
	CLASS_RR		= 0,
	CLASS_FIFO		= 1,
};

/*
 * Live configuration. The "config_slots" map holds two of these and the
 * "config_seq" map a sequence number; the current configuration is slot
 * (seq & 1). A writer (the daemon or `scx_fairquota set`, serialized by a
 * lock file) waits for an RCU grace period, then fills the other slot and
 * bumps seq; a BPF reader reads slot
 * (seq & 1) in place (live_config()), so every decision works from one
 * consistent snapshot.
 */
struct fq_config {
	u64 slice_ns;		/* RR time slice */
	u64 slice_min_ns;	/* lower bound in SLICE_SPLIT mode */
	u64 period_ns;		/* bandwidth period */
	u64 quota_ns;		/* runtime per period per RR task, 0 = no limit */
	u64 guard_ns;		/* starvation guard (age_queue()) */
	s32 fifo_below_nice;	/* nice < this => FIFO class */
	u32 slice_mode;		/* enum slice_mode */
	u64 cg_gen;		/* bumped whenever a limit changes: cgroup_limits,
				 * or quota, period or max_stall (fq_own_limit_changed()) */
	u32 nr_cgroups;		/* entries in cgroup_limits (0: skip cgroups) */
	u32 __pad;
	u64 max_stall_ns;	/* smooth mode: longest sub-period, 0 = off */
};


/* Global event counters (per-CPU, summed by the daemon). */
enum counter_idx {
	CNT_FIFO_DISPATCH,	/* a FIFO task started running */
	CNT_RR_DISPATCH,	/* an RR task started running */
	CNT_THROTTLE,		/* a task ran out of quota */
	CNT_GUARD,		/* an RR task waited past the guard */
	CNT_FIFO_ROTATE,	/* a FIFO task waited past FIFO_MAX_WAIT_NS */
	CNT_WAKE_PREEMPT,	/* a waking task preempted a running one */
	CNT_SLICE_TIMER,	/* a slice ended between ticks (timer) */
	CNT_ENQ_LAST,		/* the last task of a CPU re-queued and kicked */
	CNT_LLC_PULL,		/* an RR task moved to a less loaded LLC */
	CNT_CG_THROTTLE,	/* a limited cgroup ran out of quota */
	CNT_CG_FULL,		/* a cpu.max limit found the map full */
	CNT_CG_DEFER,		/* a parked task's release waited for tokens */
	CNT_IDLE_KICK,		/* a CPU going idle found work queued and went on */
	CNT_PARK_FORCE,		/* a task parked PARK_FORCE_MS was released */
	CNT_CG_ADOPT,		/* a task parked on its LLC moved to its group's queue */
	CNT_CG_LOCKED,		/* runtime charged to a limited cgroup under its lock */
	CNT_CG_HELD,		/* runtime held on a CPU, charged later (no lock) */
	CNT_SLICE_ARM,		/* a slice timer was started for a turn */
	CNT_RCU_BOOST,		/* a task preempted in an RCU reader went first */
	CNT_KTHREAD_BOOST,	/* a kernel thread that woke went first */
	CNT_CG_RESCUE,		/* a cgroup's lost release timer was re-armed */
	CNT_LLC_RESCUE,		/* an LLC's lost timer was re-armed */
	CNT_TIMER_FAIL,		/* a release timer could not be started */
	CNT_CG_GONE,		/* a limited cgroup left the cpu controller: dropped */
	CNT_LLC_STEAL,		/* a CPU took RR or urgent work from another LLC */
	CNT_HINT_SKIP,		/* another LLC's queue skipped on its work hint */
	CNT_GUARD_RUN,		/* a guard run aged an LLC's queues (guard_scan()) */
	CNT_GUARD_LOOK,		/* a queued task the guard looked at */
	CNT_KTHREAD_GUARD,	/* a kernel thread waited past KTHREAD_MAX_WAIT_NS */
	CNT_KTHREAD_WALK,	/* a full guard walk for a queued kernel thread */
	CNT_SLICE_LATE,		/* a slice timer fired over SLICE_LATE_NS late */
	CNT_DSLEEP_GUARD,	/* woken from D, waited past KTHREAD_MAX_WAIT_NS */
	CNT_RR_BUDGET,		/* an RR task woke behind FIFO work and ran on the RR budget */
	CNT_RR_BUDGET_TICK,	/* a tick gave a queued RR task a budget turn */
	CNT_DSLEEP_HEAD,	/* a FIFO task in its D turn went first, behind FIFO work */
	CNT_KERNEL_DEFER,	/* a tick put off a cut (urgent work, RR budget): in the kernel */
	CNT_WAKE_LOCAL,		/* of CNT_WAKE_PREEMPT: straight to the CPU's local queue */
	CNT_KERNEL_HEAD,	/* a FIFO task cut in the kernel went first, behind FIFO work */
	CNT_CG_CONTENDED,	/* cgroup charges that lost CG_CHARGE_TRIES races: tokens only */
	CNT_SLICE_CHAIN,	/* of slice_arm: a turn took the timer its kick armed */
	CNT_SLICE_FOLLOW,	/* a timer whose turn ended early took the untimed one running */
	CNT_SERVER_PARKED,	/* the ext server found only parked tasks: one ran anyway */
	CNT_KILLED_RELEASE,	/* a parked task with SIGKILL pending let go (fairquota_signal()) */
	NR_COUNTERS,
};

struct counters {
	u64 cnt[NR_COUNTERS];
};

/*
 * Bandwidth bucket: quota_ns of runtime per period_ns, refilled lazily at
 * period boundaries. tokens_ns goes negative when a task overruns; that
 * debt is paid from the next periods so the long-run share is exact. See
 * bucket.h.
 */
struct bw_bucket {
	s64 tokens_ns;		/* runtime left in this period (< 0: debt) */
	u64 period_start_ns;	/* start of the current period, 0 = never */
	u64 last_active_ns;	/* period_start_ns of the last charged period */
	u64 nr_periods;		/* periods in which runtime was charged */
	u64 nr_throttled;	/* periods in which the bucket ran dry */
	u64 throttled_ns;	/* total time spent parked while throttled */
	u64 parked_at_ns;	/* when the task was parked, 0 = not parked */
	s64 snap_ns;		/* tokens right after the last refill */
	u64 nr_bursts;		/* periods that used more than a quota */
	u64 burst_ns;		/* runtime used beyond the quota, in total */
	u64 carry_ns;		/* tokens this period kept from a hungry one */
	u64 hungry;		/* the last period began with all used up */
	u64 owed;		/* periods since it was throttled + 1 (0: not) */
	u64 stat_end_ns;	/* end of the period nr_periods counts now */
	u64 stat_throttled;	/* nr_throttled counted that period already */
	u64 debt_ns;		/* smooth mode: debt put off to later
				 * sub-periods (bw_spread_debt()) */
};

/*
 * A limit: a cgroup's is the value of the "cgroup_limits" map (key: the cgroup
 * id, the inode number of its directory in cgroup2fs). Written by the
 * daemon; after a change it bumps fq_config.cg_gen so that tasks look
 * again at which limits apply to them.
 */
struct bw_limit {
	u64 quota_ns;		/* runtime per period for the whole group */
	u64 period_ns;
	u64 burst_ns;		/* unused quota that may be saved (cpu.max.burst) */
	u64 pace_ns;		/* smooth mode: unused sub-quotas saved too (bw_smooth()) */
	u64 stat_period_ns;	/* the period nr_periods and nr_throttled count
				 * (smooth mode: the whole one; 0: period_ns) */
};

/* A limited cgroup's usage, as the daemon reads it from "cgroup_states". */
struct cg_usage {
	struct bw_bucket bw;	/* the group's shared bucket */
	u64 usage_ns;		/* CPU time of its tasks under this scheduler */
	u64 throttled_until_ns;	/* throttled until then (0: not throttled) */
};

/* One task as the "dump_tasks" iterator writes it for the daemon. */
struct task_stat {
	s32 pid;
	u32 tgid;
	char comm[16];
	s32 nice;
	u32 weight;		/* p->scx.weight (nice 0 = 100) */
	u32 class;		/* enum task_class */
	u32 __pad;
	u64 runtime_ns;		/* CPU time under this scheduler */
	u64 nr_periods;
	u64 nr_throttled;
	u64 throttled_ns;
	u64 max_wait_ns;	/* longest wait from runnable to running */
};

/*
 * Tracing (trace.bpf.h, `scx_fairquota trace`): the ring buffer's size and
 * the events it carries. Every event is one struct fq_trace_event.
 */
enum trace_kind {
	TRACE_RUN		= 1,	/* the task started running on cpu */
	TRACE_STOP		= 2,	/* it stopped running (arg: still runnable) */
	TRACE_THROTTLE		= 3,	/* parked out of quota (arg: 1 = a cgroup's) */
	TRACE_RELEASE		= 4,	/* a parked task runs again */
	TRACE_GUARD		= 5,	/* moved to the urgent queue (arg: class) */
};

struct fq_trace_event {
	u64 ts_ns;		/* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
	s32 pid;		/* thread id */
	u32 tgid;		/* process id */
	u32 cpu;
	u8 kind;		/* enum trace_kind */
	u8 class;		/* enum task_class */
	u8 arg;
	u8 __pad;
	char comm[16];
};

/* The trace switch (map "trace_ctl", one entry), written by the tracer. */
struct fq_trace_ctl {
	u64 until_ns;		/* record events until then (0: off) */
	u64 dropped;		/* events lost to a full ring buffer */
};

#endif /* __FAIRQUOTA_INTF_H */
