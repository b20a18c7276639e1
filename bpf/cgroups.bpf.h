/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Cgroup limits: quota per period for a whole cgroup and its descendants,
 * across all CPUs, like cgroup v2 cpu.max. Included by main.bpf.c only.
 *
 * The daemon writes each limited cgroup's quota/period into cgroup_limits
 * (key: the cgroup id) and bumps fq_config.cg_gen; the kernel's cpu.max
 * arrives through the cgroup ops into cgroup_kernel_limits. A task caches
 * the ids of the limited cgroups on its path (innermost first, at most
 * MAX_TASK_CGROUPS), found by walking its cgroup's ancestors once per
 * cg_gen or when it moves to another cgroup. Each limited cgroup has one
 * shared bucket (bucket.h) in cgroup_states, guarded by the group's own
 * bpf_spin_lock and charged from the charge points of bandwidth.bpf.h (the
 * arithmetic on a copy outside the lock, committed under it unless another
 * CPU committed first: fq_cg_charge_one()): a task is
 * throttled when its own quota or any limited cgroup on its path is used
 * up (the hierarchy of sched-bwc.rst). It is parked on the DSQ of the
 * group that throttles it longest (cg_dsq_id(), FIFO), and that group's
 * timer releases it (bandwidth.bpf.h); a group without a DSQ (outside the
 * cpu controller) parks on the LLC's THROTTLED queue like a task out of
 * its own quota.
 *
 * Scaling. Only limited cgroups cost state (two hash entries each, with a
 * timer); every cgroup of the cpu controller has an (empty) DSQ, created
 * in ops.cgroup_init(). A task of an unlimited cgroup costs one read of
 * its cgroup id per refresh, and nothing when no cgroup is limited.
 * Charging (at ticks, dispatch and stopping) takes no lock while the
 * group is far from running dry: each CPU keeps the runtime it has not
 * charged yet (cg_pendings, per CPU), up to a slice of the group's quota
 * (fast_max_ns, at most CG_SLICE_MAX_NS as CFS's bandwidth slice), and
 * charges it to the group's bucket when the slice is full, at the
 * period's end, when the CPU runs another group's task or goes idle, or
 * once the group's tokens come within a slice per possible CPU of empty
 * (whatever the CPUs hold uncharged, the group never runs
 * dry unseen, so throttling is as exact as charging at once). A group
 * large enough to run on many CPUs at once has a quota large enough to
 * charge lock-free most of each period; a small one takes the lock per
 * charge (twice: copy, commit), as before, but runs on few CPUs. Sizing a turn reads the tokens
 * without the lock (a refill only at a period's end), and the throttle
 * check reads throttled_until_ns without it.
 * Releasing a group costs O(tasks released): its timer looks at the head
 * of its own queue only, never at other groups' tasks.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#ifndef __FAIRQUOTA_CGROUPS_BPF_H
#define __FAIRQUOTA_CGROUPS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_LIMITED_CGROUPS);
	__type(key, u64);
	__type(value, struct bw_limit);
} cgroup_limits SEC(".maps");

/*
 * Limits from the kernel's own cpu.max (ops.cgroup_init() and
 * ops.cgroup_set_bandwidth(), 6.17+): every cgroup with a finite cpu.max,
 * and only those. A limit in cgroup_limits (the command line) takes
 * precedence over cpu.max for the same cgroup.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_LIMITED_CGROUPS);
	__type(key, u64);
	__type(value, struct bw_limit);
} cgroup_kernel_limits SEC(".maps");

/* Generation and number of cgroup_kernel_limits entries. */
u64 kern_cg_gen;
s64 kern_nr_cgroups;

/* The limit in force for cgroup @id: the command line's, else cpu.max. */
static struct bw_limit *cg_limit_of(u64 id)
{
	struct bw_limit *l = bpf_map_lookup_elem(&cgroup_limits, &id);

	return l ?: bpf_map_lookup_elem(&cgroup_kernel_limits, &id);
}

/*
 * cpu.max of @cgrp is now @quota_us per @period_us with @burst_us of
 * cpu.max.burst (quota ~0: "max", no limit). A full map is counted
 * (CNT_CG_FULL) and reported by the daemon, never dropped silently.
 */
static void cg_kernel_set(struct cgroup *cgrp, u64 period_us, u64 quota_us,
			  u64 burst_us)
{
	u64 id = BPF_CORE_READ(cgrp, kn, id);
	struct bw_limit l = {
		.quota_ns = quota_us * NSEC_PER_USEC,
		.period_ns = period_us * NSEC_PER_USEC,
		.burst_ns = burst_us * NSEC_PER_USEC,
	};
	struct bw_limit *old = bpf_map_lookup_elem(&cgroup_kernel_limits, &id);

	/*
	 * Only a change bumps the generation, which makes every task look
	 * up its limited groups again: cgroups created and removed without
	 * a limit (pods, systemd scopes) cost nothing.
	 */
	if (quota_us == (u64)-1 || !quota_us || !period_us) {
		if (!old || bpf_map_delete_elem(&cgroup_kernel_limits, &id))
			return;
		__sync_fetch_and_sub(&kern_nr_cgroups, 1);
	} else if (old && old->quota_ns == l.quota_ns &&
		   old->period_ns == l.period_ns &&
		   old->burst_ns == l.burst_ns) {
		return;
	} else if (bpf_map_update_elem(&cgroup_kernel_limits, &id, &l, 0)) {
		stat_inc(CNT_CG_FULL);
		return;
	} else if (!old) {
		__sync_fetch_and_add(&kern_nr_cgroups, 1);
	}
	__sync_fetch_and_add(&kern_cg_gen, 1);
}

/*
 * A limited cgroup's shared state; the lock guards the bucket. The timer
 * releases the group's parked tasks (bandwidth.bpf.h); rel_inflight counts
 * the tasks it released that have not started running yet (see
 * fq_cg_release_wait()) and is reset when the group runs dry.
 */
struct cg_state {
	struct bpf_spin_lock lock;
	u32 timer_state;	/* enum cg_timer_state */
	struct cg_usage u;
	struct bpf_timer timer;
	u64 next_timer_ns;	/* when the timer is armed for, 0 = not */
	s64 rel_inflight;
	/* Lock-free charging (cg_defer()), set under the lock at each charge: */
	u64 fast_until_ns;	/* end of the bucket's current period */
	u64 fast_max_ns;	/* most runtime a CPU holds uncharged */
	u64 dying_ns;		/* CG_TIMER_DYING: when its cgroup exited */
	u64 want_ns;		/* earliest release of a task being parked
				 * (timer_want()) */
	u64 charge_seq;		/* bumped by each commit of u.bw (under lock) */
	u32 kill;		/* walks for killed tasks its timer owes
				 * (note_killed(), release_killed()) */
	u32 __pad_kill;
	u64 lim_quota_ns;	/* the limit u.bw was last committed under */
	u64 lim_period_ns;	/* (as smooth mode enforces it; 0: none yet) */
};

/*
 * A group's release timer is set up by an LLC timer (the context whose
 * kfuncs may move tasks between queues), once, when the group first parks
 * a task; until then its tasks are parked on their LLCs.
 */
enum cg_timer_state {
	CG_TIMER_NONE,
	CG_TIMER_QUEUED,	/* its id is in cg_timer_queue */
	CG_TIMER_READY,
	CG_TIMER_DYING,		/* left the cpu controller with tasks parked on
				 * its DSQ: its timer lets them go, then drops
				 * the DSQ (cg_timerfn()); nothing parks there */
};

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 2 * MAX_LIMITED_CGROUPS);
	__type(value, u64);
} cg_timer_queue SEC(".maps");

