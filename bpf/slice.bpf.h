/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Slice timers: a turn that must end between two ticks (a slice or a
 * quota shorter than what is left of the tick) is ended by a per-CPU BPF
 * timer that kicks its CPU; and the kernel's tick period, learned from
 * jiffies, which says when a tick alone is late enough to need one. Each
 * CPU arms and owns its own timer in its cpu_ctx: nothing shared, the
 * same on 256 CPUs as on 2. Included by main.bpf.c only.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#ifndef __FAIRQUOTA_SLICE_BPF_H
#define __FAIRQUOTA_SLICE_BPF_H

/*
 * The slice timer of @cctx's CPU now serves the running turn: it fires at
 * @at (ktime ns), and its callback chains the next turn's timer for
 * @slice ns (0: none, slice_timerfn()); @follow: it took the turn after
 * the one it was armed for ended (slice_timer_follow()). The one place
 * these fields are set.
 */
static void slice_timer_claim(struct cpu_ctx *cctx, u64 at, u64 slice,
			      bool follow)
{
	cctx->timer_turn = cctx->turn;
	cctx->timer_at = at;
	cctx->timer_slice = slice;
	cctx->timer_follow = follow;
}

/*
 * The turn the slice timer of @cctx's CPU (@cpu) was armed for ended
 * before it fired: take the turn running now, an RR turn others wait
 * for, left untimed (most turns that follow a wakeup-driven one are,
 * arm_slice_timer()): re-arm for the end of its slice, or end it now if
 * it has run its slice out already, and return true. Return false if
 * there is nothing to take: the timer stays off until a turn starts it.
 * Why: a turn that blocked early clears the CPU's ran-out mark, so the
 * first CPU-bound turns of processes started on one CPU at once, between
 * their page faults, each ran from one tick to the next (4 ms of a 1.5 ms
 * slice; the last of 4 waited 15-16 ms where the default scheduler's
 * longest wait was 6.3 ms). A start from the timer's own callback is
 * made at once, not deferred as one from a sched_ext callback is, and
 * a timer fires at most once per slice this way, however many short
 * turns run in between: the count of useless firings follows time, not
 * turns.
 */
static bool slice_timer_follow(struct cpu_ctx *cctx, struct bpf_timer *timer,
			       s32 cpu, u64 now)
{
	u64 end = cctx->turn_end_at;

	if (!end || !scx_bpf_dsq_nr_queued(dsq_id(DSQ_RR, llc_of(cpu))))
		return false;
	slice_timer_claim(cctx, end, cctx->turn_slice, true);
	stat_inc(CNT_SLICE_FOLLOW);
	if (end > now) {
		bpf_timer_start(timer, end,
				BPF_F_TIMER_ABS | BPF_F_TIMER_CPU_PIN);
		return true;
	}
	/* Past its slice already: end it now. */
	scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	return true;
}

/*
 * End the running turn on this CPU if it is still the one the timer is
 * for, and arm the timer again for the turn the kick starts: a CPU-bound
 * task's turn that follows a timed one will most likely be timed too
 * (slice_timer_take()).
 */
static int slice_timerfn(void *map, int *key, struct bpf_timer *timer)
{
	s32 cpu = *key;
	struct cpu_ctx *cctx = try_lookup_cpu_ctx(cpu);
	u64 now = bpf_ktime_get_ns();

	if (cctx && cctx->curr_valid && cctx->turn != cctx->timer_turn &&
	    slice_timer_follow(cctx, timer, cpu, now))
		return 0;
	if (cctx && cctx->curr_valid && cctx->turn == cctx->timer_turn) {
		/*
		 * Counted so that a slice overrun can be told apart: a
		 * timer the kernel fires late (a loaded or virtual host)
		 * from a turn that was never timed. A followed turn
		 * (slice_timer_follow()) counts in slice_follow alone.
		 */
		if (!cctx->timer_follow) {
			stat_inc(CNT_SLICE_TIMER);
			if (now > cctx->timer_at + SLICE_LATE_NS)
				stat_inc(CNT_SLICE_LATE);
		}
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		if (cctx->timer_slice) {
			cctx->kicked_at = now;
			cctx->chain_at = now + cctx->timer_slice +
					 cctx->kick_lag;
			bpf_timer_start(timer, cctx->chain_at,
					BPF_F_TIMER_ABS | BPF_F_TIMER_CPU_PIN);
		}
	}
	return 0;
}

