/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_fairquota: FIFO for negative nice, weighted round-robin otherwise,
 * with a CFS-style quota/period bandwidth limit per task.
 *
 * Design
 * ------
 * Classes (queues.bpf.h). A task whose nice is below fifo_below_nice is in
 * the FIFO class, every other task in the RR class (SCHED_IDLE tasks too,
 * whatever their nice, at the kernel's weight for them, 1). The class is
 * derived from the nice value at every decision, so a renice moves the
 * task at its next enqueue or dispatch.
 *  - FIFO tasks run in arrival order before any RR task and keep their CPU
 *    until they block or yield (ops.dispatch() renews their slice). Only a
 *    FIFO task preempted while running resumes at the head of its queue;
 *    wakeups, forks and requeues (renice, affinity) join the tail. A
 *    queued FIFO task preempts an RR task on its CPU (or, if that CPU
 *    runs FIFO work, another RR CPU of its LLC), never a per-CPU kernel
 *    thread; with no FIFO work waiting, ops.enqueue() puts it straight
 *    on its CPU with SCX_ENQ_PREEMPT (no kick and dispatch round).
 *  - RR budget (budget.bpf.h, rr_budget_turn()): an RR task that wakes on a CPU
 *    running a FIFO task goes straight to that CPU with SCX_ENQ_PREEMPT while
 *    the CPU has RR budget left (RR_BUDGET_NS per RR_BUDGET_WINDOW_NS, 5%, as
 *    the kernel's fair server gives fair tasks behind RT work), so a sleeping
 *    lock shared by RR tasks does not move once per guard behind FIFO hogs; and
 *    at a tick of a FIFO task, an RR task queued in the LLC that may run there
 *    gets such a turn too (rr_budget_ask(), then rr_budget_pick() in
 *    ops.dispatch()), so RR tasks that stay runnable get the budget as well,
 *    not one slice per guard. Only FIFO work preempts such a turn, and the
 *    slice timer ends that of a CPU-bound task on time. The budget
 *    is per CPU, in its cpu_ctx, charged by that CPU alone: no shared write.
 *  - RR tasks carry a weighted virtual time: running costs
 *    runtime * 100 / p->scx.weight. They are queued by the virtual
 *    deadline of their next turn (vtime + slice * 100 / weight, as EEVDF
 *    picks), so the CPU splits by weight and a nice 0 task is not kept
 *    behind a nice 5 task's long virtual turn. Each CPU has a clock
 *    that follows the tasks it starts, or the task whose turn just ended
 *    if it is behind and still runnable (written by that CPU only). A
 *    task's vtime counts from the clock of the CPU it last ran on; queued
 *    from another CPU, it carries its lag, and its lead up to about a
 *    turn, over to that CPU's clock (carry_lag(), as EEVDF does on
 *    migration). A task
 *    queued from a CPU is kept within bounds of its clock: at most
 *    SLEEP_CREDIT_SLICES slices of credit for a sleep, a lag of
 *    RUNNABLE_LAG_SLICES slices if it stayed runnable (or waited
 *    throttled), a waking task at most one turn of its own ahead. CPUs
 *    whose tasks' vtimes move at different speeds (pinned tasks of
 *    different nice) so never push one another's tasks to a bound. The
 *    LLC's clock (the fastest) places new tasks (carried to their CPU's
 *    when first queued), and stands in for a CPU's once it idles. A turn is
 *    slice_ns (split mode: divided by the RR tasks waiting per CPU of the
 *    LLC, plus one), decided when the turn
 *    starts. A waking RR task preempts the running RR turn with the
 *    latest deadline later than its own, on its CPU or else in its LLC
 *    (a running turn's lag counts up to a sleeper's credit: a task that
 *    fell far behind the clock is not owed CPU against wakeups),
 *    but never its waker's after a sync wakeup (a pipe or socket write:
 *    the waker usually blocks next); SCHED_BATCH and SCHED_IDLE tasks
 *    never preempt on wakeup. Wakeups go to an idle CPU when
 *    there is one (the kernel's pick, without its sync shortcut, which
 *    queued the wakee behind a running waker while a CPU stayed idle).
 *    A wakeup to another CPU is queued to that CPU where the kernel would
 *    queue it for CFS (SCX_OPS_ALLOW_QUEUED_WAKEUP, set by the daemon
 *    where the kernel has it): ops.select_cpu() still picks the CPU on
 *    the waker's, and the wakee's CPU runs ops.enqueue() under its own rq
 *    lock, so a waker takes no other CPU's rq lock (on many LLCs that
 *    lock's line would move at every cross-CPU wakeup).
 *    A CPU going idle looks at its queues once more (ops.update_idle()),
 *    so no wakeup is lost to the moment between its last dispatch and its
 *    idle mark. A per-CPU BPF timer (slice.bpf.h) ends a slice that a tick
 *    would end more than 1 ms late, so slices are honored within 1 ms; it is
 *    started only for turns that may need it (arm_slice_timer(): a turn that
 *    blocks before a tick costs no timer, under a quota too unless its tokens
 *    cut it short and its task's last turn did not block (a limited turn
 *    after a block is left to its own block and the tick, as CFS leaves
 *    it; the overrun is charged); a turn of a task that ran its last turn out, or that
 *    follows such a turn on its CPU unless its task is wakeup-driven, is
 *    timed when others wait; a first CPU-bound turn after blocking early
 *    may run up to a tick past a slice shorter than a tick unless a
 *    timer is still running there, below). A limited task
 *    whose quotas are all at least half a tick is left to the tick where
 *    its tokens cut its turn; its RR slices are timed as an unlimited
 *    task's (tick_cuts_quota(), quota_at_tick). The callback that ends a
 *    turn re-arms the timer for the next (slice_timer_take()): a start
 *    from there is immediate, one from a sched_ext callback an irq_work.
 *    A timer whose turn ended early takes the untimed RR turn running
 *    when it fires, while others wait (slice_timer_follow()): one firing
 *    per slice at most, however many short turns run in between.
 *
 * Queue layout. Every LLC has four dispatch queues, DSQ id (llc << 2) |
 * kind: URGENT (FIFO order), FIFO (FIFO order), RR (deadline order) and
 * THROTTLED (release time order). A task is queued in the LLC of the CPU
 * it was assigned (the kernel's idle selection keeps wakeups within the
 * LLC). A CPU dispatches: its LLC's URGENT; a running FIFO task goes on;
 * FIFO of its LLC, then of any LLC (FIFO from anywhere before RR); RR of
 * its LLC, where the running RR task goes on while its deadline is earliest;
 * then other LLCs' URGENT and RR (stealing, from the next LLC on, so the
 * idle CPUs of many LLCs do not all take from the first one). A task
 * queued in an LLC that needs a CPU woken (pick_idle_near()) wakes an idle
 * CPU of that LLC if there is one, another LLC's only if not. Enqueue and
 * dispatch touch the LLC's queues only, except stealing when a CPU would
 * go idle. Busy LLCs balance by weight through their housekeeping
 * timers, as CFS balances load: an LLC's load is a moving average of the
 * weights of its running and queued RR tasks; an LLC less loaded per CPU
 * than the busiest pulls one task that may run on one of its CPUs (each
 * LLC keeps a cpumask of its CPUs) and is light enough that the move does
 * not reverse the imbalance (or leaves the puller at most half as loaded
 * per CPU as the source was: an LLC whose CPUs all run FIFO work has next
 * to no room, and its last RR task goes too); the task keeps its lag. The
 * timer reads its LLC's CPUs and at most 2 x WALK_TASKS queued tasks, and
 * one llc_ctx per other LLC: O(CPUs per LLC + LLCs) per run, no hot-path write. A running
 * RR task keeps its CPU while its deadline is the earliest of the queued
 * tasks that may run there, and its lag behind them is limited as a
 * requeued task's is (RUNNABLE_LAG_SLICES slices, rr_keep_prev()): a task
 * that never gives up its CPU is never requeued.
 *
 * Starvation guard (guard.bpf.h). Each LLC has a housekeeping timer that
 * runs every guard/4 (2..20 ms). It moves every RR task that has waited
 * guard_ns and whose turn is next in the RR order (its deadline within a
 * slice of the queue's head's, and of the RR turn's running on its CPU),
 * every other RR task that has waited 1 s (RR_GUARD_MAX_NS), and every
 * FIFO task that has waited FIFO_MAX_WAIT_NS (1 s; these two found
 * within AGE_FULL_NS more), to the URGENT queue,
 * which every CPU of the LLC serves first; a running task gives way at
 * its next tick unless the only urgent task may not run on its CPU, or it
 * is in the kernel at that tick, where it may hold a lock (then up to
 * KERNEL_DEFER_NS later, tick_cut()).
 * Behind FIFO work the guard so serves RR tasks in their weighted order,
 * and a light task waiting its fair turn on a crowded CPU is not put
 * first. The daemon's threads are queued there
 * directly (its stats must keep coming on a loaded host). A kernel
 * thread that wakes (the RCU grace-period kthread, workqueues) and a task
 * preempted inside an RCU read-side section go to its head: every RCU
 * grace period waits for them, and 21 s of waiting is an RCU stall, which
 * ejects the scheduler (behind the guard's backlog a grace period took
 * 5.6 s; 0.4 s so). A kernel thread keeps that place for a slice of CPU
 * time after it wakes, across preemptions, with a turn that only FIFO
 * work cuts short; one still queued in its class after that is made
 * urgent, at the head, once it has waited 50 ms (KTHREAD_MAX_WAIT_NS, or
 * guard_ns if shorter; the LLC notes when such a thread may be overdue,
 * and the guard's next run walks the whole queue for it, kwait_note()):
 * the kernel's work is not held a whole --guard-ms behind FIFO hogs (at
 * --guard-ms 1000 unbound kworkers and rcu_preempt waited 1.0 s, and
 * grace periods took 1.0-3.1 s). A task woken from a D sleep has the
 * same bound until it has run a slice of CPU time after it, across
 * preemptions: it may be the next owner of a kernel lock that others wait
 * for (kernel_wait()); a FIFO one that would wait behind queued FIFO or
 * urgent work goes to the urgent queue's head (dsleep_head(), at most 5
 * times per CPU per 100 ms), so such a lock passes from owner to owner at
 * ticks, not at 50 ms each; so does a FIFO task that a tick cut in the
 * kernel (tick_cut()), which may hold one. That bounds every
 * wait, whatever the number of tasks or FIFO hogs (see guard.bpf.h for
 * the bound).
 *
 * Bandwidth (bandwidth.bpf.h, bucket.h). An RR task (not a kernel thread,
 * not exiting, not the daemon) may use at most quota_ns per period_ns when
 * quota_ns != 0. Runtime is charged from ops.tick(), ops.dispatch() and
 * ops.stopping() into the task's bucket, always under the task's rq lock.
 * The clock is ours (bpf_ktime_get_ns()), from the kernel's switch to the
 * task (a tracepoint program, fairquota_switch()) to the switch away, not
 * the kernel's runtime clock, which misses whole turns under sched_ext
 * (fq_charge()); the end of a turn, from ops.stopping() to the switch, is
 * charged at stopping at its usual length and settled later
 * (fq_charge_stop()). Two task-storage lookups per context switch.
 * A turn's slice never exceeds the tokens left. The slice timer ends it
 * there when the quota (sub-quota in smooth mode) is shorter than half a
 * tick; a longer one the tick ends, at most a tick late, as CFS does, and
 * the overrun is paid from the next tokens (tick_cuts_quota(): a timer
 * per quota cost most of a 2 ms quota under emulation). Tokens a busy
 * bucket could not
 * use because its release or turn came late are kept for a few periods
 * (bucket.h: the carry, owed buckets). A task out of tokens is parked on
 * its LLC's THROTTLED queue, keyed by its release time; SCX_OPS_ENQ_LAST
 * parks even the last runnable task of a CPU. The LLC's timer releases
 * due tasks (it is armed for the earliest release through a
 * compare-and-swap, so no deadline is lost, and a deadline due within
 * TIMER_RACE_NS is moved rather than trusted: its callback may already be
 * past the queue a task is being parked on); the timer only reads the
 * buckets. Two rules keep a timer from being lost (timer_arm()): every
 * callback run starts its timer again, since a start from a sched_ext
 * callback is deferred by the kernel and may land late with an older
 * deadline; and a parker records the release it needs (timer_want())
 * before it looks at the armed deadline, so a callback that runs before
 * the task lands on the queue comes back for it. A timer that is lost
 * anyway (seen with hogs pinned one per CPU: every CPU of the LLC idle,
 * none ticking to re-arm it) is found by fq_llc_sweep(), run every 100 ms
 * from any CPU that ticks or starts a task. A changed limit (per task,
 * per group or its smoothing) starts its bucket afresh, as a cpu.max write
 * does under CFS (bw_restart(): a task's at its next refresh, a group's
 * when the change is seen, fq_cg_wake()), and the release walks let go
 * of the tasks the old limit parked (fq_own_limit_changed(),
 * cg_limits_changed()): O(parked tasks) once per change.
 * Cgroup limits (cgroups.bpf.h) reuse the same bucket and charge points:
 * every limited cgroup on a task's path has a shared bucket under its own
 * lock, and a task is throttled when its own quota
 * or any of them is used up. A task throttled by a cgroup waits on that
 * group's own DSQ (one per cgroup of the cpu controller, FIFO); the
 * group's timer releases its tasks oldest first, as many as its tokens
 * have turns for, at O(tasks released) per release (a group of a
 * thousand runnable tasks no longer wakes them all each period). A group
 * that leaves the cpu controller (ops.cgroup_exit()) hands its DSQ to
 * its timer, which lets any parked tasks go and then drops it (a lost
 * start is found by cg_sweep()).
 * A task is throttled where its turn ends (tick, slice timer, kick),
 * which may be inside a system call holding a sleeping lock: sched_ext
 * has no hook at the return to user space, where CFS throttles since
 * 6.18. The cost is bounded instead: a lock waiter waits as long as the
 * holder's throttle (about one sub-period in smooth mode; longer in a
 * group with more runnable tasks than its tokens have turns for), never
 * more than PARK_FORCE_MS, and exiting tasks and kernel threads are
 * never parked, nor a task inside an RCU read-side section (a preempted
 * reader holds up every RCU grace period): it runs on, at least
 * slice_min_ns a turn, until it has left the section. On a CPU that RT or
 * deadline work keeps busy, the kernel's ext server asks ops.dispatch()
 * for work and stops for good if it gets none while parked tasks still
 * count there: then a parked task runs anyway (serve_starved()). A
 * killed task (SIGKILL pending) is exempt like an exiting one, and the
 * signal_generate tracepoint (fairquota_signal()) has the timers that may
 * hold its parked threads let them go at once (note_killed()): a group
 * killed under a tight limit empties in milliseconds, not seconds.
 *
 * State (state.bpf.h). Task state is in task local storage (no pid keys:
 * exec from any thread and pid reuse cannot mix tasks; no entry limit).
 * Per-CPU context (an ARRAY indexed by CPU, written only by that CPU),
 * per-LLC context (RR clock for joins and timer, written by that LLC's
 * CPUs), each entry followed by a cache line never used, so no two CPUs
 * (or LLCs) write one line; a per-CPU counters array. The configuration
 * is a two-slot snapshot with a sequence number, read in place (a writer
 * waits for an RCU grace period before it refills a slot, live_config()).
 * Nothing is written by every CPU on the hot path, and no global lock is
 * taken.
 *
 * Tracing (trace.bpf.h). `scx_fairquota trace` sets a deadline in a map;
 * until then runs, stops, throttles, releases and guard moves are written
 * to a bounded ring buffer. Otherwise each trace point is an array lookup.
 *
 * Scaling. Per context switch: two array lookups for the config, a few
 * DSQ operations on the LLC's queues, a per-CPU timer start for RR turns
 * of CPU-bound tasks that others wait for; a limited task's turn start reads
 * the limit of each limited cgroup on its path (tick_cuts_quota()), its
 * ticks one per-CPU flag (quota_at_tick). When its own FIFO queue is
 * empty, dispatch reads every other LLC's work hint (FIFO from anywhere
 * before RR: O(LLCs) reads of one word per LLC, written only when a queue
 * turns non-empty or is found empty; queues.bpf.h), and for URGENT and RR
 * only when its own are empty too; it looks up only the queues hinted.
 * A wakeup that may preempt, with no CPU idle and its own CPU's turn not
 * preemptible, reads at most PREEMPT_SCAN_CPUS (16) cpu_ctx of its LLC
 * for a turn to preempt; a requeue reads none (queues.bpf.h).
 * The housekeeping timer looks at the
 * first WALK_TASKS (64) tasks of each class queue of its LLC at each run,
 * and walks them all once every AGE_FULL_NS (250 ms): O(queued tasks) per
 * LLC four times a second, however often releases run it, and about
 * once per KTHREAD_MAX_WAIT_NS more while kernel threads wait in the
 * class queues (one word per LLC, written when such a thread is queued
 * there, not on every enqueue); its balance
 * looks at most at the last WALK_TASKS of one other LLC's RR queue. A
 * limited cgroup costs a hash entry, a timer and a DSQ; its timer runs
 * when the group has parked tasks, at its releases. Once a second one
 * LLC timer looks at every limited cgroup for a lost release timer
 * (cg_sweep(): O(limited cgroups) a second), and once per `set --cgroup`
 * at every group with parked tasks, whose timer it runs at once
 * (cg_limits_changed(); a cpu.max write runs its own group's:
 * cg_limit_set(), O(1)), and every 100 ms one CPU
 * looks at every LLC's timer (fq_llc_sweep(): O(LLCs); the other calls
 * read one global word). Stats:
 * one task-iterator pass per interval (stats.bpf.h).
 *
 * Load time. The verifier follows every path of a static function at each
 * call; the big pieces that are called from many places or from a timer
 * callback are global functions (fq_*), checked once per program with
 * nothing known of their arguments: the bucket arithmetic, a cgroup's
 * charge and its limit, and the LLC timer's releases and guard walks. The
 * verifier processes about 174,000 instructions to load the scheduler
 * (1,060,000 before fq_guard_scan(), fq_release_due() and fq_cg_limit(),
 * 490,000 before a cgroup's bucket was charged outside its lock, 199,000
 * before fq_bw_spread_debt(), 126,000 before tick_cuts_quota(), 137,000
 * before a tick-cut task's RR slices were timed again, 146,000 after,
 * 171,700 before a changed limit restarted its buckets; 187,800 with
 * fq_own_limit_changed() inlined in the release walk; 8.6 s instead of
 * 38-44 s under TCG at 146,000; --verifier-stats shows them).
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#include <scx/common.bpf.h>
#include "intf.h"
/* bucket.h's debt spreading, checked once per program (bandwidth.bpf.h) */
__noinline int fq_bw_spread_debt(struct bw_bucket *b, const struct bw_limit *l);
#define BW_SPREAD_DEBT(b, l) fq_bw_spread_debt(b, l)
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
 * Test hook (hidden --test-init-fail): ops.init() fails as if it could not
 * create its per-LLC state, so the daemon's message can be tested.
 */