/*
 * The DSQ where cgroup @id's throttled tasks wait, in the order they were
 * parked: created for every cgroup of the cpu controller
 * (ops.cgroup_init()), so limits can come and go without allocation on
 * the hot path. Bit 62 keeps the ids apart from the per-LLC queues.
 */
static u64 cg_dsq_id(u64 id)
{
	return (1ULL << 62) | id;
}

/*
 * Room for every limited cgroup: MAX_LIMITED_CGROUPS from the command line
 * plus as many from cpu.max. A state outlives its limit (until its cgroup
 * exits), so a full map is possible still: counted (CNT_CG_FULL).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * MAX_LIMITED_CGROUPS);
	__type(key, u64);
	__type(value, struct cg_state);
} cgroup_states SEC(".maps");

/* Id of @p's cgroup in the cgroup v2 hierarchy. */
static u64 task_cgroup_id(const struct task_struct *p)
{
	/*
	 * Direct (BTF) loads, which fault safely: BPF_CORE_READ() made four
	 * helper calls here, at every refresh while any cgroup is limited.
	 */
	return p->cgroups->dfl_cgrp->kn->id;
}

/* The state of limited cgroup @id, created on first use. */
static struct cg_state *cg_state_of(u64 id)
{
	struct cg_state *st = bpf_map_lookup_elem(&cgroup_states, &id);
	struct cg_state zero = {};

