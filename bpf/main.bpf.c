/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_fairquota: FIFO for negative nice, weighted round-robin otherwise,
 * with a CFS-style quota/period bandwidth limit per task.
 *
 * Design
 * ------
 * Classes. A task whose nice is below fifo_below_nice is in the FIFO class;
 * every other task is in the RR class. The class is derived from the nice
 * value at every decision, so a renice moves the task at its next enqueue.
 *
 *  - FIFO tasks queue in arrival order on FIFO_DSQ and always run before RR
 *    tasks. A running FIFO task keeps its CPU until it blocks or yields:
 *    ops.dispatch() refills its slice when it expires. A waking FIFO task
 *    preempts an RR task on its CPU.
 *  - RR tasks queue on RR_DSQ ordered by weighted virtual time: a task's
 *    vtime advances by runtime * 100 / p->scx.weight, so tasks of equal
 *    weight take strict turns of one slice and the CPU splits by weight.
 *    The slice is slice_ns, or in SLICE_SPLIT mode
 *    slice_ns / (nr_waiting + 1) bounded below by slice_min_ns. A turn's
 *    slice is decided when it starts (ops.running(), or ops.dispatch()
 *    when the running task goes on).
 *
 * Starvation guard. While an RR task waits on RR_DSQ, ops.tick() of a FIFO
 * task measures how long RR work has been locked out of that CPU; after
 * guard_ns it preempts the FIFO task once, ops.dispatch() runs one RR task
 * and the FIFO task resumes at the head of FIFO_DSQ. FIFO tasks waiting
 * behind a FIFO hog for FIFO_MAX_WAIT_NS rotate it to the tail. No runnable
 * task therefore waits anywhere near the kernel watchdog timeout.
 *
 * Bandwidth. An RR task (not a kernel thread, not the daemon) may use at
 * most quota_ns of CPU per period_ns when quota_ns != 0. Runtime is charged
 * from ops.tick() and ops.stopping() into the task's bw_bucket (bucket.h).
 * A task's slice never exceeds its remaining tokens; the tick ends it
 * (late by up to one tick, charged as debt). A task out of tokens is parked
 * on THROTTLED_DSQ ordered by its release time, and SCX_OPS_ENQ_LAST makes
 * sure that even the last runnable task on a CPU is parked rather than kept
 * running. A BPF timer moves released tasks back to their class queue and
 * kicks an idle CPU; it re-arms at the earliest release and at least every
 * HEARTBEAT_NS.
 *
 * State. Configuration: the "tunables" array map (written live by the
 * daemon). Per task: the task_ctxs hash map keyed by pid, which the daemon
 * also reads for statistics. Per CPU: cpu_ctxs. Counters: the per-CPU
 * "counters" map.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#include <scx/common.bpf.h>
#include "intf.h"
#include "bucket.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/*
 * Test hook (hidden --test-verifier-reject): when set before load, the
 * verifier sees an invalid memory access in fairquota_init_task() and
 * rejects the program, so the daemon's rejection message can be tested.
 * When clear, the code is dead and removed before verification.
 */
const volatile bool test_verifier_reject;

/*
 * Live configuration, one entry. Defaults are overwritten by the daemon
 * before the scheduler is attached.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct fq_config);
} tunables SEC(".maps");

/* Per-task context, keyed by pid; read by the daemon for statistics. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TASKS);
	__type(key, s32);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

/* Per-CPU context. */
struct cpu_ctx {
	u64 rr_locked_out_since; /* RR work waiting while FIFO runs here */
	u32 curr_class;		 /* class of the running task */
	u8 curr_valid;		 /* an SCX task is running here */
	u8 guard_pending;	 /* next dispatch must run an RR task */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct cpu_ctx);
} cpu_ctxs SEC(".maps");

/* Event counters, summed over CPUs by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct counters);
} counters SEC(".maps");

/* The release timer for throttled tasks. */
struct release_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct release_timer);
} release_timer SEC(".maps");

