/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Classes and queues: which class a task is in, the per-LLC dispatch
 * queues, slices, RR virtual time, wakeup preemption, and the dispatch
 * order. Included by main.bpf.c only.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#ifndef __FAIRQUOTA_QUEUES_BPF_H
#define __FAIRQUOTA_QUEUES_BPF_H

static u64 dsq_id(u32 kind, u32 llc)
{
	return ((u64)llc << 2) | kind;
}

/*
 * Work hints: which of an LLC's URGENT, FIFO and RR queues may hold tasks,
 * for the CPUs of the other LLCs (FIFO from anywhere, steal()). Without
 * them a CPU about to go idle looked up 3 x (LLCs - 1) queues, each a hash
 * lookup and a read of the cache line that the queue's own LLC writes at
 * every enqueue and dispatch (its lock); with them it reads one word per
 * LLC, a line written only when a queue turns non-empty or is found empty.
 *
 * Set after every insert into those queues (only if clear: no write while
 * the LLC stays busy). Cleared by another LLC's CPU that finds the queue
 * empty, which then looks again and sets it back if a task arrived. A
 * hint can still be lost: an insert from ops.enqueue() lands after the
 * callback returns, so a clear that falls in between sees the queue empty.
 * The LLC's own CPUs never use the hints, and its timer sets them again
 * for its non-empty queues every run (llc_hints_refresh(), at most
 * SCAN_MAX_NS apart while anything waits), so a lost hint only delays a
 * steal by another LLC, by one timer run at most. Unused with one LLC.
 */
struct llc_hint {
	u64 kinds;	/* bit (1 << kind): that queue may hold tasks */
	u64 __pad[7];	/* a cache line per LLC */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_LLCS);
	__type(key, u32);
	__type(value, struct llc_hint);
} llc_hints SEC(".maps");

/* A task was just put on queue @kind of @llc. */
static void llc_hint_set(u32 llc, u32 kind)
{
	struct llc_hint *h;

	if (nr_llcs <= 1 || !(h = bpf_map_lookup_elem(&llc_hints, &llc)))
		return;
	if (!(READ_ONCE(h->kinds) & (1ULL << kind)))
		__sync_fetch_and_or(&h->kinds, 1ULL << kind);
}

/* May queue @kind of @llc hold tasks? (Unsure counts as yes.) */
static bool llc_hint_test(u32 llc, u32 kind)
{
	struct llc_hint *h = bpf_map_lookup_elem(&llc_hints, &llc);

	return !h || (READ_ONCE(h->kinds) & (1ULL << kind));
}

/*
 * Queue @kind of @llc gave this CPU nothing. If it is empty, clear its
 * hint, then look again (the clear is a full barrier), so that a task
 * inserted before the clear keeps it set. One that holds only tasks this
 * CPU may not run keeps it (no write).
 */
static void llc_hint_clear(u32 llc, u32 kind)
{
	struct llc_hint *h = bpf_map_lookup_elem(&llc_hints, &llc);
	u64 dsq = dsq_id(kind, llc);

	if (!h || scx_bpf_dsq_nr_queued(dsq) > 0)
		return;
	__sync_fetch_and_and(&h->kinds, ~(1ULL << kind));
	if (scx_bpf_dsq_nr_queued(dsq) > 0)
		llc_hint_set(llc, kind);
}

/* Set the hints of @llc's non-empty queues again (its timer). */
static void llc_hints_refresh(u32 llc)
{
	if (nr_llcs <= 1)
		return;
	if (scx_bpf_dsq_nr_queued(dsq_id(DSQ_URGENT, llc)) > 0)
		llc_hint_set(llc, DSQ_URGENT);
	if (scx_bpf_dsq_nr_queued(dsq_id(DSQ_FIFO, llc)) > 0)
		llc_hint_set(llc, DSQ_FIFO);
	if (scx_bpf_dsq_nr_queued(dsq_id(DSQ_RR, llc)) > 0)
		llc_hint_set(llc, DSQ_RR);
}

static s32 task_nice(const struct task_struct *p)
{
	return p->static_prio - 120;
}

/* The kernel's SCHED_BATCH and SCHED_IDLE (include/uapi/linux/sched.h). */
#define FQ_SCHED_BATCH 3
#define FQ_SCHED_IDLE 5

/*
 * Return the class of @p under the configuration @cfg. A SCHED_IDLE task
 * is RR whatever its nice: the policy asks to run only when nothing else
 * wants the CPU, and the kernel already gives it the lowest weight
 * (p->scx.weight 1, against 100 at nice 0), while its nice, which the
 * kernel keeps but does not use for it, could otherwise make it FIFO.
 */
static u32 task_class(const struct task_struct *p, const struct fq_config *cfg)
{
	if (p->policy == FQ_SCHED_IDLE)
		return CLASS_RR;
	return task_nice(p) < cfg->fifo_below_nice ? CLASS_FIFO : CLASS_RR;
}

/*
 * Return true if @p's policy asks for no wakeup preemption: SCHED_BATCH
 * and SCHED_IDLE, as the default scheduler treats them.
 */
static bool no_wakeup_preempt(const struct task_struct *p)
{
	return p->policy == FQ_SCHED_BATCH || p->policy == FQ_SCHED_IDLE;
}

/*
 * Return true if @p was preempted inside an RCU read-side critical section
 * and has not left it yet (PREEMPT_RCU kernels: the context switch marked
 * it blocked; its nesting count cannot tell, since our own callbacks run
 * under rcu_read_lock() when @p is current). Every RCU grace period waits
 * for it to leave the section, and one that waits 21 s is an RCU stall,
 * which ejects the scheduler: such a task is queued first and never parked
 * while it is there (fairquota_enqueue()), as the kernel's RCU boosting
 * raises such readers' priority.
 */
static bool in_rcu_reader(const struct task_struct *p)
{
	if (!bpf_core_field_exists(p->rcu_read_unlock_special))
		return false;
	/* A direct (BTF) load: BPF_CORE_READ() is a helper call per use. */
	return p->rcu_read_unlock_special.b.blocked != 0;
}

/*
 * Return true if @p is a kernel thread within the turn it was given when it
 * last woke (@wakeup: it wakes now, and that turn starts): one slice of CPU
 * time, however often it is preempted in between. Such a turn goes first
 * (fairquota_enqueue()), is not cut for urgent work at a tick, and only
 * FIFO work preempts it (fairquota_running()): a short piece of the
 * kernel's work (a grace period's step) cut part-way would wait in its
 * class queue for the guard (KTHREAD_MAX_WAIT_NS).
 */
static bool kthread_turn(const struct task_struct *p, struct task_ctx *tctx,
			 u64 slice_ns, bool wakeup)
{
	u64 exec = tctx->runtime_ns;

	if (!(p->flags & PF_KTHREAD))
		return false;
	if (wakeup)
		tctx->kturn_end_ns = exec + slice_ns;
	return exec < tctx->kturn_end_ns;
}

/*
 * Return true if queued task @p does the kernel's work, which the guard
 * serves within KTHREAD_MAX_WAIT_NS: a kernel thread, or a task that slept
 * in D (an uninterruptible sleep: on a kernel lock, or I/O) and has not
 * run a slice of CPU time since (its D turn, dsleep_stop(); a FIFO task in
 * it goes first behind queued work, dsleep_head()). A contended rwsem is
 * handed to its first waiter, woken to take it, and stays idle until that
 * task runs: 200 FIFO hogs exec'd at once on 2 CPUs queued on a lock of
 * the file they all map (/bin/sh's i_mmap_rwsem), each woken waiter waited
 * the FIFO bound (1 s) behind the running hogs, and over 100 of them were
 * in D for over 25 s (bench/fifo_crowd.sh); with this bound, none. It is a bound, not a
 * place in front (but for dsleep_head()): a task that wakes from D and
 * runs within 50 ms is not moved, and one that sleeps in D often gets at
 * most one turn per 50 ms of waiting so (a slice: about 6% of a CPU at a
 * 3 ms slice).
 */
