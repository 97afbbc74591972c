/* ctxsw: context switches between processes that pass a token through pipes,
 * as UnixBench's "Pipe-based Context Switching" (context1) and as lmbench's
 * lat_ctx count them.
 *
 *   ctxsw context1 [SECONDS] [pin]
 *   ctxsw lat_ctx  [SECONDS] [KB=0] [PROCS=2] [pin]
 *
 * context1: two processes, two pipes.  The parent writes a counter (an
 *   unsigned long) into one pipe, the child reads it, checks it and writes it
 *   back through the other, the parent reads it back and checks it: one round
 *   trip, two switches.  Prints round trips per second, the figure UnixBench's
 *   Run scores (count / elapsed seconds): metric context1_lps (lps, higher).
 *
 * lat_ctx: PROCS processes in a ring of PROCS pipes; the token (an int) goes
 *   once around the ring per round, and every process sums its own KB-sized
 *   array (allocated and zeroed by each process) when it holds the token.  Like
 *   lat_ctx the probe first times the same pipe write, pipe read and array sum
 *   in one process (the overhead) and prints
 *       round time / PROCS - overhead
 *   in microseconds: metric ctx_<PROCS>p_<KB>k_us (us, lower), the name
 *   labtui.parsers.lmbench gives a real lat_ctx line.  Overhead and ring are
 *   each the median of the mean times of 9 equal slices (lmbench: the median of
 *   11 repetitions).
 *
 * No process is pinned, as in both originals: the scheduler places them.  With
 * "pin" every process runs on one CPU (the last this probe may use: CPU 0
 * takes most interrupts), so that every hand-over is a switch on that CPU and
 * not a wake-up on another; the metric then says so: context1_pinned_lps,
 * ctx_pinned_<PROCS>p_<KB>k_us.
 *
 * With LABTUI_PROBE_COUNTS=1 in the environment the probe also writes one JSON
 * line of counts to stderr (rounds, voluntary and involuntary switches of all
 * its processes) for tests that check the definition. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLICES 9

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *slices)
{
    qsort(slices, SLICES, sizeof *slices, by_value);
    return slices[SLICES / 2];
}

/* Keep this process (and the children it forks later) on the last CPU it may run on. */
static int pin_to_one_cpu(void)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) < 0)
        return -1;
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--)
        if (CPU_ISSET(cpu, &allowed)) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            return sched_setaffinity(0, sizeof one, &one);
        }
    return -1;
}

static void usage(void)
{
    fprintf(stderr, "usage: ctxsw context1 [SECONDS] [pin]\n"
                    "       ctxsw lat_ctx [SECONDS] [KB=0] [PROCS=2] [pin]\n");
    exit(2);
}

/* The counts for tests: rounds, and the switches of this process and its reaped children. */
static void report_counts(long long rounds, int procs)
{
    if (!getenv("LABTUI_PROBE_COUNTS"))
        return;
    struct rusage self, children;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    fprintf(stderr, "{\"rounds\":%lld,\"procs\":%d,\"nvcsw\":%ld,\"nivcsw\":%ld}\n", rounds, procs,
            self.ru_nvcsw + children.ru_nvcsw, self.ru_nivcsw + children.ru_nivcsw);
}

/* ---- context1 ---- */