const volatile bool test_init_fail;

/*
 * Test hook (hidden --test-lose-cg-timers): a limited cgroup's release
 * timer does not re-arm, once every 3 s (cg_timerfn()), as if the timer
 * were lost; cg_sweep() must find it. And once every 3 s a park's start
 * of that timer is taken to have failed (cg_wait_release()): the
 * scheduler must go on. Every start made as a group's cgroup leaves the
 * cpu controller fails too (fairquota_cgroup_exit()): the sweep must
 * start it, or the group's parked tasks and its DSQ stay.
 */
const volatile bool test_lose_cg_timers;

/*
 * Test hook (hidden --test-lose-llc-timers): once every 2 s an LLC's
 * housekeeping timer fires but does nothing, not even re-arm, and leaves
 * a deadline SCAN_MAX_NS ahead that nothing is armed for (llc_timerfn()):
 * the state a lost timer was found in. fq_llc_sweep() must find it.
 */
const volatile bool test_lose_llc_timers;

#include "state.bpf.h"
#include "trace.bpf.h"
#include "cgroups.bpf.h"
#include "queues.bpf.h"
#include "budget.bpf.h"
#include "bandwidth.bpf.h"
#include "guard.bpf.h"
#include "stats.bpf.h"
#include "slice.bpf.h"