static bool kernel_wait(const struct task_struct *p,
			const struct task_ctx *tctx)
{
	return (p->flags & PF_KTHREAD) || (tctx && tctx->dsleep);
}

/* include/linux/sched.h: task states (macros, not in the kernel's BTF). */
#define FQ_TASK_UNINTERRUPTIBLE	0x00000002
#define FQ_TASK_NOLOAD		0x00000400

/* Return true if @p, which stops running, sleeps in D (kernel_wait()). */
static bool sleeps_in_d(const struct task_struct *p)
{
	unsigned int state = READ_ONCE(p->__state);

	/* Not an idle kernel thread's TASK_IDLE (not counted as load). */
	return (state & FQ_TASK_UNINTERRUPTIBLE) && !(state & FQ_TASK_NOLOAD);
}

/*
 * @p (@tctx) stops running (@runnable: it was preempted): keep its
 * kernel_wait() bound until it has run a slice of CPU time since it woke
 * from a D sleep, however often it is preempted in between, as a kernel
 * thread's turn lasts (kthread_turn()). The lock it was handed as it woke
 * stays held until its critical section ends; cut at a tick for the
 * guard's urgent work, its owner waited behind the hogs for the FIFO bound
 * (1 s), and every task that wanted the lock sat in D meanwhile.
 */
static void dsleep_stop(const struct task_struct *p, struct task_ctx *tctx,
			const struct fq_config *cfg, bool runnable)
{
	u64 exec = tctx->runtime_ns;

	if (!runnable) {
		tctx->dsleep = sleeps_in_d(p);
		if (tctx->dsleep)
			tctx->dturn_end_ns = exec + cfg->slice_ns;
		return;
	}
	tctx->dsleep = tctx->dsleep && exec < tctx->dturn_end_ns;
}

/*
 * Task @p (@tctx), waiting since @since, was queued on a class queue of
 * @llc: if the guard serves it early (kernel_wait()), lower the LLC's
 * kwait_ns to @since, so the guard walks the whole queue once it may be
 * overdue (guard_scan()) instead of at its next full walk, AGE_FULL_NS
 * apart (a kernel thread deep in a queue of 200 RR hogs waited
 * 0.25-0.36 s). Written only for such tasks that queue behind others, and
 * only to move kwait_ns earlier, so not at every enqueue.
 */
static void kwait_note(const struct task_struct *p,
		       const struct task_ctx *tctx, u32 llc, u64 since)
{
	struct llc_ctx *lctx;
	u64 old;
	int i;

	if (!kernel_wait(p, tctx) || !since ||
	    !(lctx = try_lookup_llc_ctx(llc)))
		return;
	bpf_for(i, 0, 4) {
		old = READ_ONCE(lctx->kwait_ns);
		if (old && old <= since)
			return;
		if (__sync_val_compare_and_swap(&lctx->kwait_ns, old, since) ==
		    old)
			return;
	}
}

/* Return true if @p is a kernel thread bound to one CPU. */
static bool is_pcpu_kthread(const struct task_struct *p)
{
	return (p->flags & PF_KTHREAD) && p->nr_cpus_allowed == 1;
}

static u32 llc_cpus(u32 llc)
{
	u32 n;

	if (llc >= MAX_LLCS)
		return 1;
	/* Keep the mask: the verifier needs it to bound the index. */
	barrier_var(llc);
	n = llc_nr_cpus[llc & (MAX_LLCS - 1)];
	return n ?: 1;
}

/*
 * Count queued RR task @tctx as waiting for @cpu (the CPU it was assigned),
 * or stop counting it. The counts feed split slices only, so tasks are
 * counted only in split mode (after a switch to split mode the counts
 * start from the tasks queued since); they are per CPU and change when an
 * RR task is queued, dequeued or starts running.
 */
static void rr_wait_begin(struct task_ctx *tctx, s32 cpu)
{
	struct cpu_ctx *cctx = try_lookup_cpu_ctx(cpu);

	if (!cctx || tctx->rr_cpu >= 0)
		return;
	__sync_fetch_and_add(&cctx->nr_rr_waiting, 1);
	tctx->rr_cpu = cpu;
}

static void rr_wait_end(struct task_ctx *tctx)
{
	struct cpu_ctx *cctx;

	if (tctx->rr_cpu < 0)
		return;
	cctx = try_lookup_cpu_ctx(tctx->rr_cpu);
	if (cctx)
		__sync_fetch_and_sub(&cctx->nr_rr_waiting, 1);
	tctx->rr_cpu = -1;
}

/*
 * RR tasks waiting for a turn on @cpu: those assigned to it, or the LLC's
 * queue spread over its CPUs, whichever is larger (tasks pinned to one CPU
 * wait for that CPU only).
 */
static u64 rr_waiting(s32 cpu, u32 llc)
{
	struct cpu_ctx *cctx = try_lookup_cpu_ctx(cpu);
	u64 spread = scx_bpf_dsq_nr_queued(dsq_id(DSQ_RR, llc)) / llc_cpus(llc);
	s64 mine = cctx ? READ_ONCE(cctx->nr_rr_waiting) : 0;

	return mine > (s64)spread ? (u64)mine : spread;
}

/*
 * @slice, cut to the fewest tokens left in @tctx's limited cgroups: 0 if one has
 * none (its refill, done here, found it still in debt after the caller's
 * throttle check), so the turn ends at once and the task is parked, rather
 * than running a whole slice until a tick notices.
 */
static u64 cg_slice_cap(const struct task_ctx *tctx,
			const struct fq_config *cfg, u64 slice)
{
	s64 t;

	if (!tctx->nr_cg)
		return slice;
	/* Tokens of this period, not of the last charge's. */
	cg_charge(tctx, cfg, bpf_ktime_get_ns(), 0, false);
	cg_scan(tctx, 0, &t);
	if (t <= 0)
		return 0;
	return (u64)t < slice ? (u64)t : slice;
}

/*
 * RR slice on @cpu of @llc before any limit cuts it: fixed, or in split
 * mode divided by the RR tasks waiting for this CPU plus one.
 */
static u64 rr_base_slice(const struct fq_config *cfg, s32 cpu, u32 llc)
{
	u64 slice = cfg->slice_ns;

	if (cfg->slice_mode == SLICE_SPLIT) {
		slice /= rr_waiting(cpu, llc) + 1;
		if (slice < cfg->slice_min_ns)
			slice = cfg->slice_min_ns;
	}
	return slice;
}

/*
 * RR slice of @tctx on @cpu of @llc (rr_base_slice()), never more than
 * its remaining quota or its limited cgroups' tokens. *@cut tells whether
 * those tokens cut it (arm_slice_timer() leaves such a turn to the tick
 * where the tick ends the quota).
 */
static u64 rr_slice(const struct task_ctx *tctx, const struct fq_config *cfg,
		    s32 cpu, u32 llc, bool *cut)
{
	u64 base = rr_base_slice(cfg, cpu, llc), slice = base;
	s64 left;

	left = tctx->bw.tokens_ns;
	if (tctx->limited && left > 0 && (u64)left < slice)
		slice = left;
	slice = cg_slice_cap(tctx, cfg, slice);
	*cut = slice < base;
	return slice;
}

/*
 * FIFO tasks keep their CPU until they block or yield; their slice is only
 * a refresh interval (ops.dispatch() renews it), cut to their limited
 * cgroups' tokens so that a group's FIFO task is throttled on time, not at
 * the next tick. *@cut as for rr_slice() (never for FIFO: its turns are
 * timed or not by its class alone).
 */
static u64 task_slice(const struct task_ctx *tctx, const struct fq_config *cfg,
		      s32 cpu, u32 llc, bool *cut)
{
	*cut = false;
	if (tctx->class == CLASS_FIFO)
		return cg_slice_cap(tctx, cfg, SCX_SLICE_DFL);
	return rr_slice(tctx, cfg, cpu, llc, cut);
}