/* Earliest time the release timer is armed for. */
static u64 next_release_ns;

/* Largest vtime of a task that started running (RR idle-credit floor). */
static u64 vtime_now;

static const struct fq_config *get_config(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&tunables, &zero);
}

static struct task_ctx *try_lookup_task_ctx(const struct task_struct *p)
{
	s32 pid = p->pid;

	return bpf_map_lookup_elem(&task_ctxs, &pid);
}

static struct cpu_ctx *try_lookup_cpu_ctx(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_ctxs, &zero);
}

static void stat_inc(u32 idx)
{
	struct counters *c;
	u32 zero = 0;

	c = bpf_map_lookup_elem(&counters, &zero);
	if (c && idx < NR_COUNTERS)
		c->cnt[idx]++;
}

static s32 task_nice(const struct task_struct *p)
{
	return p->static_prio - 120;
}

/* Return the class of @p under the configuration @cfg. */
static u32 task_class(const struct task_struct *p, const struct fq_config *cfg)
{
	return task_nice(p) < cfg->fifo_below_nice ? CLASS_FIFO : CLASS_RR;
}

/* Return true if @p is a kernel thread bound to one CPU. */
static bool is_pcpu_kthread(const struct task_struct *p)
{
	return (p->flags & PF_KTHREAD) && p->nr_cpus_allowed == 1;
}

/* Return true if the quota applies to @p right now. */
static bool is_limited(const struct task_struct *p, const struct fq_config *cfg)
{
	return cfg->quota_ns && task_class(p, cfg) == CLASS_RR &&
	       !(p->flags & PF_KTHREAD) && p->tgid != cfg->daemon_tgid;
}

/*
 * Refresh the cached class, nice, weight and quota applicability of @p and
 * bring its bucket up to date. Return true if @p is throttled.
 */
static bool refresh_task(const struct task_struct *p, struct task_ctx *tctx,
			 const struct fq_config *cfg, u64 now)
{
	tctx->class = task_class(p, cfg);
	tctx->nice = task_nice(p);
	tctx->weight = p->scx.weight;
	tctx->limited = is_limited(p, cfg);
	if (!tctx->limited)
		return false;
	bw_refill(&tctx->bw, now, cfg->quota_ns, cfg->period_ns);
	return bw_throttled(&tctx->bw);
}

/* RR slice of @p: fixed or split, never more than its remaining quota. */
static u64 rr_slice(const struct task_ctx *tctx, const struct fq_config *cfg)
{
	u64 slice = cfg->slice_ns;

	if (cfg->slice_mode == SLICE_SPLIT) {
		slice /= scx_bpf_dsq_nr_queued(RR_DSQ) + 1;
		if (slice < cfg->slice_min_ns)
			slice = cfg->slice_min_ns;
	}
	if (tctx && tctx->limited && tctx->bw.tokens_ns > 0 &&
	    (u64)tctx->bw.tokens_ns < slice)
		slice = tctx->bw.tokens_ns;
	return slice;
}

/*
 * FIFO tasks keep their CPU until they block or yield; their slice is only a
 * refresh interval that lets ops.tick() run the starvation guard.
 */
static u64 fifo_slice(const struct fq_config *cfg)
{
	return cfg->guard_ns;
}

static u64 task_slice(const struct task_ctx *tctx, const struct fq_config *cfg)
{
	if (tctx && tctx->class == CLASS_FIFO)
		return fifo_slice(cfg);
	return rr_slice(tctx, cfg);
}

/*
 * Charge the CPU time the running task @p used since its last charge: total
 * runtime, RR vtime and, if limited, its bandwidth bucket. CPU time is the
 * kernel's own p->se.sum_exec_runtime (IRQ time excluded), the same clock as
 * /proc/PID/schedstat and cgroup cpu.stat; the kernel brings it up to date
 * before ops.tick() and ops.stopping().
 */
