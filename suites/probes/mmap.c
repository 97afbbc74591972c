/* mmap: mapping and page-fault latency, as lmbench's lat_mmap and lat_pagefault
 * measure them, and anonymous-memory variants of both.
 *
 *   mmap map            [SECONDS] [KB=4096] [DIR|FILE]   lat_mmap       -> mmap_<KB>k_us
 *   mmap pagefault      [SECONDS] [KB=8192] [DIR|FILE]   lat_pagefault  -> pagefault_us
 *   mmap anon-map       [SECONDS] [KB=4096]                        -> anon_mmap_<KB>k_us
 *   mmap anon-pagefault [SECONDS] [KB=4096]                        -> anon_pagefault_ns
 *
 * map: a file of KB in DIR ($TMPDIR, else /tmp), written before the clock
 *   starts (so it is in the page cache), is opened read-write; each round maps
 *   all of it (PROT_READ|PROT_WRITE, MAP_SHARED), writes one byte every 16 KB
 *   over the first tenth of the mapping, and unmaps it.  Microseconds per round
 *   (lower is better), as lat_mmap's "MB us" line gives them.
 * pagefault: a file of KB (at least 1 MB) in DIR, written before the clock
 *   starts, is opened read-only and mapped (PROT_READ, MAP_SHARED, then msync
 *   MS_INVALIDATE).  A round reads one byte of every page of the mapping, in an
 *   order shuffled once at the start, then unmaps, maps and msyncs it again.
 *   The cost of the unmap, map and msync alone is timed the same way and taken
 *   off, and the rest is divided by the pages: microseconds per page (lower is
 *   better), as lat_pagefault prints it.  The pages stay in the page cache, so
 *   the faults are minor ones, and the kernel may map neighbouring cached pages
 *   on one fault ("fault-around"), as it does for lat_pagefault.
 * FILE instead of DIR: an existing regular file of at least KB, used as lmbench
 *   uses the file it is given (its first KB; not written, not removed).  How
 *   long a file has been in the page cache changes both figures: lat_mmap and
 *   lat_pagefault on a file written minutes before ran 1.3 to 2 times slower
 *   than on one just written, so compare a probe and an original on one file.
 * anon-map: anonymous memory instead of a file, every 16 KB of all of it
 *   written; anon-pagefault: a fresh anonymous mapping, one byte written on
 *   every page, nanoseconds per page, mmap and munmap included.  These are not
 *   lmbench's operations: they keep the file system and the page cache out of
 *   the path, for experiments on memory alone.
 *
 * The lmbench figures are the median of the mean round times of 9 equal slices
 * of SECONDS (lmbench reports the median of 11 repetitions); for pagefault the
 * first half of SECONDS times the mapping alone, the second half the rounds.
 *
 * With LABTUI_PROBE_COUNTS=1 in the environment the probe also writes one JSON
 * line of counts to stderr (rounds, bytes touched per round, and the minor and
 * major page faults of the timed rounds) for tests that check the definition;
 * with LABTUI_PROBE_KEEP=1 map leaves its file behind, so a test can see which
 * bytes the rounds wrote. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SLICES 9
#define STRIDE (16 * 1024) /* lat_mmap: one byte every 16 KB */
#define PART 10            /* ... over the first tenth */

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

static void usage(void)
{
    fprintf(stderr, "usage: mmap map|pagefault [SECONDS] [KB] [DIR|FILE]\n"
                    "       mmap anon-map|anon-pagefault [SECONDS] [KB]\n");
    exit(2);
}

static long minor_faults(long *major)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    *major = u.ru_majflt;
    return u.ru_minflt;
}

static void report_counts(long long rounds, size_t touched, long minflt, long majflt, size_t pages)
{
    if (getenv("LABTUI_PROBE_COUNTS"))
        fprintf(stderr, "{\"rounds\":%lld,\"touched_per_round\":%zu,\"pages\":%zu,\"minflt\":%ld,\"majflt\":%ld}\n", rounds,
                touched, pages, minflt, majflt);
}