/* Weighted virtual time that @delta_ns of runtime costs at @weight. */
static u64 vtime_cost(u64 delta_ns, u32 weight)
{
	return delta_ns * 100 / (weight ?: 1);
}

/*
 * Virtual deadline of a turn of @slice_ns starting at vtime @vtime: the
 * RR queues are ordered by it, as EEVDF picks the earliest deadline. A
 * low-weight task's turn ends far ahead in virtual time, so a nice 0 task
 * that wakes behind it goes first unless it already ran its share: the
 * long-run split still follows the weights (virtual finish order).
 */
static u64 rr_deadline(u64 vtime, u64 slice_ns, u32 weight)
{
	return vtime + vtime_cost(slice_ns, weight);
}

/*
 * An RR turn of @slice_ns starting at vtime @vtime, of a task of @weight,
 * runs on @cctx's CPU: what wakeups weigh their claim against
 * (may_preempt()).
 */
static void set_curr_turn(struct cpu_ctx *cctx, u64 vtime, u64 slice_ns,
			  u32 weight)
{
	cctx->curr_span = vtime_cost(slice_ns, weight);
	cctx->curr_deadline = vtime + cctx->curr_span;
}

/* The RR clock of @llc (where new tasks are placed), 0 if unknown. */
static u64 llc_clock(u32 llc)
{
	struct llc_ctx *lctx = try_lookup_llc_ctx(llc);

	return lctx ? READ_ONCE(lctx->vtime_now) : 0;
}

/*
 * The RR clock of @cpu: it follows the tasks started there
 * (advance_clocks()) while it stays busy; its LLC's clock once it went
 * idle (a clock left from before an idle spell or hotplug would hold
 * tasks queued there far back or ahead), 0 if neither.
 */
static u64 cpu_clock(s32 cpu)
{
	struct cpu_ctx *cctx = try_lookup_cpu_ctx(cpu);
	u64 now = cctx ? READ_ONCE(cctx->vclock) : 0;

	return now ?: llc_clock(llc_of(cpu));
}

/*
 * How far ahead of its CPU's clock @tctx may be placed when it wakes or
 * moves to another CPU: one turn of its own (its slice's span, or what its
 * last turn moved if more) plus SLEEP_CREDIT_SLICES slices. Tasks that
 * share a CPU stay within about a turn of its clock, so their split is
 * untouched.
 */
static u64 lead_limit(const struct task_ctx *tctx, u64 slice_ns)
{
	u64 turn = vtime_cost(slice_ns, tctx->weight);

	if (tctx->turn_step > turn)
		turn = tctx->turn_step;
	return turn + SLEEP_CREDIT_SLICES * slice_ns;
}

/*
 * @tctx is queued from @cpu: carry its vtime over from the clock it counts
 * from (the CPU it last ran on or was queued from; its LLC's when it is new
 * or was pulled from another LLC) to @cpu's, keeping its lag, as EEVDF
 * carries a task's lag across a migration, and its lead up to
 * lead_limit() (EEVDF clamps both). Two CPUs' clocks move at the speeds
 * of their own tasks and drift apart (credited_vtime()), so a vtime read
 * against another CPU's clock is a lag or a lead the task never had: a
 * nice 0 hog moved by taskset from a CPU where a nice 10 hog had run the
 * clock far ahead to one shared by a nice 0 pair got 0.2% of that CPU
 * instead of a third, waiting for the guard's 1 s bound at every turn; moved
 * the other way, a task took the others' turns up to the lag limit. A lead
 * is bounded too: a CPU's clock may trail its own tasks by seconds (it
 * follows the lowest vtime by a slice per start, and rr_keep_prev() raises
 * a task that keeps its CPU to within RUNNABLE_LAG_SLICES of a queued one
 * far ahead, such as a nice 10 hog), and a hog moved from such a CPU 0.2 s
 * after it started there carried a lead of 1.8 s to the pair's CPU: 0.2%
 * of it over 3 s (4 of 12 moves under 25%). Only a task that changes CPU
 * pays the read of the old CPU's clock.
 */
static void carry_lag(struct task_ctx *tctx, s32 cpu, u64 slice_ns)
{
	u64 from, to, v = tctx->vtime, lead, limit;

	if (tctx->clock_cpu == cpu)
		return;
	from = tctx->clock_cpu >= 0 ? cpu_clock(tctx->clock_cpu) :
				      llc_clock(tctx->llc);
	to = cpu_clock(cpu);
	tctx->clock_cpu = cpu;
	if (!from || !to)
		return;
	if (v >= from) {
		lead = v - from;
		limit = lead_limit(tctx, slice_ns);
		tctx->vtime = to + (lead < limit ? lead : limit);
	} else {
		tctx->vtime = to > from - v ? to - (from - v) : 0;
	}
}

/*
 * @tctx's vtime with its lag limited to @credit_ns (weighted) behind
 * @now, the clock of the CPU it is queued from (cpu_clock()).
 *
 * The limits count from the CPU's clock, not the LLC's: tasks pinned to
 * CPUs whose tasks' vtimes move at different speeds (a nice 0 and a nice
 * 5 hog on one CPU, a nice 10 hog alone on another: 0.75 and 9 times real
 * time) drift apart for ever, and the LLC's clock follows the fastest.
 * Counted from it, every task of the slower CPU was held at the limit: a
 * queued pair there was put at the same vtime at each of its turns and
 * split 50/50 instead of 75/25, and a task that woke there waited for the
 * pair's vtimes to climb past its own (a median 26-46 ms per 2 ms nap,
 * the default scheduler 1.7 ms). Each CPU's clock is written by that CPU
 * alone.
 */
static u64 credited_vtime(const struct task_ctx *tctx, u64 credit_ns,
			  u64 now)
{
	u64 v = tctx->vtime;

	if (now > credit_ns && v < now - credit_ns)
		return now - credit_ns;
	return v;
}

/*
 * @tctx, queued from @cpu, wakes up: it keeps at most SLEEP_CREDIT_SLICES
 * slices of credit for the time it slept. The vtime itself moves, so the
 * queue key, rr_keep_prev() and preemption all read the same value (with
 * only the key limited, a task that had slept 3 s beside a hog kept its
 * CPU for a second: 96% instead of half).
 *
 * It is also kept within lead_limit() ahead of the clock, whichever CPU
 * it slept on: a task that slept on a faster CPU (or is new: tasks start
 * at the LLC's clock) would otherwise wait on a slower one until its tasks
 * caught up, for ever while they stay slower. Only a waking task (and one
 * that changes CPU, carry_lag()) is held so: applied to every requeue, it
 * gave a hog queued from a CPU whose clock lagged the others' the
 * difference, over and over (64 hogs on 32 vCPUs: 44.8-90.8% each).
 */
static void rr_wake(struct task_ctx *tctx, const struct fq_config *cfg,
		    s32 cpu)
{
	u64 now, ceil, v;

	carry_lag(tctx, cpu, cfg->slice_ns);
	now = cpu_clock(cpu);
	v = credited_vtime(tctx, SLEEP_CREDIT_SLICES * cfg->slice_ns, now);
	ceil = now + lead_limit(tctx, cfg->slice_ns);
	tctx->vtime = now && v > ceil ? ceil : v;
}

/*
 * @tctx is queued again from @cpu without having slept (its turn ended, it
 * was preempted or requeued, or its throttled wait ended): it keeps its
 * lag, up to RUNNABLE_LAG_SLICES slices behind the CPU's clock. That is
 * far more than the turns by which tasks sharing a CPU differ, so a
 * weighted split is exact; but tasks of a CPU busier than the others fall
 * behind theirs, and the limit keeps them from holding a CPU for seconds
 * once they meet the others. The vtime moves, not just the key:
 * rr_keep_prev() reads it. With the key alone limited (to 1, then 4
 * slices), a nice 0 task beside a nice 5 one on one CPU got 56-96%
 * instead of 75% from run to run.
 */