/*
 * The kernel's tick period, learned from jiffies (0 until known): the
 * daemon need not find the kernel's config, and a kernel of any HZ works.
 * ops.init() notes jiffies and the time; the first LLC timer run at
 * least TICK_LEARN_NS later divides. Only values of a real HZ (100, 250,
 * 300, 1000, within 5%) are taken; otherwise it counts again.
 */
u64 tick_ns;
static u64 tick_learn_at_ns, tick_learn_jiffies;

static void tick_learn_start(u64 now)
{
	WRITE_ONCE(tick_learn_jiffies, bpf_jiffies64());
	WRITE_ONCE(tick_learn_at_ns, now);
}

/* Return the tick period if @hz is within 5% of @want Hz, else 0. */
static u64 tick_of_hz(u64 hz, u64 want)
{
	return hz * 20 >= want * 19 && hz * 20 <= want * 21 ?
	       NSEC_PER_SEC / want : 0;
}

static void tick_learn(u64 now)
{
	u64 since = READ_ONCE(tick_learn_at_ns), hz, tick;

	if (READ_ONCE(tick_ns) || !since || now < since + TICK_LEARN_NS)
		return;
	hz = (bpf_jiffies64() - READ_ONCE(tick_learn_jiffies)) *
	     NSEC_PER_SEC / (now - since);
	tick = tick_of_hz(hz, 100) ?: tick_of_hz(hz, 250) ?:
	       tick_of_hz(hz, 300) ?: tick_of_hz(hz, 1000);
	if (tick)
		WRITE_ONCE(tick_ns, tick);
	else
		tick_learn_start(now);
}

/*
 * Return true if a turn with @left_ns of its slice left could overrun it
 * by more than SLICE_TICK_SLACK_NS if only a tick ended it. The next tick
 * comes within a tick period, so a turn with at least a tick less the
 * slack left is safe without a timer (a 3 ms slice at HZ 250
 * always is). True while the tick period is not known.
 */
static bool slice_needs_timer(u64 left_ns)
{
	u64 tick = READ_ONCE(tick_ns);

	return !tick || left_ns + SLICE_TICK_SLACK_NS < tick;
}

/*
 * Start this CPU's slice timer to end the current turn at @at (ktime ns);
 * @slice: what its callback gives the next turn (slice_timer_claim()). The
 * deadline is absolute: a start from a sched_ext callback is deferred to an
 * irq_work, and a relative one counted from whenever that ran.
 */
static void slice_timer_start(struct cpu_ctx *cctx, u64 at, u64 slice)
{
	slice_timer_claim(cctx, at, slice, false);
	stat_inc(CNT_SLICE_ARM);
	bpf_timer_start(&cctx->slice_timer, cctx->timer_at,
			BPF_F_TIMER_ABS | BPF_F_TIMER_CPU_PIN);
}

/*
 * A turn of @slice ns starts on @cctx's CPU at @now; @timed: it needs the
 * slice timer. Was the timer armed for it already, by the callback that ended
 * the turn before it (slice_timerfn())? Take it if it ends this turn
 * within CHAIN_SLACK_NS of its slice, and return true; else the caller
 * starts the timer.
 * Either way the chained deadline is used up (one that no turn took
 * fires for a turn it was not armed for, and does nothing).
 *
 * Why: a start from a sched_ext callback (irqs off) is deferred to an
 * irq_work (kernel/bpf/helpers.c, defer_timer_wq_op()): a kmalloc and a
 * self-interrupt per timed turn; one from the timer's own callback
 * (softirq) is made at once. CPU-bound tasks sharing a CPU take turns by
 * the timer, so each turn after the first takes the timer its kick armed
 * and pays for one irq_work (the kick's), not two (4 hogs on one CPU:
 * about half the irq_work interrupts; bench/ab-slice-chain-report.md).
 * The chained deadline counts from the kick and adds
 * the last kick's lag (its irq_work and the switch, measured here), so
 * the turn still lasts its slice from when it starts.
 * Nothing is shared: each CPU chains its own timer, the same on 256 CPUs.
 */
