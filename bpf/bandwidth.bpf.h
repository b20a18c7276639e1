/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bandwidth: charging CPU time to a task's bucket (bucket.h) and its
 * limited cgroups' (cgroups.bpf.h), parking a throttled task on its LLC's
 * THROTTLED queue and releasing it when its buckets refill. Included by main.bpf.c only.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#ifndef __FAIRQUOTA_BANDWIDTH_BPF_H
#define __FAIRQUOTA_BANDWIDTH_BPF_H

/* Return true if @p is never limited: kernel threads, exiting tasks, us. */
static bool is_exempt(const struct task_struct *p)
{
	return (p->flags & (PF_KTHREAD | PF_EXITING)) || p->tgid == daemon_tgid;
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
 * Refresh the cached class, nice, weight and limits of @p (its own quota
 * applies to RR tasks; its cgroups' limits to every task of the group)
 * and bring its bucket up to date. Return true if @p is throttled, by its
 * own quota or a cgroup's. Called only from callbacks on @p that the
 * kernel serializes (under @p's rq lock, or ops.select_cpu() while @p is
 * being woken); the timers never write a bucket, so a task's bucket has
 * one writer at a time (a cgroup's has its lock).
 */
static bool refresh_task(const struct task_struct *p, struct task_ctx *tctx,
			 const struct fq_config *cfg, u64 now)
{
	bool exempt = is_exempt(p), own = false;
	struct bw_limit l;

	tctx->class = task_class(p, cfg);
	tctx->nice = task_nice(p);
	tctx->weight = p->scx.weight;
	tctx->limited = cfg->quota_ns && tctx->class == CLASS_RR && !exempt;
	cg_refresh(p, tctx, cfg, exempt);
	if (tctx->limited) {
		task_limit(cfg, &l);
		bw_refill(&tctx->bw, now, &l);
		own = bw_throttled(&tctx->bw);
	}
	return own || (tctx->nr_cg && cg_scan(tctx, now, NULL));
}

/*
 * Charge the CPU time the running task @p used since its last charge: total
 * runtime, RR vtime and, if limited, its bandwidth bucket. CPU time is the
 * kernel's own p->se.sum_exec_runtime (IRQ time excluded), the clock of
 * /proc/PID/schedstat and cgroup cpu.stat.
 */
static void charge(const struct task_struct *p, struct task_ctx *tctx,
		   const struct fq_config *cfg, u64 now)
{
	u64 exec = p->se.sum_exec_runtime;
	u64 delta = exec > tctx->last_exec_ns ? exec - tctx->last_exec_ns : 0;
	struct bw_limit l;

	if (!delta)
		return;
	tctx->last_exec_ns = exec;
	tctx->runtime_ns += delta;
	if (tctx->class == CLASS_RR)
		tctx->vtime += vtime_cost(delta, p->scx.weight);
	if (tctx->limited && cfg->quota_ns) {
		task_limit(cfg, &l);
		if (bw_charge_span(&tctx->bw, now - delta, now, &l))
			stat_inc(CNT_THROTTLE);
	}
	if (tctx->nr_cg && cg_charge(tctx, cfg, now, delta))
		stat_inc(CNT_CG_THROTTLE);
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
 * Arm @lctx's timer for @when unless it is armed earlier already. Several
 * CPUs may race here: the compare-and-swap keeps the earliest deadline in
 * next_timer_ns, and whoever set it re-arms if an even earlier one landed
 * while it was starting the timer, so no deadline is lost. (If the start
 * itself fails, the deadline is withdrawn; the timer runs at least every
 * SCAN_MAX_NS anyway, which bounds the delay.)
 */
static void llc_timer_arm(struct llc_ctx *lctx, u64 when)
{
	u64 cur, again;
	int i;

	for (i = 0; i < 4; i++) {
		cur = READ_ONCE(lctx->next_timer_ns);
		if (cur && cur <= when)
			return;
		if (__sync_val_compare_and_swap(&lctx->next_timer_ns, cur,
						when) != cur)
			continue;
		if (bpf_timer_start(&lctx->timer, when,
				    BPF_F_TIMER_ABS | BPF_F_TIMER_CPU_PIN)) {
			/* Not armed (a deferred start can fail): undo. */
			__sync_val_compare_and_swap(&lctx->next_timer_ns, when,
						    cur);
			return;
		}
		again = READ_ONCE(lctx->next_timer_ns);
		if (again && again < when)
			bpf_timer_start(&lctx->timer, again,
					BPF_F_TIMER_ABS | BPF_F_TIMER_CPU_PIN);
		return;
	}
}

/* Park the throttled task @p on its LLC's THROTTLED queue. */
static void park(struct task_struct *p, struct task_ctx *tctx,
		 const struct fq_config *cfg, u64 now, u64 enq_flags)
{
	u64 release = release_time(tctx, cfg, now);
	struct llc_ctx *lctx = try_lookup_llc_ctx(tctx->llc);

	bw_park(&tctx->bw, now);
	tctx->release_at_ns = release;
	/* Throttled time is not waiting time: the wait starts at release. */
	tctx->enq_at_ns = release;
	tctx->parked = true;
	/* arg: 1 if a cgroup's quota ran out while the task has its own left */
	trace_task(TRACE_THROTTLE, p, tctx,
		   !tctx->limited || tctx->bw.tokens_ns > 0, now);
	scx_bpf_dsq_insert_vtime(p, dsq_id(DSQ_THROTTLED, tctx->llc),
				 cfg->slice_ns, release, enq_flags);
	if (lctx)
		llc_timer_arm(lctx, release);
}

/*
 * A parked task runs again: account the time it spent throttled (up to its
 * release, not the queueing after it). Called from ops.running().
 */
static void unpark(const struct task_struct *p, struct task_ctx *tctx,
		   u64 now)
{
	u64 end = now < tctx->release_at_ns ? now : tctx->release_at_ns;

	if (!tctx->parked)
		return;
	tctx->parked = false;
	bw_unpark(&tctx->bw, end);
	trace_task(TRACE_RELEASE, p, tctx, 0, end);
}

/*
 * Release timer work for @llc: move every parked task whose release time
 * has come to its class queue; one whose cgroup was throttled again
 * meanwhile (its other tasks ran on) stays until the group's new release.
 * Return the earliest release still pending (0 if none). Runs in a timer,
 * without the tasks' rq locks, so it only reads their contexts (a parked
 * task's wait clock already starts at its release time, see park()).
 */
static u64 release_due(u32 llc, const struct fq_config *cfg, u64 now)
{
	struct task_struct *p;
	u64 next = 0, cg;

	bpf_for_each(scx_dsq, p, dsq_id(DSQ_THROTTLED, llc), 0) {
		struct task_ctx *tctx = try_lookup_task_ctx(p);
		u32 class = task_class(p, cfg);
		u64 at = 0;

		if (tctx)
			at = READ_ONCE(tctx->release_at_ns);
		/* A lifted quota releases at once (cgroups: checked below). */
		if (tctx && !(cfg->quota_ns && class == CLASS_RR) &&
		    !READ_ONCE(tctx->nr_cg))
			at = 0;
		/* The queue is ordered by release time. */
		if (at > now) {
			if (!next || at < next)
				next = at;
			break;
		}
		cg = tctx ? cg_scan(tctx, now, NULL) : 0;
		if (cg) {
			if (!next || cg < next)
				next = cg;
			continue;
		}
		if (class == CLASS_FIFO) {
			scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p,
					 dsq_id(DSQ_FIFO, llc), 0);
		} else {
			if (tctx)
				scx_bpf_dsq_move_set_vtime(BPF_FOR_EACH_ITER,
							   rr_key(tctx, cfg));
			scx_bpf_dsq_move_vtime(BPF_FOR_EACH_ITER, p,
					       dsq_id(DSQ_RR, llc), 0);
		}
		kick_idle_cpu(p);
	}
	return next;
}

#endif /* __FAIRQUOTA_BANDWIDTH_BPF_H */