	if (st)
		return st;
	bpf_map_update_elem(&cgroup_states, &id, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&cgroup_states, &id);
}

/* Id of @cg's ancestor at @level (@cg itself at its own level), 0 if none. */
static u64 cg_ancestor_id(struct cgroup *cg, int level)
{
	struct cgroup *anc = NULL;

	if (level < 1 || bpf_core_read(&anc, sizeof(anc), &cg->ancestors[level]) ||
	    !anc)
		return 0;
	return BPF_CORE_READ(anc, kn, id);
}

/*
 * Find the limited cgroups on @p's path, innermost first, and cache their
 * ids in @tctx for configuration generation @gen.
 */
static void cg_resolve(const struct task_struct *p, struct task_ctx *tctx,
		       u64 gen, u64 leaf)
{
	struct cgroup *cg = BPF_CORE_READ(p, cgroups, dfl_cgrp);
	int level = BPF_CORE_READ(cg, level), i;
	u32 n = 0;
	u64 id;

	tctx->cg_leaf = leaf;
	tctx->cg_gen = gen;
	bpf_for(i, 0, MAX_CGROUP_DEPTH) {
		if (n >= MAX_TASK_CGROUPS || !(id = cg_ancestor_id(cg, level - i)))
			break;
		if (!cg_limit_of(id))
			continue;
		if (!cg_state_of(id)) {
			/* Not enforced: counted, and reported by the daemon. */
			stat_inc(CNT_CG_FULL);
			continue;
		}
		tctx->cg_ids[n & (MAX_TASK_CGROUPS - 1)] = id;
		n++;
	}
	tctx->nr_cg = n;
}

/*
 * Bring @tctx's list of limited cgroups up to date (limits changed, or @p
 * moved to another cgroup). A task exempt from limits has none.
 */
static void cg_refresh(const struct task_struct *p, struct task_ctx *tctx,
		       const struct fq_config *cfg, bool exempt)
{
	u64 leaf, gen = cfg->cg_gen + READ_ONCE(kern_cg_gen);

	if ((!cfg->nr_cgroups && READ_ONCE(kern_nr_cgroups) <= 0) || exempt) {
		tctx->nr_cg = 0;
		return;
	}
	leaf = task_cgroup_id(p);
	if (leaf != tctx->cg_leaf || gen != tctx->cg_gen)
		cg_resolve(p, tctx, gen, leaf);
}

/* Limited cgroup @i of @tctx's path (NULL if gone). */
static struct cg_state *cg_nth(const struct task_ctx *tctx, u32 i)
{
	u64 id = tctx->cg_ids[i & (MAX_TASK_CGROUPS - 1)];

