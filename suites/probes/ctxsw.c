/* ctxsw: context switch time by pipe ping-pong between two processes, in the
 * manner of lmbench lat_ctx with no working set and UnixBench's "Pipe-based
 * Context Switching".
 *
 *   ctxsw [SECONDS]
 *
 * A token goes back and forth through two pipes; every round trip is two
 * switches.  Both processes run on one CPU (the last this probe may use), so
 * every hand-over is a real switch and not a wake-up on another CPU.  Prints
 * the time per switch in ns (lower is better), pipe read and write included:
 * the median of the mean switch times of 9 equal slices of SECONDS. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    int ping[2], pong[2];
    if (seconds <= 0 || pipe(ping) < 0 || pipe(pong) < 0 || pin_to_one_cpu() < 0) {
        fprintf(stderr, "usage: ctxsw [SECONDS]\n");
        return 2;
    }
    pid_t child = fork();
    if (child < 0)
        return 1;
    char token = 'x';
    if (child == 0) {
        close(ping[1]);
        close(pong[0]);
        while (read(ping[0], &token, 1) == 1)
            if (write(pong[1], &token, 1) != 1)
                break;
        _exit(0);
    }
    close(ping[0]);
    close(pong[1]);
    double slices[SLICES];
    for (int s = 0; s < SLICES; s++) {
        long long rounds = 0;
        double start = now_s(), elapsed;
        do {
            for (int i = 0; i < 64; i++)
                if (write(ping[1], &token, 1) != 1 || read(pong[0], &token, 1) != 1)
                    return 1;
            rounds += 64;
            elapsed = now_s() - start;
        } while (elapsed < seconds / SLICES);
        slices[s] = elapsed * 1e9 / (double)(2 * rounds);
    }
    close(ping[1]);
    waitpid(child, NULL, 0);
    printf("{\"benchmark\":\"ctxsw\",\"metric\":\"ctxsw_ns\",\"value\":%.6g,\"unit\":\"ns\",\"better\":\"lower\"}\n",
           median_of(slices));
    return 0;
}
