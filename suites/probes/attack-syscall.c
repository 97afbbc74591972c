/* attack-syscall: the file-system attackers of the Docker/Unikraft isolation
 * study (section 5.3): "an infinite loop in which a different system call is
 * executed", until killed.
 *
 *   attack-syscall MODE [DIR]     MODE: openclose read write stat fork
 *
 * openclose, read, stat and write use a file of 4 KB in DIR (default $TMPDIR
 * or /tmp, the study used tmpfs), created at start and removed on SIGTERM;
 * write rewrites its 4 KB in place; fork forks a child that exits at once and
 * reaps it.  Exits 0 on SIGTERM. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
    const char *mode = argc > 1 ? argv[1] : "openclose";
    const char *dir = argc > 2 ? argv[2] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    static const char *modes[] = {"openclose", "read", "write", "stat", "fork"};
    int m = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(mode, modes[i]))
            m = i;
    if (m < 0) {
        fprintf(stderr, "usage: attack-syscall openclose|read|write|stat|fork [DIR]\n");
        return 2;
    }
    /* mkstemp, not the pid: each instance may be pid 1 of its own namespace */
    snprintf(path, sizeof path, "%s/labtui-attack-XXXXXX", dir);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    char buf[4096];
    memset(buf, 'a', sizeof buf);
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) {
        perror(path);
        return 1;
    }
    struct stat st;
    for (;;) {
        switch (m) {
        case 0: close(open(path, O_RDONLY)); break;
        case 1: if (pread(fd, buf, sizeof buf, 0) < 0) return 1; break;
        case 2: if (pwrite(fd, buf, sizeof buf, 0) < 0) return 1; break;
        case 3: stat(path, &st); break;
        default: {
            pid_t pid = fork();
            if (pid == 0)
                _exit(0);
            if (pid > 0)
                waitpid(pid, NULL, 0);
        }
        }
    }
}
