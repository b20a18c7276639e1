/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bandwidth bucket: the quota/period arithmetic, in plain C with no BPF
 * helpers so that tests/bucket_test.c can check it natively.
 *
 * A bucket holds tokens_ns of runtime for the current period. Charging
 * takes tokens; at each period boundary quota_ns is added back, capped at
 * one quota plus the burst (no burst: no saving up across idle periods)
 * plus what a hungry period could not use (bw_refill()). Overrun turns
 * into debt that later periods pay off, so a task's long-run share is
 * exactly quota/period even though a slice only ends at the next tick.
 * The debt is capped so that no task stays throttled for more than
 * MAX_THROTTLE_NS, well inside the kernel watchdog.
 *
 * Copyright (c) 2026 The scx_fairquota authors
 */
#ifndef __FAIRQUOTA_BUCKET_H
#define __FAIRQUOTA_BUCKET_H

#include "intf.h"

/*
 * Always inlined: a group's bucket is updated under a bpf_spin_lock, and
 * the verifier allows no function calls while a lock is held.
 */
#define BW_FN static inline __attribute__((always_inline))

/* A carry (bw_refill()) is kept across at most this many period ends. */
#define BW_CARRY_MAX_PERIODS 4

/*
 * An owed bucket (bw_refill()) keeps its tokens for the periods in
 * BW_OWED_NS, at least BW_CARRY_MAX_PERIODS and at most BW_OWED_MAX_PERIODS
 * of them: releases late by up to 100 ms on a loaded host (short periods).
 */
#define BW_OWED_NS		(100ULL * 1000 * 1000)
#define BW_OWED_MAX_PERIODS	8

BW_FN u64 bw_owed_periods(const struct bw_limit *l)
{
	u64 n = BW_OWED_NS / l->period_ns;

	if (n < BW_CARRY_MAX_PERIODS)
		return BW_CARRY_MAX_PERIODS;
	return n < BW_OWED_MAX_PERIODS ? n : BW_OWED_MAX_PERIODS;
}

/* Most debt a bucket may carry: a quota per period of MAX_THROTTLE_NS. */
BW_FN s64 bw_max_debt(const struct bw_limit *l)
{
	u64 periods = MAX_THROTTLE_NS / l->period_ns;

	if (periods < 1)
		periods = 1;
	return (s64)(l->quota_ns * (periods - 1));
}

/*
 * Smooth mode: the limit @l enforced over sub-periods of @max_stall_ns
 * (0: off), each with its share of the quota (quota x sub-period /
 * period), so a throttled bucket waits at most about one sub-period
 * whatever the configured period. A sub-period is exactly @max_stall_ns:
 * it need not divide the period, since what is enforced is the rate (a
 * 10 ms period at --max-stall-us 7500 runs 1.5 ms per 7.5 ms at 20%;
 * until 2026-12-05 the period was cut into k equal parts, which made
 * that 1 ms per 5 ms). A period no longer than it is enforced whole. A
 * sub-period is lengthened so its quota is at least BW_MIN_SUB_QUOTA_NS
 * (tiny turns cost more than they smooth). The share is unchanged (the
 * sub-quota is rounded down by less than a nanosecond); the burst is not
 * scaled.
 *
 * Pace: sub-quotas left unused are saved up to half a quota (pace_ns on
 * top of the sub-quota, and the burst), so what a group did not use it
 * may spend at once, as in a whole period: a job of half a quota that
 * starts after a quiet period runs through, where paced at the limit's
 * rate it took about 1/share as long (4-5x at 20%). A busy group saves
 * nothing and is paced. The long-run share is unchanged (nothing is
 * granted that a sub-period did not leave unused); a group that was idle
 * may use up to 1.5 quotas in a period's time. A whole quota saved (what
 * CFS's worst case allows) put nginx, idle 2 s before each 15 s run, at
 * 21.2-21.3% of a CPU under a 200 ms/1 s limit.
 *
 * The stats still count whole periods (stat_period_ns), as cpu.stat does,
 * on their own grid.
 *
 * bw_sub_period(): the sub-period of limit @quota_ns/@period_ns (0: whole
 * periods).
 */