	return bpf_map_lookup_elem(&cgroup_states, &id);
}

/*
 * One pass over the limited cgroups on @tctx's path: return the latest
 * time until which one of them is throttled, if later than @now (else 0),
 * and, if @tokens is given, store the fewest tokens any of them has left
 * (S64_MAX: none); if @who is given, store the id of the group throttled
 * longest. Reads without the groups' locks (a group state that is a
 * moment stale only shifts one decision).
 */
static u64 cg_scan_who(const struct task_ctx *tctx, u64 now, s64 *tokens,
		       u64 *who)
{
	s64 least = 0x7fffffffffffffffLL, t;
	struct cg_state *st;
	u64 until = 0, u;
	u32 i;

	bpf_for(i, 0, MAX_TASK_CGROUPS) {
		if (i >= tctx->nr_cg)
			break;
		st = cg_nth(tctx, i);
		if (!st)
			continue;
		u = READ_ONCE(st->u.throttled_until_ns);
		if (u > now && u > until) {
			until = u;
			if (who)
				*who = tctx->cg_ids[i & (MAX_TASK_CGROUPS - 1)];
		}
		t = READ_ONCE(st->u.bw.tokens_ns);
		if (t < least)
			least = t;
	}
	if (tokens)
		*tokens = least;
	return until;
}

static u64 cg_scan(const struct task_ctx *tctx, u64 now, s64 *tokens)
{
	return cg_scan_who(tctx, now, tokens, NULL);
}

/*
 * The shortest quota by which a limited cgroup on @tctx's path refills
 * (a sub-quota in smooth mode, @max_stall_ns; U64_MAX: none).
 */
static u64 cg_least_quantum(const struct task_ctx *tctx, u64 max_stall_ns)
{
	u64 least = ~0ULL, q;
	struct bw_limit *lim;
	u32 i;

	bpf_for(i, 0, MAX_TASK_CGROUPS) {
		if (i >= tctx->nr_cg)
			break;
		lim = cg_limit_of(tctx->cg_ids[i & (MAX_TASK_CGROUPS - 1)]);
		if (!lim || !lim->quota_ns || !lim->period_ns)
			continue;
		q = bw_quantum(lim->quota_ns, lim->period_ns, max_stall_ns);
		if (q < least)
			least = q;
	}
	return least;
}

/*
 * The limit of cgroup @id as smooth mode (@max_stall_ns) enforces it, in
 * @out, and the runtime a CPU may hold uncharged under it, in @slice.
 * Return 0 if @id has no limit. A global function: after it the verifier
 * knows nothing of the limit, so the paths through its branches do not
 * multiply those of the locked charge (fq_cg_charge_one() took 63,000
 * processed instructions, once in each of six programs).
 */
__noinline int fq_cg_limit(u64 id, u64 max_stall_ns, struct bw_limit *out,
			   u64 *slice)
{
	struct bw_limit *lim = cg_limit_of(id);

	if (!out || !slice || !lim || !lim->quota_ns || !lim->period_ns)
		return 0;
	bw_smooth(lim, max_stall_ns, out);
	*slice = bw_cpu_slice(out, scx_bpf_nr_cpu_ids());
	return 1;
}

/*
 * Commit bucket @b, charged with @delta at @now (@dry: the charge ran it
 * dry), as cgroup @st's, under its lock: its lock-free charging bounds
 * (cg_defer()), its usage and its throttle. @turn_end as below.
 */
