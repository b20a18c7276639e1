// SPDX-License-Identifier: GPL-2.0
/*
 * units: the process-sharing experiment's worker. Does UNITS units of
 * CPU-bound work of about UNIT_US microseconds each (calibrated at start
 * when run alone: pass the loop count from `units calibrate UNIT_US`),
 * and prints its run time and the longest gap between two units, i.e.
 * the longest time it was kept off the CPU while it had work.
 *
 * Usage: units calibrate UNIT_US      -> prints LOOPS
 *        units run UNITS LOOPS         -> prints "elapsed_s max_gap_s start_s end_s"
 * (start and end on CLOCK_MONOTONIC, comparable between processes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "busywork.h"

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "calibrate")) {
		printf("%lu\n", (unsigned long)(loops_per_us() * atof(argv[2])));
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
		printf("%.6f %.6f %.6f %.6f\n", last - start, gap - unit_min,
		       start, last);
		return 0;
	}
	fprintf(stderr, "usage: units calibrate UNIT_US | units run UNITS LOOPS\n");
	return 2;
}
