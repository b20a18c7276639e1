/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Starvation guard: bound the wait of every queued task. The per-LLC
 * housekeeping timer ages the LLC's FIFO and RR queues; a task that has
 * waited past its bound moves to the LLC's URGENT queue, which every CPU
 * of the LLC serves before anything else (a running FIFO task gives way at
 * its next tick). Included by main.bpf.c only.
 *
 * While its LLC has nothing queued or parked (llc_quiet()), the timer runs
 * once a second instead of every scan_interval(), so that an idle LLC is
 * not woken 50 times a second; the next tick of a CPU of the LLC that sees
 * a task queued brings it back to its fast rate (fq_llc_timer_keep()). A task
 * queued on a quiet LLC either finds an idle CPU there (which is kicked and
 * runs it) or waits behind busy CPUs, whose ticks see it.
 *
 * Bounds: an RR task waits at most the longer of guard_ns and
 * RR_GUARD_MAX_NS (1 s; guard_ns if its turn is next in the RR order) +
 * one tick (the re-arm) + one timer interval (<= 20 ms; AGE_FULL_NS,
 * 250 ms, for a task that is not among the queue's first WALK_TASKS or,
 * in RR, whose deadline is more than a slice past the head's) +
 * one tick + the turns of the urgent tasks ahead of it (woken kernel
 * threads' included: a slice each, not cut at a tick); a FIFO task the
 * same with FIFO_MAX_WAIT_NS instead. The urgent queue drains at one
 * turn per CPU per slice, so with R tasks urgent at once on C CPUs the
 * last waits about R * slice / C more. A kernel thread waits at most the
 * shorter of guard_ns and KTHREAD_MAX_WAIT_NS (50 ms) + one tick + one
 * timer interval, however deep in its queue (kwait_ns: the run after it
 * may be overdue walks the whole queue) + the turns of the kernel threads
 * ahead of it: it goes to the head. So does a task woken from a D sleep,
 * until it has run a slice (kernel_wait()); a FIFO one goes there at once
 * behind queued work, as does a FIFO task cut at a tick in the kernel,
 * DHEAD_PER_CPU times per CPU per DHEAD_WINDOW_NS together, a turn of at
 * most a tick each (plus the deferral below), which the bounds above wait
 * for too. A running task found in the kernel at the tick that would cut
 * it for urgent work runs up to KERNEL_DEFER_NS (8 ms) more (tick_cut()),
 * which adds that to each bound. Nothing depends on the number of tasks,
 * FIFO hogs or options beyond that.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#ifndef __FAIRQUOTA_GUARD_BPF_H
#define __FAIRQUOTA_GUARD_BPF_H

/* Interval of the housekeeping timer: a quarter of the guard, bounded. */
static u64 scan_interval(const struct fq_config *cfg)
{
	u64 ns = cfg->guard_ns / 4;

	if (ns < SCAN_MIN_NS)
		ns = SCAN_MIN_NS;
	if (ns > SCAN_MAX_NS)
		ns = SCAN_MAX_NS;
	return ns;
}

/* When a task of a class queue is overdue (age_queue()). */
struct age_bound {
	u64 near_ns;	/* wait of a task whose key is near the head's */
	u64 far_ns;	/* wait of any task */
	u64 kthread_ns;	/* wait of a kernel thread */
	u64 window_ns;	/* "near": key within this of the head's */
	u64 now;	/* the time of the walk */
	u32 cnt_idx;	/* counter of the tasks made urgent */
};

/*
 * The deadline that queued RR task @p's must be near for its turn to be
 * next: the queue's head's (@head), or that of the RR turn running on its
 * CPU if earlier. A task queued behind a running turn with an earlier
 * deadline waits its weighted turn (or the far bound), not the near one.
 * With the queue's head alone, a nice 5 task pinned beside a nice 0 one,
 * which ran on off the queue while its deadline was the earlier, was the
 * head and was made urgent every guard_ns whatever its vtime. Each urgent
 * turn put it further ahead once turns were long enough (the emulator
 * stretched them to about 60 ms): on 32 vCPUs it got 22-30% of its CPU
 * from urgent turns alone while 1.3-2.1 s ahead of the nice 0 task in
 * vtime, and pairs split 66.8-73% instead of 75%.
 */
static u64 turn_head(const struct task_struct *p, u64 head)
{
	const struct cpu_ctx *cctx = try_lookup_cpu_ctx(scx_bpf_task_cpu(p));
	u64 dl;

	if (!cctx || !READ_ONCE(cctx->curr_valid) ||
	    READ_ONCE(cctx->curr_class) != CLASS_RR)
		return head;
	dl = READ_ONCE(cctx->curr_deadline);
	return dl && dl < head ? dl : head;
}

/*
 * Return the counter to count @p under if, having waited @wait, it is
 * overdue by @b (@head: the key of the queue's head), else NR_COUNTERS.
 * kthread_ns is the shortest bound: a kernel thread counts as one.
 */
static u32 overdue(const struct task_struct *p, const struct task_ctx *tctx,
		   const struct age_bound *b, u64 head, u64 wait)
{
	if (kernel_wait(p, tctx)) {
		if (wait < b->kthread_ns)
			return NR_COUNTERS;
		return (p->flags & PF_KTHREAD) ? CNT_KTHREAD_GUARD :
						 CNT_DSLEEP_GUARD;
	}
	if (wait >= b->far_ns ||
	    (wait >= b->near_ns &&
	     p->scx.dsq_vtime <= turn_head(p, head) + b->window_ns))
		return b->cnt_idx;
	return NR_COUNTERS;
}

/*
 * Move every task of queue @kind of @llc that is overdue by @b to the
 * LLC's URGENT queue: one whose key (p->scx.dsq_vtime) is within
 * window_ns of the queue's head and that has waited near_ns, or any that
 * has waited far_ns.
 *
 * RR (deadline order): near guard_ns within a slice of the head's
 * deadline (and of the RR turn's running on the task's CPU, turn_head()),
 * far the longer of guard_ns and RR_GUARD_MAX_NS. Behind FIFO
 * work, which holds the RR queue still, the guard so serves RR tasks in
 * their weighted order (a nice 5 task a third as often as a nice 0 one, a
 * lone RR task every guard_ns). On a CPU crowded with RR tasks, where a
 * light task's fair turn comes after the guard (nice 10 beside 20 nice 0
 * tasks: about every 0.6 s), the guard does not put it first: made urgent
 * at guard_ns whatever their deadline, 20 nice 10 hogs beside 20 nice 0
 * hogs on one CPU got 28% of it instead of 9.7%.
 * FIFO (arrival order, no key): near and far both FIFO_MAX_WAIT_NS.
 * Both: a kernel thread after the shorter of guard_ns and
 * KTHREAD_MAX_WAIT_NS (50 ms), whatever its key, to the urgent queue's
 * head (behind 200 RR hogs made urgent, kworkers waited 0.5 s at its tail).
 *
 * Unless @full, the walk stops at the first WALK_TASKS tasks and, in
 * RR, at the first task beyond the window, which only the far bound can
 * move: an LLC timer run (which also comes at every release of parked
 * tasks) so costs O(1) however many tasks wait; a walk of the whole queue
 * (its iterator takes the queue's lock per step, contending with every
 * CPU of the LLC) comes once every AGE_FULL_NS. The near tasks an RR
 * walk cannot reach wait for those ahead to move (WALK_TASKS per
 * run), or the full walk. Return the number of tasks looked at. *@kwait
 * is lowered to the queue time of every kernel thread left in the queue.
 */
static u32 age_queue(u32 kind, u32 llc, const struct age_bound *b, bool full,
		     u64 *kwait)
{
	bool first = true, keyed = b->near_ns < b->far_ns;
	u64 now = b->now;
	struct task_struct *p;
	u64 head = 0, since, head_flag;
	u32 seen = 0, cnt;

	bpf_for_each(scx_dsq, p, dsq_id(kind, llc), 0) {
		struct task_ctx *tctx;

		if (first) {
			head = p->scx.dsq_vtime;
			first = false;
		}
		if (!full && (seen >= walk_tasks ||
			      (keyed && p->scx.dsq_vtime > head + b->window_ns)))
			break;
		seen++;
		tctx = try_lookup_task_ctx(p);
		if (!tctx)
			continue;
		since = queued_since(tctx, now);
		if (!since)
			continue;
		cnt = overdue(p, tctx, b, head, now - since);
		/* The kernel's work goes ahead of the guard's backlog. */
		head_flag = cnt == CNT_KTHREAD_GUARD ||
			    cnt == CNT_DSLEEP_GUARD ? SCX_ENQ_HEAD : 0;
		if (cnt != NR_COUNTERS &&
		    scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p,
				     dsq_id(DSQ_URGENT, llc), head_flag)) {
			WRITE_ONCE(tctx->urgent, 1);
			llc_hint_set(llc, DSQ_URGENT);
			stat_inc(cnt);
			trace_task(TRACE_GUARD, p, tctx, 0, now);
			kick_idle_cpu(p, llc);
		} else if (kernel_wait(p, tctx) &&
			   (!*kwait || since < *kwait)) {
			*kwait = since;
		}
	}
	return seen;
}

/*
 * Age both class queues of @llc (@lctx): their heads at every run, all of
 * them once every AGE_FULL_NS, and as soon as a kernel thread queued there
 * may be overdue (kwait_ns: kwait_note()). A full walk sets kwait_ns to
 * the oldest kernel thread it left queued (0: none), unless a newer note
 * came meanwhile; a thread that ran before its bound costs one needless
 * full walk, so full walks come about once per bound while kernel
 * threads cycle through the class queues. An idle CPU is woken for each
 * task made urgent; busy CPUs notice the urgent queue at their next tick.
 */
static void guard_scan(struct llc_ctx *lctx, u32 llc,
		       const struct fq_config *cfg, u64 now)
{
	bool full = once_per(&lctx->age_full_at_ns, now, AGE_FULL_NS);
	u64 kthread_ns = cfg->guard_ns < KTHREAD_MAX_WAIT_NS ?
			 cfg->guard_ns : KTHREAD_MAX_WAIT_NS;
	u64 kwait = READ_ONCE(lctx->kwait_ns), left = 0;
	struct age_bound rr = {
		.near_ns = cfg->guard_ns,
		.far_ns = cfg->guard_ns > RR_GUARD_MAX_NS ? cfg->guard_ns :
			  RR_GUARD_MAX_NS,
		.kthread_ns = kthread_ns,
		.window_ns = cfg->slice_ns,
		.now = now,
		.cnt_idx = CNT_GUARD,
	};
	struct age_bound fifo = {
		.near_ns = FIFO_MAX_WAIT_NS,
		.far_ns = FIFO_MAX_WAIT_NS,
		.kthread_ns = kthread_ns,
		.now = now,
		.cnt_idx = CNT_FIFO_ROTATE,
	};

	if (!full && kwait && now >= kwait + kthread_ns) {
		full = true;
		stat_inc(CNT_KTHREAD_WALK);
	}
	stat_inc(CNT_GUARD_RUN);
	stat_add(CNT_GUARD_LOOK,
		 age_queue(DSQ_RR, llc, &rr, full, &left) +
		 age_queue(DSQ_FIFO, llc, &fifo, full, &left));
	if (full && left != kwait)
		__sync_val_compare_and_swap(&lctx->kwait_ns, kwait, left);
}

/*
 * guard_scan() of @llc from its timer. A global function: the verifier
 * checks the queue walks once, not inside every path of the timer
 * callback (they were 300,000 of the 480,000 instructions it processed
 * for ops.init(), which sets the callback: a load took 38 s under TCG).
 * Checked as part of the sleepable ops.init(), it takes the RCU read lock
 * that the queue iterator needs (a timer callback holds it already).
 */
__noinline int fq_guard_scan(u32 llc, const struct fq_config *cfg, u64 now)
{
	struct llc_ctx *lctx = try_lookup_llc_ctx(llc);

	if (!lctx || !cfg)
		return 0;
	bpf_rcu_read_lock();
	guard_scan(lctx, llc, cfg, now);
	bpf_rcu_read_unlock();
	return 0;
}

/* Return true if a task waits on @llc's class or urgent queues. */
static bool llc_has_waiters(u32 llc)
{
	return scx_bpf_dsq_nr_queued(dsq_id(DSQ_RR, llc)) > 0 ||
	       scx_bpf_dsq_nr_queued(dsq_id(DSQ_FIFO, llc)) > 0 ||
	       scx_bpf_dsq_nr_queued(dsq_id(DSQ_URGENT, llc)) > 0;
}

/*
 * Return true if @llc's timer has nothing to watch: no task waiting in the
 * LLC, none parked on its THROTTLED queue, and (on a host of several LLCs)
 * no RR task waiting in another LLC that this one's timer could pull
 * (pull_rr_work()). O(number of LLCs) reads, at the timer's rate.
 */
static bool llc_quiet(u32 llc)
{
	u32 i;

	if (llc_has_waiters(llc) ||
	    scx_bpf_dsq_nr_queued(dsq_id(DSQ_THROTTLED, llc)) > 0)
		return false;
	bpf_for(i, 0, nr_llcs) {
		if (i != llc && scx_bpf_dsq_nr_queued(dsq_id(DSQ_RR, i)) > 0)
			return false;
	}
	return true;
}

/*
 * Called at every tick of a CPU of @llc: bring the LLC's timer back to its
 * fast rate if it is slow (quiet LLC) or stopped (a failed start) while a
 * task waits here, and home to a CPU of the LLC if it ran elsewhere. The
 * timer runs pinned to the CPU that last armed it; ops.init() starts every
 * LLC's timer on the loading CPU, and left there, the housekeeping of all
 * LLCs of a many-LLC host would pile onto that one CPU. And run it now
 * if the command line's cgroup limits changed since the timers last
 * looked (cg_limits_changed()): with every task of a group parked its
 * LLC is quiet, and a `set` that lifts the limit waited up to a second
 * (SCAN_QUIET_NS). Two reads of per-LLC words and one of a global on
 * most ticks; the queue lengths only while the timer is slow.
 */
__noinline int fq_llc_timer_keep(u32 llc, const struct fq_config *cfg,
				 u64 now)
{
	struct llc_ctx *lctx = try_lookup_llc_ctx(llc);
	u64 next, when;

	if (!lctx || !cfg)
		return 0;
	if (cfg->cg_gen != READ_ONCE(cg_gen_seen)) {
		llc_timer_arm(llc, now);
		return 0;
	}
	when = now + scan_interval(cfg);
	next = READ_ONCE(lctx->next_timer_ns);
	if (!READ_ONCE(lctx->timer_home) && next > now &&
	    !__sync_val_compare_and_swap(&lctx->timer_home, 0, 1)) {
		/* Same deadline, pinned to this CPU (one tick does it). */
		llc_timer_rearm(llc, next);
		return 0;
	}
	if (!next || (next > when && llc_has_waiters(llc)))
		llc_timer_arm(llc, when);
	return 0;
}

static u64 llc_sweep_at_ns;

/*
 * Once every LLC_SWEEP_NS, from whichever CPU's tick, task start or LLC
 * timer comes first, re-arm the timer of every LLC that has tasks parked
 * or waiting but whose timer is overdue by SWEEP_LATE_NS: its deadline
 * (or, with none, its last run plus SCAN_QUIET_NS) is that far past. A
 * timer can be lost (a start that fails, even from its own callback), and
 * fq_llc_timer_keep() rescues it only from a tick of the LLC's own CPUs:
 * with every CPU of an LLC idle because its tasks are all parked (tasks
 * pinned one per CPU under a quota) nothing did, and they waited until
 * the kernel's watchdog ejected the scheduler (42 s, 8 vCPUs, stable
 * clock). Now any busy CPU, or another LLC's timer, re-arms it: a lost
 * timer costs its LLC at most about LLC_SWEEP_NS + SWEEP_LATE_NS past
 * its deadline while any CPU ticks or starts a task (the daemon's own
 * thread wakes every second). O(LLCs) every LLC_SWEEP_NS; a read of one
 * global word on the other calls (ops.running(), ops.tick()).
 */
__noinline int fq_llc_sweep(u64 now)
{
	struct llc_ctx *lctx;
	u64 due;
	u32 i;

	if (!once_per(&llc_sweep_at_ns, now, LLC_SWEEP_NS))
		return 0;
	bpf_for(i, 0, nr_llcs) {
		lctx = try_lookup_llc_ctx(i);
		if (!lctx)
			continue;
		due = READ_ONCE(lctx->next_timer_ns) ?:
		      READ_ONCE(lctx->last_run_ns) + SCAN_QUIET_NS;
		if (now <= due + SWEEP_LATE_NS ||
		    (scx_bpf_dsq_nr_queued(dsq_id(DSQ_THROTTLED, i)) <= 0 &&
		     !llc_has_waiters(i)))
			continue;
		llc_timer_arm(i, now);
		stat_inc(CNT_LLC_RESCUE);
	}
	return 0;
}

/*
 * Return true if urgent work waits in @llc that @cpu may run (checked from
 * ops.tick(), which then ends the running turn): more than one urgent
 * task, or one allowed on @cpu. A lone urgent task pinned to another CPU
 * does not cut every turn of the LLC while it waits for its own. The head
 * is read with the kernel's lockless peek (an iterator, which takes the
 * queue's lock, made ops.tick() 1.38x as costly in an A/B run).
 */
static bool urgent_waiting(u32 llc, s32 cpu)
{
	u64 dsq = dsq_id(DSQ_URGENT, llc);
	s32 nr = scx_bpf_dsq_nr_queued(dsq);
	struct task_struct *p;

	if (nr <= 0)
		return false;
	if (nr > 1)
		return true;
	p = __COMPAT_scx_bpf_dsq_peek(dsq);
	return !p || bpf_cpumask_test_cpu(cpu, p->cpus_ptr);
}

#endif /* __FAIRQUOTA_GUARD_BPF_H */
