/* arith: integer and floating-point arithmetic throughput, in the manner of
 * AIM9's add/mul/div tests and UnixBench's arithmetic loops.
 *
 *   arith MODE [SECONDS]       MODE: int double
 *
 * Runs a dependent chain of add, multiply and divide (so the compiler cannot
 * fold it) and prints millions of operations per second (higher is better). */
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

#define ROUNDS 4096 /* each round: 1 add, 1 multiply, 1 divide, 1 add */

static long long int_rounds(volatile long long *seed)
{
    long long a = *seed, b = 7;
    for (int i = 0; i < ROUNDS; i++) {
        a = a + b;
        b = a * 3 + 1;
        a = b / 5 + i;
    }
    *seed = a;
    return ROUNDS * 4LL;
}

static long long double_rounds(volatile double *seed)
{
    double a = *seed, b = 1.5;
    for (int i = 0; i < ROUNDS; i++) {
        a = a + b;
        b = a * 1.0000001 + 0.5;
        a = b / 1.0000003 + 1e-9;
    }
    *seed = a;
    return ROUNDS * 4LL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "int";
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    int is_int = !strcmp(mode, "int");
    if (seconds <= 0 || (!is_int && strcmp(mode, "double"))) {
        fprintf(stderr, "usage: arith int|double [SECONDS]\n");
        return 2;
    }
    volatile long long iseed = 3;
    volatile double dseed = 1.0;
    long long ops = 0;
    double start = now_s(), elapsed;
    do {
        ops += is_int ? int_rounds(&iseed) : double_rounds(&dseed);
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    printf("{\"benchmark\":\"arith\",\"metric\":\"%s_mops\",\"value\":%.6g,\"unit\":\"Mops/s\",\"better\":\"higher\"}\n",
           mode, (double)ops / elapsed / 1e6);
    return 0;
}
