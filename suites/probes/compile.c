/* compile: a kernel-compile-like build, in the manner of the VServer/Xen paper's kernel
 * compile (many small C files compiled by parallel jobs, sources in a RAM file system).
 *
 *   compile [FILES] [JOBS] [DIR]     FILES default 16, JOBS default 2, DIR default
 *                                    $TMPDIR or /tmp (the paper used a RAMFS: /dev/shm)
 *
 * Writes FILES generated C sources into a fresh directory in DIR, compiles each
 * with `cc -O2 -c`, at most JOBS at once, and prints the build's wall time in
 * seconds (compile_<FILES>_s, lower is better).  The directory is removed at the
 * end.  Exits 1, naming the reason, when cc cannot be run or a compile fails. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FUNCTIONS 12

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int write_source(const char *path, int file)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return -1;
    fprintf(out, "#include <string.h>\nstruct s%d { long a[8]; double d; };\n", file);
    for (int f = 0; f < FUNCTIONS; f++)
        fprintf(out,
                "long f%d_%d(struct s%d *s, long n) {\n"
                "    long acc = %d;\n"
                "    for (long i = 0; i < n; i++) {\n"
                "        acc += s->a[i & 7] * (i ^ %d) + (long)(s->d * i);\n"
                "        if (acc & 1) memmove(s->a, s->a + 1, sizeof s->a[0] * 7);\n"
                "        switch (acc %% 4) { case 0: acc ^= i; break; case 1: acc += %d; break;\n"
                "                            case 2: acc -= i * 3; break; default: acc >>= 1; }\n"
                "    }\n"
                "    return acc;\n"
                "}\n",
                file, f, file, f, f, f * 7);
    return fclose(out);
}

static int reap(int *failed)
{
    int status;
    if (wait(&status) < 0)
        return -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        *failed = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    return 0;
}

int main(int argc, char **argv)
{
    long files = argc > 1 ? atol(argv[1]) : 16;
    long jobs = argc > 2 ? atol(argv[2]) : 2;
    const char *base = argc > 3 ? argv[3] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (files <= 0 || files > 10000 || jobs <= 0 || jobs > 256) {
        fprintf(stderr, "usage: compile [FILES 1-10000] [JOBS 1-256] [DIR]\n");
        return 2;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/labtui-compile-XXXXXX", base);
    if (!mkdtemp(dir)) {
        perror(dir);
        return 1;
    }
    char src[4200], obj[4200];
    for (long i = 0; i < files; i++) {
        snprintf(src, sizeof src, "%s/f%ld.c", dir, i);
        if (write_source(src, (int)i) != 0) {
            perror(src);
            return 1;
        }
    }
    int failed = 0;
    long running = 0;
    double start = now_s();
    for (long i = 0; i < files && !failed; i++) {
        if (running == jobs && reap(&failed) == 0)
            running--;
        snprintf(src, sizeof src, "%s/f%ld.c", dir, i);
        snprintf(obj, sizeof obj, "%s/f%ld.o", dir, i);
        pid_t child = fork();
        if (child < 0) {
            perror("compile: fork");
            failed = 1;
            break;
        }
        if (child == 0) {
            execlp("cc", "cc", "-O2", "-c", src, "-o", obj, (char *)NULL);
            _exit(127);
        }
        running++;
    }
    while (running > 0 && reap(&failed) == 0)
        running--;
    double elapsed = now_s() - start;
    for (long i = 0; i < files; i++) {
        snprintf(src, sizeof src, "%s/f%ld.c", dir, i);
        snprintf(obj, sizeof obj, "%s/f%ld.o", dir, i);
        unlink(src);
        unlink(obj);
    }
    rmdir(dir);
    if (failed) {
        fprintf(stderr, failed == 127 ? "compile: cannot run cc (no C compiler in this instance)\n"
                                      : "compile: cc failed with status %d\n", failed);
        return 1;
    }
    printf("{\"benchmark\":\"compile\",\"metric\":\"compile_%ld_s\",\"value\":%.6g,\"unit\":\"s\",\"better\":\"lower\"}\n",
           files, elapsed);
    return 0;
}
