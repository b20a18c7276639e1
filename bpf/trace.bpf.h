/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracing: while `scx_fairquota trace` runs, the events its timeline is
 * drawn from (a task starts or stops running, is throttled or released,
 * is moved to the urgent queue by the guard) go into a ring buffer that
 * the tracer reads. Included by main.bpf.c only.
 *
 * The switch is a deadline in the "trace_ctl" array map, set by the
 * tracer: while it is 0 or past, a trace point costs one array lookup and
 * a compare, nothing else. A tracer that dies leaves tracing on only until
 * its deadline. A full ring buffer drops the event and counts the drop in
 * trace_ctl.dropped (written only then): nothing on the scheduling path
 * ever waits for the reader, and the reader is not woken per event (it
 * polls).
 *
 * Scaling: one ring buffer for all CPUs (a reservation takes its spinlock
 * for a few instructions), used only while tracing; TRACE_RB_BYTES bounds
 * its memory whatever the event rate.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#ifndef __FAIRQUOTA_TRACE_BPF_H
#define __FAIRQUOTA_TRACE_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, TRACE_RB_BYTES);
} trace_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct fq_trace_ctl);
} trace_ctl SEC(".maps");

/* Record one event of kind @kind about @p at @ts if a tracer asked for it. */
static void trace_task(u8 kind, const struct task_struct *p,
		       const struct task_ctx *tctx, u8 arg, u64 ts)
{
	struct fq_trace_event *ev;
	struct fq_trace_ctl *ctl;
	u32 zero = 0;

	ctl = bpf_map_lookup_elem(&trace_ctl, &zero);
	if (!ctl || ts >= READ_ONCE(ctl->until_ns))
		return;
	ev = bpf_ringbuf_reserve(&trace_events, sizeof(*ev), 0);
	if (!ev) {
		__sync_fetch_and_add(&ctl->dropped, 1);
		return;
	}
	ev->ts_ns = ts;
	ev->pid = p->pid;
	ev->tgid = p->tgid;
	ev->cpu = scx_bpf_task_cpu(p);
	ev->kind = kind;
	ev->class = tctx->class;
	ev->arg = arg;
	ev->__pad = 0;
	bpf_probe_read_kernel_str(ev->comm, sizeof(ev->comm), p->comm);
	bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
}

#endif /* __FAIRQUOTA_TRACE_BPF_H */
