/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The scheduler's state, each piece defined once: topology (rodata), the
 * live configuration snapshot, per-task, per-CPU and per-LLC contexts, and
 * the event counters. Included by main.bpf.c only.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#ifndef __FAIRQUOTA_STATE_BPF_H
#define __FAIRQUOTA_STATE_BPF_H

/*
 * Topology, written by the daemon before load: number of LLCs, the LLC of
 * each CPU and the number of CPUs of each LLC. A CPU hotplug restarts the
 * scheduler, which reads the topology again.
 */
const volatile u32 nr_llcs = 1;
const volatile u32 cpu_llc[MAX_CPUS];
/* The next CPU of each CPU's LLC: a ring per LLC (src/topology.rs). */
const volatile u32 cpu_llc_next[MAX_CPUS];
const volatile u32 llc_nr_cpus[MAX_LLCS] = { 1 };

/* The daemon's tgid in the init pid namespace (set by register_daemon). */
u32 daemon_tgid;

/* ---------------------------------------------------------------- config */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, u32);
	__type(value, struct fq_config);
} config_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} config_seq SEC(".maps");

/*
 * The current configuration, read in place: slot (seq & 1) of
 * config_slots. A writer (control.rs, one at a time under a lock file)
 * waits for an RCU grace period, then fills the other slot and bumps
 * seq. Every caller is a non-sleepable callback or timer, inside an RCU
 * read-side section, so a slot is never rewritten while a decision that
 * read seq before the last bump still reads it: each decision sees one snapshot, with no copy (the copy it replaced
 * was about a tenth of ops.running()'s instructions). The daemon writes
 * the first configuration before it attaches; an array lookup of index 0
 * or 1 cannot fail, and if it did, the scheduler would exit with an
 * error (the kernel falls back to its default scheduler) rather than
 * decide on no configuration. NULL only then.
 */
static const struct fq_config *live_config(void)
{
	const struct fq_config *cfg;
	u32 zero = 0, idx;
	u64 *seqp;

	seqp = bpf_map_lookup_elem(&config_seq, &zero);
	if (!seqp)
		goto fail;
	idx = READ_ONCE(*seqp) & 1;
	cfg = bpf_map_lookup_elem(&config_slots, &idx);
	if (cfg)
		return cfg;
fail:
	scx_bpf_error("no configuration");
	return NULL;
}

/* ------------------------------------------------------------- per task */

/*
 * Per-task context in task local storage: it lives and dies with the
 * task_struct, so exec from any thread (which swaps pids with the leader)
 * and pid reuse never mix two tasks' state, and there is no entry limit.
 */
struct task_ctx {
	u64 vtime;		/* weighted virtual time in its LLC (RR order) */
	u64 exec_at_ns;		/* running: runtime charged up to this time */
	u64 stop_at_ns;		/* its turn stopped here; switch not seen yet */
	u64 tail_ns;		/* its usual switch tail (fq_charge_stop()) */
	s64 tail_debt;		/* tails measured less tails charged */
	u64 enq_at_ns;		/* when it was last queued (its wait's start) */
	u64 runtime_ns;		/* total CPU time under this scheduler */
	u64 release_at_ns;	/* while parked: when its bucket refills */
	u64 turn_start_ns;	/* when its current turn started (running) */
	u64 turn_vtime;		/* its vtime then */
	u64 turn_slice_ns;	/* the slice it was given then */
	u64 max_wait_ns;	/* longest wait, runnable (or released) to running */
	u64 kturn_end_ns;	/* kernel thread: runtime_ns its turn ends at */
	u64 dturn_end_ns;	/* woken from D: runtime_ns dsleep ends at */
	u64 tick_utime;		/* p->utime at its last tick (tick_in_kernel()) */
	u64 defer_at_ns;	/* first tick of this turn that put off a cut */
	u64 turn_step;		/* RR: vtime its last turn moved (stopping) */
	struct bw_bucket bw;
	u64 lim_quota_ns;	/* the limit bw last refilled under */
	u64 lim_period_ns;	/* (task_limit(); 0: none yet) */
	u64 cg_leaf;		/* id of its cgroup when cg_ids was found */
	u64 cg_gen;		/* fq_config.cg_gen cg_ids is valid for */
	u64 cg_ids[MAX_TASK_CGROUPS];	/* limited cgroups on its path */
	u32 nr_cg;		/* entries in cg_ids */
	u32 weight;		/* p->scx.weight (nice 0 = 100) */
	s32 nice;
	u32 class;		/* enum task_class */
	u32 llc;		/* LLC whose queues and vtime it is in */
	u8 limited;		/* subject to the quota right now */
	u8 fifo_head;		/* FIFO task preempted while running */
	u8 to_tail;		/* yielded: next enqueue goes to the tail */
	u8 parked;		/* waiting on a THROTTLED DSQ */
	u8 urgent;		/* moved to URGENT; its turn is not preempted */
	u8 ran_out;		/* it ran its last turn out (turn_ran_out()) */
	u8 blocks_early;	/* its last turn not preempted early blocked early */
	u8 blocked;		/* its last turn ended by blocking */
	u8 sync_wake;		/* woken by a sync wakeup (select_cpu), once */
	u8 woke;		/* queued by its wakeup, not run since */
	u8 dsleep;		/* slept in D, not run a slice since (kernel_wait()) */
	u8 bturn;		/* queued for a turn on the RR budget, not run since */
	u8 kcut;		/* FIFO: a tick cut its turn in the kernel (tick_cut()) */
	u8 tick_kernel;		/* its last tick found it in the kernel */
	s32 rr_cpu;		/* CPU whose nr_rr_waiting counts it, or -1 */
	u32 rel_pending;	/* released by its cgroups, not run yet */
	s32 clock_cpu;		/* CPU whose clock vtime counts from, -1 its LLC's */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctx_stor SEC(".maps");

static struct task_ctx *try_lookup_task_ctx(const struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctx_stor, (struct task_struct *)p,
				    0, 0);
}

