// SPDX-License-Identifier: GPL-2.0
/*
 * storm: create and end many short-lived tasks quickly.
 *
 * Usage: storm FORKS THREADS EXECS
 * FORKS processes that exit at once, THREADS threads that exit at once,
 * EXECS processes that exec /bin/true. Prints how many of each completed
 * and exits non-zero if any failed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *thread_fn(void *arg)
{
	return arg;
}

static int reap(pid_t pid)
{
	int st;

	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
	long forks, threads, execs, ok_f = 0, ok_t = 0, ok_e = 0, i;

	if (argc != 4) {
		fprintf(stderr, "usage: storm FORKS THREADS EXECS\n");
		return 2;
	}
	forks = atol(argv[1]);
	threads = atol(argv[2]);
	execs = atol(argv[3]);

	for (i = 0; i < forks; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		ok_f += pid > 0 && reap(pid);
	}
	for (i = 0; i < threads; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, thread_fn, NULL) == 0 &&
		    pthread_join(t, NULL) == 0)
			ok_t++;
	}
	for (i = 0; i < execs; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		ok_e += pid > 0 && reap(pid);
	}
	printf("forks %ld/%ld threads %ld/%ld execs %ld/%ld\n", ok_f, forks,
	       ok_t, threads, ok_e, execs);
	return ok_f == forks && ok_t == threads && ok_e == execs ? 0 : 1;
}
