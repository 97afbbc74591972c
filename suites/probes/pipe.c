/* pipe: pipe throughput, in the manner of UnixBench's "Pipe Throughput" (one
 * process writes BYTES and reads them back from the same pipe).
 *
 *   pipe [SECONDS] [BYTES]       BYTES per write, default 512 as UnixBench
 *
 * Prints the throughput in MB/s (10^6 bytes per second; higher is better). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    long bytes = argc > 2 ? atol(argv[2]) : 512;
    int fds[2];
    if (seconds <= 0 || bytes <= 0 || bytes > 65536 || pipe(fds) < 0) {
        fprintf(stderr, "usage: pipe [SECONDS] [BYTES 1-65536]\n");
        return 2;
    }
    char *buf = calloc(1, (size_t)bytes);
    long long n = 0;
    double start = now_s(), elapsed;
    do {
        for (int i = 0; i < 64; i++)
            if (write(fds[1], buf, (size_t)bytes) != bytes || read(fds[0], buf, (size_t)bytes) != bytes)
                return 1;
        n += 64;
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    printf("{\"benchmark\":\"pipe\",\"metric\":\"pipe_mb_s\",\"value\":%.6g,\"unit\":\"MB/s\",\"better\":\"higher\"}\n",
           (double)n * (double)bytes / elapsed / 1e6);
    return 0;
}
