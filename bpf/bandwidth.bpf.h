/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bandwidth: charging CPU time to a task's bucket (bucket.h) and its
 * limited cgroups' (cgroups.bpf.h), parking a throttled task on its LLC's
 * THROTTLED queue and releasing it when its buckets refill. Included by
 * main.bpf.c only.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#ifndef __FAIRQUOTA_BANDWIDTH_BPF_H
#define __FAIRQUOTA_BANDWIDTH_BPF_H

#define SIGKILL_BIT (1ULL << (9 /* SIGKILL */ - 1))
#define SIGNAL_GROUP_EXIT_FLAG 0x00000004	/* include/linux/sched/signal.h */
/*
 * A kill has the timers walk their queues twice, KILL_RECHECK_NS apart: a
 * thread being parked as the signal came may land on its queue after the
 * first walk (it looked at its signals before they were set).
 */
#define KILL_WALKS	2
#define KILL_RECHECK_NS	(10ULL * 1000000)

/*
 * Take one of the walks a kill asked of a timer (*@kill, see note_killed()):
 * return when to walk again (0: no more), or 1 if no walk is asked.
 */
static u64 kill_walk(u32 *kill, u64 now)
{
	u32 k = READ_ONCE(*kill);

	if (!k || __sync_val_compare_and_swap(kill, k, k - 1) != k)
		return 1;
	return k > 1 ? now + KILL_RECHECK_NS : 0;
}

/*
 * Return true if @p has been killed: SIGKILL is pending for it (a fatal
 * signal to any thread puts it on every thread of the process: the
 * kernel's fatal_signal_pending()), or its process is exiting as a group
 * (SIGNAL_GROUP_EXIT: set with that SIGKILL, and by exit_group(); it
 * stays after the task takes the signal, until its do_exit() sets
 * PF_EXITING: a tick in between once parked a killed shell for a whole
 * period). It dies before it returns to user space, so letting it run
 * costs its exit's CPU time, no more (a thread writing a core dump runs
 * unlimited too: the kernel sets the flag as it zaps the others).
 */
static bool task_killed(const struct task_struct *p)
{
	return (p->pending.signal.sig[0] & SIGKILL_BIT) ||
	       (p->signal->flags & SIGNAL_GROUP_EXIT_FLAG);
}

/*
 * Return true if @p is never limited: kernel threads, exiting or killed
 * tasks (a limit only slowed their exit: the memory they hold is freed
 * when they have run it), us.
 */
static bool is_exempt(const struct task_struct *p)
{
	return (p->flags & (PF_KTHREAD | PF_EXITING)) || task_killed(p) ||
	       p->tgid == daemon_tgid;
}

/* The per-task limit of @cfg, as its smooth mode enforces it. */
static void task_limit(const struct fq_config *cfg, struct bw_limit *out)
{
	struct bw_limit l = {
		.quota_ns = cfg->quota_ns,
		.period_ns = cfg->period_ns,
	};

	bw_smooth(&l, cfg->max_stall_ns, out);
}

/*
 * A task's own bucket (bucket.h) brought up to @now's period, or charged
 * the runtime [@start, @end), and smooth mode's debt spread after a
 * refill (bw_spread_debt()): global functions, so the verifier checks the
 * bucket arithmetic once, not again at every charge point (inlined, the
 * carry's few branches tripled the scheduler's load time). Return whether
 * the bucket is throttled, or ran dry.
 */
__noinline int fq_bw_refill(struct bw_bucket *b, u64 now,
			    const struct bw_limit *l)
{
	if (!b || !l || !l->quota_ns || !l->period_ns)
		return 0;
	bw_refill(b, now, l);
	return bw_throttled(b);
}

__noinline int fq_bw_spread_debt(struct bw_bucket *b, const struct bw_limit *l)
{
	if (!b || !l)
		return 0;
	bw_spread_debt(b, l);
	return 0;
}

__noinline int fq_bw_charge_span(struct bw_bucket *b, u64 start, u64 end,
				 const struct bw_limit *l)
{
	if (!b || !l || !l->quota_ns || !l->period_ns)
		return 0;
	return bw_charge_span(b, start, end, l);
}

/*
 * Refresh the cached class, nice, weight and limits of @p (its own quota
 * applies to RR tasks; its cgroups' limits to every task of the group)
 * and bring its bucket up to date. Return true if @p is throttled, by its
 * own quota or a cgroup's. Called only from callbacks on @p that the
 * kernel serializes (under @p's rq lock, or ops.select_cpu() while @p is
 * being woken); the timers never write a bucket, so a task's bucket has
 * one writer at a time (a cgroup's has its lock).
 */
__noinline int fq_refresh_task(struct task_struct *p __arg_trusted,
			       struct task_ctx *tctx,
			       const struct fq_config *cfg, u64 now)
{
	bool exempt, own = false;
	struct bw_limit l;

	if (!tctx || !cfg)
		return 0;
	exempt = is_exempt(p);
	tctx->class = task_class(p, cfg);
	tctx->nice = task_nice(p);
	tctx->weight = p->scx.weight;
	tctx->limited = cfg->quota_ns && tctx->class == CLASS_RR && !exempt;
	cg_refresh(p, tctx, cfg, exempt);
	if (tctx->limited) {
		task_limit(cfg, &l);
		/* A limit changed by `set` starts afresh (bw_restart()). */
		if (bw_limit_changed(tctx->lim_quota_ns, tctx->lim_period_ns,
				     &l))
			bw_restart(&tctx->bw, now, &l);
		tctx->lim_quota_ns = l.quota_ns;
		tctx->lim_period_ns = l.period_ns;
		own = fq_bw_refill(&tctx->bw, now, &l);
	}
	return own || (tctx->nr_cg && cg_scan(tctx, now, NULL));
}