/*
 * When queued task @tctx began its wait (tctx->enq_at_ns), or 0 if it
 * is not waiting as of @now. Read from other CPUs than the task's (the
 * guard's walk, the RR budget's tick), hence READ_ONCE.
 */
static u64 queued_since(const struct task_ctx *tctx, u64 now)
{
	u64 since = READ_ONCE(tctx->enq_at_ns);

	return since && since <= now ? since : 0;
}

/* -------------------------------------------------------------- per CPU */

/* Unused bytes at the end of an entry written per switch: a cache line. */
#define CTX_GAP_BYTES 64

/*
 * Per-CPU context, one ARRAY entry per CPU id (a bpf_timer cannot live in
 * a per-CPU map). Written only by its own CPU; read by others to decide
 * whether a wakeup may preempt what runs there. Each entry ends in
 * CTX_GAP_BYTES never touched (ctx_gap): no cache line then holds two
 * CPUs' fields, wherever the kernel puts the array (its values are only
 * 8-byte aligned: 296 bytes into struct bpf_array in scx_utils' 7.3 x86
 * headers), so a CPU's writes at each switch never take a line from its
 * neighbour. Without the gap two CPUs wrote the line their entries shared
 * at every switch.
 */
struct cpu_ctx {
	struct bpf_timer slice_timer;	/* ends a slice between ticks */
	u64 turn;		/* bumped each time a task starts running */
	u64 timer_turn;		/* the turn the slice timer was armed for */
	u64 curr_deadline;	/* RR: vtime at which the running turn ends */
	u64 curr_span;		/* RR: vtime cost of that turn's slice */
	u64 vclock;		/* RR: this CPU's clock (advance_clocks()) */
	u64 turn_step;		/* RR: vtime the last turn here moved */
	u64 stop_vtime;		/* RR: its task's vtime if still runnable, or 0 */
	u32 curr_class;		/* class of the running task */
	u32 curr_weight;	/* its weight (llc_load()) */
	u8 curr_valid;		/* a task of ours is running */
	u8 curr_preemptible;	/* it may be preempted (not a pcpu kthread) */
	u8 curr_bturn;		/* its turn is on the RR budget */
	u8 bud_ask;		/* BUD_ASKED / BUD_PICKED (rr_budget_ask()) */
	u8 quota_at_tick;	/* its tokens end its turn, at a tick */
	u8 last_ran_out;	/* RR: the last turn here ran its slice out */
	u8 timer_follow;	/* the timer took its turn late (slice_timer_follow()) */
	u8 serve_parked;	/* a parked task was handed to the ext server (serve_starved()) */
	s64 nr_rr_waiting;	/* queued RR tasks assigned to this CPU */
	u64 timer_at;		/* the slice timer's deadline (ktime ns) */
	u64 timer_slice;	/* the slice it was armed for */
	u64 chain_at;		/* armed again by its callback, for then (or 0) */
	u64 kicked_at;		/* when that callback kicked the CPU (or 0) */
	u64 kick_lag;		/* kick to next turn, last seen (<= CHAIN_LAG_MAX_NS) */
	u64 bud_start_ns;	/* RR budget: when its window started */
	u64 bud_used_ns;	/* RR budget: RR time charged in that window */
	u64 tick_at;		/* when this CPU's last tick ran ops.tick() */
	u64 turn_end_at;	/* RR: when the running turn's slice ends, or 0 */
	u64 turn_slice;		/* the running turn's slice (slice_timer_follow()) */
	u8 ctx_gap[CTX_GAP_BYTES];	/* never used: see above */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CPUS);
	__type(key, u32);
	__type(value, struct cpu_ctx);
} cpu_ctxs SEC(".maps");