static void charge(const struct task_struct *p, struct task_ctx *tctx,
		   const struct fq_config *cfg, u64 now)
{
	u64 exec = p->se.sum_exec_runtime;
	u64 delta = exec > tctx->last_exec_ns ? exec - tctx->last_exec_ns : 0;

	if (!delta)
		return;
	tctx->last_exec_ns = exec;
	tctx->runtime_ns += delta;
	if (tctx->class == CLASS_RR)
		tctx->vtime += delta * 100 / (p->scx.weight ?: 1);
	if (tctx->limited && cfg->quota_ns &&
	    bw_charge_span(&tctx->bw, now - delta, now, cfg->quota_ns,
			   cfg->period_ns))
		stat_inc(CNT_THROTTLE);
}

/* RR vtime of @tctx, with idle credit limited to one slice. */
static u64 rr_vtime(const struct task_ctx *tctx, const struct fq_config *cfg)
{
	u64 floor = vtime_now > cfg->slice_ns ? vtime_now - cfg->slice_ns : 0;

	return tctx->vtime < floor ? floor : tctx->vtime;
}

/* Wake an idle CPU that @p may run on, so a shared queue gets served. */
static void kick_idle_cpu(const struct task_struct *p)
{
	s32 cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);

	if (cpu >= 0)
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

/* Arm the release timer for @when if that is earlier than planned. */
static void arm_release_timer(u64 when)
{
	struct release_timer *rt;
	u32 zero = 0;

	if (next_release_ns && when >= next_release_ns)
		return;
	rt = bpf_map_lookup_elem(&release_timer, &zero);
	if (!rt)
		return;
	next_release_ns = when;
	bpf_timer_start(&rt->timer, when, BPF_F_TIMER_ABS);
}

/* Park the throttled task @p until its bucket has tokens again. */
static void park(struct task_struct *p, struct task_ctx *tctx,
		 const struct fq_config *cfg, u64 now, u64 enq_flags)
{
	u64 release = bw_release_at(&tctx->bw, cfg->quota_ns, cfg->period_ns);

	bw_park(&tctx->bw, now);
	scx_bpf_dsq_insert_vtime(p, THROTTLED_DSQ, cfg->slice_ns, release,
				 enq_flags);
	arm_release_timer(release);
}

/*
 * Release timer: move every throttled task whose release time has come (or
 * all of them if the quota was lifted) back to its class queue, then re-arm
 * for the next release or the heartbeat.
 */
static int release_timerfn(void *map, int *key, struct bpf_timer *timer)
{
	const struct fq_config *cfg = get_config();
	u64 now = bpf_ktime_get_ns();
	u64 next = now + HEARTBEAT_NS;
	struct task_struct *p;

	if (!cfg)
		return 0;

	bpf_for_each(scx_dsq, p, THROTTLED_DSQ, 0) {
		struct task_ctx *tctx = try_lookup_task_ctx(p);
		bool throttled = false;

		if (tctx)
			throttled = refresh_task(p, tctx, cfg, now);
		if (throttled) {
			u64 at = bw_release_at(&tctx->bw, cfg->quota_ns,
					       cfg->period_ns);
			if (at < next)
				next = at;
			/* The queue is ordered by release time. */
			if (at > now)
				break;
			continue;
		}
		if (tctx)
			bw_unpark(&tctx->bw, now);
		if (tctx && tctx->class == CLASS_FIFO) {
			scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, FIFO_DSQ, 0);
		} else {
			if (tctx)
				scx_bpf_dsq_move_set_vtime(BPF_FOR_EACH_ITER,
							   rr_vtime(tctx, cfg));
			scx_bpf_dsq_move_vtime(BPF_FOR_EACH_ITER, p, RR_DSQ, 0);
		}
		kick_idle_cpu(p);
	}

	next_release_ns = next;
	bpf_timer_start(timer, next, BPF_F_TIMER_ABS);
	return 0;
}