/*
 * Charge @delta of runtime that ended at @now to @tctx's own bucket. Not
 * inlined: its limit stays off the stack of the cgroup charge below
 * fq_charge(), whose calls come within a few bytes of the verifier's 512.
 */
static __noinline void charge_own(struct task_ctx *tctx,
				  const struct fq_config *cfg, u64 now,
				  u64 delta, bool turn_end)
{
	struct bw_limit l;

	task_limit(cfg, &l);
	if (fq_bw_charge_span(&tctx->bw, now - delta, now, &l))
		stat_inc(CNT_THROTTLE);
	if (turn_end)
		bw_turn_end(&tctx->bw, delta);
}

/*
 * Charge the CPU time the running task @p used since its last charge: total
 * runtime, RR vtime and, if limited, its bandwidth bucket. CPU time is our
 * own clock (bpf_ktime_get_ns()) from the switch that started its turn
 * (fq_switch()) to @now, not the kernel's p->se.sum_exec_runtime: under
 * sched_ext that clock misses whole turns of a task started on an idle CPU
 * (README, "The kernel's runtime clock under sched_ext"), so a group
 * limited by it ran 26-31% of a CPU at a 20% limit. Plus what its last
 * switch's tail owes (tail_debt, fq_switch()). @turn_end: its turn ends
 * and it is still runnable (bw_turn_end()). Return the runtime charged.
 */
__noinline u64 fq_charge(struct task_struct *p __arg_trusted,
			 struct task_ctx *tctx, const struct fq_config *cfg,
			 u64 now, bool turn_end)
{
	s64 owed;
	u64 delta;

	if (!tctx || !cfg)
		return 0;
	owed = tctx->tail_debt;
	if (tctx->exec_at_ns && now > tctx->exec_at_ns)
		owed += (s64)(now - tctx->exec_at_ns);
	if (tctx->exec_at_ns)
		tctx->exec_at_ns = now;
	/* A tail charged too long is paid back from this span. */
	tctx->tail_debt = owed < 0 ? owed : 0;
	if (owed <= 0)
		return 0;
	delta = owed;
	tctx->runtime_ns += delta;
	if (tctx->class == CLASS_RR)
		tctx->vtime += vtime_cost(delta, p->scx.weight);
	if (tctx->limited && cfg->quota_ns)
		charge_own(tctx, cfg, now, delta, turn_end);
	if (tctx->nr_cg && cg_charge(tctx, cfg, now, delta, turn_end))
		stat_inc(CNT_CG_THROTTLE);
	return delta;
}

/*
 * The turn of @p ends at @now (ops.stopping()): charge it, and its switch
 * away in advance. The kernel switches to the next task only after our
 * callbacks that end the turn and start the next (this one, ops.enqueue()
 * if it is still runnable, the next task's ops.running()): tens of
 * microseconds under emulation, on @p's account in the kernel's own
 * sched_switch events, and 1.2-1.7% of a limited task's share when not
 * charged. What it costs is known only at the switch (fq_switch()), after
 * the task may have been parked with a release time; so its usual cost
 * (tail_ns, an average of the task's own) is charged now, and the
 * difference is settled at its next charge (tail_debt).
 */
static void fq_charge_stop(struct task_struct *p, struct task_ctx *tctx,
			   const struct fq_config *cfg, u64 now, bool runnable)
{
	if (tctx->exec_at_ns)
		fq_charge(p, tctx, cfg, now + tctx->tail_ns, runnable);
	tctx->exec_at_ns = 0;
	tctx->stop_at_ns = now;
}

/*
 * The tail of @tctx's last turn ended at @now: at the switch to the next
 * task, or at the end of ops.running() if it runs on without one. Settle
 * what fq_charge_stop() charged for it, and learn its usual cost (3/4
 * old, 1/4 new). A tail longer than SWITCH_TAIL_MAX_NS is not taken as
 * one (a task that leaves our class forgets its stop: fairquota_disable()).
 */
static void tail_end(struct task_ctx *tctx, u64 now)
{
	u64 tail;

	if (!tctx->stop_at_ns)
		return;
	tail = now > tctx->stop_at_ns ? now - tctx->stop_at_ns : 0;
	tctx->stop_at_ns = 0;
	if (tail >= SWITCH_TAIL_MAX_NS)
		return;
	tctx->tail_debt += (s64)tail - (s64)tctx->tail_ns;
	tctx->tail_ns = (3 * tctx->tail_ns + tail) / 4;
}

/* When @tctx, throttled now, may run again: its own and its groups' release. */
static u64 release_time(const struct task_ctx *tctx,
			const struct fq_config *cfg, u64 now)
{
	struct bw_limit l;
	u64 at = 0, cg;

	if (tctx->limited && bw_throttled(&tctx->bw)) {
		task_limit(cfg, &l);
		at = bw_release_at(&tctx->bw, &l);
	}
	cg = tctx->nr_cg ? cg_scan(tctx, now, NULL) : 0;
	if (cg > at)
		at = cg;
	return at ?: now;
}

/*
 * Arm @timer, whose armed deadline is kept in @next_ns, for @when unless it
 * is armed earlier already. Several CPUs may race here: the
 * compare-and-swap keeps the earliest deadline in @next_ns, and whoever
 * set it re-arms if an even earlier one landed while it was starting the
 * timer, so no deadline is lost. A deadline is never set closer than
 * TIMER_RACE_NS, and one already armed that close is not trusted: its
 * timer may be firing on another CPU, its callback past the queue the
 * caller is parking a task on (a task queued by ops.enqueue() lands there
 * after it returns) and with nothing left to wait for, so it would not
 * re-arm. It is moved TIMER_RACE_NS ahead (the tasks due then wait that
 * much longer). Return false if the timer could not be started (the
 * deadline is withdrawn).
 *
 * With @restart (the timer's own callback, and a move to another CPU), a
 * kept deadline no later than @when is started again rather than trusted.
 * @next_ns can say "armed" while the timer is not: a start made with the
 * IRQs off (every sched_ext callback) is deferred by the kernel to an
 * irq_work, so it can land after a later start of the callback, with an
 * older deadline that then fires early and leaves the callback trusting a
 * deadline nobody armed (seen as lost LLC timers: 1-8 per 14 s with tasks
 * pinned one per CPU under a quota on 8 vCPUs). The callback restarting
 * its timer at every run closes that: every run leaves it armed.
 */