BW_FN u64 bw_sub_period(u64 quota_ns, u64 period_ns, u64 max_stall_ns)
{
	u64 s = max_stall_ns, least;

	if (!s || !quota_ns || period_ns <= s)
		return 0;
	least = (BW_MIN_SUB_QUOTA_NS * period_ns + quota_ns - 1) / quota_ns;
	if (s < least)
		s = least;
	return s < period_ns ? s : 0;
}

/* @quota_ns * @s_ns / @period_ns without overflow (periods up to 1 s). */
BW_FN u64 bw_scale(u64 quota_ns, u64 s_ns, u64 period_ns)
{
	return quota_ns / period_ns * s_ns +
	       quota_ns % period_ns * s_ns / period_ns;
}

/* The quota of each (sub-)period of a limit of @quota_ns per @period_ns. */
BW_FN u64 bw_quantum(u64 quota_ns, u64 period_ns, u64 max_stall_ns)
{
	u64 s = bw_sub_period(quota_ns, period_ns, max_stall_ns);

	return s ? bw_scale(quota_ns, s, period_ns) : quota_ns;
}

BW_FN void bw_smooth(const struct bw_limit *l, u64 max_stall_ns,
		     struct bw_limit *out)
{
	u64 s = bw_sub_period(l->quota_ns, l->period_ns, max_stall_ns);
	u64 half = l->quota_ns / 2;

	*out = *l;
	if (!s)
		return;
	out->quota_ns = bw_scale(l->quota_ns, s, l->period_ns);
	out->period_ns = s;
	out->stat_period_ns = l->period_ns;
	out->pace_ns = out->quota_ns < half ? half - out->quota_ns : 0;
}

/*
 * Smooth mode: the most debt a bucket puts off to later sub-periods
 * (bw_spread_debt()): BW_SPREAD_QUOTAS sub-quotas, at most BW_SPREAD_MAX_NS
 * (an overrun's size, a late timer's, is in time, not in quotas). A
 * sub-period in debt still grants half a sub-quota.
 */
#define BW_SPREAD_QUOTAS	8
#define BW_SPREAD_MAX_NS	(20ULL * 1000 * 1000)

BW_FN u64 bw_spread_room(const struct bw_bucket *b, const struct bw_limit *l)
{
	u64 most = BW_SPREAD_QUOTAS * l->quota_ns;

	if (most > BW_SPREAD_MAX_NS)
		most = BW_SPREAD_MAX_NS;
	if (!l->stat_period_ns || b->debt_ns >= most)
		return 0;
	return most - b->debt_ns;
}

/*
 * Smooth mode, after a refill: an overrun (a slice seen to end only at a
 * late timer or tick, up to a few ms under load, more than a whole
 * sub-quota at 20%) would leave the bucket in debt for whole sub-periods,
 * so a throttled group waited two or three of them, not one. Instead a
 * sub-period in debt still gets half a sub-quota; the rest of the debt is
 * put off (debt_ns, up to bw_spread_room(), past which the bucket pays at
 * once as in whole periods) and paid from later refills, each keeping at
 * least half a sub-quota. Nothing is forgiven: the long-run share stays
 * quota/period; a group may run ahead of it by that room at most, until
 * it pays. Simulated with turns seen to end up to 1 ms late, 10% of them
 * up to 5 ms (tests/bucket_test.c), a busy 200 ms/1 s group in 10 ms
 * sub-periods waits at most 9 ms between turns, 25 ms without.
 */
BW_FN void bw_spread_debt(struct bw_bucket *b, const struct bw_limit *l)
{
	s64 floor = (s64)(l->quota_ns / 2), d;
	u64 room;

	if (b->debt_ns && b->tokens_ns > floor) {
		d = b->tokens_ns - floor;
		if ((u64)d > b->debt_ns)
			d = (s64)b->debt_ns;
		b->tokens_ns -= d;
		b->debt_ns -= (u64)d;
	}
	room = bw_spread_room(b, l);
	if (b->tokens_ns < floor && room) {
		d = floor - b->tokens_ns;
		if ((u64)d > room)
			d = (s64)room;
		b->tokens_ns += d;
		b->debt_ns += (u64)d;
	}
}

/* The BPF side calls it as a global function (bandwidth.bpf.h). */
#ifndef BW_SPREAD_DEBT
#define BW_SPREAD_DEBT(b, l) bw_spread_debt(b, l)
#endif

