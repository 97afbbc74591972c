/* syscall: latency of one system call, in the manner of lmbench lat_syscall
 * and UnixBench's syscall test.
 *
 *   syscall MODE [SECONDS]      MODE: getppid read write stat openclose mix
 *
 * Calls the system call in a loop for SECONDS (default 1) and prints one JSON
 * line with the time per call in ns (lower is better): the median of the mean
 * call times of 9 equal slices of SECONDS.  read reads one
 * byte of /dev/zero, write writes one byte to /dev/null, stat and openclose
 * use /dev/null, mix is UnixBench's round of dup+close, getpid, getuid, umask. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

static int one(const char *mode, int rfd, int wfd)
{
    char c = 0;
    struct stat st;
    if (!strcmp(mode, "getppid"))
        return (int)syscall(SYS_getppid);
    if (!strcmp(mode, "read"))
        return (int)read(rfd, &c, 1);
    if (!strcmp(mode, "write"))
        return (int)write(wfd, &c, 1);
    if (!strcmp(mode, "stat"))
        return stat("/dev/null", &st);
    if (!strcmp(mode, "openclose")) {
        int fd = open("/dev/null", O_RDONLY);
        return fd < 0 ? -1 : close(fd);
    }
    if (!strcmp(mode, "mix")) { /* UnixBench syscall "mix" */
        close(dup(0));
        getpid();
        getuid();
        umask(022);
        return 0;
    }
    return -2;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "getppid";
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    int rfd = open("/dev/zero", O_RDONLY), wfd = open("/dev/null", O_WRONLY);
    if (rfd < 0 || wfd < 0 || seconds <= 0 || one(mode, rfd, wfd) == -2) {
        fprintf(stderr, "usage: syscall getppid|read|write|stat|openclose|mix [SECONDS]\n");
        return 2;
    }
    double slices[SLICES];
    for (int s = 0; s < SLICES; s++) {
        long long n = 0;
        double start = now_s(), elapsed;
        do {
            for (int i = 0; i < 256; i++)
                one(mode, rfd, wfd);
            n += 256;
            elapsed = now_s() - start;
        } while (elapsed < seconds / SLICES);
        slices[s] = elapsed * 1e9 / (double)n;
    }
    printf("{\"benchmark\":\"syscall\",\"metric\":\"%s_ns\",\"value\":%.6g,\"unit\":\"ns\",\"better\":\"lower\"}\n",
           mode, median_of(slices));
    return 0;
}