static __always_inline bool timer_arm(struct bpf_timer *timer, u64 *next_ns,
				      u64 when, u64 flags, bool restart)
{
	u64 cur, again, target, prev, soon = bpf_ktime_get_ns() + TIMER_RACE_NS;
	int i;

	if (when < soon)
		when = soon;
	for (i = 0; i < 4; i++) {
		cur = __sync_fetch_and_add(next_ns, 0);
		if (cur >= soon && cur <= when) {
			if (!restart)
				return true;
			target = cur;
			prev = 0;
		} else {
			target = cur && cur < soon ? soon : when;
			if (__sync_val_compare_and_swap(next_ns, cur, target) !=
			    cur)
				continue;
			prev = cur;
		}
		if (bpf_timer_start(timer, target, BPF_F_TIMER_ABS | flags)) {
			/* Not armed (a deferred start can fail): undo. */
			__sync_val_compare_and_swap(next_ns, target, prev);
			return false;
		}
		again = READ_ONCE(*next_ns);
		if (again && again < target)
			bpf_timer_start(timer, again, BPF_F_TIMER_ABS | flags);
		return true;
	}
	return true;
}

/*
 * A task is being parked to wait for @when on a queue whose timer keeps
 * its earliest wanted deadline in @want_ns: record it before arming. The
 * task lands on the queue only after ops.enqueue() returns; a callback
 * that runs in between finds the queue without it, but takes @want_ns
 * (timer_wanted()) and comes back for it.
 */
static __always_inline void timer_want(u64 *want_ns, u64 when)
{
	u64 cur;
	int i;

	for (i = 0; i < 4; i++) {
		cur = READ_ONCE(*want_ns);
		if ((cur && cur <= when) ||
		    __sync_val_compare_and_swap(want_ns, cur, when) == cur)
			return;
	}
}

/*
 * Called by a timer's callback at @now, before it looks at its queue:
 * the next deadline a task parked meanwhile needs (0 if none), no sooner
 * than SCAN_MIN_NS from now (its task may still be on its way).
 */
static __always_inline u64 timer_wanted(u64 *want_ns, u64 now)
{
	u64 w = __sync_lock_test_and_set(want_ns, 0);

	if (!w)
		return 0;
	return w > now + SCAN_MIN_NS ? w : now + SCAN_MIN_NS;
}

/*
 * A timer's callback starts at @now: its deadline in @next_ns is spent,
 * unless timer_arm() re-armed it for later meanwhile (then that one
 * stands).
 */
static __always_inline void timer_fired(u64 *next_ns, u64 now)
{
	u64 old = __sync_lock_test_and_set(next_ns, 0);

	if (old > now)
		__sync_val_compare_and_swap(next_ns, 0, old);
}

/*
 * Arm the timer of LLC @llc for @when (@restart: from its callback, see
 * timer_arm()). If the start fails, the timer still fires at its earlier
 * deadline (at most SCAN_QUIET_NS away), and a CPU's tick re-arms a timer
 * that stopped (fq_llc_timer_keep()). A global function, as fq_cg_timer_arm()
 * below: timer_arm()'s retry loop is verified once per program, not again
 * at each of the arming points (inlined, they cost the verifier about a
 * third of the scheduler's load time).
 */
__noinline int fq_llc_timer_arm(u32 llc, u64 when, int restart)
{
	struct llc_ctx *lctx = try_lookup_llc_ctx(llc);

	return lctx && timer_arm(&lctx->timer, &lctx->next_timer_ns, when,
				 BPF_F_TIMER_CPU_PIN, restart);
}

static bool llc_timer_arm(u32 llc, u64 when)
{
	return fq_llc_timer_arm(llc, when, false);
}

/* Re-arm LLC @llc's timer for @when from its callback (see timer_arm()). */
static void llc_timer_rearm(u32 llc, u64 when)
{
	fq_llc_timer_arm(llc, when, true);
}

/* Arm limited cgroup @id's release timer for @when (@restart as above). */
__noinline int fq_cg_timer_arm(u64 id, u64 when, int restart)
{
	struct cg_state *st = bpf_map_lookup_elem(&cgroup_states, &id);

	return st && timer_arm(&st->timer, &st->next_timer_ns, when, 0,
			       restart);
}

static int cg_timerfn(void *map, u64 *key, struct cg_state *st);

/*
 * The state of limited cgroup @id if its throttled tasks can wait on its
 * DSQ now, else NULL: the group has no DSQ (its cgroup is outside the cpu
 * controller), or its release timer is not set up yet, in which case an
 * LLC timer is asked to set it up (cg_timers_setup()).
 */
static struct cg_state *cg_parkable(u64 id)
{
	struct cg_state *st = bpf_map_lookup_elem(&cgroup_states, &id);

	if (!st || scx_bpf_dsq_nr_queued(cg_dsq_id(id)) < 0)
		return NULL;
	if (READ_ONCE(st->timer_state) == CG_TIMER_READY)
		return st;
	if (__sync_val_compare_and_swap(&st->timer_state, CG_TIMER_NONE,
					CG_TIMER_QUEUED) == CG_TIMER_NONE &&
	    bpf_map_push_elem(&cg_timer_queue, &id, 0))
		__sync_val_compare_and_swap(&st->timer_state, CG_TIMER_QUEUED,
					    CG_TIMER_NONE);
	return NULL;
}