/* Renew the slice of @prev, which goes on running on this CPU. */
static void keep_running(struct task_struct *prev, struct task_ctx *pctx,
			 const struct fq_config *cfg, s32 cpu, u64 now)
{
	struct cpu_ctx *cctx = try_lookup_cpu_ctx(cpu);
	u32 llc = llc_of(cpu);
	u64 step = turn_cost(pctx, now), slice;
	bool cut;

	slice = task_slice(pctx, cfg, cpu, llc, &cut);
	/*
	 * No FIFO work waits for this CPU any more (ops.dispatch() found
	 * none): a turn on the RR budget ends here, charged so far, and the
	 * renewed one is a plain RR turn (wakeups may preempt it, the LLC's
	 * balance counts the CPU as room again).
	 */
	rr_budget_end(cctx, pctx->turn_start_ns, now);

	scx_bpf_task_set_slice(prev, slice);
	mark_turn_end(pctx, true, now);
	turn_begin(pctx, now, slice);
	pctx->to_tail = false;	/* a yield with nothing else to run is over */
	if (pctx->class == CLASS_RR) {
		/*
		 * The renewed turn starts where the one that ends got to
		 * (turn_begin()). The clocks move too, as far as the
		 * task's vtime moved in that turn: moved only at starts, it
		 * stayed where a task running on alone had started, and a
		 * task that joined later (forked, woken) was placed that far
		 * behind it (after 3 s alone, a hog got 3% of its CPU for
		 * seconds beside a newcomer).
		 */
		advance_clocks(llc, cctx, pctx->turn_vtime,
			       step > cfg->slice_ns ? step : cfg->slice_ns);
		/*
		 * Wakeups weigh their claim against the renewed turn's
		 * deadline. Left at the first turn's, a hog that ran on
		 * alone kept a deadline from long ago, and no waking task
		 * could preempt it: each waited for the hog's slice to end.
		 */
		if (cctx)
			set_curr_turn(cctx, pctx->turn_vtime, slice,
				      pctx->weight);
	}
	if (cctx) {
		/* A timer armed for the turn that ends is void. */
		cctx->turn++;
		arm_slice_timer(cctx, pctx, slice, cut, llc, cfg, now);
	}
}

