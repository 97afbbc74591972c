/* attack-disk: a disk writer like `dd if=/dev/zero of=FILE bs=1M`, the disk
 * attacker of the VServer/Xen paper (figure 8), until killed.
 *
 *   attack-disk [DIR] [MB] [BLOCK_KB]
 *
 * Writes BLOCK_KB (default 1024) blocks to a file in DIR (default $TMPDIR or
 * /tmp); after MB (default 256) megabytes it syncs and starts over at the
 * beginning, so the disk use stays bounded.  The file is removed on SIGTERM. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char path[4096];

static void on_term(int sig)
{
    (void)sig;
    unlink(path);
    _exit(0);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    long long limit = (argc > 2 ? atoll(argv[2]) : 256) * 1000000LL;
    long block = (argc > 3 ? atol(argv[3]) : 1024) * 1024;
    if (limit <= 0 || block <= 0) {
        fprintf(stderr, "usage: attack-disk [DIR] [MB] [BLOCK_KB]\n");
        return 2;
    }
    /* mkstemp, not the pid: each instance may be pid 1 of its own namespace */
    snprintf(path, sizeof path, "%s/labtui-dd-XXXXXX", dir);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    char *buf = calloc(1, (size_t)block);
    int fd = mkstemp(path);
    if (!buf || fd < 0) {
        perror(path);
        return 1;
    }
    for (;;) {
        for (long long done = 0; done < limit; done += block)
            if (write(fd, buf, (size_t)block) != block) {
                perror(path);
                unlink(path);
                return 1;
            }
        fsync(fd);
        lseek(fd, 0, SEEK_SET);
    }
}