/*
 * Starvation guard, run from ops.tick() of the FIFO task @p: let one RR
 * task in after guard_ns of RR lock-out on this CPU, and rotate @p behind a
 * FIFO task that has waited FIFO_MAX_WAIT_NS.
 */
static void fifo_guard(struct task_struct *p, struct task_ctx *tctx,
		       const struct fq_config *cfg, u64 now)
{
	struct cpu_ctx *cctx = try_lookup_cpu_ctx();
	struct task_struct *head;

	if (!cctx)
		return;

	if (scx_bpf_dsq_nr_queued(RR_DSQ) > 0) {
		if (!cctx->rr_locked_out_since) {
			cctx->rr_locked_out_since = now;
		} else if (now - cctx->rr_locked_out_since >= cfg->guard_ns) {
			cctx->rr_locked_out_since = now;
			cctx->guard_pending = true;
			scx_bpf_task_set_slice(p, 0);
			stat_inc(CNT_GUARD);
			return;
		}
	} else {
		cctx->rr_locked_out_since = 0;
	}

	bpf_for_each(scx_dsq, head, FIFO_DSQ, 0) {
		struct task_ctx *hctx = try_lookup_task_ctx(head);

		if (hctx && now - hctx->enq_at_ns >= FIFO_MAX_WAIT_NS) {
			tctx->fifo_to_tail = true;
			scx_bpf_task_set_slice(p, 0);
			stat_inc(CNT_FIFO_ROTATE);
		}
		break;
	}
}

/* Return true if @prev may keep its CPU for another RR slice. */
static bool rr_keep_prev(struct task_struct *prev, struct task_ctx *pctx)
{
	struct task_struct *head;

	bpf_for_each(scx_dsq, head, RR_DSQ, 0) {
		struct task_ctx *hctx = try_lookup_task_ctx(head);

		return !hctx || pctx->vtime <= hctx->vtime;
	}
	return true;
}

s32 BPF_STRUCT_OPS(fairquota_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	const struct fq_config *cfg = get_config();
	struct task_ctx *tctx = try_lookup_task_ctx(p);
	bool is_idle = false;
	s32 cpu;

	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (!is_idle || !cfg || !tctx)
		return cpu;

	/* Idle CPU: run @p there right away unless it is out of quota. */
	if (!refresh_task(p, tctx, cfg, bpf_ktime_get_ns()))
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cfg->slice_ns, 0);
	return cpu;
}

void BPF_STRUCT_OPS(fairquota_enqueue, struct task_struct *p, u64 enq_flags)
{
	const struct fq_config *cfg = get_config();
	struct task_ctx *tctx;
	struct cpu_ctx *cctx;
	u64 now = bpf_ktime_get_ns();
	s32 cpu;

	if (!cfg)
		return;

	/*
	 * Per-CPU kernel threads (ksoftirqd runs our timer under load) go
	 * first: forward progress of the whole system depends on them.
	 */
	if (is_pcpu_kthread(p)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cfg->slice_ns,
				   enq_flags | SCX_ENQ_PREEMPT);
		return;
	}

	tctx = try_lookup_task_ctx(p);
	if (!tctx) {
		scx_bpf_dsq_insert_vtime(p, RR_DSQ, cfg->slice_ns, vtime_now,
					 enq_flags);
		return;
	}

	tctx->enq_at_ns = now;
	if (refresh_task(p, tctx, cfg, now)) {
		park(p, tctx, cfg, now, enq_flags);
		return;
	}

	/* The last runnable task of a CPU that was not parked keeps it. */
	if (enq_flags & SCX_ENQ_LAST) {
		tctx->fifo_to_tail = false;
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cfg->slice_ns, enq_flags);
		return;
	}

	if (tctx->class == CLASS_FIFO) {
		/*
		 * A FIFO task that was preempted (by the guard, a kernel
		 * thread or a slice refresh) resumes first; one that woke up,
		 * yielded or was rotated joins the tail.
		 */
		if (!(enq_flags & SCX_ENQ_WAKEUP) && !tctx->fifo_to_tail)
			enq_flags |= SCX_ENQ_HEAD;
		tctx->fifo_to_tail = false;
		scx_bpf_dsq_insert(p, FIFO_DSQ, cfg->slice_ns, enq_flags);

		/* FIFO before RR: preempt an RR task on its CPU. */
		cpu = scx_bpf_task_cpu(p);
		cctx = bpf_map_lookup_percpu_elem(&cpu_ctxs, &(u32){0}, cpu);
		if (cctx && cctx->curr_valid && cctx->curr_class == CLASS_RR)
			scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		else
			kick_idle_cpu(p);
		return;
	}

	scx_bpf_dsq_insert_vtime(p, RR_DSQ, cfg->slice_ns, rr_vtime(tctx, cfg),
				 enq_flags);
	kick_idle_cpu(p);
}

