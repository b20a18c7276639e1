// SPDX-License-Identifier: GPL-2.0
/*
 * spin N: N threads that spin on the CPU until the process is killed
 * (many runnable tasks for little memory: 64 KiB stacks). The threads
 * wait until all are created, so creating them is not slowed by the
 * spinning ones.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_barrier_t start;

static void *spin(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	pthread_barrier_wait(&start);
	for (;;)
		n++;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	pthread_attr_t a;
	pthread_t t;

	if (n < 1)
		n = 1;
	pthread_barrier_init(&start, NULL, n);
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (int i = 1; i < n; i++) {
		if (pthread_create(&t, &a, spin, NULL)) {
			perror("pthread_create");
			return 1;
		}
	}
	spin(NULL);
	return 0;
}