static void rr_requeue(struct task_ctx *tctx, const struct fq_config *cfg,
		       s32 cpu)
{
	carry_lag(tctx, cpu, cfg->slice_ns);
	tctx->vtime = credited_vtime(tctx, RUNNABLE_LAG_SLICES *
					   cfg->slice_ns, cpu_clock(cpu));
}

/* RR queue key of @tctx: the deadline of its next turn. */
static u64 rr_key(const struct task_ctx *tctx, const struct fq_config *cfg)
{
	return rr_deadline(tctx->vtime, cfg->slice_ns, tctx->weight);
}

/*
 * RR queue key of parked @tctx, last on @cpu, as its throttled wait ends:
 * its lag limited as rr_requeue() does. The release runs in a timer
 * without the task's rq lock, so only the key is limited here; unpark()
 * moves the vtime when the task runs.
 */
static u64 rr_release_key(const struct task_ctx *tctx,
			  const struct fq_config *cfg, s32 cpu)
{
	return rr_deadline(credited_vtime(tctx, RUNNABLE_LAG_SLICES *
						cfg->slice_ns, cpu_clock(cpu)),
			   cfg->slice_ns, tctx->weight);
}

/* Move clock *@clock towards @vtime by at most @max_step. */
static void clock_follow(u64 *clock, u64 vtime, u64 max_step)
{
	u64 now = READ_ONCE(*clock), cap = now + max_step;

	if (vtime > now)
		WRITE_ONCE(*clock, vtime < cap ? vtime : cap);
}

/*
 * An RR task with vtime @vtime starts (or goes on with) a turn in @llc, on
 * the CPU of @cctx: the LLC's clock (where tasks that join the LLC are
 * placed) and the CPU's (from which lags are limited, credited_vtime())
 * follow it, but by at most @max_step per turn (one slice at a start). A
 * task far ahead of the others (a low-weight task, whose vtime grows fast,
 * started by the guard or on an idle CPU) must not drag a clock: every
 * task placed at it afterwards would wait until the others caught up
 * (measured on 8 vCPUs: 16 hogs at 18-90% each, the guard rescuing the
 * waiters).
 */
static void advance_clocks(u32 llc, struct cpu_ctx *cctx, u64 vtime,
			   u64 max_step)
{
	struct llc_ctx *lctx = try_lookup_llc_ctx(llc);

	if (lctx)
		clock_follow(&lctx->vtime_now, vtime, max_step);
	if (!cctx)
		return;
	/*
	 * The first RR task since the CPU went idle (which forgets its
	 * clock, fairquota_update_idle()): from the LLC's.
	 */
	if (!READ_ONCE(cctx->vclock) && lctx)
		WRITE_ONCE(cctx->vclock, READ_ONCE(lctx->vtime_now));
	/*
	 * The CPU's clock is moved by that CPU's starts alone, so it must
	 * keep up with turns that overran their slice: by up to the vtime
	 * the CPU's last turn moved, if that turn's task is still runnable
	 * (it is then one of those the clock follows, clock_target()); by a
	 * slice after a turn that blocked. Held to a slice per start, it
	 * fell behind the tasks when ticks came 20 ms apart (8 vCPUs under
	 * TCG), and the limit one turn ahead of it then put a nice 0 : nice
	 * 5 pair at the same vtime at each turn: 53-56% instead of 75%.
	 */
	if (cctx->turn_step > max_step && cctx->stop_vtime)
		max_step = cctx->turn_step;
	clock_follow(&cctx->vclock, vtime, max_step);
}

/*
 * Where the clocks follow an RR task with vtime @vtime that starts on the
 * CPU of @cctx: the lower of its vtime and that of the task whose turn
 * there just ended, if that task is still runnable (as CFS's min_vruntime
 * follows the lowest vruntime of its runqueue).
 *
 * A task that starts ahead of those it shares the CPU with (a kernel
 * thread goes first when it wakes; a task may come from a CPU whose clock
 * is ahead) would otherwise drag the clock past them, by up to what the
 * CPU's last turn moved (a low-weight task's turn moves far: 100 ms of a
 * nice 19 task is 6.6 s). The tasks left behind are then raised to the
 * lag bound at their next requeue (rr_requeue()), which wipes out the
 * lead a weighted split had built. On 32 vCPUs with a nice 0 : nice 5
 * pair pinned on each, kernel threads dragged some CPUs' clocks 2.5-4.9 s
 * per 10 s; one CPU's tasks were raised by 10.5 s in all within 4 s, and
 * its pair split 71.1% over 10 s (70.2% on another run) where the others
 * split 74.5-75.5%; with this rule, 74.4% at worst.
 */
static u64 clock_target(const struct cpu_ctx *cctx, u64 vtime)
{
	if (cctx && cctx->stop_vtime && cctx->stop_vtime < vtime)
		return cctx->stop_vtime;
	return vtime;
}

/*
 * Move @tctx's RR vtime to the clock of @cpu, in @llc, when the task
 * changes LLC: it joins with no lag, since the two LLCs' clocks are
 * unrelated. Placed at the LLC's clock, which follows the fastest of its
 * CPUs, it could come seconds ahead of a slower CPU's tasks and drag that
 * CPU's clock past them when it started there (advance_clocks()).
 */
static void set_task_llc(struct task_ctx *tctx, s32 cpu, u32 llc)
{
	if (tctx->llc == llc)
		return;
	tctx->llc = llc;
	tctx->vtime = cpu_clock(cpu);
	tctx->clock_cpu = cpu;
}

/*
 * Claim an idle CPU for @p, queued in @llc: one of @llc's own CPUs if
 * there is one (the task is taken from there without leaving the LLC's
 * cache), else any CPU it may use (which steals it, see steal()). The
 * kernel's pick over the whole mask rotates through the idle CPUs of
 * every LLC. A task whose affinity leaves out some of @llc's CPUs gets
 * that whole-mask pick. Return the CPU, or -1.
 */
static s32 pick_idle_near(const struct task_struct *p, u32 llc)
{
	struct llc_ctx *lctx;
	struct bpf_cpumask *cpus;
	s32 cpu;

	if (nr_llcs > 1 && (lctx = try_lookup_llc_ctx(llc)) &&
	    (cpus = lctx->cpus) &&
	    bpf_cpumask_subset(cast_mask(cpus), p->cpus_ptr)) {
		cpu = scx_bpf_pick_idle_cpu(cast_mask(cpus), 0);
		if (cpu >= 0)
			return cpu;
	}
	return scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
}

/*
 * Kick an idle CPU that @p, queued in @llc, may run on, so the queue
 * gets served.
 */
