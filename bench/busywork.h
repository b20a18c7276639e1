/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPU-bound busy work for the benchmark programs: a clock, a loop that
 * cannot be optimized away, and its calibration.
 */
#ifndef __FAIRQUOTA_BENCH_BUSYWORK_H
#define __FAIRQUOTA_BENCH_BUSYWORK_H

#include <time.h>

static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile unsigned long busywork_sink;

static inline void work(unsigned long loops)
{
	unsigned long i, x = 1;

	for (i = 0; i < loops; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	busywork_sink = x;
}

/* Loops per microsecond: the fastest of 20 runs, to skip preemptions. */
static inline double loops_per_us(void)
{
	const unsigned long loops = 100000;
	double best = 1e9, t;
	int i;

	for (i = 0; i < 20; i++) {
		t = now();
		work(loops);
		t = now() - t;
		if (t < best)
			best = t;
	}
	return loops / (best * 1e6);
}

#endif /* __FAIRQUOTA_BENCH_BUSYWORK_H */