static void cg_commit(struct cg_state *st, const struct bw_bucket *b,
		      const struct bw_limit *l, u64 slice, u64 now, u64 delta,
		      int turn_end, int dry)
{
	u64 until;

	st->u.bw = *b;
	st->lim_quota_ns = l->quota_ns;
	st->lim_period_ns = l->period_ns;
	st->charge_seq++;
	st->fast_until_ns = st->u.bw.period_start_ns + l->period_ns;
	st->fast_max_ns = slice;
	if (turn_end)
		bw_turn_end(&st->u.bw, delta);
	st->u.usage_ns += delta;
	if (bw_throttled(&st->u.bw)) {
		until = bw_release_at(&st->u.bw, l);
		if (dry) {
			st->u.bw.throttled_ns += until - now;
			st->rel_inflight = 0;
		}
		st->u.throttled_until_ns = until;
	} else {
		st->u.throttled_until_ns = 0;
	}
}

/* In bandwidth.bpf.h: a bucket charged outside any lock. */
int fq_bw_charge_span(struct bw_bucket *b, u64 start, u64 end,
		      const struct bw_limit *l);

/*
 * Per CPU: the bucket of the cgroup being charged, copied out of the
 * group's lock (cg_charge_try()), and its limit; in a map, not on the
 * stack, whose 512 bytes the charge's call chain from ops.tick() would
 * pass (ops.tick(), fq_charge(), fq_cg_charge_one(), fq_bw_charge_span():
 * 160 + 96 + 96 + 128 bytes as the verifier counts them). One slot per
 * level of nesting (cg_scratch_depth): a charge may interrupt another on
 * the same CPU (a tick during a release timer's refill, which runs with
 * interrupts on), and takes the next slot.
 */
#define CG_SCRATCH_SLOTS 3

struct cg_scratch {
	struct bw_bucket b;
	struct bw_limit l;	/* the group's limit as smooth mode enforces it */
	u64 slice;		/* runtime a CPU may hold uncharged under it */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CG_SCRATCH_SLOTS);
	__type(key, u32);
	__type(value, struct cg_scratch);
} cg_scratches SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} cg_scratch_depth SEC(".maps");

/*
 * One optimistic charge of cgroup @st: copy its bucket into @b under the
 * lock, charge the copy with the lock dropped (fq_bw_charge_span(), the
 * global function a task's own bucket is charged with), and commit it if
 * no other CPU committed meanwhile (charge_seq). Return 1 if the charge
 * ran the bucket dry, 0 if not, -1 if another charge came first.
 */
static __always_inline int cg_charge_try(struct cg_state *st, struct bw_bucket *b,
			 const struct bw_limit *l, u64 slice, u64 now,
			 u64 delta, int turn_end)
{
	u64 seq;
	int dry;

	bpf_spin_lock(&st->lock);
	*b = st->u.bw;
	seq = st->charge_seq;
	bpf_spin_unlock(&st->lock);
	dry = fq_bw_charge_span(b, now - delta, now, l) ? 1 : 0;
	bpf_spin_lock(&st->lock);
	if (st->charge_seq != seq) {
		bpf_spin_unlock(&st->lock);
		return -1;
	}
	cg_commit(st, b, l, slice, now, delta, turn_end, dry);
	bpf_spin_unlock(&st->lock);
	return dry;
}

/*
 * Under @st's lock: charge @delta at @now to the tokens alone (no refill,
 * the next charge brings the periods up to date), with the throttle a
 * charge that runs the bucket dry sets (cg_commit()). Return 1 if it ran
 * it dry.
 */
static __always_inline int cg_charge_tokens(struct cg_state *st,
					    const struct bw_limit *l,
					    u64 now, u64 delta)
{
	int was_ok = st->u.bw.tokens_ns > 0;
	u64 until;

	st->u.bw.tokens_ns -= (s64)delta;
	st->charge_seq++;
	st->u.usage_ns += delta;
	if (!bw_throttled(&st->u.bw))
		return 0;
	until = bw_release_at(&st->u.bw, l);
	if (was_ok) {
		st->u.bw.throttled_ns += until - now;
		st->rel_inflight = 0;
	}
	if (until > st->u.throttled_until_ns)
		st->u.throttled_until_ns = until;
	return was_ok;
}