/* Housekeeping of one LLC: release throttled tasks, age the queues. */
static int llc_timerfn(void *map, int *key, struct bpf_timer *timer)
{
	u32 llc = *key;
	struct llc_ctx *lctx = try_lookup_llc_ctx(llc);
	const struct fq_config *cfg;
	u64 now = bpf_ktime_get_ns(), next, rel, want;

	if (!lctx)
		return 0;
	if (!(cfg = live_config()))
		return 0;
	tick_learn(now);
	timer_fired(&lctx->next_timer_ns, now);
	if (test_lose(test_lose_llc_timers, &llc_test_lose_at_ns, now, 2)) {
		WRITE_ONCE(lctx->next_timer_ns, now + SCAN_MAX_NS);
		return 0;
	}
	want = timer_wanted(&lctx->want_ns, now);
	WRITE_ONCE(lctx->last_run_ns, now);
	fq_llc_sweep(now);
	WRITE_ONCE(lctx->timer_home,
		   llc_of(bpf_get_smp_processor_id()) == llc);
	cg_limits_changed(cfg, now);
	rel = fq_release_due(llc, cfg, now);
	cg_timers_setup();
	cg_sweep(now);
	fq_guard_scan(llc, cfg, now);
	if (nr_llcs > 1)
		pull_rr_work(llc, cfg);
	llc_hints_refresh(llc);
	/*
	 * Nothing queued or parked here: slow down, so that an idle LLC is
	 * not woken 50 times a second (see guard.bpf.h).
	 */
	next = now + (!rel && !want && llc_quiet(llc) ? SCAN_QUIET_NS :
		      scan_interval(cfg));
	if (rel && rel < next)
		next = rel;
	if (want && want < next)
		next = want;
	llc_timer_rearm(llc, next);
	return 0;
}

s32 BPF_STRUCT_OPS(fairquota_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	struct task_ctx *tctx = try_lookup_task_ctx(p);
	const struct fq_config *cfg;
	bool is_idle = false;
	u64 now;
	s32 cpu;

	/*
	 * Without SCX_WAKE_SYNC: with it, the kernel's pick puts the wakee
	 * on the waker's CPU whenever any CPU is idle, behind a waker that
	 * may run on, while the idle CPU stays idle.
	 */
	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags & ~SCX_WAKE_SYNC,
				     &is_idle);
	if (!tctx)
		return cpu;
	/* For ops.enqueue(), which the direct dispatch below skips. */
	tctx->sync_wake = !is_idle && (wake_flags & SCX_WAKE_SYNC);
	if (!is_idle)
		return cpu;

	/* Idle CPU: run @p there right away unless it is out of quota. */
	if (!(cfg = live_config()))
		return cpu;
	now = bpf_ktime_get_ns();
	if (fq_refresh_task(p, tctx, cfg, now))
		return cpu;
	set_task_llc(tctx, cpu, llc_of(cpu));
	rr_wake(tctx, cfg, cpu);
	/* A kernel thread's turn starts here too (kthread_turn()). */
	kthread_turn(p, tctx, cfg->slice_ns, true);
	tctx->enq_at_ns = now;
	tctx->fifo_head = tctx->to_tail = false;
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cfg->slice_ns, 0);
	return cpu;
}