static void kick_idle_cpu(const struct task_struct *p, u32 llc)
{
	s32 cpu = pick_idle_near(p, llc);

	if (cpu >= 0)
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

/*
 * Queue @p on @llc's urgent queue (at its head with SCX_ENQ_HEAD in
 * @enq_flags), which every CPU of @llc serves first, and kick an idle CPU
 * that may run it.
 */
static void urgent_insert(struct task_struct *p, u32 llc, u64 slice_ns,
			  u64 enq_flags)
{
	scx_bpf_dsq_insert(p, dsq_id(DSQ_URGENT, llc), slice_ns, enq_flags);
	llc_hint_set(llc, DSQ_URGENT);
	kick_idle_cpu(p, llc);
}

/*
 * Return true if queued task @tctx may preempt some running turn at all: a
 * FIFO task always, an RR task only as it wakes. An RR task queued again
 * (its turn ran out or was preempted, its affinity or nice changed) waits
 * for a turn to end or an idle CPU.
 */
static bool may_claim(const struct task_ctx *tctx, u64 enq_flags)
{
	return tctx->class == CLASS_FIFO || (enq_flags & SCX_ENQ_WAKEUP);
}

/* What a queued task claims against the running turns (may_preempt()). */
struct claim {
	u64 key;	/* RR: its queue key, the deadline of its next turn */
	u64 credit;	/* RR: a sleeper's credit (where lag stops counting) */
	bool sync;	/* woken by a sync wakeup (a pipe or socket write) */
};

/*
 * @enq_flags of @p as a claim: a SCHED_BATCH or SCHED_IDLE task claims
 * nothing as it wakes; such an RR task waits for a turn to end or an idle
 * CPU (may_claim() lets only wakeups preempt RR turns; a FIFO task
 * preempts them whatever its flags).
 */
static u64 claim_flags(const struct task_struct *p, u64 enq_flags)
{
	return no_wakeup_preempt(p) ? enq_flags & ~SCX_ENQ_WAKEUP : enq_flags;
}

/*
 * The CPU whose turn claim @cl may not preempt, or -1: a sync wakeup (a
 * pipe or socket write) does not preempt its waker, which usually blocks
 * next (to read the answer); preempting it makes every exchange two
 * context switches. The wakee waits for the waker to block or its turn to
 * end, unless another CPU has a turn it may preempt.
 */
static s32 sync_waker(const struct claim *cl)
{
	return cl->sync ? (s32)bpf_get_smp_processor_id() : -1;
}

/*
 * Return true if queued task @tctx (class FIFO, or RR with queue key
 * @c->key) has more claim to a CPU than the turn running on @cctx's CPU:
 * a FIFO task preempts an RR task, and a waking RR task an RR task whose
 * turn ends later in virtual time (the EEVDF rule: earlier virtual
 * deadline runs first). A per-CPU kernel thread and a turn the guard
 * granted are never preempted. *@deadline is set to the running turn's
 * deadline, counted from no earlier than that CPU's clock less @c->credit,
 * the credit a waking task keeps for its sleep (0 for a FIFO task): lag
 * beyond it gives no claim against a waking task, here and in
 * rr_keep_prev(). A running task lags its CPU's clock when it came from a
 * CPU whose tasks' vtimes moved slower (up to RUNNABLE_LAG_SLICES
 * slices), or runs beside a task far ahead; before, when lags counted
 * from the LLC's clock, a sleeper pinned beside a hog that lagged it
 * waited until the hog's vtime climbed past its own (a median 22-48 ms
 * per 2 ms nap; the default scheduler 1.7 ms). Where runnable tasks meet
 * (the queue order, rr_keep_prev() against a task that did not wake) lag
 * still counts, so weighted shares are unchanged.
 */
static bool may_preempt(const struct cpu_ctx *cctx, const struct task_ctx *tctx,
			const struct claim *c, u64 enq_flags, u64 *deadline)
{
	u64 dl, now, floor;

	if (!may_claim(tctx, enq_flags) || !cctx->curr_valid ||
	    !cctx->curr_preemptible || cctx->curr_class != CLASS_RR)
		return false;
	/*
	 * A turn on the RR budget holds a FIFO task's CPU: only FIFO work
	 * preempts it. An RR task that preempted it would run uncharged
	 * while the FIFO task waits, and the next after it, and so on.
	 */
	if (cctx->curr_bturn && tctx->class != CLASS_FIFO)
		return false;
	dl = cctx->curr_deadline;
	/* 0: a kernel thread's turn, which no RR wakeup preempts. */
	if (c->credit && dl) {
		now = READ_ONCE(cctx->vclock);
		floor = (now > c->credit ? now - c->credit : 0) +
			cctx->curr_span;
		if (dl < floor)
			dl = floor;
	}
	*deadline = dl;
	return tctx->class == CLASS_FIFO || c->key < dl;
}

/*
 * Released from a throttle, @p was queued in @llc: kick the CPU it last
 * ran on if it is idle, else an idle CPU it may use, of @llc first. A task
 * throttled and released 100 times a second (2 ms/10 ms) so resumes where
 * its cache is, as CFS unthrottles a group on the same CPU; the kernel's
 * own pick rotates, and such a task changed CPU at about half of its
 * releases (nginx under a 20% limit: 30 of 88 turns).
 */
static void kick_home_cpu(const struct task_struct *p, u32 llc)
{
	s32 cpu = scx_bpf_task_cpu(p);

	if (bpf_cpumask_test_cpu(cpu, p->cpus_ptr) &&
	    scx_bpf_test_and_clear_cpu_idle(cpu))
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	else
		kick_idle_cpu(p, llc);
}

/*
 * @p (class FIFO, or RR with claim @cl) was just queued: make it run
 * soon. The CPU it is assigned to is preempted if its turn has less claim
 * (may_preempt()); else an idle CPU is woken; else the CPU of its LLC
 * whose running turn has the least claim (the latest deadline) is
 * preempted. That last search, only for a task that may preempt (FIFO, or
 * RR waking) when no CPU is idle, walks the LLC's ring of CPUs
 * (llc_next_cpu(): the LLC's CPUs only, SMT siblings 128 ids apart
 * included) and reads the cpu_ctx of at most PREEMPT_SCAN_CPUS of them,
 * starting after the task's CPU so that wakeups on different CPUs look at
 * different CPUs first.
 */
static void preempt_or_kick(struct task_struct *p, struct task_ctx *tctx,
			    u64 enq_flags, const struct claim *cl)
{
	s32 cpu = scx_bpf_task_cpu(p), victim = -1, c;
	u32 llc = llc_of(cpu), i;
	struct cpu_ctx *cctx = try_lookup_cpu_ctx(cpu);
	u64 dl = 0, worst = 0;
	s32 waker = sync_waker(cl);

	enq_flags = claim_flags(p, enq_flags);
	/*
	 * No claim on any turn: wake an idle CPU if there is one, and do not
	 * walk the LLC for a victim that may_preempt() would refuse (the walk
	 * read up to 64 cpu_ctx at every slice end of a busy LLC).
	 */
	if (!may_claim(tctx, enq_flags)) {
		kick_idle_cpu(p, llc);
		return;
	}
	if (cpu == waker)
		cctx = NULL;
	if (cctx && may_preempt(cctx, tctx, cl, enq_flags, &dl)) {
		victim = cpu;
	} else {
		c = pick_idle_near(p, llc);
		if (c >= 0) {
			scx_bpf_kick_cpu(c, SCX_KICK_IDLE);
			return;
		}
		c = cpu;
		bpf_for(i, 0, PREEMPT_SCAN_CPUS) {
			c = llc_next_cpu(c);
			/* Once round the ring (an absent CPU is its own ring). */
			if (c < 0 || c == cpu)
				break;
			if (c == waker || !bpf_cpumask_test_cpu(c, p->cpus_ptr))
				continue;
			cctx = try_lookup_cpu_ctx(c);
			if (cctx &&
			    may_preempt(cctx, tctx, cl, enq_flags, &dl) &&
			    dl >= worst) {
				worst = dl;
				victim = c;
			}
		}
	}
	if (victim < 0)
		return;
	stat_inc(CNT_WAKE_PREEMPT);
	scx_bpf_kick_cpu(victim, SCX_KICK_PREEMPT);
}

/*
 * At a tick of @p (@tctx): note whether it was in the kernel (its user
 * time did not grow since its last tick: the kernel charges a tick to the
 * mode it interrupted), for tick_cut(). Reads and writes @tctx only.
 */
static void tick_in_kernel(const struct task_struct *p, struct task_ctx *tctx)
{
	u64 ut = p->utime;

	tctx->tick_kernel = ut == tctx->tick_utime;
	tctx->tick_utime = ut;
}

/*
 * A tick of @tctx's turn would end it (for urgent work, or for an RR
 * budget turn): return true to end it now, false to let it go on because
 * it is in the kernel (tick_in_kernel()) and no tick of this
 * turn has put off a cut for KERNEL_DEFER_NS yet. Cut inside the kernel,
 * it may hold a lock (a file's i_mmap_rwsem, which every mmap and
 * mprotect of the file takes) while it waits behind the guard's backlog:
 * a FIFO task so waits the FIFO bound (1 s), and every task that wants
 * the lock sits in D meanwhile (200 FIFO hogs exec'd at once on 2 CPUs:
 * 4 still in D 30 s after the start, 9 hogs 3 s without progress). A FIFO
 * task cut in the kernel all the same, once the deferral is used up, is
 * marked (kcut) to go first behind queued work when it is queued again
 * (dsleep_head()): with a busy host, such cuts of tasks still in exec
 * left 29-64 of those hogs in D 30 s after the start in 2 of 5 runs.
 * The guard's bounds grow by at most KERNEL_DEFER_NS. Reads and writes
 * @tctx only.
 */
static bool tick_cut(struct task_ctx *tctx, u64 now)
{
	if (!tctx->tick_kernel)
		return true;
	if (!tctx->defer_at_ns)
		tctx->defer_at_ns = now;
	if (now - tctx->defer_at_ns < KERNEL_DEFER_NS) {
		stat_inc(CNT_KERNEL_DEFER);
		return false;
	}
	tctx->kcut = tctx->class == CLASS_FIFO;
	return true;
}

/*
 * FIFO task @p (@tctx), queued within its D turn (kernel_wait(),
 * dsleep_stop()) or after a tick cut its turn in the kernel (kcut,
 * tick_cut()), goes to the head of @llc's urgent queue if FIFO or
 * urgent work already waits there, so it runs at the next tick rather
 * than the guard's 50 ms bound later; return true if it was queued so.
 * The lock it was handed as it woke is held until it runs: when 200 FIFO
 * hogs exec'd at once on 2 CPUs, each woken owner of a file's
 * i_mmap_rwsem (every mmap and mprotect of ld.so, libc and /bin/sh)
 * waited that bound, one owner after the other, and on a busy host 20-67
 * hogs were still in D 30 s after the start (bench/fifo_crowd.sh, host
 * CPUs busy), each of them behind the lock for 5-11 s. A task cut inside
 * the kernel may hold such a lock itself. Only with work
 * queued: a FIFO task that would run at once, or behind running FIFO work
 * only, is left to the FIFO order. At most DHEAD_PER_CPU placements per
 * CPU of @llc per DHEAD_WINDOW_NS (one LLC word, written only by such
 * tasks behind queued work): tasks that sleep in D often cannot keep the
 * guard's backlog from its turns; past the allowance they wait for the
 * guard as before.
 */
static __always_inline bool dsleep_head(struct task_struct *p,
					struct task_ctx *tctx,
					const struct fq_config *cfg, u32 llc,
					u64 enq_flags, u64 now)
{
	struct llc_ctx *lctx;

	if (tctx->class != CLASS_FIFO || !(tctx->dsleep || tctx->kcut) ||
	    (scx_bpf_dsq_nr_queued(dsq_id(DSQ_FIFO, llc)) <= 0 &&
	     scx_bpf_dsq_nr_queued(dsq_id(DSQ_URGENT, llc)) <= 0) ||
	    !(lctx = try_lookup_llc_ctx(llc)))
		return false;
	if (now - READ_ONCE(lctx->dhead_at_ns) >= DHEAD_WINDOW_NS) {
		WRITE_ONCE(lctx->dhead_at_ns, now);
		WRITE_ONCE(lctx->dhead_n, 0);
	}
	if (READ_ONCE(lctx->dhead_n) >= llc_cpus(llc) * DHEAD_PER_CPU)
		return false;
	__sync_fetch_and_add(&lctx->dhead_n, 1);
	urgent_insert(p, llc, cfg->slice_ns, enq_flags | SCX_ENQ_HEAD);
	stat_inc(tctx->dsleep ? CNT_DSLEEP_HEAD : CNT_KERNEL_HEAD);
	return true;
}

/*
 * Task @p (@tctx, claim @cl: zero for a FIFO task) goes straight to the
 * local queue of its CPU with SCX_ENQ_PREEMPT when the turn running there
 * may be preempted (may_preempt()) and nothing of its LLC would run
 * before it: the kernel ends that turn in the wakeup path, as the default
 * scheduler's wakeup preemption does, without a kick's irq_work and a
 * dispatch round first. Through the class queue and a kick, an RR
 * sleeper beside a hog waited 470-500 us from its wakeup to the switch,
 * against 158 us under the default scheduler; so, 143-199 us against
 * 48-106 (2-vCPU TCG guest, tracefs, one boot each). Nothing would run
 * before it: nothing on that CPU's local queue (a per-CPU kernel thread
 * keeps its place) or its LLC's urgent and FIFO queues, nor, for an RR
 * task, on the RR queue (whose order it would jump). An RR task only
 * when it wakes (may_claim()), not a sync wakeup on its waker's CPU
 * (sync_waker()) nor one whose wakeups do not preempt (claim_flags()),
 * as in preempt_or_kick(). ops.enqueue() holds that
 * CPU's rq lock, so the turn read from its cpu_ctx cannot change under
 * us. One read of each queue's count and of one cpu_ctx: the same cost
 * on any number of CPUs. Return true if @p was queued.
 */
static bool preempt_local(struct task_struct *p, struct task_ctx *tctx,
			  const struct fq_config *cfg, u64 enq_flags,
			  const struct claim *cl)
{
	s32 cpu = scx_bpf_task_cpu(p);
	u32 llc = llc_of(cpu);
	struct cpu_ctx *cctx;
	u64 dl;

	if (cpu == sync_waker(cl) || !(cctx = try_lookup_cpu_ctx(cpu)) ||
	    !may_preempt(cctx, tctx, cl, claim_flags(p, enq_flags), &dl) ||
	    scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu) ||
	    scx_bpf_dsq_nr_queued(dsq_id(DSQ_URGENT, llc)) ||
	    scx_bpf_dsq_nr_queued(dsq_id(DSQ_FIFO, llc)) ||
	    (tctx->class != CLASS_FIFO &&
	     scx_bpf_dsq_nr_queued(dsq_id(DSQ_RR, llc))))
		return false;
	stat_inc(CNT_WAKE_PREEMPT);
	stat_inc(CNT_WAKE_LOCAL);
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cfg->slice_ns,
			   enq_flags | SCX_ENQ_PREEMPT);
	return true;
}