/*
 * Bring @b up to the period containing @now, adding quota per period up to
 * quota + burst (cgroup v2's cpu.max.burst: unused quota saved up to the
 * burst; no burst, no saving across idle periods). Like the kernel, count
 * a burst when the runtime drawn from the tokens since the last refill
 * exceeded a quota: only saved tokens count, never overrun or carry.
 *
 * Carry: a period that began hungry (the one before it used all it had)
 * and still ended with tokens left lost them to the scheduler, not to a
 * lack of work: its release came late or its tasks waited behind others
 * (timers and vCPUs late under load, up to a few periods). The next
 * period keeps up to a quota of them; so does a period that used a whole
 * quota and part of such a carry (late again), so the carry only shrinks
 * along a chain and never exceeds a quota. A period that leaves its quota
 * unused keeps nothing, so an idle or lightly used group never saves.
 * Nothing is granted that a period did not leave unused, so the long-run
 * share stays quota/period, now also when releases are late (without it
 * a 2 ms/10 ms group got 97.8-99.3% of its quota with the host loaded).
 *
 * Owed: a bucket whose last run left it throttled (its tasks wait for a
 * release), or whose run went on across the period end, or whose turn
 * ended runnable with few tokens left (bw_turn_end()), is not idle: its
 * unused tokens are the scheduler's lateness, so for bw_owed_periods()
 * periods it keeps them all, up to that many quotas. A release more than
 * a period late otherwise lost the tokens of the periods in between, and
 * a late turn that ran on into the next period those it had not used
 * yet (a 1 ms/10 ms group got 97.3-98.9% of its quota with the host
 * loaded; simulated with releases up to 20 ms late, a 5 ms/10 ms one
 * got 86%). A throttled group that goes idle instead may so save up to
 * that many quotas for as many periods, then forgets them.
 */
BW_FN void bw_refill(struct bw_bucket *b, u64 now, const struct bw_limit *l)
{
	u64 save = l->burst_ns + l->pace_ns, n, room, keep = 0, most, window;
	u64 cap = l->quota_ns + save;
	s64 drawn, used, left;
	int owing;

	if (!b->period_start_ns) {
		b->period_start_ns = now;
		b->tokens_ns = l->quota_ns + l->pace_ns;	/* all it may save */
		b->snap_ns = b->tokens_ns;
		return;
	}
	/*
	 * Debt past what limit @l allows (it was run up under a larger
	 * quota, then the limit was lowered) is forgiven, so the throttle
	 * stays within MAX_THROTTLE_NS of the new limit too.
	 */
	if (b->tokens_ns < -bw_max_debt(l))
		b->tokens_ns = -bw_max_debt(l);
	if (now < b->period_start_ns)
		return;
	n = (now - b->period_start_ns) / l->period_ns;
	if (!n)
		return;
	b->period_start_ns += n * l->period_ns;
	/*
	 * Saved quota drawn on (overrun into debt is not a burst, nor what
	 * smooth mode saves of a quota: pace_ns).
	 */
	drawn = b->snap_ns - b->tokens_ns;
	used = drawn > b->snap_ns ? b->snap_ns : drawn;
	if (used > (s64)(l->quota_ns + l->pace_ns + b->carry_ns)) {
		b->nr_bursts++;
		b->burst_ns += (u64)used - l->quota_ns - l->pace_ns -
			       b->carry_ns;
	}
	/*
	 * What the cap would drop, at most a quota (the burst and the pace
	 * save the rest); a hungry period's tokens also when its tasks' turn came only
	 * whole periods later (n > 1: the periods in between went unused);
	 * all of an owed bucket's, whose periods count from the one its debt
	 * is paid in.
	 */
	window = bw_owed_periods(l);
	owing = b->owed && (b->tokens_ns <= 0 || b->owed - 1 + n <= window);
	b->owed = !owing ? 0 : b->tokens_ns <= 0 ? 1 : b->owed + n;
	if ((owing ||
	     (n <= BW_CARRY_MAX_PERIODS &&
	      (b->hungry || (n == 1 && drawn >= (s64)l->quota_ns)))) &&
	    n <= window) {
		left = b->tokens_ns + (s64)((n - 1) * l->quota_ns) -
		       (s64)save;
		most = owing ? window * l->quota_ns : l->quota_ns;
		if (left > 0)
			keep = (u64)left < most ? (u64)left : most;
	}
	/* Does the new period follow one that used up all it had? */
	if (n == 1)
		b->hungry = b->tokens_ns <= (s64)b->carry_ns;
	else
		b->hungry = b->tokens_ns < 0 &&
			    n - 1 <= (u64)(-b->tokens_ns) / l->quota_ns;
	b->carry_ns = keep;
	cap += keep;
	if (b->tokens_ns >= (s64)cap) {
		b->tokens_ns = cap;
	} else {
		room = (u64)((s64)cap - b->tokens_ns);
		if (n > room / l->quota_ns)
			b->tokens_ns = cap;
		else
			b->tokens_ns += (s64)(n * l->quota_ns);
	}
	BW_SPREAD_DEBT(b, l);
	b->snap_ns = b->tokens_ns;
}