static bool slice_timer_take(struct cpu_ctx *cctx, u64 slice, bool timed,
			     u64 now)
{
	u64 at = cctx->chain_at, want = now + slice;

	cctx->chain_at = 0;
	if (cctx->kicked_at) {
		cctx->kick_lag = now > cctx->kicked_at ?
				 now - cctx->kicked_at : 0;
		if (cctx->kick_lag > CHAIN_LAG_MAX_NS)
			cctx->kick_lag = CHAIN_LAG_MAX_NS;
		cctx->kicked_at = 0;
	}
	if (!timed || !at || !slice || at + CHAIN_SLACK_NS < want ||
	    at > want + CHAIN_SLACK_NS)
		return false;
	slice_timer_claim(cctx, at, slice, false);
	stat_inc(CNT_SLICE_ARM);
	stat_inc(CNT_SLICE_CHAIN);
	return true;
}

/*
 * Return true if the turns of limited task @tctx are left to the tick to
 * end when their tokens run out: each limit on it refills by at least
 * half a tick (a 2 ms quota or sub-quota at HZ 250). The tick then ends
 * a turn at most a tick late, no more than two quotas of runtime, and
 * the overrun is charged: the bucket's debt pays it back, so the share
 * over periods stays exact (the kernel's CFS bandwidth control ends
 * every quota at a tick). A shorter quota (1 ms per 10 ms, or the
 * 0.5 ms sub-quota of --max-stall-us 2500 at 20%) is ended by the slice
 * timer, on time: a tick there would overrun it several times over.
 * Why not time them all: a turn cut by the timer costs a timer start
 * (deferred to an irq_work), its interrupt and a kick, all charged to
 * the task, and under emulation that cost most of a 2 ms quota (nginx
 * at 2 ms/10 ms: 40-52 req/s timed against 62-99 left to the tick, and
 * 80-102 under CFS, one boot each, 2026-12-03).
 */
static bool tick_cuts_quota(const struct task_ctx *tctx,
			    const struct fq_config *cfg)
{
	u64 tick = READ_ONCE(tick_ns), least = ~0ULL, q;

	if (!tick)
		return false;
	if (tctx->limited && cfg->quota_ns && cfg->period_ns)
		least = bw_quantum(cfg->quota_ns, cfg->period_ns,
				   cfg->max_stall_ns);
	if (tctx->nr_cg) {
		q = cg_least_quantum(tctx, cfg->max_stall_ns);
		if (q < least)
			least = q;
	}
	return least != ~0ULL && least * 2 >= tick;
}

/*
 * Return true if a turn of @slice ns starting now on @cctx's CPU would
 * end more than SLICE_TICK_SLACK_NS before the CPU's next tick, going by
 * when its last one came (true if that is not known).
 */
static bool tick_far(const struct cpu_ctx *cctx, u64 slice, u64 now)
{
	u64 tick = READ_ONCE(tick_ns), next = cctx->tick_at + tick;

	if (!tick || !cctx->tick_at || now >= next)
		return true;
	return now + slice + SLICE_TICK_SLACK_NS < next;
}

/*
 * A turn of @tctx of @slice ns (@cut: its tokens cut it, task_slice())
 * starts on @cctx's CPU, of @llc: arm the slice timer if the turn may have
 * to end between ticks. A FIFO turn in a limited cgroup is timed, so its
 * quota ends on time. An RR turn is timed from its start if others wait
 * and the task ran its last turn until its slice was taken (a CPU-bound
 * task: it will likely use this one up too) or the CPU's last turn was so
 * taken (CPU-bound tasks take turns here: a new task, or one a wakeup or
 * a kworker preempted early, likely joins them; such a turn started at
 * the tick that ended the last and ran a whole tick, 4 ms of a 1.5 ms
 * slice), the task is not wakeup-driven (blocks_early: its last turn not
 * preempted early blocked before half its slice) and the next tick would
 * end it late (tick_far()). A wakeup-driven task that preempts a hog
 * otherwise starts a timer it blocks before: 0.12-0.14 such timers per
 * turn of a ping-pong beside a hog, 0.225 in a CI run, where the hog's
 * own preempted turns leave 0.07-0.10. A process that turns CPU-bound
 * after blocking early (its start-up's page faults) runs its first such
 * turn to the tick, unless a timer still running on the CPU takes it
 * (slice_timer_follow()). For a task under a quota or a
 * limited cgroup, whatever waits, a limited turn shorter than
 * the configured slice (its tokens, split mode or the RR budget cut it)
 * is timed, so a quota ends on time, unless the task's last turn ended
 * by blocking: a server's turns (nginx: one per few requests) are left
 * to their own blocking and to the tick, as CFS leaves them (it has no
 * timer: its bandwidth check runs when the runtime is updated, at the
 * task's own switches and at ticks). The tick that finds the tokens
 * spent ends the turn (or the slice timer, if others wait and the tick
 * finds less than a tick left: slice_timer_tick()). The overrun, at most
 * a tick and mostly what is left of the turn, is charged: the bucket's
 * debt pays it back. Not where the tick may end
 * the quota (tick_cuts_quota()): a turn its tokens cut is left to the
 * tick (quota_at_tick), and any other is an RR slice like an unlimited
 * task's. A turn on the RR budget of a task that ran its last turn out is
 * timed too: a FIFO task waits for it to end.
 * Any other turn is left to the ticks: the tick that finds less than a
 * tick less the slack left arms the timer (slice_timer_tick()). Most
 * turns of wakeup-driven work block long before their slice ends, so
 * they start no timer: starting one was most of ops.running()'s cost (on
 * this kernel a start from a sched_ext callback is deferred to an
 * irq_work: an allocation and a self-interrupt), and its useless expiry
 * an interrupt. A server in a limited cgroup (nginx: one turn per
 * request) started one per turn until 2026-11-26. The price: a task that
 * turns CPU-bound after blocking early may overrun one slice shorter
 * than a tick by up to a tick (its next turn is timed); under a quota the
 * overrun is charged, so the share over periods stays exact.
 */