/*
 * Return true for the first caller at or after *@at_ns, which moves it
 * @interval_ns past @now: something done once per interval by whichever
 * CPU comes first.
 */
static bool once_per(u64 *at_ns, u64 now, u64 interval_ns)
{
	u64 at = READ_ONCE(*at_ns);

	return now >= at &&
	       __sync_val_compare_and_swap(at_ns, at, now + interval_ns) == at;
}

static u64 cg_test_lose_at_ns, llc_test_lose_at_ns, cg_test_fail_at_ns;

/* Test hooks (test_lose_*_timers): true once every @secs s if @on. */
static bool test_lose(bool on, u64 *at_ns, u64 now, u64 secs)
{
	return on && once_per(at_ns, now, secs * 1000000000ULL);
}

/*
 * Test hook (test_lose_cg_timers): true once every 3 s, a release timer
 * start taken to have failed. The flag is read first, so without the hook
 * a park reads no clock for it.
 */
static bool test_fail_start(void)
{
	return test_lose_cg_timers &&
	       test_lose(true, &cg_test_fail_at_ns, bpf_ktime_get_ns(), 3);
}

/*
 * A task now waits on limited cgroup @id's DSQ until @release: arm the
 * group's timer. The task is queued before the timer is armed, so a
 * callback that runs meanwhile either sees it or has reset next_timer_ns
 * (timer_arm()). A start can fail: from a sched_ext callback the kernel
 * defers it, which takes an allocation that may fail under memory
 * pressure. That once ended the scheduler (scx_bpf_error()); now the
 * failure is counted and the task stays parked: an armed deadline that
 * stands comes back for it (timer_want()), and with none the sweep
 * re-arms the timer (cg_sweep(): within about a second). With the test
 * hook test_lose_cg_timers one park every 3 s takes this path.
 */
static void cg_wait_release(struct cg_state *st, u64 id, u64 release)
{
	timer_want(&st->want_ns, release);
	if (test_fail_start() || !fq_cg_timer_arm(id, release, false))
		stat_inc(CNT_TIMER_FAIL);
}

/*
 * Park @p, throttled until @release by limited cgroup @id, on the group's
 * DSQ. Return false if the group cannot take it yet (cg_parkable()): the
 * caller parks it on the LLC instead.
 */
static bool cg_park(struct task_struct *p, const struct fq_config *cfg,
		    u64 id, u64 release, u64 enq_flags)
{
	struct cg_state *st = cg_parkable(id);

	if (!st)
		return false;
	scx_bpf_dsq_insert(p, cg_dsq_id(id), cfg->slice_ns, enq_flags);
	cg_wait_release(st, id, release);
	return true;
}

/*
 * Move @p, parked on its LLC's THROTTLED queue (iterated by @it, from the
 * LLC timer) but now throttled by limited cgroup @id until @until, to that
 * group's DSQ, behind the group's other parked tasks. A task lands on its
 * LLC when its group's throttle ended between its throttle check and its
 * park (a refill by another CPU), or before the group's timer was ready.
 * Left there, all such tasks were released at each of the group's
 * refills at once, overspending it (a 1% group of a thousand tasks got
 * 10-14% in 2 runs of 7). Return false if the group cannot take it yet:
 * the task stays on the LLC.
 */
static bool cg_adopt(struct bpf_iter_scx_dsq *it, struct task_struct *p,
		     u64 id, u64 until)
{
	struct cg_state *st = cg_parkable(id);

	if (!st || !scx_bpf_dsq_move(it, p, cg_dsq_id(id), 0))
		return false;
	cg_wait_release(st, id, until);
	stat_inc(CNT_CG_ADOPT);
	return true;
}

/*
 * Park the throttled task @p: on the DSQ of the cgroup that throttles it
 * longest, or, if its own quota does (or the group has no DSQ), on its
 * LLC's THROTTLED queue keyed by its release time.
 */
static void park(struct task_struct *p, struct task_ctx *tctx,
		 const struct fq_config *cfg, u64 now, u64 enq_flags)
{
	u64 release = release_time(tctx, cfg, now), cgid = 0, cg = 0;
	struct llc_ctx *lctx = try_lookup_llc_ctx(tctx->llc);

	if (tctx->nr_cg)
		cg = cg_scan_who(tctx, now, NULL, &cgid);
	bw_park(&tctx->bw, now);
	tctx->release_at_ns = release;
	/* Throttled time is not waiting time: the wait starts at release. */
	tctx->enq_at_ns = release;
	tctx->parked = true;
	tctx->woke = false;	/* released, it does not count as waking */
	/* arg: 1 if a cgroup's quota ran out while the task has its own left */
	trace_task(TRACE_THROTTLE, p, tctx,
		   !tctx->limited || tctx->bw.tokens_ns > 0, now);
	if (cgid && cg >= release && cg_park(p, cfg, cgid, release, enq_flags))
		return;
	scx_bpf_dsq_insert_vtime(p, dsq_id(DSQ_THROTTLED, tctx->llc),
				 cfg->slice_ns, release, enq_flags);
	/* A failed start (see cg_wait_release()) is left to fq_llc_sweep(). */
	if (lctx) {
		timer_want(&lctx->want_ns, release);
		if (!llc_timer_arm(tctx->llc, release))
			stat_inc(CNT_TIMER_FAIL);
	}
}

/*
 * A parked task runs again: account the time it spent throttled (up to its
 * release, not the queueing after it), and limit an RR task's lag as its
 * release key was (rr_release_key()). Called from ops.running(), under
 * the task's rq lock.
 */