/*
 * The first charge in a (sub-)period: count the period for the stats
 * (cpu.stat's nr_periods) if it starts a new one of stat_period_ns, on a
 * grid from the bucket's first period. In whole periods, every period in
 * which runtime was charged; smoothed, every whole period in which some
 * sub-period was. A period shortened live starts a new grid at once.
 */
BW_FN void bw_count_period(struct bw_bucket *b, const struct bw_limit *l)
{
	u64 p = l->stat_period_ns ? l->stat_period_ns : l->period_ns;

	if (b->last_active_ns == b->period_start_ns)
		return;
	b->last_active_ns = b->period_start_ns;
	if (b->period_start_ns < b->stat_end_ns &&
	    b->stat_end_ns - b->period_start_ns <= p)
		return;
	if (!b->stat_end_ns || b->period_start_ns < b->stat_end_ns)
		b->stat_end_ns = b->period_start_ns;
	b->stat_end_ns += ((b->period_start_ns - b->stat_end_ns) / p + 1) * p;
	b->stat_throttled = 0;
	b->nr_periods++;
}

/*
 * Charge @delta_ns of runtime. Return true if this charge emptied the
 * bucket (a throttle event; nr_throttled counts the periods of the stats
 * that had one, as cpu.stat does).
 */
BW_FN int bw_charge(struct bw_bucket *b, u64 delta_ns,
		    const struct bw_limit *l)
{
	s64 floor = -bw_max_debt(l);
	int was_ok = b->tokens_ns > 0;

	bw_count_period(b, l);
	b->tokens_ns -= (s64)delta_ns;
	if (b->tokens_ns < floor)
		b->tokens_ns = floor;
	if (delta_ns)	/* throttled: owed from now on (bw_refill()) */
		b->owed = b->tokens_ns <= 0;
	if (was_ok && b->tokens_ns <= 0) {
		if (!b->stat_throttled) {
			b->stat_throttled = 1;
			b->nr_throttled++;
		}
		return 1;
	}
	return 0;
}

/*
 * Charge the runtime [@start, @end) to the periods it fell in: a run that
 * crosses a period boundary pays its part before the boundary from the old
 * period's tokens and the rest from the new period's. (A run spanning more
 * than one whole period, possible only with periods shorter than a tick,
 * charges everything after the first boundary to the last period.) Runtime
 * that seems to lie before the period the bucket is already in (the
 * kernel's runtime clock and ours disagree by a little, a lot under
 * emulation) is charged to the current period, never dropped: every
 * nanosecond of runtime is paid for once. Return true if the bucket ran dry.
 */
BW_FN int bw_charge_span(struct bw_bucket *b, u64 start, u64 end,
			 const struct bw_limit *l)
{
	u64 boundary, early = 0;
	int dry;

	bw_refill(b, start, l);
	if (start < b->period_start_ns) {
		early = (end < b->period_start_ns ? end : b->period_start_ns) -
			start;
		start = b->period_start_ns;
	}
	if (start >= end)
		return early ? bw_charge(b, early, l) : 0;
	boundary = b->period_start_ns + l->period_ns;
	if (end <= boundary)
		return bw_charge(b, end - start + early, l);
	dry = bw_charge(b, boundary - start + early, l);
	b->owed = 1;	/* it ran on across the period end: owed */
	bw_refill(b, end, l);
	return bw_charge(b, end - boundary, l) || dry;
}

