/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Starvation guard: bound the wait of every queued task. The per-LLC
 * housekeeping timer ages the LLC's FIFO and RR queues; a task that has
 * waited past its bound moves to the LLC's URGENT queue, which every CPU
 * of the LLC serves before anything else (a running FIFO task gives way at
 * its next tick). Included by main.bpf.c only.
 *
 * Bounds: an RR task waits at most guard_ns + one timer interval (<= 20
 * ms) + one tick + the turns of the urgent tasks ahead of it; a FIFO task
 * the same with FIFO_MAX_WAIT_NS instead of guard_ns. The urgent queue
 * drains at one turn per CPU per slice, so with R tasks urgent at once on
 * C CPUs the last waits about R * slice / C more. Nothing depends on the
 * number of tasks, FIFO hogs or options beyond that.
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

/*
 * Move every task of queue @kind of @llc that has waited @bound_ns or more
 * to the LLC's URGENT queue. Return the number moved.
 */
static u32 age_queue(u32 kind, u32 llc, u64 bound_ns, u64 now, u32 cnt_idx)
{
	struct task_struct *p;
	u32 moved = 0;

	bpf_for_each(scx_dsq, p, dsq_id(kind, llc), 0) {
		struct task_ctx *tctx = try_lookup_task_ctx(p);
		u64 since;

		if (!tctx)
			continue;
		since = READ_ONCE(tctx->enq_at_ns);
		if (!since || now < since || now - since < bound_ns)
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p,
				     dsq_id(DSQ_URGENT, llc), 0)) {
			WRITE_ONCE(tctx->urgent, 1);
			stat_inc(cnt_idx);
			trace_task(TRACE_GUARD, p, tctx, 0, now);
			kick_idle_cpu(p);
			moved++;
		}
	}
	return moved;
}

/*
 * Age both class queues of @llc. An idle CPU is woken for each task made
 * urgent; busy CPUs notice the urgent queue at their next tick.
 */
static void guard_scan(u32 llc, const struct fq_config *cfg, u64 now)
{
	age_queue(DSQ_RR, llc, cfg->guard_ns, now, CNT_GUARD);
	age_queue(DSQ_FIFO, llc, FIFO_MAX_WAIT_NS, now, CNT_FIFO_ROTATE);
}

/* Return true if urgent work waits in @llc (checked from ops.tick()). */
static bool urgent_waiting(u32 llc)
{
	return scx_bpf_dsq_nr_queued(dsq_id(DSQ_URGENT, llc)) > 0;
}

#endif /* __FAIRQUOTA_GUARD_BPF_H */