static void unpark(const struct task_struct *p, struct task_ctx *tctx,
		   const struct fq_config *cfg, u64 now)
{
	u64 end = now < tctx->release_at_ns ? now : tctx->release_at_ns;

	if (!tctx->parked)
		return;
	tctx->parked = false;
	if (tctx->class == CLASS_RR)
		rr_requeue(tctx, cfg, scx_bpf_task_cpu(p));
	bw_unpark(&tctx->bw, end);
	trace_task(TRACE_RELEASE, p, tctx, 0, end);
}

/*
 * A full walk of the LLC's parked tasks (fq_release_due()) after a change
 * of the limits (`set --quota-us/--period-us/--max-stall-us` bumps
 * fq_config.cg_gen too): was @tctx parked under another limit of its own?
 * Then it goes at once: its next turn starts its bucket afresh under the
 * limit now (fq_refresh_task(), bw_restart()), as a cpu.max write does
 * under CFS. Before, a raised per-task quota let its parked tasks go at
 * the old limit's release (up to a period: 1 s at --period-us 1000000
 * without smooth mode). O(tasks parked on the LLC) once per change. A
 * global function: the walk's loop is checked with one call, not the
 * limit's arithmetic.
 */
__noinline int fq_own_limit_changed(struct task_ctx *tctx,
				    const struct fq_config *cfg)
{
	struct bw_limit l;

	if (!tctx || !cfg || !cfg->quota_ns || !READ_ONCE(tctx->limited))
		return 0;
	task_limit(cfg, &l);
	return bw_limit_changed(READ_ONCE(tctx->lim_quota_ns),
				READ_ONCE(tctx->lim_period_ns), &l);
}

/*
 * Release timer work for @llc: move every parked task whose release time
 * has come to its class queue; one whose cgroup was throttled again
 * meanwhile (its other tasks ran on) stays until the group's new release.
 * Return the earliest release still pending (0 if none). Runs in a timer,
 * without the tasks' rq locks, so it only reads their contexts (a parked
 * task's wait clock already starts at its release time, see park()).
 */
static u64 release_due(u32 llc, const struct fq_config *cfg, u64 now,
		       bool full)
{
	struct task_struct *p;
	u64 next = 0, cg;

	bpf_for_each(scx_dsq, p, dsq_id(DSQ_THROTTLED, llc), 0) {
		struct task_ctx *tctx = try_lookup_task_ctx(p);
		u32 class = task_class(p, cfg);
		bool dying = full && task_killed(p);
		u64 at = 0, cgid = 0;

		if (tctx)
			at = READ_ONCE(tctx->release_at_ns);
		/*
		 * A lifted quota releases at once, and in a full walk (@full)
		 * so does a task its own quota does not hold (its groups'
		 * throttles are checked below, by their limits now) or held
		 * under another limit (fq_own_limit_changed()).
		 */
		if ((tctx && !(cfg->quota_ns && class == CLASS_RR) &&
		     (!READ_ONCE(tctx->nr_cg) || full)) || dying)
			at = 0;
		if (full && tctx && at > now && fq_own_limit_changed(tctx, cfg))
			at = 0;
		/*
		 * The queue is ordered by release time; a full walk (after
		 * a kill or a change of the cgroup limits) goes to the end.
		 */
		if (at > now) {
			if (!next || at < next)
				next = at;
			if (!full)
				break;
			continue;
		}
		if (dying)
			stat_inc(CNT_KILLED_RELEASE);
		cg = tctx && !dying ? cg_scan_who(tctx, now, NULL, &cgid) : 0;
		if (cg) {
			if (cgid && cg_adopt(BPF_FOR_EACH_ITER, p, cgid, cg))
				continue;
			if (!next || cg < next)
				next = cg;
			continue;
		}
		if (class == CLASS_FIFO) {
			scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p,
					 dsq_id(DSQ_FIFO, llc), 0);
		} else {
			if (tctx)
				scx_bpf_dsq_move_set_vtime(
					BPF_FOR_EACH_ITER,
					rr_release_key(tctx, cfg,
						       scx_bpf_task_cpu(p)));
			scx_bpf_dsq_move_vtime(BPF_FOR_EACH_ITER, p,
					       dsq_id(DSQ_RR, llc), 0);
		}
		llc_hint_set(llc, class == CLASS_FIFO ? DSQ_FIFO : DSQ_RR);
		kick_home_cpu(p, llc);
	}
	return next;
}

/*
 * release_due() from @llc's timer: a global function, as fq_guard_scan().
 * After a kill (note_killed()) the whole queue is walked, KILL_WALKS times,
 * and once after each change of the limits (a `set` of a --cgroup limit
 * or of the per-task one, or a cpu.max write: their generation moved since
 * this LLC's last walk), so a limit lifted or changed lets go at once the
 * tasks parked here: O(tasks parked here) per change. A full walk looks
 * again at every task its own quota does not hold, killed or not (its
 * groups' throttles, by their limits now).
 */
__noinline u64 fq_release_due(u32 llc, const struct fq_config *cfg, u64 now)
{
	struct llc_ctx *lctx = try_lookup_llc_ctx(llc);
	u64 next, again, gen, seen;
	bool limits;

	if (!cfg || !lctx)
		return 0;
	again = kill_walk(&lctx->kill, now);
	gen = cfg->cg_gen + READ_ONCE(kern_cg_gen);
	seen = READ_ONCE(lctx->limits_gen);
	limits = gen != seen &&
		 __sync_val_compare_and_swap(&lctx->limits_gen, seen, gen) == seen;
	bpf_rcu_read_lock();
	next = release_due(llc, cfg, now, again != 1 || limits);
	bpf_rcu_read_unlock();
	if (again > 1 && (!next || again < next))
		next = again;
	return next;
}

/*
 * Release parked task @p (context @tctx, may be NULL) from the DSQ @it
 * iterates to its class queue in its LLC. It holds a share of its groups'
 * tokens until it starts running (rel_pending), unless it was killed (it
 * runs exempt, is_exempt()). Its throttled time ends and its wait starts
 * now.
 */
