/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the daemon reads: a task iterator that writes one struct task_stat
 * per task we schedule (one read() of the iterator fetches thousands of
 * tasks, no per-task syscall), and the program that tells the scheduler
 * the daemon's own tgid. Included by main.bpf.c only.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#ifndef __FAIRQUOTA_STATS_BPF_H
#define __FAIRQUOTA_STATS_BPF_H

SEC("iter/task")
int dump_tasks(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *p = ctx->task;
	struct task_stat s = {};
	struct task_ctx *tctx;

	if (!p)
		return 0;
	tctx = bpf_task_storage_get(&task_ctx_stor, p, 0, 0);
	if (!tctx)
		return 0;
	s.pid = p->pid;
	s.tgid = p->tgid;
	bpf_probe_read_kernel_str(s.comm, sizeof(s.comm), p->comm);
	s.nice = tctx->nice;
	s.weight = tctx->weight;
	s.class = tctx->class;
	s.runtime_ns = tctx->runtime_ns;
	s.nr_periods = tctx->bw.nr_periods;
	s.nr_throttled = tctx->bw.nr_throttled;
	s.throttled_ns = tctx->bw.throttled_ns;
	s.max_wait_ns = tctx->max_wait_ns;
	bpf_seq_write(seq, &s, sizeof(s));
	return 0;
}

/*
 * Run by the daemon (BPF_PROG_RUN) before attaching: record its tgid as the
 * kernel sees it (init pid namespace), whatever namespace it runs in. The
 * daemon is never throttled.
 */
SEC("syscall")
int register_daemon(void *ctx)
{
	daemon_tgid = bpf_get_current_pid_tgid() >> 32;
	return 0;
}

#endif /* __FAIRQUOTA_STATS_BPF_H */
