// SPDX-License-Identifier: GPL-2.0
/*
 * units: the process-sharing experiment's worker. Does UNITS units of
 * CPU-bound work of about UNIT_US microseconds each (calibrated at start
 * when run alone: pass the loop count from `units calibrate UNIT_US`),
 * and prints its run time and the longest gap between two units, i.e.
 * the longest time it was kept off the CPU while it had work.
 *
 * Usage: units calibrate UNIT_US      -> prints LOOPS
 *        units run UNITS LOOPS         -> prints "elapsed_s max_gap_s"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile unsigned long sink;

static void work(unsigned long loops)
{
	unsigned long i, x = 1;

	for (i = 0; i < loops; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "calibrate")) {
		double unit = atof(argv[2]) / 1e6, best = 1e9, t;
		unsigned long loops = 100000;
		int i;

		/* Smallest time of a few runs, to skip preemptions. */
		for (i = 0; i < 20; i++) {
			t = now();
			work(loops);
			t = now() - t;
			if (t < best)
				best = t;
		}
		printf("%lu\n", (unsigned long)(loops * unit / best));
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "run")) {
		long units = atol(argv[2]), i;
		unsigned long loops = strtoul(argv[3], NULL, 10);
		double start = now(), last = start, gap = 0, unit_min = 1e9, t, d;

		for (i = 0; i < units; i++) {
			work(loops);
			t = now();
			d = t - last;
			if (d < unit_min)
				unit_min = d;
			if (d > gap)
				gap = d;
			last = t;
		}
		/* The longest unit minus the shortest: time spent off the CPU. */
		printf("%.6f %.6f\n", last - start, gap - unit_min);
		return 0;
	}
	fprintf(stderr, "usage: units calibrate UNIT_US | units run UNITS LOOPS\n");
	return 2;
}