static void cg_release(struct bpf_iter_scx_dsq *it, struct task_struct *p,
		       struct task_ctx *tctx, const struct fq_config *cfg,
		       u64 now)
{
	u32 llc = 0, kind = DSQ_RR;
	bool ok;

	if (tctx) {
		llc = READ_ONCE(tctx->llc);
		WRITE_ONCE(tctx->release_at_ns, now);
		WRITE_ONCE(tctx->enq_at_ns, now);
		if (!task_killed(p)) {
			cg_inflight_add(tctx, 1);
			WRITE_ONCE(tctx->rel_pending, 1);
		}
	}
	if (llc >= nr_llcs)
		llc = 0;
	if (task_class(p, cfg) == CLASS_FIFO) {
		kind = DSQ_FIFO;
		ok = scx_bpf_dsq_move(it, p, dsq_id(DSQ_FIFO, llc), 0);
	} else {
		if (tctx)
			scx_bpf_dsq_move_set_vtime(it,
						   rr_release_key(tctx, cfg,
							scx_bpf_task_cpu(p)));
		ok = scx_bpf_dsq_move_vtime(it, p, dsq_id(DSQ_RR, llc), 0);
	}
	if (ok) {
		llc_hint_set(llc, kind);
		kick_home_cpu(p, llc);
	} else if (tctx)
		/* Dequeued meanwhile: it holds no share of the tokens. */
		cg_release_done(tctx);
}

/*
 * The cgroup @id left the cpu controller (ops.cgroup_exit()) and its DSQ
 * is empty: drop the DSQ, and the group's state unless a command-line
 * limit still applies to it (its tasks then park on their LLCs).
 */
static void cg_drop(u64 id)
{
	if (bpf_map_lookup_elem(&cgroup_states, &id))
		stat_inc(CNT_CG_GONE);
	scx_bpf_destroy_dsq(cg_dsq_id(id));
	if (!bpf_map_lookup_elem(&cgroup_limits, &id))
		bpf_map_delete_elem(&cgroup_states, &id);
}

/*
 * Let every killed task parked on the DSQ @dsq go, whatever the tokens:
 * O(tasks parked), once per kill (note_killed()).
 */
static void release_killed(u64 dsq, const struct fq_config *cfg, u64 now)
{
	struct task_struct *p;

	bpf_for_each(scx_dsq, p, dsq, 0) {
		if (!task_killed(p))
			continue;
		stat_inc(CNT_KILLED_RELEASE);
		cg_release(BPF_FOR_EACH_ITER, p, try_lookup_task_ctx(p), cfg,
			   now);
	}
}

/*
 * Release timer of limited cgroup *@key: release its parked tasks, oldest
 * first, as far as the group's tokens go. Each released task is expected
 * to take a turn, so a group with hundreds of runnable tasks releases a
 * few per refill instead of all of them (each of which would run for a
 * moment only to find the group throttled again: thousands of context
 * switches per period, charged to the group). The others keep their
 * place; the oldest is released anyway once parked PARK_FORCE_MS, so no
 * task nears the watchdog. A limit that was lifted releases everything;
 * after a kill (note_killed()) the killed tasks go first, whatever the
 * tokens (release_killed(): O(tasks parked), once per kill). A group
 * whose cgroup exited (CG_TIMER_DYING) drops its DSQ once it is
 * empty and CG_DYING_GRACE_NS have passed. Cost: O(tasks released) per
 * run, whatever the number parked.
 */
static int cg_timerfn(void *map, u64 *key, struct cg_state *st)
{
	u64 id = *key, now = bpf_ktime_get_ns(), dsq = cg_dsq_id(id), next = 0;
	u64 want, again;
	bool limited = cg_limit_of(id);
	struct task_struct *p;
	const struct fq_config *cfg;

	if (!(cfg = live_config()))
		return 0;
	timer_fired(&st->next_timer_ns, now);
	want = timer_wanted(&st->want_ns, now);
	again = kill_walk(&st->kill, now);
	if (again != 1)
		release_killed(dsq, cfg, now);
	bpf_for_each(scx_dsq, p, dsq, 0) {
		struct task_ctx *tctx = try_lookup_task_ctx(p);
		u64 wait = 0, since, force;

		if (tctx && limited) {
			wait = fq_cg_release_wait(id, cfg->max_stall_ns,
						  cfg->slice_ns, now);
			since = READ_ONCE(tctx->bw.parked_at_ns);
			force = since + PARK_FORCE_MS * 1000000ULL;
			if (wait && since && now >= force) {
				stat_inc(CNT_PARK_FORCE);
				wait = 0;
			} else if (wait && since && force < wait) {
				wait = force;
			}
		}
		if (wait) {
			stat_inc(CNT_CG_DEFER);
			next = wait;
			break;
		}
		cg_release(BPF_FOR_EACH_ITER, p, tctx, cfg, now);
	}
	/* Tasks parked while this ran are looked at soon. */
	if (!next && scx_bpf_dsq_nr_queued(dsq) > 0)
		next = now + SCAN_MIN_NS;
	if (want && (!next || want < next))
		next = want;
	if (again > 1 && (!next || again < next))
		next = again;
	if (!next && READ_ONCE(st->timer_state) == CG_TIMER_DYING) {
		if (now >= st->dying_ns + CG_DYING_GRACE_NS) {
			cg_drop(id);
			return 0;
		}
		next = st->dying_ns + CG_DYING_GRACE_NS;
	}
	/* A start that landed meanwhile stands, and is made again. */
	if (!next)
		next = READ_ONCE(st->next_timer_ns);
	if (next && !test_lose(test_lose_cg_timers, &cg_test_lose_at_ns, now, 3))
		fq_cg_timer_arm(id, next, true);
	return 0;
}