void BPF_STRUCT_OPS(fairquota_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 cpu = scx_bpf_task_cpu(p);
	u32 llc = llc_of(cpu);
	u64 now = bpf_ktime_get_ns();
	struct claim cl = {};
	const struct fq_config *cfg;
	struct task_ctx *tctx;
	bool head, sync, reader, kturn;

	if (!(cfg = live_config()))
		return;

	/*
	 * Per-CPU kernel threads (ksoftirqd runs our timers under load) go
	 * first: forward progress of the whole system depends on them.
	 */
	if (is_pcpu_kthread(p)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cfg->slice_ns,
				   enq_flags | SCX_ENQ_PREEMPT);
		return;
	}

	tctx = try_lookup_task_ctx(p);
	if (!tctx) {
		scx_bpf_dsq_insert_vtime(p, dsq_id(DSQ_RR, llc), cfg->slice_ns,
					 0, enq_flags);
		llc_hint_set(llc, DSQ_RR);
		kick_idle_cpu(p, llc);
		return;
	}

	set_task_llc(tctx, cpu, llc);
	tctx->bturn = 0;
	tctx->woke = !!(enq_flags & SCX_ENQ_WAKEUP);
	if (tctx->woke)
		rr_wake(tctx, cfg, cpu);
	else
		rr_requeue(tctx, cfg, cpu);
	/*
	 * Only a FIFO task preempted while running (ops.stopping() set
	 * fifo_head; a yield clears it) resumes at the head. Both marks are
	 * consumed here, whatever happens to the task.
	 */
	head = tctx->fifo_head;
	tctx->fifo_head = tctx->to_tail = false;
	sync = tctx->sync_wake && (enq_flags & SCX_ENQ_WAKEUP);
	tctx->sync_wake = false;
	/*
	 * A wait starts when the task becomes runnable; a requeue while it
	 * waits (renice, affinity) does not restart its clock, so requeues
	 * cannot starve it.
	 */
	if (!tctx->enq_at_ns)
		tctx->enq_at_ns = now;
	reader = in_rcu_reader(p);
	if (fq_refresh_task(p, tctx, cfg, now) && !reader) {
		park(p, tctx, cfg, now, enq_flags);
		return;
	}

	/*
	 * The last runnable task of a CPU that was not parked goes on there.
	 * The kernel has already picked the idle task and expects a
	 * follow-up scheduling event from us, or the task would sit on the
	 * local queue of an idle CPU until the watchdog: kick the CPU once
	 * it is idle (the kick runs from irq_work after the switch).
	 */
	if (enq_flags & SCX_ENQ_LAST) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cfg->slice_ns, enq_flags);
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		stat_inc(CNT_ENQ_LAST);
		return;
	}

	/*
	 * The daemon is the operator's window into a loaded host: its
	 * threads go to the urgent queue, so its stats and `set` are served
	 * within a tick whatever runs (they use little CPU).
	 */
	if (daemon_tgid && p->tgid == daemon_tgid) {
		urgent_insert(p, llc, cfg->slice_ns, enq_flags);
		return;
	}

	/*
	 * The head of the urgent queue, so that it runs within a tick rather
	 * than after FIFO work and the guard's backlog (200 RR hogs behind
	 * two FIFO hogs: about a second per turn): a task preempted inside an
	 * RCU read-side section (in_rcu_reader(): every grace period waits
	 * for it), and a kernel thread that wakes (the kernel's own work: the
	 * RCU grace-period kthread, workqueues, the watchdog's). A kernel
	 * thread gets one turn so per wakeup, a slice of CPU time however
	 * often it is preempted (kthread_turn()), which only FIFO work
	 * preempts; if it stays runnable after, it waits as any task of its
	 * class.
	 */
	kturn = kthread_turn(p, tctx, cfg->slice_ns, enq_flags & SCX_ENQ_WAKEUP);
	if (reader || kturn) {
		urgent_insert(p, llc, cfg->slice_ns, enq_flags | SCX_ENQ_HEAD);
		stat_inc(reader ? CNT_RCU_BOOST : CNT_KTHREAD_BOOST);
		return;
	}

	/* A FIFO task woken from D or cut in the kernel goes first. */
	if (dsleep_head(p, tctx, cfg, llc, enq_flags, now))
		return;

	/* An RR wakeup behind FIFO work runs now, on the CPU's RR budget. */
	if (rr_budget_turn(p, tctx, cfg, enq_flags, now))
		return;

	if (tctx->class == CLASS_FIFO) {
		if (head)
			enq_flags |= SCX_ENQ_HEAD;
		else if (preempt_local(p, tctx, cfg, enq_flags, &cl))
			return;
		kwait_note(p, tctx, llc, tctx->enq_at_ns);
		scx_bpf_dsq_insert(p, dsq_id(DSQ_FIFO, llc), cfg->slice_ns,
				   enq_flags);
		llc_hint_set(llc, DSQ_FIFO);
		preempt_or_kick(p, tctx, enq_flags, &cl);
		return;
	}

	if (cfg->slice_mode == SLICE_SPLIT)
		rr_wait_begin(tctx, cpu);
	cl.key = rr_key(tctx, cfg);
	cl.credit = SLEEP_CREDIT_SLICES * cfg->slice_ns;
	cl.sync = sync;
	if (preempt_local(p, tctx, cfg, enq_flags, &cl))
		return;
	kwait_note(p, tctx, llc, tctx->enq_at_ns);
	scx_bpf_dsq_insert_vtime(p, dsq_id(DSQ_RR, llc), cfg->slice_ns, cl.key,
				 enq_flags);
	llc_hint_set(llc, DSQ_RR);
	preempt_or_kick(p, tctx, enq_flags, &cl);
}

void BPF_STRUCT_OPS(fairquota_dispatch, s32 cpu, struct task_struct *prev)
{
	u64 now = bpf_ktime_get_ns();
	struct task_ctx *pctx = NULL;
	u32 llc = llc_of(cpu);
	const struct fq_config *cfg;
	bool keep = false;

	if (!(cfg = live_config()))
		return;
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED))
		pctx = try_lookup_task_ctx(prev);
	if (pctx) {
		/* Charge @prev so far before judging its quota. */
		fq_charge(prev, pctx, cfg, now, true);
		keep = !fq_refresh_task(prev, pctx, cfg, now);
	}

	/* Work that waited past its bound goes before everything. */
	if (consume(DSQ_URGENT, llc))
		return;

	/* A tick asked for an RR turn on this CPU's budget. */
	if (rr_budget_pick(cpu, llc))
		return;

	/*
	 * A running FIFO task keeps its CPU unless it yielded; an RR task
	 * whose turn it still is (earliest deadline) goes on; else queued
	 * work comes first, and @prev goes on only if nothing else can run
	 * here. One call of keep_running(), not three: each inlined copy
	 * was verified again.
	 */
	if (!(keep && pctx->class == CLASS_FIFO && !pctx->to_tail)) {
		if (consume(DSQ_FIFO, llc) || consume_remote(DSQ_FIFO, llc))
			return;
		if (!(keep && pctx->class == CLASS_RR && !pctx->to_tail &&
		      rr_keep_prev(pctx, cpu, llc, now, cfg->slice_ns)) &&
		    (consume(DSQ_RR, llc) || steal(llc)))
			return;
	}
	if (keep)
		keep_running(prev, pctx, cfg, cpu, now);
	else
		serve_starved(prev, pctx, cfg, try_lookup_cpu_ctx(cpu), llc);
}

