/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RR budget: time for RR tasks on CPUs busy with FIFO work, as the
 * kernel's fair server gives fair tasks time behind RT work. Per CPU, in
 * its cpu_ctx: no shared write. Included by main.bpf.c only, after
 * queues.bpf.h.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#ifndef __FAIRQUOTA_BUDGET_BPF_H
#define __FAIRQUOTA_BUDGET_BPF_H

/*
 * RR budget, as the kernel's fair server (its deadline server) gives fair
 * tasks time on a CPU busy with RT work: an RR task that wakes on a CPU
 * running FIFO work runs there at once, ahead of the FIFO task, on that
 * CPU's budget (RR_BUDGET_NS per RR_BUDGET_WINDOW_NS: 5%); with the budget
 * spent it waits in its queue for the guard as before. Without it, each
 * wakeup of an RR task behind FIFO hogs waited for the guard (50 ms after
 * a D sleep): 30 tasks that each created 20 files in one directory of a
 * virtiofs share took 2.0-2.4x as long to exit as under the default
 * scheduler (1.16-1.5x with the budget for wakeups alone; for queued RR
 * tasks at ticks too, rr_budget_ask(), 0.33-0.49x). The preempted FIFO task
 * resumes at the head of its queue once the turn ends; a FIFO task that
 * wakes preempts the turn; an RR task that wakes does not, and queues
 * behind it. The budget lives in the CPU's cpu_ctx, charged by that CPU
 * alone (rr_budget_charge()) and read by wakers: no shared write, so it
 * costs nothing more on 256 CPUs than on 2. A turn is capped to what is
 * left when it starts (at least RR_BUDGET_MIN_NS) and runs on that CPU's
 * local queue, so a CPU gives at most about RR_BUDGET_NS +
 * RR_BUDGET_MIN_NS per window.
 */
static u64 rr_budget_left(const struct cpu_ctx *cctx, u64 now)
{
	u64 start = READ_ONCE(cctx->bud_start_ns);
	u64 used = READ_ONCE(cctx->bud_used_ns);

	/* Read from another CPU, @now may be a little before @start. */
	if (now > start && now - start >= RR_BUDGET_WINDOW_NS)
		return RR_BUDGET_NS;
	return used < RR_BUDGET_NS ? RR_BUDGET_NS - used : 0;
}

/* A budget turn that started at @start ran until @now on @cctx's CPU. */
static void rr_budget_charge(struct cpu_ctx *cctx, u64 start, u64 now)
{
	if (now <= start)
		return;
	if (now - cctx->bud_start_ns >= RR_BUDGET_WINDOW_NS) {
		cctx->bud_start_ns = start;
		cctx->bud_used_ns = 0;
	}
	cctx->bud_used_ns += now - start;
}

/* The turn on @cctx's CPU, started at @start, is no longer on the budget. */
static void rr_budget_end(struct cpu_ctx *cctx, u64 start, u64 now)
{
	if (!cctx || !cctx->curr_bturn)
		return;
	rr_budget_charge(cctx, start, now);
	cctx->curr_bturn = 0;
}

/*
 * RR task @p woke (@enq_flags) on its CPU, where FIFO work runs: if that
 * CPU has RR budget left, put @p on its local queue with SCX_ENQ_PREEMPT,
 * which ends the FIFO task's turn at once, and return true. Behind a turn
 * on the budget (which no RR task preempts, may_preempt()) it queues
 * there without preempting, for the next turn on what is left. Not for a
 * SCHED_BATCH or SCHED_IDLE task (no_wakeup_preempt()), nor ahead of a
 * per-CPU kernel thread (not preemptible) or a task already on that local
 * queue.
 */
static bool rr_budget_turn(struct task_struct *p, struct task_ctx *tctx,
			   const struct fq_config *cfg, u64 enq_flags, u64 now)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct cpu_ctx *cctx = try_lookup_cpu_ctx(cpu);
	bool fifo;

	if (!(enq_flags & SCX_ENQ_WAKEUP) || tctx->class != CLASS_RR ||
	    no_wakeup_preempt(p) || !cctx || !READ_ONCE(cctx->curr_valid))
		return false;
	fifo = READ_ONCE(cctx->curr_class) == CLASS_FIFO;
	if (!(fifo ? READ_ONCE(cctx->curr_preemptible) :
		     READ_ONCE(cctx->curr_bturn)) ||
	    rr_budget_left(cctx, now) < RR_BUDGET_MIN_NS ||
	    scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu))
		return false;
	tctx->bturn = 1;
	stat_inc(CNT_RR_BUDGET);
	if (fifo)
		enq_flags |= SCX_ENQ_PREEMPT;
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cfg->slice_ns, enq_flags);
	return true;
}

/* cpu_ctx.bud_ask: a tick asked for a budget turn; dispatch gave one. */
enum { BUD_ASKED = 1, BUD_PICKED = 2 };