/* What cg_sweep_one() is asked: the time, and whether to wake every group. */
struct cg_sweep_ctx {
	u64 now;
	u64 max_stall_ns;	/* smooth mode's, for fq_cg_wake() */
	bool all;	/* a limit changed: every group with parked tasks */
};

/*
 * Re-arm limited cgroup @id's release timer if tasks are parked on its DSQ
 * (or, once its cgroup exited, its DSQ is still there) but its deadline is
 * gone or long past: the timer was lost, or its start failed. A backstop:
 * a parker stopped between its look at the deadline and its task landing
 * on the DSQ (a preempted vCPU: seen under TCG, where 2 tasks stayed
 * parked 37 s and the watchdog ejected the scheduler) once made a
 * callback that found the DSQ empty stop the timer; timer_want() now
 * brings that callback back, and timer_arm() restarts a timer at every
 * callback run.
 *
 * With @all, the group's limit changed (cg_limits_changed(),
 * cg_limit_set()): forget what the old limit set, its release time and
 * the end of its period (before which a look at the bucket does not
 * refill it), start the bucket afresh if its limit is not the one it was
 * last committed under (bw_restart(): a fresh quota now, as a cpu.max
 * write gives under CFS; O(1) a group, no walk of its tasks), bring the
 * bucket up to @now by the limit in force (none: not throttled;
 * @max_stall_ns: smooth mode's), so every look at the group
 * from here on, a release timer's or a parked task's, sees the new one,
 * and run its timer now if tasks are parked, whatever its deadline. A
 * global function: checked once per program, not at each caller.
 */
__noinline int fq_cg_wake(u64 id, u64 now, u64 max_stall_ns, int all)
{
	struct cg_state *st = bpf_map_lookup_elem(&cgroup_states, &id);
	struct bw_limit l;
	u64 next, slice;
	bool fresh;
	u32 state;
	s32 queued;

	if (!st)
		return 0;
	if (all) {
		fresh = fq_cg_limit(id, max_stall_ns, &l, &slice);
		bpf_spin_lock(&st->lock);
		st->fast_until_ns = 0;
		st->u.throttled_until_ns = 0;
		/*
		 * Its limit changed since the bucket's last commit: start it
		 * afresh (bw_restart()), as tg_set_cfs_bandwidth() does; a
		 * charge that copied it before fails its commit and retries.
		 */
		if (fresh && bw_limit_changed(st->lim_quota_ns,
					      st->lim_period_ns, &l)) {
			bw_restart(&st->u.bw, now, &l);
			st->lim_quota_ns = l.quota_ns;
			st->lim_period_ns = l.period_ns;
			st->charge_seq++;
		}
		bpf_spin_unlock(&st->lock);
		fq_cg_charge_one(id, max_stall_ns, now, 0, 0);
	}
	state = READ_ONCE(st->timer_state);
	next = READ_ONCE(st->next_timer_ns);
	if ((state != CG_TIMER_READY && state != CG_TIMER_DYING) ||
	    (!all && next && next + SWEEP_LATE_NS > now))
		return 0;
	/*
	 * A group whose cgroup exited needs its timer with nothing parked
	 * too: the timer drops its DSQ (gone once dropped: queued < 0).
	 */
	queued = scx_bpf_dsq_nr_queued(cg_dsq_id(id));
	if (queued < 0 || (!queued && state != CG_TIMER_DYING))
		return 0;
	if (fq_cg_timer_arm(id, now, false) && !all)
		stat_inc(CNT_CG_RESCUE);
	return 0;
}

static long cg_sweep_one(struct bpf_map *map, u64 *key, struct cg_state *st,
			 struct cg_sweep_ctx *c)
{
	fq_cg_wake(*key, c->now, c->max_stall_ns, c->all);
	return 0;
}

static u64 cg_sweep_at_ns;

/*
 * Once every CG_SWEEP_NS, from whichever LLC timer comes first, look at
 * every limited cgroup (cg_sweep_one()): a lost release timer costs its
 * parked tasks at most about a second. O(limited cgroups) a second.
 */
static void cg_sweep(u64 now)
{
	struct cg_sweep_ctx c = { .now = now };

	if (once_per(&cg_sweep_at_ns, now, CG_SWEEP_NS))
		bpf_for_each_map_elem(&cgroup_states, cg_sweep_one, &c, 0);
}

/* The fq_config.cg_gen the release timers were last woken for. */
static u64 cg_gen_seen;

/*
 * From the LLC timers: the command line's cgroup limits changed (`set
 * --cgroup`, which bumps fq_config.cg_gen): run the release timer of every
 * group with parked tasks now, so a limit lifted or loosened lets them go
 * at once, not at the release time the old limit gave them (up to a
 * period: 0.5-1 s at 1000/1000000). A cpu.max write wakes its own group
 * (fairquota_cgroup_set_bandwidth()). O(limited cgroups) per change.
 */
static void cg_limits_changed(const struct fq_config *cfg, u64 now)
{
	struct cg_sweep_ctx c = {
		.now = now, .max_stall_ns = cfg->max_stall_ns, .all = true,
	};
	u64 seen = READ_ONCE(cg_gen_seen), gen = cfg->cg_gen;

	if (gen == seen ||
	    __sync_val_compare_and_swap(&cg_gen_seen, seen, gen) != seen)
		return;
	bpf_for_each_map_elem(&cgroup_states, cg_sweep_one, &c, 0);
}

/*
 * The kernel's cpu.max of cgroup @id changed: run its release timer now if
 * tasks are parked on its queue (those its limit throttles), as above.
 */
static void cg_limit_set(u64 id, u64 now)
{
	const struct fq_config *cfg = live_config();

	if (cfg)
		fq_cg_wake(id, now, cfg->max_stall_ns, true);
}

/*
 * Set up the release timers cg_park() asked for (a few per run; each group
 * once). Called from the LLC timers, whose context may move tasks.
 */