void BPF_STRUCT_OPS(fairquota_tick, struct task_struct *p)
{
	struct task_ctx *tctx = try_lookup_task_ctx(p);
	s32 cpu = scx_bpf_task_cpu(p);
	u32 llc = llc_of(cpu);
	u64 now = bpf_ktime_get_ns();
	struct cpu_ctx *cctx;
	const struct fq_config *cfg;

	if (!(cfg = live_config()))
		return;
	fq_llc_timer_keep(llc, cfg, now);
	fq_llc_sweep(now);
	if ((cctx = try_lookup_cpu_ctx(cpu)))
		cctx->tick_at = now;
	if (!tctx)
		return;
	fq_charge(p, tctx, cfg, now, false);

	if ((tctx->class == CLASS_RR || tctx->nr_cg) &&
	    fq_refresh_task(p, tctx, cfg, now) && !in_rcu_reader(p)) {
		scx_bpf_task_set_slice(p, 0);
		return;
	}
	/*
	 * Urgent work in this LLC: give way now (see guard.bpf.h), unless
	 * the task is in the kernel, where it may hold a lock (tick_cut()).
	 * Else an RR task may wait behind this FIFO turn: a turn on the
	 * budget, with the same deferral.
	 */
	tick_in_kernel(p, tctx);
	if (urgent_waiting(llc, cpu) &&
	    !kthread_turn(p, tctx, cfg->slice_ns, false)) {
		if (tick_cut(tctx, now)) {
			scx_bpf_task_set_slice(p, 0);
			return;
		}
	} else if (rr_budget_ask(p, tctx, cfg, cpu, llc, now)) {
		scx_bpf_task_set_slice(p, 0);
		return;
	}
	slice_timer_tick(p, tctx, cpu, llc, now);
}

/* Start the turn of @p (@tctx: its state) on its CPU (ops.running()). */
static __always_inline void start_turn(struct task_struct *p,
				       struct task_ctx *tctx)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct cpu_ctx *cctx = try_lookup_cpu_ctx(cpu);
	u64 now = bpf_ktime_get_ns(), slice, budget;
	u32 llc = llc_of(cpu);
	const struct fq_config *cfg;
	bool throttled, cut;

	/* Every CPU that starts a task may find a lost LLC timer. */
	fq_llc_sweep(now);
	if (!tctx)
		return;
	if (!(cfg = live_config()))
		return;
	/* Before the refresh: its groups as they were when it was released. */
	cg_release_done(tctx);
	throttled = fq_refresh_task(p, tctx, cfg, now);
	cg_pending_switch(tctx, cfg);
	unpark(p, tctx, cfg, now);
	set_task_llc(tctx, cpu, llc);
	/*
	 * Its turn moves this CPU's clock (advance_clocks()). Queued in the
	 * LLC's queue from another CPU, its vtime still counts from that
	 * CPU's clock. That clock is taken as this one's (the clocks of CPUs
	 * that take turns at an LLC's queue follow its tasks' vtimes and stay
	 * close; rebased at every start, tasks moved by each CPU's drift: 16
	 * nice 0 hogs on 8 CPUs got 42.5-56.3% each instead of 50%), unless
	 * the old CPU may no longer run the task: its affinity changed while
	 * it was queued there, and its vtime is carried over (carry_lag()).
	 * Renamed instead, a hog moved by taskset from a CPU whose clock a
	 * nice 10 hog ran far ahead kept that lead on the new CPU: 0.2% of it
	 * in one CI run of test_weight_split (33% in the others).
	 */
	if (tctx->clock_cpu >= 0 && tctx->clock_cpu != cpu &&
	    !bpf_cpumask_test_cpu(tctx->clock_cpu, p->cpus_ptr))
		carry_lag(tctx, cpu, cfg->slice_ns);
	else
		tctx->clock_cpu = cpu;
	tctx->fifo_head = false;
	tctx->woke = false;
	tctx->defer_at_ns = 0;
	tctx->kcut = 0;
	/* The wait the guard bounds (throttled time not included). */
	if (tctx->enq_at_ns && now > tctx->enq_at_ns &&
	    now - tctx->enq_at_ns > tctx->max_wait_ns)
		tctx->max_wait_ns = now - tctx->enq_at_ns;
	tctx->enq_at_ns = 0;
	rr_wait_end(tctx);

	/*
	 * A turn's slice is decided here, as it starts (the slices given when
	 * tasks are queued are placeholders): split mode divides by the tasks
	 * waiting now, and no RR slice exceeds what is left of the quota.
	 */
	slice = task_slice(tctx, cfg, cpu, llc, &cut);
	/* A turn on the RR budget: no longer than the budget left. */
	if (cctx && cctx->bud_ask == BUD_PICKED && tctx->class == CLASS_RR)
		tctx->bturn = 1;
	if (cctx) {
		cctx->bud_ask = 0;
		cctx->curr_bturn = tctx->bturn;
	}
	if (cctx && tctx->bturn) {
		budget = rr_budget_left(cctx, now);
		if (budget < RR_BUDGET_MIN_NS)
			budget = RR_BUDGET_MIN_NS;
		if (slice > budget)
			slice = budget;
	}
	tctx->bturn = 0;
	/*
	 * Queued before its cgroup ran out (hundreds of a group's tasks
	 * released at once, say): no turn on a spent quota. The slice
	 * timer, armed below with 0, ends the turn right after this
	 * callback, and the task is then parked. (A kick from inside this
	 * callback livelocked: a task in a migration-disabled section is
	 * put straight back on the CPU without ops.enqueue().)
	 */
	if (throttled)
		slice = cctx && cctx->serve_parked ? cfg->slice_min_ns : 0;
	if (cctx)
		cctx->serve_parked = 0;
	/* An RCU reader is parked only once it has left the section. */
	if (!slice && in_rcu_reader(p))
		slice = cfg->slice_min_ns;
	scx_bpf_task_set_slice(p, slice);
	turn_begin(tctx, now, slice);
	trace_task(TRACE_RUN, p, tctx, 0, now);

	if (tctx->class == CLASS_FIFO) {
		stat_inc(CNT_FIFO_DISPATCH);
	} else {
		stat_inc(CNT_RR_DISPATCH);
		advance_clocks(llc, cctx, clock_target(cctx, tctx->vtime),
			       cfg->slice_ns);
	}

	if (!cctx)
		return;
	cctx->turn++;
	cctx->curr_valid = true;
	cctx->curr_class = tctx->class;
	cctx->curr_weight = tctx->weight;
	/*
	 * Neither a per-CPU kernel thread nor a turn the guard granted is
	 * preempted by a queued task (the urgent queue itself takes turns at
	 * ticks).
	 */
	cctx->curr_preemptible = !is_pcpu_kthread(p) && !tctx->urgent;
	tctx->urgent = 0;
	set_curr_turn(cctx, tctx->vtime, slice, tctx->weight);
	/*
	 * A kernel thread's turn (kthread_turn()) has the earliest claim: a
	 * waking FIFO task preempts it (and it goes on from the urgent
	 * queue's head), a waking RR task does not.
	 */
	if (kthread_turn(p, tctx, cfg->slice_ns, false))
		cctx->curr_deadline = 0;

	arm_slice_timer(cctx, tctx, slice, cut, llc, cfg, now);
}

/*
 * @p starts running. Its runtime is charged from the end of this callback,
 * or from the kernel's switch to it if one follows (fairquota_switch()):
 * what comes before is the end of the last task's turn (fq_charge_stop()),
 * its own if it goes on without a switch.
 */
