/* filecopy: file copy throughput with a given buffer size, in the manner of
 * UnixBench's "File Copy 256/1024/4096 bufsize" tests (fstime).
 *
 *   filecopy BUFSIZE [SECONDS] [DIR] [FILE_KB]
 *
 * Writes a FILE_KB (default 1024) source file in DIR (default $TMPDIR or
 * /tmp), then copies it to a second file with read/write of BUFSIZE bytes,
 * over and over, for SECONDS.  Prints KB/s copied (1024 bytes; higher is
 * better).  Both files are removed at the end. */
#include <fcntl.h>
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
    long bufsize = argc > 1 ? atol(argv[1]) : 1024;
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    const char *dir = argc > 3 ? argv[3] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    long file_kb = argc > 4 ? atol(argv[4]) : 1024;
    if (bufsize <= 0 || bufsize > (1 << 20) || seconds <= 0 || file_kb <= 0) {
        fprintf(stderr, "usage: filecopy BUFSIZE [SECONDS] [DIR] [FILE_KB]\n");
        return 2;
    }
    char src[4096], dst[4096];
    /* mkstemp, not the pid: each instance may be pid 1 of its own namespace */
    snprintf(src, sizeof src, "%s/labtui-filecopy-src-XXXXXX", dir);
    snprintf(dst, sizeof dst, "%s/labtui-filecopy-dst-XXXXXX", dir);
    char *buf = malloc((size_t)bufsize);
    int in = mkstemp(src);
    int out = mkstemp(dst);
    if (!buf || in < 0 || out < 0) {
        perror("filecopy");
        return 1;
    }
    for (long i = 0; i < bufsize; i++)
        buf[i] = (char)('a' + i % 26);
    for (long long written = 0; written < file_kb * 1024LL; written += bufsize)
        if (write(in, buf, (size_t)bufsize) != bufsize)
            return 1;
    long long copied = 0;
    double start = now_s(), elapsed;
    do {
        lseek(in, 0, SEEK_SET);
        lseek(out, 0, SEEK_SET);
        ssize_t n;
        while ((n = read(in, buf, (size_t)bufsize)) > 0) {
            if (write(out, buf, (size_t)n) != n)
                return 1;
            copied += n;
        }
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    close(in);
    close(out);
    unlink(src);
    unlink(dst);
    printf("{\"benchmark\":\"filecopy\",\"metric\":\"copy_%ld_kb_s\",\"value\":%.6g,\"unit\":\"KB/s\",\"better\":\"higher\"}\n",
           bufsize, (double)copied / 1024.0 / elapsed);
    return 0;
}