static struct cpu_ctx *try_lookup_cpu_ctx(s32 cpu)
{
	u32 key = cpu;

	return bpf_map_lookup_elem(&cpu_ctxs, &key);
}

static u32 llc_of(s32 cpu)
{
	u32 idx = cpu;

	if (cpu < 0 || cpu >= MAX_CPUS)
		return 0;
	/* Keep the mask: the verifier needs it to bound the index. */
	barrier_var(idx);
	return cpu_llc[idx & (MAX_CPUS - 1)];
}

/*
 * The CPU after @cpu in its LLC's ring (every CPU of the LLC once, however
 * far apart their ids), or -1 for a CPU id out of range.
 */
static s32 llc_next_cpu(s32 cpu)
{
	u32 idx = cpu;

	if (cpu < 0 || cpu >= MAX_CPUS)
		return -1;
	barrier_var(idx);
	return cpu_llc_next[idx & (MAX_CPUS - 1)];
}

/* -------------------------------------------------------------- per LLC */

/*
 * Per-LLC context: the LLC's RR virtual clock and its housekeeping timer
 * (releases throttled tasks, ages waiting tasks). Written by the CPUs of
 * that LLC only; nothing in the scheduler is written by every CPU. Ends in
 * an unused gap, as struct cpu_ctx does: no line is shared by two LLCs.
 */
struct llc_ctx {
	struct bpf_timer timer;
	u64 vtime_now;		/* RR clock: follows started tasks (see
				 * advance_llc_clock()) */
	u64 next_timer_ns;	/* when the timer is armed for, 0 = running */
	u64 load_avg;		/* RR load (weights of its running and
				 * queued RR tasks) << LOAD_AVG_SHIFT, moving
				 * average over timer runs (pull_rr_work()) */
	u32 cap_avg;		/* its CPUs not running FIFO work, the same way */
	u32 timer_home;		/* its timer last ran on a CPU of this LLC
				 * (fq_llc_timer_keep()) */
	struct bpf_cpumask __kptr *cpus;	/* its CPUs (set in ops.init()) */
	u64 last_run_ns;	/* when its timer last ran (fq_llc_sweep()) */
	u64 want_ns;		/* earliest release of a task being parked
				 * on THROTTLED (timer_want()) */
	u64 age_full_at_ns;	/* next full walk of its queues (guard_scan()) */
	u64 kwait_ns;		/* a kernel thread may wait in a class queue
				 * since about then, 0 = none (kwait_note()) */
	u64 dhead_at_ns;	/* dsleep_head(): its window's start */
	u32 dhead_n;		/* dsleep_head(): placements in that window */
	u32 kill;		/* walks for killed tasks its timer owes
				 * (note_killed(), release_due()) */
	u32 __pad_kill;
	u64 limits_gen;		/* the cgroup limits' generation its timer
				 * last walked its queue for (release_due()) */
	u8 ctx_gap[CTX_GAP_BYTES];	/* never used (struct cpu_ctx) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_LLCS);
	__type(key, u32);
	__type(value, struct llc_ctx);
} llc_ctxs SEC(".maps");

static struct llc_ctx *try_lookup_llc_ctx(u32 llc)
{
	return bpf_map_lookup_elem(&llc_ctxs, &llc);
}

/* Give @lctx its (empty) CPU mask; ops.init() fills it. */
static s32 llc_cpus_create(struct llc_ctx *lctx)
{
	struct bpf_cpumask *mask = bpf_cpumask_create();

	if (!mask)
		return -ENOMEM;
	mask = bpf_kptr_xchg(&lctx->cpus, mask);
	if (mask)
		bpf_cpumask_release(mask);
	return 0;
}

/* Add @cpu to the CPU mask of its LLC. */
static void llc_cpus_add(s32 cpu)
{
	struct llc_ctx *lctx = try_lookup_llc_ctx(llc_of(cpu));
	struct bpf_cpumask *mask;

	if (!lctx)
		return;
	bpf_rcu_read_lock();
	mask = lctx->cpus;
	if (mask)
		bpf_cpumask_set_cpu(cpu, mask);
	bpf_rcu_read_unlock();
}

/*
 * WALK_TASKS as data, the cap of a timer's walk of a queue: the verifier
 * does not know its value, so it does not follow a capped loop once per
 * count (with the constant age_queue() was too large to load).
 */
static volatile u32 walk_tasks = WALK_TASKS;

/* ------------------------------------------------------------- counters */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct counters);
} counters SEC(".maps");

static void stat_add(u32 idx, u64 n)
{
	struct counters *c;
	u32 zero = 0;

	c = bpf_map_lookup_elem(&counters, &zero);
	if (c && idx < NR_COUNTERS)
		c->cnt[idx] += n;
}

static void stat_inc(u32 idx)
{
	stat_add(idx, 1);
}

#endif /* __FAIRQUOTA_STATE_BPF_H */