/*
 * The vtime cost of @tctx's turn so far (since turn_begin()), whether or
 * not the kernel has charged it yet (it brings a running task's runtime up
 * to date only at ticks).
 */
static u64 turn_cost(const struct task_ctx *tctx, u64 now)
{
	if (!tctx->turn_start_ns || now <= tctx->turn_start_ns)
		return 0;
	return vtime_cost(now - tctx->turn_start_ns, tctx->weight);
}

/*
 * @tctx's vtime now, as it runs: where its turn started plus what the turn
 * has cost so far, or the charged vtime if that is further on.
 */
static u64 turn_vtime_now(const struct task_ctx *tctx, u64 now)
{
	u64 v = tctx->turn_vtime + turn_cost(tctx, now);

	return v > tctx->vtime ? v : tctx->vtime;
}

/* Return true if queued task @p was queued by its wakeup (task_ctx.woke). */
static bool queued_by_wakeup(struct task_struct *p)
{
	struct task_ctx *tctx = try_lookup_task_ctx(p);

	return tctx && tctx->woke;
}

/*
 * rr_keep_prev()'s verdict on queued task @head (in queue order): 1 @prev
 * keeps @cpu, 0 it gives way, -1 look at the next task (@head may not
 * run on @cpu and its deadline is earlier than @prev's, *@dl).
 */
static __always_inline int keep_verdict(struct task_struct *head,
					 struct task_ctx *pctx, s32 cpu,
					 u64 slice_ns, u64 span, u64 *dl)
{
	u64 key = head->scx.dsq_vtime, lag = RUNNABLE_LAG_SLICES * slice_ns;
	bool runs_here = bpf_cpumask_test_cpu(cpu, head->cpus_ptr);
	u64 floor, credit, hv;

	if (key < *dl)
		return runs_here ? 0 : -1;
	/* Vtimes, not deadlines: a light task's turn spans far. */
	hv = key - vtime_cost(slice_ns, head->scx.weight);
	if (runs_here && key > hv && hv > *dl - span + lag) {
		pctx->vtime = hv - lag;
		*dl = pctx->vtime + span;
	}
	/* The earliest deadline: only a waking task may go. */
	if (!runs_here || !queued_by_wakeup(head))
		return 1;
	floor = cpu_clock(cpu);
	credit = SLEEP_CREDIT_SLICES * slice_ns;
	floor = floor > credit ? floor - credit : 0;
	return key >= floor + span;
}