/*
 * Has queued RR task @q waited at least @wait_ns (since it became
 * runnable, tctx->enq_at_ns)? The budget's tick turn is for RR work that
 * FIFO work holds back: one that waited less than a slice would have
 * waited that long behind another RR turn. Without it a tick that landed
 * in a FIFO task's turn of a few microseconds (a cyclictest thread)
 * ended that turn for an RR hog that had been queued for as long, and
 * the FIFO task waited for the other CPU to pick it up, 2-4 ms under
 * TCG. The kernel's fair server likewise defers its runtime until fair
 * tasks were held back.
 */
static bool rr_waited(struct task_struct *q, u64 now, u64 wait_ns)
{
	struct task_ctx *qctx = try_lookup_task_ctx(q);
	u64 since = qctx ? queued_since(qctx, now) : 0;

	return since && now - since >= wait_ns;
}

/*
 * At a tick of FIFO task @p (@tctx) on @cpu: if an RR task that may run on
 * @cpu waits in @llc's RR queue and the CPU has RR budget left, ask for a
 * turn on the budget (cpu_ctx.bud_ask) and return true; the caller ends
 * @p's turn, ops.dispatch() moves the RR queue's head here
 * (rr_budget_pick()), and @p resumes at the head of its queue when that
 * turn ends. So RR tasks that stay runnable behind FIFO work get the
 * budget too, as the fair server runs fair tasks that wait behind RT
 * work, not only those that wake, once the first of them that may run
 * on @cpu has waited a slice (rr_waited()): before, a CPU-bound RR task
 * there ran one slice per guard (1.5 ms per 100 ms on 2 CPUs) between
 * wakeups, and
 * the exits convoy (bench/exits_convoy.py) took 1.16-1.5x the default
 * scheduler's time; with it, 0.33-0.49x. Not for a turn that may not be
 * preempted (a per-CPU kernel thread, a kernel thread's turn), nor yet for
 * one in the kernel at this tick (tick_cut()). The scan
 * reads at most KEEP_SCAN_TASKS queued tasks (RR tasks pinned to other
 * CPUs of the LLC do not end a turn here for nothing); it runs only at
 * ticks of FIFO turns with an RR task queued and budget left, and touches
 * only this CPU's cpu_ctx and the LLC's queue: the same on 256 CPUs.
 */
static bool rr_budget_ask(struct task_struct *p, struct task_ctx *tctx,
			  const struct fq_config *cfg, s32 cpu, u32 llc,
			  u64 now)
{
	struct cpu_ctx *cctx = try_lookup_cpu_ctx(cpu);
	struct task_struct *q;
	bool found, mine;
	u32 seen = 0;

	if (!cctx || tctx->class != CLASS_FIFO || !cctx->curr_valid ||
	    !cctx->curr_preemptible ||
	    kthread_turn(p, tctx, cfg->slice_ns, false) ||
	    rr_budget_left(cctx, now) < RR_BUDGET_MIN_NS ||
	    !scx_bpf_dsq_nr_queued(dsq_id(DSQ_RR, llc)))
		return false;
	/*
	 * The first task that may run here (the one rr_budget_pick() takes)
	 * must have waited: the head, without the queue's lock, or a walk
	 * only if the head is pinned elsewhere.
	 */
	q = __COMPAT_scx_bpf_dsq_peek(dsq_id(DSQ_RR, llc));
	mine = q && bpf_cpumask_test_cpu(cpu, q->cpus_ptr);
	found = mine && rr_waited(q, now, cfg->slice_ns);
	if (!mine) {
		bpf_for_each(scx_dsq, q, dsq_id(DSQ_RR, llc), 0) {
			if (bpf_cpumask_test_cpu(cpu, q->cpus_ptr)) {
				found = rr_waited(q, now, cfg->slice_ns);
				break;
			}
			if (++seen >= KEEP_SCAN_TASKS)
				break;
		}
	}
	if (!found || !tick_cut(tctx, now))
		return false;
	cctx->bud_ask = BUD_ASKED;
	return true;
}

/*
 * In ops.dispatch() on @cpu: if a tick asked for a budget turn
 * (rr_budget_ask()), move the first RR task of @llc's queue that may run
 * here to the local queue, for a turn on the budget (ops.running() sees
 * BUD_PICKED), and return true. The ask is used up either way.
 */
static bool rr_budget_pick(s32 cpu, u32 llc)
{
	struct cpu_ctx *cctx = try_lookup_cpu_ctx(cpu);

	if (!cctx || cctx->bud_ask != BUD_ASKED)
		return false;
	cctx->bud_ask = 0;
	if (!scx_bpf_dsq_move_to_local(dsq_id(DSQ_RR, llc), 0))
		return false;
	cctx->bud_ask = BUD_PICKED;
	stat_inc(CNT_RR_BUDGET_TICK);
	return true;
}

#endif /* __FAIRQUOTA_BUDGET_BPF_H */