/*
 * Charge the runtime [@now - @delta, @now) to limited cgroup @id by its
 * limit as smooth mode (@max_stall_ns) enforces it (@delta 0: only bring
 * the bucket up to @now's period). A group whose bucket runs dry is
 * throttled until its release time. @turn_end: the charge ends a turn
 * whose task is still runnable (bw_turn_end()). Return 1 if this charge
 * ran it dry.
 *
 * A global function: the verifier checks it once per program, not once
 * per charge point and path. The bucket's arithmetic (bucket.h) is not
 * done under the group's lock, where the verifier allows no call of a
 * global function and so checked it inline again, in each of six
 * programs (half of all the instructions it processed, 4 s of TCG at
 * every load). It is done on a copy, by the global function that
 * charges a task's own bucket, and committed if no other CPU committed
 * first (cg_charge_try()). After CG_CHARGE_TRIES lost races (many CPUs
 * charging one group at once) the runtime is charged to the tokens alone
 * under the lock, with the throttle it causes (cg_charge_tokens()): no
 * nanosecond goes unpaid, and the next charge brings the bucket's periods
 * up to date.
 */
#define CG_CHARGE_TRIES 8

__noinline int fq_cg_charge_one(u64 id, u64 max_stall_ns, u64 now, u64 delta,
			    int turn_end)
{
	struct cg_scratch *scr;
	struct cg_state *st;
	struct bw_limit l;
	u32 zero = 0, d, *depth;
	u64 slice;
	int i, dry = -1;

	st = bpf_map_lookup_elem(&cgroup_states, &id);
	if (!st)
		return 0;
	/* A refill within the bucket's period has nothing to do. */
	if (!delta && now < READ_ONCE(st->fast_until_ns))
		return 0;
	depth = bpf_map_lookup_elem(&cg_scratch_depth, &zero);
	if (!depth)
		return 0;
	d = READ_ONCE(*depth);
	scr = d < CG_SCRATCH_SLOTS ? bpf_map_lookup_elem(&cg_scratches, &d) :
				     NULL;
	if (!scr) {
		/* Deeper nesting (not known to happen): the tokens alone. */
		if (!fq_cg_limit(id, max_stall_ns, &l, &slice))
			return 0;
		stat_inc(CNT_CG_CONTENDED);
		bpf_spin_lock(&st->lock);
		dry = cg_charge_tokens(st, &l, now, delta);
		bpf_spin_unlock(&st->lock);
		return dry;
	}
	WRITE_ONCE(*depth, d + 1);
	barrier();
	if (!fq_cg_limit(id, max_stall_ns, &scr->l, &scr->slice)) {
		dry = 0;	/* its limit went meanwhile */
		goto out;
	}
	if (delta)
		stat_inc(CNT_CG_LOCKED);
	for (i = 0; i < CG_CHARGE_TRIES; i++) {
		dry = cg_charge_try(st, &scr->b, &scr->l, scr->slice, now, delta,
				    turn_end);
		if (dry >= 0)
			goto out;
	}
	/* Lost every race (many CPUs charging the group at once). */
	stat_inc(CNT_CG_CONTENDED);
	bpf_spin_lock(&st->lock);
	dry = cg_charge_tokens(st, &scr->l, now, delta);
	bpf_spin_unlock(&st->lock);
out:
	barrier();
	WRITE_ONCE(*depth, d);
	return dry;
}

/*
 * Runtime this CPU has not charged yet, of the tasks of one path of
 * limited cgroups (the leaf cgroup @leaf at generation @gen): runs that
 * ended by @end_ns, all in the current period of each group. Only its own
 * CPU touches it, from callbacks under its rq lock.
 */
struct cg_pending {
	u64 leaf;
	u64 gen;
	u64 ids[MAX_TASK_CGROUPS];
	u32 nr;
	u32 __pad;
	u64 ns;
	u64 end_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct cg_pending);
} cg_pendings SEC(".maps");