/*
 * A turn that ran @ran_ns ended with its task still runnable. If it used
 * most of what the bucket had, the rest is owed (bw_refill()): the turn
 * ended on the slice timer, which runs on wall time while runtime
 * excludes interrupts, so a turn cut to the tokens left leaves a few, and
 * its task may wait past the period end for its next turn.
 */
BW_FN void bw_turn_end(struct bw_bucket *b, u64 ran_ns)
{
	if (b->tokens_ns > 0 && (u64)b->tokens_ns * 2 < ran_ns)
		b->owed = 1;
}

BW_FN int bw_throttled(const struct bw_bucket *b)
{
	return b->tokens_ns <= 0;
}

/* First period start at which a throttled bucket has tokens again. */
BW_FN u64 bw_release_at(const struct bw_bucket *b, const struct bw_limit *l)
{
	s64 t = b->tokens_ns + (s64)bw_spread_room(b, l);
	u64 k = 1;

	if (t < 0)
		k += (u64)(-t) / l->quota_ns;
	return b->period_start_ns + k * l->period_ns;
}

/*
 * Is @l another limit than the one (@quota_ns, @period_ns) a bucket was
 * last brought under (0 period: none yet, so not changed)?
 */
BW_FN int bw_limit_changed(u64 quota_ns, u64 period_ns,
			   const struct bw_limit *l)
{
	return period_ns &&
	       (quota_ns != l->quota_ns || period_ns != l->period_ns);
}

/*
 * The limit of @b was changed to @l (a `set` of the quota, the period or
 * the smoothing): a new period starts at @now with a fresh quota, as the
 * kernel does when cpu.max is written (tg_set_cfs_bandwidth() refills the
 * runtime and unthrottles the group), so a limit raised takes effect at
 * once, not at the end of a period of the old one (up to 1 s). What the
 * old limit left (debt, carry, savings) is dropped; the counters and a
 * parked stretch's start stay.
 */
BW_FN void bw_restart(struct bw_bucket *b, u64 now, const struct bw_limit *l)
{
	b->period_start_ns = now;
	b->tokens_ns = (s64)(l->quota_ns + l->pace_ns);
	b->snap_ns = b->tokens_ns;
	b->debt_ns = 0;
	b->carry_ns = 0;
	b->hungry = 0;
	b->owed = 0;
}

/* Mark @b parked at @now (throttled and waiting). */
BW_FN void bw_park(struct bw_bucket *b, u64 now)
{
	if (!b->parked_at_ns)
		b->parked_at_ns = now;
}

/* End a parked stretch at @now and account the throttled time. */
BW_FN void bw_unpark(struct bw_bucket *b, u64 now)
{
	if (b->parked_at_ns && now > b->parked_at_ns)
		b->throttled_ns += now - b->parked_at_ns;
	b->parked_at_ns = 0;
}

/*
 * Per-CPU slices of a shared bucket (cgroups.bpf.h): the most runtime one
 * of @nr_cpus CPUs may hold uncharged for limit @l. CFS's bandwidth slice
 * (CG_SLICE_MAX_NS), cut so that a slice per CPU is at most a quarter of
 * the quota; 0 (charge at once) if that leaves less than CG_SLICE_MIN_NS.
 */
BW_FN u64 bw_cpu_slice(const struct bw_limit *l, u32 nr_cpus)
{
	u64 s = l->quota_ns / (4 * (u64)(nr_cpus ?: 1));

	if (s > CG_SLICE_MAX_NS)
		s = CG_SLICE_MAX_NS;
	return s < CG_SLICE_MIN_NS ? 0 : s;
}

/*
 * May one of @nr_cpus CPUs hold @total ns uncharged, against a bucket with
 * @tokens left? Only while @total is under the CPU's slice @slice (0: never)
 * and the tokens stay above a slice per CPU: then even with every CPU
 * holding a slice uncharged the bucket still has tokens, so it never runs
 * dry unseen.
 */
BW_FN int bw_may_defer(s64 tokens, u64 total, u64 slice, u64 nr_cpus)
{
	return total < slice && tokens - (s64)total > (s64)(slice * nr_cpus);
}

#endif /* __FAIRQUOTA_BUCKET_H */