static void cg_timers_setup(void)
{
	struct cg_state *st;
	u64 id;
	int i, err;

	bpf_for(i, 0, 16) {
		if (bpf_map_pop_elem(&cg_timer_queue, &id))
			break;
		st = bpf_map_lookup_elem(&cgroup_states, &id);
		if (!st)
			continue;
		err = bpf_timer_init(&st->timer, &cgroup_states, CLOCK_MONOTONIC);
		if (!err || err == -EBUSY)
			err = bpf_timer_set_callback(&st->timer, cg_timerfn);
		/*
		 * A failure (the allocation may fail under pressure) is
		 * retried at the group's next park. A group whose cgroup
		 * exited meanwhile stays as it is.
		 */
		__sync_val_compare_and_swap(&st->timer_state, CG_TIMER_QUEUED,
					    err ? CG_TIMER_NONE :
						  CG_TIMER_READY);
	}
}

/*
 * @p was just killed (fairquota_signal(): the signal_generate tracepoint,
 * once per process for a fatal signal, which the kernel turns into SIGKILL
 * on every thread). Its threads that are parked must not wait for tokens
 * to die: under cpu.max 1000/1000000 a group of 21 threads took 10-22 s
 * to empty after cgroup.kill (13-14 s under CFS). Flag the release timers
 * that may hold them and run them now: those of the limited cgroups on
 * @p's cgroup path (threads in another cgroup, cgroup v2's threaded mode,
 * wait as before, at most PARK_FORCE_MS), and, if tasks have their own
 * quota or a group was found (a group parks on the LLCs until its timer
 * is ready, or if it has no DSQ), every LLC's with tasks parked: each
 * then walks its whole queue for killed tasks (release_killed(),
 * release_due()), KILL_WALKS times. Cost: O(cgroup depth + LLCs) reads
 * per fatal signal while limits are set, nothing otherwise; an LLC's timer
 * is moved only if its queue holds parked tasks (it then runs on this
 * CPU, and goes home at a tick of its LLC, fq_llc_timer_keep()).
 */
static void note_killed(const struct task_struct *p, u64 now)
{
	const struct fq_config *cfg = live_config();
	struct cgroup *cg;
	bool found = false;
	struct cg_state *st;
	int level, i;
	u64 id;

	if (!cfg)
		return;
	if (cfg->nr_cgroups || READ_ONCE(kern_nr_cgroups) > 0) {
		cg = BPF_CORE_READ(p, cgroups, dfl_cgrp);
		level = BPF_CORE_READ(cg, level);
		bpf_for(i, 0, MAX_CGROUP_DEPTH) {
			if (!(id = cg_ancestor_id(cg, level - i)))
				break;
			st = bpf_map_lookup_elem(&cgroup_states, &id);
			if (!st)
				continue;
			found = true;
			if (READ_ONCE(st->timer_state) != CG_TIMER_READY)
				continue;
			WRITE_ONCE(st->kill, KILL_WALKS);
			fq_cg_timer_arm(id, now, false);
		}
	}
	if (!found && !cfg->quota_ns)
		return;
	bpf_for(i, 0, nr_llcs) {
		struct llc_ctx *lctx = try_lookup_llc_ctx(i);

		if (!lctx)
			break;
		if (scx_bpf_dsq_nr_queued(dsq_id(DSQ_THROTTLED, i)) <= 0)
			continue;
		WRITE_ONCE(lctx->kill, KILL_WALKS);
		llc_timer_arm(i, now);
	}
}

/* serve_starved(): move the head of limited cgroup *@key's parked tasks here. */
static long serve_cg_one(struct bpf_map *map, u64 *key, struct cg_state *st,
			 bool *done)
{
	*done = consume_dsq(cg_dsq_id(*key));
	return *done;
}

/*
 * ops.dispatch() on @cctx's CPU (of @llc) found nothing to run, and RT or
 * deadline work is runnable there: the kernel's ext server is asking. It
 * runs sched_ext tasks for 50 ms a second on a CPU that higher classes
 * keep busy, and it stops as soon as a pick finds nothing; it starts again
 * only when its CPU's count of runnable sched_ext tasks goes from 0 to 1.
 * Parked tasks count as runnable, so a CPU whose tasks were all parked
 * when it asked starved from then on, released or not: stress-ng's mutex
 * stressor (SCHED_FIFO threads on every CPU) under --quota-us ejected the
 * scheduler (watchdog, 30 s) or wedged the VM in 10 runs of 11. So a
 * parked task runs anyway, for the least slice (fairquota_running()): its
 * quota is overrun by at most the server's share, charged as debt, and only
 * while higher classes starve the CPU. @prev first (@pctx: its state, if
 * it is ours and still runnable: a throttled task the server ran, which
 * would be parked right after this pick), then its LLC's parked tasks,
 * then any limited cgroup's (O(limited cgroups), only in this case).
 */
static void serve_starved(struct task_struct *prev, struct task_ctx *pctx,
			  const struct fq_config *cfg, struct cpu_ctx *cctx,
			  u32 llc)
{
	struct rq *rq = scx_bpf_locked_rq();
	bool done = false;

	if (!rq || !cctx || !rq->scx.nr_running ||
	    rq->nr_running <= rq->scx.nr_running)
		return;
	if (pctx) {
		scx_bpf_task_set_slice(prev, cfg->slice_min_ns);
		stat_inc(CNT_SERVER_PARKED);
		return;
	}
	done = consume(DSQ_THROTTLED, llc);
	if (!done)
		bpf_for_each_map_elem(&cgroup_states, serve_cg_one, &done, 0);
	if (done) {
		cctx->serve_parked = 1;
		stat_inc(CNT_SERVER_PARKED);
	}
}

#endif /* __FAIRQUOTA_BANDWIDTH_BPF_H */
