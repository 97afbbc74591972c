/* proc: process creation latency, in the manner of lmbench lat_proc and
 * UnixBench's execl / process creation / shell tests.
 *
 *   proc MODE [SECONDS]      MODE: fork exec shell
 *
 * fork: fork a child that exits at once, wait for it.  exec: fork, and the
 * child execs this program again with "--exit" (which exits at once).  shell:
 * fork, and the child runs /bin/sh -c true.  Prints the time per round in
 * microseconds (lower is better): the median of the mean round times of 9
 * equal slices of SECONDS.  Parent and child run on one CPU (the last this
 * probe may use), so the figure does not depend on where the scheduler puts
 * the child. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define SLICES 9

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the slices' means: one slice disturbed by an interrupt storm or
 * a neighbour does not move the result. */
static double median_of(double *slices)
{
    qsort(slices, SLICES, sizeof *slices, by_value);
    return slices[SLICES / 2];
}

/* Keep this process (and its children) on the last CPU it may run on. */
static int pin_to_one_cpu(void)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) < 0)
        return -1;
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--) /* the last: CPU 0 takes most interrupts */
        if (CPU_ISSET(cpu, &allowed)) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            return sched_setaffinity(0, sizeof one, &one);
        }
    return -1;
}

static int round_trip(const char *mode, const char *self)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (!strcmp(mode, "exec"))
            execl(self, self, "--exit", (char *)NULL);
        else if (!strcmp(mode, "shell"))
            execl("/bin/sh", "sh", "-c", "true", (char *)NULL);
        else
            _exit(0);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--exit"))
        return 0;
    const char *mode = argc > 1 ? argv[1] : "fork";
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len < 0 || seconds <= 0 || pin_to_one_cpu() < 0 || (strcmp(mode, "fork") && strcmp(mode, "exec") && strcmp(mode, "shell"))) {
        fprintf(stderr, "usage: proc fork|exec|shell [SECONDS]\n");
        return 2;
    }
    self[len] = '\0';
    double slices[SLICES];
    for (int s = 0; s < SLICES; s++) {
        long long n = 0;
        double start = now_s(), elapsed;
        do {
            if (round_trip(mode, self) < 0) {
                fprintf(stderr, "proc: %s round failed\n", mode);
                return 1;
            }
            n++;
            elapsed = now_s() - start;
        } while (elapsed < seconds / SLICES);
        slices[s] = elapsed * 1e6 / (double)n;
    }
    printf("{\"benchmark\":\"proc\",\"metric\":\"%s_us\",\"value\":%.6g,\"unit\":\"us\",\"better\":\"lower\"}\n",
           mode, median_of(slices));
    return 0;
}