/*
 * Return true if RR task @prev may keep @cpu for another turn of @slice_ns:
 * that turn's deadline is still the earliest among the queued tasks that
 * may run on @cpu. Tasks pinned elsewhere in the LLC do not count (with
 * them, a nice 0 task pinned beside a nice 5 one gave its turns to the
 * nice 5 one whenever another CPU's task had an earlier deadline). The
 * scan reads at most KEEP_SCAN_TASKS queued tasks; past that, @prev gives
 * way and consume() picks by deadline. The kernel brings a running task's
 * runtime up to date only at ticks, so a slice that the slice timer ended
 * between two ticks is not charged yet: its vtime is taken to be at least
 * where the elapsed turn puts it. Against a task queued by its wakeup,
 * @prev's lag counts only up to a sleeper's credit, as in may_preempt():
 * the wakeup that preempted @prev on that ground gets the CPU.
 *
 * @prev's lag behind the earliest task that may run here is limited to
 * RUNNABLE_LAG_SLICES slices, as a requeued task's is behind its CPU's
 * clock (rr_requeue()), and its vtime moves up to that limit. A task that
 * keeps its CPU is never requeued, and its CPU's clock follows it: a task
 * placed seconds behind the LLC's others (forked from a CPU whose clock
 * lagged theirs: a CPU running only tasks that sleep) kept a CPU to itself
 * until its vtime caught up with theirs (64 hogs on 32 vCPUs: the last one
 * started ran at 99.7% for 30 s, the others at 45.5-49.8%).
 */
static bool rr_keep_prev(struct task_ctx *pctx, s32 cpu, u32 llc, u64 now,
			 u64 slice_ns)
{
	u64 dsq = dsq_id(DSQ_RR, llc), dl, span;
	struct task_struct *head;
	u32 seen = 0;
	int v;

	/* Nothing queued: no lookup at all. */
	if (!scx_bpf_dsq_nr_queued(dsq))
		return true;
	span = vtime_cost(slice_ns, pctx->weight);
	dl = turn_vtime_now(pctx, now) + span;
	/*
	 * The head decides almost always, read without the queue's lock;
	 * the iterator (the lock per step) only past tasks pinned elsewhere.
	 */
	head = __COMPAT_scx_bpf_dsq_peek(dsq);
	if (!head)
		return true;
	v = keep_verdict(head, pctx, cpu, slice_ns, span, &dl);
	if (v >= 0)
		return v;
	bpf_for_each(scx_dsq, head, dsq, 0) {
		v = keep_verdict(head, pctx, cpu, slice_ns, span, &dl);
		if (v >= 0)
			return v;
		if (++seen >= KEEP_SCAN_TASKS)
			return false;
	}
	return true;
}

/*
 * A turn of @tctx of @slice ns starts now: remember where, for
 * rr_keep_prev(), and how long, for turn_ran_out(). A turn renewed from
 * ops.dispatch() starts where the one that ends got to (charged there).
 */
static void turn_begin(struct task_ctx *tctx, u64 now, u64 slice)
{
	tctx->turn_start_ns = now;
	tctx->turn_vtime = tctx->vtime;
	tctx->turn_slice_ns = slice;
}

/*
 * Return true if @tctx's turn, which ends now with the task still
 * runnable, ran at least half its slice: a CPU-bound task, whose next
 * turn will likely last its slice too (arm_slice_timer()). A turn that a
 * wakeup preempted early does not count.
 */
static bool turn_ran_out(const struct task_ctx *tctx, u64 now)
{
	return tctx->turn_start_ns && now > tctx->turn_start_ns &&
	       (now - tctx->turn_start_ns) * 2 >= tctx->turn_slice_ns;
}

/*
 * @tctx's turn ends now, @runnable or not: set its marks for the timing
 * of its next turns (arm_slice_timer()). ran_out: it stays runnable after
 * at least half its slice. blocks_early (a wakeup-driven task): its last
 * turn not preempted early blocked before half its slice; a turn that
 * ran out clears it, one preempted early leaves it as it was.
 */
static void mark_turn_end(struct task_ctx *tctx, bool runnable, u64 now)
{
	bool out = turn_ran_out(tctx, now);

	tctx->ran_out = runnable && out;
	tctx->blocked = !runnable;
	if (!runnable)
		tctx->blocks_early = !out;
	else if (out)
		tctx->blocks_early = false;
}

/* Move the first task DSQ @dsq can give this CPU to its local DSQ. */
static bool consume_dsq(u64 dsq)
{
	return scx_bpf_dsq_nr_queued(dsq) > 0 && scx_bpf_dsq_move_to_local(dsq, 0);
}

/* The same from queue @kind of @llc. */
static bool consume(u32 kind, u32 llc)
{
	return consume_dsq(dsq_id(kind, llc));
}

/*
 * Consume from queue @kind of any LLC other than @llc. The LLCs are tried
 * from @llc's next one on, so that on a host of many LLCs the idle CPUs of
 * different LLCs do not all take from the first busy one, and an LLC's
 * neighbour (usually the same node's) comes first.
 */
static bool consume_remote(u32 kind, u32 llc)
{
	u32 i, other;

	bpf_for(i, 1, nr_llcs) {
		other = (llc + i) % nr_llcs;
		if (!llc_hint_test(other, kind)) {
			stat_inc(CNT_HINT_SKIP);
			continue;
		}
		if (consume(kind, other))
			return true;
		llc_hint_clear(other, kind);
	}
	return false;
}

/*
 * This CPU of @llc would go idle: take urgent, else RR work of another
 * LLC. Counted: kicks wake idle CPUs of the task's own LLC first, so a
 * steal shows an LLC out of idle CPUs that the periodic balance
 * (pull_rr_work()) has not caught up with yet.
 */
static bool steal(u32 llc)
{
	if (!consume_remote(DSQ_URGENT, llc) && !consume_remote(DSQ_RR, llc))
		return false;
	stat_inc(CNT_LLC_STEAL);
	return true;
}

/*
 * The weights of the tasks queued in @llc's queue @kind: the first
 * walk_tasks read, the rest counted at their mean.
 */
static u64 queued_weight(u32 kind, u32 llc)
{
	u64 n = scx_bpf_dsq_nr_queued(dsq_id(kind, llc)), sum = 0;
	struct task_struct *p;
	u32 seen = 0;

	if (!n)
		return 0;
	bpf_for_each(scx_dsq, p, dsq_id(kind, llc), 0) {
		if (seen >= walk_tasks)
			break;
		seen++;
		sum += p->scx.weight;
	}
	return seen && n > seen ? sum * n / seen : sum;
}

/*
 * The RR load of @llc now: the weights of the RR tasks running on its
 * CPUs (read along its ring, llc_next_cpu()) and of those waiting in its
 * RR and URGENT queues (a task the guard made urgent still waits there);
 * *@cap: its CPUs not running FIFO work, which RR tasks share (those
 * behind FIFO hogs get the guard's and the RR budget's turns only). Only
 * @llc's timer calls this: O(its CPUs + 2 x walk_tasks) per run.
 */
