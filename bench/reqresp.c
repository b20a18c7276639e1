// SPDX-License-Identifier: GPL-2.0
/*
 * reqresp: a request/response workload. A dispatcher thread hands
 * requests to WORKERS worker threads through pipes (one request in flight
 * per worker, closed loop); a worker does WORK_US of CPU work per request
 * and answers. Runs for SECONDS and prints
 *   requests/s p50_us p99_us max_us
 * of the request latency (hand-off to answer, as the dispatcher sees it).
 *
 * Usage: reqresp WORKERS WORK_US SECONDS
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "busywork.h"
#include <unistd.h>

#define MAX_WORKERS 16
#define MAX_SAMPLES (1 << 22)

static int req_pipe[MAX_WORKERS][2], resp_pipe[MAX_WORKERS][2];
static unsigned long loops_per_us_int = 100;

static void calibrate(void)
{
	loops_per_us_int = (unsigned long)loops_per_us();
	if (!loops_per_us_int)
		loops_per_us_int = 1;
}

static void *worker(void *arg)
{
	long w = (long)arg;
	unsigned int us;

	while (read(req_pipe[w][0], &us, sizeof(us)) == sizeof(us)) {
		work(us * loops_per_us_int);
		if (write(resp_pipe[w][1], &us, sizeof(us)) != sizeof(us))
			break;
	}
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static double lat[MAX_SAMPLES], sent[MAX_WORKERS];
	struct pollfd pfd[MAX_WORKERS];
	long n = 0, workers, i;
	unsigned int us;
	double end, t;
	pthread_t th;

	if (argc != 4) {
		fprintf(stderr, "usage: reqresp WORKERS WORK_US SECONDS\n");
		return 2;
	}
	workers = atol(argv[1]);
	us = atoi(argv[2]);
	if (workers < 1 || workers > MAX_WORKERS)
		return 2;
	calibrate();
	for (i = 0; i < workers; i++) {
		if (pipe(req_pipe[i]) || pipe(resp_pipe[i]))
			return 1;
		pthread_create(&th, NULL, worker, (void *)i);
		pfd[i].fd = resp_pipe[i][0];
		pfd[i].events = POLLIN;
	}
	end = now() + atof(argv[3]);
	for (i = 0; i < workers; i++) {
		sent[i] = now();
		if (write(req_pipe[i][1], &us, sizeof(us)) != sizeof(us))
			return 1;
	}
	while ((t = now()) < end) {
		if (poll(pfd, workers, 100) <= 0)
			continue;
		for (i = 0; i < workers; i++) {
			unsigned int r;

			if (!(pfd[i].revents & POLLIN))
				continue;
			if (read(resp_pipe[i][0], &r, sizeof(r)) != sizeof(r))
				return 1;
			t = now();
			if (n < MAX_SAMPLES)
				lat[n] = t - sent[i];
			n++;
			sent[i] = t;
			if (write(req_pipe[i][1], &us, sizeof(us)) != sizeof(us))
				return 1;
		}
	}
	if (n > MAX_SAMPLES)
		n = MAX_SAMPLES;
	qsort(lat, n, sizeof(lat[0]), cmp);
	printf("%.1f %.1f %.1f %.1f\n", n / atof(argv[3]),
	       n ? lat[n / 2] * 1e6 : 0, n ? lat[n * 99 / 100] * 1e6 : 0,
	       n ? lat[n - 1] * 1e6 : 0);
	return 0;
}