static void print_reading(const char *metric, double value, const char *unit)
{
    printf("{\"benchmark\":\"mmap\",\"metric\":\"%s\",\"value\":%.6g,\"unit\":\"%s\",\"better\":\"lower\"}\n", metric, value,
           unit);
}

static char path[4200];
static int own_file = 1; /* 0: the file was given (FILE), so it is left as it was */

/* The file measured, removed when the probe wrote it. */
static void drop_file(void)
{
    if (own_file)
        unlink(path);
}

/* The given file (where is a regular file of at least size bytes), open with flags. */
static int given_file(const char *where, size_t size, int flags)
{
    struct stat st;
    own_file = 0;
    snprintf(path, sizeof path, "%s", where);
    int fd = open(path, flags);
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        exit(1);
    }
    if ((size_t)st.st_size < size) {
        fprintf(stderr, "mmap: %s holds %lld bytes, fewer than the %zu asked for\n", path, (long long)st.st_size, size);
        exit(2);
    }
    return fd;
}

/* A file of size bytes, written (so its pages are in the page cache), open with flags; or the file
 * dir names, when it names a regular file. */
static int make_file(const char *dir, size_t size, int flags)
{
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISREG(st.st_mode))
        return given_file(dir, size, flags);
    /* mkstemp, not the pid: each instance may be pid 1 of its own namespace, and another instance's
     * O_TRUNC of a shared name under this one's mapping ends it with SIGBUS */
    snprintf(path, sizeof path, "%s/labtui-mmap-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    char block[65536];
    memset(block, 'x', sizeof block);
    for (size_t done = 0; done < size;) {
        size_t n = size - done < sizeof block ? size - done : sizeof block;
        if (write(fd, block, n) != (ssize_t)n) {
            perror(path);
            unlink(path);
            exit(1);
        }
        done += n;
    }
    close(fd);
    fd = open(path, flags);
    if (fd < 0) {
        perror(path);
        unlink(path);
        exit(1);
    }
    return fd;
}

/* ---- lat_mmap ---- */

static int file_map(double seconds, size_t size, const char *dir, long kb)
{
    int fd = make_file(dir, size, O_RDWR);
    char c = (char)(size & 0xff);
    double slices[SLICES];
    long long rounds = 0;
    long major0, minor0 = minor_faults(&major0);
    for (int s = 0; s < SLICES; s++) {
        long long n = 0;
        double start = now_s(), elapsed;
        do {
            char *where = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (where == MAP_FAILED) {
                perror("mmap");
                drop_file();
                return 1;
            }
            for (volatile char *p = where, *end = where + size / PART; p < end; p += STRIDE)
                *p = c;
            munmap(where, size);
            n++;
            elapsed = now_s() - start;
        } while (elapsed < seconds / SLICES);
        slices[s] = elapsed * 1e6 / (double)n;
        rounds += n;
    }
    long major1, minor1 = minor_faults(&major1);
    close(fd);
    if (!getenv("LABTUI_PROBE_KEEP")) /* tests keep the file to see which bytes were written */
        drop_file();
    report_counts(rounds, (size / PART + STRIDE - 1) / STRIDE, minor1 - minor0, major1 - major0, 0);
    char metric[64];
    snprintf(metric, sizeof metric, "mmap_%ldk_us", kb);
    print_reading(metric, median_of(slices), "us");
    return 0;
}

/* ---- lat_pagefault ---- */

struct mapping {
    int fd;
    size_t size;
    char *where;
};

static int remap(struct mapping *m)
{
    munmap(m->where, m->size);
    m->where = mmap(NULL, m->size, PROT_READ, MAP_SHARED, m->fd, 0);
    if (m->where == MAP_FAILED || msync(m->where, m->size, MS_INVALIDATE) != 0) {
        perror("mmap/msync");
        return -1;
    }
    return 0;
}