static u64 llc_load(u32 llc, struct llc_ctx *lctx, u32 *cap)
{
	u64 load = queued_weight(DSQ_RR, llc) + queued_weight(DSQ_URGENT, llc);
	struct bpf_cpumask *cpus = lctx->cpus;
	s32 c, first;
	u32 i, n = 0;

	*cap = llc_cpus(llc);
	if (!cpus)
		return load;
	first = c = bpf_cpumask_first(cast_mask(cpus));
	bpf_for(i, 0, llc_cpus(llc)) {
		struct cpu_ctx *cctx = try_lookup_cpu_ctx(c);
		u32 class;

		n++;
		if (cctx && READ_ONCE(cctx->curr_valid)) {
			class = READ_ONCE(cctx->curr_class);
			if (class == CLASS_RR)
				load += READ_ONCE(cctx->curr_weight);
			/* FIFO work, or an RR turn it lends (rr_budget_turn()) */
			if (class != CLASS_RR || READ_ONCE(cctx->curr_bturn))
				n--;
		}
		c = llc_next_cpu(c);
		if (c < 0 || c == first)
			break;
	}
	*cap = n;
	return load;
}

/* *@avg moved towards @now (both << LOAD_AVG_SHIFT) by 1/8. */
static u64 avg_fold(u64 avg, u64 now)
{
	return avg - (avg >> LOAD_AVG_DECAY) + (now >> LOAD_AVG_DECAY);
}

/*
 * Fold @llc's RR load and RR capacity now (llc_load()) into their moving
 * averages (<< LOAD_AVG_SHIFT): return the load's, *@cap the capacity's
 * (which starts at the first reading).
 */
static u64 update_load_avg(u32 llc, struct llc_ctx *lctx, u64 *cap)
{
	u32 cap_now;
	u64 now = llc_load(llc, lctx, &cap_now), avg;
	u64 c = READ_ONCE(lctx->cap_avg);

	if (now > LOAD_AVG_MAX)
		now = LOAD_AVG_MAX;
	avg = avg_fold(READ_ONCE(lctx->load_avg), now << LOAD_AVG_SHIFT);
	c = c ? avg_fold(c, (u64)cap_now << LOAD_AVG_SHIFT) :
		(u64)cap_now << LOAD_AVG_SHIFT;
	WRITE_ONCE(lctx->load_avg, avg);
	WRITE_ONCE(lctx->cap_avg, c);
	*cap = c;
	return avg;
}

/*
 * Return true if @p may run on some CPU of the LLC of @lctx. A task whose
 * affinity only narrows its CPUs (a cpuset container, isolcpus, taskset
 * over CPUs of both LLCs) is balanced as any other; one that may not run
 * there at all stays.
 */
static bool llc_may_run(struct llc_ctx *lctx, const struct task_struct *p)
{
	struct bpf_cpumask *cpus = lctx->cpus;

	return cpus && bpf_cpumask_intersects(cast_mask(cpus), p->cpus_ptr);
}

/*
 * Balance RR work between LLCs by weight, from @llc's housekeeping timer,
 * as CFS balances load: an LLC's load is the sum of the weights of its
 * runnable RR tasks, shared by its CPUs not running FIFO work (both
 * moving averages, update_load_avg(): a queue read at one instant is one
 * short while a CPU switches, and readings of one balanced split on
 * preempted vCPUs ranged 3..7 tasks). From the LLC with the most load per
 * such CPU, if moving a task of weight w would leave it at least as
 * loaded as @llc (W / c - w / c >= W' / c' + w / c'), pull the last task
 * in its deadline order that is that light and may run on a CPU of @llc
 * (with only tasks of the whole machine's affinity, the tasks of a cpuset
 * container or of an isolcpus host were never balanced). Equal weights
 * balance so to within one task; counted by tasks rather than weights, 6
 * nice 0 and 6 nice 5 hogs on 2 LLCs of 4 CPUs split 6 and 6 with four
 * nice 0 hogs at 84% each beside two nice 5 ones in one LLC, where the
 * default scheduler gives them about 96%. A move never reverses the
 * imbalance, so it is never undone, with one exception: RR tasks behind
 * FIFO work on (nearly) every CPU of an LLC have next to no room there,
 * and moving the last of them would leave that LLC with no load at all:
 * a task moves also if @llc stays at most half as loaded per CPU as its
 * source was (2 (W' + w) / c' <= W / c), which cannot be undone either
 * (the move back would need the reverse). Without it, one RR hog of 8
 * stayed behind FIFO hogs on the 4 CPUs of one LLC in some runs and took
 * their RR budget turns (the FIFO hogs kept 82% of their CPUs, the
 * other runs 99%). A move is taken off both averages at once, so the same
 * imbalance is not acted on twice. The task
 * keeps its lag: it joins @llc as far ahead of @llc's clock (at most one
 * turn) as it was ahead of its old LLC's. One task per timer run, found
 * among the last WALK_TASKS (64) of the queue (those of a container
 * pinned to the other LLC are passed over), keeps the cost O(LLCs) per
 * run.
 */
static void pull_rr_work(u32 llc, const struct fq_config *cfg)
{
	struct llc_ctx *lctx = try_lookup_llc_ctx(llc), *fctx = NULL;
	u64 mine, my_cap, best = 0, best_cap = 1, excess, wmax, roomy;
	u64 vnow, from_vnow, lag, cap;
	u32 from = llc, seen = 0, i;
	struct task_struct *p;

	if (!lctx)
		return;
	mine = update_load_avg(llc, lctx, &my_cap);
	bpf_for(i, 0, nr_llcs) {
		struct llc_ctx *other;
		u64 theirs, c;

		if (i == llc || !(other = try_lookup_llc_ctx(i)))
			continue;
		theirs = READ_ONCE(other->load_avg);
		c = READ_ONCE(other->cap_avg);
		/* theirs / c > best / best_cap, no division (c may be 0) */
		if (theirs * best_cap > best * c) {
			best = theirs;
			best_cap = c;
			from = i;
			fctx = other;
		}
	}
	/* w (my_cap + best_cap) <= best my_cap - mine best_cap */
	if (!fctx || best * my_cap <= mine * best_cap)
		return;
	excess = best * my_cap - mine * best_cap;
	wmax = (excess >> LOAD_AVG_SHIFT) / (my_cap + best_cap);
	/* or 2 (mine + w) best_cap <= best my_cap: see above */
	roomy = best_cap ? best * my_cap / 2 / best_cap : ~0ULL;
	if (roomy > mine && (roomy - mine) >> LOAD_AVG_SHIFT > wmax)
		wmax = (roomy - mine) >> LOAD_AVG_SHIFT;
	if (!wmax)
		return;

	vnow = READ_ONCE(lctx->vtime_now);
	from_vnow = READ_ONCE(fctx->vtime_now);
	bpf_for_each(scx_dsq, p, dsq_id(DSQ_RR, from), SCX_DSQ_ITER_REV) {
		struct task_ctx *tctx;
		u64 vtime, w;

		if (seen++ >= walk_tasks)
			break;
		tctx = try_lookup_task_ctx(p);
		if (!tctx || tctx->weight > wmax || !llc_may_run(lctx, p))
			continue;
		w = (u64)tctx->weight << LOAD_AVG_SHIFT;
		lag = tctx->vtime > from_vnow ? tctx->vtime - from_vnow : 0;
		cap = vtime_cost(cfg->slice_ns, tctx->weight);
		vtime = vnow + (lag < cap ? lag : cap);
		scx_bpf_dsq_move_set_vtime(BPF_FOR_EACH_ITER,
					   rr_deadline(vtime, cfg->slice_ns,
						       tctx->weight));
		if (scx_bpf_dsq_move_vtime(BPF_FOR_EACH_ITER, p,
					   dsq_id(DSQ_RR, llc), 0)) {
			llc_hint_set(llc, DSQ_RR);
			WRITE_ONCE(tctx->llc, llc);
			WRITE_ONCE(tctx->vtime, vtime);
			WRITE_ONCE(tctx->clock_cpu, -1);
			kwait_note(p, tctx, llc, READ_ONCE(tctx->enq_at_ns));
			/* One task's worth moved: act on the rest later. */
			WRITE_ONCE(lctx->load_avg, mine + w);
			WRITE_ONCE(fctx->load_avg, best > w ? best - w : 0);
			stat_inc(CNT_LLC_PULL);
			kick_idle_cpu(p, llc);
		}
		break;
	}
}

#endif /* __FAIRQUOTA_QUEUES_BPF_H */