void BPF_STRUCT_OPS(fairquota_running, struct task_struct *p)
{
	struct task_ctx *tctx = try_lookup_task_ctx(p);
	u64 now;

	start_turn(p, tctx);
	if (!tctx)
		return;
	now = bpf_ktime_get_ns();
	tail_end(tctx, now);
	tctx->exec_at_ns = now;
}

void BPF_STRUCT_OPS(fairquota_stopping, struct task_struct *p, bool runnable)
{
	struct task_ctx *tctx = try_lookup_task_ctx(p);
	struct cpu_ctx *cctx = try_lookup_cpu_ctx(scx_bpf_task_cpu(p));
	const struct fq_config *cfg;
	u64 now;

	if (cctx)
		cctx->curr_valid = false;
	if (!tctx)
		return;
	if (!(cfg = live_config()))
		return;
	now = bpf_ktime_get_ns();
	rr_budget_end(cctx, tctx->turn_start_ns, now);
	fq_charge_stop(p, tctx, cfg, now, runnable);
	if (tctx->class == CLASS_RR) {
		tctx->turn_step = turn_cost(tctx, now);
		if (cctx)
			cctx->turn_step = tctx->turn_step;
	}
	/* What the next start's clocks may follow (clock_target()). */
	if (cctx)
		cctx->stop_vtime = runnable && tctx->class == CLASS_RR ?
				   tctx->vtime : 0;
	trace_task(TRACE_STOP, p, tctx, runnable, now);
	mark_turn_end(tctx, runnable, now);
	/*
	 * The CPU's mark (arm_slice_timer()): set by an RR turn that ran
	 * out, cleared by one that blocked or a FIFO turn, left as it was by
	 * a turn preempted early and by per-CPU kernel threads: a hog that a
	 * kworker preempted for 20 us at a tick resumed untimed and ran 4 ms
	 * of a 1.5 ms slice.
	 */
	if (cctx && !is_pcpu_kthread(p)) {
		if (tctx->ran_out && tctx->class == CLASS_RR)
			cctx->last_ran_out = true;
		else if (!runnable || tctx->class != CLASS_RR)
			cctx->last_ran_out = false;
	}
	dsleep_stop(p, tctx, cfg, runnable);
	/* A FIFO task preempted while running resumes at the head. */
	tctx->fifo_head = runnable && tctx->class == CLASS_FIFO &&
			  !tctx->to_tail;
}

bool BPF_STRUCT_OPS(fairquota_yield, struct task_struct *from,
		    struct task_struct *to)
{
	struct task_ctx *tctx = try_lookup_task_ctx(from);

	/* sched_yield(): give up the CPU and go to the tail. */
	if (tctx)
		tctx->to_tail = true;
	scx_bpf_task_set_slice(from, 0);
	return false;
}

s32 BPF_STRUCT_OPS(fairquota_init_task, struct task_struct *p,
		   struct scx_init_task_args *args)
{
	struct task_ctx *tctx;

	if (test_verifier_reject)
		return *(volatile s32 *)(u64)p->pid;

	tctx = bpf_task_storage_get(&task_ctx_stor, p, 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	tctx->weight = p->scx.weight;
	tctx->nice = task_nice(p);
	tctx->llc = llc_of(scx_bpf_task_cpu(p));
	tctx->rr_cpu = -1;
	tctx->clock_cpu = -1;
	tctx->vtime = llc_clock(tctx->llc);
	return 0;
}

/*
 * @cpu goes idle. Work may have been queued in its LLC after its last
 * dispatch found none, by a CPU that looked for an idle CPU to kick before
 * this one was marked idle (the kernel marks it after this callback): that
 * work would wait until something else woke this CPU. Look once more and
 * kick this CPU back into dispatch if the head of a queue can run here.
 */
void BPF_STRUCT_OPS(fairquota_update_idle, s32 cpu, bool idle)
{
	struct cpu_ctx *cctx;
	u32 llc, kind;

	if (!idle)
		return;
	/*
	 * Its RR clock goes stale while it idles: tasks queued from it go
	 * by the LLC's until it starts one (cpu_clock(), advance_clocks()).
	 */
	cctx = try_lookup_cpu_ctx(cpu);
	if (cctx)
		WRITE_ONCE(cctx->vclock, 0);
	cg_pending_idle();
	llc = llc_of(cpu);
	bpf_for(kind, 0, DSQ_THROTTLED) {
		struct task_struct *p;

		if (!scx_bpf_dsq_nr_queued(dsq_id(kind, llc)))
			continue;
		/* The head only, read without the queue's lock. */
		p = __COMPAT_scx_bpf_dsq_peek(dsq_id(kind, llc));
		if (p && bpf_cpumask_test_cpu(cpu, p->cpus_ptr)) {
			stat_inc(CNT_IDLE_KICK);
			scx_bpf_kick_cpu(cpu, 0);
			return;
		}
	}
}

/*
 * @p leaves our queues without running (it sleeps, exits or is requeued
 * for a property change): stop counting it as waiting. Its wait ends too
 * unless it is only requeued (then it goes on, see fairquota_enqueue()).
 */
void BPF_STRUCT_OPS(fairquota_dequeue, struct task_struct *p, u64 deq_flags)
{
	struct task_ctx *tctx = try_lookup_task_ctx(p);

	if (!tctx)
		return;
	rr_wait_end(tctx);
	cg_release_done(tctx);
	if (deq_flags & SCX_DEQ_SLEEP)
		tctx->enq_at_ns = 0;
}

/*
 * @p leaves our class (another policy, or the scheduler detaches): it runs
 * on no clock of ours until it comes back.
 */
void BPF_STRUCT_OPS(fairquota_disable, struct task_struct *p)
{
	struct task_ctx *tctx = try_lookup_task_ctx(p);

	if (!tctx)
		return;
	tctx->exec_at_ns = 0;
	tctx->stop_at_ns = 0;
}

/*
 * The kernel switches from @prev to @next (the sched_switch tracepoint,
 * after both callbacks): @prev's turn ends here, as in the kernel's own
 * sched_switch events, and @next's runtime counts from here.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(fairquota_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	u64 now = bpf_ktime_get_ns();
	struct task_ctx *tctx;

	if ((tctx = try_lookup_task_ctx(prev)))
		tail_end(tctx, now);
	if ((tctx = try_lookup_task_ctx(next)) && tctx->exec_at_ns)
		tctx->exec_at_ns = now;
	return 0;
}

/*
 * A signal was sent to @task: if it is fatal (SIGKILL now pending, which
 * the kernel sets on every thread of the process), its parked threads are
 * let go to die (note_killed()).
 */
SEC("tp_btf/signal_generate")
int BPF_PROG(fairquota_signal, int sig, struct kernel_siginfo *info,
	     struct task_struct *task, int group, int result)
{
	if (task && result == TRACE_SIGNAL_DELIVERED && task_killed(task))
		note_killed(task, bpf_ktime_get_ns());
	return 0;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(fairquota_init)
{
	u32 i, kind, nr_cpus = scx_bpf_nr_cpu_ids();
	struct llc_ctx *lctx;
	struct cpu_ctx *cctx;
	s32 ret;

	if (test_init_fail) {
		scx_bpf_error("cannot create the per-LLC queues (test hook)");
		return -ENOMEM;
	}
	if (nr_llcs > MAX_LLCS || nr_cpus > MAX_CPUS) {
		scx_bpf_error("topology too large: %u LLCs, %u CPU ids",
			      nr_llcs, nr_cpus);
		return -E2BIG;
	}

	bpf_for(i, 0, nr_llcs) {
		bpf_for(kind, 0, NR_DSQ_KINDS) {
			ret = scx_bpf_create_dsq(dsq_id(kind, i), -1);
			if (ret) {
				scx_bpf_error("cannot create DSQ %u of LLC %u: %d",
					      kind, i, ret);
				return ret;
			}
		}
		lctx = try_lookup_llc_ctx(i);
		if (!lctx)
			return -ENOENT;
		ret = llc_cpus_create(lctx);
		if (ret) {
			scx_bpf_error("cannot create the CPU mask of LLC %u: %d",
				      i, ret);
			return ret;
		}
		bpf_timer_init(&lctx->timer, &llc_ctxs, CLOCK_MONOTONIC);
		bpf_timer_set_callback(&lctx->timer, llc_timerfn);
		lctx->next_timer_ns = bpf_ktime_get_ns() + SCAN_MAX_NS;
		ret = bpf_timer_start(&lctx->timer, SCAN_MAX_NS, 0);
		if (ret) {
			scx_bpf_error("cannot start the timer of LLC %u: %d",
				      i, ret);
			return ret;
		}
	}

	tick_learn_start(bpf_ktime_get_ns());
	bpf_for(i, 0, nr_cpus) {
		cctx = try_lookup_cpu_ctx(i);
		if (!cctx)
			return -ENOENT;
		bpf_timer_init(&cctx->slice_timer, &cpu_ctxs, CLOCK_MONOTONIC);
		bpf_timer_set_callback(&cctx->slice_timer, slice_timerfn);
		llc_cpus_add(i);
	}
	return 0;
}

/* The kernel's cpu.max of each cgroup (see cgroups.bpf.h). */
s32 BPF_STRUCT_OPS_SLEEPABLE(fairquota_cgroup_init, struct cgroup *cgrp,
			     struct scx_cgroup_init_args *args)
{
	u64 id = BPF_CORE_READ(cgrp, kn, id);