static struct cg_pending *cg_pending_local(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&cg_pendings, &zero);
}

/* Does @pd hold runtime of another path of limited cgroups than @tctx's? */
static bool cg_pending_other(const struct cg_pending *pd,
			     const struct task_ctx *tctx)
{
	return pd->ns && (pd->leaf != tctx->cg_leaf || pd->gen != tctx->cg_gen ||
			  !tctx->nr_cg);
}

/*
 * Charge what this CPU holds uncharged (@pd), to the period its runs fell
 * in. Return 1 if a group ran dry. Inlined: as a global function it put
 * one more frame on the charge's call chain, whose stack passed 512 bytes
 * once the bucket copy (cg_scratches) moved out of the group's lock.
 */
static __always_inline int cg_flush(struct cg_pending *pd, u64 max_stall_ns)
{
	u64 ns, end, id;
	int dry = 0;
	u32 i;

	if (!pd->ns)
		return 0;
	ns = pd->ns;
	end = pd->end_ns;
	pd->ns = 0;
	for (i = 0; i < MAX_TASK_CGROUPS; i++) {
		if (i >= pd->nr)
			break;
		id = pd->ids[i & (MAX_TASK_CGROUPS - 1)];
		dry |= fq_cg_charge_one(id, max_stall_ns, end, ns, 0);
	}
	return dry;
}

/* What cg_defer() did with a charge. */
enum cg_defer_res {
	CG_HELD,	/* held on this CPU, uncharged */
	CG_MERGE,	/* charge it with what the CPU held, as one run */
	CG_FLUSH,	/* charge what the CPU held first (another path, or
			   runs of an earlier period), then it */
};

/*
 * Hold the runtime [@now - @delta, @now) of @tctx uncharged on this CPU
 * (@pd) if every limited cgroup on its path is far enough from running
 * dry and still in the period of its last charge, and the CPU's slice is
 * not full.
 */
static enum cg_defer_res cg_defer(const struct task_ctx *tctx,
				  struct cg_pending *pd, u64 now, u64 delta)
{
	u64 total = pd->ns + delta, nr_cpus = scx_bpf_nr_cpu_ids();
	enum cg_defer_res res = CG_HELD;
	struct cg_state *st;
	u32 i;

	if (cg_pending_other(pd, tctx))
		return CG_FLUSH;
	bpf_for(i, 0, MAX_TASK_CGROUPS) {
		if (i >= tctx->nr_cg)
			break;
		st = cg_nth(tctx, i);
		if (!st)
			return CG_FLUSH;
		if (now > READ_ONCE(st->fast_until_ns))
			return CG_FLUSH;
		if (!bw_may_defer(READ_ONCE(st->u.bw.tokens_ns), total,
				  READ_ONCE(st->fast_max_ns), nr_cpus))
			res = CG_MERGE;
	}
	if (res != CG_HELD)
		return res;
	if (!pd->ns) {
		pd->leaf = tctx->cg_leaf;
		pd->gen = tctx->cg_gen;
		pd->nr = tctx->nr_cg;
		bpf_for(i, 0, MAX_TASK_CGROUPS)
			pd->ids[i & (MAX_TASK_CGROUPS - 1)] =
				tctx->cg_ids[i & (MAX_TASK_CGROUPS - 1)];
	}
	pd->ns = total;
	pd->end_ns = now;
	stat_inc(CNT_CG_HELD);
	return CG_HELD;
}

/*
 * @tctx's task starts running on this CPU: runtime held for another path
 * is charged now, not when this CPU next runs that path's tasks.
 */
static void cg_pending_switch(const struct task_ctx *tctx,
			      const struct fq_config *cfg)
{
	struct cg_pending *pd = cg_pending_local();

	if (pd && cg_pending_other(pd, tctx))
		cg_flush(pd, cfg->max_stall_ns);
}