void BPF_STRUCT_OPS(fairquota_dispatch, s32 cpu, struct task_struct *prev)
{
	const struct fq_config *cfg = get_config();
	struct cpu_ctx *cctx = try_lookup_cpu_ctx();
	struct task_ctx *pctx = NULL;
	bool keep = false;

	if (!cfg)
		return;

	/* The starvation guard owes this CPU's RR tasks one turn. */
	if (cctx && cctx->guard_pending) {
		cctx->guard_pending = false;
		if (scx_bpf_dsq_move_to_local(RR_DSQ, 0))
			return;
	}

	if (prev && (prev->scx.flags & SCX_TASK_QUEUED))
		pctx = try_lookup_task_ctx(prev);
	if (pctx) {
		u64 now = bpf_ktime_get_ns();

		/* Charge @prev so far before judging its quota. */
		charge(prev, pctx, cfg, now);
		keep = !refresh_task(prev, pctx, cfg, now);
	}

	/* A running FIFO task keeps its CPU unless it yielded or rotated. */
	if (keep && pctx->class == CLASS_FIFO && !pctx->fifo_to_tail) {
		scx_bpf_task_set_slice(prev, task_slice(pctx, cfg));
		return;
	}

	if (scx_bpf_dsq_move_to_local(FIFO_DSQ, 0))
		return;

	/* An RR task whose turn it still is (lowest vtime) goes on. */
	if (keep && pctx->class == CLASS_RR && rr_keep_prev(prev, pctx)) {
		scx_bpf_task_set_slice(prev, task_slice(pctx, cfg));
		return;
	}

	if (scx_bpf_dsq_move_to_local(RR_DSQ, 0))
		return;

	/* Nothing else can run here: @prev goes on if it may. */
	if (keep)
		scx_bpf_task_set_slice(prev, task_slice(pctx, cfg));
}

void BPF_STRUCT_OPS(fairquota_tick, struct task_struct *p)
{
	const struct fq_config *cfg = get_config();
	struct task_ctx *tctx = try_lookup_task_ctx(p);
	u64 now = bpf_ktime_get_ns();

	if (!cfg || !tctx)
		return;

	charge(p, tctx, cfg, now);
	if (tctx->class == CLASS_FIFO)
		fifo_guard(p, tctx, cfg, now);
	else if (refresh_task(p, tctx, cfg, now))
		scx_bpf_task_set_slice(p, 0);
}

void BPF_STRUCT_OPS(fairquota_running, struct task_struct *p)
{
	const struct fq_config *cfg = get_config();
	struct task_ctx *tctx = try_lookup_task_ctx(p);
	struct cpu_ctx *cctx = try_lookup_cpu_ctx();
	u64 now = bpf_ktime_get_ns();

	if (!cfg || !tctx)
		return;

	refresh_task(p, tctx, cfg, now);
	tctx->last_exec_ns = p->se.sum_exec_runtime;
	if (cctx) {
		cctx->curr_valid = true;
		cctx->curr_class = tctx->class;
		if (tctx->class == CLASS_RR)
			cctx->rr_locked_out_since = 0;
	}

	if (tctx->class == CLASS_FIFO) {
		stat_inc(CNT_FIFO_DISPATCH);
	} else {
		stat_inc(CNT_RR_DISPATCH);
		if (tctx->vtime > vtime_now)
			vtime_now = tctx->vtime;
	}
	/*
	 * A turn's slice is decided here, as it starts (the slices given when
	 * tasks are queued are placeholders): split mode divides by the tasks
	 * waiting now, and no RR slice exceeds what is left of the quota.
	 */
	scx_bpf_task_set_slice(p, task_slice(tctx, cfg));
}