	struct cg_state *st = bpf_map_lookup_elem(&cgroup_states, &id);

	/*
	 * Its throttled tasks' queue, should it ever be limited. Without one
	 * (no memory), they are parked on their LLCs instead. A group back
	 * in the controller before its timer dropped the old queue keeps
	 * that one (the create fails).
	 */
	scx_bpf_create_dsq(cg_dsq_id(id), -1);
	if (st)
		__sync_val_compare_and_swap(&st->timer_state, CG_TIMER_DYING,
					    CG_TIMER_READY);
	/* The bandwidth arguments exist from 6.17 (the daemon says so). */
	if (bpf_core_field_exists(args->bw_period_us))
		cg_kernel_set(cgrp, args->bw_period_us, args->bw_quota_us,
			      args->bw_burst_us);
	return 0;
}

/*
 * A write to @cgrp's cpu.max (or cpu.max.burst): its parked tasks are
 * looked at again now, so a limit lifted or loosened (`docker update`,
 * `systemctl set-property`) lets them go at once (cg_limit_set()).
 */
void BPF_STRUCT_OPS(fairquota_cgroup_set_bandwidth, struct cgroup *cgrp,
		    u64 period_us, u64 quota_us, u64 burst_us)
{
	cg_kernel_set(cgrp, period_us, quota_us, burst_us);
	cg_limit_set(BPF_CORE_READ(cgrp, kn, id), bpf_ktime_get_ns());
}

/*
 * @cgrp leaves the cpu controller: it was removed (no task is left in it),
 * or the controller was turned off above it, in which case its tasks stay
 * and some may be parked on its DSQ, or being parked there. A group whose
 * release timer is set up (the only way onto its DSQ) hands the DSQ to the
 * timer, which lets those tasks go (its cpu.max no longer applies) and
 * drops it (cg_drop()) after CG_DYING_GRACE_NS; destroying a DSQ with
 * tasks on it is an error that ejects the scheduler. A start of the timer
 * that fails (interrupts are on here, so it is not deferred and should
 * not fail; the hook test_lose_cg_timers fails every one) is counted and
 * left to cg_sweep(), which starts it within about a second, parked tasks
 * or not.
 */
void BPF_STRUCT_OPS(fairquota_cgroup_exit, struct cgroup *cgrp)
{
	u64 id = BPF_CORE_READ(cgrp, kn, id);
	struct cg_state *st;

	cg_kernel_set(cgrp, 0, (u64)-1, 0);
	st = bpf_map_lookup_elem(&cgroup_states, &id);
	if (st)
		/* Set first: the timer reads it once the state is DYING. */
		WRITE_ONCE(st->dying_ns, bpf_ktime_get_ns());
	if (st && __sync_val_compare_and_swap(&st->timer_state, CG_TIMER_READY,
					      CG_TIMER_DYING) ==
			  CG_TIMER_READY) {
		if (test_lose_cg_timers ||
		    !fq_cg_timer_arm(id, st->dying_ns, false))
			stat_inc(CNT_TIMER_FAIL);
		return;
	}
	cg_drop(id);
}

void BPF_STRUCT_OPS(fairquota_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(fairquota_ops,
	       .select_cpu	= (void *)fairquota_select_cpu,
	       .enqueue		= (void *)fairquota_enqueue,
	       .dequeue		= (void *)fairquota_dequeue,
	       .update_idle	= (void *)fairquota_update_idle,
	       .dispatch	= (void *)fairquota_dispatch,
	       .tick		= (void *)fairquota_tick,
	       .running		= (void *)fairquota_running,
	       .stopping	= (void *)fairquota_stopping,
	       .yield		= (void *)fairquota_yield,
	       .init_task	= (void *)fairquota_init_task,
	       .disable		= (void *)fairquota_disable,
	       .cgroup_init	= (void *)fairquota_cgroup_init,
	       .cgroup_exit	= (void *)fairquota_cgroup_exit,
	       .cgroup_set_bandwidth = (void *)fairquota_cgroup_set_bandwidth,
	       .init		= (void *)fairquota_init,
	       .exit		= (void *)fairquota_exit,
	       .flags		= SCX_OPS_ENQ_LAST | SCX_OPS_KEEP_BUILTIN_IDLE,
	       .timeout_ms	= WATCHDOG_TIMEOUT_MS,
	       .name		= "fairquota");