static int context1(double seconds, int pinned)
{
    int p1[2], p2[2];
    if (pipe(p1) < 0 || pipe(p2) < 0) {
        perror("pipe");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) { /* read p1, check, write p2 */
        unsigned long expect = 0, got;
        close(p1[1]);
        close(p2[0]);
        while (read(p1[0], &got, sizeof got) == sizeof got) {
            if (got != expect) {
                fprintf(stderr, "ctxsw: child expected %lu, got %lu\n", expect, got);
                _exit(1);
            }
            if (write(p2[1], &got, sizeof got) != sizeof got)
                _exit(1);
            expect++;
        }
        _exit(0);
    }
    close(p1[0]);
    close(p2[1]);
    unsigned long iter = 0, check;
    double start = now_s(), elapsed;
    do {
        for (int i = 0; i < 64; i++, iter++) {
            if (write(p1[1], &iter, sizeof iter) != sizeof iter || read(p2[0], &check, sizeof check) != sizeof check) {
                perror("ctxsw: pipe");
                return 1;
            }
            if (check != iter) {
                fprintf(stderr, "ctxsw: parent expected %lu, got %lu\n", iter, check);
                return 1;
            }
        }
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    close(p1[1]);
    int status;
    if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    report_counts((long long)iter, 2);
    printf("{\"benchmark\":\"ctxsw\",\"metric\":\"context1%s_lps\",\"value\":%.6g,\"unit\":\"lps\",\"better\":\"higher\"}\n",
           pinned ? "_pinned" : "", (double)iter / elapsed);
    return 0;
}

/* ---- lat_ctx ---- */

static volatile long sink;

/* Read the whole working set, a long at a time (what each process does when it holds the token), with
 * one scalar add per long, as lmbench's bread does when lmbench's own build (-O) compiles it.
 * Out of line and on a cache line of its own: inlined, the 4-instruction loop once landed across a
 * 64-byte boundary, which slowed every sum, the subtracted overhead more than the ring, and the figure
 * came out at 0.6 to 0.87 of lat_ctx -s 64 16's (docs/probes.md). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((noinline, aligned(64), optimize("no-tree-vectorize")))
#else
__attribute__((noinline, aligned(64)))
#endif
static void sum_array(const long *data, size_t bytes)
{
    long sum = 0;
#if defined(__clang__)
#pragma clang loop vectorize(disable) interleave(disable)
#endif
    for (size_t i = 0; i < bytes / sizeof(long); i++)
        sum += data[i];
    sink += sum;
}

static long *working_set(size_t bytes)
{
    if (bytes == 0)
        return NULL;
    long *data = malloc(bytes);
    if (!data) {
        perror("malloc");
        exit(1);
    }
    memset(data, 0, bytes);
    return data;
}

static void ring_member(int rd, int wr, size_t bytes)
{
    long *data = working_set(bytes);
    int msg;
    while (read(rd, &msg, sizeof msg) == sizeof msg) {
        sum_array(data, bytes);
        if (write(wr, &msg, sizeof msg) != sizeof msg)
            break;
    }
    _exit(0);
}

static int lat_ctx(double seconds, size_t kb, int procs, int pinned)
{
    size_t bytes = kb * 1024;
    int (*p)[2] = calloc((size_t)procs, sizeof *p);
    pid_t *pids = calloc((size_t)procs, sizeof *pids);
    if (!p || !pids)
        return 1;
    for (int i = 0; i < procs; i++)
        if (pipe(p[i]) < 0) {
            perror("pipe");
            return 1;
        }
    long *data = working_set(bytes);
    int msg = 1;
    double overhead[SLICES], ring[SLICES];
    long long rounds = 0;

    /* The overhead: the same pipe write and read, and the array sum, in this process alone. */
    for (int s = 0, i = 0; s < SLICES; s++) {
        long long n = 0;
        double start = now_s(), elapsed;
        do {
            for (int k = 0; k < 64; k++, n++) {
                if (write(p[i][1], &msg, sizeof msg) != sizeof msg || read(p[i][0], &msg, sizeof msg) != sizeof msg)
                    return 1;
                if (++i == procs)
                    i = 0;
                sum_array(data, bytes);
            }
            elapsed = now_s() - start;
        } while (elapsed < seconds / 2 / SLICES);
        overhead[s] = elapsed * 1e6 / (double)n;
    }

    /* The ring: process i reads pipe i-1 and writes pipe i; this process is member 0. */
    for (int i = 1; i < procs; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            perror("fork");
            return 1;
        }
        if (pids[i] == 0) {
            for (int j = 0; j < procs; j++) {
                if (j != i - 1)
                    close(p[j][0]);
                if (j != i)
                    close(p[j][1]);
            }
            ring_member(p[i - 1][0], p[i][1], bytes);
        }
    }
    for (int j = 0; j < procs; j++) { /* keep p[0] write and p[procs-1] read */
        if (j != procs - 1)
            close(p[j][0]);
        if (j != 0)
            close(p[j][1]);
    }
    /* Once around the ring, so every member is up before the clock starts. */
    if (write(p[0][1], &msg, sizeof msg) != sizeof msg || read(p[procs - 1][0], &msg, sizeof msg) != sizeof msg)
        return 1;
    for (int s = 0; s < SLICES; s++) {
        long long n = 0;
        double start = now_s(), elapsed;
        do {
            for (int k = 0; k < 16; k++, n++) {
                if (write(p[0][1], &msg, sizeof msg) != sizeof msg || read(p[procs - 1][0], &msg, sizeof msg) != sizeof msg) {
                    perror("ctxsw: ring");
                    return 1;
                }
                sum_array(data, bytes);
            }
            elapsed = now_s() - start;
        } while (elapsed < seconds / 2 / SLICES);
        ring[s] = elapsed * 1e6 / (double)n;
        rounds += n;
    }
    close(p[0][1]);
    close(p[procs - 1][0]);
    for (int i = 1; i < procs; i++)
        waitpid(pids[i], NULL, 0);
    report_counts(rounds + 1, procs);
    double per_switch = median_of(ring) / procs - median_of(overhead);
    printf("{\"benchmark\":\"ctxsw\",\"metric\":\"ctx%s_%dp_%zuk_us\",\"value\":%.6g,\"unit\":\"us\",\"better\":\"lower\"}\n",
           pinned ? "_pinned" : "", procs, kb, per_switch > 0 ? per_switch : 0.0);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *mode = argv[1];
    int pinned = argc > 2 && !strcmp(argv[argc - 1], "pin");
    int nargs = argc - 2 - pinned; /* the numbers after the mode */
    double seconds = nargs > 0 ? atof(argv[2]) : 1.0;
    if (seconds <= 0)
        usage();
    if (pinned && pin_to_one_cpu() < 0) {
        perror("sched_setaffinity");
        return 1;
    }
    if (!strcmp(mode, "context1") && nargs <= 1)
        return context1(seconds, pinned);
    if (!strcmp(mode, "lat_ctx") && nargs <= 3) {
        long kb = nargs > 1 ? atol(argv[3]) : 0;
        int procs = nargs > 2 ? atoi(argv[4]) : 2;
        if (kb < 0 || procs < 2 || procs > 1024)
            usage();
        return lat_ctx(seconds, (size_t)kb, procs, pinned);
    }
    usage();
    return 2;
}