static __always_inline void arm_slice_timer(struct cpu_ctx *cctx,
					    const struct task_ctx *tctx,
					    u64 slice, bool cut, u32 llc,
					    const struct fq_config *cfg,
					    u64 now)
{
	bool timed;

	cctx->quota_at_tick = false;
	/* What a timer whose turn ended early may take (slice_timer_follow()). */
	cctx->turn_end_at = tctx->class == CLASS_RR && !cut && slice ?
			    now + slice : 0;
	cctx->turn_slice = slice;
	/* A turn on a spent quota (fairquota_running()) ends at once. */
	if (!slice) {
		slice_timer_take(cctx, 0, false, now);
		slice_timer_start(cctx, now, 0);
		return;
	}
	if (tctx->class == CLASS_FIFO) {
		timed = tctx->nr_cg && !tick_cuts_quota(tctx, cfg);
	} else if ((tctx->limited || tctx->nr_cg) &&
		   !tick_cuts_quota(tctx, cfg)) {
		timed = tctx->ran_out ||
			(slice < cfg->slice_ns && !tctx->blocked);
	} else if (cut) {
		/* Only a limited task's tokens cut a slice. */
		cctx->quota_at_tick = true;
		timed = false;
	} else if (cctx->curr_bturn) {
		/*
		 * A turn on the RR budget, which a FIFO task waits for: left
		 * to the tick, a CPU-bound task's turn cut to the budget left
		 * ran on to a tick past it (on 8 vCPUs under TCG one RR hog
		 * took 15-17% of each of 4 FIFO hogs' CPUs so, against 5%).
		 */
		timed = tctx->ran_out;
	} else {
		timed = (tctx->ran_out ||
			 (cctx->last_ran_out && !tctx->blocks_early &&
			  tick_far(cctx, slice, now))) &&
			scx_bpf_dsq_nr_queued(dsq_id(DSQ_RR, llc));
	}
	if (!slice_timer_take(cctx, slice, timed, now) && timed)
		slice_timer_start(cctx, now + slice, slice);
}

/*
 * At a tick of RR task @p whose turn has no slice timer yet: arm it if
 * what is left of the slice (the kernel has just brought p->scx.slice up
 * to date) could be overrun by more than the slack, and others wait (not
 * for a turn whose tokens end it at a tick: quota_at_tick).
 */
static void slice_timer_tick(struct task_struct *p, const struct task_ctx *tctx,
			     s32 cpu, u32 llc, u64 now)
{
	struct cpu_ctx *cctx;
	u64 left = p->scx.slice;

	if (tctx->class != CLASS_RR || !left || !slice_needs_timer(left))
		return;
	cctx = try_lookup_cpu_ctx(cpu);
	if (!cctx || !cctx->curr_valid || cctx->timer_turn == cctx->turn ||
	    cctx->quota_at_tick || !scx_bpf_dsq_nr_queued(dsq_id(DSQ_RR, llc)))
		return;
	/* A chained timer (slice_timerfn()) gives the next turn a whole slice. */
	slice_timer_start(cctx, now + left, tctx->turn_slice_ns);
}

#endif /* __FAIRQUOTA_SLICE_BPF_H */