/* This CPU goes idle: what it held uncharged is charged now. */
static void cg_pending_idle(void)
{
	struct cg_pending *pd = cg_pending_local();
	const struct fq_config *cfg;

	if (!pd || !pd->ns)
		return;
	if (!(cfg = live_config()))
		return;
	cg_flush(pd, cfg->max_stall_ns);
}

/*
 * Charge the runtime [@now - @delta, @now) to every limited cgroup on
 * @tctx's path, or hold it on this CPU (cg_defer()) (@delta 0: a refill,
 * so that cg_scan() reads this period's tokens; @turn_end as
 * fq_cg_charge_one()). Return true if one ran dry.
 */
static __always_inline bool cg_charge(const struct task_ctx *tctx, const struct fq_config *cfg,
		      u64 now, u64 delta, bool turn_end)
{
	struct cg_pending *pd = delta ? cg_pending_local() : NULL;
	bool dry_any = false;
	u32 i;

	if (pd) {
		switch (cg_defer(tctx, pd, now, delta)) {
		case CG_HELD:
			return false;
		case CG_MERGE:
			/* The CPU ran this path since: one run, one charge. */
			delta += pd->ns;
			pd->ns = 0;
			break;
		default:
			if (cg_flush(pd, cfg->max_stall_ns))
				dry_any = true;
		}
	}
	for (i = 0; i < MAX_TASK_CGROUPS; i++) {
		if (i >= tctx->nr_cg)
			break;
		if (fq_cg_charge_one(tctx->cg_ids[i & (MAX_TASK_CGROUPS - 1)],
				     cfg->max_stall_ns, now, delta, turn_end))
			dry_any = true;
	}
	return dry_any;
}

/*
 * May one more parked task of limited cgroup @id be released at @now? Its
 * bucket is brought up to @now first. Return 0 if so; otherwise when to
 * look again: the group's release if it is throttled, else @now + @slice_ns
 * (the tokens are spoken for: the tasks released so far, each expected to
 * run a turn of @slice_ns or what is left, have not started yet).
 */
__noinline u64 fq_cg_release_wait(u64 id, u64 max_stall_ns, u64 slice_ns,
				  u64 now)
{
	struct cg_state *st;
	s64 tokens, inflight;
	u64 until;

	if (!slice_ns)
		return 0;
	fq_cg_charge_one(id, max_stall_ns, now, 0, 0);
	st = bpf_map_lookup_elem(&cgroup_states, &id);
	if (!st || !cg_limit_of(id))
		return 0;
	until = READ_ONCE(st->u.throttled_until_ns);
	if (until > now)
		return until;
	inflight = READ_ONCE(st->rel_inflight);
	tokens = READ_ONCE(st->u.bw.tokens_ns);
	if (inflight <= 0 ||
	    (tokens > (s64)slice_ns && tokens / (s64)slice_ns > inflight))
		return 0;
	return now + slice_ns;
}

/* Add @n to rel_inflight of every limited cgroup on @tctx's path. */
static void cg_inflight_add(const struct task_ctx *tctx, s64 n)
{
	struct cg_state *st;
	u32 i;

	bpf_for(i, 0, MAX_TASK_CGROUPS) {
		if (i >= tctx->nr_cg)
			break;
		st = cg_nth(tctx, i);
		if (st)
			__sync_fetch_and_add(&st->rel_inflight, n);
	}
}

/*
 * The task released with rel_pending set starts running or leaves the
 * queue: it no longer holds a share of its groups' tokens. The exchange
 * makes sure exactly one of the timer and the task's callbacks clears it.
 */
static void cg_release_done(struct task_ctx *tctx)
{
	if (tctx->rel_pending && __sync_lock_test_and_set(&tctx->rel_pending, 0))
		cg_inflight_add(tctx, -1);
}

#endif /* __FAIRQUOTA_CGROUPS_BPF_H */