static int file_pagefault(double seconds, size_t size, const char *dir)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size -= size % page;
    if (size < 1024 * 1024) {
        fprintf(stderr, "mmap: pagefault needs a file of at least 1 MB\n");
        return 2;
    }
    struct mapping m = {make_file(dir, size, O_RDONLY), size, NULL};
    size_t pages = size / page;
    size_t *order = malloc(pages * sizeof *order);
    if (!order)
        return 1;
    for (size_t i = 0; i < pages; i++)
        order[i] = i * page;
    srand((unsigned)getpid());
    for (size_t i = pages - 1; i > 0; i--) { /* shuffle the pages once */
        size_t j = (((size_t)rand() << 31) ^ (size_t)rand()) % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    m.where = mmap(NULL, size, PROT_READ, MAP_SHARED, m.fd, 0);
    if (m.where == MAP_FAILED || msync(m.where, size, MS_INVALIDATE) != 0) {
        perror("mmap");
        drop_file();
        return 1;
    }
    double mapping[SLICES], both[SLICES];
    for (int s = 0; s < SLICES; s++) { /* the mapping alone */
        long long n = 0;
        double start = now_s(), elapsed;
        do {
            if (remap(&m) < 0)
                return 1;
            n++;
            elapsed = now_s() - start;
        } while (elapsed < seconds / 2 / SLICES);
        mapping[s] = elapsed * 1e6 / (double)n;
    }
    long long rounds = 0;
    int sum = 0;
    long major0, minor0 = minor_faults(&major0);
    for (int s = 0; s < SLICES; s++) { /* every page, in the shuffled order, then the mapping again */
        long long n = 0;
        double start = now_s(), elapsed;
        do {
            for (size_t i = 0; i < pages; i++)
                sum += *(volatile char *)(m.where + order[i]);
            if (remap(&m) < 0)
                return 1;
            n++;
            elapsed = now_s() - start;
        } while (elapsed < seconds / 2 / SLICES);
        both[s] = elapsed * 1e6 / (double)n;
        rounds += n;
    }
    long major1, minor1 = minor_faults(&major1);
    munmap(m.where, size);
    close(m.fd);
    drop_file();
    free(order);
    report_counts(rounds, pages, minor1 - minor0, major1 - major0, pages);
    double per_page = (median_of(both) - median_of(mapping)) / (double)pages;
    print_reading("pagefault_us", per_page > 0 ? per_page : 0.0, "us");
    return sum == 42424242 ? 3 : 0; /* sum is used, so the reads stay */
}

/* ---- anonymous variants ---- */

static int anonymous(double seconds, size_t size, int faults, long kb)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t stride = faults ? page : STRIDE;
    long long rounds = 0, touched = 0;
    long major0, minor0 = minor_faults(&major0);
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
    long major1, minor1 = minor_faults(&major1);
    report_counts(rounds, (size_t)(touched / rounds), minor1 - minor0, major1 - major0, size / page);
    char metric[64];
    if (faults)
        print_reading("anon_pagefault_ns", elapsed * 1e9 / (double)touched, "ns");
    else {
        snprintf(metric, sizeof metric, "anon_mmap_%ldk_us", kb);
        print_reading(metric, elapsed * 1e6 / (double)rounds, "us");
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 5)
        usage();
    const char *mode = argv[1];
    int pagefault = !strcmp(mode, "pagefault");
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    long kb = argc > 3 ? atol(argv[3]) : (pagefault ? 8192 : 4096);
    const char *dir = argc > 4 ? argv[4] : getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    if (seconds <= 0 || kb <= 0)
        usage();
    size_t size = (size_t)kb * 1024;
    if (!strcmp(mode, "map")) {
        if (size < 2 * PART * STRIDE) { /* lat_mmap's smallest size */
            fprintf(stderr, "mmap: map needs at least %d KB\n", 2 * PART * STRIDE / 1024);
            return 2;
        }
        return file_map(seconds, size, dir, kb);
    }
    if (pagefault)
        return file_pagefault(seconds, size, dir);
    if (argc > 4)
        usage();
    if (!strcmp(mode, "anon-map"))
        return anonymous(seconds, size, 0, kb);
    if (!strcmp(mode, "anon-pagefault"))
        return anonymous(seconds, size, 1, kb);
    usage();
    return 2;
}
