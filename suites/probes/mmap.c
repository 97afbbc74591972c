/* mmap: mapping and page-fault latency, in the manner of lmbench lat_mmap and
 * lat_pagefault.
 *
 *   mmap MODE [SECONDS] [KB]       MODE: map pagefault; KB default 4096
 *
 * map: mmap KB of anonymous memory, touch one byte every 16 KB (as lat_mmap
 * does), munmap; prints microseconds per round.  pagefault: mmap KB, write one
 * byte on every page (each write a fresh page fault), munmap; prints ns per
 * fault.  Lower is better for both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
    const char *mode = argc > 1 ? argv[1] : "map";
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    long kb = argc > 3 ? atol(argv[3]) : 4096;
    int faults = !strcmp(mode, "pagefault");
    if (seconds <= 0 || kb <= 0 || (!faults && strcmp(mode, "map"))) {
        fprintf(stderr, "usage: mmap map|pagefault [SECONDS] [KB]\n");
        return 2;
    }
    size_t size = (size_t)kb * 1024, page = (size_t)sysconf(_SC_PAGESIZE);
    size_t stride = faults ? page : 16384;
    long long rounds = 0, touched = 0;
    double start = now_s(), elapsed;
    do {
        volatile char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
        for (size_t off = 0; off < size; off += stride, touched++)
            p[off] = 1;
        munmap((void *)p, size);
        rounds++;
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    if (faults)
        printf("{\"benchmark\":\"mmap\",\"metric\":\"pagefault_ns\",\"value\":%.6g,\"unit\":\"ns\",\"better\":\"lower\"}\n",
               elapsed * 1e9 / (double)touched);
    else
        printf("{\"benchmark\":\"mmap\",\"metric\":\"mmap_%ldk_us\",\"value\":%.6g,\"unit\":\"us\",\"better\":\"lower\"}\n",
               kb, elapsed * 1e6 / (double)rounds);
    return 0;
}
