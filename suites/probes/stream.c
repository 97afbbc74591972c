/* stream: memory bandwidth with the four kernels of STREAM (copy, scale, add,
 * triad), written from the kernels' definitions.
 *
 *   stream MODE [SECONDS] [MB]     MODE: copy scale add triad; MB per array (64)
 *
 * Repeats the kernel over three arrays of doubles for SECONDS and prints the
 * best rate in MB/s (10^6 bytes; higher is better), counting bytes as STREAM
 * does: copy and scale move 2 words per element, add and triad 3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "triad";
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    long mb = argc > 3 ? atol(argv[3]) : 64;
    int k = !strcmp(mode, "copy") ? 0 : !strcmp(mode, "scale") ? 1 : !strcmp(mode, "add") ? 2 : !strcmp(mode, "triad") ? 3 : -1;
    if (k < 0 || seconds <= 0 || mb <= 0) {
        fprintf(stderr, "usage: stream copy|scale|add|triad [SECONDS] [MB]\n");
        return 2;
    }
    size_t n = (size_t)mb * 1000000 / sizeof(double);
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c)
        return 1;
    for (size_t j = 0; j < n; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
    const double q = 3.0;
    double words = k < 2 ? 2.0 : 3.0, best = 0.0;
    double start = now_s();
    do {
        double t = now_s();
        switch (k) {
        case 0: for (size_t j = 0; j < n; j++) c[j] = a[j]; break;
        case 1: for (size_t j = 0; j < n; j++) b[j] = q * c[j]; break;
        case 2: for (size_t j = 0; j < n; j++) c[j] = a[j] + b[j]; break;
        default: for (size_t j = 0; j < n; j++) a[j] = b[j] + q * c[j]; break;
        }
        t = now_s() - t;
        double rate = words * sizeof(double) * (double)n / t / 1e6;
        if (rate > best)
            best = rate;
    } while (now_s() - start < seconds);
    /* Use the arrays so the kernels cannot be dropped. */
    if (a[n / 2] + b[n / 3] + c[n / 4] < 0)
        return 1;
    printf("{\"benchmark\":\"stream\",\"metric\":\"%s_mb_s\",\"value\":%.6g,\"unit\":\"MB/s\",\"better\":\"higher\"}\n",
           mode, best);
    return 0;
}