void BPF_STRUCT_OPS(fairquota_stopping, struct task_struct *p, bool runnable)
{
	const struct fq_config *cfg = get_config();
	struct task_ctx *tctx = try_lookup_task_ctx(p);
	struct cpu_ctx *cctx = try_lookup_cpu_ctx();

	if (cctx)
		cctx->curr_valid = false;
	if (cfg && tctx)
		charge(p, tctx, cfg, bpf_ktime_get_ns());
}

bool BPF_STRUCT_OPS(fairquota_yield, struct task_struct *from,
		    struct task_struct *to)
{
	struct task_ctx *tctx = try_lookup_task_ctx(from);

	/* sched_yield(): give up the CPU and, for FIFO, go to the tail. */
	if (tctx)
		tctx->fifo_to_tail = true;
	scx_bpf_task_set_slice(from, 0);
	return false;
}

s32 BPF_STRUCT_OPS(fairquota_init_task, struct task_struct *p,
		   struct scx_init_task_args *args)
{
	struct task_ctx tctx = {
		.tgid = p->tgid,
		.weight = p->scx.weight,
		.nice = task_nice(p),
		.vtime = vtime_now,
	};
	s32 pid = p->pid;

	if (test_verifier_reject)
		return *(volatile s32 *)(u64)pid;

	/* A full map only costs this task its statistics and its quota. */
	if (bpf_map_update_elem(&task_ctxs, &pid, &tctx, BPF_ANY))
		stat_inc(CNT_UNTRACKED);
	return 0;
}

void BPF_STRUCT_OPS(fairquota_exit_task, struct task_struct *p,
		    struct scx_exit_task_args *args)
{
	s32 pid = p->pid;

	bpf_map_delete_elem(&task_ctxs, &pid);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(fairquota_init)
{
	struct release_timer *rt;
	u32 zero = 0;
	s32 ret;

	ret = scx_bpf_create_dsq(FIFO_DSQ, -1);
	if (ret)
		return ret;
	ret = scx_bpf_create_dsq(RR_DSQ, -1);
	if (ret)
		return ret;
	ret = scx_bpf_create_dsq(THROTTLED_DSQ, -1);
	if (ret)
		return ret;

	rt = bpf_map_lookup_elem(&release_timer, &zero);
	if (!rt)
		return -ESRCH;
	bpf_timer_init(&rt->timer, &release_timer, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&rt->timer, release_timerfn);
	return bpf_timer_start(&rt->timer, HEARTBEAT_NS, 0);
}

void BPF_STRUCT_OPS(fairquota_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(fairquota_ops,
	       .select_cpu	= (void *)fairquota_select_cpu,
	       .enqueue		= (void *)fairquota_enqueue,
	       .dispatch	= (void *)fairquota_dispatch,
	       .tick		= (void *)fairquota_tick,
	       .running		= (void *)fairquota_running,
	       .stopping	= (void *)fairquota_stopping,
	       .yield		= (void *)fairquota_yield,
	       .init_task	= (void *)fairquota_init_task,
	       .exit_task	= (void *)fairquota_exit_task,
	       .init		= (void *)fairquota_init,
	       .exit		= (void *)fairquota_exit,
	       .flags		= SCX_OPS_ENQ_LAST,
	       .timeout_ms	= WATCHDOG_TIMEOUT_MS,
	       .name		= "fairquota");
